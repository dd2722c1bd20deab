//! A provider SDK's own retries inside the caller (docs/essay.md sections 2 and 28): the
//! client library the runtime calls a dependency through retries on its own, with its own
//! backoff, Retry-After handling and per-attempt timeout, before the runtime sees an answer.
//! Its hidden attempts are real load at the provider; the runtime's guards never see them, and
//! only `charged_to_root_budget` ties them to the root run's retry budget.
//!
//! The defaults are openai-python's (`src/openai/_base_client.py`: `_calculate_retry_timeout`,
//! `_should_retry`, `_parse_retry_after_header`; `src/openai/_constants.py`:
//! `DEFAULT_MAX_RETRIES = 2`, `INITIAL_RETRY_DELAY = 0.5`, `MAX_RETRY_DELAY = 8.0`,
//! `DEFAULT_TIMEOUT = 600`). anthropic-sdk-python's `src/anthropic/_base_client.py` has the
//! same shape. Retry `n` (0-based) sleeps `min(initial x multiplier^n, max) x (1 - jitter x U)`.
//!
//! A pure machine: the engine tells it how each hidden attempt ended, with one uniform draw
//! from the call's own stream and whether the root budget lets a charged retry go, and it
//! answers with the next hidden attempt's delay or the answer the runtime sees.

use crate::sim::Micros;
use crate::vocab::FailureKind;

use super::AttemptResult;
use super::sdk_quota::{RetryQuota, RetryQuotaConfig};

crate::named_enum! {
    /// Whether the client reads a refusal's Retry-After (`retry-after-ms`, then `retry-after`).
    pub enum RetryAfter {
        /// Sleep what the server asks, within `retry_after_max_ms` (openai-python, anthropic).
        Honour => "honour",
        /// Always the computed backoff (botocore ignores `Retry-After`).
        Ignore => "ignore",
        /// The backoff raised to the Retry-After, by at most `retry_after_max_ms`: botocore
        /// 1.44.18's `x-amz-retry-after` (`ExponentialBackoff.delay_amount`:
        /// `max(t_i, min(retry_after, t_i + _RETRY_AFTER_MAX_ADDITIONAL))`, 5 s).
        Raise => "raise",
    }
}

crate::named_enum! {
    /// What the client does with a Retry-After beyond `retry_after_max_ms`.
    pub enum OverMax {
        /// Does not retry: the refusal is the answer (openai-python: beyond 120 s).
        GiveUp => "give_up",
        /// Sleeps the computed backoff instead (older Stainless SDKs: beyond 60 s).
        Backoff => "backoff",
        /// Sleeps it in full, whatever its size.
        Sleep => "sleep",
        /// Sleeps `retry_after_max_ms` (anthropic-sdk-python 2.17.0's `_calculate_retry_timeout`:
        /// `min(retry_after, 4_294_967.0)`, the most `time.sleep` takes on every platform).
        Cap => "cap",
    }
}

/// One dependency's SDK client, compiled.
#[derive(Debug, Clone, PartialEq)]
pub struct SdkClientConfig {
    /// Retries after the first attempt (openai: `DEFAULT_MAX_RETRIES = 2`).
    pub max_retries: u32,
    pub initial_delay_us: Micros,
    pub max_delay_us: Micros,
    pub multiplier: f64,
    /// The most a sleep is shortened by, as a share: sleep x (1 - jitter x U). 0.25 in the
    /// Stainless SDKs, 0 in Portkey.
    pub jitter: f64,
    /// Failure kinds it retries (HTTP 409, 429, 5xx and connection errors map to these).
    pub retry_on: [bool; FailureKind::COUNT],
    /// It retries its own timeouts and HTTP 408.
    pub retry_on_timeout: bool,
    /// One hidden attempt's timeout; None: none (0 in the file).
    pub timeout_us: Option<Micros>,
    pub retry_after: RetryAfter,
    pub retry_after_max_us: Micros,
    pub over_max: OverMax,
    /// Each hidden retry takes one of the root run's retry tokens and must fit its deadline;
    /// without a token or time left the client answers with the failure it has.
    pub charged_to_root_budget: bool,
    /// It obeys a response's `x-should-retry: true|false` (the Stainless SDKs' `_should_retry`:
    /// "If the server explicitly says whether or not to retry, obey"), read after openai's
    /// too-long Retry-After and before the status. No simulated fault carries the header, so
    /// only [`SdkCall::on_response`]'s callers (the differential harness) exercise it.
    pub x_should_retry: bool,
    /// The first retry's sleep before jitter after a throttling error (RATE_LIMITED); None:
    /// `initial_delay_us`. botocore's `throttling_base_scale` (1 s) against its
    /// `non_throttling_base_scale` (50 ms).
    pub throttling_initial_delay_us: Option<Micros>,
    /// A retry quota shared by every call of the client (botocore's `RetryQuota`); None: none.
    pub retry_quota: Option<RetryQuotaConfig>,
    /// The most added to every sleep, a honoured Retry-After included: sleep + U x this. 0 in
    /// every SDK but LiteLLM's router (`litellm/utils.py` `calculate_retry_after`: `JITTER *
    /// random.random()`, `constants.py` `JITTER = 0.75` s).
    pub jitter_added_us: Micros,
    /// The backoff before its cap is at least this (LiteLLM's router `retry_after`, passed as
    /// `min_timeout` to `calculate_retry_after`: `max(sleep, min_timeout)` then `min(...,
    /// MAX_RETRY_DELAY)`); 0: none.
    pub min_delay_us: Micros,
    /// Every send, the first attempt included, waits for a token from a client-side rate
    /// limiter shared by the client's calls (botocore's adaptive retry mode,
    /// [`super::sdk_rate_limiter`]).
    pub client_rate_limiter: bool,
    /// Retries by kind, over `max_retries` (LiteLLM's router `retry_policy`, `litellm/types/
    /// router.py` `RetryPolicy`): the call's FIRST failure sets how many retries it gets
    /// (measured on litellm 1.110.2: `RateLimitErrorRetries: 4` and 429, 429, 503, 503, 503 made
    /// 5 attempts, where num_retries 2 applies to a 503), and a kind given a count is retried
    /// when the count is above 0, in `retry_on` or not (`BadRequestErrorRetries: 1` retries a
    /// 400), never with 0.
    pub max_retries_by_kind: [Option<u32>; FailureKind::COUNT],
    /// The same for its own timeouts (`TimeoutErrorRetries`).
    pub max_retries_on_timeout: Option<u32>,
}

impl Default for SdkClientConfig {
    fn default() -> Self {
        let mut retry_on = [false; FailureKind::COUNT];
        for kind in DEFAULT_RETRY_ON {
            retry_on[kind.index()] = true;
        }
        SdkClientConfig {
            max_retries: 2,
            initial_delay_us: 500_000,
            max_delay_us: 8_000_000,
            multiplier: 2.0,
            jitter: 0.25,
            retry_on,
            retry_on_timeout: true,
            timeout_us: Some(600_000_000),
            retry_after: RetryAfter::Honour,
            retry_after_max_us: 120_000_000,
            over_max: OverMax::GiveUp,
            charged_to_root_budget: false,
            x_should_retry: true,
            throttling_initial_delay_us: None,
            retry_quota: None,
            jitter_added_us: 0,
            min_delay_us: 0,
            client_rate_limiter: false,
            max_retries_by_kind: [None; FailureKind::COUNT],
            max_retries_on_timeout: None,
        }
    }
}

/// What the Stainless SDKs retry, as failure kinds: 429 (RATE_LIMITED), 503 and 529
/// (OVERLOADED), connection errors, 502, 504 and 409 (TRANSIENT_TRANSPORT), any other 5xx
/// (PERMANENT_PROVIDER: the SDK reads the status, not the business meaning). Not 400, 401,
/// 403, 404, 422, nor a 200 whose content is unusable (RESULT_INVALID).
pub const DEFAULT_RETRY_ON: [FailureKind; 4] = [
    FailureKind::RateLimited,
    FailureKind::Overloaded,
    FailureKind::TransientTransport,
    FailureKind::PermanentProvider,
];

/// The name `retry_on` uses for the client's own timeouts and HTTP 408.
pub const TIMEOUT: &str = "timeout";

/// Why the client answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The attempt succeeded (or a lookup found nothing: an answer too).
    Answered,
    /// The failure is not in `retry_on`.
    NotRetried,
    /// `max_retries` retries were made.
    RetriesSpent,
    /// Retry-After was beyond `retry_after_max_ms` with `over_max = "give_up"`.
    RetryAfterTooLong,
    /// Charged to the root budget, and the run had no retry token or time left.
    RootBudget,
    /// The client's retry quota could not pay for the retry (botocore: "Retry needed but
    /// retry quota reached, not retrying request").
    RetryQuota,
    /// A guard of the runtime attempt's route would refuse the next request (a LiteLLM router
    /// cooled its deployment on this failure): the router sends no more to it.
    Cooled,
}

/// The client's next move after a hidden attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SdkDecision {
    /// Send hidden attempt number `retries_taken` (1-based) after this sleep.
    Retry { delay_us: Micros },
    /// The runtime sees the last attempt's result.
    Answer(Stop),
}

/// One SDK call in progress: how many retries it has made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SdkCall {
    pub retries_taken: u32,
    /// The retries its first failure's kind gives it (`max_retries_by_kind`); None: none set
    /// yet (`max_retries` applies).
    pub retries_allowed: Option<u32>,
    /// What its last retry took from the client's retry quota (botocore's
    /// `retry_quota_capacity` in the request context); None: no retry paid yet.
    pub quota_taken: Option<u32>,
}

/// The errors botocore calls throttling errors, as failure kinds: 429 and the throttling
/// error codes (`ThrottledRetryableChecker._THROTTLED_ERROR_CODES`,
/// `ThrottlingStatusCodeChecker`) are RATE_LIMITED.
pub fn is_throttling(result: AttemptResult) -> bool {
    matches!(result, AttemptResult::Failed { kind: FailureKind::RateLimited, .. })
}

impl SdkCall {
    /// The attempt ended with `result`. `unit` is a uniform draw in [0, 1) for the jitter;
    /// `root_allows(delay)` is asked only for a charged retry that would otherwise be made, and
    /// takes the root token when it answers true.
    pub fn on_result(
        &mut self,
        config: &SdkClientConfig,
        result: AttemptResult,
        unit: f64,
        root_allows: impl FnOnce(Micros) -> bool,
    ) -> SdkDecision {
        self.on_response(config, result, None, unit, root_allows)
    }

    /// [`SdkCall::on_result`] for a failure whose response may carry `x-should-retry`
    /// (`should_retry`: `Some(true)` for "true", `Some(false)` for "false", None when absent
    /// or when no response came back).
    pub fn on_response(
        &mut self,
        config: &SdkClientConfig,
        result: AttemptResult,
        should_retry: Option<bool>,
        unit: f64,
        root_allows: impl FnOnce(Micros) -> bool,
    ) -> SdkDecision {
        self.on_response_with_quota(config, result, should_retry, unit, None, root_allows)
    }

    /// [`SdkCall::on_response`] for a client with a retry quota: `quota` is its client's
    /// bucket, shared with its other calls. A retry it cannot pay is not made; an answer
    /// refills it.
    pub fn on_response_with_quota(
        &mut self,
        config: &SdkClientConfig,
        result: AttemptResult,
        should_retry: Option<bool>,
        unit: f64,
        quota: Option<&mut RetryQuota>,
        root_allows: impl FnOnce(Micros) -> bool,
    ) -> SdkDecision {
        let quota = quota.zip(config.retry_quota);
        let (retryable, retry_after_us) = match result {
            AttemptResult::Ok | AttemptResult::NotFound => {
                // botocore's `release_retry_quota` on a 2xx: what the last retry took, or
                // `_NO_RETRY_INCREMENT` for a call that made none.
                if let Some((bucket, sizes)) = quota {
                    bucket.release(self.quota_taken.unwrap_or(sizes.no_retry_increment));
                }
                return SdkDecision::Answer(Stop::Answered);
            }
            AttemptResult::Failed { kind, retry_after_us } => (config.retry_on[kind.index()], retry_after_us),
            AttemptResult::TimedOut => (config.retry_on_timeout, None),
        };
        let told = match (config.retry_after, retry_after_us) {
            (RetryAfter::Honour | RetryAfter::Raise, Some(t)) if t > 0 => Some(t),
            (RetryAfter::Honour | RetryAfter::Raise, Some(_) | None) | (RetryAfter::Ignore, _) => None,
        };
        let raise = config.retry_after == RetryAfter::Raise;
        // openai-python refuses a too-long Retry-After in `_should_retry` first, whatever
        // `x-should-retry` says, and before it counts retries; either way no retry is made.
        if let Some(t) = told
            && !raise
            && t > config.retry_after_max_us
            && config.over_max == OverMax::GiveUp
        {
            return SdkDecision::Answer(Stop::RetryAfterTooLong);
        }
        let by_kind = match result {
            AttemptResult::Failed { kind, .. } => config.max_retries_by_kind[kind.index()],
            AttemptResult::TimedOut => config.max_retries_on_timeout,
            AttemptResult::Ok | AttemptResult::NotFound => None,
        };
        let retryable = match (should_retry, by_kind) {
            (Some(told_to), _) if config.x_should_retry => told_to,
            (_, Some(n)) => n > 0,
            (Some(_) | None, None) => retryable,
        };
        if self.retries_taken == 0 && self.retries_allowed.is_none() {
            self.retries_allowed = by_kind;
        }
        if !retryable {
            return SdkDecision::Answer(Stop::NotRetried);
        }
        if self.retries_taken >= self.retries_allowed.unwrap_or(config.max_retries) {
            return SdkDecision::Answer(Stop::RetriesSpent);
        }
        // botocore asks its quota once the retry is otherwise due (`RetryHandler.needs_retry`).
        let throttling = is_throttling(result);
        let cost = quota.as_ref().map(|(_, sizes)| sizes.cost(throttling));
        if let (Some((bucket, _)), Some(cost)) = (&quota, cost)
            && !bucket.can_pay(cost)
        {
            return SdkDecision::Answer(Stop::RetryQuota);
        }
        let base_us = match config.throttling_initial_delay_us {
            Some(base) if throttling => base,
            Some(_) | None => config.initial_delay_us,
        };
        let backoff = || backoff_from_us(config, base_us, self.retries_taken, unit);
        let delay_us = match told {
            Some(t) if raise => {
                let b = backoff();
                b.max(t.min(b.saturating_add(config.retry_after_max_us)))
            }
            Some(t) if t <= config.retry_after_max_us => t.saturating_add(added_jitter_us(config, unit)),
            Some(t) if config.over_max == OverMax::Sleep => t.saturating_add(added_jitter_us(config, unit)),
            Some(_) if config.over_max == OverMax::Cap => config.retry_after_max_us,
            Some(_) | None => backoff(),
        };
        if config.charged_to_root_budget && !root_allows(delay_us) {
            return SdkDecision::Answer(Stop::RootBudget);
        }
        if let (Some((bucket, _)), Some(cost)) = (quota, cost) {
            bucket.acquire(cost);
            self.quota_taken = Some(cost);
        }
        self.retries_taken += 1;
        SdkDecision::Retry { delay_us }
    }
}

/// Retry `n`'s sleep (0-based) without a Retry-After: min(initial x multiplier^n, max) x
/// (1 - jitter x unit).
pub fn backoff_us(config: &SdkClientConfig, n: u32, unit: f64) -> Micros {
    backoff_from_us(config, config.initial_delay_us, n, unit)
}

/// [`backoff_us`] from another first sleep (botocore's throttling base).
fn backoff_from_us(config: &SdkClientConfig, initial_us: Micros, n: u32, unit: f64) -> Micros {
    let exponent = n.min(1000) as i32;
    // A zero initial delay stays zero: 0 x an overflowed power (infinity) would be NaN, whose
    // min with the cap is the cap.
    let raw = if initial_us == 0 { 0.0 } else { initial_us as f64 * config.multiplier.powi(exponent) };
    let capped = raw.max(config.min_delay_us as f64).min(config.max_delay_us as f64);
    ((capped * (1.0 - config.jitter * unit)).max(0.0) as Micros).saturating_add(added_jitter_us(config, unit))
}

/// LiteLLM's additive jitter: U x `jitter_added_us` (0 for every other client).
fn added_jitter_us(config: &SdkClientConfig, unit: f64) -> Micros {
    if config.jitter_added_us == 0 {
        return 0;
    }
    (config.jitter_added_us as f64 * unit).max(0.0) as Micros
}

impl SdkClientConfig {
    /// Its values make sense: a field name and the reason otherwise.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if !(self.multiplier.is_finite() && self.multiplier >= 1.0) {
            return Err(("multiplier", format!("must be at least 1, got {}", self.multiplier)));
        }
        if !(0.0..=1.0).contains(&self.jitter) {
            return Err((
                "jitter",
                format!("must be in [0, 1] (the share a sleep may be shortened by), got {}", self.jitter),
            ));
        }
        if self.max_delay_us < self.initial_delay_us {
            return Err((
                "max_delay_ms",
                format!(
                    "must be at least initial_delay_ms: max_delay_ms is {} ms, initial_delay_ms {} ms",
                    self.max_delay_us as f64 / 1e3,
                    self.initial_delay_us as f64 / 1e3
                ),
            ));
        }
        if let Some(t) = self.throttling_initial_delay_us
            && t > self.max_delay_us
        {
            return Err((
                "throttling_initial_delay_ms",
                format!(
                    "must be at most max_delay_ms ({} ms), got {} ms",
                    self.max_delay_us as f64 / 1e3,
                    t as f64 / 1e3
                ),
            ));
        }
        if self.max_retries > MAX_RETRIES {
            return Err(("max_retries", format!("at most {MAX_RETRIES}, got {}", self.max_retries)));
        }
        Ok(())
    }
}

/// Bounds one call's hidden attempts (Portkey allows 5 retries; no SDK needs hundreds).
pub const MAX_RETRIES: u32 = 100;

/// The longest backoff delay (`initial_delay_ms`, `max_delay_ms`) a client may have.
pub const MAX_DELAY_MS: f64 = 3_600_000.0;

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(kind: FailureKind) -> AttemptResult {
        AttemptResult::Failed { kind, retry_after_us: None }
    }

    fn refused_for(retry_after_us: Micros) -> AttemptResult {
        AttemptResult::Failed { kind: FailureKind::RateLimited, retry_after_us: Some(retry_after_us) }
    }

    #[test]
    fn openai_defaults_retry_twice_with_the_stainless_backoff() {
        let c = SdkClientConfig::default();
        let mut call = SdkCall::default();
        // U = 0: the full sleep; U -> 1: 25 % shorter.
        assert_eq!(
            call.on_result(&c, failed(FailureKind::Overloaded), 0.0, |_| true),
            SdkDecision::Retry { delay_us: 500_000 }
        );
        assert_eq!(
            call.on_result(&c, AttemptResult::TimedOut, 0.5, |_| true),
            SdkDecision::Retry { delay_us: 875_000 }
        );
        assert_eq!(
            call.on_result(&c, failed(FailureKind::TransientTransport), 0.0, |_| true),
            SdkDecision::Answer(Stop::RetriesSpent)
        );
        assert_eq!(call.retries_taken, 2);
    }

    #[test]
    fn backoff_is_capped_then_jittered() {
        let c = SdkClientConfig::default();
        assert_eq!(backoff_us(&c, 4, 0.0), 8_000_000);
        assert_eq!(backoff_us(&c, 9, 0.0), 8_000_000);
        assert_eq!(backoff_us(&c, 9, 1.0), 6_000_000);
        assert_eq!(backoff_us(&c, 1000, 0.0), 8_000_000, "no overflow for a huge retry count");
        // 0 x 1e200^4 would be 0 x infinity = NaN, whose min with the cap is the cap.
        let zero = SdkClientConfig { initial_delay_us: 0, multiplier: 1e200, ..c.clone() };
        assert_eq!(backoff_us(&zero, 3, 0.0), 0);
        let portkey = SdkClientConfig { jitter: 0.0, ..c };
        assert_eq!(backoff_us(&portkey, 1, 0.99), 1_000_000);
    }

    #[test]
    fn request_faults_and_unusable_results_are_not_retried() {
        let c = SdkClientConfig::default();
        for kind in [FailureKind::InvalidInput, FailureKind::Unauthorized, FailureKind::ResultInvalid] {
            let mut call = SdkCall::default();
            assert_eq!(call.on_result(&c, failed(kind), 0.0, |_| true), SdkDecision::Answer(Stop::NotRetried));
            assert_eq!(call.retries_taken, 0);
        }
        let mut call = SdkCall::default();
        assert_eq!(call.on_result(&c, AttemptResult::Ok, 0.0, |_| true), SdkDecision::Answer(Stop::Answered));
        let no_timeouts = SdkClientConfig { retry_on_timeout: false, ..c };
        let decision = call.on_result(&no_timeouts, AttemptResult::TimedOut, 0.0, |_| true);
        assert_eq!(decision, SdkDecision::Answer(Stop::NotRetried));
    }

    #[test]
    fn retry_after_within_the_cap_is_slept_exactly() {
        let c = SdkClientConfig::default();
        let mut call = SdkCall::default();
        assert_eq!(
            call.on_result(&c, refused_for(3_000_000), 0.9, |_| true),
            SdkDecision::Retry { delay_us: 3_000_000 }
        );
        // Exactly the cap is still honoured (openai: `0 < retry_after <= 120`).
        assert_eq!(
            call.on_result(&c, refused_for(120_000_000), 0.9, |_| true),
            SdkDecision::Retry { delay_us: 120_000_000 }
        );
    }

    #[test]
    fn retry_after_beyond_the_cap_gives_up_backs_off_or_sleeps() {
        let beyond = refused_for(120_000_001);
        let openai = SdkClientConfig::default();
        let mut call = SdkCall::default();
        assert_eq!(call.on_result(&openai, beyond, 0.0, |_| true), SdkDecision::Answer(Stop::RetryAfterTooLong));
        let older = SdkClientConfig { over_max: OverMax::Backoff, ..openai.clone() };
        assert_eq!(call.on_result(&older, beyond, 0.0, |_| true), SdkDecision::Retry { delay_us: 500_000 });
        let anthropic = SdkClientConfig { over_max: OverMax::Sleep, ..openai.clone() };
        assert_eq!(call.on_result(&anthropic, beyond, 0.0, |_| true), SdkDecision::Retry { delay_us: 120_000_001 });
        let ignoring = SdkClientConfig { retry_after: RetryAfter::Ignore, ..openai };
        let mut call = SdkCall::default();
        assert_eq!(call.on_result(&ignoring, beyond, 0.0, |_| true), SdkDecision::Retry { delay_us: 500_000 });
    }

    #[test]
    fn x_should_retry_overrides_the_status_but_not_a_refused_retry_after() {
        let c = SdkClientConfig::default();
        let mut call = SdkCall::default();
        let bad_request = failed(FailureKind::InvalidInput);
        assert_eq!(
            call.on_response(&c, bad_request, Some(true), 0.0, |_| true),
            SdkDecision::Retry { delay_us: 500_000 }
        );
        let overloaded = failed(FailureKind::Overloaded);
        assert_eq!(call.on_response(&c, overloaded, Some(false), 0.0, |_| true), SdkDecision::Answer(Stop::NotRetried));
        // openai reads a too-long Retry-After before the header.
        let beyond = refused_for(120_000_001);
        let decision = SdkCall::default().on_response(&c, beyond, Some(true), 0.0, |_| true);
        assert_eq!(decision, SdkDecision::Answer(Stop::RetryAfterTooLong));
        // A client that does not read it goes by the status.
        let deaf = SdkClientConfig { x_should_retry: false, ..c };
        let decision = SdkCall::default().on_response(&deaf, overloaded, Some(false), 0.0, |_| true);
        assert_eq!(decision, SdkDecision::Retry { delay_us: 500_000 });
        let decision = SdkCall::default().on_response(&deaf, bad_request, Some(true), 0.0, |_| true);
        assert_eq!(decision, SdkDecision::Answer(Stop::NotRetried));
    }

    #[test]
    fn cap_sleeps_the_cap_beyond_it() {
        let c = SdkClientConfig { over_max: OverMax::Cap, retry_after_max_us: 4_000_000, ..SdkClientConfig::default() };
        let mut call = SdkCall::default();
        assert_eq!(
            call.on_result(&c, refused_for(9_000_000), 0.0, |_| true),
            SdkDecision::Retry { delay_us: 4_000_000 }
        );
        assert_eq!(
            call.on_result(&c, refused_for(3_000_000), 0.0, |_| true),
            SdkDecision::Retry { delay_us: 3_000_000 }
        );
    }

    #[test]
    fn a_charged_client_asks_the_root_budget_for_each_retry_and_only_then() {
        let c = SdkClientConfig { charged_to_root_budget: true, ..SdkClientConfig::default() };
        let mut call = SdkCall::default();
        let mut asked = Vec::new();
        let d = call.on_result(&c, failed(FailureKind::Overloaded), 0.0, |delay| {
            asked.push(delay);
            true
        });
        assert_eq!(d, SdkDecision::Retry { delay_us: 500_000 });
        let d = call.on_result(&c, failed(FailureKind::Overloaded), 0.0, |delay| {
            asked.push(delay);
            false
        });
        assert_eq!(d, SdkDecision::Answer(Stop::RootBudget));
        assert_eq!(call.retries_taken, 1, "a refused retry is not taken");
        // Not retryable: the budget is not asked.
        let d = call.on_result(&c, failed(FailureKind::InvalidInput), 0.0, |delay| {
            asked.push(delay);
            true
        });
        assert_eq!(d, SdkDecision::Answer(Stop::NotRetried));
        assert_eq!(asked, vec![500_000, 1_000_000]);
        // Not charged: never asked.
        let free = SdkClientConfig { charged_to_root_budget: false, ..c };
        let d = SdkCall::default().on_result(&free, failed(FailureKind::Overloaded), 0.0, |_| false);
        assert_eq!(d, SdkDecision::Retry { delay_us: 500_000 });
    }

    #[test]
    fn checks_name_the_field() {
        let c = SdkClientConfig::default();
        assert_eq!(SdkClientConfig { multiplier: 0.5, ..c.clone() }.check().unwrap_err().0, "multiplier");
        assert_eq!(SdkClientConfig { jitter: 1.5, ..c.clone() }.check().unwrap_err().0, "jitter");
        assert_eq!(SdkClientConfig { max_delay_us: 1, ..c.clone() }.check().unwrap_err().0, "max_delay_ms");
        assert_eq!(SdkClientConfig { max_retries: 101, ..c.clone() }.check().unwrap_err().0, "max_retries");
        assert!(c.check().is_ok());
    }
}
