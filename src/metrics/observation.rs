//! The one stream the engine reports through: every figure of a replication is derived from
//! these observations by [`Recorder::observe`](super::Recorder::observe), so the engine never
//! touches a counter and a trace of a run can reuse the same stream.

use super::bad_results::BadResultObservation;
use super::delegation::DelegationObservation;
use super::tasks::TaskObservation;
use super::tokens::TokenObservation;
use crate::sim::Micros;
use crate::vocab::{
    ApprovalVerdict, BreakerState, BudgetKind, BudgetState, DegradationMode, EvidenceLevel, FailureKind, Outcome,
    Refusal,
};

/// Something that happened at a moment of virtual time. Small and `Copy`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Observation {
    /// Something about a long-running task or its client.
    Task(TaskObservation),
    /// Something about a token-shaped model call.
    Tokens(TokenObservation),
    /// Something about an answer that looked like success, or a validator.
    BadResult(BadResultObservation),
    /// Something about a delegation hop between agents or a delegating run.
    Delegation(DelegationObservation),
    /// What a dependency's cache did (metrics::cache).
    Cache(super::cache::CacheObservation),
    /// Something about a k-of-n quorum step (metrics::quorum).
    Quorum(super::quorum::QuorumObservation),
    /// A request that loads a dependency without being an attempt of a logical call: a task
    /// client's poll, subscription, lookup or cancel, or a task's work at its runner. Counted
    /// at the dependency and in cost, not in retry amplification.
    RequestSent {
        dependency: u16,
        cost_units: f64,
    },
    RunStarted {
        workflow: u16,
    },
    /// A root run ended; `latency_us` from its start. `deadline_exceeded`: no result by the
    /// deadline (late, or stopped because time ran out); `past_deadline`: ended after it.
    /// `mode` is its workflow's degradation mode as it started, `degraded` the bits of
    /// `DegradedReason` its result lacks.
    RunEnded {
        workflow: u16,
        outcome: Outcome,
        latency_us: Micros,
        deadline_exceeded: bool,
        past_deadline: bool,
        mode: DegradationMode,
        degraded: u8,
        evidence: EvidenceLevel,
    },
    /// A workflow's degradation mode changed; `flap` when it returned to a degraded mode soon
    /// after leaving one.
    ModeTransition {
        workflow: u16,
        from: DegradationMode,
        to: DegradationMode,
        flap: bool,
        /// A canary stage failed (the move back from RECOVERY to the mode it left).
        failed_canary: bool,
    },
    /// A run started as a canary run of a recovery or as a probe run of a half-open breaker.
    ModeRun {
        canary: bool,
        probe: bool,
    },
    /// A run in flight was cancelled as its workflow entered a mode with `cancel_in_flight`.
    RunCancelledByMode,
    /// A workflow's error budget was read at an evaluation: its state, whether a ticket rule
    /// fires, the share of the period's budget spent and the first rule's two burn rates.
    BudgetRead {
        workflow: u16,
        state: BudgetState,
        ticket: bool,
        spent: f32,
        long_burn: f32,
        short_burn: f32,
    },
    /// A fallback's contract refused the step (its context does not fit the fallback's window).
    FallbackRefused,
    /// An approved snapshot came back older than the step's freshness limit.
    EvidenceStale,
    /// A RESULT_INVALID answer was sent back once for repair (`on_schema_failure`).
    SchemaRepair,
    /// An approval step asked its desk for a human's decision.
    ApprovalRequested,
    /// An approval step stopped waiting: its verdict, or the root deadline first
    /// (`PendingAtDeadline`); `wait_us` from the request.
    ApprovalEnded {
        verdict: ApprovalVerdict,
        wait_us: Micros,
    },
    /// An advisory step's result came within its window and was used.
    AdvisoryUsed,
    /// An advisory step failed or its window closed first: left out with a notice.
    AdvisoryOmitted,
    /// The degradation mode refused a new run (PAUSED).
    RunPaused,
    /// The degradation mode stopped a write: the run went to a human.
    WritePaused,
    /// Every attempt of an ended run has left its station: its safety is final.
    RunFinalized {
        outcome: Outcome,
        duplicate_effect: bool,
        start_us: Micros,
    },
    Resubmitted,
    /// A closed population now has `active` users present (all populations together).
    UsersActive {
        active: u32,
    },
    /// A user of a closed population starts thinking for `think_us`.
    UserThought {
        think_us: Micros,
    },
    /// A user stopped waiting for its run's answer (`abandon_after_ms`); the run goes on.
    RunAbandoned,
    /// A user left the population for good after a failure.
    UserLeft,
    LogicalCall,
    BudgetExhausted(BudgetKind),
    /// A write attempt timed out: its effect is unknown.
    EffectUnknown,
    Reconciled,
    /// `step` indexes the model's flattened step names.
    FallbackUsed {
        step: u32,
    },
    /// `by_mode`: the degradation mode did not start it; otherwise it failed.
    StepOmitted {
        step: u32,
        by_mode: bool,
    },
    StepFailed {
        step: u32,
    },
    AttemptSent {
        dependency: u16,
        cost_units: f64,
    },
    /// An SDK client's own retry inside the caller, sent as an attempt (`AttemptSent` too)
    /// that the runtime never sees (runtime::sdk_client).
    HiddenAttempt {
        dependency: u16,
    },
    /// Admission refused a root run before it started; `async_path` when it became an
    /// asynchronous task instead.
    AdmissionRefused {
        async_path: bool,
    },
    /// A hedge was sent for a slow attempt; `HedgeWon` when a hedge's result was the one used.
    HedgeSent {
        dependency: u16,
    },
    HedgeWon {
        dependency: u16,
    },
    /// A mechanism refused an attempt (or a run) before it reached its dependency.
    Refused {
        dependency: u16,
        reason: Refusal,
    },
    /// The station's waiting room was full.
    QueueRejected {
        dependency: u16,
    },
    /// An attempt started service after waiting `wait_us`.
    ServiceStarted {
        dependency: u16,
        wait_us: Micros,
    },
    /// An attempt left its station (served, rejected or cancelled); `error` is the reply's kind.
    Departed {
        dependency: u16,
        sojourn_us: Micros,
        error: Option<FailureKind>,
    },
    /// A server was busy for `busy_us` on one attempt; `wasted` when its caller had given up.
    ServiceUsed {
        dependency: u16,
        busy_us: Micros,
        wasted: bool,
    },
    TimedOut {
        dependency: u16,
    },
    EffectCommitted {
        duplicate: bool,
    },
    /// Busy servers, live queue length or servers in force are about to change at a station.
    StationState {
        dependency: u16,
        busy: u32,
        queued: u32,
        servers: u32,
    },
    /// Queue depth sampled at the end of a time-series window.
    QueueDepth {
        dependency: u16,
        depth: u32,
    },
    /// A breaker's state at the end of a time-series window.
    BreakerHeld {
        breaker: u16,
        state: BreakerState,
    },
    BreakerTransition {
        breaker: u16,
        from: BreakerState,
        to: BreakerState,
    },
}

#[cfg(test)]
mod tests {
    #[test]
    fn observations_stay_small() {
        assert!(std::mem::size_of::<super::Observation>() <= 24, "{}", std::mem::size_of::<super::Observation>());
    }
}
