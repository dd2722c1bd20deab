//! The ordered pipeline of guards an attempt passes on its way to a dependency, as in a Polly
//! v8 resilience pipeline. A policy compiles into guard specifications and routes (see
//! `runtime::mechanisms`): a route is the ordered list of guard instances that apply to one
//! kind of attempt (a step's dependency, its fallback, its status lookups). A simulation builds
//! one `Pipeline` from them; its instances are shared by every run, as a real client's
//! breakers and bulkheads are. An attempt refused by a later guard is undone at the earlier
//! ones, so a refusal never leaks a permit. The pipeline knows no kind of guard: it speaks to
//! each through [`Guard`].

use super::contract::{Ask, AttemptInfo, Ending, Guard, HiddenEnd, Parting, Seat, Verdict};
use super::registry::{GuardSpec, LiveGuard};
use crate::runtime::command::{Command, Effects};
use crate::sim::Micros;
use crate::vocab::{BreakerState, Refusal};

/// Index of a route in a policy's route table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RouteId(pub u32);

/// The guards' answer to an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    Granted,
    Refused(Refusal),
    /// No bulkhead permit now; the attempt waits in guard `at`'s queue until a permit is
    /// handed over (a `PermitGranted` command) or `until` passes (a `PermitExpired` command).
    Wait {
        until: Micros,
        at: u16,
    },
}

/// What an admitted attempt holds: what the retry budgets charged it, and its name (`Ask::waiter`),
/// which every guard hears again when the attempt ends (breakers that remember each call by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Held {
    pub charge: u32,
    pub waiter: u64,
}

/// The compiled, immutable part: guard specifications and routes.
#[derive(Debug, Clone, Default)]
pub struct PipelineSpec {
    guards: Vec<GuardSpec>,
    /// `routes[r]` is a range of `members`.
    routes: Vec<(u32, u32)>,
    members: Vec<u16>,
}

impl PipelineSpec {
    pub fn add_guard(&mut self, spec: GuardSpec) {
        self.guards.push(spec);
    }

    /// Adds a route through `guards` (in order) and returns its id; an identical route is shared.
    pub fn add_route(&mut self, guards: &[u16]) -> RouteId {
        if let Some(r) = (0..self.routes.len()).find(|&r| self.members_of(r) == guards) {
            return RouteId(r as u32);
        }
        let start = self.members.len() as u32;
        self.members.extend_from_slice(guards);
        self.routes.push((start, self.members.len() as u32));
        RouteId(self.routes.len() as u32 - 1)
    }

    /// The policy's guards, in pipeline order (by stage, file order within a stage).
    pub fn guards(&self) -> &[GuardSpec] {
        &self.guards
    }

    fn members_of(&self, r: usize) -> &[u16] {
        let (a, b) = self.routes[r];
        &self.members[a as usize..b as usize]
    }
}

/// The live guards of one simulation.
#[derive(Debug)]
pub struct Pipeline<'s> {
    spec: &'s PipelineSpec,
    guards: Vec<LiveGuard>,
}

impl<'s> Pipeline<'s> {
    /// Builds every guard; the specs were checked when the policy was compiled.
    pub fn new(spec: &'s PipelineSpec) -> Self {
        Pipeline { spec, guards: spec.guards.iter().map(GuardSpec::build).collect() }
    }

    #[inline]
    fn route(&self, route: RouteId) -> (usize, usize) {
        let (a, b) = self.spec.routes[route.0 as usize];
        (a as usize, b as usize)
    }

    /// True when no guard applies to the route: the caller may skip drawing for it.
    #[inline]
    pub fn is_open_road(&self, route: RouteId) -> bool {
        let (a, b) = self.route(route);
        a == b
    }

    /// Asks every guard of the route in order; a refusal undoes what earlier guards granted.
    /// `ask.waiter` names the attempt if it has to wait; probabilistic guards draw from `ask.key`.
    pub fn admit(&mut self, now: Micros, route: RouteId, ask: Ask, out: &mut impl Effects) -> (Admit, Held) {
        let (a, b) = self.route(route);
        let mut waiting: Option<(Micros, u16)> = None;
        for i in a..b {
            let g = self.spec.members[i];
            let seat = Seat { guard: g, waiting_elsewhere: waiting.is_some() };
            match self.guards[usize::from(g)].admit(now, &ask, seat, out) {
                Verdict::Pass => {}
                Verdict::Wait { until } => waiting = Some((until, g)),
                Verdict::Refuse(reason) => {
                    self.undo(now, (a, i), waiting.map(|w| w.1), &ask, out);
                    return (Admit::Refused(reason), Held::default());
                }
            }
        }
        let mut held = Held { charge: 0, waiter: ask.waiter };
        for i in a..b {
            held.charge += self.guards[usize::from(self.spec.members[i])].start(now, &ask.info);
        }
        match waiting {
            Some((until, at)) => {
                out.command(Command::WakeGuards { at: until });
                (Admit::Wait { until, at }, held)
            }
            None => (Admit::Granted, held),
        }
    }

    /// Undoes, latest first, what guards `from..upto` of a route granted (a later one refused).
    /// `waiting_at` is the guard the attempt queued at, if any.
    fn undo(
        &mut self,
        now: Micros,
        (from, upto): (usize, usize),
        waiting_at: Option<u16>,
        ask: &Ask,
        out: &mut impl Effects,
    ) {
        for i in (from..upto).rev() {
            let g = self.spec.members[i];
            let parting = Parting {
                info: ask.info,
                charge: 0,
                ending: Ending::Refused,
                waiter: ask.waiter,
                waiting_here: waiting_at == Some(g),
            };
            self.guards[usize::from(g)].undo(now, parting, out);
        }
    }

    /// An admitted attempt is over for the guards: how it ended (its result, a cancellation by
    /// its caller, or a refusal after it was admitted), each guard records in its anchor's terms.
    /// `skip` is a guard that already let the attempt go (its bulkhead wait expired).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn on_end(
        &mut self,
        now: Micros,
        route: RouteId,
        info: AttemptInfo,
        held: Held,
        end: Ending,
        skip: Option<u16>,
        out: &mut impl Effects,
    ) {
        // An empty route (no guards) costs one comparison, not a call.
        if !self.is_open_road(route) {
            self.on_end_guarded(now, route, info, held, end, skip, out);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_end_guarded(
        &mut self,
        now: Micros,
        route: RouteId,
        info: AttemptInfo,
        held: Held,
        ending: Ending,
        skip: Option<u16>,
        out: &mut impl Effects,
    ) {
        let (a, b) = self.route(route);
        let parting = Parting { info, charge: held.charge, ending, waiter: held.waiter, waiting_here: false };
        for i in a..b {
            let g = self.spec.members[i];
            if skip != Some(g) {
                self.guards[usize::from(g)].end(now, parting, out);
            }
        }
    }

    /// A hidden attempt of the SDK call admitted on `route` as `waiter` ended: every guard of the
    /// route hears it ([`Guard::sdk_attempt_end`]); returns whether all of them let the SDK send
    /// another.
    pub fn sdk_attempt_end(
        &mut self,
        now: Micros,
        route: RouteId,
        waiter: u64,
        end: HiddenEnd,
        out: &mut impl Effects,
    ) -> bool {
        let (a, b) = self.route(route);
        let mut more = true;
        for i in a..b {
            more &= self.guards[usize::from(self.spec.members[i])].sdk_attempt_end(now, waiter, end, out);
        }
        more
    }

    /// Whether every guard of `route` lets an SDK call it admitted send its next request now.
    pub fn sdk_may_send(&mut self, now: Micros, route: RouteId) -> bool {
        let (a, b) = self.route(route);
        (a..b).all(|i| self.guards[usize::from(self.spec.members[i])].sdk_may_send(now))
    }

    /// A waiting attempt gives up (its run ended): it leaves guard `at`'s queue, and the other
    /// guards hear of a cancellation.
    #[allow(clippy::too_many_arguments)]
    pub fn cancel_wait(
        &mut self,
        now: Micros,
        route: RouteId,
        info: AttemptInfo,
        held: Held,
        at: u16,
        waiter: u64,
        out: &mut impl Effects,
    ) {
        let parting = Parting { info, charge: held.charge, ending: Ending::Canceled, waiter, waiting_here: true };
        self.guards[usize::from(at)].end(now, parting, out);
        self.on_end(now, route, info, held, Ending::Canceled, Some(at), out);
    }

    /// The attempt waiting at guard `at` heard of the permit handed to it (see [`Guard::claim`]).
    pub fn claim(&mut self, at: u16, waiter: u64) {
        self.guards[usize::from(at)].claim(waiter);
    }

    /// Performs what is due at `now`: timed breaker transitions and expired bulkhead waits.
    pub fn on_wake(&mut self, now: Micros, out: &mut impl Effects) {
        for guard in &mut self.guards {
            guard.on_wake(now, out);
        }
    }

    /// Whether an attempt on `route` now would be a half-open breaker's trial call: some
    /// breaker on the route is HALF_OPEN, so the end of an attempt in flight there is what it
    /// judges (or, cancelled, a permit given back unjudged). A quorum lets such a branch
    /// finish instead of cancelling it (docs/scenario.md 6.2).
    pub fn on_trial(&self, route: RouteId) -> bool {
        let (a, b) = self.route(route);
        self.spec.members[a..b]
            .iter()
            .any(|&g| matches!(self.guards[usize::from(g)].breaker_state(), Some((_, BreakerState::HalfOpen))))
    }

    /// Every breaker's current state, by label index (for time-series windows).
    pub fn breaker_states(&self) -> impl Iterator<Item = (u16, BreakerState)> + '_ {
        self.guards.iter().filter_map(Guard::breaker_state)
    }

    /// The level of every guard that has one, in pipeline order (the order of the policy's
    /// `level_labels`), for the time series at a window's end.
    pub fn levels(&mut self, now: Micros) -> impl Iterator<Item = u64> + '_ {
        self.guards.iter_mut().filter_map(move |g| g.level(now))
    }
}
