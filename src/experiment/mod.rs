//! Commands over many simulations: run, sweep, merge, gate, explore, replay, validate, init;
//! and compare, over the files they wrote.
//! Replications and grid points run in parallel with rayon; results are collected in input
//! order and reduced in a fixed order, so every output is byte-identical whatever the thread
//! count.
//!
//! The rooms, each importing only the ones listed before it:
//! - `command`: `CommandError` and `OutputFormat`, which every command shares;
//! - `batch/`: from a scenario file and arguments to checked models and simulated replications
//!   (loading with blame, seeds and the worker pool, a policy's replications, a sweep's grid,
//!   the `[slo]` checks);
//! - `output/`: the output folder that appears whole or not at all, and the files' contents;
//! - `report/`: reports and plots from plain data (report.html and its SVG charts, a sweep's
//!   key figures, terminal tables, XML escaping);
//! - `headline`: what `run` prints, the headline figures and the `[slo]` verdicts;
//! - the commands: `run` (run and validate), `sweep/` (with checkpoints, shard files and
//!   merge), `replay/` (spans and OTLP), `gate/` (with JUnit), `explore/` (with the per-run
//!   checks; it traces what it finds as `replay` does), `tune/` (candidates, racing on common
//!   random numbers, the front), `calibrate/`, `init`, `compare/` (two saved `run` folders,
//!   without simulating), `export/` (a saved `run` folder as Prometheus, OpenMetrics or OTLP
//!   metrics), `import/` (a user's resilience configuration as a commented policy fragment).

pub mod batch;
pub mod calibrate;
pub mod check;
pub mod command;
pub mod compare;
pub mod docs;
pub mod explore;
pub mod export;
pub mod gate;
pub mod headline;
pub mod import;
pub mod init;
pub mod output;
pub mod replay;
pub mod report;
pub mod run;
pub mod sweep;
pub mod tune;

pub use command::{CommandError, OutputFormat};
