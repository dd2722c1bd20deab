//! What every mechanism panel of report.html stands on: the drawn policies with the figures
//! their panels read, a panel (a chart, its values, the note that says what it draws), a
//! section of panels, and the phrases the notes share.

use super::svg::{Line, Palette, label};
use super::windows::{layout, replications, window_points};
use super::xml::escape;
use crate::engine::Model;
use crate::experiment::batch::replications::PolicyRuns;
use crate::metrics::stats::Aggregate;
use crate::metrics::timeseries::Layout;
use crate::runtime::policy::PolicyModel;
use std::fmt::Write;

/// Lines a chart draws at most: one per colour of the palette.
pub const MAX_LINES: usize = 8;

/// One drawn policy with everything its panels read.
pub struct Drawn<'a> {
    pub name: &'a str,
    pub policy: &'a PolicyModel,
    pub layout: Layout,
    pub aggregate: &'a Aggregate,
    pub runs: &'a PolicyRuns,
}

impl Drawn<'_> {
    pub fn mean(&self, metric: &str) -> f64 {
        self.aggregate.mean(metric).unwrap_or(f64::NAN)
    }

    /// A metric's 95 % interval, within the values it can take (NaN when unknown).
    pub fn interval(&self, metric: &str) -> (f64, f64) {
        self.aggregate.estimates.get(metric).map_or((f64::NAN, f64::NAN), |e| {
            let e = e.within(crate::metrics::range::Range::of_metric(metric));
            (e.low, e.high)
        })
    }

    /// The mean over replications of one column at one window.
    pub fn cell(&self, row: usize, column: usize) -> f64 {
        self.runs.series.value(row, column) as f64 / replications(self.runs)
    }

    /// Whether any window of any replication holds a non-zero value in `column`.
    pub fn ever(&self, column: usize) -> bool {
        (0..self.runs.series.rows()).any(|row| self.runs.series.value(row, column) > 0)
    }
}

/// The drawn policies, in the order the report shows them.
pub fn drawn<'a>(
    model: &'a Model,
    names: &[&'a str],
    aggregates: &'a [Aggregate],
    runs: &'a [PolicyRuns],
) -> Vec<Drawn<'a>> {
    names
        .iter()
        .zip(aggregates.iter().zip(runs))
        .filter_map(|(name, (aggregate, runs))| {
            let p = model.policy_index(name)?;
            Some(Drawn { name, policy: &model.policies[p], layout: layout(model, p), aggregate, runs })
        })
        .collect()
}

/// The palette slot of each series owned by these policies: its policy's place among the drawn
/// policies (its colour in the charts of all of them), when no policy owns two series; else
/// None, and the series take their colours by position (two of one policy must differ).
pub fn policy_slots(drawn: &[Drawn], owners: &[&str]) -> Option<Vec<usize>> {
    let slots: Vec<usize> = owners.iter().filter_map(|o| drawn.iter().position(|d| d.name == *o)).collect();
    let mut distinct = slots.clone();
    distinct.sort_unstable();
    distinct.dedup();
    (slots.len() == owners.len() && distinct.len() == slots.len()).then_some(slots)
}

/// The palette of `policy_slots`' answer.
pub fn palette(slots: &Option<Vec<usize>>) -> Palette<'_> {
    slots.as_deref().map_or(Palette::ByPosition, Palette::Slots)
}

/// A chart with the note that says what it draws.
pub fn panel(svg: String, note: &str) -> String {
    panel_with(svg, "", note)
}

/// A chart, HTML under it (a table of the values drawn), and the note.
pub fn panel_with(svg: String, html: &str, note: &str) -> String {
    format!("<div class=\"panel\">{svg}{html}<p class=\"note\">{}</p></div>", escape(note))
}

/// The values of a bar chart as a table (a policy per row), so a bar too short to see still
/// reads as its number.
pub fn values_table(columns: &[String], groups: &[(String, Vec<f64>)]) -> String {
    let mut t = String::from("<table class=\"values\"><tr><th>policy</th>");
    for c in columns {
        let _ = write!(t, "<th>{}</th>", escape(c));
    }
    t.push_str("</tr>");
    for (name, values) in groups {
        let _ = write!(t, "<tr><td>{}</td>", escape(name));
        for v in values {
            let _ = write!(t, "<td>{}</td>", label(*v));
        }
        t.push_str("</tr>");
    }
    t.push_str("</table>");
    t
}

/// A section: its heading, its panels side by side, and a note on what it leaves out.
pub fn section(out: &mut String, title: &str, panels: &[String], note: &str) {
    let _ = write!(out, "<h2>{}</h2><div class=\"charts\">", escape(title));
    for p in panels {
        out.push_str(p);
    }
    out.push_str("</div>");
    if !note.is_empty() {
        let _ = write!(out, "<p class=\"note\">{}</p>", escape(note));
    }
    out.push('\n');
}

/// " Policies without X: a, b." for the drawn policies that `has` says lack the mechanism.
pub fn without(drawn: &[Drawn], has: impl Fn(&Drawn) -> bool, what: &str) -> String {
    let lacking: Vec<&str> = drawn.iter().filter(|d| !has(d)).map(|d| d.name).collect();
    match lacking.as_slice() {
        [] => String::new(),
        [one] => format!(" Policy {one} has no {what}."),
        many => format!(" Policies {} have no {what}.", many.join(", ")),
    }
}

/// What the charts over time shade, for the notes.
pub fn shaded(model: &Model) -> &'static str {
    if model.world.faults.is_empty() { "The scenario has no fault." } else { "Shaded: fault windows." }
}

/// "over 8 replications" for the notes.
pub fn over(drawn: &[Drawn]) -> String {
    let counts: Vec<usize> = drawn.iter().map(|d| d.runs.metrics.len()).collect();
    match counts.iter().min() {
        Some(&n) if counts.iter().all(|&c| c == n) => format!("{n} replication{}", if n == 1 { "" } else { "s" }),
        _ => "each policy's replications".into(),
    }
}

/// The measured window, as the summary metrics cover it.
pub fn measured(model: &Model) -> String {
    format!("{}-{} s", label(model.world.warmup_us as f64 / 1e6), label(model.world.duration_us as f64 / 1e6))
}

/// One line per drawn policy of a per-window value.
pub fn drawn_lines(model: &Model, drawn: &[Drawn], value: &dyn Fn(&Drawn, usize) -> f64) -> Vec<Line> {
    drawn.iter().map(|d| Line::plain(d.name.to_string(), window_points(model, d.runs, &|row| value(d, row)))).collect()
}
