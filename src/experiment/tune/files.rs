//! What a tune writes: every candidate with its replications and why it left the race
//! (candidates.csv), the front with each objective's 95 % interval (front.csv, front.json), one
//! runnable scenario per front point (front-<candidate>.toml), and the printed summary.

use super::outcome::{Outcome, point_text};
use super::race::Status;
use crate::experiment::command::CommandError;
use crate::experiment::output::folder::OutputFolder;
use crate::experiment::output::formats::{VERSION, estimate_cells, estimate_columns};
use crate::experiment::report::html::{TuneAxis, TuneReport, tune_report};
use crate::experiment::report::svg::PointKind;
use crate::experiment::report::table::{half_width, human, render};
use crate::metrics::stats::{Estimate, estimate};
use crate::scenario::{Source, apply_overrides};
use serde_json::{Value, json};

/// A candidate's status as one word and its reason.
fn status_words(outcome: &Outcome, i: usize) -> (&'static str, String) {
    match &outcome.status[i] {
        Status::Racing => ("front", String::new()),
        Status::Dominated { by, replications } => {
            ("beaten", format!("candidate {by} was better on every objective after {replications} paired replications"))
        }
        Status::Infeasible { check, replications } => {
            ("infeasible", format!("[slo] {check} failed after {replications} replications"))
        }
        Status::Twin { of, replications } => (
            "front",
            format!(
                "the same values as candidate {of} in all {replications} replications it ran: it stopped racing and shares that candidate's place and figures"
            ),
        ),
    }
}

fn objective_estimates(outcome: &Outcome, i: usize) -> Vec<Estimate> {
    outcome.candidates[i].samples.objectives.iter().map(|v| estimate(v.iter().copied())).collect()
}

fn csv_rows(outcome: &Outcome, rows: &[usize]) -> Result<Vec<u8>, CommandError> {
    let io = |e: csv::Error| CommandError::Io(format!("cannot write a tune table: {e}"));
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = vec!["candidate".into(), "current".into(), "generation".into()];
    header.extend(outcome.dimensions.iter().map(|d| d.path.clone()));
    header.extend(["replications".into(), "status".into(), "reason".into()]);
    for o in &outcome.objectives {
        header.extend(estimate_columns(&o.metric));
    }
    w.write_record(&header).map_err(io)?;
    for &i in rows {
        let (word, reason) = status_words(outcome, i);
        let mut record: Vec<String> =
            vec![i.to_string(), (i == outcome.current).to_string(), outcome.candidates[i].generation.to_string()];
        record.extend(outcome.candidates[i].values.iter().cloned());
        record.extend([outcome.candidates[i].samples.replications().to_string(), word.to_string(), reason]);
        for e in objective_estimates(outcome, i) {
            record.extend(estimate_cells(Some(&e)));
        }
        w.write_record(&record).map_err(io)?;
    }
    w.into_inner().map_err(|e| CommandError::Io(format!("cannot write a tune table: {e}")))
}

fn scenario_file_name(i: usize) -> String {
    format!("front-{i}.toml")
}

fn front_json(outcome: &Outcome) -> Vec<u8> {
    let front: Vec<Value> = outcome
        .front()
        .into_iter()
        .map(|i| {
            let params: serde_json::Map<String, Value> = outcome
                .dimensions
                .iter()
                .zip(&outcome.candidates[i].values)
                .map(|(d, v)| (d.path.clone(), crate::experiment::batch::grid::json_value(v)))
                .collect();
            let objectives: serde_json::Map<String, Value> = outcome
                .objectives
                .iter()
                .zip(objective_estimates(outcome, i))
                .map(|(o, e)| {
                    (o.metric.clone(), json!({ "mean": finite(e.mean), "ci95": [finite(e.low), finite(e.high)] }))
                })
                .collect();
            json!({
                "candidate": i,
                "generation": outcome.candidates[i].generation,
                "params": params,
                "replications": outcome.candidates[i].samples.replications(),
                "objectives": objectives,
                "scenario": scenario_file_name(i),
            })
        })
        .collect();
    let doc = json!({
        "scenario": outcome.scenario,
        "policy": outcome.policy,
        "version": VERSION,
        "seed": outcome.seed,
        "objectives": outcome.objectives.iter().map(|o| o.label()).collect::<Vec<_>>(),
        "constraints": outcome.checks.iter().map(|c| format!("{} {}", c.metric, c.expression)).collect::<Vec<_>>(),
        "candidates": outcome.candidates.len(),
        "max_replications": outcome.max_replications,
        "simulations": outcome.simulations,
        "budget_stopped": outcome.budget_stopped,
        "current": {
            "candidate": outcome.current,
            "status": status_words(outcome, outcome.current).0,
            "reason": status_words(outcome, outcome.current).1,
        },
        "front": front,
    });
    let mut text = serde_json::to_string_pretty(&doc).expect("a front always serializes");
    text.push('\n');
    text.into_bytes()
}

/// JSON has no NaN: an undefined figure is null.
fn finite(x: f64) -> Value {
    if x.is_finite() { json!(x) } else { Value::Null }
}

pub fn write_tune_files(folder: &mut OutputFolder, outcome: &Outcome, source: &Source) -> Result<(), CommandError> {
    let all: Vec<usize> = (0..outcome.candidates.len()).collect();
    folder.write("candidates.csv", &csv_rows(outcome, &all)?)?;
    folder.write("front.csv", &csv_rows(outcome, &outcome.front())?)?;
    folder.write("front.json", &front_json(outcome))?;
    folder.write("report.html", report(outcome).as_bytes())?;
    for i in outcome.front() {
        let scenario = apply_overrides(source, &outcome.candidates[i].overrides)?;
        let body = toml::to_string(&scenario)
            .map_err(|e| CommandError::Io(format!("cannot write the scenario as TOML: {e}")))?;
        let header = format!(
            "# faultline tune: candidate {i} of the front of policy `{}` in {} ({}), {} replications.\n# Paths to samples files are as in the original scenario: keep this file beside it.\n",
            outcome.policy,
            outcome.scenario,
            point_text(&outcome.dimensions, &outcome.candidates[i].values),
            outcome.candidates[i].samples.replications()
        );
        folder.write(&scenario_file_name(i), format!("{header}{body}").as_bytes())?;
    }
    Ok(())
}

/// report.html: every candidate plotted, the front with its intervals, the current values
/// ringed, and the front's table.
fn report(outcome: &Outcome) -> String {
    let n = outcome.candidates.len();
    let front = outcome.front();
    let estimates: Vec<Vec<Estimate>> = (0..n).map(|i| objective_estimates(outcome, i)).collect();
    let axes = outcome
        .objectives
        .iter()
        .enumerate()
        .map(|(k, o)| TuneAxis {
            label: o.label(),
            larger_is_better: o.larger_is_better(),
            values: estimates.iter().map(|e| (e[k].mean, e[k].low, e[k].high)).collect(),
        })
        .collect();
    let kinds = (0..n)
        .map(|i| match (i == outcome.current, front.contains(&i)) {
            (true, _) => PointKind::Current,
            (false, true) => PointKind::Front,
            (false, false) => PointKind::Left,
        })
        .collect();
    let (table_header, table_rows) = front_table(outcome);
    let note = format!(
        "Policy `{}` over {}: {} candidates, {} simulations, up to {} replications each on common random numbers. Grey dots left the race (at their last means), coloured points are the front with their 95 % intervals, the ring is the scenario's own values ({}).",
        outcome.policy,
        outcome.dimensions.iter().map(|d| d.path.as_str()).collect::<Vec<_>>().join(", "),
        n,
        outcome.simulations,
        outcome.max_replications,
        status_words(outcome, outcome.current).0
    );
    tune_report(&TuneReport {
        scenario: &outcome.scenario,
        note: &note,
        labels: (0..n).map(|i| format!("#{i}")).collect(),
        kinds,
        axes,
        table_header,
        table_rows,
    })
}

/// The front's rows (and the current values' when they are not on it), as printed.
fn front_table(outcome: &Outcome) -> (Vec<String>, Vec<Vec<String>>) {
    let mut header: Vec<String> = vec!["candidate".into()];
    header.extend(outcome.dimensions.iter().map(|d| d.path.clone()));
    header.push("replications".into());
    header.extend(outcome.objectives.iter().map(|o| o.label()));
    let mut shown = outcome.front();
    if !shown.contains(&outcome.current) {
        shown.push(outcome.current);
    }
    let rows = shown
        .into_iter()
        .map(|i| {
            let mut row = vec![if i == outcome.current { format!("{i} (current)") } else { i.to_string() }];
            row.extend(outcome.candidates[i].values.iter().cloned());
            row.push(outcome.candidates[i].samples.replications().to_string());
            row.extend(objective_estimates(outcome, i).iter().map(cell));
            row
        })
        .collect();
    (header, rows)
}

fn cell(e: &Estimate) -> String {
    match e.high > e.low {
        true => format!("{} ±{}", human(e.mean), half_width((e.high - e.low) / 2.0)),
        false => human(e.mean),
    }
}

/// What the terminal shows: the rounds, the budget against an exhaustive grid, the front.
pub fn summary(outcome: &Outcome) -> String {
    let n = outcome.candidates.len();
    let mut text = format!(
        "{}: tune of policy `{}` over {} ({} candidates), objectives {}{}\n",
        outcome.scenario,
        outcome.policy,
        outcome.dimensions.iter().map(|d| d.path.as_str()).collect::<Vec<_>>().join(", "),
        n,
        outcome.objectives.iter().map(|o| o.label()).collect::<Vec<_>>().join(", "),
        match outcome.checks.len() {
            0 => String::new(),
            k => format!(", {k} [slo] threshold(s) as constraints"),
        }
    );
    for (k, r) in outcome.rounds.iter().enumerate() {
        text.push_str(&format!(
            "{}round {}: {} candidate{} to {} replications, {} simulations; {} left{}\n",
            if outcome.rounds.iter().any(|r| r.generation > 0) {
                format!("generation {}, ", r.generation)
            } else {
                String::new()
            },
            k + 1,
            r.candidates,
            if r.candidates == 1 { "" } else { "s" },
            r.replications,
            r.simulations,
            r.left,
            if r.twins > 0 {
                format!(" (and {} twin{} of them)", r.twins, if r.twins == 1 { "" } else { "s" })
            } else {
                String::new()
            }
        ));
    }
    let grid = n * outcome.max_replications as usize;
    text.push_str(&format!(
        "{} simulations, {:.1} % of the {grid} of every candidate at {} replications{}\n\n",
        outcome.simulations,
        100.0 * outcome.simulations as f64 / grid.max(1) as f64,
        outcome.max_replications,
        if outcome.budget_stopped { "; the budget stopped the race before its last round" } else { "" }
    ));
    let (header, rows) = front_table(outcome);
    text.push_str(&format!("front: {} candidate(s)\n", outcome.front().len()));
    text.push_str(&render(&header, &rows));
    let (word, reason) = status_words(outcome, outcome.current);
    text.push_str(&format!(
        "\nthe scenario's own values ({}, candidate {}): {}\n",
        point_text(&outcome.dimensions, &outcome.candidates[outcome.current].values),
        outcome.current,
        match word {
            "front" if reason.is_empty() => "on the front".to_string(),
            _ => format!("{word}: {reason}"),
        }
    ));
    let beaten = outcome.status.iter().filter(|s| matches!(s, Status::Dominated { .. })).count();
    let infeasible = outcome.status.iter().filter(|s| matches!(s, Status::Infeasible { .. })).count();
    text.push_str(&format!(
        "\nleft the race: {beaten} beaten on every objective, {infeasible} infeasible (candidates.csv says why)\n± is the half-width of the 95 % confidence interval over replications.\n"
    ));
    text
}
