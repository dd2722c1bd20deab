//! Finagle's RetryBudget: a shared retry budget with its source's parameter names (docs/references.md
//! section 3), as a state machine over virtual time, a [`RetryBudgetMachine`] the pipeline
//! drives through [`Budget`], and its file table (`kind = "finagle"`).

use super::super::slice_ring::SliceRing;
use super::machine::{Attempt, Budget, RetryBudgetMachine, RetryCharge, add, budget_table};
use crate::runtime::guard::compile::{Compile, Invalid};
use crate::runtime::guard::contract::{AttemptEnd, GuardConfig};
use crate::scenario::{FieldPath, RawTable, ScenarioError, read_table};
use crate::sim::Micros;
use crate::sim::time::US_PER_S;
use crate::vocab::FailureKind;
use serde::{Deserialize, Serialize};

/// Finagle scales deposits by 1000 so that `percent_can_retry` works in integer tokens.
const FINAGLE_SCALE: f64 = 1_000.0;
/// Finagle's leaky bucket splits the ttl into 10 slices.
const FINAGLE_SLICES: usize = 10;

/// `RetryBudget(ttl, minRetriesPerSec, percentCanRetry)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FinagleRetryBudgetConfig {
    /// How long a deposit (and a withdrawal) counts; Finagle requires 1 s to 60 s.
    pub ttl_us: Micros,
    /// A reserve of `min_retries_per_s * ttl` retries per ttl, whatever the traffic.
    pub min_retries_per_s: u32,
    /// Retries allowed per request on top of the reserve (0.2 = one retry per five requests).
    pub percent_can_retry: f64,
}

impl Default for FinagleRetryBudgetConfig {
    fn default() -> Self {
        FinagleRetryBudgetConfig { ttl_us: 10 * US_PER_S, min_retries_per_s: 10, percent_can_retry: 0.2 }
    }
}

impl FinagleRetryBudgetConfig {
    pub fn check(&self) -> Result<(), Invalid> {
        if !(US_PER_S..=60 * US_PER_S).contains(&self.ttl_us) {
            return Err(Invalid::new("ttl_us", format!("ttl_us must be between 1 s and 60 s, got {} us", self.ttl_us)));
        }
        if !(0.0..=FINAGLE_SCALE).contains(&self.percent_can_retry) {
            return Err(Invalid::new(
                "percent_can_retry",
                format!("percent_can_retry must be in [0, 1000], got {}", self.percent_can_retry),
            ));
        }
        Ok(())
    }
}

/// Deposits per request and withdrawals per retry in one trailing window, plus a fixed reserve.
/// As in Finagle, withdrawals expire like deposits (the reserve thus renews every ttl), and a
/// deposit can expire before the withdrawals it paid for: the balance may then dip below zero
/// until those expire too.
#[derive(Debug, Clone)]
pub struct FinagleRetryBudget {
    window: SliceRing<1>,
    deposit: i64,
    withdrawal: i64,
    reserve: i64,
}

impl FinagleRetryBudget {
    pub fn new(config: FinagleRetryBudgetConfig) -> Result<Self, Invalid> {
        config.check()?;
        let (deposit, withdrawal) = Self::amounts_for(config.percent_can_retry);
        let ttl_s = (config.ttl_us / US_PER_S) as i64;
        let reserve = i64::from(config.min_retries_per_s).saturating_mul(ttl_s).saturating_mul(withdrawal);
        let window = SliceRing::new(config.ttl_us / FINAGLE_SLICES as u64, FINAGLE_SLICES);
        Ok(FinagleRetryBudget { window, deposit, withdrawal, reserve })
    }

    /// With no percentage, requests earn nothing and a retry costs one token of the reserve.
    /// Finagle truncates `1000 / percent` to an `Int`; the clamp keeps that range.
    fn amounts_for(percent: f64) -> (i64, i64) {
        if percent == 0.0 {
            return (0, 1);
        }
        (FINAGLE_SCALE as i64, ((FINAGLE_SCALE / percent) as i64).clamp(1, i64::from(i32::MAX)))
    }

    /// Each logical request deposits once (Finagle's RetryFilter deposits before the first try).
    pub fn on_request(&mut self, now: Micros) {
        if self.deposit > 0 {
            self.window.add(now, 0, self.deposit);
        }
    }

    fn try_withdraw(&mut self, now: Micros) -> bool {
        let ok = self.can_withdraw(now);
        if ok {
            self.window.add(now, 0, -self.withdrawal);
        }
        ok
    }

    fn can_withdraw(&mut self, now: Micros) -> bool {
        self.tokens(now) >= self.withdrawal
    }

    /// Retries that could be made now (negative while expired deposits leave withdrawals owing).
    pub fn balance(&mut self, now: Micros) -> i64 {
        self.tokens(now) / self.withdrawal
    }

    fn tokens(&mut self, now: Micros) -> i64 {
        self.window.total(now, 0).saturating_add(self.reserve)
    }
}

impl RetryBudgetMachine for FinagleRetryBudget {
    fn allows_retry(&mut self, now: Micros, _after: Option<FailureKind>) -> bool {
        self.can_withdraw(now)
    }

    fn spend_retry(&mut self, now: Micros, _after: Option<FailureKind>) -> Option<RetryCharge> {
        self.try_withdraw(now).then_some(RetryCharge::NONE)
    }

    /// Every request deposits; retries do not.
    fn on_attempt_start(&mut self, now: Micros, attempt: Attempt) {
        if !attempt.is_retry() {
            self.on_request(now);
        }
    }

    fn on_attempt_end(&mut self, _now: Micros, _attempt: Attempt, _end: AttemptEnd) {}

    /// Retries the balance allows now; a balance owing withdrawals reads 0. The ring's totals
    /// depend only on the events' times, so reading at a window's end decides nothing.
    fn level(&mut self, now: Micros) -> u64 {
        self.balance(now).max(0) as u64
    }
}

impl GuardConfig for FinagleRetryBudgetConfig {
    type Live = Budget<FinagleRetryBudget>;

    fn build(&self) -> Budget<FinagleRetryBudget> {
        Budget(FinagleRetryBudget::new(*self).expect("retry budget configurations are checked at compile time"))
    }
}

// ---------------------------------------------------------------------------------------------
// The file's table

budget_table!(
    /// `kind = "finagle"`: Finagle's RetryBudget.
    FinagleTable { ttl_ms: f64, min_retries_per_s: u32, percent_can_retry: f64, }
);

pub fn compile<G: From<FinagleRetryBudgetConfig>>(
    cx: &mut Compile<G>,
    path: &FieldPath,
    raw: &RawTable,
) -> Result<(), ScenarioError> {
    let t: FinagleTable = read_table(cx.source, path, raw)?;
    let d = FinagleRetryBudgetConfig::default();
    let c = FinagleRetryBudgetConfig {
        ttl_us: cx.duration(&path.key("ttl_ms"), t.ttl_ms, d.ttl_us)?,
        min_retries_per_s: t.min_retries_per_s.unwrap_or(d.min_retries_per_s),
        percent_can_retry: t.percent_can_retry.unwrap_or(d.percent_can_retry),
    };
    add(cx, path, (t.scope.as_deref(), &t.dependency), c, c.check())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finagle() -> FinagleRetryBudget {
        FinagleRetryBudget::new(FinagleRetryBudgetConfig::default()).unwrap()
    }

    fn withdraw_all(b: &mut FinagleRetryBudget, now: Micros) -> u32 {
        let mut n = 0;
        while b.try_withdraw(now) {
            n += 1;
        }
        n
    }

    #[test]
    fn finagle_defaults_scale_like_finagle() {
        let b = finagle();
        assert_eq!((b.deposit, b.withdrawal), (1_000, 5_000));
        assert_eq!(b.reserve, 10 * 10 * 5_000);
    }

    #[test]
    fn finagle_reserve_allows_min_retries_per_s_times_ttl() {
        let mut b = finagle();
        assert_eq!(b.balance(0), 100);
        assert_eq!(withdraw_all(&mut b, 0), 100);
        assert_eq!(b.balance(0), 0);
        assert!(!b.can_withdraw(9 * US_PER_S));
        assert_eq!(withdraw_all(&mut b, 10 * US_PER_S), 100, "withdrawals expire too: the reserve renews");
    }

    #[test]
    fn finagle_requests_add_percent_can_retry() {
        let mut b = finagle();
        for _ in 0..1_000 {
            b.on_request(0);
        }
        assert_eq!(b.balance(0), 300);
        assert_eq!(withdraw_all(&mut b, 0), 100 + 200);
    }

    #[test]
    fn finagle_deposits_expire_after_ttl() {
        let mut b = finagle();
        for _ in 0..1_000 {
            b.on_request(0);
        }
        assert_eq!(b.balance(10 * US_PER_S - 1), 300);
        assert_eq!(b.balance(10 * US_PER_S), 100);
    }

    #[test]
    fn finagle_withdrawals_outlive_the_deposits_that_paid_for_them() {
        let mut b = finagle();
        for _ in 0..1_000 {
            b.on_request(0);
        }
        assert_eq!(withdraw_all(&mut b, 5 * US_PER_S), 300);
        assert_eq!(b.balance(10 * US_PER_S), -200, "deposits gone, withdrawals still owed");
        assert!(!b.can_withdraw(10 * US_PER_S));
        assert_eq!(b.balance(15 * US_PER_S), 100);
    }

    #[test]
    fn finagle_without_reserve_or_percent_never_retries() {
        let config = FinagleRetryBudgetConfig { min_retries_per_s: 0, percent_can_retry: 0.0, ..Default::default() };
        let mut b = FinagleRetryBudget::new(config).unwrap();
        b.on_request(0);
        assert!(!b.try_withdraw(0));
        let config = FinagleRetryBudgetConfig { min_retries_per_s: 1, percent_can_retry: 0.0, ..Default::default() };
        let mut b = FinagleRetryBudget::new(config).unwrap();
        assert_eq!(withdraw_all(&mut b, 0), 10, "reserve only: one token per retry");
    }

    #[test]
    fn finagle_config_is_checked() {
        let bad = FinagleRetryBudgetConfig { ttl_us: US_PER_S / 2, ..Default::default() };
        assert_eq!(bad.check().unwrap_err().field, "ttl_us");
        let bad = FinagleRetryBudgetConfig { percent_can_retry: -0.1, ..Default::default() };
        assert_eq!(bad.check().unwrap_err().field, "percent_can_retry");
        let bad = FinagleRetryBudgetConfig { percent_can_retry: f64::NAN, ..Default::default() };
        assert_eq!(bad.check().unwrap_err().field, "percent_can_retry");
    }
}
