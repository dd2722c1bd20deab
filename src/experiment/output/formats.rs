//! The contents of a run's files: summary.json and timeseries.csv, and the number format every
//! file shares. Where they are written, and how atomically, is `folder`'s business.

use crate::engine::Model;
use crate::experiment::batch::replications::SeriesSum;
use crate::metrics::Labels;
use crate::metrics::stats::{Aggregate, Estimate};
use crate::metrics::timeseries::{BudgetColumn, FIXED_COLUMNS, USER_COLUMNS};
use crate::scenario::samples::fnv_hex;
use crate::scenario::{Scenario, sample_files};
use crate::sim::us_to_s;
use serde::Serialize;
use std::collections::BTreeMap;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What a run simulated, as 16 hex digits: the scenario as parsed after `--set` (so comments,
/// layout and the file's name do not count), the bytes of every samples file it reads, and
/// neither the seed nor the replication count, which summary.json states on their own. Two
/// folders with equal digests ran one scenario, perhaps on other seeds; `compare` warns when
/// they differ.
pub fn scenario_digest(scenario: &Scenario) -> String {
    let mut s = scenario.clone();
    s.simulation.seed = 0;
    s.simulation.replications = 0;
    let mut text = serde_json::to_string(&s).expect("a scenario always serializes");
    // By content: the same samples in another folder are the same scenario.
    for file in sample_files(scenario) {
        text.push('\n');
        text.push_str(file.rsplit(' ').next().unwrap_or_default());
    }
    fnv_hex(text.as_bytes())
}

/// A number as text: shortest round-trip form; NaN (undefined) as the empty string.
pub fn number(v: f64) -> String {
    if v.is_nan() { String::new() } else { format!("{v}") }
}

#[derive(Serialize)]
struct SummaryJson<'a> {
    scenario: &'a str,
    policy: &'a str,
    seed: u64,
    replications: usize,
    version: &'a str,
    overrides: &'a [String],
    metrics: BTreeMap<&'a str, f64>,
    ci95: BTreeMap<&'a str, [f64; 2]>,
}

pub fn summary_json(model: &Model, policy: &str, seed: u64, overrides: &[String], aggregate: &Aggregate) -> Vec<u8> {
    let summary = SummaryJson {
        scenario: &model.name,
        policy,
        seed,
        replications: aggregate.replications,
        version: VERSION,
        overrides,
        metrics: aggregate.estimates.iter().map(|(k, e)| (k.as_str(), e.mean)).collect(),
        ci95: aggregate.estimates.iter().map(|(k, e)| (k.as_str(), [e.low, e.high])).collect(),
    };
    let mut text = serde_json::to_string_pretty(&summary).expect("a summary always serializes");
    text.push('\n');
    text.into_bytes()
}

/// Mean over `replications` of each window's counts.
pub fn timeseries_csv(model: &Model, labels: &Labels, sum: &SeriesSum, replications: usize) -> Vec<u8> {
    let window_us = model.world.window_us;
    let mut header: Vec<String> = vec!["window_start_s".into(), "window_end_s".into()];
    header.extend(FIXED_COLUMNS.iter().map(|c| c.to_string()));
    let dependencies = &labels.dependencies;
    header.extend(dependencies.iter().map(|d| format!("dependency.{d}.attempt_total")));
    header.extend(dependencies.iter().map(|d| format!("dependency.{d}.queue_depth")));
    header.extend(dependencies.iter().map(|d| format!("dependency.{d}.refused_total")));
    header.extend(labels.breakers.iter().map(|b| format!("breaker.{b}.worst_state")));
    if labels.modes {
        header.extend(labels.workflows.iter().map(|w| format!("workflow.{w}.worst_mode")));
    }
    header.extend(labels.levels.iter().cloned());
    let first_budget = header.len() - 2;
    header.extend(labels.budget_columns.iter().cloned());
    let first_user = header.len() - 2;
    if labels.closed_population {
        header.extend(USER_COLUMNS.iter().map(|c| c.to_string()));
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&header).expect("writing to memory cannot fail");
    let columns = header.len() - 2;
    let n = replications.max(1) as f64;
    // A budget's shares and burn rates are kept in millionths; the users after them are counts.
    let scale: Vec<f64> = (0..columns)
        .map(|c| match c.checked_sub(first_budget) {
            Some(k) if c < first_user => BudgetColumn::of(k % labels.budget_width).scale(),
            Some(_) | None => 1.0,
        })
        .collect();
    for row in 0..sum.rows() {
        let mut record = vec![number(us_to_s(row as u64 * window_us)), number(us_to_s((row as u64 + 1) * window_us))];
        for (c, per_unit) in scale.iter().enumerate() {
            record.push(number(sum.value(row, c) as f64 / (n * per_unit)));
        }
        w.write_record(&record).expect("writing to memory cannot fail");
    }
    w.into_inner().expect("flushing memory cannot fail")
}

/// Column names for one metric's estimate in wide tables.
pub fn estimate_columns(metric: &str) -> [String; 3] {
    [metric.to_string(), format!("{metric}.ci95_low"), format!("{metric}.ci95_high")]
}

pub fn estimate_cells(e: Option<&Estimate>) -> [String; 3] {
    match e {
        Some(e) => [number(e.mean), number(e.low), number(e.high)],
        None => [String::new(), String::new(), String::new()],
    }
}
