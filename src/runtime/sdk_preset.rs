//! Client SDK presets: a client library at a pinned version, whose own defaults fill every
//! field of `[policy.P.sdk_client.<dependency>]` the table does not set (docs/scenario.md
//! 8.18). Each preset's figures are read from the library's source at that version, cited
//! beside them, and checked against the library itself by the differential harness
//! (tests/differential_sdk.rs, tests/differential/http_sdks/).

use super::sdk_client::{OverMax, RetryAfter, SdkClientConfig};
use super::sdk_quota::BOTOCORE_QUOTA;

crate::named_enum! {
    /// The client libraries faultline knows the retry defaults of.
    pub enum SdkPreset {
        /// openai-python 3.63.0 (PyPI `openai==3.63.0`).
        OpenaiPython => "openai-python",
        /// anthropic-sdk-python 2.17.0 (PyPI `anthropic==2.17.0`).
        AnthropicSdkPython => "anthropic-sdk-python",
        /// botocore 1.44.18's standard retry mode (PyPI `botocore==1.44.18`), its default
        /// (`configprovider.py`: `'retry_mode': (..., 'standard', None)`).
        BotocoreStandard => "botocore-standard",
        /// botocore 1.44.18's adaptive retry mode (`retries={'mode': 'adaptive'}`): standard
        /// mode's retries and quota, and every send through a client-side rate limiter.
        BotocoreAdaptive => "botocore-adaptive",
        /// LiteLLM 1.110.2's `Router` (PyPI `litellm==1.110.2`) in front of one deployment.
        LitellmRouter => "litellm-router",
    }
}

/// anthropic-sdk-python 2.17.0 sleeps a Retry-After in full up to this (`_base_client.py`,
/// `_calculate_retry_timeout`: `min(retry_after, 4_294_967.0)` seconds, "as low as 2**32
/// milliseconds on Windows").
pub const ANTHROPIC_RETRY_AFTER_CAP_US: u64 = 4_294_967_000_000;

impl SdkPreset {
    /// The library's defaults as a client config.
    pub fn defaults(self) -> SdkClientConfig {
        match self {
            // openai 3.63.0, `src/openai/_constants.py`: DEFAULT_MAX_RETRIES = 2,
            // INITIAL_RETRY_DELAY = 0.5, MAX_RETRY_DELAY = 8.0, MAX_RETRY_AFTER_DELAY = 2 * 60,
            // DEFAULT_TIMEOUT = httpx2.Timeout(timeout=600, connect=5.0); `_base_client.py`:
            // `_calculate_retry_timeout` (x (1 - 0.25 * random())), `_should_retry` (a
            // Retry-After beyond 120 s is not retried; then `x-should-retry`; then 408, 409, 429,
            // >= 500), `_parse_retry_after_header` (`retry-after-ms`, then `retry-after` as
            // seconds or an HTTP date). These are faultline's defaults too.
            SdkPreset::OpenaiPython => SdkClientConfig::default(),
            // anthropic 2.17.0, `src/anthropic/_constants.py`: DEFAULT_MAX_RETRIES = 2,
            // INITIAL_RETRY_DELAY = 0.5, MAX_RETRY_DELAY = 8.0, DEFAULT_TIMEOUT =
            // httpx2.Timeout(timeout=10 * 60, connect=5.0), no MAX_RETRY_AFTER_DELAY;
            // `_base_client.py`: the same backoff and statuses as openai's, and a positive
            // Retry-After slept in full up to the `time.sleep` limit, never refused.
            SdkPreset::AnthropicSdkPython => SdkClientConfig {
                retry_after_max_us: ANTHROPIC_RETRY_AFTER_CAP_US,
                over_max: OverMax::Cap,
                ..SdkClientConfig::default()
            },
            // botocore 1.44.18, `botocore/retries/standard.py`: DEFAULT_MAX_ATTEMPTS = 3 (the
            // first included; DynamoDB's 4 is not modelled); `ExponentialBackoff`: _BASE = 2,
            // _MAX_BACKOFF = 20, `t_i = rand(0, 1) * min(base_scale * 2 ** i, 20)` (full jitter)
            // with `throttling_base_scale` 1 and `non_throttling_base_scale` 0.05 s (DynamoDB's
            // 0.025 is not modelled); `x-amz-retry-after` in ms raises t_i to at most t_i +
            // _RETRY_AFTER_MAX_ADDITIONAL (5 s), `retry-after` is never read;
            // `StandardRetryConditions`: 500, 502, 503, 504, 429 and the throttling and
            // transient error codes, connection errors and timeouts (`ConnectionError`,
            // `HTTPClientError`); never `x-should-retry`; `RetryQuotaChecker` and `quota.py`:
            // the shared quota. `botocore/endpoint.py`: DEFAULT_TIMEOUT = 60 (read timeout).
            SdkPreset::BotocoreStandard => SdkClientConfig {
                max_retries: 2,
                initial_delay_us: 50_000,
                max_delay_us: 20_000_000,
                multiplier: 2.0,
                jitter: 1.0,
                timeout_us: Some(60_000_000),
                retry_after: RetryAfter::Raise,
                retry_after_max_us: 5_000_000,
                x_should_retry: false,
                throttling_initial_delay_us: Some(1_000_000),
                retry_quota: Some(BOTOCORE_QUOTA),
                ..SdkClientConfig::default()
            },
            // botocore 1.44.18, `client.py` `_register_retries`: 'adaptive' registers standard
            // mode's handler and then `adaptive.register_retry_handler` (the rate limiter).
            SdkPreset::BotocoreAdaptive => {
                SdkClientConfig { client_rate_limiter: true, ..SdkPreset::BotocoreStandard.defaults() }
            }
            // litellm 1.110.2. The router's retry loop is its Rust core (`litellm/router_rust/`,
            // `rust_bridge/_native.abi3.so`); its sleep is the host's `calculate_retry_after`
            // (`router_python_host.py` `invoke("calculate_retry_after")`, `router_rust/core.py`
            // `_sleep_seconds`), read from `litellm/utils.py` `calculate_retry_after` and
            // `_get_retry_after_from_exception_header`: `int(retry-after)` whole seconds (no
            // `retry-after-ms`, no fraction), honoured when `0 < retry_after <= 60`, else
            // `INITIAL_RETRY_DELAY * 2 ** n` boxed by `max(., min_timeout)` and `min(.,
            // MAX_RETRY_DELAY)`; either plus `JITTER * random.random()`. `constants.py`:
            // DEFAULT_MAX_RETRIES = 2 (`Router(num_retries=None)`), INITIAL_RETRY_DELAY = 0.5,
            // MAX_RETRY_DELAY = 8.0, JITTER = 0.75, DEFAULT_REQUEST_TIMEOUT_SECONDS = 6000.0
            // (`litellm.request_timeout`). Retried in a one-deployment group (measured by the
            // harness): 408, 409, 429, >= 500, connection errors and timeouts; not 400, 401, 403,
            // 404, 422. `x-should-retry` is not read.
            SdkPreset::LitellmRouter => SdkClientConfig {
                jitter: 0.0,
                jitter_added_us: 750_000,
                timeout_us: Some(6_000_000_000),
                retry_after_max_us: 60_000_000,
                over_max: OverMax::Backoff,
                x_should_retry: false,
                ..SdkClientConfig::default()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::AttemptResult;
    use crate::runtime::sdk_client::{SdkCall, SdkDecision, Stop};
    use crate::runtime::sdk_quota::RetryQuota;
    use crate::vocab::{FailureKind, Named};

    #[test]
    fn litellm_retry_policy_counts_by_the_first_failure() {
        // RateLimitErrorRetries 4, num_retries 2: a first 429 gives 4 retries, whatever follows;
        // a first 503 gives 2; RateLimitErrorRetries 0 retries no 429; BadRequestErrorRetries 1
        // retries a 400 the preset does not retry.
        let mut c = SdkPreset::LitellmRouter.defaults();
        c.max_retries_by_kind[FailureKind::RateLimited.index()] = Some(4);
        c.max_retries_by_kind[FailureKind::InvalidInput.index()] = Some(1);
        let count = |first: FailureKind, then: FailureKind, c: &crate::runtime::sdk_client::SdkClientConfig| {
            let mut call = SdkCall::default();
            let mut attempts = 1;
            let mut result = failed(first);
            while let SdkDecision::Retry { .. } = call.on_response(c, result, None, 0.5, |_| true) {
                attempts += 1;
                result = failed(then);
            }
            attempts
        };
        assert_eq!(count(FailureKind::RateLimited, FailureKind::Overloaded, &c), 5);
        assert_eq!(count(FailureKind::Overloaded, FailureKind::RateLimited, &c), 3);
        assert_eq!(count(FailureKind::InvalidInput, FailureKind::InvalidInput, &c), 2);
        c.max_retries_by_kind[FailureKind::RateLimited.index()] = Some(0);
        assert_eq!(count(FailureKind::RateLimited, FailureKind::RateLimited, &c), 1);
        assert_eq!(
            count(FailureKind::InvalidInput, FailureKind::InvalidInput, &SdkPreset::LitellmRouter.defaults()),
            1
        );
    }

    fn failed(kind: FailureKind) -> AttemptResult {
        AttemptResult::Failed { kind, retry_after_us: None }
    }

    fn refused_for(retry_after_us: crate::sim::Micros) -> AttemptResult {
        AttemptResult::Failed { kind: FailureKind::RateLimited, retry_after_us: Some(retry_after_us) }
    }

    // Here rather than in sdk_client.rs: its tests importing the presets would close an import
    // circle (tests/tidy.rs).
    #[test]
    fn botocore_pays_each_retry_from_the_shared_quota_and_refills_on_success() {
        let c = SdkPreset::BotocoreStandard.defaults();
        let mut quota = RetryQuota { capacity: 500, available: 19 };
        let mut call = SdkCall::default();
        // An ordinary error: 14 taken, full jitter from 50 ms (U = 0.5: 25 ms).
        let d = call.on_response_with_quota(&c, failed(FailureKind::Overloaded), None, 0.5, Some(&mut quota), |_| true);
        assert_eq!((d, quota.available), (SdkDecision::Retry { delay_us: 25_000 }, 5));
        // A throttling error: 5 taken, from 1 s doubled once (U = 0.5: 1 s).
        let d = call.on_response_with_quota(&c, refused_for(0), None, 0.5, Some(&mut quota), |_| true);
        assert_eq!((d, quota.available), (SdkDecision::Retry { delay_us: 1_000_000 }, 0));
        // The answer gives back what the last retry took.
        let d = call.on_response_with_quota(&c, AttemptResult::Ok, None, 0.5, Some(&mut quota), |_| true);
        assert_eq!((d, quota.available), (SdkDecision::Answer(Stop::Answered), 5));
        // Not enough left for an ordinary retry: not made, nothing taken, the root not asked.
        let mut call = SdkCall::default();
        let d = call.on_response_with_quota(&c, AttemptResult::TimedOut, None, 0.5, Some(&mut quota), |_| panic!());
        assert_eq!((d, quota.available, call.retries_taken), (SdkDecision::Answer(Stop::RetryQuota), 5, 0));
        // A first-try success gives back 1.
        let d = SdkCall::default().on_response_with_quota(&c, AttemptResult::Ok, None, 0.0, Some(&mut quota), |_| true);
        assert_eq!((d, quota.available), (SdkDecision::Answer(Stop::Answered), 6));
        // x-amz-retry-after: raised to it, by at most 5 s; x-should-retry is not read.
        let mut call = SdkCall::default();
        let mut full = RetryQuota { capacity: 500, available: 500 };
        let d = call.on_response_with_quota(&c, refused_for(9_000_000), Some(false), 0.5, Some(&mut full), |_| true);
        assert_eq!(d, SdkDecision::Retry { delay_us: 5_500_000 });
    }

    #[test]
    fn litellm_adds_up_to_three_quarters_of_a_second_and_honours_whole_retry_afters_to_a_minute() {
        let c = SdkPreset::LitellmRouter.defaults();
        let mut call = SdkCall::default();
        // U = 0.5: 0.5 s + 0.375 s, then 1 s + 0.375 s.
        assert_eq!(
            call.on_result(&c, failed(FailureKind::Overloaded), 0.5, |_| true),
            SdkDecision::Retry { delay_us: 875_000 }
        );
        assert_eq!(
            call.on_result(&c, AttemptResult::TimedOut, 0.5, |_| true),
            SdkDecision::Retry { delay_us: 1_375_000 }
        );
        assert_eq!(
            call.on_result(&c, failed(FailureKind::Overloaded), 0.5, |_| true),
            SdkDecision::Answer(Stop::RetriesSpent)
        );
        // A Retry-After of 60 s is slept, plus the jitter; 61 s is the backoff.
        let d = SdkCall::default().on_result(&c, refused_for(60_000_000), 0.5, |_| true);
        assert_eq!(d, SdkDecision::Retry { delay_us: 60_375_000 });
        let d = SdkCall::default().on_result(&c, refused_for(61_000_000), 0.0, |_| true);
        assert_eq!(d, SdkDecision::Retry { delay_us: 500_000 });
        // The router's retry_after is a floor under the backoff, the 8 s cap above it.
        let floor = SdkClientConfig { min_delay_us: 3_000_000, ..c.clone() };
        assert_eq!(
            SdkCall::default().on_result(&floor, failed(FailureKind::Overloaded), 0.0, |_| true),
            SdkDecision::Retry { delay_us: 3_000_000 }
        );
        let over = SdkClientConfig { min_delay_us: 20_000_000, ..c };
        assert_eq!(
            SdkCall::default().on_result(&over, failed(FailureKind::Overloaded), 0.0, |_| true),
            SdkDecision::Retry { delay_us: 8_000_000 }
        );
    }

    #[test]
    fn presets_are_named_as_their_packages_and_differ_only_where_the_libraries_do() {
        assert_eq!(
            SdkPreset::choices(),
            "openai-python, anthropic-sdk-python, botocore-standard, botocore-adaptive, litellm-router"
        );
        let openai = SdkPreset::OpenaiPython.defaults();
        let anthropic = SdkPreset::AnthropicSdkPython.defaults();
        assert_eq!(openai.retry_after_max_us, 120_000_000);
        assert_eq!(openai.over_max, OverMax::GiveUp);
        assert_eq!(anthropic.retry_after_max_us, 4_294_967_000_000);
        assert_eq!(anthropic.over_max, OverMax::Cap);
        let same = SdkClientConfig { retry_after_max_us: 120_000_000, over_max: OverMax::GiveUp, ..anthropic };
        assert_eq!(same, openai);
    }
}
