//! Envoy's admission control filter (docs/references.md section 5): the SRE book's client-side
//! throttling driven by a success-rate target. Over a sliding window of one-second slices it
//! rejects with probability
//! `min(max_rejection_probability, max(0, (n_total - n_success / sr_threshold) / (n_total + 1))^(1 / aggression))`,
//! and lets everything through while the window's average rate is below `rps_threshold`.
//!
//! As in Envoy, only requests that went through are recorded, when they end; a local rejection
//! leaves no trace. The caller supplies the uniform draw; Envoy rounds its probability to four
//! significant figures, this compares exactly.

use super::compile::Invalid;
use super::compile::{Compile, Scope, Stage};
use super::contract::{Ask, AttemptEnd, Ending, Guard, GuardConfig, Parting, Seat, Verdict};
use super::slice_ring::SliceRing;
use crate::runtime::command::Effects;
use crate::scenario::{FieldPath, RawTable, ScenarioError, read_table};
use crate::sim::Micros;
use crate::sim::time::US_PER_S;
use crate::vocab::FailureKind;
use crate::vocab::Refusal;
use serde::{Deserialize, Serialize};

const TOTAL: usize = 0;
const SUCCESSES: usize = 1;
/// Keeps the ring (one slot a second) small; Envoy itself sets no maximum.
const MAX_WINDOW_S: u64 = 3_600;

/// Envoy `AdmissionControl`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdmissionControlConfig {
    /// Rounded to the nearest second, as Envoy does.
    pub sampling_window_us: Micros,
    /// The success rate below which rejection starts, as a fraction (Envoy's 95 % is 0.95).
    pub sr_threshold: f64,
    /// 1 makes the probability grow linearly as the success rate falls; more rejects sooner.
    pub aggression: f64,
    /// Below this average rate (requests a second over the window) nothing is rejected.
    pub rps_threshold: u32,
    /// The probability never exceeds this fraction, so some requests always probe the backend.
    pub max_rejection_probability: f64,
}

impl Default for AdmissionControlConfig {
    fn default() -> Self {
        AdmissionControlConfig {
            sampling_window_us: 30 * US_PER_S,
            sr_threshold: 0.95,
            aggression: 1.0,
            rps_threshold: 0,
            max_rejection_probability: 0.8,
        }
    }
}

impl AdmissionControlConfig {
    pub fn check(&self) -> Result<(), Invalid> {
        if !(1..=MAX_WINDOW_S).contains(&self.window_s()) {
            return Err(Invalid::new(
                "sampling_window_us",
                format!("sampling_window_us must round to 1..={MAX_WINDOW_S} s, got {} us", self.sampling_window_us),
            ));
        }
        if !(self.sr_threshold > 0.0 && self.sr_threshold <= 1.0) {
            return Err(Invalid::new(
                "sr_threshold",
                format!("sr_threshold must be in (0, 1], got {}", self.sr_threshold),
            ));
        }
        // Envoy raises a smaller aggression to 1; a scenario that asks for one is refused instead.
        if !(self.aggression.is_finite() && self.aggression >= 1.0) {
            return Err(Invalid::new(
                "aggression",
                format!("aggression must be a finite number >= 1, got {}", self.aggression),
            ));
        }
        if !(0.0..=1.0).contains(&self.max_rejection_probability) {
            return Err(Invalid::new(
                "max_rejection_probability",
                format!("max_rejection_probability must be in [0, 1], got {}", self.max_rejection_probability),
            ));
        }
        Ok(())
    }

    fn window_s(&self) -> u64 {
        self.sampling_window_us.saturating_add(US_PER_S / 2) / US_PER_S
    }
}

/// Whether an attempt's end is an Envoy success under the default gRPC criteria, or `None` when
/// Envoy would record nothing. Failures are the statuses Envoy does not list as successes:
/// RATE_LIMITED (RESOURCE_EXHAUSTED), OVERLOADED and TRANSIENT_TRANSPORT (UNAVAILABLE),
/// EFFECT_UNKNOWN (a timeout, DEADLINE_EXCEEDED) and PERMANENT_PROVIDER (INTERNAL). Answers
/// that fewer requests would not change are successes (INVALID_ARGUMENT, UNAUTHENTICATED, and
/// a result the caller could not use). CANCELED is a stream reset and DEADLINE_EXHAUSTED never
/// reached the dependency: Envoy records neither.
fn success_of(failure: Option<FailureKind>) -> Option<bool> {
    match failure {
        None => Some(true),
        Some(kind) => match kind {
            FailureKind::InvalidInput | FailureKind::Unauthorized | FailureKind::ResultInvalid => Some(true),
            FailureKind::RateLimited
            | FailureKind::Overloaded
            | FailureKind::TransientTransport
            | FailureKind::EffectUnknown
            | FailureKind::PermanentProvider => Some(false),
            FailureKind::DeadlineExhausted | FailureKind::Canceled => None,
        },
    }
}

/// Request and success counts over the sampling window.
#[derive(Debug, Clone)]
pub struct AdmissionControl {
    config: AdmissionControlConfig,
    window_s: u64,
    window: SliceRing<2>,
}

impl AdmissionControl {
    pub fn new(config: AdmissionControlConfig) -> Result<Self, Invalid> {
        config.check()?;
        let window_s = config.window_s();
        Ok(AdmissionControl { config, window_s, window: SliceRing::new(US_PER_S, window_s as usize) })
    }

    pub fn requests(&mut self, now: Micros) -> u64 {
        self.window.total(now, TOTAL).max(0) as u64
    }

    pub fn successes(&mut self, now: Micros) -> u64 {
        self.window.total(now, SUCCESSES).max(0) as u64
    }

    /// Whole requests a second, truncated, over the full window as Envoy divides.
    fn average_rps(&mut self, now: Micros) -> u64 {
        self.requests(now) / self.window_s
    }

    pub fn reject_probability(&mut self, now: Micros) -> f64 {
        let total = self.requests(now) as f64;
        let successes = self.successes(now) as f64;
        let linear = ((total - successes / self.config.sr_threshold) / (total + 1.0)).max(0.0);
        let shaped = if self.config.aggression == 1.0 { linear } else { linear.powf(1.0 / self.config.aggression) };
        shaped.min(self.config.max_rejection_probability)
    }

    /// Decides one request with the caller's uniform draw `u` in [0, 1). True means send it;
    /// nothing is recorded until it ends.
    pub fn admit(&mut self, now: Micros, u: f64) -> bool {
        if self.average_rps(now) < u64::from(self.config.rps_threshold) {
            return true;
        }
        u >= self.reject_probability(now) || u.is_nan()
    }

    pub fn on_end(&mut self, now: Micros, success: bool) {
        self.window.add(now, TOTAL, 1);
        if success {
            self.window.add(now, SUCCESSES, 1);
        }
    }

    /// Reports the end of a request that was sent, classified by [`success_of`].
    pub fn on_attempt_end(&mut self, now: Micros, end: AttemptEnd) {
        if let Some(success) = success_of(end.failure) {
            self.on_end(now, success);
        }
    }
}

impl GuardConfig for AdmissionControlConfig {
    type Live = AdmissionControl;

    fn build(&self) -> AdmissionControl {
        AdmissionControl::new(*self).expect("admission control configurations are checked at compile time")
    }
}

/// Like the shedder, it never stands between a write and its reconciliation: control traffic
/// passes without a draw.
impl Guard for AdmissionControl {
    fn admit(&mut self, now: Micros, ask: &Ask, seat: Seat, _out: &mut impl Effects) -> Verdict {
        if !ask.info.control && !self.admit(now, seat.draw(ask)) {
            Verdict::Refuse(Refusal::Throttled)
        } else {
            Verdict::Pass
        }
    }

    fn end(&mut self, now: Micros, parting: Parting, _out: &mut impl Effects) {
        if let Ending::Outcome(end) = parting.ending {
            self.on_attempt_end(now, end);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The file's table

/// `[[policy.<name>.load_shedding]]` with `kind = "admission_control"`: Envoy's admission
/// control, one instance per dependency it covers.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct AdmissionControlTable {
    pub kind: String,
    /// The dependency whose calls it admits; every one when absent.
    #[serde(default)]
    pub dependency: Option<String>,
    #[serde(default)]
    pub sampling_window_ms: Option<f64>,
    #[serde(default)]
    pub sr_threshold: Option<f64>,
    #[serde(default)]
    pub aggression: Option<f64>,
    #[serde(default)]
    pub rps_threshold: Option<u32>,
    #[serde(default)]
    pub max_rejection_probability: Option<f64>,
}

crate::scenario::types::tables_only!(AdmissionControlTable);

pub fn compile<G: From<AdmissionControlConfig>>(
    cx: &mut Compile<G>,
    path: &FieldPath,
    raw: &RawTable,
) -> Result<(), ScenarioError> {
    let t: AdmissionControlTable = read_table(cx.source, path, raw)?;
    let dependencies = cx.dependencies(&path.key("dependency"), &t.dependency)?;
    let d = AdmissionControlConfig::default();
    let config = AdmissionControlConfig {
        sampling_window_us: cx.duration(&path.key("sampling_window_ms"), t.sampling_window_ms, d.sampling_window_us)?,
        sr_threshold: t.sr_threshold.unwrap_or(d.sr_threshold),
        aggression: t.aggression.unwrap_or(d.aggression),
        rps_threshold: t.rps_threshold.unwrap_or(d.rps_threshold),
        max_rejection_probability: t.max_rejection_probability.unwrap_or(d.max_rejection_probability),
    };
    cx.check(path, config.check())?;
    for d in dependencies {
        cx.push(Stage::Shed, Scope::Dependency(d), config);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::guard::testing::Lcg;

    fn control(config: AdmissionControlConfig) -> AdmissionControl {
        AdmissionControl::new(config).unwrap()
    }

    fn record(a: &mut AdmissionControl, now: Micros, total: u32, successes: u32) {
        for i in 0..total {
            a.on_end(now, i < successes);
        }
    }

    #[test]
    fn probability_follows_envoys_formula() {
        let mut a = control(AdmissionControlConfig::default());
        record(&mut a, 0, 100, 80);
        let expected: f64 = (100.0 - 80.0 / 0.95) / 101.0;
        assert!((expected - 0.156_331_4).abs() < 1e-7);
        assert_eq!(a.reject_probability(0), expected);

        let mut a = control(AdmissionControlConfig { aggression: 2.0, ..Default::default() });
        record(&mut a, 0, 100, 80);
        assert!((a.reject_probability(0) - expected.sqrt()).abs() < 1e-15);
        assert!((a.reject_probability(0) - 0.395_387_7).abs() < 1e-7, "aggression rejects sooner");
    }

    #[test]
    fn no_rejection_at_or_above_the_success_rate_threshold() {
        let mut a = control(AdmissionControlConfig::default());
        record(&mut a, 0, 100, 95);
        assert_eq!(a.reject_probability(0), 0.0);
        let mut a = control(AdmissionControlConfig::default());
        record(&mut a, 0, 100, 100);
        assert_eq!(a.reject_probability(0), 0.0);
    }

    #[test]
    fn probability_is_capped() {
        let mut a = control(AdmissionControlConfig::default());
        record(&mut a, 0, 100, 0);
        assert_eq!(a.reject_probability(0), 0.8, "100/101 capped at max_rejection_probability");
        assert!(!a.admit(0, 0.79));
        assert!(a.admit(0, 0.8));
        assert_eq!(a.requests(0), 100, "decisions are not recorded");
    }

    #[test]
    fn low_traffic_passes_under_rps_threshold() {
        let config = AdmissionControlConfig { rps_threshold: 4, ..Default::default() };
        let mut a = control(config);
        record(&mut a, 0, 119, 0);
        assert_eq!(a.average_rps(0), 3);
        assert!(a.admit(0, 0.0), "3 rps < 4");
        record(&mut a, 0, 1, 0);
        assert_eq!(a.average_rps(0), 4);
        assert!(!a.admit(0, 0.0));
    }

    #[test]
    fn samples_leave_the_window() {
        let mut a = control(AdmissionControlConfig::default());
        record(&mut a, 0, 100, 0);
        assert_eq!(a.requests(30 * US_PER_S - 1), 100);
        assert_eq!(a.requests(30 * US_PER_S), 0);
        assert_eq!(a.reject_probability(30 * US_PER_S), 0.0);
    }

    #[test]
    fn window_rounds_to_the_nearest_second() {
        let config = AdmissionControlConfig { sampling_window_us: 2_400_000, ..Default::default() };
        let mut a = control(config);
        record(&mut a, 0, 10, 0);
        assert_eq!(a.requests(US_PER_S), 10);
        assert_eq!(a.requests(2 * US_PER_S), 0);
    }

    #[test]
    fn attempt_ends_map_to_grpc_default_criteria() {
        let mut a = control(AdmissionControlConfig::default());
        a.on_attempt_end(0, AttemptEnd::success(5));
        a.on_attempt_end(0, AttemptEnd::failed(FailureKind::InvalidInput, 5));
        a.on_attempt_end(0, AttemptEnd::failed(FailureKind::RateLimited, 5));
        a.on_attempt_end(0, AttemptEnd::failed(FailureKind::Canceled, 5));
        assert_eq!((a.requests(0), a.successes(0)), (3, 2));
        let unrecorded: Vec<_> = FailureKind::ALL.into_iter().filter(|&k| success_of(Some(k)).is_none()).collect();
        assert_eq!(unrecorded, [FailureKind::DeadlineExhausted, FailureKind::Canceled]);
    }

    #[test]
    fn config_is_checked() {
        let fields = [
            (AdmissionControlConfig { sampling_window_us: 400_000, ..Default::default() }, "sampling_window_us"),
            (AdmissionControlConfig { sampling_window_us: u64::MAX, ..Default::default() }, "sampling_window_us"),
            (AdmissionControlConfig { sr_threshold: 0.0, ..Default::default() }, "sr_threshold"),
            (AdmissionControlConfig { aggression: 0.5, ..Default::default() }, "aggression"),
            (
                AdmissionControlConfig { max_rejection_probability: 1.5, ..Default::default() },
                "max_rejection_probability",
            ),
        ];
        for (config, field) in fields {
            assert_eq!(config.check().unwrap_err().field, field);
            assert!(AdmissionControl::new(config).is_err());
        }
    }

    #[test]
    fn random_sequences_keep_the_probability_in_bounds() {
        let mut rng = Lcg(11);
        let mut next = |bound: u64| rng.next(bound);
        let config = AdmissionControlConfig { aggression: 3.0, rps_threshold: 2, ..Default::default() };
        let mut a = control(config);
        let mut now = 0;
        for _ in 0..50_000 {
            now += next(3) * next(400_000);
            if a.admit(now, next(1_000) as f64 / 1_000.0) {
                a.on_end(now, next(10) < 7);
            }
            let p = a.reject_probability(now);
            assert!((0.0..=0.8).contains(&p), "{p}");
            assert!(a.successes(now) <= a.requests(now));
        }
    }
}
