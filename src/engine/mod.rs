//! One simulation: the event loop, the closed [`Event`] enum, and the wiring of world, runtime
//! and workload. Runs and attempts live in arenas indexed by ids with generation counters, so
//! a stale event (an attempt's timeout after it completed) is recognised and dropped.

mod arena;
mod cache;
mod cache_slot;
mod delegation;
mod delegation_slot;
mod event;
mod plain_call;
mod remote;
mod runs;
mod sdk;
mod sdk_slot;
mod simulation;
mod stations;
mod task_slots;
mod tasks;
mod user_slots;
mod users;

pub use crate::runtime::AttemptTrace;
pub use event::Event;
pub use simulation::{
    Replication, SimError, simulate, simulate_following, simulate_traced, simulate_until_stopped,
    simulate_without_fast_paths,
};

use crate::metrics::timeseries::{FIXED_COLUMNS, USER_COLUMNS};
use crate::metrics::{Labels, MetricMap, Recorder};
use crate::runtime::degradation::Degradation;
use crate::runtime::{PolicyModel, WorkflowModel, compile_policies, compile_workflows};
use crate::scenario::{FieldPath, error_at_path};
use crate::scenario::{Scenario, ScenarioError, Source};
use crate::world::model::{MAX_SIMULATIONS, MAX_TIMESERIES_CELLS};
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
        check_simulations(&world, &policies, source)?;
        check_timeseries_cells(&world, &policies, source)?;
        let dependency_names = world.dependencies.iter().map(|d| d.name.clone()).collect();
        let mut step_names = Vec::new();
        let mut step_offsets = Vec::with_capacity(workflows.len());
        for w in &workflows {
            step_offsets.push(step_names.len());
            step_names.extend(w.steps.iter().map(|s| s.id.clone()));
        }
        Ok(Model { name: source.stem(), world, workflows, policies, dependency_names, step_names, step_offsets })
    }

    /// What the guards' sliding windows take in one simulation of this model's hungriest policy.
    pub fn guard_window_bytes(&self) -> u64 {
        self.policies.iter().map(|p| p.guard_window_bytes).max().unwrap_or(0)
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
            levels: self.policies[policy].level_labels.clone(),
            workflows: self.workflows.iter().map(|w| w.name.clone()).collect(),
            workflow_tenants: self.workflows.iter().map(|w| w.tenant.clone()).collect(),
            modes: self.policies[policy].degradation.is_some(),
            budget_columns: self.budget_columns(policy),
            budget_width: self.policies[policy].degradation.as_ref().map_or(0, Degradation::budget_width),
            task_dependencies: (0..self.world.dependencies.len())
                .filter(|&d| self.world.dependencies[d].task.is_some())
                .collect(),
            token_dependencies: (0..self.world.dependencies.len())
                .filter(|&d| self.world.dependencies[d].tokens.is_some())
                .collect(),
            context_reduction: self.policies[policy]
                .steps
                .iter()
                .flatten()
                .any(|sp| sp.fallbacks.iter().any(|c| c.context_share.is_some())),
            sdk_clients: self.policies.iter().any(|p| p.sdk_clients.iter().any(Option::is_some)),
            closed_population: self.world.workloads.iter().any(|w| w.population.is_some()),
            bad_results: self
                .world
                .faults
                .iter()
                .any(|f| crate::world::bad_result::BadResult::of_fault(f.kind).is_some())
                || self.policies.iter().any(|p| p.steps.iter().flatten().any(|sp| sp.validator.is_some()))
                || self.workflows.iter().any(|w| w.has_quorum),
            approvals: self.world.dependencies.iter().any(|d| d.approval.is_some()),
            advisory: self
                .workflows
                .iter()
                .flat_map(|w| &w.steps)
                .any(|s| s.criticality == crate::scenario::Criticality::Advisory),
            delegation: self.world.delegates(),
            caches: self.policies.iter().any(|p| p.caches.iter().any(Option::is_some)),
            quorum: self.workflows.iter().any(|w| w.has_quorum),
        }
    }

    /// The time-series columns of a policy's error budgets: per workflow its own budget
    /// (`workflow.<w>.error_budget.*`), then the one of each dependency a budget rule names
    /// (`workflow.<w>.dependency.<d>.error_budget.*`), each with its state, spent share and a
    /// long and a short burn rate per burn-rate rule.
    fn budget_columns(&self, policy: usize) -> Vec<String> {
        let Some(d) = &self.policies[policy].degradation else { return Vec::new() };
        let Some(budget) = &d.error_budget else { return Vec::new() };
        let mut columns = Vec::new();
        for w in &self.workflows {
            let own = std::iter::once(format!("workflow.{}.error_budget", w.name));
            let named = d
                .budget_dependencies
                .iter()
                .map(|&dep| format!("workflow.{}.dependency.{}.error_budget", w.name, self.dependency_names[dep]));
            for prefix in own.chain(named) {
                columns.push(format!("{prefix}.state"));
                columns.push(format!("{prefix}.spent"));
                for r in 0..budget.rules.len() {
                    columns.push(format!("{prefix}.burn_rate.{r}.long"));
                    columns.push(format!("{prefix}.burn_rate.{r}.short"));
                }
            }
        }
        debug_assert_eq!(columns.len(), self.workflows.len() * d.budget_groups_per_workflow() * d.budget_width());
        columns
    }

    /// The union over policies: a policy without breakers reports no breaker metrics.
    fn empty_metrics(&self) -> MetricMap {
        let mut all = MetricMap::new();
        for policy in 0..self.policies.len() {
            let labels = self.labels(policy);
            let faults = crate::metrics::fault_span(self.world.faults.iter().map(|f| (f.start_us, f.end_us)));
            all.append(&mut Recorder::new(&labels, (0, 1), 1, faults).to_map(&labels));
        }
        all
    }
}

/// The most a command's replications of a model hold in time-series cells, by factor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeSeriesSize {
    /// Windows over duration + drain.
    pub windows: u128,
    /// Columns summed over policies.
    pub columns: u128,
    pub replications: u128,
}

impl TimeSeriesSize {
    pub fn cells(&self) -> u128 {
        self.windows * self.columns * self.replications
    }
}

fn timeseries_size(world: &World, policies: &[PolicyModel]) -> TimeSeriesSize {
    let span_us = u128::from(world.duration_us) + u128::from(world.drain_limit_us);
    let dependency_columns = FIXED_COLUMNS.len() + 3 * world.dependencies.len();
    // One column per workflow for a policy with degradation modes (its worst mode).
    let workflows = world.workloads.len();
    // A closed population's users, sampled per window.
    let users = if world.workloads.iter().any(|w| w.population.is_some()) { USER_COLUMNS.len() } else { 0 };
    TimeSeriesSize {
        windows: span_us / u128::from(world.window_us.max(1)) + 1,
        columns: policies
            .iter()
            .map(|p| {
                let modes = if p.degradation.is_some() { workflows } else { 0 };
                let budgets =
                    p.degradation.as_ref().map_or(0, |d| workflows * d.budget_groups_per_workflow() * d.budget_width());
                (dependency_columns + p.breaker_labels.len() + modes + p.level_labels.len() + budgets + users) as u128
            })
            .sum(),
        replications: u128::from(world.replications),
    }
}

/// The time series of a command: windows (up to duration + drain) x columns (fixed, three per
/// dependency, one per breaker, per workflow with modes, one per guard with a level, per
/// error budget its state, share and burn rates, two for a closed population's users, for each
/// policy) x replications. A command holds one running sum per policy and one series per busy
/// worker, but every replication builds and adds its own, so the product bounds both memory and
/// the work of summing. Each factor has its own bound; their product has this one, so 1 000
/// dependencies at 1e6 windows is an input error rather than an
/// allocation failure.
fn check_timeseries_cells(world: &World, policies: &[PolicyModel], source: &Source) -> Result<(), ScenarioError> {
    let TimeSeriesSize { windows, columns, replications } = timeseries_size(world, policies);
    let cells = windows * columns * replications;
    if cells <= MAX_TIMESERIES_CELLS {
        return Ok(());
    }
    let message = format!(
        "the time series would hold {windows} windows x {columns} columns (over {} polic{}) x {replications} replication(s) = {cells} cells; the limit is {MAX_TIMESERIES_CELLS} (widen timeseries_window_s, shorten duration_s + drain_limit_s, or run fewer replications)",
        policies.len(),
        if policies.len() == 1 { "y" } else { "ies" },
    );
    Err(error_at_path(source, &FieldPath::root().key("simulation").key("timeseries_window_s"), message))
}

/// `run` simulates every policy `replications` times; a scenario over the command's bound would
/// pass `validate` and then be refused by `run`, so the bound is checked here.
fn check_simulations(world: &World, policies: &[PolicyModel], source: &Source) -> Result<(), ScenarioError> {
    let simulations = policies.len() as u128 * u128::from(world.replications);
    if simulations <= MAX_SIMULATIONS as u128 {
        return Ok(());
    }
    let message = format!(
        "{} policies x {} replications = {simulations} simulations; the limit is {MAX_SIMULATIONS} (fewer policies or replications)",
        policies.len(),
        world.replications
    );
    Err(error_at_path(source, &FieldPath::root().key("simulation").key("replications"), message))
}
