//! A sweep's key figures: the table the terminal shows after a sweep (its first rows, or a grid
//! per policy for two parameters) and the points report.html plots (all of them).
//!
//! Which figures: those `--metrics` names, else the default ones the scenario gives a value to.
//! A default figure that is zero at every point or undefined at every point (no deadlines:
//! nothing past one; no prices: no cost; no fault: no recovery) answers no question, so it is
//! left out and the table says so.

use super::table::{render, with_interval};
use crate::experiment::batch::grid::{Param, SweepLayout};
use crate::metrics::range::Range;
use crate::metrics::stats::Aggregate;

/// The key figures a sweep shows by default, with their column labels.
pub const DEFAULT_METRICS: [(&str, &str); 8] = [
    ("auto_completion_ratio", "completed"),
    ("deadline_exceeded_ratio", "past deadline"),
    ("retry_amplification_ratio", "amplification"),
    ("run_latency_ms.p95", "p95 ms"),
    ("cost_per_success", "cost/success"),
    ("recovery_never_total", "never recovered"),
    ("recovery_time_s", "recovery s"),
    ("recovery_storm_ratio", "storm ratio"),
];

/// Rows shown on the terminal at most; the files hold them all.
const DIGEST_ROWS: usize = 40;

/// The figures a sweep shows: the metrics and their labels, and whether the user chose them.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyMetrics {
    pub metrics: Vec<(String, String)>,
    pub chosen: bool,
}

impl KeyMetrics {
    pub fn defaults() -> KeyMetrics {
        let metrics = DEFAULT_METRICS.iter().map(|(m, l)| (m.to_string(), l.to_string())).collect();
        KeyMetrics { metrics, chosen: false }
    }

    /// The metrics a user named (`--metrics`), each labelled by its own name.
    pub fn chosen(names: &[String]) -> KeyMetrics {
        KeyMetrics { metrics: names.iter().map(|m| (m.clone(), m.clone())).collect(), chosen: true }
    }
}

/// How the terminal lays the figures out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableLayout {
    /// One row per point and policy.
    Rows,
    /// For two parameters: per policy, the first parameter's values as rows and the second's as
    /// columns, each cell the figures in order.
    Grid,
}

/// One point and policy's figures (mean, low, high), in the order of the shown metrics.
pub struct SweepPoint {
    pub point: usize,
    pub policy: String,
    pub values: Vec<String>,
    pub figures: Vec<(f64, f64, f64)>,
    /// The share of replications that never recovered (`recovery_never_total`), whether shown
    /// or not: it tells an undefined recovery time that means "never" (the worst case) from one
    /// that means "not applicable".
    pub never: f64,
}

/// The terminal's and the report's view of a sweep.
pub struct Digest {
    params: Vec<Param>,
    key: KeyMetrics,
    all: Vec<SweepPoint>,
}

/// The digest's view once every point is in: the metrics shown, those left out, every point.
pub struct Shown<'a> {
    pub metrics: Vec<(&'a str, &'a str)>,
    pub left_out: Vec<&'a str>,
    pub points: Vec<SweepPoint>,
}

impl Digest {
    pub fn new(layout: &SweepLayout, key: KeyMetrics) -> Digest {
        Digest { params: layout.params.clone(), key, all: Vec::new() }
    }

    /// Adds one point and policy: its parameter values and its aggregate.
    pub fn add(&mut self, point: usize, values: &[String], policy: &str, aggregate: &Aggregate) {
        let figure =
            |m: &str| aggregate.estimates.get(m).map_or((f64::NAN, f64::NAN, f64::NAN), |e| (e.mean, e.low, e.high));
        self.all.push(SweepPoint {
            point,
            policy: policy.to_string(),
            values: values.to_vec(),
            figures: self.key.metrics.iter().map(|(m, _)| figure(m)).collect(),
            never: figure("recovery_never_total").0,
        });
    }

    /// Keeps the metrics to show: all that were chosen, else the defaults that are neither
    /// undefined at every point nor zero at every point (a mix of 0 and undefined stays: a
    /// recovery time of 0 beside runs that never recovered says something).
    pub fn shown(&self) -> Shown<'_> {
        let informative = |k: usize| {
            let all = |f: &dyn Fn(f64) -> bool| self.all.iter().all(|p| f(p.figures[k].0));
            !all(&|v| v.is_nan()) && !all(&|v| v == 0.0)
        };
        let keep: Vec<usize> = (0..self.key.metrics.len()).filter(|&k| self.key.chosen || informative(k)).collect();
        let left_out =
            (0..self.key.metrics.len()).filter(|k| !keep.contains(k)).map(|k| self.key.metrics[k].1.as_str()).collect();
        let points = self
            .all
            .iter()
            .map(|p| SweepPoint {
                point: p.point,
                policy: p.policy.clone(),
                values: p.values.clone(),
                figures: keep.iter().map(|&k| p.figures[k]).collect(),
                never: p.never,
            })
            .collect();
        let metrics = keep.iter().map(|&k| (self.key.metrics[k].0.as_str(), self.key.metrics[k].1.as_str())).collect();
        Shown { metrics, left_out, points }
    }

    /// The terminal's table: rows (the first DIGEST_ROWS) or a grid per policy, with a line
    /// naming the default figures left out.
    pub fn render(&self, layout: TableLayout) -> String {
        let shown = self.shown();
        let mut text = match layout {
            TableLayout::Rows => self.rows(&shown),
            TableLayout::Grid => self.grids(&shown),
        };
        if shown.points.iter().any(|p| p.figures.iter().any(|f| f.2 > f.1)) {
            text.push_str(
                "[low, high]: the 95 % confidence interval over the replications, clipped to the values the metric can take ([0, 1] for a share, 0 or more otherwise)\n",
            );
        }
        if !shown.left_out.is_empty() {
            text.push_str(&format!(
                "not shown, zero at every point or undefined at every point: {} (--metrics picks the figures)\n",
                shown.left_out.join(", ")
            ));
        }
        text
    }

    fn rows(&self, shown: &Shown) -> String {
        let mut header: Vec<String> = self.params.iter().map(|p| p.path.clone()).collect();
        header.push("policy".into());
        header.extend(shown.metrics.iter().map(|(_, label)| label.to_string()));
        let rows: Vec<Vec<String>> = shown
            .points
            .iter()
            .take(DIGEST_ROWS)
            .map(|p| {
                let mut row = p.values.clone();
                row.push(p.policy.clone());
                row.extend(p.figures.iter().zip(&shown.metrics).map(|(f, (m, _))| figure(f, m)));
                row
            })
            .collect();
        let mut text = render(&header, &rows);
        let omitted = shown.points.len().saturating_sub(DIGEST_ROWS);
        if omitted > 0 {
            text.push_str(&format!("... and {omitted} more row(s) in sweep.csv\n"));
        }
        text
    }

    /// Per policy, a table whose rows are the first parameter's values and whose columns are the
    /// second's; a cell holds the figures in the order the first line names. Points are in grid
    /// order, so point `r x columns + c` is row r, column c.
    fn grids(&self, shown: &Shown) -> String {
        let labels: Vec<&str> = shown.metrics.iter().map(|(_, l)| *l).collect();
        let mut text = format!("cells: {}\n", labels.join(" / "));
        let (rows, columns) = (&self.params[0], &self.params[1]);
        let width = columns.values.len();
        for policy in shown.policies() {
            // Each cell's figures, kept apart so that a column can line them up.
            let mut parts = vec![Vec::new(); rows.values.len() * width];
            for p in shown.points.iter().filter(|p| p.policy == policy) {
                parts[p.point] = p.figures.iter().zip(&shown.metrics).map(|(f, (m, _))| figure(f, m)).collect();
            }
            let cells = aligned_cells(&parts, width);
            text.push_str(&format!("\n{policy}: rows {}, columns {}\n", rows.path, columns.path));
            // A grid wider than a terminal is cut into blocks of columns, each under the row
            // labels again, rather than wrapped line by line by the terminal.
            let row_label_width =
                rows.values.iter().chain(std::iter::once(&rows.path)).map(|v| v.chars().count()).max().unwrap_or(0);
            let column_width = |c: usize| {
                (0..rows.values.len())
                    .map(|r| cells[r * width + c].chars().count())
                    .chain(std::iter::once(columns.values[c].chars().count()))
                    .max()
                    .unwrap_or(0)
            };
            let mut first = 0;
            while first < width {
                let mut last = first + 1;
                let mut used = row_label_width + 2 + column_width(first);
                while last < width && used + 2 + column_width(last) <= GRID_WIDTH {
                    used += 2 + column_width(last);
                    last += 1;
                }
                if first > 0 {
                    text.push('\n');
                }
                if first > 0 || last < width {
                    text.push_str(&format!("columns {} to {} of {width}:\n", first + 1, last));
                }
                let mut header = vec![rows.path.clone()];
                header.extend(columns.values[first..last].iter().cloned());
                let table: Vec<Vec<String>> = rows
                    .values
                    .iter()
                    .enumerate()
                    .map(|(r, label)| {
                        std::iter::once(label.clone())
                            .chain(cells[r * width + first..r * width + last].iter().cloned())
                            .collect()
                    })
                    .collect();
                text.push_str(&render(&header, &table));
                first = last;
            }
        }
        text
    }
}

/// How wide a grid's table may be before its columns are cut into blocks: a wide terminal.
/// 160 rather than 120, so that the usual two- or three-value grid with long parameter paths
/// (about 130 characters for two values of two figures each) stays one table: cutting two
/// columns apart is harder to read than a line a little wider than an 80-column window.
const GRID_WIDTH: usize = 160;

/// Each cell's figures joined by " / ", every figure right-aligned to the widest of its kind in
/// the cell's column, so that the figures of a column stand under each other.
fn aligned_cells(parts: &[Vec<String>], width: usize) -> Vec<String> {
    let figures = parts.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![vec![0; figures]; width];
    for (k, cell) in parts.iter().enumerate() {
        for (f, part) in cell.iter().enumerate() {
            widths[k % width][f] = widths[k % width][f].max(part.chars().count());
        }
    }
    parts
        .iter()
        .enumerate()
        .map(|(k, cell)| {
            if cell.is_empty() {
                return String::new();
            }
            cell.iter()
                .enumerate()
                .map(|(f, part)| format!("{part:>w$}", w = widths[k % width][f]))
                .collect::<Vec<_>>()
                .join(" / ")
        })
        .collect()
}

/// A figure with its 95 % interval clipped to the metric's range: a sweep compares points, and
/// a difference inside the intervals is no difference.
fn figure(f: &(f64, f64, f64), metric: &str) -> String {
    with_interval(f.0, f.1, f.2, Range::of_metric(metric))
}

impl Shown<'_> {
    /// The policies, in the order their points came.
    pub fn policies(&self) -> Vec<&str> {
        let mut policies: Vec<&str> = Vec::new();
        for p in &self.points {
            if !policies.contains(&p.policy.as_str()) {
                policies.push(&p.policy);
            }
        }
        policies
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::batch::grid::Param;
    use crate::metrics::stats::Estimate;
    use std::collections::BTreeMap;

    fn layout(params: &[(&str, &[&str])]) -> SweepLayout {
        SweepLayout {
            scenario: "s".into(),
            seed: 1,
            params: params
                .iter()
                .map(|(p, v)| Param { path: p.to_string(), values: v.iter().map(|s| s.to_string()).collect() })
                .collect(),
            metric_names: vec![],
            points: params.iter().map(|(_, v)| v.len()).product(),
        }
    }

    fn aggregate(figures: &[(&str, f64)]) -> Aggregate {
        let estimates: BTreeMap<String, Estimate> =
            figures.iter().map(|(m, v)| (m.to_string(), Estimate { mean: *v, low: *v, high: *v, n: 2 })).collect();
        Aggregate { replications: 2, estimates }
    }

    #[test]
    fn defaults_that_are_zero_or_undefined_everywhere_are_left_out_and_named() {
        let mut d = Digest::new(&layout(&[("x", &["1", "2"])]), KeyMetrics::defaults());
        d.add(0, &["1".into()], "p", &aggregate(&[("auto_completion_ratio", 0.5), ("cost_per_success", 0.0)]));
        d.add(
            1,
            &["2".into()],
            "p",
            &aggregate(&[("auto_completion_ratio", 1.0), ("recovery_time_s", 12.0), ("cost_per_success", 0.0)]),
        );
        let text = d.render(TableLayout::Rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "x  policy  completed  recovery s");
        assert_eq!(lines[2], "1       p      0.500         n/a");
        assert_eq!(lines[3], "2       p          1          12");
        assert_eq!(
            lines[4],
            "not shown, zero at every point or undefined at every point: past deadline, amplification, p95 ms, cost/success, never recovered, storm ratio (--metrics picks the figures)"
        );
    }

    /// Issue 35: `recovery s` read 150 / 52.5 / 15 although the intervals were [-15, 315],
    /// [-21, 126] and [-20, 50]; each figure now carries its interval, clipped at 0.
    #[test]
    fn rows_show_each_figure_with_its_interval_clipped_to_the_range() {
        let mut d = Digest::new(&layout(&[("x", &["1", "2", "4"])]), KeyMetrics::chosen(&["recovery_time_s".into()]));
        for (p, (v, mean, low, high)) in
            [("1", 150.0, -15.0, 315.0), ("2", 52.5, -21.0, 126.0), ("4", 15.0, -20.0, 50.0)].into_iter().enumerate()
        {
            let e = Estimate { mean, low, high, n: 4 };
            let a =
                Aggregate { replications: 4, estimates: [("recovery_time_s".to_string(), e)].into_iter().collect() };
            d.add(p, &[v.into()], "p", &a);
        }
        let text = d.render(TableLayout::Rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[2], "1       p     150 [0, 315]");
        assert_eq!(lines[3], "2       p      52 [0, 126]");
        assert_eq!(lines[4], "4       p       15 [0, 50]");
        assert!(lines[5].starts_with("[low, high]: the 95 % confidence interval"), "{text}");
    }

    #[test]
    fn chosen_metrics_are_all_shown_even_when_zero() {
        let mut d = Digest::new(&layout(&[("x", &["1"])]), KeyMetrics::chosen(&["cost_per_success".into()]));
        d.add(0, &["1".into()], "p", &aggregate(&[("cost_per_success", 0.0)]));
        assert_eq!(
            d.render(TableLayout::Rows),
            "x  policy  cost_per_success\n-  ------  ----------------\n1       p                 0\n"
        );
    }

    #[test]
    fn a_grid_puts_the_first_parameter_down_and_the_second_across_per_policy() {
        let key = KeyMetrics::chosen(&["a".into(), "b".into()]);
        let mut d = Digest::new(&layout(&[("rows", &["1", "2"]), ("cols", &["5", "10"])]), key);
        let mut point = 0;
        for r in ["1", "2"] {
            for c in ["5", "10"] {
                for policy in ["p", "q"] {
                    let a = r.parse::<f64>().unwrap() * 10.0 + c.parse::<f64>().unwrap();
                    let b = if policy == "p" { 0.25 } else { 0.5 };
                    d.add(point, &[r.into(), c.into()], policy, &aggregate(&[("a", a), ("b", b)]));
                }
                point += 1;
            }
        }
        let text = d.render(TableLayout::Grid);
        let want = "cells: a / b\n\
                    \n\
                    p: rows rows, columns cols\n\
                    rows           5          10\n\
                    ----  ----------  ----------\n\
                    1     15 / 0.250  20 / 0.250\n\
                    2     25 / 0.250  30 / 0.250\n\
                    \n\
                    q: rows rows, columns cols\n\
                    rows           5          10\n\
                    ----  ----------  ----------\n\
                    1     15 / 0.500  20 / 0.500\n\
                    2     25 / 0.500  30 / 0.500\n";
        assert_eq!(text, want);
    }

    #[test]
    fn a_wide_grid_lines_its_figures_up_and_is_cut_into_blocks_of_columns() {
        let key = KeyMetrics::chosen(&["a".into(), "b".into()]);
        let columns: Vec<String> = (0..12).map(|c| (1000 * (c + 1)).to_string()).collect();
        let column_refs: Vec<&str> = columns.iter().map(String::as_str).collect();
        let mut d = Digest::new(&layout(&[("rows", &["1", "2"]), ("cols", &column_refs)]), key);
        let mut point = 0;
        for r in [1.0, 2.0] {
            for (c, column) in columns.iter().enumerate() {
                // Figures of different widths down a column: 5 and 1005.
                let a = if r == 1.0 { 5.0 } else { 1005.0 + c as f64 };
                d.add(point, &[r.to_string(), column.clone()], "p", &aggregate(&[("a", a), ("b", 0.25)]));
                point += 1;
            }
        }
        let text = d.render(TableLayout::Grid);
        assert!(text.lines().all(|l| l.chars().count() <= GRID_WIDTH), "{text}");
        assert!(text.contains("columns 1 to ") && text.contains(" of 12:"), "{text}");
        // Every column's slashes stand under each other.
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("1 ") || l.starts_with("2 ")).collect();
        for pair in rows.chunks(2) {
            let slashes = |l: &str| l.match_indices(" / ").map(|(i, _)| i).collect::<Vec<_>>();
            assert_eq!(slashes(pair[0]), slashes(pair[1]), "{text}");
        }
    }
}
