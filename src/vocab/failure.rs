//! The failure kinds of docs/essay.md section 8: the runtime's stable vocabulary for what went wrong.

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FailureKind {
    InvalidInput,
    Unauthorized,
    RateLimited,
    Overloaded,
    TransientTransport,
    PermanentProvider,
    ResultInvalid,
    EffectUnknown,
    DeadlineExhausted,
    Canceled,
}

impl FailureKind {
    pub const COUNT: usize = 10;
    pub const ALL: [FailureKind; Self::COUNT] = [
        FailureKind::InvalidInput,
        FailureKind::Unauthorized,
        FailureKind::RateLimited,
        FailureKind::Overloaded,
        FailureKind::TransientTransport,
        FailureKind::PermanentProvider,
        FailureKind::ResultInvalid,
        FailureKind::EffectUnknown,
        FailureKind::DeadlineExhausted,
        FailureKind::Canceled,
    ];

    /// How many kinds a dependency can return as an error response: the first ones in ALL.
    pub const DRAWN_COUNT: usize = 7;
    /// The kinds a dependency can return as an error response.
    pub const DRAWN: &[FailureKind] = Self::ALL.split_at(Self::DRAWN_COUNT).0;

    pub fn index(self) -> usize {
        self as usize
    }

    /// Security and contract errors: the request itself was at fault, so they say nothing
    /// about the dependency's health (docs/essay.md section 14). Breakers ignore them by default.
    pub fn is_request_fault(self) -> bool {
        match self {
            FailureKind::InvalidInput | FailureKind::Unauthorized => true,
            FailureKind::RateLimited
            | FailureKind::Overloaded
            | FailureKind::TransientTransport
            | FailureKind::PermanentProvider
            | FailureKind::ResultInvalid
            | FailureKind::EffectUnknown
            | FailureKind::DeadlineExhausted
            | FailureKind::Canceled => false,
        }
    }

    /// SCREAMING_CASE, as in the essay and in trace output.
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::InvalidInput => "INVALID_INPUT",
            FailureKind::Unauthorized => "UNAUTHORIZED",
            FailureKind::RateLimited => "RATE_LIMITED",
            FailureKind::Overloaded => "OVERLOADED",
            FailureKind::TransientTransport => "TRANSIENT_TRANSPORT",
            FailureKind::PermanentProvider => "PERMANENT_PROVIDER",
            FailureKind::ResultInvalid => "RESULT_INVALID",
            FailureKind::EffectUnknown => "EFFECT_UNKNOWN",
            FailureKind::DeadlineExhausted => "DEADLINE_EXHAUSTED",
            FailureKind::Canceled => "CANCELED",
        }
    }

    /// snake_case, as used in scenario fields and metric names.
    pub fn metric_name(self) -> &'static str {
        match self {
            FailureKind::InvalidInput => "invalid_input",
            FailureKind::Unauthorized => "unauthorized",
            FailureKind::RateLimited => "rate_limited",
            FailureKind::Overloaded => "overloaded",
            FailureKind::TransientTransport => "transient_transport",
            FailureKind::PermanentProvider => "permanent_provider",
            FailureKind::ResultInvalid => "result_invalid",
            FailureKind::EffectUnknown => "effect_unknown",
            FailureKind::DeadlineExhausted => "deadline_exhausted",
            FailureKind::Canceled => "canceled",
        }
    }

    /// Accepts either spelling.
    pub fn parse(text: &str) -> Option<FailureKind> {
        FailureKind::ALL.into_iter().find(|k| k.name() == text || k.metric_name() == text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in FailureKind::ALL {
            assert_eq!(FailureKind::parse(k.name()), Some(k));
            assert_eq!(FailureKind::parse(k.metric_name()), Some(k));
            assert_eq!(FailureKind::ALL[k.index()], k);
        }
        assert_eq!(FailureKind::parse("TIMEOUT"), None);
    }
}
