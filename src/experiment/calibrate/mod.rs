//! `faultline calibrate`: a runnable scenario from OpenTelemetry traces. One dependency per
//! callee, one workflow per kind of root span, a policy from what the callers did; every
//! figure commented with where it came from, and what the traces could not show said.

pub mod choose;
pub mod fit;
pub mod infer;
pub mod prometheus;
pub mod read;
pub mod scenario_text;
pub mod tokens;

use crate::experiment::command::CommandError;
use crate::experiment::output::folder::write_atomically;
use crate::scenario::quote;
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
    let renames = parse_renames(&opts.renames)?;
    if let Some(r) = opts.sampling_ratio
        && !(r > 0.0 && r <= 1.0)
    {
        return Err(CommandError::Input(format!("argument `--sampling-ratio {r}`: give a share in (0, 1]")));
    }
    if opts.out.extension().and_then(|e| e.to_str()) != Some("toml") {
        return Err(CommandError::Input(format!(
            "argument `--out {}`: the calibrated scenario is a .toml file",
            opts.out.display()
        )));
    }
    let traces = read::read_traces(&opts.traces)?;
    let observations = observe(&traces, &renames);
    if observations.workflows.is_empty() {
        return Err(CommandError::Input(format!(
            "{}: no root spans found in {} span(s); calibrate needs whole traces (a root span per request)",
            opts.traces.iter().map(|p| quote(&p.display().to_string())).collect::<Vec<_>>().join(", "),
            observations.spans
        )));
    }
    let mut choices: Vec<DependencyChoice> =
        observations.dependencies.iter().map(|(name, obs)| choose(name, obs, opts.fit)).collect();
    let unused = apply_histograms(&mut choices, prometheus::read_histograms(&opts.prometheus)?, &renames);
    let data_folder = data_folder_for(&opts.out);
    let files = write_samples(&opts.out, &data_folder, &choices)?;
    let sources: Vec<String> = opts.traces.iter().map(|p| p.display().to_string()).collect();
    let calibrated = scenario_text::Calibrated {
        observations: &observations,
        choices: &choices,
        samples_files: &files,
        sources: &sources,
        sampling_ratio: opts.sampling_ratio,
        stem: opts.out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "calibrated".into()),
    };
    let text = calibrated.render(&unused);
    check_runs(&opts.out, &text)?;
    write_atomically(&opts.out, text.as_bytes())?;
    Ok(report(&observations, &choices, &calibrated, &unused, &opts.out))
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
    for (callee, mut series) in by_callee {
        let Some(choice) = choices.iter_mut().find(|c| c.name == callee) else {
            notes.push(format!(
                "the Prometheus histogram(s) of {} name no callee of the traces; not used",
                quote(&callee)
            ));
            continue;
        };
        series.sort_by(|a, b| b.total().total_cmp(&a.total()));
        let mut merged = series[0].clone();
        let same_bounds = series.iter().all(|h| h.buckets.iter().map(|b| b.0).eq(merged.buckets.iter().map(|b| b.0)));
        if same_bounds && series.len() > 1 {
            for h in &series[1..] {
                for (slot, b) in merged.buckets.iter_mut().zip(&h.buckets) {
                    slot.1 += b.1;
                }
            }
            merged.labels.retain(|k, _| prometheus::CALLEE_LABELS.contains(&k.as_str()));
        } else if series.len() > 1 {
            notes.push(format!(
                "{callee}: {} histogram series with different buckets; the one with the most observations is used",
                series.len()
            ));
        }
        if merged.total() > 0.0 {
            choice.latency = Latency::Histogram(merged);
            // What was said of the traces' own tail no longer describes the latency used.
            choice.notes.retain(|n| !n.contains("show the tail only"));
        }
    }
    notes
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

/// Writes the samples file of every dependency kept as observed; returns (dependency, path
/// relative to the scenario).
fn write_samples(
    out: &Path,
    folder: &str,
    choices: &[DependencyChoice],
) -> Result<BTreeMap<String, String>, CommandError> {
    let base = out.parent().unwrap_or(Path::new(""));
    let mut files = BTreeMap::new();
    for c in choices {
        let Latency::Empirical { sorted_ms, .. } = &c.latency else { continue };
        let relative = format!("{folder}/{}.latency_ms.txt", file_name_for(&c.name));
        let mut text =
            format!("# {}: answered attempt durations in ms, from faultline calibrate\nlatency_ms\n", c.name);
        for v in sorted_ms {
            text.push_str(&format!("{v}\n"));
        }
        let path = base.join(&relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| CommandError::Io(format!("cannot create {}: {e}", parent.display())))?;
        }
        write_atomically(&path, text.as_bytes())?;
        files.insert(c.name.clone(), relative);
    }
    Ok(files)
}

/// The written scenario must load and compile like any other: a calibration that produced a
/// scenario the tool refuses is a defect, reported before the file is written.
fn check_runs(out: &Path, text: &str) -> Result<(), CommandError> {
    let source = crate::scenario::Source::from_text(&out.display().to_string(), text, crate::scenario::Format::Toml);
    let scenario = crate::scenario::parse_source(&source)?;
    crate::engine::Model::compile(&scenario, &source)?;
    Ok(())
}

fn report(
    observations: &Observations,
    choices: &[DependencyChoice],
    calibrated: &scenario_text::Calibrated,
    more_notes: &[String],
    out: &Path,
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
    text.push_str(&format!("\nwrote {}", out.display()));
    if !calibrated.samples_files.is_empty() {
        text.push_str(&format!(" and {} samples file(s)", calibrated.samples_files.len()));
    }
    text.push_str(&format!("\nnext: faultline run {}\n", out.display()));
    text
}
