//! What the pipeline and every guard say to each other: the [`Guard`] trait, the attempt's
//! question and how it ended. The mechanisms import this and nothing of each other.

use crate::metrics::Observation;
use crate::runtime::command::Effects;
use crate::sim::{Micros, StreamKey};
use crate::vocab::{AttemptKind, BreakerState, FailureKind, Priority, Refusal};
use crate::world::{DependencyModel, Station};

/// What a guard learns when an attempt it admitted ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptEnd {
    /// None for a success.
    pub failure: Option<FailureKind>,
    /// From the moment the guard admitted the attempt to its end.
    pub duration_us: Micros,
}

impl AttemptEnd {
    pub fn success(duration_us: Micros) -> Self {
        AttemptEnd { failure: None, duration_us }
    }

    pub fn failed(kind: FailureKind, duration_us: Micros) -> Self {
        AttemptEnd { failure: Some(kind), duration_us }
    }
}

/// How an admitted attempt's passage through the guards ended, as each guard hears it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The dependency answered, or the caller's timeout fired.
    Outcome(AttemptEnd),
    /// The caller stopped waiting for it: the loser of a hedge, a branch of a run that ended, a
    /// bulkhead permit granted after the run's time ran out.
    Canceled,
    /// It never ran: a guard later in its route refused it, or its bulkhead wait expired.
    Refused,
}

impl Ending {
    /// What guards that only know outcomes (retry budgets) record: anything but an outcome is a
    /// cancellation that took no time.
    pub fn as_attempt_end(self) -> AttemptEnd {
        match self {
            Ending::Outcome(end) => end,
            Ending::Canceled | Ending::Refused => AttemptEnd::failed(FailureKind::Canceled, 0),
        }
    }
}

impl From<AttemptEnd> for Ending {
    fn from(end: AttemptEnd) -> Self {
        Ending::Outcome(end)
    }
}

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

/// An attempt's question to the guards: who it is, its name if it has to wait at a bulkhead,
/// the stream probabilistic guards draw from, and the dependencies' load for shedding.
#[derive(Clone, Copy)]
pub struct Ask<'a> {
    pub info: AttemptInfo,
    pub waiter: u64,
    /// The attempt's guard stream (throttles draw from it).
    pub key: StreamKey,
    pub loads: Loads<'a>,
}

/// Where in the pipeline a guard is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seat {
    /// The guard's index in its policy: names its random stream below the attempt's.
    pub guard: u16,
    /// The attempt already waits at an earlier bulkhead of its route (one queue at a time).
    pub waiting_elsewhere: bool,
}

impl Seat {
    /// One uniform draw for this guard and attempt; each guard draws only when asked.
    pub fn draw(self, ask: &Ask) -> f64 {
        ask.key.with(u64::from(self.guard)).stream().unit()
    }
}

/// How one hidden attempt of an SDK call ended (the requests a router or SDK sends inside one
/// runtime attempt), for the guards that judge each request ([`Guard::sdk_attempt_end`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HiddenEnd {
    Answered,
    Failed(FailureKind),
    /// The SDK's own per-attempt timeout.
    TimedOut,
}

/// A guard's answer to an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Refuse(Refusal),
    /// No permit now: the attempt waits in this guard's queue until a permit is handed over (a
    /// `PermitGranted` command) or `until` passes (a `PermitExpired` command).
    Wait {
        until: Micros,
    },
}

/// What an admitted attempt brings back to a guard when it is over for it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Parting {
    pub info: AttemptInfo,
    /// What the retry budgets of the route charged the attempt, in all.
    pub charge: u32,
    pub ending: Ending,
    pub waiter: u64,
    /// The attempt is still queued at this guard (it never got the permit).
    pub waiting_here: bool,
}

/// What the pipeline asks of every mechanism. Implementations are plain state machines; the
/// pipeline calls them in route order and dispatches statically through [`LiveGuard`].
pub trait Guard {
    /// Whether the attempt may pass now. A guard that passes may still see the attempt refused
    /// by a later one: then `undo` follows before anything else reaches it.
    fn admit(&mut self, now: Micros, ask: &Ask, seat: Seat, out: &mut impl Effects) -> Verdict;

    /// A later guard refused the attempt this one had just passed (or queued). Guards that
    /// grant nothing before `start` (budgets, throttles, shedders) keep this default.
    fn undo(&mut self, _now: Micros, _parting: Parting, _out: &mut impl Effects) {}

    /// Every guard of the route passed: returns what the attempt owes this guard (a retry
    /// budget's charge; 0 for the others).
    fn start(&mut self, _now: Micros, _info: &AttemptInfo) -> u32 {
        0
    }

    /// The attempt is over for this guard.
    fn end(&mut self, now: Micros, parting: Parting, out: &mut impl Effects);

    /// The waiting attempt `waiter` heard that this guard handed it a permit (a
    /// `PermitGranted` command) and holds it from now on. Until then a guard that hands permits
    /// over must treat the attempt's cancellation as giving the permit back.
    fn claim(&mut self, _waiter: u64) {}

    /// One hidden attempt of the SDK call admitted as `waiter` ended (every one of them, the
    /// last included, before `end` hears the call's answer). Returns whether the SDK may send
    /// another: false when this guard would refuse it now (a LiteLLM router does not retry a
    /// deployment it just cooled). Only guards that judge each request (`litellm_cooldown`)
    /// listen; the others see the SDK call as one attempt.
    fn sdk_attempt_end(&mut self, _now: Micros, _waiter: u64, _end: HiddenEnd, _out: &mut impl Effects) -> bool {
        true
    }

    /// The SDK call this guard admitted slept and would now send another request: whether it may
    /// (a LiteLLM router picks the deployment again for each retry, and finds none while it is
    /// cooled). Nothing changes.
    fn sdk_may_send(&mut self, _now: Micros) -> bool {
        true
    }

    /// Performs what is due at `now` (timed transitions, expired waits).
    fn on_wake(&mut self, _now: Micros, _out: &mut impl Effects) {}

    /// A breaker's label index and state, for the time series.
    fn breaker_state(&self) -> Option<(u16, BreakerState)> {
        None
    }

    /// The level the time series samples at each window's end, for the guards whose spec says
    /// they have one (`GuardSpec::level_column`): a bulkhead's permits in use, a retry budget's
    /// balance. Reading it changes nothing the guard will decide.
    fn level(&mut self, _now: Micros) -> Option<u64> {
        None
    }
}

/// A compiled configuration that can build its live guard (one per simulation).
pub trait GuardConfig {
    type Live: Guard;
    fn build(&self) -> Self::Live;
}

/// Tells the metrics and the wake-up schedule what a breaker operation changed.
pub(super) fn report_breaker(label: u16, before: BreakerState, after: BreakerState, out: &mut impl Effects) {
    if before != after {
        out.observe_shared(Observation::BreakerTransition { breaker: label, from: before, to: after });
    }
}
