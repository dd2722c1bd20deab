//! A continuously replenished token bucket, the one both a dependency's `rate_limit` and a
//! token-shaped model's quotas use: `level` tokens, refilled at `per_s` a second up to `capacity`.

use crate::sim::Micros;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenBucket {
    level: f64,
    last_us: Micros,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(capacity: f64) -> Self {
        TokenBucket { level: capacity, last_us: 0 }
    }

    /// Brings the level up to `now`.
    pub fn refill(&mut self, now: Micros, per_s: f64, capacity: f64) {
        let elapsed_s = now.saturating_sub(self.last_us) as f64 / 1e6;
        self.level = (self.level + elapsed_s * per_s).min(capacity);
        self.last_us = self.last_us.max(now);
        assert!((0.0..=capacity).contains(&self.level), "a bucket holds 0..=capacity");
    }

    pub fn level(&self) -> f64 {
        self.level
    }

    /// Takes `n` if the bucket holds them (after `refill`).
    pub fn try_take(&mut self, n: f64) -> bool {
        let taken = self.level >= n;
        if taken {
            self.level -= n;
        }
        taken
    }

    /// Puts `n` back, up to `capacity`.
    pub fn give_back(&mut self, n: f64, capacity: f64) {
        self.level = (self.level + n).min(capacity);
    }

    /// Microseconds until the bucket holds `n`, rounded up: a caller that waits exactly this
    /// long finds the tokens there.
    pub fn wait_us(&self, n: f64, per_s: f64) -> Micros {
        let wait_us = ((n - self.level).max(0.0) / per_s * 1e6).ceil();
        if wait_us >= Micros::MAX as f64 { Micros::MAX } else { (wait_us as Micros).max(1) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_refills_at_its_rate_and_caps_at_its_capacity() {
        let mut b = TokenBucket::new(2.0);
        let mut take = |now: Micros| {
            b.refill(now, 10.0, 2.0);
            b.try_take(1.0)
        };
        assert!(take(0));
        assert!(take(0));
        assert!(!take(0));
        assert!(!take(50_000)); // half a token
        assert!(take(100_000));
        assert!(take(10_000_000));
        assert!(take(10_000_000));
        assert!(!take(10_000_000)); // capped at 2
    }
}
