//! The states of a circuit breaker (resilience4j and Polly use the same three).

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum BreakerState {
    Closed,
    Open,
    HalfOpen,
}

impl BreakerState {
    pub const COUNT: usize = 3;
    pub const ALL: [BreakerState; Self::COUNT] = [BreakerState::Closed, BreakerState::Open, BreakerState::HalfOpen];

    pub fn index(self) -> usize {
        self as usize
    }

    /// As in `breaker.<key>.time_in_state_s.<name>`.
    pub fn name(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half_open",
        }
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
