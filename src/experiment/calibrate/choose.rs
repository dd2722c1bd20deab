//! From observations to the figures a scenario takes: a latency distribution per dependency
//! (a fitted family when it passes the Kolmogorov-Smirnov test, else the observations), its
//! error mix, and what the observations could not show.

use super::fit::{Fitted, fit_all, ks_critical, observed_quantile};
use super::infer::DependencyObservations;
use crate::vocab::FailureKind;

crate::named_enum! {
    /// `--fit`: how latencies become distributions.
    pub enum FitChoice {
        /// The family with the smallest KS distance if it passes the test, else the samples.
        Auto => "auto",
        Empirical => "empirical",
        LogNormal => "lognormal",
        Gamma => "gamma",
        Weibull => "weibull",
    }
}

/// The quantiles of the quantile-quantile table.
pub const QQ_QUANTILES: [f64; 6] = [0.1, 0.5, 0.9, 0.95, 0.99, 0.999];

/// Below this many answers a dependency's latency is kept as observed: a fit says little.
pub const MIN_FIT_SAMPLES: usize = 30;

/// A dependency's latency as the scenario will give it.
#[derive(Debug, Clone)]
pub enum Latency {
    Fitted(Fitted),
    /// The observations themselves (sorted), with the best family's distance for the report.
    Empirical {
        sorted_ms: Vec<f64>,
        best: Option<Fitted>,
    },
    /// Never answered: nothing to draw from.
    Unknown,
    /// A Prometheus histogram of the callee's latency, given with `--prometheus`.
    Histogram(super::prometheus::Histogram),
}

/// What the report and the scenario say of one dependency.
#[derive(Debug, Clone)]
pub struct DependencyChoice {
    pub name: String,
    pub latency: Latency,
    /// Every family tried, with its KS distance.
    pub candidates: Vec<Fitted>,
    pub sorted_ms: Vec<f64>,
    /// Probability per attempt that reached it, by failure kind.
    pub error_mix: Vec<(FailureKind, f64, usize)>,
    /// Attempts that reached it (answers and timeouts).
    pub reached: usize,
    pub hang_probability: f64,
    /// The latency split by the calls' tokens, when they explain it.
    pub tokens: Option<super::tokens::TokenShape>,
    pub notes: Vec<String>,
}

pub fn choose(name: &str, obs: &DependencyObservations, fit: FitChoice) -> DependencyChoice {
    let mut sorted = obs.answered_ms.clone();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let candidates = if n >= 2 { fit_all(&sorted) } else { Vec::new() };
    let best = candidates.iter().copied().min_by(|a, b| a.ks.total_cmp(&b.ks));
    let named = |family: &str| candidates.iter().copied().find(|c| c.family.name() == family);
    let mut notes = Vec::new();
    let latency = match (n, fit) {
        (0, _) => Latency::Unknown,
        (_, FitChoice::Empirical) => Latency::Empirical { sorted_ms: sorted.clone(), best },
        (n, FitChoice::Auto) if n < MIN_FIT_SAMPLES => {
            notes.push(format!("{name}: only {n} answers; its latency is those values as observed"));
            Latency::Empirical { sorted_ms: sorted.clone(), best }
        }
        (_, FitChoice::Auto) => match best {
            Some(b) if b.ks <= ks_critical(n) => Latency::Fitted(b),
            _ => Latency::Empirical { sorted_ms: sorted.clone(), best },
        },
        (_, FitChoice::LogNormal | FitChoice::Gamma | FitChoice::Weibull) => match named(fit.name()) {
            Some(f) => Latency::Fitted(f),
            None => {
                notes.push(format!("{name}: no {} fit (the values are constant); kept as observed", fit.name()));
                Latency::Empirical { sorted_ms: sorted.clone(), best }
            }
        },
    };
    let reached = obs.reached();
    if n > 0 && n < 1000 {
        notes.push(format!(
            "{name}: {n} answers show the tail only to about p{}; beyond it the {}",
            tail_quantile_label(n),
            match latency {
                Latency::Fitted(f) => format!("{} fit extrapolates", f.family.name()),
                Latency::Empirical { .. } | Latency::Unknown | Latency::Histogram(_) => {
                    format!("empirical distribution never goes past the largest value seen ({:.1} ms)", sorted[n - 1])
                }
            }
        ));
    }
    if n == 0 {
        notes.push(format!(
            "{name}: never answered in {} attempt(s) ({} timed out, {} refused, {} cancelled); its service time is set to 1 ms and every attempt that reaches it hangs",
            obs.timeouts + obs.refused + obs.cancelled,
            obs.timeouts,
            obs.refused,
            obs.cancelled
        ));
    }
    if obs.errors.is_empty() && reached > 0 {
        notes.push(format!(
            "{name}: no error in {reached} attempts; its error rate is set to 0, but the traces only show it is below {:.2} % (95 % confidence, about 3 / n)",
            100.0 * zero_errors_bound(reached)
        ));
    }
    let error_mix =
        obs.errors.iter().map(|(&kind, &count)| (kind, count as f64 / reached.max(1) as f64, count)).collect();
    let hang_probability = if n == 0 && reached > 0 { 1.0 } else { obs.timeouts as f64 / reached.max(1) as f64 };
    let tokens = super::tokens::token_shape(&obs.token_answers);
    if let Some(shape) = &tokens {
        notes.push(format!(
            "{name}: a token-shaped model: its {} answers with token counts split into a first token, {:.2} ms of prefill per 1 000 input tokens and {:.3} ms per output token (least squares, {:.0} % of the latencies' variance); the spreads of both by the method of moments, as lognormals",
            shape.samples,
            shape.prefill_ms_per_1k_input_tokens,
            shape.tpot_ms,
            100.0 * shape.explained
        ));
    }
    DependencyChoice {
        name: name.to_string(),
        latency,
        candidates,
        sorted_ms: sorted,
        error_mix,
        reached,
        hang_probability,
        tokens,
        notes,
    }
}

/// The highest quantile `n` samples show with about ten values beyond it.
fn tail_quantile_label(n: usize) -> String {
    let q = 100.0 * (1.0 - 10.0 / n as f64).max(0.0);
    format!("{q:.0}")
}

impl DependencyChoice {
    /// Observed and modelled latency at [`QQ_QUANTILES`] (ms).
    pub fn qq(&self) -> Vec<(f64, f64, f64)> {
        if self.sorted_ms.is_empty() {
            return Vec::new();
        }
        QQ_QUANTILES
            .iter()
            .map(|&p| {
                let observed = observed_quantile(&self.sorted_ms, p);
                let modelled = match &self.latency {
                    Latency::Fitted(f) => f.family.quantile(p),
                    Latency::Empirical { sorted_ms, .. } => observed_quantile(sorted_ms, p),
                    Latency::Unknown => f64::NAN,
                    Latency::Histogram(h) => h.quantile_ms(p),
                };
                (p, observed, modelled)
            })
            .collect()
    }
}

/// The error rate below which n attempts without an error show the true rate to lie, at 95 %
/// confidence: 1 - 0.05^(1/n) (the exact binomial bound; the rule of three's 3 / n for large n,
/// which passes 100 % below n = 3).
fn zero_errors_bound(attempts: usize) -> f64 {
    1.0 - 0.05f64.powf(1.0 / attempts as f64)
}

#[cfg(test)]
mod tests {
    use super::zero_errors_bound;

    #[test]
    fn the_bound_of_no_error_stays_a_share_for_few_attempts_and_is_three_over_n_for_many() {
        // 0.05 ^ (1/1) = 0.05: one clean attempt bounds the rate only below 95 %.
        assert!((zero_errors_bound(1) - 0.95).abs() < 1e-12);
        assert!((zero_errors_bound(2) - (1.0 - 0.05f64.sqrt())).abs() < 1e-12);
        // -ln(0.05) = 2.996: the rule of three, within 0.04 % of 3 / n at n = 4000.
        let n = 4000.0;
        assert!((zero_errors_bound(4000) * n / 3.0 - 1.0).abs() < 0.002, "{}", zero_errors_bound(4000) * n);
    }
}
