//! Envoy's retry_budget: a shared retry budget with its source's parameter names (docs/references.md
//! section 3), as a state machine over virtual time, a [`RetryBudgetMachine`] the pipeline
//! drives through [`Budget`], and its file table (`kind = "envoy"`).

use super::machine::{Attempt, Budget, RetryBudgetMachine, RetryCharge, add, budget_table};
use crate::runtime::guard::compile::{Compile, Invalid};
use crate::runtime::guard::contract::{AttemptEnd, GuardConfig};
use crate::scenario::{FieldPath, RawTable, ScenarioError, read_table};
use crate::sim::Micros;
use crate::vocab::FailureKind;
use serde::{Deserialize, Serialize};

/// Envoy `RetryBudget`: `budget_percent`, `min_retry_concurrency`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnvoyRetryBudgetConfig {
    /// In percent, as Envoy's `Percent` type: 20.0 means a fifth of the active requests.
    pub budget_percent: f64,
    /// The limit on concurrent retries never drops below this, so quiet clusters can retry.
    pub min_retry_concurrency: u32,
}

impl Default for EnvoyRetryBudgetConfig {
    fn default() -> Self {
        EnvoyRetryBudgetConfig { budget_percent: 20.0, min_retry_concurrency: 3 }
    }
}

impl EnvoyRetryBudgetConfig {
    pub fn check(&self) -> Result<(), Invalid> {
        if !(0.0..=100.0).contains(&self.budget_percent) {
            return Err(Invalid::new(
                "budget_percent",
                format!("budget_percent must be in [0, 100], got {}", self.budget_percent),
            ));
        }
        Ok(())
    }
}

/// Concurrent retries against a share of the requests in flight. Envoy's active count covers
/// every upstream request, retries included; this model has no connection-pool queue, so its
/// pending requests are always zero. Envoy holds a retry's slot from the retry decision through
/// its backoff; here the slot is taken when the retry attempt starts, which needs no extra call
/// when a retry is abandoned during its backoff.
#[derive(Debug, Clone)]
pub struct EnvoyRetryBudget {
    config: EnvoyRetryBudgetConfig,
    active: u64,
    active_retries: u64,
}

impl EnvoyRetryBudget {
    pub fn new(config: EnvoyRetryBudgetConfig) -> Result<Self, Invalid> {
        config.check()?;
        Ok(EnvoyRetryBudget { config, active: 0, active_retries: 0 })
    }

    fn on_start(&mut self, is_retry: bool) {
        self.active += 1;
        if is_retry {
            self.active_retries += 1;
        }
        debug_assert!(self.active_retries <= self.active, "retries are a part of the active attempts");
    }

    pub fn on_end(&mut self, is_retry: bool) {
        debug_assert!(self.active > 0, "an attempt ended that never started");
        self.active = self.active.saturating_sub(1);
        if is_retry {
            debug_assert!(self.active_retries > 0, "a retry ended that never started");
            self.active_retries = self.active_retries.saturating_sub(1);
        }
        debug_assert!(self.active_retries <= self.active, "retries are a part of the active attempts");
    }

    /// Envoy converts the share to an integer by truncation before taking the floor.
    fn max_retries(&self) -> u64 {
        let share = (self.config.budget_percent / 100.0 * self.active as f64) as u64;
        share.max(u64::from(self.config.min_retry_concurrency))
    }

    pub fn allows_retry(&self) -> bool {
        self.active_retries < self.max_retries()
    }

    pub fn active(&self) -> u64 {
        self.active
    }

    pub fn active_retries(&self) -> u64 {
        self.active_retries
    }
}

impl RetryBudgetMachine for EnvoyRetryBudget {
    fn allows_retry(&mut self, _now: Micros, _after: Option<FailureKind>) -> bool {
        EnvoyRetryBudget::allows_retry(self)
    }

    fn spend_retry(&mut self, _now: Micros, _after: Option<FailureKind>) -> Option<RetryCharge> {
        EnvoyRetryBudget::allows_retry(self).then_some(RetryCharge::NONE)
    }

    fn on_attempt_start(&mut self, _now: Micros, attempt: Attempt) {
        self.on_start(attempt.is_retry());
    }

    fn on_attempt_end(&mut self, _now: Micros, attempt: Attempt, _end: AttemptEnd) {
        self.on_end(attempt.is_retry());
    }

    /// Retries that could start now: the limit on concurrent retries less those in flight.
    fn level(&mut self, _now: Micros) -> u64 {
        self.max_retries().saturating_sub(self.active_retries)
    }
}

impl GuardConfig for EnvoyRetryBudgetConfig {
    type Live = Budget<EnvoyRetryBudget>;

    fn build(&self) -> Budget<EnvoyRetryBudget> {
        Budget(EnvoyRetryBudget::new(*self).expect("retry budget configurations are checked at compile time"))
    }
}

// ---------------------------------------------------------------------------------------------
// The file's table

budget_table!(
    /// `kind = "envoy"`: Envoy's retry_budget circuit-breaker threshold.
    EnvoyTable { budget_percent: f64, min_retry_concurrency: u32, }
);

pub fn compile<G: From<EnvoyRetryBudgetConfig>>(
    cx: &mut Compile<G>,
    path: &FieldPath,
    raw: &RawTable,
) -> Result<(), ScenarioError> {
    let t: EnvoyTable = read_table(cx.source, path, raw)?;
    let d = EnvoyRetryBudgetConfig::default();
    let c = EnvoyRetryBudgetConfig {
        budget_percent: t.budget_percent.unwrap_or(d.budget_percent),
        min_retry_concurrency: t.min_retry_concurrency.unwrap_or(d.min_retry_concurrency),
    };
    add(cx, path, (t.scope.as_deref(), &t.dependency), c, c.check())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envoy_with(first: u32) -> EnvoyRetryBudget {
        let mut b = EnvoyRetryBudget::new(EnvoyRetryBudgetConfig::default()).unwrap();
        for _ in 0..first {
            b.on_start(false);
        }
        b
    }

    fn start_retries_while_allowed(b: &mut EnvoyRetryBudget) -> u64 {
        while EnvoyRetryBudget::allows_retry(b) {
            b.on_start(true);
        }
        b.active_retries()
    }

    #[test]
    fn envoy_low_traffic_gets_min_retry_concurrency() {
        let b = envoy_with(10);
        assert_eq!(b.max_retries(), 3, "10 active: 20 % is 2, the floor of 3 wins");
        let mut b = envoy_with(7);
        assert_eq!(start_retries_while_allowed(&mut b), 3);
        assert_eq!(b.active(), 10);
    }

    #[test]
    fn envoy_busy_traffic_gets_budget_percent() {
        let mut b = envoy_with(80);
        for _ in 0..20 {
            b.on_start(true);
        }
        assert_eq!((b.active(), b.max_retries()), (100, 20));
        assert!(!b.allows_retry(), "20 retries of 100 active requests is the whole budget");
        // Retries are active requests too, so 100 first attempts make room for 24 retries:
        // 20 % of 124 truncates to 24.
        let mut b = envoy_with(100);
        assert_eq!(b.max_retries(), 20);
        assert_eq!(start_retries_while_allowed(&mut b), 24);
    }

    #[test]
    fn envoy_ending_a_retry_frees_its_slot() {
        let mut b = envoy_with(10);
        start_retries_while_allowed(&mut b);
        b.on_end(true);
        assert!(b.allows_retry());
        assert_eq!(b.active(), 12);
    }

    #[test]
    fn envoy_config_is_checked() {
        let bad = EnvoyRetryBudgetConfig { budget_percent: 120.0, ..Default::default() };
        assert_eq!(bad.check().unwrap_err().field, "budget_percent");
    }
}
