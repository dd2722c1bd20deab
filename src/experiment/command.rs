//! What every command shares: why it could not finish (the exit code's cause) and the form of
//! what it prints.

use std::fmt;

/// Why a command could not finish. Input errors exit 2, I/O failures 1.
#[derive(Debug)]
pub enum CommandError {
    Input(String),
    /// Bad input located in a scenario file or an argument, kept whole so that a caller other
    /// than the command line (the Python package) can tell its file, line, column and field.
    Scenario(crate::scenario::ScenarioError),
    Io(String),
    /// Its [`crate::experiment::batch::workers::Watch`] asked it to stop (the Python package's
    /// Ctrl-C); the command line has no watch, so it never sees this.
    Interrupted,
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandError::Input(m) | CommandError::Io(m) => f.write_str(m),
            CommandError::Scenario(e) => write!(f, "{e}"),
            CommandError::Interrupted => f.write_str("interrupted"),
        }
    }
}

impl From<crate::scenario::ScenarioError> for CommandError {
    fn from(e: crate::scenario::ScenarioError) -> Self {
        CommandError::Scenario(e)
    }
}

impl From<crate::engine::SimError> for CommandError {
    fn from(e: crate::engine::SimError) -> Self {
        match e {
            crate::engine::SimError::Stopped => CommandError::Interrupted,
            crate::engine::SimError::TooManyRuns { .. } | crate::engine::SimError::DrainLimit { .. } => {
                CommandError::Input(e.to_string())
            }
        }
    }
}

/// How a command prints its result on standard output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    Text,
    Json,
}
