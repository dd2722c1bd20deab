//! A closed population's state during a replication (the users, the schedule's progress); the
//! engine's side of it is in users.rs.

use crate::sim::{Micros, StreamKey};
use crate::world::WorkloadModel;

/// The purpose tag of the users' draws (simulation.rs holds the others; 21 is free there).
const TAG_USER: u64 = 21;

/// The user a run answers to, and which of its waits the run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserLink {
    pub user: u32,
    pub cycle: u32,
    /// The run started after the warm-up (its abandonment is counted).
    pub measured: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum UserState {
    /// Waits for the answer of its current run.
    Waiting,
    Thinking,
    /// Left: after a failure, or let go by a ramp down.
    Gone,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct User {
    pub state: UserState,
    /// The number of its current wait; an answer or a timer for an older one is stale.
    pub cycle: u32,
    /// When its current run started (constant pacing subtracts the run's time from the pace).
    pub run_started: Micros,
}

/// One workflow's users during a replication.
pub struct Population {
    pub(super) users: Vec<User>,
    /// The next entry of the schedule to apply.
    pub(super) next_step: usize,
    /// Users the schedule wants now.
    pub(super) target: u32,
    /// Users present (waiting or thinking).
    pub(super) active: u32,
    /// Root runs the population started: the run keys' arrival numbers.
    pub(super) runs: u32,
    /// `root.with(TAG_USER).with(stream_id)`: a user's draws are below it.
    pub(super) key: StreamKey,
}

impl Population {
    pub fn new(seed: u64, workload: &WorkloadModel) -> Option<Population> {
        workload.population.as_ref().map(|_| Population {
            users: Vec::new(),
            next_step: 0,
            target: 0,
            active: 0,
            runs: 0,
            key: StreamKey::root(seed).with(TAG_USER).with(workload.stream_id),
        })
    }

    /// When the schedule next changes the target, if it does.
    pub fn next_step_at(&self, workload: &WorkloadModel) -> Option<Micros> {
        workload.population.as_ref()?.schedule.get(self.next_step).map(|&(t, _)| t)
    }
}
