//! SLO checks, k6 style: `"metric" = ["< 0.05"]`. A check is judged on the side of the 95 %
//! confidence interval that could break it (the upper bound for `<`, the lower for `>`), so a
//! lucky mean does not pass. Regression limits judge paired differences candidate - baseline;
//! a `%` suffix makes the limit relative to the baseline mean.
//!
//! The interval is clipped to the values the judged quantity can take (a share in [0, 1], a
//! count or time from 0; a difference of shares in [-1, 1]) before it is judged. The true mean
//! lies in that range, so the clipped interval is as confident as the Student-t one, and a
//! verdict changes only where the limit lies at or past the range's edge: there the range alone
//! decides the check (`safe_outcome_ratio <= 1` holds and `recovery_time_s < 0` fails whatever
//! the replications say), and the clipped verdict is that one.

use crate::engine::Model;
use crate::metrics::range::Range;
use crate::metrics::stats::{Estimate, estimate};
use crate::scenario::{FieldPath, ScenarioError, Slo, Source, error_at_path, name_hint, quote};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
    Equal,
    NotEqual,
}

impl Comparison {
    pub fn symbol(self) -> &'static str {
        match self {
            Comparison::Less => "<",
            Comparison::LessOrEqual => "<=",
            Comparison::Greater => ">",
            Comparison::GreaterOrEqual => ">=",
            Comparison::Equal => "==",
            Comparison::NotEqual => "!=",
        }
    }

    /// How a failure message names what was compared: the side [`Comparison::judged_on`] names.
    pub fn judged_bound(self) -> &'static str {
        match self {
            Comparison::Less | Comparison::LessOrEqual => "the upper 95 % bound",
            Comparison::Greater | Comparison::GreaterOrEqual => "the lower 95 % bound",
            Comparison::Equal => "a 95 % bound",
            Comparison::NotEqual => "the 95 % interval",
        }
    }

    /// Which side of the 95 % interval [`judge`] compares with the threshold.
    pub fn judged_on(self) -> &'static str {
        match self {
            Comparison::Less | Comparison::LessOrEqual => "upper",
            Comparison::Greater | Comparison::GreaterOrEqual => "lower",
            Comparison::Equal => "both",
            Comparison::NotEqual => "interval",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub metric: String,
    pub comparison: Comparison,
    pub threshold: f64,
    /// The threshold is a percentage of the baseline mean (regression checks only).
    pub relative: bool,
    pub expression: String,
    /// The values the judged quantity can take: the metric's range for a threshold, the range
    /// of a difference of two of its values for a regression limit.
    pub range: Range,
}

#[derive(Debug, Clone, Default)]
pub struct SloChecks {
    pub thresholds: Vec<Check>,
    pub regressions: Vec<Check>,
}

fn parse_expression(text: &str) -> Option<(Comparison, f64, bool)> {
    let t = text.trim();
    let (comparison, rest) = [
        ("<=", Comparison::LessOrEqual),
        (">=", Comparison::GreaterOrEqual),
        ("==", Comparison::Equal),
        ("!=", Comparison::NotEqual),
        ("<", Comparison::Less),
        (">", Comparison::Greater),
    ]
    .iter()
    .find_map(|(sym, c)| t.strip_prefix(sym).map(|rest| (*c, rest.trim())))?;
    let (number, relative) = match rest.strip_suffix('%') {
        Some(n) => (n.trim(), true),
        None => (rest, false),
    };
    let value: f64 = number.parse().ok()?;
    value.is_finite().then_some((comparison, value, relative))
}

/// As [`compile_slo`], but an error in a value that came from `--set slo...` names that argument.
pub fn compile_slo_with(
    slo: Option<&Slo>,
    model: &Model,
    source: &Source,
    overrides: &[crate::scenario::Override],
) -> Result<SloChecks, ScenarioError> {
    compile_slo(slo, model, source).map_err(|e| {
        let addresses = |o: &&crate::scenario::Override| {
            let path = o.path.join(".");
            e.field == path || e.field.starts_with(&format!("{path}.")) || e.field.starts_with(&format!("{path}["))
        };
        match overrides.iter().rev().find(addresses) {
            Some(o) => ScenarioError::in_argument(&o.argument, &e.field, e.message),
            None => e,
        }
    })
}

/// An `incident.*` metric whose whole-run figure exists, in a model with no `incident.*`
/// metric at all (no fault, so no incident window).
fn no_incident_window(metric: &str, names: &[String]) -> bool {
    let Some(base) = metric.strip_prefix("incident.") else { return false };
    names.iter().any(|n| n == base) && !names.iter().any(|n| n.starts_with("incident."))
}

/// Checks the `[slo]` table against the model's metric names.
pub fn compile_slo(slo: Option<&Slo>, model: &Model, source: &Source) -> Result<SloChecks, ScenarioError> {
    let Some(slo) = slo else { return Ok(SloChecks::default()) };
    let names = model.metric_names();
    let mut checks = SloChecks::default();
    let groups = [(&slo.thresholds, false), (&slo.regression, true)];
    for (table, regression) in groups {
        for (metric, expressions) in table {
            let base =
                if regression { FieldPath::root().key("slo").key("regression") } else { FieldPath::root().key("slo") };
            let path = base.key(metric);
            if no_incident_window(metric, &names) {
                // The same file with its faults removed (`--set 'fault=[]'`) has no incident
                // window to judge: the check is left out (docs/scenario.md section 10).
                continue;
            }
            if !names.iter().any(|n| n == metric) {
                let hint = name_hint(metric, &names);
                return Err(error_at_path(
                    source,
                    &path,
                    format!("unknown metric {}{hint}; docs/metrics.md lists them", quote(metric)),
                ));
            }
            for (i, expression) in expressions.iter().enumerate() {
                let (comparison, threshold, relative) = parse_expression(expression).ok_or_else(|| {
                    error_at_path(
                        source,
                        &path.index(i),
                        format!("cannot read {}; write an operator and a number, like \"< 0.05\"", quote(expression)),
                    )
                })?;
                if relative && !regression {
                    return Err(error_at_path(source, &path.index(i), "a % limit applies only under [slo.regression]"));
                }
                let range = Range::of_metric(metric);
                let check = Check {
                    metric: metric.clone(),
                    comparison,
                    threshold,
                    relative,
                    expression: expression.trim().to_string(),
                    range: if regression { range.difference() } else { range },
                };
                if regression { checks.regressions.push(check) } else { checks.thresholds.push(check) }
            }
        }
    }
    Ok(checks)
}

/// The verdict on one check and the value it was judged on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    pub pass: bool,
    pub judged: f64,
}

/// Judges `estimate` against a check (threshold already scaled if relative), on its interval
/// clipped to the check's range (see the module's note). With one replication the interval is
/// unknown and the mean is judged.
pub fn judge(check: &Check, threshold: f64, e: &Estimate) -> Verdict {
    let e = e.within(check.range);
    let (low, high) = if e.low.is_nan() { (e.mean, e.mean) } else { (e.low, e.high) };
    if e.mean.is_nan() {
        return Verdict { pass: false, judged: f64::NAN };
    }
    match check.comparison {
        Comparison::Less => Verdict { pass: high < threshold, judged: high },
        Comparison::LessOrEqual => Verdict { pass: high <= threshold, judged: high },
        Comparison::Greater => Verdict { pass: low > threshold, judged: low },
        Comparison::GreaterOrEqual => Verdict { pass: low >= threshold, judged: low },
        Comparison::Equal => {
            Verdict { pass: low == threshold && high == threshold, judged: if low != threshold { low } else { high } }
        }
        Comparison::NotEqual => Verdict { pass: threshold < low || threshold > high, judged: e.mean },
    }
}

/// Judges a threshold check on the candidate's per-replication values. A replication where
/// the metric is undefined (NaN) makes the check fail: no data is not a pass.
pub fn judge_threshold(check: &Check, values: &[f64]) -> (Verdict, Estimate) {
    let e = estimate(values.iter().copied());
    let verdict = judge(check, check.threshold, &e);
    (Verdict { pass: verdict.pass && e.n == values.len(), ..verdict }, e)
}

/// The limit a regression check compares the paired differences with: the threshold, or for a
/// `%` threshold that share of the magnitude of the baseline's mean.
pub fn regression_limit(check: &Check, baseline: &[f64]) -> f64 {
    if check.relative {
        let base = estimate(baseline.iter().copied()).mean;
        check.threshold / 100.0 * base.abs()
    } else {
        check.threshold
    }
}

/// Judges a regression check on paired differences candidate[r] - baseline[r] (same seeds).
/// A `%` threshold is that share of the baseline mean's magnitude.
pub fn judge_regression(check: &Check, candidate: &[f64], baseline: &[f64]) -> (Verdict, Estimate) {
    let differences: Vec<f64> = candidate.iter().zip(baseline).map(|(c, b)| c - b).collect();
    let e = estimate(differences.iter().copied());
    let verdict = judge(check, regression_limit(check, baseline), &e);
    (Verdict { pass: verdict.pass && e.n == differences.len(), ..verdict }, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(expr: &str) -> Check {
        let (comparison, threshold, relative) = parse_expression(expr).unwrap();
        Check { metric: "m".into(), comparison, threshold, relative, expression: expr.into(), range: Range::ANY }
    }

    fn check_in(expr: &str, range: Range) -> Check {
        Check { range, ..check(expr) }
    }

    fn est(mean: f64, low: f64, high: f64) -> Estimate {
        Estimate { mean, low, high, n: 8 }
    }

    #[test]
    fn regressions_judge_paired_differences_and_relative_limits() {
        // Differences 2, 3, 4, 3, 3: mean 3, sd 0.707, half-width 2.776 * 0.316 = 0.878.
        let candidate = [12.0, 23.0, 34.0, 43.0, 53.0];
        let baseline = [10.0, 20.0, 30.0, 40.0, 50.0];
        let (v, e) = judge_regression(&check("<= 4"), &candidate, &baseline);
        assert_eq!(e.mean, 3.0);
        assert!(v.pass && (v.judged - 3.878).abs() < 1e-3, "{v:?}");
        assert!(!judge_regression(&check("<= 3.5"), &candidate, &baseline).0.pass, "judged on the upper bound");
        // Baseline mean 30: 10 % is 3, 15 % is 4.5.
        assert!(!judge_regression(&check("<= 10%"), &candidate, &baseline).0.pass);
        assert!(judge_regression(&check("<= 15%"), &candidate, &baseline).0.pass);
        // Pairing matters: unpaired, the spread of the levels would swamp the difference.
        let shuffled = [53.0, 43.0, 34.0, 23.0, 12.0];
        assert!(!judge_regression(&check("<= 4"), &shuffled, &baseline).0.pass);
    }

    #[test]
    fn undefined_replications_fail_a_check() {
        let (v, e) = judge_threshold(&check("< 10"), &[1.0, f64::NAN, 2.0]);
        assert_eq!(e.n, 2);
        assert!(!v.pass, "a replication without data is not a pass");
        assert!(judge_threshold(&check("< 10"), &[1.0, 2.0, 1.5]).0.pass);
    }

    #[test]
    fn expressions_parse_like_k6() {
        assert_eq!(parse_expression("< 0.05"), Some((Comparison::Less, 0.05, false)));
        assert_eq!(parse_expression("<=10000"), Some((Comparison::LessOrEqual, 10_000.0, false)));
        assert_eq!(parse_expression("== 0"), Some((Comparison::Equal, 0.0, false)));
        assert_eq!(parse_expression(">= 5 %"), Some((Comparison::GreaterOrEqual, 5.0, true)));
        assert_eq!(parse_expression("about 3"), None);
        assert_eq!(parse_expression("< x"), None);
        assert_eq!(parse_expression("< inf"), None);
    }

    #[test]
    fn judged_on_the_unfavourable_bound() {
        // mean passes, upper bound does not
        assert!(!judge(&check("< 0.05"), 0.05, &est(0.04, 0.03, 0.06)).pass);
        assert!(judge(&check("< 0.05"), 0.05, &est(0.04, 0.03, 0.045)).pass);
        assert!(!judge(&check("> 0.9"), 0.9, &est(0.95, 0.89, 0.99)).pass);
        assert!(judge(&check(">= 0.9"), 0.9, &est(0.95, 0.9, 0.99)).pass);
        assert!(judge(&check("== 0"), 0.0, &est(0.0, 0.0, 0.0)).pass);
        assert!(!judge(&check("== 0"), 0.0, &est(0.1, -0.1, 0.3)).pass);
        assert!(judge(&check("!= 1"), 1.0, &est(3.0, 2.0, 4.0)).pass);
        assert!(!judge(&check("!= 3"), 3.0, &est(3.0, 2.0, 4.0)).pass);
        // one replication: the mean is judged
        let single = Estimate { mean: 0.04, low: f64::NAN, high: f64::NAN, n: 1 };
        assert!(judge(&check("< 0.05"), 0.05, &single).pass);
        let none = Estimate { mean: f64::NAN, low: f64::NAN, high: f64::NAN, n: 0 };
        assert!(!judge(&check("< 0.05"), 0.05, &none).pass, "no data never passes");
    }

    /// A bound past the range's edge is judged at the edge: only checks the range decides on
    /// its own change their verdict, and every other verdict stays.
    #[test]
    fn a_clipped_bound_changes_only_what_the_range_decides() {
        let share = Range::FRACTION;
        let near_one = est(0.998, 0.995, 1.001);
        // The range decides: a share is at most 1 and never above it.
        assert!(!judge(&check("<= 1"), 1.0, &near_one).pass, "unclipped, 1.001 breaks <= 1");
        let v = judge(&check_in("<= 1", share), 1.0, &near_one);
        assert!(v.pass && v.judged == 1.0, "{v:?}");
        assert!(judge(&check_in("!= 1.0005", share), 1.0005, &near_one).pass);
        // The data decide, as without the range.
        for (expr, threshold) in [("< 1", 1.0), ("<= 0.999", 0.999), ("> 0.996", 0.996), ("== 1", 1.0), ("!= 1", 1.0)] {
            let plain = judge(&check(expr), threshold, &near_one).pass;
            assert_eq!(judge(&check_in(expr, share), threshold, &near_one).pass, plain, "{expr}");
            assert!(!plain, "{expr}");
        }
        assert!(judge(&check_in(">= 0.99", share), 0.99, &near_one).pass);
        // A recovery time of 52.5 s, [-20.6, 125.6]: at least 0 whatever happens; below 0 never.
        let recovery = est(52.5, -20.6, 125.6);
        let time = Range::NON_NEGATIVE;
        assert!(!judge(&check(">= 0"), 0.0, &recovery).pass);
        assert!(judge(&check_in(">= 0", time), 0.0, &recovery).pass);
        assert!(!judge(&check_in("> 0", time), 0.0, &recovery).pass, "0 is not above 0");
        assert!(!judge(&check_in("< 0", time), 0.0, &recovery).pass);
        assert!(!judge(&check_in("< 100", time), 100.0, &recovery).pass, "the upper bound is not clipped");
        // A regression limit is judged on the range of a difference: shares differ by 1 at most.
        let differences = est(-0.2, -1.3, 0.9);
        assert!(judge(&check_in(">= -1", share.difference()), -1.0, &differences).pass);
        assert!(!judge(&check_in(">= -0.5", share.difference()), -0.5, &differences).pass);
    }

    #[test]
    fn checks_carry_their_metrics_range() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/mmc.toml");
        let source = crate::scenario::load_file(&path).unwrap();
        let slo = r#"slo={ safe_outcome_ratio = ["> 0.9"], "run_latency_ms.p95" = ["< 100"], regression = { safe_outcome_ratio = ["<= 0"], cost_units_total = ["<= 0"] } }"#;
        let overrides = [crate::scenario::parse_override(slo).unwrap()];
        let (model, scenario) = crate::experiment::batch::load::compile_scenario(&source, &overrides).unwrap();
        let checks = compile_slo(scenario.slo.as_ref(), &model, &source).unwrap();
        let ranges = |c: &[Check]| -> Vec<(String, Range)> { c.iter().map(|c| (c.metric.clone(), c.range)).collect() };
        assert_eq!(
            ranges(&checks.thresholds),
            [("run_latency_ms.p95".into(), Range::NON_NEGATIVE), ("safe_outcome_ratio".into(), Range::FRACTION)]
        );
        assert_eq!(
            ranges(&checks.regressions),
            [("cost_units_total".into(), Range::ANY), ("safe_outcome_ratio".into(), Range { low: -1.0, high: 1.0 })]
        );
    }
}
