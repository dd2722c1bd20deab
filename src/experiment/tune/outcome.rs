//! What a tune found: the candidates with their samples and final status, the rounds of the
//! race, and the figures the files and the summary print.

use super::race::{Objective, Samples, Status};
use super::space::Dimension;
use crate::experiment::batch::slo::Check;
use crate::scenario::Override;

/// One candidate: its values, the overrides that make them, its model and what it measured.
pub struct Candidate {
    pub values: Vec<String>,
    pub overrides: Vec<Override>,
    pub samples: Samples,
    /// 0 for the first candidates, g for a child of generation g (`--generations`).
    pub generation: u32,
}

/// Everything a tune found, for the files and the printed summary.
pub struct Outcome {
    /// The candidate with the scenario's own values (added when no candidate has them).
    pub current: usize,
    pub scenario: String,
    pub policy: String,
    pub seed: u64,
    pub dimensions: Vec<Dimension>,
    pub objectives: Vec<Objective>,
    pub checks: Vec<Check>,
    pub candidates: Vec<Candidate>,
    pub status: Vec<Status>,
    pub rounds: Vec<Round>,
    pub max_replications: u32,
    pub simulations: usize,
    pub budget_stopped: bool,
}

/// One round of the race: how many candidates ran to how many replications.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Round {
    pub generation: u32,
    pub replications: u32,
    pub candidates: usize,
    pub simulations: usize,
    pub left: usize,
    /// Candidates that stopped racing as twins of another so far.
    pub twins: usize,
}

impl Outcome {
    /// The front: candidates that finished the race unbeaten and feasible, and their twins.
    pub fn front(&self) -> Vec<usize> {
        (0..self.candidates.len()).filter(|&i| matches!(self.status[i], Status::Racing | Status::Twin { .. })).collect()
    }
}

pub fn point_text(dimensions: &[Dimension], values: &[String]) -> String {
    dimensions.iter().zip(values).map(|(d, v)| format!("{}={v}", d.path)).collect::<Vec<_>>().join(" ")
}
