//! Why an attempt or a root run was refused by a mechanism before it reached a dependency; the
//! names are as in `refused_total.<name>`.

crate::named_enum! {
    #[derive(PartialOrd, Ord)]
    pub enum Refusal {
        /// A circuit breaker is open (or half-open with no permit left).
        CircuitOpen => "circuit_open",
        /// A bulkhead had no free permit within its max_wait_ms.
        Bulkhead => "bulkhead",
        /// A shared retry budget (gRPC throttling, Finagle, Envoy, AWS quota) blocked a retry or hedge.
        RetryBudget => "retry_budget",
        /// Client-side adaptive throttling (Google SRE) or Envoy admission control rejected the call.
        Throttled => "throttled",
        /// Admission control refused a root run.
        Admission => "admission",
        /// A load shedder dropped the call by priority.
        Shed => "shed",
        /// The call waited in a queue past its limit, or its caller had gone.
        Expired => "expired",
        /// A run-level fan-out limit (max_branches, max_total_attempts, max_parallel_cost_units).
        FanOut => "fan_out",
        /// The workflow's degradation mode refuses new runs (PAUSED).
        Paused => "paused",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_follow_all() {
        for (i, r) in Refusal::ALL.into_iter().enumerate() {
            assert_eq!(r.index(), i);
        }
        assert_eq!(Refusal::COUNT, 9);
    }
}
