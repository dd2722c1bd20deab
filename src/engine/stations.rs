//! Attempts at stations: admission, queueing, service, replies, timeouts and cancellation.

use super::event::Event;
use super::simulation::{Caller, FirstTokenWatch, Job, JobPhase, Simulation};
use super::task_slots::CreateReply;
use crate::metrics::Observation;
use crate::metrics::tokens::TokenObservation;
use crate::runtime::{AttemptResult, AttemptTrace, Purpose, StationExit, TraceCaller, TraceEvent, Tracer};
use crate::sim::{Micros, StreamKey};
use crate::vocab::{FailureKind, Priority, Refusal};
use crate::world::bad_result::BadResult;
use crate::world::queue_policy::Overflow;
use crate::world::tokens::CallTokens;
use crate::world::{Admission, AttemptDraws, Commit, Station, attempt_conditions};

/// Everything needed to create an attempt.
pub(super) struct NewAttempt {
    pub station: usize,
    pub purpose: Purpose,
    pub priority: Priority,
    pub caller: Caller,
    pub run: u32,
    pub run_gen: u32,
    pub measured: bool,
    pub key: StreamKey,
    pub timeout_us: Option<Micros>,
    /// Counted in the run's outstanding attempts; false for a remote task's work.
    pub owned: bool,
    /// The work never ends (a stuck task): it holds its server past the simulation's end.
    pub stuck: bool,
    /// An attempt of a logical call (or of a remote agent's own call): counted in retry
    /// amplification. A task client's control request or a task's work is not.
    pub counted: bool,
    /// At a token-shaped model: the logical call's token counts, drawn by the caller so every
    /// attempt of the call sees the same; None draws the model's defaults from the attempt key.
    pub tokens: Option<CallTokens>,
    /// At a token-shaped model: the caller gives up when the first token is this late.
    pub first_token_timeout_us: Option<Micros>,
}

impl<T: Tracer> Simulation<'_, T> {
    /// Creates an attempt, draws its fate, and sends it to its station. Returns its id and generation.
    pub(super) fn submit(&mut self, now: Micros, a: NewAttempt) -> (u32, u32) {
        let model = self.model;
        let dep = &model.world.dependencies[a.station];
        let draws = AttemptDraws::new(a.key);
        let mut stream = draws.rest();
        let lookup = a.purpose == Purpose::Lookup;
        let tokens = match &dep.tokens {
            Some(shape) if !lookup => Some(a.tokens.unwrap_or_else(|| shape.draw_defaults(a.key))),
            Some(_) | None => None,
        };
        if T::DRAWS {
            self.trace_attempt(now, &a, &draws, tokens);
        }
        let mut conditions =
            attempt_conditions(dep, &model.world.faults, now, &draws, lookup, tokens, |d| d.sample_ms(&mut stream));
        if a.stuck {
            conditions.service_us = self.stop_at.saturating_sub(now).saturating_add(1);
        }
        let id = self.jobs.alloc(Job::vacant);
        let job = &mut self.jobs[id];
        let generation = job.generation;
        *job = Job {
            generation,
            phase: JobPhase::Queued,
            purpose: a.purpose,
            priority: a.priority,
            station: a.station as u16,
            caller: a.caller,
            attached: true,
            owned: a.owned,
            measured: a.measured,
            run: a.run,
            run_gen: a.run_gen,
            key: a.key,
            service_us: conditions.service_us,
            arrived_us: now,
            started_us: now,
            error: conditions.error,
            retry_after_us: None,
            no_reply: conditions.no_reply,
            tokens: tokens.unwrap_or_default(),
            bad: conditions.bad,
            call: 0,
            repeat: 0,
            sub_attempt: 0,
            child: None,
        };
        if a.owned {
            self.runs[a.run].outstanding += 1;
        } else {
            self.task_work_sent(now, &a, dep.cost_units);
        }
        if T::ON {
            self.trace_arrival(now, id, &a);
        }
        let (dependency, cost_units) = (a.station as u16, dep.cost_units);
        let sent = if a.counted {
            Observation::AttemptSent { dependency, cost_units }
        } else {
            Observation::RequestSent { dependency, cost_units }
        };
        self.observe(now, a.measured, sent);
        // Before admission: service may start at once and read the first token's time.
        let total_at_us = a.timeout_us.map(|t| now.saturating_add(t));
        let fire_at_us = match tokens {
            None => total_at_us,
            Some(_) => self.first_token_deadline(now, (id, generation), &a, conditions.first_token_us, total_at_us),
        };
        if let Some(t) = tokens
            && dep.max_context_tokens.is_some_and(|window| f64::from(t.input) > window)
        {
            // A provider answers 400 at once: the prompt does not fit; retrying cannot help.
            self.observe(now, a.measured, Observation::Tokens(TokenObservation::ContextWindowExceeded));
            self.reject(now, id, FailureKind::InvalidInput, None);
            return (id, generation);
        }
        match self.stations[a.station].admit(dep, &model.world.faults, now, &draws, tokens) {
            Admission::StartService => self.start_service(now, id),
            Admission::Queued => self.enqueue(now, id),
            Admission::QueueFull if dep.queue.overflow == Overflow::RejectLowestPriority && self.evict(now, id) => {
                self.enqueue(now, id)
            }
            Admission::QueueFull => self.reject_full(now, id),
            Admission::RateLimited { retry_after_us } => {
                self.reject(now, id, FailureKind::RateLimited, Some(retry_after_us))
            }
            Admission::Down { retry_after_us } => self.reject(now, id, FailureKind::TransientTransport, retry_after_us),
            Admission::LargerThanQuota => {
                self.observe(now, a.measured, Observation::Tokens(TokenObservation::LargerThanQuota));
                self.reject(now, id, FailureKind::InvalidInput, None)
            }
        }
        // A timeout past the end of the simulation could only ever fire as a stale event;
        // leaving it out keeps the event queue bounded by what can still happen.
        if let Some(at) = fire_at_us
            && at <= self.stop_at
            && !self.answered_before(now, id, at)
        {
            self.queue.schedule_timer(at, id, Event::Timeout { job: id, generation });
        }
        (id, generation)
    }

    /// Whether attempt `id`, just admitted, is certain to answer its caller no later than
    /// `at`, so that a caller's timeout at `at` could never fire: it left at once (refused,
    /// answered now) or started service at once and its answer is its service end, which
    /// comes first. The service end was scheduled before the timer would be, so it wins a
    /// tie. Its answer is the service end only without a lost reply, remote calls of its
    /// own, a delegation loop, a held task create or a token-shaped first-token watch.
    /// Leaving the timer out saves its insert and removal and moves no other event (events
    /// are ordered by time, then insertion sequence).
    #[inline(always)]
    fn answered_before(&self, now: Micros, id: u32, at: Micros) -> bool {
        let job = &self.jobs[id];
        match job.phase {
            JobPhase::Rejected => true,
            JobPhase::InService => {
                debug_assert_eq!(job.started_us, now, "asked right after admission");
                let dep = &self.model.world.dependencies[job.station as usize];
                now.saturating_add(job.service_us) <= at
                    && !job.no_reply
                    && dep.tokens.is_none()
                    && dep.calls.is_empty()
                    && !self.delegation.on
                    && !matches!(job.caller, Caller::Client { .. })
            }
            JobPhase::Queued | JobPhase::Free | JobPhase::Calling | JobPhase::AwaitReply => false,
        }
    }

    /// A token-shaped attempt's first timer: its first-token deadline when that comes before the
    /// total timeout (the total is armed later), else the total. Either way the first token's
    /// time is kept for the time to first chunk.
    #[cold]
    #[inline(never)]
    fn first_token_deadline(
        &mut self,
        now: Micros,
        (id, generation): (u32, u32),
        a: &NewAttempt,
        first_token_us: Micros,
        total_at_us: Option<Micros>,
    ) -> Option<Micros> {
        match a.first_token_timeout_us.map(|t| now.saturating_add(t)) {
            Some(first) if total_at_us.is_none_or(|t| first < t) => {
                self.watch_first_token(id, generation, first, first_token_us, total_at_us);
                Some(first)
            }
            Some(_) | None => {
                self.watch_first_token(id, generation, Micros::MAX, first_token_us, None);
                total_at_us
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn watch_first_token(
        &mut self,
        id: u32,
        generation: u32,
        check_at_us: Micros,
        first_token_us: Micros,
        total_at_us: Option<Micros>,
    ) {
        let slot = id as usize;
        if self.first_token_watch.len() <= slot {
            let vacant =
                FirstTokenWatch { generation: 0, check_at_us: Micros::MAX, first_token_us: 0, total_at_us: None };
            self.first_token_watch.resize(slot + 1, vacant);
        }
        self.first_token_watch[slot] = FirstTokenWatch { generation, check_at_us, first_token_us, total_at_us };
    }

    /// At the first-token deadline of attempt `id`: true when the first token came (then the
    /// total timeout, if any, is armed), false when the caller gives up now. False also for a
    /// timeout that is not a first-token deadline.
    #[cold]
    #[inline(never)]
    fn first_token_came(&mut self, now: Micros, id: u32, generation: u32) -> bool {
        let Some(watch) = self.first_token_watch.get_mut(id as usize) else { return false };
        if watch.generation != generation || watch.check_at_us != now {
            return false;
        }
        watch.check_at_us = Micros::MAX;
        let (first_token_us, total_at_us) = (watch.first_token_us, watch.total_at_us);
        let job = &self.jobs[id];
        // A hung call or a lost reply never shows its first token to the caller.
        let came =
            job.phase == JobPhase::InService && !job.no_reply && job.started_us.saturating_add(first_token_us) <= now;
        if !came {
            self.observe(now, job.measured, Observation::Tokens(TokenObservation::FirstTokenTimedOut));
            return false;
        }
        if let Caller::Sdk { call, generation: call_gen, .. } = job.caller {
            self.sdk_first_token_came(call, call_gen);
        }
        if let Some(at) = total_at_us
            && at <= self.stop_at
        {
            self.queue.schedule_timer(at, id, Event::Timeout { job: id, generation });
        }
        true
    }

    /// A token-shaped call starts service: its tokens are billed.
    #[cold]
    #[inline(never)]
    fn tokens_served(&mut self, now: Micros, id: u32, d: usize, shape: &crate::world::tokens::TokenShape) {
        let job = &self.jobs[id];
        if job.purpose == Purpose::Lookup {
            return;
        }
        let (t, measured, waited_us, service_us) = (job.tokens, job.measured, now - job.arrived_us, job.service_us);
        // A stream cut bills what streamed before the cut.
        let t = if job.bad == Some(BadResult::StreamCut) { crate::world::station::stream_cut(t) } else { t };
        let first_token_us = match self.first_token_watch.get(id as usize) {
            Some(w) if w.generation == job.generation => w.first_token_us,
            Some(_) | None => 0,
        };
        let first_chunk_us = u32::try_from(waited_us.saturating_add(first_token_us)).unwrap_or(u32::MAX);
        let operation_us = u32::try_from(waited_us.saturating_add(service_us)).unwrap_or(u32::MAX);
        let dependency = d as u16;
        let served = TokenObservation::Served {
            dependency,
            truncated: t.truncated,
            input: t.input,
            output: t.output,
            first_chunk_us,
            operation_us,
        };
        self.observe(now, measured, Observation::Tokens(served));
        let billed = TokenObservation::Billed { dependency, money: shape.price(t) };
        self.observe(now, measured, Observation::Tokens(billed));
    }

    #[cold]
    fn trace_attempt(&mut self, now: Micros, a: &NewAttempt, draws: &AttemptDraws, tokens: Option<CallTokens>) {
        let dep = &self.model.world.dependencies[a.station];
        let base = if a.purpose == Purpose::Lookup { &dep.lookup_service } else { &dep.service };
        let mut rest = draws.rest();
        // The same draws, in the same order, as `attempt_conditions` makes without faults.
        let base_service_ms = match (&dep.tokens, tokens) {
            (Some(shape), Some(t)) => {
                let ttft_ms = shape.time_to_first_token.sample_ms(&mut rest);
                shape.service_ms(t, ttft_ms, shape.time_per_output_token.sample_ms(&mut rest))
            }
            _ => base.sample_ms(&mut rest),
        };
        let run = &self.runs[a.run];
        let step = match a.caller {
            Caller::Step { step, .. } | Caller::Sdk { step, .. } | Caller::Cache { step, .. } => Some(step),
            Caller::Remote { .. } | Caller::Client { .. } | Caller::Task { .. } => None,
        };
        let entry = AttemptTrace {
            workflow: run.machine.workflow,
            arrival: run.arrival,
            resubmission: run.resubmission,
            run_start_us: run.machine.start_us,
            step,
            key: a.key.value(),
            dependency: a.station,
            lookup: a.purpose == Purpose::Lookup,
            at_us: now,
            draws: draws.all(),
            base_service_ms,
        };
        self.tracer.attempt_drawn(entry);
    }

    #[cold]
    fn trace_arrival(&mut self, now: Micros, id: u32, a: &NewAttempt) {
        let caller = match a.caller {
            Caller::Step { step, serial } => TraceCaller::Step { step, serial },
            Caller::Remote { job, .. } => {
                let parent = &self.jobs[job];
                TraceCaller::Remote {
                    parent: job,
                    call: parent.call,
                    repeat: parent.repeat,
                    sub_attempt: parent.sub_attempt,
                }
            }
            Caller::Client { client, .. } => {
                let c = &self.clients[client];
                TraceCaller::TaskClient { step: c.step, serial: c.serial, call: c.in_flight }
            }
            Caller::Task { task, .. } => TraceCaller::TaskWork { task },
            Caller::Sdk { call, .. } => {
                let (step, serial, retry) = self.sdk_position(call);
                TraceCaller::Sdk { step, serial, retry }
            }
            Caller::Cache { fill, step, .. } => {
                let (step, serial) = self.fill_position(fill, step);
                TraceCaller::Step { step, serial }
            }
        };
        let event = TraceEvent::StationArrived { job: id, caller, dependency: a.station as u16 };
        self.tracer.record(a.run, now, event);
        let t = self.jobs[id].tokens;
        if self.model.world.dependencies[a.station].tokens.is_some() && a.purpose != Purpose::Lookup {
            let event = TraceEvent::TokensDrawn { job: id, input: t.input, output: t.output, truncated: t.truncated };
            self.tracer.record(a.run, now, event);
        }
    }

    /// Tells the tracer about job `id` (its run decides whether it is kept).
    #[inline(always)]
    fn trace_job(&mut self, now: Micros, id: u32, event: TraceEvent) {
        if T::ON {
            let job = &self.jobs[id];
            // A remote task's work outlives its run: once the slot holds another run, its
            // events are not that run's.
            if job.owned || self.runs[job.run].generation == job.run_gen {
                let run = job.run;
                self.tracer.record(run, now, event);
            }
        }
    }

    /// Tells the tracer that job `id` left its station by `exit`.
    #[inline(always)]
    fn trace_left(&mut self, now: Micros, id: u32, exit: StationExit) {
        if T::ON {
            let purpose = self.jobs[id].purpose;
            self.trace_job(now, id, TraceEvent::StationLeft { job: id, exit, purpose });
        }
    }

    fn enqueue(&mut self, now: Micros, id: u32) {
        let job = &self.jobs[id];
        let (d, generation, priority) = (job.station as usize, job.generation, job.priority);
        self.observe_station(d, now);
        self.stations[d].enqueue(id, generation, priority, now);
        if let Some(wait) = self.model.world.dependencies[d].queue.max_wait_us
            && now.saturating_add(wait) <= self.stop_at
        {
            self.queue.schedule(now + wait, Event::QueueExpiry { job: id, generation });
        }
    }

    /// A full waiting room makes way for attempt `id` by dropping the newest waiting attempt
    /// of a less important priority; false when there is none.
    fn evict(&mut self, now: Micros, id: u32) -> bool {
        let (d, priority) = (self.jobs[id].station as usize, self.jobs[id].priority);
        while let Some((victim, generation)) = self.stations[d].pop_evictable(priority) {
            let v = &self.jobs[victim];
            if v.generation == generation && v.phase == JobPhase::Queued {
                self.observe_station(d, now);
                self.stations[d].forget_queued(now);
                self.reject_full(now, victim);
                return true;
            }
        }
        false
    }

    /// Drops a queued attempt before service (expired, abandoned, or CoDel): its caller, if it
    /// still waits, gets OVERLOADED now.
    fn drop_queued(&mut self, now: Micros, id: u32) {
        self.trace_left(now, id, StationExit::Expired);
        let job = &self.jobs[id];
        let expired = Observation::Refused { dependency: job.station, reason: Refusal::Expired };
        self.observe(now, job.measured, expired);
        self.reject(now, id, FailureKind::Overloaded, None);
    }

    pub(super) fn on_queue_expiry(&mut self, now: Micros, id: u32, generation: u32) {
        let job = &self.jobs[id];
        if job.generation != generation || job.phase != JobPhase::Queued {
            return;
        }
        let d = job.station as usize;
        self.observe_station(d, now);
        self.stations[d].forget_queued(now);
        self.drop_queued(now, id);
        self.compact_queue(d);
    }

    /// Whether the station drops this attempt instead of serving it: its caller has gone
    /// (drop_abandoned) or it waited past CoDel's current limit.
    fn drops_at_dequeue(&self, now: Micros, id: u32) -> bool {
        let job = &self.jobs[id];
        let d = job.station as usize;
        let queue = &self.model.world.dependencies[d].queue;
        let gone = queue.drop_abandoned && !job.attached;
        let stale = queue.codel.is_some_and(|c| now - job.arrived_us > c.limit_us(now, self.stations[d].last_empty_us));
        gone || stale
    }

    /// The waiting room is full: OVERLOADED at once (or the evicted attempt's).
    fn reject_full(&mut self, now: Micros, id: u32) {
        let job = &self.jobs[id];
        self.observe(now, job.measured, Observation::QueueRejected { dependency: job.station });
        self.reject(now, id, FailureKind::Overloaded, None);
    }

    /// The attempt leaves at once with `kind` (its reply is delivered as an event now).
    fn reject(&mut self, now: Micros, id: u32, kind: FailureKind, retry_after_us: Option<Micros>) {
        let job = &mut self.jobs[id];
        job.phase = JobPhase::Rejected;
        job.error = Some(kind);
        job.retry_after_us = retry_after_us;
        let generation = job.generation;
        self.queue.schedule(now, Event::ServiceEnd { job: id, generation });
    }

    /// Brings a station's time integrals up to `now` before its state changes.
    #[inline]
    pub(super) fn observe_station(&mut self, d: usize, now: Micros) {
        let s = &self.stations[d];
        let state =
            Observation::StationState { dependency: d as u16, busy: s.busy, queued: s.queued, servers: s.servers };
        self.observe(now, true, state);
    }

    #[inline(always)]
    fn start_service(&mut self, now: Micros, id: u32) {
        let job = &mut self.jobs[id];
        let d = job.station as usize;
        job.phase = JobPhase::InService;
        job.started_us = now;
        let (generation, service_us, measured, wait) =
            (job.generation, job.service_us, job.measured, now - job.arrived_us);
        self.observe_station(d, now);
        self.stations[d].busy += 1;
        self.observe(now, measured, Observation::ServiceStarted { dependency: d as u16, wait_us: wait });
        let model = self.model;
        if let Some(shape) = &model.world.dependencies[d].tokens {
            self.tokens_served(now, id, d, shape);
        }
        self.trace_job(now, id, TraceEvent::ServiceStarted { job: id });
        if let Caller::Task { task, generation } = self.jobs[id].caller {
            self.task_work_started(now, task, generation);
        }
        self.queue.schedule(now + service_us, Event::ServiceEnd { job: id, generation });
    }

    /// Frees one server and starts the oldest live waiting attempt, if servers allow.
    #[inline(always)]
    pub(super) fn release_server(&mut self, now: Micros, d: usize) {
        self.observe_station(d, now);
        debug_assert!(self.stations[d].busy > 0, "busy servers never go below zero");
        self.stations[d].busy -= 1;
        self.start_waiting(now, d);
    }

    #[inline(always)]
    fn start_waiting(&mut self, now: Micros, d: usize) {
        while self.stations[d].busy < self.stations[d].servers {
            let Some((id, generation)) = self.stations[d].pop_queued() else { return };
            let job = &self.jobs[id];
            if job.generation != generation || job.phase != JobPhase::Queued {
                continue; // cancelled while waiting; already forgotten
            }
            self.observe_station(d, now);
            if self.drops_at_dequeue(now, id) {
                self.stations[d].forget_queued(now);
                self.drop_queued(now, id);
                continue;
            }
            self.stations[d].forget_queued(now);
            self.start_service(now, id);
        }
    }

    pub(super) fn on_capacity_change(&mut self, now: Micros, d: usize) {
        self.observe_station(d, now);
        let servers = Station::servers_at(&self.model.world.dependencies[d], &self.model.world.faults, now);
        self.stations[d].servers = servers;
        self.start_waiting(now, d);
    }

    pub(super) fn on_service_end(&mut self, now: Micros, id: u32, generation: u32) {
        let job = &self.jobs[id];
        if job.generation != generation {
            return;
        }
        match job.phase {
            JobPhase::Rejected => {
                let job = *job;
                self.record_departure(now, &job);
                let result = AttemptResult::Failed {
                    kind: job.error.unwrap_or(FailureKind::Overloaded),
                    retry_after_us: job.retry_after_us,
                };
                let exit = StationExit::Rejected { kind: job.error.unwrap_or(FailureKind::Overloaded) };
                self.trace_left(now, id, exit);
                self.finish_job(now, id, &job, result);
            }
            JobPhase::InService => {
                let has_calls = !self.model.world.dependencies[job.station as usize].calls.is_empty();
                // A status lookup asks the agent about a key; it does not redo the agent's work.
                let works = job.error.is_none() && job.purpose != Purpose::Lookup;
                let loops = works && self.delegation.on && self.starts_delegation_loop(now, id);
                if (has_calls || loops) && works {
                    self.begin_remote_calls(now, id);
                } else {
                    self.complete_service(now, id);
                }
            }
            JobPhase::Free | JobPhase::Queued | JobPhase::Calling | JobPhase::AwaitReply => {}
        }
    }

    /// Service (and any remote calls) done: free the server, commit a write, reply.
    pub(super) fn complete_service(&mut self, now: Micros, id: u32) {
        let mut job = self.jobs[id];
        let d = job.station as usize;
        let wasted = !job.attached || self.task_caller_left(job.caller);
        if let (Caller::Task { task, generation }, false) = (job.caller, wasted) {
            self.task_work_served(task, generation, now - job.started_us);
        }
        let used = Observation::ServiceUsed { dependency: d as u16, busy_us: now - job.started_us, wasted };
        self.observe(now, job.measured, used);
        let mut held = false;
        if let Caller::Client { client, generation, step } = job.caller
            && job.error.is_none()
            && job.purpose != Purpose::Lookup
        {
            match self.create_task(now, (client, generation), step, &job) {
                CreateReply::Now => {}
                // The handle is lost on the way back: the task exists, its client never hears.
                CreateReply::Lost => job.no_reply = true,
                // A blocking send: the reply waits for the task's end (`release_held_create`).
                CreateReply::Held => held = true,
            }
        }
        let exit = StationExit::Served { error: job.error, reply_lost: job.no_reply };
        self.trace_left(now, id, exit);
        self.record_departure(now, &job);
        let dependency = &self.model.world.dependencies[d];
        if dependency.tokens.is_some() && job.purpose != Purpose::Lookup {
            let produced =
                if job.bad == Some(BadResult::StreamCut) { job.tokens.output.min(1) } else { job.tokens.output };
            self.stations[d].settle_tokens(dependency, &self.model.world.faults, now, job.tokens, produced);
        }
        self.release_server(now, d);
        if let Purpose::Write { deduplicated } = job.purpose
            && job.error.is_none()
        {
            self.commit_write(now, id, &job, deduplicated);
        }
        let result = match job.error {
            Some(kind) => AttemptResult::Failed { kind, retry_after_us: None },
            None => AttemptResult::Ok,
        };
        if (job.no_reply || held) && job.attached {
            self.jobs[id].phase = JobPhase::AwaitReply;
        } else {
            self.finish_job(now, id, &job, result);
        }
    }

    fn record_departure(&mut self, now: Micros, job: &Job) {
        let departed =
            Observation::Departed { dependency: job.station, sojourn_us: now - job.arrived_us, error: job.error };
        self.observe(now, job.measured, departed);
    }

    fn commit_write(&mut self, now: Micros, id: u32, job: &Job, deduplicated: bool) {
        // An SDK's hidden attempt writes for its step too (a resent request commits again).
        let (step, attempt_key) = match job.caller {
            Caller::Step { step, .. } => (step, None),
            Caller::Sdk { step, attempt_key, serial, .. } => (step, attempt_key.then_some(serial)),
            // A cache's shared call is a read's (writes never go through a cache).
            Caller::Remote { .. } | Caller::Client { .. } | Caller::Task { .. } | Caller::Cache { .. } => return,
        };
        let run = &mut self.runs[job.run];
        debug_assert_eq!(run.generation, job.run_gen, "a run outlives its attempts");
        let ledger = &mut run.ledgers[step as usize];
        let commit = match attempt_key {
            Some(serial) => ledger.commit_attempt_key(serial),
            None => ledger.commit(deduplicated),
        };
        if let Commit::Applied { duplicate } = commit {
            if duplicate {
                run.duplicate = true;
            }
            self.observe(now, job.measured, Observation::EffectCommitted { duplicate });
            self.trace_job(now, id, TraceEvent::EffectCommitted { job: id, duplicate });
        }
    }

    /// Frees the attempt and, if its caller still waits, delivers the result. `job` is the
    /// caller's copy of the attempt, taken since its last change.
    pub(super) fn finish_job(&mut self, now: Micros, id: u32, job: &Job, result: AttemptResult) {
        self.free_job(now, id);
        if job.attached {
            self.deliver(now, job, result);
        }
    }

    pub(super) fn deliver(&mut self, now: Micros, job: &Job, result: AttemptResult) {
        match job.caller {
            Caller::Step { step, serial } => self.on_step_result(now, job, step, serial, result),
            Caller::Remote { job: parent, generation } => self.on_remote_child_result(now, parent, generation, result),
            Caller::Client { client, generation, .. } => self.on_client_reply(now, client, generation, result),
            Caller::Task { task, generation } => self.on_task_work_done(now, task, generation, result),
            Caller::Sdk { call, generation, .. } => self.on_sdk_child_result(now, call, generation, result, job.bad),
            Caller::Cache { fill, generation, .. } => self.on_cache_fill_result(now, fill, generation, result, job.bad),
        }
    }

    #[inline(always)]
    pub(super) fn free_job(&mut self, now: Micros, id: u32) {
        // Its caller's timeout can no longer matter (and the slot is about to be reused).
        self.queue.cancel_timer(id);
        if self.delegation.on {
            self.delegation_job_freed(id);
        }
        let job = &mut self.jobs[id];
        job.generation = job.generation.wrapping_add(1);
        job.phase = JobPhase::Free;
        let (run, owned) = (job.run, job.owned);
        self.jobs.release(id);
        if !owned {
            return;
        }
        let r = &mut self.runs[run];
        debug_assert!(r.outstanding > 0, "a run's outstanding attempts never go below zero");
        r.outstanding -= 1;
        if r.machine.ended && r.outstanding == 0 && !r.finalized {
            self.finalize_run(now, run);
        }
    }

    pub(super) fn on_timeout(&mut self, now: Micros, id: u32, generation: u32) {
        let job = self.jobs[id];
        if job.generation != generation || !job.attached {
            return;
        }
        if !self.first_token_watch.is_empty() && self.first_token_came(now, id, generation) {
            return;
        }
        self.observe(now, job.measured, Observation::TimedOut { dependency: job.station });
        self.trace_job(now, id, TraceEvent::CallerTimedOut { job: id });
        self.jobs[id].attached = false;
        match job.phase {
            JobPhase::AwaitReply => self.free_job(now, id),
            JobPhase::Queued | JobPhase::InService | JobPhase::Calling => self.abandon(now, id),
            JobPhase::Rejected | JobPhase::Free => {}
        }
        self.deliver(now, &job, AttemptResult::TimedOut);
    }

    /// The caller no longer waits. A dependency that honours cancellation drops the attempt;
    /// otherwise it keeps working on it (wasted work) and a write may still commit.
    pub(super) fn abandon(&mut self, now: Micros, id: u32) {
        self.jobs[id].attached = false;
        self.queue.cancel_timer(id); // a timeout fires only for a caller that still waits
        let job = self.jobs[id];
        let d = job.station as usize;
        // Served already, only the reply was missing: nothing left at the station to keep.
        if job.phase == JobPhase::AwaitReply {
            self.free_job(now, id);
            return;
        }
        if self.model.world.dependencies[d].honors_cancel {
            self.stop_attempt(now, id);
        }
    }

    /// Removes a detached attempt from its station: out of the queue, or its service stopped
    /// (with its own calls) and its server freed. Its caller hears nothing.
    pub(super) fn stop_attempt(&mut self, now: Micros, id: u32) {
        let job = self.jobs[id];
        let d = job.station as usize;
        match job.phase {
            JobPhase::Queued => {
                self.trace_left(now, id, StationExit::Cancelled);
                // It arrived and is counted in the station's population while it waited, so its
                // time in the queue is a sojourn (Little's law holds with it, not without).
                let left =
                    Observation::Departed { dependency: d as u16, sojourn_us: now - job.arrived_us, error: None };
                self.observe(now, job.measured, left);
                self.observe_station(d, now);
                self.stations[d].forget_queued(now);
                self.free_job(now, id);
                self.compact_queue(d);
            }
            JobPhase::InService | JobPhase::Calling => {
                if let Some((child, child_gen)) = job.child
                    && self.jobs[child].generation == child_gen
                {
                    self.abandon(now, child);
                }
                self.trace_left(now, id, StationExit::Cancelled);
                let used =
                    Observation::ServiceUsed { dependency: d as u16, busy_us: now - job.started_us, wasted: true };
                self.observe(now, job.measured, used);
                // A cancelled attempt sends no reply, so no error reply is counted.
                self.record_departure(now, &Job { error: None, ..job });
                self.free_job(now, id);
                self.release_server(now, d);
            }
            // Served, its reply lost: nothing left at the station but the slot.
            JobPhase::AwaitReply => self.free_job(now, id),
            JobPhase::Rejected | JobPhase::Free => {}
        }
    }

    /// Drops cancelled entries from a station's queue once they outnumber the live ones, so
    /// the queue's memory stays bounded by what is waiting, not by what was ever cancelled.
    fn compact_queue(&mut self, d: usize) {
        let station = &mut self.stations[d];
        if station.queue_len() > 2 * station.queued as usize + 64 {
            let jobs = &self.jobs;
            station.retain_queued(|id, generation| {
                let job = &jobs[id];
                job.generation == generation && job.phase == JobPhase::Queued
            });
        }
    }
}
