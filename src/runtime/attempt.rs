//! What the runtime asks of the world and what comes back: the purpose of an attempt and its
//! result as the caller sees it.

use crate::sim::Micros;
use crate::vocab::FailureKind;

/// What an attempt does at its dependency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Call,
    /// `deduplicated`: the attempt carries the logical call's key to a dependency that
    /// honours idempotency keys.
    Write {
        deduplicated: bool,
    },
    /// A status lookup of a write whose effect is unknown (control traffic).
    Lookup,
}

/// An attempt's result as its caller sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptResult {
    Ok,
    /// A status lookup found no effect under the call's key (yet).
    NotFound,
    Failed {
        kind: FailureKind,
        retry_after_us: Option<Micros>,
    },
    /// The caller's timeout fired first.
    TimedOut,
}
