//! The failure kinds of essay section 8: the runtime's stable vocabulary for what went wrong.

use crate::scenario::ErrorMix;

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
    pub const ALL: [FailureKind; 10] = [
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

    /// The kinds a dependency can return as an error response (the first seven).
    pub const DRAWN: &[FailureKind] = Self::ALL.split_at(7).0;

    pub fn index(self) -> usize {
        self as usize
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

/// Per-attempt error probabilities as a cumulative table over [`FailureKind::DRAWN`], so one
/// uniform draw picks at most one kind.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ErrorTable {
    pub probabilities: [f64; 7],
}

impl ErrorTable {
    pub fn from_mix(mix: &ErrorMix) -> Self {
        ErrorTable {
            probabilities: [
                mix.invalid_input,
                mix.unauthorized,
                mix.rate_limited,
                mix.overloaded,
                mix.transient_transport,
                mix.permanent_provider,
                mix.result_invalid,
            ],
        }
    }

    /// Field names in the same order as `probabilities`, for validation messages.
    pub const FIELDS: [&'static str; 7] = [
        "invalid_input",
        "unauthorized",
        "rate_limited",
        "overloaded",
        "transient_transport",
        "permanent_provider",
        "result_invalid",
    ];

    pub fn total(&self) -> f64 {
        self.probabilities.iter().sum()
    }

    /// Adds another table's probabilities (a fault on top of the base mix).
    pub fn plus(&self, other: &ErrorTable) -> ErrorTable {
        let mut p = self.probabilities;
        for (a, b) in p.iter_mut().zip(other.probabilities.iter()) {
            *a += b;
        }
        ErrorTable { probabilities: p }
    }

    /// Maps a uniform draw to an error kind, or None for a good response.
    #[inline]
    pub fn pick(&self, u: f64) -> Option<FailureKind> {
        let mut acc = 0.0;
        for (p, kind) in self.probabilities.iter().zip(FailureKind::DRAWN.iter().copied()) {
            acc += p;
            if u < acc {
                return Some(kind);
            }
        }
        None
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

    #[test]
    fn one_draw_picks_kinds_by_cumulative_probability() {
        let t = ErrorTable::from_mix(&ErrorMix { overloaded: 0.1, transient_transport: 0.2, ..Default::default() });
        assert_eq!(t.pick(0.05), Some(FailureKind::Overloaded));
        assert_eq!(t.pick(0.25), Some(FailureKind::TransientTransport));
        assert_eq!(t.pick(0.31), None);
        assert!((t.total() - 0.3).abs() < 1e-12);
    }
}
