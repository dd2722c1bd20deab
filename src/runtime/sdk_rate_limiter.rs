//! botocore's adaptive retry mode: a client-side rate limiter in front of every request the
//! client sends, the first attempt included (botocore 1.44.18: `botocore/retries/adaptive.py`
//! `ClientRateLimiter` and `RateClocker`, `bucket.py` `TokenBucket`, `throttling.py`
//! `CubicCalculator`; `client.py` `_register_retries` registers it beside standard mode's
//! retries, which adaptive mode keeps as they are).
//!
//! The limiter is off until the first throttling answer. Each answer is counted into a
//! smoothed send rate, measured in half-second buckets. A throttling answer cuts the allowed
//! rate to `BETA` (0.7) of the measured rate (or of the allowed rate, if lower) and turns the
//! limiter on; any other answer (timeouts and connection errors included) lets the allowed rate
//! grow back along CUBIC's curve, `SCALE_CONSTANT x (t - K)^3 + W_max`, never past twice the
//! measured rate. While on, each send takes a token from a bucket that fills at the allowed
//! rate (at least `MIN_RATE`, 0.5 a second) and holds at most that many tokens (at least one):
//! a send that finds none waits for one.
//!
//! Times are seconds since the client was made (the run's start in the engine), as botocore
//! reads `time.time()`; botocore's arithmetic is kept in `f64`, so a harness replaying
//! botocore's own times gets its waits to the microsecond.
//!
//! One departure: botocore's waiting threads each sleep their own estimate and re-check when
//! woken (or when an answer changes the rate), racing for the token; here the sends a client
//! makes at once reserve tokens in order, each its wait fixed when it asks. A lone sender waits
//! exactly as botocore does (tests/differential_sdk.rs replays botocore's own sends).

/// `TokenBucket._MIN_RATE`: the bucket never fills slower than this many tokens a second.
pub const MIN_RATE: f64 = 0.5;
/// `register_retry_handler`: `TokenBucket(max_rate=1, ...)`.
const START_RATE: f64 = 1.0;
/// `RateClocker._DEFAULT_SMOOTHING`: the weight of the newest bucket's rate.
const SMOOTHING: f64 = 0.8;
/// `RateClocker._TIME_BUCKET_RANGE`: answers are counted in half-second buckets.
const TIME_BUCKET_RANGE_S: f64 = 0.5;
/// `CubicCalculator._SCALE_CONSTANT`.
const SCALE_CONSTANT: f64 = 0.4;
/// `CubicCalculator._BETA`: a throttling answer cuts the rate to this share.
const BETA: f64 = 0.7;
/// `ClientRateLimiter._MAX_RATE_ADJUST_SCALE`: the allowed rate never passes twice the measured.
const MAX_RATE_ADJUST_SCALE: f64 = 2.0;

/// One client's limiter, shared by all its calls.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClientRateLimiter {
    /// `ClientRateLimiter._enabled`: sends wait for tokens only after a throttling answer.
    enabled: bool,
    /// `TokenBucket`: `_fill_rate` (its `max_rate`), `_max_capacity`, `_current_capacity`
    /// (below zero while sends wait for tokens they reserved), `_last_timestamp`.
    fill_rate: f64,
    max_capacity: f64,
    capacity: f64,
    last_refill_s: f64,
    /// `RateClocker`: `_measured_rate`, `_last_bucket`, `_count`.
    measured_rate: f64,
    last_bucket_s: f64,
    count: u64,
    /// `CubicCalculator`: `_w_max`, `_k`, `_last_fail`.
    w_max: f64,
    k: f64,
    last_fail_s: f64,
}

impl ClientRateLimiter {
    /// The limiter of a client made at `start_s` (`register_retry_handler`).
    pub fn new(start_s: f64) -> ClientRateLimiter {
        let mut limiter = ClientRateLimiter {
            enabled: false,
            fill_rate: 0.0,
            max_capacity: 0.0,
            capacity: 0.0,
            last_refill_s: start_s,
            measured_rate: 0.0,
            // `math.floor(current_time())`: whole seconds, though buckets are half seconds.
            last_bucket_s: start_s.floor(),
            count: 0,
            // `CubicCalculator(starting_max_rate=0, start_time=...)`.
            w_max: 0.0,
            k: 0.0,
            last_fail_s: start_s,
        };
        limiter.k = limiter.zero_point();
        limiter.set_max_rate(start_s, START_RATE);
        limiter
    }

    /// A send at `now_s` takes a token: the seconds it waits for one (0 while off).
    pub fn acquire(&mut self, now_s: f64) -> f64 {
        if !self.enabled {
            return 0.0;
        }
        self.refill(now_s);
        let wait_s = if self.capacity >= 1.0 { 0.0 } else { (1.0 - self.capacity) / self.fill_rate };
        // Reserved now: the next send waits behind this one.
        self.capacity -= 1.0;
        self.check();
        wait_s
    }

    /// A send that reserved a token at [`ClientRateLimiter::acquire`] and waited for it will
    /// not go (the runtime stopped waiting for its call): the token is back in the bucket. A
    /// botocore thread cannot be abandoned and would send it; a simulated call can, and without
    /// this every abandoned wait would hold its token for good, starving the client.
    pub fn give_back(&mut self, now_s: f64) {
        self.refill(now_s);
        self.capacity = (self.capacity + 1.0).min(self.max_capacity);
        self.check();
    }

    /// An answer came at `now_s` (`on_receiving_response`, called for every attempt's
    /// answer, errors and timeouts included): `throttling` as botocore's
    /// `ThrottlingErrorDetector` calls it.
    pub fn on_answer(&mut self, now_s: f64, throttling: bool) {
        let measured = self.record(now_s);
        let new_rate = if throttling {
            let rate_to_use = if self.enabled { measured.min(self.fill_rate) } else { measured };
            self.enabled = true;
            self.error_received(rate_to_use, now_s)
        } else {
            self.success_received(now_s)
        };
        self.set_max_rate(now_s, new_rate.min(MAX_RATE_ADJUST_SCALE * measured));
    }

    /// Whether sends wait for tokens (after the first throttling answer).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The rate the bucket fills at, tokens a second (`TokenBucket.max_rate`).
    pub fn allowed_rate(&self) -> f64 {
        self.fill_rate
    }

    /// The smoothed rate of answers, a second (`RateClocker.measured_rate`).
    pub fn measured_rate(&self) -> f64 {
        self.measured_rate
    }

    /// `TokenBucket.max_rate`'s setter: refill at the old rate, then the new rate and size.
    fn set_max_rate(&mut self, now_s: f64, value: f64) {
        self.refill(now_s);
        self.fill_rate = value.max(MIN_RATE);
        self.max_capacity = if value >= 1.0 { value } else { 1.0 };
        self.capacity = self.capacity.min(self.max_capacity);
        self.check();
    }

    /// `TokenBucket._refill`.
    fn refill(&mut self, now_s: f64) {
        let fill = (now_s - self.last_refill_s) * self.fill_rate;
        self.capacity = self.max_capacity.min(self.capacity + fill);
        self.last_refill_s = now_s;
    }

    /// `RateClocker.record`: the smoothed rate, updated when an answer opens a new bucket.
    fn record(&mut self, now_s: f64) -> f64 {
        let scale = 1.0 / TIME_BUCKET_RANGE_S;
        let bucket_s = (now_s * scale).floor() / scale;
        self.count += 1;
        if bucket_s > self.last_bucket_s {
            let current_rate = self.count as f64 / (bucket_s - self.last_bucket_s);
            self.measured_rate = current_rate * SMOOTHING + self.measured_rate * (1.0 - SMOOTHING);
            self.count = 0;
            self.last_bucket_s = bucket_s;
        }
        self.measured_rate
    }

    /// `CubicCalculator._calculate_zero_point`.
    fn zero_point(&self) -> f64 {
        (self.w_max * (1.0 - BETA) / SCALE_CONSTANT).powf(1.0 / 3.0)
    }

    /// `CubicCalculator.success_received`.
    fn success_received(&self, now_s: f64) -> f64 {
        let dt = now_s - self.last_fail_s;
        SCALE_CONSTANT * (dt - self.k).powi(3) + self.w_max
    }

    /// `CubicCalculator.error_received`.
    fn error_received(&mut self, current_rate: f64, now_s: f64) -> f64 {
        self.w_max = current_rate;
        self.k = self.zero_point();
        self.last_fail_s = now_s;
        current_rate * BETA
    }

    fn check(&self) {
        debug_assert!(self.fill_rate >= MIN_RATE, "the bucket fills at least at MIN_RATE: {self:?}");
        debug_assert!(self.max_capacity >= 1.0, "the bucket holds at least one token: {self:?}");
        debug_assert!(self.capacity <= self.max_capacity, "never more tokens than the bucket holds: {self:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn off_until_the_first_throttling_answer() {
        let mut l = ClientRateLimiter::new(0.0);
        for i in 0..100 {
            let t = f64::from(i) * 0.01;
            assert_eq!(l.acquire(t), 0.0);
            l.on_answer(t, false);
        }
        assert!(!l.enabled());
        l.on_answer(1.0, true);
        assert!(l.enabled());
    }

    #[test]
    fn the_measured_rate_is_smoothed_over_half_second_buckets() {
        let mut l = ClientRateLimiter::new(0.0);
        // 10 answers in [0, 0.5): the bucket opens at 0.5 with the 11th.
        for i in 0..10 {
            l.on_answer(f64::from(i) * 0.05, false);
        }
        assert_eq!(l.measured_rate(), 0.0);
        l.on_answer(0.5, false);
        // 11 answers over 0.5 s = 22 a second, weighted 0.8.
        assert!(close(l.measured_rate(), 22.0 * 0.8), "{}", l.measured_rate());
        l.on_answer(1.0, false);
        assert!(close(l.measured_rate(), 2.0 * 0.8 + 17.6 * 0.2), "{}", l.measured_rate());
    }

    #[test]
    fn a_throttling_answer_cuts_the_rate_to_beta_of_the_measured_rate() {
        let mut l = ClientRateLimiter::new(0.0);
        for i in 0..=10 {
            l.on_answer(f64::from(i) * 0.05, false);
        }
        let measured = l.measured_rate();
        l.on_answer(0.5, true);
        assert!(close(l.allowed_rate(), measured * BETA), "{} vs {}", l.allowed_rate(), measured * BETA);
    }

    #[test]
    fn cubic_growth_returns_to_w_max_after_k_seconds() {
        let mut l = ClientRateLimiter::new(0.0);
        l.error_received(10.0, 5.0);
        let k = (10.0_f64 * 0.3 / 0.4).cbrt();
        assert!(close(l.k, k));
        assert!(close(l.success_received(5.0 + k), 10.0));
        assert!(l.success_received(5.0) < 10.0 && l.success_received(5.0 + 2.0 * k) > 10.0);
    }

    #[test]
    fn sends_wait_for_tokens_at_the_allowed_rate_once_on() {
        let mut l = ClientRateLimiter::new(0.0);
        l.on_answer(0.0, true);
        // Nothing measured yet: the rate is the floor, 0.5 a second, one token at most.
        assert!(close(l.allowed_rate(), MIN_RATE));
        assert!(close(l.acquire(0.0), 2.0));
        // The second send waits behind the first's reserved token.
        assert!(close(l.acquire(0.0), 4.0));
        assert!(close(l.acquire(10.0), 0.0));
    }

    #[test]
    fn a_token_given_back_is_the_next_senders() {
        let mut l = ClientRateLimiter::new(0.0);
        l.on_answer(0.0, true);
        assert!(close(l.acquire(0.0), 2.0));
        assert!(close(l.acquire(0.0), 4.0));
        // Both waiting sends are abandoned: the next send waits as if neither had asked.
        l.give_back(1.0);
        l.give_back(1.0);
        assert!(close(l.acquire(1.0), 1.0));
    }

    #[test]
    fn the_allowed_rate_never_passes_twice_the_measured_rate() {
        let mut l = ClientRateLimiter::new(0.0);
        l.on_answer(0.0, true);
        l.on_answer(100.0, false);
        // CUBIC would give far more after 100 s; the measured rate is 1 answer over 100 s.
        assert!(close(l.allowed_rate(), MIN_RATE.max(2.0 * l.measured_rate())));
    }
}
