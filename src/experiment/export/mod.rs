//! `faultline export RESULT_DIR`: a result folder that `run` wrote, read back without simulating
//! and written as metrics a monitoring stack loads: Prometheus text (0.0.4), OpenMetrics (what
//! `promtool tsdb create-blocks-from openmetrics` backfills) or OTLP/JSON metrics. `families`
//! names the metrics, `encode` writes them. Virtual time is mapped onto a fixed instant
//! ([`DEFAULT_START_EPOCH_MS`]) or the one given, so the same folder exports the same bytes.

pub mod encode;
pub mod families;

use crate::experiment::command::CommandError;
use crate::experiment::compare::saved::{RESULT_FILES, SavedRun};
use crate::experiment::output::folder::write_atomically;
use crate::experiment::output::formats::VERSION;
use crate::scenario::{quote, read_input};
use families::{Def, Families, Labels, summary_metric, timeseries_column};
use std::path::{Path, PathBuf};

/// 2026-01-01T00:00:00Z in milliseconds: where virtual time 0 lands unless `--start-epoch-ms`
/// says otherwise. Fixed, so that an export is reproducible byte for byte.
pub const DEFAULT_START_EPOCH_MS: i64 = 1_767_225_600_000;

/// 9999-12-31T23:59:59.999Z: past it a timestamp no longer fits what Prometheus or OTLP read.
const LAST_EPOCH_MS: i64 = 253_402_300_799_999;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Prometheus,
    OpenMetrics,
    OtlpJson,
}

#[derive(Debug, Clone)]
pub struct ExportOptions {
    pub folder: PathBuf,
    pub format: ExportFormat,
    /// Where to write (through a temporary name); None for standard output.
    pub out: Option<PathBuf>,
    pub start_epoch_ms: Option<i64>,
}

/// What the command prints: the export itself, or a line saying where it went.
pub struct ExportReport {
    pub text: String,
}

fn refuse(path: &Path, why: impl std::fmt::Display) -> CommandError {
    CommandError::Input(format!("{}: {why}", path.display()))
}

/// A policy's timeseries.csv: its column names (after the two window columns) and rows of
/// (window start and end in seconds, values).
struct Series {
    columns: Vec<String>,
    rows: Vec<(f64, f64, Vec<f64>)>,
}

fn read_series(path: &Path) -> Result<Series, CommandError> {
    let bytes = read_input(path, RESULT_FILES).map_err(|r| refuse(path, r))?;
    let damaged = "the file is damaged; run the scenario again";
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(bytes.as_slice());
    let header = reader.headers().map_err(|e| refuse(path, format!("line 1: not CSV ({e}); {damaged}")))?.clone();
    if header.get(0) != Some("window_start_s") || header.get(1) != Some("window_end_s") {
        return Err(refuse(
            path,
            format!("line 1: a time series starts with the columns window_start_s,window_end_s; {damaged}"),
        ));
    }
    let columns: Vec<String> = header.iter().skip(2).map(str::to_string).collect();
    let mut rows = Vec::new();
    let mut last_end = f64::NEG_INFINITY;
    for (k, record) in reader.records().enumerate() {
        let line = k + 2;
        let record = record.map_err(|e| refuse(path, format!("line {line}: not CSV ({e}); {damaged}")))?;
        if record.len() != header.len() {
            return Err(refuse(
                path,
                format!("line {line}: {} field(s) where the header has {}; {damaged}", record.len(), header.len()),
            ));
        }
        let mut values = Vec::with_capacity(record.len());
        for (c, cell) in record.iter().enumerate() {
            let value: f64 = cell.parse().ok().filter(|v: &f64| v.is_finite()).ok_or_else(|| {
                refuse(
                    path,
                    format!(
                        "line {line}, column {} ({}): {} is not a number; {damaged}",
                        c + 1,
                        &header[c],
                        quote(cell)
                    ),
                )
            })?;
            values.push(value);
        }
        let end = values[1];
        if end <= last_end || end < values[0] || values[0] < 0.0 {
            return Err(refuse(path, format!("line {line}: the windows are not in time order; {damaged}")));
        }
        last_end = end;
        rows.push((values[0], end, values.split_off(2)));
    }
    Ok(Series { columns, rows })
}

/// Virtual seconds to an instant in milliseconds since the Unix epoch.
fn instant(start_ms: i64, seconds: f64) -> i64 {
    start_ms + (seconds * 1000.0).round() as i64
}

/// Reads the folder and writes the export.
pub fn export(opts: &ExportOptions) -> Result<ExportReport, CommandError> {
    let start_ms = opts.start_epoch_ms.unwrap_or(DEFAULT_START_EPOCH_MS);
    if !(0..=LAST_EPOCH_MS).contains(&start_ms) {
        return Err(CommandError::Input(format!(
            "--start-epoch-ms {start_ms}: give milliseconds since 1970-01-01T00:00:00Z, from 0 to {LAST_EPOCH_MS}"
        )));
    }
    let saved = SavedRun::open(&opts.folder)?;
    let mut families = Families::default();
    for policy in &saved.policies {
        let base: Labels = vec![("scenario".into(), saved.scenario.clone()), ("policy".into(), policy.clone())];
        let labelled = |def: &Def| -> Labels { base.iter().cloned().chain(def.labels.iter().cloned()).collect() };
        let series_path = opts.folder.join(policy).join("timeseries.csv");
        let series = read_series(&series_path)?;
        let Some(&(_, end_s, _)) = series.rows.last() else {
            return Err(refuse(&series_path, "it has no windows; run the scenario again"));
        };
        if instant(start_ms, end_s) > LAST_EPOCH_MS {
            return Err(CommandError::Input(format!(
                "--start-epoch-ms {start_ms}: the run's end at {end_s} s would fall after {LAST_EPOCH_MS}"
            )));
        }
        for (c, column) in series.columns.iter().enumerate() {
            let def = timeseries_column(column).ok_or_else(|| {
                refuse(
                    &series_path,
                    format!(
                        "line 1: column {} ({}) is not one this faultline ({}) knows; export with the version that wrote the folder",
                        c + 3,
                        quote(column),
                        VERSION
                    ),
                )
            })?;
            let labels = labelled(&def);
            let mut total = 0.0;
            if def.kind == families::Kind::Counter {
                // A cumulative count is 0 at the start of the simulation: the point that lets
                // a rate be read for the first window.
                families.add(&def, labels.clone(), instant(start_ms, series.rows[0].0), 0.0);
            }
            for (_, end, values) in &series.rows {
                let value = match def.kind {
                    families::Kind::Counter => {
                        total += values[c];
                        total
                    }
                    families::Kind::Gauge => values[c],
                };
                families.add(&def, labels.clone(), instant(start_ms, *end), value);
            }
        }
        // The whole-run figures, at the run's end: the mean, then each replication with its seed.
        let at = instant(start_ms, end_s);
        let figures = saved.policy(policy)?;
        for (metric, &mean) in &figures.means {
            let def = summary_metric(metric);
            let mut labels = labelled(&def);
            if mean.is_finite() {
                let mut with = labels.clone();
                with.push(("replication".into(), "mean".into()));
                families.add(&def, with, at, mean / def.divisor);
            }
            if let Some(values) = figures.column(metric) {
                labels.push(("replication".into(), String::new()));
                labels.push(("seed".into(), String::new()));
                for (k, (&value, seed)) in values.iter().zip(&figures.seeds).enumerate() {
                    if value.is_finite() {
                        let mut with = labels.clone();
                        let n = with.len();
                        with[n - 2].1 = k.to_string();
                        with[n - 1].1 = seed.to_string();
                        families.add(&def, with, at, value / def.divisor);
                    }
                }
            }
        }
    }
    families.fill_missing_labels();
    let text = match opts.format {
        ExportFormat::Prometheus => encode::prometheus_text(&families),
        ExportFormat::OpenMetrics => encode::openmetrics_text(&families),
        ExportFormat::OtlpJson => encode::otlp_json(
            &families,
            &encode::Origin { scenario: &saved.scenario, folder_version: &saved.version, start_ms },
        ),
    };
    match &opts.out {
        None => Ok(ExportReport { text }),
        Some(path) => {
            write_atomically(path, text.as_bytes())?;
            Ok(ExportReport {
                text: format!(
                    "wrote {} ({} families, {} samples; virtual time 0 at {start_ms} ms since the Unix epoch)\n",
                    path.display(),
                    families.by_name.len(),
                    families.samples()
                ),
            })
        }
    }
}
