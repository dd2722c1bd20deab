//! Virtual time is an integer count of microseconds, so event order never depends on float rounding.

/// A point or span of virtual time, in microseconds.
pub type Micros = u64;

pub const US_PER_MS: u64 = 1_000;
pub const US_PER_S: u64 = 1_000_000;

/// The largest span any single value may have (about 36 000 years). Clamping every converted
/// duration here means `now + span` can never overflow: simulated time stays below 2^62.
pub const MAX_SPAN_US: Micros = 1 << 60;

/// Converts milliseconds (as written in scenarios) to microseconds, rounding to the nearest tick.
/// Negative and non-finite inputs clamp to zero, huge ones to [`MAX_SPAN_US`]: callers validate
/// ranges before they get here.
/// A positive value never rounds down to zero (which would mean "none" for a timeout): it
/// becomes at least one microsecond.
pub fn ms_to_us(ms: f64) -> Micros {
    if ms > 0.0 {
        let us = (ms * US_PER_MS as f64).round();
        if us >= MAX_SPAN_US as f64 { MAX_SPAN_US } else { (us as u64).max(1) }
    } else {
        0
    }
}

pub fn s_to_us(s: f64) -> Micros {
    ms_to_us(s * 1_000.0)
}

pub fn us_to_ms(us: Micros) -> f64 {
    us as f64 / US_PER_MS as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_round_to_nearest_microsecond() {
        assert_eq!(ms_to_us(1.0), 1_000);
        assert_eq!(ms_to_us(0.0004), 1, "positive values stay positive");
        assert_eq!(ms_to_us(0.0), 0);
        assert_eq!(ms_to_us(0.0016), 2);
        assert_eq!(ms_to_us(-5.0), 0);
        assert_eq!(ms_to_us(f64::NAN), 0);
        assert_eq!(ms_to_us(1e300), MAX_SPAN_US);
        assert_eq!(ms_to_us(f64::INFINITY), MAX_SPAN_US, "an infinite sampled service time is as long as can be");
        assert_eq!(s_to_us(2.5), 2_500_000);
        assert_eq!(us_to_ms(1_500), 1.5);
    }
}
