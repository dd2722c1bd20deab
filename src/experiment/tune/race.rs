//! Racing on common random numbers: every candidate still in the race has run the same
//! replications (the same seeds), so two candidates are compared by their paired differences.
//! A candidate leaves the race when another is better or equal on every objective and better on
//! one, each judged on the 95 % interval of the paired differences, or when one of the
//! scenario's `[slo]` thresholds fails even on its favourable bound.

use crate::experiment::batch::slo::{Check, Comparison, judge_threshold};
use crate::experiment::command::CommandError;
use crate::metrics::stats::{Estimate, estimate};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Max,
    Min,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Objective {
    pub metric: String,
    pub direction: Direction,
}

impl Objective {
    pub fn label(&self) -> String {
        match self.direction {
            Direction::Max => format!("max:{}", self.metric),
            Direction::Min => format!("min:{}", self.metric),
        }
    }

    pub fn larger_is_better(&self) -> bool {
        match self.direction {
            Direction::Max => true,
            Direction::Min => false,
        }
    }

    /// +1 when larger is better.
    fn sign(&self) -> f64 {
        match self.direction {
            Direction::Max => 1.0,
            Direction::Min => -1.0,
        }
    }
}

pub fn parse_objective(argument: &str) -> Result<Objective, CommandError> {
    let (direction, metric) = match argument.split_once(':') {
        Some(("max", m)) => (Direction::Max, m),
        Some(("min", m)) => (Direction::Min, m),
        _ => {
            return Err(CommandError::Input(format!(
                "argument `--objective {argument}`: write max:METRIC or min:METRIC, like max:auto_completion_ratio"
            )));
        }
    };
    if metric.trim().is_empty() {
        return Err(CommandError::Input(format!("argument `--objective {argument}`: name a metric after the colon")));
    }
    Ok(Objective { metric: metric.trim().to_string(), direction })
}

/// One candidate's values per replication: `objectives[k][r]` is objective k in replication r,
/// `constraints[c][r]` the metric of threshold c.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    pub objectives: Vec<Vec<f64>>,
    pub constraints: Vec<Vec<f64>>,
}

impl Samples {
    pub fn replications(&self) -> usize {
        self.objectives.first().map_or(0, Vec::len)
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Status {
    Racing,
    /// Candidate `by` was better with confidence after `replications` paired replications.
    Dominated {
        by: usize,
        replications: usize,
    },
    /// Threshold `check` failed after `replications`: on its favourable bound while racing, or
    /// on the unfavourable one (as `gate` judges) at the end.
    Infeasible {
        check: String,
        replications: usize,
    },
    /// Every value of every replication so far equals candidate `of`'s: the parameters that
    /// differ change nothing here (a backoff with a single attempt), so only `of` races on, and
    /// this candidate ends as it does.
    Twin {
        of: usize,
        replications: usize,
    },
}

/// Whether `b` dominates `a` on the paired replications they share: on every objective the
/// 95 % interval of b - a (signed so that positive is better) lies at or above 0, and above 0
/// on one of them. An undefined difference never dominates.
pub fn dominates(b: &Samples, a: &Samples, objectives: &[Objective]) -> bool {
    let n = a.replications().min(b.replications());
    if n < 2 {
        return false;
    }
    let mut strictly = false;
    for (k, objective) in objectives.iter().enumerate() {
        let d = estimate((0..n).map(|r| objective.sign() * (b.objectives[k][r] - a.objectives[k][r])));
        if d.n < n || d.low.is_nan() || d.low < 0.0 {
            return false;
        }
        strictly |= d.low > 0.0;
    }
    strictly
}

/// Whether a threshold could still pass: judged on the favourable side of the interval,
/// clipped to the metric's range as `gate` clips it (a bound past the range's edge proves
/// nothing the range does not already say).
pub fn may_pass(check: &Check, e: &Estimate) -> bool {
    if e.mean.is_nan() {
        return false;
    }
    let e = e.within(check.range);
    let (low, high) = if e.low.is_nan() { (e.mean, e.mean) } else { (e.low, e.high) };
    let t = check.threshold;
    match check.comparison {
        Comparison::Less => low < t,
        Comparison::LessOrEqual => low <= t,
        Comparison::Greater => high > t,
        Comparison::GreaterOrEqual => high >= t,
        Comparison::Equal => low <= t && t <= high,
        Comparison::NotEqual => !(low == t && high == t),
    }
}

/// Candidates racing with exactly the values of a lower-numbered one racing become its twins.
pub fn pair_twins(samples: &[Samples], status: &mut [Status]) {
    let same = |a: &Samples, b: &Samples| {
        let bits = |s: &Samples| -> Vec<u64> {
            s.objectives.iter().chain(&s.constraints).flat_map(|v| v.iter().map(|x| x.to_bits())).collect()
        };
        bits(a) == bits(b)
    };
    for i in 0..samples.len() {
        if status[i] != Status::Racing {
            continue;
        }
        if let Some(j) = (0..i).find(|&j| status[j] == Status::Racing && same(&samples[j], &samples[i])) {
            status[i] = Status::Twin { of: j, replications: samples[i].replications() };
        }
    }
}

/// A twin ends as the candidate it follows (on the front, beaten or infeasible), keeping its
/// own status word only while that candidate is on the front.
pub fn settle_twins(status: &mut [Status]) {
    for i in 0..status.len() {
        if let Status::Twin { of, .. } = status[i] {
            let mut root = of;
            while let Status::Twin { of, .. } = status[root] {
                root = of;
            }
            if status[root] != Status::Racing {
                status[i] = status[root].clone();
            }
        }
    }
}

/// Whether every threshold passes as `gate` judges it (on the unfavourable bound).
fn surely_feasible(s: &Samples, checks: &[Check]) -> bool {
    checks.iter().enumerate().all(|(c, check)| surely_feasible_one(s, c, check))
}

/// One elimination step over the candidates still racing. Decisions are taken against the
/// field as it stood when the step began, so the candidates' order does not matter; a
/// dominated candidate names the lowest-numbered candidate that beat it. Only a candidate
/// that already passes every threshold as `gate` judges it may beat another: one that could
/// still turn out infeasible must not push a feasible one off the front.
pub fn eliminate(samples: &[Samples], status: &mut [Status], objectives: &[Objective], checks: &[Check]) {
    for (i, s) in samples.iter().enumerate() {
        if status[i] != Status::Racing {
            continue;
        }
        if let Some(c) =
            checks.iter().enumerate().find(|(c, check)| !may_pass(check, &estimate(s.constraints[*c].iter().copied())))
        {
            status[i] = Status::Infeasible {
                check: format!("{} {}", c.1.metric, c.1.expression),
                replications: s.replications(),
            };
        }
    }
    let field: Vec<usize> = (0..samples.len()).filter(|&i| status[i] == Status::Racing).collect();
    let judges: Vec<usize> = field.iter().copied().filter(|&b| surely_feasible(&samples[b], checks)).collect();
    let beaten: Vec<(usize, usize)> = field
        .iter()
        .filter_map(|&a| {
            judges.iter().find(|&&b| b != a && dominates(&samples[b], &samples[a], objectives)).map(|&b| (a, b))
        })
        .collect();
    for (a, b) in beaten {
        status[a] = Status::Dominated { by: b, replications: samples[a].replications() };
    }
}

/// The end of the race: a candidate still racing must pass every threshold as `gate` judges
/// it (on the unfavourable bound); then one more elimination among those left.
pub fn finish(samples: &[Samples], status: &mut [Status], objectives: &[Objective], checks: &[Check]) {
    for (i, s) in samples.iter().enumerate() {
        if status[i] != Status::Racing {
            continue;
        }
        let failed = checks.iter().enumerate().find(|(c, check)| !surely_feasible_one(s, *c, check));
        if let Some((_, check)) = failed {
            status[i] = Status::Infeasible {
                check: format!("{} {} (judged on the unfavourable bound)", check.metric, check.expression),
                replications: s.replications(),
            };
        }
    }
    eliminate(samples, status, objectives, checks);
}

fn surely_feasible_one(s: &Samples, c: usize, check: &Check) -> bool {
    judge_threshold(check, &s.constraints[c]).0.pass
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(objectives: Vec<Vec<f64>>) -> Samples {
        Samples { objectives, constraints: Vec::new() }
    }

    fn max(metric: &str) -> Objective {
        Objective { metric: metric.into(), direction: Direction::Max }
    }

    fn min(metric: &str) -> Objective {
        Objective { metric: metric.into(), direction: Direction::Min }
    }

    /// Paired differences see through noise the candidates share: b is 1 better than a in
    /// every replication although both vary by 100 between replications.
    #[test]
    fn a_shared_draw_cancels_in_the_paired_difference() {
        let noise = [0.0, 100.0, -50.0, 70.0, 20.0];
        let a = samples(vec![noise.iter().map(|x| 10.0 + x).collect()]);
        let b = samples(vec![noise.iter().map(|x| 11.0 + x).collect()]);
        assert!(dominates(&b, &a, &[max("m")]));
        assert!(!dominates(&a, &b, &[max("m")]));
        assert!(dominates(&a, &b, &[min("m")]));
    }

    /// Better on one objective, worse on the other: neither dominates, both stay.
    #[test]
    fn a_trade_off_keeps_both() {
        let a = samples(vec![vec![1.0, 1.1, 0.9], vec![5.0, 5.2, 4.9]]);
        let b = samples(vec![vec![2.0, 2.1, 1.9], vec![6.0, 6.2, 5.9]]);
        let objectives = [max("completion"), min("cost")];
        assert!(!dominates(&b, &a, &objectives));
        assert!(!dominates(&a, &b, &objectives));
        let mut status = vec![Status::Racing, Status::Racing];
        eliminate(&[a, b], &mut status, &objectives, &[]);
        assert_eq!(status, [Status::Racing, Status::Racing]);
    }

    /// An exact tie on one objective (both always 1) does not stop the other from deciding;
    /// a tie within the noise does.
    #[test]
    fn ties_decide_nothing_and_noise_keeps_both() {
        let objectives = [max("completion"), min("cost")];
        let a = samples(vec![vec![1.0; 4], vec![5.0, 6.0, 5.5, 5.2]]);
        let b = samples(vec![vec![1.0; 4], vec![4.0, 5.0, 4.5, 4.2]]);
        assert!(dominates(&b, &a, &objectives));
        let c = samples(vec![vec![1.0; 4], vec![4.0, 7.0, 4.5, 6.2]]);
        assert!(!dominates(&c, &a, &objectives), "c - a: -1, +1, -1, +1: within noise");
        assert!(!dominates(&a, &c, &objectives));
    }

    /// Two replications are the least that can show confidence; an undefined value never does.
    #[test]
    fn one_replication_or_an_undefined_value_decides_nothing() {
        let a = samples(vec![vec![1.0]]);
        let b = samples(vec![vec![2.0]]);
        assert!(!dominates(&b, &a, &[max("m")]));
        let a = samples(vec![vec![1.0, f64::NAN, 1.0]]);
        let b = samples(vec![vec![2.0, 2.0, 2.0]]);
        assert!(!dominates(&b, &a, &[max("m")]));
    }

    fn check(metric: &str, comparison: Comparison, threshold: f64) -> Check {
        Check {
            metric: metric.into(),
            comparison,
            threshold,
            relative: false,
            expression: format!("{} {threshold}", comparison.symbol()),
            range: crate::metrics::range::Range::of_metric(metric),
        }
    }

    /// A threshold removes a candidate while racing only when even its favourable bound breaks
    /// it; at the end it must pass on the unfavourable bound, as `gate` judges.
    #[test]
    fn thresholds_remove_what_cannot_pass_and_the_end_judges_as_gate_does() {
        let slo = [check("p95", Comparison::Less, 100.0)];
        let objectives = [max("m")];
        let clearly_over =
            Samples { objectives: vec![vec![1.0, 2.0, 3.0]], constraints: vec![vec![150.0, 160.0, 155.0]] };
        let borderline = Samples { objectives: vec![vec![1.0, 2.0, 3.0]], constraints: vec![vec![80.0, 120.0, 99.0]] };
        let under = Samples { objectives: vec![vec![0.0, 1.0, 2.0]], constraints: vec![vec![50.0, 55.0, 52.0]] };
        let all = [clearly_over, borderline, under];
        let mut status = vec![Status::Racing; 3];
        eliminate(&all, &mut status, &objectives, &slo);
        assert!(matches!(status[0], Status::Infeasible { .. }));
        assert_eq!(status[1], Status::Racing, "its lower bound is under 100: it may pass");
        // borderline is better than under by exactly 1 in every replication, but it may yet
        // break the threshold, so it does not push under out.
        assert_eq!(status[2], Status::Racing);
        finish(&all, &mut status, &objectives, &slo);
        assert!(matches!(status[1], Status::Infeasible { .. }), "its upper bound is over 100");
        assert_eq!(status[2], Status::Racing, "under is the front");
    }
}
