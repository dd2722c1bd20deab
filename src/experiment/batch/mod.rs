//! From a scenario file and arguments to checked models and simulated replications: the ground
//! every command stands on. `load` applies the arguments and blames errors on the input that
//! caused them; `workers` derives replication seeds and runs simulations on a thread pool;
//! `replications` keeps what a command needs of one policy's replications; `grid` is a sweep's
//! parameters and layout; `slo` compiles and judges the scenario's `[slo]` checks.

pub mod grid;
pub mod load;
pub mod replications;
pub mod slo;
pub mod workers;

pub use load::{compile_scenario, compile_with};
pub use workers::{MAX_JOBS, Task, default_jobs, replication_seed, run_tasks};
