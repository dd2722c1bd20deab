//! Shared test helpers: building models from TOML text, running replications, and the
//! queueing closed forms of docs/references.md section 1.
#![allow(dead_code)]

pub mod degradation;
pub mod import;
pub mod task_agent;

use faultline::engine::{Model, simulate};
use faultline::experiment::batch::replication_seed;
use faultline::metrics::MetricMap;
use faultline::metrics::stats::{Estimate, estimate};
use faultline::scenario::{Format, Source, parse_source};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

/// Figures compared bit for bit (NaN marks an undefined figure and equals itself here).
pub fn metric_bits(m: &MetricMap) -> Vec<(String, u64)> {
    m.iter().map(|(k, v)| (k.clone(), v.to_bits())).collect()
}

pub fn metric(reps: &[MetricMap], name: &str) -> Estimate {
    estimate(reps.iter().map(|m| *m.get(name).unwrap_or_else(|| panic!("no metric {name}"))))
}

/// Student's t density with `df` degrees of freedom (integer df: the gamma ratio by recursion).
fn t_pdf(x: f64, df: u32) -> f64 {
    // Gamma(n / 2) for a positive integer n.
    fn half_gamma(n: u32) -> f64 {
        let (mut g, mut k) = if n.is_multiple_of(2) { (1.0, 2) } else { (std::f64::consts::PI.sqrt(), 1) };
        while k < n {
            g *= k as f64 / 2.0;
            k += 2;
        }
        g
    }
    let v = df as f64;
    half_gamma(df + 1) / ((v * std::f64::consts::PI).sqrt() * half_gamma(df)) * (1.0 + x * x / v).powf(-(v + 1.0) / 2.0)
}

/// P(T <= x) for x >= 0 by Simpson's rule on the density.
fn t_cdf(x: f64, df: u32) -> f64 {
    let n: u32 = 4_000;
    let h = x / n as f64;
    let mut sum = t_pdf(0.0, df) + t_pdf(x, df);
    for i in 1..n {
        sum += t_pdf(i as f64 * h, df) * if i.is_multiple_of(2) { 2.0 } else { 4.0 };
    }
    0.5 + sum * h / 3.0
}

/// The t quantile for probability p > 0.5, by bisection on the CDF.
pub fn t_quantile(p: f64, df: u32) -> f64 {
    let (mut lo, mut hi) = (0.0, 200.0);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if t_cdf(mid, df) < p { lo = mid } else { hi = mid }
    }
    (lo + hi) / 2.0
}

/// Asserts that `theory` lies inside the simulated confidence interval with family-wise 95 %
/// coverage over the `checks` assertions of a test (Bonferroni: each interval at
/// 1 - 0.05 / checks), so that one test of many checks is not a 1-in-20 coin toss. Reports the
/// ordinary per-check 95 % interval and the relative error of the mean as well.
pub fn assert_in_ci(label: &str, e: &Estimate, theory: f64, checks: usize) {
    let rel = (e.mean - theory) / theory;
    let df = (e.n - 1) as u32;
    let se = (e.high - e.mean) / t_quantile(0.975, df);
    let half = t_quantile(1.0 - 0.025 / checks as f64, df) * se;
    let inside95 = e.low <= theory && theory <= e.high;
    eprintln!(
        "{label}: simulated {:.6} (95 % CI [{:.6}, {:.6}]{}), theory {theory:.6}, error {:+.2} %",
        e.mean,
        e.low,
        e.high,
        if inside95 { "" } else { ", theory outside" },
        100.0 * rel
    );
    assert!(
        (e.mean - theory).abs() <= half,
        "{label}: theory {theory} outside the family-wise 95 % interval {} +- {half}",
        e.mean
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

/// Every file below `dir`, by path relative to it, with its bytes: for byte-for-byte comparisons.
pub fn read_all(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.insert(path.strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}
