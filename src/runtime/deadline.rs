//! Deadline arithmetic (docs/essay.md sections 6 and 10): the attempt timeout under propagation and
//! whether a sleep before a retry still fits in the remaining time.

use crate::sim::Micros;

/// The shortest attempt worth starting; below it the budget counts as exhausted.
pub const MIN_ATTEMPT_US: Micros = 1_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptTimeout {
    /// Abandon the attempt after this long.
    After(Micros),
    /// Wait for the reply however long it takes.
    Never,
    /// Not enough time left: DEADLINE_EXHAUSTED, do not start.
    Exhausted,
}

/// With propagation: `min(step cap, remaining - downstream reserve)`. Without: the step's own
/// fixed cap, blind to the root deadline.
pub fn attempt_timeout(
    propagation: bool,
    cap_us: Option<Micros>,
    remaining_us: Micros,
    reserve_us: Micros,
) -> AttemptTimeout {
    if !propagation {
        return match cap_us {
            Some(cap) => AttemptTimeout::After(cap),
            None => AttemptTimeout::Never,
        };
    }
    let available = remaining_us.saturating_sub(reserve_us);
    let timeout = cap_us.map_or(available, |cap| cap.min(available));
    if timeout < MIN_ATTEMPT_US { AttemptTimeout::Exhausted } else { AttemptTimeout::After(timeout) }
}

/// `sleep + predicted attempt time + reserve < remaining` (docs/essay.md section 10).
pub fn retry_fits(sleep_us: Micros, predicted_attempt_us: Micros, reserve_us: Micros, remaining_us: Micros) -> bool {
    sleep_us.saturating_add(predicted_attempt_us).saturating_add(reserve_us) < remaining_us
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn propagation_clips_the_cap_to_what_is_left() {
        assert_eq!(attempt_timeout(true, Some(3_000_000), 7_400_000, 2_500_000), AttemptTimeout::After(3_000_000));
        assert_eq!(attempt_timeout(true, Some(3_000_000), 4_000_000, 2_500_000), AttemptTimeout::After(1_500_000));
        assert_eq!(attempt_timeout(true, None, 4_000_000, 0), AttemptTimeout::After(4_000_000));
        assert_eq!(attempt_timeout(true, Some(3_000_000), 2_000_000, 2_500_000), AttemptTimeout::Exhausted);
        assert_eq!(
            attempt_timeout(true, Some(3_000_000), 2_500_500, 2_500_000),
            AttemptTimeout::Exhausted,
            "below the minimum"
        );
    }

    #[test]
    fn without_propagation_the_cap_ignores_the_deadline() {
        assert_eq!(attempt_timeout(false, Some(30_000_000), 0, 5_000_000), AttemptTimeout::After(30_000_000));
        assert_eq!(attempt_timeout(false, None, 0, 0), AttemptTimeout::Never);
    }

    #[test]
    fn the_essay_retry_after_example_does_not_fit() {
        // retry_after 5000 ms, remaining 4300 ms, predicted attempt 1700 ms -> NO_RETRY
        assert!(!retry_fits(5_000_000, 1_700_000, 0, 4_300_000));
        assert!(retry_fits(1_000_000, 1_700_000, 1_000_000, 4_300_000));
        assert!(!retry_fits(1_000_000, 1_700_000, 1_600_000, 4_300_000), "equality is not enough");
    }
}
