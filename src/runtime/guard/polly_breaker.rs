//! Polly v8's circuit breaker (docs/references.md section 4) as a pure state machine over virtual time.
//!
//! CLOSED keeps a rolling health record over `sampling_duration_us`, split into 10 sub-windows,
//! and breaks when a handled failure leaves at least `minimum_throughput` calls in the record with
//! a failure ratio at or above `failure_ratio`. OPEN refuses calls for `break_duration_us`; the
//! first call after it (no timer: Polly is lazy) flips the circuit to HALF_OPEN and is the only
//! call let through, every other one fails fast until an outcome arrives. Polly hands out no
//! permit and takes none back: every call it let through reports an outcome, and an outcome its
//! `ShouldHandle` does not handle (cancellation, by default) counts as a success
//! (CircuitStateController.OnUnhandledOutcomeAsync). So in HALF_OPEN any success or unhandled
//! outcome closes the circuit and clears the record, and any handled failure opens it for another
//! break, whichever call it comes from. A rejection by a strategy inside the breaker (a full
//! bulkhead) is an exception ShouldHandle handles: a failure.

use super::circuit_breaker::default_ignored;
use super::compile::Compile;
use super::compile::Invalid;
use super::contract::{Ask, AttemptEnd, Ending, Guard, GuardConfig, Parting, Seat, Verdict, report_breaker};
use crate::runtime::command::Effects;
use crate::scenario::{FieldPath, RawTable, ScenarioError, read_table};
use crate::sim::Micros;
use crate::sim::time::{US_PER_MS, US_PER_S};
use crate::vocab::{BreakerState, FailureKind, Refusal};
use serde::{Deserialize, Serialize};

/// Polly divides the sampling duration into this many sub-windows (for durations of at least
/// 200 ms, which `check` guarantees).
pub const NUMBER_OF_WINDOWS: u64 = 10;

/// A new sub-window starts only once the newest is a whole sub-window old and the oldest expires a
/// whole sampling duration after its start; with the remainder of the integer division up to 11
/// can be alive at once.
const RING_SIZE: usize = NUMBER_OF_WINDOWS as usize + 1;

/// Polly's `[Range]` bounds on SamplingDuration and BreakDuration.
pub const MIN_DURATION_US: Micros = 500 * US_PER_MS;
pub const MAX_DURATION_US: Micros = 24 * 3_600 * US_PER_S;

/// Polly's MinimumValidThroughput.
pub const MIN_THROUGHPUT: u32 = 2;

/// The failure kinds Polly's breaker does not handle by default: our security and contract errors
/// (see `circuit_breaker::default_ignored`) and cancellation, which Polly's default ShouldHandle
/// excludes (OperationCanceledException).
fn default_ignored_polly() -> [bool; FailureKind::COUNT] {
    let mut ignored = default_ignored();
    ignored[FailureKind::Canceled.index()] = true;
    ignored
}

/// Polly's CircuitBreakerStrategyOptions; durations in microseconds of virtual time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PollyBreakerOptions {
    /// In (0, 1]: break at or above this share of handled failures.
    pub failure_ratio: f64,
    pub minimum_throughput: u32,
    pub sampling_duration_us: Micros,
    pub break_duration_us: Micros,
    /// Indexed by `FailureKind::index`: failures ShouldHandle does not handle, which Polly
    /// records as successes.
    pub ignored: [bool; FailureKind::COUNT],
}

impl Default for PollyBreakerOptions {
    fn default() -> Self {
        PollyBreakerOptions {
            failure_ratio: 0.1,
            minimum_throughput: 100,
            sampling_duration_us: 30 * US_PER_S,
            break_duration_us: 5 * US_PER_S,
            ignored: default_ignored_polly(),
        }
    }
}

impl PollyBreakerOptions {
    /// The ranges Polly validates.
    pub fn check(&self) -> Result<(), Invalid> {
        if !(self.failure_ratio > 0.0 && self.failure_ratio <= 1.0) {
            return Err(Invalid::new(
                "failure_ratio",
                format!("failure_ratio must be in (0, 1], got {}", self.failure_ratio),
            ));
        }
        if self.minimum_throughput < MIN_THROUGHPUT {
            return Err(Invalid::new(
                "minimum_throughput",
                format!("minimum_throughput must be at least {MIN_THROUGHPUT}"),
            ));
        }
        check_duration("sampling_duration_us", self.sampling_duration_us)?;
        check_duration("break_duration_us", self.break_duration_us)
    }

    /// The failure Polly's ShouldHandle handles, or None for a success or an unhandled outcome.
    fn handled_failure(&self, end: &AttemptEnd) -> Option<FailureKind> {
        end.failure.filter(|kind| !self.ignored[kind.index()])
    }
}

fn check_duration(field: &'static str, value: Micros) -> Result<(), Invalid> {
    if (MIN_DURATION_US..=MAX_DURATION_US).contains(&value) {
        Ok(())
    } else {
        Err(Invalid::new(
            field,
            format!("{field} must be between {MIN_DURATION_US} (0.5 s) and {MAX_DURATION_US} (1 day), got {value}"),
        ))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct SubWindow {
    started_at: Micros,
    successes: u64,
    failures: u64,
}

/// Polly's rolling health metrics: sub-windows start at the first outcome after the newest one
/// has lasted a sub-window's duration (not on a fixed grid), and leave the record once a whole
/// sampling duration has passed since they started.
#[derive(Debug, Clone)]
struct RollingHealth {
    sampling_us: Micros,
    window_us: Micros,
    ring: [SubWindow; RING_SIZE],
    oldest: usize,
    len: usize,
    successes: u64,
    failures: u64,
}

impl RollingHealth {
    fn new(sampling_us: Micros) -> Self {
        RollingHealth {
            sampling_us,
            window_us: sampling_us / NUMBER_OF_WINDOWS,
            ring: [SubWindow::default(); RING_SIZE],
            oldest: 0,
            len: 0,
            successes: 0,
            failures: 0,
        }
    }

    fn record_success(&mut self, now: Micros) {
        let current = self.current_window(now);
        self.ring[current].successes += 1;
        self.successes += 1;
        debug_assert!(self.sums_match(), "the record's counts are the sums of its sub-windows");
    }

    /// Returns (throughput, failures) after recording.
    fn record_failure(&mut self, now: Micros) -> (u64, u64) {
        let current = self.current_window(now);
        self.ring[current].failures += 1;
        self.failures += 1;
        debug_assert!(self.sums_match(), "the record's counts are the sums of its sub-windows");
        (self.successes + self.failures, self.failures)
    }

    /// Debug check: the running counts equal the sums of the live sub-windows.
    fn sums_match(&self) -> bool {
        let live = (0..self.len).map(|i| self.ring[(self.oldest + i) % RING_SIZE]);
        let (successes, failures) = live.fold((0, 0), |(s, f), w| (s + w.successes, f + w.failures));
        (successes, failures) == (self.successes, self.failures)
    }

    fn reset(&mut self) {
        self.oldest = 0;
        self.len = 0;
        self.successes = 0;
        self.failures = 0;
    }

    /// Index of the sub-window `now` records into, after expiring old ones.
    fn current_window(&mut self, now: Micros) -> usize {
        if self.len == 0 || now.saturating_sub(self.ring[self.newest()].started_at) >= self.window_us {
            self.push(now);
        }
        // The newest sub-window is younger than the sampling duration whenever the options are
        // valid; keeping it regardless spares invalid ones a special case.
        while self.len > 1 && now.saturating_sub(self.ring[self.oldest].started_at) >= self.sampling_us {
            self.evict_oldest();
        }
        self.newest()
    }

    fn newest(&self) -> usize {
        (self.oldest + self.len + RING_SIZE - 1) % RING_SIZE
    }

    fn push(&mut self, now: Micros) {
        if self.len == RING_SIZE {
            // Only invalid options (a sampling duration under 100 us) fill the ring.
            self.evict_oldest();
        }
        let slot = (self.oldest + self.len) % RING_SIZE;
        self.ring[slot] = SubWindow { started_at: now, successes: 0, failures: 0 };
        self.len += 1;
    }

    fn evict_oldest(&mut self) {
        debug_assert!(self.len > 0);
        let gone = self.ring[self.oldest];
        debug_assert!(self.successes >= gone.successes && self.failures >= gone.failures);
        self.successes = self.successes.saturating_sub(gone.successes);
        self.failures = self.failures.saturating_sub(gone.failures);
        self.oldest = (self.oldest + 1) % RING_SIZE;
        self.len -= 1;
    }
}

/// Polly's CircuitStateController with the advanced (ratio) behaviour, without locks or timers.
#[derive(Debug, Clone)]
pub struct PollyBreaker {
    options: PollyBreakerOptions,
    state: BreakerState,
    /// OPEN refuses calls before this instant.
    blocked_until: Micros,
    health: RollingHealth,
}

impl PollyBreaker {
    /// Needs no allocation at all: the sub-windows live in a fixed ring.
    pub fn new(options: PollyBreakerOptions) -> Self {
        PollyBreaker {
            health: RollingHealth::new(options.sampling_duration_us),
            options,
            state: BreakerState::Closed,
            blocked_until: 0,
        }
    }

    pub fn options(&self) -> &PollyBreakerOptions {
        &self.options
    }

    pub fn state(&self) -> BreakerState {
        self.state
    }

    /// Whether a call may go ahead now. The first call at or after the end of the break flips
    /// the circuit to HALF_OPEN and goes ahead (Polly compares `now >= blockedUntil`); while
    /// HALF_OPEN, every call is refused until some call's outcome decides.
    pub fn try_acquire(&mut self, now: Micros) -> bool {
        match self.state {
            BreakerState::Closed => true,
            BreakerState::Open => {
                if now < self.blocked_until {
                    return false;
                }
                self.transition(BreakerState::HalfOpen);
                self.blocked_until = now.saturating_add(self.options.break_duration_us);
                true
            }
            BreakerState::HalfOpen => false,
        }
    }

    /// Records how a call that went ahead ended. Polly does not know which call was the probe:
    /// in HALF_OPEN any success or unhandled outcome closes, any handled failure re-opens.
    /// Outcomes arriving while OPEN change nothing: Polly counts them, but the record is cleared
    /// whenever the circuit closes and is judged only while closed.
    pub fn on_end(&mut self, now: Micros, ending: Ending) {
        let failed = match ending {
            Ending::Outcome(end) => self.options.handled_failure(&end).is_some(),
            // An OperationCanceledException, which the default ShouldHandle leaves unhandled.
            Ending::Canceled => false,
            // A strategy inside the breaker threw: ExecutionRejectedException is handled.
            Ending::Refused => true,
        };
        match (self.state, failed) {
            (BreakerState::Closed, false) => self.health.record_success(now),
            (BreakerState::Closed, true) => self.record_closed_failure(now),
            (BreakerState::HalfOpen, false) => self.close(),
            (BreakerState::HalfOpen, true) => self.open(now),
            (BreakerState::Open, false | true) => {}
        }
    }

    /// Always None: Polly moves from OPEN to HALF_OPEN only when a call arrives.
    pub fn wake_at(&self) -> Option<Micros> {
        None
    }

    /// Nothing is ever due (see `wake_at`); kept so every guard has the same shape.
    pub fn on_wake(&mut self, _now: Micros) {}

    fn record_closed_failure(&mut self, now: Micros) {
        let (throughput, failures) = self.health.record_failure(now);
        let ratio = failures as f64 / throughput as f64;
        if throughput >= u64::from(self.options.minimum_throughput) && ratio >= self.options.failure_ratio {
            self.open(now);
        }
    }

    fn open(&mut self, now: Micros) {
        self.transition(BreakerState::Open);
        self.blocked_until = now.saturating_add(self.options.break_duration_us);
    }

    fn close(&mut self) {
        self.transition(BreakerState::Closed);
        self.blocked_until = 0;
        self.health.reset();
    }

    /// Moves along one of Polly's edges: CLOSED -> OPEN -> HALF_OPEN -> CLOSED or OPEN.
    fn transition(&mut self, to: BreakerState) {
        debug_assert!(
            matches!(
                (self.state, to),
                (BreakerState::Closed, BreakerState::Open)
                    | (BreakerState::Open, BreakerState::HalfOpen)
                    | (BreakerState::HalfOpen, BreakerState::Closed | BreakerState::Open)
            ),
            "no edge {:?} -> {to:?} in Polly's breaker",
            self.state
        );
        self.state = to;
    }
}

/// A Polly breaker as a compiled guard: its options and its label's index.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PollySpec {
    pub options: PollyBreakerOptions,
    pub label: u16,
}

/// A live Polly breaker in a pipeline, reporting its transitions under its label.
#[derive(Debug)]
pub struct PollyGuard {
    breaker: PollyBreaker,
    label: u16,
}

impl GuardConfig for PollySpec {
    type Live = PollyGuard;

    fn build(&self) -> PollyGuard {
        PollyGuard { breaker: PollyBreaker::new(self.options), label: self.label }
    }
}

impl PollyGuard {
    fn step<T>(&mut self, out: &mut impl Effects, op: impl FnOnce(&mut PollyBreaker) -> T) -> T {
        let before = self.breaker.state();
        let result = op(&mut self.breaker);
        report_breaker(self.label, before, self.breaker.state(), out);
        result
    }
}

impl Guard for PollyGuard {
    fn admit(&mut self, now: Micros, _ask: &Ask, _seat: Seat, out: &mut impl Effects) -> Verdict {
        if self.step(out, |b| b.try_acquire(now)) { Verdict::Pass } else { Verdict::Refuse(Refusal::CircuitOpen) }
    }

    /// A strategy inside the breaker rejected the call: Polly handles the exception.
    fn undo(&mut self, now: Micros, _parting: Parting, out: &mut impl Effects) {
        self.step(out, |b| b.on_end(now, Ending::Refused));
    }

    fn end(&mut self, now: Micros, parting: Parting, out: &mut impl Effects) {
        self.step(out, |b| b.on_end(now, parting.ending));
    }

    fn breaker_state(&self) -> Option<(u16, BreakerState)> {
        Some((self.label, self.breaker.state()))
    }
}

// ---------------------------------------------------------------------------------------------
// The file's table

/// `[[policy.<name>.circuit_breaker]]` with `kind = "polly"`: one breaker per circuit it
/// covers, with Polly's CircuitBreakerStrategyOptions names (durations in ms).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct PollyTable {
    pub kind: String,
    /// The dependency it guards; every dependency when absent.
    #[serde(default)]
    pub dependency: Option<String>,
    /// dependency (default) or dependency_operation (read, write and control circuits).
    #[serde(default)]
    pub circuit_key: Option<String>,
    /// Failure kinds ShouldHandle does not handle (default INVALID_INPUT and UNAUTHORIZED).
    #[serde(default)]
    pub ignore: Option<Vec<String>>,
    #[serde(default)]
    pub failure_ratio: Option<f64>,
    #[serde(default)]
    pub minimum_throughput: Option<u32>,
    #[serde(default)]
    pub sampling_duration_ms: Option<f64>,
    #[serde(default)]
    pub break_duration_ms: Option<f64>,
}

crate::scenario::types::tables_only!(PollyTable);

/// Reads one entry and adds its breakers.
pub fn compile<G: From<PollySpec>>(cx: &mut Compile<G>, path: &FieldPath, raw: &RawTable) -> Result<(), ScenarioError> {
    let t: PollyTable = read_table(cx.source, path, raw)?;
    let d = PollyBreakerOptions::default();
    let options = PollyBreakerOptions {
        failure_ratio: t.failure_ratio.unwrap_or(d.failure_ratio),
        minimum_throughput: t.minimum_throughput.unwrap_or(d.minimum_throughput),
        sampling_duration_us: cx.duration(
            &path.key("sampling_duration_ms"),
            t.sampling_duration_ms,
            d.sampling_duration_us,
        )?,
        break_duration_us: cx.duration(&path.key("break_duration_ms"), t.break_duration_ms, d.break_duration_us)?,
        ignored: cx.ignored(&path.key("ignore"), t.ignore.as_deref())?,
    };
    cx.check(path, options.check())?;
    // Polly v8 moves to half-open on the first call after the break duration.
    cx.add_breakers(path, &t.dependency, t.circuit_key.as_deref(), true, |label| PollySpec { options, label }.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::guard::testing::{Lcg, failed, ok};

    const S: Micros = US_PER_S;
    const MS: Micros = US_PER_MS;

    /// Polly's "complex" documentation example, with a 10 s sampling duration (1 s sub-windows).
    fn options(minimum_throughput: u32) -> PollyBreakerOptions {
        PollyBreakerOptions {
            failure_ratio: 0.5,
            minimum_throughput,
            sampling_duration_us: 10 * S,
            break_duration_us: 5 * S,
            ..PollyBreakerOptions::default()
        }
    }

    fn fail() -> Ending {
        failed(FailureKind::TransientTransport)
    }

    fn call(b: &mut PollyBreaker, now: Micros, end: Ending) {
        assert!(b.try_acquire(now), "call at {now} refused in {:?}", b.state());
        b.on_end(now, end);
    }

    /// Opened at time 0 by two failures (throughput 2, ratio 1).
    fn opened() -> PollyBreaker {
        let mut b = PollyBreaker::new(options(2));
        call(&mut b, 0, fail());
        call(&mut b, 0, fail());
        assert_eq!(b.state(), BreakerState::Open);
        b
    }

    /// Opened at 0, the probe admitted at 5 s.
    fn probing() -> PollyBreaker {
        let mut b = opened();
        assert!(b.try_acquire(5 * S));
        assert_eq!(b.state(), BreakerState::HalfOpen);
        b
    }

    #[test]
    fn defaults_are_polly_defaults() {
        let o = PollyBreakerOptions::default();
        assert_eq!(o.failure_ratio, 0.1);
        assert_eq!(o.minimum_throughput, 100);
        assert_eq!(o.sampling_duration_us, 30 * S);
        assert_eq!(o.break_duration_us, 5 * S);
        for kind in [FailureKind::InvalidInput, FailureKind::Unauthorized, FailureKind::Canceled] {
            assert!(o.ignored[kind.index()], "{}", kind.name());
        }
        assert_eq!(o.ignored.iter().filter(|&&i| i).count(), 3);
        assert_eq!(o.check(), Ok(()));
    }

    #[test]
    fn check_names_the_field_out_of_range() {
        let bad = |o: PollyBreakerOptions, field: &str| {
            let invalid = o.check().unwrap_err();
            assert_eq!(invalid.field, field, "{invalid}");
            assert!(invalid.message.starts_with(field), "{invalid}");
        };
        let d = PollyBreakerOptions::default();
        bad(PollyBreakerOptions { failure_ratio: 0.0, ..d }, "failure_ratio");
        bad(PollyBreakerOptions { failure_ratio: 1.5, ..d }, "failure_ratio");
        bad(PollyBreakerOptions { failure_ratio: f64::NAN, ..d }, "failure_ratio");
        bad(PollyBreakerOptions { minimum_throughput: 1, ..d }, "minimum_throughput");
        bad(PollyBreakerOptions { sampling_duration_us: 499 * MS, ..d }, "sampling_duration_us");
        bad(PollyBreakerOptions { sampling_duration_us: MAX_DURATION_US + 1, ..d }, "sampling_duration_us");
        bad(PollyBreakerOptions { break_duration_us: 0, ..d }, "break_duration_us");
        assert_eq!(PollyBreakerOptions { failure_ratio: 1.0, minimum_throughput: 2, ..d }.check(), Ok(()));
    }

    #[test]
    fn no_break_below_minimum_throughput() {
        let mut b = PollyBreaker::new(options(4));
        for _ in 0..3 {
            call(&mut b, 0, fail());
        }
        assert_eq!(b.state(), BreakerState::Closed, "3 failures, but throughput 3 < 4");
        call(&mut b, 0, fail());
        assert_eq!(b.state(), BreakerState::Open);
    }

    #[test]
    fn ratio_exactly_at_failure_ratio_breaks() {
        let mut b = PollyBreaker::new(options(4));
        call(&mut b, 0, ok());
        call(&mut b, 0, fail());
        call(&mut b, 0, ok());
        call(&mut b, 0, fail());
        assert_eq!(b.state(), BreakerState::Open, "2 of 4 = 0.5 >= 0.5");
    }

    #[test]
    fn ratio_below_failure_ratio_stays_closed() {
        let mut b = PollyBreaker::new(options(4));
        for end in [ok(), ok(), ok(), fail(), ok(), fail()] {
            call(&mut b, 0, end);
        }
        assert_eq!(b.state(), BreakerState::Closed, "2 of 6 < 0.5");
    }

    #[test]
    fn default_ratio_breaks_at_ten_percent_of_a_hundred() {
        let mut b = PollyBreaker::new(PollyBreakerOptions::default());
        for _ in 0..90 {
            call(&mut b, 0, ok());
        }
        for _ in 0..9 {
            call(&mut b, 0, fail());
        }
        assert_eq!(b.state(), BreakerState::Closed, "throughput 99 < 100");
        call(&mut b, 0, fail());
        assert_eq!(b.state(), BreakerState::Open, "10 of 100 = 0.1");
    }

    #[test]
    fn only_a_failure_can_break() {
        let mut b = PollyBreaker::new(options(4));
        for _ in 0..3 {
            call(&mut b, 0, fail());
        }
        call(&mut b, 0, ok());
        assert_eq!(b.state(), BreakerState::Closed, "3 of 4 failed, but Polly judges only on a failure");
        call(&mut b, 0, fail());
        assert_eq!(b.state(), BreakerState::Open);
    }

    #[test]
    fn sub_windows_expire_a_sampling_duration_after_they_start() {
        // Both failures fall in the sub-window that starts at 0.5 s, however late the second.
        let run = |last: Micros| {
            let mut b = PollyBreaker::new(options(4));
            call(&mut b, 500 * MS, fail());
            call(&mut b, 1_200 * MS, fail());
            call(&mut b, 9 * S, ok());
            call(&mut b, last, fail());
            b.state()
        };
        assert_eq!(run(10_499 * MS), BreakerState::Open, "3 of 4 within the record");
        assert_eq!(run(10_500 * MS), BreakerState::Closed, "the 0.5 s sub-window left with both failures");
    }

    #[test]
    fn eleven_sub_windows_can_be_alive() {
        // 10.000005 s splits into 1 s sub-windows with a 5 us remainder: the one started at 0 s
        // is still alive at 10 s, next to ten others.
        let options = PollyBreakerOptions { failure_ratio: 1.0, sampling_duration_us: 10 * S + 5, ..options(11) };
        let mut b = PollyBreaker::new(options);
        for second in 0..=10 {
            call(&mut b, second * S, fail());
        }
        assert_eq!(b.state(), BreakerState::Open, "all 11 failures counted");
    }

    #[test]
    fn open_refuses_for_the_break_then_one_probe() {
        let mut b = opened();
        assert!(!b.try_acquire(5 * S - 1));
        assert_eq!(b.state(), BreakerState::Open, "lazy: still open until a call arrives");
        assert!(b.try_acquire(5 * S), "the break is over at exactly 5 s");
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert!(!b.try_acquire(5 * S), "other calls fail fast while the probe is out");
        assert!(!b.try_acquire(60 * S), "however long the probe takes");
    }

    #[test]
    fn probe_success_closes_and_clears_the_record() {
        let mut b = probing();
        b.on_end(6 * S, ok());
        assert_eq!(b.state(), BreakerState::Closed);
        call(&mut b, 6 * S, fail());
        assert_eq!(b.state(), BreakerState::Closed, "throughput 1 after the reset");
        call(&mut b, 6 * S, fail());
        assert_eq!(b.state(), BreakerState::Open);
    }

    #[test]
    fn probe_failure_opens_for_another_break() {
        let mut b = probing();
        b.on_end(7 * S, fail());
        assert_eq!(b.state(), BreakerState::Open);
        assert!(!b.try_acquire(12 * S - 1), "blocked for 5 s from the probe's failure at 7 s");
        assert!(b.try_acquire(12 * S));
        assert_eq!(b.state(), BreakerState::HalfOpen);
    }

    #[test]
    fn a_late_success_in_half_open_closes_like_the_probe() {
        // A call admitted before the break ends while the probe is out: Polly cannot tell them apart.
        let mut b = probing();
        b.on_end(5 * S, ok());
        assert_eq!(b.state(), BreakerState::Closed);
        assert!(b.try_acquire(5 * S));
    }

    #[test]
    fn outcomes_arriving_while_open_change_nothing() {
        let mut b = opened();
        b.on_end(S, ok());
        b.on_end(S, fail());
        assert_eq!(b.state(), BreakerState::Open);
        assert!(!b.try_acquire(5 * S - 1));
    }

    #[test]
    fn unhandled_outcomes_count_as_successes() {
        // Polly's OnUnhandledOutcomeAsync calls OnActionSuccess: 3 ignored kinds x 2 are 6
        // successes, so the failures must reach 6 of 12 before the circuit breaks.
        let mut b = PollyBreaker::new(options(4));
        for kind in [FailureKind::InvalidInput, FailureKind::Unauthorized, FailureKind::Canceled] {
            call(&mut b, 0, failed(kind));
            call(&mut b, 0, failed(kind));
        }
        for n in 1..=5 {
            call(&mut b, 0, fail());
            assert_eq!(b.state(), BreakerState::Closed, "{n} of {} failed", 6 + n);
        }
        call(&mut b, 0, fail());
        assert_eq!(b.state(), BreakerState::Open, "6 of 12 failed");
    }

    #[test]
    fn an_unhandled_outcome_closes_a_half_open_circuit_whichever_call_it_ends() {
        // A call admitted while CLOSED ends with an unhandled kind while the probe is out: Polly
        // closes (PR #1991); the probe's later failure then counts in a fresh record.
        for ending in [failed(FailureKind::InvalidInput), Ending::Canceled] {
            let mut b = probing();
            b.on_end(6 * S, ending);
            assert_eq!(b.state(), BreakerState::Closed, "{ending:?}");
            assert!(b.try_acquire(6 * S));
            b.on_end(7 * S, fail());
            assert_eq!(b.state(), BreakerState::Closed, "1 failure in a fresh record");
        }
    }

    #[test]
    fn a_rejection_inside_the_breaker_is_a_handled_failure() {
        let mut b = probing();
        b.on_end(5 * S, Ending::Refused);
        assert_eq!(b.state(), BreakerState::Open, "the probe was rejected by an inner strategy");
        assert!(!b.try_acquire(10 * S - 1));
        let mut b = PollyBreaker::new(options(2));
        call(&mut b, 0, Ending::Refused);
        call(&mut b, 0, Ending::Refused);
        assert_eq!(b.state(), BreakerState::Open, "rejections count as failures while closed");
    }

    #[test]
    fn half_open_refuses_every_call_until_an_outcome_arrives() {
        let mut b = probing();
        for t in [5 * S, 6 * S, 60 * S, 3_600 * S] {
            assert!(!b.try_acquire(t), "no second probe at {t}, however long the first takes");
        }
        b.on_end(3_600 * S, ok());
        assert!(b.try_acquire(3_600 * S));
    }

    #[test]
    fn never_wakes() {
        let mut b = opened();
        assert_eq!(b.wake_at(), None);
        b.on_wake(100 * S);
        assert_eq!(b.state(), BreakerState::Open);
    }

    #[test]
    fn unchecked_options_never_panic() {
        let options = PollyBreakerOptions {
            failure_ratio: f64::NAN,
            minimum_throughput: 0,
            sampling_duration_us: 3,
            break_duration_us: 0,
            ..PollyBreakerOptions::default()
        };
        for ratio in [f64::NAN, 0.0] {
            let mut b = PollyBreaker::new(PollyBreakerOptions { failure_ratio: ratio, ..options });
            for t in 0..100 {
                if b.try_acquire(t) {
                    b.on_end(t, if t % 3 == 0 { fail() } else { ok() });
                }
            }
        }
    }

    #[test]
    fn time_going_backwards_does_not_panic() {
        let mut b = PollyBreaker::new(options(3));
        call(&mut b, 50 * S, ok());
        call(&mut b, S, fail());
        call(&mut b, 0, fail());
        assert_eq!(b.state(), BreakerState::Open, "late timestamps land in the newest sub-window");
    }

    /// Observed from outside: while HALF_OPEN, at most one call is let through, the one that
    /// flipped the circuit; and the circuit leaves HALF_OPEN only when an outcome arrives.
    #[test]
    fn random_sequences_let_one_call_through_per_half_open_episode() {
        let mut b = PollyBreaker::new(options(5));
        let mut rng = Lcg(7);
        let mut now = 0;
        let mut in_flight = 0u32;
        let mut visited = [false; BreakerState::COUNT];
        let mut admitted_this_episode = 0;
        for _ in 0..200_000 {
            now += rng.next(400 * MS);
            let before = b.state();
            let mut reported = false;
            match rng.next(6) {
                0..=2 => {
                    let admitted = b.try_acquire(now);
                    in_flight += u32::from(admitted);
                    admitted_this_episode += u32::from(admitted && b.state() == BreakerState::HalfOpen);
                }
                3 => b.on_wake(now),
                _ if in_flight > 0 => {
                    in_flight -= 1;
                    reported = true;
                    let ending = match rng.next(4) {
                        0 => Ending::Canceled,
                        1 => Ending::Refused,
                        _ => {
                            let kind = FailureKind::ALL[rng.next(FailureKind::COUNT as u64) as usize];
                            let failure = (rng.next(2) == 0).then_some(kind);
                            Ending::Outcome(AttemptEnd { failure, duration_us: rng.next(S) })
                        }
                    };
                    b.on_end(now, ending);
                }
                _ => {}
            }
            if before == BreakerState::HalfOpen && b.state() != BreakerState::HalfOpen {
                assert!(reported, "HALF_OPEN left without an outcome");
                admitted_this_episode = 0;
            }
            assert!(admitted_this_episode <= 1, "{admitted_this_episode} calls let through in one HALF_OPEN");
            visited[b.state().index()] = true;
            assert!(b.health.len <= RING_SIZE);
        }
        assert_eq!(visited, [true; BreakerState::COUNT], "the sequence exercises every state");
    }
}
