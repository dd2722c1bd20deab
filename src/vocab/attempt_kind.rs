//! Why an attempt is made: the first try of a logical call, a retry after a failure, or a
//! hedge beside an attempt still out. Retries and hedges are what retry tokens and shared retry
//! budgets pay for.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptKind {
    First,
    Retry,
    Hedge,
}

impl AttemptKind {
    /// A retry or a hedge repeats work: it needs a retry token and passes retry budgets.
    pub fn is_repeat(self) -> bool {
        match self {
            AttemptKind::First => false,
            AttemptKind::Retry | AttemptKind::Hedge => true,
        }
    }
}
