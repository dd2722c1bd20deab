//! The four shared budgets of a root run (docs/essay.md section 5); the names are as in
//! `budget_exhausted_total.<name>`.

crate::named_enum! {
    #[derive(PartialOrd, Ord)]
    pub enum BudgetKind {
        Time => "time",
        Retry => "retry",
        Cost => "cost",
        Concurrency => "concurrency",
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
        assert_eq!(BudgetKind::COUNT, 4);
    }
}
