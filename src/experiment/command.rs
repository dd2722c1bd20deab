//! What every command shares: why it could not finish (the exit code's cause) and the form of
//! what it prints.

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

/// How a command prints its result on standard output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    Text,
    Json,
}
