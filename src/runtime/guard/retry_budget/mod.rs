//! Shared retry budgets (docs/references.md section 3): four published designs that limit the
//! retries of many logical calls together, so that a struggling dependency does not see its load
//! multiplied. Each kind is its own module (`grpc`, `finagle`, `envoy`, `aws`): a state machine
//! with its source's parameter names that answers [`RetryBudgetMachine`], and its file table.
//! [`Budget`] makes any of them a guard:
//!
//! - only retries and hedges ask (`allows_retry` peeks, nothing is spent);
//! - once every guard of the route passed, `spend_retry` takes what the retry costs;
//! - every attempt that passed is reported when it starts and when it ends.
//!
//! Hedges go through the same calls as retries: gRPC throttles hedges with the same tokens and
//! Finagle's backup requests withdraw from the client's retry budget.

pub mod aws;
pub mod envoy;
#[cfg(test)]
mod every_kind;
pub mod finagle;
pub mod grpc;
mod machine;

pub use machine::{Attempt, Budget, RetryBudgetMachine, RetryCharge};
