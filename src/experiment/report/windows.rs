//! What every chart over time shares: the faults as shaded spans, and one point per window at
//! the window's end, per policy, from the time series' sums.

use super::svg::{Line, Span};
use crate::engine::Model;
use crate::experiment::batch::replications::PolicyRuns;
use crate::metrics::timeseries::{Layout, USER_COLUMNS};
use crate::sim::us_to_s;

/// The windows' length, for titles and notes: "60 s".
pub fn window_length(model: &Model) -> String {
    format!("{} s", super::svg::label(model.world.window_us as f64 / 1e6))
}

/// The faults as shaded spans, in seconds: faults that overlap share one span (its tooltip names
/// each), because translucent shading stacked once per fault turns a window of four faults a
/// strong pink that hides the 95 % bands drawn over it.
pub fn fault_spans(model: &Model) -> Vec<Span> {
    let mut faults: Vec<(u64, u64, String)> = model
        .world
        .faults
        .iter()
        .map(|f| (f.start_us, f.end_us, format!("fault: {} on {}", f.kind.name(), model.dependency_names[f.target])))
        .collect();
    faults.sort_by_key(|f| (f.0, f.1));
    let mut merged: Vec<(u64, u64, Vec<String>)> = Vec::new();
    for (start, end, name) in faults {
        match merged.last_mut() {
            Some(last) if start <= last.1 => {
                last.1 = last.1.max(end);
                last.2.push(name);
            }
            _ => merged.push((start, end, vec![name])),
        }
    }
    merged
        .into_iter()
        .map(|(start, end, names)| Span { from: start as f64 / 1e6, to: end as f64 / 1e6, name: names.join("; ") })
        .collect()
}

/// Replications a policy's sums add up (at least 1, so a mean never divides by zero).
pub fn replications(r: &PolicyRuns) -> f64 {
    r.metrics.len().max(1) as f64
}

/// One line per policy of a per-window value.
pub fn window_lines(
    model: &Model,
    names: &[&str],
    runs: &[PolicyRuns],
    value: &dyn Fn(&PolicyRuns, usize) -> f64,
) -> Vec<Line> {
    names
        .iter()
        .zip(runs)
        .map(|(name, r)| Line::plain(name.to_string(), window_points(model, r, &|row| value(r, row))))
        .collect()
}

/// One point per window at the window's end (the value measures the window just closed), for
/// the windows that start before the simulated duration: the drain after it has no arrivals and
/// would draw a collapse that never happened.
pub fn window_points(model: &Model, r: &PolicyRuns, value: &dyn Fn(usize) -> f64) -> Vec<(f64, f64)> {
    let window_us = model.world.window_us;
    let rows = (model.world.duration_us.div_ceil(window_us) as usize).min(r.series.rows());
    (0..rows).map(|row| (us_to_s((row as u64 + 1).saturating_mul(window_us)), value(row))).collect()
}

/// Where a policy's columns lie in its time series (breakers, modes and levels are per policy).
pub fn layout(model: &Model, policy: usize) -> Layout {
    let p = &model.policies[policy];
    Layout {
        dependencies: model.dependency_names.len(),
        breakers: p.breaker_labels.len(),
        modes: if p.degradation.is_some() { model.workflows.len() } else { 0 },
        levels: p.level_labels.len(),
        budgets: p.degradation.as_ref().map_or(0, |d| model.workflows.len() * d.budget_groups_per_workflow()),
        budget_width: p.degradation.as_ref().map_or(0, |d| d.budget_width()),
        users: if has_population(model) { USER_COLUMNS.len() } else { 0 },
    }
}

/// Some workflow's load is a closed population of users (the time series has user columns).
pub fn has_population(model: &Model) -> bool {
    model.world.workloads.iter().any(|w| w.population.is_some())
}
