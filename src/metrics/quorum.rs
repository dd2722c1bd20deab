//! k-of-n quorum steps (docs/metrics.md section 2.22): the quorums started, how each decided
//! one ended, the branches its steps sent and those an early decision cancelled. Present when some step is a quorum.

use super::MetricMap;
use crate::vocab::QuorumVerdict;

/// One thing about a quorum step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuorumObservation {
    /// A quorum step started (its tally opened; it may end undecided if its run ends first).
    Started,
    /// A branch was sent (or left waiting at a bulkhead); a branch refused before it left is not.
    BranchSent,
    /// The tally decided: how, and how many branches still out it cancelled.
    Decided { verdict: QuorumVerdict, cancelled: u8 },
}

#[derive(Debug, Clone, Default)]
pub struct QuorumStats {
    decided: [u64; QuorumVerdict::COUNT],
    started: u64,
    sent: u64,
    cancelled: u64,
}

impl QuorumStats {
    pub fn observe(&mut self, o: QuorumObservation) {
        match o {
            QuorumObservation::Started => self.started += 1,
            QuorumObservation::BranchSent => self.sent += 1,
            QuorumObservation::Decided { verdict, cancelled } => {
                self.decided[verdict.index()] += 1;
                self.cancelled += u64::from(cancelled);
            }
        }
    }

    pub fn put(&self, m: &mut MetricMap) {
        let decided: u64 = self.decided.iter().sum();
        for v in QuorumVerdict::ALL {
            let count = self.decided[v.index()];
            m.insert(format!("quorum_total.{}", v.name()), count as f64);
            let share = if decided == 0 { f64::NAN } else { count as f64 / decided as f64 };
            m.insert(format!("quorum_ratio.{}", v.name()), share);
        }
        m.insert("quorum_started_total".into(), self.started as f64);
        m.insert("quorum_branch_sent_total".into(), self.sent as f64);
        m.insert("quorum_branch_cancelled_total".into(), self.cancelled as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_count_apart_and_share_the_decided_quorums() {
        let mut s = QuorumStats::default();
        for _ in 0..3 {
            s.observe(QuorumObservation::Started);
            s.observe(QuorumObservation::BranchSent);
        }
        s.observe(QuorumObservation::Decided { verdict: QuorumVerdict::Met, cancelled: 1 });
        s.observe(QuorumObservation::Decided { verdict: QuorumVerdict::WrongAgreement, cancelled: 0 });
        let mut m = MetricMap::new();
        s.put(&mut m);
        assert_eq!(m["quorum_total.met"], 1.0);
        assert_eq!(m["quorum_total.not_met"], 0.0);
        assert_eq!(m["quorum_ratio.wrong_agreement"], 0.5);
        assert_eq!(m["quorum_branch_sent_total"], 3.0);
        assert_eq!(m["quorum_started_total"], 3.0, "one of three still undecided");
        assert_eq!(m["quorum_branch_cancelled_total"], 1.0);
        let mut empty = MetricMap::new();
        QuorumStats::default().put(&mut empty);
        assert!(empty["quorum_ratio.met"].is_nan(), "no quorum decided: undefined");
    }
}
