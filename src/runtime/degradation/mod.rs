//! Degradation modes (docs/essay.md sections 16, 24 and 28): a policy's `runtime_policy`
//! rules move each workflow between NORMAL, CONSTRAINED, DEGRADED, HANDOFF, PAUSED and
//! RECOVERY on signals the simulation has (breakers, queues, refusals, the SLO's error
//! budget); each mode overrides part of the policy for the runs that start in it. The machine
//! is pure ([`machine`]); the engine evaluates it every `evaluation_interval_ms`, never per event.

pub mod compile;
pub mod config;
pub mod controller;
pub mod error_budget;
pub mod machine;

pub use compile::compile_degradation;
pub use config::{Degradation, FallbackMode, ModeOverrides, Treatment, WritePause};
pub use controller::{EndedRun, ModeController};
pub use error_budget::{BudgetReading, RunEnd};
pub use machine::{RunMode, Transition};
