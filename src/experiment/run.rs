//! `faultline run` and `faultline validate`.

use crate::engine::Model;
use crate::experiment::batch::load::{
    Loaded, apply_seed, check_replication, collect_overrides, load_model, select_policies,
};
use crate::experiment::batch::replications::{PolicyRuns, run_replications};
use crate::experiment::batch::slo::SloChecks;
use crate::experiment::batch::slo::{compile_slo, compile_slo_with};
use crate::experiment::batch::workers::{Workers, replication_seed};
use crate::experiment::command::{CommandError, OutputFormat};
use crate::experiment::headline::{Figures, Policy, figures_table, threshold_verdicts, thresholds};
use crate::experiment::output::folder::OutputFolder;
use crate::experiment::output::formats::{number, scenario_digest, summary_json, timeseries_csv};
use crate::experiment::replay::sample_traces;
use crate::experiment::report::html::run_report;
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
    /// The figures of the first table (`--metrics`): empty for the headline, `all` for every one.
    pub metrics: Vec<String>,
    /// Exit 99 when an `[slo]` threshold fails for a policy (`--check-slo`, as k6 exits).
    pub check_slo: bool,
}

/// What `run` prints, and whether every `[slo]` threshold passed for every policy.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub text: String,
    pub passed: bool,
}

/// Traced runs per replication `--traces` accepts: each is followed in memory.
pub const MAX_TRACES_PER_REPLICATION: u32 = 100_000;

pub fn run(opts: &RunOptions) -> Result<RunReport, CommandError> {
    let results = simulate_run(opts)?;
    let out_dir = opts.out.clone().unwrap_or_else(|| Path::new("results").join(&results.model.name));
    let written = results.write(&out_dir)?;
    let text = match opts.format {
        OutputFormat::Json => results.json(),
        OutputFormat::Text => results.text(&written),
    };
    Ok(RunReport { text, passed: results.passed() })
}

/// Everything `run` does but writing: the replications simulated and reduced, the files'
/// contents ready ([`RunResults::each_file`]). `opts.out` and `opts.format` are not read.
pub fn simulate_run(opts: &RunOptions) -> Result<RunResults, CommandError> {
    let overrides = collect_overrides(&opts.sets, opts.replications)?;
    let Loaded { mut model, scenario, source } = load_model(&opts.scenario, &overrides)?;
    let mut arguments = apply_seed(&mut model, opts.seed, &overrides);
    // The SLO section is checked here too, so a bad file never produces output.
    let slo = compile_slo_with(scenario.slo.as_ref(), &model, &source, &overrides)?;
    if opts.check_slo && slo.thresholds.is_empty() {
        return Err(CommandError::Input(format!(
            "argument `--check-slo`: {} has no [slo] thresholds to check (docs/scenario.md section 10)",
            source.path
        )));
    }
    let figures = Figures::parse(&opts.metrics, &model.metric_names())?;
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
        slo,
        figures,
        check_slo: opts.check_slo,
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
    /// The scenario's `[slo]`, judged after the figures.
    slo: SloChecks,
    /// `--metrics`.
    figures: Figures,
    /// `--check-slo`.
    check_slo: bool,
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
        let policies = self.policies();
        for (i, name) in self.names.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            let mut summary = String::from_utf8_lossy(&self.summary(i)).trim_end().to_string();
            // The `[slo]` verdicts as the text prints them, after the summary's fields (k6's
            // --summary-export carries its thresholds' pass or fail the same way).
            if !self.slo.thresholds.is_empty() {
                let verdicts = serde_json::to_string_pretty(&threshold_verdicts(&self.slo, &policies[i]))
                    .expect("verdicts always serialize");
                if let Some(body) = summary.strip_suffix('}') {
                    summary = format!("{},\n  \"slo\": {verdicts}\n}}", body.trim_end());
                }
            }
            text.push_str(&format!("\n  {}: {summary}", serde_json::to_string(name).unwrap_or_default()));
        }
        text.push_str("\n}\n");
        text
    }

    fn policies(&self) -> Vec<Policy<'_>> {
        (0..self.names.len())
            .map(|i| Policy {
                name: &self.names[i],
                aggregate: &self.aggregates[i],
                replications: &self.runs[i].metrics,
            })
            .collect()
    }

    /// False only when `--check-slo` was asked and some `[slo]` threshold failed for a policy.
    pub fn passed(&self) -> bool {
        !self.check_slo || self.failed_thresholds() == 0
    }

    /// How many `[slo]` threshold verdicts failed, over every policy (asked or not with
    /// `--check-slo`): the count the text's `--check-slo` line gives.
    pub fn failed_thresholds(&self) -> usize {
        thresholds(&self.slo, &self.policies()).failed
    }

    /// The headline (or the `--metrics` rows) side by side, then the `[slo]` verdicts, under a
    /// line saying what was simulated (and the files written, if any).
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
        let policies = self.policies();
        text.push_str(&figures_table(&self.figures, &self.slo, &policies));
        let verdicts = thresholds(&self.slo, &policies);
        if !verdicts.text.is_empty() {
            text.push('\n');
            text.push_str(&verdicts.text);
        }
        match (self.check_slo, verdicts.failed) {
            (true, 0) => text.push_str("--check-slo: every threshold passed for every policy.\n"),
            (true, n) => text.push_str(&format!("--check-slo: {n} threshold verdict(s) failed: exit 99.\n")),
            (false, 0) => {}
            (false, _) => text.push_str("(--check-slo makes a failed threshold exit 99, as k6 does.)\n"),
        }
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

/// An `sdk_client` on a dependency none of the policy's steps calls (first or fallback): a
/// remote agent's own calls and a task's work do not go through the policy's SDK clients, so
/// the client is never used.
fn unused_sdk_clients(model: &crate::engine::Model) -> Vec<String> {
    let mut out = Vec::new();
    for p in &model.policies {
        let mut called = vec![false; model.world.dependencies.len()];
        for (w, workflow) in model.workflows.iter().enumerate() {
            for (s, step) in workflow.steps.iter().enumerate() {
                called[step.dependency] = true;
                for c in &p.steps[w][s].fallbacks {
                    called[c.dependency] = true;
                }
            }
        }
        for (d, client) in p.sdk_clients.iter().enumerate() {
            if client.is_some() && !called[d] {
                out.push(format!(
                    "policy.{}.sdk_client.{}: no step calls `{}` (a remote agent's own calls and a task's work do not go through the policy's SDK clients): this client is never used",
                    p.name, model.world.dependencies[d].name, model.world.dependencies[d].name
                ));
            }
        }
    }
    out
}

/// Inputs that compile and do nothing at an approval or advisory step (scenario.md 4.7, 6.1):
/// the runtime never retries, times out, hedges or falls back from an approval, and an advisory
/// step has one attempt and no fallback; an approval desk is no station, so nothing caches or
/// wraps it. Warnings, as an unused `sdk_client` is: the file still runs.
fn ignored_approval_and_advisory_inputs(
    scenario: &crate::scenario::Scenario,
    source: &crate::scenario::Source,
) -> Vec<String> {
    use crate::scenario::types::Criticality;
    use crate::scenario::{FieldPath, error_at_path};
    let desk = |name: &str| scenario.dependencies.iter().position(|d| d.name == name && d.approval.is_some());
    let mut out = Vec::new();
    let mut warn = |path: FieldPath, message: String| out.push(error_at_path(source, &path, message).to_string());
    for (i, d) in scenario.dependencies.iter().enumerate() {
        if d.approval.is_some() && d.cache.is_some() {
            let path = FieldPath::root().key("dependency").index(i).key("cache");
            warn(
                path,
                format!("`{}` is an approval desk, not a station: nothing looks in this cache (ignored)", d.name),
            );
        }
    }
    for (p, policy) in &scenario.policies {
        let pp = FieldPath::root().key("policy").key(p);
        for (what, names) in
            [("cache", policy.cache.keys().collect::<Vec<_>>()), ("sdk_client", policy.sdk_client.keys().collect())]
        {
            for name in names.into_iter().filter(|n| desk(n).is_some()) {
                let message =
                    format!("`{name}` is an approval desk, not a station: no call goes through this {what} (ignored)");
                warn(pp.key(what).key(name), message);
            }
        }
        for (id, o) in &policy.steps {
            let Some(step) = scenario.workflows.iter().flat_map(|w| &w.steps).find(|s| &s.id == id) else { continue };
            let set = [
                ("timeout_ms", o.timeout_ms.is_some()),
                ("first_token_timeout_ms", o.first_token_timeout_ms.is_some()),
                ("max_attempts", o.max_attempts.is_some()),
                ("deadline_reserve_ms", o.deadline_reserve_ms.is_some()),
                ("fallback", o.fallback.is_some()),
                ("fallbacks", o.fallbacks.is_some()),
                // Only an approval ignores it: an advisory step's answer is checked in its window.
                ("validator", o.validator.is_some()),
            ];
            let sp = pp.key("steps").key(id);
            if let Some(d) = desk(&step.dependency) {
                let name = &scenario.dependencies[d].name;
                for (field, _) in set.iter().filter(|(_, on)| *on) {
                    let message = format!(
                        "step `{id}` waits on the approval desk `{name}`: the runtime never retries, times out, validates or falls back from an approval (docs/scenario.md 4.7), so `{field}` is ignored"
                    );
                    warn(sp.key(field), message);
                }
            } else if step.criticality == Criticality::Advisory {
                for (field, _) in
                    set.iter().filter(|(f, on)| *on && matches!(*f, "max_attempts" | "fallback" | "fallbacks"))
                {
                    let message = format!(
                        "step `{id}` is advisory: it has one attempt and no fallback (docs/scenario.md 6.1), so `{field}` is ignored"
                    );
                    warn(sp.key(field), message);
                }
            }
        }
    }
    out
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
        .chain(crate::runtime::failure_domain::failure_domain_warnings(&scenario, &source).iter())
        .map(|w| format!("warning: {w}\n"))
        .chain(unused_sdk_clients(&model).into_iter().map(|w| format!("warning: {w}\n")))
        .chain(ignored_approval_and_advisory_inputs(&scenario, &source).into_iter().map(|w| format!("warning: {w}\n")))
        .chain(
            crate::runtime::quorum_step::quorum_input_warnings(&scenario, &source)
                .into_iter()
                .map(|w| format!("warning: {w}\n")),
        )
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
