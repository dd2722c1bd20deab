//! Fitting observed durations (or counts): lognormal, gamma and Weibull by maximum
//! likelihood, each judged by its Kolmogorov-Smirnov distance from the observations, and the
//! observations themselves when no family fits.

/// A fitted family and its parameters, in the units of the observations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Family {
    /// ln X ~ Normal(mu, sigma).
    LogNormal {
        mu: f64,
        sigma: f64,
    },
    Gamma {
        shape: f64,
        scale: f64,
    },
    Weibull {
        shape: f64,
        scale: f64,
    },
}

impl Family {
    pub fn name(&self) -> &'static str {
        match self {
            Family::LogNormal { .. } => "lognormal",
            Family::Gamma { .. } => "gamma",
            Family::Weibull { .. } => "weibull",
        }
    }

    pub fn cdf(&self, x: f64) -> f64 {
        if x <= 0.0 {
            return 0.0;
        }
        match *self {
            Family::LogNormal { mu, sigma } => normal_cdf((x.ln() - mu) / sigma),
            Family::Gamma { shape, scale } => gamma_p(shape, x / scale),
            Family::Weibull { shape, scale } => 1.0 - (-(x / scale).powf(shape)).exp(),
        }
    }

    pub fn quantile(&self, p: f64) -> f64 {
        match *self {
            Family::LogNormal { mu, sigma } => (mu + sigma * normal_quantile(p)).exp(),
            Family::Weibull { shape, scale } => scale * (-(1.0 - p).ln()).powf(1.0 / shape),
            Family::Gamma { shape, scale } => {
                // Bisection on the CDF: monotone, and a hundred steps reach the float's precision.
                let (mut lo, mut hi) = (0.0, scale * (shape + 40.0 * shape.sqrt() + 40.0));
                for _ in 0..200 {
                    let mid = 0.5 * (lo + hi);
                    if gamma_p(shape, mid / scale) < p { lo = mid } else { hi = mid }
                }
                0.5 * (lo + hi)
            }
        }
    }
}

/// A family fitted to observations with its distance from them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fitted {
    pub family: Family,
    /// Kolmogorov-Smirnov distance: the largest gap between the fitted and observed CDFs.
    pub ks: f64,
}

/// Values below this are taken as this (a duration of 0 has no logarithm).
const FLOOR: f64 = 1e-6;

/// Maximum-likelihood lognormal, gamma and Weibull fits of `sorted` (ascending, at least two
/// values), each with its KS distance.
pub fn fit_all(sorted: &[f64]) -> Vec<Fitted> {
    debug_assert!(sorted.windows(2).all(|w| w[0] <= w[1]), "sorted ascending");
    let logs: Vec<f64> = sorted.iter().map(|x| x.max(FLOOR).ln()).collect();
    let n = sorted.len() as f64;
    let mean_log = logs.iter().sum::<f64>() / n;
    let mut fits = Vec::new();
    let sd_log = (logs.iter().map(|l| (l - mean_log).powi(2)).sum::<f64>() / n).sqrt();
    if sd_log > 0.0 {
        fits.push(Family::LogNormal { mu: mean_log, sigma: sd_log });
    }
    if let Some(g) = fit_gamma(sorted, mean_log) {
        fits.push(g);
    }
    if let Some(w) = fit_weibull(sorted, &logs, mean_log) {
        fits.push(w);
    }
    fits.into_iter().map(|family| Fitted { family, ks: ks_distance(sorted, |x| family.cdf(x)) }).collect()
}

/// Gamma by maximum likelihood: the shape solves ln k - digamma(k) = ln(mean) - mean(ln x)
/// (Newton's method from Minka's closed-form start), the scale is mean / k.
fn fit_gamma(sorted: &[f64], mean_log: f64) -> Option<Family> {
    let mean = sorted.iter().map(|x| x.max(FLOOR)).sum::<f64>() / sorted.len() as f64;
    let s = mean.ln() - mean_log;
    if !(s.is_finite() && s > 1e-12) {
        return None;
    }
    let mut k = (3.0 - s + ((s - 3.0).powi(2) + 24.0 * s).sqrt()) / (12.0 * s);
    for _ in 0..50 {
        let step = (k.ln() - digamma(k) - s) / (1.0 / k - trigamma(k));
        let next = (k - step).max(k / 10.0);
        if (next - k).abs() < 1e-12 * k {
            k = next;
            break;
        }
        k = next;
    }
    (k.is_finite() && k > 0.0).then(|| Family::Gamma { shape: k, scale: mean / k })
}

/// Weibull by maximum likelihood: the shape solves sum x^k ln x / sum x^k - 1/k = mean(ln x)
/// (bisection on values scaled by their mean), the scale is (mean of x^k)^(1/k).
fn fit_weibull(sorted: &[f64], logs: &[f64], mean_log: f64) -> Option<Family> {
    let n = sorted.len() as f64;
    let unit = sorted.iter().map(|x| x.max(FLOOR)).sum::<f64>() / n;
    let scaled_logs: Vec<f64> = logs.iter().map(|l| l - unit.ln()).collect();
    let mean_scaled = mean_log - unit.ln();
    let g = |k: f64| {
        let (mut num, mut den) = (0.0, 0.0);
        for &l in &scaled_logs {
            let xk = (k * l).exp();
            num += xk * l;
            den += xk;
        }
        num / den - 1.0 / k - mean_scaled
    };
    let (mut lo, mut hi) = (0.01, 100.0);
    if g(lo) > 0.0 || g(hi) < 0.0 {
        return None;
    }
    for _ in 0..100 {
        let mid = (lo * hi).sqrt();
        if g(mid) < 0.0 { lo = mid } else { hi = mid }
    }
    let k = (lo * hi).sqrt();
    let mean_xk = scaled_logs.iter().map(|l| (k * l).exp()).sum::<f64>() / n;
    Some(Family::Weibull { shape: k, scale: unit * mean_xk.powf(1.0 / k) })
}

/// The Kolmogorov-Smirnov distance between the observations (ascending) and a CDF.
pub fn ks_distance(sorted: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    let n = sorted.len() as f64;
    let mut d: f64 = 0.0;
    for (i, &x) in sorted.iter().enumerate() {
        let f = cdf(x);
        d = d.max(f - i as f64 / n).max((i + 1) as f64 / n - f);
    }
    d
}

/// The 5 % critical value of the KS distance for `n` observations (1.36 / sqrt(n)): a fit
/// closer than this is not rejected. Conservative when the parameters were estimated from the
/// same data (Lilliefors), so a family that passes fits well.
pub fn ks_critical(n: usize) -> f64 {
    1.36 / (n as f64).sqrt()
}

/// The observed quantile p: the floor(p n)-th smallest value (what an empirical
/// distribution of these values draws).
pub fn observed_quantile(sorted: &[f64], p: f64) -> f64 {
    sorted[((p * sorted.len() as f64) as usize).min(sorted.len() - 1)]
}

fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// erfc by the Chebyshev fit of Numerical Recipes (relative error below 1.2e-7 everywhere).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

/// The standard normal quantile by Acklam's rational approximation (relative error 1.15e-9).
fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] =
        [7.784_695_709_041_462e-3, 3.224_671_290_700_398e-1, 2.445_134_137_142_996, 3.754_408_661_907_416];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.024_25 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.024_25 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

fn digamma(mut x: f64) -> f64 {
    let mut result = 0.0;
    while x < 6.0 {
        result -= 1.0 / x;
        x += 1.0;
    }
    let f = 1.0 / (x * x);
    result + x.ln() - 0.5 / x - f * (1.0 / 12.0 - f * (1.0 / 120.0 - f * (1.0 / 252.0 - f * (1.0 / 240.0 - f / 132.0))))
}

fn trigamma(mut x: f64) -> f64 {
    let mut result = 0.0;
    while x < 6.0 {
        result += 1.0 / (x * x);
        x += 1.0;
    }
    let f = 1.0 / (x * x);
    result + 1.0 / x + f / 2.0 + f / x * (1.0 / 6.0 - f * (1.0 / 30.0 - f * (1.0 / 42.0 - f / 30.0)))
}

fn ln_gamma(x: f64) -> f64 {
    // Lanczos, g = 7, n = 9.
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularized lower incomplete gamma function P(a, x): its series below a + 1, its
/// continued fraction (Lentz) above.
fn gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    let log_prefix = -x + a * x.ln() - ln_gamma(a);
    if x < a + 1.0 {
        let (mut sum, mut term, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..10_000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * 1e-15 {
                break;
            }
        }
        (sum.ln() + log_prefix).exp().min(1.0)
    } else {
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..10_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < 1e-15 {
                break;
            }
        }
        (1.0 - (log_prefix.exp() * h)).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_distr::{Distribution, Gamma, LogNormal, Weibull};

    fn sorted<D: Distribution<f64>>(d: D, n: usize) -> Vec<f64> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(42);
        let mut v: Vec<f64> = (0..n).map(|_| d.sample(&mut rng)).collect();
        v.sort_by(f64::total_cmp);
        v
    }

    fn best(fits: &[Fitted]) -> Fitted {
        *fits.iter().min_by(|a, b| a.ks.total_cmp(&b.ks)).unwrap()
    }

    /// 20 000 draws: a maximum-likelihood estimate is within a few percent (its standard error
    /// is about 1 / sqrt(n) of the parameter's scale, 0.7 %), and the true family is chosen.
    #[test]
    fn each_family_is_recovered_from_its_own_draws() {
        let n = 20_000;
        let lognormal = fit_all(&sorted(LogNormal::new(6.7, 0.55).unwrap(), n));
        let Family::LogNormal { mu, sigma } = best(&lognormal).family else { panic!("{lognormal:?}") };
        assert!((mu - 6.7).abs() < 0.02 && (sigma - 0.55).abs() < 0.02, "{mu} {sigma}");
        let gamma = fit_all(&sorted(Gamma::new(2.0, 50.0).unwrap(), n));
        let Family::Gamma { shape, scale } = best(&gamma).family else { panic!("{gamma:?}") };
        assert!((shape - 2.0).abs() < 0.08 && (scale - 50.0).abs() < 2.0, "{shape} {scale}");
        let weibull = fit_all(&sorted(Weibull::new(300.0, 1.5).unwrap(), n));
        let Family::Weibull { shape, scale } = best(&weibull).family else { panic!("{weibull:?}") };
        assert!((shape - 1.5).abs() < 0.04 && (scale - 300.0).abs() < 6.0, "{shape} {scale}");
        for fits in [&lognormal, &gamma, &weibull] {
            assert!(best(fits).ks < ks_critical(n), "the true family passes: {fits:?}");
        }
    }

    #[test]
    fn cdfs_and_quantiles_agree() {
        for family in [
            Family::LogNormal { mu: 6.0, sigma: 0.5 },
            Family::Gamma { shape: 2.5, scale: 40.0 },
            Family::Gamma { shape: 0.7, scale: 10.0 },
            Family::Weibull { shape: 1.5, scale: 300.0 },
        ] {
            for p in [0.01, 0.1, 0.5, 0.9, 0.99, 0.999] {
                let x = family.quantile(p);
                assert!((family.cdf(x) - p).abs() < 1e-6, "{family:?} p {p}: cdf(quantile) = {}", family.cdf(x));
            }
        }
        // Known values: P(1, x) = 1 - e^-x; the normal's 97.5 % point.
        assert!((gamma_p(1.0, 2.0) - (1.0 - (-2.0f64).exp())).abs() < 1e-12);
        assert!((normal_quantile(0.975) - 1.959_963_984_540_054).abs() < 1e-8);
        assert!((normal_cdf(1.959_963_984_540_054) - 0.975).abs() < 1e-7);
    }

    #[test]
    fn a_mixture_fails_every_family() {
        let mut v = sorted(LogNormal::new(4.0, 0.1).unwrap(), 5_000);
        v.extend(sorted(LogNormal::new(7.0, 0.1).unwrap(), 5_000));
        v.sort_by(f64::total_cmp);
        let fits = fit_all(&v);
        assert!(fits.iter().all(|f| f.ks > 5.0 * ks_critical(v.len())), "{fits:?}");
        assert_eq!(observed_quantile(&v, 0.25), v[2_500]);
    }
}
