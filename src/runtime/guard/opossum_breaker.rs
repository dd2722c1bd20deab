//! opossum 10.0.0's circuit breaker (npm `opossum`, lib/circuit.js and lib/status.js) as a pure
//! state machine over virtual time.
//!
//! opossum keeps its statistics in `rolling_count_buckets` buckets of
//! floor(`rolling_count_timeout` / `rolling_count_buckets`) whole milliseconds each, rotated by a
//! timer started when the breaker is built (Status: `setInterval(rotateBucket, bucketInterval)`),
//! so the window is on a fixed grid from time 0 and is never cleared when the circuit opens or
//! closes. Every call counts as a `fire` at the moment it is made, refused or not (`call` emits
//! `fire` before it looks at the state). A failure is counted when it arrives and then judged
//! (circuit.js `fail`): during warm-up nothing opens; below `volume_threshold` fires in the window
//! nothing opens unless the circuit is half-open; otherwise it opens when
//! failures / fires x 100 is strictly above `error_threshold_percentage`, or at once if half-open.
//! Successes are never judged, but a success while half-open closes the circuit.
//!
//! OPEN is left by a timer (`_startTimer` on the `open` event): `reset_timeout` after opening the
//! circuit becomes HALF_OPEN with `pendingClose` set, and the first call after that goes through
//! (clearing `pendingClose`); every other call is refused until an outcome decides. Calls beyond
//! `capacity` in flight are refused by opossum's semaphore, and that refusal is a failure
//! (`handleError` after `semaphoreLocked`), which re-opens a half-open circuit.

use super::compile::Compile;
use super::compile::Invalid;
use super::contract::{Ask, Ending, Guard, GuardConfig, Parting, Seat, Verdict, report_breaker};
use crate::runtime::command::{Command, Effects};
use crate::scenario::{FieldPath, RawTable, ScenarioError, read_table};
use crate::sim::Micros;
use crate::sim::time::{US_PER_MS, US_PER_S};
use crate::vocab::{BreakerState, FailureKind, Refusal};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Our bound on `rolling_count_buckets`: the buckets are allocated when the breaker is built.
pub const MAX_BUCKETS: u32 = 10_000;

/// opossum's options (circuit.js constructor); durations in microseconds of virtual time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpossumOptions {
    /// Opens when the failure percentage is strictly above this.
    pub error_threshold_percentage: f64,
    /// OPEN lasts this long, then a timer makes the circuit HALF_OPEN.
    pub reset_timeout_us: Micros,
    /// A call that takes this long or longer is a failure (ETIMEDOUT); 0 turns it off
    /// (opossum's `timeout: false`).
    pub timeout_us: Micros,
    pub rolling_count_timeout_us: Micros,
    pub rolling_count_buckets: u32,
    /// No opening while fewer calls than this were made in the window (except when half-open).
    pub volume_threshold: u32,
    /// Nothing opens during the first `rolling_count_timeout` after the breaker is built.
    pub allow_warm_up: bool,
    /// Calls in flight at most (the semaphore); u32::MAX stands for opossum's
    /// Number.MAX_SAFE_INTEGER.
    pub capacity: u32,
    /// Indexed by `FailureKind::index`: the kinds opossum's `errorFilter` filters, which it
    /// reports as successes.
    pub ignored: [bool; FailureKind::COUNT],
}

impl Default for OpossumOptions {
    fn default() -> Self {
        OpossumOptions {
            error_threshold_percentage: 50.0,
            reset_timeout_us: 30 * US_PER_S,
            timeout_us: 10 * US_PER_S,
            rolling_count_timeout_us: 10 * US_PER_S,
            rolling_count_buckets: 10,
            volume_threshold: 0,
            allow_warm_up: false,
            capacity: u32::MAX,
            ignored: default_ignored(),
        }
    }
}

impl OpossumOptions {
    /// A bucket's length: opossum's `Math.floor(rollingCountTimeout / rollingCountBuckets)` ms.
    pub fn bucket_us(&self) -> Micros {
        let ms = self.rolling_count_timeout_us / US_PER_MS / u64::from(self.rolling_count_buckets.max(1));
        ms * US_PER_MS
    }

    pub fn check(&self) -> Result<(), Invalid> {
        let p = self.error_threshold_percentage;
        if !(p.is_finite() && (0.0..=100.0).contains(&p)) {
            return Err(Invalid::new(
                "error_threshold_percentage",
                format!("error_threshold_percentage must be in [0, 100], got {p}"),
            ));
        }
        if self.reset_timeout_us < US_PER_MS {
            return Err(Invalid::new("reset_timeout_us", "reset_timeout_us must be at least 1 ms".into()));
        }
        if !(1..=MAX_BUCKETS).contains(&self.rolling_count_buckets) {
            return Err(Invalid::new(
                "rolling_count_buckets",
                format!("rolling_count_buckets must be in 1 ..= {MAX_BUCKETS}, got {}", self.rolling_count_buckets),
            ));
        }
        if self.bucket_us() == 0 {
            return Err(Invalid::new(
                "rolling_count_timeout_us",
                "rolling_count_timeout_us must give buckets of at least 1 ms (rolling_count_timeout_ms >= rolling_count_buckets)"
                    .into(),
            ));
        }
        if self.capacity == 0 {
            return Err(Invalid::new("capacity", "capacity must be at least 1".into()));
        }
        Ok(())
    }
}

/// What a scenario's `ignore` gives when absent: INVALID_INPUT, UNAUTHORIZED and CANCELED.
pub fn default_ignored() -> [bool; FailureKind::COUNT] {
    let mut ignored = super::circuit_breaker::default_ignored();
    ignored[FailureKind::Canceled.index()] = true;
    ignored
}

/// What opossum says to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Admitted,
    /// EOPENBREAKER: open, or half-open with its trial already out.
    Open,
    /// ESEMLOCKED: `capacity` calls in flight; counted as a failure.
    Locked,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Bucket {
    fires: u64,
    failures: u64,
}

/// opossum's CircuitBreaker and Status, without timers: the bucket rotation and the reset timer
/// are applied when time is next passed in.
#[derive(Debug, Clone)]
pub struct OpossumBreaker {
    options: OpossumOptions,
    state: BreakerState,
    /// HALF_OPEN and no trial call has gone through yet.
    pending_close: bool,
    opened_at: Micros,
    buckets: Vec<Bucket>,
    /// Index of the newest bucket on the grid (time / bucket length).
    epoch: u64,
    fires: u64,
    failures: u64,
    /// Calls in flight (the semaphore's permits taken), by the caller's id, with the instant
    /// opossum's timeout fails them (Micros::MAX without a timeout).
    in_flight: BTreeMap<u64, Micros>,
    /// The same deadlines in time order (only with a timeout).
    deadlines: BTreeSet<(Micros, u64)>,
}

impl OpossumBreaker {
    pub fn new(options: OpossumOptions) -> Self {
        OpossumBreaker {
            buckets: vec![Bucket::default(); options.rolling_count_buckets.max(1) as usize],
            options,
            state: BreakerState::Closed,
            pending_close: false,
            opened_at: 0,
            epoch: 0,
            fires: 0,
            failures: 0,
            in_flight: BTreeMap::new(),
            deadlines: BTreeSet::new(),
        }
    }

    pub fn state(&self) -> BreakerState {
        self.state
    }

    pub fn options(&self) -> &OpossumOptions {
        &self.options
    }

    /// (fires, failures) in the window now.
    pub fn stats(&mut self, now: Micros) -> (u64, u64) {
        self.rotate(now);
        (self.fires, self.failures)
    }

    /// Call `call` is made (ids of calls in flight are distinct). Counts it as a fire, then lets
    /// it through when closed or when it is the half-open circuit's first call; beyond
    /// `capacity` it is refused and counted as a failure.
    pub fn try_acquire(&mut self, now: Micros, call: u64) -> Admission {
        self.on_wake(now);
        self.rotate(now);
        self.current().fires += 1;
        self.fires += 1;
        match self.state {
            BreakerState::Closed => {}
            BreakerState::HalfOpen if self.pending_close => self.pending_close = false,
            BreakerState::HalfOpen | BreakerState::Open => return Admission::Open,
        }
        if self.in_flight.len() >= self.options.capacity as usize {
            self.fail(now);
            return Admission::Locked;
        }
        let deadline = match self.options.timeout_us {
            0 => Micros::MAX,
            t => {
                let deadline = now.saturating_add(t);
                self.deadlines.insert((deadline, call));
                deadline
            }
        };
        let previous = self.in_flight.insert(call, deadline);
        debug_assert!(previous.is_none(), "call {call} is already in flight");
        Admission::Admitted
    }

    /// Call `call`, which went through, ended. If opossum's timeout already failed it (at or
    /// before `now`), its outcome is dropped, as opossum drops it.
    pub fn on_end(&mut self, now: Micros, call: u64, ending: Ending) {
        self.on_wake(now);
        let Some(deadline) = self.in_flight.remove(&call) else { return };
        self.deadlines.remove(&(deadline, call));
        let failed = match ending {
            Ending::Outcome(end) => end.failure.is_some_and(|kind| !self.options.ignored[kind.index()]),
            // The caller gave up on it: an error the errorFilter filters (an abort), a success.
            Ending::Canceled => false,
            // A strategy inside the breaker threw.
            Ending::Refused => true,
        };
        if failed {
            self.fail(now);
        } else {
            match self.state {
                BreakerState::HalfOpen => self.transition(BreakerState::Closed, now),
                BreakerState::Closed | BreakerState::Open => {}
            }
        }
    }

    /// The reset timer's due time while OPEN.
    fn reset_at(&self) -> Option<Micros> {
        match self.state {
            BreakerState::Open => Some(self.opened_at.saturating_add(self.options.reset_timeout_us)),
            BreakerState::Closed | BreakerState::HalfOpen => None,
        }
    }

    /// The next timer: the reset timer while OPEN, or the earliest call timeout.
    pub fn wake_at(&self) -> Option<Micros> {
        let timeout = self.deadlines.first().map(|&(t, _)| t);
        match (self.reset_at(), timeout) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Fires every timer due by `now`, in time order (the reset timer first on a tie): the reset
    /// timer makes an OPEN circuit HALF_OPEN, a timeout fails its call (ETIMEDOUT) and gives back
    /// its permit.
    pub fn on_wake(&mut self, now: Micros) {
        loop {
            let reset = self.reset_at().filter(|&t| t <= now);
            let timeout = self.deadlines.first().copied().filter(|&(t, _)| t <= now);
            match (reset, timeout) {
                (Some(r), Some((t, _))) if r <= t => self.transition(BreakerState::HalfOpen, r),
                (Some(r), None) => self.transition(BreakerState::HalfOpen, r),
                (_, Some((t, call))) => {
                    self.deadlines.remove(&(t, call));
                    self.in_flight.remove(&call);
                    self.fail(t);
                }
                (None, None) => break,
            }
        }
        debug_assert_eq!(
            self.deadlines.len(),
            if self.options.timeout_us == 0 { 0 } else { self.in_flight.len() },
            "one deadline per call in flight"
        );
    }

    /// circuit.js `fail`: counts the failure, then judges it.
    fn fail(&mut self, now: Micros) {
        self.rotate(now);
        self.current().failures += 1;
        self.failures += 1;
        if self.options.allow_warm_up && now < self.options.rolling_count_timeout_us {
            return;
        }
        let half_open = self.state == BreakerState::HalfOpen;
        if self.fires < u64::from(self.options.volume_threshold) && !half_open {
            return;
        }
        // 0 / 0 is NaN, which is above nothing, as in JavaScript.
        let error_rate = self.failures as f64 / self.fires as f64 * 100.0;
        if error_rate > self.options.error_threshold_percentage || half_open {
            match self.state {
                BreakerState::Closed | BreakerState::HalfOpen => self.transition(BreakerState::Open, now),
                BreakerState::Open => {}
            }
        }
    }

    fn current(&mut self) -> &mut Bucket {
        let i = (self.epoch % self.buckets.len() as u64) as usize;
        &mut self.buckets[i]
    }

    /// Rotates the buckets up to `now`: each grid tick empties the oldest bucket. Times going
    /// backwards land in the newest bucket.
    fn rotate(&mut self, now: Micros) {
        let epoch = now / self.options.bucket_us().max(1);
        let n = self.buckets.len() as u64;
        if epoch <= self.epoch {
            return;
        }
        if epoch - self.epoch >= n {
            self.buckets.iter_mut().for_each(|b| *b = Bucket::default());
            self.fires = 0;
            self.failures = 0;
        } else {
            for e in self.epoch + 1..=epoch {
                let i = (e % n) as usize;
                let gone = std::mem::take(&mut self.buckets[i]);
                self.fires -= gone.fires;
                self.failures -= gone.failures;
            }
        }
        self.epoch = epoch;
        debug_assert_eq!(
            self.buckets.iter().fold((0, 0), |(f, x), b| (f + b.fires, x + b.failures)),
            (self.fires, self.failures),
            "the window's counts are the sums of its buckets"
        );
    }

    /// One of opossum's edges: CLOSED -> OPEN -> HALF_OPEN -> CLOSED or OPEN.
    fn transition(&mut self, to: BreakerState, now: Micros) {
        debug_assert!(
            matches!(
                (self.state, to),
                (BreakerState::Closed, BreakerState::Open)
                    | (BreakerState::Open, BreakerState::HalfOpen)
                    | (BreakerState::HalfOpen, BreakerState::Closed | BreakerState::Open)
            ),
            "no edge {:?} -> {to:?} in opossum's breaker",
            self.state
        );
        match to {
            BreakerState::Open => {
                self.opened_at = now;
                self.pending_close = false;
            }
            BreakerState::HalfOpen => {
                // opossum's `_halfOpen`: the state the timer leaves, the next call the trial.
                self.pending_close = true;
            }
            BreakerState::Closed => self.pending_close = false,
        }
        self.state = to;
        debug_assert!(!self.pending_close || self.state == BreakerState::HalfOpen);
    }
}

/// An opossum breaker as a compiled guard: its options and its label's index.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpossumSpec {
    pub options: OpossumOptions,
    pub label: u16,
}

/// A live opossum breaker in a pipeline.
#[derive(Debug)]
pub struct OpossumGuard {
    breaker: OpossumBreaker,
    label: u16,
    wake: Option<Micros>,
}

impl GuardConfig for OpossumSpec {
    type Live = OpossumGuard;

    fn build(&self) -> OpossumGuard {
        OpossumGuard { breaker: OpossumBreaker::new(self.options), label: self.label, wake: None }
    }
}

impl OpossumGuard {
    fn step<T>(&mut self, now: Micros, out: &mut impl Effects, op: impl FnOnce(&mut OpossumBreaker) -> T) -> T {
        let before = self.breaker.state();
        // The reset timer, if it is due, fires before anything else at this instant.
        self.breaker.on_wake(now);
        report_breaker(self.label, before, self.breaker.state(), out);
        let middle = self.breaker.state();
        let result = op(&mut self.breaker);
        report_breaker(self.label, middle, self.breaker.state(), out);
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

impl Guard for OpossumGuard {
    fn admit(&mut self, now: Micros, ask: &Ask, _seat: Seat, out: &mut impl Effects) -> Verdict {
        match self.step(now, out, |b| b.try_acquire(now, ask.waiter)) {
            Admission::Admitted => Verdict::Pass,
            Admission::Open | Admission::Locked => Verdict::Refuse(Refusal::CircuitOpen),
        }
    }

    fn undo(&mut self, now: Micros, parting: Parting, out: &mut impl Effects) {
        self.step(now, out, |b| b.on_end(now, parting.waiter, Ending::Refused));
    }

    fn end(&mut self, now: Micros, parting: Parting, out: &mut impl Effects) {
        self.step(now, out, |b| b.on_end(now, parting.waiter, parting.ending));
    }

    fn on_wake(&mut self, now: Micros, out: &mut impl Effects) {
        if self.breaker.wake_at().is_some_and(|t| t <= now) {
            self.step(now, out, |_| ());
        }
    }

    fn breaker_state(&self) -> Option<(u16, BreakerState)> {
        Some((self.label, self.breaker.state()))
    }
}

// ---------------------------------------------------------------------------------------------
// The file's table

/// `[[policy.<name>.circuit_breaker]]` with `kind = "opossum"`: opossum's option names in
/// snake_case (durations in ms).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct OpossumTable {
    pub kind: String,
    #[serde(default)]
    pub dependency: Option<String>,
    #[serde(default)]
    pub circuit_key: Option<String>,
    /// Failure kinds the errorFilter filters (default INVALID_INPUT and UNAUTHORIZED).
    #[serde(default)]
    pub ignore: Option<Vec<String>>,
    #[serde(default)]
    pub error_threshold_percentage: Option<f64>,
    #[serde(default)]
    pub reset_timeout_ms: Option<f64>,
    /// 0 turns the timeout off.
    #[serde(default)]
    pub timeout_ms: Option<f64>,
    #[serde(default)]
    pub rolling_count_timeout_ms: Option<f64>,
    #[serde(default)]
    pub rolling_count_buckets: Option<u32>,
    #[serde(default)]
    pub volume_threshold: Option<u32>,
    #[serde(default)]
    pub allow_warm_up: Option<bool>,
    #[serde(default)]
    pub capacity: Option<u32>,
}

crate::scenario::types::tables_only!(OpossumTable);

/// Reads one entry and adds its breakers.
pub fn compile<G: From<OpossumSpec>>(
    cx: &mut Compile<G>,
    path: &FieldPath,
    raw: &RawTable,
) -> Result<(), ScenarioError> {
    let t: OpossumTable = read_table(cx.source, path, raw)?;
    let d = OpossumOptions::default();
    let options = OpossumOptions {
        error_threshold_percentage: t.error_threshold_percentage.unwrap_or(d.error_threshold_percentage),
        reset_timeout_us: cx.duration(&path.key("reset_timeout_ms"), t.reset_timeout_ms, d.reset_timeout_us)?,
        timeout_us: cx.duration(&path.key("timeout_ms"), t.timeout_ms, d.timeout_us)?,
        rolling_count_timeout_us: cx.duration(
            &path.key("rolling_count_timeout_ms"),
            t.rolling_count_timeout_ms,
            d.rolling_count_timeout_us,
        )?,
        rolling_count_buckets: t.rolling_count_buckets.unwrap_or(d.rolling_count_buckets),
        volume_threshold: t.volume_threshold.unwrap_or(d.volume_threshold),
        allow_warm_up: t.allow_warm_up.unwrap_or(d.allow_warm_up),
        capacity: t.capacity.unwrap_or(d.capacity),
        ignored: cx.ignored(&path.key("ignore"), t.ignore.as_deref())?,
    };
    cx.check(path, options.check())?;
    let before = cx.guards.len();
    // opossum's reset timer moves OPEN to HALF_OPEN by itself.
    cx.add_breakers(path, &t.dependency, t.circuit_key.as_deref(), false, |label| {
        OpossumSpec { options, label }.into()
    })?;
    let instances = (cx.guards.len() - before) as u64;
    let per_instance = u64::from(options.rolling_count_buckets) * std::mem::size_of::<Bucket>() as u64;
    cx.add_window_bytes(path.key("rolling_count_buckets"), instances * per_instance);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::guard::AttemptEnd;
    use crate::runtime::guard::testing::{Lcg, failed, ok};

    const MS: Micros = US_PER_MS;

    fn options() -> OpossumOptions {
        OpossumOptions {
            reset_timeout_us: 200 * MS,
            rolling_count_timeout_us: 1_000 * MS,
            timeout_us: 0,
            ..OpossumOptions::default()
        }
    }

    fn fail() -> Ending {
        failed(FailureKind::TransientTransport)
    }

    fn call(b: &mut OpossumBreaker, now: Micros, end: Ending) {
        assert_eq!(b.try_acquire(now, 0), Admission::Admitted, "at {now} in {:?}", b.state());
        b.on_end(now, 0, end);
    }

    #[test]
    fn defaults_are_opossums() {
        let o = OpossumOptions::default();
        assert_eq!(o.error_threshold_percentage, 50.0);
        assert_eq!(o.reset_timeout_us, 30_000 * MS);
        assert_eq!(o.timeout_us, 10_000 * MS);
        assert_eq!(o.rolling_count_timeout_us, 10_000 * MS);
        assert_eq!(o.rolling_count_buckets, 10);
        assert_eq!(o.bucket_us(), 1_000 * MS);
        assert_eq!(o.volume_threshold, 0);
        assert!(!o.allow_warm_up);
        assert_eq!(o.capacity, u32::MAX);
        assert_eq!(o.check(), Ok(()));
    }

    #[test]
    fn check_names_the_field() {
        let d = OpossumOptions::default();
        let field = |o: OpossumOptions| o.check().unwrap_err().field;
        assert_eq!(field(OpossumOptions { error_threshold_percentage: 101.0, ..d }), "error_threshold_percentage");
        assert_eq!(field(OpossumOptions { reset_timeout_us: 0, ..d }), "reset_timeout_us");
        assert_eq!(field(OpossumOptions { rolling_count_buckets: 0, ..d }), "rolling_count_buckets");
        assert_eq!(field(OpossumOptions { rolling_count_timeout_us: 5 * MS, ..d }), "rolling_count_timeout_us");
        assert_eq!(field(OpossumOptions { capacity: 0, ..d }), "capacity");
    }

    #[test]
    fn the_first_failure_opens_with_no_volume_threshold() {
        // 1 failure of 1 fire is 100 % > 50 %.
        let mut b = OpossumBreaker::new(options());
        call(&mut b, 0, fail());
        assert_eq!(b.state(), BreakerState::Open);
    }

    #[test]
    fn exactly_the_threshold_does_not_open() {
        let mut b = OpossumBreaker::new(options());
        call(&mut b, 0, ok());
        call(&mut b, 0, fail());
        assert_eq!(b.state(), BreakerState::Closed, "1 of 2 = 50 %, not above 50 %");
        call(&mut b, 0, fail());
        assert_eq!(b.state(), BreakerState::Open, "2 of 3");
    }

    #[test]
    fn volume_threshold_counts_fires() {
        let mut b = OpossumBreaker::new(OpossumOptions { volume_threshold: 3, ..options() });
        call(&mut b, 0, fail());
        call(&mut b, 0, fail());
        assert_eq!(b.state(), BreakerState::Closed, "2 fires < 3");
        call(&mut b, 0, fail());
        assert_eq!(b.state(), BreakerState::Open);
    }

    #[test]
    fn reset_timer_then_one_trial() {
        let mut b = OpossumBreaker::new(options());
        call(&mut b, 0, fail());
        assert_eq!(b.try_acquire(199 * MS, 1), Admission::Open);
        assert_eq!(b.wake_at(), Some(200 * MS));
        b.on_wake(200 * MS);
        assert_eq!(b.state(), BreakerState::HalfOpen, "a timer, not the next call");
        assert_eq!(b.try_acquire(250 * MS, 1), Admission::Admitted);
        assert_eq!(b.try_acquire(260 * MS, 1), Admission::Open, "one trial at a time");
        b.on_end(270 * MS, 1, ok());
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn trial_failure_reopens_for_another_reset_timeout() {
        let mut b = OpossumBreaker::new(options());
        call(&mut b, 0, fail());
        b.on_wake(200 * MS);
        assert_eq!(b.try_acquire(250 * MS, 1), Admission::Admitted);
        b.on_end(260 * MS, 1, fail());
        assert_eq!(b.state(), BreakerState::Open);
        assert_eq!(b.wake_at(), Some(460 * MS));
    }

    #[test]
    fn refused_calls_count_as_fires_and_dilute_the_rate() {
        // Opened by 1 failure at 0; 3 refused calls; the trial closes; the window still holds
        // 1 failure in 5 fires, so the next failure makes 2 of 6 and the circuit stays closed.
        let mut b = OpossumBreaker::new(options());
        call(&mut b, 0, fail());
        for t in [10, 20, 30] {
            assert_eq!(b.try_acquire(t * MS, 1), Admission::Open);
        }
        b.on_wake(200 * MS);
        call(&mut b, 210 * MS, ok());
        assert_eq!(b.state(), BreakerState::Closed);
        call(&mut b, 220 * MS, fail());
        assert_eq!(b.state(), BreakerState::Closed, "{:?}", b.stats(220 * MS));
    }

    #[test]
    fn buckets_forget_on_the_grid() {
        // 1 s window in 10 buckets of 100 ms: failures at 50 ms leave at the tick of 1 000 ms.
        let o = OpossumOptions { volume_threshold: 4, ..options() };
        let mut b = OpossumBreaker::new(o);
        call(&mut b, 50 * MS, fail());
        call(&mut b, 60 * MS, fail());
        call(&mut b, 950 * MS, ok());
        assert_eq!(b.stats(999 * MS), (3, 2));
        assert_eq!(b.stats(1_000 * MS), (1, 0));
        call(&mut b, 1_000 * MS, fail());
        assert_eq!(b.state(), BreakerState::Closed, "2 fires < volume 4");
    }

    #[test]
    fn capacity_refusals_are_failures() {
        let mut b = OpossumBreaker::new(OpossumOptions { capacity: 1, volume_threshold: 3, ..options() });
        assert_eq!(b.try_acquire(0, 1), Admission::Admitted);
        assert_eq!(b.try_acquire(0, 2), Admission::Locked);
        assert_eq!(b.state(), BreakerState::Closed, "2 fires < 3");
        assert_eq!(b.try_acquire(0, 3), Admission::Locked);
        assert_eq!(b.state(), BreakerState::Open, "2 failures of 3 fires");
    }

    #[test]
    fn a_timed_out_success_is_a_failure() {
        let mut b = OpossumBreaker::new(OpossumOptions { timeout_us: 100 * MS, ..options() });
        assert_eq!(b.try_acquire(0, 1), Admission::Admitted);
        b.on_end(100 * MS, 1, Ending::Outcome(AttemptEnd::success(100 * MS)));
        assert_eq!(b.state(), BreakerState::Open, "the timeout fired first at 100 ms");
        let mut b = OpossumBreaker::new(OpossumOptions { timeout_us: 100 * MS, ..options() });
        assert_eq!(b.try_acquire(0, 1), Admission::Admitted);
        assert_eq!(b.wake_at(), Some(100 * MS));
        b.on_wake(100 * MS);
        assert_eq!(b.state(), BreakerState::Open, "no end needed: a timer");
        assert_eq!(b.wake_at(), Some(300 * MS), "the reset timer from the timeout");
        b.on_end(150 * MS, 1, Ending::Outcome(AttemptEnd::success(150 * MS)));
        assert_eq!(b.state(), BreakerState::Open, "the late success is dropped");
    }

    #[test]
    fn warm_up_holds_the_circuit_closed() {
        let mut b = OpossumBreaker::new(OpossumOptions { allow_warm_up: true, ..options() });
        call(&mut b, 0, fail());
        call(&mut b, 999 * MS, fail());
        assert_eq!(b.state(), BreakerState::Closed);
        call(&mut b, 1_000 * MS, fail());
        assert_eq!(b.state(), BreakerState::Open);
    }

    #[test]
    fn ignored_and_cancelled_are_successes() {
        let mut b = OpossumBreaker::new(options());
        call(&mut b, 0, fail());
        b.on_wake(200 * MS);
        assert_eq!(b.try_acquire(200 * MS, 1), Admission::Admitted);
        b.on_end(210 * MS, 1, Ending::Outcome(AttemptEnd::failed(FailureKind::InvalidInput, MS)));
        assert_eq!(b.state(), BreakerState::Closed);
        assert_eq!(b.try_acquire(220 * MS, 1), Admission::Admitted);
        b.on_end(230 * MS, 1, Ending::Canceled);
        assert_eq!(b.state(), BreakerState::Closed);
    }

    /// From outside: at most one call goes through per half-open spell, in-flight never passes
    /// capacity, and the window's counts stay the sums of its buckets (asserted in `rotate`).
    #[test]
    fn random_sequences_keep_the_invariants() {
        let o = OpossumOptions { capacity: 4, volume_threshold: 3, timeout_us: 40 * MS, ..options() };
        let mut b = OpossumBreaker::new(o);
        let mut rng = Lcg(3);
        let (mut now, mut trials, mut id) = (0, 0, 0u64);
        let mut in_flight: Vec<u64> = Vec::new();
        let mut visited = [false; BreakerState::COUNT];
        for _ in 0..100_000 {
            now += rng.next(30 * MS);
            b.on_wake(now);
            let before = b.state();
            if rng.next(2) == 0 {
                id += 1;
                let admitted = b.try_acquire(now, id) == Admission::Admitted;
                if admitted {
                    in_flight.push(id);
                }
                trials += u32::from(admitted && before == BreakerState::HalfOpen);
            } else if !in_flight.is_empty() {
                let call = in_flight.remove(rng.next(in_flight.len() as u64) as usize);
                b.on_end(now, call, if rng.next(3) == 0 { ok() } else { fail() });
            }
            if b.state() != BreakerState::HalfOpen {
                trials = 0;
            }
            assert!(trials <= 1);
            assert!(b.in_flight.len() <= 4, "the semaphore holds at most capacity");
            visited[b.state().index()] = true;
        }
        assert_eq!(visited, [true; BreakerState::COUNT]);
    }
}
