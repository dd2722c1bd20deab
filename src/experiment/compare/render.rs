//! A comparison as the terminal shows it (a header naming both sides, one aligned table per
//! policy, notes) and as files hold it: JSON and CSV with one row per policy x metric, flat, so
//! that pandas (`read_json`, `read_csv`) and DuckDB load them with no cleaning.

use super::difference::{Difference, Pairing};
use super::saved::{SavedPolicy, SavedRun};
use crate::experiment::command::CommandError;
use crate::experiment::output::formats::number;
use crate::experiment::report::table::{human, render_aligned};
use serde::Serialize;

/// How `compare` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareFormat {
    Table,
    Json,
    Csv,
}

/// One policy on both sides.
pub struct Block {
    pub policy: String,
    pub a: SavedPolicy,
    pub b: SavedPolicy,
    pub pairing: Pairing,
    pub rows: Vec<Difference>,
}

/// Everything a comparison found.
pub struct Comparison {
    pub a: SavedRun,
    pub b: SavedRun,
    pub blocks: Vec<Block>,
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
    /// What makes the figures harder to read as the effect of one change.
    pub warnings: Vec<String>,
}

impl Comparison {
    pub fn render(&self, format: CompareFormat) -> Result<String, CommandError> {
        match format {
            CompareFormat::Table => Ok(self.table()),
            CompareFormat::Json => self.json(),
            CompareFormat::Csv => Ok(self.csv()),
        }
    }

    /// A side in one line: its scenario, policies, seed, replications, binary, digest and sets.
    fn side(&self, label: &str, run: &SavedRun, first: impl Fn(&Block) -> &SavedPolicy) -> String {
        let mut line = format!("{label} = {}: scenario {}", run.folder.display(), run.scenario);
        if let Some(block) = self.blocks.first() {
            let p = first(block);
            line.push_str(&format!(", seed {}, {} replication(s)", p.seed, p.replications()));
        }
        line.push_str(&format!(", policies {}, faultline {}", run.policies.join(", "), run.version));
        match &run.digest {
            Some(d) => line.push_str(&format!(", scenario digest {d}")),
            None => line.push_str(", no scenario digest"),
        }
        if let Some(block) = self.blocks.first() {
            let overrides = arguments(&first(block).overrides);
            if !overrides.is_empty() {
                line.push_str(&format!(", {overrides}"));
            }
        }
        line.push('\n');
        line
    }

    fn table(&self) -> String {
        let mut text = self.side("A", &self.a, |b| &b.a);
        text.push_str(&self.side("B", &self.b, |b| &b.b));
        for w in &self.warnings {
            text.push_str(&format!("warning: {w}\n"));
        }
        for (names, side) in [(&self.only_a, "A"), (&self.only_b, "B"), (&Vec::new(), "")] {
            if !names.is_empty() {
                text.push_str(&format!("note: only {side} holds {}, not compared\n", names.join(", ")));
            }
        }
        let mut clipped: Vec<String> = Vec::new();
        let mut undefined: Vec<String> = Vec::new();
        for block in &self.blocks {
            text.push_str(&format!("\npolicy {}: {}\n\n", block.policy, block.pairing.said()));
            let header: Vec<String> =
                ["metric", "A", "B", "B - A", "95% CI of B - A", "verdict"].iter().map(|s| s.to_string()).collect();
            let rows: Vec<Vec<String>> = block
                .rows
                .iter()
                .map(|d| {
                    let e = &d.difference;
                    let interval = match (e.low.is_nan(), d.unclipped.is_some()) {
                        (true, _) => "n/a".to_string(),
                        (false, clipped) => {
                            format!("{}[{}, {}]", if clipped { "*" } else { "" }, human(e.low), human(e.high))
                        }
                    };
                    vec![
                        d.metric.clone(),
                        human(d.a.mean),
                        human(d.b.mean),
                        signed(e.mean),
                        interval,
                        d.verdict.name().to_string(),
                    ]
                })
                .collect();
            text.push_str(&render_aligned(&header, &rows, &[0, 5]));
            for d in &block.rows {
                if let Some((low, high)) = d.unclipped {
                    clipped.push(format!(
                        "{} {} (Student-t: [{}, {}])",
                        block.policy,
                        d.metric,
                        human(low),
                        human(high)
                    ));
                }
                if d.undefined_pairs > 0 {
                    undefined.push(format!(
                        "{} {}: undefined on a side in {} of {} replication(s), left out",
                        block.policy,
                        d.metric,
                        d.undefined_pairs,
                        block.a.replications()
                    ));
                }
            }
        }
        if self.blocks.iter().all(|b| b.rows.is_empty()) {
            text.push_str("\nno figure to compare: every default metric is 0 or undefined on both sides; name some with --metrics\n");
        }
        text.push_str(
            "\nB - A is B's mean minus A's, with its 95 % interval. better/worse: the interval lies wholly on one side of 0, \
             for a metric with a better side; higher/lower: for one without; no clear difference: the interval holds 0.\n",
        );
        if !clipped.is_empty() {
            text.push_str(&format!(
                "* clipped to the range a difference of the metric can take: {}.\n",
                clipped.join("; ")
            ));
        }
        for u in undefined {
            text.push_str(&format!("note: {u}\n"));
        }
        text
    }

    fn records(&self) -> Vec<Record<'_>> {
        let mut records = Vec::new();
        for block in &self.blocks {
            for d in &block.rows {
                records.push(Record {
                    policy: &block.policy,
                    metric: &d.metric,
                    direction: d.direction.name(),
                    a_mean: defined(d.a.mean),
                    a_ci95_low: defined(d.a.low),
                    a_ci95_high: defined(d.a.high),
                    a_replications: block.a.replications(),
                    b_mean: defined(d.b.mean),
                    b_ci95_low: defined(d.b.low),
                    b_ci95_high: defined(d.b.high),
                    b_replications: block.b.replications(),
                    b_minus_a: defined(d.difference.mean),
                    b_minus_a_ci95_low: defined(d.difference.low),
                    b_minus_a_ci95_high: defined(d.difference.high),
                    b_minus_a_clipped: d.unclipped.is_some(),
                    undefined_pairs: d.undefined_pairs,
                    verdict: d.verdict.name(),
                    intervals: block.pairing.name(),
                    a_folder: self.a.folder.display().to_string(),
                    a_scenario: &self.a.scenario,
                    a_scenario_digest: self.a.digest.as_deref(),
                    a_seed: block.a.seed,
                    a_version: &self.a.version,
                    b_folder: self.b.folder.display().to_string(),
                    b_scenario: &self.b.scenario,
                    b_scenario_digest: self.b.digest.as_deref(),
                    b_seed: block.b.seed,
                    b_version: &self.b.version,
                });
            }
        }
        records
    }

    fn json(&self) -> Result<String, CommandError> {
        let mut text = serde_json::to_string_pretty(&self.records())
            .map_err(|e| CommandError::Io(format!("cannot write the comparison as JSON: {e}")))?;
        text.push('\n');
        Ok(text)
    }

    fn csv(&self) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(CSV_COLUMNS).expect("writing to memory cannot fail");
        for r in self.records() {
            let n = |v: Option<f64>| v.map(number).unwrap_or_default();
            let cells = [
                r.policy.to_string(),
                r.metric.to_string(),
                r.direction.to_string(),
                n(r.a_mean),
                n(r.a_ci95_low),
                n(r.a_ci95_high),
                r.a_replications.to_string(),
                n(r.b_mean),
                n(r.b_ci95_low),
                n(r.b_ci95_high),
                r.b_replications.to_string(),
                n(r.b_minus_a),
                n(r.b_minus_a_ci95_low),
                n(r.b_minus_a_ci95_high),
                r.b_minus_a_clipped.to_string(),
                r.undefined_pairs.to_string(),
                r.verdict.to_string(),
                r.intervals.to_string(),
                r.a_folder.clone(),
                r.a_scenario.to_string(),
                r.a_scenario_digest.unwrap_or_default().to_string(),
                r.a_seed.to_string(),
                r.a_version.to_string(),
                r.b_folder.clone(),
                r.b_scenario.to_string(),
                r.b_scenario_digest.unwrap_or_default().to_string(),
                r.b_seed.to_string(),
                r.b_version.to_string(),
            ];
            w.write_record(&cells).expect("writing to memory cannot fail");
        }
        String::from_utf8(w.into_inner().expect("flushing memory cannot fail")).expect("the cells are UTF-8")
    }
}

/// The columns of the CSV form, in the order of [`Record`]'s fields (the JSON form's keys).
const CSV_COLUMNS: [&str; 28] = [
    "policy",
    "metric",
    "direction",
    "a_mean",
    "a_ci95_low",
    "a_ci95_high",
    "a_replications",
    "b_mean",
    "b_ci95_low",
    "b_ci95_high",
    "b_replications",
    "b_minus_a",
    "b_minus_a_ci95_low",
    "b_minus_a_ci95_high",
    "b_minus_a_clipped",
    "undefined_pairs",
    "verdict",
    "intervals",
    "a_folder",
    "a_scenario",
    "a_scenario_digest",
    "a_seed",
    "a_version",
    "b_folder",
    "b_scenario",
    "b_scenario_digest",
    "b_seed",
    "b_version",
];

/// One policy x metric, as JSON and CSV hold it: every value in the metric's own unit, which
/// its name ends with (docs/metrics.md); undefined is `null` in JSON and an empty cell in CSV.
#[derive(Serialize)]
struct Record<'a> {
    policy: &'a str,
    metric: &'a str,
    direction: &'static str,
    a_mean: Option<f64>,
    a_ci95_low: Option<f64>,
    a_ci95_high: Option<f64>,
    a_replications: usize,
    b_mean: Option<f64>,
    b_ci95_low: Option<f64>,
    b_ci95_high: Option<f64>,
    b_replications: usize,
    b_minus_a: Option<f64>,
    b_minus_a_ci95_low: Option<f64>,
    b_minus_a_ci95_high: Option<f64>,
    b_minus_a_clipped: bool,
    undefined_pairs: usize,
    verdict: &'static str,
    intervals: &'static str,
    a_folder: String,
    a_scenario: &'a str,
    a_scenario_digest: Option<&'a str>,
    a_seed: u64,
    a_version: &'a str,
    b_folder: String,
    b_scenario: &'a str,
    b_scenario_digest: Option<&'a str>,
    b_seed: u64,
    b_version: &'a str,
}

/// summary.json's `overrides` as they were typed: `--set` values are recorded as `path=value`,
/// the other arguments with their flag.
pub fn arguments(overrides: &[String]) -> String {
    let typed: Vec<String> =
        overrides.iter().map(|o| if o.starts_with("--") { o.clone() } else { format!("--set {o}") }).collect();
    typed.join(" ")
}

fn defined(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

/// A difference with its sign: `+0.012`, `-3.5`, `0`.
fn signed(v: f64) -> String {
    if v > 0.0 { format!("+{}", human(v)) } else { human(v) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CSV header and the JSON keys are one list, in one order.
    #[test]
    fn csv_columns_are_the_json_keys_in_order() {
        let r = Record {
            policy: "p",
            metric: "m",
            direction: "neutral",
            a_mean: None,
            a_ci95_low: None,
            a_ci95_high: None,
            a_replications: 0,
            b_mean: None,
            b_ci95_low: None,
            b_ci95_high: None,
            b_replications: 0,
            b_minus_a: None,
            b_minus_a_ci95_low: None,
            b_minus_a_ci95_high: None,
            b_minus_a_clipped: false,
            undefined_pairs: 0,
            verdict: "n/a",
            intervals: "paired",
            a_folder: String::new(),
            a_scenario: "",
            a_scenario_digest: None,
            a_seed: 0,
            a_version: "",
            b_folder: String::new(),
            b_scenario: "",
            b_scenario_digest: None,
            b_seed: 0,
            b_version: "",
        };
        let text = serde_json::to_string(&r).unwrap();
        let keys: Vec<&str> = text.split('"').skip(1).step_by(2).filter(|k| CSV_COLUMNS.contains(k)).collect();
        assert_eq!(keys, CSV_COLUMNS);
        assert_eq!((signed(0.5), signed(-2.0), signed(0.0)), ("+0.500".to_string(), "-2".to_string(), "0".to_string()));
    }
}
