//! The ordered pipeline of guards an attempt passes on its way to a dependency, as in a Polly
//! v8 resilience pipeline. A policy compiles into guard specifications and routes (see
//! `runtime::mechanisms`): a route is the ordered list of guard instances that apply to one
//! kind of attempt (a step's dependency, its fallback, its status lookups). A simulation builds
//! one `Pipeline` from them; its instances are shared by every run, as a real client's
//! breakers and bulkheads are. An attempt refused by a later guard gives back what earlier
//! guards granted, so a refusal never leaks a permit.

use super::Ending;
use super::adaptive_throttle::{AdaptiveThrottle, AdaptiveThrottleConfig};
use super::admission_control::{AdmissionControl, AdmissionControlConfig};
use super::bulkhead::{Acquire, Bulkhead, BulkheadConfig};
use super::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
use super::load_shedder::LoadShedder;
use super::polly_breaker::{PollyBreaker, PollyBreakerOptions};
use super::retry_budget::{Attempt, RetryBudget, RetryBudgetConfig, RetryCharge};
use crate::metrics::Observation;
use crate::runtime::command::{Command, Effects};
use crate::sim::{Micros, StreamKey};
use crate::vocab::{AttemptKind, BreakerState, FailureKind, Priority, Refusal};
use crate::world::{DependencyModel, Station};

/// Index of a route in a policy's route table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RouteId(pub u32);

/// What the guards know of an attempt when it asks to pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttemptInfo {
    pub kind: AttemptKind,
    /// Control traffic (status lookups) may use a bulkhead's reserved permits.
    pub control: bool,
    /// The failure that prompted a retry (None for a first attempt or a hedge).
    pub after: Option<FailureKind>,
    /// The run's workflow priority and estimated load, for shedding.
    pub priority: Priority,
    pub load_units: f64,
}

/// What a load shedder sees of the dependencies: their stations now.
#[derive(Clone, Copy)]
pub struct Loads<'a> {
    pub stations: &'a [Station],
    pub dependencies: &'a [DependencyModel],
}

impl Loads<'_> {
    /// (utilization, queue ratio) of dependency `d`: busy over servers in force (infinite
    /// when a capacity fault left none), queue length over queue capacity.
    pub fn signal(&self, d: usize) -> (f64, f64) {
        let (s, m) = (&self.stations[d], &self.dependencies[d]);
        let utilization = if s.servers == 0 { f64::INFINITY } else { f64::from(s.busy) / f64::from(s.servers) };
        let queue = if m.queue_capacity == 0 { 0.0 } else { f64::from(s.queued) / f64::from(m.queue_capacity) };
        (utilization, queue)
    }
}

/// The guards' answer to an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    Granted,
    Refused(Refusal),
    /// No bulkhead permit now; the attempt waits in bulkhead `at`'s queue until a permit is
    /// handed over (a `PermitGranted` command) or `until` passes (a `PermitExpired` command).
    Wait {
        until: Micros,
        at: u16,
    },
}

/// What an admitted attempt holds: what the retry budgets charged it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Held {
    pub charge: u32,
}

/// A guard's configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GuardSpec {
    CircuitBreaker(CircuitBreakerConfig),
    PollyBreaker(PollyBreakerOptions),
    Bulkhead(BulkheadConfig),
    RetryBudget(RetryBudgetConfig),
    Throttle(AdaptiveThrottleConfig),
    Shedder { shedder: LoadShedder, dependency: u16 },
    AdmissionControl(AdmissionControlConfig),
}

/// The compiled, immutable part: guard specifications and routes.
#[derive(Debug, Clone, Default)]
pub struct PipelineSpec {
    /// (spec, breaker label index for breakers).
    guards: Vec<(GuardSpec, Option<u16>)>,
    /// `routes[r]` is a range of `members`.
    routes: Vec<(u32, u32)>,
    members: Vec<u16>,
}

impl PipelineSpec {
    pub fn add_guard(&mut self, spec: GuardSpec, breaker: Option<u16>) {
        self.guards.push((spec, breaker));
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

    fn members_of(&self, r: usize) -> &[u16] {
        let (a, b) = self.routes[r];
        &self.members[a as usize..b as usize]
    }
}

#[derive(Debug)]
enum Guard {
    Breaker { breaker: CircuitBreaker, label: u16, wake: Option<Micros> },
    Polly { breaker: PollyBreaker, label: u16 },
    Bulkhead(Bulkhead),
    Budget(RetryBudget),
    Throttle(AdaptiveThrottle),
    Shedder { shedder: LoadShedder, dependency: u16 },
    AdmissionControl(AdmissionControl),
}

/// The live guards of one simulation.
#[derive(Debug)]
pub struct Pipeline<'s> {
    spec: &'s PipelineSpec,
    guards: Vec<Guard>,
}

impl<'s> Pipeline<'s> {
    /// Builds every guard; the specs were checked when the policy was compiled.
    pub fn new(spec: &'s PipelineSpec) -> Self {
        let guards = spec.guards.iter().map(|&(g, label)| live(g, label.unwrap_or(0))).collect();
        Pipeline { spec, guards }
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

    /// Asks every guard of the route in order; a refusal gives back what earlier guards granted.
    /// `ask.waiter` names the attempt if it has to wait; throttles draw from `ask.key`.
    pub fn admit(&mut self, now: Micros, route: RouteId, ask: Ask, out: &mut impl Effects) -> (Admit, Held) {
        let (a, b) = self.route(route);
        let mut waiting: Option<(Micros, u16)> = None;
        for i in a..b {
            let g = self.spec.members[i];
            let refusal = self.ask(now, g, ask, &mut waiting, out);
            if let Some(reason) = refusal {
                self.give_back(now, a, i, waiting.map(|w| w.1), ask.waiter, out);
                return (Admit::Refused(reason), Held::default());
            }
        }
        let held = self.start(now, a, b, ask.info);
        match waiting {
            Some((until, at)) => {
                out.command(Command::WakeGuards { at: until });
                (Admit::Wait { until, at }, held)
            }
            None => (Admit::Granted, held),
        }
    }

    /// One guard's answer: None to pass, or the reason it refuses.
    fn ask(
        &mut self,
        now: Micros,
        g: u16,
        ask: Ask,
        waiting: &mut Option<(Micros, u16)>,
        out: &mut impl Effects,
    ) -> Option<Refusal> {
        let Ask { info, waiter, key, loads } = ask;
        // Each probabilistic guard draws from its own stream below the attempt's, and only
        // when it is asked.
        let draw = || key.with(u64::from(g)).stream().unit();
        let repeat = info.kind.is_repeat();
        match &mut self.guards[g as usize] {
            Guard::Budget(budget) => (repeat && !budget.allows_retry(now, info.after)).then_some(Refusal::RetryBudget),
            Guard::Throttle(throttle) => (!throttle.admit(now, draw())).then_some(Refusal::Throttled),
            // Like the shedder, it never stands between a write and its reconciliation.
            Guard::AdmissionControl(control) => {
                (!info.control && !control.admit(now, draw())).then_some(Refusal::Throttled)
            }
            Guard::Shedder { shedder, dependency } => {
                // Control traffic keeps its capacity: recovery is never shed.
                let (utilization, queue_ratio) = loads.signal(*dependency as usize);
                let shed = !info.control && shedder.decide(info.priority, utilization, queue_ratio, info.load_units);
                shed.then_some(Refusal::Shed)
            }
            Guard::Breaker { .. } | Guard::Polly { .. } => {
                let ok = self.breaker_step(now, g, out, |b| b.try_acquire(now), |p| p.try_acquire(now));
                (!ok).then_some(Refusal::CircuitOpen)
            }
            Guard::Bulkhead(bulkhead) => match bulkhead.try_acquire(now, info.control) {
                Acquire::Granted => None,
                Acquire::Refused => Some(Refusal::Bulkhead),
                // One queue at a time: an attempt already waiting elsewhere is refused here.
                Acquire::Wait { until } if waiting.is_none() && bulkhead.wait(waiter, now, info.control) => {
                    *waiting = Some((until, g));
                    None
                }
                Acquire::Wait { .. } => Some(Refusal::Bulkhead),
            },
        }
    }

    /// Runs an operation on breaker `g` and reports a change of state.
    fn breaker_step<T>(
        &mut self,
        now: Micros,
        g: u16,
        out: &mut impl Effects,
        on_r4j: impl FnOnce(&mut CircuitBreaker) -> T,
        on_polly: impl FnOnce(&mut PollyBreaker) -> T,
    ) -> T {
        let (before, result, after, label, wake) = match &mut self.guards[g as usize] {
            Guard::Breaker { breaker, label, wake } => {
                let before = breaker.state();
                let result = on_r4j(breaker);
                let due = breaker.wake_at();
                let rescheduled = if due != *wake { due } else { None };
                *wake = due;
                (before, result, breaker.state(), *label, rescheduled)
            }
            Guard::Polly { breaker, label } => {
                let before = breaker.state();
                let result = on_polly(breaker);
                (before, result, breaker.state(), *label, None)
            }
            Guard::Bulkhead(_)
            | Guard::Budget(_)
            | Guard::Throttle(_)
            | Guard::Shedder { .. }
            | Guard::AdmissionControl(_) => unreachable!("breaker_step is only called on breakers"),
        };
        if before != after {
            out.observe_shared(Observation::BreakerTransition { breaker: label, from: before, to: after });
        }
        if let Some(at) = wake {
            out.command(Command::WakeGuards { at: at.max(now) });
        }
        result
    }

    /// Every guard passed: the retry budgets take their charge and count the attempt.
    fn start(&mut self, now: Micros, a: usize, b: usize, info: AttemptInfo) -> Held {
        let mut held = Held::default();
        for i in a..b {
            if let Guard::Budget(budget) = &mut self.guards[self.spec.members[i] as usize] {
                let attempt = if info.kind == AttemptKind::First {
                    Attempt::First
                } else {
                    let charge = budget.spend_retry(now, info.after).unwrap_or(RetryCharge::NONE);
                    held.charge += charge.0;
                    Attempt::Retry(charge)
                };
                budget.on_attempt_start(now, attempt);
            }
        }
        held
    }

    /// Gives back what guards `a..upto` granted (a later one refused). `waiting_at` is the
    /// bulkhead the attempt queued at, if any.
    fn give_back(
        &mut self,
        now: Micros,
        a: usize,
        upto: usize,
        waiting_at: Option<u16>,
        waiter: u64,
        out: &mut impl Effects,
    ) {
        for i in (a..upto).rev() {
            let g = self.spec.members[i];
            match &mut self.guards[g as usize] {
                Guard::Budget(_) | Guard::Throttle(_) | Guard::Shedder { .. } | Guard::AdmissionControl(_) => {}
                // Polly counts a rejection inside the breaker as a failure; resilience4j's
                // breaker here only gets its permit back (docs/scenario.md 8.7).
                Guard::Breaker { .. } | Guard::Polly { .. } => self.breaker_step(
                    now,
                    g,
                    out,
                    |b| b.on_end(now, Ending::Refused),
                    |p| p.on_end(now, Ending::Refused),
                ),
                Guard::Bulkhead(bulkhead) if waiting_at == Some(g) => {
                    bulkhead.cancel_wait(waiter);
                }
                Guard::Bulkhead(bulkhead) => {
                    if let Some(next) = bulkhead.release(now) {
                        out.command(Command::PermitGranted { waiter: next });
                    }
                }
            }
        }
    }

    /// An admitted attempt is over for the guards: how it ended (its result, a cancellation by
    /// its caller, or a refusal after it was admitted), each guard records in its anchor's terms.
    /// `skip` is a bulkhead that already let the attempt go (its wait expired).
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
        end: Ending,
        skip: Option<u16>,
        out: &mut impl Effects,
    ) {
        let (a, b) = self.route(route);
        let seen = end.as_attempt_end();
        let attempt = match info.kind {
            AttemptKind::First => Attempt::First,
            AttemptKind::Retry | AttemptKind::Hedge => Attempt::Retry(RetryCharge(held.charge)),
        };
        for i in a..b {
            let g = self.spec.members[i];
            if skip == Some(g) {
                continue;
            }
            match &mut self.guards[g as usize] {
                Guard::Budget(budget) => budget.on_attempt_end(now, attempt, seen),
                Guard::Throttle(throttle) => {
                    if let Ending::Outcome(e) = end {
                        throttle.on_attempt_end(now, e);
                    }
                }
                Guard::AdmissionControl(control) => {
                    if let Ending::Outcome(e) = end {
                        control.on_attempt_end(now, e);
                    }
                }
                Guard::Shedder { .. } => {}
                Guard::Breaker { .. } | Guard::Polly { .. } => {
                    self.breaker_step(now, g, out, |b| b.on_end(now, end), |p| p.on_end(now, end))
                }
                Guard::Bulkhead(bulkhead) => {
                    if let Some(next) = bulkhead.release(now) {
                        out.command(Command::PermitGranted { waiter: next });
                    }
                }
            }
        }
    }

    /// A waiting attempt gives up (its run ended): it leaves bulkhead `at`'s queue and gives
    /// back what the other guards granted.
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
        if let Guard::Bulkhead(bulkhead) = &mut self.guards[at as usize] {
            bulkhead.cancel_wait(waiter);
        }
        self.on_end(now, route, info, held, Ending::Canceled, Some(at), out);
    }

    /// Performs what is due at `now`: automatic breaker transitions and expired bulkhead waits.
    pub fn on_wake(&mut self, now: Micros, out: &mut impl Effects) {
        for g in 0..self.guards.len() {
            match &mut self.guards[g] {
                Guard::Breaker { breaker, .. } => {
                    if breaker.wake_at().is_some_and(|t| t <= now) {
                        self.breaker_step(now, g as u16, out, |b| b.on_wake(now), |p| p.on_wake(now));
                    }
                }
                Guard::Bulkhead(bulkhead) => {
                    while let Some(waiter) = bulkhead.expire(now) {
                        out.command(Command::PermitExpired { waiter });
                    }
                }
                Guard::Polly { .. }
                | Guard::Budget(_)
                | Guard::Throttle(_)
                | Guard::Shedder { .. }
                | Guard::AdmissionControl(_) => {}
            }
        }
    }

    /// Every breaker's current state, by label index (for time-series windows).
    pub fn breaker_states(&self) -> impl Iterator<Item = (u16, BreakerState)> + '_ {
        self.guards.iter().filter_map(|g| match g {
            Guard::Breaker { breaker, label, .. } => Some((*label, breaker.state())),
            Guard::Polly { breaker, label } => Some((*label, breaker.state())),
            Guard::Bulkhead(_)
            | Guard::Budget(_)
            | Guard::Throttle(_)
            | Guard::Shedder { .. }
            | Guard::AdmissionControl(_) => None,
        })
    }
}

/// An attempt's question to the guards: who it is, its name if it has to wait at a bulkhead,
/// the stream throttles draw from, and the dependencies' load for shedding.
#[derive(Clone, Copy)]
pub struct Ask<'a> {
    pub info: AttemptInfo,
    pub waiter: u64,
    /// The attempt's guard stream (throttles draw from it).
    pub key: StreamKey,
    pub loads: Loads<'a>,
}

fn live(spec: GuardSpec, label: u16) -> Guard {
    match spec {
        GuardSpec::CircuitBreaker(c) => Guard::Breaker { breaker: CircuitBreaker::new(c), label, wake: None },
        GuardSpec::PollyBreaker(o) => Guard::Polly { breaker: PollyBreaker::new(o), label },
        GuardSpec::Bulkhead(c) => Guard::Bulkhead(Bulkhead::new(c)),
        GuardSpec::RetryBudget(c) => {
            Guard::Budget(RetryBudget::new(c).expect("retry budget configurations are checked at compile time"))
        }
        GuardSpec::Throttle(c) => {
            Guard::Throttle(AdaptiveThrottle::new(c).expect("throttle configurations are checked at compile time"))
        }
        GuardSpec::Shedder { shedder, dependency } => Guard::Shedder { shedder, dependency },
        GuardSpec::AdmissionControl(c) => Guard::AdmissionControl(
            AdmissionControl::new(c).expect("admission control configurations are checked at compile time"),
        ),
    }
}
