//! `faultline replay`: one root run of one replication, as an OpenTelemetry trace (OTLP/JSON)
//! and as the essay's section-25 tree. The replication is simulated whole, exactly as `run`
//! simulates it (tracing only watches), so the traced run is the one the figures counted; a
//! selector such as "the first failed run" needs one more simulation to find it first.

pub mod otlp;
pub mod spans;

use crate::engine::{Model, simulate_following};
use crate::experiment::batch::load::{
    Loaded, apply_seed, check_replication, collect_overrides, load_model, select_policies,
};
use crate::experiment::batch::workers::replication_seed;
use crate::experiment::command::CommandError;
use crate::experiment::output::folder::write_atomically;
use crate::runtime::{RunSummary, RunTracer};
use crate::scenario::ScenarioInput;
use crate::vocab::{Outcome, Refusal};
use otlp::{TraceOrigin, to_otlp_json};
use spans::{RunSpans, build, render_tree};
use std::path::{Path, PathBuf};

/// Which root run to trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunSelector {
    /// The N-th root run to start in the replication (from 1; resubmissions count as runs).
    Number(u64),
    /// The first root run started after the warm-up that matches.
    First(FirstRun),
    /// The first root run started after the warm-up that had an attempt refused for this
    /// reason (`--first refused --refused-by REASON`).
    FirstRefusedBy(Refusal),
}

crate::named_enum! {
    /// What `--first` looks for, among runs started after the warm-up, in start order.
    pub enum FirstRun {
        Failed => "failed",
        Handoff => "handoff",
        Rejected => "rejected",
        Degraded => "degraded",
        /// Ended with any outcome but succeeded.
        NotSucceeded => "not-succeeded",
        /// Caused a duplicate effect (a write committed twice).
        Duplicate => "duplicate",
        /// Had no result by its deadline (ended after it, or stopped for lack of time).
        DeadlineMissed => "deadline-missed",
        /// Had an attempt refused by a guard (breaker, bulkhead, retry budget, shedder, ...).
        Refused => "refused",
        /// Ended because a person refused its approval step.
        ApprovalRefused => "approval-refused",
        /// Ended because its approval request lapsed before anyone decided.
        ApprovalExpired => "approval-expired",
        /// Still waiting for a decision at its root deadline (handed to an asynchronous task).
        AwaitingApproval => "awaiting-approval",
    }
}

impl FirstRun {
    /// "the first run that ..." in reports.
    pub fn phrase(self) -> &'static str {
        match self {
            FirstRun::Failed => "failed",
            FirstRun::Handoff => "was handed off",
            FirstRun::Rejected => "was rejected at admission",
            FirstRun::Degraded => "was degraded",
            FirstRun::NotSucceeded => "did not succeed",
            FirstRun::Duplicate => "caused a duplicate effect",
            FirstRun::DeadlineMissed => "had no result by its deadline",
            FirstRun::Refused => "had an attempt refused by a guard",
            FirstRun::ApprovalRefused => "was refused its approval",
            FirstRun::ApprovalExpired => "saw its approval request lapse",
            FirstRun::AwaitingApproval => "was still awaiting approval at its deadline",
        }
    }

    pub fn matches(self, run: &RunSummary) -> bool {
        let Some(outcome) = run.outcome else { return false };
        match self {
            FirstRun::Failed => outcome == Outcome::Failed,
            FirstRun::Handoff => outcome == Outcome::Handoff,
            FirstRun::Rejected => outcome == Outcome::Rejected,
            FirstRun::Degraded => outcome == Outcome::Degraded,
            FirstRun::NotSucceeded => outcome != Outcome::Succeeded,
            FirstRun::Duplicate => run.duplicate_effect,
            FirstRun::DeadlineMissed => run.deadline_exceeded,
            FirstRun::Refused => run.refused(None),
            FirstRun::ApprovalRefused => outcome == Outcome::ApprovalRefused,
            FirstRun::ApprovalExpired => outcome == Outcome::ApprovalExpired,
            FirstRun::AwaitingApproval => outcome == Outcome::AwaitingApproval,
        }
    }
}

#[derive(Debug, Clone)]
pub struct ReplayOptions {
    pub scenario: ScenarioInput,
    pub policy: String,
    pub seed: Option<u64>,
    pub sets: Vec<String>,
    /// Replication K of the scenario's seed (default 0).
    pub replication: Option<u32>,
    /// A replication's own seed (the `seed` column of replications.csv), instead of K.
    pub replication_seed: Option<u64>,
    pub select: RunSelector,
    /// Where the OTLP/JSON trace goes. Default: results/<scenario>-replay/<policy>-run-<N>.otlp.json
    pub out: Option<PathBuf>,
}

/// One traced run and where it came from.
pub struct TracedRun {
    pub spans: RunSpans,
    pub summary: RunSummary,
    /// Root runs the replication started.
    pub runs_started: usize,
}

/// Every root run of replication `seed` of `policy`, summarised: one simulation that follows
/// no run's steps.
pub fn catalogue(model: &Model, policy: usize, seed: u64) -> Result<Vec<RunSummary>, CommandError> {
    let (_, tracer) = simulate_following(model, policy, seed, RunTracer::for_runs(&[]))?;
    Ok(tracer.runs)
}

/// The number of the first run started after the warm-up that matches `which`.
pub fn first_matching(runs: &[RunSummary], which: FirstRun) -> Option<u64> {
    runs.iter().find(|r| r.measured && which.matches(r)).map(|r| r.number)
}

/// Simulates replication `seed` of `policy` following the selected run. Errors name the
/// selector when no run matches.
pub fn trace_run(model: &Model, policy: usize, seed: u64, select: RunSelector) -> Result<TracedRun, CommandError> {
    let number = match select {
        RunSelector::Number(n) => n,
        RunSelector::First(which) => {
            let runs = catalogue(model, policy, seed)?;
            match first_matching(&runs, which) {
                Some(number) => number,
                None => {
                    let measured = runs.iter().filter(|r| r.measured).count();
                    return Err(CommandError::Input(format!(
                        "argument `--first {}`: none of the {measured} root run(s) started after the warm-up matches",
                        which.name()
                    )));
                }
            }
        }
        RunSelector::FirstRefusedBy(reason) => {
            let runs = catalogue(model, policy, seed)?;
            match runs.iter().find(|r| r.measured && r.refused(Some(reason))) {
                Some(r) => r.number,
                None => {
                    let measured: Vec<&RunSummary> = runs.iter().filter(|r| r.measured).collect();
                    let mut reasons: Vec<&str> = Refusal::ALL
                        .iter()
                        .filter(|x| measured.iter().any(|r| r.refused(Some(**x))))
                        .map(|x| x.name())
                        .collect();
                    reasons.dedup();
                    let seen = if reasons.is_empty() {
                        "no guard refused any".to_string()
                    } else {
                        format!("guards refused for {}", reasons.join(", "))
                    };
                    return Err(CommandError::Input(format!(
                        "argument `--refused-by {}`: none of the {} root run(s) started after the warm-up had an attempt refused for it ({seen})",
                        reason.name(),
                        measured.len()
                    )));
                }
            }
        }
    };
    let (_, tracer) = simulate_following(model, policy, seed, RunTracer::for_runs(&[number]))?;
    let started = tracer.runs.len();
    let summary = tracer.runs.iter().find(|r| r.number == number).copied();
    let (Some(summary), Some(spans)) = (summary, build(model, policy, &tracer.events_of(number))) else {
        return Err(CommandError::Input(format!(
            "argument `--run {number}`: the replication started {started} root run(s), numbered from 1"
        )));
    };
    Ok(TracedRun { spans, summary, runs_started: started })
}

/// The runs `run --traces K` exports from one replication: K of the measured runs, evenly
/// spaced in start order (so a sample covers the whole simulated time, faults included), or
/// every measured run when there are fewer.
pub fn sampled_runs(runs: &[RunSummary], k: usize) -> Vec<u64> {
    let measured: Vec<u64> = runs.iter().filter(|r| r.measured).map(|r| r.number).collect();
    if measured.len() <= k {
        return measured;
    }
    (0..k).map(|i| measured[(2 * i + 1) * measured.len() / (2 * k)]).collect()
}

/// `k` sampled runs of replication `replication` (seed `seed`) of `policy`, as OTLP/JSON lines:
/// one document per run, as the OpenTelemetry Collector's file exporter writes them. Two
/// simulations: one to list the runs, one to follow the sample.
pub fn sample_traces(
    model: &Model,
    policy: usize,
    replication: Option<u32>,
    seed: u64,
    k: usize,
) -> Result<Vec<u8>, CommandError> {
    let runs = catalogue(model, policy, seed)?;
    let wanted = sampled_runs(&runs, k);
    let measured = runs.iter().filter(|r| r.measured).count();
    let (_, tracer) = simulate_following(model, policy, seed, RunTracer::for_runs(&wanted))?;
    let origin = TraceOrigin {
        scenario: &model.name,
        policy: &model.policies[policy].name,
        seed: model.world.seed,
        replication,
        replication_seed: seed,
        sampling_ratio: Some(wanted.len() as f64 / measured.max(1) as f64),
    };
    let mut lines = Vec::new();
    for number in wanted {
        let Some(spans) = build(model, policy, &tracer.events_of(number)) else { continue };
        serde_json::to_writer(&mut lines, &to_otlp_json(&spans, &origin))
            .map_err(|e| CommandError::Io(e.to_string()))?;
        lines.push(b'\n');
    }
    Ok(lines)
}

pub fn replay(opts: &ReplayOptions) -> Result<String, CommandError> {
    let replayed = replay_in_memory(opts)?;
    write_atomically(&replayed.out, &replayed.otlp)?;
    Ok(replayed.text)
}

/// A traced run in memory: what `replay` prints and the OTLP/JSON document it writes to `out`
/// (the Python package's `replay` writes it only when asked to).
pub struct Replayed {
    pub text: String,
    pub otlp: Vec<u8>,
    /// `opts.out`, or the default path the command line writes to.
    pub out: PathBuf,
    /// The run's number (from 1, in the order runs started).
    pub run: u64,
}

pub fn replay_in_memory(opts: &ReplayOptions) -> Result<Replayed, CommandError> {
    let overrides = collect_overrides(&opts.sets, None)?;
    let Loaded { mut model, .. } = load_model(&opts.scenario, &overrides)?;
    apply_seed(&mut model, opts.seed, &overrides);
    let policy = select_policies(&model, std::slice::from_ref(&opts.policy), "--policy")?[0];
    let (replication, seed) = match (opts.replication, opts.replication_seed) {
        (_, Some(seed)) => (None, seed),
        (k, None) => {
            let k = k.unwrap_or(0);
            check_replication(&model, k)?;
            (Some(k), replication_seed(model.world.seed, k))
        }
    };
    let traced = trace_run(&model, policy, seed, opts.select)?;
    let number = traced.summary.number;
    let out = opts.out.clone().unwrap_or_else(|| default_out(&model.name, &opts.policy, number));
    let otlp = trace_document(&model, policy, replication, seed, &traced)?;
    let text = report(&model, &opts.policy, replication, seed, &traced, opts.select, &out);
    Ok(Replayed { text, otlp, out, run: number })
}

/// Writes `traced` as OTLP/JSON to `out` (atomically).
pub fn write_trace(
    model: &Model,
    policy: usize,
    replication: Option<u32>,
    seed: u64,
    traced: &TracedRun,
    out: &Path,
) -> Result<(), CommandError> {
    write_atomically(out, &trace_document(model, policy, replication, seed, traced)?)
}

/// `traced` as an OTLP/JSON document.
fn trace_document(
    model: &Model,
    policy: usize,
    replication: Option<u32>,
    seed: u64,
    traced: &TracedRun,
) -> Result<Vec<u8>, CommandError> {
    let origin = TraceOrigin {
        scenario: &model.name,
        policy: &model.policies[policy].name,
        seed: model.world.seed,
        replication,
        replication_seed: seed,
        sampling_ratio: None,
    };
    let document = to_otlp_json(&traced.spans, &origin);
    let mut bytes = serde_json::to_vec_pretty(&document).map_err(|e| CommandError::Io(e.to_string()))?;
    bytes.push(b'\n');
    Ok(bytes)
}

fn default_out(scenario: &str, policy: &str, number: u64) -> PathBuf {
    Path::new("results").join(format!("{scenario}-replay")).join(format!("{policy}-run-{number}.otlp.json"))
}

fn report(
    model: &Model,
    policy: &str,
    replication: Option<u32>,
    seed: u64,
    traced: &TracedRun,
    select: RunSelector,
    out: &Path,
) -> String {
    let which = match replication {
        Some(k) => format!("replication {k} (seed {seed})"),
        None => format!("the replication with seed {seed}"),
    };
    let chosen = match select {
        RunSelector::Number(_) => String::new(),
        RunSelector::First(f) => format!(", the first run after the warm-up that {}", f.phrase()),
        RunSelector::FirstRefusedBy(r) => {
            format!(", the first run after the warm-up that had an attempt refused by a guard ({})", r.name())
        }
    };
    let start_s = traced.summary.start_us as f64 / 1e6;
    let mut text = format!(
        "{}: policy {policy}, {which}: run {} of {}{chosen}, started at t = {start_s:.3} s\n\n",
        model.name, traced.summary.number, traced.runs_started
    );
    text.push_str(&render_tree(&traced.spans));
    text.push_str(&format!("\ntrace (OTLP/JSON, {} spans): {}\n", traced.spans.spans.len(), out.display()));
    text
}
