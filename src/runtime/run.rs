//! The lifecycle of one root run as a pure machine: inputs in (start, an attempt's result, a
//! timer, a bulkhead permit), commands and observations out (send, cancel, sleep, end). It
//! walks the workflow graph under the run's four budgets (docs/essay.md section 5), asks the guard
//! pipeline before every attempt, applies the retry decisions of [`decide`], falls back, omits
//! soft steps, reconciles writes whose effect is unknown, and ends with an outcome. It never
//! sees the event queue or a station: the engine drives it and carries out its commands.

use super::admission::{AdmissionDecision, decide_admission};
use super::attempt::{AttemptResult, Purpose};
use super::budget::{RunBudget, Spend};
use super::command::{Command, Effects};
use super::deadline::retry_fits;
use super::deadline::{AttemptTimeout, attempt_timeout};
use super::decision::{Decision, FailedAttempt, GiveUp, OnEffectUnknown, decide, retry_or_give_up};
use super::degradation::{FallbackMode, ModeOverrides, RunMode, Treatment, WritePause};
use super::guard::pipeline::{Admit, Held, Pipeline, RouteId};
use super::guard::{Ask, AttemptInfo, Loads};
use super::guard::{AttemptEnd, Ending};
use super::policy::PolicyModel;
use super::step::{StepPhase, StepState};
use super::step_policy::{OnGiveUp, OnSchemaFailure, StepPolicy, reduced_tokens};
use super::trace::{StepEnd, TraceEvent};
use super::validator::{PendingValidation, TAG_VALIDATOR, Verdict};
use super::workflow::{StepModel, WorkflowModel};
use crate::metrics::Observation;
use crate::metrics::bad_results::BadResultObservation;
use crate::scenario::{Criticality, Effect, Idempotency};
use crate::sim::{Micros, StreamKey};
use crate::vocab::{
    ApprovalVerdict, AttemptKind, BudgetKind, DegradationMode, DegradedReason, EvidenceLevel, FailureKind, Outcome,
    Refusal,
};
use crate::world::DependencyModel;
use crate::world::approval::{ApprovalDesk, Scheduled};
use crate::world::bad_result::BadResult;
use std::collections::VecDeque;

mod quorum;

/// Purpose tag of the backoff jitter draws below a run's key.
pub const TAG_JITTER: u64 = 2;
/// Purpose tag of the guards' draws (throttling) below a run's key.
pub const TAG_GUARD: u64 = 4;
/// Purpose tag of a step's token counts (its context size): defined with the step's draws.
pub use super::workflow::TAG_CONTEXT;
/// Purpose tag of the age of the snapshot a step is served, below a run's key: the same draws
/// under every policy.
pub const TAG_SNAPSHOT_AGE: u64 = 7;
/// Purpose tag of an approval's draws (decision time, then approve or refuse) below a run's
/// key: the same human decides alike under every policy.
pub const TAG_APPROVAL: u64 = 11;

/// An approval step's request, waiting for its verdict or the root deadline.
#[derive(Debug, Clone, Copy)]
struct AwaitedApproval {
    step: u8,
    wake: u32,
    requested_at: Micros,
    scheduled: Scheduled,
}

/// Everything a run machine reads besides its own state, and the shared guards it asks.
pub struct RunContext<'a, 'p> {
    pub now: Micros,
    pub workflow: &'a WorkflowModel,
    pub policy: &'a PolicyModel,
    pub workflow_index: usize,
    /// cost_units per dependency.
    pub costs: &'a [f64],
    /// The first entry of this workflow in the model's flattened step list.
    pub step_offset: u32,
    pub pipeline: &'a mut Pipeline<'p>,
    /// The dependencies' load now, for load shedders.
    pub loads: Loads<'a>,
    /// Names this run's waiting attempts in bulkhead queues (see [`waiter_token`]).
    pub run_slot: u32,
    /// The writes the workflow's degradation mode stops now (they go to a human).
    pub writes_paused: WritePause<'a>,
    /// Each dependency's approval desk (empty at other dependencies): the humans are shared
    /// by every run of the replication.
    pub approvals: &'a mut [ApprovalDesk],
}

impl RunContext<'_, '_> {
    /// The dependency and guard route of step `s`'s next call: its own, or the fallback
    /// candidate's it is on.
    fn target(&self, s: u8, st: StepState) -> (usize, RouteId) {
        let (step, sp) = self.step(s);
        match (st.on_fallback, sp.candidate(st.candidate)) {
            (true, Some(c)) => (c.dependency, c.route),
            (true, None) | (false, _) => (step.dependency, sp.routes.primary),
        }
    }

    fn info(&self, kind: AttemptKind, control: bool, after: Option<FailureKind>) -> AttemptInfo {
        AttemptInfo { kind, control, after, priority: self.workflow.priority, load_units: self.workflow.load_units }
    }

    fn step(&self, s: u8) -> (&StepModel, &StepPolicy) {
        (&self.workflow.steps[s as usize], &self.policy.steps[self.workflow_index][s as usize])
    }
}

/// A waiting attempt's name: which run slot, step and serial it is.
fn waiter_token(run_slot: u32, step: u8, serial: u32) -> u64 {
    (u64::from(run_slot) << 32) | (u64::from(step) << 24) | u64::from(serial & 0x00FF_FFFF)
}

/// The parts of a waiter token: (run slot, step, serial modulo 2^24).
pub fn split_waiter_token(token: u64) -> (u32, u8, u32) {
    ((token >> 32) as u32, (token >> 24) as u8, (token & 0x00FF_FFFF) as u32)
}

/// An attempt the run still waits for.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    step: u8,
    serial: u32,
    dependency: u16,
    route: RouteId,
    /// The guards' view of the attempt, less what the workflow gives (see [`InFlight::info`]):
    /// kept small, as every attempt is copied in and out of the list.
    kind: AttemptKind,
    control: bool,
    after: Option<FailureKind>,
    held: Held,
    purpose: Purpose,
    sent_us: Micros,
    /// Still queued at this bulkhead (a guard index): not sent yet.
    waiting_at: Option<u16>,
    cost: f64,
    /// The driver's name for the attempt once sent (see [`RunMachine::attach`]).
    handle: Option<u64>,
}

impl InFlight {
    fn waiting(&self) -> bool {
        self.waiting_at.is_some()
    }

    fn info(&self, cx: &RunContext) -> AttemptInfo {
        cx.info(self.kind, self.control, self.after)
    }
}

#[derive(Clone)]
pub struct RunMachine {
    pub workflow: u16,
    pub key: StreamKey,
    pub start_us: Micros,
    pub budget: RunBudget,
    pub steps: Vec<StepState>,
    /// Ready steps waiting for a concurrency token, first come first served.
    waiting: VecDeque<u8>,
    steps_open: u32,
    /// What the result lacks (bits of [`DegradedReason`]); empty: full quality.
    degraded: u8,
    /// Those of `degraded` the run's mode did not choose (a failure, not an omission or a
    /// fallback the mode asked for).
    own_degraded: u8,
    /// The step that ended the run (failed or handed off) had run out of time: no result by
    /// the deadline.
    time_ran_out: bool,
    /// How the degradation mode treats this run (normal for a policy without modes), and the
    /// scalar part of its overrides, read from the policy as the run starts.
    pub mode: RunMode,
    treatment: Treatment,
    /// The worst evidence its retrieval steps used.
    evidence: EvidenceLevel,
    /// The run was handed off because the mode paused its write.
    write_paused: bool,
    /// The run was cancelled as its workflow entered a mode with `cancel_in_flight`.
    cancelled_by_mode: bool,
    /// The step whose failure or hand-off ended the run, if one did.
    ended_by: Option<u8>,
    /// The run ended with no result by its deadline (its `deadline_exceeded`).
    deadline_exceeded_at_end: bool,
    pub ended: bool,
    pub outcome: Outcome,
    in_flight: Vec<InFlight>,
    /// Attempts made so far and the cost of those in flight (fan-out limits).
    attempts_total: u32,
    cost_in_flight: f64,
    /// Answers whose validator has not spoken yet (runtime/validator.rs).
    validations: Vec<PendingValidation>,
    /// Some step's answer was bad and no validator caught it: the run's answer rests on it.
    rests_on_bad_result: bool,
    /// Approval steps waiting for a human (docs/essay.md section 4); empty in most runs.
    approvals: Vec<AwaitedApproval>,
    /// Advisory steps whose window is open: (step, wake token).
    advisory_windows: Vec<(u8, u32)>,
    /// Quorum steps whose tally is undecided (runtime/run/quorum.rs); empty in most runs.
    quorums: Vec<super::quorum_step::QuorumRun>,
    /// Attempts the run no longer waits for whose end a guard must still hear: a half-open
    /// breaker's trial call that a quorum decided without (runtime/run/quorum.rs). Only
    /// attempts sent straight to a station go here, so each one's result comes back while
    /// its run's slot is held (the station counts it in the run's outstanding attempts).
    detached: Vec<InFlight>,
}

impl RunMachine {
    pub fn vacant() -> RunMachine {
        RunMachine {
            workflow: 0,
            key: StreamKey::root(0),
            start_us: 0,
            budget: RunBudget::new(&Default::default(), 0),
            steps: Vec::new(),
            waiting: VecDeque::new(),
            steps_open: 0,
            degraded: 0,
            own_degraded: 0,
            time_ran_out: false,
            mode: NORMAL_RUN,
            treatment: Treatment::PLAIN,
            evidence: EvidenceLevel::Live,
            write_paused: false,
            cancelled_by_mode: false,
            ended_by: None,
            deadline_exceeded_at_end: false,
            ended: false,
            outcome: Outcome::Failed,
            in_flight: Vec::new(),
            attempts_total: 0,
            cost_in_flight: 0.0,
            validations: Vec::new(),
            rests_on_bad_result: false,
            approvals: Vec::new(),
            advisory_windows: Vec::new(),
            quorums: Vec::new(),
            detached: Vec::new(),
        }
    }

    /// Makes a (possibly reused) machine a fresh run; keeps its buffers' capacity.
    pub fn reset(
        &mut self,
        workflow: u16,
        model: &WorkflowModel,
        key: StreamKey,
        now: Micros,
        budget: RunBudget,
        mode: RunMode,
    ) {
        self.workflow = workflow;
        self.key = key;
        self.start_us = now;
        self.budget = budget;
        self.steps.clear();
        self.steps.extend(model.steps.iter().map(|s| StepState::new(s.predecessors)));
        self.waiting.clear();
        self.steps_open = model.steps.len() as u32;
        self.degraded = 0;
        self.own_degraded = 0;
        self.time_ran_out = false;
        self.mode = mode;
        self.evidence = EvidenceLevel::Live;
        self.write_paused = false;
        self.cancelled_by_mode = false;
        self.ended_by = None;
        self.deadline_exceeded_at_end = false;
        self.ended = false;
        self.outcome = Outcome::Failed;
        self.in_flight.clear();
        self.attempts_total = 0;
        self.cost_in_flight = 0.0;
        self.validations.clear();
        self.rests_on_bad_result = false;
        self.approvals.clear();
        self.advisory_windows.clear();
        self.quorums.clear();
        debug_assert!(self.detached.is_empty(), "a slot is reused only once its attempts have ended");
        self.detached.clear();
    }

    /// The driver names a sent attempt; a cancel gives the name back, so the driver keeps no
    /// table of its own. The newest attempt is the likeliest, so the search starts at the end.
    pub fn attach(&mut self, s: u8, serial: u32, handle: u64) {
        if let Some(a) = self.in_flight.iter_mut().rev().find(|a| a.step == s && a.serial == serial) {
            a.handle = Some(handle);
        }
    }

    /// The guard route an attempt in flight was admitted on, and the name the guards know it by
    /// (an SDK call's hidden attempts are reported to them: `Pipeline::sdk_attempt_end`).
    pub fn route_of(&self, s: u8, serial: u32) -> Option<(RouteId, u64)> {
        self.in_flight.iter().rev().find(|a| a.step == s && a.serial == serial).map(|a| (a.route, a.held.waiter))
    }

    /// Removes an attempt the run waited for, with its step's and the run's bookkeeping.
    #[inline(always)]
    fn take_in_flight(&mut self, i: usize) -> InFlight {
        // The only attempt, or the newest, is the common case: no shift, no memmove.
        let a = if i + 1 == self.in_flight.len() {
            self.in_flight.pop().expect("i is in range")
        } else {
            self.in_flight.remove(i)
        };
        let st = &mut self.steps[a.step as usize];
        debug_assert!(st.in_flight > 0, "a step's attempts in flight never go below zero");
        st.in_flight -= 1;
        self.cost_in_flight = (self.cost_in_flight - a.cost).max(0.0);
        a
    }

    /// Whether the run's fan-out limits allow one more attempt costing `cost`.
    fn fan_out_allows(&self, cost: f64) -> bool {
        self.treatment.fan_out.allows_attempt(self.attempts_total, self.cost_in_flight, cost)
    }

    /// What the run's degradation mode changes (the policy itself in normal operation).
    fn overrides<'c>(&self, cx: &RunContext<'c, '_>) -> &'c ModeOverrides {
        &cx.policy.modes[self.mode.overrides.index()]
    }

    /// Whether the run left a write whose effect it does not know (an integrity signal).
    pub fn left_effect_unknown(&self) -> bool {
        self.outcome == Outcome::Handoff && self.steps.iter().any(|st| st.effect_unknown)
    }

    /// Whether it left a write to dependency `d` (the step's own) whose effect it does not know.
    pub fn left_effect_unknown_at(&self, workflow: &WorkflowModel, d: usize) -> bool {
        self.outcome == Outcome::Handoff
            && self.steps.iter().zip(&workflow.steps).any(|(st, step)| st.effect_unknown && step.dependency == d)
    }

    /// Whether the run's answer was of full quality: nothing left out, no fallback. A run handed
    /// off only because its write was paused counts when everything before the write was.
    pub fn full_quality(&self) -> bool {
        self.degraded == 0
            && (self.outcome == Outcome::Succeeded || (self.outcome == Outcome::Handoff && self.write_paused))
    }

    /// How its logical calls at dependency `d` went: None if it made none, else whether each
    /// that it made got its answer from `d` itself (not a fallback, not given up, not left
    /// unanswered as the run ended).
    pub fn answered_at(&self, workflow: &WorkflowModel, d: usize) -> Option<bool> {
        let mut called = false;
        let mut answered = true;
        for (s, (st, step)) in self.steps.iter().zip(&workflow.steps).enumerate() {
            // A call its guards refused counts (the dependency did not answer it).
            if step.dependency != d || !st.tried_primary {
                continue;
            }
            let good = match st.phase {
                StepPhase::Done => !st.on_fallback,
                StepPhase::Omitted => false,
                // Still going as the run ended. No answer in time is a bad event for what the
                // run waited on (the SRE workbook's latency SLI): the step that ended the run
                // (ran out of time, gave up, handed off), every call cut off by a run that ran
                // out of time (still queued or in flight at the deadline), and a call the
                // dependency had already failed (backing off, or on its fallback). A first
                // attempt still in flight when another step ended the run early, time left,
                // says nothing of the dependency: not counted.
                StepPhase::Abandoned
                | StepPhase::Blocked
                | StepPhase::Waiting
                | StepPhase::Active
                | StepPhase::Sleeping => {
                    let unanswered = self.ended_by == Some(s as u8)
                        || self.deadline_exceeded_at_end
                        || st.on_fallback
                        || st.last_failure.is_some();
                    if !unanswered {
                        continue;
                    }
                    false
                }
            };
            called = true;
            answered &= good;
        }
        called.then_some(answered)
    }

    /// Whether all the result lacks is what its mode chose (steps omitted or sent to their
    /// fallback first): the full-quality SLI does not hold the mode's own choice against it.
    pub fn degraded_by_mode_only(&self) -> bool {
        self.degraded != 0 && self.own_degraded == 0
    }

    /// The run was handed off because its mode paused its write (the mode's choice).
    pub fn handed_off_by_write_pause(&self) -> bool {
        self.outcome == Outcome::Handoff && self.write_paused
    }

    /// The run ended because its workflow entered a mode that cancels runs in flight.
    pub fn cancelled_by_mode(&self) -> bool {
        self.cancelled_by_mode
    }

    /// Step `s` was sent back with a repair prompt: its input is new, so no cache keyed by
    /// the request it made before can answer it.
    pub fn step_repaired(&self, s: u8) -> bool {
        self.steps[s as usize].repaired
    }

    /// A cache answers one of the run's attempts with a stale entry (stale-if-error). With
    /// provenance (`marked`) the answer carries its time and source: the run's result is
    /// degraded and its evidence stale (docs/essay.md sections 18 and 23); without, it passes
    /// as fresh and nothing in the run shows it.
    pub fn rests_on_stale_entry(&mut self, marked: bool) {
        if marked && !self.ended {
            self.degraded |= DegradedReason::StaleCache.bit();
            self.own_degraded |= DegradedReason::StaleCache.bit();
            self.evidence = self.evidence.max(EvidenceLevel::Stale);
        }
    }

    /// An SDK client charged to the root budget asks before a hidden retry that sleeps
    /// `delay_us` from `now` and costs `spend`: it goes only while the run lives, holds a
    /// retry token, the retry starts before the deadline (the root deadline, read even when
    /// the policy does not propagate it: a charged client is told the run's budgets) and its
    /// cost fits the run's cost budget (the essay's "SDK retries in the root budget": time,
    /// retries and cost; concurrency is already held by the runtime attempt the SDK call is).
    /// The token and the cost are taken here (the budget's one place that spends them) and
    /// come back through [`RunMachine::return_hidden_retry`] if the retry is never sent (8.3's
    /// token rule). A refusal counts as `budget_exhausted_total.retry`, `.time` or `.cost`.
    pub fn allow_hidden_retry(&mut self, now: Micros, delay_us: Micros, spend: Spend, out: &mut impl Effects) -> bool {
        if self.ended {
            return false;
        }
        if !self.budget.has_retry_token() {
            out.observe(Observation::BudgetExhausted(BudgetKind::Retry));
            return false;
        }
        if now.saturating_add(delay_us) >= self.budget.deadline_at {
            out.observe(Observation::BudgetExhausted(BudgetKind::Time));
            return false;
        }
        if let Err(exhausted) = self.budget.check_cost(spend) {
            out.observe(Observation::BudgetExhausted(exhausted));
            return false;
        }
        self.budget.take_retry_token();
        self.budget.spend_cost(spend);
        true
    }

    /// A charged hidden retry was granted but never sent (a won hedge or the run's end stopped
    /// the SDK call in its sleep): its token and its cost come back.
    pub fn return_hidden_retry(&mut self, spend: Spend) {
        self.budget.return_retry_token();
        self.budget.return_cost(spend);
    }

    /// Attempts the run still waits for (sent or queued at a bulkhead).
    pub fn attempts_in_flight(&self) -> usize {
        self.in_flight.len()
    }

    pub fn start(&mut self, cx: &mut RunContext, out: &mut impl Effects) {
        let overrides = self.overrides(cx);
        self.treatment = overrides.treatment();
        if overrides.refuse_new_runs {
            out.observe(Observation::RunPaused);
            return self.end_run(cx, out, Outcome::Rejected);
        }
        if let Some(rule) = &cx.policy.admission {
            let steps = &cx.policy.steps[cx.workflow_index];
            let deadline_us = self.budget.remaining_us(cx.now);
            match decide_admission(rule, cx.workflow, steps, &cx.loads, deadline_us) {
                AdmissionDecision::Admit => {}
                AdmissionDecision::Reject => return self.refuse_admission(cx, out, false),
                AdmissionDecision::Async => return self.refuse_admission(cx, out, true),
            }
        }
        for i in 0..cx.workflow.roots.len() {
            let s = cx.workflow.roots[i];
            self.make_ready(cx, out, s);
        }
    }

    fn refuse_admission(&mut self, cx: &mut RunContext, out: &mut impl Effects, async_path: bool) {
        out.observe(Observation::AdmissionRefused { async_path });
        self.end_run(cx, out, Outcome::Rejected);
    }

    /// The result of attempt `serial` of step `s`. Results of attempts the run no longer waits
    /// for are ignored.
    pub fn on_attempt_result(
        &mut self,
        cx: &mut RunContext,
        out: &mut impl Effects,
        s: u8,
        serial: u32,
        result: AttemptResult,
    ) {
        self.on_result(cx, out, s, serial, result, None);
    }

    /// Attempt `serial` of step `s` came back as a success whose answer is `bad`
    /// (world/bad_result.rs): to the runtime it is a success; a validator may tell.
    pub fn on_bad_result(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8, serial: u32, bad: BadResult) {
        self.on_result(cx, out, s, serial, AttemptResult::Ok, Some(bad));
    }

    #[inline(always)]
    fn on_result(
        &mut self,
        cx: &mut RunContext,
        out: &mut impl Effects,
        s: u8,
        serial: u32,
        result: AttemptResult,
        bad: Option<BadResult>,
    ) {
        let Some(i) = self.in_flight.iter().position(|a| a.step == s && a.serial == serial && !a.waiting()) else {
            if !self.detached.is_empty() {
                self.on_detached_result(cx, out, s, serial, result);
            }
            return;
        };
        let attempt = self.take_in_flight(i);
        let kind = self.failure_kind(cx, s, result, attempt.purpose);
        out.trace(TraceEvent::AttemptEnded { step: s, serial, result, kind });
        let duration_us = cx.now - attempt.sent_us;
        let end = match kind {
            None => AttemptEnd::success(duration_us),
            Some(k) => AttemptEnd::failed(k, duration_us),
        };
        cx.pipeline.on_end(cx.now, attempt.route, attempt.info(cx), attempt.held, Ending::Outcome(end), None, out);
        if self.ended {
            return;
        }
        if self.steps[s as usize].looking_up {
            self.steps[s as usize].looking_up = false;
            self.on_lookup_result(cx, out, s, result);
            return;
        }
        if cx.workflow.has_quorum && cx.workflow.steps[s as usize].quorum.is_some() {
            return self.on_branch_answer(cx, out, s, serial, kind.is_some(), bad);
        }
        match kind {
            None => {
                if attempt.kind == AttemptKind::Hedge {
                    out.observe(Observation::HedgeWon { dependency: attempt.dependency });
                }
                let via_fallback = self.steps[s as usize].on_fallback;
                if self.steps[s as usize].in_flight > 0 {
                    self.cancel_step_attempts(cx, out, s);
                }
                if cx.policy.snapshots
                    && !self.snapshot_is_fresh(cx, out, s, &cx.loads.dependencies[attempt.dependency as usize])
                {
                    // Stale evidence is no answer for this step: it gives up (a hard one
                    // fails or hands off, as its policy says).
                    return self.step_gave_up(cx, out, s, MayFallBack::No);
                }
                if bad.is_some() || cx.step(s).1.validator.is_some() {
                    return self.weigh_answer(cx, out, s, bad, via_fallback);
                }
                self.step_succeeded(cx, out, s, via_fallback);
            }
            Some(kind) => {
                let retry_after_us = match result {
                    AttemptResult::Failed { retry_after_us, .. } => retry_after_us,
                    AttemptResult::Ok | AttemptResult::NotFound | AttemptResult::TimedOut => None,
                };
                self.after_failure(cx, out, s, kind, retry_after_us);
            }
        }
    }

    /// The failure kind the runtime acts on, or None for a success. A timed-out write may have
    /// committed: its effect is unknown.
    fn failure_kind(&mut self, cx: &RunContext, s: u8, result: AttemptResult, purpose: Purpose) -> Option<FailureKind> {
        match result {
            AttemptResult::Ok | AttemptResult::NotFound => None,
            AttemptResult::Failed { kind, .. } => Some(kind),
            AttemptResult::TimedOut if cx.step(s).0.effect == Effect::Write && purpose != Purpose::Lookup => {
                Some(FailureKind::EffectUnknown)
            }
            AttemptResult::TimedOut => Some(FailureKind::TransientTransport),
        }
    }

    /// A timer of step `s` fired; `wake` tells a current timer from a stale one.
    pub fn on_wake(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8, wake: u32) {
        if self.ended {
            return;
        }
        if let Some(i) = self.validations.iter().position(|v| v.step == s && v.wake == wake) {
            let pending = self.validations.swap_remove(i);
            return self.finish_validation(cx, out, pending);
        }
        if !self.approvals.is_empty() || !self.advisory_windows.is_empty() {
            if let Some(i) = self.approvals.iter().position(|a| a.step == s && a.wake == wake) {
                return self.on_approval_wake(cx, out, i);
            }
            if let Some(i) = self.advisory_windows.iter().position(|&(step, w)| step == s && w == wake) {
                self.advisory_windows.swap_remove(i);
                if self.steps[s as usize].phase.is_open() {
                    return self.omit_advisory(cx, out, s);
                }
                return;
            }
        }
        let st = &mut self.steps[s as usize];
        if st.phase == StepPhase::Sleeping && st.wake == wake {
            st.phase = StepPhase::Active;
            self.try_attempt(cx, out, s);
        } else if st.phase == StepPhase::Active && st.hedge_wake == Some(wake) {
            st.hedge_wake = None;
            self.send_hedge(cx, out, s);
        }
    }

    /// A bulkhead answered an attempt that waited for a permit: send it, or treat the expiry as
    /// a refusal. `serial` is modulo 2^24, as in the waiter token.
    pub fn on_permit(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8, serial: u32, granted: bool) {
        let Some(i) =
            self.in_flight.iter().position(|a| a.step == s && (a.serial & 0x00FF_FFFF) == serial && a.waiting())
        else {
            return;
        };
        if granted && let Some(at) = self.in_flight[i].waiting_at {
            cx.pipeline.claim(at, waiter_token(cx.run_slot, s, self.in_flight[i].serial));
        }
        // The wait took time: the attempt's timeout is worked out again from what is left.
        let sp = cx.step(s).1;
        let reserve_us = if self.in_flight[i].purpose == Purpose::Lookup { 0 } else { sp.reserve_us };
        let timeout = if granted { self.timeout_or_exhausted(cx, out, s, sp.timeout_us, reserve_us) } else { None };
        if let Some(timeout_us) = timeout {
            let a = &mut self.in_flight[i];
            a.waiting_at = None;
            a.sent_us = cx.now;
            let (step, serial, dependency, purpose, kind) = (a.step, a.serial, a.dependency, a.purpose, a.kind);
            out.trace(TraceEvent::AttemptSent { step, serial, dependency, kind, purpose });
            out.command(Command::Send { step, serial, dependency, purpose, timeout_us });
            return;
        }
        // Granted too late, or never: the permit goes back and the step carries on without it.
        let a = self.take_in_flight(i);
        self.unsent(a.kind);
        let (ending, skip) = if granted { (Ending::Canceled, None) } else { (Ending::Refused, a.waiting_at) };
        cx.pipeline.on_end(cx.now, a.route, a.info(cx), a.held, ending, skip, out);
        if !granted {
            refused(out, s, a.dependency, Refusal::Bulkhead, (a.purpose, a.kind), Some(a.serial));
        }
        if !self.ended && cx.workflow.has_quorum && cx.workflow.steps[s as usize].quorum.is_some() {
            // A branch that never got its permit (or too late) is a failed vote.
            return self.on_branch_answer(cx, out, s, a.serial, true, None);
        }
        if self.ended || self.steps[s as usize].in_flight > 0 {
            return;
        }
        match (granted, a.purpose) {
            (false, _) => self.after_refusal(cx, out, s, a.purpose),
            (true, Purpose::Lookup) => self.hand_off(cx, out, s),
            (true, Purpose::Call | Purpose::Write { .. }) => self.step_gave_up(cx, out, s, MayFallBack::No),
        }
    }

    #[inline]
    fn make_ready(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8) {
        if self.ended {
            return;
        }
        // Past max_branches a soft branch is cut at once (docs/essay.md section 22); a hard one waits its turn.
        if self.treatment.per_step && self.overrides(cx).omit[cx.workflow_index][s as usize] {
            return self.omit_by_mode(cx, out, s);
        }
        let branches_full = !self.treatment.fan_out.has_branch_room(self.budget.in_flight);
        if branches_full && cx.workflow.steps[s as usize].criticality != Criticality::Hard {
            let dependency = cx.workflow.steps[s as usize].dependency as u16;
            refused(out, s, dependency, Refusal::FanOut, (Purpose::Call, AttemptKind::First), None);
            self.budget.in_flight += 1; // released again as the step is omitted
            self.steps[s as usize].phase = StepPhase::Active;
            self.step_gave_up(cx, out, s, MayFallBack::No);
            return;
        }
        // First come, first served: a step ready now never overtakes one already waiting.
        if self.has_branch_slot() && self.waiting.is_empty() {
            self.start_step(cx, out, s);
        } else {
            self.steps[s as usize].phase = StepPhase::Waiting;
            self.waiting.push_back(s);
            out.observe(Observation::BudgetExhausted(BudgetKind::Concurrency));
            out.trace(TraceEvent::BudgetExhausted { step: s, kind: BudgetKind::Concurrency });
        }
    }

    /// The degradation mode does not start soft step `s`: it is omitted with a notice in the
    /// result, not failed. Cold: kept out of `make_ready`, which every step passes.
    #[cold]
    #[inline(never)]
    fn omit_by_mode(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8) {
        self.budget.in_flight += 1; // released again as the step is omitted
        if cx.loads.dependencies[cx.workflow.steps[s as usize].dependency].kind
            == crate::vocab::DependencyKind::Retrieval
        {
            self.evidence = EvidenceLevel::None;
        }
        let st = &mut self.steps[s as usize];
        st.phase = StepPhase::Omitted;
        self.degraded |= DegradedReason::OmittedByMode.bit();
        out.observe(Observation::StepOmitted { step: cx.step_offset + u32::from(s), by_mode: true });
        out.trace(TraceEvent::StepEnded { step: s, end: StepEnd::Omitted });
        self.release_step(cx, out, s);
    }

    /// A concurrency token is free and max_branches is not reached.
    fn has_branch_slot(&self) -> bool {
        let branches_ok = self.treatment.fan_out.has_branch_room(self.budget.in_flight);
        self.budget.has_concurrency_slot() && branches_ok
    }

    #[inline(always)]
    fn start_step(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8) {
        self.budget.in_flight += 1;
        self.steps[s as usize].phase = StepPhase::Active;
        out.observe(Observation::LogicalCall);
        out.trace(TraceEvent::StepStarted { step: s });
        let step = &cx.workflow.steps[s as usize];
        if (step.approval || step.criticality == Criticality::Advisory) && self.start_for_a_person(cx, out, s) {
            return;
        }
        if cx.workflow.has_quorum && cx.workflow.steps[s as usize].quorum.is_some() {
            return self.start_quorum(cx, out, s);
        }
        let t = self.treatment;
        if t.fallback == FallbackMode::FallbackFirst || t.per_step {
            self.maybe_start_on_fallback(cx, out, s);
        }
        self.try_attempt(cx, out, s);
    }

    /// An approval step asks its desk (true: the step waits for the person, nothing is sent);
    /// an advisory step opens its window and goes on. Cold: kept out of `start_step`, which
    /// every step passes.
    #[cold]
    #[inline(never)]
    fn start_for_a_person(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8) -> bool {
        if cx.workflow.steps[s as usize].approval {
            self.request_approval(cx, out, s);
            return true;
        }
        self.open_advisory_window(cx, out, s);
        false
    }

    /// The run's mode sends step `s` straight to its fallback, if the fallback's contract
    /// admits it. Cold: kept out of `start_step`, which every step passes.
    #[cold]
    #[inline(never)]
    fn maybe_start_on_fallback(&mut self, cx: &RunContext, out: &mut impl Effects, s: u8) {
        let first = self.treatment.fallback == FallbackMode::FallbackFirst
            || self.overrides(cx).fallback_first[cx.workflow_index][s as usize];
        if !first {
            return;
        }
        // The first candidate whose contract admits the step.
        let candidates = cx.step(s).1.fallbacks.len() as u8;
        if let Some(c) = (0..candidates).find(|&c| self.fallback_admits(cx, out, s, c)) {
            let st = &mut self.steps[s as usize];
            st.on_fallback = true;
            st.candidate = c;
            st.fallback_first = true;
            out.trace(TraceEvent::FallbackStarted { step: s, candidate: c });
        }
    }

    /// Starts the step's next attempt if every budget holds (docs/essay.md section 5), else gives up.
    fn try_attempt(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8) {
        let (step, sp) = cx.step(s);
        let st = self.steps[s as usize];
        let (dependency, route) = cx.target(s, st);
        let kind = if st.next_is_retry() { AttemptKind::Retry } else { AttemptKind::First };
        if step.effect == Effect::Write && cx.writes_paused.covers(dependency) {
            // The mode stops automatic writes: a human gets the run with its evidence.
            self.unsent(kind);
            out.observe(Observation::WritePaused);
            self.write_paused = true;
            return self.hand_off(cx, out, s);
        }
        let Some(timeout_us) = self.timeout_or_exhausted(cx, out, s, sp.timeout_us, sp.reserve_us) else {
            self.unsent(kind);
            self.step_gave_up(cx, out, s, MayFallBack::No);
            return;
        };
        let cost = self.spend_of(cx, s, dependency);
        // A retry's token was taken when it was decided (see `retry`); only the cost is
        // checked here. A cheaper fallback may still fit a cost budget.
        if let Err(exhausted) = self.budget.check_cost(cost) {
            self.unsent(kind);
            out.observe(Observation::BudgetExhausted(exhausted));
            out.trace(TraceEvent::BudgetExhausted { step: s, kind: exhausted });
            self.step_gave_up(cx, out, s, MayFallBack::Yes);
            return;
        }
        let purpose = match step.effect {
            Effect::Write => {
                Purpose::Write { deduplicated: step.idempotency == Idempotency::Key && !cx.policy.key_per_attempt }
            }
            Effect::Read => Purpose::Call,
        };
        let info = cx.info(kind, false, st.last_failure);
        let attempt = Attempt { dependency, route, info, purpose, timeout_us, cost: cost.cost_units };
        // The dependency is asked now (a guard may still refuse it): a write the mode paused, or
        // an attempt the deadline or the cost budget stopped before it left, never reached it.
        self.steps[s as usize].tried_primary |= !st.on_fallback;
        if self.send(cx, out, s, attempt) {
            self.spend_unless_cached(cx, dependency, purpose, cost);
            self.steps[s as usize].count_attempt();
            self.arm_hedge(cx, out, s);
        } else {
            self.unsent(kind);
            self.after_refusal(cx, out, s, purpose);
        }
    }

    /// Spends what a sent attempt costs. A call at a dependency whose cache the policy looks
    /// in was checked against the budget like any (it may miss) but spends only if its lookup
    /// needs the dependency: the engine charges it then (engine::cache), a hit costs nothing.
    fn spend_unless_cached(&mut self, cx: &RunContext, dependency: usize, purpose: Purpose, cost: Spend) {
        if !cx.policy.looks_in_caches || purpose != Purpose::Call || cx.policy.caches[dependency].is_none() {
            self.budget.spend_cost(cost);
        }
    }

    /// What an attempt of step `s` at `dependency` costs: its cost units, and when the budget
    /// limits tokens or money and the dependency is a token-shaped model, the call's tokens
    /// (the step's counts, drawn once per run and step) and their price.
    #[inline]
    fn spend_of(&self, cx: &RunContext, s: u8, dependency: usize) -> Spend {
        if !self.budget.limits_tokens_or_money() {
            return Spend::units(cx.costs[dependency]);
        }
        let (step, sp) = cx.step(s);
        self.spend_at(cx.costs[dependency], cx.loads.dependencies[dependency].tokens.as_ref(), (step, sp), s)
    }

    /// As `spend_of`, for a dependency of `cost_units` and token shape `shape` (the engine
    /// asks it back for an attempt a cache answered without a call).
    pub fn spend_at(
        &self,
        cost_units: f64,
        shape: Option<&crate::world::tokens::TokenShape>,
        (step, sp): (&StepModel, &StepPolicy),
        s: u8,
    ) -> Spend {
        let units = Spend::units(cost_units);
        if !self.budget.limits_tokens_or_money() {
            return units;
        }
        let Some(shape) = shape else { return units };
        let mut tokens = step.tokens_in(self.key, shape);
        tokens.reduce_input(self.context_share(sp, s));
        Spend { model_tokens: f64::from(tokens.input) + f64::from(tokens.output), money: shape.price(tokens), ..units }
    }

    /// An attempt that took a retry token (a retry or a hedge) was not sent after all: refused
    /// by a guard, or its step gave up first. A token pays only for an attempt that went out.
    fn unsent(&mut self, kind: AttemptKind) {
        if kind.is_repeat() {
            self.budget.return_retry_token();
        }
    }

    /// The attempt timeout under the policy's deadline rules, or None (and the time budget
    /// counted as exhausted) when too little time is left to start one.
    fn timeout_or_exhausted(
        &mut self,
        cx: &RunContext,
        out: &mut impl Effects,
        s: u8,
        cap_us: Option<Micros>,
        reserve_us: Micros,
    ) -> Option<Option<Micros>> {
        let remaining_us = self.budget.remaining_us(cx.now);
        match attempt_timeout(cx.policy.rules.deadline_propagation, cap_us, remaining_us, reserve_us) {
            AttemptTimeout::After(t) => Some(Some(t)),
            AttemptTimeout::Never => Some(None),
            AttemptTimeout::Exhausted => {
                self.exhausted(out, s, BudgetKind::Time);
                None
            }
        }
    }

    /// Passes an attempt through the guards and, if admitted, asks for it to be sent (or
    /// parks it at a bulkhead). False when a guard refused it; nothing was spent then.
    #[inline(always)]
    fn send(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8, a: Attempt) -> bool {
        let serial = self.steps[s as usize].serial;
        if !self.fan_out_allows(a.cost) {
            refused(out, s, a.dependency as u16, Refusal::FanOut, (a.purpose, a.info.kind), None);
            return false;
        }
        let (waiting_at, held) = if cx.pipeline.is_open_road(a.route) {
            (None, Held::default())
        } else {
            let stream_id = cx.workflow.steps[s as usize].stream_id;
            let key = self.key.with(TAG_GUARD).with(stream_id).with(u64::from(serial));
            let waiter = waiter_token(cx.run_slot, s, serial);
            let ask = Ask { info: a.info, waiter, key, loads: cx.loads };
            match cx.pipeline.admit(cx.now, a.route, ask, out) {
                (Admit::Granted, held) => (None, held),
                (Admit::Wait { at, .. }, held) => (Some(at), held),
                (Admit::Refused(reason), _) => {
                    refused(out, s, a.dependency as u16, reason, (a.purpose, a.info.kind), None);
                    return false;
                }
            }
        };
        let waiting = waiting_at.is_some();
        let st = &mut self.steps[s as usize];
        let serial = st.next_serial();
        st.in_flight += 1;
        self.in_flight.push(InFlight {
            step: s,
            serial,
            dependency: a.dependency as u16,
            route: a.route,
            kind: a.info.kind,
            control: a.info.control,
            after: a.info.after,
            held,
            purpose: a.purpose,
            sent_us: cx.now,
            waiting_at,
            cost: a.cost,
            handle: None,
        });
        self.attempts_total += 1;
        self.cost_in_flight += a.cost;
        let (dependency, purpose, timeout_us) = (a.dependency as u16, a.purpose, a.timeout_us);
        if waiting {
            out.trace(TraceEvent::AttemptWaiting { step: s, serial, dependency, kind: a.info.kind, purpose });
        } else {
            out.trace(TraceEvent::AttemptSent { step: s, serial, dependency, kind: a.info.kind, purpose });
            out.command(Command::Send { step: s, serial, dependency, purpose, timeout_us });
        }
        true
    }

    /// A guard refused the step's attempt: it fails fast. A refused status lookup leaves the
    /// effect unknown (a human decides); otherwise the step may fall back.
    fn after_refusal(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8, purpose: Purpose) {
        if self.steps[s as usize].in_flight > 0 {
            return; // a hedge was refused; the attempts already out may still answer
        }
        match purpose {
            Purpose::Lookup => self.hand_off(cx, out, s),
            Purpose::Call | Purpose::Write { .. } => self.step_gave_up(cx, out, s, MayFallBack::Yes),
        }
    }

    /// Arms the hedge timer after a step's first attempt at a dependency (read-only steps of a
    /// hedging policy only).
    #[inline]
    fn arm_hedge(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8) {
        let Some(hedging) = cx.policy.hedging else { return };
        if !self.treatment.hedging {
            return;
        }
        let st = &mut self.steps[s as usize];
        // An advisory call is worth one attempt in its window, not a hedge's retry token.
        if cx.workflow.steps[s as usize].criticality == Criticality::Advisory
            || !hedging.may_hedge(cx.workflow.steps[s as usize].effect, st.hedges)
        {
            return;
        }
        let wake = st.next_wake();
        st.hedge_wake = Some(wake);
        out.command(Command::Sleep { step: s, wake, until: cx.now + hedging.delay_us });
    }

    /// Sends one more attempt of a step whose attempts are slow, charged to the retry budgets.
    fn send_hedge(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8) {
        let sp = cx.step(s).1;
        let st = self.steps[s as usize];
        if st.in_flight == 0 || st.looking_up {
            return;
        }
        let (dependency, route) = cx.target(s, st);
        let Some(timeout_us) = self.timeout_or_exhausted(cx, out, s, sp.timeout_us, sp.reserve_us) else { return };
        let cost = self.spend_of(cx, s, dependency);
        let exhausted =
            if !self.budget.has_retry_token() { Err(BudgetKind::Retry) } else { self.budget.check_cost(cost) };
        if let Err(kind) = exhausted {
            out.observe(Observation::BudgetExhausted(kind));
            out.trace(TraceEvent::BudgetExhausted { step: s, kind });
            return;
        }
        self.budget.take_retry_token();
        let info = cx.info(AttemptKind::Hedge, false, None);
        let attempt = Attempt { dependency, route, info, purpose: Purpose::Call, timeout_us, cost: cost.cost_units };
        if self.send(cx, out, s, attempt) {
            self.spend_unless_cached(cx, dependency, Purpose::Call, cost);
            self.steps[s as usize].hedges += 1;
            out.observe(Observation::HedgeSent { dependency: dependency as u16 });
            self.arm_hedge(cx, out, s);
        } else {
            self.unsent(AttemptKind::Hedge);
        }
    }

    /// Sends a status lookup for a write whose effect is unknown. Lookups are reads on the
    /// control path: they spend no retry token and no cost, but they are attempts. Also the
    /// one place that bounds lookups: past the step's max_attempts of them the effect stays
    /// unknown and the run is handed off.
    fn start_lookup(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8) {
        let (step, sp) = cx.step(s);
        if self.steps[s as usize].lookups >= sp.max_attempts {
            self.hand_off(cx, out, s);
            return;
        }
        let Some(timeout_us) = self.timeout_or_exhausted(cx, out, s, sp.timeout_us, 0) else {
            self.hand_off(cx, out, s);
            return;
        };
        let (dependency, route) = (step.dependency, sp.routes.lookup);
        let info = cx.info(AttemptKind::First, true, None);
        let attempt = Attempt { dependency, route, info, purpose: Purpose::Lookup, timeout_us, cost: 0.0 };
        if self.send(cx, out, s, attempt) {
            let st = &mut self.steps[s as usize];
            st.looking_up = true;
            st.lookups += 1;
        } else {
            self.hand_off(cx, out, s);
        }
    }

    /// Everything the decision needs about the step's last failed attempt.
    fn failed_attempt(
        &mut self,
        cx: &RunContext,
        s: u8,
        kind: FailureKind,
        retry_after_us: Option<Micros>,
    ) -> FailedAttempt {
        let (step, sp) = cx.step(s);
        let st = &mut self.steps[s as usize];
        st.last_failure = Some(kind);
        let jitter = self.key.with(TAG_JITTER).with(step.stream_id).with(u64::from(st.serial)).stream().unit();
        FailedAttempt {
            kind,
            is_write: step.effect == Effect::Write,
            deduplicated: step.idempotency == Idempotency::Key && !cx.policy.key_per_attempt,
            status_lookup: step.status_lookup,
            attempts_made: st.attempts_made(),
            max_attempts: sp.max_attempts,
            has_retry_token: self.budget.has_retry_token(),
            retry_after_us,
            remaining_us: self.budget.remaining_us(cx.now),
            reserve_us: sp.reserve_us,
            predicted_attempt_us: sp.predicted_attempt_us,
            previous_sleep_us: st.previous_sleep_us,
            jitter,
        }
    }

    fn after_failure(
        &mut self,
        cx: &mut RunContext,
        out: &mut impl Effects,
        s: u8,
        kind: FailureKind,
        retry_after_us: Option<Micros>,
    ) {
        if kind == FailureKind::EffectUnknown {
            self.steps[s as usize].effect_unknown = true;
            out.observe(Observation::EffectUnknown);
        }
        if self.steps[s as usize].in_flight > 0 {
            return; // hedged: another attempt of this call may still succeed
        }
        if cx.step(s).0.criticality == Criticality::Advisory {
            // Reference only: never retried (a retry token is worth more to the hard steps).
            return self.omit_advisory(cx, out, s);
        }
        if kind == FailureKind::ResultInvalid
            && cx.step(s).1.on_schema_failure == OnSchemaFailure::RepairOnceThenHandoff
        {
            return self.repair_or_hand_off(cx, out, s);
        }
        let failed = self.failed_attempt(cx, s, kind, retry_after_us);
        let decision = decide(&cx.policy.rules, &failed);
        self.trace_decision(out, s, decision);
        match decision {
            Decision::Retry { sleep_us } => self.retry(cx, out, s, sleep_us),
            Decision::Reconcile => self.start_lookup(cx, out, s),
            Decision::Handoff => self.hand_off(cx, out, s),
            Decision::GiveUp(reason) => {
                if let GiveUp::Budget(b) = reason {
                    self.exhausted(out, s, b);
                }
                // A retry that does not fit the time left (a long Retry-After included) still
                // leaves the fallback, if the fallback fits (docs/essay.md section 10).
                let may_fall_back =
                    if reason == GiveUp::Budget(BudgetKind::Time) { MayFallBack::IfItFits } else { MayFallBack::Yes };
                self.step_gave_up(cx, out, s, may_fall_back);
            }
        }
    }

    /// A budget stopped step `s`; if the step then ends the run, a deadline that left it no
    /// time means no result by the deadline.
    fn exhausted(&mut self, out: &mut impl Effects, s: u8, kind: BudgetKind) {
        self.steps[s as usize].out_of_time |= kind == BudgetKind::Time;
        out.observe(Observation::BudgetExhausted(kind));
        out.trace(TraceEvent::BudgetExhausted { step: s, kind });
    }

    /// Whether step `s`'s fallback candidate `c` keeps its contract: it admits the step's task
    /// class, and the step's context (reduced as the candidate reduces it) fits its window. A
    /// refusal is observed.
    fn fallback_admits(&self, cx: &RunContext, out: &mut impl Effects, s: u8, c: u8) -> bool {
        let (step, sp) = cx.step(s);
        let Some(candidate) = sp.candidate(c) else { return false };
        let admits = candidate.admits_class && {
            let window = cx.loads.dependencies[candidate.dependency].max_context_tokens;
            match (window, step.input_tokens_in(self.key)) {
                (Some(window), Some(tokens)) => f64::from(reduced_tokens(tokens, candidate.context_share)) <= window,
                (None, _) | (_, None) => true,
            }
        };
        if !admits {
            out.observe(Observation::FallbackRefused);
        }
        admits
    }

    /// The share of step `s`'s drawn input tokens its next call sends: less than all on a
    /// fallback candidate that reduces the context.
    pub fn context_share(&self, sp: &StepPolicy, s: u8) -> Option<f64> {
        let st = &self.steps[s as usize];
        if st.on_fallback { sp.candidate(st.candidate).and_then(|c| c.context_share) } else { None }
    }

    /// An answer from an approved snapshot: its age, drawn per run and step, against the
    /// step's freshness limit. False (and observed) when it is stale.
    fn snapshot_is_fresh(
        &mut self,
        cx: &RunContext,
        out: &mut impl Effects,
        s: u8,
        dependency: &DependencyModel,
    ) -> bool {
        let Some(age) = &dependency.snapshot_age else { return true };
        let (step, sp) = cx.step(s);
        let age_ms = age.sample_ms(&mut self.key.with(TAG_SNAPSHOT_AGE).with(step.stream_id).stream());
        let fresh = sp.max_snapshot_age_us.is_none_or(|limit| crate::sim::ms_to_us(age_ms) <= limit);
        let level = if fresh { EvidenceLevel::ApprovedSnapshot } else { EvidenceLevel::Stale };
        self.evidence = self.evidence.max(level);
        if !fresh {
            out.observe(Observation::EvidenceStale);
        }
        fresh
    }

    /// Whether step `s`'s fallback candidate `c`, not yet tried, still fits before the deadline.
    fn fallback_fits(&self, cx: &RunContext, s: u8, c: u8) -> bool {
        let sp = cx.step(s).1;
        let remaining_us = self.budget.remaining_us(cx.now);
        sp.candidate(c).is_some_and(|c| retry_fits(0, c.predicted_us, sp.reserve_us, remaining_us))
    }

    /// A result that breaks its schema is sent back once with a repair prompt (new input, so
    /// not the retry the essay forbids), paid with a retry token like any repeat; a second
    /// invalid result, or no token left, hands the run to a human.
    fn repair_or_hand_off(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8) {
        self.steps[s as usize].last_failure = Some(FailureKind::ResultInvalid);
        let st = self.steps[s as usize];
        if st.repaired || !self.budget.has_retry_token() || st.attempts_made() >= cx.step(s).1.max_attempts {
            return self.hand_off(cx, out, s);
        }
        self.steps[s as usize].repaired = true;
        out.observe(Observation::SchemaRepair);
        self.retry(cx, out, s, 0);
    }

    /// The decision after a failed attempt, with the retry tokens it leaves (a retry spends one).
    fn trace_decision(&self, out: &mut impl Effects, s: u8, decision: Decision) {
        let spent = u32::from(matches!(decision, Decision::Retry { .. }));
        let retry_tokens_left = self.budget.retry_tokens_left.saturating_sub(spent);
        out.trace(TraceEvent::Decided { step: s, decision, retry_tokens_left });
    }

    /// A retry was decided: its token is taken now, once, so a sibling step deciding at the
    /// same time sees what is really left, and the attempt after the sleep needs no second
    /// check. If that attempt is not sent after all, `unsent` gives the token back.
    fn retry(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8, sleep_us: Micros) {
        self.budget.take_retry_token();
        self.sleep_then_retry(cx, out, s, sleep_us);
    }

    fn sleep_then_retry(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8, sleep_us: Micros) {
        let st = &mut self.steps[s as usize];
        st.previous_sleep_us = sleep_us;
        st.hedges = 0;
        st.hedge_wake = None;
        if sleep_us == 0 {
            self.try_attempt(cx, out, s);
            return;
        }
        st.phase = StepPhase::Sleeping;
        let wake = st.next_wake();
        out.command(Command::Sleep { step: s, wake, until: cx.now + sleep_us });
    }

    fn on_lookup_result(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8, result: AttemptResult) {
        match result {
            AttemptResult::Ok => {
                out.observe(Observation::Reconciled);
                self.step_succeeded(cx, out, s, false);
            }
            // Not committed (yet): send again with the same key; the dependency deduplicates if
            // the first attempt commits late. The usual retry limits apply, and when they stop
            // the resend the effect may still land late: a human decides.
            AttemptResult::NotFound => {
                let failed = self.failed_attempt(cx, s, FailureKind::EffectUnknown, None);
                let decision = retry_or_give_up(&cx.policy.rules, &failed);
                self.trace_decision(out, s, decision);
                match decision {
                    Decision::Retry { sleep_us } => self.retry(cx, out, s, sleep_us),
                    Decision::GiveUp(reason) => {
                        if let GiveUp::Budget(b) = reason {
                            self.exhausted(out, s, b);
                        }
                        self.hand_off(cx, out, s);
                    }
                    Decision::Reconcile | Decision::Handoff => self.hand_off(cx, out, s),
                }
            }
            // The lookup itself failed. It is a read, so ask again while the step's attempt
            // limit allows; after that the effect stays unknown and a human must decide.
            AttemptResult::Failed { .. } | AttemptResult::TimedOut => self.start_lookup(cx, out, s),
        }
    }

    #[inline(always)]
    fn step_succeeded(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8, via_fallback: bool) {
        self.steps[s as usize].phase = StepPhase::Done;
        if cx.workflow.steps[s as usize].criticality == Criticality::Advisory {
            self.advisory_used(out, s);
        }
        let end =
            if self.steps[s as usize].lookups > 0 { StepEnd::Reconciled } else { StepEnd::Succeeded { via_fallback } };
        out.trace(TraceEvent::StepEnded { step: s, end });
        if via_fallback {
            // A candidate that answered from a reduced context lacks what it was not sent.
            let reduced = self.context_share(cx.step(s).1, s).is_some();
            let bits =
                DegradedReason::FallbackUsed.bit() | if reduced { DegradedReason::ContextReduced.bit() } else { 0 };
            self.degraded |= bits;
            if !self.steps[s as usize].fallback_first {
                self.own_degraded |= bits;
            }
            out.observe(Observation::FallbackUsed { step: cx.step_offset + u32::from(s) });
        }
        self.release_step(cx, out, s);
    }

    /// Advisory step `s` answered within its window: its window closes. Cold: kept out of
    /// `step_succeeded`, which every step passes.
    #[cold]
    #[inline(never)]
    fn advisory_used(&mut self, out: &mut impl Effects, s: u8) {
        self.advisory_windows.retain(|&(step, _)| step != s);
        out.observe(Observation::AdvisoryUsed);
    }

    /// Step `s` got an answer that is bad, or one its policy validates. Cold: kept out of
    /// `on_result`, which every answer passes.
    #[cold]
    #[inline(never)]
    fn weigh_answer(
        &mut self,
        cx: &mut RunContext,
        out: &mut impl Effects,
        s: u8,
        bad: Option<BadResult>,
        via_fallback: bool,
    ) {
        if let Some(kind) = bad {
            out.observe(Observation::BadResult(BadResultObservation::Received { kind }));
        }
        if cx.step(s).1.validator.is_some() {
            return self.start_validation(cx, out, s, bad, via_fallback);
        }
        self.rests_on_bad_result |= bad.is_some();
        self.step_succeeded(cx, out, s, via_fallback);
    }

    /// Step `s` got an answer (`bad`, if it is not one) and its policy validates it: the check
    /// costs its cost now and gives its verdict after its latency (at once without one). The
    /// step stays active meanwhile: a run that ends first abandons it. Under deadline
    /// propagation a check that would end after the root deadline is cut there, and the step
    /// runs out of time with an unchecked answer; without it the deadline is never consulted,
    /// so a check that starts late runs to its verdict as a 0 ms one would (docs/scenario.md 8.4).
    fn start_validation(
        &mut self,
        cx: &mut RunContext,
        out: &mut impl Effects,
        s: u8,
        bad: Option<BadResult>,
        via_fallback: bool,
    ) {
        let Some(v) = &cx.step(s).1.validator else { return };
        let (latency_us, cost_units) = (v.latency_us, v.cost_units);
        out.observe(Observation::BadResult(BadResultObservation::Validated { cost_units }));
        let verdict_at = cx.now.saturating_add(latency_us);
        let until = if cx.policy.rules.deadline_propagation {
            verdict_at.min(self.budget.deadline_at.max(cx.now))
        } else {
            verdict_at
        };
        let cut_by_deadline = until < verdict_at;
        let st = &mut self.steps[s as usize];
        st.hedge_wake = None; // the answer is in: no hedge is sent while it is checked
        let pending = PendingValidation { step: s, wake: st.next_wake(), bad, via_fallback, cut_by_deadline };
        if latency_us == 0 {
            return self.finish_validation(cx, out, pending);
        }
        self.validations.push(pending);
        out.command(Command::Sleep { step: s, wake: pending.wake, until });
    }

    /// The validator's verdict on step `s`'s answer: a good answer or a missed bad one ends
    /// the step as a success (the missed one under the run's answer); a detected one is
    /// RESULT_INVALID, handled as the policy handles it.
    fn finish_validation(&mut self, cx: &mut RunContext, out: &mut impl Effects, p: PendingValidation) {
        if p.cut_by_deadline {
            // No verdict by the root deadline: the answer cannot be used unchecked, and no
            // time is left for anything else (a fallback that fits would be none).
            self.exhausted(out, p.step, BudgetKind::Time);
            return self.step_gave_up(cx, out, p.step, MayFallBack::IfItFits);
        }
        let (step, sp) = cx.step(p.step);
        let Some(v) = &sp.validator else { return };
        let serial = u64::from(self.steps[p.step as usize].serial);
        let u = self.key.with(TAG_VALIDATOR).with(step.stream_id).with(serial).stream().unit();
        match v.judge(p.bad, u) {
            Verdict::Good => self.step_succeeded(cx, out, p.step, p.via_fallback),
            Verdict::Missed(_) => {
                self.rests_on_bad_result = true;
                self.step_succeeded(cx, out, p.step, p.via_fallback);
            }
            Verdict::Detected(kind) => {
                out.observe(Observation::BadResult(BadResultObservation::Detected { kind }));
                self.after_failure(cx, out, p.step, FailureKind::ResultInvalid, None);
            }
        }
    }

    /// The step's own attempts are over without success: fall back (unless time ran out),
    /// omit a soft step, or fail the run.
    fn step_gave_up(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8, may_fall_back: MayFallBack) {
        let (step, sp) = cx.step(s);
        if step.criticality == Criticality::Advisory {
            return self.omit_advisory(cx, out, s);
        }
        let fallback_allowed = self.treatment.fallback != FallbackMode::NoFallback;
        let st0 = self.steps[s as usize];
        // The next candidate in order: the first after the primary, the one after the
        // candidate that gave up.
        let next = if st0.on_fallback { st0.candidate + 1 } else { 0 };
        let candidates = sp.fallbacks.len() as u8;
        let fallback = if may_fall_back != MayFallBack::No && fallback_allowed {
            (next..candidates).find(|&c| {
                (may_fall_back == MayFallBack::Yes || self.fallback_fits(cx, s, c))
                    && self.fallback_admits(cx, out, s, c)
            })
        } else {
            None
        };
        let st = &mut self.steps[s as usize];
        if let Some(c) = fallback {
            if st.on_fallback {
                // A new candidate is a new path: its first call is no retry.
                st.fallback_attempts = 0;
            }
            st.on_fallback = true;
            st.candidate = c;
            st.out_of_time = false; // the fallback is a new chance; its own lack of time counts
            st.previous_sleep_us = 0;
            st.hedges = 0;
            out.trace(TraceEvent::FallbackStarted { step: s, candidate: c });
            self.try_attempt(cx, out, s);
            return;
        }
        if step.criticality == Criticality::Soft {
            if cx.loads.dependencies[step.dependency].kind == crate::vocab::DependencyKind::Retrieval {
                self.evidence = EvidenceLevel::None;
            }
            let st = &mut self.steps[s as usize];
            st.phase = StepPhase::Omitted;
            self.degraded |= DegradedReason::StepOmitted.bit();
            self.own_degraded |= DegradedReason::StepOmitted.bit();
            out.observe(Observation::StepOmitted { step: cx.step_offset + u32::from(s), by_mode: false });
            out.trace(TraceEvent::StepEnded { step: s, end: StepEnd::Omitted });
            self.release_step(cx, out, s);
        } else if st.effect_unknown && cx.policy.rules.on_effect_unknown != OnEffectUnknown::Retry {
            // The write may still land: a runtime that reconciles never reports that as a
            // plain failure, it hands the run to a human with the evidence.
            self.hand_off(cx, out, s);
        } else if sp.on_give_up == OnGiveUp::Handoff {
            // Fail closed: a human gets the run and what it gathered, not an error.
            self.hand_off(cx, out, s);
        } else {
            self.time_ran_out = self.steps[s as usize].out_of_time;
            self.ended_by = self.ended_by.or(Some(s));
            out.observe(Observation::StepFailed { step: cx.step_offset + u32::from(s) });
            out.trace(TraceEvent::StepEnded { step: s, end: StepEnd::Failed });
            self.end_run(cx, out, Outcome::Failed);
        }
    }

    /// Approval step `s` asks its desk (docs/essay.md section 4). The human's decision time and
    /// verdict are drawn per run and step, so every policy meets the same person; the desk says
    /// when the verdict comes, and the step sleeps until then or the root deadline. The runtime
    /// never retries it and gives it no attempt timeout: asking a person again duplicates
    /// their work while the first request is still open, so only the business expiry (the
    /// desk's) and the root deadline (the run's) bound the wait.
    fn request_approval(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8) {
        let step = &cx.workflow.steps[s as usize];
        let Some(model) = &cx.loads.dependencies[step.dependency].approval else {
            debug_assert!(false, "an approval step's dependency has an approval desk");
            return;
        };
        let mut draws = self.key.with(TAG_APPROVAL).with(step.stream_id).stream();
        let work_us = crate::sim::ms_to_us(model.decision_time.sample_ms(&mut draws));
        let approve = draws.unit() < model.approved_share;
        let scheduled = cx.approvals[step.dependency].request(model, cx.now, work_us, approve);
        out.observe(Observation::ApprovalRequested);
        let wake = self.steps[s as usize].next_wake();
        self.approvals.push(AwaitedApproval { step: s, wake, requested_at: cx.now, scheduled });
        let until = scheduled.at.min(self.budget.deadline_at).max(cx.now);
        out.command(Command::Sleep { step: s, wake, until });
    }

    /// An approval step's verdict came, or the root deadline did first: approved, the step is
    /// done; refused or lapsed, the run ends with that outcome; still open at the deadline,
    /// the run is handed to an asynchronous task that keeps waiting (the user is told on time:
    /// no deadline miss).
    fn on_approval_wake(&mut self, cx: &mut RunContext, out: &mut impl Effects, i: usize) {
        let a = self.approvals.swap_remove(i);
        let s = a.step;
        let decided = cx.now >= a.scheduled.at;
        let verdict = if decided { a.scheduled.verdict } else { ApprovalVerdict::PendingAtDeadline };
        out.observe(Observation::ApprovalEnded { verdict, wait_us: cx.now - a.requested_at });
        let outcome = match verdict {
            ApprovalVerdict::Approved => return self.step_succeeded(cx, out, s, false),
            ApprovalVerdict::Refused => Outcome::ApprovalRefused,
            ApprovalVerdict::Expired => Outcome::ApprovalExpired,
            // A hard machine step still open: the run is not only waiting for a person, and
            // no hand-off can finish it; it fails at its deadline, under every policy
            // (docs/scenario.md 4.7), as it does when that step's attempt is cut there first.
            ApprovalVerdict::PendingAtDeadline if self.hard_work_open(cx, s) => {
                self.time_ran_out = true;
                Outcome::Failed
            }
            ApprovalVerdict::PendingAtDeadline => Outcome::AwaitingApproval,
        };
        self.ended_by = self.ended_by.or(Some(s));
        // Still waiting, the request goes on to a task (a hand-off); refused or lapsed, it ended.
        let end = if matches!(outcome, Outcome::AwaitingApproval) { StepEnd::Handoff } else { StepEnd::Failed };
        out.trace(TraceEvent::StepEnded { step: s, end });
        self.end_run(cx, out, outcome);
    }

    /// Whether a hard step other than approval step `s`, and not an approval step itself, is
    /// still open (waiting, active or sleeping): machine work the run's answer needs. Soft and
    /// advisory steps are left behind by a hand-off like any open step at a run's end.
    fn hard_work_open(&self, cx: &RunContext, s: u8) -> bool {
        self.steps.iter().zip(&cx.workflow.steps).enumerate().any(|(i, (st, step))| {
            i != s as usize && st.phase.is_open() && step.criticality == Criticality::Hard && !step.approval
        })
    }

    /// Advisory step `s` starts: its result is used only within its window.
    fn open_advisory_window(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8) {
        let wake = self.steps[s as usize].next_wake();
        self.advisory_windows.push((s, wake));
        let until = cx.now + cx.workflow.steps[s as usize].advisory_wait_us;
        out.command(Command::Sleep { step: s, wake, until });
    }

    /// Advisory step `s` failed or its window closed: its attempts are cancelled and the run
    /// goes on without it, marked with a notice (`advisory_omitted_total`). Unlike a soft step
    /// the answer is not degraded: the result was for reference only.
    fn omit_advisory(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8) {
        if self.steps[s as usize].in_flight > 0 {
            self.cancel_step_attempts(cx, out, s);
        }
        self.advisory_windows.retain(|&(step, _)| step != s);
        // An answer still under its validator's check comes too late to be used: the
        // check's verdict must not end the step a second time.
        self.validations.retain(|v| v.step != s);
        self.steps[s as usize].phase = StepPhase::Omitted;
        out.observe(Observation::AdvisoryOmitted);
        out.trace(TraceEvent::StepEnded { step: s, end: StepEnd::Omitted });
        self.release_step(cx, out, s);
    }

    fn release_step(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8) {
        debug_assert!(self.budget.in_flight > 0 && self.steps_open > 0, "open steps never go below zero");
        self.budget.in_flight -= 1;
        self.steps_open -= 1;
        for i in 0..cx.workflow.steps[s as usize].successors.len() {
            let next = cx.workflow.steps[s as usize].successors[i];
            let st = &mut self.steps[next as usize];
            st.preds_left -= 1;
            if st.preds_left == 0 {
                self.make_ready(cx, out, next);
            }
        }
        while !self.ended && self.has_branch_slot() {
            let Some(next) = self.waiting.pop_front() else { break };
            self.start_step(cx, out, next);
        }
        if !self.ended && self.steps_open == 0 {
            let outcome = if self.degraded != 0 { Outcome::Degraded } else { Outcome::Succeeded };
            self.end_run(cx, out, outcome);
        }
    }

    /// Stops waiting for the step's other attempts (the losers of a hedge).
    fn cancel_step_attempts(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8) {
        while let Some(i) = self.in_flight.iter().position(|a| a.step == s) {
            let a = self.take_in_flight(i);
            Self::cancel(cx, out, &a);
        }
    }

    fn cancel(cx: &mut RunContext, out: &mut impl Effects, a: &InFlight) {
        out.trace(TraceEvent::AttemptCancelled { step: a.step, serial: a.serial });
        match a.waiting_at {
            Some(at) => {
                let waiter = waiter_token(cx.run_slot, a.step, a.serial);
                cx.pipeline.cancel_wait(cx.now, a.route, a.info(cx), a.held, at, waiter, out);
            }
            None => {
                cx.pipeline.on_end(cx.now, a.route, a.info(cx), a.held, Ending::Canceled, None, out);
                out.command(Command::Cancel { step: a.step, serial: a.serial, handle: a.handle });
            }
        }
    }

    /// The workflow entered a mode that cancels its runs in flight (PAUSED with
    /// `cancel_in_flight`): the run ends failed, the user gets no answer, and its branches are
    /// abandoned with their attempts cancelled as at any end.
    pub fn cancel_by_mode(&mut self, cx: &mut RunContext, out: &mut impl Effects) {
        if self.ended {
            return;
        }
        out.observe(Observation::RunCancelledByMode);
        self.cancelled_by_mode = true;
        self.end_run(cx, out, Outcome::Failed);
    }

    /// Step `s` leaves the run to a human (an unknown write effect): the run ends as a handoff.
    fn hand_off(&mut self, cx: &mut RunContext, out: &mut impl Effects, s: u8) {
        self.time_ran_out = self.steps[s as usize].out_of_time;
        self.ended_by = self.ended_by.or(Some(s));
        out.trace(TraceEvent::StepEnded { step: s, end: StepEnd::Handoff });
        self.end_run(cx, out, Outcome::Handoff);
    }

    #[inline(always)]
    fn end_run(&mut self, cx: &mut RunContext, out: &mut impl Effects, outcome: Outcome) {
        if self.ended {
            return;
        }
        if self.rests_on_bad_result && outcome.is_success() {
            out.observe(Observation::BadResult(BadResultObservation::AnswerRestsOnBadResult));
        }
        // A request still open once the root deadline has come is pending at the deadline,
        // whatever ends the run (a machine step's failure at the same instant included).
        if !self.approvals.is_empty() && cx.now >= self.budget.deadline_at {
            for a in &self.approvals {
                if cx.now < a.scheduled.at {
                    let (verdict, wait_us) = (ApprovalVerdict::PendingAtDeadline, cx.now - a.requested_at);
                    out.observe(Observation::ApprovalEnded { verdict, wait_us });
                }
            }
        }
        let deadline_exceeded = self.record_end(cx.now, out, outcome);
        // Stop every branch still running: the caller no longer waits for them.
        for s in 0..self.steps.len() {
            if self.steps[s].phase.is_open() {
                self.steps[s].phase = StepPhase::Abandoned;
                out.trace(TraceEvent::StepEnded { step: s as u8, end: StepEnd::Abandoned });
                self.cancel_step_attempts(cx, out, s as u8);
            }
        }
        out.command(Command::End { outcome, deadline_exceeded });
    }

    /// Observes the run's end with `outcome` at `now` and marks the machine ended; returns
    /// whether the deadline counts as exceeded.
    #[inline(always)]
    fn record_end(&mut self, now: Micros, out: &mut impl Effects, outcome: Outcome) -> bool {
        // The user had no result by the deadline: a late end, or a run the runtime stopped
        // because time ran out (failed, or handed to a human with what it had).
        let past_deadline = now > self.budget.deadline_at;
        let no_result_for_lack_of_time = self.time_ran_out && matches!(outcome, Outcome::Failed | Outcome::Handoff);
        let deadline_exceeded = past_deadline || no_result_for_lack_of_time;
        let latency_us = now - self.start_us;
        let (workflow, mode, degraded, evidence) = (self.workflow, self.mode.label, self.degraded, self.evidence);
        out.observe(Observation::RunEnded {
            workflow,
            outcome,
            latency_us,
            deadline_exceeded,
            past_deadline,
            mode,
            degraded,
            evidence,
        });
        out.trace(TraceEvent::RunEnded { outcome, deadline_exceeded, past_deadline, mode });
        // Written after `workflow` is read: it sits next to these flags, and a load that
        // overlaps a store still in flight waits for the store to reach the cache.
        self.ended = true;
        self.outcome = outcome;
        self.deadline_exceeded_at_end = deadline_exceeded;
        deadline_exceeded
    }

    /// The end of a run the engine drove as a chain of plain calls (engine/plain_call.rs)
    /// whose attempts all succeeded: what `end_run` gives a run whose every step succeeded at
    /// its first attempt, which is all this machine saw. The machine never started a step (the
    /// engine found, by running `start` and the successes once on this workflow, that it
    /// would only have sent them, one after the other).
    pub fn end_plain_call(&mut self, now: Micros, out: &mut impl Effects) {
        debug_assert!(
            !self.ended && self.in_flight.is_empty() && self.degraded == 0 && self.approvals.is_empty(),
            "a plain call's run is fresh until it ends"
        );
        let outcome = Outcome::Succeeded;
        let deadline_exceeded = self.record_end(now, out, outcome);
        out.command(Command::End { outcome, deadline_exceeded });
    }
}

/// Whether a step that gave up may go on to a fallback candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MayFallBack {
    No,
    Yes,
    /// Only to a candidate that still fits before the deadline (a retry did not).
    IfItFits,
}

/// How a run of a policy without degradation modes is treated.
pub const NORMAL_RUN: RunMode =
    RunMode { label: DegradationMode::Normal, overrides: DegradationMode::Normal, canary: false, probe: false };

/// A mechanism refused an attempt of step `s` before it reached `dependency`: counted, and
/// traced with what the attempt was (`parked`: the serial of one that waited at a bulkhead).
fn refused(
    out: &mut impl Effects,
    s: u8,
    dependency: u16,
    reason: Refusal,
    (purpose, kind): (Purpose, AttemptKind),
    parked: Option<u32>,
) {
    out.observe(Observation::Refused { dependency, reason });
    out.trace(TraceEvent::AttemptRefused { step: s, dependency, reason, purpose, kind, parked });
}

/// An attempt about to pass the guards.
#[derive(Debug, Clone, Copy)]
struct Attempt {
    /// What it costs while in flight (lookups cost nothing).
    cost: f64,
    dependency: usize,
    route: RouteId,
    info: AttemptInfo,
    purpose: Purpose,
    timeout_us: Option<Micros>,
}

/// What the root run keeps for its agents' delegation hops (runtime/delegation.rs): a hop is an
/// attempt of the run and its cost is in flight, so the runtime's own fan-out limits see the
/// hops too, and a hop sees the runtime's attempts.
impl RunMachine {
    /// The root run's side of a hop's check. The deadline travels with the hop only when the
    /// policy propagates it.
    pub fn root_ledger(&self, now: Micros, propagates_deadline: bool) -> super::delegation::RootLedger {
        super::delegation::RootLedger {
            attempts_total: self.attempts_total,
            cost_in_flight: self.cost_in_flight,
            deadline_passed: propagates_deadline && self.budget.remaining_us(now) == 0,
        }
    }

    /// Time left before the root deadline at `now`: with propagation it bounds each hop's
    /// timeout, as it bounds the runtime's own attempts (docs/scenario.md 4.3).
    pub fn deadline_left_us(&self, now: Micros) -> Micros {
        self.budget.remaining_us(now)
    }

    /// The fan-out and delegation limits this run runs under (its mode's).
    pub fn fan_out_limits(&self) -> &super::fan_out::FanOutLimits {
        &self.treatment.fan_out
    }

    /// Attempts of the run so far, its agents' hops included.
    pub fn attempts_total(&self) -> u32 {
        self.attempts_total
    }

    /// Cost units of the run's attempts and hops in flight now.
    pub fn cost_in_flight(&self) -> f64 {
        self.cost_in_flight
    }

    pub fn hop_sent(&mut self, cost: f64) {
        self.attempts_total += 1;
        self.cost_in_flight += cost;
    }

    pub fn hop_ended(&mut self, cost: f64) {
        self.cost_in_flight = (self.cost_in_flight - cost).max(0.0);
    }
}
