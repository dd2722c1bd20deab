//! gRPC retry throttling (gRFC A6 `retryThrottling`): a shared retry budget with its source's parameter names (docs/references.md
//! section 3), as a state machine over virtual time, a [`RetryBudgetMachine`] the pipeline
//! drives through [`Budget`], and its file table (`kind = "grpc"`).

use super::machine::{Attempt, Budget, RetryBudgetMachine, RetryCharge, add, budget_table};
use crate::runtime::guard::compile::{Compile, Invalid};
use crate::runtime::guard::contract::{AttemptEnd, GuardConfig};
use crate::scenario::{FieldPath, RawTable, ScenarioError, read_table};
use crate::sim::Micros;
use crate::vocab::FailureKind;
use serde::{Deserialize, Serialize};

/// gRPC keeps tokens in thousandths: A6 supports `tokenRatio` to three decimal places, and
/// integer arithmetic keeps a long run free of float drift.
const MILLI: u64 = 1_000;

/// gRPC `retryThrottling`: `maxTokens`, `tokenRatio`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GrpcRetryThrottleConfig {
    /// 0 < max_tokens <= 1000 (A6).
    pub max_tokens: u32,
    /// Tokens a success adds; rounded to three decimal places as A6 allows.
    pub token_ratio: f64,
    /// Indexed by [`FailureKind::index`]. A6 counts only failures whose status the policy
    /// retries (or hedging treats as non-fatal), so that malformed requests do not read as server
    /// trouble. The default is the runtime's default retry set (RATE_LIMITED, OVERLOADED,
    /// TRANSIENT_TRANSPORT) plus EFFECT_UNKNOWN, a timed-out write, which is gRPC's retryable
    /// DEADLINE_EXCEEDED of one attempt. DEADLINE_EXHAUSTED (the logical call's own time ran out,
    /// never retried) and CANCELED (the caller gave up) say nothing about the server.
    pub counted_failures: [bool; FailureKind::COUNT],
}

impl Default for GrpcRetryThrottleConfig {
    fn default() -> Self {
        GrpcRetryThrottleConfig { max_tokens: 10, token_ratio: 0.1, counted_failures: grpc_counted_failures() }
    }
}

fn grpc_counted_failures() -> [bool; FailureKind::COUNT] {
    let mut table = [false; FailureKind::COUNT];
    for kind in FailureKind::ALL {
        table[kind.index()] = match kind {
            FailureKind::RateLimited
            | FailureKind::Overloaded
            | FailureKind::TransientTransport
            | FailureKind::EffectUnknown => true,
            FailureKind::InvalidInput
            | FailureKind::Unauthorized
            | FailureKind::PermanentProvider
            | FailureKind::ResultInvalid
            | FailureKind::DeadlineExhausted
            | FailureKind::Canceled => false,
        };
    }
    table
}

impl GrpcRetryThrottleConfig {
    pub fn check(&self) -> Result<(), Invalid> {
        if self.max_tokens == 0 || self.max_tokens > 1_000 {
            return Err(Invalid::new("max_tokens", format!("max_tokens must be in 1..=1000, got {}", self.max_tokens)));
        }
        if !(self.token_ratio.is_finite() && self.token_ratio > 0.0 && milli_of(self.token_ratio) > 0) {
            return Err(Invalid::new(
                "token_ratio",
                format!("token_ratio must be positive (three decimal places), got {}", self.token_ratio),
            ));
        }
        Ok(())
    }
}

/// `as` saturates, so an enormous ratio becomes "refill at once", never an overflow.
fn milli_of(tokens: f64) -> u64 {
    crate::sim::round_u64(tokens * MILLI as f64)
}

/// The per-server token bucket of gRPC retry throttling.
#[derive(Debug, Clone)]
pub struct GrpcRetryThrottle {
    milli_tokens: u64,
    max_milli: u64,
    ratio_milli: u64,
    counted_failures: [bool; FailureKind::COUNT],
}

impl GrpcRetryThrottle {
    pub fn new(config: GrpcRetryThrottleConfig) -> Result<Self, Invalid> {
        config.check()?;
        let max_milli = u64::from(config.max_tokens) * MILLI;
        Ok(GrpcRetryThrottle {
            milli_tokens: max_milli,
            max_milli,
            ratio_milli: milli_of(config.token_ratio),
            counted_failures: config.counted_failures,
        })
    }

    pub fn token_count(&self) -> f64 {
        self.milli_tokens as f64 / MILLI as f64
    }

    /// Retries and hedges stop at half the bucket, not at empty, so a recovering server is
    /// probed by first attempts alone until successes refill it.
    pub fn allows_retry(&self) -> bool {
        self.milli_tokens > self.max_milli / 2
    }

    fn on_success(&mut self) {
        self.milli_tokens = self.milli_tokens.saturating_add(self.ratio_milli).min(self.max_milli);
        debug_assert!(self.milli_tokens <= self.max_milli, "the bucket never holds more than max_tokens");
    }

    /// A6 floors the count at 0: failures past empty change nothing.
    fn on_failure(&mut self) {
        self.milli_tokens = self.milli_tokens.saturating_sub(MILLI);
    }

    /// Every attempt counts, first or retry: gRPC sees each attempt as an outgoing RPC.
    pub fn on_attempt_end(&mut self, end: AttemptEnd) {
        match end.failure {
            None => self.on_success(),
            Some(kind) if self.counted_failures[kind.index()] => self.on_failure(),
            Some(_) => {}
        }
    }
}

impl RetryBudgetMachine for GrpcRetryThrottle {
    fn allows_retry(&mut self, _now: Micros, _after: Option<FailureKind>) -> bool {
        GrpcRetryThrottle::allows_retry(self)
    }

    fn spend_retry(&mut self, _now: Micros, _after: Option<FailureKind>) -> Option<RetryCharge> {
        GrpcRetryThrottle::allows_retry(self).then_some(RetryCharge::NONE)
    }

    fn on_attempt_start(&mut self, _now: Micros, _attempt: Attempt) {}

    fn on_attempt_end(&mut self, _now: Micros, _attempt: Attempt, end: AttemptEnd) {
        GrpcRetryThrottle::on_attempt_end(self, end);
    }

    /// Whole tokens, rounded down (retries stop at half of `max_tokens` or fewer).
    fn level(&mut self, _now: Micros) -> u64 {
        self.milli_tokens / MILLI
    }
}

impl GuardConfig for GrpcRetryThrottleConfig {
    type Live = Budget<GrpcRetryThrottle>;

    fn build(&self) -> Budget<GrpcRetryThrottle> {
        Budget(GrpcRetryThrottle::new(*self).expect("retry budget configurations are checked at compile time"))
    }
}

// ---------------------------------------------------------------------------------------------
// The file's table

budget_table!(
    /// `kind = "grpc"`: gRPC retry throttling (gRFC A6 `retryThrottling`).
    GrpcTable { max_tokens: u32, token_ratio: f64, }
);

pub fn compile<G: From<GrpcRetryThrottleConfig>>(
    cx: &mut Compile<G>,
    path: &FieldPath,
    raw: &RawTable,
) -> Result<(), ScenarioError> {
    let t: GrpcTable = read_table(cx.source, path, raw)?;
    let d = GrpcRetryThrottleConfig::default();
    let c = GrpcRetryThrottleConfig {
        max_tokens: t.max_tokens.unwrap_or(d.max_tokens),
        token_ratio: t.token_ratio.unwrap_or(d.token_ratio),
        ..d
    };
    add(cx, path, (t.scope.as_deref(), &t.dependency), c, c.check())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: AttemptEnd = AttemptEnd { failure: None, duration_us: 1_000 };
    const OVERLOADED: AttemptEnd = AttemptEnd { failure: Some(FailureKind::Overloaded), duration_us: 1_000 };

    fn grpc() -> GrpcRetryThrottle {
        GrpcRetryThrottle::new(GrpcRetryThrottleConfig::default()).unwrap()
    }

    /// `failures` failures spread evenly over every `period` calls, repeated for `calls` calls.
    fn grpc_after_pattern(failures: u64, period: u64, calls: u64) -> GrpcRetryThrottle {
        let mut t = grpc();
        for i in 0..calls {
            let fails = (i % period) * failures % period < failures;
            t.on_attempt_end(if fails { OVERLOADED } else { OK });
        }
        t
    }

    #[test]
    fn grpc_blocks_at_half_the_bucket() {
        let mut t = grpc();
        for _ in 0..4 {
            t.on_attempt_end(OVERLOADED);
        }
        assert!(t.allows_retry(), "6 tokens > 5");
        t.on_attempt_end(OVERLOADED);
        assert_eq!(t.token_count(), 5.0);
        assert!(!t.allows_retry(), "5 tokens <= 10 / 2");
        t.on_attempt_end(OK);
        assert!(t.allows_retry(), "5.1 tokens");
        for _ in 0..20 {
            t.on_attempt_end(OVERLOADED);
        }
        assert_eq!(t.token_count(), 0.0, "the count never goes below zero");
        for _ in 0..200 {
            t.on_attempt_end(OK);
        }
        assert_eq!(t.token_count(), 10.0, "nor above max_tokens");
    }

    #[test]
    fn grpc_ignores_failures_its_policy_would_not_retry() {
        let mut t = grpc();
        for _ in 0..100 {
            t.on_attempt_end(AttemptEnd::failed(FailureKind::InvalidInput, 5));
            t.on_attempt_end(AttemptEnd::failed(FailureKind::Canceled, 5));
        }
        assert_eq!(t.token_count(), 10.0);
    }

    #[test]
    fn grpc_threshold_sits_at_r_over_one_plus_r() {
        let r = GrpcRetryThrottleConfig::default().token_ratio;
        let threshold = r / (1.0 + r);
        assert!((threshold - 0.090909).abs() < 1e-6);
        // (failures, period): each side of 9.0909 %, and the fixed point itself.
        let allowed = [(2, 25), (9, 100), (1, 11)];
        let blocked = [(1, 10), (23, 250), (12, 131)];
        for (f, p) in allowed {
            assert!((f as f64 / p as f64) <= threshold + 1e-12);
            assert!(grpc_after_pattern(f, p, 20_000).allows_retry(), "{f} in {p} keeps retries");
        }
        for (f, p) in blocked {
            assert!(f as f64 / p as f64 > threshold);
            assert!(!grpc_after_pattern(f, p, 20_000).allows_retry(), "{f} in {p} stops retries");
        }
    }

    #[test]
    fn grpc_config_is_checked() {
        let bad = GrpcRetryThrottleConfig { max_tokens: 1_001, ..Default::default() };
        assert_eq!(bad.check().unwrap_err().field, "max_tokens");
        let bad = GrpcRetryThrottleConfig { token_ratio: 0.0001, ..Default::default() };
        assert_eq!(bad.check().unwrap_err().field, "token_ratio");
        let bad = GrpcRetryThrottleConfig { token_ratio: f64::NAN, ..Default::default() };
        assert_eq!(bad.check().unwrap_err().field, "token_ratio");
    }
}
