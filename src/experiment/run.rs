//! `faultline run` and `faultline validate`.

use super::CommandError;
use super::batch::{Loaded, Task, Workers, check_batch_size, load_model, replication_seed};
use super::folder::OutputFolder;
use super::output::{SeriesSum, number, summary_json, timeseries_csv};
use super::slo::{compile_slo, compile_slo_with};
use super::table::{half_width, human, render};
use crate::engine::{Model, Replication};
use crate::metrics::MetricMap;
use crate::metrics::stats::{Aggregate, aggregate};
use crate::scenario::{Override, ScenarioError, parse_override, quote};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    Text,
    Json,
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub scenario: PathBuf,
    pub policies: Vec<String>,
    pub seed: Option<u64>,
    pub replications: Option<u32>,
    pub sets: Vec<String>,
    pub out: Option<PathBuf>,
    pub format: OutputFormat,
    pub jobs: usize,
    /// Run only replication K (numbered from 0) of each policy: exactly its figures in a full
    /// run, since its seed depends only on the root seed and K.
    pub replication: Option<u32>,
}

/// `--replications` becomes an override, so it gets the same checks as the file. `--seed` is
/// applied after compilation (see [`apply_seed`]): TOML integers stop at 2^63 - 1, seeds do not.
pub fn collect_overrides(sets: &[String], replications: Option<u32>) -> Result<Vec<Override>, ScenarioError> {
    let mut overrides: Vec<Override> = sets.iter().map(|s| parse_override(s)).collect::<Result<_, _>>()?;
    if let Some(n) = replications {
        let mut o = parse_override(&format!("simulation.replications={n}"))?;
        o.argument = format!("--replications {n}");
        overrides.push(o);
    }
    Ok(overrides)
}

/// Sets the root seed from `--seed`; returns the arguments to record as provenance.
pub fn apply_seed(model: &mut Model, seed: Option<u64>, overrides: &[Override]) -> Vec<String> {
    let mut applied: Vec<String> = overrides.iter().map(|o| o.argument.clone()).collect();
    if let Some(seed) = seed {
        model.world.seed = seed;
        applied.push(format!("--seed {seed}"));
    }
    applied
}

/// Resolves policy names (all of the scenario's when none are given).
/// `flag` names the option the names came from, for error messages.
pub fn select_policies(model: &Model, names: &[String], flag: &str) -> Result<Vec<usize>, CommandError> {
    if names.is_empty() {
        return Ok((0..model.policies.len()).collect());
    }
    if let Some((_, n)) = names.iter().enumerate().find(|(i, n)| names[..*i].contains(n)) {
        return Err(CommandError::Input(format!(
            "argument {}: the policy is named twice",
            quote(&format!("{flag} {n}"))
        )));
    }
    names
        .iter()
        .map(|n| {
            model.policy_index(n).ok_or_else(|| {
                let known = model.policies.iter().map(|p| p.name.as_str());
                CommandError::Input(format!(
                    "argument {}: {}",
                    quote(&format!("{flag} {n}")),
                    crate::scenario::unknown_name("policy", n, known)
                ))
            })
        })
        .collect()
}

/// What a command keeps of one policy's replications: each replication's metrics, in
/// replication order, and the sum of their time series.
pub struct PolicyRuns {
    pub metrics: Vec<MetricMap>,
    pub series: SeriesSum,
    /// The index of `metrics[0]`: replications are consecutive from here.
    pub first_replication: u32,
}

/// Runs every replication of each policy on the same seeds (see [`run_replications`]).
pub fn run_policies(model: &Model, policies: &[usize], jobs: usize) -> Result<Vec<PolicyRuns>, CommandError> {
    run_replications(model, policies, 0..model.world.replications, jobs)
}

/// Runs replications `indices` of each policy on the same seeds. A replication's time series is added
/// to its policy's sum as soon as it finishes (integer sums: the order does not matter), so
/// memory holds one series per policy, not one per replication.
pub fn run_replications(
    model: &Model,
    policies: &[usize],
    indices: std::ops::Range<u32>,
    jobs: usize,
) -> Result<Vec<PolicyRuns>, CommandError> {
    let world = &model.world;
    let count = indices.len();
    let tasks: Vec<Task> = policies
        .iter()
        .flat_map(|&policy| {
            indices.clone().map(move |r| Task {
                model: 0,
                policy,
                replication: r,
                seed: replication_seed(world.seed, r),
            })
        })
        .collect();
    check_batch_size(Some(tasks.len()))?;
    let sums: Vec<Mutex<SeriesSum>> = policies.iter().map(|_| Mutex::new(SeriesSum::default())).collect();
    let workers = Workers::start(jobs, tasks.len() as u64, &model.name)?;
    let keep = |t: &Task, r: Replication| {
        // Policies are distinct (select_policies), so the position is the policy's slot.
        let slot = policies.iter().position(|&p| p == t.policy).expect("a task's policy was selected");
        sums[slot].lock().unwrap_or_else(|p| p.into_inner()).add(&r.timeseries);
        r.metrics
    };
    let metrics = workers.simulate(std::slice::from_ref(model), &tasks, &|_| String::new(), &keep);
    workers.finish();
    let mut metrics = metrics?.into_iter();
    Ok(sums
        .into_iter()
        .map(|sum| PolicyRuns {
            metrics: metrics.by_ref().take(count).collect(),
            first_replication: indices.start,
            series: sum.into_inner().unwrap_or_else(|p| p.into_inner()),
        })
        .collect())
}

/// The metrics shown side by side, in this order; per-dependency rows follow.
const HEADLINE: [&str; 23] = [
    "logical_run_total",
    "auto_completion_ratio",
    "safe_outcome_ratio",
    "deadline_exceeded_ratio",
    "outcome_total.succeeded",
    "outcome_total.degraded",
    "outcome_total.handoff",
    "outcome_total.failed",
    "outcome_total.rejected",
    "run_latency_ms.p50",
    "run_latency_ms.p95",
    "run_latency_ms.p99",
    "retry_amplification_ratio",
    "dependency_attempt_total",
    "cost_per_success",
    "duplicate_effect_total",
    "effect_unknown_total",
    "reconciled_total",
    "budget_exhausted_total.time",
    "budget_exhausted_total.retry",
    "budget_exhausted_total.cost",
    "budget_exhausted_total.concurrency",
    "queue_rejected_total",
];

/// Mechanism and recovery figures worth a row: those some policy actually produced (a
/// non-zero, defined mean), in the map's order, so a scenario without them keeps its table.
fn mechanism_rows(aggregates: &[Aggregate]) -> Vec<String> {
    let wanted = |name: &str| {
        name.starts_with("refused_total.")
            || name.starts_with("hedge_")
            || name.starts_with("admission_")
            || name.starts_with("recovery_")
            || (name.starts_with("breaker.") && name.contains(".transition_total.open"))
    };
    let produced = |name: &str| {
        aggregates.iter().any(|a| a.estimates.get(name).is_some_and(|e| e.mean != 0.0 && !e.mean.is_nan()))
    };
    let mut names: Vec<String> = Vec::new();
    for a in aggregates {
        for name in a.estimates.keys() {
            if wanted(name) && produced(name) && !names.contains(name) {
                names.push(name.clone());
            }
        }
    }
    names.sort();
    names
}

pub fn side_by_side(model: &Model, names: &[&str], aggregates: &[Aggregate]) -> String {
    let mut header = vec!["metric".to_string()];
    header.extend(names.iter().map(|n| n.to_string()));
    let mut metrics: Vec<String> = HEADLINE.iter().map(|m| m.to_string()).collect();
    metrics.extend(mechanism_rows(aggregates));
    for d in &model.dependency_names {
        for m in ["attempt_total", "utilization", "wasted_service_ratio"] {
            metrics.push(format!("dependency.{d}.{m}"));
        }
    }
    let rows: Vec<Vec<String>> = metrics
        .iter()
        .map(|m| {
            let mut row = vec![m.clone()];
            for a in aggregates {
                row.push(match a.estimates.get(m) {
                    Some(e) if !e.low.is_nan() && e.high > e.low => {
                        format!("{} ±{}", human(e.mean), half_width((e.high - e.low) / 2.0))
                    }
                    Some(e) => human(e.mean),
                    None => "n/a".into(),
                });
            }
            row
        })
        .collect();
    render(&header, &rows)
}

/// `--replication K` names one of the scenario's replications.
pub fn check_replication(model: &Model, k: u32) -> Result<(), CommandError> {
    if k < model.world.replications {
        return Ok(());
    }
    Err(CommandError::Input(format!(
        "argument `--replication {k}`: the scenario runs {} replication(s), numbered from 0 to {}",
        model.world.replications,
        model.world.replications - 1
    )))
}

pub fn run(opts: &RunOptions) -> Result<String, CommandError> {
    let overrides = collect_overrides(&opts.sets, opts.replications)?;
    let Loaded { mut model, scenario, source } = load_model(&opts.scenario, &overrides)?;
    let mut raw_overrides = apply_seed(&mut model, opts.seed, &overrides);
    // The SLO section is checked here too, so a bad file never produces output.
    compile_slo_with(scenario.slo.as_ref(), &model, &source, &overrides)?;
    let policies = select_policies(&model, &opts.policies, "--policy")?;
    let indices = match opts.replication {
        None => 0..model.world.replications,
        Some(k) => {
            check_replication(&model, k)?;
            raw_overrides.push(format!("--replication {k}"));
            k..k + 1
        }
    };
    let results = run_replications(&model, &policies, indices.clone(), opts.jobs)?;
    let aggregates: Vec<Aggregate> = results.iter().map(|r| aggregate(&r.metrics)).collect();
    let names: Vec<&str> = policies.iter().map(|&p| model.policies[p].name.as_str()).collect();

    let out_dir = opts.out.clone().unwrap_or_else(|| Path::new("results").join(&model.name));
    // Built once: making the names builds a whole metric map.
    let metric_names = model.metric_names();
    let mut files = OutputFolder::create(&out_dir)?;
    for ((name, agg), runs) in names.iter().zip(&aggregates).zip(&results) {
        files.write(
            &format!("{name}/summary.json"),
            &summary_json(&model, name, model.world.seed, &raw_overrides, agg),
        )?;
        let labels = model.labels(model.policy_index(name).expect("selected policies exist"));
        files.write(
            &format!("{name}/timeseries.csv"),
            &timeseries_csv(&model, &labels, &runs.series, runs.metrics.len()),
        )?;
        files.write(&format!("{name}/replications.csv"), &replications_csv(&model, &metric_names, runs))?;
    }
    files.write("report.html", super::report::run_report(&model, &names, &aggregates, &results).as_bytes())?;
    let written: Vec<String> =
        files.commit("run", &model.name)?.iter().map(|f| out_dir.join(f).display().to_string()).collect();

    Ok(match opts.format {
        OutputFormat::Json => {
            let mut text = String::from("{");
            for (i, (name, agg)) in names.iter().zip(&aggregates).enumerate() {
                if i > 0 {
                    text.push(',');
                }
                let summary = summary_json(&model, name, model.world.seed, &raw_overrides, agg);
                text.push_str(&format!(
                    "\n  {}: {}",
                    serde_json::to_string(name).unwrap_or_default(),
                    String::from_utf8_lossy(&summary).trim_end()
                ));
            }
            text.push_str("\n}\n");
            text
        }
        OutputFormat::Text => {
            let which = match opts.replication {
                Some(k) => format!(
                    "replication {k} of {} (seed {})",
                    model.world.replications,
                    replication_seed(model.world.seed, k)
                ),
                None => format!("{} replication(s)", model.world.replications),
            };
            let mut text = format!(
                "{}: {which} of {} s simulated (warm-up {} s), seed {}\n\n",
                model.name,
                model.world.duration_us as f64 / 1e6,
                model.world.warmup_us as f64 / 1e6,
                model.world.seed
            );
            text.push_str(&side_by_side(&model, &names, &aggregates));
            text.push_str("\n± is the half-width of the 95 % confidence interval over replications.\n");
            text.push_str(&format!("wrote {}\n", written.join(", ")));
            text
        }
    })
}

/// One row per replication: its index, its seed and every metric, so any replication can be
/// found again (`--replication K`) and its figures checked.
pub fn replications_csv(model: &Model, names: &[String], runs: &PolicyRuns) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["replication".to_string(), "seed".to_string()];
    header.extend(names.iter().cloned());
    w.write_record(&header).expect("writing to memory cannot fail");
    for (i, metrics) in runs.metrics.iter().enumerate() {
        let k = runs.first_replication + i as u32;
        let mut record = vec![k.to_string(), replication_seed(model.world.seed, k).to_string()];
        record.extend(names.iter().map(|n| metrics.get(n).map(|v| number(*v)).unwrap_or_default()));
        w.write_record(&record).expect("writing to memory cannot fail");
    }
    w.into_inner().expect("flushing memory cannot fail")
}

pub fn validate(path: &Path) -> Result<String, CommandError> {
    let Loaded { model, scenario, source } = load_model(path, &[])?;
    let slo = compile_slo(scenario.slo.as_ref(), &model, &source)?;
    let policies: Vec<&str> = model.policies.iter().map(|p| p.name.as_str()).collect();
    Ok(format!(
        "{}: ok ({} dependencies, {} workflows, {} faults, policies: {}, {} SLO checks, {} regression checks)\n",
        source.path,
        model.world.dependencies.len(),
        model.workflows.len(),
        model.world.faults.len(),
        policies.join(", "),
        slo.thresholds.len(),
        slo.regressions.len()
    ))
}
