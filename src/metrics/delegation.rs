//! Delegation between A2A agents (docs/metrics.md section 2.20): hops sent and revisits among
//! them, hops refused by reason, the depth reached, attempts per root run across hops and the
//! peak cost in flight. Present when some call delegates or a fault makes a delegation loop.

use super::MetricMap;
use crate::vocab::DelegationRefusal;

/// One thing about a delegation hop or a delegating run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DelegationObservation {
    /// An attempt of a hop was sent, at `depth` below the run's first agent; `revisit` when it
    /// went to an agent already on its chain (a loop nothing stopped).
    HopSent { depth: u32, revisit: bool },
    /// A hop was refused before it was sent.
    Refused(DelegationRefusal),
    /// A run's last attempt left its station: its attempts across hops, the deepest hop it
    /// sent (u16: a chain is at most 16 hops deep, and it keeps `Observation` at 24 bytes), and
    /// the highest cost in flight any of its hops saw as it was sent.
    RunFinalized { attempts: u32, max_depth: u16, peak_cost_units: f64 },
}

#[derive(Debug, Clone, Default)]
pub struct DelegationStats {
    hops: u64,
    revisits: u64,
    refused: [u64; DelegationRefusal::COUNT],
    runs: u64,
    attempts_sum: u64,
    attempts_max: u32,
    depth_sum: u64,
    depth_max: u32,
    peak_cost_units: f64,
}

impl DelegationStats {
    pub fn observe(&mut self, o: DelegationObservation) {
        match o {
            DelegationObservation::HopSent { revisit, .. } => {
                self.hops += 1;
                self.revisits += u64::from(revisit);
            }
            DelegationObservation::Refused(reason) => self.refused[reason.index()] += 1,
            DelegationObservation::RunFinalized { attempts, max_depth, peak_cost_units } => {
                self.runs += 1;
                self.attempts_sum += u64::from(attempts);
                self.attempts_max = self.attempts_max.max(attempts);
                self.depth_sum += u64::from(max_depth);
                self.depth_max = self.depth_max.max(u32::from(max_depth));
                self.peak_cost_units = self.peak_cost_units.max(peak_cost_units);
            }
        }
    }

    pub fn put(&self, m: &mut MetricMap) {
        let mut put = |name: &str, v: f64| {
            m.insert(name.to_string(), v);
        };
        let per_run = |sum: u64| if self.runs == 0 { f64::NAN } else { sum as f64 / self.runs as f64 };
        put("delegation_hop_total", self.hops as f64);
        put("delegation_revisit_total", self.revisits as f64);
        for reason in DelegationRefusal::ALL {
            put(&format!("delegation_refused_total.{}", reason.name()), self.refused[reason.index()] as f64);
        }
        put("delegation_depth.mean", per_run(self.depth_sum));
        put("delegation_depth.max", f64::from(self.depth_max));
        put("delegation_attempts_per_run.mean", per_run(self.attempts_sum));
        put("delegation_attempts_per_run.max", f64::from(self.attempts_max));
        put("delegation_parallel_cost_units.max", self.peak_cost_units);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_average_their_attempts_and_depth_and_refusals_count_by_reason() {
        let mut s = DelegationStats::default();
        s.observe(DelegationObservation::HopSent { depth: 1, revisit: false });
        s.observe(DelegationObservation::HopSent { depth: 2, revisit: true });
        s.observe(DelegationObservation::Refused(DelegationRefusal::Depth));
        s.observe(DelegationObservation::RunFinalized { attempts: 3, max_depth: 2, peak_cost_units: 4.0 });
        s.observe(DelegationObservation::RunFinalized { attempts: 1, max_depth: 0, peak_cost_units: 0.0 });
        let mut m = MetricMap::new();
        s.put(&mut m);
        assert_eq!(m["delegation_hop_total"], 2.0);
        assert_eq!(m["delegation_revisit_total"], 1.0);
        assert_eq!(m["delegation_refused_total.depth"], 1.0);
        assert_eq!(m["delegation_refused_total.visited"], 0.0);
        assert_eq!(m["delegation_attempts_per_run.mean"], 2.0);
        assert_eq!(m["delegation_attempts_per_run.max"], 3.0);
        assert_eq!(m["delegation_depth.mean"], 1.0);
        assert_eq!(m["delegation_depth.max"], 2.0);
        assert_eq!(m["delegation_parallel_cost_units.max"], 4.0);
    }
}
