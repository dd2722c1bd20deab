//! `faultline._native`: the commands of the `faultline` library called from Python. Each
//! function takes its options as one JSON document (the Python package turns keyword
//! arguments into it) and returns the command's text and the bytes of the files it makes, as
//! the command line would write them; the package turns those into dicts and DataFrames. No
//! figure is computed here: this crate converts types and nothing else.
//!
//! Every command runs on a thread of its own while the calling thread waits without the GIL,
//! taking it back every 50 ms to pass on progress and Ctrl-C (which asks the command to stop
//! through its `Watch`). A panic ends the command's thread and comes back as an error, never
//! across into Python.

use faultline::cli::worker_count;
use faultline::experiment::CommandError;
use faultline::experiment::OutputFormat;
use faultline::experiment::batch::workers::{Watch, watched};
use faultline::experiment::calibrate::choose::FitChoice;
use faultline::experiment::calibrate::{CalibrateOptions, calibrate_in_memory, calibrate_written};
use faultline::experiment::explore::{ExploreOptions, explore};
use faultline::experiment::gate::{GateOptions, gate};
use faultline::experiment::replay::{FirstRun, ReplayOptions, RunSelector, replay_in_memory};
use faultline::experiment::run::{RunOptions, simulate_run, validate};
use faultline::experiment::sweep::files::SweepView;
use faultline::experiment::sweep::shard::Shard;
use faultline::experiment::sweep::{SweepOptions, sweep, sweep_in_memory};
use faultline::experiment::tune::shards::RoundMode;
use faultline::experiment::tune::{TuneOptions, tune};
use faultline::scenario::error::Origin;
use faultline::scenario::{Format, ScenarioInput, Source};
use faultline::vocab::Refusal;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pyo3::create_exception!(_native, NativeError, pyo3::exceptions::PyException);

/// A scenario as the package passes it: a file, or TOML or JSON text (a dict arrives as JSON).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioArg {
    kind: String,
    value: String,
    /// How messages name a text (`<string>`, `<dict>`).
    #[serde(default)]
    name: Option<String>,
}

impl ScenarioArg {
    fn input(&self) -> Result<ScenarioInput, CommandError> {
        let name = self.name.clone().unwrap_or_else(|| "<string>".into());
        match self.kind.as_str() {
            "file" => Ok(ScenarioInput::File(PathBuf::from(&self.value))),
            "toml" => Ok(ScenarioInput::Text(Source::from_text(&name, &self.value, Format::Toml))),
            "json" => Ok(ScenarioInput::Text(Source::from_text(&name, &self.value, Format::Json))),
            other => Err(CommandError::Input(format!("unknown scenario kind {other:?}"))),
        }
    }
}

fn options<T: for<'de> Deserialize<'de>>(json: &str) -> Result<T, CommandError> {
    serde_json::from_str(json).map_err(|e| CommandError::Input(format!("faultline._native: bad options: {e}")))
}

/// A command's error as the package's exceptions take it: (kind, message, file, line, column,
/// argument, field). `kind` is `scenario`, `input`, `io`, `interrupted` or `panic`.
fn native_error(e: CommandError) -> PyErr {
    type Details = (String, String, Option<String>, Option<usize>, Option<usize>, Option<String>, Option<String>);
    let details: Details = match &e {
        CommandError::Scenario(s) => {
            let (file, line, column, argument) = match &s.origin {
                Origin::File { path, line, column } => (Some(path.clone()), *line, *column, None),
                Origin::Argument(a) => (None, None, None, Some(a.clone())),
            };
            let field = (!s.field.is_empty()).then(|| s.field.clone());
            ("scenario".into(), e.to_string(), file, line, column, argument, field)
        }
        CommandError::Input(m) => ("input".into(), m.clone(), None, None, None, None, None),
        CommandError::Io(m) => ("io".into(), m.clone(), None, None, None, None, None),
        CommandError::Interrupted => ("interrupted".into(), e.to_string(), None, None, None, None, None),
    };
    NativeError::new_err(details)
}

/// What a command left: its result, and the Python error (Ctrl-C, or the progress callback's)
/// that asked it to stop, if one did.
struct Finished<T> {
    result: Result<T, CommandError>,
    raised: Option<PyErr>,
}

/// Runs `job` on a thread of its own under a [`Watch`], the GIL released while it works;
/// every 50 ms checks for signals and calls `progress(done, total)` when the count moved.
fn call<T: Send>(
    py: Python<'_>,
    progress: Option<&Bound<'_, PyAny>>,
    job: impl FnOnce() -> Result<T, CommandError> + Send,
) -> PyResult<Finished<T>> {
    let watch = Arc::new(Watch::default());
    let done = Arc::new(AtomicBool::new(false));
    let mut raised: Option<PyErr> = None;
    let mut shown = (u64::MAX, u64::MAX);
    let report = |raised: &mut Option<PyErr>, shown: &mut (u64, u64)| {
        if let (None, Some(callback)) = (raised.as_ref(), progress) {
            let now = watch.progress();
            if now != *shown {
                *shown = now;
                if let Err(e) = callback.call1(now) {
                    watch.stop();
                    *raised = Some(e);
                }
            }
        }
    };
    let joined = std::thread::scope(|scope| {
        let (w, d) = (watch.clone(), done.clone());
        let handle = scope.spawn(move || {
            let result = watched(w, job);
            d.store(true, Ordering::Release);
            result
        });
        while !done.load(Ordering::Acquire) {
            let d = done.clone();
            py.detach(move || {
                for _ in 0..5 {
                    if d.load(Ordering::Acquire) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            });
            if raised.is_none()
                && let Err(e) = py.check_signals()
            {
                watch.stop();
                raised = Some(e);
            }
            report(&mut raised, &mut shown);
        }
        handle.join()
    });
    report(&mut raised, &mut shown);
    match joined {
        Ok(result) => Ok(Finished { result, raised }),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            let message = format!("faultline failed inside (please report it): {what}");
            Err(NativeError::new_err((
                "panic".to_string(),
                message,
                None::<String>,
                None::<usize>,
                None::<usize>,
                None::<String>,
                None::<String>,
            )))
        }
    }
}

/// The result of a command that keeps nothing when stopped: the stopping error wins.
fn whole<T>(finished: Finished<T>) -> PyResult<T> {
    match (finished.result, finished.raised) {
        (_, Some(e)) => Err(e),
        (Ok(v), None) => Ok(v),
        (Err(e), None) => Err(native_error(e)),
    }
}

fn files_list<'py>(py: Python<'py>, files: &[(String, Vec<u8>)]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for (name, bytes) in files {
        list.append((name.as_str(), PyBytes::new(py, bytes)))?;
    }
    Ok(list)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Common {
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    replications: Option<u32>,
    #[serde(default)]
    sets: Vec<String>,
    #[serde(default)]
    jobs: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    scenario: ScenarioArg,
    #[serde(default)]
    policies: Vec<String>,
    #[serde(flatten)]
    common: Common,
    #[serde(default)]
    replication: Option<u32>,
    #[serde(default)]
    traces: Option<u32>,
    #[serde(default)]
    out: Option<PathBuf>,
    #[serde(default)]
    metrics: Vec<String>,
    #[serde(default)]
    check_slo: bool,
}

/// `faultline run`: {text, json, files: [(path, bytes)], written: [path], passed (false only
/// with `check_slo` and a failed threshold: the command line's exit 99), failed_thresholds}.
#[pyfunction]
#[pyo3(signature = (options, progress=None))]
fn run<'py>(py: Python<'py>, options: &str, progress: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyDict>> {
    let args: RunArgs = self::options(options).map_err(native_error)?;
    let job = move || -> Result<_, CommandError> {
        let Common { seed, replications, sets, jobs } = args.common;
        let opts = RunOptions {
            scenario: args.scenario.input()?,
            policies: args.policies,
            seed,
            replications,
            sets,
            out: args.out.clone(),
            format: OutputFormat::Text,
            jobs: worker_count(jobs)?,
            replication: args.replication,
            traces: args.traces,
            metrics: args.metrics,
            check_slo: args.check_slo,
        };
        let results = simulate_run(&opts)?;
        let mut files = Vec::new();
        results.each_file(&mut |path, bytes| {
            files.push((path.to_string(), bytes.to_vec()));
            Ok(())
        })?;
        let written = match &args.out {
            Some(out) => results.write(out)?,
            None => Vec::new(),
        };
        let verdict = (results.passed(), results.failed_thresholds());
        Ok((results.text(&written), results.json(), files, written, verdict))
    };
    let (text, json, files, written, (passed, failed)) = whole(call(py, progress, job)?)?;
    let dict = PyDict::new(py);
    dict.set_item("text", text)?;
    dict.set_item("json", json)?;
    dict.set_item("files", files_list(py, &files)?)?;
    dict.set_item("written", written)?;
    dict.set_item("passed", passed)?;
    dict.set_item("failed_thresholds", failed)?;
    Ok(dict)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepArgs {
    scenario: ScenarioArg,
    params: Vec<String>,
    #[serde(default)]
    policies: Vec<String>,
    #[serde(flatten)]
    common: Common,
    #[serde(default)]
    out: Option<PathBuf>,
    #[serde(default)]
    resume: bool,
    #[serde(default)]
    shard: Option<String>,
    #[serde(default)]
    metrics: Vec<String>,
    #[serde(default)]
    grid: bool,
}

/// `faultline sweep`. Without an output folder, in memory: {text, files, finished, points,
/// interrupted}; with one (or `resume`, `shard`), the command line's sweep: {text, written}.
#[pyfunction]
#[pyo3(signature = (options, progress=None))]
fn sweep_points<'py>(
    py: Python<'py>,
    options: &str,
    progress: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let args: SweepArgs = self::options(options).map_err(native_error)?;
    let to_folder = args.out.is_some() || args.resume || args.shard.is_some();
    let build = move || -> Result<SweepOptions, CommandError> {
        let Common { seed, replications, sets, jobs } = args.common;
        Ok(SweepOptions {
            scenario: args.scenario.input()?,
            params: args.params,
            policies: args.policies,
            seed,
            replications,
            sets,
            jobs: worker_count(jobs)?,
            out: args.out,
            resume: args.resume,
            shard: args.shard.as_deref().map(Shard::parse).transpose()?,
            view: SweepView { metrics: args.metrics, grid: args.grid },
        })
    };
    let dict = PyDict::new(py);
    if to_folder {
        let text = whole(call(py, progress, move || -> Result<String, CommandError> { sweep(&build()?) })?)?;
        dict.set_item("text", text)?;
        dict.set_item("interrupted", false)?;
        return Ok(dict);
    }
    let finished = call(py, progress, move || -> Result<_, CommandError> { sweep_in_memory(&build()?) })?;
    let (tables, stopped_by_ctrl_c) = match (finished.result, finished.raised) {
        // Ctrl-C: the finished points are kept; the package raises `Interrupted` with them,
        // even when the last point finished in the same tick as the signal.
        (Ok(tables), Some(e)) if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) => (tables, true),
        // Any other exception (the progress callback's, a signal handler's such as a timeout)
        // is the caller's own: it propagates as it was raised, never as an interruption.
        (_, Some(e)) => return Err(e),
        (Ok(tables), None) => (tables, false),
        (Err(e), None) => return Err(native_error(e)),
    };
    let files = vec![
        ("sweep.csv".to_string(), tables.csv),
        ("sweep.json".to_string(), tables.json),
        ("report.html".to_string(), tables.report_html.into_bytes()),
    ];
    dict.set_item("text", tables.text)?;
    dict.set_item("files", files_list(py, &files)?)?;
    dict.set_item("finished", tables.finished)?;
    dict.set_item("points", tables.points)?;
    dict.set_item("interrupted", tables.interrupted || stopped_by_ctrl_c)?;
    Ok(dict)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GateArgs {
    scenario: ScenarioArg,
    candidate: String,
    #[serde(default)]
    baseline: Option<String>,
    #[serde(default)]
    baseline_scenario: Option<PathBuf>,
    #[serde(default)]
    thresholds_only: bool,
    #[serde(flatten)]
    common: Common,
    #[serde(default)]
    candidate_sets: Vec<String>,
    #[serde(default)]
    baseline_sets: Vec<String>,
    #[serde(default)]
    junit: Option<PathBuf>,
    #[serde(default)]
    front: Option<PathBuf>,
    front_tolerance: f64,
}

/// `faultline gate`: {table, document (the JSON report), passed}.
#[pyfunction]
#[pyo3(signature = (options, progress=None))]
fn gate_policy<'py>(
    py: Python<'py>,
    options: &str,
    progress: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let args: GateArgs = self::options(options).map_err(native_error)?;
    let job = move || -> Result<_, CommandError> {
        let Common { seed, replications, sets, jobs } = args.common;
        gate(&GateOptions {
            scenario: args.scenario.input()?,
            candidate: args.candidate,
            baseline: args.baseline,
            baseline_scenario: args.baseline_scenario,
            thresholds_only: args.thresholds_only,
            seed,
            replications,
            sets,
            candidate_sets: args.candidate_sets,
            baseline_sets: args.baseline_sets,
            jobs: worker_count(jobs)?,
            format: OutputFormat::Text,
            junit: args.junit,
            front: args.front,
            front_tolerance_percent: args.front_tolerance,
        })
    };
    let report = whole(call(py, progress, job)?)?;
    let dict = PyDict::new(py);
    dict.set_item("table", report.table)?;
    dict.set_item("document", report.document)?;
    dict.set_item("passed", report.passed)?;
    Ok(dict)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TuneArgs {
    scenario: ScenarioArg,
    policy: String,
    space: Vec<String>,
    objectives: Vec<String>,
    #[serde(default)]
    budget: Option<usize>,
    candidates: usize,
    initial_replications: u32,
    #[serde(flatten)]
    common: Common,
    out: PathBuf,
    #[serde(default)]
    resume: bool,
    generations: u32,
    #[serde(default)]
    shard: Option<String>,
    #[serde(default)]
    merge_shards: bool,
}

/// `faultline tune` into `out`: its text (the package reads the front from the folder).
#[pyfunction]
#[pyo3(signature = (options, progress=None))]
fn tune_policy(py: Python<'_>, options: &str, progress: Option<&Bound<'_, PyAny>>) -> PyResult<String> {
    let args: TuneArgs = self::options(options).map_err(native_error)?;
    let job = move || -> Result<_, CommandError> {
        let Common { seed, replications, sets, jobs } = args.common;
        let rounds = match (args.shard.as_deref().map(Shard::parse).transpose()?, args.merge_shards) {
            (Some(shard), _) => RoundMode::Shard(shard),
            (None, true) => RoundMode::Merge,
            (None, false) => RoundMode::Local,
        };
        tune(&TuneOptions {
            scenario: args.scenario.input()?,
            policy: args.policy,
            space: args.space,
            objectives: args.objectives,
            budget: args.budget,
            candidates: args.candidates,
            initial_replications: args.initial_replications,
            seed,
            replications,
            sets,
            jobs: worker_count(jobs)?,
            out: Some(args.out),
            resume: args.resume,
            generations: args.generations,
            rounds,
        })
    };
    whole(call(py, progress, job)?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExploreArgs {
    scenario: ScenarioArg,
    policy: String,
    schedules: u32,
    seed: u64,
    max_faults: usize,
    #[serde(default)]
    kinds: Vec<String>,
    #[serde(default)]
    keep_faults: bool,
    #[serde(default)]
    sets: Vec<String>,
    #[serde(default)]
    replications: Option<u32>,
    #[serde(default)]
    jobs: Option<i64>,
    out: PathBuf,
}

/// `faultline explore` into `out`: {text, violated}.
#[pyfunction]
#[pyo3(signature = (options, progress=None))]
fn explore_schedules<'py>(
    py: Python<'py>,
    options: &str,
    progress: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let args: ExploreArgs = self::options(options).map_err(native_error)?;
    let job = move || -> Result<_, CommandError> {
        explore(&ExploreOptions {
            scenario: args.scenario.input()?,
            policy: args.policy,
            schedules: args.schedules,
            seed: args.seed,
            max_faults: args.max_faults,
            kinds: args.kinds,
            keep_faults: args.keep_faults,
            sets: args.sets,
            replications: args.replications,
            jobs: worker_count(args.jobs)?,
            out: Some(args.out),
        })
    };
    let report = whole(call(py, progress, job)?)?;
    let dict = PyDict::new(py);
    dict.set_item("text", report.text)?;
    dict.set_item("violated", report.violated)?;
    Ok(dict)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReplayArgs {
    scenario: ScenarioArg,
    policy: String,
    #[serde(default)]
    replication: Option<u32>,
    #[serde(default)]
    replication_seed: Option<u64>,
    #[serde(default)]
    run: Option<u64>,
    #[serde(default)]
    first: Option<String>,
    #[serde(default)]
    refused_by: Option<String>,
    #[serde(default)]
    seed: Option<u64>,
    #[serde(default)]
    sets: Vec<String>,
    #[serde(default)]
    out: Option<PathBuf>,
}

/// The words `--first` and `--refused-by` take, as the command line reads them.
fn run_selector(args: &ReplayArgs) -> Result<RunSelector, CommandError> {
    let names = |all: Vec<&str>| all.join(", ");
    let first = match &args.first {
        None => None,
        Some(w) => Some(FirstRun::parse(w).ok_or_else(|| {
            CommandError::Input(format!(
                "argument `first={w}`: one of {}",
                names(FirstRun::ALL.iter().map(|f| f.name()).collect())
            ))
        })?),
    };
    let refused_by = match &args.refused_by {
        None => None,
        Some(w) => Some(Refusal::parse(w).ok_or_else(|| {
            CommandError::Input(format!(
                "argument `refused_by={w}`: one of {}",
                names(Refusal::ALL.iter().map(|r| r.name()).collect())
            ))
        })?),
    };
    match (args.run, first, refused_by) {
        (Some(_), Some(_), _) => Err(CommandError::Input("give run=N or first=WHAT, not both".into())),
        (Some(n), None, _) => Ok(RunSelector::Number(n)),
        (None, Some(FirstRun::Refused), Some(reason)) => Ok(RunSelector::FirstRefusedBy(reason)),
        (None, Some(f), Some(reason)) => Err(CommandError::Input(format!(
            "argument `refused_by={}`: it narrows first=\"refused\", and this is first={:?}",
            reason.name(),
            f.name()
        ))),
        (None, Some(f), None) => Ok(RunSelector::First(f)),
        (None, None, _) => Err(CommandError::Input("give run=N or first=WHAT".into())),
    }
}

/// `faultline replay`: {text, otlp (bytes), run, written (the path, when `out` was given)}.
#[pyfunction]
#[pyo3(signature = (options, progress=None))]
fn replay_run<'py>(
    py: Python<'py>,
    options: &str,
    progress: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let args: ReplayArgs = self::options(options).map_err(native_error)?;
    let job = move || -> Result<_, CommandError> {
        if args.replication.is_some() && args.replication_seed.is_some() {
            return Err(CommandError::Input("give replication=K or replication_seed=S, not both".into()));
        }
        let select = run_selector(&args)?;
        let opts = ReplayOptions {
            scenario: args.scenario.input()?,
            policy: args.policy,
            seed: args.seed,
            sets: args.sets,
            replication: args.replication,
            replication_seed: args.replication_seed,
            select,
            out: args.out.clone(),
        };
        let replayed = replay_in_memory(&opts)?;
        if let Some(out) = &args.out {
            faultline::experiment::output::folder::write_atomically(out, &replayed.otlp)?;
        }
        Ok(replayed)
    };
    let replayed = whole(call(py, progress, job)?)?;
    let dict = PyDict::new(py);
    dict.set_item("text", replayed.text)?;
    dict.set_item("otlp", PyBytes::new(py, &replayed.otlp))?;
    dict.set_item("run", replayed.run)?;
    Ok(dict)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CalibrateArgs {
    traces: Vec<PathBuf>,
    #[serde(default)]
    out: Option<PathBuf>,
    #[serde(default)]
    renames: Vec<String>,
    fit: String,
    #[serde(default)]
    sampling_ratio: Option<f64>,
    #[serde(default)]
    prometheus: Vec<PathBuf>,
}

/// `faultline calibrate`: {text (the scenario file's text), scenario (the same with the samples
/// inline: runnable as it is), report, samples: [(path, bytes)]}; written to `out` only when it
/// is given.
#[pyfunction]
#[pyo3(signature = (options, progress=None))]
fn calibrate_traces<'py>(
    py: Python<'py>,
    options: &str,
    progress: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let args: CalibrateArgs = self::options(options).map_err(native_error)?;
    let job = move || -> Result<_, CommandError> {
        let fit = FitChoice::parse(&args.fit).ok_or_else(|| {
            let all: Vec<&str> = FitChoice::ALL.iter().map(|f| f.name()).collect();
            CommandError::Input(format!("argument `fit={}`: one of {}", args.fit, all.join(", ")))
        })?;
        let write = args.out.is_some();
        let opts = CalibrateOptions {
            traces: args.traces,
            out: args.out.unwrap_or_else(|| PathBuf::from("calibrated.toml")),
            renames: args.renames,
            fit,
            sampling_ratio: args.sampling_ratio,
            prometheus: args.prometheus,
        };
        let made = if write { calibrate_written(&opts) } else { calibrate_in_memory(&opts) }?;
        let scenario = made.self_contained()?;
        Ok((made, scenario))
    };
    let (made, scenario) = whole(call(py, progress, job)?)?;
    let samples: Vec<(String, Vec<u8>)> = made.samples.into_iter().collect();
    let dict = PyDict::new(py);
    dict.set_item("text", made.text)?;
    dict.set_item("scenario", scenario)?;
    dict.set_item("report", made.report)?;
    dict.set_item("samples", files_list(py, &samples)?)?;
    Ok(dict)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ValidateArgs {
    scenario: ScenarioArg,
}

/// `faultline validate`: what it prints.
#[pyfunction]
fn validate_scenario(py: Python<'_>, options: &str) -> PyResult<String> {
    let args: ValidateArgs = self::options(options).map_err(native_error)?;
    whole(call(py, None, move || -> Result<String, CommandError> { validate(&args.scenario.input()?) })?)
}

/// Whether `--set path=VALUE` reads `value` back as this very string (not as a number, a bool,
/// an array, ... nor trimmed): else the package sends it as a quoted TOML string.
#[pyfunction]
fn reads_as_text(value: &str) -> bool {
    faultline::scenario::overrides::reads_as_string(value)
}

/// The values the metric `name` can take, (low, high), as reports clip a 95 % interval to
/// (docs/metrics.md): (0, 1) for a share of a whole, (0, inf) for the rest.
#[pyfunction]
fn metric_range(name: &str) -> (f64, f64) {
    let range = faultline::metrics::range::Range::of_metric(name);
    (range.low, range.high)
}

/// The version of the library inside, as the command line's `--version` says.
#[pyfunction]
fn version() -> &'static str {
    faultline::experiment::output::formats::VERSION
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("NativeError", m.py().get_type::<NativeError>())?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_points, m)?)?;
    m.add_function(wrap_pyfunction!(gate_policy, m)?)?;
    m.add_function(wrap_pyfunction!(tune_policy, m)?)?;
    m.add_function(wrap_pyfunction!(explore_schedules, m)?)?;
    m.add_function(wrap_pyfunction!(replay_run, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate_traces, m)?)?;
    m.add_function(wrap_pyfunction!(validate_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(reads_as_text, m)?)?;
    m.add_function(wrap_pyfunction!(metric_range, m)?)?;
    Ok(())
}
