//! report.html: one self-contained page per run or sweep (inline SVG and CSS, no scripts, no
//! URLs), so a result can be read in any browser, attached to a ticket or archived.
//! The page is well-formed XML as well as HTML, which the tests check with an XML parser.

use super::digest::{Shown, SweepPoint};
use super::drawn::{Drawn, drawn};
use super::panels::{mechanism_sections, mode_panel};
use super::parallel::{ParallelAxis, parallel_chart};
use super::svg::{
    Bars, HeatCell, HeatMap, Line, LineChart, Palette, ScatterPoint, bars, geometric, heat_map, label, line_chart,
    line_chart_in, scatter_chart, scatter_chart_as, shared_scale,
};
use super::windows::{fault_spans, has_population, replications, window_length, window_lines, window_points};
use super::xml::escape;
use crate::engine::Model;
use crate::experiment::batch::grid::{Param, SweepLayout};
use crate::experiment::batch::replications::PolicyRuns;
use crate::experiment::output::formats::VERSION;
use crate::metrics::range::Range;
use crate::metrics::stats::Aggregate;
use crate::metrics::timeseries::{DEADLINE_MISSES, FIXED_COLUMNS, ON_TIME_GOODPUT, USERS_ACTIVE, USERS_THINKING};
use std::fmt::Write;

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1500px}\
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ccc}\
.charts{display:flex;flex-wrap:wrap;gap:12px}\
svg.chart{background:#fff;border:1px solid #e4e4e4}\
.title{font-size:13px;font-weight:600}.tick{font-size:10px;fill:#444}.legend{font-size:11px}\
.axis-label{font-size:11px;fill:#444}.cell{font-size:10px}\
.panel{width:680px}.panel .note{margin:4px 2px 8px}table.values{margin-top:6px}\
.grid{stroke:#eee}.axis{stroke:#888}.line{fill:none;stroke-width:1.6}.band{opacity:0.18}\
.span{fill:#d62728;fill-opacity:0.08;stroke:#d62728;stroke-opacity:0.4}.whisker{stroke-width:1.2}\
table{border-collapse:collapse;font-size:12px;display:block;max-width:100%;overflow-x:auto}td,th{padding:2px 10px;text-align:right;border-bottom:1px solid #eee}\
td:first-child,th:first-child{text-align:left}.note{color:#555;font-size:12px}\
.legend-note{font-size:10px}.cell-ci{font-size:9px}";

/// Metrics in the report's summary table, in this order.
const SUMMARY: [&str; 12] = [
    "logical_run_total",
    "auto_completion_ratio",
    "safe_outcome_ratio",
    "deadline_exceeded_ratio",
    "run_latency_ms.p95",
    "retry_amplification_ratio",
    "dependency_attempt_total",
    "cost_per_success",
    "duplicate_effect_total",
    "queue_rejected_total",
    "recovery_time_s",
    "recovery_storm_ratio",
];

/// Dependencies in the per-dependency bar charts at most (the busiest).
const DEPENDENCY_BARS: usize = 16;

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>{}</title><style>{STYLE}</style></head><body>\n{body}</body></html>\n",
        escape(title)
    )
}

fn charts(out: &mut String, svgs: &[String]) {
    out.push_str("<div class=\"charts\">");
    for svg in svgs {
        out.push_str(svg);
    }
    out.push_str("</div>\n");
}

fn cell(aggregate: &Aggregate, metric: &str) -> String {
    match aggregate.estimates.get(metric) {
        // As the terminal's headline says it: the interval clipped to the figure's range (a
        // recovery time of 30 s ± 71 s would read as -41 s to 101 s).
        Some(e) if e.high > e.low => super::table::with_interval(e.mean, e.low, e.high, Range::of_metric(metric)),
        Some(e) => label(e.mean),
        None => "n/a".into(),
    }
}

fn mean(aggregate: &Aggregate, metric: &str) -> f64 {
    aggregate.mean(metric).unwrap_or(f64::NAN)
}

/// The report of `faultline run`: a summary table, then charts over time, of latency and
/// outcomes, and of the busiest dependencies, policies side by side.
pub fn run_report(model: &Model, names: &[&str], aggregates: &[Aggregate], runs: &[PolicyRuns]) -> String {
    let mut body = String::new();
    let _ = write!(
        body,
        "<h1>{}</h1><p class=\"note\">{} replication(s) per policy of {} s simulated (warm-up {} s), seed {}; faultline {}. Charts over time have one point per {} window, at its end. Shaded: fault windows. Figures are means over replications; [low, high] is the 95 % interval, clipped to the values the figure can take, drawn as a band or whisker where a chart compares policies. Hover a point for its value.</p>",
        escape(&model.name),
        model.world.replications,
        label(model.world.duration_us as f64 / 1e6),
        label(model.world.warmup_us as f64 / 1e6),
        model.world.seed,
        VERSION,
        window_length(model)
    );
    body.push('\n');
    summary_table(&mut body, names, aggregates);
    let drawn = drawn(model, names, aggregates, runs);
    over_time(&mut body, model, names, runs, &drawn);
    mechanism_sections(&mut body, model, &drawn);
    latency_and_outcomes(&mut body, names, aggregates);
    dependencies(&mut body, model, names, aggregates);
    page(&format!("faultline: {}", model.name), &body)
}

/// The key figures of every policy, with their 95 % half-widths.
fn summary_table(body: &mut String, names: &[&str], aggregates: &[Aggregate]) {
    body.push_str("<h2>Summary</h2><table><tr><th>metric</th>");
    for name in names {
        let _ = write!(body, "<th>{}</th>", escape(name));
    }
    body.push_str("</tr>");
    // A quorum's verdicts where the model has one, as the terminal's headline shows them
    // (metrics.md 6.5); a report without a quorum step is as it was.
    let quorum = ["quorum_ratio.not_met", "quorum_ratio.wrong_agreement"];
    let has_quorum = aggregates.iter().any(|a| a.estimates.contains_key(quorum[0]));
    let extra: &[&str] = if has_quorum { &quorum } else { &[] };
    for &metric in SUMMARY.iter().chain(extra) {
        let _ = write!(body, "<tr><td>{metric}</td>");
        for a in aggregates {
            let _ = write!(body, "<td>{}</td>", escape(&cell(a, metric)));
        }
        body.push_str("</tr>");
    }
    body.push_str("</table>\n");
}

/// One line per policy of a fixed column of the time series (mean per window) with its 95 %
/// band over the replications.
fn fixed_lines(model: &Model, names: &[&str], runs: &[PolicyRuns], column: usize) -> Vec<Line> {
    names
        .iter()
        .zip(runs)
        .map(|(name, r)| {
            let points = window_points(model, r, &|row| r.series.value(row, column) as f64 / replications(r));
            let band = (0..points.len()).map(|row| r.series.interval(row, column, r.metrics.len())).collect();
            Line { name: name.to_string(), points, band: Some(band), never: Vec::new() }
        })
        .collect()
}

/// On-time goodput and deadline misses (the first two charts: what a user got), the
/// degradation modes and attempts per window, the faults shaded.
fn over_time(body: &mut String, model: &Model, names: &[&str], runs: &[PolicyRuns], drawn: &[Drawn]) {
    let dependencies = model.dependency_names.len();
    let n = replications;
    let spans = || fault_spans(model);
    let window = window_length(model);
    let on_time_title = format!("On-time goodput per {window} window");
    let misses_title = format!("Deadline misses per {window} window");
    let attempts_title = format!("Attempts per {window} window, all dependencies");
    let mut over_time = vec![
        line_chart(&LineChart::over_time(
            &on_time_title,
            "answers by their deadline",
            fixed_lines(model, names, runs, ON_TIME_GOODPUT),
            spans(),
        )),
        line_chart(&LineChart::over_time(
            &misses_title,
            "runs with no result in time",
            fixed_lines(model, names, runs, DEADLINE_MISSES),
            spans(),
        )),
        line_chart(&LineChart::over_time(
            &attempts_title,
            "attempts",
            window_lines(model, names, runs, &|r, row| {
                (0..dependencies).map(|d| r.series.value(row, FIXED_COLUMNS.len() + d) as f64).sum::<f64>() / n(r)
            }),
            spans(),
        )),
    ];
    if let Some(modes) = mode_panel(model, drawn) {
        over_time.insert(2, modes);
    }
    let users = has_population(model);
    if users {
        over_time.push(users_chart(model, drawn));
    }
    body.push_str("<h2>Over time</h2>");
    let _ = write!(
        body,
        "<p class=\"note\">On-time goodput counts the root runs that ended succeeded or degraded with a result by their deadline, in each {window} window (timeseries.csv's on_time_goodput); a late answer is goodput but not on time, so it is left out here and counted beside it among the deadline misses (runs with no result by their deadline, whatever their outcome). Bands: 95 % intervals over the replications.{}</p>",
        if users {
            " Users: the closed population's users present (waiting for an answer or thinking) and thinking at each window's end (timeseries.csv's users.active and users.thinking), mean over the replications; when the system slows, fewer think and fewer runs start."
        } else {
            ""
        }
    );
    charts(body, &over_time);
}

/// A closed population's users at each window's end, per policy: present, and thinking (the
/// rest wait for an answer). Open load has no users to draw. Each policy's present line has the
/// policy's colour (as in every chart of the page), its thinking line a colour of its own.
fn users_chart(model: &Model, drawn: &[Drawn]) -> String {
    let mut lines = Vec::new();
    let mut slots = Vec::new();
    for (offset, what, first_slot) in [(USERS_ACTIVE, "present", 0), (USERS_THINKING, "thinking", drawn.len())] {
        for (i, d) in drawn.iter().enumerate() {
            let column = d.layout.user(offset);
            lines.push(Line::plain(
                format!("{} {what}", d.name),
                window_points(model, d.runs, &|row| d.cell(row, column)),
            ));
            slots.push(first_slot + i);
        }
    }
    line_chart_in(
        &LineChart::over_time(
            &format!("Users at each {} window's end", window_length(model)),
            "users",
            lines,
            fault_spans(model),
        ),
        &Palette::Slots(&slots),
    )
}

/// One bar group per policy: its mean of each metric.
fn policy_groups(names: &[&str], aggregates: &[Aggregate], metrics: &[String]) -> Vec<(String, Vec<f64>)> {
    names.iter().zip(aggregates).map(|(p, a)| (p.to_string(), metrics.iter().map(|m| mean(a, m)).collect())).collect()
}

/// Per policy, per metric: the 95 % interval, within the values the metric can take.
fn policy_intervals(aggregates: &[Aggregate], metrics: &[String]) -> Vec<Vec<(f64, f64)>> {
    aggregates
        .iter()
        .map(|a| {
            metrics
                .iter()
                .map(|m| {
                    a.estimates.get(m).map_or((f64::NAN, f64::NAN), |e| {
                        let e = e.within(Range::of_metric(m));
                        (e.low, e.high)
                    })
                })
                .collect()
        })
        .collect()
}

/// Root-run latency percentiles and outcomes.
fn latency_and_outcomes(body: &mut String, names: &[&str], aggregates: &[Aggregate]) {
    let groups = |metrics: &[String]| policy_groups(names, aggregates, metrics);
    let latency: Vec<String> = ["p50", "p95", "p99"].iter().map(|p| format!("run_latency_ms.{p}")).collect();
    let outcomes: Vec<String> = ["succeeded", "degraded", "handoff", "failed", "rejected"]
        .iter()
        .map(|o| format!("outcome_total.{o}"))
        .collect();
    let short = |metrics: &[String]| -> Vec<String> {
        metrics.iter().map(|m| m.rsplit('.').next().unwrap_or(m).to_string()).collect()
    };
    let (latency_groups, outcome_groups) = (groups(&latency), groups(&outcomes));
    let (latency_ci, outcome_ci) = (policy_intervals(aggregates, &latency), policy_intervals(aggregates, &outcomes));
    body.push_str("<h2>Latency and outcomes</h2>");
    charts(
        body,
        &[
            bars(&Bars {
                title: "Root-run latency percentiles",
                y_label: "ms",
                categories: &short(&latency),
                groups: &latency_groups,
                intervals: Some(&latency_ci),
                counts: false,
                palette: Palette::ByPosition,
            }),
            bars(&Bars {
                title: "Outcomes of root runs",
                y_label: "runs",
                categories: &short(&outcomes),
                groups: &outcome_groups,
                intervals: Some(&outcome_ci),
                counts: true,
                palette: Palette::ByPosition,
            }),
        ],
    );
}

/// Utilization and refusals of the busiest dependencies.
fn dependencies(body: &mut String, model: &Model, names: &[&str], aggregates: &[Aggregate]) {
    let dependencies = model.dependency_names.len();
    let groups = |metrics: &[String]| policy_groups(names, aggregates, metrics);
    let busiest = {
        let mut all: Vec<usize> = (0..dependencies).collect();
        let load = |d: usize| {
            aggregates
                .iter()
                .map(|a| mean(a, &format!("dependency.{}.attempt_total", model.dependency_names[d])))
                .fold(0.0, f64::max)
        };
        all.sort_by(|&a, &b| load(b).total_cmp(&load(a)).then(a.cmp(&b)));
        all.truncate(DEPENDENCY_BARS);
        all
    };
    let dependency_names: Vec<String> = busiest.iter().map(|&d| model.dependency_names[d].clone()).collect();
    let utilization: Vec<String> = dependency_names.iter().map(|d| format!("dependency.{d}.utilization")).collect();
    let refused = |a: &Aggregate, d: &str| -> f64 {
        let prefix = format!("dependency.{d}.refused_total.");
        let guards: f64 = a
            .estimates
            .iter()
            .filter(|(k, _)| k.starts_with(&prefix))
            .map(|(_, e)| e.mean)
            .filter(|v| v.is_finite())
            .sum();
        guards + mean(a, &format!("dependency.{d}.rejected_total")).max(0.0)
    };
    let refusals: Vec<(String, Vec<f64>)> = names
        .iter()
        .zip(aggregates)
        .map(|(p, a)| (p.to_string(), dependency_names.iter().map(|d| refused(a, d)).collect()))
        .collect();
    body.push_str("<h2>Dependencies</h2>");
    if dependencies > DEPENDENCY_BARS {
        let _ = write!(body, "<p class=\"note\">The {DEPENDENCY_BARS} busiest of {dependencies} dependencies.</p>");
    }
    let utilization_groups = groups(&utilization);
    let utilization_ci = policy_intervals(aggregates, &utilization);
    charts(
        body,
        &[
            bars(&Bars {
                title: "Utilization per dependency",
                y_label: "busy share",
                categories: &dependency_names,
                groups: &utilization_groups,
                intervals: Some(&utilization_ci),
                counts: false,
                palette: Palette::ByPosition,
            }),
            bars(&Bars {
                title: "Refused and rejected attempts per dependency",
                y_label: "attempts",
                categories: &dependency_names,
                groups: &refusals,
                intervals: None,
                counts: true,
                palette: Palette::ByPosition,
            }),
        ],
    );
}

/// A parameter value as a number for an axis; None when a value is not a number.
fn numeric(values: &[String]) -> Option<Vec<f64>> {
    values.iter().map(|v| v.replace('_', "").parse::<f64>().ok()).collect()
}

/// One objective's axis of a tune's report.
pub struct TuneAxis {
    pub label: String,
    pub larger_is_better: bool,
    /// Per point, in the order of `TuneReport::labels`: (mean, low, high).
    pub values: Vec<(f64, f64, f64)>,
}

/// The report of `faultline tune`: the first objective against each other one, every
/// candidate drawn, the front with its intervals, the scenario's own values ringed; the front
/// as a table.
pub struct TuneReport<'a> {
    pub scenario: &'a str,
    pub note: &'a str,
    pub labels: Vec<String>,
    pub kinds: Vec<super::svg::PointKind>,
    pub axes: Vec<TuneAxis>,
    pub table_header: Vec<String>,
    pub table_rows: Vec<Vec<String>>,
}

pub fn tune_report(r: &TuneReport) -> String {
    let mut body = String::new();
    let _ = write!(
        body,
        "<h1>{} tune</h1><p class=\"note\">{} faultline {}. Hover a point or a line for its candidate and values.</p>",
        escape(r.scenario),
        escape(r.note),
        VERSION
    );
    body.push_str("<h2>The front</h2>");
    // An objective 0 for every candidate (a cost in a scenario that prices nothing) has no
    // axis worth drawing: it is named instead.
    let flat: Vec<&TuneAxis> = r.axes.iter().filter(|a| a.values.iter().all(|v| v.0 == 0.0)).collect();
    let axes: Vec<&TuneAxis> = r.axes.iter().filter(|a| !a.values.iter().all(|v| v.0 == 0.0)).collect();
    if !flat.is_empty() {
        let names: Vec<&str> = flat.iter().map(|a| a.label.as_str()).collect();
        let _ = write!(body, "<p class=\"note\">Not drawn, 0 for every candidate: {}.</p>", escape(&names.join(", ")));
    }
    let mut svgs: Vec<String> = match axes.as_slice() {
        [only] => vec![scatter_chart(&only.label, "candidate", &only.label, &points(r, None, only))],
        [first, rest @ ..] => rest
            .iter()
            .enumerate()
            .map(|(k, other)| {
                scatter_chart_as(
                    &format!("{} against {}", other.label, first.label),
                    &format!("Objective {} (vertical) against objective 1 (horizontal)", k + 2),
                    &first.label,
                    &other.label,
                    &points(r, Some(first), other),
                )
            })
            .collect(),
        [] => Vec::new(),
    };
    // Three objectives or more: every objective at once, before the pairs.
    if axes.len() >= 3 {
        let parallel: Vec<ParallelAxis> = axes
            .iter()
            .map(|a| ParallelAxis {
                label: &a.label,
                larger_is_better: a.larger_is_better,
                means: a.values.iter().map(|v| v.0).collect(),
            })
            .collect();
        svgs.insert(0, parallel_chart("Every objective at once (means)", &parallel, &r.labels, &r.kinds));
    }
    charts(&mut body, &svgs);
    body.push_str("<table><tr>");
    for h in &r.table_header {
        let _ = write!(body, "<th>{}</th>", breakable(h));
    }
    body.push_str("</tr>");
    for row in &r.table_rows {
        body.push_str("<tr>");
        for c in row {
            let _ = write!(body, "<td>{}</td>", escape(c));
        }
        body.push_str("</tr>");
    }
    body.push_str("</table>");
    page(&format!("faultline: {} tune", r.scenario), &body)
}

/// A header as HTML that may wrap after each `.` and `_`: the front's columns are parameter
/// paths and metric names (`policy.resilient.retry.max_attempts`), which as single words made
/// the table wider than the window.
pub(super) fn breakable(header: &str) -> String {
    let mut out = String::new();
    for c in header.chars() {
        out.push_str(&escape(&c.to_string()));
        if c == '.' || c == '_' {
            out.push_str("<wbr/>");
        }
    }
    out
}

/// The points of one chart: x from `x_axis` (or the candidate's position), y from `y_axis`.
fn points(r: &TuneReport, x_axis: Option<&TuneAxis>, y_axis: &TuneAxis) -> Vec<ScatterPoint> {
    (0..r.labels.len())
        .map(|i| ScatterPoint {
            label: r.labels[i].clone(),
            x: x_axis.map_or((i as f64, i as f64, i as f64), |a| a.values[i]),
            y: y_axis.values[i],
            kind: r.kinds[i],
        })
        .collect()
}

/// The report of `faultline sweep` (and of `merge`): the shown figures against one parameter,
/// or per figure a heat map per policy on one shared scale for two.
pub fn sweep_report(layout: &SweepLayout, shown: &Shown) -> String {
    let mut body = String::new();
    let params: Vec<&str> = layout.params.iter().map(|p| p.path.as_str()).collect();
    let drawn = match layout.params.len() {
        1 => {
            "Lines are means over replications, bands their 95 % intervals (within the values a figure can take); a triangle at the top marks a point that never recovered. Hover a point for its value."
        }
        2 => {
            "Each cell is the mean over replications with its 95 % interval under it (within the values the figure can take). One colour scale per figure, shared by the policies (legend on the right of each map); dark red cells never recovered (the worst case), white struck-through cells are not applicable (undefined). Hover a cell for its interval."
        }
        _ => "",
    };
    let _ = write!(
        body,
        "<h1>{} sweep</h1><p class=\"note\">{} grid point(s) over {}; faultline {}. {drawn}</p>",
        escape(&layout.scenario),
        layout.points,
        escape(&params.join(" x ")),
        VERSION
    );
    if !shown.left_out.is_empty() {
        let _ = write!(
            body,
            "<p class=\"note\">Not drawn, zero at every point or undefined at every point: {} (sweep.csv holds them; --metrics picks the figures).</p>",
            escape(&shown.left_out.join(", "))
        );
    }
    let policies = shown.policies();
    match layout.params.as_slice() {
        [param] => sweep_lines(&mut body, param, shown, &policies),
        [rows, columns] => sweep_heat_maps(&mut body, rows, columns, shown, &policies),
        _ => body.push_str(
            "<p class=\"note\">Charts are drawn for sweeps of one parameter (lines) or two (heat maps); sweep.csv holds every point.</p>",
        ),
    }
    page(&format!("faultline: {} sweep", layout.scenario), &body)
}

/// Whether an undefined value of `metric` at a point means "never": the recovery time of a
/// point where every replication that could recover never did (the worst case, not a gap).
fn is_never(metric: &str, p: &SweepPoint, value: f64) -> bool {
    value.is_nan() && metric.rsplit('.').next() == Some("recovery_time_s") && p.never >= 1.0
}

/// The figures every point gives 0 (a cost in a scenario that prices nothing): not drawn.
fn zero_everywhere(shown: &Shown, m: usize) -> bool {
    shown.points.iter().all(|p| p.figures[m].0 == 0.0)
}

/// The note naming the figures not drawn for being 0 at every point.
fn zero_note(body: &mut String, shown: &Shown) {
    let zero: Vec<&str> =
        (0..shown.metrics.len()).filter(|&m| zero_everywhere(shown, m)).map(|m| shown.metrics[m].1).collect();
    if !zero.is_empty() {
        let _ =
            write!(body, "<p class=\"note\">Not drawn, 0 at every point and policy: {}.</p>", escape(&zero.join(", ")));
    }
}

/// Each shown figure against the parameter, a line per policy with its 95 % band (clipped to
/// the figure's range), "never" marked at the top; a geometric grid on a log axis.
fn sweep_lines(body: &mut String, param: &Param, shown: &Shown, policies: &[&str]) {
    let xs = numeric(&param.values);
    let log_x = xs.as_ref().is_some_and(|xs| geometric(xs));
    let mut svgs = Vec::new();
    let x_tip = format!("{} = {{}}", param.path);
    for (m, (metric, title)) in shown.metrics.iter().enumerate() {
        if zero_everywhere(shown, m) {
            continue;
        }
        let lines = policies
            .iter()
            .map(|policy| {
                let rows: Vec<&SweepPoint> = shown.points.iter().filter(|p| p.policy == *policy).collect();
                let x = |p: &SweepPoint| xs.as_ref().map_or(p.point as f64, |xs| xs[p.point]);
                Line {
                    name: policy.to_string(),
                    points: rows.iter().map(|p| (x(p), p.figures[m].0)).collect(),
                    band: Some(rows.iter().map(|p| (p.figures[m].1, p.figures[m].2)).collect()),
                    never: rows.iter().filter(|p| is_never(metric, p, p.figures[m].0)).map(|p| x(p)).collect(),
                }
            })
            .collect();
        let x_label = if xs.is_some() { param.path.clone() } else { format!("{} (value number)", param.path) };
        // The heading names the figure as the table does; the axis by its metric (or "mean"
        // when the two are one name).
        let y_label = if metric == title { "mean" } else { metric };
        svgs.push(line_chart(&LineChart {
            title,
            x_label: &x_label,
            y_label,
            lines,
            spans: vec![],
            counts: false,
            range: Range::of_metric(metric),
            log_x,
            x_tip: &x_tip,
        }));
    }
    body.push_str("<h2>Key figures against the parameter</h2>");
    zero_note(body, shown);
    charts(body, &svgs);
}

/// Per shown figure, one heat map per policy side by side, on the figure's shared scale; the
/// heading names the figure once, each map its policy.
fn sweep_heat_maps(body: &mut String, rows: &Param, columns: &Param, shown: &Shown, policies: &[&str]) {
    zero_note(body, shown);
    for (m, (metric, title)) in shown.metrics.iter().enumerate() {
        if zero_everywhere(shown, m) {
            continue;
        }
        let range = Range::of_metric(metric);
        let grids: Vec<Vec<Vec<HeatCell>>> = policies
            .iter()
            .map(|policy| {
                let mut grid = vec![vec![HeatCell::Undefined; columns.values.len()]; rows.values.len()];
                for p in shown.points.iter().filter(|p| p.policy == *policy) {
                    let (mean, low, high) = p.figures[m];
                    grid[p.point / columns.values.len()][p.point % columns.values.len()] = if is_never(metric, p, mean)
                    {
                        HeatCell::Never
                    } else if mean.is_nan() {
                        HeatCell::Undefined
                    } else {
                        let never = if metric.rsplit('.').next() == Some("recovery_time_s") && p.never > 0.0 {
                            p.never
                        } else {
                            0.0
                        };
                        HeatCell::Value { mean, low: range.clip(low), high: range.clip(high), never }
                    };
                }
                grid
            })
            .collect();
        let scale = shared_scale(grids.iter().map(|g| g.as_slice())).unwrap_or((f64::NAN, f64::NAN));
        let svgs: Vec<String> = policies
            .iter()
            .zip(&grids)
            .map(|(policy, grid)| {
                heat_map(&HeatMap {
                    title: &format!("{title}: {policy}"),
                    shown: policy,
                    row_label: &rows.path,
                    rows: &rows.values,
                    column_label: &columns.path,
                    columns: &columns.values,
                    cells: grid,
                    scale,
                })
            })
            .collect();
        if title == metric {
            let _ = write!(body, "<h2>{}</h2>", escape(title));
        } else {
            let _ = write!(body, "<h2>{} ({})</h2>", escape(title), escape(metric));
        }
        charts(body, &svgs);
    }
}
