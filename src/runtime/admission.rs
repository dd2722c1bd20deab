//! Admission of a root run (docs/essay.md section 7): before any work starts, is it plausible that the
//! run finishes in time? Predicted queue wait plus predicted execution along the workflow's
//! critical path plus the reserves must fit the deadline; otherwise the run is rejected at once
//! (or turned into an asynchronous task where the workflow allows it), instead of taking
//! capacity only to fail late. A pure function of the workflow, the per-step predictions and
//! the dependencies' load.

use super::guard::Loads;
use super::step_policy::StepPolicy;
use super::workflow::{MAX_STEPS, WorkflowModel};
use crate::scenario::{FieldPath, ScenarioError, Source, duration_ms, parse_named};
use crate::sim::Micros;

/// A policy's admission rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmissionRule {
    /// Kept free for assembling the result and reconciling side effects (essay: required_reserve_ms).
    pub reserve_us: Micros,
    /// What an inadmissible run becomes.
    pub on_insufficient: Insufficient,
}

crate::named_enum! {
    pub enum Insufficient {
        Reject => "reject",
        /// A durable asynchronous task where the workflow allows it, else a rejection.
        Async => "async",
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdmissionDecision {
    Admit,
    Reject,
    Async,
}

/// The predicted time of one step now: its predicted attempt time plus the wait its
/// dependency's queue promises (queued attempts per server times that attempt time). A
/// dependency with no server left can never serve it.
fn step_time_us(sp: &StepPolicy, dependency: usize, loads: &Loads) -> Micros {
    let station = &loads.stations[dependency];
    if station.servers == 0 {
        return Micros::MAX;
    }
    let wait = u64::from(station.queued).saturating_mul(sp.predicted_attempt_us) / u64::from(station.servers);
    sp.predicted_attempt_us.saturating_add(wait)
}

/// The longest path through the step graph, in predicted time.
fn critical_path_us(workflow: &WorkflowModel, steps: &[StepPolicy], loads: &Loads) -> Micros {
    let n = workflow.steps.len().min(MAX_STEPS);
    let mut finish = [0 as Micros; MAX_STEPS];
    let mut preds_left = [0u32; MAX_STEPS];
    let mut ready = [0u8; MAX_STEPS];
    let mut ready_len = 0;
    for (left, step) in preds_left.iter_mut().zip(&workflow.steps[..n]) {
        *left = step.predecessors;
    }
    for &r in &workflow.roots {
        ready[ready_len] = r;
        ready_len += 1;
    }
    let mut longest = 0;
    let mut start = [0 as Micros; MAX_STEPS];
    while ready_len > 0 {
        ready_len -= 1;
        let s = ready[ready_len] as usize;
        finish[s] = start[s].saturating_add(step_time_us(&steps[s], workflow.steps[s].dependency, loads));
        longest = longest.max(finish[s]);
        for &next in &workflow.steps[s].successors {
            let next = next as usize;
            start[next] = start[next].max(finish[s]);
            preds_left[next] -= 1;
            if preds_left[next] == 0 {
                ready[ready_len] = next as u8;
                ready_len += 1;
            }
        }
    }
    longest
}

/// Admit when the critical path plus the reserve fits in `deadline_us`.
pub fn decide_admission(
    rule: &AdmissionRule,
    workflow: &WorkflowModel,
    steps: &[StepPolicy],
    loads: &Loads,
    deadline_us: Micros,
) -> AdmissionDecision {
    let needed = critical_path_us(workflow, steps, loads).saturating_add(rule.reserve_us);
    if needed <= deadline_us {
        return AdmissionDecision::Admit;
    }
    match rule.on_insufficient {
        Insufficient::Async if workflow.async_allowed => AdmissionDecision::Async,
        Insufficient::Async | Insufficient::Reject => AdmissionDecision::Reject,
    }
}
pub fn compile_admission(
    source: &Source,
    path: &FieldPath,
    a: Option<&crate::scenario::AdmissionSpec>,
) -> Result<Option<AdmissionRule>, ScenarioError> {
    let Some(a) = a else { return Ok(None) };
    let reserve_us = duration_ms(source, &path.key("reserve_ms"), a.reserve_ms.unwrap_or(0.0))?;
    let on_insufficient =
        parse_named(source, &path.key("on_insufficient"), a.on_insufficient.as_deref(), Insufficient::Reject)?;
    Ok(Some(AdmissionRule { reserve_us, on_insufficient }))
}
