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
    pub retry_token_limit: u32,
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
            retry_token_limit: limits.retry_tokens.unwrap_or(u32::MAX),
            concurrency_limit: limits.concurrency_tokens.unwrap_or(u32::MAX),
            in_flight: 0,
            cost_limit: limits.cost_units.unwrap_or(f64::INFINITY),
            cost_used: 0.0,
        }
    }

    pub fn remaining_us(&self, now: Micros) -> Micros {
        self.deadline_at.saturating_sub(now)
    }

    /// The one place that says whether a retry (or a hedge) may be paid for.
    pub fn has_retry_token(&self) -> bool {
        self.retry_tokens_left > 0
    }

    pub fn has_concurrency_slot(&self) -> bool {
        self.in_flight < self.concurrency_limit
    }

    fn cost_fits(&self, cost: f64) -> bool {
        self.cost_used + cost <= self.cost_limit + 1e-9
    }

    /// The one place a retry token is spent: a retry takes it when it is decided (so a sibling
    /// step deciding at the same time sees what is really left), a hedge as it is sent. A
    /// token taken for an attempt that never goes out comes back through
    /// [`RunBudget::return_retry_token`]: a refused attempt spends no token.
    pub fn take_retry_token(&mut self) {
        debug_assert!(self.has_retry_token(), "a token is taken only when one is left");
        self.retry_tokens_left = self.retry_tokens_left.saturating_sub(1);
    }

    /// Gives back a token taken for an attempt that was not sent.
    pub fn return_retry_token(&mut self) {
        debug_assert!(self.retry_tokens_left < self.retry_token_limit, "a token comes back only after it was taken");
        self.retry_tokens_left = self.retry_tokens_left.saturating_add(1).min(self.retry_token_limit);
    }

    /// Whether an attempt costing `cost` fits the cost budget (time is checked by the caller,
    /// which knows the timeout arithmetic; retry tokens by [`RunBudget::has_retry_token`]).
    pub fn check_cost(&self, cost: f64) -> Result<(), BudgetKind> {
        if self.cost_fits(cost) { Ok(()) } else { Err(BudgetKind::Cost) }
    }

    /// Spends what an admitted attempt costs.
    pub fn spend_cost(&mut self, cost: f64) {
        debug_assert!(self.cost_fits(cost), "spend only what was checked");
        debug_assert!(cost >= 0.0, "costs are never negative");
        self.cost_used += cost;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_cost_are_spent_until_exhausted() {
        let limits = BudgetLimits { retry_tokens: Some(1), concurrency_tokens: Some(2), cost_units: Some(10.0) };
        let mut b = RunBudget::new(&limits, 5_000);
        assert!(b.has_retry_token());
        b.take_retry_token();
        assert!(!b.has_retry_token());
        b.return_retry_token();
        assert!(b.has_retry_token(), "a token taken for an attempt never sent comes back");
        b.take_retry_token();
        assert_eq!(b.retry_tokens_left, 0);
        assert_eq!(b.check_cost(8.0), Ok(()));
        b.spend_cost(8.0);
        assert_eq!(b.check_cost(3.0), Err(BudgetKind::Cost), "8 + 3 > 10");
        assert_eq!(b.check_cost(2.0), Ok(()), "exactly at the limit is allowed");
        b.spend_cost(2.0);
        assert_eq!(b.cost_used, 10.0);
        assert_eq!(b.remaining_us(4_000), 1_000);
        assert_eq!(b.remaining_us(6_000), 0);
    }

    #[test]
    fn unlimited_budgets_never_refuse() {
        let mut b = RunBudget::new(&BudgetLimits::default(), 0);
        for _ in 0..1_000 {
            assert!(b.has_retry_token());
            b.take_retry_token();
            assert_eq!(b.check_cost(1e6), Ok(()));
            b.spend_cost(1e6);
        }
        b.return_retry_token();
        assert_eq!(b.retry_tokens_left, u32::MAX - 999);
        assert!(b.has_concurrency_slot());
    }
}
