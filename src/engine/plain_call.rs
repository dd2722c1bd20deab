//! Root runs that are one plain call: the engine's fast path for workflows whose run, when
//! it goes well, is nothing but "send one attempt, and end when it answers" (an M/M/c
//! customer, most validation models, a single call behind a timeout).
//!
//! For such a run the run machine's start and its handling of a successful answer are pure
//! bookkeeping that no figure reads: the general path pays for a run context, the machine's
//! budget, fan-out, guard and cache checks, an attempt record and two rounds of commands.
//! Here the engine sends the attempt and ends the run itself, and the machine is asked only
//! for the end (`RunMachine::end_plain_call`), so every observation is the one the general
//! path makes, in the same order.
//!
//! What it assumes is not reasoned out twice: it is asked of the machine. The first run of a
//! workflow that passes the static conditions (`may_be_plain`) is given to the machine's own
//! `start` and then a success, with their effects recorded instead of carried out; the
//! workflow is plain only if `start` made exactly one `LogicalCall` observation and one
//! `Send`, and the success exactly one `RunEnded` and one `End`. The send is then the
//! template of every later run of the workflow: at a run's start the deadline left, the
//! budgets and the guards are the same for every run of a workflow without modes or load
//! shedding, so the machine would decide the same each time.
//!
//! Anything else an attempt brings (a failure, a timeout, an answer that is not what it
//! seems) hands the run back to the machine: `start` is replayed at the run's start time
//! with its effects dropped (they were made already), the attempt is attached, and the
//! answer is given to the machine as on the general path. A run that never hears its
//! answer needs nothing more.
//!
//! `simulate_without_fast_paths` runs every run on the general path; tests/plain_calls.rs
//! checks both give the same bytes.

use super::simulation::{Job, PlainCall, Simulation};
use crate::metrics::Observation;
use crate::runtime::guard::Loads;
use crate::runtime::{AttemptResult, Command, Outbox, Purpose, RunContext, RunMachine, Tracer};
use crate::scenario::Criticality;
use crate::sim::Micros;

/// The attempt every run of a plain workflow sends at its start: attempt `serial` of its only
/// step, at `dependency`, with the caller's timeout `timeout_us`.
#[derive(Debug, Clone, Copy)]
pub(super) struct PlainSend {
    serial: u32,
    dependency: u16,
    timeout_us: Option<Micros>,
}

impl<T: Tracer> Simulation<'_, T> {
    /// The conditions the machine cannot be asked about without side effects, or that hold for
    /// some runs and not others: one step, not a person's, on a route with no guards, no modes
    /// or load shedding, no delegation, and an attempt the engine sends straight to a station
    /// (no task, SDK client, cache or token shape). Untraced only: a trace follows the machine.
    pub(super) fn may_be_plain(&self, workflow: usize) -> bool {
        let (model, policy) = (self.model, self.policy);
        let wf = &model.workflows[workflow];
        let [step] = wf.steps.as_slice() else { return false };
        let sp = &policy.steps[workflow][0];
        let dep = &model.world.dependencies[step.dependency];
        !T::ON
            && self.modes.is_none()
            && policy.admission.is_none()
            && !self.delegation.on
            && !policy.snapshots
            && policy.hedging.is_none()
            && !wf.has_quorum
            && !step.approval
            && step.criticality == Criticality::Hard
            && sp.validator.is_none()
            && self.pipeline.is_open_road(sp.routes.primary)
            && dep.task.is_none()
            && dep.tokens.is_none()
            && policy.sdk_clients[step.dependency].is_none()
            && !(policy.looks_in_caches && policy.caches[step.dependency].is_some())
    }

    /// The attempt run `r` (just started, its machine fresh) sends as a plain call, asking the
    /// machine at the workflow's first run; None: the run goes through the machine.
    #[inline(always)]
    pub(super) fn plain_send(&mut self, now: Micros, r: u32, workflow: usize) -> Option<PlainSend> {
        let call = match self.plain_calls[workflow] {
            PlainCall::Unasked => {
                let call = self.ask_machine(now, r, workflow);
                self.plain_calls[workflow] = call;
                call
            }
            known @ (PlainCall::Never | PlainCall::Sends { .. }) => known,
        };
        match call {
            PlainCall::Sends { serial, dependency, timeout_us } => Some(PlainSend { serial, dependency, timeout_us }),
            PlainCall::Never | PlainCall::Unasked => None,
        }
    }

    /// Runs the machine's `start` and a success on run `r`'s fresh machine with their effects
    /// recorded, then makes the machine fresh again.
    #[cold]
    #[inline(never)]
    fn ask_machine(&mut self, now: Micros, r: u32, workflow: usize) -> PlainCall {
        let fresh = self.runs[r].machine.clone();
        let started = self.recorded(now, r, |m, cx, out| m.start(cx, out));
        let call = match (started.observations.as_slice(), started.commands.as_slice(), started.shared.is_empty()) {
            (
                [Observation::LogicalCall],
                &[Command::Send { step: 0, serial, dependency, purpose: Purpose::Call, timeout_us }],
                true,
            ) => {
                let ended = self.recorded(now, r, |m, cx, out| {
                    m.attach(0, serial, 0);
                    m.on_attempt_result(cx, out, 0, serial, AttemptResult::Ok);
                });
                let ends = matches!(
                    (ended.observations.as_slice(), ended.commands.as_slice(), ended.shared.is_empty()),
                    ([Observation::RunEnded { .. }], [Command::End { .. }], true)
                );
                if ends { PlainCall::Sends { serial, dependency, timeout_us } } else { PlainCall::Never }
            }
            _ => PlainCall::Never,
        };
        debug_assert_eq!(self.runs[r].machine.workflow as usize, workflow);
        self.runs[r].machine = fresh;
        call
    }

    /// Starts run `r` as the plain call `call`: what the machine's `start` would observe and send.
    #[inline(always)]
    pub(super) fn start_plain_call(&mut self, now: Micros, r: u32, send: PlainSend) {
        let PlainSend { serial, dependency, timeout_us } = send;
        let slot = &mut self.runs[r];
        slot.plain = true;
        let measured = slot.measured;
        self.observe(now, measured, Observation::LogicalCall);
        self.send(now, r, 0, serial, usize::from(dependency), Purpose::Call, timeout_us);
    }

    /// The answer to a plain call's attempt `job`: a success ends the run here; anything else
    /// gives the run back to its machine, which then takes the answer as on the general path.
    /// True when the answer was taken here.
    #[inline(always)]
    pub(super) fn plain_call_answered(&mut self, now: Micros, job: &Job, result: AttemptResult) -> bool {
        let r = job.run;
        if self.runs[r].generation != job.run_gen {
            return false;
        }
        if result == AttemptResult::Ok && job.bad.is_none() {
            self.end_plain_call(now, r);
            return true;
        }
        self.hand_back(r);
        false
    }

    fn end_plain_call(&mut self, now: Micros, r: u32) {
        self.plain_call_runs += 1;
        let slot = &mut self.runs[r];
        slot.plain = false;
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

    /// Gives run `r` back to its machine: `start` replayed at the run's start time, its
    /// effects dropped (they were made already). The machine then holds the attempt as sent,
    /// and takes its answer at once (so it never needs the attempt's handle to cancel it).
    #[cold]
    #[inline(never)]
    fn hand_back(&mut self, r: u32) {
        let start_us = self.runs[r].machine.start_us;
        let replayed = self.recorded(start_us, r, |m, cx, out| m.start(cx, out));
        debug_assert!(
            matches!(
                (replayed.observations.as_slice(), replayed.commands.as_slice()),
                ([Observation::LogicalCall], [Command::Send { step: 0, .. }])
            ),
            "the replayed start is the plain call's: {replayed:?}"
        );
        self.runs[r].plain = false;
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
