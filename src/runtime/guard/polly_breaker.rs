//! Polly v8's circuit breaker (docs/references.md section 4) as a pure state machine over virtual time.
//!
//! CLOSED keeps a rolling health record over `sampling_duration_us`, split into 10 sub-windows,
//! and breaks when a handled failure leaves at least `minimum_throughput` calls in the record with
//! a failure ratio at or above `failure_ratio`. OPEN refuses calls for `break_duration_us`; the
//! first call after it (no timer: Polly is lazy) becomes the single probe of HALF_OPEN, while every
//! other call fails fast. Any success in HALF_OPEN closes the circuit and clears the record; any
//! handled failure opens it for another break.

use super::AttemptEnd;
use super::circuit_breaker::default_ignored;
use crate::sim::Micros;
use crate::sim::time::{US_PER_MS, US_PER_S};
use crate::vocab::{BreakerState, FailureKind};

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
pub fn default_ignored_polly() -> [bool; FailureKind::COUNT] {
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
    /// Indexed by `FailureKind::index`: failures the breaker does not handle release their permit
    /// and are not recorded.
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
    pub fn check(&self) -> Result<(), String> {
        if !(self.failure_ratio > 0.0 && self.failure_ratio <= 1.0) {
            return Err(format!("failure_ratio must be in (0, 1], got {}", self.failure_ratio));
        }
        if self.minimum_throughput < MIN_THROUGHPUT {
            return Err(format!("minimum_throughput must be at least {MIN_THROUGHPUT}"));
        }
        check_duration("sampling_duration_us", self.sampling_duration_us)?;
        check_duration("break_duration_us", self.break_duration_us)
    }

    fn is_ignored(&self, end: &AttemptEnd) -> bool {
        end.failure.is_some_and(|kind| self.ignored[kind.index()])
    }
}

fn check_duration(field: &str, value: Micros) -> Result<(), String> {
    if (MIN_DURATION_US..=MAX_DURATION_US).contains(&value) {
        Ok(())
    } else {
        Err(format!("{field} must be between {MIN_DURATION_US} (0.5 s) and {MAX_DURATION_US} (1 day), got {value}"))
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
    }

    /// Returns (throughput, failures) after recording.
    fn record_failure(&mut self, now: Micros) -> (u64, u64) {
        let current = self.current_window(now);
        self.ring[current].failures += 1;
        self.failures += 1;
        (self.successes + self.failures, self.failures)
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
    probe_in_flight: bool,
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
            probe_in_flight: false,
        }
    }

    pub fn options(&self) -> &PollyBreakerOptions {
        &self.options
    }

    pub fn state(&self) -> BreakerState {
        self.state
    }

    /// 1 while the HALF_OPEN probe is out, else 0.
    pub fn half_open_permits_in_use(&self) -> u32 {
        u32::from(self.probe_in_flight)
    }

    /// Whether a call may go ahead now. The first call at or after the end of the break becomes
    /// the probe (Polly compares `now >= blockedUntil`).
    pub fn try_acquire(&mut self, now: Micros) -> bool {
        match self.state {
            BreakerState::Closed => true,
            BreakerState::Open => {
                if now < self.blocked_until {
                    return false;
                }
                self.state = BreakerState::HalfOpen;
                self.blocked_until = now.saturating_add(self.options.break_duration_us);
                self.take_probe()
            }
            BreakerState::HalfOpen => self.take_probe(),
        }
    }

    /// An admitted call that never ran gives its permit back: if it was the probe, the next call
    /// probes instead. Must follow its `try_acquire` before anything else reaches the breaker.
    pub fn release(&mut self) {
        match self.state {
            BreakerState::HalfOpen => self.probe_in_flight = false,
            BreakerState::Closed | BreakerState::Open => {}
        }
    }

    /// Records a finished call. Polly does not know which call was the probe: any success in
    /// HALF_OPEN closes, any handled failure re-opens. Outcomes arriving while OPEN are dropped,
    /// since the record is cleared whenever the circuit closes and is judged only while closed.
    pub fn on_end(&mut self, now: Micros, end: AttemptEnd) {
        if self.options.is_ignored(&end) {
            self.release();
            return;
        }
        match (self.state, end.failure) {
            (BreakerState::Closed, None) => self.health.record_success(now),
            (BreakerState::Closed, Some(_)) => self.record_closed_failure(now),
            (BreakerState::HalfOpen, None) => self.close(),
            (BreakerState::HalfOpen, Some(_)) => self.open(now),
            (BreakerState::Open, None | Some(_)) => {}
        }
    }

    /// Always None: Polly moves from OPEN to HALF_OPEN only when a call arrives.
    pub fn wake_at(&self) -> Option<Micros> {
        None
    }

    /// Nothing is ever due (see `wake_at`); kept so every guard has the same shape.
    pub fn on_wake(&mut self, _now: Micros) {}

    fn take_probe(&mut self) -> bool {
        if self.probe_in_flight {
            return false;
        }
        self.probe_in_flight = true;
        true
    }

    fn record_closed_failure(&mut self, now: Micros) {
        let (throughput, failures) = self.health.record_failure(now);
        let ratio = failures as f64 / throughput as f64;
        if throughput >= u64::from(self.options.minimum_throughput) && ratio >= self.options.failure_ratio {
            self.open(now);
        }
    }

    fn open(&mut self, now: Micros) {
        self.state = BreakerState::Open;
        self.blocked_until = now.saturating_add(self.options.break_duration_us);
        self.probe_in_flight = false;
    }

    fn close(&mut self) {
        self.state = BreakerState::Closed;
        self.blocked_until = 0;
        self.probe_in_flight = false;
        self.health.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn ok() -> AttemptEnd {
        AttemptEnd::success(1_000)
    }

    fn fail() -> AttemptEnd {
        AttemptEnd::failed(FailureKind::TransientTransport, 1_000)
    }

    fn call(b: &mut PollyBreaker, now: Micros, end: AttemptEnd) {
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
            let message = o.check().unwrap_err();
            assert!(message.starts_with(field), "{message}");
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
        assert_eq!(b.half_open_permits_in_use(), 1);
        assert!(!b.try_acquire(5 * S), "other calls fail fast while the probe is out");
        assert!(!b.try_acquire(60 * S), "however long the probe takes");
    }

    #[test]
    fn probe_success_closes_and_clears_the_record() {
        let mut b = probing();
        b.on_end(6 * S, ok());
        assert_eq!(b.state(), BreakerState::Closed);
        assert_eq!(b.half_open_permits_in_use(), 0);
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
    fn release_gives_the_probe_back() {
        let mut b = probing();
        b.release();
        assert_eq!(b.half_open_permits_in_use(), 0);
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert!(b.try_acquire(5 * S), "the next call probes");
        assert!(!b.try_acquire(5 * S));
    }

    #[test]
    fn release_in_closed_and_open_does_nothing() {
        let mut b = PollyBreaker::new(options(2));
        b.release();
        assert_eq!(b.state(), BreakerState::Closed);
        let mut b = opened();
        b.release();
        assert!(!b.try_acquire(S));
    }

    #[test]
    fn ignored_kinds_are_not_recorded() {
        let mut b = PollyBreaker::new(options(4));
        for kind in [FailureKind::InvalidInput, FailureKind::Unauthorized, FailureKind::Canceled] {
            for _ in 0..5 {
                call(&mut b, 0, AttemptEnd::failed(kind, 1_000));
            }
        }
        assert_eq!(b.state(), BreakerState::Closed);
        call(&mut b, 0, ok());
        call(&mut b, 0, ok());
        call(&mut b, 0, ok());
        call(&mut b, 0, fail());
        assert_eq!(b.state(), BreakerState::Closed, "1 of 4 handled calls failed");
    }

    #[test]
    fn an_ignored_probe_releases_its_permit() {
        let mut b = probing();
        b.on_end(6 * S, AttemptEnd::failed(FailureKind::Canceled, 1_000));
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert!(b.try_acquire(6 * S), "the next call probes");
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
                b.release();
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

    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self, bound: u64) -> u64 {
            self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) % bound
        }
    }

    #[test]
    fn random_sequences_never_panic_and_allow_one_probe() {
        let mut b = PollyBreaker::new(options(5));
        let mut rng = Lcg(7);
        let mut now = 0;
        let mut in_flight = 0u32;
        let mut visited = [false; BreakerState::COUNT];
        for _ in 0..200_000 {
            now += rng.next(400 * MS);
            match rng.next(6) {
                0 | 1 => in_flight += u32::from(b.try_acquire(now)),
                2 if in_flight > 0 => {
                    in_flight -= 1;
                    b.release();
                }
                3 => b.on_wake(now),
                _ if in_flight > 0 => {
                    in_flight -= 1;
                    let kind = FailureKind::ALL[rng.next(FailureKind::COUNT as u64) as usize];
                    let failure = (rng.next(2) == 0).then_some(kind);
                    b.on_end(now, AttemptEnd { failure, duration_us: rng.next(S) });
                }
                _ => {}
            }
            visited[b.state().index()] = true;
            assert!(b.half_open_permits_in_use() <= 1);
            assert!(b.health.len <= RING_SIZE);
        }
        assert_eq!(visited, [true; BreakerState::COUNT], "the sequence exercises every state");
    }
}
