//! `faultline run` and `faultline validate`.

use crate::engine::Model;
use crate::experiment::batch::load::{
    Loaded, apply_seed, check_replication, collect_overrides, load_model, select_policies,
};
use crate::experiment::batch::replications::{PolicyRuns, run_replications};
use crate::experiment::batch::slo::{compile_slo, compile_slo_with};
use crate::experiment::batch::workers::{Workers, replication_seed};
use crate::experiment::command::{CommandError, OutputFormat};
use crate::experiment::output::folder::OutputFolder;
use crate::experiment::output::formats::{number, scenario_digest, summary_json, timeseries_csv};
use crate::experiment::replay::sample_traces;
use crate::experiment::report::html::run_report;
use crate::experiment::report::table::{half_width, human, render};
use crate::metrics::stats::{Aggregate, aggregate};
use crate::scenario::ScenarioInput;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub scenario: ScenarioInput,
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
    /// Export this many sampled runs of each replication as OTLP/JSON traces.
    pub traces: Option<u32>,
}

/// Traced runs per replication `--traces` accepts: each is followed in memory.
pub const MAX_TRACES_PER_REPLICATION: u32 = 100_000;

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

/// Long-running tasks' rows, when some policy produced them.
const TASK_ROWS: [&str; 8] = [
    "task_created_total",
    "task_duplicate_total",
    "orphan_task_total",
    "cancel_ignored_total",
    "cost_after_caller_left_units_total",
    "cost_after_cancel_units_total",
    "late_result_total",
    "task_running_at_end_total",
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
            || TASK_ROWS.contains(&name)
            || (name.starts_with("dependency.")
                && (name.ends_with(".recovery_peak_ratio") || name.ends_with(".fault_peak_ratio")))
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

fn side_by_side(model: &Model, names: &[&str], aggregates: &[Aggregate]) -> String {
    let mut header = vec!["metric".to_string()];
    header.extend(names.iter().map(|n| n.to_string()));
    let mut metrics: Vec<String> = HEADLINE.iter().map(|m| m.to_string()).collect();
    metrics.extend(mechanism_rows(aggregates));
    for d in &model.dependency_names {
        for m in ["attempt_total", "control_request_total", "utilization", "wasted_service_ratio"] {
            let name = format!("dependency.{d}.{m}");
            // Control requests exist only where tasks do.
            if m != "control_request_total" || aggregates.iter().any(|a| a.estimates.contains_key(&name)) {
                metrics.push(name);
            }
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

pub fn run(opts: &RunOptions) -> Result<String, CommandError> {
    let results = simulate_run(opts)?;
    let out_dir = opts.out.clone().unwrap_or_else(|| Path::new("results").join(&results.model.name));
    let written = results.write(&out_dir)?;
    Ok(match opts.format {
        OutputFormat::Json => results.json(),
        OutputFormat::Text => results.text(&written),
    })
}

/// Everything `run` does but writing: the replications simulated and reduced, the files'
/// contents ready ([`RunResults::each_file`]). `opts.out` and `opts.format` are not read.
pub fn simulate_run(opts: &RunOptions) -> Result<RunResults, CommandError> {
    let overrides = collect_overrides(&opts.sets, opts.replications)?;
    let Loaded { mut model, scenario, source } = load_model(&opts.scenario, &overrides)?;
    let mut arguments = apply_seed(&mut model, opts.seed, &overrides);
    // The SLO section is checked here too, so a bad file never produces output.
    compile_slo_with(scenario.slo.as_ref(), &model, &source, &overrides)?;
    let policies = select_policies(&model, &opts.policies, "--policy")?;
    let indices = match opts.replication {
        None => 0..model.world.replications,
        Some(k) => {
            check_replication(&model, k)?;
            arguments.push(format!("--replication {k}"));
            k..k + 1
        }
    };
    if let Some(k) = opts.traces
        && !(1..=MAX_TRACES_PER_REPLICATION).contains(&k)
    {
        return Err(CommandError::Input(format!(
            "argument `--traces {k}`: give between 1 and {MAX_TRACES_PER_REPLICATION} runs per replication"
        )));
    }
    let runs = run_replications(&model, &policies, indices.clone(), opts.jobs)?;
    let traces = match opts.traces {
        Some(k) => Some(export_traces(&model, &policies, indices, k as usize, opts.jobs)?),
        None => None,
    };
    Ok(RunResults {
        names: policies.iter().map(|&p| model.policies[p].name.clone()).collect(),
        aggregates: runs.iter().map(|r| aggregate(&r.metrics)).collect(),
        runs,
        arguments,
        traces,
        digest: scenario_digest(&scenario),
        replication: opts.replication,
        model,
    })
}

/// Where [`RunResults::each_file`] hands each file: its path in the output folder and its bytes.
pub type FileSink<'a> = dyn FnMut(&str, &[u8]) -> Result<(), CommandError> + 'a;

/// What `run` computed, policy by policy, for its files and its standard output (and the
/// Python package's objects, made from the same files).
pub struct RunResults {
    pub model: Model,
    pub names: Vec<String>,
    pub aggregates: Vec<Aggregate>,
    pub runs: Vec<PolicyRuns>,
    /// The arguments recorded in summary.json.
    arguments: Vec<String>,
    /// Per policy, its sampled runs as OTLP/JSON lines (`--traces`).
    traces: Option<Vec<Vec<u8>>>,
    /// The manifest's `scenario_digest`.
    digest: String,
    /// `--replication K`.
    replication: Option<u32>,
}

/// `--traces K`: every policy's sampled runs, replication by replication, in order (the same
/// bytes for any `--jobs`).
fn export_traces(
    model: &Model,
    policies: &[usize],
    indices: std::ops::Range<u32>,
    k: usize,
    jobs: usize,
) -> Result<Vec<Vec<u8>>, CommandError> {
    use rayon::prelude::*;
    let tasks: Vec<(usize, u32)> = policies.iter().flat_map(|&p| indices.clone().map(move |r| (p, r))).collect();
    let workers = Workers::start(jobs, 2 * tasks.len() as u64, "tracing")?;
    let lines: Vec<Result<Vec<u8>, CommandError>> = workers.install(|| {
        tasks
            .par_iter()
            .map(|&(policy, r)| {
                let traced = sample_traces(model, policy, Some(r), replication_seed(model.world.seed, r), k);
                workers.tick();
                workers.tick();
                traced
            })
            .collect()
    });
    workers.finish();
    let mut per_policy = vec![Vec::new(); policies.len()];
    for ((policy_slot, _), result) in
        tasks.iter().map(|&(p, r)| (policies.iter().position(|&q| q == p).unwrap_or(0), r)).zip(lines)
    {
        per_policy[policy_slot].extend(result?);
    }
    Ok(per_policy)
}

impl RunResults {
    /// A policy's summary.json.
    pub fn summary(&self, policy: usize) -> Vec<u8> {
        let model = &self.model;
        summary_json(model, &self.names[policy], model.world.seed, &self.arguments, &self.aggregates[policy])
    }

    /// Hands every file of the output set to `file` (its path in the folder, its bytes), one at
    /// a time, in the order they are written: per policy summary.json, timeseries.csv,
    /// replications.csv (and traces.otlp.jsonl), then report.html.
    pub fn each_file(&self, file: &mut FileSink<'_>) -> Result<(), CommandError> {
        let model = &self.model;
        // Built once: making the names builds a whole metric map.
        let metric_names = model.metric_names();
        for (i, (name, runs)) in self.names.iter().zip(&self.runs).enumerate() {
            file(&format!("{name}/summary.json"), &self.summary(i))?;
            let labels = model.labels(model.policy_index(name).expect("selected policies exist"));
            file(&format!("{name}/timeseries.csv"), &timeseries_csv(model, &labels, &runs.series, runs.metrics.len()))?;
            file(&format!("{name}/replications.csv"), &replications_csv(model, &metric_names, runs))?;
            if let Some(traces) = &self.traces {
                file(&format!("{name}/traces.otlp.jsonl"), &traces[i])?;
            }
        }
        let names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        file("report.html", run_report(model, &names, &self.aggregates, &self.runs).as_bytes())
    }

    /// Writes every policy's files and report.html as one set; returns the paths written.
    pub fn write(&self, out_dir: &Path) -> Result<Vec<String>, CommandError> {
        let mut files = OutputFolder::create(out_dir)?;
        files.set_scenario_digest(self.digest.clone());
        self.each_file(&mut |path, bytes| files.write(path, bytes))?;
        Ok(files.commit("run", &self.model.name)?.iter().map(|f| out_dir.join(f).display().to_string()).collect())
    }

    /// Every policy's summary.json in one JSON object.
    pub fn json(&self) -> String {
        let mut text = String::from("{");
        for (i, name) in self.names.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(&format!(
                "\n  {}: {}",
                serde_json::to_string(name).unwrap_or_default(),
                String::from_utf8_lossy(&self.summary(i)).trim_end()
            ));
        }
        text.push_str("\n}\n");
        text
    }

    /// The policies side by side, under a line saying what was simulated (and the files
    /// written, if any).
    pub fn text(&self, written: &[String]) -> String {
        let world = &self.model.world;
        let which = match self.replication {
            Some(k) => format!("replication {k} of {} (seed {})", world.replications, replication_seed(world.seed, k)),
            None => format!("{} replication(s)", world.replications),
        };
        let mut text = format!(
            "{}: {which} of {} s simulated (warm-up {} s), seed {}\n\n",
            self.model.name,
            world.duration_us as f64 / 1e6,
            world.warmup_us as f64 / 1e6,
            world.seed
        );
        let names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        text.push_str(&side_by_side(&self.model, &names, &self.aggregates));
        text.push_str("\n± is the half-width of the 95 % confidence interval over replications.\n");
        if !written.is_empty() {
            text.push_str(&format!("wrote {}\n", written.join(", ")));
        }
        text
    }
}

/// One row per replication: its index, its seed and every metric, so any replication can be
/// found again (`--replication K`) and its figures checked.
fn replications_csv(model: &Model, names: &[String], runs: &PolicyRuns) -> Vec<u8> {
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

pub fn validate(input: &ScenarioInput) -> Result<String, CommandError> {
    let Loaded { model, scenario, source } = load_model(input, &[])?;
    let slo = compile_slo(scenario.slo.as_ref(), &model, &source)?;
    let policies: Vec<&str> = model.policies.iter().map(|p| p.name.as_str()).collect();
    // Warnings name a rule that compiles but may not do what it seems to; they do not fail.
    let warnings: String = model
        .policies
        .iter()
        .filter_map(|p| p.degradation.as_ref())
        .flat_map(|d| &d.warnings)
        .map(|w| format!("warning: {w}\n"))
        .collect();
    Ok(format!(
        "{warnings}{}: ok ({} dependencies, {} workflows, {} faults, policies: {}, {} SLO checks, {} regression checks)\n",
        source.path,
        model.world.dependencies.len(),
        model.workflows.len(),
        model.world.faults.len(),
        policies.join(", "),
        slo.thresholds.len(),
        slo.regressions.len()
    ))
}
