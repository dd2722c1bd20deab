//! The dynamic state of one dependency station during a simulation: busy servers, the FIFO
//! waiting room (bounded), the provider's token bucket, and the conditions in force at a moment
//! (base parameters plus active faults).

use super::bad_result::BadResult;
use super::bucket::TokenBucket;
use super::dist::Distribution;
use super::failure::ErrorTable;
use super::model::{DependencyModel, FaultEffect, FaultModel};
use super::queue_policy::QueueOrder;
use super::tokens::{CallTokens, QuotaRefusal, TokenQuota};
use crate::sim::{KeyedStream, Micros, StreamKey};
use crate::vocab::Priority;
use std::collections::VecDeque;

/// What happens to an attempt that arrives at a station.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    StartService,
    Queued,
    /// The waiting room is full: OVERLOADED at once.
    QueueFull,
    /// No rate-limit token: RATE_LIMITED at once, with the provider's Retry-After.
    RateLimited {
        retry_after_us: Micros,
    },
    /// A `down` fault: the connection is refused at once (a 503 with its Retry-After, if any).
    Down {
        retry_after_us: Option<Micros>,
    },
    /// A token-shaped call needs more tokens than a quota bucket ever holds: invalid at once.
    LargerThanQuota,
}

pub struct Station {
    pub busy: u32,
    /// Servers in force now (a capacity fault can lower it).
    pub servers: u32,
    /// (attempt id, generation): the generation tells a cancelled entry from a reused slot.
    /// One queue per priority under priority order, else everything in the first.
    queues: [VecDeque<(u32, u32)>; Priority::COUNT],
    order: QueueOrder,
    /// Live entries in the queues; cancelled entries are skipped lazily.
    pub queued: u32,
    /// When the waiting room was last empty (CoDel's signal).
    pub last_empty_us: Micros,
    bucket: Option<TokenBucket>,
    /// A token-shaped model's quota buckets, when it has limits.
    quota: Option<TokenQuota>,
}

/// The parameters of one attempt, fixed at its arrival from the draws and the faults in force.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttemptConditions {
    pub service_us: Micros,
    pub error: Option<crate::vocab::FailureKind>,
    /// The reply never reaches the caller (a hang or a lost response).
    pub no_reply: bool,
    /// At a token-shaped model: when the first token comes, after service starts (0 elsewhere).
    pub first_token_us: Micros,
    /// The answer, should it come back as a success, is not one (world/bad_result.rs).
    pub bad: Option<BadResult>,
}

/// What each of the first positions of an attempt's keyed stream decides, in stream order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Draw {
    /// Against the dependency's error mix (one draw picks at most one kind).
    Error,
    /// Against the dependency's own hang_probability.
    Hang,
    /// Against a `timeout` fault's toxicity.
    FaultHang,
    /// Against a `lost_response` fault's toxicity.
    Lost,
    /// Against a `latency` fault's toxicity.
    Latency,
    /// Against an `errors` fault's toxicity.
    FaultErrors,
    /// A latency fault's jitter fraction.
    Jitter,
    /// Against a `down` fault's toxicity.
    Down,
}

impl Draw {
    pub const ALL: [Draw; 8] = [
        Draw::Error,
        Draw::Hang,
        Draw::FaultHang,
        Draw::Lost,
        Draw::Latency,
        Draw::FaultErrors,
        Draw::Jitter,
        Draw::Down,
    ];
}

/// The uniform draws that decide an attempt's fate, one [`Draw`] per position of the attempt's
/// keyed stream, so two policies that send the same attempt see the same fate (common random
/// numbers). A draw is made only where it can decide something (a hang draw only at a
/// dependency that can hang); as the stream is counter-based, a draw made late or not at all
/// leaves every other draw as it was.
#[derive(Debug, Clone)]
pub struct AttemptDraws {
    stream: KeyedStream,
}

impl AttemptDraws {
    pub fn new(key: StreamKey) -> Self {
        AttemptDraws { stream: key.stream() }
    }

    #[inline]
    pub fn get(&self, draw: Draw) -> f64 {
        self.stream.unit_at(draw as u64)
    }

    /// All of them, in stream order (for the common-random-numbers trace).
    pub fn all(&self) -> [f64; Draw::ALL.len()] {
        Draw::ALL.map(|d| self.get(d))
    }

    /// The draw at `position` of the attempt's stream, for the draws that sit far past the fixed
    /// ones and the service times (world/bad_result.rs).
    #[inline]
    pub fn at(&self, position: u64) -> f64 {
        self.stream.unit_at(position)
    }

    /// The attempt's stream after the fixed draws: service times are drawn from here.
    #[inline]
    pub fn rest(&self) -> KeyedStream {
        self.stream.skipped(Draw::ALL.len() as u64)
    }
}

impl Station {
    pub fn new(model: &DependencyModel) -> Self {
        Station {
            busy: 0,
            servers: model.servers,
            queues: std::array::from_fn(|_| VecDeque::with_capacity(16)),
            order: model.queue.order,
            queued: 0,
            last_empty_us: 0,
            bucket: model.rate_limit.as_ref().map(|r| TokenBucket::new(r.burst)),
            quota: model.tokens.as_ref().filter(|t| t.quota.any()).map(|t| TokenQuota::new(&t.quota)),
        }
    }

    /// A served token-shaped call gives back the output it was charged for and did not produce
    /// (`produced`: its output, or what streamed before a `stream_cut`).
    pub fn settle_tokens(
        &mut self,
        model: &DependencyModel,
        faults: &[FaultModel],
        now: Micros,
        tokens: CallTokens,
        produced: u32,
    ) {
        if let (Some(quota), Some(shape)) = (&mut self.quota, &model.tokens) {
            let share = quota_share(model, faults, now);
            quota.settle_scaled(now, &shape.quota, share, shape.output_estimate(tokens), produced);
        }
    }

    /// Decides admission for an attempt arriving now. Does not enqueue; see [`Station::enqueue`].
    /// `draws.get(Draw::Down)` decides whether an active `down` fault (with its toxicity) refuses this attempt.
    pub fn admit(
        &mut self,
        model: &DependencyModel,
        faults: &[FaultModel],
        now: Micros,
        draws: &AttemptDraws,
        tokens: Option<CallTokens>,
    ) -> Admission {
        let mut limit = model.rate_limit.as_ref().map(|r| (r.per_s, r.burst, r.retry_after_us));
        for &f in &model.faults {
            let fault = &faults[f];
            if !fault.active_at(now) {
                continue;
            }
            match fault.effect {
                FaultEffect::Down { retry_after_us } if draws.get(Draw::Down) < fault.toxicity => {
                    return Admission::Down { retry_after_us };
                }
                FaultEffect::RateLimit { per_s, burst } => {
                    let retry_after_us = limit.map(|l| l.2).unwrap_or(1_000_000);
                    limit = Some((per_s, burst, retry_after_us));
                }
                FaultEffect::Down { .. }
                | FaultEffect::Latency { .. }
                | FaultEffect::Hang
                | FaultEffect::Errors(_)
                | FaultEffect::Capacity { .. }
                | FaultEffect::LostResponse
                | FaultEffect::StuckTask
                | FaultEffect::InputRequired
                | FaultEffect::IgnoredCancel
                | FaultEffect::LateCancel { .. }
                | FaultEffect::LateResult { .. }
                | FaultEffect::LostHandle
                | FaultEffect::BadResult(_)
                | FaultEffect::SlowStream { .. }
                | FaultEffect::QuotaCut { .. }
                | FaultEffect::DelegationLoop { .. }
                | FaultEffect::CacheOutage
                | FaultEffect::ColdCache => {}
            }
        }
        if let Some((per_s, burst, retry_after_us)) = limit {
            let bucket = self.bucket.get_or_insert_with(|| TokenBucket::new(burst));
            bucket.refill(now, per_s, burst);
            if !bucket.try_take(1.0) {
                return Admission::RateLimited { retry_after_us };
            }
        }
        if let (Some(quota), Some(shape), Some(tokens)) = (&mut self.quota, &model.tokens, tokens) {
            let share = quota_share(model, faults, now);
            match quota.admit_scaled(now, &shape.quota, share, tokens, shape.output_estimate(tokens)) {
                Ok(()) => {}
                Err(QuotaRefusal::RetryAfter(retry_after_us)) => return Admission::RateLimited { retry_after_us },
                Err(QuotaRefusal::TooLarge) => return Admission::LargerThanQuota,
            }
        }
        if self.busy < self.servers {
            Admission::StartService
        } else if self.queued < model.queue_capacity {
            Admission::Queued
        } else {
            Admission::QueueFull
        }
    }

    pub fn enqueue(&mut self, job: u32, generation: u32, priority: Priority, now: Micros) {
        if self.queued == 0 {
            self.last_empty_us = now;
        }
        self.queues[self.lane(priority)].push_back((job, generation));
        self.queued += 1;
    }

    fn lane(&self, priority: Priority) -> usize {
        match self.order {
            QueueOrder::Priority => priority.index(),
            QueueOrder::Fifo | QueueOrder::Lifo => 0,
        }
    }

    /// Pops the next entry in the station's order. The caller skips entries it has cancelled
    /// (and must not call [`Station::forget_queued`] for them again).
    pub fn pop_queued(&mut self) -> Option<(u32, u32)> {
        match self.order {
            QueueOrder::Fifo => self.queues[0].pop_front(),
            QueueOrder::Lifo => self.queues[0].pop_back(),
            QueueOrder::Priority => self.queues.iter_mut().find_map(|q| q.pop_front()),
        }
    }

    /// Pops the newest entry of the least important priority below `newcomer`, the candidate
    /// to make room for it; the caller skips cancelled entries as with `pop_queued`.
    pub fn pop_evictable(&mut self, newcomer: Priority) -> Option<(u32, u32)> {
        let lanes = self.lane(newcomer) + 1..self.queues.len();
        lanes.rev().find_map(|lane| self.queues[lane].pop_back())
    }

    /// Entries in the queues, cancelled ones included.
    pub fn queue_len(&self) -> usize {
        self.queues.iter().map(VecDeque::len).sum()
    }

    /// Keeps only the entries `live` accepts, in order.
    pub fn retain_queued(&mut self, live: impl Fn(u32, u32) -> bool) {
        for q in &mut self.queues {
            q.retain(|&(id, generation)| live(id, generation));
        }
    }

    /// Records that a live queued entry was taken (started), cancelled or dropped.
    pub fn forget_queued(&mut self, now: Micros) {
        debug_assert!(self.queued > 0, "a station's queue length never goes below zero");
        self.queued -= 1;
        if self.queued == 0 {
            self.last_empty_us = now;
        }
    }

    /// Servers in force at `now`: the base count, or the lowest count of any active capacity fault.
    pub fn servers_at(model: &DependencyModel, faults: &[FaultModel], now: Micros) -> u32 {
        let mut servers = model.servers;
        for &f in &model.faults {
            if let FaultEffect::Capacity { servers: s } = faults[f].effect
                && faults[f].active_at(now)
            {
                servers = servers.min(s);
            }
        }
        servers
    }
}

/// What the faults in force do to one attempt, folded in file order.
struct FaultShaping<'m> {
    dist: &'m Distribution,
    factor: f64,
    add_ms: f64,
    /// The dependency's table plus any error faults' rates; None while no error fault applies,
    /// so an attempt reads the dependency's table where it is instead of copying it.
    errors: Option<ErrorTable>,
    hang: bool,
    lost: bool,
    per_token_factor: f64,
}

impl<'m> FaultShaping<'m> {
    /// Folds in fault number `f`, active now. Kept out of line: inlined, the compiler drew the
    /// faults' random numbers and copied the error table ahead of the loop for every attempt,
    /// about 96 instructions each, whether a fault was in force or not.
    #[inline(never)]
    fn apply(&mut self, fault: &'m FaultModel, f: usize, draws: &AttemptDraws, lookup: bool, errors: &ErrorTable) {
        let applies = |u: f64| u < fault.toxicity;
        match &fault.effect {
            FaultEffect::Latency { replace, factor: k, add_ms: a, jitter_ms } if applies(draws.get(Draw::Latency)) => {
                // The replacement describes the work; a status lookup keeps its own time.
                if let Some(d) = replace
                    && !lookup
                {
                    self.dist = d;
                }
                self.factor *= k;
                self.add_ms += a + jitter_ms * draws.get(Draw::Jitter);
            }
            FaultEffect::Hang if applies(draws.get(Draw::FaultHang)) => self.hang = true,
            FaultEffect::LostResponse if applies(draws.get(Draw::Lost)) => self.lost = true,
            FaultEffect::Errors(extra) if applies(draws.get(Draw::FaultErrors)) => {
                self.errors = Some(self.errors.unwrap_or(*errors).plus(extra))
            }
            // Drawn apart from the fixed draws (world/bad_result.rs), so the others stay put.
            FaultEffect::SlowStream { factor } if applies(draws.at(SLOW_STREAM_DRAWS + f as u64)) => {
                self.per_token_factor *= factor
            }
            FaultEffect::SlowStream { .. }
            | FaultEffect::BadResult(_)
            | FaultEffect::QuotaCut { .. }
            | FaultEffect::Latency { .. }
            | FaultEffect::Hang
            | FaultEffect::LostResponse
            | FaultEffect::Errors(_)
            | FaultEffect::Capacity { .. }
            | FaultEffect::Down { .. }
            | FaultEffect::RateLimit { .. }
            | FaultEffect::StuckTask
            | FaultEffect::InputRequired
            | FaultEffect::IgnoredCancel
            | FaultEffect::LateCancel { .. }
            | FaultEffect::LateResult { .. }
            | FaultEffect::LostHandle
            | FaultEffect::DelegationLoop { .. }
            | FaultEffect::CacheOutage
            | FaultEffect::ColdCache => {}
        }
    }
}

/// Fixes an attempt's service time, error and reply from its draws and the faults in force.
/// `sample` draws the base service time from the attempt's stream (after the fixed draws).
pub fn attempt_conditions(
    model: &DependencyModel,
    faults: &[FaultModel],
    now: Micros,
    draws: &AttemptDraws,
    lookup: bool,
    tokens: Option<CallTokens>,
    mut sample: impl FnMut(&Distribution) -> f64,
) -> AttemptConditions {
    let base = if lookup { &model.lookup_service } else { &model.service };
    let mut shaping = FaultShaping {
        dist: base,
        factor: 1.0,
        add_ms: 0.0,
        errors: None,
        // Probabilities are at least 0 and a draw is too: at 0 the draw cannot decide anything.
        hang: model.hang_probability > 0.0 && draws.get(Draw::Hang) < model.hang_probability,
        lost: false,
        per_token_factor: 1.0,
    };
    for &f in &model.faults {
        let fault = &faults[f];
        if fault.active_at(now) {
            shaping.apply(fault, f, draws, lookup, &model.errors);
        }
    }
    let FaultShaping { dist, factor, add_ms, errors, hang, lost, per_token_factor } = shaping;
    let errors = errors.as_ref().unwrap_or(&model.errors);
    // A token-shaped call: the base (or a latency fault's replacement) is the time to first
    // token; the prompt and the output add to it.
    // The faults that look like success touch only an attempt that would otherwise succeed
    // (docs/scenario.md section 7): an error or a missing reply keeps its time and its bill.
    // The error draw sits at a fixed position, so deciding it first moves no other draw.
    let error = if errors.never_fails() { None } else { errors.pick(draws.get(Draw::Error)) };
    let no_reply = hang || lost;
    let bad = if model.has_bad_result_faults && error.is_none() && !no_reply {
        draw_bad_result(model, faults, now, draws)
    } else {
        None
    };
    let (base_ms, first_token_ms) = match (&model.tokens, tokens) {
        (Some(shape), Some(tokens)) if !lookup => {
            let ttft_dist = if std::ptr::eq(dist, base) { &shape.time_to_first_token } else { dist };
            let ttft_ms = sample(ttft_dist);
            let first_ms = shape.first_token_ms(tokens, ttft_ms);
            // A stream cut after its first token ends the call there.
            let streamed = if bad == Some(BadResult::StreamCut) { stream_cut(tokens) } else { tokens };
            let per_token_ms = sample(&shape.time_per_output_token) * per_token_factor;
            (shape.service_ms(streamed, ttft_ms, per_token_ms), first_ms * factor + add_ms)
        }
        _ => (sample(dist), 0.0),
    };
    let service_ms = base_ms * factor + add_ms;
    AttemptConditions {
        service_us: crate::sim::ms_to_us(service_ms),
        error,
        no_reply,
        first_token_us: crate::sim::ms_to_us(first_token_ms),
        bad,
    }
}

/// Where the bad-result draws start in an attempt's stream: far past anything a service time
/// can consume, so they never meet the draws that decide its fate and timing.
const BAD_RESULT_DRAWS: u64 = 1 << 40;

/// The bad result, if any, of an attempt arriving at `now` at `model`: the first active
/// bad-result fault (in file order) whose toxicity catches the attempt. Each fault draws at its
/// own position (its index in the scenario), so one fault's draw never depends on another's.
pub fn draw_bad_result(
    model: &DependencyModel,
    faults: &[FaultModel],
    now: Micros,
    draws: &AttemptDraws,
) -> Option<BadResult> {
    model.faults.iter().find_map(|&f| {
        let fault = &faults[f];
        if let FaultEffect::BadResult(bad) = fault.effect
            && fault.active_at(now)
            && draws.at(BAD_RESULT_DRAWS + f as u64) < fault.toxicity
        {
            return Some(bad);
        }
        None
    })
}

/// Where `slow_stream` draws sit in an attempt's stream (past the bad-result draws).
const SLOW_STREAM_DRAWS: u64 = 1 << 41;

/// What a call cut after its first token produced: one output token, at most.
pub fn stream_cut(tokens: CallTokens) -> CallTokens {
    CallTokens { output: tokens.output.min(1), truncated: false, ..tokens }
}

/// The share of a provider's quota in force at `now`: the lowest `quota_cut` factor active, 1
/// without one.
#[inline]
pub fn quota_share(model: &DependencyModel, faults: &[FaultModel], now: Micros) -> f64 {
    if !model.has_quota_cuts {
        return 1.0;
    }
    lowest_quota_share(model, faults, now)
}

#[cold]
#[inline(never)]
fn lowest_quota_share(model: &DependencyModel, faults: &[FaultModel], now: Micros) -> f64 {
    let mut share: f64 = 1.0;
    for &f in &model.faults {
        if let FaultEffect::QuotaCut { factor } = faults[f].effect
            && faults[f].active_at(now)
        {
            share = share.min(factor);
        }
    }
    share
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_draw_is_its_position_in_the_attempts_stream() {
        let key = StreamKey::root(3).with(9);
        let mut in_turn = key.stream();
        let draws = AttemptDraws::new(key);
        for (i, d) in Draw::ALL.into_iter().enumerate() {
            assert_eq!(d as usize, i, "ALL is in declaration order");
            assert_eq!(draws.get(d).to_bits(), in_turn.unit().to_bits(), "{d:?}");
        }
        assert_eq!(draws.rest().unit().to_bits(), in_turn.unit().to_bits(), "service time after the fixed draws");
    }
}
