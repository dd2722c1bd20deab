//! Which way a metric is better, for reports that judge a difference (`faultline compare`). Most
//! figures that people compare have an obvious good side: more completions, fewer deadline
//! misses, less amplification, cost and latency. Many others have none (how many runs arrived,
//! how busy a server was, how often a breaker opened: a breaker that opens more may be the one
//! that protects), and a report says only "higher" or "lower" for them.
//!
//! A metric is named by its proper name after any `incident.`, `workflow.<name>.`,
//! `tenant.<name>.`, `mode.<mode>.` or `dependency.<name>.` prefix, so `incident.cost_per_success`
//! is judged as `cost_per_success` (see `range.rs` for the same rule on ranges).

/// The better side of a metric, if it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    HigherIsBetter,
    LowerIsBetter,
    /// Neither side is better in itself: a load, a count of mechanism actions, a utilization.
    Neutral,
}

/// Metrics (or metric + label) where more is better.
const HIGHER: [&str; 6] = [
    "quorum_ratio.met",
    "auto_completion_ratio",
    "full_quality_completion_ratio",
    "safe_outcome_ratio",
    "outcome_total.succeeded",
    "recovery_goodput_floor_ratio",
];

/// Metrics (or metric + label) where less is better; every `*_ms` latency is one too.
const LOWER: [&str; 36] = [
    "quorum_total.not_met",
    "quorum_ratio.not_met",
    "quorum_total.wrong_agreement",
    "quorum_ratio.wrong_agreement",
    "deadline_exceeded_ratio",
    "deadline_exceeded_total",
    "run_past_deadline_ratio",
    "run_past_deadline_total",
    "retry_amplification_ratio",
    "cost_per_success",
    "cost_money_per_success",
    "cost_per_full_quality_success",
    "cost_units_total",
    "cost_money_total",
    "task_cost_units_total",
    "cost_after_caller_left_units_total",
    "cost_after_cancel_units_total",
    "duplicate_effect_total",
    "duplicate_effect_run_total",
    "effect_unknown_total",
    "outcome_total.failed",
    "orphan_task_total",
    "task_duplicate_total",
    "task_running_at_end_total",
    "late_result_total",
    "recovery_time_s",
    "recovery_never_total",
    "recovery_storm_ratio",
    "recovery_peak_ratio",
    "recovery_drain_s",
    "fault_peak_ratio",
    "wasted_service_ratio",
    "queue_rejected_total",
    "degradation_flaps_per_hour",
    "run_on_undetected_bad_result_total",
    "run_on_undetected_bad_result_ratio",
];

impl Direction {
    /// The direction of the metric named `name` (a flat name of docs/metrics.md).
    pub fn of_metric(name: &str) -> Direction {
        let is = |proper: &str| name == proper || name.ends_with(&format!(".{proper}"));
        if HIGHER.iter().any(|m| is(m)) {
            Direction::HigherIsBetter
        } else if LOWER.iter().any(|m| is(m)) || is_latency(name) {
            Direction::LowerIsBetter
        } else {
            Direction::Neutral
        }
    }

    /// As reports and files name it.
    pub fn name(self) -> &'static str {
        match self {
            Direction::HigherIsBetter => "higher_is_better",
            Direction::LowerIsBetter => "lower_is_better",
            Direction::Neutral => "neutral",
        }
    }
}

/// A time some request, call or run took: a segment ending in `_ms` followed by its statistic
/// (`run_latency_ms.p95`, `dependency.db.queue_wait_ms.mean`,
/// `gen_ai.client.operation.duration_ms.p50`). Times spent in a state (`time_in_state_s.open`)
/// are in seconds and have no better side.
fn is_latency(name: &str) -> bool {
    let segments: Vec<&str> = name.split('.').collect();
    segments.len() >= 2 && segments[segments.len() - 2].ends_with("_ms")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headline_figures_have_the_side_readme_calls_better() {
        for name in [
            "auto_completion_ratio",
            "incident.auto_completion_ratio",
            "safe_outcome_ratio",
            "outcome_total.succeeded",
            "workflow.meeting-analysis-draft.full_quality_completion_ratio",
        ] {
            assert_eq!(Direction::of_metric(name), Direction::HigherIsBetter, "{name}");
        }
        for name in [
            "deadline_exceeded_ratio",
            "incident.deadline_exceeded_ratio",
            "retry_amplification_ratio",
            "incident.cost_per_success",
            "run_latency_ms.p95",
            "dependency.model-primary.queue_wait_ms.mean",
            "gen_ai.client.operation.duration_ms.p50",
            "recovery_time_s",
            "dependency.research_agent.recovery_peak_ratio",
            "outcome_total.failed",
        ] {
            assert_eq!(Direction::of_metric(name), Direction::LowerIsBetter, "{name}");
        }
        for name in [
            "logical_run_total",
            "outcome_total.degraded",
            "dependency.station.utilization",
            "breaker.model-primary.time_in_state_s.open",
            "refused_total.circuit_open",
            // A dependency named like a good figure does not make its counts good.
            "dependency.safe_outcome_ratio.attempt_total",
        ] {
            assert_eq!(Direction::of_metric(name), Direction::Neutral, "{name}");
        }
    }
}
