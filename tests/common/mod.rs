//! Shared test helpers: building models from TOML text, running replications, and the
//! queueing closed forms of ANCHORS.md section 1.
#![allow(dead_code)]

use faultline::engine::{Model, simulate};
use faultline::experiment::batch::replication_seed;
use faultline::metrics::MetricMap;
use faultline::metrics::stats::{Estimate, estimate};
use faultline::scenario::{Format, Source, parse_source};

pub fn model(toml: &str) -> Model {
    let source = Source::from_text("test.toml", toml, Format::Toml);
    let scenario = parse_source(&source).unwrap_or_else(|e| panic!("{e}"));
    Model::compile(&scenario, &source).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs the model's replications of one policy on the usual replication seeds.
pub fn replicate(model: &Model, policy: usize) -> Vec<MetricMap> {
    (0..model.world.replications)
        .map(|r| {
            simulate(model, policy, replication_seed(model.world.seed, r)).unwrap_or_else(|e| panic!("{e}")).metrics
        })
        .collect()
}

pub fn metric(reps: &[MetricMap], name: &str) -> Estimate {
    estimate(reps.iter().map(|m| *m.get(name).unwrap_or_else(|| panic!("no metric {name}"))))
}

/// Asserts that `theory` lies inside the simulated 95 % confidence interval, and reports the
/// relative error of the mean.
pub fn assert_in_ci(label: &str, e: &Estimate, theory: f64) {
    let rel = (e.mean - theory) / theory;
    eprintln!(
        "{label}: simulated {:.6} [{:.6}, {:.6}], theory {theory:.6}, error {:+.2} %",
        e.mean,
        e.low,
        e.high,
        100.0 * rel
    );
    assert!(
        e.low <= theory && theory <= e.high,
        "{label}: theory {theory} outside the 95 % interval [{}, {}]",
        e.low,
        e.high
    );
}

/// Erlang B by the stable recursion B_0 = 1, B_k = A B_(k-1) / (k + A B_(k-1)).
pub fn erlang_b(c: u32, a: f64) -> f64 {
    (1..=c).fold(1.0, |b, k| a * b / (k as f64 + a * b))
}

/// Erlang C: the probability that an arrival waits in M/M/c.
pub fn erlang_c(c: u32, a: f64) -> f64 {
    let rho = a / c as f64;
    let b = erlang_b(c, a);
    b / (1.0 - rho * (1.0 - b))
}

/// Mean wait in queue of M/M/c, in the time unit of 1/mu.
pub fn mmc_wq(c: u32, lambda: f64, mu: f64) -> f64 {
    erlang_c(c, lambda / mu) / (c as f64 * mu - lambda)
}

/// M/M/c/K stationary distribution (K = servers + waiting places).
pub fn mmck_pi(c: u32, k: u32, lambda: f64, mu: f64) -> Vec<f64> {
    let a = lambda / mu;
    let mut weights = Vec::with_capacity(k as usize + 1);
    let mut w = 1.0;
    for n in 0..=k {
        if n > 0 {
            w *= if n <= c { a / n as f64 } else { a / c as f64 };
        }
        weights.push(w);
    }
    let total: f64 = weights.iter().sum();
    weights.iter().map(|w| w / total).collect()
}

/// (loss probability, mean number in system, mean wait in queue of admitted customers).
pub fn mmck(c: u32, k: u32, lambda: f64, mu: f64) -> (f64, f64, f64) {
    let pi = mmck_pi(c, k, lambda, mu);
    let loss = pi[k as usize];
    let l: f64 = pi.iter().enumerate().map(|(n, p)| n as f64 * p).sum();
    let lq: f64 = pi.iter().enumerate().map(|(n, p)| (n as f64 - c as f64).max(0.0) * p).sum();
    let throughput = lambda * (1.0 - loss);
    (loss, l, lq / throughput)
}
