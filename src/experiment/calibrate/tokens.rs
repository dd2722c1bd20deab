//! A model callee's latency split by its tokens: when the traces carry
//! `gen_ai.usage.input_tokens` and `gen_ai.usage.output_tokens`, a least-squares fit of
//! `latency = ttft + input / 1000 x prefill + output x tpot` gives the prefill and the time per
//! output token, and what is left of each latency is its time to first token. Adopted only when
//! the tokens explain a real share of the latencies; otherwise the callee stays a plain station.

use super::fit::{Family, Fitted, fit_all};

/// The share of the latencies' variance the token terms must explain to be adopted. Latency
/// that does not depend on the tokens leaves R² near 2 / n; a decoding model whose outputs vary
/// leaves far more.
pub const MIN_EXPLAINED_VARIANCE: f64 = 0.10;

/// Below this many answered attempts with token counts the split is not tried.
pub const MIN_TOKEN_SAMPLES: usize = 30;

/// A callee's latency as time to first token + prefill + decoding.
#[derive(Debug, Clone)]
pub struct TokenShape {
    /// The time to first token (ms): a lognormal by its moments, or, when the spread could not
    /// be split, the best-fitting family of what is left of each latency.
    pub ttft: Fitted,
    pub prefill_ms_per_1k_input_tokens: f64,
    /// Mean time per output token (ms).
    pub tpot_ms: f64,
    /// Its spread between attempts as a lognormal (ms), when the residuals show one.
    pub tpot: Option<Family>,
    /// Share of the latencies' variance the token terms explain.
    pub explained: f64,
    pub samples: usize,
    /// The best-fitting families of the counts (the model's defaults for callers without their
    /// own).
    pub input_tokens: Option<Fitted>,
    pub output_tokens: Option<Fitted>,
}

/// One answered attempt: (latency ms, input tokens, output tokens).
pub type TokenAnswer = (f64, f64, f64);

pub fn token_shape(answers: &[TokenAnswer]) -> Option<TokenShape> {
    if answers.len() < MIN_TOKEN_SAMPLES {
        return None;
    }
    let (intercept, prefill, tpot) = fit_coefficients(answers)?;
    let mean = answers.iter().map(|a| a.0).sum::<f64>() / answers.len() as f64;
    let total: f64 = answers.iter().map(|a| (a.0 - mean).powi(2)).sum();
    let mut ttft: Vec<f64> = answers.iter().map(|&(d, i, o)| d - i / 1000.0 * prefill - o * tpot).collect();
    let ttft_mean = ttft.iter().sum::<f64>() / ttft.len() as f64;
    let left: f64 = ttft.iter().map(|r| (r - ttft_mean).powi(2)).sum();
    let explained = if total > 0.0 { 1.0 - left / total } else { 0.0 };
    if explained < MIN_EXPLAINED_VARIANCE {
        return None;
    }
    // The spread splits too: a residual's variance is Var(ttft) + Var(tpot) x output², so the
    // squared residuals regressed on (1, output²) give both (method of moments).
    let variances =
        least_squares(answers.iter().zip(&ttft).map(|(a, r)| (vec![1.0, a.2 * a.2], (r - intercept).powi(2))));
    let split = variances.filter(|v| v[0] > 0.0 && v[1] > 0.0 && intercept > 0.0 && tpot > 0.0);
    // A residual at or below 0 is noise around a short first token: it is kept at 1 ms.
    for r in &mut ttft {
        *r = r.max(1.0);
    }
    ttft.sort_by(f64::total_cmp);
    let (ttft_fit, tpot_spread) = match split {
        Some(v) => {
            let first = lognormal_by_moments(intercept, v[0]);
            let ks = super::fit::ks_distance(&ttft, |x| first.cdf(x));
            (Fitted { family: first, ks }, Some(lognormal_by_moments(tpot, v[1])))
        }
        None => (fit_all(&ttft).into_iter().min_by(|a, b| a.ks.total_cmp(&b.ks))?, None),
    };
    let best = |mut v: Vec<f64>| -> Option<Fitted> {
        v.sort_by(f64::total_cmp);
        fit_all(&v).into_iter().min_by(|a, b| a.ks.total_cmp(&b.ks))
    };
    Some(TokenShape {
        ttft: ttft_fit,
        prefill_ms_per_1k_input_tokens: prefill,
        tpot_ms: tpot,
        tpot: tpot_spread,
        explained,
        samples: answers.len(),
        input_tokens: best(answers.iter().map(|a| a.1.max(1.0)).collect()),
        output_tokens: best(answers.iter().map(|a| a.2.max(1.0)).collect()),
    })
}

/// The lognormal with this mean and variance.
fn lognormal_by_moments(mean: f64, variance: f64) -> Family {
    let sigma2 = (1.0 + variance / (mean * mean)).ln();
    Family::LogNormal { mu: mean.ln() - sigma2 / 2.0, sigma: sigma2.sqrt() }
}

/// Least squares of latency on (1, input / 1000, output) with both slopes at least 0: a
/// negative slope is dropped and the other refitted alone. Returns (intercept, prefill ms per
/// 1 000 input tokens, ms per output token), or None when neither slope is positive.
fn fit_coefficients(answers: &[TokenAnswer]) -> Option<(f64, f64, f64)> {
    let xs = |a: &TokenAnswer| [1.0, a.1 / 1000.0, a.2];
    let both = least_squares(answers.iter().map(|a| (xs(a).to_vec(), a.0)));
    if let Some(b) = &both
        && b[1] >= 0.0
        && b[2] >= 0.0
    {
        return Some((b[0], b[1], b[2]));
    }
    let only_output = least_squares(answers.iter().map(|a| (vec![1.0, a.2], a.0))).filter(|b| b[1] > 0.0);
    let only_input = least_squares(answers.iter().map(|a| (vec![1.0, a.1 / 1000.0], a.0))).filter(|b| b[1] > 0.0);
    match (only_output, only_input) {
        (Some(o), _) => Some((o[0], 0.0, o[1])),
        (None, Some(i)) => Some((i[0], i[1], 0.0)),
        (None, None) => None,
    }
}

/// Ordinary least squares by the normal equations (at most three unknowns), solved by Gaussian
/// elimination with partial pivoting; None when the design is singular (a constant regressor).
fn least_squares(rows: impl Iterator<Item = (Vec<f64>, f64)>) -> Option<Vec<f64>> {
    let mut xtx: Vec<Vec<f64>> = Vec::new();
    let mut xty: Vec<f64> = Vec::new();
    for (x, y) in rows {
        if xtx.is_empty() {
            xtx = vec![vec![0.0; x.len()]; x.len()];
            xty = vec![0.0; x.len()];
        }
        for i in 0..x.len() {
            xty[i] += x[i] * y;
            for j in 0..x.len() {
                xtx[i][j] += x[i] * x[j];
            }
        }
    }
    let k = xty.len();
    for col in 0..k {
        let pivot = (col..k).max_by(|&a, &b| xtx[a][col].abs().total_cmp(&xtx[b][col].abs()))?;
        if xtx[pivot][col].abs() < 1e-9 * xtx[col][col].abs().max(1.0) {
            return None;
        }
        xtx.swap(col, pivot);
        xty.swap(col, pivot);
        let pivot_row = xtx[col].clone();
        for row in (0..k).filter(|&r| r != col) {
            let f = xtx[row][col] / pivot_row[col];
            for (cell, p) in xtx[row][col..].iter_mut().zip(&pivot_row[col..]) {
                *cell -= f * p;
            }
            xty[row] -= f * xty[col];
        }
    }
    Some((0..k).map(|i| xty[i] / xtx[i][i]).collect())
}

/// A count's distribution in a scenario's words (a token count has no `_ms`).
pub fn count_spec(f: &Fitted) -> String {
    match f.family {
        Family::LogNormal { .. } => {
            format!("{{ p50 = {:.0}, p95 = {:.0} }}", f.family.quantile(0.5), f.family.quantile(0.95))
        }
        Family::Gamma { shape, scale } => format!("{{ dist = \"gamma\", shape = {shape:.4}, scale = {scale:.4} }}"),
        Family::Weibull { shape, scale } => {
            format!("{{ dist = \"weibull\", shape = {shape:.4}, scale = {scale:.4} }}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Latencies made by the formula itself, with a first token that varies and decoding
    /// speeds that do not: the fit finds the slopes it was given.
    #[test]
    fn the_fit_recovers_prefill_and_time_per_output_token() {
        let answers: Vec<TokenAnswer> = (0..400)
            .map(|i| {
                let input = 1000.0 + (i * 37 % 9000) as f64;
                let output = 50.0 + (i * 13 % 300) as f64;
                let ttft = 300.0 + (i * 7 % 200) as f64;
                (ttft + input / 1000.0 * 25.0 + output * 8.0, input, output)
            })
            .collect();
        let shape = token_shape(&answers).expect("the tokens explain the latencies");
        assert!((shape.prefill_ms_per_1k_input_tokens - 25.0).abs() < 1.0, "{shape:?}");
        assert!((shape.tpot_ms - 8.0).abs() < 0.1, "{shape:?}");
        assert!(shape.explained > 0.9);
        let median = shape.ttft.family.quantile(0.5);
        assert!((median - 400.0).abs() < 40.0, "first token median {median}");
    }

    /// Latency that ignores the tokens: no split, the callee stays a station.
    #[test]
    fn latency_independent_of_the_tokens_is_not_split() {
        let answers: Vec<TokenAnswer> = (0..400)
            .map(|i| (500.0 + (i * 7919 % 1000) as f64, 1000.0 + (i * 37 % 9000) as f64, 50.0 + (i * 13 % 300) as f64))
            .collect();
        assert!(token_shape(&answers).is_none());
    }
}
