//! Sleep before a retry: none, constant or exponential, with jitter none, full, equal or
//! decorrelated (formulas in docs/references.md section 2).

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
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub kind: BackoffKind,
    pub base_us: Micros,
    pub max_us: Micros,
    pub jitter: Jitter,
}

impl Backoff {
    pub const NONE: Backoff = Backoff { kind: BackoffKind::None, base_us: 0, max_us: 0, jitter: Jitter::None };

    /// The sleep before retry number `retry` (0 for the first retry). `previous_us` is the last
    /// sleep of this logical call (0 before the first), `u` a uniform draw in [0, 1).
    pub fn sleep_us(&self, retry: u32, previous_us: Micros, u: f64) -> Micros {
        let capped = match self.kind {
            BackoffKind::None => return 0,
            BackoffKind::Constant => self.base_us,
            BackoffKind::Exponential => {
                let factor = 1u64.checked_shl(retry.min(63)).unwrap_or(u64::MAX);
                self.base_us.saturating_mul(factor).min(self.max_us)
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
        };
        crate::sim::round_u64(sleep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(jitter: Jitter) -> Backoff {
        Backoff { kind: BackoffKind::Exponential, base_us: 100, max_us: 1_000, jitter }
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
        let constant = Backoff { kind: BackoffKind::Constant, base_us: 500, max_us: 0, jitter: Jitter::None };
        assert_eq!(constant.sleep_us(7, 0, 0.9), 500);
        assert_eq!(Backoff::NONE.sleep_us(3, 0, 0.9), 0);
    }
}
