//! The report's panels on the mechanisms the drawn policies have: circuit breakers (state per
//! window and transitions), refusals by reason, queues, and (from `levels`) bulkheads and retry
//! budgets. A panel is a chart with a note under it that says exactly what is drawn, from which
//! figures; a family's section appears only when a drawn policy has its mechanism (or, for
//! refusals, when something was refused).

use super::drawn::{
    Drawn, MAX_LINES, drawn_lines, measured, over, palette, panel, panel_with, policy_slots, section, shaded,
    values_table, without,
};
use super::levels::level_panels;
use super::svg::{Bars, Line, LineChart, Palette, bars, label, level_chart, line_chart};
use super::windows::{fault_spans, window_length, window_points};
use crate::engine::Model;
use crate::vocab::Refusal;
use std::fmt::Write;

/// Queue-depth charts drawn at most (the deepest dependencies).
const QUEUE_CHARTS: usize = 3;
/// The breaker states as the time series codes them (0, 1, 2).
const BREAKER_LEVELS: [&str; 3] = ["closed", "half-open", "open"];
/// The degradation modes by severity, as the time series codes them (0 to 5).
const MODE_LEVELS: [&str; 6] = ["normal", "recovery", "constrained", "degraded", "handoff", "paused"];

/// The sections of every mechanism family some drawn policy has, in a fixed order.
pub fn mechanism_sections(out: &mut String, model: &Model, drawn: &[Drawn]) {
    if let Some(panels) = breakers(model, drawn) {
        section(out, "Circuit breakers", &panels, "");
    }
    if let Some(panels) = refusals(model, drawn) {
        section(out, "Refusals", &panels, "");
    }
    let (mut panels, note) = queues(model, drawn);
    let bulkheads = level_panels(model, drawn, "bulkhead");
    let title = if bulkheads.is_empty() { "Queues" } else { "Queues and bulkheads" };
    panels.extend(bulkheads);
    section(out, title, &panels, &note);
    let budgets = level_panels(model, drawn, "retry_budget");
    if !budgets.is_empty() {
        section(out, "Retry budgets", &budgets, "");
    }
}

/// The degradation mode per window, under the goodput plot: per policy with modes (and per
/// workflow), the most severe mode each window held; None when no drawn policy has modes.
pub fn mode_panel(model: &Model, drawn: &[Drawn]) -> Option<String> {
    let several = model.workflows.len() > 1;
    let mut lines = Vec::new();
    let mut owners = Vec::new();
    for d in drawn.iter().filter(|d| d.policy.degradation.is_some()) {
        for (w, wf) in model.workflows.iter().enumerate() {
            let points = window_points(model, d.runs, &|row| d.cell(row, d.layout.mode(w)));
            let name = if several { format!("{} / {}", d.name, wf.name) } else { d.name.to_string() };
            lines.push(Line::plain(name, points));
            owners.push(d.name);
        }
    }
    if lines.is_empty() {
        return None;
    }
    let slots = policy_slots(drawn, &owners);
    let chart = level_chart(
        &LineChart {
            counts: false,
            ..LineChart::over_time("Degradation mode per window", "", lines, fault_spans(model))
        },
        &MODE_LEVELS,
        &palette(&slots),
    );
    let note = format!(
        "One line per policy with runtime_policy rules{}: the most severe mode it was in during each window, at the window's end, mean over {} (between two levels: the replications differed).{} {}",
        if several { " and workflow" } else { "" },
        over(drawn),
        without(drawn, |d| d.policy.degradation.is_some(), "rules"),
        shaded(model)
    );
    Some(panel(chart, &note))
}

/// One breaker of one drawn policy.
struct Breaker<'d, 'a> {
    policy: &'d Drawn<'a>,
    label: &'a str,
    column: usize,
}

impl Breaker<'_, '_> {
    fn name(&self) -> String {
        format!("{} / {}", self.policy.name, self.label)
    }

    fn metric(&self, what: &str) -> f64 {
        self.policy.mean(&format!("breaker.{}.{what}", self.label))
    }

    /// What its line shows, in words: "closed throughout" when no window ever left closed.
    fn summary(&self) -> String {
        if !self.policy.ever(self.column) {
            return format!("{}: closed throughout", self.name());
        }
        format!(
            "{}: opened {} time(s), open {} s, half-open {} s",
            self.name(),
            label(self.metric("transition_total.open")),
            label(self.metric("time_in_state_s.open")),
            label(self.metric("time_in_state_s.half_open"))
        )
    }
}

/// The breakers' state per window and their transitions; None when no drawn policy has one.
fn breakers(model: &Model, drawn: &[Drawn]) -> Option<Vec<String>> {
    let all: Vec<Breaker> = drawn
        .iter()
        .flat_map(|d| {
            d.policy.breaker_labels.iter().enumerate().map(move |(b, label)| Breaker {
                policy: d,
                label,
                column: d.layout.breaker(b),
            })
        })
        .collect();
    if all.is_empty() {
        return None;
    }
    let total = all.len();
    // The breakers that opened most, stably (policy order, then file order, among equals),
    // each count looked up once.
    let mut opened: Vec<(f64, Breaker)> = all.into_iter().map(|b| (b.metric("transition_total.open"), b)).collect();
    opened.sort_by(|a, b| b.0.total_cmp(&a.0));
    let all: Vec<Breaker> = opened.into_iter().take(MAX_LINES).map(|(_, b)| b).collect();
    let shown = if total > MAX_LINES {
        format!("The {MAX_LINES} of {total} breakers that opened most. ")
    } else {
        String::new()
    };
    Some(vec![breaker_states(model, drawn, &all, &shown), breaker_transitions(model, drawn, &all, &shown)])
}

/// A line per breaker at the level of the worst state each window held.
fn breaker_states(model: &Model, drawn: &[Drawn], breakers: &[Breaker], shown: &str) -> String {
    let lines: Vec<Line> = breakers
        .iter()
        .map(|b| Line::plain(b.name(), window_points(model, b.policy.runs, &|row| b.policy.cell(row, b.column))))
        .collect();
    let chart = LineChart {
        counts: false,
        ..LineChart::over_time("Circuit breaker state per window", "", lines, fault_spans(model))
    };
    let summaries: Vec<String> = breakers.iter().map(Breaker::summary).collect();
    let slots = policy_slots(drawn, &breakers.iter().map(|b| b.policy.name).collect::<Vec<_>>());
    let note = format!(
        "{shown}One line per breaker (policy / label): the worst state it was in during each window (open over half-open over closed), at the window's end, mean over {} (between two levels: the replications differed).{} {} In the measured window {}, means per replication: {}.",
        over(drawn),
        without(drawn, |d| !d.policy.breaker_labels.is_empty(), "breaker"),
        shaded(model),
        measured(model),
        summaries.join("; ")
    );
    panel(level_chart(&chart, &BREAKER_LEVELS, &palette(&slots)), &note)
}

/// Bars of each breaker's transitions into each state, from the summary metrics.
fn breaker_transitions(model: &Model, drawn: &[Drawn], breakers: &[Breaker], shown: &str) -> String {
    let categories: Vec<String> = ["opened", "half-opened", "closed"].iter().map(|c| c.to_string()).collect();
    let groups: Vec<(String, Vec<f64>)> = breakers
        .iter()
        .map(|b| {
            let counts = ["open", "half_open", "closed"].iter().map(|s| b.metric(&format!("transition_total.{s}")));
            (b.name(), counts.collect())
        })
        .collect();
    let slots = policy_slots(drawn, &breakers.iter().map(|b| b.policy.name).collect::<Vec<_>>());
    let intervals: Vec<Vec<(f64, f64)>> = breakers
        .iter()
        .map(|b| {
            ["open", "half_open", "closed"]
                .iter()
                .map(|s| b.policy.interval(&format!("breaker.{}.transition_total.{s}", b.label)))
                .collect()
        })
        .collect();
    let chart = bars(&Bars {
        title: "Circuit breaker transitions",
        y_label: "transitions",
        categories: &categories,
        groups: &groups,
        intervals: Some(&intervals),
        counts: true,
        palette: palette(&slots),
    });
    let note = format!(
        "{shown}Transitions into each state in the measured window {} (breaker.<label>.transition_total.<state>), mean over {}: opened counts trips (from closed, or from half-open back to open), half-opened the ends of an open wait, closed the recoveries.",
        measured(model),
        over(drawn)
    );
    panel(chart, &note)
}

/// A refusal category of the bar chart: a `refused_total` reason, or the queues' rejections.
#[derive(Clone, Copy, PartialEq)]
enum Category {
    Reason(Refusal),
    QueueFull,
}

impl Category {
    fn name(self) -> &'static str {
        match self {
            Category::Reason(r) => r.name(),
            Category::QueueFull => "queue_full",
        }
    }

    fn metric(self) -> String {
        match self {
            Category::Reason(r) => format!("refused_total.{}", r.name()),
            Category::QueueFull => "queue_rejected_total".into(),
        }
    }
}

/// The reasons a policy can refuse with, by its configuration alone.
fn configured(d: &Drawn, reason: Refusal) -> bool {
    let p = d.policy;
    match reason {
        Refusal::Admission => p.admission.is_some(),
        Refusal::Paused => p.modes.iter().any(|m| m.refuse_new_runs),
        Refusal::FanOut => p.modes.iter().any(|m| {
            let f = &m.fan_out;
            f.max_branches.is_some() || f.max_total_attempts.is_some() || f.max_parallel_cost_units.is_some()
        }),
        _ => p.pipeline.guards().iter().any(|g| g.refusal() == reason),
    }
}

/// Refusals by reason (summary metrics) and over time (the time series, every reason together);
/// None when no drawn policy can refuse and nothing was refused.
fn refusals(model: &Model, drawn: &[Drawn]) -> Option<Vec<String>> {
    let mut categories: Vec<Category> = Refusal::ALL.iter().map(|&r| Category::Reason(r)).collect();
    categories.push(Category::QueueFull);
    categories.retain(|&c| {
        drawn.iter().any(|d| {
            let configured = matches!(c, Category::Reason(r) if configured(d, r));
            configured || d.mean(&c.metric()) > 0.0
        })
    });
    if categories.is_empty() {
        return None;
    }
    Some(vec![refusals_by_reason(drawn, &categories), refusals_over_time(model, drawn)])
}

/// A bar per policy and reason, with the values as a table under the chart.
fn refusals_by_reason(drawn: &[Drawn], categories: &[Category]) -> String {
    let groups: Vec<(String, Vec<f64>)> =
        drawn.iter().map(|d| (d.name.to_string(), categories.iter().map(|c| d.mean(&c.metric())).collect())).collect();
    let names: Vec<String> = categories.iter().map(|c| c.name().to_string()).collect();
    let runs_too = categories.iter().any(|c| matches!(c, Category::Reason(Refusal::Admission | Refusal::Paused)));
    let y_label = if runs_too { "attempts (runs for admission, paused)" } else { "attempts" };
    let intervals: Vec<Vec<(f64, f64)>> =
        drawn.iter().map(|d| categories.iter().map(|c| d.interval(&c.metric())).collect()).collect();
    let chart = bars(&Bars {
        title: "Refusals by reason",
        y_label,
        categories: &names,
        groups: &groups,
        intervals: Some(&intervals),
        counts: true,
        palette: Palette::ByPosition,
    });
    let note = format!(
        "Attempts of measured runs refused before they were sent, by the reason the metrics record (refused_total.<reason>), mean over {}; queue_full is queue_rejected_total, attempts a dependency turned away because its servers and queue were full. A reason is shown when a drawn policy has the mechanism that gives it or when something was refused for it.{}",
        over(drawn),
        lumped_notes(drawn, categories)
    );
    panel_with(chart, &values_table(&names, &groups), &note)
}

/// Attempts refused per window by a guard or expired, every reason together (the time series
/// has no reasons, nor queue_full rejections).
fn refusals_over_time(model: &Model, drawn: &[Drawn]) -> String {
    let lines = drawn_lines(model, drawn, &|d, row| {
        (0..model.dependency_names.len()).map(|dep| d.cell(row, d.layout.refused(dep))).sum()
    });
    let title = format!("Refused by a guard or expired, per {} window", window_length(model));
    let chart = line_chart(&LineChart::over_time(&title, "attempts", lines, fault_spans(model)));
    let note = format!(
        "Attempts refused during each {} window at any dependency, drawn at the window's end, mean over {}, warm-up and drain included: refused by a guard or the fan-out limits, or dropped from a queue (expired). Not in it, though the bars beside count them: queue_full rejections (a full queue turning an attempt away), and runs refused at their start (admission, paused); the time series does not split refusals by reason. {}",
        window_length(model),
        over(drawn),
        shaded(model)
    );
    panel(chart, &note)
}

/// What a shown category holds besides its name says: the reasons the metrics lump together.
fn lumped_notes(drawn: &[Drawn], categories: &[Category]) -> String {
    let mut notes = String::new();
    if categories.contains(&Category::Reason(Refusal::Throttled)) {
        let mut kinds: Vec<&str> = drawn
            .iter()
            .flat_map(|d| d.policy.pipeline.guards().iter())
            .filter(|g| g.refusal() == Refusal::Throttled)
            .map(|g| g.kind_name())
            .collect();
        kinds.sort_unstable();
        kinds.dedup();
        let here = if kinds.is_empty() { String::new() } else { format!(" (here: {})", kinds.join(", ")) };
        let _ = write!(
            notes,
            " throttled is one reason for adaptive_throttling, admission_control and rate_limiter refusals together{here}: the metrics do not tell them apart."
        );
    }
    if categories.contains(&Category::Reason(Refusal::Expired)) {
        notes
            .push_str(" expired attempts did reach their dependency: its queue policy dropped them while they waited.");
    }
    notes
}

/// The deepest queues over time, and a note naming the others; always present (every
/// dependency has a queue).
fn queues(model: &Model, drawn: &[Drawn]) -> (Vec<String>, String) {
    let dependencies = model.dependency_names.len();
    let depth = |dep: usize| {
        drawn
            .iter()
            .flat_map(|d| (0..d.runs.series.rows()).map(move |row| d.runs.series.value(row, d.layout.queue(dep))))
            .max()
            .unwrap_or(0)
    };
    let mut deepest: Vec<usize> = (0..dependencies).filter(|&dep| depth(dep) > 0).collect();
    deepest.sort_by_key(|&dep| std::cmp::Reverse(depth(dep)));
    let mut panels = Vec::new();
    for &dep in deepest.iter().take(QUEUE_CHARTS) {
        let name = &model.dependency_names[dep];
        let title = format!("Queue depth at window end: {name}");
        let lines = drawn_lines(model, drawn, &|d, row| d.cell(row, d.layout.queue(dep)));
        let chart = line_chart(&LineChart::over_time(&title, "waiting attempts", lines, fault_spans(model)));
        let spec = &model.world.dependencies[dep];
        let note = format!(
            "Attempts waiting (not in service) at {name} at each window's end, mean over {}; {} servers, {} waiting places. {}",
            over(drawn),
            spec.servers,
            spec.queue_capacity,
            shaded(model)
        );
        panels.push(panel(chart, &note));
    }
    let beyond = deepest.len().saturating_sub(QUEUE_CHARTS);
    let never: Vec<&str> = (0..dependencies)
        .filter(|dep| !deepest.contains(dep))
        .map(|dep| model.dependency_names[dep].as_str())
        .collect();
    let mut note = String::new();
    if beyond > 0 {
        let _ = write!(
            note,
            "Not drawn: {beyond} more dependencies where attempts waited (the {QUEUE_CHARTS} deepest are). "
        );
    }
    if !never.is_empty() {
        let named = if never.len() <= MAX_LINES { format!(" ({})", never.join(", ")) } else { String::new() };
        let _ = write!(
            note,
            "No attempt was waiting at any window's end under any policy at {} of {dependencies} dependencies{named}.",
            never.len()
        );
    }
    (panels, note)
}
