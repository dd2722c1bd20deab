//! LiteLLM's deployment cooldown (litellm 1.110.2, `litellm/router_utils/cooldown_handlers.py`
//! and `cooldown_cache.py`, read from the installed wheel) as a pure state machine over virtual
//! time, for a model group of ONE deployment (docs/scenario.md 8.7 says why).
//!
//! A failure of the deployment is judged by `set_cooldown_deployments`:
//! `_should_run_cooldown_logic` first (nothing with `disable_cooldowns`, with a cooldown time of
//! 0, for an `APIConnectionError`, or when `_is_cooldown_required` says no: every 4xx but 429,
//! 401, 402, 404 and 408 is never cooled), then `_should_cooldown_deployment`:
//!
//! - the default (percentage) mode, when neither `allowed_fails` nor `allowed_fails_policy` is
//!   set: in a group of one deployment the 429 rule and the "over
//!   `DEFAULT_FAILURE_THRESHOLD_PERCENT` (0.5) of at least
//!   `DEFAULT_FAILURE_THRESHOLD_MINIMUM_REQUESTS` (5)" rule are off (`not
//!   is_single_deployment_model_group`); what is left cools when every request of the current
//!   minute failed and there were at least `SINGLE_DEPLOYMENT_TRAFFIC_FAILURE_THRESHOLD` (1000),
//!   or at once on a status `litellm.should_retry` does not retry (401, 404 past the gate above);
//! - the legacy mode once `allowed_fails` or `allowed_fails_policy` is set
//!   (`should_cooldown_based_on_allowed_fails_policy`): a lone deployment (a group of one with no
//!   fallback group, `is_lone_deployment`) is never cooled unless `allowed_fails_policy` names the
//!   failure's class; otherwise a counter per deployment is incremented, living `cooldown_time`
//!   from its first increment (measured: failures at 0, 0.3 and 0.6 s with `allowed_fails: 2`,
//!   `cooldown_time: 0.5` cool nothing), and the deployment is cooled when the count passes the
//!   class's `allowed_fails_policy` entry, else `allowed_fails` (default
//!   `DEFAULT_ALLOWED_FAILS` = 3).
//!
//! A cooled deployment is out of the pick for `cooldown_time` (default
//! `DEFAULT_COOLDOWN_TIME_SECONDS` = 5, `cooldown_cache.py` `add_deployment_to_cooldown`); then it
//! is back, with no trial (no half-open state).

use super::compile::{Compile, Invalid};
use super::contract::{Ask, Ending, Guard, GuardConfig, HiddenEnd, Parting, Seat, Verdict, report_breaker};
use crate::runtime::command::{Command, Effects};
use crate::scenario::{FieldPath, RawTable, ScenarioError, read_table};
use crate::sim::Micros;
use crate::sim::time::US_PER_S;
use crate::vocab::{BreakerState, FailureKind, Refusal};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// `DEFAULT_COOLDOWN_TIME_SECONDS` (litellm/constants.py).
pub const DEFAULT_COOLDOWN_TIME_US: Micros = 5 * US_PER_S;
/// `DEFAULT_ALLOWED_FAILS` (litellm/constants.py): `Router.allowed_fails` when only
/// `allowed_fails_policy` is set (measured: four 503s cool, three do not).
pub const DEFAULT_ALLOWED_FAILS: u32 = 3;
/// `SINGLE_DEPLOYMENT_TRAFFIC_FAILURE_THRESHOLD` (litellm/constants.py).
pub const SINGLE_DEPLOYMENT_TRAFFIC_FAILURE_THRESHOLD: u64 = 1000;
/// The current minute of `get_deployment_failures_for_current_minute`: a calendar minute.
pub const MINUTE_US: Micros = 60 * US_PER_S;

/// The exception classes of `_EXCEPTION_POLICY_FIELDS`, in its order, with their
/// `AllowedFailsPolicy` field names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    ContentPolicyViolation,
    BadRequest,
    Authentication,
    Timeout,
    RateLimit,
    InternalServer,
    ServiceUnavailable,
    BadGateway,
    NotFound,
}

impl ErrorClass {
    pub const COUNT: usize = 9;
    pub const ALL: [ErrorClass; Self::COUNT] = [
        ErrorClass::ContentPolicyViolation,
        ErrorClass::BadRequest,
        ErrorClass::Authentication,
        ErrorClass::Timeout,
        ErrorClass::RateLimit,
        ErrorClass::InternalServer,
        ErrorClass::ServiceUnavailable,
        ErrorClass::BadGateway,
        ErrorClass::NotFound,
    ];

    pub fn policy_field(self) -> &'static str {
        match self {
            ErrorClass::ContentPolicyViolation => "ContentPolicyViolationErrorAllowedFails",
            ErrorClass::BadRequest => "BadRequestErrorAllowedFails",
            ErrorClass::Authentication => "AuthenticationErrorAllowedFails",
            ErrorClass::Timeout => "TimeoutErrorAllowedFails",
            ErrorClass::RateLimit => "RateLimitErrorAllowedFails",
            ErrorClass::InternalServer => "InternalServerErrorAllowedFails",
            ErrorClass::ServiceUnavailable => "ServiceUnavailableErrorAllowedFails",
            ErrorClass::BadGateway => "BadGatewayErrorAllowedFails",
            ErrorClass::NotFound => "NotFoundErrorAllowedFails",
        }
    }

    /// The HTTP status LiteLLM's exception of this class carries.
    pub fn status(self) -> u16 {
        match self {
            ErrorClass::ContentPolicyViolation | ErrorClass::BadRequest => 400,
            ErrorClass::Authentication => 401,
            ErrorClass::Timeout => 408,
            ErrorClass::RateLimit => 429,
            ErrorClass::InternalServer => 500,
            ErrorClass::ServiceUnavailable => 503,
            ErrorClass::BadGateway => 502,
            ErrorClass::NotFound => 404,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// How one request to the deployment ended, as LiteLLM classes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    /// An exception of a class above.
    Error(ErrorClass),
    /// `APIConnectionError`: counted as a failure of the minute, never cooled.
    Connection,
    /// The caller's own doing (a cancellation, its deadline): not the deployment's, not counted.
    Ignored,
}

impl Outcome {
    /// A faultline failure kind as the LiteLLM exception a provider call raises for it:
    /// INVALID_INPUT 400, UNAUTHORIZED 401, RATE_LIMITED 429, OVERLOADED 503,
    /// PERMANENT_PROVIDER 500, TRANSIENT_TRANSPORT a connection error, EFFECT_UNKNOWN (a write
    /// that timed out) a timeout; RESULT_INVALID came in a 200.
    pub fn of_failure(kind: FailureKind) -> Outcome {
        match kind {
            FailureKind::InvalidInput => Outcome::Error(ErrorClass::BadRequest),
            FailureKind::Unauthorized => Outcome::Error(ErrorClass::Authentication),
            FailureKind::RateLimited => Outcome::Error(ErrorClass::RateLimit),
            FailureKind::Overloaded => Outcome::Error(ErrorClass::ServiceUnavailable),
            FailureKind::PermanentProvider => Outcome::Error(ErrorClass::InternalServer),
            FailureKind::TransientTransport => Outcome::Connection,
            FailureKind::EffectUnknown => Outcome::Error(ErrorClass::Timeout),
            FailureKind::ResultInvalid => Outcome::Success,
            FailureKind::DeadlineExhausted | FailureKind::Canceled => Outcome::Ignored,
        }
    }
}

impl Outcome {
    /// A request the router sent, as the engine hears it: the SDK's own timeout is LiteLLM's
    /// `Timeout` (408).
    pub fn of_hidden(end: HiddenEnd) -> Outcome {
        match end {
            HiddenEnd::Answered => Outcome::Success,
            HiddenEnd::TimedOut => Outcome::Error(ErrorClass::Timeout),
            HiddenEnd::Failed(kind) => Outcome::of_failure(kind),
        }
    }
}

/// The router settings the cooldown reads; durations in microseconds of virtual time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CooldownOptions {
    /// `cooldown_time`; 0 turns the cooldown logic off (`_should_run_cooldown_logic`).
    pub cooldown_time_us: Micros,
    /// `allowed_fails`; set (or a policy entry set) means the legacy mode.
    pub allowed_fails: Option<u32>,
    /// `allowed_fails_policy`, by [`ErrorClass`] index.
    pub allowed_fails_policy: [Option<u32>; ErrorClass::COUNT],
    /// `allowed_fails_policy` is set at all (even empty): the legacy mode.
    pub policy_set: bool,
    pub disable_cooldowns: bool,
    /// The group has a fallback group (`_has_fallback_group`): its lone deployment is then not
    /// `is_lone_deployment`.
    pub group_has_fallbacks: bool,
}

impl Default for CooldownOptions {
    fn default() -> Self {
        CooldownOptions {
            cooldown_time_us: DEFAULT_COOLDOWN_TIME_US,
            allowed_fails: None,
            allowed_fails_policy: [None; ErrorClass::COUNT],
            policy_set: false,
            disable_cooldowns: false,
            group_has_fallbacks: false,
        }
    }
}

impl CooldownOptions {
    pub fn legacy(&self) -> bool {
        self.allowed_fails.is_some() || self.policy_set
    }

    pub fn check(&self) -> Result<(), Invalid> {
        if self.cooldown_time_us > 86_400 * US_PER_S {
            return Err(Invalid::new("cooldown_time_us", "cooldown_time_us must be at most one day".into()));
        }
        Ok(())
    }
}

/// `_is_cooldown_required`: 429, 401, 402, 404, 408 and every status outside 4xx.
fn cooldown_required(status: u16) -> bool {
    !(400..500).contains(&status) || matches!(status, 429 | 401 | 402 | 404 | 408)
}

/// `litellm.should_retry` (litellm/utils.py): 408, 409, 429 and >= 500.
fn should_retry(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// One deployment's cooldown state.
#[derive(Debug, Clone)]
pub struct Cooldown {
    options: CooldownOptions,
    /// Cooled until this instant (exclusive), if ever cooled.
    cooled_until: Option<Micros>,
    /// The legacy counter: (count, expires at).
    fails: Option<(u32, Micros)>,
    /// The current minute's index and its (successes, failures).
    minute: u64,
    successes: u64,
    failures: u64,
}

impl Cooldown {
    pub fn new(options: CooldownOptions) -> Self {
        Cooldown { options, cooled_until: None, fails: None, minute: 0, successes: 0, failures: 0 }
    }

    pub fn options(&self) -> &CooldownOptions {
        &self.options
    }

    /// The deployment is in cooldown at `now`.
    pub fn cooled(&self, now: Micros) -> bool {
        self.cooled_until.is_some_and(|t| now < t)
    }

    /// When the cooldown ends, while cooled.
    pub fn cooled_until(&self, now: Micros) -> Option<Micros> {
        self.cooled_until.filter(|&t| now < t)
    }

    /// The legacy counter's value at `now`.
    pub fn fail_count(&self, now: Micros) -> u32 {
        self.fails.filter(|&(_, t)| now < t).map_or(0, |(n, _)| n)
    }

    fn roll_minute(&mut self, now: Micros) {
        let m = now / MINUTE_US;
        if m != self.minute {
            self.minute = m;
            self.successes = 0;
            self.failures = 0;
        }
    }

    /// A request to the deployment ended at `now`; returns true when it put the deployment in
    /// cooldown.
    pub fn record(&mut self, now: Micros, outcome: Outcome) -> bool {
        self.roll_minute(now);
        let class = match outcome {
            Outcome::Ignored => return false,
            Outcome::Success => {
                self.successes += 1;
                return false;
            }
            // The failure callback counts it in the minute before the cooldown is judged.
            Outcome::Connection => {
                self.failures += 1;
                return false;
            }
            Outcome::Error(class) => {
                self.failures += 1;
                class
            }
        };
        let o = &self.options;
        if o.cooldown_time_us == 0 || o.disable_cooldowns || !cooldown_required(class.status()) {
            return false;
        }
        let cool = if o.legacy() {
            let from_policy = o.allowed_fails_policy[class.index()];
            let lone = !o.group_has_fallbacks;
            if lone && from_policy.is_none() {
                false
            } else {
                let allowed = from_policy.or(o.allowed_fails).unwrap_or(DEFAULT_ALLOWED_FAILS);
                let count = match self.fails {
                    Some((n, until)) if now < until => n + 1,
                    Some(_) | None => 1,
                };
                let until = match self.fails {
                    Some((_, until)) if now < until => until,
                    Some(_) | None => now.saturating_add(o.cooldown_time_us),
                };
                self.fails = Some((count, until));
                count > allowed
            }
        } else {
            let total = self.successes + self.failures;
            (self.successes == 0 && total >= SINGLE_DEPLOYMENT_TRAFFIC_FAILURE_THRESHOLD)
                || !should_retry(class.status())
        };
        if cool {
            self.cooled_until = Some(now.saturating_add(self.options.cooldown_time_us));
        }
        cool
    }
}

// ---------------------------------------------------------------------------------------------
// The guard

/// A LiteLLM cooldown as a compiled guard: its options and its label's index.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LitellmCooldownSpec {
    pub options: CooldownOptions,
    pub label: u16,
}

/// A live cooldown in a pipeline. It hears every request the router sends (each hidden attempt
/// of an SDK call, [`Guard::sdk_attempt_end`]); a call it heard that way is not counted again
/// when it ends.
#[derive(Debug)]
pub struct LitellmCooldownGuard {
    cooldown: Cooldown,
    label: u16,
    /// Calls whose requests were heard one by one (their waiter), until they end.
    heard: BTreeSet<u64>,
    /// The state last reported to the metrics.
    reported: BreakerState,
    wake: Option<Micros>,
}

impl GuardConfig for LitellmCooldownSpec {
    type Live = LitellmCooldownGuard;

    fn build(&self) -> LitellmCooldownGuard {
        LitellmCooldownGuard {
            cooldown: Cooldown::new(self.options),
            label: self.label,
            heard: BTreeSet::new(),
            reported: BreakerState::Closed,
            wake: None,
        }
    }
}

impl LitellmCooldownGuard {
    /// Reports a change of state (cooled: OPEN, back: CLOSED) and asks to be woken when the
    /// cooldown ends.
    fn sync(&mut self, now: Micros, out: &mut impl Effects) {
        let state = if self.cooldown.cooled(now) { BreakerState::Open } else { BreakerState::Closed };
        report_breaker(self.label, self.reported, state, out);
        self.reported = state;
        let due = self.cooldown.cooled_until(now);
        if due != self.wake
            && let Some(at) = due
        {
            out.command(Command::WakeGuards { at });
        }
        self.wake = due;
    }

    fn record(&mut self, now: Micros, outcome: Outcome, out: &mut impl Effects) {
        self.sync(now, out);
        self.cooldown.record(now, outcome);
        self.sync(now, out);
    }
}

impl Guard for LitellmCooldownGuard {
    fn admit(&mut self, now: Micros, _ask: &Ask, _seat: Seat, out: &mut impl Effects) -> Verdict {
        self.sync(now, out);
        if self.cooldown.cooled(now) { Verdict::Refuse(Refusal::CircuitOpen) } else { Verdict::Pass }
    }

    fn end(&mut self, now: Micros, parting: Parting, out: &mut impl Effects) {
        if self.heard.remove(&parting.waiter) {
            return;
        }
        let outcome = match parting.ending {
            Ending::Outcome(end) => end.failure.map_or(Outcome::Success, Outcome::of_failure),
            Ending::Canceled | Ending::Refused => Outcome::Ignored,
        };
        self.record(now, outcome, out);
    }

    fn sdk_attempt_end(&mut self, now: Micros, waiter: u64, end: HiddenEnd, out: &mut impl Effects) -> bool {
        self.heard.insert(waiter);
        self.record(now, Outcome::of_hidden(end), out);
        !self.cooldown.cooled(now)
    }

    fn sdk_may_send(&mut self, now: Micros) -> bool {
        !self.cooldown.cooled(now)
    }

    fn on_wake(&mut self, now: Micros, out: &mut impl Effects) {
        if self.wake.is_some_and(|at| at <= now) {
            self.sync(now, out);
        }
    }

    fn breaker_state(&self) -> Option<(u16, BreakerState)> {
        Some((self.label, self.reported))
    }
}

// ---------------------------------------------------------------------------------------------
// The file's table

/// `[[policy.<name>.circuit_breaker]]` with `kind = "litellm_cooldown"`: the Router's setting
/// names (durations in ms).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct LitellmCooldownTable {
    pub kind: String,
    #[serde(default)]
    pub dependency: Option<String>,
    #[serde(default)]
    pub cooldown_time_ms: Option<f64>,
    #[serde(default)]
    pub allowed_fails: Option<u32>,
    /// LiteLLM's `AllowedFailsPolicy` field names to counts.
    #[serde(default)]
    pub allowed_fails_policy: Option<BTreeMap<String, u32>>,
    #[serde(default)]
    pub disable_cooldowns: Option<bool>,
    #[serde(default)]
    pub group_has_fallbacks: Option<bool>,
}

crate::scenario::types::tables_only!(LitellmCooldownTable);

/// Reads one entry and adds a cooldown per dependency it covers.
pub fn compile<G: From<LitellmCooldownSpec>>(
    cx: &mut Compile<G>,
    path: &FieldPath,
    raw: &RawTable,
) -> Result<(), ScenarioError> {
    let t: LitellmCooldownTable = read_table(cx.source, path, raw)?;
    let d = CooldownOptions::default();
    let mut policy = [None; ErrorClass::COUNT];
    if let Some(p) = &t.allowed_fails_policy {
        for (name, &n) in p {
            let Some(class) = ErrorClass::ALL.iter().find(|c| c.policy_field() == name) else {
                let known: Vec<&str> = ErrorClass::ALL.iter().map(|c| c.policy_field()).collect();
                return Err(cx.err(
                    &path.key("allowed_fails_policy").key(name),
                    format!("unknown AllowedFailsPolicy field (known: {})", known.join(", ")),
                ));
            };
            policy[class.index()] = Some(n);
        }
    }
    let options = CooldownOptions {
        cooldown_time_us: cx.duration(&path.key("cooldown_time_ms"), t.cooldown_time_ms, d.cooldown_time_us)?,
        allowed_fails: t.allowed_fails,
        allowed_fails_policy: policy,
        policy_set: t.allowed_fails_policy.is_some(),
        disable_cooldowns: t.disable_cooldowns.unwrap_or(false),
        group_has_fallbacks: t.group_has_fallbacks.unwrap_or(false),
    };
    cx.check(path, options.check())?;
    // A cooled deployment comes back by itself when its cooldown_time has passed.
    cx.add_breakers(path, &t.dependency, None, false, |label| LitellmCooldownSpec { options, label }.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Micros = 1_000;

    fn err(class: ErrorClass) -> Outcome {
        Outcome::Error(class)
    }

    fn legacy(allowed: u32, fallbacks: bool) -> CooldownOptions {
        CooldownOptions {
            allowed_fails: Some(allowed),
            cooldown_time_us: 500 * MS,
            group_has_fallbacks: fallbacks,
            ..CooldownOptions::default()
        }
    }

    #[test]
    fn defaults_are_litellms() {
        let o = CooldownOptions::default();
        assert_eq!(o.cooldown_time_us, 5_000 * MS);
        assert!(!o.legacy());
        assert!(!o.disable_cooldowns);
        assert_eq!(DEFAULT_ALLOWED_FAILS, 3);
        assert_eq!(SINGLE_DEPLOYMENT_TRAFFIC_FAILURE_THRESHOLD, 1000);
    }

    #[test]
    fn legacy_cools_when_the_count_passes_allowed_fails() {
        // allowed_fails 1 with a fallback group: the second 503 cools (2 > 1).
        let mut c = Cooldown::new(legacy(1, true));
        assert!(!c.record(0, err(ErrorClass::ServiceUnavailable)));
        assert!(c.record(10 * MS, err(ErrorClass::ServiceUnavailable)));
        assert!(c.cooled(10 * MS) && c.cooled(509 * MS) && !c.cooled(510 * MS));
    }

    #[test]
    fn the_counter_lives_cooldown_time_from_its_first_failure() {
        // Measured on litellm 1.110.2: failures at 0, 0.3 and 0.6 s, allowed_fails 2,
        // cooldown_time 0.5 s cool nothing (a sliding window would count 3).
        let mut c = Cooldown::new(legacy(2, true));
        for t in [0, 300 * MS, 600 * MS] {
            assert!(!c.record(t, err(ErrorClass::ServiceUnavailable)), "at {t}");
        }
        assert_eq!(c.fail_count(600 * MS), 1);
        assert!(!c.record(700 * MS, err(ErrorClass::ServiceUnavailable)));
        assert!(c.record(800 * MS, err(ErrorClass::ServiceUnavailable)));
    }

    #[test]
    fn a_lone_deployment_is_cooled_only_by_a_policy_entry_for_its_class() {
        let mut c = Cooldown::new(legacy(0, false));
        assert!(!c.record(0, err(ErrorClass::ServiceUnavailable)));
        assert!(!c.record(0, err(ErrorClass::RateLimit)));
        let mut o = legacy(0, false);
        o.allowed_fails = None;
        o.policy_set = true;
        o.allowed_fails_policy[ErrorClass::RateLimit.index()] = Some(0);
        let mut c = Cooldown::new(o);
        assert!(!c.record(0, err(ErrorClass::ServiceUnavailable)));
        assert!(c.record(MS, err(ErrorClass::RateLimit)));
    }

    #[test]
    fn a_policy_without_the_class_falls_back_to_three_allowed_fails() {
        let mut o = CooldownOptions { group_has_fallbacks: true, policy_set: true, ..CooldownOptions::default() };
        o.allowed_fails_policy[ErrorClass::RateLimit.index()] = Some(0);
        let mut c = Cooldown::new(o);
        for n in 0..3 {
            assert!(!c.record(n * MS, err(ErrorClass::ServiceUnavailable)));
        }
        assert!(c.record(3 * MS, err(ErrorClass::ServiceUnavailable)));
    }

    #[test]
    fn the_statuses_never_cooled() {
        let mut c = Cooldown::new(legacy(0, true));
        assert!(!c.record(0, err(ErrorClass::BadRequest)));
        assert!(!c.record(0, Outcome::Connection));
        assert!(!c.record(0, Outcome::Success));
        assert!(c.record(0, err(ErrorClass::Timeout)));
        for off in [
            CooldownOptions { disable_cooldowns: true, ..legacy(0, true) },
            CooldownOptions { cooldown_time_us: 0, ..legacy(0, true) },
        ] {
            assert!(!Cooldown::new(off).record(0, err(ErrorClass::Authentication)));
        }
    }

    #[test]
    fn the_default_mode_in_a_group_of_one() {
        // 429s and 503s never cool a group of one, even past 50 % of 5 requests.
        let mut c = Cooldown::new(CooldownOptions::default());
        for n in 0..20 {
            assert!(!c.record(n * MS, err(ErrorClass::RateLimit)));
            assert!(!c.record(n * MS, err(ErrorClass::ServiceUnavailable)));
        }
        // A status should_retry does not retry cools at once, lone or not.
        assert!(c.record(30 * MS, err(ErrorClass::Authentication)));
        assert!(Cooldown::new(CooldownOptions::default()).record(0, err(ErrorClass::NotFound)));
        // 1000 requests of the current minute, all failed.
        let mut c = Cooldown::new(CooldownOptions::default());
        for n in 0..999 {
            assert!(!c.record(n * MS, err(ErrorClass::ServiceUnavailable)));
        }
        assert!(c.record(999 * MS, err(ErrorClass::ServiceUnavailable)));
        // One success in the minute, and the next minute starts again.
        let mut c = Cooldown::new(CooldownOptions::default());
        c.record(0, Outcome::Success);
        for n in 1..=1000 {
            assert!(!c.record(n * MS, err(ErrorClass::ServiceUnavailable)));
        }
        for n in 0..999 {
            assert!(!c.record(MINUTE_US + n * MS, err(ErrorClass::ServiceUnavailable)));
        }
        assert!(c.record(MINUTE_US + 999 * MS, err(ErrorClass::ServiceUnavailable)));
    }

    #[test]
    fn check_accepts_a_cooldown_of_one_day_and_refuses_more() {
        let day = 86_400 * US_PER_S;
        let field = |us: Micros| CooldownOptions { cooldown_time_us: us, ..CooldownOptions::default() }.check().err();
        assert_eq!(field(day), None, "exactly one day");
        assert_eq!(field(day + 1).map(|e| e.field), Some("cooldown_time_us"));
    }

    #[test]
    fn the_current_minute_is_a_calendar_minute() {
        // A success at 0 s still counts at 59.999 s: 1000 failures then do not cool.
        let mut c = Cooldown::new(CooldownOptions::default());
        c.record(0, Outcome::Success);
        for _ in 0..1000 {
            assert!(!c.record(59_999 * MS, err(ErrorClass::ServiceUnavailable)));
        }
        // At 60 s the minute rolls: 1000 failures of the new minute cool.
        for _ in 0..999 {
            assert!(!c.record(60_000 * MS, err(ErrorClass::ServiceUnavailable)));
        }
        assert!(c.record(60_000 * MS, err(ErrorClass::ServiceUnavailable)));
    }

    #[test]
    fn the_counter_expires_exactly_cooldown_time_after_its_first_failure() {
        // cooldown_time 0.5 s, allowed_fails 1: failures at 0 and 0.5 s are counted apart.
        let mut c = Cooldown::new(legacy(1, true));
        assert!(!c.record(0, err(ErrorClass::ServiceUnavailable)));
        assert_eq!((c.fail_count(499 * MS), c.fail_count(500 * MS)), (1, 0));
        assert!(!c.record(500 * MS, err(ErrorClass::ServiceUnavailable)), "a new counter at 0.5 s");
        assert!(c.record(999 * MS, err(ErrorClass::ServiceUnavailable)), "2 > 1 within its 0.5 s");
        assert!(c.cooled(1_498 * MS) && !c.cooled(1_499 * MS));
    }

    #[test]
    fn cooled_until_ends_exactly_cooldown_time_after_the_cooling_failure() {
        // allowed_fails 0: the 503 at 10 ms cools until 510 ms (exclusive).
        let mut c = Cooldown::new(legacy(0, true));
        assert_eq!(c.cooled_until(0), None, "never cooled");
        assert!(c.record(10 * MS, err(ErrorClass::ServiceUnavailable)));
        assert_eq!(c.cooled_until(10 * MS), Some(510 * MS));
        assert_eq!(c.cooled_until(509 * MS), Some(510 * MS));
        assert_eq!(c.cooled_until(510 * MS), None, "the cooldown's end is not cooled");
    }

    #[test]
    fn the_guard_hears_a_hidden_attempt_cools_and_is_woken_at_the_cooldowns_end() {
        use crate::runtime::command::Outbox;
        let spec = LitellmCooldownSpec { options: legacy(0, true), label: 7 };
        let mut g = spec.build();
        let mut out = Outbox::default();
        assert_eq!(g.breaker_state(), Some((7, BreakerState::Closed)));
        // An answered attempt: the router may go on.
        assert!(g.sdk_attempt_end(0, 1, HiddenEnd::Answered, &mut out));
        assert!(out.commands.is_empty() && out.shared.is_empty());
        // The SDK's own timeout (408) at 10 ms cools until 510 ms: stop, and wake me then.
        assert!(!g.sdk_attempt_end(10 * MS, 1, HiddenEnd::TimedOut, &mut out));
        assert_eq!(out.commands, vec![Command::WakeGuards { at: 510 * MS }]);
        assert_eq!(g.breaker_state(), Some((7, BreakerState::Open)));
        assert_eq!(out.shared.len(), 1, "one transition, CLOSED to OPEN");
        assert!(!g.sdk_may_send(509 * MS) && g.sdk_may_send(510 * MS));
        // Woken early: nothing changes.
        g.on_wake(509 * MS, &mut out);
        assert_eq!(g.breaker_state(), Some((7, BreakerState::Open)));
        assert_eq!((out.commands.len(), out.shared.len()), (1, 1));
        // Woken at the end: back to CLOSED, and no new wake.
        g.on_wake(510 * MS, &mut out);
        assert_eq!(g.breaker_state(), Some((7, BreakerState::Closed)));
        assert_eq!((out.commands.len(), out.shared.len()), (1, 2));
    }
}
