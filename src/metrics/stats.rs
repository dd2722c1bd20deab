//! Statistics across replications: means and Student-t 95 % confidence intervals, over
//! independent replications or over paired differences (same seeds, two policies).

use super::MetricMap;
use super::range::Range;
use std::collections::BTreeMap;

/// Two-sided 97.5 % quantile of Student's t with `df` degrees of freedom.
pub fn t_quantile_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df - 1],
        // Cornish-Fisher expansion around the normal quantile; error < 1e-3 past 30 df.
        _ => {
            let z: f64 = 1.959_963_984_540_054;
            let d = df as f64;
            z + (z.powi(3) + z) / (4.0 * d) + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * d * d)
        }
    }
}

/// Mean and 95 % interval of one metric; NaN values (undefined ratios) are left out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub mean: f64,
    pub low: f64,
    pub high: f64,
    pub n: usize,
}

impl Estimate {
    /// The interval clipped to the values the metric can take. The mean lies in that range, so
    /// the clipped interval holds the mean whenever the Student-t one does: it is as confident
    /// and never wider.
    pub fn within(self, range: Range) -> Estimate {
        Estimate { low: range.clip(self.low), high: range.clip(self.high), ..self }
    }

    /// Whether [`Estimate::within`] moves a bound.
    pub fn leaves(self, range: Range) -> bool {
        (!self.low.is_nan() && !range.contains(self.low)) || (!self.high.is_nan() && !range.contains(self.high))
    }
}

pub fn estimate(values: impl Iterator<Item = f64>) -> Estimate {
    let xs: Vec<f64> = values.filter(|v| !v.is_nan()).collect();
    let n = xs.len();
    if n == 0 {
        return Estimate { mean: f64::NAN, low: f64::NAN, high: f64::NAN, n };
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return Estimate { mean, low: f64::NAN, high: f64::NAN, n };
    }
    // Identical values have no spread; say so exactly rather than through rounding noise.
    let constant = xs.iter().all(|x| x.to_bits() == xs[0].to_bits());
    let var = if constant { 0.0 } else { xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64 };
    let mean = if constant { xs[0] } else { mean };
    let half = t_quantile_975(n - 1) * (var / n as f64).sqrt();
    Estimate { mean, low: mean - half, high: mean + half, n }
}

/// The difference of means `mean(b) - mean(a)` of two independent samples with Welch's 95 %
/// interval: unequal variances, Welch-Satterthwaite degrees of freedom rounded down (a wider,
/// conservative quantile). For runs on different seeds, where replication k of one has nothing
/// to do with replication k of the other; runs on the same seeds are compared on their paired
/// differences instead ([`estimate`] of `b[k] - a[k]`), which is narrower. NaN values are left
/// out; `n` is the number of values used on both sides. With fewer than two values on a side the
/// interval is unknown (NaN), with none the difference too.
pub fn welch_difference(a: &[f64], b: &[f64]) -> Estimate {
    let defined = |xs: &[f64]| -> Vec<f64> { xs.iter().copied().filter(|v| !v.is_nan()).collect() };
    let (a, b) = (defined(a), defined(b));
    let n = a.len() + b.len();
    let (ea, eb) = (estimate(a.iter().copied()), estimate(b.iter().copied()));
    let mean = eb.mean - ea.mean;
    if a.len() < 2 || b.len() < 2 {
        return Estimate { mean, low: f64::NAN, high: f64::NAN, n };
    }
    let share = |xs: &[f64], e: &Estimate| {
        let var = xs.iter().map(|x| (x - e.mean) * (x - e.mean)).sum::<f64>() / (xs.len() - 1) as f64;
        var / xs.len() as f64
    };
    // `estimate` says a constant sample has no spread exactly; so does this.
    let (sa, sb) =
        (if ea.low == ea.high { 0.0 } else { share(&a, &ea) }, if eb.low == eb.high { 0.0 } else { share(&b, &eb) });
    let se2 = sa + sb;
    if se2 == 0.0 {
        return Estimate { mean, low: mean, high: mean, n };
    }
    let df = se2 * se2 / (sa * sa / (a.len() - 1) as f64 + sb * sb / (b.len() - 1) as f64);
    let half = t_quantile_975((df.floor() as usize).max(1)) * se2.sqrt();
    Estimate { mean, low: mean - half, high: mean + half, n }
}

#[derive(Debug, Clone, Default)]
pub struct Aggregate {
    pub replications: usize,
    pub estimates: BTreeMap<String, Estimate>,
}

impl Aggregate {
    pub fn mean(&self, name: &str) -> Option<f64> {
        self.estimates.get(name).map(|e| e.mean)
    }
}

/// Aggregates replications in their given order (the order never changes a sum here because
/// every replication is reduced in index order by the caller).
pub fn aggregate(replications: &[MetricMap]) -> Aggregate {
    let mut estimates = BTreeMap::new();
    if let Some(first) = replications.first() {
        for name in first.keys() {
            let e = estimate(replications.iter().map(|r| r.get(name).copied().unwrap_or(f64::NAN)));
            estimates.insert(name.clone(), e);
        }
    }
    Aggregate { replications: replications.len(), estimates }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_table_and_tend_to_normal() {
        assert_eq!(t_quantile_975(1), 12.706);
        assert_eq!(t_quantile_975(9), 2.262);
        assert!((t_quantile_975(60) - 2.000).abs() < 2e-3);
        assert!((t_quantile_975(120) - 1.980).abs() < 2e-3);
        assert!((t_quantile_975(100_000) - 1.960).abs() < 1e-3);
    }

    #[test]
    fn interval_of_a_known_sample() {
        // mean 5, sample sd sqrt(2.5), n 5: half width 2.776 * sqrt(2.5 / 5) = 1.963
        let e = estimate([3.0, 4.0, 5.0, 6.0, 7.0].into_iter());
        assert_eq!(e.mean, 5.0);
        assert!((e.high - e.mean - 2.776 * 0.5f64.sqrt()).abs() < 1e-9);
        let single = estimate([2.0].into_iter());
        assert!(single.low.is_nan() && single.mean == 2.0);
        let same = estimate([30_015.5; 8].into_iter());
        assert_eq!((same.low, same.mean, same.high), (30_015.5, 30_015.5, 30_015.5));
        let with_nan = estimate([1.0, f64::NAN, 3.0].into_iter());
        assert_eq!((with_nan.mean, with_nan.n), (2.0, 2));
    }

    /// Welch's interval of a known pair of samples (computed by hand), and the two limits: equal
    /// constant samples differ by exactly their difference, one value on a side gives no interval.
    #[test]
    fn welch_difference_of_a_known_pair() {
        // a: mean 2, s^2 = 1, n 3; b: mean 6, s^2 = 4, n 5. se^2 = 1/3 + 4/5 = 1.1333;
        // df = 1.1333^2 / ((1/3)^2 / 2 + 0.8^2 / 4) = 1.2844 / 0.21556 = 5.96, rounded down to 5.
        let e = welch_difference(&[1.0, 2.0, 3.0], &[4.0, 4.0, 6.0, 8.0, 8.0]);
        assert_eq!((e.mean, e.n), (4.0, 8));
        let half = 2.571 * (1.0f64 / 3.0 + 0.8).sqrt();
        assert!((e.high - 4.0 - half).abs() < 1e-12 && (4.0 - e.low - half).abs() < 1e-12, "{e:?}");
        let same = welch_difference(&[0.5; 4], &[0.75, 0.75, f64::NAN]);
        assert_eq!((same.mean, same.low, same.high, same.n), (0.25, 0.25, 0.25, 6));
        let single = welch_difference(&[1.0], &[2.0, 3.0]);
        assert!(single.low.is_nan() && single.mean == 1.5);
    }

    #[test]
    fn an_interval_is_clipped_to_the_metrics_range() {
        // recovery_time_s over two replications, 0 and 105 s: 52.5 ±667, its lower bound far below 0.
        let e = estimate([0.0, 105.0].into_iter());
        assert!(e.low < 0.0 && e.leaves(Range::NON_NEGATIVE));
        let clipped = e.within(Range::NON_NEGATIVE);
        assert_eq!((clipped.low, clipped.mean, clipped.high, clipped.n), (0.0, e.mean, e.high, 2));
        assert!(!clipped.leaves(Range::NON_NEGATIVE));
        // A share near 1: the upper bound passes 1, the lower stays.
        let share = estimate([0.999, 1.0, 0.998, 1.0].into_iter());
        assert!(share.high > 1.0);
        let clipped = share.within(Range::FRACTION);
        assert_eq!((clipped.low, clipped.high), (share.low, 1.0));
        // Inside the range, and unknown, nothing moves.
        let inside = estimate([0.2, 0.3, 0.25, 0.22].into_iter());
        assert!(!inside.leaves(Range::NON_NEGATIVE) && inside.within(Range::NON_NEGATIVE) == inside);
        let single = estimate([2.0].into_iter()).within(Range::FRACTION);
        assert!(single.low.is_nan() && single.high.is_nan() && single.mean == 2.0);
    }
}
