//! Why an attempt or a root run was refused by a mechanism before it reached a dependency.

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Refusal {
    /// A circuit breaker is open (or half-open with no permit left).
    CircuitOpen,
    /// A bulkhead had no free permit within its max_wait_ms.
    Bulkhead,
    /// A shared retry budget (gRPC throttling, Finagle, Envoy, AWS quota) blocked a retry or hedge.
    RetryBudget,
    /// Client-side adaptive throttling (Google SRE) rejected the call locally.
    Throttled,
    /// Admission control refused a root run.
    Admission,
    /// A load shedder dropped the call by priority.
    Shed,
    /// The call waited in a queue past its max_wait_ms.
    Expired,
    /// A run-level fan-out limit (max_branches, max_total_attempts, max_parallel_cost_units).
    FanOut,
}

impl Refusal {
    pub const COUNT: usize = 8;
    pub const ALL: [Refusal; Self::COUNT] = [
        Refusal::CircuitOpen,
        Refusal::Bulkhead,
        Refusal::RetryBudget,
        Refusal::Throttled,
        Refusal::Admission,
        Refusal::Shed,
        Refusal::Expired,
        Refusal::FanOut,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    /// As in `refused_total.<name>`.
    pub fn name(self) -> &'static str {
        match self {
            Refusal::CircuitOpen => "circuit_open",
            Refusal::Bulkhead => "bulkhead",
            Refusal::RetryBudget => "retry_budget",
            Refusal::Throttled => "throttled",
            Refusal::Admission => "admission",
            Refusal::Shed => "shed",
            Refusal::Expired => "expired",
            Refusal::FanOut => "fan_out",
        }
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
    }
}
