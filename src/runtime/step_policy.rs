//! What a compiled policy says about one step of one workflow: its timeout, attempts, reserve,
//! prediction, fallback and guard routes, read by the run machine with no lookups by name.

use super::guard::pipeline::RouteId;
use crate::sim::Micros;

#[derive(Debug, Clone)]
pub struct StepPolicy {
    pub timeout_us: Option<Micros>,
    /// At a token-shaped model: the caller gives up when the first token is this late.
    pub first_token_timeout_us: Option<Micros>,
    pub max_attempts: u32,
    pub reserve_us: Micros,
    pub predicted_attempt_us: Micros,
    /// The first fallback candidate's dependency (None: the step has no fallback).
    pub fallback: Option<usize>,
    /// The fallback candidates, tried in order (one for a step with a plain `fallback`).
    pub fallbacks: Vec<FallbackCandidate>,
    /// An approved snapshot older than this is stale evidence: the step cannot use it.
    pub max_snapshot_age_us: Option<Micros>,
    /// What a hard step that gives up does to its run.
    pub on_give_up: OnGiveUp,
    /// What a RESULT_INVALID answer does.
    pub on_schema_failure: OnSchemaFailure,
    /// The check every answer of the step goes through, if any.
    pub validator: Option<super::validator::Validator>,
    pub routes: StepRoutes,
    /// A quorum step's branch routes, by branch (empty for other steps).
    pub quorum_routes: Vec<RouteId>,
}

/// One of a step's fallback candidates, its contract resolved for the step (docs/essay.md
/// section 17).
#[derive(Debug, Clone, PartialEq)]
pub struct FallbackCandidate {
    pub dependency: usize,
    /// Its median service time: whether it still fits when a retry does not.
    pub predicted_us: Micros,
    /// It may serve the step's task class (its `allowed_task_classes`).
    pub admits_class: bool,
    /// The share of the step's drawn input tokens it is sent; None: the whole context.
    pub context_share: Option<f64>,
    /// The guard route of its attempts.
    pub route: RouteId,
}

pub use crate::world::tokens::reduced_count as reduced_tokens;

impl StepPolicy {
    /// Candidate `c`, if the step has it.
    #[inline]
    pub fn candidate(&self, c: u8) -> Option<&FallbackCandidate> {
        self.fallbacks.get(c as usize)
    }
}

crate::named_enum! {
    /// What a hard step that gives up does to its run: fail it, or hand it to a human with the
    /// evidence gathered so far (fail closed, docs/essay.md section 18).
    pub enum OnGiveUp {
        Fail => "fail",
        Handoff => "handoff",
    }
}

crate::named_enum! {
    /// What a RESULT_INVALID answer (a result that breaks its schema) does: give up as any
    /// failure that is never retried, or repair it once (one more attempt with a repair
    /// prompt, paid with a retry token) and hand the run off if the repair fails too.
    pub enum OnSchemaFailure {
        Fail => "fail",
        RepairOnceThenHandoff => "repair_once_then_handoff",
    }
}

/// The guard routes of a step's attempts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepRoutes {
    pub primary: RouteId,
    pub fallback: RouteId,
    pub lookup: RouteId,
}
