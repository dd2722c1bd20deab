//! The values a metric can take, as docs/metrics.md defines it. A share of a whole (a ratio of
//! runs, attempts or time whose unit is `ratio`, and `recovery_never_total`, 0 or 1 per
//! replication) lies in [0, 1]; every other metric faultline makes is a count, a time, a cost,
//! a rate or a quotient of such, none of which is ever negative. A Student-t interval knows
//! nothing of this: with few replications it leaves the range (`recovery_time_s` 52 ±73 is
//! [-21, 126]), and reports that judge or print a bound clip it to the range.

use std::fmt;

/// The closed interval a value lies in; a side without a bound is infinite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    pub low: f64,
    pub high: f64,
}

/// The metrics that are a share of a whole, by the metric proper: the name's last segment, after
/// any `dependency.<name>.`, `workflow.<name>.`, `tenant.<name>.`, `mode.<mode>.` or
/// `incident.` prefix. No metric has a label after one of these, and every label that ends a
/// name (`outcome_total.<outcome>`, `run_latency_ms.p95`) comes from a closed set of words
/// none of which is one of these, so the last segment names the metric. The other quotients
/// can exceed 1: `retry_amplification_ratio` (attempts per call), `utilization` (during a
/// capacity cut), the recovery storm, peak and goodput-floor ratios.
const FRACTIONS: [&str; 13] = [
    "auto_completion_ratio",
    "full_quality_completion_ratio",
    "safe_outcome_ratio",
    "deadline_exceeded_ratio",
    "run_past_deadline_ratio",
    "rejection_ratio",
    "wait_probability",
    "wasted_service_ratio",
    "recovery_never_total",
    "run_on_undetected_bad_result_ratio",
    "advisory_omitted_ratio",
    "cache_hit_ratio",
    "cache_stale_run_ratio",
];

/// Shares whose name ends in a label from a closed set (`cache_lookup_ratio.<state>`): the
/// segment before the label names the metric.
const LABELLED_FRACTIONS: [&str; 2] = ["cache_lookup_ratio", "quorum_ratio"];

impl Range {
    pub const FRACTION: Range = Range { low: 0.0, high: 1.0 };
    pub const NON_NEGATIVE: Range = Range { low: 0.0, high: f64::INFINITY };
    pub const ANY: Range = Range { low: f64::NEG_INFINITY, high: f64::INFINITY };

    /// The range of the metric named `name` (a flat name of docs/metrics.md).
    pub fn of_metric(name: &str) -> Range {
        let mut segments = name.rsplit('.');
        let leaf = segments.next().unwrap_or(name);
        let labelled = segments.next().is_some_and(|metric| LABELLED_FRACTIONS.contains(&metric));
        if FRACTIONS.contains(&leaf) || labelled { Range::FRACTION } else { Range::NON_NEGATIVE }
    }

    /// The range of a - b for a and b in this range: a paired difference candidate - baseline.
    pub fn difference(self) -> Range {
        Range { low: self.low - self.high, high: self.high - self.low }
    }

    /// `v` moved to the nearer edge if it lies outside; NaN stays NaN.
    pub fn clip(self, v: f64) -> f64 {
        if v < self.low {
            self.low
        } else if v > self.high {
            self.high
        } else {
            v
        }
    }

    pub fn contains(self, v: f64) -> bool {
        self.low <= v && v <= self.high
    }
}

/// As reports say it: `[0, 1]`, `>= 0`, `<= 0`, `any value`.
impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.low.is_finite(), self.high.is_finite()) {
            (true, true) => write!(f, "[{}, {}]", self.low, self.high),
            (true, false) => write!(f, ">= {}", self.low),
            (false, true) => write!(f, "<= {}", self.high),
            (false, false) => f.write_str("any value"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_fractions_and_the_rest_is_never_negative() {
        for name in [
            "safe_outcome_ratio",
            "incident.deadline_exceeded_ratio",
            "mode.recovery.auto_completion_ratio",
            "workflow.meeting-analysis-draft.deadline_exceeded_ratio",
            "dependency.model-primary.wasted_service_ratio",
            "dependency.db.wait_probability",
            "recovery_never_total",
        ] {
            assert_eq!(Range::of_metric(name), Range::FRACTION, "{name}");
        }
        for name in [
            "retry_amplification_ratio",
            "recovery_storm_ratio",
            "recovery_goodput_floor_ratio",
            "dependency.research_agent.recovery_peak_ratio",
            "dependency.research_agent.fault_peak_ratio",
            "dependency.model-primary.utilization",
            "recovery_time_s",
            "run_latency_ms.p95",
            "outcome_total.succeeded",
            "cost_per_success",
            // A dependency named like a share does not make its counts shares.
            "dependency.safe_outcome_ratio.attempt_total",
        ] {
            assert_eq!(Range::of_metric(name), Range::NON_NEGATIVE, "{name}");
        }
    }

    #[test]
    fn clipping_moves_only_what_lies_outside() {
        let r = Range::FRACTION;
        assert_eq!((r.clip(-0.2), r.clip(0.4), r.clip(1.001)), (0.0, 0.4, 1.0));
        assert!(r.clip(f64::NAN).is_nan());
        assert_eq!(Range::NON_NEGATIVE.clip(-20.6), 0.0);
        assert_eq!(Range::NON_NEGATIVE.clip(1e300), 1e300);
        assert_eq!(Range::FRACTION.difference(), Range { low: -1.0, high: 1.0 });
        assert_eq!(Range::NON_NEGATIVE.difference(), Range::ANY);
        assert_eq!(Range::ANY.difference(), Range::ANY);
        assert_eq!(Range::ANY.clip(-1e300), -1e300);
        let said: Vec<String> = [Range::FRACTION, Range::NON_NEGATIVE, Range::FRACTION.difference(), Range::ANY]
            .iter()
            .map(|r| r.to_string())
            .collect();
        assert_eq!(said, ["[0, 1]", ">= 0", "[-1, 1]", "any value"]);
    }

    /// docs/metrics.md is the definition: every metric whose unit is a plain `ratio` (not "can
    /// exceed 1") or 0-or-1 is a fraction, every other one is a count, time, cost or rate.
    #[test]
    fn every_documented_metric_has_the_range_its_unit_says() {
        let doc = include_str!("../../docs/metrics.md");
        let mut rows = 0;
        for line in doc.lines().filter(|l| l.starts_with("| `")) {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            // | name | meaning | unit | undefined when | example |: metric tables only.
            if cells.len() != 7 {
                continue;
            }
            let unit = cells[3];
            let want = match unit {
                "ratio" | "replications (0 or 1)" => Range::FRACTION,
                _ => Range::NON_NEGATIVE,
            };
            // A cell may name several (`a`, `.p50`); placeholders like `<reason>` are labels.
            for name in cells[1].split('`').skip(1).step_by(2) {
                let name = name.replace(['<', '>'], "");
                assert_eq!(Range::of_metric(&name), want, "{name} (unit `{unit}`)");
                rows += 1;
            }
        }
        assert!(rows > 100, "only {rows} metrics read from docs/metrics.md");
    }
}
