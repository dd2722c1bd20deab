//! What a compiled policy says about one step of one workflow: its timeout, attempts, reserve,
//! prediction, fallback and guard routes, read by the run machine with no lookups by name.

use super::guard::pipeline::RouteId;
use crate::sim::Micros;

#[derive(Debug, Clone)]
pub struct StepPolicy {
    pub timeout_us: Option<Micros>,
    pub max_attempts: u32,
    pub reserve_us: Micros,
    pub predicted_attempt_us: Micros,
    pub fallback: Option<usize>,
    /// The fallback's median service time: whether it still fits when a retry does not.
    pub predicted_fallback_us: Micros,
    pub routes: StepRoutes,
}

/// The guard routes of a step's attempts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepRoutes {
    pub primary: RouteId,
    pub fallback: RouteId,
    pub lookup: RouteId,
}
