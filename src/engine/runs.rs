//! Root runs: the workflow graph, concurrency tokens, attempts under the run's budgets, retry
//! decisions, fallbacks, soft-step omission, write reconciliation and outcomes.

use super::event::Event;
use super::simulation::{
    AttemptResult, Caller, Purpose, Run, SimError, Simulation, StepPhase, StepRun, TAG_JITTER, TAG_RESUBMIT, TAG_RUN,
};
use super::stations::NewAttempt;
use crate::metrics::Observation;
use crate::runtime::decision::retry_or_give_up;
use crate::runtime::{
    AttemptTimeout, Decision, FailedAttempt, GiveUp, OnEffectUnknown, RunBudget, attempt_timeout, decide,
};
use crate::runtime::{StepModel, StepPolicy};
use crate::scenario::{Criticality, Effect, Idempotency};
use crate::sim::Micros;
use crate::vocab::FailureKind;
use crate::vocab::{BudgetKind, Outcome};
use std::collections::VecDeque;

impl<'m> Simulation<'m> {
    /// Step `s` of run `r` in the model's flattened step list (the index of its metrics).
    fn flat_step(&self, r: u32, s: u8) -> u32 {
        (self.model.step_offsets[self.runs[r].workflow as usize] + s as usize) as u32
    }

    /// The model and the policy of step `s` of run `r`. They borrow the model, not the
    /// simulation, so the run state can be changed while they are in use.
    fn step_of(&self, r: u32, s: u8) -> (&'m StepModel, &'m StepPolicy) {
        let w = self.runs[r].workflow as usize;
        (&self.model.workflows[w].steps[s as usize], &self.policy.steps[w][s as usize])
    }
}

impl Simulation<'_> {
    pub(super) fn start_run(&mut self, now: Micros, workflow: usize, arrival: u32, resubmission: u8) {
        let model = self.model;
        if self.live_runs >= model.world.max_in_flight_runs as usize {
            self.error = Some(SimError::TooManyRuns { limit: model.world.max_in_flight_runs, at_s: now as f64 / 1e6 });
            return;
        }
        let wf = &model.workflows[workflow];
        let workload = &model.world.workloads[workflow];
        let measured = now >= model.world.warmup_us;
        let key =
            self.root.with(TAG_RUN).with(workload.stream_id).with(u64::from(arrival)).with(u64::from(resubmission));
        let budget = RunBudget::new(&self.policy.budget, now + workload.deadline_us);
        let id = self.runs.alloc(|| Run {
            generation: 0,
            workflow: 0,
            arrival: 0,
            resubmission: 0,
            key,
            start_us: 0,
            measured: false,
            budget,
            steps: Vec::new(),
            waiting: VecDeque::new(),
            steps_open: 0,
            degraded: false,
            ended: false,
            finalized: false,
            outcome: Outcome::Failed,
            outstanding: 0,
            duplicate: false,
        });
        let run = &mut self.runs[id];
        run.generation = run.generation.wrapping_add(1);
        run.workflow = workflow as u16;
        run.arrival = arrival;
        run.resubmission = resubmission;
        run.key = key;
        run.start_us = now;
        run.measured = measured;
        run.budget = budget;
        run.steps.clear();
        run.steps.extend(wf.steps.iter().map(|s| StepRun::new(s.predecessors)));
        run.waiting.clear();
        run.steps_open = wf.steps.len() as u32;
        run.degraded = false;
        run.ended = false;
        run.finalized = false;
        run.outstanding = 0;
        run.duplicate = false;
        self.live_runs += 1;
        self.observe(now, measured, Observation::RunStarted);
        for &s in &wf.roots {
            self.make_ready(now, id, s);
        }
    }

    fn make_ready(&mut self, now: Micros, r: u32, s: u8) {
        let run = &mut self.runs[r];
        if run.ended {
            return;
        }
        // First come, first served: a step ready now never overtakes one already waiting.
        if run.budget.has_concurrency_slot() && run.waiting.is_empty() {
            self.start_step(now, r, s);
        } else {
            run.steps[s as usize].phase = StepPhase::Waiting;
            run.waiting.push_back(s);
            let measured = run.measured;
            self.observe(now, measured, Observation::BudgetExhausted(BudgetKind::Concurrency));
        }
    }

    fn start_step(&mut self, now: Micros, r: u32, s: u8) {
        let run = &mut self.runs[r];
        run.budget.in_flight += 1;
        run.steps[s as usize].phase = StepPhase::Active;
        let measured = run.measured;
        self.observe(now, measured, Observation::LogicalCall);
        self.try_attempt(now, r, s);
    }

    /// Starts the next attempt of a step if every budget holds (essay section 5), else gives up.
    fn try_attempt(&mut self, now: Micros, r: u32, s: u8) {
        let model = self.model;
        let (step, sp) = self.step_of(r, s);
        let run = &self.runs[r];
        let state = run.steps[s as usize];
        let dependency = if state.on_fallback { sp.fallback.unwrap_or(step.dependency) } else { step.dependency };
        let timeout_us = match attempt_timeout(
            self.policy.rules.deadline_propagation,
            sp.timeout_us,
            run.budget.remaining_us(now),
            sp.reserve_us,
        ) {
            AttemptTimeout::After(t) => Some(t),
            AttemptTimeout::Never => None,
            AttemptTimeout::Exhausted => {
                self.exhausted(now, r, BudgetKind::Time);
                self.step_gave_up(now, r, s, false);
                return;
            }
        };
        let cost = model.world.dependencies[dependency].cost_units;
        // A retry is a repeat at the same dependency; the first call to a fallback is a new
        // path (bounded by the cost budget), not a retry, as a fallback strategy wrapped
        // around a retry strategy behaves in Polly or resilience4j.
        let is_retry = if state.on_fallback { state.fallback_attempts > 0 } else { state.primary_attempts > 0 };
        let run = &mut self.runs[r];
        if let Err(kind) = run.budget.admit_attempt(is_retry, cost) {
            self.exhausted(now, r, kind);
            // A cheaper fallback may still fit a cost budget; a missing retry token does not
            // stop the fallback's first attempt either.
            self.step_gave_up(now, r, s, true);
            return;
        }
        let st = &mut run.steps[s as usize];
        if st.on_fallback {
            st.fallback_attempts += 1;
        } else {
            st.primary_attempts += 1;
        }
        let purpose = match step.effect {
            Effect::Write => {
                Purpose::Write { deduplicated: step.idempotency == Idempotency::Key && !self.policy.key_per_attempt }
            }
            Effect::Read => Purpose::Call,
        };
        self.send(now, r, s, dependency, purpose, timeout_us);
    }

    /// Sends the step's next attempt (its serial number names its random stream).
    fn send(&mut self, now: Micros, r: u32, s: u8, station: usize, purpose: Purpose, timeout_us: Option<Micros>) {
        let run = &mut self.runs[r];
        let stream_id = self.model.workflows[run.workflow as usize].steps[s as usize].stream_id;
        let st = &mut run.steps[s as usize];
        let serial = st.serial;
        st.serial += 1;
        let attempt = NewAttempt {
            station,
            purpose,
            caller: Caller::Step { step: s },
            run: r,
            run_gen: run.generation,
            measured: run.measured,
            key: run.key.with(stream_id).with(u64::from(serial)),
            timeout_us,
        };
        let job = self.submit(now, attempt);
        self.runs[r].steps[s as usize].job = Some(job);
    }

    fn exhausted(&mut self, now: Micros, r: u32, kind: BudgetKind) {
        let measured = self.runs[r].measured;
        self.observe(now, measured, Observation::BudgetExhausted(kind));
    }

    /// Sends a status lookup for a write whose effect is unknown. Lookups are reads on the
    /// control path: they spend no retry token and no cost, but they are attempts.
    /// Also the one place that bounds lookups: past the step's max_attempts of them the effect
    /// stays unknown and the run is handed off.
    fn start_lookup(&mut self, now: Micros, r: u32, s: u8) {
        let (step, sp) = self.step_of(r, s);
        let run = &self.runs[r];
        if run.steps[s as usize].lookups >= sp.max_attempts {
            self.end_run(now, r, Outcome::Handoff);
            return;
        }
        let timeout_us = match attempt_timeout(
            self.policy.rules.deadline_propagation,
            sp.timeout_us,
            run.budget.remaining_us(now),
            0,
        ) {
            AttemptTimeout::After(t) => Some(t),
            AttemptTimeout::Never => None,
            AttemptTimeout::Exhausted => {
                self.exhausted(now, r, BudgetKind::Time);
                self.end_run(now, r, Outcome::Handoff);
                return;
            }
        };
        let dependency = step.dependency;
        let st = &mut self.runs[r].steps[s as usize];
        st.looking_up = true;
        st.lookups += 1;
        self.send(now, r, s, dependency, Purpose::Lookup, timeout_us);
    }

    pub(super) fn on_step_result(&mut self, now: Micros, r: u32, run_gen: u32, s: u8, result: AttemptResult) {
        let run = &mut self.runs[r];
        if run.generation != run_gen || run.ended {
            return;
        }
        let st = &mut run.steps[s as usize];
        st.job = None;
        if st.looking_up {
            st.looking_up = false;
            self.on_lookup_result(now, r, s, result);
            return;
        }
        let model = self.model;
        let step = &model.workflows[run.workflow as usize].steps[s as usize];
        let kind = match result {
            AttemptResult::Ok => {
                let degraded = st.on_fallback;
                self.step_succeeded(now, r, s, degraded);
                return;
            }
            AttemptResult::Failed { kind, .. } => kind,
            AttemptResult::TimedOut if step.effect == Effect::Write => {
                st.effect_unknown = true;
                let measured = run.measured;
                self.observe(now, measured, Observation::EffectUnknown);
                FailureKind::EffectUnknown
            }
            AttemptResult::TimedOut => FailureKind::TransientTransport,
        };
        let retry_after_us = match result {
            AttemptResult::Failed { retry_after_us, .. } => retry_after_us,
            _ => None,
        };
        self.after_failure(now, r, s, kind, retry_after_us);
    }

    /// Everything the decision needs about the step's last failed attempt.
    fn failed_attempt(
        &mut self,
        now: Micros,
        r: u32,
        s: u8,
        kind: FailureKind,
        retry_after_us: Option<Micros>,
    ) -> FailedAttempt {
        let (step, sp) = self.step_of(r, s);
        let run = &mut self.runs[r];
        let st = &mut run.steps[s as usize];
        st.last_failure = Some(kind);
        let jitter = run.key.with(TAG_JITTER).with(step.stream_id).with(u64::from(st.serial)).stream().unit();
        FailedAttempt {
            kind,
            is_write: step.effect == Effect::Write,
            deduplicated: step.idempotency == Idempotency::Key && !self.policy.key_per_attempt,
            status_lookup: step.status_lookup,
            attempts_made: if st.on_fallback { st.fallback_attempts } else { st.primary_attempts },
            max_attempts: sp.max_attempts,
            retry_tokens_left: run.budget.retry_tokens_left,
            retry_after_us,
            remaining_us: run.budget.remaining_us(now),
            reserve_us: sp.reserve_us,
            predicted_attempt_us: sp.predicted_attempt_us,
            previous_sleep_us: st.previous_sleep_us,
            jitter,
        }
    }

    fn after_failure(&mut self, now: Micros, r: u32, s: u8, kind: FailureKind, retry_after_us: Option<Micros>) {
        let failed = self.failed_attempt(now, r, s, kind, retry_after_us);
        match decide(&self.policy.rules, &failed) {
            Decision::Retry { sleep_us } => self.sleep_then_retry(now, r, s, sleep_us),
            Decision::Reconcile => self.start_lookup(now, r, s),
            Decision::Handoff => self.end_run(now, r, Outcome::Handoff),
            Decision::GiveUp(reason) => {
                if let GiveUp::Budget(b) = reason {
                    self.exhausted(now, r, b);
                }
                self.step_gave_up(now, r, s, reason != GiveUp::Budget(BudgetKind::Time));
            }
        }
    }

    fn sleep_then_retry(&mut self, now: Micros, r: u32, s: u8, sleep_us: Micros) {
        let run = &mut self.runs[r];
        let st = &mut run.steps[s as usize];
        st.previous_sleep_us = sleep_us;
        if sleep_us == 0 {
            self.try_attempt(now, r, s);
            return;
        }
        st.phase = StepPhase::Sleeping;
        st.wake = st.wake.wrapping_add(1);
        let event = Event::StepWake { run: r, run_gen: run.generation, step: s, wake: st.wake };
        self.queue.schedule(now + sleep_us, event);
    }

    pub(super) fn on_step_wake(&mut self, now: Micros, r: u32, run_gen: u32, s: u8, wake: u32) {
        let run = &mut self.runs[r];
        if run.generation != run_gen || run.ended {
            return;
        }
        let st = &mut run.steps[s as usize];
        if st.phase != StepPhase::Sleeping || st.wake != wake {
            return;
        }
        st.phase = StepPhase::Active;
        self.try_attempt(now, r, s);
    }

    fn on_lookup_result(&mut self, now: Micros, r: u32, s: u8, result: AttemptResult) {
        let run = &self.runs[r];
        let committed = run.steps[s as usize].ledger.committed();
        match result {
            AttemptResult::Ok if committed => {
                let measured = run.measured;
                self.observe(now, measured, Observation::Reconciled);
                self.step_succeeded(now, r, s, false);
            }
            // Not committed (yet): send again with the same key; the dependency deduplicates if
            // the first attempt commits late. The usual retry limits apply, and when they stop
            // the resend the effect may still land late: a human decides.
            AttemptResult::Ok => {
                let failed = self.failed_attempt(now, r, s, FailureKind::EffectUnknown, None);
                match retry_or_give_up(&self.policy.rules, &failed) {
                    Decision::Retry { sleep_us } => self.sleep_then_retry(now, r, s, sleep_us),
                    Decision::GiveUp(reason) => {
                        if let GiveUp::Budget(b) = reason {
                            self.exhausted(now, r, b);
                        }
                        self.end_run(now, r, Outcome::Handoff);
                    }
                    Decision::Reconcile | Decision::Handoff => self.end_run(now, r, Outcome::Handoff),
                }
            }
            // The lookup itself failed. It is a read, so ask again while the step's attempt
            // limit allows; after that the effect stays unknown and a human must decide.
            _ => self.start_lookup(now, r, s),
        }
    }

    fn step_succeeded(&mut self, now: Micros, r: u32, s: u8, via_fallback: bool) {
        let run = &mut self.runs[r];
        run.steps[s as usize].phase = StepPhase::Done;
        if via_fallback {
            run.degraded = true;
            let (measured, step) = (run.measured, self.flat_step(r, s));
            self.observe(now, measured, Observation::FallbackUsed { step });
        }
        self.release_step(now, r, s);
    }

    /// The step's own attempts are over without success: fall back (unless time ran out),
    /// omit a soft step, or fail the run.
    fn step_gave_up(&mut self, now: Micros, r: u32, s: u8, may_fall_back: bool) {
        let (step, sp) = self.step_of(r, s);
        let run = &mut self.runs[r];
        let st = &mut run.steps[s as usize];
        if !st.on_fallback && sp.fallback.is_some() && may_fall_back {
            st.on_fallback = true;
            st.previous_sleep_us = 0;
            self.try_attempt(now, r, s);
            return;
        }
        if step.criticality == Criticality::Soft {
            st.phase = StepPhase::Omitted;
            run.degraded = true;
            let (measured, step) = (run.measured, self.flat_step(r, s));
            self.observe(now, measured, Observation::StepOmitted { step });
            self.release_step(now, r, s);
        } else if st.effect_unknown && self.policy.rules.on_effect_unknown != OnEffectUnknown::Retry {
            // The write may still land: a runtime that reconciles never reports that as a
            // plain failure, it hands the run to a human with the evidence.
            self.end_run(now, r, Outcome::Handoff);
        } else {
            let (measured, step) = (run.measured, self.flat_step(r, s));
            self.observe(now, measured, Observation::StepFailed { step });
            self.end_run(now, r, Outcome::Failed);
        }
    }

    fn release_step(&mut self, now: Micros, r: u32, s: u8) {
        let model = self.model;
        let run = &mut self.runs[r];
        run.budget.in_flight -= 1;
        run.steps_open -= 1;
        let wf = &model.workflows[run.workflow as usize];
        for &next in &wf.steps[s as usize].successors {
            let run = &mut self.runs[r];
            let st = &mut run.steps[next as usize];
            st.preds_left -= 1;
            if st.preds_left == 0 {
                self.make_ready(now, r, next);
            }
        }
        loop {
            let run = &mut self.runs[r];
            if run.ended || !run.budget.has_concurrency_slot() {
                break;
            }
            let Some(next) = run.waiting.pop_front() else { break };
            self.start_step(now, r, next);
        }
        let run = &self.runs[r];
        if !run.ended && run.steps_open == 0 {
            let outcome = if run.degraded { Outcome::Degraded } else { Outcome::Succeeded };
            self.end_run(now, r, outcome);
        }
    }

    fn end_run(&mut self, now: Micros, r: u32, outcome: Outcome) {
        let model = self.model;
        let run = &mut self.runs[r];
        if run.ended {
            return;
        }
        run.ended = true;
        run.outcome = outcome;
        let exceeded = now > run.budget.deadline_at;
        let (measured, latency_us, steps) = (run.measured, now - run.start_us, run.steps.len());
        self.observe(now, measured, Observation::RunEnded { outcome, latency_us, deadline_exceeded: exceeded });
        // Stop every branch still running: the caller no longer waits for them.
        for s in 0..steps {
            let st = &mut self.runs[r].steps[s];
            match st.phase {
                StepPhase::Active | StepPhase::Sleeping | StepPhase::Waiting => {
                    st.phase = StepPhase::Abandoned;
                    if let Some((job, generation)) = st.job.take()
                        && self.jobs[job].generation == generation
                    {
                        self.abandon(now, job);
                    }
                }
                _ => {}
            }
        }
        let run = &self.runs[r];
        let workload = &model.world.workloads[run.workflow as usize];
        if let Some(resubmit) = &workload.resubmit
            && (outcome == Outcome::Failed || exceeded)
            && u32::from(run.resubmission) < resubmit.max_resubmissions
        {
            let u = run.key.with(TAG_RESUBMIT).stream().unit();
            if u < resubmit.probability {
                let event = Event::Resubmit {
                    workflow: run.workflow,
                    arrival: run.arrival,
                    resubmission: run.resubmission + 1,
                };
                let measured = run.measured;
                self.queue.schedule(now + resubmit.delay_us, event);
                self.observe(now, measured, Observation::Resubmitted);
            }
        }
        let run = &self.runs[r];
        if run.outstanding == 0 && !run.finalized {
            self.finalize_run(now, r);
        }
    }

    /// Every attempt of the run has left its station, so late effects are counted: the run's
    /// duplicate and safety flags are final.
    pub(super) fn finalize_run(&mut self, now: Micros, r: u32) {
        let run = &mut self.runs[r];
        run.finalized = true;
        let (measured, outcome, duplicate_effect) = (run.measured, run.outcome, run.duplicate);
        self.observe(now, measured, Observation::RunFinalized { outcome, duplicate_effect });
        debug_assert!(self.live_runs > 0, "in-flight runs never go below zero");
        self.live_runs -= 1;
        self.runs.release(r);
    }
}
