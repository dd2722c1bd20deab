//! What calibrate refuses before it makes a scenario: traces and sampling ratios that would
//! give a scenario faultline cannot run, said in the words of the input (the trace files, the
//! `--sampling-ratio` argument), never of the file calibrate would have written.

use super::infer::Observations;
use super::scenario_text::{Calibrated, covered_s};
use crate::experiment::command::CommandError;
use crate::runtime::workflow::MAX_STEPS;
use crate::scenario::quote;
use crate::world::model::{MAX_DEPENDENCIES, MAX_EXPECTED_ARRIVALS, MAX_SIMULATED_S, MAX_WORKFLOWS};
use std::path::PathBuf;

/// What a calibration is made from, as the user gave it (to name it in refusals).
pub struct Inputs<'a> {
    pub traces: &'a [PathBuf],
    pub sampling_ratio: Option<f64>,
}

impl Inputs<'_> {
    /// The trace files, quoted, for messages.
    pub fn shown(&self) -> String {
        self.traces.iter().map(|p| quote(&p.display().to_string())).collect::<Vec<_>>().join(", ")
    }
}

/// Workflows whose runs called nothing (a root span that is itself a client call, a root whose
/// children were lost) have no step to simulate: they are left out with a note, and when no
/// workflow is left the traces are refused.
pub fn leave_out_stepless(observations: &mut Observations, inputs: &Inputs) -> Result<Vec<String>, CommandError> {
    let stepless: Vec<(String, usize)> = observations
        .workflows
        .iter()
        .filter(|(_, w)| w.steps.is_empty())
        .map(|(name, w)| (name.clone(), w.runs))
        .collect();
    if stepless.len() == observations.workflows.len() {
        let runs: usize = stepless.iter().map(|(_, r)| r).sum();
        return Err(CommandError::Input(format!(
            "{}: none of the {runs} run(s) called anything, so their workflow(s) ({}) would have no step: calibrate needs root spans with client spans (kind CLIENT) below them, and a root span that is itself a client call is no run of an agent",
            inputs.shown(),
            stepless.iter().map(|(n, _)| quote(n)).collect::<Vec<_>>().join(", ")
        )));
    }
    let mut notes = Vec::new();
    for (name, runs) in stepless {
        observations.workflows.remove(&name);
        notes.push(format!(
            "{}: its {runs} run(s) called nothing (no client span below the root), so the workflow has no step and is left out",
            quote(&name)
        ));
    }
    Ok(notes)
}

/// The scenario's counts must stay within a scenario's bounds: callees (dependencies),
/// workflows and the steps of one workflow.
pub fn counts(observations: &Observations, inputs: &Inputs) -> Result<(), CommandError> {
    let refuse = |what: String| Err(CommandError::Input(format!("{}: {what}", inputs.shown())));
    if observations.dependencies.len() > MAX_DEPENDENCIES {
        return refuse(format!(
            "the runs call {} callees, and a scenario holds at most {MAX_DEPENDENCIES} dependencies; merge callees with --map",
            observations.dependencies.len()
        ));
    }
    if observations.workflows.len() > MAX_WORKFLOWS {
        return refuse(format!(
            "the root spans name {} workflows, and a scenario holds at most {MAX_WORKFLOWS}; calibrate fewer kinds of request at a time",
            observations.workflows.len()
        ));
    }
    if let Some((name, w)) = observations.workflows.iter().find(|(_, w)| w.steps.len() > MAX_STEPS) {
        return refuse(format!(
            "the runs of workflow {} make {} different steps (step.id, or callees), and a workflow holds at most {MAX_STEPS}",
            quote(name),
            w.steps.len()
        ));
    }
    Ok(())
}

/// The runs' starts on one clock must fit in a simulation.
pub fn simulated_period(observations: &Observations, inputs: &Inputs) -> Result<(), CommandError> {
    let covered = covered_s(observations);
    if covered.round() > MAX_SIMULATED_S {
        return Err(CommandError::Input(format!(
            "{}: the runs' start times on one clock lie {covered:.3e} s apart, and a scenario simulates at most {MAX_SIMULATED_S:.0} s (10 years); calibrate from a shorter period, or check the spans' timestamps",
            inputs.shown()
        )));
    }
    Ok(())
}

/// The arrivals the scenario would simulate must stay within a replication's bound; a sampling
/// ratio that scales a few runs into more (or into an infinite rate) is refused by name.
pub fn arrivals(calibrated: &Calibrated, inputs: &Inputs) -> Result<(), CommandError> {
    let duration_s = calibrated.duration_s();
    let rates: Vec<(f64, usize, Option<f64>)> = calibrated
        .observations
        .workflows
        .values()
        .map(|w| (calibrated.rate_per_s(w), w.runs, w.sampling_ratio))
        .collect();
    let rate: f64 = rates.iter().map(|r| r.0).sum();
    let expected = rate * duration_s;
    // The rate is written rounded to 6 decimals: a hair of margin keeps the scenario under the bound.
    if expected <= MAX_EXPECTED_ARRIVALS * (1.0 - 1e-6) {
        return Ok(());
    }
    let runs: usize = rates.iter().map(|r| r.1).sum();
    let scale = if rate.is_finite() {
        format!(
            "{runs} run(s) in {} stand for {rate:.3e} runs a second, about {expected:.3e} arrivals in the {duration_s:.0} s the scenario simulates; faultline simulates at most {MAX_EXPECTED_ARRIVALS:.0e} arrivals a replication",
            inputs.shown()
        )
    } else {
        format!("{runs} run(s) in {} stand for an infinite rate of runs", inputs.shown())
    };
    let declared = rates.iter().find_map(|r| r.2);
    Err(CommandError::Input(match (inputs.sampling_ratio, declared) {
        (Some(ratio), _) => format!(
            "argument `--sampling-ratio {}`: at this share of root runs the {scale}; give the share the traces really hold",
            number_as_written(ratio)
        ),
        (None, Some(ratio)) => format!(
            "the sampling ratio the traces declare (faultline.sampling_ratio = {}): at this share the {scale}; give the share they hold with --sampling-ratio",
            number_as_written(ratio)
        ),
        (None, None) => {
            format!("the {scale}: the runs start too close together for their count; check the spans' timestamps")
        }
    }))
}

/// A number as a user writes it: `0`, `0.5`, `1e-12` (Rust's Display gives
/// `0.000000000001`, its Debug `0.0`).
pub fn number_as_written(x: f64) -> String {
    let plain = format!("{x}");
    if plain.len() <= 12 { plain } else { format!("{x:e}") }
}
