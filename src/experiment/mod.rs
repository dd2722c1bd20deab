//! Commands over many simulations: run, sweep, gate, validate. Replications and grid points
//! run in parallel with rayon; results are collected in input order and reduced in a fixed
//! order, so every output is byte-identical whatever the thread count.

pub mod batch;
pub mod checkpoint;
pub mod explore;
pub mod folder;
pub mod gate;
pub mod init;
pub mod junit;
pub mod otlp;
pub mod output;
pub mod replay;
pub mod report;
pub mod run;
pub mod run_checks;
pub mod shard;
pub mod slo;
pub mod spans;
pub mod svg;
pub mod sweep;
pub mod sweep_files;
pub mod table;

use std::fmt;

/// Why a command could not finish. Input errors exit 2, the rest 1.
#[derive(Debug)]
pub enum CommandError {
    Input(String),
    Io(String),
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandError::Input(m) | CommandError::Io(m) => f.write_str(m),
        }
    }
}

impl From<crate::scenario::ScenarioError> for CommandError {
    fn from(e: crate::scenario::ScenarioError) -> Self {
        CommandError::Input(e.to_string())
    }
}

impl From<crate::engine::SimError> for CommandError {
    fn from(e: crate::engine::SimError) -> Self {
        CommandError::Input(e.to_string())
    }
}
