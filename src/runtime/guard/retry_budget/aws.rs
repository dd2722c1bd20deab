//! the AWS SDKs' standard-mode retry quota: a shared retry budget with its source's parameter names (docs/references.md
//! section 3), as a state machine over virtual time, a [`RetryBudgetMachine`] the pipeline
//! drives through [`Budget`], and its file table (`kind = "aws"`).

use super::machine::{Attempt, Budget, RetryBudgetMachine, RetryCharge, add, budget_table};
use crate::runtime::guard::compile::{Compile, Invalid};
use crate::runtime::guard::contract::{AttemptEnd, GuardConfig};
use crate::scenario::{FieldPath, RawTable, ScenarioError, read_table};
use crate::sim::Micros;
use crate::vocab::FailureKind;
use serde::{Deserialize, Serialize};

/// The standard-mode quota as the SDKs name it, with the costs of standard mode 2.0 (botocore's
/// newer 2.1 charges 14 per retry and 5 after throttling instead; docs/references.md section 2 keeps the former).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AwsRetryQuotaConfig {
    /// Starting and maximum capacity.
    pub initial_retry_tokens: u32,
    pub retry_cost: u32,
    /// Charged instead of `retry_cost` when the failed attempt timed out.
    pub timeout_retry_cost: u32,
    /// Returned by a call that succeeds at its first attempt.
    pub no_retry_increment: u32,
}

impl Default for AwsRetryQuotaConfig {
    fn default() -> Self {
        AwsRetryQuotaConfig { initial_retry_tokens: 500, retry_cost: 5, timeout_retry_cost: 10, no_retry_increment: 1 }
    }
}

impl AwsRetryQuotaConfig {
    pub fn check(&self) -> Result<(), Invalid> {
        if self.retry_cost == 0 {
            return Err(Invalid::new(
                "retry_cost",
                "retry_cost must be at least 1: a free retry would leave the quota no limit".to_string(),
            ));
        }
        if self.timeout_retry_cost == 0 {
            return Err(Invalid::new(
                "timeout_retry_cost",
                "timeout_retry_cost must be at least 1: a free retry would leave the quota no limit".to_string(),
            ));
        }
        Ok(())
    }
}

/// The vocabulary folds an attempt timeout into TRANSIENT_TRANSPORT (reads) or EFFECT_UNKNOWN
/// (writes). botocore charges the timeout cost for connect and read timeouts only; a refused
/// connection, also TRANSIENT_TRANSPORT here, is charged as a timeout too, the nearer fit for
/// "no answer from the service".
fn is_timeout(kind: FailureKind) -> bool {
    match kind {
        FailureKind::TransientTransport | FailureKind::EffectUnknown => true,
        FailureKind::InvalidInput
        | FailureKind::Unauthorized
        | FailureKind::RateLimited
        | FailureKind::Overloaded
        | FailureKind::PermanentProvider
        | FailureKind::ResultInvalid
        | FailureKind::DeadlineExhausted
        | FailureKind::Canceled => false,
    }
}

/// A capacity that retries draw from and successes refill.
#[derive(Debug, Clone)]
pub struct AwsRetryQuota {
    config: AwsRetryQuotaConfig,
    available: u32,
}

impl AwsRetryQuota {
    pub fn new(config: AwsRetryQuotaConfig) -> Result<Self, Invalid> {
        config.check()?;
        Ok(AwsRetryQuota { config, available: config.initial_retry_tokens })
    }

    pub fn available(&self) -> u32 {
        self.available
    }

    /// A hedge (no failure yet) is charged the plain retry cost.
    fn cost_of(&self, after: Option<FailureKind>) -> u32 {
        match after {
            Some(kind) if is_timeout(kind) => self.config.timeout_retry_cost,
            Some(_) | None => self.config.retry_cost,
        }
    }

    fn can_acquire(&self, after: Option<FailureKind>) -> bool {
        self.cost_of(after) <= self.available
    }

    /// When the quota is short the SDK does not retry at all, and takes nothing.
    pub fn acquire(&mut self, after: Option<FailureKind>) -> Option<RetryCharge> {
        let cost = self.cost_of(after);
        if cost > self.available {
            return None;
        }
        self.available -= cost;
        debug_assert!(self.available <= self.config.initial_retry_tokens);
        Some(RetryCharge(cost))
    }

    pub fn release(&mut self, amount: u32) {
        self.available = self.available.saturating_add(amount).min(self.config.initial_retry_tokens);
        debug_assert!(self.available <= self.config.initial_retry_tokens, "the quota never exceeds its capacity");
    }

    /// Only a successful end refunds: what the last retry took, or the small increment when the
    /// call needed no retry. A failed end gives nothing back.
    pub fn on_attempt_end(&mut self, attempt: Attempt, end: AttemptEnd) {
        if end.failure.is_some() {
            return;
        }
        match attempt {
            Attempt::First => self.release(self.config.no_retry_increment),
            Attempt::Retry(charge) => self.release(charge.0),
        }
    }
}

impl RetryBudgetMachine for AwsRetryQuota {
    fn allows_retry(&mut self, _now: Micros, after: Option<FailureKind>) -> bool {
        self.can_acquire(after)
    }

    fn spend_retry(&mut self, _now: Micros, after: Option<FailureKind>) -> Option<RetryCharge> {
        self.acquire(after)
    }

    fn on_attempt_start(&mut self, _now: Micros, _attempt: Attempt) {}

    fn on_attempt_end(&mut self, _now: Micros, attempt: Attempt, end: AttemptEnd) {
        AwsRetryQuota::on_attempt_end(self, attempt, end);
    }

    /// Quota tokens available (a retry takes `retry_cost`, after a timeout `timeout_retry_cost`).
    fn level(&mut self, _now: Micros) -> u64 {
        u64::from(self.available)
    }
}

impl GuardConfig for AwsRetryQuotaConfig {
    type Live = Budget<AwsRetryQuota>;

    fn build(&self) -> Budget<AwsRetryQuota> {
        Budget(AwsRetryQuota::new(*self).expect("retry budget configurations are checked at compile time"))
    }
}

// ---------------------------------------------------------------------------------------------
// The file's table

budget_table!(
    /// `kind = "aws"`: the AWS SDKs' standard-mode retry quota.
    AwsTable { initial_retry_tokens: u32, retry_cost: u32, timeout_retry_cost: u32, no_retry_increment: u32, }
);

pub fn compile<G: From<AwsRetryQuotaConfig>>(
    cx: &mut Compile<G>,
    path: &FieldPath,
    raw: &RawTable,
) -> Result<(), ScenarioError> {
    let t: AwsTable = read_table(cx.source, path, raw)?;
    let d = AwsRetryQuotaConfig::default();
    let c = AwsRetryQuotaConfig {
        initial_retry_tokens: t.initial_retry_tokens.unwrap_or(d.initial_retry_tokens),
        retry_cost: t.retry_cost.unwrap_or(d.retry_cost),
        timeout_retry_cost: t.timeout_retry_cost.unwrap_or(d.timeout_retry_cost),
        no_retry_increment: t.no_retry_increment.unwrap_or(d.no_retry_increment),
    };
    add(cx, path, (t.scope.as_deref(), &t.dependency), c, c.check())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: AttemptEnd = AttemptEnd { failure: None, duration_us: 1_000 };
    const OVERLOADED: AttemptEnd = AttemptEnd { failure: Some(FailureKind::Overloaded), duration_us: 1_000 };

    fn aws() -> AwsRetryQuota {
        AwsRetryQuota::new(AwsRetryQuotaConfig::default()).unwrap()
    }

    fn acquire_all(q: &mut AwsRetryQuota, after: FailureKind) -> u32 {
        let mut n = 0;
        while q.acquire(Some(after)).is_some() {
            n += 1;
        }
        n
    }

    #[test]
    fn aws_capacity_allows_100_retries_or_50_timeout_retries() {
        let mut q = aws();
        assert_eq!(acquire_all(&mut q, FailureKind::Overloaded), 100);
        assert_eq!(q.available(), 0);
        let mut q = aws();
        assert_eq!(acquire_all(&mut q, FailureKind::TransientTransport), 50);
        let mut q = aws();
        assert_eq!(acquire_all(&mut q, FailureKind::EffectUnknown), 50);
        let mut q = aws();
        assert_eq!(q.acquire(None), Some(RetryCharge(5)), "a hedge pays the plain cost");
    }

    #[test]
    fn aws_short_quota_takes_nothing() {
        let mut q = aws();
        for _ in 0..99 {
            q.acquire(Some(FailureKind::RateLimited));
        }
        assert_eq!(q.available(), 5);
        assert_eq!(q.acquire(Some(FailureKind::TransientTransport)), None);
        assert_eq!(q.available(), 5);
        assert_eq!(q.acquire(Some(FailureKind::RateLimited)), Some(RetryCharge(5)));
    }

    #[test]
    fn aws_refunds_follow_the_sdk() {
        let mut q = aws();
        q.on_attempt_end(Attempt::First, OK);
        assert_eq!(q.available(), 500, "never above capacity");
        let small = q.acquire(Some(FailureKind::Overloaded)).unwrap();
        let large = q.acquire(Some(FailureKind::TransientTransport)).unwrap();
        assert_eq!(q.available(), 485);
        q.on_attempt_end(Attempt::Retry(large), OVERLOADED);
        assert_eq!(q.available(), 485, "a failure refunds nothing");
        q.on_attempt_end(Attempt::First, OK);
        assert_eq!(q.available(), 486, "a success without retry returns 1");
        q.on_attempt_end(Attempt::Retry(large), OK);
        assert_eq!(q.available(), 496, "a successful retry returns what it cost");
        q.on_attempt_end(Attempt::Retry(small), OK);
        assert_eq!(q.available(), 500, "capped at capacity");
    }

    #[test]
    fn aws_config_is_checked() {
        let bad = AwsRetryQuotaConfig { timeout_retry_cost: 0, ..Default::default() };
        assert_eq!(bad.check().unwrap_err().field, "timeout_retry_cost");
    }
}
