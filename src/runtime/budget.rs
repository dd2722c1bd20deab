//! The four shared budgets of a root run (docs/essay.md section 5): deadline, retry tokens,
//! concurrency tokens and cost (in cost units, model tokens and money, each with its own
//! limit). A new attempt is allowed only if all of them hold.

use crate::sim::Micros;
use crate::vocab::BudgetKind;

/// The budget limits a policy sets; `None` means unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BudgetLimits {
    pub retry_tokens: Option<u32>,
    pub concurrency_tokens: Option<u32>,
    pub cost_units: Option<f64>,
    /// Input plus output tokens of token-shaped model calls.
    pub model_tokens: Option<f64>,
    /// Money at the models' token prices.
    pub money: Option<f64>,
}

/// What one attempt costs against the cost budget: its dependency's cost units and, at a
/// token-shaped model, its tokens (input plus output, after max_output_tokens) and their price.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Spend {
    pub cost_units: f64,
    pub model_tokens: f64,
    pub money: f64,
}

impl Spend {
    pub fn units(cost_units: f64) -> Spend {
        Spend { cost_units, model_tokens: 0.0, money: 0.0 }
    }
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
    /// Limits in model tokens and money, only when the policy sets one (most runs never pay
    /// for tracking them).
    pub tokens_and_money: Option<TokensAndMoney>,
}

/// What a run may spend and has spent in model tokens and money (unlimited is infinite).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokensAndMoney {
    pub model_token_limit: f64,
    pub model_tokens_used: f64,
    pub money_limit: f64,
    pub money_used: f64,
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
            tokens_and_money: (limits.model_tokens.is_some() || limits.money.is_some()).then(|| TokensAndMoney {
                model_token_limit: limits.model_tokens.unwrap_or(f64::INFINITY),
                model_tokens_used: 0.0,
                money_limit: limits.money.unwrap_or(f64::INFINITY),
                money_used: 0.0,
            }),
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

    /// Whether the budget limits model tokens or money: only then is an attempt's token
    /// spend worked out (drawing its counts costs a little).
    pub fn limits_tokens_or_money(&self) -> bool {
        self.tokens_and_money.is_some()
    }

    fn cost_fits(&self, spend: Spend) -> bool {
        self.cost_used + spend.cost_units <= self.cost_limit + 1e-9
            && self.tokens_and_money.is_none_or(|t| {
                t.model_tokens_used + spend.model_tokens <= t.model_token_limit + 1e-6
                    && t.money_used + spend.money <= t.money_limit + 1e-9 * t.money_limit.max(1.0)
            })
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

    /// Whether an attempt costing `spend` fits the cost budget (time is checked by the caller,
    /// which knows the timeout arithmetic; retry tokens by [`RunBudget::has_retry_token`]).
    pub fn check_cost(&self, spend: Spend) -> Result<(), BudgetKind> {
        if self.cost_fits(spend) { Ok(()) } else { Err(BudgetKind::Cost) }
    }

    /// Gives back what [`RunBudget::spend_cost`] took for an attempt that was not sent after
    /// all (a charged SDK retry stopped in its sleep).
    pub fn return_cost(&mut self, spend: Spend) {
        self.cost_used = (self.cost_used - spend.cost_units).max(0.0);
        if let Some(t) = &mut self.tokens_and_money {
            t.model_tokens_used = (t.model_tokens_used - spend.model_tokens).max(0.0);
            t.money_used = (t.money_used - spend.money).max(0.0);
        }
    }

    /// Spends what an admitted attempt costs.
    pub fn spend_cost(&mut self, spend: Spend) {
        debug_assert!(self.cost_fits(spend), "spend only what was checked");
        self.charge(spend);
    }

    /// Spends what an attempt checked when it was sent costs now that it reaches its
    /// dependency (a cache's miss): steps sent together were checked apart, so this may pass
    /// the budget by what they spend together.
    pub fn charge(&mut self, spend: Spend) {
        debug_assert!(
            spend.cost_units >= 0.0 && spend.model_tokens >= 0.0 && spend.money >= 0.0,
            "costs are never negative"
        );
        self.cost_used += spend.cost_units;
        if let Some(t) = &mut self.tokens_and_money {
            t.model_tokens_used += spend.model_tokens;
            t.money_used += spend.money;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_and_cost_are_spent_until_exhausted() {
        let limits = BudgetLimits {
            retry_tokens: Some(1),
            concurrency_tokens: Some(2),
            cost_units: Some(10.0),
            ..BudgetLimits::default()
        };
        let mut b = RunBudget::new(&limits, 5_000);
        assert!(b.has_retry_token());
        b.take_retry_token();
        assert!(!b.has_retry_token());
        b.return_retry_token();
        assert!(b.has_retry_token(), "a token taken for an attempt never sent comes back");
        b.take_retry_token();
        assert_eq!(b.retry_tokens_left, 0);
        assert_eq!(b.check_cost(Spend::units(8.0)), Ok(()));
        b.spend_cost(Spend::units(8.0));
        assert_eq!(b.check_cost(Spend::units(3.0)), Err(BudgetKind::Cost), "8 + 3 > 10");
        assert_eq!(b.check_cost(Spend::units(2.0)), Ok(()), "exactly at the limit is allowed");
        b.spend_cost(Spend::units(2.0));
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
            let spend = Spend { cost_units: 1e6, model_tokens: 1e6, money: 1e6 };
            assert_eq!(b.check_cost(spend), Ok(()));
            b.spend_cost(spend);
        }
        b.return_retry_token();
        assert_eq!(b.retry_tokens_left, u32::MAX - 999);
        assert!(b.has_concurrency_slot());
    }

    #[test]
    fn tokens_and_money_have_their_own_limits() {
        let limits = BudgetLimits { model_tokens: Some(10_000.0), money: Some(0.05), ..BudgetLimits::default() };
        let mut b = RunBudget::new(&limits, 0);
        assert!(b.limits_tokens_or_money());
        let call = Spend { cost_units: 1.0, model_tokens: 4_000.0, money: 0.02 };
        b.spend_cost(call);
        b.spend_cost(call);
        // 12 000 tokens would pass the token limit; a cheaper call within it still fits.
        assert_eq!(b.check_cost(call), Err(BudgetKind::Cost));
        assert_eq!(b.check_cost(Spend { model_tokens: 2_000.0, money: 0.01, ..call }), Ok(()));
        // Money alone can refuse: 0.04 + 0.011 > 0.05.
        assert_eq!(b.check_cost(Spend { model_tokens: 1.0, money: 0.011, ..call }), Err(BudgetKind::Cost));
        // Cost units are unlimited here.
        assert_eq!(b.check_cost(Spend::units(1e9)), Ok(()));
        assert!(!RunBudget::new(&BudgetLimits::default(), 0).limits_tokens_or_money());
    }
}
