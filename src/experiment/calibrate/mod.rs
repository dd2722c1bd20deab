//! `faultline calibrate`: a runnable scenario from OpenTelemetry traces. One dependency per
//! callee, one workflow per kind of root span, a policy from what the callers did; every
//! figure commented with where it came from, and what the traces could not show said.

pub mod check;
pub mod choose;
pub mod fit;
pub mod infer;
pub mod prometheus;
pub mod read;
pub mod scenario_text;
pub mod tokens;

use crate::experiment::command::CommandError;
use crate::experiment::output::folder::{OutputLock, write_atomically, write_internal};
use crate::scenario::quote;
pub use check::Inputs;
use choose::{DependencyChoice, FitChoice, Latency, choose};
use infer::{Observations, observe};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct CalibrateOptions {
    /// OTLP/JSON trace files.
    pub traces: Vec<PathBuf>,
    /// The scenario to write (samples files go in a folder beside it).
    pub out: PathBuf,
    /// `FROM=TO`: callee FROM is dependency TO (merge or rename callees).
    pub renames: Vec<String>,
    pub fit: FitChoice,
    /// The share of root runs the traces hold (head sampling), when they do not say it.
    pub sampling_ratio: Option<f64>,
    /// Prometheus text-format files whose latency histograms replace the traces' latencies.
    pub prometheus: Vec<PathBuf>,
}

pub fn calibrate(opts: &CalibrateOptions) -> Result<String, CommandError> {
    calibrate_written(opts).map(|made| made.report)
}

/// `calibrate`, keeping what it wrote to `opts.out`.
pub fn calibrate_written(opts: &CalibrateOptions) -> Result<Made, CommandError> {
    check_arguments(opts)?;
    // One calibration writes to an output at a time; everything is read, made and checked
    // before a byte is written.
    let _lock = OutputLock::take(&opts.out)?;
    let mut made = calibrate_in_memory(opts)?;
    write_set(&opts.out, &made)?;
    made.report.push_str(&written_lines(&opts.out, made.samples.len()));
    Ok(made)
}

/// The report's last lines once the set is written: what was written, and how to run it.
fn written_lines(out: &Path, samples_files: usize) -> String {
    let mut text = format!("\nwrote {}", out.display());
    if samples_files > 0 {
        text.push_str(&format!(" and {samples_files} samples file(s)"));
    }
    text.push_str(&format!("\nnext: faultline run {}\n", out.display()));
    text
}

/// The arguments checked before anything is read; returns the renames.
fn check_arguments(opts: &CalibrateOptions) -> Result<BTreeMap<String, String>, CommandError> {
    let renames = parse_renames(&opts.renames)?;
    if let Some(r) = opts.sampling_ratio
        && !(r > 0.0 && r <= 1.0)
    {
        return Err(CommandError::Input(format!(
            "argument `--sampling-ratio {}`: give a share in (0, 1]",
            check::number_as_written(r)
        )));
    }
    if opts.out.extension().and_then(|e| e.to_str()) != Some("toml") {
        return Err(CommandError::Input(format!(
            "argument `--out {}`: the calibrated scenario is a .toml file",
            opts.out.display()
        )));
    }
    Ok(renames)
}

/// Everything `calibrate` does but writing (the Python package's `calibrate` without an output
/// file): the scenario and its samples files as they would be written to `opts.out`, and the
/// report without its `wrote` and `next` lines (nothing was written).
pub fn calibrate_in_memory(opts: &CalibrateOptions) -> Result<Made, CommandError> {
    let renames = check_arguments(opts)?;
    let traces = read::read_traces(&opts.traces, opts.sampling_ratio)?;
    let histograms = prometheus::read_histograms(&opts.prometheus)?;
    let inputs = Inputs { traces: &opts.traces, sampling_ratio: opts.sampling_ratio };
    make(&inputs, traces, histograms, &renames, opts.fit, &opts.out)
}

/// A calibration made in memory: the scenario's text, its samples files (path relative to the
/// scenario -> bytes) and the report.
pub struct Made {
    pub text: String,
    pub samples: BTreeMap<String, Vec<u8>>,
    pub report: String,
}

impl Made {
    /// The scenario with every samples file's values written inline (`samples_ms = [...]` in
    /// place of `samples_file = "..."`): one text that runs as it is, from any folder, with no
    /// file beside it (the Python package's `CalibrateResult.scenario`). The values are those
    /// the files hold, in their order, so it simulates exactly as the written set does. Equal
    /// to `text` when no samples file was made.
    pub fn self_contained(&self) -> Result<String, CommandError> {
        let mut text = self.text.clone();
        for (relative, bytes) in &self.samples {
            let loaded = crate::scenario::samples::samples_from_bytes(relative, bytes)
                .map_err(|m| CommandError::Input(format!("calibrate: {m}")))?;
            // `{:?}` writes every f64 so it reads back as the same value, always as a float.
            let values: Vec<String> = loaded.values.iter().map(|v| format!("{v:?}")).collect();
            let named = format!("samples_file = {}", scenario_text::toml_string(relative));
            if !text.contains(&named) {
                return Err(CommandError::Input(format!(
                    "calibrate: the scenario does not name its samples file {}",
                    quote(relative)
                )));
            }
            text = text.replace(&named, &format!("samples_ms = [{}]", values.join(", ")));
        }
        Ok(text)
    }
}

/// The calibration of `traces` (and `histograms`) as the files to write to `out`, checked:
/// a shape of the traces or a sampling ratio that would give a scenario faultline cannot run
/// is refused here, naming the input, and the scenario made is loaded and compiled as `run`
/// would before anything is written.
pub fn make(
    inputs: &Inputs,
    traces: Vec<read::ObservedTrace>,
    histograms: Vec<prometheus::Histogram>,
    renames: &BTreeMap<String, String>,
    fit: FitChoice,
    out: &Path,
) -> Result<Made, CommandError> {
    let mut observations = observe(&traces, renames);
    drop(traces);
    if observations.workflows.is_empty() {
        let ids = &observations.duplicate_ids;
        let why = match &ids.first {
            Some((trace, id)) => format!(
                " ({} trace(s) left out because two of their spans share a span id another names as its parent; the first: trace {trace}, span id {id})",
                ids.traces
            ),
            None => String::new(),
        };
        return Err(CommandError::Input(format!(
            "{}: no root spans found in {} span(s){why}; calibrate needs whole traces (a root span per request)",
            inputs.shown(),
            observations.spans
        )));
    }
    let stepless = check::leave_out_stepless(&mut observations, inputs)?;
    check::counts(&observations, inputs)?;
    check::simulated_period(&observations, inputs)?;
    let mut choices: Vec<DependencyChoice> =
        observations.dependencies.iter().map(|(name, obs)| choose(name, obs, fit)).collect();
    let mut unused = apply_histograms(&mut choices, histograms, renames);
    unused.extend(stepless);
    let samples = samples_files(&data_folder_for(out), &mut choices);
    let sources: Vec<String> = inputs.traces.iter().map(|p| p.display().to_string()).collect();
    let files: BTreeMap<String, String> = samples.iter().map(|(dep, (path, _))| (dep.clone(), path.clone())).collect();
    let calibrated = scenario_text::Calibrated {
        observations: &observations,
        choices: &choices,
        samples_files: &files,
        sources: &sources,
        sampling_ratio: inputs.sampling_ratio,
        stem: out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "calibrated".into()),
    };
    check::arrivals(&calibrated, inputs)?;
    let text = calibrated.render(&unused);
    let samples: BTreeMap<String, Vec<u8>> = samples.into_values().collect();
    check_runs(out, &text, &samples, inputs)?;
    let report = report(&observations, &choices, &calibrated, &unused);
    Ok(Made { text, samples, report })
}

/// Gives each dependency a Prometheus histogram of its callee's latency, when one was read:
/// series of one callee with the same bounds are added up (status or instance labels), else
/// the one with the most observations is kept. Returns what was not used, to be said.
fn apply_histograms(
    choices: &mut [DependencyChoice],
    histograms: Vec<prometheus::Histogram>,
    renames: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut by_callee: BTreeMap<String, Vec<prometheus::Histogram>> = BTreeMap::new();
    for h in histograms {
        let callee = h.callee();
        by_callee.entry(renames.get(&callee).cloned().unwrap_or(callee)).or_default().push(h);
    }
    let mut notes = Vec::new();
    for (callee, series) in by_callee {
        let Some(choice) = choices.iter_mut().find(|c| c.name == callee) else {
            notes.push(format!(
                "the Prometheus histogram(s) of {} name no callee of the traces; not used",
                quote(&callee)
            ));
            continue;
        };
        // A series with no finite bound above 0 (only the +Inf bucket) says nothing of the latency.
        let (series, boundless): (Vec<_>, Vec<_>) =
            series.into_iter().partition(|h| !h.as_scenario_buckets().0.is_empty());
        if !boundless.is_empty() {
            notes.push(format!(
                "{callee}: {} histogram series without a finite bucket bound above 0 (only le=\"+Inf\") left out",
                boundless.len()
            ));
        }
        if series.is_empty() {
            continue;
        }
        let (merged, added, left_out) = add_up_by_bounds(series);
        if !left_out.is_empty() {
            notes.push(format!(
                "{callee}: {} histogram series with other buckets ({} observations) left out; the {added} series with the buckets of the most observations are added up ({})",
                left_out.len(),
                left_out.iter().map(prometheus::Histogram::total).sum::<f64>(),
                merged.total()
            ));
        }
        if !merged.total().is_finite() {
            notes.push(format!("{callee}: the histogram's counts add up past the largest number; not used"));
        } else if merged.total() > 0.0 {
            choice.latency = Latency::Histogram(merged);
            // What was said of the traces' own tail no longer describes the latency used.
            choice.notes.retain(|n| !n.contains("show the tail only"));
        } else {
            notes.push(format!(
                "{callee}: the histogram series hold no observation (every count 0); the traces' latency is used"
            ));
        }
    }
    notes
}

/// The series of one callee grouped by their bounds, each group added up: the group with the
/// most observations (on a tie, the first by metric name and labels), how many series it added, and
/// the series of the other groups.
fn add_up_by_bounds(series: Vec<prometheus::Histogram>) -> (prometheus::Histogram, usize, Vec<prometheus::Histogram>) {
    let mut groups: Vec<(prometheus::Histogram, usize, Vec<prometheus::Histogram>)> = Vec::new();
    for h in series {
        // Bounds in ms, so that `_seconds` and `_milliseconds` series are told apart, or added up
        // when their bounds are the same durations.
        let bounds_of =
            |g: &prometheus::Histogram| g.buckets.iter().map(|b| (b.0 * g.ms_per_unit()).to_bits()).collect::<Vec<_>>();
        let bounds = bounds_of(&h);
        match groups.iter_mut().find(|(sum, _, _)| bounds_of(sum) == bounds) {
            Some((sum, added, members)) => {
                for (slot, b) in sum.buckets.iter_mut().zip(&h.buckets) {
                    slot.1 += b.1;
                }
                sum.labels.retain(|k, v| prometheus::CALLEE_LABELS.contains(&k.as_str()) && h.labels.get(k) == Some(v));
                *added += 1;
                members.push(h);
            }
            None => groups.push((h.clone(), 1, vec![h])),
        }
    }
    let best = (0..groups.len()).fold(0, |best, i| if groups[i].0.total() > groups[best].0.total() { i } else { best });
    let (merged, added, _) = groups.remove(best);
    (merged, added, groups.into_iter().flat_map(|g| g.2).collect())
}

fn parse_renames(args: &[String]) -> Result<BTreeMap<String, String>, CommandError> {
    args.iter()
        .map(|a| match a.split_once('=') {
            Some((from, to)) if !from.is_empty() && !to.is_empty() => Ok((from.to_string(), to.to_string())),
            _ => Err(CommandError::Input(format!(
                "argument `--map {a}`: write CALLEE=DEPENDENCY, e.g. --map gpt-4o-2024-08-06=llm"
            ))),
        })
        .collect()
}

/// `calibrated.toml` keeps its samples files in `calibrated-data/`.
fn data_folder_for(out: &Path) -> String {
    format!("{}-data", out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "calibrated".into()))
}

/// A dependency name as a file name: letters, digits, `.`, `_` and `-` kept, the rest `-`.
fn file_name_for(dependency: &str) -> String {
    dependency.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '-' }).collect()
}

/// The samples file of every dependency kept as observed: dependency -> (path relative to the
/// scenario, bytes). A file's name holds a digest of its bytes, so a new calibration never
/// overwrites a file the scenario it replaces still reads.
/// A dependency's samples file holds at most this many values (evenly spaced in the sorted
/// answers beyond it): about 10 MB, well inside a samples file's bound.
pub const MAX_WRITTEN_SAMPLES: usize = 1_000_000;

fn samples_files(folder: &str, choices: &mut [DependencyChoice]) -> BTreeMap<String, (String, Vec<u8>)> {
    let mut files = BTreeMap::new();
    for c in choices {
        let Latency::Empirical { sorted_ms, .. } = &c.latency else { continue };
        let n = sorted_ms.len();
        let kept: Vec<f64> = if n > MAX_WRITTEN_SAMPLES {
            c.notes.push(format!(
                "{}: {n} answered attempts; its samples file keeps {MAX_WRITTEN_SAMPLES} of them, evenly spaced in order",
                c.name
            ));
            (0..MAX_WRITTEN_SAMPLES).map(|i| sorted_ms[i * n / MAX_WRITTEN_SAMPLES]).collect()
        } else {
            sorted_ms.clone()
        };
        let sorted_ms = &kept;
        let mut text =
            format!("# {}: answered attempt durations in ms, from faultline calibrate\nlatency_ms\n", c.name);
        for v in sorted_ms {
            text.push_str(&format!("{v}\n"));
        }
        let digest = crate::scenario::samples::fnv_hex(text.as_bytes());
        let relative = format!("{folder}/{}.latency_ms.{}.txt", file_name_for(&c.name), &digest[..8]);
        files.insert(c.name.clone(), (relative, text.into_bytes()));
    }
    files
}

/// Writes a calibration as one set: its samples files under names no earlier scenario reads,
/// then the scenario in one rename, then the samples files of the scenario it replaced. A kill
/// at any point leaves the old scenario with its samples or the new one with its own.
fn write_set(out: &Path, made: &Made) -> Result<(), CommandError> {
    let base = out.parent().unwrap_or(Path::new(""));
    for (relative, bytes) in &made.samples {
        let path = base.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| CommandError::Io(format!("cannot create {}: {e}", parent.display())))?;
        }
        write_internal(&path, bytes, true)?;
    }
    write_atomically(out, made.text.as_bytes())?;
    remove_stale_samples(&base.join(data_folder_for(out)), &made.samples, base);
    Ok(())
}

/// Removes the samples files calibrate wrote earlier into `folder` that the new scenario does
/// not read (and the folder, when nothing is left in it). Other files are left alone.
fn remove_stale_samples(folder: &Path, kept: &BTreeMap<String, Vec<u8>>, base: &Path) {
    let Ok(entries) = std::fs::read_dir(folder) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let ours = name.ends_with(".txt") && name.contains(".latency_ms.");
        if ours && !kept.keys().any(|k| base.join(k) == path) {
            let _ = std::fs::remove_file(&path);
        }
    }
    let _ = std::fs::remove_dir(folder);
}

/// The scenario made must load and compile like any other, with its samples files as they
/// will be written. The checks before this one refuse every shape of input known to give an
/// unrunnable scenario in the user's words; what gets here is a defect of calibrate, said
/// with the input it came from and nothing written.
fn check_runs(
    out: &Path,
    text: &str,
    samples: &BTreeMap<String, Vec<u8>>,
    inputs: &Inputs,
) -> Result<(), CommandError> {
    let source = crate::scenario::Source::from_text(&out.display().to_string(), text, crate::scenario::Format::Toml);
    let compiled = crate::scenario::parse_source_with(&source, samples)
        .and_then(|scenario| crate::engine::Model::compile(&scenario, &source).map(|_| ()));
    compiled.map_err(|e| {
        CommandError::Input(format!(
            "{}: the scenario calibrated from these traces would not run ({}: {}); nothing was written. This is a defect of calibrate: please report it with the traces",
            inputs.shown(),
            e.field,
            e.message
        ))
    })
}

fn report(
    observations: &Observations,
    choices: &[DependencyChoice],
    calibrated: &scenario_text::Calibrated,
    more_notes: &[String],
) -> String {
    let mut text = format!(
        "read {} span(s) of {} run(s) in {} workflow(s), {} callee(s)\n\n",
        observations.spans,
        observations.workflows.values().map(|w| w.runs).sum::<usize>(),
        observations.workflows.len(),
        observations.dependencies.len()
    );
    text.push_str(&scenario_text::dependency_table(choices));
    text.push('\n');
    text.push_str(&scenario_text::qq_tables(choices));
    let mut notes = calibrated.notes();
    notes.extend(more_notes.iter().cloned());
    if !notes.is_empty() {
        text.push_str("\nwhat the traces could not show:\n");
        for n in notes {
            text.push_str(&format!("  - {n}\n"));
        }
    }
    text
}
