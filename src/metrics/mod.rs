//! Streaming measurement: counters, HDR histograms, time integrals and fixed windows, turned
//! into the flat metric map at the end of a replication, and statistics across replications.
//! One metric name means the same thing in summary.json, CSV columns, tables and SLOs.

pub mod approval;
pub mod bad_results;
pub mod cache;
pub mod delegation;
pub mod direction;
pub mod incident;
pub mod modes;
pub mod observation;
pub mod quorum;
pub mod range;
pub mod recorder;
pub mod recovery;
pub mod stats;
pub mod tasks;
pub mod timeseries;
pub mod tokens;
pub mod users;

pub use observation::Observation;
pub use recorder::{DependencyStats, Recorder, RunStats};
pub use recovery::{Recovery, fault_span};
pub use stats::{Aggregate, aggregate, t_quantile_975};
pub use timeseries::TimeSeries;

use std::collections::BTreeMap;

/// The metrics of one replication, by flat name. Undefined ratios (0/0) are NaN, written as
/// null in JSON and an empty cell in CSV.
pub type MetricMap = BTreeMap<String, f64>;

/// The names behind a replication's indices, in index order: they label metrics and columns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Labels {
    pub dependencies: Vec<String>,
    /// Step ids flattened over workflows.
    pub steps: Vec<String>,
    /// One per circuit-breaker instance, e.g. `model-primary` or `model-primary.read`.
    pub breakers: Vec<String>,
    /// The column of each guard with a level, e.g. `bulkhead.acme.in_use`.
    pub levels: Vec<String>,
    pub workflows: Vec<String>,
    /// The tenant of each workflow, if it has one.
    pub workflow_tenants: Vec<Option<String>>,
    /// The policy declares degradation modes: mode metrics and time-series columns exist.
    pub modes: bool,
    /// The time series' error-budget columns, in order (empty without an `error_budget`):
    /// groups of `budget_width`, one per budget ([`timeseries::BudgetColumn`]).
    pub budget_columns: Vec<String>,
    pub budget_width: usize,
    /// The dependencies that run long-running tasks: task metrics exist when there is one.
    pub task_dependencies: Vec<usize>,
    /// The dependencies with a token shape: token metrics exist when there is one.
    pub token_dependencies: Vec<usize>,
    /// Some fallback candidate of the policy reduces the context: `degraded_total.context_reduced`
    /// exists.
    pub context_reduction: bool,
    /// Some policy of the scenario calls a dependency through an SDK client: the hidden-attempt
    /// metrics exist (for every policy, so they compare side by side).
    pub sdk_clients: bool,
    /// Some workflow's load is a closed population: user metrics exist.
    pub closed_population: bool,
    /// Some fault makes answers that look like success, or some policy validates a step: the
    /// bad-result metrics exist (for every policy, so they compare side by side).
    pub bad_results: bool,
    /// Some dependency is an approval desk: the approval metrics and outcomes exist.
    pub approvals: bool,
    /// Some step is advisory: the advisory metrics exist.
    pub advisory: bool,
    /// Some call delegates between agents or a fault makes a delegation loop: delegation
    /// metrics exist.
    pub delegation: bool,
    /// Some policy of the scenario looks in a dependency's cache: the cache metrics and
    /// `degraded_total.stale_cache` exist (for every policy, so they compare side by side).
    pub caches: bool,
    /// Some step is a k-of-n quorum: the quorum metrics exist.
    pub quorum: bool,
}
