//! Per-attempt error probabilities of a dependency over the failure kinds it can return.

use crate::scenario::ErrorMix;
use crate::vocab::FailureKind;

/// Per-attempt error probabilities as a cumulative table over [`FailureKind::DRAWN`], so one
/// uniform draw picks at most one kind.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ErrorTable {
    pub probabilities: [f64; FailureKind::DRAWN_COUNT],
    /// The running sums of `probabilities`, in their order: the thresholds a draw is compared
    /// with. The last is the chance of any error, so most attempts need one comparison, and
    /// an attempt at a dependency that never fails needs no draw at all.
    cumulative: [f64; FailureKind::DRAWN_COUNT],
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
        let mut sum = 0.0;
        let cumulative = std::array::from_fn(|i| {
            sum += probabilities[i];
            sum
        });
        ErrorTable { probabilities, cumulative }
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

    /// The chance that an attempt fails with some kind: the last running sum.
    #[inline]
    pub fn total(&self) -> f64 {
        self.cumulative[FailureKind::DRAWN_COUNT - 1]
    }

    /// Adds another table's probabilities (a fault on top of the base mix).
    pub fn plus(&self, other: &ErrorTable) -> ErrorTable {
        let mut p = self.probabilities;
        for (a, b) in p.iter_mut().zip(other.probabilities.iter()) {
            *a += b;
        }
        Self::new(p)
    }

    /// Every probability is zero (none is negative): no draw can pick a kind.
    #[inline]
    pub fn never_fails(&self) -> bool {
        self.total() <= 0.0
    }

    /// Maps a uniform draw to an error kind, or None for a good response: the first kind
    /// whose running sum exceeds the draw. Running sums of non-negative terms never fall, so
    /// a draw at or above the last exceeds none.
    #[inline]
    pub fn pick(&self, u: f64) -> Option<FailureKind> {
        if u >= self.total() {
            return None;
        }
        self.cumulative.iter().position(|&sum| u < sum).map(|i| FailureKind::DRAWN[i])
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

    /// The table walk `pick` replaced: a running sum compared with the draw, kind by kind.
    fn pick_by_walking(t: &ErrorTable, u: f64) -> Option<FailureKind> {
        let mut acc = 0.0;
        for (p, &kind) in t.probabilities.iter().zip(FailureKind::DRAWN.iter()) {
            acc += p;
            if u < acc {
                return Some(kind);
            }
        }
        None
    }

    #[test]
    fn pick_agrees_with_walking_the_table_at_every_draw() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        for _ in 0..2_000 {
            // Sparse tables with some zeros, scaled to add up to at most 1.
            let raw: [f64; FailureKind::DRAWN_COUNT] = std::array::from_fn(|_| if next() < 0.4 { 0.0 } else { next() });
            let scale = next() / raw.iter().sum::<f64>().max(1.0);
            let base = ErrorTable::new(raw.map(|p| p * scale));
            let t = base.plus(&ErrorTable::new(raw.map(|p| p * scale * 0.1)));
            for table in [base, t] {
                let mut draws: Vec<f64> = (0..20).map(|_| next()).collect();
                draws.extend(table.cumulative); // exactly on every threshold
                draws.extend([0.0, 1.0 - f64::EPSILON]);
                for u in draws {
                    assert_eq!(table.pick(u), pick_by_walking(&table, u), "{table:?} at {u}");
                }
                assert_eq!(table.never_fails(), table.probabilities.iter().all(|&p| p == 0.0));
            }
        }
    }

    #[test]
    fn fields_name_the_drawn_kinds_in_order() {
        for (field, kind) in ErrorTable::FIELDS.iter().zip(FailureKind::DRAWN) {
            assert_eq!(*field, kind.metric_name());
        }
    }
}
