//! The driver between root runs and stations: it starts runs, gives their machines
//! ([`RunMachine`]) one input at a time, and carries out the commands they return: attempts
//! sent to stations, attempts cancelled, timers, ends (with resubmission by the user) and
//! bulkhead permits handed between runs.

use super::cache::CACHE_HANDLE;
use super::event::Event;
use super::sdk::{SDK_HANDLE, SdkStart};
use super::simulation::{Caller, Job, RunSlot, SimError, Simulation, TAG_MODE, TAG_RESUBMIT};
use super::stations::NewAttempt;
use super::tasks::CLIENT_HANDLE;
use crate::metrics::Observation;
use crate::metrics::Recorder;
use crate::runtime::degradation::{EndedRun, ModeController, RunEnd, RunMode, WritePause};
use crate::runtime::guard::Loads;
use crate::runtime::run::{NORMAL_RUN, split_waiter_token};
use crate::runtime::{
    AttemptResult, Command, Effects, Purpose, RunBudget, RunContext, RunMachine, RunStart, TraceEvent, TraceSink,
    Tracer,
};
use crate::sim::Micros;
use crate::vocab::Outcome;
use crate::world::LedgerEntry;

impl<T: Tracer> Simulation<'_, T> {
    pub(super) fn start_run(
        &mut self,
        now: Micros,
        workflow: usize,
        arrival: u32,
        resubmission: u8,
        user: Option<super::user_slots::UserLink>,
    ) {
        let model = self.model;
        if self.live_runs >= model.world.max_in_flight_runs as usize {
            self.error = Some(SimError::TooManyRuns { limit: model.world.max_in_flight_runs, at_s: now as f64 / 1e6 });
            return;
        }
        let wf = &model.workflows[workflow];
        let workload = &model.world.workloads[workflow];
        let measured = now >= model.world.warmup_us;
        // `run_keys[w]` is `root.with(TAG_RUN).with(workload.stream_id)`, made once.
        let key = self.run_keys[workflow].with(u64::from(arrival)).with(u64::from(resubmission));
        let (mode, limits) = match &self.modes {
            Some(modes) => {
                let mode = draw_run_mode(modes, workflow, key);
                (mode, &self.policy.modes[mode.overrides.index()].budget)
            }
            None => (NORMAL_RUN, &self.policy.budget),
        };
        let budget = RunBudget::new(limits, now + workload.deadline_us);
        let id = self.runs.alloc(RunSlot::vacant);
        let slot = &mut self.runs[id];
        slot.generation = slot.generation.wrapping_add(1);
        slot.arrival = arrival;
        slot.resubmission = resubmission;
        slot.user = user;
        slot.key = key;
        slot.measured = measured;
        slot.outstanding = 0;
        slot.finalized = false;
        slot.duplicate = false;
        slot.plain_steps = 0;
        slot.ledgers.clear();
        slot.ledgers.resize(wf.steps.len(), LedgerEntry::default());
        let (deadline_at_us, retry_token_limit) = (budget.deadline_at, budget.retry_token_limit);
        slot.machine.reset(workflow as u16, wf, key, now, budget, mode);
        if T::ON {
            self.runs_started += 1;
            let number = self.runs_started;
            let workflow = workflow as u16;
            let canary = mode.canary;
            let start = RunStart {
                number,
                measured,
                workflow,
                arrival,
                resubmission,
                deadline_at_us,
                retry_token_limit,
                canary,
            };
            self.tracer.run_started(id, now, start);
        }
        self.live_runs += 1;
        self.observe(now, measured, Observation::RunStarted { workflow: workflow as u16 });
        if mode.canary || mode.probe {
            self.observe(now, measured, Observation::ModeRun { canary: mode.canary, probe: mode.probe });
        }
        if !self.started_plain_call(now, id, workflow) {
            self.drive(now, id, |m, cx, out| m.start(cx, out));
        }
    }

    /// Gives run `r`'s machine one input, carries out what it asked for, then delivers any
    /// bulkhead permits the input freed (to this or other runs), one input each.
    fn drive(&mut self, now: Micros, r: u32, input: impl FnOnce(&mut RunMachine, &mut RunContext, &mut RunEffects<T>)) {
        self.drive_one(now, r, input);
        if !self.permits.is_empty() {
            self.deliver_permits(now);
        }
    }

    /// Bulkhead permits handed over or expired during the last input, one input each.
    fn deliver_permits(&mut self, now: Micros) {
        while let Some((token, granted)) = self.permits.pop_front() {
            let (slot, step, serial) = split_waiter_token(token);
            self.drive_one(now, slot, |m, cx, out| m.on_permit(cx, out, step, serial, granted));
        }
    }

    pub(super) fn drive_one(
        &mut self,
        now: Micros,
        r: u32,
        input: impl FnOnce(&mut RunMachine, &mut RunContext, &mut RunEffects<T>),
    ) {
        let model = self.model;
        let slot = &mut self.runs[r];
        let w = slot.machine.workflow as usize;
        let policy = self.policy;
        let writes_paused = match &self.modes {
            Some(m) => policy.modes[m.pausing_mode(w).index()].write_pause(),
            None => WritePause::None,
        };
        let mut cx = RunContext {
            now,
            workflow: &model.workflows[w],
            policy: self.policy,
            workflow_index: w,
            costs: &self.costs,
            step_offset: model.step_offsets[w] as u32,
            pipeline: &mut self.pipeline,
            loads: Loads { stations: &self.stations, dependencies: &model.world.dependencies },
            run_slot: r,
            writes_paused,
            approvals: &mut self.approvals,
        };
        let mut out = RunEffects::<T> {
            recorder: &mut self.recorder,
            now,
            measured: slot.measured,
            commands: &mut self.commands,
            trace: self.tracer.sink(r),
        };
        input(&mut slot.machine, &mut cx, &mut out);
        drop(out);
        self.carry_out(now, Some(r));
    }

    /// Carries out the commands of the last input in order and leaves the list empty. `r` is
    /// the run whose machine gave them, or None for the guards' own wake-ups.
    #[inline(always)]
    pub(super) fn carry_out(&mut self, now: Micros, r: Option<u32>) {
        for i in 0..self.commands.len() {
            // Matched in place, each arm reading only its own fields: a copy of the whole
            // command would load it in pieces that straddle the pieces it was just stored in,
            // and such a load waits for the stores to reach the cache (no store forwarding).
            match self.commands[i] {
                Command::PermitGranted { waiter } => self.permits.push_back((waiter, true)),
                Command::PermitExpired { waiter } => self.permits.push_back((waiter, false)),
                Command::WakeGuards { at } => self.queue.schedule(at.max(now), Event::GuardWake),
                // The timeout's two halves are read apart, as they were written.
                Command::Send { step, serial, dependency, purpose, timeout_us: Some(t) } => match r {
                    Some(r) => self.send(now, r, step, serial, dependency as usize, purpose, Some(t)),
                    None => debug_assert!(false, "only run machines send"),
                },
                Command::Send { step, serial, dependency, purpose, timeout_us: None } => match r {
                    Some(r) => self.send(now, r, step, serial, dependency as usize, purpose, None),
                    None => debug_assert!(false, "only run machines send"),
                },
                Command::Cancel { handle, .. } => match r {
                    Some(_) => self.cancel(now, handle),
                    None => debug_assert!(false, "only run machines cancel"),
                },
                Command::Sleep { step, wake, until } => match r {
                    Some(r) => {
                        let event = Event::StepWake { run: r, run_gen: self.runs[r].generation, step, wake };
                        self.queue.schedule(until, event);
                    }
                    None => debug_assert!(false, "only run machines sleep"),
                },
                Command::End { outcome, deadline_exceeded } => match r {
                    Some(r) => self.run_ended(now, r, outcome, deadline_exceeded),
                    None => debug_assert!(false, "only run machines end"),
                },
            }
        }
        self.commands.clear();
    }

    /// Sends attempt `serial` of step `s` (its serial number names its random stream).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn send(
        &mut self,
        now: Micros,
        r: u32,
        s: u8,
        serial: u32,
        station: usize,
        purpose: Purpose,
        timeout_us: Option<Micros>,
    ) {
        // A cache the policy looks in answers first (none: one load of a None).
        if self.policy.looks_in_caches && purpose == Purpose::Call && self.policy.caches[station].is_some() {
            // A repair prompt is new input: it goes past the cache (neither looked up nor stored).
            let repair = self.runs[r].machine.step_repaired(s);
            if !repair && self.send_through_cache(now, r, s, serial, station, timeout_us) {
                return;
            }
            // The cache is out or passed by: the call goes to the dependency, and spends there.
            self.charge_cached_call(r, s, station);
        }
        let slot = &self.runs[r];
        let workflow = &self.model.workflows[slot.machine.workflow as usize];
        let stream_part = workflow.steps[s as usize].stream_part;
        // A status lookup asks the task dependency about the call's key directly (its ledger
        // knows whether the task's write committed); only the call itself creates a task.
        if purpose != Purpose::Lookup && self.model.world.dependencies[station].task.is_some() {
            let key = slot.key.with_part(stream_part).with(u64::from(serial));
            let handle = self.start_client(now, r, s, serial, station, purpose, key, timeout_us);
            self.runs[r].machine.attach(s, serial, handle);
            return;
        }
        if self.policy.sdk_clients[station].is_some() {
            self.send_through_sdk(now, r, s, serial, station, purpose, timeout_us);
            return;
        }
        let attempt = NewAttempt {
            station,
            purpose,
            priority: workflow.priority,
            caller: Caller::Step { step: s, serial },
            run: r,
            run_gen: slot.generation,
            measured: slot.measured,
            key: slot.key.with_part(stream_part).with(u64::from(serial)),
            timeout_us,
            owned: true,
            stuck: false,
            counted: true,
            tokens: match &self.model.world.dependencies[station].tokens {
                Some(shape) if purpose != Purpose::Lookup => {
                    let mut tokens = workflow.steps[s as usize].tokens_in(slot.key, shape);
                    let sp = &self.policy.steps[slot.machine.workflow as usize][s as usize];
                    tokens.reduce_input(slot.machine.context_share(sp, s));
                    Some(tokens)
                }
                Some(_) | None => None,
            },
            first_token_timeout_us: self.policy.steps[slot.machine.workflow as usize][s as usize]
                .first_token_timeout_us,
        };
        let (job, generation) = self.submit(now, attempt);
        // The machine keeps the handle opaque and gives it back when it cancels the attempt.
        self.runs[r].machine.attach(s, serial, (u64::from(job) << 32) | u64::from(generation));
    }

    /// As `send`, through the dependency's SDK client: the same key, tokens and first-token
    /// timeout for its first hidden attempt.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn send_through_sdk(
        &mut self,
        now: Micros,
        r: u32,
        s: u8,
        serial: u32,
        station: usize,
        purpose: Purpose,
        timeout_us: Option<Micros>,
    ) {
        let slot = &self.runs[r];
        let w = slot.machine.workflow as usize;
        let workflow = &self.model.workflows[w];
        let sp = &self.policy.steps[w][s as usize];
        let tokens = match &self.model.world.dependencies[station].tokens {
            Some(shape) if purpose != Purpose::Lookup => {
                let mut tokens = workflow.steps[s as usize].tokens_in(slot.key, shape);
                tokens.reduce_input(slot.machine.context_share(sp, s));
                Some(tokens)
            }
            Some(_) | None => None,
        };
        let start = SdkStart {
            run: r,
            step: s,
            serial,
            station,
            purpose,
            priority: workflow.priority,
            key: slot.key.with_part(workflow.steps[s as usize].stream_part).with(u64::from(serial)),
            tokens,
            first_token_timeout_us: sp.first_token_timeout_us,
            // The runtime made this attempt's key (per_attempt, a write to a dependency that
            // honours keys): the SDK's resends carry it, so they deduplicate among themselves.
            attempt_key: matches!(purpose, Purpose::Write { deduplicated: false })
                && self.policy.key_per_attempt
                && workflow.steps[s as usize].idempotency == crate::scenario::Idempotency::Key,
            timeout_us,
        };
        let handle = self.start_sdk_call(now, start);
        self.runs[r].machine.attach(s, serial, handle);
    }

    fn cancel(&mut self, now: Micros, handle: Option<u64>) {
        let Some(handle) = handle else { return };
        if handle & CLIENT_HANDLE != 0 {
            self.cancel_client(now, handle);
            return;
        }
        if handle & SDK_HANDLE != 0 {
            self.cancel_sdk_call(now, handle);
            return;
        }
        if handle & CACHE_HANDLE != 0 {
            self.cancel_cache_call(now, handle);
            return;
        }
        let (job, generation) = ((handle >> 32) as u32, handle as u32);
        if self.jobs[job].generation == generation {
            self.abandon(now, job);
        }
    }

    /// Delivers the result of `job`, attempt `serial` of step `s`, to the run that waits for it.
    #[inline(always)]
    pub(super) fn on_step_result(&mut self, now: Micros, job: &Job, s: u8, serial: u32, result: AttemptResult) {
        if self.runs[job.run].plain_steps != 0 && self.plain_call_answered(now, job, result) {
            return;
        }
        if let (Some(bad), AttemptResult::Ok, Purpose::Call) = (job.bad, result, job.purpose) {
            // An answer that looks like success and is not: the run's machine weighs it.
            return self.deliver_bad_result(now, job.run, job.run_gen, s, serial, bad);
        }
        self.deliver_step_result(now, job.run, job.run_gen, job.purpose, s, serial, result);
    }

    #[cold]
    #[inline(never)]
    pub(super) fn deliver_bad_result(
        &mut self,
        now: Micros,
        r: u32,
        run_gen: u32,
        s: u8,
        serial: u32,
        bad: crate::world::bad_result::BadResult,
    ) {
        if self.runs[r].generation == run_gen {
            self.drive(now, r, |m, cx, out| m.on_bad_result(cx, out, s, serial, bad));
        }
    }

    /// Delivers the result of attempt `serial` of step `s` of run `r` (generation `run_gen`).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn deliver_step_result(
        &mut self,
        now: Micros,
        r: u32,
        run_gen: u32,
        purpose: Purpose,
        s: u8,
        serial: u32,
        result: AttemptResult,
    ) {
        let slot = &mut self.runs[r];
        if slot.generation != run_gen {
            return;
        }
        // A lookup's answer is what the dependency knows about the key: committed or not.
        let not_committed = purpose == Purpose::Lookup && !slot.ledgers[s as usize].committed();
        let result = if not_committed && result == AttemptResult::Ok { AttemptResult::NotFound } else { result };
        self.drive(now, r, |m, cx, out| m.on_attempt_result(cx, out, s, serial, result));
    }

    pub(super) fn on_step_wake(&mut self, now: Micros, r: u32, run_gen: u32, s: u8, wake: u32) {
        if self.runs[r].generation == run_gen {
            self.drive(now, r, |m, cx, out| m.on_wake(cx, out, s, wake));
        }
    }

    pub(super) fn on_guard_wake(&mut self, now: Micros) {
        let mut out = RunEffects::<T> {
            recorder: &mut self.recorder,
            now,
            measured: false,
            commands: &mut self.commands,
            trace: self.tracer.sink(u32::MAX),
        };
        self.pipeline.on_wake(now, &mut out);
        drop(out);
        self.carry_out(now, None);
        if !self.permits.is_empty() {
            self.deliver_permits(now);
        }
    }

    /// The user may resubmit a run that failed or missed its deadline; the slot is freed once
    /// its last attempt has left its station.
    #[inline(always)]
    fn run_ended(&mut self, now: Micros, r: u32, outcome: Outcome, deadline_exceeded: bool) {
        let model = self.model;
        let slot = &self.runs[r];
        let workflow = slot.machine.workflow;
        if let Some(modes) = &mut self.modes {
            let machine = &slot.machine;
            let end = RunEnd {
                outcome,
                deadline_exceeded,
                full_quality: machine.full_quality(),
                degraded_by_mode_only: machine.degraded_by_mode_only(),
                cancelled_by_mode: machine.cancelled_by_mode(),
                write_paused_by_mode: machine.handed_off_by_write_pause(),
                duplicate_effect: false,
            };
            let run = EndedRun {
                workflow: workflow as usize,
                mode: machine.mode,
                end,
                effect_unknown: machine.left_effect_unknown(),
            };
            let wf = &model.workflows[workflow as usize];
            modes.run_ended(run, |d| machine.answered_at(wf, d), |d| machine.left_effect_unknown_at(wf, d));
        }
        if self.caches.is_some() {
            self.cache_run_ended(now, r);
        }
        let slot = &self.runs[r];
        let workload = &model.world.workloads[workflow as usize];
        // A run awaiting approval is never resubmitted, late or not: its request stays with the
        // people, and asking again would only send a second request to someone who still has
        // the first (scenario.md 4.7, 5.2).
        if let Some(resubmit) = &workload.resubmit
            && (outcome == Outcome::Failed || deadline_exceeded)
            && outcome != Outcome::AwaitingApproval
            && u32::from(slot.resubmission) < resubmit.max_resubmissions
        {
            let u = slot.key.with(TAG_RESUBMIT).stream().unit();
            if u < resubmit.probability {
                let event = Event::Resubmit { workflow, arrival: slot.arrival, resubmission: slot.resubmission + 1 };
                let measured = slot.measured;
                self.queue.schedule(now + resubmit.delay_us, event);
                self.observe(now, measured, Observation::Resubmitted);
            }
        }
        let slot = &mut self.runs[r];
        // The answer reaches the user who waits for it (if it still does) before the slot can go.
        if let Some(link) = slot.user.take() {
            let failed = !outcome.is_success() || deadline_exceeded;
            self.user_answered(now, workflow as usize, link, failed);
        }
        let slot = &self.runs[r];
        if slot.outstanding == 0 && !slot.finalized {
            self.finalize_run(now, r);
        }
    }

    /// Every attempt of the run has left its station, so late effects are counted: the run's
    /// duplicate and safety flags are final.
    #[inline]
    pub(super) fn finalize_run(&mut self, now: Micros, r: u32) {
        if self.delegation.on {
            self.delegation_run_finalized(now, r);
        }
        let slot = &mut self.runs[r];
        debug_assert!(slot.machine.ended, "only an ended run is finalized");
        slot.finalized = true;
        let (measured, outcome, duplicate_effect) = (slot.measured, slot.machine.outcome, slot.duplicate);
        let start_us = slot.machine.start_us;
        if let Some(modes) = &mut self.modes {
            let machine = &slot.machine;
            let deadline_exceeded = false; // only the safe-outcome SLI counts here, and it does not read it
            let end = RunEnd {
                outcome,
                deadline_exceeded,
                full_quality: machine.full_quality(),
                degraded_by_mode_only: machine.degraded_by_mode_only(),
                cancelled_by_mode: machine.cancelled_by_mode(),
                write_paused_by_mode: machine.handed_off_by_write_pause(),
                duplicate_effect,
            };
            let wf = &self.model.workflows[machine.workflow as usize];
            let ledgers = &slot.ledgers;
            let duplicated_at = |d: usize| {
                wf.steps
                    .iter()
                    .zip(ledgers.iter())
                    .any(|(step, ledger)| step.dependency == d && ledger.duplicates() > 0)
            };
            modes.run_finalized(machine.workflow as usize, end, |d| machine.answered_at(wf, d), duplicated_at);
        }
        self.observe(now, measured, Observation::RunFinalized { outcome, duplicate_effect, start_us });
        if T::ON {
            self.tracer.record(r, now, TraceEvent::RunFinalized { duplicate_effect });
        }
        debug_assert!(self.live_runs > 0, "in-flight runs never go below zero");
        self.live_runs -= 1;
        self.runs.release(r);
    }
}

/// A new run's treatment by its workflow's mode, from its own draw. Kept out of line: inlined,
/// the draw's arithmetic was computed for every run, modes or not.
#[inline(never)]
fn draw_run_mode(modes: &ModeController, workflow: usize, key: crate::sim::StreamKey) -> RunMode {
    modes.run_mode(workflow, key.with(TAG_MODE).stream().unit())
}

/// The engine's side of a machine's input: observations are folded into the recorder as they
/// come (observations never change the simulation, so folding them at once or after the input
/// gives the same figures), commands wait in a list that [`Simulation::carry_out`] empties.
pub(super) struct RunEffects<'a, T: Tracer + 'a> {
    recorder: &'a mut Recorder,
    now: Micros,
    /// The run arrived after the warm-up.
    measured: bool,
    commands: &'a mut Vec<Command>,
    /// The run's trace (for the guards' own wake-ups, slot u32::MAX, which no run holds).
    trace: T::Sink<'a>,
}

impl<'a, T: Tracer + 'a> RunEffects<'a, T> {
    pub(super) fn new(
        recorder: &'a mut Recorder,
        now: Micros,
        measured: bool,
        commands: &'a mut Vec<Command>,
        trace: T::Sink<'a>,
    ) -> Self {
        RunEffects { recorder, now, measured, commands, trace }
    }
}

impl<T: Tracer> Effects for RunEffects<'_, T> {
    #[inline(always)]
    fn command(&mut self, c: Command) {
        self.commands.push(c);
    }

    #[inline(always)]
    fn observe(&mut self, o: Observation) {
        self.recorder.observe(self.now, self.measured, o);
    }

    #[inline(always)]
    fn observe_shared(&mut self, o: Observation) {
        self.recorder.observe(self.now, true, o);
    }

    #[inline(always)]
    fn trace(&mut self, event: TraceEvent) {
        if T::ON {
            self.trace.record(self.now, event);
        }
    }
}
