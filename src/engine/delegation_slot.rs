//! A delegating world's state in the engine (engine::delegation drives it): each job's chain
//! and loop, each run's figures. Data only, so the simulation can hold it without importing
//! its driver.

use crate::runtime::delegation::Chain;
use crate::sim::Micros;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum LoopPhase {
    #[default]
    None,
    /// The agent will delegate back before its own calls.
    Pending,
    /// The hop back is out.
    Sent,
}

/// What the engine keeps for one job of a delegating world.
#[derive(Debug, Clone, Copy)]
pub(super) struct HopSlot {
    /// The job's generation this slot belongs to; a slot of another generation is empty.
    pub generation: u32,
    pub live: bool,
    /// The agents above this job on its delegation chain.
    pub chain: Chain,
    /// The cost this job holds in its run's cost in flight (a hop's; 0 otherwise).
    pub cost: f64,
    pub looping: LoopPhase,
    pub loop_timeout_us: Micros,
    pub loop_max_attempts: u32,
}

impl HopSlot {
    pub const EMPTY: HopSlot = HopSlot {
        generation: 0,
        live: false,
        chain: Chain::ROOT,
        cost: 0.0,
        looping: LoopPhase::None,
        loop_timeout_us: 0,
        loop_max_attempts: 1,
    };
}

/// A run's delegation figures so far.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct RunHops {
    pub generation: u32,
    pub max_depth: u32,
    pub peak_cost_units: f64,
}

/// The engine's delegation state: empty and untouched unless the world delegates.
#[derive(Debug, Default)]
pub(super) struct Delegation {
    pub on: bool,
    /// By job id.
    pub jobs: Vec<HopSlot>,
    /// By run slot.
    pub runs: Vec<RunHops>,
}

impl Delegation {
    pub fn new(on: bool) -> Delegation {
        Delegation { on, jobs: Vec::new(), runs: Vec::new() }
    }

    pub fn slot_mut(&mut self, id: u32, generation: u32) -> &mut HopSlot {
        let i = id as usize;
        if self.jobs.len() <= i {
            self.jobs.resize(i + 1, HopSlot::EMPTY);
        }
        let slot = &mut self.jobs[i];
        if !slot.live || slot.generation != generation {
            *slot = HopSlot { generation, live: true, ..HopSlot::EMPTY };
        }
        slot
    }

    pub fn slot(&self, id: u32, generation: u32) -> Option<&HopSlot> {
        self.jobs.get(id as usize).filter(|s| s.live && s.generation == generation)
    }
}
