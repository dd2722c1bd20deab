//! Sleep before a retry: none, constant or exponential (by any multiplier), with jitter none,
//! full, equal, decorrelated or randomized (formulas in docs/scenario.md 8.2 and
//! docs/references.md section 2).

use crate::sim::Micros;

crate::named_enum! {
    pub enum BackoffKind {
        None => "none",
        Constant => "constant",
        Exponential => "exponential",
    }
}

crate::named_enum! {
    pub enum Jitter {
        None => "none",
        /// uniform(0, capped)
        Full => "full",
        /// capped/2 + uniform(0, capped/2)
        Equal => "equal",
        /// min(cap, uniform(base, 3 * previous sleep)), starting at base
        Decorrelated => "decorrelated",
        /// uniform(capped (1 - f), capped (1 + f)): resilience4j's randomized wait
        /// (`randomizedWaitFactor`), gRPC's backoff jitter (f = 0.2)
        Randomized => "randomized",
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    pub kind: BackoffKind,
    pub base_us: Micros,
    pub max_us: Micros,
    pub jitter: Jitter,
    /// Exponential only: how much the cap grows from one retry to the next (2: it doubles).
    pub multiplier: f64,
    /// Randomized jitter only: the share of the cap a sleep may fall short of it or pass it by.
    pub randomization_factor: f64,
}

impl Backoff {
    pub const NONE: Backoff = Backoff {
        kind: BackoffKind::None,
        base_us: 0,
        max_us: 0,
        jitter: Jitter::None,
        multiplier: 2.0,
        randomization_factor: 0.0,
    };

    /// The sleeps' cap for `kind`, `base_us` and `max_us`, doubling, without jitter.
    pub const fn doubling(kind: BackoffKind, base_us: Micros, max_us: Micros, jitter: Jitter) -> Backoff {
        Backoff { kind, base_us, max_us, jitter, multiplier: 2.0, randomization_factor: 0.0 }
    }

    /// The sleep before retry number `retry` (0 for the first retry). `previous_us` is the last
    /// sleep of this logical call (0 before the first), `u` a uniform draw in [0, 1).
    pub fn sleep_us(&self, retry: u32, previous_us: Micros, u: f64) -> Micros {
        let capped = match self.kind {
            BackoffKind::None => return 0,
            BackoffKind::Constant => self.base_us,
            // Doubling keeps its exact integer arithmetic; other multipliers work in floats.
            BackoffKind::Exponential if self.multiplier == 2.0 => {
                let factor = 1u64.checked_shl(retry.min(63)).unwrap_or(u64::MAX);
                self.base_us.saturating_mul(factor).min(self.max_us)
            }
            BackoffKind::Exponential => {
                let grown = self.base_us as f64 * self.multiplier.powi(retry.min(i32::MAX as u32) as i32);
                crate::sim::round_u64(grown.min(self.max_us as f64))
            }
        };
        let capped_f = capped as f64;
        let sleep = match self.jitter {
            Jitter::None => capped_f,
            Jitter::Full => u * capped_f,
            Jitter::Equal => capped_f / 2.0 + u * capped_f / 2.0,
            Jitter::Decorrelated => {
                let base = self.base_us as f64;
                let previous = if previous_us == 0 { base } else { previous_us as f64 };
                let high = (3.0 * previous).max(base);
                (base + u * (high - base)).min(self.max_us.max(self.base_us) as f64)
            }
            Jitter::Randomized => {
                let delta = self.randomization_factor * capped_f;
                capped_f - delta + u * 2.0 * delta
            }
        };
        crate::sim::round_u64(sleep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(jitter: Jitter) -> Backoff {
        Backoff::doubling(BackoffKind::Exponential, 100, 1_000, jitter)
    }

    #[test]
    fn a_multiplier_grows_the_cap_by_its_factor_until_the_cap() {
        let b = Backoff { multiplier: 1.5, ..Backoff::doubling(BackoffKind::Exponential, 1_000, 4_000, Jitter::None) };
        let sleeps: Vec<_> = (0..6).map(|r| b.sleep_us(r, 0, 0.5)).collect();
        assert_eq!(sleeps, vec![1_000, 1_500, 2_250, 3_375, 4_000, 4_000]);
        assert_eq!(b.sleep_us(u32::MAX, 0, 0.5), 4_000, "no overflow for huge retry numbers");
        // A multiplier of 2 written as a float is the doubling path, to the microsecond.
        let doubling = Backoff { multiplier: 2.0, ..b };
        assert_eq!(doubling.sleep_us(2, 0, 0.5), 4_000);
        let shrinking = Backoff { multiplier: 0.5, ..b };
        assert_eq!(shrinking.sleep_us(2, 0, 0.5), 250);
    }

    #[test]
    fn randomized_jitter_spans_the_factor_either_side_of_the_cap() {
        let b = Backoff {
            randomization_factor: 0.5,
            ..Backoff::doubling(BackoffKind::Constant, 1_000, 0, Jitter::Randomized)
        };
        assert_eq!([b.sleep_us(0, 0, 0.0), b.sleep_us(0, 0, 0.5), b.sleep_us(0, 0, 0.999_999)], [500, 1_000, 1_500]);
        let grpc = Backoff { randomization_factor: 0.2, ..b };
        assert_eq!([grpc.sleep_us(3, 0, 0.0), grpc.sleep_us(3, 0, 0.75)], [800, 1_100]);
    }

    #[test]
    fn exponential_doubles_until_the_cap() {
        let b = exp(Jitter::None);
        let sleeps: Vec<_> = (0..6).map(|r| b.sleep_us(r, 0, 0.5)).collect();
        assert_eq!(sleeps, vec![100, 200, 400, 800, 1_000, 1_000]);
        assert_eq!(b.sleep_us(200, 0, 0.5), 1_000, "no overflow for huge retry numbers");
    }

    #[test]
    fn jitter_formulas() {
        // retry 2: capped = 400
        assert_eq!(exp(Jitter::Full).sleep_us(2, 0, 0.25), 100);
        assert_eq!(exp(Jitter::Full).sleep_us(2, 0, 0.0), 0);
        assert_eq!(exp(Jitter::Equal).sleep_us(2, 0, 0.5), 300);
        assert_eq!(exp(Jitter::Equal).sleep_us(2, 0, 0.0), 200);
        // decorrelated: uniform(base, 3 * previous) capped at max
        assert_eq!(exp(Jitter::Decorrelated).sleep_us(0, 0, 0.5), 200); // uniform(100, 300)
        assert_eq!(exp(Jitter::Decorrelated).sleep_us(1, 200, 1.0), 600);
        assert_eq!(exp(Jitter::Decorrelated).sleep_us(2, 600, 1.0), 1_000);
        let constant = Backoff::doubling(BackoffKind::Constant, 500, 0, Jitter::None);
        assert_eq!(constant.sleep_us(7, 0, 0.9), 500);
        assert_eq!(Backoff::NONE.sleep_us(3, 0, 0.9), 0);
    }
}
