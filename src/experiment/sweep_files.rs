//! sweep.csv and sweep.json, written point by point from stored records, so the files of a
//! sweep, of a resumed sweep and of merged shards are the same bytes, and memory holds one
//! point at a time.

use super::CommandError;
use super::checkpoint::PointRecord;
use super::folder::OutputFolder;
use super::output::{VERSION, estimate_cells, estimate_columns, number};
use super::sweep::{Param, csv_value, grid, json_value};
use super::table::{human, render};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::io::Write;

/// What the files need besides the points: the same for every shard of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepLayout {
    pub scenario: String,
    pub seed: u64,
    pub params: Vec<Param>,
    /// Every metric any point reports, in column order.
    pub metric_names: Vec<String>,
    pub points: usize,
}

/// The key figures shown on the terminal after a sweep, one row per point and policy.
pub const DIGEST_METRICS: [(&str, &str); 5] = [
    ("auto_completion_ratio", "completed"),
    ("deadline_exceeded_ratio", "past deadline"),
    ("retry_amplification_ratio", "amplification"),
    ("run_latency_ms.p95", "p95 ms"),
    ("cost_per_success", "cost/success"),
];

/// Rows shown on the terminal at most; the files hold them all.
const DIGEST_ROWS: usize = 40;

/// One point and policy's key figures (mean, low, high, in DIGEST_METRICS order), for the report.
pub struct SweepPoint {
    pub point: usize,
    pub policy: String,
    pub figures: [(f64, f64, f64); DIGEST_METRICS.len()],
}

/// The terminal's view of a sweep (the first rows of the key figures) and the report's (all).
pub struct Digest {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    omitted: usize,
    pub points: Vec<SweepPoint>,
}

impl Digest {
    fn new(layout: &SweepLayout) -> Digest {
        let mut header: Vec<String> = layout.params.iter().map(|p| p.path.clone()).collect();
        header.push("policy".into());
        header.extend(DIGEST_METRICS.iter().map(|(_, label)| label.to_string()));
        Digest { header, rows: Vec::new(), omitted: 0, points: Vec::new() }
    }

    fn add(&mut self, point: usize, values: &[String], policy: &str, aggregate: &crate::metrics::stats::Aggregate) {
        let figure =
            |m: &str| aggregate.estimates.get(m).map_or((f64::NAN, f64::NAN, f64::NAN), |e| (e.mean, e.low, e.high));
        self.points.push(SweepPoint {
            point,
            policy: policy.to_string(),
            figures: DIGEST_METRICS.map(|(m, _)| figure(m)),
        });
        if self.rows.len() == DIGEST_ROWS {
            self.omitted += 1;
            return;
        }
        let mut row: Vec<String> = values.to_vec();
        row.push(policy.to_string());
        row.extend(DIGEST_METRICS.iter().map(|(m, _)| aggregate.mean(m).map(human).unwrap_or_else(|| "n/a".into())));
        self.rows.push(row);
    }

    /// The aligned table, with a line saying how many rows only the files hold.
    pub fn render(&self) -> String {
        let mut text = render(&self.header, &self.rows);
        if self.omitted > 0 {
            text.push_str(&format!("... and {} more row(s) in sweep.csv\n", self.omitted));
        }
        text
    }
}

/// Writes both files into `folder`, asking `record` for each point in grid order; returns the
/// terminal's digest.
pub fn write_sweep_files(
    folder: &mut OutputFolder,
    layout: &SweepLayout,
    record: &mut dyn FnMut(usize) -> Result<PointRecord, CommandError>,
) -> Result<Digest, CommandError> {
    let mut digest = Digest::new(layout);
    let io = |file: &str, e: std::io::Error| CommandError::Io(format!("cannot write {file}: {e}"));
    let mut csv = csv::Writer::from_writer(folder.writer("sweep.csv")?);
    let mut header: Vec<String> = layout.params.iter().map(|p| p.path.clone()).collect();
    header.push("policy".into());
    header.push("replications".into());
    for m in &layout.metric_names {
        header.extend(estimate_columns(m));
    }
    csv.write_record(&header).map_err(|e| io("sweep.csv", e.into()))?;
    let mut json = folder.writer("sweep.json")?;
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
        let point = record(p)?;
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
    folder.write("report.html", super::report::sweep_report(layout, &digest.points).as_bytes())?;
    Ok(digest)
}
