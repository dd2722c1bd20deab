//! What the guards' unit tests share: a small deterministic random sequence for the random
//! sequence tests, and the endings of an attempt that took 1 ms.

use super::contract::{AttemptEnd, Ending};
use crate::vocab::FailureKind;

/// A tiny LCG: the sequence only has to be deterministic and varied.
pub struct Lcg(pub u64);

impl Lcg {
    /// The next draw in 0 .. bound.
    pub fn next(&mut self, bound: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % bound
    }
}

/// A success after 1 ms.
pub fn ok() -> Ending {
    Ending::Outcome(AttemptEnd::success(1_000))
}

/// A failure of `kind` after 1 ms.
pub fn failed(kind: FailureKind) -> Ending {
    Ending::Outcome(AttemptEnd::failed(kind, 1_000))
}
