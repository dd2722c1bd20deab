//! faultline: a deterministic, seeded discrete-event simulator and chaos-test harness for
//! AI-agent runtimes. Layers depend downward only: sim, vocab, scenario, world, metrics, runtime,
//! engine, experiment, cli (see ARCHITECTURE.md).

pub mod cli;
pub mod engine;
pub mod experiment;
pub mod metrics;
pub mod runtime;
pub mod scenario;
pub mod sim;
pub mod vocab;
pub mod world;
