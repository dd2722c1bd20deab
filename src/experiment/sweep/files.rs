//! sweep.csv and sweep.json, written point by point from stored records, so the files of a
//! sweep, of a resumed sweep and of merged shards are the same bytes, and memory holds one
//! point at a time.

use super::checkpoint::PointRecord;
use crate::experiment::batch::grid::{SweepLayout, csv_value, grid, json_value};
use crate::experiment::command::CommandError;
use crate::experiment::output::folder::OutputFolder;
use crate::experiment::output::formats::{VERSION, estimate_cells, estimate_columns, number};
use crate::experiment::report::digest::{Digest, KeyMetrics, TableLayout};
use crate::experiment::report::html::sweep_report;
use crate::scenario::{name_hint, quote};
use serde_json::{Map, Value, json};
use std::io::Write;

/// What the terminal and the report show of a sweep: the figures (`--metrics`, else the
/// defaults) and whether the table is a grid (`--grid`).
#[derive(Debug, Clone, Default)]
pub struct SweepView {
    pub metrics: Vec<String>,
    pub grid: bool,
}

impl SweepView {
    /// The figures to show, each a metric some point reports; a grid needs two parameters.
    pub fn key_metrics(&self, layout: &SweepLayout) -> Result<KeyMetrics, CommandError> {
        if self.grid && layout.params.len() != 2 {
            return Err(CommandError::Input(format!(
                "argument `--grid`: a grid has the first --param as rows and the second as columns, and this sweep has {} --param",
                layout.params.len()
            )));
        }
        if self.metrics.is_empty() {
            return Ok(KeyMetrics::defaults());
        }
        for m in &self.metrics {
            if !layout.metric_names.contains(m) {
                return Err(CommandError::Input(format!(
                    "argument `--metrics {}`: this scenario has no metric {}{}; docs/metrics.md lists them (or sweep.csv's header)",
                    self.metrics.join(","),
                    quote(m),
                    name_hint(m, &layout.metric_names)
                )));
            }
        }
        Ok(KeyMetrics::chosen(&self.metrics))
    }

    pub fn layout(&self) -> TableLayout {
        if self.grid { TableLayout::Grid } else { TableLayout::Rows }
    }
}

/// Writes both files and report.html into `folder`, asking `record` for each point in grid
/// order; returns the terminal's digest.
pub fn write_sweep_files(
    folder: &mut OutputFolder,
    layout: &SweepLayout,
    key: KeyMetrics,
    record: &mut dyn FnMut(usize) -> Result<PointRecord, CommandError>,
) -> Result<Digest, CommandError> {
    let mut csv = folder.writer("sweep.csv")?;
    let mut json = folder.writer("sweep.json")?;
    let digest = write_sweep_tables(&mut csv, &mut json, layout, key, &mut |p| record(p).map(Some))?;
    folder.write("report.html", sweep_report(layout, &digest.shown()).as_bytes())?;
    Ok(digest)
}

/// Writes sweep.csv into `csv` and sweep.json into `json`, asking `record` for each point in
/// grid order (a point it has no record of, `None`, has no rows: an interrupted sweep in
/// memory); returns the terminal's digest.
pub fn write_sweep_tables(
    csv: &mut dyn Write,
    json: &mut dyn Write,
    layout: &SweepLayout,
    key: KeyMetrics,
    record: &mut dyn FnMut(usize) -> Result<Option<PointRecord>, CommandError>,
) -> Result<Digest, CommandError> {
    let mut digest = Digest::new(layout, key);
    let io = |file: &str, e: std::io::Error| CommandError::Io(format!("cannot write {file}: {e}"));
    let mut csv = csv::Writer::from_writer(csv);
    let mut header: Vec<String> = layout.params.iter().map(|p| p.path.clone()).collect();
    header.push("policy".into());
    header.push("replications".into());
    for m in &layout.metric_names {
        header.extend(estimate_columns(m));
    }
    csv.write_record(&header).map_err(|e| io("sweep.csv", e.into()))?;
    let params: Vec<&str> = layout.params.iter().map(|p| p.path.as_str()).collect();
    write!(
        json,
        "{{\n  \"scenario\": {},\n  \"version\": {},\n  \"seed\": {},\n  \"params\": {},\n  \"rows\": [",
        json!(layout.scenario),
        json!(VERSION),
        layout.seed,
        json!(params)
    )
    .map_err(|e| io("sweep.json", e))?;
    let mut first_row = true;
    for (p, values) in grid(&layout.params).iter().enumerate() {
        let Some(point) = record(p)? else { continue };
        for row in &point.rows {
            let aggregate = row.aggregate();
            digest.add(p, values, &row.policy, &aggregate);
            let mut cells: Vec<String> = values.iter().map(|v| csv_value(v)).collect();
            cells.push(row.policy.clone());
            cells.push(number(aggregate.replications as f64));
            for name in &layout.metric_names {
                cells.extend(estimate_cells(aggregate.estimates.get(name)));
            }
            csv.write_record(&cells).map_err(|e| io("sweep.csv", e.into()))?;

            let mut params = Map::new();
            for (param, v) in layout.params.iter().zip(values) {
                params.insert(param.path.clone(), json_value(v));
            }
            let estimates = &aggregate.estimates;
            let metrics: Map<String, Value> = estimates.iter().map(|(k, e)| (k.clone(), json!(e.mean))).collect();
            let ci95: Map<String, Value> = estimates.iter().map(|(k, e)| (k.clone(), json!([e.low, e.high]))).collect();
            let object = json!({
                "params": params,
                "policy": row.policy,
                "seed": point.seed,
                "replications": aggregate.replications,
                "metrics": metrics,
                "ci95": ci95,
            });
            let pretty = serde_json::to_string_pretty(&object).expect("a row always serializes");
            json.write_all(if first_row { b"\n" } else { b",\n" }).map_err(|e| io("sweep.json", e))?;
            first_row = false;
            for (i, line) in pretty.lines().enumerate() {
                let sep = if i == 0 { "    " } else { "\n    " };
                write!(json, "{sep}{line}").map_err(|e| io("sweep.json", e))?;
            }
        }
    }
    json.write_all(b"\n  ]\n}\n").and_then(|_| json.flush()).map_err(|e| io("sweep.json", e))?;
    csv.flush().map_err(|e| io("sweep.csv", e))?;
    Ok(digest)
}
