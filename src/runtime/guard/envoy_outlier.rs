//! Envoy's outlier detection (cluster `outlier_detection`) for one host, as a pure state machine
//! over virtual time: the `consecutive_5xx` and `consecutive_gateway_failure` detectors, their
//! `enforcing_*` percentages, ejection for `base_ejection_time` x the host's ejection backoff
//! (capped by `max_ejection_time`), un-ejection only at the detector's `interval` sweeps, the
//! backoff's decay by one at each sweep that finds the host healthy an interval after its last
//! un-ejection, `max_ejection_percent` and `always_eject_one_host`, and the load balancer's
//! `healthy_panic_threshold` (an ejected host still gets traffic while the cluster is in panic).
//!
//! Read from Envoy's source (envoyproxy/envoy, source/common/upstream/outlier_detection_impl.cc:
//! `putHttpResponseCode`, `resultToHttpCode`, `ejectHost`, `checkHostForUneject`,
//! `onIntervalTimer`, `DetectorConfig`; outlier_detection_impl.h: `eject_time_backoff_{}`), the
//! v1.32+ line (the file with `always_eject_one_host`, added in 1.31, and extension monitors).
//! docs/scenario.md 8.7 lists the fields, defaults and departures.
//!
//! faultline's dependency is one station, so the guard is the monitor of a one-host cluster:
//! Envoy's rule `100 x (ejected + 1) / hosts <= max_ejection_percent` then ejects only when
//! `max_ejection_percent` is 100 or `always_eject_one_host` is set, and with the host ejected the
//! cluster has no healthy host, so below a `healthy_panic_threshold` above 0 Envoy routes to it
//! anyway (panic). Only with the panic threshold at 0 does an ejection refuse attempts (Envoy's
//! 503 "no healthy upstream").

use super::compile::{Compile, Invalid};
use super::contract::{Ask, Ending, Guard, GuardConfig, Parting, Seat, Verdict, report_breaker};
use crate::runtime::command::{Command, Effects};
use crate::scenario::{FieldPath, RawTable, ScenarioError, read_table};
use crate::sim::Micros;
use crate::sim::time::{US_PER_MS, US_PER_S};
use crate::vocab::{BreakerState, FailureKind, Refusal};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Envoy's `DEFAULT_MAX_EJECTION_TIME_MS`; the default is the larger of it and the base time.
pub const DEFAULT_MAX_EJECTION_TIME_US: Micros = 300 * US_PER_S;

/// The detector's options (Envoy's names; durations in microseconds of virtual time).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutlierOptions {
    /// 5xx answers in a row that trigger an ejection (`++consecutive_5xx_ == consecutive_5xx`).
    pub consecutive_5xx: u32,
    /// Percent of detected consecutive-5xx ejections carried out.
    pub enforcing_consecutive_5xx: u32,
    /// 502, 503, 504 (and timeouts, connect failures) in a row.
    pub consecutive_gateway_failure: u32,
    pub enforcing_consecutive_gateway_failure: u32,
    /// The sweep timer: un-ejections happen only at multiples of it.
    pub interval_us: Micros,
    pub base_ejection_time_us: Micros,
    pub max_ejection_time_us: Micros,
    /// Percent of the cluster's hosts that may be ejected at once (clamped to 100).
    pub max_ejection_percent: u32,
    /// Eject one host even when `max_ejection_percent` forbids it.
    pub always_eject_one_host: bool,
    /// The cluster's `common_lb_config.healthy_panic_threshold`, percent: below it Envoy routes
    /// to every host, ejected ones included.
    pub healthy_panic_threshold: f64,
}

impl Default for OutlierOptions {
    fn default() -> Self {
        OutlierOptions {
            consecutive_5xx: 5,
            enforcing_consecutive_5xx: 100,
            consecutive_gateway_failure: 5,
            enforcing_consecutive_gateway_failure: 0,
            interval_us: 10 * US_PER_S,
            base_ejection_time_us: 30 * US_PER_S,
            max_ejection_time_us: DEFAULT_MAX_EJECTION_TIME_US,
            max_ejection_percent: 10,
            always_eject_one_host: false,
            healthy_panic_threshold: 50.0,
        }
    }
}

impl OutlierOptions {
    pub fn check(&self) -> Result<(), Invalid> {
        for (field, v) in [
            ("enforcing_consecutive_5xx", self.enforcing_consecutive_5xx),
            ("enforcing_consecutive_gateway_failure", self.enforcing_consecutive_gateway_failure),
            ("max_ejection_percent", self.max_ejection_percent),
        ] {
            if v > 100 {
                return Err(Invalid::new(field, format!("{field} is a percentage, at most 100, got {v}")));
            }
        }
        let p = self.healthy_panic_threshold;
        if !(p.is_finite() && (0.0..=100.0).contains(&p)) {
            return Err(Invalid::new(
                "healthy_panic_threshold",
                format!("healthy_panic_threshold must be in [0, 100], got {p}"),
            ));
        }
        if self.interval_us < US_PER_MS {
            return Err(Invalid::new(
                "interval_us",
                "interval_ms must be at least 1 ms (Envoy: greater than 0)".into(),
            ));
        }
        if self.base_ejection_time_us < US_PER_MS {
            return Err(Invalid::new(
                "base_ejection_time_us",
                "base_ejection_time_ms must be at least 1 ms (Envoy: greater than 0)".into(),
            ));
        }
        if self.max_ejection_time_us < self.base_ejection_time_us {
            return Err(Invalid::new(
                "max_ejection_time_us",
                "max_ejection_time_ms cannot be smaller than base_ejection_time_ms (Envoy refuses it)".into(),
            ));
        }
        Ok(())
    }

    /// `ejectHost` for the one host of the cluster (`hosts` = 1, nothing else ejected):
    /// 100 x 1 / 1 <= max_ejection_percent, or `always_eject_one_host`.
    pub fn may_eject(&self) -> bool {
        self.max_ejection_percent.min(100) >= 100 || self.always_eject_one_host
    }
}

/// What Envoy's detector makes of an attempt's ending (`split_external_local_origin_errors`
/// false: every result is an HTTP code, `resultToHttpCode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// Not 5xx: 2xx, 4xx (429 included). Resets both counters.
    Ok,
    /// 5xx and a gateway error: 502, 503, 504, a timeout (504), a connect failure (503).
    Gateway,
    /// 5xx but not a gateway error (500): resets the gateway counter.
    Other5xx,
    /// No result reaches the detector (the caller cancelled, or it never ran).
    None,
}

/// The failure kind's code: OVERLOADED is the station's 503; TRANSIENT_TRANSPORT and
/// EFFECT_UNKNOWN are timeouts and dropped connections (504, 503); PERMANENT_PROVIDER a 500;
/// RATE_LIMITED a 429; a wrong result came with a 200.
pub fn code_of(failure: Option<FailureKind>) -> Code {
    match failure {
        None => Code::Ok,
        Some(kind) => match kind {
            FailureKind::Overloaded | FailureKind::TransientTransport | FailureKind::EffectUnknown => Code::Gateway,
            FailureKind::PermanentProvider => Code::Other5xx,
            FailureKind::InvalidInput
            | FailureKind::Unauthorized
            | FailureKind::RateLimited
            | FailureKind::ResultInvalid => Code::Ok,
            FailureKind::DeadlineExhausted | FailureKind::Canceled => Code::None,
        },
    }
}

/// The host's monitor and the detector's sweep timer.
#[derive(Debug, Clone)]
pub struct OutlierDetector {
    options: OutlierOptions,
    consecutive_5xx: u32,
    consecutive_gateway: u32,
    /// When the host was ejected, while it is.
    ejected_at: Option<Micros>,
    /// Envoy's `eject_time_backoff_`: the multiplier of `base_ejection_time`.
    backoff: u64,
    last_uneject: Option<Micros>,
    /// The next interval sweep not yet applied.
    next_sweep: Micros,
    ejections: u64,
}

impl OutlierDetector {
    pub fn new(options: OutlierOptions) -> Self {
        OutlierDetector {
            next_sweep: options.interval_us.max(1),
            options,
            consecutive_5xx: 0,
            consecutive_gateway: 0,
            ejected_at: None,
            backoff: 0,
            last_uneject: None,
            ejections: 0,
        }
    }

    pub fn ejected(&self) -> bool {
        self.ejected_at.is_some()
    }

    /// Ejections carried out so far.
    pub fn ejections(&self) -> u64 {
        self.ejections
    }

    /// The ejection-time multiplier now.
    pub fn backoff(&self) -> u64 {
        self.backoff
    }

    /// An attempt may be sent: the host is not ejected, or the cluster is in panic.
    pub fn admits(&mut self, now: Micros) -> bool {
        self.advance(now);
        !self.ejected() || self.options.healthy_panic_threshold > 0.0
    }

    /// The ejection's length: min(base x backoff, max) (`checkHostForUneject`, no jitter).
    fn ejection_us(&self) -> Micros {
        self.options.base_ejection_time_us.saturating_mul(self.backoff).min(self.options.max_ejection_time_us)
    }

    /// The sweep at which the host, ejected now, comes back.
    pub fn wake_at(&self) -> Option<Micros> {
        let at = self.ejected_at?.saturating_add(self.ejection_us());
        let i = self.options.interval_us.max(1);
        Some(at.div_ceil(i).max(1).saturating_mul(i).max(self.next_sweep))
    }

    /// Applies every interval sweep due by `now` (`onIntervalTimer`): un-ejects a host whose time
    /// is up, then lowers the backoff of a host healthy for an interval since its un-ejection.
    pub fn advance(&mut self, now: Micros) {
        let i = self.options.interval_us.max(1);
        while self.next_sweep <= now {
            if !self.ejected() && self.backoff == 0 {
                // Nothing a sweep could change until the next ejection.
                self.next_sweep = (now / i + 1) * i;
                break;
            }
            let t = self.next_sweep;
            if let Some(at) = self.ejected_at
                && self.ejection_us() <= t - at
            {
                self.ejected_at = None;
                self.consecutive_5xx = 0;
                self.consecutive_gateway = 0;
                self.last_uneject = Some(t);
            }
            if !self.ejected() && self.last_uneject.is_some_and(|u| t - u >= i) && self.backoff > 0 {
                self.backoff -= 1;
            }
            self.next_sweep = t.saturating_add(i);
        }
    }

    /// An attempt's result (`putHttpResponseCode`). `draws` are two uniform draws in [0, 1)
    /// for the `enforcing_*` rolls of the gateway and the 5xx detector, in that order.
    pub fn record(&mut self, now: Micros, code: Code, draws: (f64, f64)) {
        self.advance(now);
        let o = self.options;
        match code {
            Code::None => {}
            Code::Ok => {
                self.consecutive_5xx = 0;
                self.consecutive_gateway = 0;
            }
            Code::Gateway | Code::Other5xx => {
                if code == Code::Gateway {
                    self.consecutive_gateway = self.consecutive_gateway.saturating_add(1);
                    if self.consecutive_gateway == o.consecutive_gateway_failure && !self.ejected() {
                        self.detected(now, o.enforcing_consecutive_gateway_failure, draws.0);
                        self.consecutive_gateway = 0;
                    }
                } else {
                    self.consecutive_gateway = 0;
                }
                self.consecutive_5xx = self.consecutive_5xx.saturating_add(1);
                if self.consecutive_5xx == o.consecutive_5xx && !self.ejected() {
                    self.detected(now, o.enforcing_consecutive_5xx, draws.1);
                    self.consecutive_5xx = 0;
                }
            }
        }
    }

    /// `ejectHost`: allowed by `max_ejection_percent`, then carried out with probability
    /// `enforcing` percent (`featureEnabled`: enforcing > random % 100).
    fn detected(&mut self, now: Micros, enforcing: u32, u: f64) {
        if !self.options.may_eject() || (u * 100.0).floor() >= f64::from(enforcing) {
            return;
        }
        self.ejected_at = Some(now);
        self.ejections += 1;
        let base = self.options.base_ejection_time_us;
        if self.backoff.saturating_mul(base) < self.options.max_ejection_time_us.saturating_add(base) {
            self.backoff += 1;
        }
    }
}

/// The compiled guard: options and the breaker label it reports under.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnvoyOutlierSpec {
    pub options: OutlierOptions,
    pub label: u16,
}

/// A live detector in a pipeline, with the enforcing draws of the attempts in flight.
#[derive(Debug)]
pub struct EnvoyOutlierGuard {
    detector: OutlierDetector,
    label: u16,
    draws: BTreeMap<u64, (f64, f64)>,
    wake: Option<Micros>,
}

impl GuardConfig for EnvoyOutlierSpec {
    type Live = EnvoyOutlierGuard;

    fn build(&self) -> EnvoyOutlierGuard {
        EnvoyOutlierGuard {
            detector: OutlierDetector::new(self.options),
            label: self.label,
            draws: BTreeMap::new(),
            wake: None,
        }
    }
}

fn state(ejected: bool) -> BreakerState {
    if ejected { BreakerState::Open } else { BreakerState::Closed }
}

impl EnvoyOutlierGuard {
    fn step<T>(&mut self, now: Micros, out: &mut impl Effects, op: impl FnOnce(&mut OutlierDetector) -> T) -> T {
        let before = state(self.detector.ejected());
        self.detector.advance(now);
        report_breaker(self.label, before, state(self.detector.ejected()), out);
        let middle = state(self.detector.ejected());
        let result = op(&mut self.detector);
        report_breaker(self.label, middle, state(self.detector.ejected()), out);
        let due = self.detector.wake_at();
        if due != self.wake
            && let Some(at) = due
        {
            out.command(Command::WakeGuards { at: at.max(now) });
        }
        self.wake = due;
        result
    }
}

impl Guard for EnvoyOutlierGuard {
    fn admit(&mut self, now: Micros, ask: &Ask, seat: Seat, out: &mut impl Effects) -> Verdict {
        if !self.step(now, out, |d| d.admits(now)) {
            return Verdict::Refuse(Refusal::CircuitOpen);
        }
        let mut stream = ask.key.with(u64::from(seat.guard)).stream();
        let draws = (stream.unit(), stream.unit());
        self.draws.insert(ask.waiter, draws);
        Verdict::Pass
    }

    fn undo(&mut self, _now: Micros, parting: Parting, _out: &mut impl Effects) {
        self.draws.remove(&parting.waiter);
    }

    fn end(&mut self, now: Micros, parting: Parting, out: &mut impl Effects) {
        let draws = self.draws.remove(&parting.waiter).unwrap_or((0.0, 0.0));
        let code = match parting.ending {
            Ending::Outcome(end) => code_of(end.failure),
            Ending::Canceled | Ending::Refused => Code::None,
        };
        self.step(now, out, |d| d.record(now, code, draws));
    }

    fn on_wake(&mut self, now: Micros, out: &mut impl Effects) {
        if self.detector.wake_at().is_some_and(|t| t <= now) {
            self.step(now, out, |_| ());
        }
    }

    fn breaker_state(&self) -> Option<(u16, BreakerState)> {
        Some((self.label, state(self.detector.ejected())))
    }
}

// ---------------------------------------------------------------------------------------------
// The file's table

/// `[[policy.<name>.circuit_breaker]]` with `kind = "envoy_outlier"`: Envoy's field names
/// (durations in ms).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct EnvoyOutlierTable {
    pub kind: String,
    #[serde(default)]
    pub dependency: Option<String>,
    #[serde(default)]
    pub circuit_key: Option<String>,
    #[serde(default)]
    pub consecutive_5xx: Option<u32>,
    #[serde(default)]
    pub enforcing_consecutive_5xx: Option<u32>,
    #[serde(default)]
    pub consecutive_gateway_failure: Option<u32>,
    #[serde(default)]
    pub enforcing_consecutive_gateway_failure: Option<u32>,
    #[serde(default)]
    pub interval_ms: Option<f64>,
    #[serde(default)]
    pub base_ejection_time_ms: Option<f64>,
    /// Default: the larger of 300 s and `base_ejection_time_ms`, as Envoy's.
    #[serde(default)]
    pub max_ejection_time_ms: Option<f64>,
    #[serde(default)]
    pub max_ejection_percent: Option<u32>,
    #[serde(default)]
    pub always_eject_one_host: Option<bool>,
    #[serde(default)]
    pub healthy_panic_threshold: Option<f64>,
}

crate::scenario::types::tables_only!(EnvoyOutlierTable);

/// Reads one entry and adds its detectors.
pub fn compile<G: From<EnvoyOutlierSpec>>(
    cx: &mut Compile<G>,
    path: &FieldPath,
    raw: &RawTable,
) -> Result<(), ScenarioError> {
    let t: EnvoyOutlierTable = read_table(cx.source, path, raw)?;
    let d = OutlierOptions::default();
    let base = cx.duration(&path.key("base_ejection_time_ms"), t.base_ejection_time_ms, d.base_ejection_time_us)?;
    let options = OutlierOptions {
        consecutive_5xx: t.consecutive_5xx.unwrap_or(d.consecutive_5xx),
        enforcing_consecutive_5xx: t.enforcing_consecutive_5xx.unwrap_or(d.enforcing_consecutive_5xx),
        consecutive_gateway_failure: t.consecutive_gateway_failure.unwrap_or(d.consecutive_gateway_failure),
        enforcing_consecutive_gateway_failure: t
            .enforcing_consecutive_gateway_failure
            .unwrap_or(d.enforcing_consecutive_gateway_failure),
        interval_us: cx.duration(&path.key("interval_ms"), t.interval_ms, d.interval_us)?,
        base_ejection_time_us: base,
        max_ejection_time_us: cx.duration(
            &path.key("max_ejection_time_ms"),
            t.max_ejection_time_ms,
            DEFAULT_MAX_EJECTION_TIME_US.max(base),
        )?,
        max_ejection_percent: t.max_ejection_percent.unwrap_or(d.max_ejection_percent),
        always_eject_one_host: t.always_eject_one_host.unwrap_or(d.always_eject_one_host),
        healthy_panic_threshold: t.healthy_panic_threshold.unwrap_or(d.healthy_panic_threshold),
    };
    cx.check(path, options.check())?;
    // Un-ejection waits for a sweep of the timer, not for the next call.
    cx.add_breakers(path, &t.dependency, t.circuit_key.as_deref(), false, |label| {
        EnvoyOutlierSpec { options, label }.into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Micros = US_PER_S;
    const ALWAYS: (f64, f64) = (0.0, 0.0);

    /// One host that may be ejected and, with no panic, refuses while it is.
    fn options() -> OutlierOptions {
        OutlierOptions { max_ejection_percent: 100, healthy_panic_threshold: 0.0, ..OutlierOptions::default() }
    }

    fn fail_n(d: &mut OutlierDetector, now: Micros, n: u32, code: Code) {
        for _ in 0..n {
            d.record(now, code, ALWAYS);
        }
    }

    #[test]
    fn defaults_are_envoys() {
        let o = OutlierOptions::default();
        assert_eq!((o.consecutive_5xx, o.enforcing_consecutive_5xx), (5, 100));
        assert_eq!((o.consecutive_gateway_failure, o.enforcing_consecutive_gateway_failure), (5, 0));
        assert_eq!((o.interval_us, o.base_ejection_time_us, o.max_ejection_time_us), (10 * S, 30 * S, 300 * S));
        assert_eq!(o.max_ejection_percent, 10);
        assert!(!o.always_eject_one_host);
        assert_eq!(o.healthy_panic_threshold, 50.0);
        assert_eq!(o.check(), Ok(()));
    }

    #[test]
    fn a_single_host_is_never_ejected_under_ten_percent() {
        // 100 x 1 / 1 = 100 % > 10 %: Envoy's ejections_overflow, no ejection.
        let mut d = OutlierDetector::new(OutlierOptions { healthy_panic_threshold: 0.0, ..OutlierOptions::default() });
        fail_n(&mut d, 0, 50, Code::Other5xx);
        assert!(!d.ejected() && d.ejections() == 0);
        let mut d = OutlierDetector::new(OutlierOptions {
            always_eject_one_host: true,
            healthy_panic_threshold: 0.0,
            ..OutlierOptions::default()
        });
        fail_n(&mut d, 0, 5, Code::Other5xx);
        assert!(d.ejected(), "always_eject_one_host ejects the one host");
    }

    #[test]
    fn the_fifth_5xx_in_a_row_ejects_and_a_success_resets() {
        let mut d = OutlierDetector::new(options());
        fail_n(&mut d, 0, 4, Code::Other5xx);
        d.record(0, Code::Ok, ALWAYS);
        fail_n(&mut d, 0, 4, Code::Gateway);
        assert!(!d.ejected(), "4 after the reset");
        d.record(S, Code::Gateway, ALWAYS);
        assert!(d.ejected());
        assert!(!d.admits(S), "no panic threshold: refused");
    }

    #[test]
    fn panic_routing_sends_traffic_to_an_ejected_host() {
        let mut d = OutlierDetector::new(OutlierOptions { healthy_panic_threshold: 50.0, ..options() });
        fail_n(&mut d, 0, 5, Code::Other5xx);
        assert!(d.ejected());
        assert!(d.admits(0), "0 % healthy is under the 50 % panic threshold");
    }

    #[test]
    fn enforcing_zero_never_ejects_and_gateway_failures_are_not_enforced_by_default() {
        let mut d = OutlierDetector::new(OutlierOptions { enforcing_consecutive_5xx: 0, ..options() });
        fail_n(&mut d, 0, 100, Code::Other5xx);
        assert_eq!(d.ejections(), 0);
        // consecutive_gateway_failure 5, enforcing 0: the gateway detector fires and does nothing;
        // the 5xx detector (which counts gateway errors too) ejects.
        let mut d = OutlierDetector::new(OutlierOptions { consecutive_5xx: 7, ..options() });
        fail_n(&mut d, 0, 6, Code::Gateway);
        assert!(!d.ejected());
        d.record(0, Code::Gateway, ALWAYS);
        assert!(d.ejected());
        // The roll: enforcing 30 ejects when floor(100 u) < 30.
        let mut d = OutlierDetector::new(OutlierOptions { enforcing_consecutive_5xx: 30, ..options() });
        fail_n(&mut d, 0, 4, Code::Other5xx);
        d.record(0, Code::Other5xx, (0.0, 0.30));
        assert!(!d.ejected());
        fail_n(&mut d, 0, 4, Code::Other5xx);
        d.record(0, Code::Other5xx, (0.0, 0.29));
        assert!(d.ejected());
    }

    #[test]
    fn a_500_resets_the_gateway_counter_only() {
        let mut d = OutlierDetector::new(OutlierOptions {
            consecutive_5xx: 100,
            enforcing_consecutive_gateway_failure: 100,
            ..options()
        });
        fail_n(&mut d, 0, 4, Code::Gateway);
        d.record(0, Code::Other5xx, ALWAYS);
        fail_n(&mut d, 0, 4, Code::Gateway);
        assert!(!d.ejected());
        d.record(0, Code::Gateway, ALWAYS);
        assert!(d.ejected());
    }

    #[test]
    fn un_ejection_waits_for_the_sweep() {
        // Ejected at 3 s for 30 s: due at 33 s, back at the 40 s sweep.
        let mut d = OutlierDetector::new(options());
        fail_n(&mut d, 3 * S, 5, Code::Other5xx);
        assert_eq!(d.wake_at(), Some(40 * S));
        assert!(!d.admits(39 * S));
        assert!(d.admits(40 * S));
        // Ejected exactly on a sweep's grid: 10 s + 30 s = 40 s, a sweep, back then.
        let mut d = OutlierDetector::new(options());
        fail_n(&mut d, 10 * S, 5, Code::Other5xx);
        assert_eq!(d.wake_at(), Some(40 * S));
    }

    #[test]
    fn ejection_time_grows_with_the_backoff_and_is_capped() {
        // Back-to-back ejections: 30 s, then 60 s, then 90 s ... capped at 300 s.
        let mut d = OutlierDetector::new(OutlierOptions { interval_us: S, ..options() });
        let mut now = 0;
        let mut lengths = Vec::new();
        for _ in 0..12 {
            fail_n(&mut d, now, 5, Code::Other5xx);
            let back = d.wake_at().unwrap();
            lengths.push((back - now) / S);
            now = back;
            assert!(d.admits(now));
        }
        assert_eq!(lengths, [30, 60, 90, 120, 150, 180, 210, 240, 270, 300, 300, 300]);
        assert_eq!(d.backoff(), 11, "incremented while backoff x base < max + base");
    }

    #[test]
    fn the_backoff_decays_one_per_healthy_sweep() {
        let mut d = OutlierDetector::new(options());
        fail_n(&mut d, 0, 5, Code::Other5xx);
        assert!(d.admits(30 * S));
        fail_n(&mut d, 30 * S, 5, Code::Other5xx);
        assert_eq!(d.backoff(), 2);
        assert!(d.admits(90 * S), "60 s");
        // Healthy sweeps at 100 s and 110 s (an interval after 90 s): 2 -> 1 -> 0.
        assert!(d.admits(105 * S));
        assert_eq!(d.backoff(), 1);
        assert!(d.admits(110 * S));
        assert_eq!(d.backoff(), 0);
        fail_n(&mut d, 111 * S, 5, Code::Other5xx);
        assert_eq!(d.wake_at(), Some(150 * S), "30 s again: back at the first sweep after 141 s");
    }

    #[test]
    fn check_names_the_field() {
        let d = OutlierOptions::default();
        let field = |o: OutlierOptions| o.check().unwrap_err().field;
        assert_eq!(field(OutlierOptions { max_ejection_percent: 101, ..d }), "max_ejection_percent");
        assert_eq!(field(OutlierOptions { interval_us: 0, ..d }), "interval_us");
        assert_eq!(field(OutlierOptions { max_ejection_time_us: S, ..d }), "max_ejection_time_us");
        assert_eq!(field(OutlierOptions { healthy_panic_threshold: -1.0, ..d }), "healthy_panic_threshold");
    }

    #[test]
    fn check_accepts_an_interval_of_one_ms_and_refuses_less() {
        let d = OutlierOptions::default();
        let field = |o: OutlierOptions| o.check().err().map(|e| e.field);
        assert_eq!(field(OutlierOptions { interval_us: US_PER_MS, ..d }), None, "exactly 1 ms");
        assert_eq!(field(OutlierOptions { interval_us: US_PER_MS - 1, ..d }), Some("interval_us"));
    }

    #[test]
    fn check_accepts_a_base_ejection_time_of_one_ms_and_refuses_less() {
        let d = OutlierOptions::default();
        let field = |o: OutlierOptions| o.check().err().map(|e| e.field);
        assert_eq!(field(OutlierOptions { base_ejection_time_us: US_PER_MS, ..d }), None, "exactly 1 ms");
        assert_eq!(field(OutlierOptions { base_ejection_time_us: 500, ..d }), Some("base_ejection_time_us"));
        assert_eq!(field(OutlierOptions { base_ejection_time_us: 0, ..d }), Some("base_ejection_time_us"));
    }

    #[test]
    fn check_accepts_a_max_ejection_time_equal_to_the_base() {
        let d = OutlierOptions::default();
        let o = OutlierOptions { max_ejection_time_us: d.base_ejection_time_us, ..d };
        assert_eq!(o.check(), Ok(()), "max_ejection_time 30 s = base_ejection_time 30 s");
    }

    #[test]
    fn an_idle_detector_keeps_its_sweeps_on_the_interval_grid() {
        // Idle until 25 s (the sweep at 10 s found nothing to do): the next sweep is at 30 s.
        // Ejected at 25 s for 30 s: due at 55 s, back at the 60 s sweep, not before.
        let mut d = OutlierDetector::new(options());
        d.record(25 * S, Code::Ok, ALWAYS);
        fail_n(&mut d, 25 * S, 5, Code::Other5xx);
        assert_eq!(d.wake_at(), Some(60 * S));
        assert!(!d.admits(59 * S));
        assert!(d.admits(60 * S));
    }
}
