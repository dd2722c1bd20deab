//! Per-attempt error probabilities of a dependency over the failure kinds it can return.

use crate::scenario::ErrorMix;
use crate::vocab::FailureKind;

/// Per-attempt error probabilities as a cumulative table over [`FailureKind::DRAWN`], so one
/// uniform draw picks at most one kind.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ErrorTable {
    pub probabilities: [f64; FailureKind::DRAWN_COUNT],
    /// Some probability is above zero; kept beside them so that an attempt at a dependency
    /// that never fails neither draws nor walks the table.
    may_fail: bool,
}

impl ErrorTable {
    pub fn from_mix(mix: &ErrorMix) -> Self {
        Self::new([
            mix.invalid_input,
            mix.unauthorized,
            mix.rate_limited,
            mix.overloaded,
            mix.transient_transport,
            mix.permanent_provider,
            mix.result_invalid,
        ])
    }

    fn new(probabilities: [f64; FailureKind::DRAWN_COUNT]) -> Self {
        ErrorTable { probabilities, may_fail: probabilities.iter().any(|&p| p != 0.0) }
    }

    /// Field names in the same order as `probabilities`, for validation messages.
    pub const FIELDS: [&'static str; FailureKind::DRAWN_COUNT] = [
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
        // Probabilities are never negative, so a sum is above zero where a term is.
        ErrorTable { probabilities: p, may_fail: self.may_fail || other.may_fail }
    }

    /// Every probability is zero: no draw can pick a kind.
    #[inline]
    pub fn never_fails(&self) -> bool {
        !self.may_fail
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
    fn a_table_of_zeros_never_fails_and_one_above_zero_may() {
        let none = ErrorTable::from_mix(&ErrorMix::default());
        assert!(none.never_fails() && ErrorTable::default().never_fails());
        assert_eq!(none.pick(0.0), None, "never_fails agrees with pick");
        let some = ErrorTable::from_mix(&ErrorMix { result_invalid: 0.01, ..Default::default() });
        assert!(!some.never_fails());
        assert!(!none.plus(&some).never_fails() && !some.plus(&none).never_fails());
        assert!(none.plus(&none).never_fails());
    }

    #[test]
    fn one_draw_picks_kinds_by_cumulative_probability() {
        let t = ErrorTable::from_mix(&ErrorMix { overloaded: 0.1, transient_transport: 0.2, ..Default::default() });
        assert_eq!(t.pick(0.05), Some(FailureKind::Overloaded));
        assert_eq!(t.pick(0.25), Some(FailureKind::TransientTransport));
        assert_eq!(t.pick(0.31), None);
        assert!((t.total() - 0.3).abs() < 1e-12);
    }

    #[test]
    fn fields_name_the_drawn_kinds_in_order() {
        for (field, kind) in ErrorTable::FIELDS.iter().zip(FailureKind::DRAWN) {
            assert_eq!(*field, kind.metric_name());
        }
    }
}
