//! Throughput and memory benchmarks (a plain harness: `cargo bench --bench throughput`).
//! The machine is shared, so every figure is a median, and every ratio is the median of the
//! ratios of runs made in alternation (the order rotating every round), never two medians
//! taken apart.
//!
//! Sections (name some after `--` to run only those; `--callgrind` adds instruction counts
//! from `valgrind --tool=callgrind` to `bare` and `capabilities`):
//! - `bare`: a bare binary-heap M/M/c loop (benches/support/bare_mmc.rs) against the engine on
//!   M/M/4 (rho 0.8, with and without a caller's timeout armed) and M/M/10 (rho 0.9): customers
//!   per second per thread and the ratio engine / bare.
//! - `incident`: the incident scenario, root runs per second per thread, each policy.
//! - `mechanisms`: every isolation and overload mechanism active at once (benches/mechanisms.toml).
//! - `capabilities`: the incident with one capability family off at a time
//!   (benches/support/capabilities.rs): root runs per second against the baseline, events and
//!   attempts per root run, and instructions per root run with `--callgrind`.
//! - `mm1`: M/M/1 (rho 0.8), events per second per core.
//! - `memory`: peak RSS for a simulated duration D and 10 D, and memory per run in flight (a
//!   million root runs held by a slow dependency under a long deadline), each in a fresh child
//!   process.
//! - `sweep`: a sweep on 1 and 2 worker threads, the speed-up.

#[path = "support/bare_mmc.rs"]
mod bare_mmc;
#[path = "support/capabilities.rs"]
mod capabilities;

use faultline::engine::{Model, simulate, simulate_following};
use faultline::experiment::batch::{Task, compile_with, replication_seed, run_tasks};
use faultline::runtime::trace::RunTracer;
use faultline::scenario::{Format, Override, Source, load_file, parse_override, parse_source};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const INCIDENT: &str = "scenarios/meeting-analysis-incident.toml";

fn load(path: &str, sets: &[&str]) -> Model {
    let source = load_file(Path::new(path)).expect("scenario loads");
    let overrides: Vec<Override> = sets.iter().map(|s| parse_override(s).expect("valid override")).collect();
    compile_with(&source, &overrides).expect("scenario compiles")
}

fn model_from_text(name: &str, text: &str) -> Model {
    let source = Source::from_text(name, text, Format::Toml);
    let scenario = parse_source(&source).unwrap_or_else(|e| panic!("{e}"));
    Model::compile(&scenario, &source).unwrap_or_else(|e| panic!("{e}"))
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn min_max(xs: &[f64]) -> (f64, f64) {
    (xs.iter().cloned().fold(f64::INFINITY, f64::min), xs.iter().cloned().fold(0.0, f64::max))
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

/// Something to time: returns (units of work done, seconds).
type Timed<'a> = Box<dyn FnMut() -> (f64, f64) + 'a>;

/// Runs every job once per round, `rounds` times, the order rotating by one each round so no
/// job always follows the same one. Returns each job's rates, round by round.
fn interleaved(rounds: usize, jobs: &mut [Timed<'_>]) -> Vec<Vec<f64>> {
    let mut rates = vec![Vec::with_capacity(rounds); jobs.len()];
    for round in 0..rounds {
        for k in 0..jobs.len() {
            let j = (k + round) % jobs.len();
            let (units, seconds) = jobs[j]();
            rates[j].push(units / seconds);
        }
    }
    rates
}

/// The median over rounds of `a[i] / b[i]`: a ratio from runs made side by side.
fn paired_ratio(a: &[f64], b: &[f64]) -> f64 {
    median(a.iter().zip(b).map(|(x, y)| x / y).collect())
}

fn timed_simulation(model: &Model, policy: usize) -> (f64, f64) {
    let start = Instant::now();
    let r = simulate(model, policy, 1).expect("simulation runs");
    (r.metrics["logical_run_total"], start.elapsed().as_secs_f64())
}

/// Instructions of this bench run as a child under callgrind with `args`, and the units of
/// work the child printed; None where valgrind is missing or fails.
fn callgrind(args: &[String]) -> Option<(u64, f64)> {
    let exe = std::env::current_exe().ok()?;
    let out = Command::new("valgrind")
        .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
        .arg(exe)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let collected = stderr.lines().find_map(|l| l.split("Collected :").nth(1))?.trim().parse().ok()?;
    let units = String::from_utf8_lossy(&out.stdout).trim().parse().ok()?;
    Some((collected, units))
}

/// Instructions per unit of work: the child's run less the same child stopped just before the
/// simulation (process start, loading and compiling the scenario).
fn instructions_per_unit(args: &[String]) -> Option<(f64, f64)> {
    let (full, units) = callgrind(args)?;
    let mut dry = args.to_vec();
    dry.push("dry".into());
    let (setup, _) = callgrind(&dry)?;
    Some(((full.saturating_sub(setup)) as f64 / units, units))
}

/// The engine's M/M/c: one station with `servers` exponential servers (mean 100 ms), Poisson
/// arrivals, the caller's timeout `timeout_ms` (0: none), warm-up 0.
fn engine_mmc(servers: u32, rate_per_s: f64, mean_ms: f64, timeout_ms: f64, duration_s: f64) -> Model {
    load(
        "scenarios/mmc.toml",
        &[
            &format!("dependency.station.servers={servers}"),
            &format!("dependency.station.service_time.mean_ms={mean_ms}"),
            &format!("workflow.customers.arrivals.rate_per_s={rate_per_s}"),
            &format!("policy.plain.timeout_ms={timeout_ms}"),
            &format!("simulation.duration_s={duration_s}"),
            "simulation.warmup_s=0",
        ],
    )
}

struct QueueCase {
    label: &'static str,
    servers: u32,
    rate_per_s: f64,
    mean_ms: f64,
    /// The engine variants: (label, timeout_ms).
    engines: &'static [(&'static str, f64)],
}

const QUEUE_CASES: [QueueCase; 2] = [
    QueueCase {
        label: "M/M/4, rho 0.8",
        servers: 4,
        rate_per_s: 32.0,
        mean_ms: 100.0,
        engines: &[("engine, timeouts armed (60 s)", 60_000.0), ("engine, no timeout", 0.0)],
    },
    QueueCase {
        label: "M/M/10, rho 0.9",
        servers: 10,
        rate_per_s: 90.0,
        mean_ms: 100.0,
        engines: &[("engine (scenarios/mmc.toml)", 0.0)],
    },
];

fn bare(with_callgrind: bool) {
    const ROUNDS: usize = 9;
    for case in &QUEUE_CASES {
        // About 1.6 million customers a run.
        let duration_s = 1.6e6 / case.rate_per_s;
        let models: Vec<Model> = case
            .engines
            .iter()
            .map(|&(_, timeout)| engine_mmc(case.servers, case.rate_per_s, case.mean_ms, timeout, duration_s))
            .collect();
        let mut jobs: Vec<Timed<'_>> = vec![Box::new(|| {
            let start = Instant::now();
            let r = bare_mmc::mmc(case.servers, case.mean_ms * 1e3, case.rate_per_s, (duration_s * 1e6) as u64, 1);
            (r.served as f64, start.elapsed().as_secs_f64())
        })];
        for model in &models {
            jobs.push(Box::new(move || timed_simulation(model, 0)));
        }
        let rates = interleaved(ROUNDS, &mut jobs);
        println!(
            "{} ({:.1} million customers a run, {ROUNDS} rounds in rotating order):",
            case.label,
            duration_s * case.rate_per_s / 1e6
        );
        println!(
            "  {:<34} {:>6.2} million customers/s per thread",
            "bare binary-heap loop",
            median(rates[0].clone()) / 1e6
        );
        for (k, (label, _)) in case.engines.iter().enumerate() {
            let ratios: Vec<f64> = rates[k + 1].iter().zip(&rates[0]).map(|(e, b)| e / b).collect();
            let (lo, hi) = min_max(&ratios);
            println!(
                "  {:<34} {:>6.2} million customers/s per thread; engine / bare {:.3} (median of pairs; {lo:.3}-{hi:.3})",
                label,
                median(rates[k + 1].clone()) / 1e6,
                median(ratios.clone()),
            );
        }
        if with_callgrind {
            let short_s = (duration_s / 5.0).to_string();
            let bare = instructions_per_unit(&[
                "--once".into(),
                "bare".into(),
                case.servers.to_string(),
                case.mean_ms.to_string(),
                case.rate_per_s.to_string(),
                short_s.clone(),
            ]);
            let mut line = format!(
                "  instructions per customer (callgrind, {short_s} s simulated): bare {:.0}",
                bare.map_or(f64::NAN, |b| b.0)
            );
            for (label, timeout) in case.engines {
                let engine = instructions_per_unit(&[
                    "--once".into(),
                    "engine".into(),
                    case.servers.to_string(),
                    case.mean_ms.to_string(),
                    case.rate_per_s.to_string(),
                    timeout.to_string(),
                    short_s.clone(),
                ]);
                let (e, b) = (engine.map_or(f64::NAN, |e| e.0), bare.map_or(f64::NAN, |b| b.0));
                line += &format!("; {label} {e:.0} (bare / engine {:.3})", b / e);
            }
            println!("{line}");
        }
    }
}

fn incident() {
    let model = load(INCIDENT, &["simulation.warmup_s=0"]);
    for (p, policy) in model.policies.iter().enumerate() {
        let (median_rate, all) = rate(5, || timed_simulation(&model, p));
        let (lo, hi) = min_max(&all);
        println!(
            "incident, policy {}: {:.0} thousand root runs/s per thread (median of 5; {:.0}-{:.0})",
            policy.name,
            median_rate / 1e3,
            lo / 1e3,
            hi / 1e3
        );
    }
}

/// Every mechanism active at once: breakers per operation class, effect bulkheads, a global
/// gRPC retry budget and hedged reads (benches/mechanisms.toml).
fn mechanisms() {
    let model = load("benches/mechanisms.toml", &[]);
    let (median_rate, all) = rate(5, || timed_simulation(&model, 0));
    let (lo, hi) = min_max(&all);
    println!(
        "mechanisms (breakers, bulkheads, retry budget, hedging): {:.0} thousand root runs/s per thread (median of {}; min {:.0}, max {:.0})",
        median_rate / 1e3,
        all.len(),
        lo / 1e3,
        hi / 1e3
    );
}

fn incident_variants() -> Vec<(capabilities::Variant, Model)> {
    let text = std::fs::read_to_string(INCIDENT).expect("the incident scenario");
    // Warm-up 0: every root run counts, so root runs per second is simulated runs per second.
    let mut doc: toml::Table = text.parse().expect("the incident parses as TOML");
    let simulation = doc.get_mut("simulation").and_then(toml::Value::as_table_mut).expect("[simulation]");
    simulation.insert("warmup_s".into(), toml::Value::Integer(0));
    let text = toml::to_string(&doc).expect("a TOML table serialises");
    capabilities::variants(&text)
        .into_iter()
        .filter_map(|v| {
            // A variant the scenario rules refuse is named and left out, not a panic that
            // would lose the other rows (tests/bench_capabilities.rs fails on it).
            let source = Source::from_text(&format!("incident ({})", v.label), &v.text, Format::Toml);
            match parse_source(&source).and_then(|s| Model::compile(&s, &source)) {
                Ok(model) => Some((v, model)),
                Err(e) => {
                    eprintln!("capabilities: variant `{}` left out: {e}", v.label);
                    None
                }
            }
        })
        .collect()
}

/// Runs one variant's simulation; (root runs, events, attempts).
fn run_variant(v: &capabilities::Variant, model: &Model, policy: usize) -> (f64, f64, f64) {
    let r = if v.traced {
        simulate_following(model, policy, 1, RunTracer::for_runs(&[1])).expect("simulation runs").0
    } else {
        simulate(model, policy, 1).expect("simulation runs")
    };
    (r.metrics["logical_run_total"], r.events as f64, r.metrics["dependency_attempt_total"])
}

fn capabilities(with_callgrind: bool) {
    const ROUNDS: usize = 5;
    let variants = incident_variants();
    let policies: Vec<String> = variants[0].1.policies.iter().map(|p| p.name.clone()).collect();
    for (p, policy) in policies.iter().enumerate() {
        let mut jobs: Vec<Timed<'_>> = variants
            .iter()
            .map(|(v, model)| -> Timed<'_> {
                Box::new(move || {
                    let start = Instant::now();
                    let (runs, _, _) = run_variant(v, model, p);
                    (runs, start.elapsed().as_secs_f64())
                })
            })
            .collect();
        let rates = interleaved(ROUNDS, &mut jobs);
        println!(
            "incident, policy {policy}, one capability family switched at a time ({ROUNDS} rounds in rotating order):"
        );
        println!(
            "  {:<18} {:>14} {:>14} {:>14} {:>14}{}",
            "variant",
            "root runs/s",
            "/ baseline",
            "events/run",
            "attempts/run",
            if with_callgrind { "    instr/run   / baseline" } else { "" }
        );
        let mut base_instructions = f64::NAN;
        for (k, (v, model)) in variants.iter().enumerate() {
            let (runs, events, attempts) = run_variant(v, model, p);
            let mut line = format!(
                "  {:<18} {:>13.0}k {:>14.3} {:>14.1} {:>14.2}",
                v.label,
                median(rates[k].clone()) / 1e3,
                paired_ratio(&rates[k], &rates[0]),
                events / runs,
                attempts / runs
            );
            if with_callgrind {
                let instructions =
                    instructions_per_unit(&["--once".into(), "incident".into(), k.to_string(), p.to_string()])
                        .map_or(f64::NAN, |x| x.0);
                if k == 0 {
                    base_instructions = instructions;
                }
                line += &format!(" {:>12.0} {:>11.3}", instructions, instructions / base_instructions);
            }
            println!("{line}");
        }
    }
}

fn mm1() {
    // rho 0.8: lambda 80/s, mean service 10 ms; 2 million customers a run.
    let model = engine_mmc(1, 80.0, 10.0, 0.0, 25_000.0);
    let r = simulate(&model, 0, 1).expect("simulation runs");
    let per_customer = r.events as f64 / r.metrics["logical_run_total"];
    let mut jobs: Vec<Timed<'_>> = vec![
        Box::new(|| {
            let start = Instant::now();
            let r = simulate(&model, 0, 1).expect("simulation runs");
            (r.events as f64, start.elapsed().as_secs_f64())
        }),
        Box::new(|| {
            let start = Instant::now();
            let r = bare_mmc::mmc(1, 10_000.0, 80.0, 25_000_000_000, 1);
            (r.events as f64, start.elapsed().as_secs_f64())
        }),
    ];
    let rates = interleaved(7, &mut jobs);
    let (lo, hi) = min_max(&rates[0]);
    println!(
        "M/M/1 (rho 0.8): engine {:.2} million events/s per core (median of 7; {:.2}-{:.2}), {:.2} events per customer, {:.2} million customers/s; bare loop {:.1} million events/s (2 per customer)",
        median(rates[0].clone()) / 1e6,
        lo / 1e6,
        hi / 1e6,
        per_customer,
        median(rates[0].clone()) / per_customer / 1e6,
        median(rates[1].clone()) / 1e6,
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

fn child(args: &[&str]) -> Vec<f64> {
    let exe = std::env::current_exe().expect("own path");
    let out = Command::new(&exe).args(args).output().expect("child runs");
    assert!(out.status.success(), "child {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).split_whitespace().map(|w| w.parse().expect("a number")).collect()
}

fn memory() {
    let mut peaks = Vec::new();
    for duration in ["2400", "24000"] {
        peaks.push((duration, child(&["--child-memory", duration])[0]));
    }
    for (d, kib) in &peaks {
        println!("incident, duration {d} s (both policies): peak RSS {:.1} MiB", kib / 1024.0);
    }
    if peaks[0].1 > 0.0 {
        println!("peak RSS ratio for 10x the duration: {:.2}", peaks[1].1 / peaks[0].1);
    }
    for (label, timeout_ms) in [("no timeout", "0"), ("caller's timeout armed", "1500000")] {
        // About 1 000 and about 1 000 000 root runs in flight at the end of arrivals.
        let small = child(&["--child-in-flight", "1", timeout_ms]);
        let large = child(&["--child-in-flight", "1000", timeout_ms]);
        let per_run = (large[0] - small[0]) * 1024.0 / (large[1] - small[1]);
        println!(
            "runs in flight ({label}): {:.0} runs, peak RSS {:.0} MiB ({:.0} runs: {:.1} MiB); {:.0} bytes per run in flight",
            large[1],
            large[0] / 1024.0,
            small[1],
            small[0] / 1024.0,
            per_run
        );
    }
}

fn child_memory(duration: &str) {
    // The fault window moves with nothing: it stays at 600-1800 s; the rest is steady load.
    let model = load(INCIDENT, &[&format!("simulation.duration_s={duration}")]);
    for p in 0..model.policies.len() {
        simulate(&model, p, 1).expect("simulation runs");
    }
    println!("{}", peak_rss_kib());
}

/// A slow dependency (every call takes 1 000 s, enough servers for all) under a long
/// deadline: every root run that arrives in the first 1 000 s is still in flight at 1 000 s.
fn in_flight_scenario(rate_per_s: &str, timeout_ms: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 1000
warmup_s = 0
seed = 1
replications = 1
max_in_flight_runs = 10000000

[[dependency]]
name = "slow"
servers = 1000000
queue_capacity = 1000000
service_time = {{ dist = "constant", value_ms = 1000000 }}

[[workflow]]
name = "patient"
arrivals = {{ rate_per_s = {rate_per_s} }}
deadline_ms = 100000000

  [[workflow.step]]
  id = "wait"
  dependency = "slow"

[policy.plain]
deadline_propagation = false
timeout_ms = {timeout_ms}
retry = {{ max_attempts = 1 }}
"#
    )
}

fn child_in_flight(rate_per_s: &str, timeout_ms: &str) {
    let model = model_from_text("in-flight.toml", &in_flight_scenario(rate_per_s, timeout_ms));
    let r = simulate(&model, 0, 1).expect("simulation runs");
    println!("{} {}", peak_rss_kib(), r.metrics["logical_run_total"]);
}

fn sweep_speedup() {
    let mut models = Vec::new();
    for tokens in 0..4 {
        models.push(load(
            INCIDENT,
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
        let start = Instant::now();
        run_tasks(&models, &tasks, jobs, "bench", &|_| String::new()).expect("sweep runs");
        (tasks.len() as f64, start.elapsed().as_secs_f64())
    };
    let mut jobs: Vec<Timed<'_>> = vec![Box::new(|| time(1)), Box::new(|| time(2))];
    let rates = interleaved(3, &mut jobs);
    println!(
        "sweep of {} simulations: --jobs 1 {:.2} s, --jobs 2 {:.2} s, speed-up {:.2}x (median of 3 pairs)",
        tasks.len(),
        tasks.len() as f64 / median(rates[0].clone()),
        tasks.len() as f64 / median(rates[1].clone()),
        paired_ratio(&rates[1], &rates[0])
    );
}

/// One piece of work for callgrind, printing its units of work (customers, root runs); with
/// a last argument `dry` it stops just before simulating.
fn once(args: &[String]) {
    let dry = args.last().is_some_and(|a| a == "dry");
    let num = |i: usize| -> f64 { args[i].parse().expect("a number") };
    let units = match args[0].as_str() {
        "bare" => {
            let (servers, mean_ms, rate_per_s, duration_s) = (num(1) as u32, num(2), num(3), num(4));
            if dry {
                0.0
            } else {
                bare_mmc::mmc(servers, mean_ms * 1e3, rate_per_s, (duration_s * 1e6) as u64, 1).served as f64
            }
        }
        "engine" => {
            let model = engine_mmc(num(1) as u32, num(3), num(2), num(4), num(5));
            if dry { 0.0 } else { simulate(&model, 0, 1).expect("simulation runs").metrics["logical_run_total"] }
        }
        "incident" => {
            let variants = incident_variants();
            let (v, model) = &variants[num(1) as usize];
            if dry { 0.0 } else { run_variant(v, model, num(2) as usize).0 }
        }
        other => panic!("unknown --once job {other}"),
    };
    println!("{units}");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--child-memory") {
        child_memory(&args[i + 1]);
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--child-in-flight") {
        child_in_flight(&args[i + 1], &args[i + 2]);
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--once") {
        once(&args[i + 1..]);
        return;
    }
    let with_callgrind = args.iter().any(|a| a == "--callgrind");
    // `cargo bench` passes `--bench`; any other word names a section.
    let chosen: Vec<&str> = args.iter().filter(|a| !a.starts_with("--")).map(String::as_str).collect();
    let wanted = |name: &str| chosen.is_empty() || chosen.contains(&name);
    if wanted("bare") {
        bare(with_callgrind);
    }
    if wanted("incident") {
        incident();
    }
    if wanted("mechanisms") {
        mechanisms();
    }
    if wanted("capabilities") {
        capabilities(with_callgrind);
    }
    if wanted("mm1") {
        mm1();
    }
    if wanted("memory") {
        memory();
    }
    if wanted("sweep") {
        sweep_speedup();
    }
}
