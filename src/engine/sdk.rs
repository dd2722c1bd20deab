//! SDK clients inside the caller: a runtime attempt at a dependency the policy calls through an
//! SDK client ([`crate::runtime::sdk_client`]) is one SDK call, made of hidden attempts that
//! the SDK retries on its own after its backoff. Each hidden attempt is a real attempt at the
//! station (load, queue, rate limit, cost); the runtime's timeout covers the whole call, the
//! SDK's `timeout_ms` each hidden attempt. The first hidden attempt has the key, tokens and
//! draws the runtime attempt would have had without an SDK, so `max_retries = 0` changes
//! nothing.

use super::event::Event;
use super::sdk_slot::SdkSlot;
use super::simulation::{Caller, Simulation};
use super::stations::NewAttempt;
use crate::metrics::Observation;
use crate::runtime::guard::HiddenEnd;
use crate::runtime::sdk_client::{SdkCall, SdkDecision};
use crate::runtime::{AttemptResult, Purpose, Spend, Tracer};
use crate::sim::{Micros, StreamKey};
use crate::vocab::Priority;
use crate::world::tokens::CallTokens;

/// Marks a runtime attempt's handle as an SDK call's (the task clients' handles use bit 63).
pub(super) const SDK_HANDLE: u64 = 1 << 62;
/// Stream tags below a runtime attempt's key: hidden attempt n's key, and its sleep's jitter.
const TAG_SDK_ATTEMPT: u64 = 0x5D4C_0001;
const TAG_SDK_JITTER: u64 = 0x5D4C_0002;

/// What a runtime attempt through an SDK client needs.
pub(super) struct SdkStart {
    pub run: u32,
    pub step: u8,
    pub serial: u32,
    pub station: usize,
    pub purpose: Purpose,
    pub priority: Priority,
    pub key: StreamKey,
    pub tokens: Option<CallTokens>,
    pub first_token_timeout_us: Option<Micros>,
    /// A write with the runtime attempt's own key at a dependency that honours keys.
    pub attempt_key: bool,
    /// The runtime's timeout for its attempt: the whole SDK call.
    pub timeout_us: Option<Micros>,
}

impl<T: Tracer> Simulation<'_, T> {
    /// Starts an SDK call for a runtime attempt; returns the handle the run machine keeps.
    #[cold]
    #[inline(never)]
    pub(super) fn start_sdk_call(&mut self, now: Micros, s: SdkStart) -> u64 {
        let run = &self.runs[s.run];
        let (run_gen, measured) = (run.generation, run.measured);
        let id = self.sdk_calls.alloc(SdkSlot::vacant);
        let slot = &mut self.sdk_calls[id];
        let generation = slot.generation;
        *slot = SdkSlot {
            generation,
            live: true,
            run: s.run,
            run_gen,
            step: s.step,
            serial: s.serial,
            station: s.station as u16,
            purpose: s.purpose,
            priority: s.priority,
            measured,
            key: s.key,
            tokens: s.tokens,
            first_token_at: s.first_token_timeout_us.map(|t| now.saturating_add(t)),
            attempt_key: s.attempt_key,
            cut_at: s.timeout_us.map_or(Micros::MAX, |t| now.saturating_add(t)),
            held: None,
            call: SdkCall::default(),
            child: None,
            paced: false,
            route: self.runs[s.run].machine.route_of(s.step, s.serial),
            last: None,
        };
        if let Some(t) = s.timeout_us
            && now.saturating_add(t) <= self.stop_at
        {
            self.queue.schedule(now + t, Event::SdkTimeout { call: id, generation });
        }
        self.sdk_send(now, id);
        SDK_HANDLE | (u64::from(id) << 32) | u64::from(generation)
    }

    /// The call's next hidden attempt goes now, or when the client's rate limiter has a token
    /// for it (botocore's adaptive mode: `before-send`, the first attempt included).
    fn sdk_send(&mut self, now: Micros, id: u32) {
        let station = self.sdk_calls[id].station as usize;
        let limiter = self.sdk_rate_limiters[station].as_mut();
        let wait_us = match limiter {
            Some(limiter) if !self.sdk_calls[id].paced => seconds_to_us(limiter.acquire(us_to_seconds(now))),
            Some(_) | None => 0,
        };
        self.sdk_calls[id].paced = wait_us > 0;
        if wait_us == 0 {
            return self.sdk_attempt(now, id);
        }
        let generation = self.sdk_calls[id].generation;
        if now.saturating_add(wait_us) <= self.stop_at {
            self.queue.schedule(now + wait_us, Event::SdkWake { call: id, generation });
        }
    }

    /// Sends the call's next hidden attempt (number `retries_taken`).
    fn sdk_attempt(&mut self, now: Micros, id: u32) {
        let slot = self.sdk_calls[id];
        let n = slot.call.retries_taken;
        let key = if n == 0 { slot.key } else { slot.key.with(TAG_SDK_ATTEMPT).with(u64::from(n)) };
        let config = self.policy.sdk_clients[slot.station as usize].as_ref();
        let attempt = NewAttempt {
            station: slot.station as usize,
            purpose: slot.purpose,
            priority: slot.priority,
            caller: Caller::Sdk {
                call: id,
                generation: slot.generation,
                step: slot.step,
                attempt_key: slot.attempt_key,
                serial: slot.serial,
            },
            run: slot.run,
            run_gen: slot.run_gen,
            measured: slot.measured,
            key,
            timeout_us: config.and_then(|c| c.timeout_us),
            owned: true,
            stuck: false,
            counted: true,
            // The SDK resends the same request: the same tokens.
            tokens: slot.tokens,
            // What is left of the runtime's first-token deadline (all of it for attempt 0).
            first_token_timeout_us: slot.first_token_at.map(|at| at.saturating_sub(now)),
        };
        if n > 0 {
            self.observe(now, slot.measured, Observation::HiddenAttempt { dependency: slot.station });
            // Sent: a charged retry's token is spent for good.
            self.sdk_calls[id].held = None;
        }
        // A station answers through an event, never within `submit`: the call still waits.
        let child = self.submit(now, attempt);
        self.sdk_calls[id].child = Some(child);
    }

    /// A hidden attempt ended: the SDK retries after its sleep or answers the runtime. `bad`
    /// is the attempt's answer should it look like success and not be one: the answer the
    /// SDK returns carries it to the runtime (docs/scenario.md section 7).
    pub(super) fn on_sdk_child_result(
        &mut self,
        now: Micros,
        id: u32,
        generation: u32,
        result: AttemptResult,
        bad: Option<crate::world::bad_result::BadResult>,
    ) {
        let slot = self.sdk_calls[id];
        if !slot.live || slot.generation != generation {
            return;
        }
        self.sdk_calls[id].child = None;
        // The runtime's first-token timeout ended the attempt: it cuts the whole call, as a
        // streaming caller does (an SDK returns at the response's headers, so a wait for the
        // first chunk is the caller's, never retried by the SDK).
        if matches!(result, AttemptResult::TimedOut) && slot.first_token_at.is_some_and(|at| at <= now) {
            self.end_sdk_call(id);
            self.deliver_step_result(now, slot.run, slot.run_gen, slot.purpose, slot.step, slot.serial, result);
            return;
        }
        let Some(config) = self.policy.sdk_clients[slot.station as usize].as_ref() else {
            debug_assert!(false, "an SDK call exists only for a dependency with an SDK client");
            return;
        };
        // The route's guards hear each request; one that would refuse the next (a LiteLLM
        // router's deployment it has just cooled) ends the call with this answer, unslept.
        let mut cooled = false;
        if let Some((route, waiter)) = slot.route {
            let end = match result {
                AttemptResult::Ok | AttemptResult::NotFound => HiddenEnd::Answered,
                AttemptResult::Failed { kind, .. } => HiddenEnd::Failed(kind),
                AttemptResult::TimedOut => HiddenEnd::TimedOut,
            };
            let mut wakes = Vec::new();
            let mut out = GuardEffects { recorder: &mut self.recorder, now, wakes: &mut wakes };
            let more = self.pipeline.sdk_attempt_end(now, route, waiter, end, &mut out);
            for at in wakes {
                self.queue.schedule(at.max(now), Event::GuardWake);
            }
            if !more {
                cooled = true;
            }
        }
        let n = slot.call.retries_taken;
        let unit = slot.key.with(TAG_SDK_JITTER).with(u64::from(n)).stream().unit();
        if let Some(limiter) = self.sdk_rate_limiters[slot.station as usize].as_mut() {
            limiter.on_answer(us_to_seconds(now), crate::runtime::sdk_client::is_throttling(result));
        }
        let mut call = slot.call;
        let spend = self.hidden_spend(&slot);
        let (recorder, runs) = (&mut self.recorder, &mut self.runs);
        // The client's retry quota, shared by its calls (botocore's `RetryQuota`).
        let quota = self.sdk_quotas[slot.station as usize].as_mut();
        let decision = if cooled {
            SdkDecision::Answer(crate::runtime::sdk_client::Stop::Cooled)
        } else {
            call.on_response_with_quota(config, result, None, unit, quota, |delay_us| {
                let run = &mut runs[slot.run];
                // A retry that would start when the runtime's own timeout has cut the call is
                // never sent: a charged client does not pay for it (it answers now instead).
                let cut_at = slot.cut_at.min(slot.first_token_at.unwrap_or(Micros::MAX));
                if run.generation != slot.run_gen || now.saturating_add(delay_us) >= cut_at {
                    return false;
                }
                let mut out = ObserveOnly { recorder, now, measured: slot.measured };
                run.machine.allow_hidden_retry(now, delay_us, spend, &mut out)
            })
        };
        self.sdk_calls[id].call = call;
        self.sdk_calls[id].last = Some(result);
        let charged = config.charged_to_root_budget && matches!(decision, SdkDecision::Retry { .. });
        self.sdk_calls[id].held = charged.then_some(spend);
        if let SdkDecision::Retry { delay_us } = decision
            && let Some(at) = slot.first_token_at
            && now.saturating_add(delay_us) >= at
        {
            // The retry would start after the runtime's first-token deadline: the runtime
            // cuts the call then, in the SDK's sleep.
            let at = at.max(now);
            if at <= self.stop_at {
                self.queue.schedule(at, Event::SdkTimeout { call: id, generation });
            }
            return;
        }
        match decision {
            // At once: the same checks as after a sleep (the run may have ended meanwhile).
            SdkDecision::Retry { delay_us: 0 } => self.on_sdk_wake(now, id, generation),
            SdkDecision::Retry { delay_us } => {
                if now.saturating_add(delay_us) <= self.stop_at {
                    self.queue.schedule(now + delay_us, Event::SdkWake { call: id, generation });
                }
            }
            SdkDecision::Answer(_) => {
                self.end_sdk_call(id);
                if let (Some(bad), AttemptResult::Ok, Purpose::Call) = (bad, result, slot.purpose) {
                    return self.deliver_bad_result(now, slot.run, slot.run_gen, slot.step, slot.serial, bad);
                }
                self.deliver_step_result(now, slot.run, slot.run_gen, slot.purpose, slot.step, slot.serial, result);
            }
        }
    }

    /// The sleep is over: the next hidden attempt, unless the run stopped waiting.
    pub(super) fn on_sdk_wake(&mut self, now: Micros, id: u32, generation: u32) {
        let slot = self.sdk_calls[id];
        if !slot.live || slot.generation != generation || slot.child.is_some() {
            return;
        }
        let run = &self.runs[slot.run];
        // A run that ended (its slot may be reused) makes no more attempts.
        if run.generation != slot.run_gen || run.machine.ended {
            self.release_held_token(id);
            self.give_back_send_token(now, id);
            self.end_sdk_call(id);
            return;
        }
        // A guard that judges each request refuses the next (a LiteLLM router finds the
        // deployment cooled when it picks again): the call answers with the last failure.
        if let (Some((route, _)), Some(last)) = (slot.route, slot.last)
            && !self.pipeline.sdk_may_send(now, route)
        {
            self.release_held_token(id);
            self.give_back_send_token(now, id);
            self.end_sdk_call(id);
            self.deliver_step_result(now, slot.run, slot.run_gen, slot.purpose, slot.step, slot.serial, last);
            return;
        }
        self.sdk_send(now, id);
    }

    /// The runtime's timeout for the whole SDK call: the hidden attempt out is abandoned.
    pub(super) fn on_sdk_timeout(&mut self, now: Micros, id: u32, generation: u32) {
        let slot = self.sdk_calls[id];
        if !slot.live || slot.generation != generation {
            return;
        }
        if slot.child.is_none() && slot.first_token_at.is_some_and(|at| at <= now) {
            // The runtime's first-token timeout, in the SDK's sleep.
            let timed_out = Observation::Tokens(crate::metrics::tokens::TokenObservation::FirstTokenTimedOut);
            self.observe(now, slot.measured, timed_out);
        }
        self.stop_sdk_call(now, id, true);
        let result = AttemptResult::TimedOut;
        self.deliver_step_result(now, slot.run, slot.run_gen, slot.purpose, slot.step, slot.serial, result);
    }

    /// The run machine cancels the runtime attempt (a hedge won, the run ended).
    pub(super) fn cancel_sdk_call(&mut self, now: Micros, handle: u64) {
        let (id, generation) = (((handle & !SDK_HANDLE) >> 32) as u32, handle as u32);
        let slot = self.sdk_calls[id];
        if slot.live && slot.generation == generation {
            self.stop_sdk_call(now, id, false);
        }
    }

    /// Abandons the hidden attempt out, if any, and frees the call. `timed_out`: the
    /// runtime's timeout cut that attempt, counted at its dependency as a caller's timeout.
    fn stop_sdk_call(&mut self, now: Micros, id: u32, timed_out: bool) {
        if let Some((child, child_gen)) = self.sdk_calls[id].child
            && self.jobs[child].generation == child_gen
        {
            if timed_out {
                let job = &self.jobs[child];
                self.observe(now, job.measured, Observation::TimedOut { dependency: job.station });
                if T::ON {
                    self.trace_sdk_timed_out(now, child);
                }
            }
            self.abandon(now, child);
        }
        self.release_held_token(id);
        self.give_back_send_token(now, id);
        self.end_sdk_call(id);
    }

    /// A call that waited for the rate limiter's token and will not send gives it back.
    fn give_back_send_token(&mut self, now: Micros, id: u32) {
        let slot = &mut self.sdk_calls[id];
        if !std::mem::take(&mut slot.paced) {
            return;
        }
        if let Some(limiter) = self.sdk_rate_limiters[slot.station as usize].as_mut() {
            limiter.give_back(us_to_seconds(now));
        }
    }

    /// A charged retry granted but never sent gives its root token back (scenario.md 8.3: a
    /// token pays only for an attempt that is sent).
    fn release_held_token(&mut self, id: u32) {
        let slot = &mut self.sdk_calls[id];
        let Some(spend) = slot.held.take() else { return };
        let (r, run_gen) = (slot.run, slot.run_gen);
        let run = &mut self.runs[r];
        if run.generation == run_gen {
            run.machine.return_hidden_retry(spend);
        }
    }

    /// What a hidden retry costs the run's cost budget when charged: the runtime attempt's
    /// cost again (the same request: its cost units, tokens and their price).
    fn hidden_spend(&self, slot: &SdkSlot) -> Spend {
        let station = slot.station as usize;
        let units = Spend::units(self.costs[station]);
        match (&self.model.world.dependencies[station].tokens, slot.tokens) {
            (Some(shape), Some(t)) => {
                Spend { model_tokens: f64::from(t.input) + f64::from(t.output), money: shape.price(t), ..units }
            }
            (Some(_) | None, _) => units,
        }
    }

    fn end_sdk_call(&mut self, id: u32) {
        let slot = &mut self.sdk_calls[id];
        slot.live = false;
        slot.child = None;
        slot.generation = slot.generation.wrapping_add(1);
        self.sdk_calls.release(id);
    }

    #[cold]
    fn trace_sdk_timed_out(&mut self, now: Micros, child: u32) {
        let run = self.jobs[child].run;
        self.tracer.record(run, now, crate::runtime::TraceEvent::CallerTimedOut { job: child });
    }

    /// A hidden attempt's first token came before the runtime's first-token deadline: the
    /// runtime's streaming watch is satisfied for the rest of the call.
    pub(super) fn sdk_first_token_came(&mut self, id: u32, generation: u32) {
        let slot = &mut self.sdk_calls[id];
        if slot.live && slot.generation == generation {
            slot.first_token_at = None;
        }
    }

    /// The serial of SDK call `id` and the retry its hidden attempt out is (for the trace).
    pub(super) fn sdk_position(&self, id: u32) -> (u8, u32, u32) {
        let slot = &self.sdk_calls[id];
        (slot.step, slot.serial, slot.call.retries_taken)
    }
}

fn us_to_seconds(us: Micros) -> f64 {
    us as f64 / 1e6
}

/// A wait in seconds as whole microseconds, rounded up: the token is there when it ends.
fn seconds_to_us(s: f64) -> Micros {
    if s <= 0.0 { 0 } else { (s * 1e6).ceil().min(Micros::MAX as f64) as Micros }
}

/// The effects of the one input an SDK client gives a run machine: it only observes.
/// What the guards say when they hear a hidden attempt: observations folded in at once, wake-ups
/// kept for the queue.
struct GuardEffects<'a> {
    recorder: &'a mut crate::metrics::Recorder,
    now: Micros,
    wakes: &'a mut Vec<Micros>,
}

impl crate::runtime::Effects for GuardEffects<'_> {
    fn command(&mut self, c: crate::runtime::Command) {
        match c {
            crate::runtime::Command::WakeGuards { at } => self.wakes.push(at),
            other => debug_assert!(false, "a guard hearing a hidden attempt gives no other command: {other:?}"),
        }
    }

    fn observe(&mut self, o: Observation) {
        self.recorder.observe(self.now, true, o);
    }

    fn observe_shared(&mut self, o: Observation) {
        self.recorder.observe(self.now, true, o);
    }

    fn trace(&mut self, _event: crate::runtime::TraceEvent) {}
}

struct ObserveOnly<'a> {
    recorder: &'a mut crate::metrics::Recorder,
    now: Micros,
    measured: bool,
}

impl crate::runtime::Effects for ObserveOnly<'_> {
    fn command(&mut self, c: crate::runtime::Command) {
        debug_assert!(false, "an SDK client's question to the run gives no command: {c:?}");
    }

    fn observe(&mut self, o: Observation) {
        self.recorder.observe(self.now, self.measured, o);
    }

    fn observe_shared(&mut self, o: Observation) {
        self.recorder.observe(self.now, true, o);
    }

    fn trace(&mut self, _event: crate::runtime::TraceEvent) {}
}
