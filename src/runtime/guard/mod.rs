//! Mechanisms that stand between a logical call and its dependency, as an ordered pipeline per
//! policy and dependency (the Polly v8 resilience-pipeline idea): circuit breakers, bulkheads,
//! shared retry budgets, client-side throttling, load shedding. Each is a plain state machine in
//! its own file, driven by virtual time passed in, unit-tested against its anchor's documented
//! behaviour (docs/references.md sections 3-6), and answers the pipeline through one trait,
//! [`Guard`]. None of them knows the event queue.
//!
//! `contract.rs` is what every guard speaks (the [`Guard`] trait and the types it passes),
//! `registry.rs` lists the mechanisms, `pipeline.rs` drives them; each mechanism's module imports
//! only the contract (and its unit tests `testing.rs`, what they share). Adding a mechanism: write its module (configuration, `check`, state
//! machine, `impl Guard`, `impl GuardConfig`, tests), then add one line to the registry. The
//! pipeline never matches on kinds.

pub mod adaptive_throttle;
pub mod admission_control;
pub mod bulkhead;
pub mod circuit_breaker;
pub mod cockatiel_breaker;
pub mod compile;
mod contract;
pub mod envoy_outlier;
pub mod litellm_cooldown;
pub mod load_shedder;
pub mod opossum_breaker;
pub mod pipeline;
pub mod polly_breaker;
pub mod rate_limiter;
mod registry;
pub mod retry_budget;
mod slice_ring;
#[cfg(test)]
mod testing;

pub use contract::{
    Ask, AttemptEnd, AttemptInfo, Ending, Guard, GuardConfig, HiddenEnd, Loads, Parting, Seat, Verdict,
};
pub use registry::{CompileTable, GuardSpec, Kinds, LiveGuard, kinds_of};
