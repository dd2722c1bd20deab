//! Mechanisms that stand between a logical call and its dependency, as an ordered pipeline per
//! policy and dependency (the Polly v8 resilience-pipeline idea): circuit breakers, bulkheads,
//! shared retry budgets, client-side throttling. Each is a plain state machine in its own file,
//! driven by virtual time passed in, unit-tested against its anchor's documented behaviour
//! (docs/references.md sections 3-6). None of them knows the event queue.

pub mod adaptive_throttle;
pub mod admission_control;
pub mod bulkhead;
pub mod circuit_breaker;
pub mod load_shedder;
pub mod pipeline;
pub mod polly_breaker;
pub mod retry_budget;
mod slice_ring;

use crate::sim::Micros;
use crate::vocab::FailureKind;

/// What a guard learns when an attempt it admitted ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptEnd {
    /// None for a success.
    pub failure: Option<FailureKind>,
    /// From the moment the guard admitted the attempt to its end.
    pub duration_us: Micros,
}

impl AttemptEnd {
    pub fn success(duration_us: Micros) -> Self {
        AttemptEnd { failure: None, duration_us }
    }

    pub fn failed(kind: FailureKind, duration_us: Micros) -> Self {
        AttemptEnd { failure: Some(kind), duration_us }
    }
}
