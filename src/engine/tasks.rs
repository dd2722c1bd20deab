//! Long-running remote work in the engine: the task clients of step attempts at a task
//! dependency (their pure machine is `runtime::task_client`) and the remote tasks themselves
//! (their pure lifecycle is `world::task`). Every protocol request is a real attempt at the
//! task dependency's servers; a task's work is an attempt at its runner that belongs to no run,
//! since a task outlives the run that created it.
//!
//! A step's attempt at a task dependency is, to its run machine, one attempt: it ends when
//! the client has the task's answer, when the create fails, or when the machine stops waiting
//! (the attempt's timeout, the run's end, a hedge won elsewhere). The handle the machine holds
//! has its top bit set, so `cancel` knows it names a client, not a station job.

use super::event::{Event, TaskWakeCause};
use super::simulation::{Caller, Job, JobPhase, Simulation};
use super::stations::NewAttempt;
use super::task_slots::{ClientSlot, CreateReply, RemoteTask};
use crate::metrics::Observation;
use crate::metrics::tasks::{Spent, TaskObservation};
use crate::runtime::task_client::{
    CancelObserved, CancelStep, ClientAction, ClientPhase, TaskAnswer, TaskClient, TaskClientConfig,
};
use crate::runtime::{AttemptResult, Purpose, TraceEvent, Tracer};
use crate::sim::{Micros, StreamKey};
use crate::vocab::FailureKind;
use crate::world::FaultEffect;
use crate::world::task::{
    CancelAnswer, CancelBehaviour, Lifecycle, ProtocolError, TaskCall, TaskEvent, TaskState, WaitFor, WorkOnCancel,
};
use crate::world::task::{OnTtl, RepeatedMessage, TaskModel};

/// A handle with this bit names a task client (`(client << 32) | generation`).
pub(super) const CLIENT_HANDLE: u64 = 1 << 63;

/// Stream tags below a client's key: its waits' jitter, its requests, its task.
const TAG_CLIENT_DRAW: u64 = 11;
const TAG_CLIENT_REQUEST: u64 = 12;
const TAG_TASK: u64 = 13;
/// Below a task's key: one draw per fault decision.
const TAG_TASK_FAULT: u64 = 14;
/// Below a task's key: whether it asks for input (`input_required_ratio`).
const TAG_TASK_INPUT: u64 = 15;
/// Below a client's key: the scripted user's answers.
const TAG_CLIENT_USER: u64 = 16;
/// Below a task's key: one stream per push notification (lost, delay, duplicate).
const TAG_TASK_PUSH: u64 = 17;

impl<T: Tracer> Simulation<'_, T> {
    fn task_model(&self, front: usize) -> &TaskModel {
        self.model.world.dependencies[front].task.as_ref().expect("only a task dependency has clients")
    }

    fn client_config(&self) -> &TaskClientConfig {
        &self.policy.task_client
    }

    /// A step attempt at a task dependency: a client that sends the create request. Returns
    /// the handle the run machine keeps.
    #[allow(clippy::too_many_arguments)]
    #[cold]
    #[inline(never)]
    pub(super) fn start_client(
        &mut self,
        now: Micros,
        r: u32,
        step: u8,
        serial: u32,
        front: usize,
        purpose: Purpose,
        key: StreamKey,
        timeout_us: Option<Micros>,
    ) -> u64 {
        let task = self.task_model(front);
        let (machine, first) = TaskClient::for_protocol(task.poll_interval_us, task.protocol);
        let blocks = task.protocol.create_blocks(self.client_config().return_immediately);
        let slot = &self.runs[r];
        let (run_gen, measured, deadline_at) = (slot.generation, slot.measured, slot.machine.budget.deadline_at);
        let c = self.clients.alloc(ClientSlot::vacant);
        let client = &mut self.clients[c];
        let generation = client.generation.wrapping_add(1);
        *client = ClientSlot {
            generation,
            run: r,
            run_gen,
            step,
            serial,
            front: front as u16,
            purpose,
            measured,
            key,
            machine,
            attached: true,
            deadline_at,
            blocks,
            ..ClientSlot::vacant()
        };
        if let Some(t) = timeout_us
            && now.saturating_add(t) <= self.stop_at
        {
            self.queue.schedule(now + t, Event::ClientTimeout { client: c, generation });
        }
        self.client_act(now, c, first);
        CLIENT_HANDLE | (u64::from(c) << 32) | u64::from(generation)
    }

    /// Carries out what the client's machine answered.
    fn client_act(&mut self, now: Micros, c: u32, action: ClientAction) {
        match action {
            ClientAction::Request(call) => self.client_request(now, c, call),
            ClientAction::RequestAfter(call, wait_us) => {
                let client = &mut self.clients[c];
                client.pending = call;
                let generation = client.generation;
                if now.saturating_add(wait_us) <= self.stop_at {
                    self.queue.schedule(now + wait_us, Event::ClientWake { client: c, generation });
                }
            }
            ClientAction::Answer(answer) => self.client_answer(now, c, answer),
            ClientAction::Wait => self.release_client_if_done(c),
            ClientAction::AskUser => self.ask_user(now, c),
        }
    }

    /// Client `c`'s task asks for input: the scripted user answers after its answer time, or
    /// never (`input_unanswered_ratio`, or no `input_answer_time`); the answer is sent then.
    /// Meanwhile the step waits, its timeout running.
    fn ask_user(&mut self, now: Micros, c: u32) {
        let client = &mut self.clients[c];
        client.asks += 1;
        let mut stream = client.key.with(TAG_CLIENT_USER).with(u64::from(client.asks)).stream();
        let front = client.front as usize;
        let task = self.task_model(front);
        let never = stream.unit() < task.input_unanswered_ratio;
        let answer_us = match (&task.input_answer, never) {
            (Some(time), false) => Some(crate::sim::ms_to_us(time.sample_ms(&mut stream).max(0.0))),
            (Some(_), true) | (None, _) => None,
        };
        let Some(answer_us) = answer_us else { return };
        self.client_act(now, c, ClientAction::RequestAfter(TaskCall::Answer, answer_us.max(1)));
    }

    fn client_draw(&mut self, c: u32) -> f64 {
        let client = &mut self.clients[c];
        client.draws += 1;
        client.key.with(TAG_CLIENT_DRAW).with(u64::from(client.draws)).stream().unit()
    }

    fn client_request(&mut self, now: Micros, c: u32, call: TaskCall) {
        let timeout_us = self.client_config().request_timeout_us;
        let run = &self.runs[self.clients[c].run];
        let run_open = run.generation == self.clients[c].run_gen && !run.finalized;
        let client = &mut self.clients[c];
        client.requests += 1;
        client.in_flight = call;
        let purpose = match call {
            TaskCall::Create => client.purpose,
            TaskCall::Get | TaskCall::Find | TaskCall::Subscribe | TaskCall::Cancel | TaskCall::Answer => {
                Purpose::Lookup
            }
        };
        let attempt = NewAttempt {
            station: client.front as usize,
            purpose,
            priority: self.model.workflows[self.runs[client.run].machine.workflow as usize].priority,
            caller: Caller::Client { client: c, generation: client.generation, step: client.step },
            run: client.run,
            run_gen: client.run_gen,
            measured: client.measured,
            key: client.key.with(TAG_CLIENT_REQUEST).with(u64::from(client.requests)),
            timeout_us: Some(timeout_us),
            // A request made after its run was finalized (the get after a refused cancel) keeps
            // no run open, as a task's work does not.
            owned: run_open,
            stuck: false,
            counted: call == TaskCall::Create,
            tokens: None,
            first_token_timeout_us: None,
        };
        let measured = client.measured;
        self.observe(now, measured, Observation::Task(TaskObservation::Request { call }));
        let job = self.submit(now, attempt);
        self.clients[c].request = Some(job);
    }

    #[cold]
    #[inline(never)]
    pub(super) fn on_client_wake(&mut self, now: Micros, c: u32, generation: u32) {
        let client = &self.clients[c];
        if client.generation != generation || !client.machine.waits() || client.request.is_some() {
            return;
        }
        let call = client.pending;
        self.client_request(now, c, call);
    }

    /// A protocol request's reply (or its timeout).
    #[cold]
    #[inline(never)]
    pub(super) fn on_client_reply(&mut self, now: Micros, c: u32, generation: u32, result: AttemptResult) {
        if self.clients[c].generation != generation {
            return;
        }
        self.clients[c].request = None;
        // Any answer to a held create (its release, its timeout) ends the hold.
        self.clients[c].held = false;
        let client = self.clients[c];
        let cfg = *self.client_config();
        let ok = matches!(result, AttemptResult::Ok | AttemptResult::NotFound);
        // A reply that shows the task's state (a blocking send's included) shows it as of its
        // latest transition: a push notification of an earlier one is stale.
        let shows_state = match client.in_flight {
            TaskCall::Get | TaskCall::Subscribe | TaskCall::Answer => true,
            TaskCall::Create => client.blocks,
            TaskCall::Find | TaskCall::Cancel => false,
        };
        if ok
            && shows_state
            && let Some((t, _)) = client.task.filter(|&(t, g)| self.tasks[t].generation == g)
        {
            self.clients[c].seen_seq = self.clients[c].seen_seq.max(self.tasks[t].seq);
        }
        let mut machine = client.machine;
        let deleted = self.task_deleted(client.task);
        if machine.phase == ClientPhase::CancelChecking {
            if ok && deleted {
                self.observe(now, client.measured, Observation::Task(TaskObservation::NotFound));
            }
            let state = (ok && !deleted).then(|| self.task_state(client.task));
            let seen = machine.on_cancel_checked(state);
            self.clients[c].machine = machine;
            self.cancel_observed(now, c, seen);
            return;
        }
        let action = match client.in_flight {
            TaskCall::Cancel => {
                let step = if ok {
                    let answer = self.cancel_task(now, client.task, client.measured);
                    if let CancelAnswer::Error(error) = answer {
                        self.trace_refusal(c, error);
                    }
                    machine.on_cancel_answered(answer)
                } else {
                    CancelStep::Observed(machine.on_cancel_failed())
                };
                self.clients[c].machine = machine;
                match step {
                    CancelStep::Observed(seen) => self.cancel_observed(now, c, seen),
                    CancelStep::Check(call) => self.client_request(now, c, call),
                }
                return;
            }
            TaskCall::Create => match result {
                AttemptResult::Ok | AttemptResult::NotFound => {
                    // The handle reached the client: any later send is a new message.
                    if let Some((t, g)) = client.task
                        && self.tasks[t].generation == g
                    {
                        self.tasks[t].handed = true;
                    }
                    let u = self.client_draw(c);
                    // A blocking send's reply shows the task as it ended (or was interrupted);
                    // one that returns at once, the task as made.
                    let state = if client.blocks { self.task_state(client.task) } else { TaskState::Pending };
                    machine.on_created(&cfg, state, u)
                }
                AttemptResult::Failed { kind, .. } => machine.on_create_failed(kind),
                AttemptResult::TimedOut => {
                    self.observe(now, client.measured, Observation::Task(TaskObservation::SendTimedOut));
                    machine.on_create_timed_out(&cfg)
                }
            },
            TaskCall::Find if ok => {
                let u = self.client_draw(c);
                machine.on_found(&cfg, client.task.is_some() && !deleted, u)
            }
            // MCP 2026-07-28 acknowledges a tasks/update "even if the task ID does not represent a
            // valid task": the client learns of the deletion at its next poll.
            TaskCall::Answer
                if ok && deleted && self.task_model(client.front as usize).protocol.acknowledges_any_answer() =>
            {
                let u = self.client_draw(c);
                machine.on_answer_acknowledged(&cfg, u)
            }
            TaskCall::Get | TaskCall::Subscribe | TaskCall::Answer if ok && deleted => {
                // TaskNotFound (A2A -32001, MCP -32602): the task's fate is lost to the client.
                self.observe(now, client.measured, Observation::Task(TaskObservation::NotFound));
                self.trace_refusal(c, ProtocolError::TaskNotFound);
                if let Some((t, _)) = client.task
                    && self.tasks[t].lifecycle.state == TaskState::Succeeded
                    && self.tasks[t].left_at.is_none()
                {
                    // It had succeeded, and its caller never hears of it.
                    self.tasks[t].left_at = Some(now);
                    self.unheard_success(now, t);
                }
                machine.on_not_found()
            }
            TaskCall::Subscribe if ok => {
                let state = self.task_state(client.task);
                match self.task_model(client.front as usize).protocol.subscribe(state) {
                    Ok(state) => {
                        let u = self.client_draw(c);
                        machine.on_state(&cfg, state, u)
                    }
                    Err(error) => {
                        self.trace_refusal(c, error);
                        machine.on_subscribe_refused()
                    }
                }
            }
            TaskCall::Get if ok => {
                let u = self.client_draw(c);
                let state = self.task_state(client.task);
                machine.on_state(&cfg, state, u)
            }
            TaskCall::Answer if ok => match self.answer_task(now, client.task) {
                Ok(Some(shows)) => {
                    let u = self.client_draw(c);
                    machine.on_state(&cfg, shows, u)
                }
                // An empty acknowledgement (MCP 2026-07-28's tasks/update): the client polls.
                Ok(None) => {
                    let u = self.client_draw(c);
                    machine.on_answer_acknowledged(&cfg, u)
                }
                Err(error) => {
                    self.trace_refusal(c, error);
                    machine.on_answer_refused()
                }
            },
            TaskCall::Find | TaskCall::Get | TaskCall::Subscribe | TaskCall::Answer => {
                let u = self.client_draw(c);
                // A rate limit's 429, or a down front end's 503, says when to come back
                // (Retry-After).
                let retry_after_us = match result {
                    AttemptResult::Failed { retry_after_us, .. } => retry_after_us,
                    AttemptResult::Ok | AttemptResult::NotFound | AttemptResult::TimedOut => None,
                };
                machine.on_request_failed(&cfg, u, retry_after_us)
            }
        };
        self.clients[c].machine = machine;
        self.client_act(now, c, action);
    }

    /// What client `c` learned from its cancel: it lets go of the task, onto the orphan queue
    /// when that leaves the task possibly working.
    fn cancel_observed(&mut self, now: Micros, c: u32, seen: CancelObserved) {
        let measured = self.clients[c].measured;
        self.observe(now, measured, Observation::Task(TaskObservation::CancelObserved(seen)));
        self.leave_task(now, c, seen.goes_on_orphan_queue());
    }

    /// The state the server reports for the client's task.
    fn task_state(&self, task: Option<(u32, u32)>) -> TaskState {
        match task {
            Some((t, generation)) if self.tasks[t].generation == generation => self.tasks[t].lifecycle.state,
            // Never freed while a client holds it; a lost record reads as failed.
            Some(_) | None => TaskState::Failed,
        }
    }

    /// Tells the waiting step what became of its task, then lets go of the client (and of an
    /// interrupted task, which it cancels when the policy cancels).
    fn client_answer(&mut self, now: Micros, c: u32, answer: TaskAnswer) {
        let result = match answer {
            TaskAnswer::Ended(TaskState::Succeeded) => AttemptResult::Ok,
            TaskAnswer::Ended(TaskState::Waiting(WaitFor::Input)) => {
                AttemptResult::Failed { kind: FailureKind::InvalidInput, retry_after_us: None }
            }
            TaskAnswer::Ended(TaskState::Waiting(WaitFor::Auth)) => {
                AttemptResult::Failed { kind: FailureKind::Unauthorized, retry_after_us: None }
            }
            TaskAnswer::Ended(TaskState::Canceled) => {
                AttemptResult::Failed { kind: FailureKind::Canceled, retry_after_us: None }
            }
            TaskAnswer::Ended(TaskState::Rejected) => {
                AttemptResult::Failed { kind: FailureKind::Overloaded, retry_after_us: None }
            }
            TaskAnswer::Ended(TaskState::Failed) => {
                let kind = self.task_error(self.clients[c].task).unwrap_or(FailureKind::PermanentProvider);
                AttemptResult::Failed { kind, retry_after_us: None }
            }
            TaskAnswer::Ended(TaskState::Pending | TaskState::Running) => {
                unreachable!("the client answers only an ended or interrupted task")
            }
            TaskAnswer::NotCreated(kind) => AttemptResult::Failed { kind, retry_after_us: None },
            // The task is gone with its outcome: a write's effect is unknown, a read's result lost.
            TaskAnswer::Lost => {
                let kind = match self.clients[c].purpose {
                    Purpose::Write { .. } => FailureKind::EffectUnknown,
                    Purpose::Call | Purpose::Lookup => FailureKind::TransientTransport,
                };
                AttemptResult::Failed { kind, retry_after_us: None }
            }
            TaskAnswer::TimedOut => AttemptResult::TimedOut,
        };
        let client = self.clients[c];
        self.clients[c].attached = false;
        if let TaskAnswer::Ended(TaskState::Waiting(_)) = answer {
            // The user is needed: the step hears it now; the task is left, cancelled or not.
            let cfg = *self.client_config();
            let action = self.clients[c].machine.abandon(&cfg);
            self.caller_left(now, c, action);
            self.client_act(now, c, action);
        } else {
            self.leave_task(now, c, false);
        }
        self.deliver_to_step(now, &client, result);
    }

    /// Whether the server has deleted the client's task (after its ttl).
    fn task_deleted(&self, task: Option<(u32, u32)>) -> bool {
        match task {
            Some((t, generation)) => self.tasks[t].generation == generation && self.tasks[t].deleted,
            None => false,
        }
    }

    fn task_error(&self, task: Option<(u32, u32)>) -> Option<FailureKind> {
        match task {
            Some((t, generation)) if self.tasks[t].generation == generation => self.tasks[t].error,
            Some(_) | None => None,
        }
    }

    fn deliver_to_step(&mut self, now: Micros, client: &ClientSlot, result: AttemptResult) {
        let job = Job {
            caller: Caller::Step { step: client.step, serial: client.serial },
            run: client.run,
            run_gen: client.run_gen,
            purpose: client.purpose,
            station: client.front,
            measured: client.measured,
            ..Job::vacant()
        };
        self.deliver(now, &job, result);
    }

    /// The step stopped waiting (`timed_out`: its own timeout, which it hears of now).
    fn abandon_client(&mut self, now: Micros, c: u32, timed_out: bool) {
        let client = self.clients[c];
        if !client.attached {
            return;
        }
        self.clients[c].attached = false;
        if let Some((job, generation)) = client.request
            && self.jobs[job].generation == generation
        {
            self.clients[c].request = None;
            self.abandon(now, job);
        }
        let cfg = *self.client_config();
        let action = self.clients[c].machine.abandon(&cfg);
        self.caller_left(now, c, action);
        self.client_act(now, c, action);
        if timed_out {
            self.observe(now, client.measured, Observation::TimedOut { dependency: client.front });
            self.deliver_to_step(now, &client, AttemptResult::TimedOut);
        }
    }

    #[cold]
    #[inline(never)]
    pub(super) fn on_client_timeout(&mut self, now: Micros, c: u32, generation: u32) {
        if self.clients[c].generation == generation {
            self.abandon_client(now, c, true);
        }
    }

    /// The run machine cancelled the attempt this handle names.
    #[cold]
    #[inline(never)]
    pub(super) fn cancel_client(&mut self, now: Micros, handle: u64) {
        let (c, generation) = (((handle & !CLIENT_HANDLE) >> 32) as u32, handle as u32);
        if self.clients[c].generation == generation {
            self.abandon_client(now, c, false);
        }
    }

    /// The step stopped waiting for client `c`, whose machine answered `action`: its task's
    /// caller has left, and a cancel is on its way when the action is one.
    fn caller_left(&mut self, now: Micros, c: u32, action: ClientAction) {
        let client = self.clients[c];
        let cancel = action == ClientAction::Request(TaskCall::Cancel);
        if cancel {
            self.observe(now, client.measured, Observation::Task(TaskObservation::CancelRequested));
        }
        if let Some((t, generation)) = client.task
            && self.tasks[t].generation == generation
            && self.tasks[t].left_at.is_none()
        {
            self.tasks[t].left_at = Some(now);
            self.tasks[t].cancel_sent = cancel;
            if self.tasks[t].lifecycle.state == TaskState::Succeeded {
                self.unheard_success(now, t);
            }
        }
    }

    /// Task `t` succeeded, and its caller left before hearing of it (a poll not yet due, a
    /// lost handle): the result reaches nobody, a late result, and its work was for nobody.
    fn unheard_success(&mut self, now: Micros, t: u32) {
        let task = self.tasks[t];
        let runner = self.task_model(task.front as usize).runner as u16;
        self.observe(now, task.measured, Observation::Task(TaskObservation::LateResult(task.late)));
        let wasted = TaskObservation::WorkWasted { runner, busy_us: task.served_us };
        self.observe(now, task.measured, Observation::Task(wasted));
    }

    /// Task `t`'s work was served for `busy_us` while its caller still waited.
    pub(super) fn task_work_served(&mut self, t: u32, generation: u32, busy_us: Micros) {
        if self.tasks[t].generation == generation {
            self.tasks[t].served_us += busy_us;
        }
    }

    /// The client lets go of its task (on the orphan queue when `tracked`: what its cancel
    /// learned leaves the task possibly working), then is freed if it has nothing left to do.
    fn leave_task(&mut self, now: Micros, c: u32, tracked: bool) {
        self.let_go_of_task(now, c, tracked);
        self.release_client_if_done(c);
    }

    /// Client `c` stops holding its task: the orphan queue takes it when `tracked`, whatever
    /// its true state (the client cannot read it); a task still working is an orphan, an ended
    /// one is freed.
    fn let_go_of_task(&mut self, now: Micros, c: u32, tracked: bool) {
        if let Some((t, generation)) = self.clients[c].task.take()
            && self.tasks[t].generation == generation
        {
            let task = &mut self.tasks[t];
            task.client = None;
            task.left_at.get_or_insert(now);
            if tracked {
                self.track_orphan(now, t);
            }
            if self.tasks[t].still_works() {
                self.orphan(now, t);
            }
            self.free_task_if_done(t);
        }
    }

    /// Task `t` works on for nobody (counted once).
    fn orphan(&mut self, now: Micros, t: u32) {
        let task = &mut self.tasks[t];
        if task.orphan {
            return;
        }
        task.orphan = true;
        let measured = task.measured;
        self.observe(now, measured, Observation::Task(TaskObservation::Orphaned));
    }

    /// The runtime puts task `t` on its orphan queue; one still working then is escalated if it
    /// still works `orphan_ttl_ms` later.
    fn track_orphan(&mut self, now: Micros, t: u32) {
        let task = &mut self.tasks[t];
        task.tracked_orphan = true;
        let (measured, generation, live) = (task.measured, task.generation, !task.lifecycle.state.is_terminal());
        self.observe(now, measured, Observation::Task(TaskObservation::OrphanTracked));
        let ttl = self.client_config().orphan_ttl_us;
        if live && now.saturating_add(ttl) <= self.stop_at {
            let wake = Event::TaskWake { task: t, generation, cause: TaskWakeCause::OrphanTtl };
            self.queue.schedule(now + ttl, wake);
        }
    }

    /// A client with nothing left to do (no waiting step, no request out) is freed; a task it
    /// still held becomes an orphan.
    fn release_client_if_done(&mut self, c: u32) {
        let client = &self.clients[c];
        if client.attached || client.request.is_some() || client.machine.waits() {
            return;
        }
        if client.task.is_some()
            && matches!(client.machine.phase, ClientPhase::CancelRequested | ClientPhase::CancelChecking)
        {
            return;
        }
        let now = self.queue.now();
        self.let_go_of_task(now, c, false);
        let client = &mut self.clients[c];
        client.generation = client.generation.wrapping_add(1);
        self.clients.release(c);
    }

    /// The create request was served: the task exists from now on, whether or not its client
    /// still waits (a create that outlived its caller makes an orphan). Returns true when the
    /// reply carrying its handle is lost (a lost_handle fault).
    #[cold]
    #[inline(never)]
    pub(super) fn create_task(&mut self, now: Micros, (c, generation): (u32, u32), step: u8, job: &Job) -> CreateReply {
        let model = self.model;
        let client = (self.clients[c].generation == generation).then_some(self.clients[c]);
        let front = job.station as usize;
        let task_model = self.task_model(front);
        let key = job.key.with(TAG_TASK);
        let run = &self.runs[job.run];
        let run_alive = run.generation == job.run_gen;
        let run_workflow = run.machine.workflow;
        let workflow = &model.workflows[run_workflow as usize];
        let mut effects = self.task_faults(front, now, key);
        // The dependency's own share of tasks that ask for input, on a draw of their own.
        if task_model.input_required_ratio > 0.0 {
            effects.input_required |= key.with(TAG_TASK_INPUT).stream().unit() < task_model.input_required_ratio;
        }
        let ttl_us = task_model.ttl_us;
        let deadline_at = match client {
            Some(cl) if self.client_config().propagate_deadline => Some(cl.deadline_at),
            Some(_) | None => None,
        };
        // A message sent again with the id of one whose task still works, whose handle never
        // reached its sender (the send timed out, or its reply was lost) and that nobody
        // follows: a server that deduplicates answers with that task. A step's retry after its
        // own timeout, the handle in hand, is a new message (a new messageId).
        if let Some(cl) = client
            && task_model.repeated_message == RepeatedMessage::Deduplicate
            && run_alive
            && self.runs[job.run].ledgers[step as usize].live_tasks > 0
            && let Some(t) = self.unfollowed_task(job, step)
        {
            return self.adopt_task(now, c, &cl, t);
        }
        let t = self.tasks.alloc(RemoteTask::vacant);
        let task = &mut self.tasks[t];
        let task_generation = task.generation.wrapping_add(1);
        *task = RemoteTask {
            generation: task_generation,
            front: front as u16,
            lifecycle: Lifecycle::new(now),
            client: client.map(|_| (c, generation)),
            measured: job.measured,
            run: job.run,
            run_gen: job.run_gen,
            step,
            serial: client.map_or(u32::MAX, |cl| cl.serial),
            late: workflow.steps[step as usize].late_result,
            write: matches!(job.purpose, Purpose::Write { .. }),
            deduplicated: matches!(job.purpose, Purpose::Write { deduplicated: true }),
            publish_delay_us: effects.publish_delay_us,
            deadline_at,
            // Made after its caller left (the create outlived its timeout): nobody follows it.
            left_at: if client.is_some_and(|cl| cl.attached) { None } else { Some(now) },
            key,
            stuck: effects.stuck,
            workflow: run_workflow,
            push: client.is_some_and(|cl| cl.machine.pushed_to(&self.policy.task_client)),
            ..RemoteTask::vacant()
        };
        // Resending a message the server already made a task for makes a second task working
        // beside the first (a retry after the first ended, its work over, is not one; one after
        // a cancel answered CANCELED while the work goes on is).
        let duplicate = run_alive && {
            let ledger = &mut self.runs[job.run].ledgers[step as usize];
            let before = ledger.live_tasks;
            ledger.live_tasks = ledger.live_tasks.saturating_add(1);
            before > 0
        };
        self.tasks[t].counted_live = run_alive;
        self.observe(now, job.measured, Observation::Task(TaskObservation::Created { duplicate }));
        self.trace_task(now, t);
        match client {
            Some(_) => {
                let previous = self.clients[c].task.replace((t, task_generation));
                debug_assert!(previous.is_none(), "one create per client");
            }
            None => self.orphan(now, t),
        }
        if let Some(ttl) = ttl_us
            && now.saturating_add(ttl) <= self.stop_at
        {
            let wake = Event::TaskWake { task: t, generation: task_generation, cause: TaskWakeCause::Ttl };
            self.queue.schedule(now + ttl, wake);
        }
        if effects.input_required {
            // It starts, then stops for the user's input (and holds no worker meanwhile); its
            // work is sent when an answer comes (`answer_task`).
            self.observe(now, job.measured, Observation::Task(TaskObservation::InputRequired));
            self.task_transition(now, t, TaskEvent::Start);
            self.task_transition(now, t, TaskEvent::Interrupt(WaitFor::Input));
        } else {
            self.submit_task_work(now, t, task_generation);
        }
        if effects.lost_handle && client.is_some() {
            self.observe(now, job.measured, Observation::Task(TaskObservation::LostHandle));
        }
        match client {
            _ if effects.lost_handle => CreateReply::Lost,
            // A blocking send answers once the task ends or is interrupted (an interrupted task
            // from its birth answers at once).
            Some(cl) if cl.blocks && cl.attached && self.task_state(Some((t, task_generation))).is_live_work() => {
                self.clients[c].held = true;
                CreateReply::Held
            }
            Some(_) | None => CreateReply::Now,
        }
    }

    /// A live task that `job`'s step of its run made earlier, whose handle never reached its
    /// sender (a send that timed out: the message the step sends again) and that no client
    /// follows, the latest made; None if there is none.
    fn unfollowed_task(&self, job: &Job, step: u8) -> Option<u32> {
        (0..self.tasks.slots.len() as u32).rev().find(|&t| {
            // A freed slot holds an ended task, so a live one is in use.
            let task = &self.tasks[t];
            task.run == job.run
                && task.run_gen == job.run_gen
                && task.step == step
                && task.front == job.station
                && task.client.is_none()
                && !task.handed
                && !task.lifecycle.state.is_terminal()
        })
    }

    /// Client `c` sent again the message that made task `t`, and the server answers with `t`:
    /// the client follows it from now on, as if its caller had never left.
    fn adopt_task(&mut self, now: Micros, c: u32, client: &ClientSlot, t: u32) -> CreateReply {
        let task = &mut self.tasks[t];
        task.client = Some((c, client.generation));
        task.serial = client.serial;
        task.left_at = None;
        task.cancel_sent = false;
        task.tracked_orphan = false;
        let was_orphan = std::mem::replace(&mut task.orphan, false);
        let (generation, measured, state) = (task.generation, task.measured, task.lifecycle.state);
        let previous = self.clients[c].task.replace((t, generation));
        debug_assert!(previous.is_none(), "one create per client");
        self.observe(now, measured, Observation::Task(TaskObservation::Deduplicated { was_orphan }));
        if client.blocks && client.attached && state.is_live_work() {
            self.clients[c].held = true;
            CreateReply::Held
        } else {
            CreateReply::Now
        }
    }

    /// Task `t` ended or was interrupted: the held reply of its client's blocking send goes
    /// out now, with the task as it is.
    fn release_held_create(&mut self, now: Micros, t: u32) {
        let Some((c, generation)) = self.tasks[t].client else { return };
        let client = self.clients[c];
        if client.generation != generation || !client.held {
            return;
        }
        if let Some((job, job_generation)) = client.request
            && self.jobs[job].generation == job_generation
            && self.jobs[job].phase == JobPhase::AwaitReply
            && self.jobs[job].attached
        {
            let copy = self.jobs[job];
            self.finish_job(now, job, &copy, AttemptResult::Ok);
        }
    }

    /// The effects of the faults at task dependency `front` active at `now` that apply this
    /// time: each decided by its own draw, `key.with(fault index)`, against its toxicity.
    fn faults_applying(&self, front: usize, now: Micros, key: StreamKey) -> impl Iterator<Item = &FaultEffect> {
        let world = &self.model.world;
        world.dependencies[front].faults.iter().filter_map(move |&f| {
            let fault = &world.faults[f];
            let applies = fault.active_at(now) && key.with(f as u64).stream().unit() < fault.toxicity;
            applies.then_some(&fault.effect)
        })
    }

    /// What the faults active now at task dependency `front` do to a task created now, each
    /// decided by its own draw from the task's key.
    fn task_faults(&self, front: usize, now: Micros, key: StreamKey) -> TaskFaults {
        let mut effects = TaskFaults::default();
        for effect in self.faults_applying(front, now, key.with(TAG_TASK_FAULT)) {
            match *effect {
                FaultEffect::StuckTask => effects.stuck = true,
                FaultEffect::InputRequired => effects.input_required = true,
                FaultEffect::LateResult { delay_us } => effects.publish_delay_us += delay_us,
                FaultEffect::LostHandle => effects.lost_handle = true,
                FaultEffect::IgnoredCancel
                | FaultEffect::LateCancel { .. }
                | FaultEffect::Latency { .. }
                | FaultEffect::Hang
                | FaultEffect::Errors(_)
                | FaultEffect::Capacity { .. }
                | FaultEffect::Down { .. }
                | FaultEffect::RateLimit { .. }
                | FaultEffect::LostResponse
                | FaultEffect::BadResult(_)
                | FaultEffect::SlowStream { .. }
                | FaultEffect::QuotaCut { .. }
                | FaultEffect::DelegationLoop { .. }
                | FaultEffect::CacheOutage
                | FaultEffect::ColdCache => {}
            }
        }
        effects
    }

    /// A task's work began at its runner.
    #[cold]
    #[inline(never)]
    pub(super) fn task_work_started(&mut self, now: Micros, t: u32, generation: u32) {
        if self.tasks[t].generation != generation {
            return;
        }
        match self.tasks[t].lifecycle.state {
            TaskState::Pending => self.task_transition(now, t, TaskEvent::Start),
            // A resumed task's work is taken up: its wait so far was `pending`, and it runs
            // (and costs) from now.
            TaskState::Running if self.tasks[t].queued_after_resume => {
                let task = &mut self.tasks[t];
                task.queued_after_resume = false;
                let duration_us = now.saturating_sub(task.lifecycle.since_us);
                task.lifecycle.since_us = now;
                let measured = task.measured;
                let left = TaskObservation::StateLeft { state: TaskState::Pending, duration_us };
                self.observe(now, measured, Observation::Task(left));
            }
            // Cancelled while it waited, and its work taken up all the same (MCP 2025-11-25).
            TaskState::Succeeded | TaskState::Failed | TaskState::Canceled | TaskState::Rejected => {
                self.tasks[t].unowned_work_since = Some(now)
            }
            TaskState::Running | TaskState::Waiting(_) => {}
        }
    }

    /// The work of an ended task (`cancelled` while it goes on) stops or ends at `now`: its
    /// running cost since the task ended is counted, for nobody.
    fn end_unowned_work(&mut self, now: Micros, t: u32) {
        if let Some(since) = self.tasks[t].unowned_work_since.take() {
            let task = self.tasks[t];
            let cost_per_s = self.task_model(task.front as usize).cost_per_s;
            self.observe_running_cost(&task, cost_per_s, since, now);
        }
    }

    /// An attempt of a task's work (or of its own calls) was sent: after its caller left, its
    /// cost is spent for nobody.
    #[cold]
    #[inline(never)]
    pub(super) fn task_work_sent(&mut self, now: Micros, a: &NewAttempt, cost_units: f64) {
        let mut caller = a.caller;
        // A task's own calls are made by its work's job: follow the parents up to the task.
        for _ in 0..64 {
            match caller {
                Caller::Task { task, generation } => {
                    let task = &self.tasks[task];
                    if task.generation == generation && cost_units > 0.0 {
                        // Counted in cost_units_total as it was sent; here it is the task's,
                        // and spent for nobody once its caller left.
                        let o = TaskObservation::CallCost { units: cost_units, spent: task.spent_after_left() };
                        self.observe(now, task.measured, Observation::Task(o));
                    }
                    return;
                }
                Caller::Remote { job, .. } => caller = self.jobs[job].caller,
                Caller::Step { .. } | Caller::Client { .. } | Caller::Sdk { .. } | Caller::Cache { .. } => return,
            }
        }
    }

    /// A task's work ended at its runner.
    #[cold]
    #[inline(never)]
    pub(super) fn on_task_work_done(&mut self, now: Micros, t: u32, generation: u32, result: AttemptResult) {
        if self.tasks[t].generation != generation {
            return;
        }
        if self.tasks[t].lifecycle.state.is_terminal() {
            // The work of a task already `cancelled` (MCP 2025-11-25) ends; its result or
            // error changes nothing.
            self.end_unowned_work(now, t);
            self.tasks[t].work = None;
            self.settle_live(t);
            self.free_task_if_done(t);
            return;
        }
        self.tasks[t].work = None;
        match result {
            AttemptResult::Ok | AttemptResult::NotFound => {
                let delay = self.tasks[t].publish_delay_us;
                if self.tasks[t].lifecycle.state == TaskState::Pending {
                    // Served without ever being seen to start (an immediate answer).
                    self.task_transition(now, t, TaskEvent::Start);
                }
                if delay > 0 && now.saturating_add(delay) <= self.stop_at {
                    let wake = Event::TaskWake { task: t, generation, cause: TaskWakeCause::Publish };
                    self.queue.schedule(now + delay, wake);
                } else if delay == 0 {
                    self.task_transition(now, t, TaskEvent::Complete);
                }
            }
            AttemptResult::Failed { kind, .. } => {
                self.tasks[t].error = Some(kind);
                self.tasks[t].work_failed = true;
                let pending = self.tasks[t].lifecycle.state == TaskState::Pending;
                let refused = pending && matches!(kind, FailureKind::Overloaded | FailureKind::RateLimited);
                self.task_transition(now, t, if refused { TaskEvent::Reject } else { TaskEvent::Fail });
            }
            AttemptResult::TimedOut => {
                self.tasks[t].error = Some(FailureKind::TransientTransport);
                self.tasks[t].work_failed = true;
                self.task_transition(now, t, TaskEvent::Fail);
            }
        }
    }

    #[cold]
    #[inline(never)]
    pub(super) fn on_task_wake(&mut self, now: Micros, t: u32, generation: u32, cause: TaskWakeCause) {
        let task = self.tasks[t];
        if task.generation != generation {
            return;
        }
        if cause == TaskWakeCause::Ttl && self.task_model(task.front as usize).on_ttl == OnTtl::Delete {
            // Deleted whatever its state; the work, if any, goes on for nobody who can ask.
            self.tasks[t].deleted = true;
            self.observe(now, task.measured, Observation::Task(TaskObservation::Deleted));
            if let TaskState::Waiting(_) = task.lifecycle.state
                && task.work.is_none()
            {
                self.drop_waiting_task(now, t);
            }
            return;
        }
        if task.lifecycle.state.is_terminal() {
            // An MCP 2025-11-25 task is `cancelled` at once while its work may stop later.
            if cause == TaskWakeCause::LateCancel {
                self.stop_work(now, t);
                self.free_task_if_done(t);
            }
            return;
        }
        match cause {
            TaskWakeCause::LateCancel => self.stop_task(now, t),
            TaskWakeCause::Publish => self.task_transition(now, t, TaskEvent::Complete),
            TaskWakeCause::Ttl => {
                self.observe(now, task.measured, Observation::Task(TaskObservation::Expired));
                self.stop_work(now, t);
                self.tasks[t].error = Some(FailureKind::DeadlineExhausted);
                self.task_transition(now, t, TaskEvent::Fail);
            }
            TaskWakeCause::OrphanTtl => {
                if task.tracked_orphan {
                    self.observe(now, task.measured, Observation::Task(TaskObservation::OrphanEscalated));
                }
            }
        }
    }

    /// Task `t`, waiting for input with no work (it holds no runner server), lost its record:
    /// nothing can answer it or run it any more, so it ends here. Its wait counts up to now;
    /// it is neither an orphan nor running at the end, and no end state is counted or traced
    /// (nobody can read one: a get answers TaskNotFound).
    fn drop_waiting_task(&mut self, now: Micros, t: u32) {
        let task = &mut self.tasks[t];
        let Ok((left, duration_us)) = task.lifecycle.apply(now, TaskEvent::Fail) else { return };
        let task = *task;
        self.observe(now, task.measured, Observation::Task(TaskObservation::StateLeft { state: left, duration_us }));
        self.settle_live(t);
        if task.client.is_none() {
            self.free_task_if_done(t);
        }
    }

    /// The user's answer reached the remote side: a task waiting for input goes back to work
    /// (its work sent to the runner now), as its protocol says (`TaskProtocol::answer`).
    /// Returns the state the reply shows (None: an empty acknowledgement), or the protocol's
    /// refusal.
    fn answer_task(&mut self, now: Micros, task: Option<(u32, u32)>) -> Result<Option<TaskState>, ProtocolError> {
        let Some((t, generation)) = task.filter(|&(t, g)| self.tasks[t].generation == g) else {
            // Never freed while its client holds it; a lost record is an unknown task.
            return Err(ProtocolError::TaskNotFound);
        };
        let protocol = self.task_model(self.tasks[t].front as usize).protocol;
        let reply = protocol.answer(self.tasks[t].lifecycle.state)?;
        if reply.resumed {
            let measured = self.tasks[t].measured;
            self.observe(now, measured, Observation::Task(TaskObservation::InputAnswered));
            self.task_transition(now, t, TaskEvent::Resume);
            if self.tasks[t].work.is_none() {
                // Its work now waits for a runner server (set first: a free server takes it
                // within the submission).
                self.tasks[t].queued_after_resume = true;
                self.submit_task_work(now, t, generation);
            }
        }
        Ok(reply.shows)
    }

    /// Sends task `t`'s work to its runner as one attempt that belongs to no run.
    fn submit_task_work(&mut self, now: Micros, t: u32, generation: u32) {
        let model = self.model;
        let task = self.tasks[t];
        let runner = self.task_model(task.front as usize).runner;
        let workflow = &model.workflows[task.workflow as usize];
        let run = &self.runs[task.run];
        let (run_alive, run_key) = (run.generation == task.run_gen, run.key);
        let attempt = NewAttempt {
            station: runner,
            purpose: Purpose::Call,
            priority: workflow.priority,
            caller: Caller::Task { task: t, generation },
            run: task.run,
            run_gen: task.run_gen,
            measured: task.measured,
            key: task.key,
            timeout_us: None,
            owned: false,
            stuck: task.stuck,
            counted: false,
            // A runner that is a token-shaped model does the step's own call: its counts
            // (the model's defaults once the run is gone).
            tokens: match &model.world.dependencies[runner].tokens {
                Some(shape) if run_alive => Some(workflow.steps[task.step as usize].tokens_in(run_key, shape)),
                Some(_) | None => None,
            },
            first_token_timeout_us: None,
        };
        let work = self.submit(now, attempt);
        // A refusal at the door comes back as an event, after this.
        self.tasks[t].work = Some(work);
    }

    /// The cancel reached the remote side, which handles it as its protocol says
    /// (`TaskProtocol::cancel`) with the behaviour of the task dependency's `cancel` or of a
    /// cancel fault: the task may end `canceled` now or later, its work stop now, later or never.
    /// Returns the answer.
    fn cancel_task(&mut self, now: Micros, task: Option<(u32, u32)>, measured: bool) -> CancelAnswer {
        let Some((t, generation)) = task else { return CancelAnswer::Error(ProtocolError::TaskNotFound) };
        if self.tasks[t].generation != generation {
            return CancelAnswer::Error(ProtocolError::TaskNotFound);
        }
        if self.tasks[t].deleted {
            self.observe(now, measured, Observation::Task(TaskObservation::NotFound));
            return CancelAnswer::Error(ProtocolError::TaskNotFound);
        }
        let front = self.tasks[t].front as usize;
        let task_model = self.task_model(front);
        let protocol = task_model.protocol;
        let dependency = (task_model.cancel, task_model.late_cancel_us);
        let ignored_answer = task_model.ignored_cancel_answer;
        let state = self.tasks[t].lifecycle.state;
        // A cancel fault in force overrides the dependency's own behaviour; between two faults
        // in force at once, ignoring wins over stopping late.
        let mut fault = None;
        let key = self.tasks[t].key.with(TAG_TASK_FAULT).with(u64::MAX);
        for effect in self.faults_applying(front, now, key) {
            match *effect {
                FaultEffect::IgnoredCancel => fault = Some((CancelBehaviour::Ignore, 0)),
                FaultEffect::LateCancel { delay_us } => {
                    if !matches!(fault, Some((CancelBehaviour::Ignore, _))) {
                        fault = Some((CancelBehaviour::Late, delay_us));
                    }
                }
                FaultEffect::StuckTask
                | FaultEffect::InputRequired
                | FaultEffect::LateResult { .. }
                | FaultEffect::LostHandle
                | FaultEffect::Latency { .. }
                | FaultEffect::Hang
                | FaultEffect::Errors(_)
                | FaultEffect::Capacity { .. }
                | FaultEffect::Down { .. }
                | FaultEffect::RateLimit { .. }
                | FaultEffect::LostResponse
                | FaultEffect::BadResult(_)
                | FaultEffect::SlowStream { .. }
                | FaultEffect::QuotaCut { .. }
                | FaultEffect::DelegationLoop { .. }
                | FaultEffect::CacheOutage
                | FaultEffect::ColdCache => {}
            }
        }
        let (behaviour, late_us) = fault.unwrap_or(dependency);
        let handling = protocol.cancel(state, behaviour, late_us, ignored_answer);
        if !state.is_terminal() {
            match behaviour {
                CancelBehaviour::Honor => {}
                CancelBehaviour::Late => self.observe(now, measured, Observation::Task(TaskObservation::CancelLate)),
                CancelBehaviour::Ignore => {
                    self.observe(now, measured, Observation::Task(TaskObservation::CancelIgnored))
                }
            }
        }
        match handling.work {
            WorkOnCancel::Untouched => {}
            WorkOnCancel::Stop => self.stop_work(now, t),
            WorkOnCancel::StopAfter(delay_us) => {
                if now.saturating_add(delay_us) <= self.stop_at {
                    let wake = Event::TaskWake { task: t, generation, cause: TaskWakeCause::LateCancel };
                    self.queue.schedule(now + delay_us, wake);
                }
            }
        }
        if handling.canceled_now {
            let runs = self.tasks[t].lifecycle.state == TaskState::Running && !self.tasks[t].queued_after_resume;
            if self.tasks[t].work.is_some() && runs {
                // The task is `cancelled`, its work goes on: its running cost with it.
                self.tasks[t].unowned_work_since = Some(now);
            }
            self.task_transition(now, t, TaskEvent::Cancel);
        }
        handling.answer
    }

    /// Cancels the task now: its work leaves the runner, and it ends CANCELED (what it
    /// committed stays committed: CANCELED is not ROLLED_BACK).
    fn stop_task(&mut self, now: Micros, t: u32) {
        self.stop_work(now, t);
        self.task_transition(now, t, TaskEvent::Cancel);
    }

    fn stop_work(&mut self, now: Micros, t: u32) {
        self.end_unowned_work(now, t);
        if let Some((job, generation)) = self.tasks[t].work.take()
            && self.jobs[job].generation == generation
        {
            self.jobs[job].attached = false;
            self.stop_attempt(now, job);
        }
        self.settle_live(t);
    }

    /// Moves task `t` by `event`: time in the state left and the cost of running are
    /// observed; an ended task tells its subscriber, commits a write, and counts as a late
    /// result when its caller had left.
    fn task_transition(&mut self, now: Micros, t: u32, event: TaskEvent) {
        let cost_per_s = self.task_model(self.tasks[t].front as usize).cost_per_s;
        let task = &mut self.tasks[t];
        let (left, duration_us) = match task.lifecycle.apply(now, event) {
            Ok(left) => left,
            Err(illegal) => {
                debug_assert!(false, "{illegal}");
                return;
            }
        };
        task.seq += 1;
        // A resumed task whose work never reached a runner server was waiting, not running.
        let queued = std::mem::replace(&mut task.queued_after_resume, false) && left == TaskState::Running;
        let left = if queued { TaskState::Pending } else { left };
        let task = *task;
        let measured = task.measured;
        self.observe(now, measured, Observation::Task(TaskObservation::StateLeft { state: left, duration_us }));
        if task.push {
            self.push_update(now, t);
        }
        if left == TaskState::Running {
            self.observe_running_cost(&task, cost_per_s, now - duration_us, now);
        }
        self.trace_task(now, t);
        let state = task.lifecycle.state;
        if !state.is_terminal() {
            if let TaskState::Waiting(_) = state {
                self.release_held_create(now, t);
            }
            return;
        }
        self.observe(now, measured, Observation::Task(TaskObservation::Ended { state }));
        self.settle_live(t);
        if state == TaskState::Succeeded {
            self.task_succeeded(now, &task);
        }
        match task.client {
            Some((c, generation)) if self.clients[c].generation == generation && self.clients[c].held => {
                self.release_held_create(now, t)
            }
            Some((c, generation)) if self.clients[c].generation == generation => self.notify_subscriber(now, c, state),
            Some(_) | None => {
                self.tasks[t].client = None;
                self.free_task_if_done(t);
            }
        }
    }

    /// Task `t` no longer works once it has ended and its work is over: its step's count of
    /// working tasks (what makes a new task of the step a duplicate) drops, once.
    fn settle_live(&mut self, t: u32) {
        let task = self.tasks[t];
        if !task.counted_live || !task.lifecycle.state.is_terminal() || task.work.is_some() {
            return;
        }
        self.tasks[t].counted_live = false;
        let run = &mut self.runs[task.run];
        if run.generation == task.run_gen {
            let ledger = &mut run.ledgers[task.step as usize];
            debug_assert!(ledger.live_tasks > 0, "a step's live tasks never go below zero");
            ledger.live_tasks = ledger.live_tasks.saturating_sub(1);
        }
    }

    /// The cost of running over [from, to), split at the moment the caller left: the part
    /// before is spent for someone, the part after for nobody.
    fn observe_running_cost(&mut self, task: &RemoteTask, cost_per_s: f64, from: Micros, to: Micros) {
        if cost_per_s <= 0.0 {
            return;
        }
        let after = task.left_at.map_or(0, |at| to.saturating_sub(at.max(from)));
        let before = to.saturating_sub(from) - after;
        for (us, spent) in [(before, Spent::ForCaller), (after, task.spent_after_left())] {
            if us > 0 {
                let units = cost_per_s * us as f64 / 1e6;
                self.observe(to, task.measured, Observation::Task(TaskObservation::Cost { units, spent }));
            }
        }
    }

    fn task_succeeded(&mut self, now: Micros, task: &RemoteTask) {
        let run = &mut self.runs[task.run];
        let run_alive = run.generation == task.run_gen && !run.finalized;
        if task.write && run_alive {
            let commit = run.ledgers[task.step as usize].commit(task.deduplicated);
            if let crate::world::Commit::Applied { duplicate } = commit {
                if duplicate {
                    run.duplicate = true;
                }
                self.observe(now, task.measured, Observation::EffectCommitted { duplicate });
            }
        }
        if task.left_at.is_some() {
            self.observe(now, task.measured, Observation::Task(TaskObservation::LateResult(task.late)));
        }
    }

    /// Task `t` changed state and its client registered a webhook: the server POSTs the update
    /// (A2A push notification), which may be lost, delayed or delivered twice, each decided by
    /// the notification's own stream.
    fn push_update(&mut self, now: Micros, t: u32) {
        let task = self.tasks[t];
        let Some((c, generation)) = task.client else { return };
        if self.clients[c].generation != generation {
            return;
        }
        let model = self.task_model(task.front as usize);
        let (lost_ratio, duplicate_ratio) = (model.push_lost_ratio, model.push_duplicate_ratio);
        let mut stream = task.key.with(TAG_TASK_PUSH).with(u64::from(task.seq)).stream();
        let delay = |stream: &mut crate::sim::KeyedStream| match &model.push_delivery {
            Some(time) => crate::sim::ms_to_us(time.sample_ms(stream).max(0.0)),
            None => 0,
        };
        let lost = stream.unit() < lost_ratio;
        let first_us = delay(&mut stream);
        let duplicate = stream.unit() < duplicate_ratio;
        let second_us = first_us.saturating_add(delay(&mut stream));
        self.observe(now, task.measured, Observation::Task(TaskObservation::PushSent));
        if lost {
            self.observe(now, task.measured, Observation::Task(TaskObservation::PushLost));
            return;
        }
        let event = Event::PushDelivered { client: c, generation, seq: task.seq, state: task.lifecycle.state };
        if now.saturating_add(first_us) <= self.stop_at {
            self.queue.schedule(now + first_us, event);
        }
        if duplicate && now.saturating_add(second_us) <= self.stop_at {
            self.observe(now, task.measured, Observation::Task(TaskObservation::PushDuplicated));
            self.queue.schedule(now + second_us, event);
        }
    }

    /// A push notification reached client `c`: one that shows its task ended or waiting for
    /// input, newer than anything the client has seen, is what a poll would have told it (a
    /// request still out is dropped); any other (an earlier update, a duplicate, one for a
    /// client that has its answer) changes nothing.
    #[cold]
    #[inline(never)]
    pub(super) fn on_push_delivered(&mut self, now: Micros, c: u32, generation: u32, seq: u32, state: TaskState) {
        let client = self.clients[c];
        if client.generation != generation || !client.machine.waits() || seq <= client.seen_seq {
            return;
        }
        self.clients[c].seen_seq = seq;
        if state.is_live_work() {
            return;
        }
        self.observe(now, client.measured, Observation::Task(TaskObservation::PushLearned));
        if let Some((job, job_generation)) = client.request {
            self.clients[c].request = None;
            self.clients[c].held = false;
            if self.jobs[job].generation == job_generation {
                self.abandon(now, job);
            }
        }
        let cfg = *self.client_config();
        let u = self.client_draw(c);
        let mut machine = self.clients[c].machine;
        machine.has_handle = true;
        let action = machine.on_state(&cfg, state, u);
        self.clients[c].machine = machine;
        self.client_act(now, c, action);
    }

    /// A subscribed client hears of the end at once; a polling one at its next poll.
    fn notify_subscriber(&mut self, now: Micros, c: u32, state: TaskState) {
        let client = self.clients[c];
        if client.machine.phase != ClientPhase::Subscribed {
            return;
        }
        let cfg = *self.client_config();
        let u = self.client_draw(c);
        let action = self.clients[c].machine.on_state(&cfg, state, u);
        self.client_act(now, c, action);
    }

    /// Frees task `t` once it has ended, its work is over and no client holds it.
    fn free_task_if_done(&mut self, t: u32) {
        let task = &self.tasks[t];
        if task.lifecycle.state.is_terminal() && task.work.is_none() && task.client.is_none() {
            self.free_task(t);
        }
    }

    fn free_task(&mut self, t: u32) {
        let task = &mut self.tasks[t];
        debug_assert!(task.lifecycle.state.is_terminal(), "only an ended task is freed");
        task.generation = task.generation.wrapping_add(1);
        self.tasks.release(t);
    }

    /// An outage broke the subscriptions open at `front`: each client resubscribes after its
    /// retry pause (all at the same moment when the pause has no jitter).
    #[cold]
    #[inline(never)]
    pub(super) fn on_streams_broken(&mut self, now: Micros, front: usize) {
        let cfg = *self.client_config();
        for c in 0..self.clients.slots.len() as u32 {
            let client = &self.clients[c];
            let open = client.machine.phase == ClientPhase::Subscribed;
            if !open || client.front as usize != front || !client.attached {
                continue;
            }
            let measured = client.measured;
            self.observe(now, measured, Observation::Task(TaskObservation::StreamBroken));
            let u = self.client_draw(c);
            let action = self.clients[c].machine.on_stream_broken(&cfg, u);
            self.client_act(now, c, action);
        }
    }

    /// Whether this is a task's work whose caller has stopped waiting (its service is wasted).
    #[inline]
    pub(super) fn task_caller_left(&self, caller: Caller) -> bool {
        match caller {
            Caller::Task { task, generation } => {
                let task = &self.tasks[task];
                task.generation == generation && task.left_at.is_some()
            }
            Caller::Step { .. }
            | Caller::Remote { .. }
            | Caller::Client { .. }
            | Caller::Sdk { .. }
            | Caller::Cache { .. } => false,
        }
    }

    /// Whether a task's work is past the deadline its client passed on.
    pub(super) fn task_past_deadline(&self, caller: Caller, now: Micros) -> bool {
        match caller {
            Caller::Task { task, generation } => {
                let task = &self.tasks[task];
                task.generation == generation && task.deadline_at.is_some_and(|d| now >= d)
            }
            Caller::Step { .. }
            | Caller::Remote { .. }
            | Caller::Client { .. }
            | Caller::Sdk { .. }
            | Caller::Cache { .. } => false,
        }
    }

    /// The simulation stopped: the cost of tasks still running is counted to the end, and
    /// they are counted as still running.
    pub(super) fn tasks_at_end(&mut self, end: Micros) {
        if self.tasks.slots.is_empty() {
            return;
        }
        for t in 0..self.tasks.slots.len() as u32 {
            // A freed slot holds an ended task with no work: every live one is not ended, or
            // still has its work (a `cancelled` MCP task whose work goes on).
            self.end_unowned_work(end, t);
            let task = self.tasks[t];
            if task.lifecycle.state.is_terminal() {
                continue;
            }
            self.observe(end, task.measured, Observation::Task(TaskObservation::RunningAtEnd));
            if task.lifecycle.state == TaskState::Running && !task.queued_after_resume {
                let cost_per_s = self.task_model(task.front as usize).cost_per_s;
                self.observe_running_cost(&task, cost_per_s, task.lifecycle.since_us, end);
            }
        }
    }

    /// Client `c`'s request was answered with the protocol's `error`.
    #[inline(always)]
    fn trace_refusal(&mut self, c: u32, error: ProtocolError) {
        if T::ON {
            let client = self.clients[c];
            if self.runs[client.run].generation == client.run_gen {
                let now = self.queue.now();
                let event = TraceEvent::TaskCallRefused {
                    step: client.step,
                    serial: client.serial,
                    dependency: client.front,
                    error,
                };
                self.tracer.record(client.run, now, event);
            }
        }
    }

    #[inline(always)]
    fn trace_task(&mut self, now: Micros, t: u32) {
        if T::ON {
            let task = self.tasks[t];
            if self.runs[task.run].generation == task.run_gen {
                let event = TraceEvent::TaskChanged {
                    step: task.step,
                    serial: task.serial,
                    task: t,
                    dependency: task.front,
                    state: task.lifecycle.state,
                    work_failed: task.work_failed,
                };
                self.tracer.record(task.run, now, event);
            }
        }
    }
}

/// What the faults active at a task's creation do to it.
#[derive(Default)]
struct TaskFaults {
    stuck: bool,
    input_required: bool,
    lost_handle: bool,
    publish_delay_us: Micros,
}
