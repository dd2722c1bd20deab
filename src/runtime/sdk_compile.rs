//! Compiles a `[policy.P.sdk_client.<dependency>]` table into a client config: its preset's
//! defaults (runtime::sdk_preset; openai-python's without one) under the fields it sets, each
//! checked with a located error.

use crate::scenario::{
    FieldPath, ScenarioError, SdkClientSpec, Source, duration_ms, error_at_path, parse_named, quote,
};
use crate::sim::Micros;
use crate::vocab::{FailureKind, Named};

use super::sdk_client::{MAX_DELAY_MS, SdkClientConfig, TIMEOUT};
use super::sdk_preset::SdkPreset;
use super::sdk_quota::{BOTOCORE_QUOTA, RetryQuotaConfig};

/// Compiles one `[policy.P.sdk_client.<dependency>]` table.
pub fn compile_sdk_client(
    source: &Source,
    path: &FieldPath,
    spec: &SdkClientSpec,
) -> Result<SdkClientConfig, ScenarioError> {
    let d = match &spec.preset {
        None => SdkClientConfig::default(),
        Some(name) => {
            let preset = SdkPreset::parse(name).ok_or_else(|| {
                let message = format!("unknown preset {}; known presets: {}", quote(name), SdkPreset::choices());
                error_at_path(source, &path.key("preset"), message)
            })?;
            preset.defaults()
        }
    };
    // A delay past an hour is no SDK's: bounded here, it is a located error rather than a
    // saturated microsecond count that strands the run.
    let ms = |field: &str, value: Option<f64>, default: Micros| match value {
        Some(v) if (field.ends_with("delay_ms") || field == "jitter_added_ms") && v.is_finite() && v > MAX_DELAY_MS => {
            Err(error_at_path(
                source,
                &path.key(field),
                format!("{} ms is more than {MAX_DELAY_MS} ms (an hour)", crate::scenario::locate::shown(v)),
            ))
        }
        Some(v) => duration_ms(source, &path.key(field), v),
        None => Ok(default),
    };
    let (retry_on, retry_on_timeout) = match &spec.retry_on {
        None => (d.retry_on, d.retry_on_timeout),
        Some(names) => {
            let mut table = [false; FailureKind::COUNT];
            let mut timeout = false;
            for (i, name) in names.iter().enumerate() {
                if name == TIMEOUT {
                    timeout = true;
                    continue;
                }
                let kind = FailureKind::parse(name).ok_or_else(|| {
                    let message = format!(
                        "unknown failure kind {} (expected a failure kind such as rate_limited, or \"timeout\")",
                        quote(name)
                    );
                    error_at_path(source, &path.key("retry_on").index(i), message)
                })?;
                table[kind.index()] = true;
            }
            (table, timeout)
        }
    };
    let (max_retries_by_kind, max_retries_on_timeout) = match &spec.max_retries_by_kind {
        None => (d.max_retries_by_kind, d.max_retries_on_timeout),
        Some(counts) => {
            let mut table = [None; FailureKind::COUNT];
            let mut timeout = None;
            for (name, &n) in counts {
                let at = path.key("max_retries_by_kind").key(name);
                if n > super::sdk_client::MAX_RETRIES {
                    let message = format!("at most {}, got {n}", super::sdk_client::MAX_RETRIES);
                    return Err(error_at_path(source, &at, message));
                }
                if name == TIMEOUT {
                    timeout = Some(n);
                    continue;
                }
                let kind = FailureKind::parse(name).ok_or_else(|| {
                    let message = format!(
                        "unknown failure kind {} (expected a failure kind such as rate_limited, or \"timeout\")",
                        quote(name)
                    );
                    error_at_path(source, &at, message)
                })?;
                table[kind.index()] = Some(n);
            }
            (table, timeout)
        }
    };
    // 0: no timeout of its own.
    let timeout_us = match spec.timeout_ms {
        Some(v) => Some(duration_ms(source, &path.key("timeout_ms"), v)?).filter(|&us| us > 0),
        None => d.timeout_us,
    };
    let config = SdkClientConfig {
        max_retries: spec.max_retries.unwrap_or(d.max_retries),
        initial_delay_us: ms("initial_delay_ms", spec.initial_delay_ms, d.initial_delay_us)?,
        max_delay_us: ms("max_delay_ms", spec.max_delay_ms, d.max_delay_us)?,
        multiplier: spec.multiplier.unwrap_or(d.multiplier),
        jitter: spec.jitter.unwrap_or(d.jitter),
        retry_on,
        retry_on_timeout,
        timeout_us,
        retry_after: parse_named(source, &path.key("retry_after"), spec.retry_after.as_deref(), d.retry_after)?,
        retry_after_max_us: ms("retry_after_max_ms", spec.retry_after_max_ms, d.retry_after_max_us)?,
        over_max: parse_named(
            source,
            &path.key("retry_after_over_max"),
            spec.retry_after_over_max.as_deref(),
            d.over_max,
        )?,
        charged_to_root_budget: spec.charged_to_root_budget.unwrap_or(d.charged_to_root_budget),
        x_should_retry: d.x_should_retry,
        throttling_initial_delay_us: match spec.throttling_initial_delay_ms {
            Some(v) => Some(ms("throttling_initial_delay_ms", Some(v), 0)?),
            None => d.throttling_initial_delay_us,
        },
        retry_quota: compile_quota(source, path, spec, d.retry_quota)?,
        jitter_added_us: ms("jitter_added_ms", spec.jitter_added_ms, d.jitter_added_us)?,
        min_delay_us: ms("min_delay_ms", spec.min_delay_ms, d.min_delay_us)?,
        client_rate_limiter: spec.client_rate_limiter.unwrap_or(d.client_rate_limiter),
        max_retries_by_kind,
        max_retries_on_timeout,
    };
    config.check().map_err(|(field, message)| error_at_path(source, &path.key(field), message))?;
    Ok(config)
}

/// The retry quota: the preset's (botocore's), or one the table sizes with `retry_quota`; its
/// costs default to botocore's. A cost without a quota is an error at that cost.
fn compile_quota(
    source: &Source,
    path: &FieldPath,
    spec: &SdkClientSpec,
    preset: Option<RetryQuotaConfig>,
) -> Result<Option<RetryQuotaConfig>, ScenarioError> {
    let base = match (spec.retry_quota, preset) {
        (Some(capacity), Some(q)) => Some(RetryQuotaConfig { capacity, ..q }),
        (Some(capacity), None) => Some(RetryQuotaConfig { capacity, ..BOTOCORE_QUOTA }),
        (None, q) => q,
    };
    let costs = [
        ("retry_cost", spec.retry_cost),
        ("throttling_retry_cost", spec.throttling_retry_cost),
        ("no_retry_increment", spec.no_retry_increment),
    ];
    let Some(mut q) = base else {
        return match costs.iter().find(|(_, v)| v.is_some()) {
            Some((field, _)) => Err(error_at_path(
                source,
                &path.key(field),
                "applies only to a client with a retry quota: set retry_quota (botocore's is 500)".to_string(),
            )),
            None => Ok(None),
        };
    };
    q.retry_cost = spec.retry_cost.unwrap_or(q.retry_cost);
    q.throttling_retry_cost = spec.throttling_retry_cost.unwrap_or(q.throttling_retry_cost);
    q.no_retry_increment = spec.no_retry_increment.unwrap_or(q.no_retry_increment);
    Ok(Some(q))
}
