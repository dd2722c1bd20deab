//! resilience4j's CircuitBreaker (docs/references.md section 4) as a pure state machine over virtual time.
//!
//! CLOSED records outcomes in a sliding window (the last N calls, or the last N one-second
//! buckets) and opens once at least `minimum_number_of_calls` are recorded and the failure rate or
//! the slow-call rate reaches its threshold. OPEN refuses calls until the wait has passed, then the
//! next call (or the wake, when automatic transition is on) moves to HALF_OPEN. HALF_OPEN hands out
//! `permitted_number_of_calls_in_half_open_state` permits and judges a fresh count window of that
//! size: at or above a threshold it opens again, below both it closes.
//!
//! As in resilience4j, outcomes go to the state the breaker is in when they arrive, not the one
//! their call was admitted in: a call admitted while CLOSED that ends while HALF_OPEN is judged in
//! the half-open window, and if it ends ignored (or cancelled, or refused by a later guard) it
//! gives back a half-open permit it never held (HalfOpenState.releasePermission increments its
//! counter unconditionally), so more calls than permitted may go out in that episode.

use super::compile::Compile;
use super::compile::Invalid;
use super::contract::{Ask, AttemptEnd, Ending, Guard, GuardConfig, Parting, Seat, Verdict, report_breaker};
use crate::runtime::command::{Command, Effects};
use crate::scenario::{FieldPath, RawTable, ScenarioError, read_table};
use crate::sim::Micros;
use crate::sim::time::{US_PER_MS, US_PER_S};
use crate::vocab::{BreakerState, FailureKind, Refusal};
use serde::{Deserialize, Serialize};

/// Our bound, not resilience4j's: windows are allocated up front, so their size must stay sane.
pub const MAX_WINDOW_SIZE: u32 = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlidingWindowType {
    /// The last `sliding_window_size` calls.
    CountBased,
    /// The calls of the last `sliding_window_size` whole seconds of virtual time.
    TimeBased,
}

/// The failure kinds that never enter a failure rate: security and contract errors say nothing
/// about the dependency's health (docs/essay.md section 14), so they count neither as calls nor as failures.
pub fn default_ignored() -> [bool; FailureKind::COUNT] {
    FailureKind::ALL.map(FailureKind::is_request_fault)
}

/// resilience4j's CircuitBreakerConfig; durations in microseconds of virtual time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CircuitBreakerConfig {
    /// Percent, in (0, 100].
    pub failure_rate_threshold: f64,
    /// Percent, in (0, 100].
    pub slow_call_rate_threshold: f64,
    /// A call is slow when it takes strictly longer than this.
    pub slow_call_duration_threshold_us: Micros,
    pub minimum_number_of_calls: u32,
    pub sliding_window_type: SlidingWindowType,
    /// Calls (count based) or seconds (time based).
    pub sliding_window_size: u32,
    pub wait_duration_in_open_state_us: Micros,
    pub permitted_number_of_calls_in_half_open_state: u32,
    /// 0 means off: HALF_OPEN waits for its permitted calls however long they take.
    pub max_wait_duration_in_half_open_state_us: Micros,
    pub automatic_transition_from_open_to_half_open_enabled: bool,
    /// Indexed by `FailureKind::index`: these failures release their permit and are not recorded.
    pub ignored: [bool; FailureKind::COUNT],
}

impl Default for CircuitBreakerConfig {
    fn default() -> Self {
        CircuitBreakerConfig {
            failure_rate_threshold: 50.0,
            slow_call_rate_threshold: 100.0,
            slow_call_duration_threshold_us: 60 * US_PER_S,
            minimum_number_of_calls: 100,
            sliding_window_type: SlidingWindowType::CountBased,
            sliding_window_size: 100,
            wait_duration_in_open_state_us: 60 * US_PER_S,
            permitted_number_of_calls_in_half_open_state: 10,
            max_wait_duration_in_half_open_state_us: 0,
            automatic_transition_from_open_to_half_open_enabled: false,
            ignored: default_ignored(),
        }
    }
}

impl CircuitBreakerConfig {
    /// The ranges resilience4j's builder enforces, plus our allocation bound on window sizes.
    pub fn check(&self) -> Result<(), Invalid> {
        check_percent("failure_rate_threshold", self.failure_rate_threshold)?;
        check_percent("slow_call_rate_threshold", self.slow_call_rate_threshold)?;
        if self.slow_call_duration_threshold_us < 1 {
            return Err(Invalid::new(
                "slow_call_duration_threshold_us",
                "slow_call_duration_threshold_us must be at least 1".to_string(),
            ));
        }
        check_at_least_one("minimum_number_of_calls", self.minimum_number_of_calls)?;
        check_size("sliding_window_size", self.sliding_window_size)?;
        check_size("permitted_number_of_calls_in_half_open_state", self.permitted_number_of_calls_in_half_open_state)?;
        if self.wait_duration_in_open_state_us < US_PER_MS {
            return Err(Invalid::new(
                "wait_duration_in_open_state_us",
                "wait_duration_in_open_state_us must be at least 1000 (1 ms)".to_string(),
            ));
        }
        Ok(())
    }

    fn is_ignored(&self, end: &AttemptEnd) -> bool {
        end.failure.is_some_and(|kind| self.ignored[kind.index()])
    }

    /// resilience4j caps the minimum at the window size for count-based windows only: a time
    /// window has no fixed capacity.
    fn closed_minimum(&self) -> u32 {
        match self.sliding_window_type {
            SlidingWindowType::CountBased => self.minimum_number_of_calls.min(self.sliding_window_size),
            SlidingWindowType::TimeBased => self.minimum_number_of_calls,
        }
    }

    /// HALF_OPEN judges a count window of the permitted size with the same capped minimum.
    fn half_open_minimum(&self) -> u32 {
        self.minimum_number_of_calls.min(self.permitted_number_of_calls_in_half_open_state)
    }
}

fn check_percent(field: &'static str, value: f64) -> Result<(), Invalid> {
    if value > 0.0 && value <= 100.0 {
        Ok(())
    } else {
        Err(Invalid::new(field, format!("{field} must be in (0, 100], got {value}")))
    }
}

fn check_at_least_one(field: &'static str, value: u32) -> Result<(), Invalid> {
    if value >= 1 { Ok(()) } else { Err(Invalid::new(field, format!("{field} must be at least 1"))) }
}

fn check_size(field: &'static str, value: u32) -> Result<(), Invalid> {
    check_at_least_one(field, value)?;
    if value <= MAX_WINDOW_SIZE {
        Ok(())
    } else {
        Err(Invalid::new(field, format!("{field} must be at most {MAX_WINDOW_SIZE}")))
    }
}

/// Aggregate counts of a window; a slow call may also be a failure. 64 bits because a time window
/// has no bound on the calls one second may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Tally {
    calls: u64,
    failures: u64,
    slow: u64,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.calls += other.calls;
        self.failures += other.failures;
        self.slow += other.slow;
    }

    fn remove(&mut self, other: Tally) {
        debug_assert!(self.calls >= other.calls && self.failures >= other.failures && self.slow >= other.slow);
        self.calls = self.calls.saturating_sub(other.calls);
        self.failures = self.failures.saturating_sub(other.failures);
        self.slow = self.slow.saturating_sub(other.slow);
    }

    fn one(failed: bool, slow: bool) -> Tally {
        Tally { calls: 1, failures: u64::from(failed), slow: u64::from(slow) }
    }
}

/// The last `capacity` outcomes; each slot holds the tally of one call (or nothing yet).
#[derive(Debug, Clone)]
struct CountWindow {
    slots: Vec<Tally>,
    next: usize,
    total: Tally,
}

impl CountWindow {
    fn new(capacity: u32) -> Self {
        CountWindow { slots: vec![Tally::default(); capacity.max(1) as usize], next: 0, total: Tally::default() }
    }

    fn record(&mut self, outcome: Tally) -> Tally {
        let evicted = std::mem::replace(&mut self.slots[self.next], outcome);
        self.total.remove(evicted);
        self.total.add(outcome);
        self.next = (self.next + 1) % self.slots.len();
        debug_assert!(self.slots.len() > 1_024 || sum(&self.slots) == self.total, "the total is the sum of the slots");
        self.total
    }

    fn reset(&mut self) {
        self.slots.fill(Tally::default());
        self.next = 0;
        self.total = Tally::default();
    }
}

/// One bucket per second of virtual time for the last `buckets.len()` seconds, the current one
/// included (resilience4j's partial aggregations).
#[derive(Debug, Clone)]
struct TimeWindow {
    buckets: Vec<Tally>,
    /// The second the newest bucket belongs to.
    head_second: u64,
    total: Tally,
}

impl TimeWindow {
    fn new(seconds: u32) -> Self {
        TimeWindow { buckets: vec![Tally::default(); seconds.max(1) as usize], head_second: 0, total: Tally::default() }
    }

    fn record(&mut self, now: Micros, outcome: Tally) -> Tally {
        let second = now / US_PER_S;
        self.advance_to(second);
        let index = self.index_of(self.head_second);
        self.buckets[index].add(outcome);
        self.total.add(outcome);
        debug_assert!(
            self.buckets.len() > 1_024 || sum(&self.buckets) == self.total,
            "the total is the sum of the buckets"
        );
        self.total
    }

    /// Empties the buckets of the seconds between the old head and `second`; a clock that goes
    /// backwards keeps recording into the newest bucket.
    fn advance_to(&mut self, second: u64) {
        if second <= self.head_second {
            return;
        }
        let steps = (second - self.head_second).min(self.buckets.len() as u64);
        for back in (0..steps).rev() {
            let index = self.index_of(second - back);
            let evicted = std::mem::take(&mut self.buckets[index]);
            self.total.remove(evicted);
        }
        self.head_second = second;
    }

    fn index_of(&self, second: u64) -> usize {
        (second % self.buckets.len() as u64) as usize
    }

    fn reset(&mut self) {
        self.buckets.fill(Tally::default());
        self.total = Tally::default();
    }
}

/// Checks a window's running total (debug builds, small windows).
fn sum(tallies: &[Tally]) -> Tally {
    let mut total = Tally::default();
    for &t in tallies {
        total.add(t);
    }
    total
}

/// The CLOSED state's window, of the configured type (an enum, not a trait object).
#[derive(Debug, Clone)]
enum ClosedWindow {
    Count(CountWindow),
    Time(TimeWindow),
}

impl ClosedWindow {
    fn new(config: &CircuitBreakerConfig) -> Self {
        match config.sliding_window_type {
            SlidingWindowType::CountBased => ClosedWindow::Count(CountWindow::new(config.sliding_window_size)),
            SlidingWindowType::TimeBased => ClosedWindow::Time(TimeWindow::new(config.sliding_window_size)),
        }
    }

    fn record(&mut self, now: Micros, outcome: Tally) -> Tally {
        match self {
            ClosedWindow::Count(window) => window.record(outcome),
            ClosedWindow::Time(window) => window.record(now, outcome),
        }
    }

    fn reset(&mut self) {
        match self {
            ClosedWindow::Count(window) => window.reset(),
            ClosedWindow::Time(window) => window.reset(),
        }
    }
}

/// What a window's tally says about the thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Judgement {
    BelowMinimumCalls,
    BelowThresholds,
    AboveThresholds,
}

fn judge(tally: Tally, minimum: u32, config: &CircuitBreakerConfig) -> Judgement {
    if tally.calls == 0 || tally.calls < u64::from(minimum) {
        return Judgement::BelowMinimumCalls;
    }
    let calls = tally.calls as f64;
    let failure_rate = tally.failures as f64 * 100.0 / calls;
    let slow_call_rate = tally.slow as f64 * 100.0 / calls;
    if failure_rate >= config.failure_rate_threshold || slow_call_rate >= config.slow_call_rate_threshold {
        Judgement::AboveThresholds
    } else {
        Judgement::BelowThresholds
    }
}

/// resilience4j's CircuitBreakerStateMachine, without threads: the caller passes virtual time in
/// and asks `wake_at` when a timed transition is due.
#[derive(Debug, Clone)]
pub struct CircuitBreaker {
    config: CircuitBreakerConfig,
    state: BreakerState,
    /// When the current state was entered.
    since: Micros,
    closed_window: ClosedWindow,
    half_open_window: CountWindow,
    /// Counts down as HALF_OPEN admits calls; a release adds one, whoever releases (it may
    /// exceed the permitted number, as resilience4j's counter does).
    half_open_permits_left: u32,
}

impl CircuitBreaker {
    /// Allocates both windows now; nothing allocates afterwards. Expects a checked config (an
    /// unchecked one never panics, but sizes below 1 act as 1).
    pub fn new(config: CircuitBreakerConfig) -> Self {
        CircuitBreaker {
            closed_window: ClosedWindow::new(&config),
            half_open_window: CountWindow::new(config.permitted_number_of_calls_in_half_open_state),
            config,
            state: BreakerState::Closed,
            since: 0,
            half_open_permits_left: 0,
        }
    }

    pub fn config(&self) -> &CircuitBreakerConfig {
        &self.config
    }

    pub fn state(&self) -> BreakerState {
        self.state
    }

    /// Whether a call may go ahead now. OPEN moves to HALF_OPEN only strictly after the wait (as
    /// resilience4j compares instants with `isAfter`); a due timed transition is applied first so
    /// the answer does not depend on whether the engine delivered the wake before this call.
    pub fn try_acquire(&mut self, now: Micros) -> bool {
        self.on_wake(now);
        match self.state {
            BreakerState::Closed => true,
            BreakerState::Open => {
                if now > self.since.saturating_add(self.config.wait_duration_in_open_state_us) {
                    self.enter_half_open(now);
                    self.take_half_open_permit()
                } else {
                    false
                }
            }
            BreakerState::HalfOpen => self.take_half_open_permit(),
        }
    }

    /// Records how an admitted call ended. An ignored failure, a cancellation and a refusal by a
    /// later guard only release a permit (resilience4j's ignored exceptions, and
    /// CircuitBreakerFuture's cancellation). Outcomes that arrive while OPEN (calls admitted
    /// before it opened) are dropped: resilience4j records them only for reporting, and the
    /// window is replaced before it is judged again.
    pub fn on_end(&mut self, now: Micros, ending: Ending) {
        self.on_wake(now);
        let end = match ending {
            Ending::Outcome(end) if !self.config.is_ignored(&end) => end,
            Ending::Outcome(_) | Ending::Canceled | Ending::Refused => return self.release(),
        };
        let outcome = Tally::one(end.failure.is_some(), end.duration_us > self.config.slow_call_duration_threshold_us);
        match self.state {
            BreakerState::Closed => self.record_closed(now, outcome),
            BreakerState::Open => {}
            BreakerState::HalfOpen => self.record_half_open(now, outcome),
        }
    }

    /// resilience4j's releasePermission: in HALF_OPEN the counter goes up by one, whether or not
    /// the caller took its permit in this episode; elsewhere nothing.
    fn release(&mut self) {
        match self.state {
            BreakerState::HalfOpen => self.half_open_permits_left = self.half_open_permits_left.saturating_add(1),
            BreakerState::Closed | BreakerState::Open => {}
        }
    }

    /// When a timed transition is due: OPEN -> HALF_OPEN with automatic transition, HALF_OPEN ->
    /// OPEN when a maximum wait in half-open is set.
    pub fn wake_at(&self) -> Option<Micros> {
        match self.state {
            BreakerState::Closed => None,
            BreakerState::Open => self
                .config
                .automatic_transition_from_open_to_half_open_enabled
                .then(|| self.since.saturating_add(self.config.wait_duration_in_open_state_us)),
            BreakerState::HalfOpen => {
                let max_wait = self.config.max_wait_duration_in_half_open_state_us;
                (max_wait > 0).then(|| self.since.saturating_add(max_wait))
            }
        }
    }

    /// Performs the transition `wake_at` announced if it is due at `now`; otherwise nothing, so a
    /// stale or early wake is harmless.
    pub fn on_wake(&mut self, now: Micros) {
        let Some(due) = self.wake_at() else { return };
        if now < due {
            return;
        }
        match self.state {
            BreakerState::Open => self.enter_half_open(now),
            BreakerState::HalfOpen => self.enter_open(now),
            BreakerState::Closed => {}
        }
    }

    fn permitted(&self) -> u32 {
        self.config.permitted_number_of_calls_in_half_open_state.max(1)
    }

    fn take_half_open_permit(&mut self) -> bool {
        if self.half_open_permits_left == 0 {
            return false;
        }
        self.half_open_permits_left -= 1;
        true
    }

    fn record_closed(&mut self, now: Micros, outcome: Tally) {
        let tally = self.closed_window.record(now, outcome);
        match judge(tally, self.config.closed_minimum(), &self.config) {
            Judgement::AboveThresholds => self.enter_open(now),
            Judgement::BelowThresholds | Judgement::BelowMinimumCalls => {}
        }
    }

    fn record_half_open(&mut self, now: Micros, outcome: Tally) {
        let tally = self.half_open_window.record(outcome);
        match judge(tally, self.config.half_open_minimum(), &self.config) {
            Judgement::AboveThresholds => self.enter_open(now),
            Judgement::BelowThresholds => self.enter_closed(now),
            Judgement::BelowMinimumCalls => {}
        }
    }

    fn enter_open(&mut self, now: Micros) {
        self.transition(BreakerState::Open, now);
    }

    fn enter_half_open(&mut self, now: Micros) {
        self.transition(BreakerState::HalfOpen, now);
        self.half_open_window.reset();
        self.half_open_permits_left = self.permitted();
    }

    /// Closing starts a fresh window: the outcomes that opened the breaker are history.
    fn enter_closed(&mut self, now: Micros) {
        self.transition(BreakerState::Closed, now);
        self.closed_window.reset();
    }

    /// Moves along one of resilience4j's edges: CLOSED -> OPEN -> HALF_OPEN -> CLOSED or OPEN.
    fn transition(&mut self, to: BreakerState, now: Micros) {
        debug_assert!(
            matches!(
                (self.state, to),
                (BreakerState::Closed, BreakerState::Open)
                    | (BreakerState::Open, BreakerState::HalfOpen)
                    | (BreakerState::HalfOpen, BreakerState::Closed | BreakerState::Open)
            ),
            "no edge {:?} -> {to:?} in resilience4j's breaker",
            self.state
        );
        self.state = to;
        self.since = now;
    }
}

/// A resilience4j breaker as a compiled guard: its configuration and its label's index.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Resilience4jSpec {
    pub config: CircuitBreakerConfig,
    pub label: u16,
}

/// A live resilience4j breaker in a pipeline: reports its transitions under its label and asks
/// for a wake whenever its next timed transition moves.
#[derive(Debug)]
pub struct Resilience4jGuard {
    breaker: CircuitBreaker,
    label: u16,
    /// The timed transition last announced, so each is announced once.
    wake: Option<Micros>,
}

impl GuardConfig for Resilience4jSpec {
    type Live = Resilience4jGuard;

    fn build(&self) -> Resilience4jGuard {
        Resilience4jGuard { breaker: CircuitBreaker::new(self.config), label: self.label, wake: None }
    }
}

impl Resilience4jGuard {
    /// Runs one operation on the breaker and reports what it changed.
    fn step<T>(&mut self, now: Micros, out: &mut impl Effects, op: impl FnOnce(&mut CircuitBreaker) -> T) -> T {
        let before = self.breaker.state();
        let result = op(&mut self.breaker);
        report_breaker(self.label, before, self.breaker.state(), out);
        let due = self.breaker.wake_at();
        if due != self.wake
            && let Some(at) = due
        {
            out.command(Command::WakeGuards { at: at.max(now) });
        }
        self.wake = due;
        result
    }
}

impl Guard for Resilience4jGuard {
    fn admit(&mut self, now: Micros, _ask: &Ask, _seat: Seat, out: &mut impl Effects) -> Verdict {
        if self.step(now, out, |b| b.try_acquire(now)) { Verdict::Pass } else { Verdict::Refuse(Refusal::CircuitOpen) }
    }

    fn undo(&mut self, now: Micros, _parting: Parting, out: &mut impl Effects) {
        self.step(now, out, |b| b.on_end(now, Ending::Refused));
    }

    fn end(&mut self, now: Micros, parting: Parting, out: &mut impl Effects) {
        self.step(now, out, |b| b.on_end(now, parting.ending));
    }

    fn on_wake(&mut self, now: Micros, out: &mut impl Effects) {
        if self.breaker.wake_at().is_some_and(|t| t <= now) {
            self.step(now, out, |b| b.on_wake(now));
        }
    }

    fn breaker_state(&self) -> Option<(u16, BreakerState)> {
        Some((self.label, self.breaker.state()))
    }
}

// ---------------------------------------------------------------------------------------------
// The file's table

crate::named_enum! {
    enum WindowType { CountBased => "count_based", TimeBased => "time_based" }
}

/// `[[policy.<name>.circuit_breaker]]` with `kind = "resilience4j"` (the default): one breaker
/// per circuit it covers, with resilience4j's CircuitBreakerConfig names (durations in ms).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct Resilience4jTable {
    #[serde(default)]
    pub kind: Option<String>,
    /// The dependency it guards; every dependency when absent.
    #[serde(default)]
    pub dependency: Option<String>,
    /// dependency (default) or dependency_operation (read, write and control circuits).
    #[serde(default)]
    pub circuit_key: Option<String>,
    /// Failure kinds that only release their permit (default INVALID_INPUT and UNAUTHORIZED).
    #[serde(default)]
    pub ignore: Option<Vec<String>>,
    #[serde(default)]
    pub failure_rate_threshold: Option<f64>,
    #[serde(default)]
    pub slow_call_rate_threshold: Option<f64>,
    #[serde(default)]
    pub slow_call_duration_threshold_ms: Option<f64>,
    #[serde(default)]
    pub minimum_number_of_calls: Option<u32>,
    /// count_based or time_based
    #[serde(default)]
    pub sliding_window_type: Option<String>,
    #[serde(default)]
    pub sliding_window_size: Option<u32>,
    #[serde(default)]
    pub wait_duration_in_open_state_ms: Option<f64>,
    #[serde(default)]
    pub permitted_number_of_calls_in_half_open_state: Option<u32>,
    #[serde(default)]
    pub max_wait_duration_in_half_open_state_ms: Option<f64>,
    #[serde(default)]
    pub automatic_transition_from_open_to_half_open_enabled: Option<bool>,
}

crate::scenario::types::tables_only!(Resilience4jTable);

/// Reads one entry and adds its breakers.
pub fn compile<G: From<Resilience4jSpec>>(
    cx: &mut Compile<G>,
    path: &FieldPath,
    raw: &RawTable,
) -> Result<(), ScenarioError> {
    let t: Resilience4jTable = read_table(cx.source, path, raw)?;
    let d = CircuitBreakerConfig::default();
    let window =
        cx.named(&path.key("sliding_window_type"), t.sliding_window_type.as_deref(), WindowType::CountBased)?;
    let duration = |field: &str, ms: Option<f64>, default_us| cx.duration(&path.key(field), ms, default_us);
    let config = CircuitBreakerConfig {
        failure_rate_threshold: t.failure_rate_threshold.unwrap_or(d.failure_rate_threshold),
        slow_call_rate_threshold: t.slow_call_rate_threshold.unwrap_or(d.slow_call_rate_threshold),
        slow_call_duration_threshold_us: duration(
            "slow_call_duration_threshold_ms",
            t.slow_call_duration_threshold_ms,
            d.slow_call_duration_threshold_us,
        )?,
        minimum_number_of_calls: t.minimum_number_of_calls.unwrap_or(d.minimum_number_of_calls),
        sliding_window_type: match window {
            WindowType::TimeBased => SlidingWindowType::TimeBased,
            WindowType::CountBased => SlidingWindowType::CountBased,
        },
        sliding_window_size: t.sliding_window_size.unwrap_or(d.sliding_window_size),
        wait_duration_in_open_state_us: duration(
            "wait_duration_in_open_state_ms",
            t.wait_duration_in_open_state_ms,
            d.wait_duration_in_open_state_us,
        )?,
        permitted_number_of_calls_in_half_open_state: t
            .permitted_number_of_calls_in_half_open_state
            .unwrap_or(d.permitted_number_of_calls_in_half_open_state),
        max_wait_duration_in_half_open_state_us: duration(
            "max_wait_duration_in_half_open_state_ms",
            t.max_wait_duration_in_half_open_state_ms,
            d.max_wait_duration_in_half_open_state_us,
        )?,
        automatic_transition_from_open_to_half_open_enabled: t
            .automatic_transition_from_open_to_half_open_enabled
            .unwrap_or(d.automatic_transition_from_open_to_half_open_enabled),
        ignored: cx.ignored(&path.key("ignore"), t.ignore.as_deref())?,
    };
    cx.check(path, config.check())?;
    let before = cx.guards.len();
    let on_call = !config.automatic_transition_from_open_to_half_open_enabled;
    cx.add_breakers(path, &t.dependency, t.circuit_key.as_deref(), on_call, |label| {
        Resilience4jSpec { config, label }.into()
    })?;
    // Each instance holds a window of sliding_window_size calls or seconds.
    let instances = (cx.guards.len() - before) as u64;
    let per_instance = u64::from(config.sliding_window_size.max(1)) * std::mem::size_of::<Tally>() as u64;
    cx.add_window_bytes(path.key("sliding_window_size"), instances * per_instance);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::guard::testing::{Lcg, failed, ok};

    const S: Micros = US_PER_S;

    fn count_config(size: u32, minimum: u32) -> CircuitBreakerConfig {
        CircuitBreakerConfig {
            sliding_window_size: size,
            minimum_number_of_calls: minimum,
            permitted_number_of_calls_in_half_open_state: 4,
            wait_duration_in_open_state_us: 10 * S,
            ..CircuitBreakerConfig::default()
        }
    }

    fn fail() -> Ending {
        failed(FailureKind::Overloaded)
    }

    /// Acquires and ends one call at `now`, asserting it was admitted.
    fn call(b: &mut CircuitBreaker, now: Micros, end: impl Into<Ending>) {
        assert!(b.try_acquire(now), "call at {now} refused in {:?}", b.state());
        b.on_end(now, end.into());
    }

    /// How many calls the breaker admits at `now` before it refuses one (at most 100).
    fn admits(b: &mut CircuitBreaker, now: Micros) -> usize {
        (0..100).take_while(|_| b.try_acquire(now)).count()
    }

    /// Half-open judges 4 calls: the minimum of 100 is capped at the 4 permitted calls, while the
    /// closed window of 2 caps it at 2 there.
    fn four_permits() -> CircuitBreakerConfig {
        count_config(2, 100)
    }

    /// A breaker opened at time 0 by 2 failures in a count window of 2.
    fn opened(config: CircuitBreakerConfig) -> CircuitBreaker {
        let config = CircuitBreakerConfig {
            sliding_window_type: SlidingWindowType::CountBased,
            sliding_window_size: 2,
            ..config
        };
        let mut b = CircuitBreaker::new(config);
        call(&mut b, 0, fail());
        call(&mut b, 0, fail());
        assert_eq!(b.state(), BreakerState::Open);
        b
    }

    /// Opened at 0, then half-open at 10 s + 1 us (the first call after the wait, already admitted).
    fn half_open(config: CircuitBreakerConfig) -> CircuitBreaker {
        let mut b = opened(config);
        assert!(b.try_acquire(10 * S + 1));
        assert_eq!(b.state(), BreakerState::HalfOpen);
        b
    }

    #[test]
    fn defaults_are_resilience4j_defaults() {
        let c = CircuitBreakerConfig::default();
        assert_eq!(c.failure_rate_threshold, 50.0);
        assert_eq!(c.slow_call_rate_threshold, 100.0);
        assert_eq!(c.slow_call_duration_threshold_us, 60 * S);
        assert_eq!(c.minimum_number_of_calls, 100);
        assert_eq!(c.sliding_window_type, SlidingWindowType::CountBased);
        assert_eq!(c.sliding_window_size, 100);
        assert_eq!(c.wait_duration_in_open_state_us, 60 * S);
        assert_eq!(c.permitted_number_of_calls_in_half_open_state, 10);
        assert_eq!(c.max_wait_duration_in_half_open_state_us, 0);
        assert!(!c.automatic_transition_from_open_to_half_open_enabled);
        assert!(c.ignored[FailureKind::InvalidInput.index()]);
        assert!(c.ignored[FailureKind::Unauthorized.index()]);
        assert_eq!(c.ignored.iter().filter(|&&i| i).count(), 2);
        assert_eq!(c.check(), Ok(()));
    }

    #[test]
    fn check_names_the_field_out_of_range() {
        let bad = |c: CircuitBreakerConfig, field: &str| {
            let invalid = c.check().unwrap_err();
            assert_eq!(invalid.field, field, "{invalid}");
            assert!(invalid.message.starts_with(field), "{invalid}");
        };
        let d = CircuitBreakerConfig::default();
        bad(CircuitBreakerConfig { failure_rate_threshold: 0.0, ..d }, "failure_rate_threshold");
        bad(CircuitBreakerConfig { failure_rate_threshold: 100.1, ..d }, "failure_rate_threshold");
        bad(CircuitBreakerConfig { failure_rate_threshold: f64::NAN, ..d }, "failure_rate_threshold");
        bad(CircuitBreakerConfig { slow_call_rate_threshold: -1.0, ..d }, "slow_call_rate_threshold");
        bad(CircuitBreakerConfig { slow_call_duration_threshold_us: 0, ..d }, "slow_call_duration_threshold_us");
        bad(CircuitBreakerConfig { minimum_number_of_calls: 0, ..d }, "minimum_number_of_calls");
        bad(CircuitBreakerConfig { sliding_window_size: 0, ..d }, "sliding_window_size");
        bad(CircuitBreakerConfig { sliding_window_size: MAX_WINDOW_SIZE + 1, ..d }, "sliding_window_size");
        bad(
            CircuitBreakerConfig { permitted_number_of_calls_in_half_open_state: 0, ..d },
            "permitted_number_of_calls_in_half_open_state",
        );
        bad(CircuitBreakerConfig { wait_duration_in_open_state_us: 999, ..d }, "wait_duration_in_open_state_us");
        assert_eq!(CircuitBreakerConfig { failure_rate_threshold: 100.0, ..d }.check(), Ok(()));
    }

    #[test]
    fn no_transition_below_minimum_number_of_calls() {
        let mut b = CircuitBreaker::new(count_config(10, 5));
        for _ in 0..4 {
            call(&mut b, 0, fail());
        }
        assert_eq!(b.state(), BreakerState::Closed, "4 of 4 failed, but 4 < minimum 5");
        call(&mut b, 0, fail());
        assert_eq!(b.state(), BreakerState::Open, "5 of 5 failed: 100 % >= 50 %");
    }

    #[test]
    fn failure_rate_exactly_at_threshold_opens() {
        let mut b = CircuitBreaker::new(count_config(10, 10));
        for i in 0..9 {
            call(&mut b, 0, if i < 5 { fail() } else { ok() });
        }
        assert_eq!(b.state(), BreakerState::Closed, "9 calls < minimum 10");
        call(&mut b, 0, ok());
        assert_eq!(b.state(), BreakerState::Open, "5 of 10 = 50 % >= 50 %");
    }

    #[test]
    fn failure_rate_just_below_threshold_stays_closed() {
        let mut b = CircuitBreaker::new(count_config(10, 10));
        for i in 0..10 {
            call(&mut b, 0, if i < 4 { fail() } else { ok() });
        }
        assert_eq!(b.state(), BreakerState::Closed, "40 % < 50 %");
    }

    #[test]
    fn minimum_above_count_window_size_is_capped_at_the_size() {
        let mut b = CircuitBreaker::new(count_config(4, 100));
        for _ in 0..4 {
            call(&mut b, 0, fail());
        }
        assert_eq!(b.state(), BreakerState::Open, "minimum 100 acts as 4 for a window of 4");
    }

    #[test]
    fn slow_calls_open_by_slow_call_rate_and_equal_is_not_slow() {
        let config = CircuitBreakerConfig {
            slow_call_rate_threshold: 50.0,
            slow_call_duration_threshold_us: 2 * S,
            ..count_config(4, 4)
        };
        let mut b = CircuitBreaker::new(config);
        for _ in 0..4 {
            call(&mut b, 0, AttemptEnd::success(2 * S));
        }
        assert_eq!(b.state(), BreakerState::Closed, "exactly the threshold is not slow");
        call(&mut b, 0, AttemptEnd::success(2 * S + 1));
        assert_eq!(b.state(), BreakerState::Closed, "1 of 4 slow = 25 %");
        call(&mut b, 0, AttemptEnd::success(2 * S + 1));
        assert_eq!(b.state(), BreakerState::Open, "2 of 4 slow = 50 %, all of them successes");
    }

    #[test]
    fn default_slow_call_rate_needs_every_call_slow() {
        let config = CircuitBreakerConfig { slow_call_duration_threshold_us: S, ..count_config(4, 4) };
        let mut b = CircuitBreaker::new(config);
        call(&mut b, 0, AttemptEnd::success(S));
        for _ in 0..3 {
            call(&mut b, 0, AttemptEnd::success(S + 1));
        }
        assert_eq!(b.state(), BreakerState::Closed, "75 % slow < 100 %");
        call(&mut b, 0, AttemptEnd::success(S + 1));
        assert_eq!(b.state(), BreakerState::Open, "the fast call slid out: 100 % slow");
    }

    #[test]
    fn count_window_slides() {
        let mut b = CircuitBreaker::new(count_config(4, 4));
        call(&mut b, 0, fail());
        for _ in 0..4 {
            call(&mut b, 0, ok());
        }
        call(&mut b, 0, fail());
        assert_eq!(b.state(), BreakerState::Closed, "the first failure slid out: 1 of 4 failed");
        call(&mut b, 0, fail());
        assert_eq!(b.state(), BreakerState::Open, "2 of the last 4 failed");
    }

    #[test]
    fn open_refuses_until_strictly_after_the_wait_then_the_next_call_half_opens() {
        let mut b = opened(count_config(2, 2));
        assert!(!b.try_acquire(5 * S));
        assert_eq!(b.wake_at(), None, "no automatic transition by default");
        assert!(!b.try_acquire(10 * S), "resilience4j needs the clock strictly after the wait");
        assert_eq!(b.state(), BreakerState::Open);
        assert!(b.try_acquire(10 * S + 1));
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert_eq!(admits(&mut b, 10 * S + 1), 3, "the first call took one of the 4 permits");
    }

    #[test]
    fn half_open_admits_exactly_the_permitted_number() {
        let mut b = half_open(four_permits());
        for _ in 0..3 {
            assert!(b.try_acquire(11 * S));
        }
        assert!(!b.try_acquire(11 * S), "the fifth call is not permitted");
        assert_eq!(b.state(), BreakerState::HalfOpen);
    }

    #[test]
    fn half_open_below_threshold_closes_with_a_fresh_window() {
        let mut b = half_open(four_permits());
        for _ in 0..3 {
            assert!(b.try_acquire(11 * S));
        }
        b.on_end(11 * S, fail());
        b.on_end(11 * S, ok());
        b.on_end(11 * S, ok());
        assert_eq!(b.state(), BreakerState::HalfOpen, "3 of 4 permitted calls recorded");
        b.on_end(11 * S, ok());
        assert_eq!(b.state(), BreakerState::Closed, "1 of 4 = 25 % < 50 %");
        call(&mut b, 12 * S, fail());
        assert_eq!(b.state(), BreakerState::Closed, "the failures that opened it are forgotten");
    }

    #[test]
    fn half_open_at_threshold_reopens_and_waits_again() {
        let mut b = half_open(four_permits());
        for _ in 0..3 {
            assert!(b.try_acquire(11 * S));
        }
        for end in [fail(), ok(), fail(), ok()] {
            b.on_end(12 * S, end);
        }
        assert_eq!(b.state(), BreakerState::Open, "2 of 4 = 50 % >= 50 %");
        assert!(!b.try_acquire(22 * S));
        assert!(b.try_acquire(22 * S + 1), "a new wait counted from the re-opening at 12 s");
    }

    #[test]
    fn half_open_minimum_is_capped_at_the_minimum_number_of_calls() {
        // minimum 2 < permitted 4: resilience4j judges the half-open window after 2 calls.
        let mut b = half_open(count_config(2, 2));
        assert!(b.try_acquire(11 * S));
        b.on_end(11 * S, ok());
        assert_eq!(b.state(), BreakerState::HalfOpen);
        b.on_end(11 * S, ok());
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn a_refused_or_cancelled_call_gives_its_half_open_permit_back() {
        for ending in [Ending::Refused, Ending::Canceled] {
            let mut b = half_open(four_permits());
            assert_eq!(admits(&mut b, 11 * S), 3);
            b.on_end(11 * S, ending);
            assert_eq!(admits(&mut b, 11 * S), 1, "{ending:?}");
            assert_eq!(b.state(), BreakerState::HalfOpen, "a release records nothing");
        }
    }

    /// resilience4j's HalfOpenState.releasePermission increments its counter whoever releases:
    /// calls admitted while CLOSED that end ignored during HALF_OPEN let extra calls through,
    /// beyond the permitted number.
    #[test]
    fn releases_from_calls_admitted_while_closed_add_half_open_permits() {
        let mut b = CircuitBreaker::new(CircuitBreakerConfig {
            sliding_window_size: 2,
            permitted_number_of_calls_in_half_open_state: 1,
            wait_duration_in_open_state_us: 10 * S,
            ..CircuitBreakerConfig::default()
        });
        // Three calls admitted while CLOSED, still out when two failures open the breaker.
        for _ in 0..3 {
            assert!(b.try_acquire(0));
        }
        call(&mut b, 0, fail());
        call(&mut b, 0, fail());
        assert!(b.try_acquire(10 * S + 1), "the one permitted probe");
        assert_eq!(admits(&mut b, 10 * S + 1), 0);
        for n in 1..=3 {
            b.on_end(11 * S, failed(FailureKind::InvalidInput));
            assert_eq!(admits(&mut b, 11 * S), 1, "release {n} of a call that never held a permit");
        }
        assert_eq!(b.state(), BreakerState::HalfOpen, "four calls went out on one permit");
    }

    #[test]
    fn releases_in_closed_and_open_do_nothing() {
        let mut b = CircuitBreaker::new(count_config(2, 2));
        b.on_end(0, Ending::Refused);
        assert_eq!(b.state(), BreakerState::Closed);
        let mut b = opened(count_config(2, 2));
        b.on_end(S, Ending::Canceled);
        assert!(!b.try_acquire(S));
        assert_eq!(admits(&mut b, 10 * S + 1), 4, "no permit was stored while OPEN");
    }

    #[test]
    fn ignored_kinds_are_not_counted() {
        let mut b = CircuitBreaker::new(count_config(4, 4));
        for _ in 0..10 {
            call(&mut b, 0, AttemptEnd::failed(FailureKind::InvalidInput, 1_000));
            call(&mut b, 0, AttemptEnd::failed(FailureKind::Unauthorized, 1_000));
        }
        for _ in 0..3 {
            call(&mut b, 0, ok());
        }
        call(&mut b, 0, fail());
        assert_eq!(b.state(), BreakerState::Closed, "1 of 4 counted calls failed");
    }

    #[test]
    fn ignored_kinds_release_half_open_permits() {
        let mut b = half_open(four_permits());
        for _ in 0..3 {
            assert!(b.try_acquire(11 * S));
        }
        b.on_end(11 * S, failed(FailureKind::Unauthorized));
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert!(b.try_acquire(11 * S), "the ignored call's permit is free again");
        assert!(!b.try_acquire(11 * S));
    }

    #[test]
    fn outcomes_arriving_while_open_change_nothing() {
        let mut b = opened(count_config(2, 2));
        for _ in 0..5 {
            b.on_end(S, ok());
        }
        assert_eq!(b.state(), BreakerState::Open);
        assert!(!b.try_acquire(2 * S));
    }

    #[test]
    fn automatic_transition_via_wake() {
        let config =
            CircuitBreakerConfig { automatic_transition_from_open_to_half_open_enabled: true, ..count_config(2, 2) };
        let mut b = opened(config);
        assert_eq!(b.wake_at(), Some(10 * S));
        b.on_wake(9 * S);
        assert_eq!(b.state(), BreakerState::Open, "an early wake does nothing");
        b.on_wake(10 * S);
        assert_eq!(b.state(), BreakerState::HalfOpen, "the scheduled transition fires at the wait");
        assert_eq!(b.wake_at(), None);
        b.on_wake(10 * S);
        assert_eq!(b.state(), BreakerState::HalfOpen, "a stale wake does nothing");
        assert_eq!(admits(&mut b, 10 * S), 4, "the timer took no permit");
    }

    #[test]
    fn a_due_automatic_transition_applies_on_the_next_call() {
        let config =
            CircuitBreakerConfig { automatic_transition_from_open_to_half_open_enabled: true, ..count_config(2, 2) };
        let mut b = opened(config);
        assert!(b.try_acquire(10 * S), "the wake is due, whether or not the engine delivered it");
        assert_eq!(b.state(), BreakerState::HalfOpen);
    }

    #[test]
    fn max_wait_in_half_open_reopens() {
        let config = CircuitBreakerConfig { max_wait_duration_in_half_open_state_us: 3 * S, ..count_config(2, 2) };
        let mut b = half_open(config);
        assert_eq!(b.wake_at(), Some(13 * S + 1));
        b.on_wake(13 * S);
        assert_eq!(b.state(), BreakerState::HalfOpen);
        b.on_wake(13 * S + 1);
        assert_eq!(b.state(), BreakerState::Open);
        assert_eq!(b.wake_at(), None, "no automatic transition out of this OPEN");
        assert!(!b.try_acquire(23 * S + 1));
        assert!(b.try_acquire(23 * S + 2));
    }

    fn time_config(seconds: u32, minimum: u32) -> CircuitBreakerConfig {
        CircuitBreakerConfig { sliding_window_type: SlidingWindowType::TimeBased, ..count_config(seconds, minimum) }
    }

    /// A 10 s window with minimum 4: one failure in second 0, three successes and one failure in
    /// second 9 (25 %, then 40 %), then one more failure at `last`.
    fn time_window_ending_at(last: Micros) -> CircuitBreaker {
        let mut b = CircuitBreaker::new(time_config(10, 4));
        call(&mut b, 500_000, fail());
        for _ in 0..3 {
            call(&mut b, 9 * S, ok());
        }
        call(&mut b, 9 * S + 999_999, fail());
        assert_eq!(b.state(), BreakerState::Closed, "2 of 5 = 40 %");
        call(&mut b, last, fail());
        b
    }

    #[test]
    fn time_window_forgets_outcomes_at_bucket_boundaries() {
        let b = time_window_ending_at(9 * S + 999_999);
        assert_eq!(b.state(), BreakerState::Open, "still within seconds 0..=9: 3 of 6 = 50 %");
        let mut b = time_window_ending_at(10 * S);
        assert_eq!(b.state(), BreakerState::Closed, "second 0 left the window: 2 of 5 = 40 %");
        call(&mut b, 10 * S, fail());
        assert_eq!(b.state(), BreakerState::Open, "3 of 6 in seconds 1..=10");
    }

    #[test]
    fn time_window_minimum_is_not_capped_by_the_window_size() {
        let mut b = CircuitBreaker::new(time_config(2, 5));
        for _ in 0..4 {
            call(&mut b, 0, fail());
        }
        assert_eq!(b.state(), BreakerState::Closed, "4 calls < minimum 5, even though the window is 2 s");
        call(&mut b, S, fail());
        assert_eq!(b.state(), BreakerState::Open);
    }

    #[test]
    fn time_window_long_gap_empties_everything() {
        let mut b = CircuitBreaker::new(time_config(3, 3));
        call(&mut b, 0, fail());
        call(&mut b, S, fail());
        call(&mut b, 100 * S, ok());
        call(&mut b, 100 * S, ok());
        call(&mut b, 100 * S, fail());
        assert_eq!(b.state(), BreakerState::Closed, "only the 3 calls of second 100 count: 33 %");
    }

    #[test]
    fn time_going_backwards_does_not_panic() {
        let mut b = CircuitBreaker::new(time_config(3, 3));
        call(&mut b, 50 * S, ok());
        call(&mut b, S, fail());
        call(&mut b, 0, fail());
        assert_eq!(b.state(), BreakerState::Open, "late timestamps land in the newest bucket");
    }

    #[test]
    fn unchecked_zero_sizes_never_panic() {
        let config = CircuitBreakerConfig {
            sliding_window_size: 0,
            minimum_number_of_calls: 0,
            permitted_number_of_calls_in_half_open_state: 0,
            wait_duration_in_open_state_us: 0,
            ..CircuitBreakerConfig::default()
        };
        for window_type in [SlidingWindowType::CountBased, SlidingWindowType::TimeBased] {
            let mut b = CircuitBreaker::new(CircuitBreakerConfig { sliding_window_type: window_type, ..config });
            for t in 0..20 {
                if b.try_acquire(t) {
                    b.on_end(t, if t % 3 == 0 { fail() } else { ok() });
                }
                b.on_end(t, Ending::Refused);
                b.on_wake(t);
            }
        }
    }

    /// What the random test knows of one HALF_OPEN episode, observed from outside.
    #[derive(Default)]
    struct Episode {
        number: u64,
        admitted: u32,
        /// Releases by calls admitted in this episode.
        own_releases: u32,
        /// Releases by calls admitted before it (in CLOSED or an earlier episode).
        foreign_releases: u32,
    }

    /// Observed from outside: in each HALF_OPEN episode the calls admitted, less those of them
    /// that gave their permit back, never exceed the permitted number plus the releases of calls
    /// that never held a permit of the episode (resilience4j's counter); and a call is refused in
    /// HALF_OPEN exactly when that bound is reached.
    #[test]
    fn random_sequences_admit_exactly_the_half_open_permits_resilience4j_counts() {
        const PERMITTED: u32 = 3;
        for (seed, window_type) in [(1, SlidingWindowType::CountBased), (2, SlidingWindowType::TimeBased)] {
            let config = CircuitBreakerConfig {
                sliding_window_type: window_type,
                sliding_window_size: 7,
                minimum_number_of_calls: 3,
                permitted_number_of_calls_in_half_open_state: PERMITTED,
                slow_call_rate_threshold: 60.0,
                slow_call_duration_threshold_us: 500_000,
                wait_duration_in_open_state_us: 2 * S,
                max_wait_duration_in_half_open_state_us: 4 * S,
                automatic_transition_from_open_to_half_open_enabled: seed == 2,
                ..CircuitBreakerConfig::default()
            };
            let mut b = CircuitBreaker::new(config);
            let mut rng = Lcg(seed);
            let mut now = 0;
            // The HALF_OPEN episode each call out was admitted in (0: not in one).
            let mut in_flight: Vec<u64> = Vec::new();
            let mut episode = Episode::default();
            let mut visited = [false; BreakerState::COUNT];
            let mut refusals_in_half_open = 0;
            for _ in 0..200_000 {
                now += rng.next(300_000);
                let before = b.state();
                let episode_before = episode.number;
                let mut released_by = None;
                match rng.next(6) {
                    0..=2 => {
                        let admitted = b.try_acquire(now);
                        if before != BreakerState::HalfOpen && b.state() == BreakerState::HalfOpen {
                            episode = Episode { number: episode.number + 1, ..Episode::default() };
                        }
                        let in_half_open = b.state() == BreakerState::HalfOpen;
                        if admitted {
                            in_flight.push(if in_half_open { episode.number } else { 0 });
                            episode.admitted += u32::from(in_half_open);
                        } else if in_half_open {
                            refusals_in_half_open += 1;
                            let held = episode.admitted - episode.own_releases;
                            assert_eq!(
                                held,
                                PERMITTED + episode.foreign_releases,
                                "refused before the permits ran out"
                            );
                        }
                    }
                    3 => {
                        now = now.max(b.wake_at().unwrap_or(now));
                        b.on_wake(now);
                    }
                    _ if !in_flight.is_empty() => {
                        let admitted_in = in_flight.swap_remove(rng.next(in_flight.len() as u64) as usize);
                        let ending = match rng.next(5) {
                            0 => Ending::Canceled,
                            1 => Ending::Refused,
                            _ => {
                                let kind = FailureKind::ALL[rng.next(FailureKind::COUNT as u64) as usize];
                                let failure = (rng.next(2) == 0).then_some(kind);
                                Ending::Outcome(AttemptEnd { failure, duration_us: rng.next(1_000_000) })
                            }
                        };
                        let releases = match ending {
                            Ending::Outcome(end) => b.config().is_ignored(&end),
                            Ending::Canceled | Ending::Refused => true,
                        };
                        if releases {
                            released_by = Some(admitted_in);
                        }
                        b.on_end(now, ending);
                    }
                    _ => {}
                }
                if b.state() != BreakerState::HalfOpen {
                    episode = Episode { number: episode.number, ..Episode::default() };
                } else {
                    // A wake, or an end that applied a due wake first, may have opened an episode.
                    if before != BreakerState::HalfOpen && episode.number == episode_before {
                        episode = Episode { number: episode.number + 1, ..Episode::default() };
                    }
                    match released_by {
                        Some(e) if e == episode.number => episode.own_releases += 1,
                        Some(_) => episode.foreign_releases += 1,
                        None => {}
                    }
                }
                if b.state() == BreakerState::HalfOpen {
                    let held = episode.admitted - episode.own_releases;
                    assert!(held <= PERMITTED + episode.foreign_releases, "{held} permits out");
                }
                visited[b.state().index()] = true;
            }
            assert_eq!(visited, [true; BreakerState::COUNT], "the sequence exercises every state");
            assert!(refusals_in_half_open > 100, "the bound was reached {refusals_in_half_open} times");
        }
    }
}
