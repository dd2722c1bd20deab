//! Service-time distributions. A scenario gives `{ p50_ms, p95_ms }` (a lognormal fit) or names a
//! `dist` with its parameters; sampling reads only the attempt's keyed stream, so the same
//! attempt gets the same quantile under every policy.

use crate::scenario::{ServiceTime, quote};
use crate::sim::KeyedStream;
use rand_distr::{Distribution as _, Gamma, Pareto, StandardNormal, Weibull};

/// z-score of the 95th percentile of the standard normal.
pub const Z95: f64 = 1.644_853_626_951_472_2;

#[derive(Debug, Clone)]
pub enum Distribution {
    Constant {
        value_ms: f64,
    },
    Exponential {
        mean_ms: f64,
    },
    /// ln(T) ~ Normal(mu, sigma), T in ms.
    LogNormal {
        mu: f64,
        sigma: f64,
    },
    Gamma {
        shape: f64,
        scale_ms: f64,
        sampler: Gamma<f64>,
    },
    Weibull {
        shape: f64,
        scale_ms: f64,
        sampler: Weibull<f64>,
    },
    Pareto {
        shape: f64,
        scale_ms: f64,
        sampler: Pareto<f64>,
    },
    Uniform {
        min_ms: f64,
        max_ms: f64,
    },
    /// A tabulated inverse CDF (a quantile table or a histogram): (quantile, value) points
    /// with quantiles non-decreasing, linear between points; below the first point the first
    /// value; beyond the last point, when its quantile is below 1, an exponential tail of mean
    /// `tail_mean_ms` above the last value.
    Table {
        points: Box<[(f64, f64)]>,
        tail_mean_ms: f64,
    },
    /// Observed values, sorted, each drawn with probability 1/n (resampling, no interpolation:
    /// what was never observed is never drawn). Shared, as a file may hold millions.
    Empirical {
        sorted_ms: std::sync::Arc<[f64]>,
        mean_ms: f64,
    },
}

impl Distribution {
    /// Builds a distribution from the scenario form, or says which parameter is wrong.
    /// The error is (field name, message).
    pub fn from_spec(spec: &ServiceTime) -> Result<Self, (&'static str, String)> {
        let kind = match (&spec.dist, spec.p50_ms, spec.p95_ms) {
            (Some(d), _, _) => d.as_str(),
            (None, Some(_), _) | (None, _, Some(_)) => "lognormal",
            (None, None, None) => {
                return Err(("dist", "give p50_ms and p95_ms (lognormal fit) or name a dist".into()));
            }
        };
        let allowed: &[&str] = match kind {
            "lognormal" => &["p50_ms", "p95_ms"],
            "exponential" => &["mean_ms"],
            "gamma" | "weibull" | "pareto" => &["shape", "scale_ms"],
            "uniform" => &["min_ms", "max_ms"],
            "constant" => &["value_ms"],
            "quantiles" => &["quantiles_ms", "min_ms"],
            "histogram" => &["le_ms", "cumulative_counts"],
            "empirical" => &["samples_ms", "samples_file"],
            other => {
                return Err((
                    "dist",
                    format!(
                        "unknown distribution {}; expected one of lognormal, exponential, gamma, weibull, pareto, uniform, constant, quantiles, histogram, empirical",
                        quote(other)
                    ),
                ));
            }
        };
        for (name, given) in [
            ("quantiles_ms", spec.quantiles_ms.is_some()),
            ("le_ms", spec.le_ms.is_some()),
            ("cumulative_counts", spec.cumulative_counts.is_some()),
            ("samples_ms", spec.samples_ms.is_some()),
            ("samples_file", spec.samples_file.is_some()),
        ] {
            if given && !allowed.contains(&name) {
                return Err((
                    field_static(name),
                    format!("`{name}` does not apply to dist = \"{kind}\" (it takes {})", allowed.join(", ")),
                ));
            }
        }
        match kind {
            "quantiles" => return quantile_table(spec),
            "histogram" => return histogram(spec),
            "empirical" => return empirical(spec),
            _ => {}
        }
        for (name, value) in [
            ("p50_ms", spec.p50_ms),
            ("p95_ms", spec.p95_ms),
            ("mean_ms", spec.mean_ms),
            ("shape", spec.shape),
            ("scale_ms", spec.scale_ms),
            ("min_ms", spec.min_ms),
            ("max_ms", spec.max_ms),
            ("value_ms", spec.value_ms),
        ] {
            if value.is_some() && !allowed.contains(&name) {
                return Err((
                    field_static(name),
                    format!("`{name}` does not apply to dist = \"{kind}\" (it takes {})", allowed.join(", ")),
                ));
            }
        }
        let need = |name: &'static str, v: Option<f64>| -> Result<f64, (&'static str, String)> {
            let v = v.ok_or((name, format!("dist = \"{kind}\" needs `{name}`")))?;
            if !v.is_finite() || v < 0.0 {
                return Err((name, format!("must be a finite number >= 0, got {v}")));
            }
            Ok(v)
        };
        let positive = |name: &'static str, v: Option<f64>| -> Result<f64, (&'static str, String)> {
            let v = need(name, v)?;
            if v <= 0.0 {
                return Err((name, format!("must be > 0, got {v}")));
            }
            Ok(v)
        };
        Ok(match kind {
            "lognormal" => {
                let p50 = positive("p50_ms", spec.p50_ms)?;
                let p95 = positive("p95_ms", spec.p95_ms)?;
                if p95 < p50 {
                    return Err(("p95_ms", format!("p95_ms ({p95}) must be at least p50_ms ({p50})")));
                }
                Distribution::LogNormal { mu: p50.ln(), sigma: (p95 / p50).ln() / Z95 }
            }
            "exponential" => Distribution::Exponential { mean_ms: positive("mean_ms", spec.mean_ms)? },
            "gamma" => {
                let (shape, scale_ms) = (positive("shape", spec.shape)?, positive("scale_ms", spec.scale_ms)?);
                let sampler = Gamma::new(shape, scale_ms).map_err(|e| ("shape", e.to_string()))?;
                Distribution::Gamma { shape, scale_ms, sampler }
            }
            "weibull" => {
                let (shape, scale_ms) = (positive("shape", spec.shape)?, positive("scale_ms", spec.scale_ms)?);
                let sampler = Weibull::new(scale_ms, shape).map_err(|e| ("shape", e.to_string()))?;
                Distribution::Weibull { shape, scale_ms, sampler }
            }
            "pareto" => {
                let (shape, scale_ms) = (positive("shape", spec.shape)?, positive("scale_ms", spec.scale_ms)?);
                let sampler = Pareto::new(scale_ms, shape).map_err(|e| ("shape", e.to_string()))?;
                Distribution::Pareto { shape, scale_ms, sampler }
            }
            "uniform" => {
                let (min_ms, max_ms) = (need("min_ms", spec.min_ms)?, need("max_ms", spec.max_ms)?);
                if max_ms < min_ms {
                    return Err(("max_ms", format!("max_ms ({max_ms}) must be at least min_ms ({min_ms})")));
                }
                Distribution::Uniform { min_ms, max_ms }
            }
            _ => Distribution::Constant { value_ms: need("value_ms", spec.value_ms)? },
        })
    }

    /// One service time in milliseconds. Every variant consumes the stream from its current
    /// position only, so callers draw their fixed-position uniforms first.
    #[inline]
    pub fn sample_ms(&self, rng: &mut KeyedStream) -> f64 {
        match self {
            Distribution::Constant { value_ms } => *value_ms,
            Distribution::Exponential { mean_ms } => -mean_ms * rng.open01().ln(),
            Distribution::LogNormal { mu, sigma } => {
                let z: f64 = StandardNormal.sample(rng);
                (mu + sigma * z).exp()
            }
            Distribution::Gamma { sampler, .. } => sampler.sample(rng),
            Distribution::Weibull { sampler, .. } => sampler.sample(rng),
            Distribution::Pareto { sampler, .. } => sampler.sample(rng),
            Distribution::Uniform { min_ms, max_ms } => min_ms + (max_ms - min_ms) * rng.unit(),
            Distribution::Table { points, tail_mean_ms } => table_value(points, *tail_mean_ms, rng.unit()),
            Distribution::Empirical { sorted_ms, .. } => empirical_value(sorted_ms, rng.unit()),
        }
    }

    /// The distribution's mean in ms (infinite for a Pareto with shape <= 1).
    pub fn mean_ms(&self) -> f64 {
        match self {
            Distribution::Constant { value_ms } => *value_ms,
            Distribution::Exponential { mean_ms } => *mean_ms,
            Distribution::LogNormal { mu, sigma } => (mu + sigma * sigma / 2.0).exp(),
            Distribution::Gamma { shape, scale_ms, .. } => shape * scale_ms,
            Distribution::Weibull { shape, scale_ms, .. } => scale_ms * gamma_fn(1.0 + 1.0 / shape),
            Distribution::Pareto { shape, scale_ms, .. } => {
                if *shape > 1.0 {
                    shape * scale_ms / (shape - 1.0)
                } else {
                    f64::INFINITY
                }
            }
            Distribution::Uniform { min_ms, max_ms } => (min_ms + max_ms) / 2.0,
            Distribution::Table { points, tail_mean_ms } => table_mean(points, *tail_mean_ms),
            Distribution::Empirical { mean_ms, .. } => *mean_ms,
        }
    }

    /// The median in ms: what a runtime would quote as "the usual attempt time".
    pub fn median_ms(&self) -> f64 {
        match self {
            Distribution::Constant { value_ms } => *value_ms,
            Distribution::Exponential { mean_ms } => mean_ms * std::f64::consts::LN_2,
            Distribution::LogNormal { mu, .. } => mu.exp(),
            // No closed form; the mean is close enough for a prediction.
            Distribution::Gamma { .. } => self.mean_ms(),
            Distribution::Weibull { shape, scale_ms, .. } => scale_ms * std::f64::consts::LN_2.powf(1.0 / shape),
            Distribution::Pareto { shape, scale_ms, .. } => scale_ms * 2f64.powf(1.0 / shape),
            Distribution::Uniform { min_ms, max_ms } => (min_ms + max_ms) / 2.0,
            Distribution::Table { points, tail_mean_ms } => table_value(points, *tail_mean_ms, 0.5),
            Distribution::Empirical { sorted_ms, .. } => empirical_value(sorted_ms, 0.5),
        }
    }
}

/// The value at quantile `u` of the observations: the `floor(u n)`-th smallest.
fn empirical_value(sorted_ms: &[f64], u: f64) -> f64 {
    let i = ((u * sorted_ms.len() as f64) as usize).min(sorted_ms.len() - 1);
    sorted_ms[i]
}

/// `samples_ms = [...]` or `samples_file = "latency.txt"` (read when the scenario loads).
fn empirical(spec: &ServiceTime) -> Result<Distribution, SpecError> {
    let values: &[f64] = match (&spec.samples_ms, &spec.samples_file, &spec.loaded_samples) {
        (Some(_), Some(_), _) => {
            return Err(("samples_file", "give samples_ms or samples_file, not both".into()));
        }
        (Some(inline), None, _) => inline,
        (None, Some(name), Some(loaded)) => {
            debug_assert!(loaded.path.ends_with(name.as_str()));
            &loaded.values
        }
        (None, Some(name), None) => {
            return Err(("samples_file", format!("the samples file {} was not read", quote(name))));
        }
        (None, None, _) => {
            return Err(("samples_ms", "dist = \"empirical\" needs `samples_ms` or `samples_file`".into()));
        }
    };
    if values.is_empty() {
        return Err(("samples_ms", "give at least one value".into()));
    }
    if values.len() > crate::scenario::samples::MAX_SAMPLES {
        return Err(("samples_ms", format!("more than {} values", crate::scenario::samples::MAX_SAMPLES)));
    }
    if let Some(v) = values.iter().find(|v| !v.is_finite() || **v < 0.0) {
        return Err(("samples_ms", format!("values must be finite numbers >= 0, got {v}")));
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    // Summed in sorted order so the mean does not depend on the file's order.
    let mean_ms = sorted.iter().sum::<f64>() / sorted.len() as f64;
    Ok(Distribution::Empirical { sorted_ms: sorted.into(), mean_ms })
}

/// The value at quantile `u` of a tabulated inverse CDF (see [`Distribution::Table`]).
fn table_value(points: &[(f64, f64)], tail_mean_ms: f64, u: f64) -> f64 {
    let (first, last) = (points[0], points[points.len() - 1]);
    if u < first.0 {
        return first.1;
    }
    if u >= last.0 {
        // The exponential tail's quantile function, conditioned on lying beyond the last point.
        return if last.0 < 1.0 { last.1 + tail_mean_ms * ((1.0 - last.0) / (1.0 - u)).ln() } else { last.1 };
    }
    // The first point above u: its segment has a width > 0 (equal quantiles are passed over).
    let i = points.partition_point(|p| p.0 <= u);
    let ((q0, v0), (q1, v1)) = (points[i - 1], points[i]);
    v0 + (v1 - v0) * (u - q0) / (q1 - q0)
}

/// The mean of a tabulated inverse CDF: the integral of its quantile function over [0, 1).
fn table_mean(points: &[(f64, f64)], tail_mean_ms: f64) -> f64 {
    let (first, last) = (points[0], points[points.len() - 1]);
    let segments: f64 = points.windows(2).map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0).sum();
    first.0 * first.1 + segments + (1.0 - last.0) * (last.1 + tail_mean_ms)
}

type SpecError = (&'static str, String);

/// `quantiles_ms = { p50 = 800, p90 = 1500, p99 = 4000, "p99.9" = 9000 }`, optionally with
/// `min_ms` as the value at quantile 0. Linear between quantiles; beyond the last, an
/// exponential tail whose mean continues the last segment's slope (so the quantile function
/// has no kink there).
fn quantile_table(spec: &ServiceTime) -> Result<Distribution, SpecError> {
    let table =
        spec.quantiles_ms.as_ref().ok_or(("quantiles_ms", "dist = \"quantiles\" needs `quantiles_ms`".into()))?;
    let mut points: Vec<(f64, f64)> = Vec::with_capacity(table.len() + 1);
    for (key, &value) in table {
        let q = key
            .strip_prefix('p')
            .and_then(|x| x.parse::<f64>().ok())
            .map(|x| x / 100.0)
            .filter(|q| *q > 0.0 && *q < 1.0)
            .ok_or_else(|| {
                (
                    "quantiles_ms",
                    format!(
                        "{} is not a quantile; write p50, p90, p99 or \"p99.9\" (strictly between p0 and p100)",
                        quote(key)
                    ),
                )
            })?;
        if !value.is_finite() || value < 0.0 {
            return Err(("quantiles_ms", format!("{key} must be a finite number >= 0, got {value}")));
        }
        points.push((q, value));
    }
    if points.is_empty() {
        return Err(("quantiles_ms", "give at least one quantile, such as p50".into()));
    }
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    if let Some(w) = points.windows(2).find(|w| w[1].1 < w[0].1) {
        let message = format!(
            "values must not decrease as the quantile grows: p{} is {} but p{} is {}",
            w[0].0 * 100.0,
            w[0].1,
            w[1].0 * 100.0,
            w[1].1
        );
        return Err(("quantiles_ms", message));
    }
    if let Some(min) = spec.min_ms {
        if !min.is_finite() || min < 0.0 || min > points[0].1 {
            return Err((
                "min_ms",
                format!("min_ms must be between 0 and the first quantile's value {}, got {min}", points[0].1),
            ));
        }
        points.insert(0, (0.0, min));
    }
    let n = points.len();
    let tail_mean_ms = if n >= 2 {
        let ((q0, v0), (q1, v1)) = (points[n - 2], points[n - 1]);
        (v1 - v0) / (q1 - q0) * (1.0 - q1)
    } else {
        0.0
    };
    Ok(Distribution::Table { points: points.into_boxed_slice(), tail_mean_ms })
}

/// `le_ms = [100, 250, 500]`, `cumulative_counts = [10, 60, 90, 95]`: a Prometheus histogram
/// (`_bucket{le}` series, the last the +Inf bucket). Uniform within a bucket, the first from 0;
/// the +Inf bucket's share is an exponential tail above the last bound with the last finite
/// bucket's width as its mean.
fn histogram(spec: &ServiceTime) -> Result<Distribution, SpecError> {
    let le = spec.le_ms.as_ref().ok_or(("le_ms", "dist = \"histogram\" needs `le_ms`".into()))?;
    let counts = spec
        .cumulative_counts
        .as_ref()
        .ok_or(("cumulative_counts", "dist = \"histogram\" needs `cumulative_counts`".into()))?;
    if le.is_empty() || le.iter().any(|b| !b.is_finite() || *b <= 0.0) || le.windows(2).any(|w| w[1] <= w[0]) {
        return Err(("le_ms", "bucket bounds must be finite, > 0 and strictly ascending (leave out +Inf)".into()));
    }
    if counts.len() != le.len() + 1 {
        let message =
            format!("needs {} counts: one per bound and the +Inf bucket's last, got {}", le.len() + 1, counts.len());
        return Err(("cumulative_counts", message));
    }
    if counts.iter().any(|c| !c.is_finite() || *c < 0.0) || counts.windows(2).any(|w| w[1] < w[0]) {
        return Err(("cumulative_counts", "counts are cumulative: finite, >= 0 and never decreasing".into()));
    }
    let total = counts[counts.len() - 1];
    if total <= 0.0 {
        return Err(("cumulative_counts", "the histogram is empty (its +Inf count is 0)".into()));
    }
    let mut points = vec![(0.0, 0.0)];
    points.extend(le.iter().zip(counts).map(|(&bound, &count)| (count / total, bound)));
    let width = if le.len() >= 2 { le[le.len() - 1] - le[le.len() - 2] } else { le[0] };
    Ok(Distribution::Table { points: points.into_boxed_slice(), tail_mean_ms: width })
}

fn field_static(name: &str) -> &'static str {
    match name {
        "p50_ms" => "p50_ms",
        "p95_ms" => "p95_ms",
        "mean_ms" => "mean_ms",
        "shape" => "shape",
        "scale_ms" => "scale_ms",
        "min_ms" => "min_ms",
        "max_ms" => "max_ms",
        "quantiles_ms" => "quantiles_ms",
        "le_ms" => "le_ms",
        "cumulative_counts" => "cumulative_counts",
        "samples_ms" => "samples_ms",
        "samples_file" => "samples_file",
        _ => "value_ms",
    }
}

/// Lanczos approximation of the gamma function (g = 7, n = 9), accurate to ~1e-15.
fn gamma_fn(x: f64) -> f64 {
    const G: f64 = 7.0;
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
    if x < 0.5 {
        std::f64::consts::PI / ((std::f64::consts::PI * x).sin() * gamma_fn(1.0 - x))
    } else {
        let x = x - 1.0;
        let mut a = C[0];
        let t = x + G + 0.5;
        for (i, c) in C.iter().enumerate().skip(1) {
            a += c / (x + i as f64);
        }
        (2.0 * std::f64::consts::PI).sqrt() * t.powf(x + 0.5) * (-t).exp() * a
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::StreamKey;

    fn spec(f: impl FnOnce(&mut ServiceTime)) -> ServiceTime {
        let mut s = ServiceTime::default();
        f(&mut s);
        s
    }

    fn sample_mean_and_quantile(d: &Distribution, q: f64) -> (f64, f64) {
        let n = 100_000;
        let mut xs: Vec<f64> = (0..n).map(|i| d.sample_ms(&mut StreamKey::root(3).with(i).stream())).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        xs.sort_by(f64::total_cmp);
        (mean, xs[(q * n as f64) as usize])
    }

    #[test]
    fn lognormal_fit_reproduces_its_quantiles() {
        let d = Distribution::from_spec(&spec(|s| {
            s.p50_ms = Some(900.0);
            s.p95_ms = Some(2_000.0);
        }))
        .unwrap();
        assert!((d.median_ms() - 900.0).abs() < 1e-9);
        let (_, p95) = sample_mean_and_quantile(&d, 0.95);
        // The empirical p95 of 1e5 draws has a relative standard error well under 1 %.
        assert!((p95 / 2_000.0 - 1.0).abs() < 0.02, "p95 {p95}");
        let (_, p50) = sample_mean_and_quantile(&d, 0.5);
        assert!((p50 / 900.0 - 1.0).abs() < 0.02, "p50 {p50}");
    }

    #[test]
    fn sample_means_match_closed_forms() {
        let cases = [
            spec(|s| {
                s.dist = Some("exponential".into());
                s.mean_ms = Some(50.0);
            }),
            spec(|s| {
                s.dist = Some("gamma".into());
                s.shape = Some(2.0);
                s.scale_ms = Some(10.0);
            }),
            spec(|s| {
                s.dist = Some("weibull".into());
                s.shape = Some(1.5);
                s.scale_ms = Some(10.0);
            }),
            spec(|s| {
                s.dist = Some("pareto".into());
                s.shape = Some(3.0);
                s.scale_ms = Some(10.0);
            }),
            spec(|s| {
                s.dist = Some("uniform".into());
                s.min_ms = Some(10.0);
                s.max_ms = Some(30.0);
            }),
        ];
        for c in &cases {
            let d = Distribution::from_spec(c).unwrap();
            let (mean, _) = sample_mean_and_quantile(&d, 0.5);
            // Coefficients of variation here are at most 1 (pareto 3: ~0.58); 1e5 draws give a
            // relative standard error <= 0.32 %, so 2 % is beyond 6 sigma.
            assert!((mean / d.mean_ms() - 1.0).abs() < 0.02, "{c:?}: {mean} vs {}", d.mean_ms());
        }
    }

    #[test]
    fn bad_parameters_are_named() {
        let err = Distribution::from_spec(&spec(|s| {
            s.p50_ms = Some(900.0);
            s.p95_ms = Some(500.0);
        }))
        .unwrap_err();
        assert_eq!(err.0, "p95_ms");
        let err = Distribution::from_spec(&spec(|s| {
            s.dist = Some("exponential".into());
            s.p50_ms = Some(1.0);
        }))
        .unwrap_err();
        assert_eq!(err.0, "p50_ms");
        assert!(Distribution::from_spec(&spec(|s| s.dist = Some("cauchy".into()))).is_err());
        assert!((gamma_fn(5.0) - 24.0).abs() < 1e-9);
    }

    /// The share of `n` draws at or below `x`, against the quantile `q` it should be: within
    /// 4.5 binomial standard errors (a bound a correct sampler passes 999 993 times in 10^6).
    fn assert_share(d: &Distribution, x: f64, q: f64) {
        let n = 200_000u64;
        let below = (0..n).filter(|&i| d.sample_ms(&mut StreamKey::root(5).with(i).stream()) <= x).count();
        let share = below as f64 / n as f64;
        let se = (q * (1.0 - q) / n as f64).sqrt().max(1.0 / n as f64);
        assert!((share - q).abs() <= 4.5 * se, "P(X <= {x}) = {share}, expected {q} (+- {})", 4.5 * se);
    }

    fn quantiles(pairs: &[(&str, f64)]) -> ServiceTime {
        spec(|s| {
            s.dist = Some("quantiles".into());
            s.quantiles_ms = Some(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect());
        })
    }

    #[test]
    fn a_quantile_table_reproduces_its_quantiles_and_continues_into_an_exponential_tail() {
        let d =
            Distribution::from_spec(&quantiles(&[("p50", 800.0), ("p90", 1500.0), ("p99", 4000.0), ("p99.9", 9000.0)]))
                .unwrap();
        assert_eq!(d.median_ms(), 800.0);
        for (x, q) in [(800.0, 0.5), (1500.0, 0.9), (4000.0, 0.99), (9000.0, 0.999), (1150.0, 0.7)] {
            assert_share(&d, x, q);
        }
        // Beyond p99.9 the tail's mean continues the last slope: (9000 - 4000) / 0.009 x 0.001.
        let Distribution::Table { tail_mean_ms, .. } = &d else { panic!() };
        assert!((tail_mean_ms - 5000.0 / 0.009 * 0.001).abs() < 1e-9);
        // Below p50 there is no value given: the draws take p50's.
        assert_share(&d, 799.999, 0.0);
        // With min_ms the lower part is linear from it.
        let mut with_min = quantiles(&[("p50", 800.0), ("p90", 1500.0)]);
        with_min.min_ms = Some(200.0);
        assert_share(&Distribution::from_spec(&with_min).unwrap(), 500.0, 0.25);
    }

    #[test]
    fn a_prometheus_histogram_is_uniform_within_buckets_with_an_exponential_plus_inf_tail() {
        let d = Distribution::from_spec(&spec(|s| {
            s.dist = Some("histogram".into());
            s.le_ms = Some(vec![100.0, 250.0, 500.0, 1000.0]);
            s.cumulative_counts = Some(vec![10.0, 60.0, 60.0, 190.0, 200.0]);
        }))
        .unwrap();
        for (x, q) in [(100.0, 0.05), (250.0, 0.3), (500.0, 0.3), (1000.0, 0.95), (50.0, 0.025), (750.0, 0.625)] {
            assert_share(&d, x, q);
        }
        // The +Inf bucket (5 %) lies above 1000 ms with mean 500 ms (the last bucket's width):
        // P(X > 1000 + 500 ln 2) = 2.5 %.
        assert_share(&d, 1000.0 + 500.0 * std::f64::consts::LN_2, 0.975);
        // The mean by integration: buckets' midpoints by their shares, plus the tail.
        let expected = 0.05 * 50.0 + 0.25 * 175.0 + 0.65 * 750.0 + 0.05 * 1500.0;
        assert!((d.mean_ms() - expected).abs() < 1e-9, "{} vs {expected}", d.mean_ms());
        let (mean, _) = sample_mean_and_quantile(&d, 0.5);
        assert!((mean / expected - 1.0).abs() < 0.02, "{mean} vs {expected}");
    }

    #[test]
    fn tables_and_histograms_are_checked() {
        let err = |s: ServiceTime| Distribution::from_spec(&s).unwrap_err();
        assert_eq!(err(quantiles(&[("median", 5.0)])).0, "quantiles_ms");
        assert_eq!(err(quantiles(&[("p100", 5.0)])).0, "quantiles_ms");
        let (field, message) = err(quantiles(&[("p50", 800.0), ("p90", 700.0)]));
        assert_eq!(field, "quantiles_ms");
        assert!(message.contains("must not decrease"), "{message}");
        let histogram = |le: Vec<f64>, counts: Vec<f64>| {
            spec(|s| {
                s.dist = Some("histogram".into());
                s.le_ms = Some(le);
                s.cumulative_counts = Some(counts);
            })
        };
        assert_eq!(err(histogram(vec![100.0, 50.0], vec![1.0, 2.0, 3.0])).0, "le_ms");
        let (field, message) = err(histogram(vec![100.0], vec![1.0]));
        assert_eq!(field, "cumulative_counts");
        assert!(message.contains("needs 2 counts"), "{message}");
        assert_eq!(err(histogram(vec![100.0], vec![5.0, 3.0])).0, "cumulative_counts");
        assert_eq!(err(histogram(vec![100.0], vec![0.0, 0.0])).0, "cumulative_counts");
        let mut mixed = quantiles(&[("p50", 1.0)]);
        mixed.le_ms = Some(vec![1.0]);
        assert_eq!(err(mixed).0, "le_ms");
    }
}
