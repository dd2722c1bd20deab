//! The shared vocabulary of the essay (docs/essay.md): failure kinds, outcomes, budget kinds, refusal reasons,
//! operation classes, priorities and attempt kinds. Each closed set is an enum with its count and its names,
//! so no other module writes a literal 10 or 4 or matches a name with a catch-all arm.
//! Sits just above the kernel: world, metrics and runtime all speak it.

mod approval;
mod attempt_kind;
mod breaker;
mod budget;
mod degradation;
mod delegation;
mod dependency_kind;
mod failure;
mod named;
mod outcome;
mod quorum;
mod refusal;
mod traffic;

pub use approval::ApprovalVerdict;
pub use attempt_kind::AttemptKind;
pub use breaker::BreakerState;
pub use budget::BudgetKind;
pub use degradation::{BudgetState, DegradationMode};
pub use delegation::DelegationRefusal;
pub use dependency_kind::DependencyKind;
pub use failure::FailureKind;
pub use named::Named;
pub use outcome::{DegradedReason, EvidenceLevel, Outcome};
pub use quorum::QuorumVerdict;
pub use refusal::Refusal;
pub use traffic::{OperationClass, Priority};
