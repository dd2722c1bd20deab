//! The four shared budgets of a root run (docs/essay.md section 5): deadline, retry tokens,
//! concurrency tokens and cost units. A new attempt is allowed only if all of them hold.

use crate::sim::Micros;
use crate::vocab::BudgetKind;

/// The budget limits a policy sets; `None` means unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BudgetLimits {
    pub retry_tokens: Option<u32>,
    pub concurrency_tokens: Option<u32>,
    pub cost_units: Option<f64>,
}

/// What one root run has left.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunBudget {
    pub deadline_at: Micros,
    pub retry_tokens_left: u32,
    pub concurrency_limit: u32,
    pub in_flight: u32,
    pub cost_limit: f64,
    pub cost_used: f64,
}

impl RunBudget {
    pub fn new(limits: &BudgetLimits, deadline_at: Micros) -> Self {
        RunBudget {
            deadline_at,
            retry_tokens_left: limits.retry_tokens.unwrap_or(u32::MAX),
            concurrency_limit: limits.concurrency_tokens.unwrap_or(u32::MAX),
            in_flight: 0,
            cost_limit: limits.cost_units.unwrap_or(f64::INFINITY),
            cost_used: 0.0,
        }
    }

    pub fn remaining_us(&self, now: Micros) -> Micros {
        self.deadline_at.saturating_sub(now)
    }

    pub fn has_retry_token(&self) -> bool {
        self.retry_tokens_left > 0
    }

    pub fn has_concurrency_slot(&self) -> bool {
        self.in_flight < self.concurrency_limit
    }

    pub fn cost_fits(&self, cost: f64) -> bool {
        self.cost_used + cost <= self.cost_limit + 1e-9
    }

    /// Whether a new attempt costing `cost` fits every budget; names the one it exceeds (time
    /// is checked by the caller, which knows the timeout arithmetic). Spends nothing, so a
    /// guard further on may still refuse the attempt for free.
    pub fn check_attempt(&self, is_retry: bool, cost: f64) -> Result<(), BudgetKind> {
        if is_retry && !self.has_retry_token() {
            return Err(BudgetKind::Retry);
        }
        if !self.cost_fits(cost) {
            return Err(BudgetKind::Cost);
        }
        Ok(())
    }

    /// Spends the retry token of a retry just decided (the decision saw one left).
    pub fn take_retry_token(&mut self) {
        debug_assert!(self.has_retry_token(), "a retry is decided only with a token left");
        self.retry_tokens_left = self.retry_tokens_left.saturating_sub(1);
    }

    /// Spends what an admitted attempt costs: a hedge (`is_retry`) also spends a retry token.
    pub fn spend(&mut self, is_retry: bool, cost: f64) {
        debug_assert!(self.check_attempt(is_retry, cost).is_ok(), "spend only what was checked");
        if is_retry {
            self.retry_tokens_left = self.retry_tokens_left.saturating_sub(1);
        }
        self.cost_used += cost;
    }

    /// [`RunBudget::check_attempt`], then [`RunBudget::spend`].
    pub fn admit_attempt(&mut self, is_retry: bool, cost: f64) -> Result<(), BudgetKind> {
        self.check_attempt(is_retry, cost)?;
        self.spend(is_retry, cost);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_spend_tokens_and_cost_until_exhausted() {
        let limits = BudgetLimits { retry_tokens: Some(1), concurrency_tokens: Some(2), cost_units: Some(10.0) };
        let mut b = RunBudget::new(&limits, 5_000);
        assert_eq!(b.admit_attempt(false, 4.0), Ok(()));
        assert_eq!(b.admit_attempt(true, 4.0), Ok(()));
        assert_eq!(b.retry_tokens_left, 0);
        assert_eq!(b.admit_attempt(true, 1.0), Err(BudgetKind::Retry));
        assert_eq!(b.admit_attempt(false, 3.0), Err(BudgetKind::Cost), "8 + 3 > 10");
        assert_eq!(b.admit_attempt(false, 2.0), Ok(()), "exactly at the limit is allowed");
        assert_eq!(b.cost_used, 10.0);
        assert_eq!(b.remaining_us(4_000), 1_000);
        assert_eq!(b.remaining_us(6_000), 0);
    }

    #[test]
    fn unlimited_budgets_never_refuse() {
        let mut b = RunBudget::new(&BudgetLimits::default(), 0);
        for _ in 0..1_000 {
            assert_eq!(b.admit_attempt(true, 1e6), Ok(()));
        }
        assert!(b.has_concurrency_slot());
    }
}
