//! Remote agents: a dependency that, after its own service time, makes its own calls to other
//! dependencies with its own attempts, timeouts and pauses, outside the caller's budget. Its
//! server stays busy until the calls end, and it keeps going after its caller gives up unless
//! it honours cancellation: retries multiply across layers.

use super::event::Event;
use super::simulation::{Caller, JobPhase, Simulation};
use super::stations::NewAttempt;
use crate::runtime::decision::default_retryable;
use crate::runtime::{AttemptResult, Purpose, Tracer};
use crate::sim::Micros;
use crate::vocab::FailureKind;

impl<T: Tracer> Simulation<'_, T> {
    pub(super) fn begin_remote_calls(&mut self, now: Micros, id: u32) {
        let job = &mut self.jobs[id];
        job.phase = JobPhase::Calling;
        job.call = 0;
        job.repeat = 0;
        job.sub_attempt = 0;
        self.remote_next(now, id);
    }

    /// Starts the current sub-attempt, or completes the job when every call is done.
    pub(super) fn remote_next(&mut self, now: Micros, id: u32) {
        let model = self.model;
        // A looping agent first delegates back (engine/delegation.rs).
        if self.delegation.on && self.delegation_loop_next(now, id) {
            return;
        }
        let job = &self.jobs[id];
        let calls = &model.world.dependencies[job.station as usize].calls;
        let Some(call) = calls.get(job.call as usize) else {
            self.complete_service(now, id);
            return;
        };
        // A task's work given the root run's deadline makes no call past it.
        if self.task_past_deadline(job.caller, now) {
            self.jobs[id].error = Some(FailureKind::DeadlineExhausted);
            self.complete_service(now, id);
            return;
        }
        let key = job.key.with(u64::from(job.call)).with(u64::from(job.repeat)).with(u64::from(job.sub_attempt));
        if call.delegate {
            match self.delegate_call(now, id, call.dependency, key, call.timeout_us) {
                Ok(true) | Err(()) => {}
                // A refused revisit: the agent it would go to is at work on this chain already.
                Ok(false) => self.remote_call_done(now, id),
            }
            return;
        }
        let attempt = NewAttempt {
            station: call.dependency,
            purpose: Purpose::Call,
            priority: job.priority,
            caller: Caller::Remote { job: id, generation: job.generation },
            run: job.run,
            run_gen: job.run_gen,
            measured: job.measured,
            key,
            timeout_us: Some(call.timeout_us),
            owned: job.owned,
            stuck: false,
            counted: true,
            // One draw per call of the remote agent: its retries send the same request.
            tokens: model.world.dependencies[call.dependency]
                .tokens
                .as_ref()
                .map(|shape| shape.draw_defaults(job.key.with(u64::from(job.call)).with(u64::from(job.repeat)))),
            // A remote agent's own calls wait for the whole answer.
            first_token_timeout_us: None,
        };
        let child = self.submit(now, attempt);
        self.jobs[id].child = Some(child);
    }

    pub(super) fn on_remote_child_result(&mut self, now: Micros, id: u32, generation: u32, result: AttemptResult) {
        let model = self.model;
        let job = &mut self.jobs[id];
        if job.generation != generation || job.phase != JobPhase::Calling {
            return;
        }
        job.child = None;
        if self.delegation.on && self.delegation_loop_result(now, id, result) {
            return;
        }
        let job = &self.jobs[id];
        let call = &model.world.dependencies[job.station as usize].calls[job.call as usize];
        let kind = match result {
            // A remote agent's own calls are never lookups.
            AttemptResult::Ok | AttemptResult::NotFound => {
                self.remote_call_done(now, id);
                return;
            }
            AttemptResult::Failed { kind, .. } => kind,
            AttemptResult::TimedOut => FailureKind::TransientTransport,
        };
        let j = &mut self.jobs[id];
        j.sub_attempt += 1;
        if j.sub_attempt < call.max_attempts && default_retryable()[kind.index()] {
            if call.backoff_us > 0 {
                self.queue.schedule(now + call.backoff_us, Event::RemoteWake { job: id, generation });
            } else {
                self.remote_next(now, id);
            }
        } else {
            // The agent reports its own failure upward; the caller sees the kind it would act on.
            j.error = Some(kind);
            self.complete_service(now, id);
        }
    }

    /// One repeat of the current call is done: on to the next, or the next call.
    fn remote_call_done(&mut self, now: Micros, id: u32) {
        let j = &mut self.jobs[id];
        let count = self.model.world.dependencies[j.station as usize].calls[j.call as usize].count;
        j.sub_attempt = 0;
        j.repeat += 1;
        if j.repeat >= count {
            j.repeat = 0;
            j.call += 1;
        }
        self.remote_next(now, id);
    }

    pub(super) fn on_remote_wake(&mut self, now: Micros, id: u32, generation: u32) {
        let job = &self.jobs[id];
        if job.generation == generation && job.phase == JobPhase::Calling && job.child.is_none() {
            self.remote_next(now, id);
        }
    }
}
