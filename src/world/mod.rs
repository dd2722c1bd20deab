//! What the runtime calls: dependency stations, service-time distributions, failure kinds,
//! faults, workloads and the side-effect ledger.

pub mod approval;
pub mod bad_result;
pub mod bucket;
pub mod cache;
mod check;
pub mod dist;
pub mod failure;
pub mod fault_kind;
pub mod ledger;
pub mod model;
pub mod queue_policy;
pub mod station;
pub mod task;
pub mod tokens;
pub mod workload;

pub use dist::Distribution;
pub use failure::ErrorTable;
pub use ledger::{Commit, LedgerEntry};
pub use model::{DependencyModel, FaultEffect, FaultModel, WorkloadModel, World, compile_world};
pub use station::{Admission, AttemptConditions, AttemptDraws, Station, attempt_conditions};
pub use workload::ArrivalProcess;
