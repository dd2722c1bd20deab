//! A result folder as `faultline run --out DIR` wrote it, read back: its manifest (what wrote it,
//! from which scenario, which files), and per policy its summary.json (seed, replications,
//! version, overrides, means) and replications.csv (every replication's seed and values, the
//! ground of every interval `compare` draws). Every refusal names the file and says why; nothing
//! here panics on a file's content.

use crate::experiment::command::CommandError;
use crate::experiment::output::folder::{MANIFEST, Manifest};
use crate::metrics::stats::estimate;
use crate::scenario::{InputKind, name_hint, quote, read_input};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Files of a result folder under the reading rule: a replications.csv of 10 000 replications of
/// a scenario with 1 000 metrics is about 200 MB.
pub const RESULT_FILES: InputKind =
    InputKind { plural: "result files", max_bytes: 1 << 30, advice: "compare fewer replications" };

/// A result folder: what its manifest says, and the policies it holds.
#[derive(Debug)]
pub struct SavedRun {
    /// The folder as the user named it.
    pub folder: PathBuf,
    /// The scenario's name (the file's stem).
    pub scenario: String,
    /// The faultline version that wrote it.
    pub version: String,
    /// The manifest's `scenario_digest` (absent from folders of older versions).
    pub digest: Option<String>,
    /// The policies it holds, in the manifest's order.
    pub policies: Vec<String>,
}

/// One policy of a result folder, read whole.
#[derive(Debug)]
pub struct SavedPolicy {
    pub name: String,
    /// summary.json's path as the user would name it.
    pub summary_path: PathBuf,
    pub csv_path: PathBuf,
    /// The root seed (summary.json's `seed`).
    pub seed: u64,
    /// The arguments that changed the scenario (`--set`, `--seed`, `--replication`).
    pub overrides: Vec<String>,
    /// Means as summary.json gives them (NaN for `null`).
    pub means: BTreeMap<String, f64>,
    /// Each replication's seed, in row order.
    pub seeds: Vec<u64>,
    /// Each metric's values, one per replication in row order (NaN when undefined).
    columns: BTreeMap<String, Vec<f64>>,
}

#[derive(Deserialize)]
struct SummaryFile {
    policy: String,
    seed: u64,
    replications: usize,
    overrides: Vec<String>,
    metrics: BTreeMap<String, Option<f64>>,
}

fn refuse(path: &Path, why: impl std::fmt::Display) -> CommandError {
    CommandError::Input(format!("{}: {why}", path.display()))
}

fn read(path: &Path) -> Result<Vec<u8>, CommandError> {
    read_input(path, RESULT_FILES).map_err(|r| refuse(path, r))
}

impl SavedRun {
    /// Reads the manifest of `folder` and checks that `run` wrote it.
    pub fn open(folder: &Path) -> Result<SavedRun, CommandError> {
        let how = "give a folder that `faultline run SCENARIO --out DIR` wrote";
        match std::fs::metadata(folder) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(refuse(folder, format!("not a folder; {how}"))),
            Err(e) => return Err(refuse(folder, format!("cannot open the folder ({e}); {how}"))),
        }
        let path = folder.join(MANIFEST);
        if !path.exists() {
            return Err(refuse(folder, format!("not a faultline result folder: it has no {MANIFEST}; {how}")));
        }
        let manifest: Manifest = serde_json::from_slice(&read(&path)?)
            .map_err(|e| refuse(&path, format!("not a faultline manifest ({e}); {how}")))?;
        if manifest.format != "faultline-output" {
            return Err(refuse(
                &path,
                format!("its format is {}, not faultline-output; {how}", quote(&manifest.format)),
            ));
        }
        if manifest.command != "run" {
            return Err(refuse(
                &path,
                format!(
                    "the folder holds the output of `faultline {}`, and compare reads `run`'s; {how}",
                    manifest.command
                ),
            ));
        }
        let policies: Vec<String> = manifest
            .files
            .iter()
            .filter_map(|f| f.strip_suffix("/summary.json"))
            .filter(|p| !p.is_empty() && !p.contains('/'))
            .map(str::to_string)
            .collect();
        if policies.is_empty() {
            return Err(refuse(&path, format!("it lists no <policy>/summary.json; {how}")));
        }
        for p in &policies {
            let csv = format!("{p}/replications.csv");
            if !manifest.files.contains(&csv) {
                return Err(refuse(
                    &path,
                    format!(
                        "it lists no {csv}, the per-replication values compare needs (a folder of an older faultline?); run the scenario again"
                    ),
                ));
            }
        }
        Ok(SavedRun {
            folder: folder.to_path_buf(),
            scenario: manifest.scenario,
            version: manifest.version,
            digest: manifest.scenario_digest,
            policies,
        })
    }

    /// Reads one policy's summary.json and replications.csv and checks that they agree.
    pub fn policy(&self, name: &str) -> Result<SavedPolicy, CommandError> {
        let summary_path = self.folder.join(name).join("summary.json");
        let csv_path = self.folder.join(name).join("replications.csv");
        let damaged = "the file is damaged; run the scenario again";
        let summary: SummaryFile = serde_json::from_slice(&read(&summary_path)?)
            .map_err(|e| refuse(&summary_path, format!("not a faultline summary ({e}); {damaged}")))?;
        if summary.policy != name {
            return Err(refuse(
                &summary_path,
                format!(
                    "it is policy {}'s summary, in the folder of policy {}; {damaged}",
                    quote(&summary.policy),
                    quote(name)
                ),
            ));
        }
        let (seeds, columns) = read_replications(&csv_path, &read(&csv_path)?)?;
        if seeds.len() != summary.replications {
            return Err(refuse(
                &csv_path,
                format!(
                    "it holds {} replication(s) where {} says {}; {damaged}",
                    seeds.len(),
                    summary_path.display(),
                    summary.replications
                ),
            ));
        }
        Ok(SavedPolicy {
            name: name.to_string(),
            summary_path,
            csv_path,
            seed: summary.seed,
            overrides: summary.overrides,
            means: summary.metrics.into_iter().map(|(k, v)| (k, v.unwrap_or(f64::NAN))).collect(),
            seeds,
            columns,
        })
    }
}

impl SavedPolicy {
    pub fn replications(&self) -> usize {
        self.seeds.len()
    }

    /// Whether the metric is in both of the policy's files.
    pub fn has(&self, metric: &str) -> bool {
        self.means.contains_key(metric) && self.columns.contains_key(metric)
    }

    /// A metric's per-replication values as replications.csv holds them, unchecked (`export`
    /// writes each file's figures as they are).
    pub fn column(&self, metric: &str) -> Option<&[f64]> {
        self.columns.get(metric).map(Vec::as_slice)
    }

    /// The metric names summary.json holds, for hints.
    pub fn names(&self) -> Vec<String> {
        self.means.keys().cloned().collect()
    }

    /// A metric's per-replication values, checked against summary.json's mean: the two files are
    /// written from the same replications, so a mean that is not theirs means one was changed.
    pub fn values(&self, metric: &str) -> Result<&[f64], CommandError> {
        let (Some(&mean), Some(values)) = (self.means.get(metric), self.columns.get(metric)) else {
            let (path, other) = match self.means.contains_key(metric) {
                true => (&self.csv_path, &self.summary_path),
                false => (&self.summary_path, &self.csv_path),
            };
            let hint = name_hint(metric, &self.names());
            return Err(refuse(
                path,
                format!(
                    "it has no metric {}{hint}{}",
                    quote(metric),
                    if self.has_any(metric) { format!(" (though {} has)", other.display()) } else { String::new() }
                ),
            ));
        };
        let recomputed = estimate(values.iter().copied()).mean;
        // Not bit for bit: serde_json reads a float to within one unit in the last place.
        let agree = (recomputed.is_nan() && mean.is_nan())
            || (recomputed - mean).abs() <= 1e-12 * recomputed.abs().max(mean.abs())
            || recomputed == mean;
        if !agree {
            return Err(refuse(
                &self.summary_path,
                format!(
                    "its mean of {} is {mean}, and the replications in {} give {recomputed}: one of the files was changed; run the scenario again",
                    quote(metric),
                    self.csv_path.display()
                ),
            ));
        }
        Ok(values)
    }

    fn has_any(&self, metric: &str) -> bool {
        self.means.contains_key(metric) || self.columns.contains_key(metric)
    }
}

/// replications.csv: `replication`, `seed`, then one column per metric; an empty cell is an
/// undefined value.
type Replications = (Vec<u64>, BTreeMap<String, Vec<f64>>);

fn read_replications(path: &Path, bytes: &[u8]) -> Result<Replications, CommandError> {
    let damaged = "the file is damaged; run the scenario again";
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(bytes);
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| refuse(path, format!("cannot read its header ({e}); {damaged}")))?
        .iter()
        .map(str::to_string)
        .collect();
    if header.len() < 2 || header[0] != "replication" || header[1] != "seed" {
        return Err(refuse(path, format!("its header does not begin with `replication,seed`; {damaged}")));
    }
    let mut seeds = Vec::new();
    let mut columns: Vec<Vec<f64>> = vec![Vec::new(); header.len() - 2];
    for (row, record) in reader.records().enumerate() {
        // Line 1 is the header.
        let line = row + 2;
        let record = record.map_err(|e| refuse(path, format!("line {line}: {e}; {damaged}")))?;
        if record.len() != header.len() {
            return Err(refuse(
                path,
                format!("line {line}: {} cells under a header of {}; {damaged}", record.len(), header.len()),
            ));
        }
        let seed = &record[1];
        seeds.push(seed.parse::<u64>().map_err(|_| {
            refuse(path, format!("line {line}, column `seed`: cannot read {} as a seed; {damaged}", quote(seed)))
        })?);
        for (c, cell) in record.iter().skip(2).enumerate() {
            let value = match cell {
                "" => f64::NAN,
                text => text.parse::<f64>().ok().filter(|v| !v.is_nan()).ok_or_else(|| {
                    refuse(
                        path,
                        format!(
                            "line {line}, column `{}`: cannot read {} as a number; {damaged}",
                            header[c + 2],
                            quote(text)
                        ),
                    )
                })?,
            };
            columns[c].push(value);
        }
    }
    Ok((seeds, header.into_iter().skip(2).zip(columns).collect()))
}
