//! What the runtime's machines ask the driver to do, and where they write it: any [`Effects`].
//! The driver (the engine) folds observations as they come and carries out the commands after
//! every input, in order, so the machines never call back into the engine and the engine never
//! reaches into a machine's state. [`Outbox`] is the plain buffer (tests, tools) that keeps both.

use super::attempt::Purpose;
use super::trace::TraceEvent;
use crate::metrics::Observation;
use crate::sim::Micros;
use crate::vocab::Outcome;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Command {
    /// Send attempt `serial` of `step` to `dependency`; the caller gives up after `timeout_us`.
    Send { step: u8, serial: u32, dependency: u16, purpose: Purpose, timeout_us: Option<Micros> },
    /// The run no longer waits for this attempt; `handle` is what the driver attached to it.
    Cancel { step: u8, serial: u32, handle: Option<u64> },
    /// Wake the step with token `wake` at `until` (a backoff sleep or a hedge delay).
    Sleep { step: u8, wake: u32, until: Micros },
    /// The run ended.
    End { outcome: Outcome, deadline_exceeded: bool },
    /// A bulkhead handed a permit to a waiting attempt, possibly of another run.
    PermitGranted { waiter: u64 },
    /// A waiting attempt's max_wait_ms ran out, possibly of another run.
    PermitExpired { waiter: u64 },
    /// A guard wants to be woken at this time (a breaker's automatic transition, a waiter's expiry).
    WakeGuards { at: Micros },
}

/// Where a machine (or the guard pipeline) writes what an input produced, in the order it
/// happened. Generic, not `dyn`: the engine's implementation is monomorphised into the hot loop.
pub trait Effects {
    /// Something for the driver to do once the input is over.
    fn command(&mut self, c: Command);
    /// An observation of the run being driven (counted only when the run is measured).
    fn observe(&mut self, o: Observation);
    /// An observation that belongs to no run (a breaker transition).
    fn observe_shared(&mut self, o: Observation);
    /// A step of the run's trace (see [`TraceEvent`]); kept only when the run is traced, and
    /// compiled away when nothing traces.
    #[inline(always)]
    fn trace(&mut self, _event: TraceEvent) {}
}

/// Commands and observations produced by one input, in the order they happened.
#[derive(Debug, Default)]
pub struct Outbox {
    pub commands: Vec<Command>,
    /// Observations of a run (counted only when the run is measured).
    pub observations: Vec<Observation>,
    /// Observations that belong to no run (breaker transitions, refusals of shared guards).
    pub shared: Vec<Observation>,
}

impl Outbox {
    pub fn with_capacity(n: usize) -> Self {
        Outbox { commands: Vec::with_capacity(n), observations: Vec::with_capacity(n), shared: Vec::with_capacity(n) }
    }
}

impl Effects for Outbox {
    #[inline]
    fn command(&mut self, c: Command) {
        self.commands.push(c);
    }

    #[inline]
    fn observe(&mut self, o: Observation) {
        self.observations.push(o);
    }

    #[inline]
    fn observe_shared(&mut self, o: Observation) {
        self.shared.push(o);
    }
}
