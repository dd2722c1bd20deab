//! The figures of the essay's approval and advisory dependency classes (docs/essay.md section
//! 4, docs/metrics.md section 2.19): present only when a scenario has an approval dependency
//! or an advisory step, so other scenarios keep their outputs.

use super::MetricMap;
use crate::sim::{Micros, us_as_f64, us_to_ms};
use crate::vocab::ApprovalVerdict;
use hdrhistogram::Histogram;

/// Approval requests and how their runs stopped waiting.
pub struct ApprovalStats {
    pub requested: u64,
    pub verdicts: [u64; ApprovalVerdict::COUNT],
    /// From request to decision, approvals decided (approved or refused) while their run
    /// waited; a lapsed request or one still open at the deadline has no decision time.
    pub wait_us: Histogram<u64>,
    pub wait_sum_us: f64,
    pub wait_max_us: Micros,
}

impl ApprovalStats {
    pub fn new(histogram: Histogram<u64>) -> Self {
        ApprovalStats {
            requested: 0,
            verdicts: [0; ApprovalVerdict::COUNT],
            wait_us: histogram,
            wait_sum_us: 0.0,
            wait_max_us: 0,
        }
    }

    pub fn ended(&mut self, verdict: ApprovalVerdict, wait_us: Micros) {
        self.verdicts[verdict.index()] += 1;
        match verdict {
            ApprovalVerdict::Approved | ApprovalVerdict::Refused => {
                self.wait_us.saturating_record(wait_us.max(1));
                self.wait_sum_us += us_as_f64(wait_us);
                self.wait_max_us = self.wait_max_us.max(wait_us);
            }
            ApprovalVerdict::Expired | ApprovalVerdict::PendingAtDeadline => {}
        }
    }

    pub fn put(&self, m: &mut MetricMap) {
        m.insert("approval_requested_total".into(), self.requested as f64);
        for v in ApprovalVerdict::ALL {
            m.insert(format!("approval_total.{}", v.name()), self.verdicts[v.index()] as f64);
        }
        let decided = self.wait_us.len();
        let at = |q: f64| if decided > 0 { us_to_ms(self.wait_us.value_at_quantile(q)) } else { f64::NAN };
        let mean = if decided > 0 { self.wait_sum_us / 1e3 / decided as f64 } else { f64::NAN };
        m.insert("approval_wait_ms.mean".into(), mean);
        m.insert("approval_wait_ms.p50".into(), at(0.50));
        m.insert("approval_wait_ms.p95".into(), at(0.95));
        m.insert("approval_wait_ms.max".into(), if decided > 0 { us_to_ms(self.wait_max_us) } else { f64::NAN });
    }
}

/// Advisory steps' results, used or left out.
#[derive(Debug, Clone, Copy, Default)]
pub struct AdvisoryStats {
    pub used: u64,
    pub omitted: u64,
}

impl AdvisoryStats {
    pub fn put(&self, m: &mut MetricMap) {
        let total = (self.used + self.omitted) as f64;
        m.insert("advisory_used_total".into(), self.used as f64);
        m.insert("advisory_omitted_total".into(), self.omitted as f64);
        m.insert("advisory_omitted_ratio".into(), if total > 0.0 { self.omitted as f64 / total } else { f64::NAN });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_decisions_have_a_wait_and_every_verdict_is_counted() {
        let h = Histogram::new_with_bounds(1, 1 << 40, 3).expect("bounds");
        let mut s = ApprovalStats::new(h);
        s.requested = 4;
        s.ended(ApprovalVerdict::Approved, 2_000_000);
        s.ended(ApprovalVerdict::Refused, 4_000_000);
        s.ended(ApprovalVerdict::Expired, 9_000_000_000);
        s.ended(ApprovalVerdict::PendingAtDeadline, 9_000_000_000);
        let mut m = MetricMap::new();
        s.put(&mut m);
        assert_eq!(m["approval_wait_ms.mean"], 3_000.0);
        assert_eq!(m["approval_wait_ms.max"], 4_000.0);
        assert_eq!(m["approval_total.expired"], 1.0);
        assert_eq!(m["approval_total.pending_at_deadline"], 1.0);
        let mut a = MetricMap::new();
        AdvisoryStats { used: 3, omitted: 1 }.put(&mut a);
        assert_eq!(a["advisory_omitted_ratio"], 0.25);
    }
}
