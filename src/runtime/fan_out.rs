//! Limits on one run's fan-out (docs/essay.md section 22): branches in progress, attempts in
//! all, cost in flight, and the delegation limits that `delegation.rs` checks a hop against.
//! The run machine asks before it starts a step or sends an attempt; this module owns the
//! configuration, its compilation and the arithmetic.

use crate::scenario::{FieldPath, ScenarioError, Source, error_at_path};

/// The simulator's bound on a delegation chain's depth: a chain never grows past it, whatever
/// a policy says, so a delegation loop without limits still ends (ARCHITECTURE.md: every loop
/// in the model has a bound).
pub const MAX_DELEGATION_DEPTH: u32 = 16;

/// Limits on one run's fan-out (docs/essay.md section 22); None is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FanOutLimits {
    pub max_branches: Option<u32>,
    pub max_total_attempts: Option<u32>,
    pub max_parallel_cost_units: Option<f64>,
    /// Delegation hops below the root run's first agent (runtime/delegation.rs); None is the
    /// simulator's bound, `MAX_DELEGATION_DEPTH`.
    pub max_delegation_depth: Option<u32>,
    /// A hop to an agent already on the chain is refused at once (a delegation loop).
    pub visited_agents_required: bool,
}

impl FanOutLimits {
    /// No limit at all.
    pub const NONE: FanOutLimits = FanOutLimits {
        max_branches: None,
        max_total_attempts: None,
        max_parallel_cost_units: None,
        max_delegation_depth: None,
        visited_agents_required: false,
    };

    /// Whether one more attempt costing `cost` fits, with `attempts_total` made so far and
    /// `cost_in_flight` out now.
    pub fn allows_attempt(&self, attempts_total: u32, cost_in_flight: f64, cost: f64) -> bool {
        let attempts_ok = self.max_total_attempts.is_none_or(|max| attempts_total < max);
        let cost_ok = self.max_parallel_cost_units.is_none_or(|max| cost_in_flight + cost <= max + 1e-9);
        attempts_ok && cost_ok
    }

    /// Whether `active` branches leave room for one more.
    pub fn has_branch_room(&self, active: u32) -> bool {
        self.max_branches.is_none_or(|max| active < max)
    }
}

pub fn compile_fan_out(
    source: &Source,
    path: &FieldPath,
    f: Option<&crate::scenario::FanOutSpec>,
) -> Result<FanOutLimits, ScenarioError> {
    let Some(f) = f else { return Ok(FanOutLimits::default()) };
    for (field, value) in [("max_branches", f.max_branches), ("max_total_attempts", f.max_total_attempts)] {
        if value == Some(0) {
            return Err(error_at_path(source, &path.key(field), "must be at least 1"));
        }
    }
    if let Some(depth) = f.max_delegation_depth
        && !(1..=MAX_DELEGATION_DEPTH).contains(&depth)
    {
        let message = format!("must be in 1..={MAX_DELEGATION_DEPTH} (the simulator's bound on a chain), got {depth}");
        return Err(error_at_path(source, &path.key("max_delegation_depth"), message));
    }
    if let Some(c) = f.max_parallel_cost_units
        && !(c.is_finite() && c > 0.0)
    {
        let message = format!("must be a finite number > 0, got {c}");
        return Err(error_at_path(source, &path.key("max_parallel_cost_units"), message));
    }
    Ok(FanOutLimits {
        max_branches: f.max_branches,
        max_total_attempts: f.max_total_attempts,
        max_parallel_cost_units: f.max_parallel_cost_units,
        max_delegation_depth: f.max_delegation_depth,
        visited_agents_required: f.visited_agents_required.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_count_attempts_cost_and_branches_and_none_is_unlimited() {
        let f = FanOutLimits {
            max_branches: Some(2),
            max_total_attempts: Some(3),
            max_parallel_cost_units: Some(5.0),
            ..FanOutLimits::NONE
        };
        assert!(f.allows_attempt(2, 4.0, 1.0), "exactly at the cost limit");
        assert!(!f.allows_attempt(3, 0.0, 0.0), "the fourth attempt");
        assert!(!f.allows_attempt(0, 4.5, 1.0), "5.5 in flight");
        assert!(f.has_branch_room(1) && !f.has_branch_room(2));
        let none = FanOutLimits::default();
        assert!(none.allows_attempt(u32::MAX - 1, 1e300, 1e300) && none.has_branch_room(u32::MAX - 1));
    }
}
