//! The difference B - A of one metric of one policy, with its 95 % interval and a verdict.
//!
//! Two runs on the same replication seeds share their random numbers (arrivals, service times,
//! failures: ARCHITECTURE.md's common random numbers), so replication k of A and replication k
//! of B saw the same world, and their difference is judged on the paired differences
//! `b[k] - a[k]`, exactly as `faultline gate` judges a regression (`batch/slo.rs`): the same
//! Student-t interval, clipped to the range a difference of the metric can take. Runs on other
//! seeds, or on other replication counts, share nothing, and the interval is Welch's over the two
//! independent samples (wider).

use super::saved::SavedPolicy;
use crate::metrics::direction::Direction;
use crate::metrics::range::Range;
use crate::metrics::stats::{Estimate, estimate, welch_difference};

/// How the two sides' replications are related, and so which interval is drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pairing {
    /// Both ran these replication seeds in this order.
    Paired { replications: usize },
    /// The replications share no seeds, for this reason.
    Unpaired(Unpaired),
}

/// Why two sides cannot be paired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unpaired {
    /// Different root seeds (summary.json's `seed`).
    RootSeeds { a: u64, b: u64 },
    /// One root seed, different replication counts (or ranges, `--replication K`).
    Replications { a: usize, b: usize },
    /// The same root seed and count, yet other replication seeds (files of different versions).
    Seeds,
}

impl Pairing {
    pub fn of(a: &SavedPolicy, b: &SavedPolicy) -> Pairing {
        if a.seeds == b.seeds {
            Pairing::Paired { replications: a.seeds.len() }
        } else if a.seed != b.seed {
            Pairing::Unpaired(Unpaired::RootSeeds { a: a.seed, b: b.seed })
        } else if a.seeds.len() != b.seeds.len() {
            Pairing::Unpaired(Unpaired::Replications { a: a.seeds.len(), b: b.seeds.len() })
        } else {
            Pairing::Unpaired(Unpaired::Seeds)
        }
    }

    /// As files name it.
    pub fn name(&self) -> &'static str {
        match self {
            Pairing::Paired { .. } => "paired",
            Pairing::Unpaired(_) => "welch",
        }
    }

    /// Which interval, and why, in a sentence.
    pub fn said(&self) -> String {
        match self {
            Pairing::Paired { replications } => format!(
                "paired intervals: both ran the same {replications} replication seed(s), so replication k of A and B saw the same arrivals and draws (common random numbers)"
            ),
            Pairing::Unpaired(why) => {
                let why = match why {
                    Unpaired::RootSeeds { a, b } => format!("the root seeds differ (A {a}, B {b})"),
                    Unpaired::Replications { a, b } => {
                        format!("the replications differ (A {a}, B {b}), on one root seed")
                    }
                    Unpaired::Seeds => "the replication seeds differ (written by different versions?)".to_string(),
                };
                format!("unpaired (Welch) intervals: {why}, so the replications share no random numbers")
            }
        }
    }
}

/// What the interval of B - A says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Better,
    Worse,
    /// Higher, for a metric with no better side.
    Higher,
    Lower,
    /// The interval holds 0.
    NoClearDifference,
    /// No interval: fewer than two usable replications (or pairs).
    Unknown,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Higher => "higher",
            Verdict::Lower => "lower",
            Verdict::NoClearDifference => "no clear difference",
            Verdict::Unknown => "n/a",
        }
    }

    /// B is higher when the whole interval lies above 0 (as `gate`'s `> 0` passes), lower when
    /// it lies below (`< 0`); the metric's direction makes that better or worse.
    fn of(interval: &Estimate, direction: Direction) -> Verdict {
        let higher = match (interval.low, interval.high) {
            (low, high) if low.is_nan() || high.is_nan() => return Verdict::Unknown,
            (low, _) if low > 0.0 => true,
            (_, high) if high < 0.0 => false,
            _ => return Verdict::NoClearDifference,
        };
        match (direction, higher) {
            (Direction::HigherIsBetter, true) | (Direction::LowerIsBetter, false) => Verdict::Better,
            (Direction::HigherIsBetter, false) | (Direction::LowerIsBetter, true) => Verdict::Worse,
            (Direction::Neutral, true) => Verdict::Higher,
            (Direction::Neutral, false) => Verdict::Lower,
        }
    }
}

/// One metric of one policy on both sides.
#[derive(Debug, Clone)]
pub struct Difference {
    pub metric: String,
    pub direction: Direction,
    /// Each side's mean and 95 % interval over its replications (as summary.json has them).
    pub a: Estimate,
    pub b: Estimate,
    /// B - A, its interval clipped to the range of a difference of the metric.
    pub difference: Estimate,
    /// The Student-t (or Welch) interval, when clipping moved it.
    pub unclipped: Option<(f64, f64)>,
    /// Paired replications where the metric is undefined on a side, left out.
    pub undefined_pairs: usize,
    pub verdict: Verdict,
}

impl Difference {
    pub fn of(metric: &str, a: &[f64], b: &[f64], pairing: &Pairing) -> Difference {
        let direction = Direction::of_metric(metric);
        let range = Range::of_metric(metric).difference();
        let (raw, undefined_pairs) = match pairing {
            Pairing::Paired { .. } => {
                let differences: Vec<f64> = b.iter().zip(a).map(|(b, a)| b - a).collect();
                let e = estimate(differences.iter().copied());
                (e, differences.len() - e.n)
            }
            Pairing::Unpaired(_) => (welch_difference(a, b), 0),
        };
        let difference = raw.within(range);
        Difference {
            metric: metric.to_string(),
            direction,
            a: estimate(a.iter().copied()),
            b: estimate(b.iter().copied()),
            difference,
            unclipped: raw.leaves(range).then_some((raw.low, raw.high)),
            undefined_pairs,
            verdict: Verdict::of(&difference, direction),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paired(n: usize) -> Pairing {
        Pairing::Paired { replications: n }
    }

    /// Pairing removes what both sides share: with a level that varies by replication much more
    /// than the difference, the paired interval finds the difference and Welch's does not.
    #[test]
    fn paired_differences_see_what_welch_cannot() {
        let a = [10.0, 20.0, 30.0, 40.0, 50.0];
        let b = [12.0, 23.0, 34.0, 43.0, 53.0];
        let with = Difference::of("run_latency_ms.p95", &a, &b, &paired(5));
        assert_eq!(with.difference.mean, 3.0);
        assert_eq!(with.verdict, Verdict::Worse, "{with:?}");
        let without = Difference::of("run_latency_ms.p95", &a, &b, &Pairing::Unpaired(Unpaired::Seeds));
        assert!((without.difference.mean - 3.0).abs() < 1e-12);
        assert_eq!(without.verdict, Verdict::NoClearDifference, "{without:?}");
        assert_eq!(Difference::of("auto_completion_ratio", &a, &b, &paired(5)).verdict, Verdict::Better);
        assert_eq!(Difference::of("logical_run_total", &a, &b, &paired(5)).verdict, Verdict::Higher);
        assert_eq!(Difference::of("logical_run_total", &b, &a, &paired(5)).verdict, Verdict::Lower);
    }

    #[test]
    fn a_side_against_itself_differs_by_exactly_zero() {
        let a = [0.91, 0.93, f64::NAN, 0.92];
        let d = Difference::of("safe_outcome_ratio", &a, &a, &paired(4));
        assert_eq!((d.difference.mean, d.difference.low, d.difference.high), (0.0, 0.0, 0.0));
        assert_eq!((d.verdict, d.undefined_pairs), (Verdict::NoClearDifference, 1));
        let one = Difference::of("safe_outcome_ratio", &[0.9], &[0.95], &paired(1));
        assert_eq!(one.verdict, Verdict::Unknown);
    }

    /// A share's difference lies in [-1, 1]: an interval past it is clipped, and said.
    #[test]
    fn an_interval_past_the_range_of_a_difference_is_clipped() {
        let a = [0.0, 0.0];
        let b = [0.1, 0.99];
        let d = Difference::of("deadline_exceeded_ratio", &a, &b, &paired(2));
        assert_eq!(d.difference.high, 1.0);
        assert!(d.unclipped.is_some_and(|(low, high)| low < -1.0 && high > 1.0), "{d:?}");
        assert_eq!(d.difference.low, -1.0);
    }

    #[test]
    fn the_reason_for_welch_is_named() {
        let said = Pairing::Unpaired(Unpaired::RootSeeds { a: 11, b: 12 }).said();
        assert!(said.contains("Welch") && said.contains("root seeds differ (A 11, B 12)"), "{said}");
        assert!(paired(8).said().starts_with("paired intervals: both ran the same 8 replication seed(s)"));
    }
}
