//! The ordered pipeline of guards an attempt passes on its way to a dependency, as in a Polly
//! v8 resilience pipeline. A policy compiles into guard specifications and routes: a route is
//! the ordered list of guard instances that apply to one kind of attempt (a step's primary
//! dependency, its fallback, its status lookups). A simulation builds one `Pipeline` from them;
//! its instances are shared by every run, as a real client's breakers and bulkheads are.

use super::AttemptEnd;
use crate::runtime::command::Outbox;
use crate::sim::Micros;
use crate::vocab::Refusal;

/// Index of a route in a policy's route table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RouteId(pub u32);

/// Why an attempt is being made: retries and hedges are what shared retry budgets limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptKind {
    First,
    Retry,
    Hedge,
}

/// A guard's answer to an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    Granted,
    Refused(Refusal),
    /// No permit now; the attempt waits in a bulkhead's queue until a permit is handed over
    /// (a `PermitGranted` command) or `until` passes (a `PermitExpired` command).
    Wait {
        until: Micros,
    },
}

/// The compiled, immutable part: routes and guard specifications.
#[derive(Debug, Clone, Default)]
pub struct PipelineSpec {
    /// `routes[r]` is a range of `members`.
    routes: Vec<(u32, u32)>,
    members: Vec<u16>,
}

impl PipelineSpec {
    /// Adds a route through `guards` (in order) and returns its id.
    pub fn add_route(&mut self, guards: &[u16]) -> RouteId {
        let start = self.members.len() as u32;
        self.members.extend_from_slice(guards);
        self.routes.push((start, self.members.len() as u32));
        RouteId(self.routes.len() as u32 - 1)
    }

    fn members(&self, route: RouteId) -> &[u16] {
        let (a, b) = self.routes[route.0 as usize];
        &self.members[a as usize..b as usize]
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
}

/// The live guards of one simulation.
#[derive(Debug)]
pub struct Pipeline<'s> {
    spec: &'s PipelineSpec,
}

impl<'s> Pipeline<'s> {
    pub fn new(spec: &'s PipelineSpec) -> Self {
        Pipeline { spec }
    }

    /// Asks every guard of the route in order. `waiter` names the attempt if it has to wait;
    /// `u` is a uniform draw for probabilistic guards (throttling).
    pub fn admit(
        &mut self,
        _now: Micros,
        route: RouteId,
        _kind: AttemptKind,
        _waiter: u64,
        _u: f64,
        _out: &mut Outbox,
    ) -> Admit {
        debug_assert!(self.spec.members(route).is_empty(), "no guard kinds yet");
        Admit::Granted
    }

    /// The caller stopped waiting for an admitted attempt: `end` is its result, or None when it
    /// was cancelled (a cancelled attempt releases its permits and is not recorded).
    pub fn on_end(
        &mut self,
        _now: Micros,
        route: RouteId,
        _kind: AttemptKind,
        _end: Option<AttemptEnd>,
        _out: &mut Outbox,
    ) {
        debug_assert!(self.spec.members(route).is_empty(), "no guard kinds yet");
    }

    /// A waiting attempt gave up for another reason (its run ended).
    pub fn cancel_wait(&mut self, _route: RouteId, _waiter: u64) {}

    /// Performs what is due at `now`: automatic breaker transitions, waiter expiries.
    pub fn on_wake(&mut self, _now: Micros, _out: &mut Outbox) {}
}
