//! The four shared budgets of a root run (essay section 5).

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum BudgetKind {
    Time,
    Retry,
    Cost,
    Concurrency,
}

impl BudgetKind {
    pub const COUNT: usize = 4;
    pub const ALL: [BudgetKind; Self::COUNT] =
        [BudgetKind::Time, BudgetKind::Retry, BudgetKind::Cost, BudgetKind::Concurrency];

    pub fn index(self) -> usize {
        self as usize
    }

    /// As in `budget_exhausted_total.<name>`.
    pub fn name(self) -> &'static str {
        match self {
            BudgetKind::Time => "time",
            BudgetKind::Retry => "retry",
            BudgetKind::Cost => "cost",
            BudgetKind::Concurrency => "concurrency",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_follow_all() {
        for (i, b) in BudgetKind::ALL.into_iter().enumerate() {
            assert_eq!(b.index(), i);
        }
    }
}
