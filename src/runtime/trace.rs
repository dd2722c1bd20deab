//! The trace of one root run: what its machine decided and what happened to its attempts at
//! their stations, with the identities the metrics stream leaves out (step, attempt serial,
//! station job). A replication records it only when asked: the engine is generic over a
//! [`Tracer`], and [`NoTrace`] compiles every hook away, so the hot loop pays nothing.

use super::attempt::{AttemptResult, Purpose};
use super::decision::Decision;
use crate::sim::Micros;
use crate::vocab::{AttemptKind, BudgetKind, DegradationMode, FailureKind, Outcome, Refusal};

/// A root run as it starts: its number in the replication (from 1, in start order: the number
/// `replay --run` and explore's reports use), whether it counts in the figures (started after
/// the warm-up), its workflow, which arrival of that workflow, which resubmission of it by the
/// user (0 for the first submission), and its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunStart {
    pub number: u64,
    pub measured: bool,
    pub workflow: u16,
    pub arrival: u32,
    pub resubmission: u8,
    pub deadline_at_us: Micros,
    /// The run's own retry tokens (its degradation mode may lower the policy's).
    pub retry_token_limit: u32,
    /// It runs on the normal policy as part of a recovery's canary.
    pub canary: bool,
}

/// Who waits for a station attempt: a step of the run, or a remote agent's attempt (a job).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceCaller {
    Step {
        step: u8,
        serial: u32,
    },
    /// Sub-attempt `sub_attempt` of repetition `repeat` of the agent's call `call`.
    Remote {
        parent: u32,
        call: u16,
        repeat: u32,
        sub_attempt: u32,
    },
    /// A protocol request (`call`) of the task client of attempt `serial` of step `step`.
    TaskClient {
        step: u8,
        serial: u32,
        call: crate::world::task::TaskCall,
    },
    /// The work of remote task `task` at its runner.
    TaskWork {
        task: u32,
    },
    /// Hidden attempt `retry` (0: the first) of the SDK client's call that is attempt `serial`
    /// of step `step`.
    Sdk {
        step: u8,
        serial: u32,
        retry: u32,
    },
}

/// How a station attempt left its station.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StationExit {
    /// Served; `error` is the reply's failure kind, `reply_lost` when the reply never comes.
    Served { error: Option<FailureKind>, reply_lost: bool },
    /// Refused at the door (queue full, rate limited, down) or dropped from the queue.
    Rejected { kind: FailureKind },
    /// Dropped from the queue before service (max wait, CoDel, caller gone).
    Expired,
    /// The caller cancelled and the dependency honours cancellation.
    Cancelled,
}

/// How a logical call (a step) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepEnd {
    Succeeded {
        via_fallback: bool,
    },
    /// Reconciliation found the write committed.
    Reconciled,
    Omitted,
    Failed,
    /// The write's effect stays unknown: the run is handed to a human.
    Handoff,
    /// The run ended while the step was still going.
    Abandoned,
}

/// Something that happened to the traced run. Small and `Copy`, like observations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TraceEvent {
    /// A remote task created for attempt `serial` of step `step` changed state.
    TaskChanged {
        step: u8,
        serial: u32,
        task: u32,
        dependency: u16,
        state: crate::world::task::TaskState,
        /// The task's own work failed (a tool error, not a protocol error).
        work_failed: bool,
    },
    /// A task client's request to `dependency`, made for attempt `serial` of step `step`, was
    /// answered with the protocol's error (its code and name are the protocol's:
    /// `TaskProtocol::error`).
    TaskCallRefused {
        step: u8,
        serial: u32,
        dependency: u16,
        error: crate::world::task::ProtocolError,
    },
    /// The run started.
    RunStarted {
        start: RunStart,
    },
    /// A logical call began (its predecessors are done and it holds a concurrency token).
    StepStarted {
        step: u8,
    },
    /// The step's own attempts are over; its calls now go to its fallback.
    FallbackStarted {
        step: u8,
        /// Which of the step's fallback candidates (0: the first).
        candidate: u8,
    },
    /// The machine sent an attempt (after any bulkhead wait). `serial` counts every attempt of
    /// the logical call from 0 (primary, fallback, hedges and lookups alike).
    AttemptSent {
        step: u8,
        serial: u32,
        dependency: u16,
        kind: AttemptKind,
        purpose: Purpose,
    },
    /// A bulkhead holds the attempt until a permit frees.
    AttemptWaiting {
        step: u8,
        serial: u32,
        dependency: u16,
        kind: AttemptKind,
        purpose: Purpose,
    },
    /// A guard (or a fan-out limit) refused an attempt before it reached its dependency.
    /// `parked` is the serial of an attempt that waited at a bulkhead until its max wait ran out.
    AttemptRefused {
        step: u8,
        dependency: u16,
        reason: Refusal,
        purpose: Purpose,
        kind: AttemptKind,
        parked: Option<u32>,
    },
    /// The machine got an attempt's result; `kind` is the failure kind it acts on.
    AttemptEnded {
        step: u8,
        serial: u32,
        result: AttemptResult,
        kind: Option<FailureKind>,
    },
    /// The run stopped waiting for an attempt (a hedge's loser, or the run ended).
    AttemptCancelled {
        step: u8,
        serial: u32,
    },
    /// What the runtime decided after the step's failed attempt, and the run's retry tokens
    /// left after it.
    Decided {
        step: u8,
        decision: Decision,
        retry_tokens_left: u32,
    },
    /// A run budget stopped the step (time, retry, cost, concurrency).
    BudgetExhausted {
        step: u8,
        kind: BudgetKind,
    },
    StepEnded {
        step: u8,
        end: StepEnd,
    },
    /// `deadline_exceeded`: no result by the deadline; `past_deadline`: ended after it;
    /// `mode`: the workflow's degradation mode as the run started.
    RunEnded {
        outcome: Outcome,
        deadline_exceeded: bool,
        past_deadline: bool,
        mode: DegradationMode,
    },
    /// Every attempt of the ended run has left its station: its safety is final.
    RunFinalized {
        duplicate_effect: bool,
    },
    /// A station attempt (job) was created; the station's side of an attempt.
    StationArrived {
        job: u32,
        caller: TraceCaller,
        dependency: u16,
    },
    ServiceStarted {
        job: u32,
    },
    /// A token-shaped call's counts, drawn when its attempt (job) arrived.
    TokensDrawn {
        job: u32,
        input: u32,
        output: u32,
        truncated: bool,
    },
    /// The job left its station; `purpose` is the attempt's (a status lookup is on the
    /// control path).
    StationLeft {
        job: u32,
        exit: StationExit,
        purpose: Purpose,
    },
    /// The caller's timeout fired while the job was still at its station or its reply was lost.
    CallerTimedOut {
        job: u32,
    },
    /// Quorum step `step`'s tally decided (docs/scenario.md 6.2): how, how many branches still
    /// out it cancelled, and how many half-open breakers' trial calls it left to finish.
    QuorumDecided {
        step: u8,
        verdict: crate::vocab::QuorumVerdict,
        cancelled: u8,
        left_running: u8,
    },
    /// A write committed at its dependency; `duplicate` when the key had committed before.
    EffectCommitted {
        job: u32,
        duplicate: bool,
    },
    /// Attempt `serial` of step `step` was answered by a stale cache entry after its
    /// dependency failed (RFC 5861 stale-if-error); `marked` when the cache's contract
    /// requires provenance: the run is then degraded and its evidence `stale`.
    CacheStaleAnswer {
        step: u8,
        serial: u32,
        marked: bool,
    },
}

/// What the engine calls as it simulates. `ON` and `DRAWS` are constants, so every hook of
/// [`NoTrace`] disappears at compile time.
pub trait Tracer {
    const ON: bool;
    /// Whether [`Tracer::attempt_drawn`] is wanted (it costs one more service-time sample).
    const DRAWS: bool = false;
    /// What a machine's input carries to report the run's events: nothing at all for
    /// [`NoTrace`], so the engine's per-input context does not grow.
    type Sink<'a>: TraceSink
    where
        Self: 'a;
    /// The sink for inputs of the run in slot `slot`.
    fn sink(&mut self, slot: u32) -> Self::Sink<'_>;
    /// A root run started in run slot `slot`.
    fn run_started(&mut self, slot: u32, now: Micros, start: RunStart);
    /// Something happened to the run in slot `slot` (ignored unless that run is followed, but
    /// every run's end is kept for its summary).
    fn record(&mut self, slot: u32, now: Micros, event: TraceEvent);
    /// An attempt was created with these intrinsic draws (called only when `DRAWS`).
    fn attempt_drawn(&mut self, _attempt: AttemptTrace) {}
    /// A workflow's degradation mode changed to `mode`; `acting` is the mode whose paused writes
    /// now apply to every run of the workflow (the mode left, during a recovery).
    fn mode_changed(&mut self, _now: Micros, _workflow: u16, _mode: DegradationMode, _acting: DegradationMode) {}
}

/// Where a machine's trace events go during one input.
pub trait TraceSink {
    fn record(&mut self, now: Micros, event: TraceEvent);
}

/// One attempt made by a root run, with its intrinsic draws: the uniforms that decide its
/// fate and the service time drawn from the dependency's base distribution (before faults).
/// Recorded by [`DrawRecorder`] (`engine::simulate_traced`); the basis of the
/// common-random-numbers guarantee.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptTrace {
    pub workflow: u16,
    pub arrival: u32,
    pub resubmission: u8,
    pub run_start_us: Micros,
    /// Step index, or None for a remote agent's own call.
    pub step: Option<u8>,
    pub key: u64,
    pub dependency: usize,
    /// A status lookup (its base service time comes from status_lookup_time).
    pub lookup: bool,
    pub at_us: Micros,
    pub draws: [f64; 8],
    pub base_service_ms: f64,
}

/// Keeps every attempt's intrinsic draws and nothing else (the common-random-numbers tests).
#[derive(Debug, Default)]
pub struct DrawRecorder {
    pub attempts: Vec<AttemptTrace>,
}

impl Tracer for DrawRecorder {
    const ON: bool = false;
    const DRAWS: bool = true;
    type Sink<'a> = NoTrace;

    fn sink(&mut self, _: u32) -> NoTrace {
        NoTrace
    }

    fn run_started(&mut self, _: u32, _: Micros, _: RunStart) {}

    fn record(&mut self, _: u32, _: Micros, _: TraceEvent) {}

    fn attempt_drawn(&mut self, attempt: AttemptTrace) {
        self.attempts.push(attempt);
    }
}

/// The engine's default: records nothing, costs nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTrace;

impl TraceSink for NoTrace {
    #[inline(always)]
    fn record(&mut self, _: Micros, _: TraceEvent) {}
}

impl Tracer for NoTrace {
    const ON: bool = false;
    type Sink<'a> = NoTrace;

    #[inline(always)]
    fn sink(&mut self, _: u32) -> NoTrace {
        NoTrace
    }

    #[inline(always)]
    fn run_started(&mut self, _: u32, _: Micros, _: RunStart) {}

    #[inline(always)]
    fn record(&mut self, _: u32, _: Micros, _: TraceEvent) {}
}

/// How a run ended, kept for every root run of a traced replication so a selector ("the first
/// run that failed") can name one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunSummary {
    pub number: u64,
    pub workflow: u16,
    pub start_us: Micros,
    /// Started after the warm-up (counted in the figures).
    pub measured: bool,
    pub outcome: Option<Outcome>,
    pub deadline_exceeded: bool,
    pub duplicate_effect: bool,
    /// The reasons guards refused its attempts for, one bit per `Refusal::index` (a breaker,
    /// bulkhead, budget, shedder, ...); 0 when none was refused.
    pub refusals: u16,
}

impl RunSummary {
    /// Whether a guard refused one of its attempts, for `reason` or (None) for any reason.
    pub fn refused(&self, reason: Option<Refusal>) -> bool {
        match reason {
            Some(r) => self.refusals & (1 << r.index()) != 0,
            None => self.refusals != 0,
        }
    }
}

/// Records every event of the root runs whose numbers are wanted, and a summary of every run.
#[derive(Debug, Default)]
pub struct RunTracer {
    /// Run numbers to record (sorted); empty records none, `all` records every run.
    wanted: Vec<u64>,
    all: bool,
    /// Per run slot: the run number it now holds, if followed, and its summary index.
    slots: Vec<SlotState>,
    pub runs: Vec<RunSummary>,
    /// (run number, time, event) in the order they happened.
    pub events: Vec<(u64, Micros, TraceEvent)>,
}

#[derive(Debug, Clone, Copy, Default)]
struct SlotState {
    summary: Option<usize>,
    followed: bool,
}

impl RunTracer {
    /// Records the events of the runs numbered `wanted` (from 1) and summaries of all runs.
    pub fn for_runs(wanted: &[u64]) -> RunTracer {
        let mut wanted = wanted.to_vec();
        wanted.sort_unstable();
        RunTracer { wanted, ..RunTracer::default() }
    }

    /// Records every event of every run (tests: a run's events must not depend on which runs
    /// are followed).
    pub fn for_all_runs() -> RunTracer {
        RunTracer { all: true, ..RunTracer::default() }
    }

    /// The events of run `number`, in order.
    pub fn events_of(&self, number: u64) -> Vec<(Micros, TraceEvent)> {
        self.events.iter().filter(|(n, _, _)| *n == number).map(|&(_, t, e)| (t, e)).collect()
    }

    fn slot(&mut self, slot: u32) -> &mut SlotState {
        let i = slot as usize;
        if self.slots.len() <= i {
            self.slots.resize(i + 1, SlotState::default());
        }
        &mut self.slots[i]
    }
}

/// A tracer during one input of the run in `slot`: what a recording tracer's `Sink` is.
pub struct SlotSink<'a, T> {
    pub tracer: &'a mut T,
    pub slot: u32,
}

impl<T: Tracer> TraceSink for SlotSink<'_, T> {
    fn record(&mut self, now: Micros, event: TraceEvent) {
        self.tracer.record(self.slot, now, event);
    }
}

impl Tracer for RunTracer {
    const ON: bool = true;
    type Sink<'a> = SlotSink<'a, RunTracer>;

    fn sink(&mut self, slot: u32) -> SlotSink<'_, RunTracer> {
        SlotSink { tracer: self, slot }
    }

    fn run_started(&mut self, slot: u32, now: Micros, start: RunStart) {
        let number = start.number;
        let summary = self.runs.len();
        self.runs.push(RunSummary {
            number,
            workflow: start.workflow,
            start_us: now,
            measured: start.measured,
            outcome: None,
            deadline_exceeded: false,
            duplicate_effect: false,
            refusals: 0,
        });
        let followed = self.all || self.wanted.binary_search(&number).is_ok();
        *self.slot(slot) = SlotState { summary: Some(summary), followed };
        if followed {
            self.events.push((number, now, TraceEvent::RunStarted { start }));
        }
    }

    fn record(&mut self, slot: u32, now: Micros, event: TraceEvent) {
        let Some(state) = self.slots.get(slot as usize).copied() else { return };
        let Some(run) = state.summary.and_then(|i| self.runs.get_mut(i)) else { return };
        // The summary keeps only a run's end; every other event is for followed runs alone.
        if let TraceEvent::RunEnded { outcome, deadline_exceeded, .. } = event {
            run.outcome = Some(outcome);
            run.deadline_exceeded = deadline_exceeded;
        }
        if let TraceEvent::RunFinalized { duplicate_effect } = event {
            run.duplicate_effect = duplicate_effect;
        }
        if let TraceEvent::AttemptRefused { reason, .. } = event {
            const { assert!(Refusal::COUNT <= u16::BITS as usize, "a run's refusals are one u16 of bits") };
            run.refusals |= 1 << reason.index();
        }
        if state.followed {
            self.events.push((run.number, now, event));
        }
    }
}
