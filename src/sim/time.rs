//! Virtual time is an integer count of microseconds, so event order never depends on float rounding.

/// A point or span of virtual time, in microseconds.
pub type Micros = u64;

/// The order events fire in: by time, then by the sequence they were scheduled in (unique per
/// queue, so two events never tie). The one definition both the event heap and the timers use,
/// which keeps their merged order the order a single heap would give.
#[inline(always)]
pub fn fires_before(time: Micros, seq: u64, other_time: Micros, other_seq: u64) -> bool {
    // As one 128-bit key: a compare and a subtract-with-borrow, no branch on the time.
    (u128::from(time) << 64 | u128::from(seq)) < (u128::from(other_time) << 64 | u128::from(other_seq))
}

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
        let x = ms * US_PER_MS as f64;
        if x < TWO_POW_52 {
            return round_u64(x).max(1);
        }
        let us = x.round();
        if us >= MAX_SPAN_US as f64 { MAX_SPAN_US } else { (us as u64).max(1) }
    } else {
        0
    }
}

/// 2^52: from here on every f64 is a whole number.
const TWO_POW_52: f64 = 4_503_599_627_370_496.0;

/// Exactly `x.round() as u64` (halves away from zero, `as` saturating), without the library
/// call `round` is on targets without SSE4.1: below 2^52 the whole part and the fraction of
/// a non-negative float are exact, so comparing the fraction with one half decides.
#[inline]
pub fn round_u64(x: f64) -> u64 {
    if (0.0..TWO_POW_52).contains(&x) {
        // Through i64, exact in this range: x86-64 converts signed integers in one
        // instruction each way and unsigned ones in several.
        let whole = x as i64;
        // Added, not branched on: the fraction is as good as random, so a branch on it is
        // mispredicted half the time, and it waits for the float (often a logarithm) first.
        (whole + i64::from(x - whole as f64 >= 0.5)) as u64
    } else {
        x.round() as u64
    }
}

/// `us as f64`, the same value, through i64: one instruction on x86-64 instead of several
/// (it has no unsigned conversion before AVX-512). Exact for every span and time the
/// simulation holds, which stay below 2^62 (see [`MAX_SPAN_US`]).
#[inline(always)]
pub fn us_as_f64(us: Micros) -> f64 {
    debug_assert!(us < 1 << 63, "virtual time stays below 2^62");
    us as i64 as f64
}

pub fn s_to_us(s: f64) -> Micros {
    ms_to_us(s * 1_000.0)
}

pub fn us_to_ms(us: Micros) -> f64 {
    us as f64 / US_PER_MS as f64
}

/// Seconds from integer microseconds, divided once: 300 000 us is 0.3, where 3 x 0.1 s would
/// be 0.30000000000000004.
pub fn us_to_s(us: Micros) -> f64 {
    us as f64 / US_PER_S as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_starts_in_seconds_print_as_written() {
        let window_us = s_to_us(0.1);
        let starts: Vec<String> = (0..10).map(|row| format!("{}", us_to_s(row * window_us))).collect();
        assert_eq!(starts[3], "0.3", "not 3 x 0.1 = 0.30000000000000004");
        assert_eq!(starts[7], "0.7");
        assert_eq!(format!("{}", us_to_s(3 * s_to_us(0.1))), "0.3");
    }

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
        for us in [0, 1, 999, (1 << 53) + 1, MAX_SPAN_US - 1, MAX_SPAN_US, (1 << 62) + 12_345] {
            assert_eq!(us_as_f64(us).to_bits(), (us as f64).to_bits(), "{us}");
        }
        for x in [0.0, 0.49999999999999994, 0.5, 1.5, 2.5, 1e15 + 0.5, TWO_POW_52 - 0.5, TWO_POW_52, 1e300, -0.0] {
            assert_eq!(round_u64(x), x.round() as u64, "{x}");
        }
    }

    #[test]
    fn round_u64_is_round_then_cast() {
        let edges = [
            0.0,
            -0.0,
            0.49999999999999994,
            0.5,
            1.5,
            2.5,
            2.4999999999999996,
            1e15 + 0.5,
            4_503_599_627_370_495.5,
            4_503_599_627_370_496.0,
            9e18,
            1e30,
            -0.5,
            -3.7,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
        ];
        for x in edges {
            assert_eq!(round_u64(x), x.round() as u64, "{x}");
        }
        let mut s = crate::sim::StreamKey::root(1).stream();
        for i in 0..100_000 {
            let x = s.unit() * 10f64.powi(i % 17);
            assert_eq!(round_u64(x), x.round() as u64, "{x}");
        }
    }

    #[test]
    fn fires_before_is_the_order_of_time_then_sequence() {
        // Edges of both halves of the 128-bit key: a sequence with its top bit set must not
        // reach into the time's bits, nor a time near the 2^62 ceiling into the sequence's.
        let times = [0, 1, 2, (1 << 62) - 1, 1 << 62];
        let seqs = [0, 1, 2, (1 << 63) - 1, 1 << 63, u64::MAX - 1, u64::MAX];
        let stamps: Vec<(Micros, u64)> = times.iter().flat_map(|&t| seqs.iter().map(move |&q| (t, q))).collect();
        for &(t, q) in &stamps {
            for &(u, r) in &stamps {
                assert_eq!(fires_before(t, q, u, r), (t, q) < (u, r), "({t}, {q}) before ({u}, {r})");
            }
        }
    }
}
