//! The short simulation that answers the behavioural questions: a few replications of each
//! policy on the scenario's seeds, reusing the library's run code (no subprocess), reduced to
//! the mean of each metric over the replications, in replication order (deterministic).

use crate::engine::{Model, SimError};
use crate::experiment::CommandError;
use crate::experiment::batch::replications::run_replications;
use crate::experiment::batch::workers::replication_seed;
use crate::metrics::MetricMap;

/// The replications `check` simulates when `--replications` does not say.
pub const DEFAULT_REPLICATIONS: u32 = 2;

/// One policy's figures: the mean over the replications of each metric (NaN where a
/// replication left it undefined).
#[derive(Debug, Clone, Default)]
pub struct Figures {
    pub replications: u32,
    means: MetricMap,
    /// The short simulation of this policy did not end (its runs outlived
    /// `simulation.drain_limit_s`, or more than `max_in_flight_runs` were alive): which
    /// replication and why. Then no figure is known.
    pub unfinished: Option<String>,
}

impl Figures {
    pub fn from_replications(metrics: &[MetricMap]) -> Figures {
        let mut means = MetricMap::new();
        if let Some(first) = metrics.first() {
            for name in first.keys() {
                let sum: f64 = metrics.iter().map(|m| m.get(name).copied().unwrap_or(f64::NAN)).sum();
                means.insert(name.clone(), sum / metrics.len() as f64);
            }
        }
        Figures { replications: metrics.len() as u32, means, unfinished: None }
    }

    /// A metric's mean; None when the scenario has no such metric or it is undefined.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.means.get(name).copied().filter(|v| !v.is_nan())
    }

    /// A metric's mean, 0 when absent (a counter the scenario never created counted nothing).
    pub fn count(&self, name: &str) -> f64 {
        self.get(name).unwrap_or(0.0)
    }

    /// `name value` for evidence; `name undefined` when it has no value.
    pub fn cite(&self, name: &str) -> String {
        match self.get(name) {
            Some(v) => format!("{name} {}", show(v)),
            None => format!("{name} undefined"),
        }
    }
}

/// A figure for evidence: whole numbers as such, others with at most 4 significant digits.
pub fn show(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    if v == v.trunc() && v.abs() < 1e15 {
        return format!("{}", v as i64);
    }
    let digits = (4 - 1 - v.abs().log10().floor() as i32).clamp(0, 12) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

/// Simulates `replications` replications (at most the scenario's) of each of `policies`, in
/// their order. A policy whose simulation does not end is no bad input but the worst answer to
/// the deadline question: its figures say so (`unfinished`) and the others are still answered.
pub fn simulate(
    model: &Model,
    policies: &[usize],
    replications: u32,
    jobs: usize,
) -> Result<Vec<Figures>, CommandError> {
    let n = replications.min(model.world.replications).max(1);
    match run_replications(model, policies, 0..n, jobs) {
        Ok(runs) => Ok(runs.iter().map(|r| Figures::from_replications(&r.metrics)).collect()),
        Err(e @ CommandError::Input(_)) => unfinished(model, policies, n).ok_or(e),
        Err(e) => Err(e),
    }
}

/// After a batch failed: each policy's replications again, one at a time, to tell which did not
/// end; None when every one ends (the failure was something else, reported as it was).
fn unfinished(model: &Model, policies: &[usize], n: u32) -> Option<Vec<Figures>> {
    let mut any = false;
    let mut all = Vec::new();
    for &p in policies {
        let mut metrics = Vec::new();
        let mut stopped = None;
        for r in 0..n {
            match crate::engine::simulate(model, p, replication_seed(model.world.seed, r)) {
                Ok(rep) => metrics.push(rep.metrics),
                Err(e @ (SimError::DrainLimit { .. } | SimError::TooManyRuns { .. })) => {
                    stopped = Some(format!("replication {r} did not end: {e}"));
                    break;
                }
                Err(SimError::Stopped) => return None,
            }
        }
        let figures = match stopped {
            Some(why) => {
                any = true;
                Figures { replications: n, means: MetricMap::new(), unfinished: Some(why) }
            }
            None => Figures::from_replications(&metrics),
        };
        all.push(figures);
    }
    any.then_some(all)
}

#[cfg(test)]
mod tests {
    use super::show;

    #[test]
    fn figures_read_as_written() {
        assert_eq!(show(3.0), "3");
        assert_eq!(show(1.4), "1.4");
        assert_eq!(show(0.548_123), "0.5481");
        assert_eq!(show(5.5432), "5.543");
        assert_eq!(show(1234.5678), "1235");
    }
}
