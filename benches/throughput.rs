//! Throughput and memory benchmarks (a plain harness: `cargo bench --bench throughput`).
//! Prints medians over repeated runs; the machine is shared, so compare medians and ratios.
//!
//! - M/M/c (c = 10, rho = 0.9): served customers per second on one thread.
//! - The incident scenario: root runs per second per thread, for each policy.
//! - Peak RSS for a simulated duration D and 10 D (each in a fresh child process).
//! - A sweep on 1 and 2 worker threads: the speed-up.

use faultline::engine::{Model, simulate};
use faultline::experiment::batch::{Task, compile_with, replication_seed, run_tasks};
use faultline::scenario::{Override, load_file, parse_override};
use std::path::Path;
use std::time::Instant;

fn load(path: &str, sets: &[&str]) -> Model {
    let source = load_file(Path::new(path)).expect("scenario loads");
    let overrides: Vec<Override> = sets.iter().map(|s| parse_override(s).expect("valid override")).collect();
    compile_with(&source, &overrides).expect("scenario compiles")
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Runs `f` `n` times and returns the median of the per-second rates it reports.
fn rate(n: usize, mut f: impl FnMut() -> (f64, f64)) -> (f64, Vec<f64>) {
    let rates: Vec<f64> = (0..n)
        .map(|_| {
            let (units, seconds) = f();
            units / seconds
        })
        .collect();
    (median(rates.clone()), rates)
}

fn mmc() {
    let model = load("scenarios/mmc.toml", &["simulation.duration_s=20000", "simulation.warmup_s=0"]);
    let (median_rate, all) = rate(7, || {
        let start = Instant::now();
        let r = simulate(&model, 0, 1).expect("simulation runs");
        (r.metrics["logical_run_total"], start.elapsed().as_secs_f64())
    });
    println!(
        "mmc (c=10, rho=0.9): {:.2} million served customers/s per thread (median of {}; min {:.2}, max {:.2})",
        median_rate / 1e6,
        all.len(),
        all.iter().cloned().fold(f64::INFINITY, f64::min) / 1e6,
        all.iter().cloned().fold(0.0, f64::max) / 1e6
    );
}

fn incident() {
    let model = load("scenarios/meeting-analysis-incident.toml", &["simulation.warmup_s=0"]);
    for (p, policy) in model.policies.iter().enumerate() {
        let (median_rate, _) = rate(5, || {
            let start = Instant::now();
            let r = simulate(&model, p, 1).expect("simulation runs");
            (r.metrics["logical_run_total"], start.elapsed().as_secs_f64())
        });
        println!(
            "incident, policy {}: {:.0} thousand root runs/s per thread (median of 5)",
            policy.name,
            median_rate / 1e3
        );
    }
}

/// Every mechanism active at once: breakers per operation class, effect bulkheads, a global
/// gRPC retry budget and hedged reads (benches/mechanisms.toml).
fn mechanisms() {
    let model = load("benches/mechanisms.toml", &[]);
    let (median_rate, all) = rate(5, || {
        let start = Instant::now();
        let r = simulate(&model, 0, 1).expect("simulation runs");
        (r.metrics["logical_run_total"], start.elapsed().as_secs_f64())
    });
    println!(
        "mechanisms (breakers, bulkheads, retry budget, hedging): {:.0} thousand root runs/s per thread (median of {}; min {:.0}, max {:.0})",
        median_rate / 1e3,
        all.len(),
        all.iter().cloned().fold(f64::INFINITY, f64::min) / 1e3,
        all.iter().cloned().fold(0.0, f64::max) / 1e3
    );
}

fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn memory() {
    let exe = std::env::current_exe().expect("own path");
    let mut peaks = Vec::new();
    for duration in ["2400", "24000"] {
        let out = std::process::Command::new(&exe).args(["--child-memory", duration]).output().expect("child runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let kib: u64 = text.trim().parse().unwrap_or(0);
        peaks.push((duration, kib));
    }
    for (d, kib) in &peaks {
        println!("incident, duration {d} s (both policies): peak RSS {:.1} MiB", *kib as f64 / 1024.0);
    }
    if peaks[0].1 > 0 {
        println!("peak RSS ratio for 10x the duration: {:.2}", peaks[1].1 as f64 / peaks[0].1 as f64);
    }
}

fn child_memory(duration: &str) {
    // The fault window moves with nothing: it stays at 600-1800 s; the rest is steady load.
    let model = load("scenarios/meeting-analysis-incident.toml", &[&format!("simulation.duration_s={duration}")]);
    for p in 0..model.policies.len() {
        simulate(&model, p, 1).expect("simulation runs");
    }
    println!("{}", peak_rss_kib());
}

fn sweep_speedup() {
    let mut models = Vec::new();
    for tokens in 0..4 {
        models.push(load(
            "scenarios/meeting-analysis-incident.toml",
            &[&format!("policy.resilient.budget.retry_tokens={tokens}"), "simulation.duration_s=1200"],
        ));
    }
    let tasks: Vec<Task> = (0..models.len())
        .flat_map(|m| {
            (0..2).flat_map(move |policy| {
                (0..4).map(move |r| Task { model: m, policy, replication: r, seed: replication_seed(7, r) })
            })
        })
        .collect();
    let time = |jobs: usize| {
        median(
            (0..3)
                .map(|_| {
                    let start = Instant::now();
                    run_tasks(&models, &tasks, jobs, "bench", &|_| String::new()).expect("sweep runs");
                    start.elapsed().as_secs_f64()
                })
                .collect(),
        )
    };
    let one = time(1);
    let two = time(2);
    println!(
        "sweep of {} simulations: --jobs 1 {:.2} s, --jobs 2 {:.2} s, speed-up {:.2}x (medians of 3)",
        tasks.len(),
        one,
        two,
        one / two
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child-memory") {
        child_memory(&args[i + 1]);
        return;
    }
    mmc();
    incident();
    mechanisms();
    memory();
    sweep_speedup();
}
