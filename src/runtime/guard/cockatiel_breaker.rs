//! cockatiel 4.0.0's circuit breaker policy (npm `cockatiel`, dist/CircuitBreakerPolicy.js,
//! dist/breaker/ConsecutiveBreaker.js, dist/breaker/SamplingBreaker.js) as a pure state machine
//! over virtual time.
//!
//! CLOSED lets every call through and tells its breaker each outcome once the call ends:
//! `ConsecutiveBreaker(threshold)` opens at `threshold` handled failures in a row (a success resets
//! the count); `SamplingBreaker({ threshold, duration, minimumRps })` opens on a failure when the
//! failures are strictly above `threshold` of the calls in its windows, provided the calls are at
//! least `duration` x `minimumRps`. OPEN refuses (BrokenCircuitError) until `halfOpenAfter` has
//! passed since it opened; there is no timer: the next call after that moves the circuit to
//! HALF_OPEN and is a trial. HALF_OPEN lets `halfOpenSampling.calls` trials through (1 by
//! default); with the default threshold 0 a trial's failure opens the circuit again and its
//! success closes it.
//!
//! cockatiel remembers which state a call was let through in. The outcome of a call let through
//! while CLOSED always goes to the breaker as a CLOSED outcome, whatever the state is when it
//! ends, and if the breaker then says "open" a HALF_OPEN circuit opens. A trial's outcome counts
//! only while the half-open spell it was let through in lasts. A failure the policy does not
//! handle (a kind in `ignore`, or a cancellation) tells a CLOSED breaker nothing and counts as a
//! trial's success (`executeHalfOpen` catches it: "Task failed successfully!").

use super::compile::Compile;
use super::compile::Invalid;
use super::contract::{Ask, Ending, Guard, GuardConfig, Parting, Seat, Verdict, report_breaker};
use crate::runtime::command::Effects;
use crate::scenario::{FieldPath, RawTable, ScenarioError, read_table};
use crate::sim::Micros;
use crate::sim::time::US_PER_MS;
use crate::vocab::{BreakerState, FailureKind, Refusal};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Our bound on the sampling breaker's window count (one window per second of `duration`).
pub const MAX_WINDOWS: u64 = 100_000;

/// Which cockatiel breaker decides in CLOSED.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BreakerKind {
    /// `new ConsecutiveBreaker(threshold)`.
    Consecutive { threshold: u32 },
    /// `new SamplingBreaker({ threshold, duration, minimumRps })`; `minimum_rps` None is
    /// cockatiel's default, 5 / threshold requests a second.
    Sampling { threshold: f64, duration_ms: f64, minimum_rps: Option<f64> },
}

/// cockatiel's CircuitBreakerOptions with a constant `halfOpenAfter`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CockatielOptions {
    pub breaker: BreakerKind,
    pub half_open_after_us: Micros,
    /// `halfOpenSampling.calls` (1) and `.threshold` (0).
    pub half_open_calls: u32,
    pub half_open_threshold: f64,
    /// Indexed by `FailureKind::index`: kinds the policy's handler does not handle.
    pub ignored: [bool; FailureKind::COUNT],
}

impl CockatielOptions {
    /// The defaults cockatiel has (it has none for the breaker and halfOpenAfter).
    pub fn new(breaker: BreakerKind, half_open_after_us: Micros) -> Self {
        CockatielOptions {
            breaker,
            half_open_after_us,
            half_open_calls: 1,
            half_open_threshold: 0.0,
            ignored: super::opossum_breaker::default_ignored(),
        }
    }

    /// The ranges cockatiel checks (SamplingBreaker's and createHalfOpenSamplingOptions'
    /// RangeErrors), and ours on sizes.
    pub fn check(&self) -> Result<(), Invalid> {
        match self.breaker {
            BreakerKind::Consecutive { threshold } => {
                if threshold == 0 {
                    return Err(Invalid::new("threshold", "threshold must be at least 1".into()));
                }
            }
            BreakerKind::Sampling { threshold, duration_ms, minimum_rps } => {
                if !(threshold > 0.0 && threshold < 1.0) {
                    return Err(Invalid::new("threshold", format!("threshold must be in (0, 1), got {threshold}")));
                }
                if !(duration_ms.is_finite() && duration_ms >= 5.0 && duration_ms <= MAX_WINDOWS as f64 * 1_000.0) {
                    return Err(Invalid::new(
                        "duration_ms",
                        format!("duration_ms must be in 5 ..= {} ms, got {duration_ms}", MAX_WINDOWS * 1_000),
                    ));
                }
                if minimum_rps.is_some_and(|r| !(r.is_finite() && r >= 0.0)) {
                    return Err(Invalid::new("minimum_rps", "minimum_rps must be a finite number >= 0".into()));
                }
            }
        }
        if self.half_open_calls == 0 {
            return Err(Invalid::new("half_open_calls", "half_open_calls must be at least 1".into()));
        }
        let t = self.half_open_threshold;
        if !(t.is_finite() && (0.0..1.0).contains(&t)) {
            return Err(Invalid::new("half_open_threshold", format!("half_open_threshold must be in [0, 1), got {t}")));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Window {
    /// None: cockatiel's `startedAt: 0`, which any real clock is far past.
    started_at: Option<Micros>,
    failures: u64,
    successes: u64,
}

/// SamplingBreaker: `windows.len()` windows of `window_us`, the current one moved on only by an
/// outcome, one window per outcome however long the gap (cockatiel's `push` rotates once).
#[derive(Debug, Clone)]
struct Sampling {
    threshold: f64,
    windows: Vec<Window>,
    current: usize,
    window_us: Micros,
    /// `duration` x `minimumRpms`: fewer calls than this never open.
    minimum_calls: f64,
    failures: u64,
    successes: u64,
}

impl Sampling {
    fn new(threshold: f64, duration_ms: f64, minimum_rps: Option<f64>) -> Self {
        // At least 5 windows, at most 1 s each.
        let count = (duration_ms / 1_000.0).ceil().max(5.0) as usize;
        let window_ms = (duration_ms / count as f64 + 0.5).floor();
        let duration = window_ms * count as f64;
        let minimum_rpms = match minimum_rps {
            Some(rps) if rps > 0.0 => rps / 1_000.0,
            Some(_) | None => 5.0 / (threshold * 1_000.0),
        };
        Sampling {
            threshold,
            windows: vec![Window::default(); count],
            current: 0,
            window_us: window_ms as Micros * US_PER_MS,
            minimum_calls: duration * minimum_rpms,
            failures: 0,
            successes: 0,
        }
    }

    fn push(&mut self, now: Micros, success: bool) {
        let w = self.windows[self.current];
        if w.started_at.is_none_or(|s| now.saturating_sub(s) >= self.window_us) {
            let next = (self.current + 1) % self.windows.len();
            self.failures -= self.windows[next].failures;
            self.successes -= self.windows[next].successes;
            self.windows[next] = Window { started_at: Some(now), failures: 0, successes: 0 };
            self.current = next;
        }
        let w = &mut self.windows[self.current];
        if success {
            w.successes += 1;
            self.successes += 1;
        } else {
            w.failures += 1;
            self.failures += 1;
        }
        debug_assert_eq!(
            self.windows.iter().fold((0, 0), |(s, f), w| (s + w.successes, f + w.failures)),
            (self.successes, self.failures),
            "the counts are the sums of the windows"
        );
    }

    fn reset(&mut self) {
        self.windows.iter_mut().for_each(|w| *w = Window::default());
        self.failures = 0;
        self.successes = 0;
    }
}

/// The breaker object cockatiel's policy consults (IBreaker).
#[derive(Debug, Clone)]
enum Counter {
    Consecutive { threshold: u32, count: u32 },
    Sampling(Sampling),
}

impl Counter {
    fn new(kind: BreakerKind) -> Self {
        match kind {
            BreakerKind::Consecutive { threshold } => Counter::Consecutive { threshold, count: 0 },
            BreakerKind::Sampling { threshold, duration_ms, minimum_rps } => {
                Counter::Sampling(Sampling::new(threshold, duration_ms, minimum_rps))
            }
        }
    }

    /// `breaker.success(state)`.
    fn success(&mut self, now: Micros, state: BreakerState) {
        match self {
            Counter::Consecutive { count, .. } => *count = 0,
            Counter::Sampling(s) => {
                if state == BreakerState::HalfOpen {
                    s.reset();
                }
                s.push(now, true);
            }
        }
    }

    /// `breaker.failure(state)`: whether the circuit should open.
    fn failure(&mut self, now: Micros, state: BreakerState) -> bool {
        match self {
            Counter::Consecutive { threshold, count } => {
                *count = count.saturating_add(1);
                *count >= *threshold
            }
            Counter::Sampling(s) => {
                s.push(now, false);
                match state {
                    BreakerState::HalfOpen | BreakerState::Open => true,
                    BreakerState::Closed => {
                        let total = (s.successes + s.failures) as f64;
                        total >= s.minimum_calls && s.failures as f64 > s.threshold * total
                    }
                }
            }
        }
    }
}

/// Which state a call was let through in: what cockatiel's `execute` keeps in its closure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ticket {
    Closed,
    /// The half-open spell, by number.
    HalfOpen(u64),
}

/// How a call ended, as cockatiel's policy sorts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict3 {
    Success,
    /// The handler handles it.
    Failure,
    /// The handler does not handle it: thrown past the breaker.
    Unhandled,
}

/// cockatiel's CircuitBreakerPolicy without timers or promises.
#[derive(Debug, Clone)]
pub struct CockatielBreaker {
    options: CockatielOptions,
    counter: Counter,
    state: BreakerState,
    opened_at: Micros,
    spell: u64,
    in_flight: u32,
    successes: u32,
    failures: u32,
}

impl CockatielBreaker {
    pub fn new(options: CockatielOptions) -> Self {
        CockatielBreaker {
            counter: Counter::new(options.breaker),
            options,
            state: BreakerState::Closed,
            opened_at: 0,
            spell: 0,
            in_flight: 0,
            successes: 0,
            failures: 0,
        }
    }

    pub fn state(&self) -> BreakerState {
        self.state
    }

    pub fn options(&self) -> &CockatielOptions {
        &self.options
    }

    /// `execute`: a ticket if the call goes through, None for a BrokenCircuitError. A call that
    /// finds the half-open trials all out is refused here; cockatiel holds it until they decide.
    pub fn try_acquire(&mut self, now: Micros) -> Option<Ticket> {
        match self.state {
            BreakerState::Closed => return Some(Ticket::Closed),
            BreakerState::Open => {
                if now.saturating_sub(self.opened_at) < self.options.half_open_after_us {
                    return None;
                }
                self.spell += 1;
                self.in_flight = 0;
                self.successes = 0;
                self.failures = 0;
                self.transition(BreakerState::HalfOpen, now);
            }
            BreakerState::HalfOpen => {}
        }
        if self.successes + self.failures + self.in_flight >= self.options.half_open_calls {
            return None;
        }
        self.in_flight += 1;
        Some(Ticket::HalfOpen(self.spell))
    }

    /// A call that went through with `ticket` ended.
    pub fn on_end(&mut self, now: Micros, ticket: Ticket, verdict: Verdict3) {
        match ticket {
            Ticket::Closed => match verdict {
                Verdict3::Success => self.counter.success(now, BreakerState::Closed),
                Verdict3::Failure => {
                    if self.counter.failure(now, BreakerState::Closed) {
                        self.open(now);
                    }
                }
                Verdict3::Unhandled => {}
            },
            Ticket::HalfOpen(spell) => {
                if self.state != BreakerState::HalfOpen || spell != self.spell {
                    return;
                }
                debug_assert!(self.in_flight > 0, "a trial ended that was not out");
                self.in_flight = self.in_flight.saturating_sub(1);
                match verdict {
                    Verdict3::Success | Verdict3::Unhandled => self.successes += 1,
                    Verdict3::Failure => {
                        self.failures += 1;
                        let limit = self.options.half_open_threshold * f64::from(self.options.half_open_calls);
                        if f64::from(self.failures) > limit {
                            self.counter.failure(now, BreakerState::HalfOpen);
                            self.open(now);
                            return;
                        }
                    }
                }
                if self.successes + self.failures >= self.options.half_open_calls && self.in_flight == 0 {
                    self.counter.success(now, BreakerState::HalfOpen);
                    self.transition(BreakerState::Closed, now);
                }
            }
        }
    }

    /// `open`: nothing if already open.
    fn open(&mut self, now: Micros) {
        match self.state {
            BreakerState::Open => {}
            BreakerState::Closed | BreakerState::HalfOpen => {
                self.opened_at = now;
                self.transition(BreakerState::Open, now);
            }
        }
    }

    fn transition(&mut self, to: BreakerState, _now: Micros) {
        debug_assert!(
            matches!(
                (self.state, to),
                (BreakerState::Closed, BreakerState::Open)
                    | (BreakerState::Open, BreakerState::HalfOpen)
                    | (BreakerState::HalfOpen, BreakerState::Closed | BreakerState::Open)
            ),
            "no edge {:?} -> {to:?} in cockatiel's breaker",
            self.state
        );
        self.state = to;
        debug_assert!(
            self.state == BreakerState::HalfOpen || self.in_flight == 0 || to == BreakerState::Open,
            "trials are counted only while half-open"
        );
    }

    /// How cockatiel's handler sorts an ending.
    pub fn verdict(&self, ending: Ending) -> Verdict3 {
        match ending {
            Ending::Outcome(end) => match end.failure {
                None => Verdict3::Success,
                Some(kind) if self.options.ignored[kind.index()] => Verdict3::Unhandled,
                Some(_) => Verdict3::Failure,
            },
            Ending::Canceled => Verdict3::Unhandled,
            // A BulkheadRejectedError from a policy inside: handleAll handles it.
            Ending::Refused => Verdict3::Failure,
        }
    }
}

/// A cockatiel breaker as a compiled guard.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CockatielSpec {
    pub options: CockatielOptions,
    pub label: u16,
}

/// A live cockatiel breaker: remembers the ticket of each attempt it let through.
#[derive(Debug)]
pub struct CockatielGuard {
    breaker: CockatielBreaker,
    label: u16,
    tickets: BTreeMap<u64, Ticket>,
}

impl GuardConfig for CockatielSpec {
    type Live = CockatielGuard;

    fn build(&self) -> CockatielGuard {
        CockatielGuard { breaker: CockatielBreaker::new(self.options), label: self.label, tickets: BTreeMap::new() }
    }
}

impl CockatielGuard {
    fn finish(&mut self, now: Micros, waiter: u64, ending: Ending, out: &mut impl Effects) {
        let before = self.breaker.state();
        let ticket = self.tickets.remove(&waiter);
        debug_assert!(ticket.is_some(), "an attempt ended that this breaker never let through");
        let verdict = self.breaker.verdict(ending);
        self.breaker.on_end(now, ticket.unwrap_or(Ticket::Closed), verdict);
        report_breaker(self.label, before, self.breaker.state(), out);
    }
}

impl Guard for CockatielGuard {
    fn admit(&mut self, now: Micros, ask: &Ask, _seat: Seat, out: &mut impl Effects) -> Verdict {
        let before = self.breaker.state();
        let ticket = self.breaker.try_acquire(now);
        report_breaker(self.label, before, self.breaker.state(), out);
        match ticket {
            Some(t) => {
                self.tickets.insert(ask.waiter, t);
                Verdict::Pass
            }
            None => Verdict::Refuse(Refusal::CircuitOpen),
        }
    }

    fn undo(&mut self, now: Micros, parting: Parting, out: &mut impl Effects) {
        self.finish(now, parting.waiter, Ending::Refused, out);
    }

    fn end(&mut self, now: Micros, parting: Parting, out: &mut impl Effects) {
        self.finish(now, parting.waiter, parting.ending, out);
    }

    fn breaker_state(&self) -> Option<(u16, BreakerState)> {
        Some((self.label, self.breaker.state()))
    }
}

// ---------------------------------------------------------------------------------------------
// The file's table

crate::named_enum! {
    enum BreakerName { Consecutive => "consecutive", Sampling => "sampling" }
}

/// `[[policy.<name>.circuit_breaker]]` with `kind = "cockatiel"`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct CockatielTable {
    pub kind: String,
    #[serde(default)]
    pub dependency: Option<String>,
    #[serde(default)]
    pub circuit_key: Option<String>,
    /// Failure kinds the handler does not handle (default INVALID_INPUT and UNAUTHORIZED).
    #[serde(default)]
    pub ignore: Option<Vec<String>>,
    /// consecutive or sampling.
    pub breaker: String,
    /// consecutive: failures in a row (an integer); sampling: a share in (0, 1).
    pub threshold: f64,
    #[serde(default)]
    pub duration_ms: Option<f64>,
    #[serde(default)]
    pub minimum_rps: Option<f64>,
    pub half_open_after_ms: f64,
    #[serde(default)]
    pub half_open_calls: Option<u32>,
    #[serde(default)]
    pub half_open_threshold: Option<f64>,
}

crate::scenario::types::tables_only!(CockatielTable);

/// Reads one entry and adds its breakers.
pub fn compile<G: From<CockatielSpec>>(
    cx: &mut Compile<G>,
    path: &FieldPath,
    raw: &RawTable,
) -> Result<(), ScenarioError> {
    let t: CockatielTable = read_table(cx.source, path, raw)?;
    let breaker = match cx.named(&path.key("breaker"), Some(&t.breaker), BreakerName::Consecutive)? {
        BreakerName::Consecutive => {
            for (field, given) in [("duration_ms", t.duration_ms.is_some()), ("minimum_rps", t.minimum_rps.is_some())] {
                if given {
                    return Err(cx.err(&path.key(field), format!("`{field}` applies to breaker = \"sampling\" only")));
                }
            }
            if !(t.threshold >= 1.0 && t.threshold.fract() == 0.0 && t.threshold <= f64::from(u32::MAX)) {
                let message = format!("a consecutive breaker's threshold is a whole number >= 1, got {}", t.threshold);
                return Err(cx.err(&path.key("threshold"), message));
            }
            BreakerKind::Consecutive { threshold: t.threshold as u32 }
        }
        BreakerName::Sampling => {
            let Some(duration_ms) = t.duration_ms else {
                return Err(cx.err(&path.key("duration_ms"), "breaker = \"sampling\" needs `duration_ms`"));
            };
            BreakerKind::Sampling { threshold: t.threshold, duration_ms, minimum_rps: t.minimum_rps }
        }
    };
    let half_open_after_us = cx.duration(&path.key("half_open_after_ms"), Some(t.half_open_after_ms), 0)?;
    let d = CockatielOptions::new(breaker, half_open_after_us);
    let options = CockatielOptions {
        half_open_calls: t.half_open_calls.unwrap_or(d.half_open_calls),
        half_open_threshold: t.half_open_threshold.unwrap_or(d.half_open_threshold),
        ignored: cx.ignored(&path.key("ignore"), t.ignore.as_deref())?,
        ..d
    };
    cx.check(path, options.check())?;
    // cockatiel moves to HALF_OPEN on the first call after halfOpenAfter.
    cx.add_breakers(path, &t.dependency, t.circuit_key.as_deref(), true, |label| {
        CockatielSpec { options, label }.into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Micros = US_PER_MS;

    fn consecutive(n: u32) -> CockatielBreaker {
        CockatielBreaker::new(CockatielOptions::new(BreakerKind::Consecutive { threshold: n }, 200 * MS))
    }

    fn sampling(threshold: f64, duration_ms: f64, minimum_rps: Option<f64>) -> CockatielBreaker {
        CockatielBreaker::new(CockatielOptions::new(
            BreakerKind::Sampling { threshold, duration_ms, minimum_rps },
            200 * MS,
        ))
    }

    fn call(b: &mut CockatielBreaker, now: Micros, v: Verdict3) {
        let t = b.try_acquire(now).unwrap_or_else(|| panic!("refused at {now} in {:?}", b.state()));
        b.on_end(now, t, v);
    }

    #[test]
    fn consecutive_opens_at_threshold_and_a_success_resets() {
        let mut b = consecutive(3);
        call(&mut b, 0, Verdict3::Failure);
        call(&mut b, 0, Verdict3::Failure);
        call(&mut b, 0, Verdict3::Success);
        call(&mut b, 0, Verdict3::Failure);
        call(&mut b, 0, Verdict3::Failure);
        assert_eq!(b.state(), BreakerState::Closed);
        call(&mut b, 0, Verdict3::Failure);
        assert_eq!(b.state(), BreakerState::Open);
    }

    #[test]
    fn lazy_half_open_one_trial() {
        let mut b = consecutive(1);
        call(&mut b, 0, Verdict3::Failure);
        assert_eq!(b.try_acquire(199 * MS), None);
        assert_eq!(b.state(), BreakerState::Open, "no timer");
        let trial = b.try_acquire(200 * MS).unwrap();
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert_eq!(b.try_acquire(201 * MS), None, "one trial");
        b.on_end(210 * MS, trial, Verdict3::Success);
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn trial_failure_reopens() {
        let mut b = consecutive(1);
        call(&mut b, 0, Verdict3::Failure);
        let trial = b.try_acquire(300 * MS).unwrap();
        b.on_end(310 * MS, trial, Verdict3::Failure);
        assert_eq!(b.state(), BreakerState::Open);
        assert_eq!(b.try_acquire(509 * MS), None);
        assert!(b.try_acquire(510 * MS).is_some());
    }

    #[test]
    fn an_unhandled_trial_closes_and_an_unhandled_closed_call_says_nothing() {
        let mut b = consecutive(2);
        call(&mut b, 0, Verdict3::Failure);
        call(&mut b, 0, Verdict3::Unhandled);
        call(&mut b, 0, Verdict3::Failure);
        assert_eq!(b.state(), BreakerState::Open, "the unhandled error did not reset the count");
        call(&mut b, 200 * MS, Verdict3::Unhandled);
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn a_closed_era_failure_reopens_a_half_open_circuit() {
        let mut b = consecutive(1);
        let late = b.try_acquire(0).unwrap();
        call(&mut b, 0, Verdict3::Failure);
        let trial = b.try_acquire(200 * MS).unwrap();
        b.on_end(210 * MS, late, Verdict3::Failure);
        assert_eq!(b.state(), BreakerState::Open, "the breaker says open: HALF_OPEN opens");
        b.on_end(220 * MS, trial, Verdict3::Success);
        assert_eq!(b.state(), BreakerState::Open, "the trial's spell is over: ignored");
    }

    #[test]
    fn sampling_needs_minimum_rps_and_a_strictly_higher_share() {
        // 1 s in 5 windows of 200 ms; minimumRps 5 -> 5 calls in the windows.
        let mut b = sampling(0.5, 1_000.0, Some(5.0));
        for _ in 0..4 {
            call(&mut b, 0, Verdict3::Failure);
        }
        assert_eq!(b.state(), BreakerState::Closed, "4 calls < 5");
        let mut b = sampling(0.5, 1_000.0, Some(5.0));
        for v in [Verdict3::Success, Verdict3::Failure, Verdict3::Success, Verdict3::Failure, Verdict3::Success] {
            call(&mut b, 0, v);
        }
        call(&mut b, 0, Verdict3::Failure);
        assert_eq!(b.state(), BreakerState::Closed, "3 of 6 is not above 0.5");
        call(&mut b, 0, Verdict3::Failure);
        assert_eq!(b.state(), BreakerState::Open, "4 of 7");
    }

    #[test]
    fn sampling_default_minimum_is_five_failures_a_second() {
        let b = sampling(0.5, 1_000.0, None);
        match &b.counter {
            Counter::Sampling(s) => assert_eq!(s.minimum_calls, 10.0),
            Counter::Consecutive { .. } => unreachable!(),
        }
    }

    #[test]
    fn sampling_forgets_one_window_per_outcome() {
        // 4 failures at 0 (4 calls < 5: closed). 10 s later a success empties only the next
        // window; the 4 failures linger, so one more failure makes 5 of 6 and opens. A window
        // that forgot by time would hold 2 calls (< 5) and stay closed.
        let mut b = sampling(0.5, 1_000.0, Some(5.0));
        for _ in 0..4 {
            call(&mut b, 0, Verdict3::Failure);
        }
        assert_eq!(b.state(), BreakerState::Closed);
        call(&mut b, 10_000 * MS, Verdict3::Success);
        call(&mut b, 10_000 * MS, Verdict3::Failure);
        assert_eq!(b.state(), BreakerState::Open);
    }

    #[test]
    fn half_open_sampling_takes_several_trials() {
        let mut o = CockatielOptions::new(BreakerKind::Consecutive { threshold: 1 }, 200 * MS);
        o.half_open_calls = 2;
        o.half_open_threshold = 0.5;
        let mut b = CockatielBreaker::new(o);
        call(&mut b, 0, Verdict3::Failure);
        let a = b.try_acquire(200 * MS).unwrap();
        let c = b.try_acquire(200 * MS).unwrap();
        assert_eq!(b.try_acquire(200 * MS), None);
        b.on_end(210 * MS, a, Verdict3::Failure);
        assert_eq!(b.state(), BreakerState::HalfOpen, "1 failure is not above 0.5 x 2");
        b.on_end(220 * MS, c, Verdict3::Success);
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn check_names_the_field() {
        let field = |o: CockatielOptions| o.check().unwrap_err().field;
        let s = |threshold, duration_ms| {
            CockatielOptions::new(BreakerKind::Sampling { threshold, duration_ms, minimum_rps: None }, MS)
        };
        assert_eq!(field(s(1.0, 1_000.0)), "threshold");
        assert_eq!(field(s(0.5, 1.0)), "duration_ms");
        assert_eq!(field(CockatielOptions::new(BreakerKind::Consecutive { threshold: 0 }, MS)), "threshold");
        let mut o = s(0.5, 1_000.0);
        o.half_open_threshold = 1.0;
        assert_eq!(field(o), "half_open_threshold");
    }
}
