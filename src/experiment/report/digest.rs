//! A sweep's key figures: the table the terminal shows after a sweep (its first rows) and the
//! points report.html plots (all of them).

use super::table::{human, render};
use crate::experiment::batch::grid::SweepLayout;
use crate::metrics::stats::Aggregate;

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
    pub fn new(layout: &SweepLayout) -> Digest {
        let mut header: Vec<String> = layout.params.iter().map(|p| p.path.clone()).collect();
        header.push("policy".into());
        header.extend(DIGEST_METRICS.iter().map(|(_, label)| label.to_string()));
        Digest { header, rows: Vec::new(), omitted: 0, points: Vec::new() }
    }

    /// Adds one point and policy: its parameter values and its aggregate.
    pub fn add(&mut self, point: usize, values: &[String], policy: &str, aggregate: &Aggregate) {
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
