//! Caches in front of dependencies (docs/essay.md section 23): a runtime attempt at a
//! dependency whose cache the policy uses ([`crate::runtime::cache_use`]) looks there first
//! ([`crate::world::cache`]). A fresh or negative entry answers after the lookup's time; any
//! other lookup needs the dependency: it joins the call already out for its key (single-flight,
//! Go's `singleflight.Group.Do`: every waiter gets that call's answer, its failure too) or
//! sends the one call, a fill, whose answer is stored and handed to every waiter. When the
//! fill fails, a waiter whose lookup found a stale entry, under a policy that serves stale,
//! for a task class the contract does not forbid, is answered by that entry instead (RFC
//! 5861 stale-if-error) and its run rests on stale data.
//!
//! A fill is an attempt at the station with the key, timeout and draws of the attempt that
//! sent it, owned by that attempt's run; it goes on for the other waiters if that attempt is
//! cancelled, and is abandoned when no one waits for it. A lookup during a cache_outage fault
//! fails (by the fault's toxicity) and the attempt goes to the dependency as if there were no
//! cache: no fill, no merge, no stale entry. A cold_cache fault empties the cache at its start.

use super::cache_slot::{CacheCall, CacheState, FillSlot, NO_FILL};
use super::event::Event;
use super::simulation::{Caller, Simulation};
use super::stations::NewAttempt;
use crate::metrics::Observation;
use crate::metrics::cache::CacheObservation;
use crate::runtime::{AttemptResult, Purpose, TraceEvent, Tracer};
use crate::sim::{Micros, StreamKey};
use crate::vocab::FailureKind;
use crate::world::FaultEffect;
use crate::world::bad_result::BadResult;
use crate::world::cache::LookupState;

/// Marks a runtime attempt's handle as a cache call's (task clients use bit 63, SDK calls 62).
pub(super) const CACHE_HANDLE: u64 = 1 << 61;
/// Stream tags: below a run's step key, the key its lookups ask for and an outage's draw; below
/// the run's key, its user.
const TAG_CACHE_KEY: u64 = 0xCAC4_0001;
const TAG_CACHE_USER: u64 = 0xCAC4_0002;
const TAG_CACHE_OUTAGE: u64 = 0xCAC4_0003;

impl<T: Tracer> Simulation<'_, T> {
    /// Attempt `serial` of step `s` of run `r` looks in `station`'s cache. Returns false when
    /// the cache is out (a cache_outage fault): the caller sends the attempt as if there were
    /// no cache.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn send_through_cache(
        &mut self,
        now: Micros,
        r: u32,
        s: u8,
        serial: u32,
        station: usize,
        timeout_us: Option<Micros>,
    ) -> bool {
        let model = self.model;
        let Some(cache) = &model.world.dependencies[station].cache else { return false };
        let Some(using) = self.policy.caches[station] else { return false };
        let slot = &self.runs[r];
        let (run_gen, measured) = (slot.generation, slot.measured);
        let w = slot.machine.workflow as usize;
        let step = &model.workflows[w].steps[s as usize];
        let step_key = slot.key.with_part(step.stream_part);
        if self.cache_out(now, station, step_key.with(TAG_CACHE_OUTAGE).with(u64::from(serial))) {
            self.observe(now, measured, Observation::Cache(CacheObservation::Lookup(LookupState::Unavailable)));
            return false;
        }
        // A run is one user (drawn from the run's key, the same at every step and cache); each
        // step asks for a key of its own.
        let entry =
            cache.entry(w, step_key.with(TAG_CACHE_KEY).stream().unit(), slot.key.with(TAG_CACHE_USER).stream().unit());
        let cold_start = self.last_cold_start(now, station);
        let Some(state) = self.caches.as_deref_mut() else { return false };
        let Some(store) = state.stores[station].as_mut() else { return false };
        if let Some(at) = cold_start {
            store.clear(at);
        }
        let found = store.lookup(cache, now, entry);
        let stale_ok = found == LookupState::Stale
            && using.stale_if_error
            && !step.task_class.as_ref().is_some_and(|c| cache.forbidden_for.contains(c));
        // A hedge finds the fill its own step's attempt is waiting for: joining it could never
        // win the race the hedge is for, so it sends a call of its own (not the key's fill:
        // other lookups keep joining the first).
        let own_step_waits = |fill: u32| {
            state.fills[fill].waiters.iter().any(|&waiter| {
                let c = &state.calls[waiter];
                c.live && c.run == r && c.run_gen == run_gen && c.step == s
            })
        };
        let merge_into = if using.single_flight { store.fill(entry) } else { None };
        let bypass = merge_into.is_some_and(own_step_waits);
        let merge_into = merge_into.filter(|_| !bypass);
        let call = CacheCall {
            generation: 0,
            live: true,
            run: r,
            run_gen,
            step: s,
            serial,
            station: station as u16,
            entry,
            measured,
            fill: NO_FILL,
            stale_ok,
            bad: if found.is_hit() { store.bad(entry) } else { None },
        };
        let id = state.calls.alloc(CacheCall::vacant);
        let generation = state.calls[id].generation;
        state.calls[id] = CacheCall { generation, ..call };
        self.observe(now, measured, Observation::Cache(CacheObservation::Lookup(found)));
        let handle = CACHE_HANDLE | (u64::from(id) << 32) | u64::from(generation);
        if found.is_hit() {
            // A hit is the attempt the runtime timed: it answers within the attempt's timeout,
            // which under deadline propagation is already clipped to the run's time left, or
            // ends TIMEOUT then (a lookup slower than the time left must not succeed past the
            // deadline).
            let event = match timeout_us {
                Some(t) if t < cache.lookup_us => (t, Event::CacheTimeout { call: id, generation }),
                _ => (cache.lookup_us, Event::CacheAnswer { call: id, generation }),
            };
            self.queue.schedule(now.saturating_add(event.0), event.1);
        } else if let Some(fill) = merge_into {
            self.observe(now, measured, Observation::Cache(CacheObservation::Merged));
            let state = self.caches.as_deref_mut().expect("checked above");
            state.calls[id].fill = fill;
            state.fills[fill].waiters.push(id);
            if let Some(t) = timeout_us
                && now.saturating_add(t) <= self.stop_at
            {
                self.queue.schedule(now + t, Event::CacheTimeout { call: id, generation });
            }
        } else {
            self.observe(now, measured, Observation::Cache(CacheObservation::Filled));
            self.charge_cached_call(r, s, station);
            self.start_fill(now, r, s, serial, station, entry, id, timeout_us, using.single_flight && !bypass);
        }
        self.runs[r].machine.attach(s, serial, handle);
        true
    }

    /// Attempt of step `s` of run `r` goes to the dependency (a miss, or the cache is out): it
    /// spends its cost now (docs/scenario.md 8.3); a hit, or a lookup that joins the call out
    /// for its key, spends nothing.
    pub(super) fn charge_cached_call(&mut self, r: u32, s: u8, station: usize) {
        let model = self.model;
        let machine = &mut self.runs[r].machine;
        let w = machine.workflow as usize;
        let step = (&model.workflows[w].steps[s as usize], &self.policy.steps[w][s as usize]);
        let shape = model.world.dependencies[station].tokens.as_ref();
        let spend = machine.spend_at(self.costs[station], shape, step, s);
        machine.budget.charge(spend);
    }

    /// Sends the one call for `entry`, with the key and timeout attempt `serial` would have had.
    #[allow(clippy::too_many_arguments)]
    fn start_fill(
        &mut self,
        now: Micros,
        r: u32,
        s: u8,
        serial: u32,
        station: usize,
        entry: u32,
        call: u32,
        timeout_us: Option<Micros>,
        single_flight: bool,
    ) {
        let state = self.caches.as_deref_mut().expect("a fill belongs to a cache");
        let fill = state.fills.alloc(FillSlot::vacant);
        let f = &mut state.fills[fill];
        f.station = station as u16;
        f.entry = entry;
        f.leader_serial = serial;
        f.waiters.clear();
        f.waiters.push(call);
        let generation = f.generation;
        state.calls[call].fill = fill;
        // Without single-flight no lookup joins it: the key's calls stay apart.
        if single_flight && let Some(store) = state.stores[station].as_mut() {
            store.begin_fill(entry, fill);
        }
        let slot = &self.runs[r];
        let workflow = &self.model.workflows[slot.machine.workflow as usize];
        let attempt = NewAttempt {
            station,
            purpose: Purpose::Call,
            priority: workflow.priority,
            caller: Caller::Cache { fill, generation, step: s },
            run: r,
            run_gen: slot.generation,
            measured: slot.measured,
            key: slot.key.with_part(workflow.steps[s as usize].stream_part).with(u64::from(serial)),
            timeout_us,
            owned: true,
            stuck: false,
            counted: true,
            tokens: None,
            first_token_timeout_us: None,
        };
        // A station answers through an event, never within `submit`.
        let job = self.submit(now, attempt);
        if let Some(state) = self.caches.as_deref_mut() {
            state.fills[fill].job = Some(job);
        }
    }

    /// A cache_outage fault at `station` fails this lookup (its own draw against the toxicity).
    fn cache_out(&self, now: Micros, station: usize, key: StreamKey) -> bool {
        let world = &self.model.world;
        world.dependencies[station].faults.iter().any(|&f| {
            let fault = &world.faults[f];
            matches!(fault.effect, FaultEffect::CacheOutage)
                && fault.active_at(now)
                && key.with(f as u64).stream().unit() < fault.toxicity
        })
    }

    /// The latest start of a cold_cache fault at `station` at or before `now`.
    fn last_cold_start(&self, now: Micros, station: usize) -> Option<Micros> {
        let world = &self.model.world;
        world.dependencies[station]
            .faults
            .iter()
            .map(|&f| &world.faults[f])
            .filter(|f| matches!(f.effect, FaultEffect::ColdCache) && f.start_us <= now)
            .map(|f| f.start_us)
            .max()
    }

    /// A hit's answer after the lookup's time.
    pub(super) fn on_cache_answer(&mut self, now: Micros, id: u32, generation: u32) {
        let Some(call) = self.live_call(id, generation) else { return };
        self.end_cache_call(id);
        self.answer_ok(now, call, call.bad);
    }

    /// `call` is answered as a success: a good one, or the bad answer the entry holds.
    fn answer_ok(&mut self, now: Micros, call: CacheCall, bad: Option<BadResult>) {
        match bad {
            Some(bad) => self.deliver_bad_result(now, call.run, call.run_gen, call.step, call.serial, bad),
            None => {
                let ok = AttemptResult::Ok;
                self.deliver_step_result(now, call.run, call.run_gen, Purpose::Call, call.step, call.serial, ok);
            }
        }
    }

    /// A merged waiter's own timeout: it stops waiting (a stale entry may still answer it).
    pub(super) fn on_cache_timeout(&mut self, now: Micros, id: u32, generation: u32) {
        let Some(call) = self.live_call(id, generation) else { return };
        self.leave_fill(now, id);
        self.answer_failed(now, id, call, AttemptResult::TimedOut);
    }

    /// The run machine cancels the attempt (a hedge won, the run ended, the step gave up).
    pub(super) fn cancel_cache_call(&mut self, now: Micros, handle: u64) {
        let (id, generation) = (((handle & !CACHE_HANDLE) >> 32) as u32, handle as u32);
        if self.live_call(id, generation).is_some() {
            self.leave_fill(now, id);
            self.end_cache_call(id);
        }
    }

    /// The fill answered: its entry is stored (found, or a negative entry), or it failed; every
    /// waiter gets the answer, or its stale entry.
    pub(super) fn on_cache_fill_result(
        &mut self,
        now: Micros,
        fill: u32,
        generation: u32,
        result: AttemptResult,
        bad: Option<BadResult>,
    ) {
        // An answer that looked like success and was not is stored as it came, and every
        // lookup it answers gets it (a cache does not know its answers are bad).
        let bad = bad.filter(|_| result == AttemptResult::Ok);
        let Some(state) = self.caches.as_deref_mut() else { return };
        if state.fills[fill].generation != generation {
            return;
        }
        let (station, entry) = (state.fills[fill].station as usize, state.fills[fill].entry);
        let model = self.model;
        let cache = model.world.dependencies[station].cache.as_ref().expect("a fill belongs to a cache");
        if let Some(store) = state.stores[station].as_mut() {
            if store.fill(entry) == Some(fill) {
                store.end_fill(entry);
            }
            if result == AttemptResult::Ok {
                store.store(now, entry, cache.absent(entry), bad);
            }
        }
        let mut waiters = std::mem::take(&mut state.scratch);
        waiters.clear();
        // Every waiter leaves the fill before any is answered: an answer may cancel another
        // waiter (a hedge of the same step) or free its slot for a new call, which must not
        // leave (and free) this fill's slot a second time, nor be taken for a waiter.
        for &id in &state.fills[fill].waiters {
            state.calls[id].fill = NO_FILL;
            waiters.push((id, state.calls[id].generation));
        }
        release_fill(state, fill);
        for &(id, generation) in &waiters {
            let Some(call) = self.live_call(id, generation) else { continue };
            match result {
                AttemptResult::Ok => {
                    self.end_cache_call(id);
                    self.answer_ok(now, call, bad);
                }
                AttemptResult::NotFound => {
                    self.end_cache_call(id);
                    self.deliver_step_result(
                        now,
                        call.run,
                        call.run_gen,
                        Purpose::Call,
                        call.step,
                        call.serial,
                        result,
                    );
                }
                AttemptResult::Failed { .. } | AttemptResult::TimedOut => self.answer_failed(now, id, call, result),
            }
        }
        if let Some(state) = self.caches.as_deref_mut() {
            state.scratch = waiters;
        }
    }

    /// The dependency failed `call` (or it stopped waiting): its stale entry answers if it may.
    fn answer_failed(&mut self, now: Micros, id: u32, call: CacheCall, result: AttemptResult) {
        self.end_cache_call(id);
        let station = call.station as usize;
        let model = self.model;
        let cache = model.world.dependencies[station].cache.as_ref().expect("a call belongs to a cache");
        // A restart since the last lookup empties the cache before a stale entry is judged:
        // `clear` is otherwise applied only when the next lookup comes.
        let cold_start = self.last_cold_start(now, station);
        let state = self.caches.as_deref_mut().expect("a call belongs to a cache");
        if let (Some(at), Some(store)) = (cold_start, state.stores[station].as_mut()) {
            store.clear(at);
        }
        let store = state.stores[station].as_ref();
        let usable =
            call.stale_ok && serves_stale_on(result) && store.is_some_and(|s| s.stale_usable(cache, now, call.entry));
        let bad = store.and_then(|s| s.bad(call.entry));
        let run = &mut self.runs[call.run];
        if !usable || run.generation != call.run_gen || run.machine.ended {
            self.deliver_step_result(now, call.run, call.run_gen, Purpose::Call, call.step, call.serial, result);
            return;
        }
        let marked = cache.provenance_required;
        run.machine.rests_on_stale_entry(marked);
        let r = call.run as usize;
        if state.stale_runs.len() <= r {
            state.stale_runs.resize(r + 1, (0, false, false));
        }
        let mark = &mut state.stale_runs[r];
        if mark.0 != call.run_gen || !mark.1 {
            *mark = (call.run_gen, true, false);
        }
        mark.2 |= !marked;
        self.observe(now, call.measured, Observation::Cache(CacheObservation::StaleServed));
        // The trace shows why the run is degraded (explore's evidence check reads it).
        let event = TraceEvent::CacheStaleAnswer { step: call.step, serial: call.serial, marked };
        self.tracer.record(call.run, now, event);
        self.answer_ok(now, call, bad);
    }

    /// Run `r` ended: counted, with whether it rests on stale data.
    #[cold]
    #[inline(never)]
    pub(super) fn cache_run_ended(&mut self, now: Micros, r: u32) {
        let slot = &self.runs[r];
        let (generation, measured) = (slot.generation, slot.measured);
        let Some(state) = self.caches.as_deref() else { return };
        let (stale, unmarked) = match state.stale_runs.get(r as usize) {
            Some(&(g, stale, unmarked)) if g == generation => (stale, unmarked),
            Some(_) | None => (false, false),
        };
        self.observe(now, measured, Observation::Cache(CacheObservation::RunEnded { stale, marked: !unmarked }));
    }

    /// Call `id` no longer waits for its fill; a fill no one waits for is abandoned.
    fn leave_fill(&mut self, now: Micros, id: u32) {
        let Some(state) = self.caches.as_deref_mut() else { return };
        let fill = state.calls[id].fill;
        if fill == NO_FILL {
            return;
        }
        state.calls[id].fill = NO_FILL;
        let f = &mut state.fills[fill];
        f.waiters.retain(|&w| w != id);
        if !f.waiters.is_empty() {
            return;
        }
        let (station, entry, job) = (f.station as usize, f.entry, f.job);
        if let Some(store) = state.stores[station].as_mut()
            && store.fill(entry) == Some(fill)
        {
            store.end_fill(entry);
        }
        release_fill(state, fill);
        if let Some((job, job_gen)) = job
            && self.jobs[job].generation == job_gen
        {
            self.abandon(now, job);
        }
    }

    fn live_call(&self, id: u32, generation: u32) -> Option<CacheCall> {
        let state = self.caches.as_deref()?;
        let call = state.calls[id];
        (call.live && call.generation == generation).then_some(call)
    }

    fn end_cache_call(&mut self, id: u32) {
        if let Some(state) = self.caches.as_deref_mut() {
            let call = &mut state.calls[id];
            call.live = false;
            call.fill = NO_FILL;
            call.generation = call.generation.wrapping_add(1);
            state.calls.release(id);
        }
    }

    /// The step and serial of the attempt that sent fill `fill` (for the trace).
    pub(super) fn fill_position(&self, fill: u32, step: u8) -> (u8, u32) {
        let serial = self.caches.as_deref().map_or(0, |s| s.fills[fill].leader_serial);
        (step, serial)
    }
}

/// The failures a stale entry may answer: RFC 5861's errors, "any situation that would result
/// in a 500, 502, 503, or 504 HTTP response status code" (a provider's failure, a transport
/// or gateway failure, an overloaded server, a deadline run out at the dependency) and the
/// transport's own equivalents (a timeout, a connection refused: `down` fails as a transport
/// error). A refusal of the request itself (401/403, 400, 429, a malformed result) is the
/// dependency's answer about this caller, not an outage: serving stale there would let a
/// revoked user keep reading.
fn serves_stale_on(result: AttemptResult) -> bool {
    match result {
        AttemptResult::TimedOut => true,
        AttemptResult::Failed { kind, .. } => match kind {
            FailureKind::TransientTransport
            | FailureKind::Overloaded
            | FailureKind::PermanentProvider
            | FailureKind::DeadlineExhausted => true,
            FailureKind::InvalidInput
            | FailureKind::Unauthorized
            | FailureKind::RateLimited
            | FailureKind::ResultInvalid
            | FailureKind::EffectUnknown
            | FailureKind::Canceled => false,
        },
        AttemptResult::Ok | AttemptResult::NotFound => false,
    }
}

fn release_fill(state: &mut CacheState, fill: u32) {
    let f = &mut state.fills[fill];
    f.generation = f.generation.wrapping_add(1);
    f.job = None;
    f.waiters.clear();
    state.fills.release(fill);
}
