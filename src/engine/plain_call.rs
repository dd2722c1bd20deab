//! Root runs that are a chain of plain calls: the engine's fast path for workflows whose run,
//! when it goes well, is nothing but "send one attempt; when it answers, send the next step's;
//! end when the last answers" (an M/M/c customer, a tandem line, a single call behind a
//! timeout).
//!
//! For such a run the run machine's start and its handling of each successful answer are
//! pure bookkeeping that no figure reads: the general path pays for a run context, the
//! machine's budget, fan-out, guard and cache checks, an attempt record and two rounds of
//! commands per step. Here the engine sends the attempts and ends the run itself, and the
//! machine is asked only for the end (`RunMachine::end_plain_call`), so every observation is
//! the one the general path makes, in the same order.
//!
//! What it assumes is not reasoned out twice: it is asked of the machine. The first run of a
//! workflow that passes the static conditions (`may_be_plain`) is given to the machine's own
//! `start` and then a success of each attempt it asks for, with their effects recorded
//! instead of carried out. The workflow is plain only if `start` and every success but the
//! last made exactly one `LogicalCall` observation and one `Send` (of the next step), and the
//! last success exactly one `RunEnded` and one `End`. Those sends are then the template of
//! every later run of the workflow: at a run's start, and at each step's success, the
//! deadline left (when no deadline propagates into the timeouts), the budgets and the guards
//! are the same for every run of a workflow without modes or load shedding, so the machine
//! would decide the same each time.
//!
//! Anything else an attempt brings (a failure, a timeout, an answer that is not what it
//! seems) hands the run back to the machine: `start` and the successes so far are replayed at
//! the times they happened with their effects dropped (they were made already), and the
//! answer is given to the machine as on the general path. A run that never hears its answer
//! needs nothing more.
//!
//! `simulate_without_fast_paths` runs every run on the general path; tests/plain_calls.rs
//! checks both give the same bytes.

use super::simulation::{Job, PlainCall, PlainSend, PlainTimeout, Simulation};
use crate::metrics::Observation;
use crate::runtime::deadline::{AttemptTimeout, attempt_timeout};
use crate::runtime::guard::Loads;
use crate::runtime::step_policy::StepPolicy;
use crate::runtime::workflow::StepModel;
use crate::runtime::{AttemptResult, Command, Outbox, Purpose, RunContext, RunMachine, Tracer};
use crate::scenario::Criticality;
use crate::sim::Micros;

impl<T: Tracer> Simulation<'_, T> {
    /// The conditions the machine cannot be asked about without side effects, or that hold for
    /// some runs and not others: steps not a person's, on routes with no guards, no modes or
    /// load shedding, no delegation, and attempts the engine sends straight to a station (no
    /// task, SDK client, cache or token shape). Untraced only: a trace follows the machine.
    /// A validator, hedging and a quorum would each fail the machine's own answer too
    /// (tests/plain_calls.rs shows no run of theirs is plain), so taking them out would change
    /// no figure; they stay as the statement of what the fast path never assumes, and save
    /// asking: a validator's verdict is a draw per run, and hedging skips writes but not reads.
    pub(super) fn may_be_plain(&self, workflow: usize) -> bool {
        let (model, policy) = (self.model, self.policy);
        let wf = &model.workflows[workflow];
        let plain_step = |(step, sp): (&StepModel, &StepPolicy)| {
            let dep = &model.world.dependencies[step.dependency];
            !step.approval
                && step.criticality == Criticality::Hard
                && sp.validator.is_none()
                && self.pipeline.is_open_road(sp.routes.primary)
                && dep.task.is_none()
                && dep.tokens.is_none()
                && policy.sdk_clients[step.dependency].is_none()
                && !(policy.looks_in_caches && policy.caches[step.dependency].is_some())
        };
        !T::ON
            && self.modes.is_none()
            && policy.admission.is_none()
            && !self.delegation.on
            && !policy.snapshots
            && policy.hedging.is_none()
            && !wf.has_quorum
            && wf.steps.iter().zip(&policy.steps[workflow]).all(plain_step)
    }

    /// Starts run `r` (just started, its machine fresh) as a plain chain if its workflow's
    /// runs are, asking the machine at the workflow's first run: what the machine's `start`
    /// would observe and send. False when the run is to go through the machine.
    #[inline(always)]
    pub(super) fn started_plain_call(&mut self, now: Micros, r: u32, workflow: usize) -> bool {
        let call = match self.plain_calls[workflow] {
            PlainCall::Unasked => self.learn_plain_call(now, r, workflow),
            known @ (PlainCall::Never | PlainCall::Chain { .. }) => known,
        };
        let PlainCall::Chain { serial, dependency, timeout_us, steps } = call else { return false };
        let slot = &mut self.runs[r];
        slot.plain_steps = steps;
        slot.plain_answered_us.clear();
        self.send_plain(now, r, (0, serial, dependency), timeout_us);
        true
    }

    #[cold]
    #[inline(never)]
    fn learn_plain_call(&mut self, now: Micros, r: u32, workflow: usize) -> PlainCall {
        let chain = self.ask_machine(now, r, workflow);
        let call = match (chain.first(), u16::try_from(chain.len())) {
            (Some(&PlainSend { serial, dependency, timeout: PlainTimeout::Fixed(timeout_us), .. }), Ok(steps)) => {
                PlainCall::Chain { serial, dependency, timeout_us, steps }
            }
            _ => PlainCall::Never,
        };
        self.plain_calls[workflow] = call;
        self.plain_chains[workflow] = chain;
        call
    }

    /// Runs the machine's `start` and a success of each attempt it asks for on run `r`'s
    /// fresh machine, with their effects recorded, then makes the machine fresh again. The
    /// chain of sends, or none when the workflow is not plain.
    #[cold]
    #[inline(never)]
    fn ask_machine(&mut self, now: Micros, r: u32, workflow: usize) -> Vec<PlainSend> {
        let fresh = self.runs[r].machine.clone();
        let steps = self.model.workflows[workflow].steps.len();
        let mut chain = Vec::with_capacity(steps);
        let mut effects = self.recorded(now, r, |m, cx, out| m.start(cx, out));
        let plain = loop {
            let next = chain.len();
            match (effects.observations.as_slice(), effects.commands.as_slice(), effects.shared.is_empty()) {
                (
                    [Observation::LogicalCall],
                    &[Command::Send { step, serial, dependency, purpose: Purpose::Call, timeout_us }],
                    true,
                ) if usize::from(step) == next => {
                    let Some(timeout) = self.plain_timeout(now, r, step, timeout_us) else { break false };
                    chain.push(PlainSend { step, serial, dependency, timeout });
                    effects = self.recorded(now, r, |m, cx, out| {
                        m.attach(step, serial, 0);
                        m.on_attempt_result(cx, out, step, serial, AttemptResult::Ok);
                    });
                }
                ([Observation::RunEnded { .. }], [Command::End { .. }], true) => break next == steps,
                _ => break false,
            }
        };
        debug_assert_eq!(self.runs[r].machine.workflow as usize, workflow);
        self.runs[r].machine = fresh;
        if plain { chain } else { Vec::new() }
    }

    /// How step `step`'s attempt timeout is found in later runs, given the one the machine
    /// asked for (`timeout_us`) at the workflow's first run; None when the rule below does not
    /// give what the machine gave.
    fn plain_timeout(&self, now: Micros, r: u32, step: u8, timeout_us: Option<Micros>) -> Option<PlainTimeout> {
        if step == 0 || !self.policy.rules.deadline_propagation {
            return Some(PlainTimeout::Fixed(timeout_us));
        }
        let sp = &self.policy.steps[self.runs[r].machine.workflow as usize][usize::from(step)];
        let left = PlainTimeout::Left { cap_us: sp.timeout_us, reserve_us: sp.reserve_us };
        (self.timeout_left(now, r, left) == Some(timeout_us)).then_some(left)
    }

    /// The attempt timeout `timeout` gives run `r` at `now`; None when too little time is left
    /// to start an attempt (the machine then gives up for lack of time).
    #[inline(always)]
    fn timeout_left(&self, now: Micros, r: u32, timeout: PlainTimeout) -> Option<Option<Micros>> {
        match timeout {
            PlainTimeout::Fixed(timeout_us) => Some(timeout_us),
            PlainTimeout::Left { cap_us, reserve_us } => {
                let remaining_us = self.runs[r].machine.budget.remaining_us(now);
                match attempt_timeout(true, cap_us, remaining_us, reserve_us) {
                    AttemptTimeout::After(t) => Some(Some(t)),
                    AttemptTimeout::Never => Some(None),
                    AttemptTimeout::Exhausted => None,
                }
            }
        }
    }

    /// What the machine would observe and send for step `step` of a plain chain.
    #[inline(always)]
    fn send_plain(
        &mut self,
        now: Micros,
        r: u32,
        (step, serial, dependency): (u8, u32, u16),
        timeout_us: Option<Micros>,
    ) {
        let measured = self.runs[r].measured;
        self.observe(now, measured, Observation::LogicalCall);
        self.send(now, r, step, serial, usize::from(dependency), Purpose::Call, timeout_us);
    }

    /// The answer to a plain chain's attempt `job`: a success sends the next step's attempt,
    /// or ends the run after the last step; anything else gives the run back to its machine,
    /// which then takes the answer as on the general path. True when the answer was taken
    /// here.
    #[inline(always)]
    pub(super) fn plain_call_answered(&mut self, now: Micros, job: &Job, result: AttemptResult) -> bool {
        let r = job.run;
        if self.runs[r].generation != job.run_gen {
            return false;
        }
        if result == AttemptResult::Ok && job.bad.is_none() {
            let slot = &self.runs[r];
            let next = slot.plain_answered_us.len() + 1;
            if next == usize::from(slot.plain_steps) {
                self.end_plain_call(now, r);
                return true;
            }
            let send = self.plain_chains[slot.machine.workflow as usize][next];
            if let Some(timeout_us) = self.timeout_left(now, r, send.timeout) {
                self.runs[r].plain_answered_us.push(now);
                self.send_plain(now, r, (send.step, send.serial, send.dependency), timeout_us);
                return true;
            }
        }
        self.hand_back(r);
        false
    }

    fn end_plain_call(&mut self, now: Micros, r: u32) {
        self.plain_call_runs += 1;
        let slot = &mut self.runs[r];
        slot.plain_steps = 0;
        let mut out = super::runs::RunEffects::<T>::new(
            &mut self.recorder,
            now,
            slot.measured,
            &mut self.commands,
            self.tracer.sink(r),
        );
        slot.machine.end_plain_call(now, &mut out);
        drop(out);
        self.carry_out(now, Some(r));
    }

    /// Gives run `r` back to its machine: `start` and the successes so far replayed at the
    /// times they happened, their effects dropped (they were made already). The machine then
    /// holds the current step's attempt as sent, and takes its answer at once (so it never
    /// needs the attempt's handle to cancel it).
    #[cold]
    #[inline(never)]
    fn hand_back(&mut self, r: u32) {
        let slot = &mut self.runs[r];
        slot.plain_steps = 0;
        let (start_us, answered_us) = (slot.machine.start_us, std::mem::take(&mut slot.plain_answered_us));
        let chain = std::mem::take(&mut self.plain_chains[slot.machine.workflow as usize]);
        let replayed = self.recorded(start_us, r, |m, cx, out| m.start(cx, out));
        debug_assert!(same_send(&replayed, chain[0]), "the replayed start is the chain's: {replayed:?}");
        for (&done, &at) in chain.iter().zip(&answered_us) {
            let PlainSend { step, serial, .. } = done;
            let replayed =
                self.recorded(at, r, |m, cx, out| m.on_attempt_result(cx, out, step, serial, AttemptResult::Ok));
            debug_assert!(
                same_send(&replayed, chain[usize::from(step) + 1]),
                "the replayed success is the chain's: {replayed:?}"
            );
        }
        let workflow = self.runs[r].machine.workflow as usize;
        self.plain_chains[workflow] = chain;
        // Kept for the slot's next run (no allocation then).
        self.runs[r].plain_answered_us = answered_us;
        self.runs[r].plain_answered_us.clear();
    }

    /// Gives run `r`'s machine one input at `now` with its effects recorded, not carried out.
    fn recorded(
        &mut self,
        now: Micros,
        r: u32,
        input: impl FnOnce(&mut RunMachine, &mut RunContext, &mut Outbox),
    ) -> Outbox {
        let model = self.model;
        let slot = &mut self.runs[r];
        let w = slot.machine.workflow as usize;
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
            writes_paused: crate::runtime::degradation::WritePause::None,
            approvals: &mut self.approvals,
        };
        let mut out = Outbox::default();
        input(&mut slot.machine, &mut cx, &mut out);
        out
    }
}

/// Whether `effects` are a plain chain's `send`: one `LogicalCall` and that attempt.
fn same_send(effects: &Outbox, send: PlainSend) -> bool {
    matches!(
        (effects.observations.as_slice(), effects.commands.as_slice()),
        ([Observation::LogicalCall], &[Command::Send { step, serial, .. }]) if step == send.step && serial == send.serial
    )
}
