//! Client-side adaptive throttling from the Google SRE book ("Handling Overload"): a client
//! that sees its backend accept too few of its requests rejects some locally, with probability
//! `max(0, (requests - k * accepts) / (requests + 1))` over a trailing window
//! (docs/references.md section 3). The client then sends about `k` times what the backend accepts, so rejections
//! cost the backend little while the client still notices quickly when it recovers.
//!
//! The caller supplies the uniform draw, so the throttle holds no randomness of its own.

use super::compile::Compile;
use super::compile::Invalid;
use super::contract::{Ask, AttemptEnd, Ending, Guard, GuardConfig, Parting, Seat, Verdict};
use super::slice_ring::SliceRing;
use crate::runtime::command::Effects;
use crate::scenario::{FieldPath, RawTable, ScenarioError, read_table};
use crate::sim::Micros;
use crate::sim::time::{MAX_SPAN_US, US_PER_MS, US_PER_S};
use crate::vocab::FailureKind;
use crate::vocab::Refusal;
use serde::{Deserialize, Serialize};

/// One-second slices at the book's two-minute window.
const SLICES: usize = 120;
const REQUESTS: usize = 0;
const ACCEPTS: usize = 1;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptiveThrottleConfig {
    /// The book's K: 2 by default; lower throttles harder (1.1 is its aggressive example).
    pub k: f64,
    /// The trailing window of history, two minutes in the book.
    pub window_us: Micros,
    /// No rejection while the window holds fewer requests than this. The book has no such
    /// floor, but without one a client starting cold rejects most of its first requests (they
    /// count before any reply can count as an accept) and can lock itself out: the formula has
    /// a second fixed point at probability 1. Go-kratos's SRE breaker uses 100.
    pub min_requests: u32,
}

impl Default for AdaptiveThrottleConfig {
    fn default() -> Self {
        AdaptiveThrottleConfig { k: 2.0, window_us: 120 * US_PER_S, min_requests: 100 }
    }
}

impl AdaptiveThrottleConfig {
    pub fn check(&self) -> Result<(), Invalid> {
        // Below 1 the throttle would reject traffic that the backend accepts in full.
        if !(self.k.is_finite() && self.k >= 1.0) {
            return Err(Invalid::new("k", format!("k must be a finite number >= 1, got {}", self.k)));
        }
        if !(US_PER_MS..=MAX_SPAN_US).contains(&self.window_us) {
            return Err(Invalid::new(
                "window_us",
                format!("window_us must be between 1 ms and {MAX_SPAN_US} us, got {}", self.window_us),
            ));
        }
        Ok(())
    }
}

/// Whether an attempt's end counts as an accept: the backend produced a response that is not a
/// rejection. RATE_LIMITED and OVERLOADED are rejections; TRANSIENT_TRANSPORT, EFFECT_UNKNOWN
/// (timeouts, refused connections), DEADLINE_EXHAUSTED and CANCELED produced no response. An
/// error the backend answered with (invalid input, a provider error, an unusable result) was
/// still accepted: sending less would not change it.
fn is_accept(failure: Option<FailureKind>) -> bool {
    match failure {
        None => true,
        Some(kind) => match kind {
            FailureKind::InvalidInput
            | FailureKind::Unauthorized
            | FailureKind::PermanentProvider
            | FailureKind::ResultInvalid => true,
            FailureKind::RateLimited
            | FailureKind::Overloaded
            | FailureKind::TransientTransport
            | FailureKind::EffectUnknown
            | FailureKind::DeadlineExhausted
            | FailureKind::Canceled => false,
        },
    }
}

/// Requests and accepts over the trailing window.
#[derive(Debug, Clone)]
pub struct AdaptiveThrottle {
    k: f64,
    min_requests: u32,
    window: SliceRing<2>,
}

impl AdaptiveThrottle {
    pub fn new(config: AdaptiveThrottleConfig) -> Result<Self, Invalid> {
        config.check()?;
        let slice_us = config.window_us.div_ceil(SLICES as u64);
        Ok(AdaptiveThrottle {
            k: config.k,
            min_requests: config.min_requests,
            window: SliceRing::new(slice_us, SLICES),
        })
    }

    pub fn requests(&mut self, now: Micros) -> u64 {
        self.window.total(now, REQUESTS).max(0) as u64
    }

    pub fn accepts(&mut self, now: Micros) -> u64 {
        self.window.total(now, ACCEPTS).max(0) as u64
    }

    /// The `+ 1` keeps the first requests of a quiet client from being rejected outright.
    pub fn reject_probability(&mut self, now: Micros) -> f64 {
        let requests = self.requests(now) as f64;
        if requests < f64::from(self.min_requests) {
            return 0.0;
        }
        let accepts = self.accepts(now) as f64;
        ((requests - self.k * accepts) / (requests + 1.0)).max(0.0)
    }

    /// Counts a request the application made, sent or rejected locally: the book counts
    /// requests above the throttle, which is what lets rejections raise the probability.
    pub fn on_request(&mut self, now: Micros) {
        self.window.add(now, REQUESTS, 1);
    }

    fn on_accept(&mut self, now: Micros) {
        self.window.add(now, ACCEPTS, 1);
    }

    /// Decides one request with the caller's uniform draw `u` in [0, 1) and records it (so do
    /// not also call `on_request` for it). True means send it.
    pub fn admit(&mut self, now: Micros, u: f64) -> bool {
        let reject = u < self.reject_probability(now);
        self.on_request(now);
        !reject
    }

    /// Reports the end of a request that was sent.
    pub fn on_attempt_end(&mut self, now: Micros, end: AttemptEnd) {
        if is_accept(end.failure) {
            self.on_accept(now);
        }
    }
}

impl GuardConfig for AdaptiveThrottleConfig {
    type Live = AdaptiveThrottle;

    fn build(&self) -> AdaptiveThrottle {
        AdaptiveThrottle::new(*self).expect("throttle configurations are checked at compile time")
    }
}

/// Asked by every attempt; learns only from outcomes (a cancelled or refused attempt tells
/// nothing about whether the backend accepts requests).
impl Guard for AdaptiveThrottle {
    fn admit(&mut self, now: Micros, ask: &Ask, seat: Seat, _out: &mut impl Effects) -> Verdict {
        if self.admit(now, seat.draw(ask)) { Verdict::Pass } else { Verdict::Refuse(Refusal::Throttled) }
    }

    fn end(&mut self, now: Micros, parting: Parting, _out: &mut impl Effects) {
        if let Ending::Outcome(end) = parting.ending {
            self.on_attempt_end(now, end);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The file's table

/// `[[policy.<name>.retry_budget]]` with `kind = "adaptive_throttling"`: Google SRE's
/// client-side throttling, one instance per scope value covered.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct AdaptiveThrottleTable {
    pub kind: String,
    /// dependency (default), tenant or global.
    #[serde(default)]
    pub scope: Option<String>,
    /// With scope = "dependency": only this dependency; every one when absent.
    #[serde(default)]
    pub dependency: Option<String>,
    #[serde(default)]
    pub k: Option<f64>,
    #[serde(default)]
    pub window_ms: Option<f64>,
    /// No rejection below this many requests in the window (default 100).
    #[serde(default)]
    pub min_requests: Option<u32>,
}

crate::scenario::types::tables_only!(AdaptiveThrottleTable);

pub fn compile<G: From<AdaptiveThrottleConfig>>(
    cx: &mut Compile<G>,
    path: &FieldPath,
    raw: &RawTable,
) -> Result<(), ScenarioError> {
    let t: AdaptiveThrottleTable = read_table(cx.source, path, raw)?;
    let d = AdaptiveThrottleConfig::default();
    let c = AdaptiveThrottleConfig {
        k: t.k.unwrap_or(d.k),
        window_us: cx.duration(&path.key("window_ms"), t.window_ms, d.window_us)?,
        min_requests: t.min_requests.unwrap_or(d.min_requests),
    };
    cx.check(path, c.check())?;
    cx.add_budgets(path, t.scope.as_deref(), &t.dependency, c)
}

#[cfg(test)]
mod floor_tests {
    use super::*;

    #[test]
    fn nothing_is_rejected_below_min_requests() {
        let mut t = AdaptiveThrottle::new(AdaptiveThrottleConfig::default()).unwrap();
        for _ in 0..99 {
            t.on_request(0);
        }
        assert_eq!(t.reject_probability(0), 0.0, "99 requests, no accept: below the floor of 100");
        t.on_request(0);
        assert!((t.reject_probability(0) - 100.0 / 101.0).abs() < 1e-12, "at the floor the book's rule applies");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::guard::testing::Lcg;

    fn throttle() -> AdaptiveThrottle {
        // The book's formula alone: no floor.
        AdaptiveThrottle::new(AdaptiveThrottleConfig { min_requests: 0, ..Default::default() }).unwrap()
    }

    fn record(t: &mut AdaptiveThrottle, now: Micros, requests: u32, accepts: u32) {
        for _ in 0..requests {
            t.on_request(now);
        }
        for _ in 0..accepts {
            t.on_accept(now);
        }
    }

    #[test]
    fn probability_follows_the_book() {
        let mut t = throttle();
        record(&mut t, 0, 100, 40);
        assert_eq!(t.reject_probability(0), (100.0 - 2.0 * 40.0) / 101.0);
        let mut t = throttle();
        record(&mut t, 0, 100, 50);
        assert_eq!(t.reject_probability(0), 0.0, "accepts = requests / k");
        record(&mut t, 0, 0, 30);
        assert_eq!(t.reject_probability(0), 0.0);
        assert_eq!(throttle().reject_probability(0), 0.0, "no history, no rejection");
    }

    #[test]
    fn history_leaves_the_window() {
        let mut t = throttle();
        record(&mut t, 0, 100, 0);
        assert_eq!(t.reject_probability(119 * US_PER_S), 100.0 / 101.0);
        assert_eq!(t.reject_probability(120 * US_PER_S), 0.0);
        assert_eq!(t.requests(120 * US_PER_S), 0);
    }

    #[test]
    fn admit_compares_the_draw_and_counts_rejections_as_requests() {
        let mut t = throttle();
        record(&mut t, 0, 100, 40);
        assert!(!t.admit(0, 0.1), "0.1 < 20/101");
        assert!(t.admit(0, 0.5));
        assert_eq!(t.requests(0), 102);
    }

    #[test]
    fn a_backend_at_capacity_sees_about_k_times_what_it_accepts() {
        // 100 requests a second against a backend that accepts 20 a second.
        let mut t = throttle();
        let mut draw = 12_345u64;
        let (mut sent_late, mut seconds_late) = (0u64, 0u64);
        for second in 0..600u64 {
            let mut accepted = 0;
            for i in 0..100u64 {
                let now = second * US_PER_S + i * 10_000;
                draw = draw.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                let u = (draw >> 11) as f64 / (1u64 << 53) as f64;
                if t.admit(now, u) {
                    sent_late += u64::from(second >= 300);
                    if accepted < 20 {
                        accepted += 1;
                        t.on_accept(now);
                    }
                }
            }
            seconds_late += u64::from(second >= 300);
        }
        let rate = sent_late as f64 / seconds_late as f64;
        assert!((36.0..=44.0).contains(&rate), "sent {rate} a second, expected about 2 x 20");
    }

    #[test]
    fn accepts_are_responses_that_are_not_rejections() {
        let accepted: Vec<_> = FailureKind::ALL.into_iter().filter(|&k| is_accept(Some(k))).collect();
        assert_eq!(
            accepted,
            [
                FailureKind::InvalidInput,
                FailureKind::Unauthorized,
                FailureKind::PermanentProvider,
                FailureKind::ResultInvalid
            ]
        );
        assert!(is_accept(None));
        let mut t = throttle();
        t.on_attempt_end(0, AttemptEnd::failed(FailureKind::Overloaded, 10));
        t.on_attempt_end(0, AttemptEnd::success(10));
        assert_eq!(t.accepts(0), 1);
    }

    #[test]
    fn config_is_checked() {
        let bad = AdaptiveThrottleConfig { k: 0.5, ..Default::default() };
        assert_eq!(bad.check().unwrap_err().field, "k");
        let bad = AdaptiveThrottleConfig { k: f64::INFINITY, ..Default::default() };
        assert!(bad.check().is_err());
        let bad = AdaptiveThrottleConfig { window_us: 0, ..Default::default() };
        assert_eq!(bad.check().unwrap_err().field, "window_us");
        assert!(AdaptiveThrottle::new(bad).is_err());
    }

    #[test]
    fn random_sequences_keep_the_probability_in_bounds() {
        let mut rng = Lcg(7);
        let mut next = |bound: u64| rng.next(bound);
        let config = AdaptiveThrottleConfig { k: 1.1, window_us: 10 * US_PER_S, min_requests: 0 };
        let mut t = AdaptiveThrottle::new(config).unwrap();
        let mut now = 0;
        for _ in 0..50_000 {
            now += next(3) * next(300_000);
            match next(3) {
                0 => {
                    t.admit(now, next(1_000) as f64 / 1_000.0);
                }
                1 => t.on_accept(now),
                _ => t.on_request(now),
            }
            let p = t.reject_probability(now);
            assert!((0.0..1.0).contains(&p), "{p}");
        }
    }
}
