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

/// How an admitted attempt's passage through the guards ended, as each guard hears it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The dependency answered, or the caller's timeout fired.
    Outcome(AttemptEnd),
    /// The caller stopped waiting for it: the loser of a hedge, a branch of a run that ended, a
    /// bulkhead permit granted after the run's time ran out.
    Canceled,
    /// It never ran: a guard later in its route refused it, or its bulkhead wait expired.
    Refused,
}

impl Ending {
    /// What guards that only know outcomes (retry budgets) record: anything but an outcome is a
    /// cancellation that took no time.
    pub fn as_attempt_end(self) -> AttemptEnd {
        match self {
            Ending::Outcome(end) => end,
            Ending::Canceled | Ending::Refused => AttemptEnd::failed(FailureKind::Canceled, 0),
        }
    }
}

impl From<AttemptEnd> for Ending {
    fn from(end: AttemptEnd) -> Self {
        Ending::Outcome(end)
    }
}
