//! One simulation: the event loop, the closed [`Event`] enum, and the wiring of world, runtime
//! and workload. Runs and attempts live in arenas indexed by ids with generation counters, so
//! a stale event (an attempt's timeout after it completed) is recognised and dropped.

mod arena;
mod event;
mod remote;
mod runs;
mod simulation;
mod stations;

pub use event::Event;
pub use simulation::{AttemptTrace, Replication, SimError, simulate, simulate_traced};

use crate::metrics::{Labels, MetricMap, Recorder};
use crate::runtime::{PolicyModel, WorkflowModel, compile_policies, compile_workflows};
use crate::scenario::{Scenario, ScenarioError, Source};
use crate::world::{World, compile_world};

/// A scenario compiled for simulation: every name resolved, every value checked.
#[derive(Debug, Clone)]
pub struct Model {
    pub name: String,
    pub world: World,
    pub workflows: Vec<WorkflowModel>,
    pub policies: Vec<PolicyModel>,
    pub dependency_names: Vec<String>,
    /// Step ids flattened over workflows; `step_offsets[w]` is workflow w's first entry.
    pub step_names: Vec<String>,
    pub step_offsets: Vec<usize>,
}

impl Model {
    pub fn compile(scenario: &Scenario, source: &Source) -> Result<Model, ScenarioError> {
        let world = compile_world(scenario, source)?;
        let workflows = compile_workflows(scenario, source, &world)?;
        let policies = compile_policies(scenario, source, &world, &workflows)?;
        let dependency_names = world.dependencies.iter().map(|d| d.name.clone()).collect();
        let mut step_names = Vec::new();
        let mut step_offsets = Vec::with_capacity(workflows.len());
        for w in &workflows {
            step_offsets.push(step_names.len());
            step_names.extend(w.steps.iter().map(|s| s.id.clone()));
        }
        Ok(Model { name: source.stem(), world, workflows, policies, dependency_names, step_names, step_offsets })
    }

    pub fn policy_index(&self, name: &str) -> Option<usize> {
        self.policies.iter().position(|p| p.name == name)
    }

    /// Every metric name a replication of this model reports, in output order.
    pub fn metric_names(&self) -> Vec<String> {
        self.empty_metrics().into_keys().collect()
    }

    /// The labels of a replication under policy number `policy`.
    pub fn labels(&self, policy: usize) -> Labels {
        Labels {
            dependencies: self.dependency_names.clone(),
            steps: self.step_names.clone(),
            breakers: self.policies[policy].breaker_labels.clone(),
            workflows: self.workflows.iter().map(|w| w.name.clone()).collect(),
            workflow_tenants: self.workflows.iter().map(|w| w.tenant.clone()).collect(),
        }
    }

    /// The union over policies: a policy without breakers reports no breaker metrics.
    fn empty_metrics(&self) -> MetricMap {
        let mut all = MetricMap::new();
        for policy in 0..self.policies.len() {
            let labels = self.labels(policy);
            all.append(&mut Recorder::new(&labels, (0, 1), 1, None).to_map(&labels));
        }
        all
    }
}
