//! The states of a circuit breaker (resilience4j and Polly use the same three); the names are as
//! in `breaker.<label>.time_in_state_s.<name>`.

crate::named_enum! {
    #[derive(PartialOrd, Ord)]
    pub enum BreakerState {
        Closed => "closed",
        Open => "open",
        HalfOpen => "half_open",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_follow_all() {
        for (i, s) in BreakerState::ALL.into_iter().enumerate() {
            assert_eq!(s.index(), i);
        }
    }
}
