//! The simulation state and the event loop.

use super::Model;
use super::arena::Arena;
use super::event::Event;
use super::task_slots::{ClientSlot, RemoteTask};
use crate::metrics::{MetricMap, Observation, Recorder, TimeSeries};
use crate::runtime::degradation::{BudgetReading, ModeController, Transition};
use crate::runtime::guard::pipeline::Pipeline;
use crate::runtime::{AttemptTrace, Command, DrawRecorder, NoTrace, PolicyModel, Purpose, RunMachine, Tracer};
use crate::sim::{EventQueue, Micros, StreamKey};
use crate::vocab::{BreakerState, DegradationMode, FailureKind, Priority};
use crate::world::tokens::CallTokens;
use crate::world::{ArrivalProcess, LedgerEntry, Station};
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

/// Purpose tags: the first component of every keyed stream path below the root.
pub(super) const TAG_RUN: u64 = 1;
pub(super) const TAG_RESUBMIT: u64 = 3;
pub(super) const TAG_MODE: u64 = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum JobPhase {
    Free,
    Queued,
    InService,
    /// A remote agent holding its server while it makes its own calls.
    Calling,
    /// Served, but the reply never comes; waits for the caller's timeout.
    AwaitReply,
    /// Refused at admission; leaves at once.
    Rejected,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Caller {
    Step {
        step: u8,
        serial: u32,
    },
    Remote {
        job: u32,
        generation: u32,
    },
    /// A protocol request of a task client (create, get, find, subscribe, cancel) for a step.
    Client {
        client: u32,
        generation: u32,
        step: u8,
    },
    /// A remote task's work at its runner.
    Task {
        task: u32,
        generation: u32,
    },
    /// A hidden attempt of an SDK client's call for a step (engine::sdk).
    Sdk {
        call: u32,
        generation: u32,
        step: u8,
        /// A write carrying runtime attempt `serial`'s own key (`idempotency_key =
        /// "per_attempt"` at a dependency that honours keys): the SDK's resends share it.
        attempt_key: bool,
        serial: u32,
    },
    /// A cache's one call for a missed key, for the step attempts that wait (engine::cache).
    Cache {
        fill: u32,
        generation: u32,
        step: u8,
    },
}

/// What the engine knows about a workflow's runs as plain calls (engine/plain_call.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PlainCall {
    /// Not plain: every run goes through the machine.
    Never,
    /// May be plain: the machine has not been asked yet (at the workflow's first run).
    Unasked,
    /// Plain: every run sends the attempts of `Simulation::plain_chains[workflow]`, one step
    /// after the other, each when the one before it succeeded; the first one's here, and how
    /// many steps there are.
    Chain { serial: u32, dependency: u16, timeout_us: Option<Micros>, steps: u16 },
}

/// The attempt every run of a plain workflow (engine/plain_call.rs) sends for one step:
/// attempt `serial` of step `step`, at `dependency`, with the caller's timeout `timeout`.
#[derive(Debug, Clone, Copy)]
pub(super) struct PlainSend {
    pub step: u8,
    pub serial: u32,
    pub dependency: u16,
    pub timeout: PlainTimeout,
}

/// A plain chain's attempt timeout.
#[derive(Debug, Clone, Copy)]
pub(super) enum PlainTimeout {
    /// The same for every run: the first step's (it starts with the run), or any step's when
    /// no deadline propagates.
    Fixed(Option<Micros>),
    /// A later step's under deadline propagation: `timeout_ms` clipped to the deadline left
    /// less `deadline_reserve_ms` when the step starts (`runtime::deadline::attempt_timeout`,
    /// the rule the machine applies); when too little is left the run goes back to the machine.
    Left { cap_us: Option<Micros>, reserve_us: Micros },
}

/// A streaming caller's first-token deadline for one attempt.
#[derive(Debug, Clone, Copy)]
pub(super) struct FirstTokenWatch {
    pub generation: u32,
    /// When the caller gives up unless the first token came; Micros::MAX once checked.
    pub check_at_us: Micros,
    /// When the first token comes after service starts.
    pub first_token_us: Micros,
    /// The total timeout's time, still to be armed once the first token came.
    pub total_at_us: Option<Micros>,
}

/// One attempt at one station.
#[derive(Debug, Clone, Copy)]
pub(super) struct Job {
    pub generation: u32,
    pub phase: JobPhase,
    pub purpose: Purpose,
    pub priority: Priority,
    pub station: u16,
    pub caller: Caller,
    /// The caller still waits for this attempt's result.
    pub attached: bool,
    /// Counted in its run's outstanding attempts (a remote task's work outlives its run).
    pub owned: bool,
    pub measured: bool,
    pub run: u32,
    pub run_gen: u32,
    pub key: StreamKey,
    pub service_us: Micros,
    pub arrived_us: Micros,
    pub started_us: Micros,
    pub error: Option<FailureKind>,
    pub retry_after_us: Option<Micros>,
    pub no_reply: bool,
    /// A token-shaped call's counts (zero elsewhere).
    pub tokens: CallTokens,
    /// Its answer, if it comes back as a success, is not one (world/bad_result.rs).
    pub bad: Option<crate::world::bad_result::BadResult>,
    // A remote agent's progress through its calls.
    pub call: u16,
    pub repeat: u32,
    pub sub_attempt: u32,
    pub child: Option<(u32, u32)>,
}

impl Job {
    pub fn vacant() -> Job {
        Job {
            generation: 0,
            phase: JobPhase::Free,
            purpose: Purpose::Call,
            priority: Priority::Critical,
            station: 0,
            caller: Caller::Step { step: 0, serial: 0 },
            attached: false,
            owned: true,
            measured: false,
            run: 0,
            run_gen: 0,
            key: StreamKey::root(0),
            service_us: 0,
            arrived_us: 0,
            started_us: 0,
            error: None,
            retry_after_us: None,
            no_reply: false,
            tokens: CallTokens { input: 0, output: 0, truncated: false },
            bad: None,
            call: 0,
            repeat: 0,
            sub_attempt: 0,
            child: None,
        }
    }
}

pub(super) struct RunSlot {
    pub generation: u32,
    pub arrival: u32,
    pub resubmission: u8,
    /// The closed population's user waiting for this run, if any.
    pub user: Option<super::user_slots::UserLink>,
    pub key: StreamKey,
    pub measured: bool,
    /// Attempts of this run (its own and its remote agents' calls) still at a station: the
    /// slot is kept until they leave, so late effects are counted.
    pub outstanding: u32,
    pub finalized: bool,
    pub duplicate: bool,
    /// Driven as a plain chain of this many steps (engine/plain_call.rs), or 0: its machine
    /// has not started; the engine sends each step's attempt when the one before succeeded,
    /// and ends the run itself when the last one does.
    pub plain_steps: u16,
    /// A plain chain's answers so far, one per step, when each came: what the machine is
    /// given again if the run is handed back to it.
    pub plain_answered_us: Vec<Micros>,
    /// Per step: the effects its writes committed.
    pub ledgers: Vec<LedgerEntry>,
    pub machine: RunMachine,
}

impl RunSlot {
    pub fn vacant() -> RunSlot {
        RunSlot {
            generation: 0,
            arrival: 0,
            resubmission: 0,
            user: None,
            key: StreamKey::root(0),
            measured: false,
            outstanding: 0,
            finalized: false,
            duplicate: false,
            plain_steps: 0,
            plain_answered_us: Vec::new(),
            ledgers: Vec::new(),
            machine: RunMachine::vacant(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum SimError {
    TooManyRuns {
        limit: u32,
        at_s: f64,
    },
    DrainLimit {
        live_runs: usize,
        limit_s: f64,
    },
    /// The caller's stop flag was set (the Python package's Ctrl-C): the replication is
    /// abandoned at a window's end, its figures never reported.
    Stopped,
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::TooManyRuns { limit, at_s } => write!(
                f,
                "more than simulation.max_in_flight_runs = {limit} root runs in flight at t = {at_s:.1} s; the system is overloaded beyond the bound (raise the limit or lower the load)"
            ),
            SimError::DrainLimit { live_runs, limit_s } => write!(
                f,
                "{live_runs} root runs were still in flight {limit_s} s after the arrival window closed (simulation.drain_limit_s)"
            ),
            SimError::Stopped => write!(f, "stopped before the simulation ended"),
        }
    }
}

impl std::error::Error for SimError {}

/// What one replication produced.
pub struct Replication {
    pub metrics: MetricMap,
    pub timeseries: TimeSeries,
    pub events: u64,
    /// Root runs the engine ended on its plain-call fast path (engine/plain_call.rs): a count
    /// of the engine's own work, not a figure of the system simulated.
    pub plain_call_runs: u64,
}

pub(super) struct Simulation<'m, T: Tracer = NoTrace> {
    pub model: &'m Model,
    pub policy: &'m PolicyModel,
    /// Per workflow, the start of its runs' key paths: `root.with(TAG_RUN).with(stream_id)`.
    pub run_keys: Vec<StreamKey>,
    pub queue: EventQueue<Event, T>,
    pub stations: Vec<Station>,
    pub jobs: Arena<Job>,
    pub runs: Arena<RunSlot>,
    /// The guards shared by every run of this replication.
    pub pipeline: Pipeline<'m>,
    /// Reused for every input a machine gets: the commands to carry out after it.
    pub commands: Vec<Command>,
    /// Bulkhead permits handed over or expired, to deliver after the current input:
    /// (waiter token, granted).
    pub permits: VecDeque<(u64, bool)>,
    /// cost_units per dependency, as the run machines read them.
    pub costs: Vec<f64>,
    /// Each dependency's approval desk (docs/scenario.md section 4.7): the humans every run shares.
    pub approvals: Vec<crate::world::approval::ApprovalDesk>,
    pub arrivals: Vec<ArrivalProcess>,
    /// Per workflow, its closed population's users (None for open arrivals).
    pub populations: Vec<Option<super::user_slots::Population>>,
    pub recorder: Recorder,
    pub live_runs: usize,
    /// Root runs started so far: the number of the latest (counted only when traced).
    pub runs_started: u64,
    pub error: Option<SimError>,
    /// duration + drain limit: nothing is simulated past it.
    pub stop_at: Micros,
    /// Follows chosen root runs step by step ([`NoTrace`] compiles every hook away).
    pub tracer: T,
    /// The workflows' degradation modes, when the policy declares them.
    pub modes: Option<ModeController<'m>>,
    /// Reused at every mode evaluation.
    pub mode_scratch: ModeScratch,
    /// Attempts whose caller waits for a first token, by job id (empty unless a policy sets
    /// first_token_timeout_ms): their timer fires first at the first-token deadline.
    pub first_token_watch: Vec<FirstTokenWatch>,
    /// Task clients (one per step attempt at a task dependency) and remote tasks.
    pub clients: Arena<ClientSlot>,
    pub tasks: Arena<RemoteTask>,
    /// SDK calls: runtime attempts at dependencies the policy calls through an SDK client.
    pub sdk_calls: Arena<super::sdk_slot::SdkSlot>,
    /// Each dependency's SDK client's retry quota, shared by all its calls (None: no quota).
    pub sdk_quotas: Vec<Option<crate::runtime::sdk_quota::RetryQuota>>,
    /// Each dependency's SDK client's rate limiter (botocore's adaptive mode), shared by all
    /// its calls (None: the client sends at once).
    pub sdk_rate_limiters: Vec<Option<crate::runtime::sdk_rate_limiter::ClientRateLimiter>>,
    /// Delegation hops' chains and runs' figures (empty unless the world delegates).
    pub delegation: super::delegation_slot::Delegation,
    /// The caches the policy uses (None: it uses none, and nothing of them is allocated).
    pub caches: Option<Box<super::cache_slot::CacheState>>,
    /// The caller's stop flag, read once a window (never per event).
    pub stop: Option<&'m AtomicBool>,
    /// Per workflow, whether its runs are plain chains (engine/plain_call.rs).
    pub plain_calls: Vec<PlainCall>,
    /// Per workflow whose runs are plain chains, the attempt each step sends.
    pub plain_chains: Vec<Vec<PlainSend>>,
    /// Runs ended on that path so far.
    pub plain_call_runs: u64,
}

/// Buffers a mode evaluation fills, kept between evaluations.
#[derive(Default)]
pub(super) struct ModeScratch {
    breakers: Vec<(u16, BreakerState)>,
    depths: Vec<u32>,
    transitions: Vec<(usize, Transition)>,
    readings: Vec<(usize, usize, BudgetReading)>,
    burns: Vec<f64>,
}

/// Runs one replication of `model` under policy number `policy` with `seed`.
pub fn simulate(model: &Model, policy: usize, seed: u64) -> Result<Replication, SimError> {
    simulate_following(model, policy, seed, NoTrace).map(|(r, _)| r)
}

/// As [`simulate`], also returning every attempt with its intrinsic draws.
pub fn simulate_traced(model: &Model, policy: usize, seed: u64) -> Result<(Replication, Vec<AttemptTrace>), SimError> {
    simulate_following(model, policy, seed, DrawRecorder::default()).map(|(r, d)| (r, d.attempts))
}

/// As [`simulate`], abandoned with [`SimError::Stopped`] at the first window's end after `stop`
/// is set: a long replication stops within one window of simulated time, and a replication that
/// runs to its end gives the same figures as [`simulate`] (the flag is read, never drawn from).
pub fn simulate_until_stopped(
    model: &Model,
    policy: usize,
    seed: u64,
    stop: &AtomicBool,
) -> Result<Replication, SimError> {
    simulate_with(model, policy, seed, NoTrace, Some(stop), FastPaths::On).map(|(r, _)| r)
}

/// As [`simulate`], with every root run driven by its run machine: the engine's fast paths
/// (engine/plain_call.rs) off. The figures are the same; tests compare the two.
#[doc(hidden)]
pub fn simulate_without_fast_paths(model: &Model, policy: usize, seed: u64) -> Result<Replication, SimError> {
    simulate_with(model, policy, seed, NoTrace, None, FastPaths::Off).map(|(r, _)| r)
}

/// Whether the engine may take its fast paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FastPaths {
    On,
    Off,
}

/// As [`simulate`], with `tracer` following root runs as they go; returns it with what it kept.
pub fn simulate_following<T: Tracer>(
    model: &Model,
    policy: usize,
    seed: u64,
    tracer: T,
) -> Result<(Replication, T), SimError> {
    simulate_with(model, policy, seed, tracer, None, FastPaths::On)
}

fn simulate_with<T: Tracer>(
    model: &Model,
    policy: usize,
    seed: u64,
    tracer: T,
    stop: Option<&AtomicBool>,
    fast_paths: FastPaths,
) -> Result<(Replication, T), SimError> {
    let world = &model.world;
    let labels = model.labels(policy);
    let mut sim = Simulation {
        model,
        policy: &model.policies[policy],
        run_keys: world.workloads.iter().map(|w| StreamKey::root(seed).with(TAG_RUN).with(w.stream_id)).collect(),
        queue: EventQueue::new(),
        stations: world.dependencies.iter().map(Station::new).collect(),
        jobs: Arena::new(),
        runs: Arena::new(),
        pipeline: Pipeline::new(&model.policies[policy].pipeline),
        commands: Vec::with_capacity(64),
        permits: VecDeque::new(),
        costs: world.dependencies.iter().map(|d| d.cost_units).collect(),
        approvals: world
            .dependencies
            .iter()
            .map(|d| crate::world::approval::ApprovalDesk::new(d.approval.as_ref()))
            .collect(),
        arrivals: world.workloads.iter().map(|w| ArrivalProcess::new(seed, w)).collect(),
        populations: world.workloads.iter().map(|w| super::user_slots::Population::new(seed, w)).collect(),
        recorder: Recorder::new(
            &labels,
            (world.warmup_us, world.duration_us),
            world.window_us,
            crate::metrics::fault_span(world.faults.iter().map(|f| (f.start_us, f.end_us))),
        ),
        live_runs: 0,
        runs_started: 0,
        error: None,
        stop_at: world.duration_us.saturating_add(world.drain_limit_us),
        tracer,
        modes: model.policies[policy].degradation.as_ref().map(|d| ModeController::new(d, model.workflows.len())),
        mode_scratch: ModeScratch::default(),
        first_token_watch: Vec::new(),
        clients: Arena::new(),
        tasks: Arena::new(),
        sdk_calls: Arena::new(),
        sdk_quotas: model.policies[policy]
            .sdk_clients
            .iter()
            .map(|c| c.as_ref().and_then(|c| c.retry_quota.as_ref()).map(crate::runtime::sdk_quota::RetryQuota::new))
            .collect(),
        // Made when the run starts, at time 0, as botocore makes its limiter with the client.
        sdk_rate_limiters: model.policies[policy]
            .sdk_clients
            .iter()
            .map(|c| {
                c.as_ref()
                    .filter(|c| c.client_rate_limiter)
                    .map(|_| crate::runtime::sdk_rate_limiter::ClientRateLimiter::new(0.0))
            })
            .collect(),
        delegation: super::delegation_slot::Delegation::new(world.delegates()),
        caches: super::cache_slot::cache_state(model, &model.policies[policy]),
        stop,
        plain_calls: Vec::new(),
        plain_chains: vec![Vec::new(); model.workflows.len()],
        plain_call_runs: 0,
    };
    sim.plain_calls = (0..model.workflows.len())
        .map(|w| match fast_paths {
            FastPaths::On if sim.may_be_plain(w) => PlainCall::Unasked,
            FastPaths::On | FastPaths::Off => PlainCall::Never,
        })
        .collect();
    sim.schedule_start();
    let events = sim.run_loop()?;
    let end = sim.queue.now().max(world.duration_us);
    sim.tasks_at_end(end);
    for d in 0..sim.stations.len() {
        sim.observe_station(d, end);
    }
    sim.recorder.finish(end);
    let metrics = sim.recorder.to_map(&labels);
    let plain_call_runs = sim.plain_call_runs;
    Ok((Replication { metrics, timeseries: sim.recorder.timeseries, events, plain_call_runs }, sim.tracer))
}

impl<T: Tracer> Simulation<'_, T> {
    /// The one way the engine reports what happened (see [`Observation`]).
    #[inline(always)]
    pub(super) fn observe(&mut self, now: Micros, measured: bool, o: Observation) {
        self.recorder.observe(now, measured, o);
    }

    fn schedule_start(&mut self) {
        let world = &self.model.world;
        for w in 0..world.workloads.len() {
            if let Some(t) = self.arrivals[w].next(&world.workloads[w])
                && t < world.duration_us
            {
                self.queue.schedule(t, Event::Arrival { workflow: w as u16 });
            }
        }
        for w in 0..world.workloads.len() {
            if let Some(population) = &self.populations[w]
                && let Some(t) = population.next_step_at(&world.workloads[w])
                && t < world.duration_us
            {
                self.queue.schedule(t, Event::PopulationStep { workflow: w as u16 });
            }
        }
        for fault in &world.faults {
            if matches!(fault.effect, crate::world::FaultEffect::Capacity { .. }) {
                let dependency = fault.target as u16;
                self.queue.schedule(fault.start_us, Event::CapacityChange { dependency });
                self.queue.schedule(fault.end_us, Event::CapacityChange { dependency });
            }
            // An outage closes every open connection: task subscriptions break at its start.
            if matches!(fault.effect, crate::world::FaultEffect::Down { .. })
                && world.dependencies[fault.target].task.is_some()
            {
                self.queue.schedule(fault.start_us, Event::StreamsBroken { dependency: fault.target as u16 });
            }
        }
        self.queue.schedule(world.window_us, Event::WindowEnd);
        if let Some(modes) = &self.modes {
            self.queue.schedule(modes.interval_us(), Event::ModeTick);
        }
    }

    fn run_loop(&mut self) -> Result<u64, SimError> {
        let world = &self.model.world;
        let stop_at = self.stop_at;
        let mut events = 0u64;
        while let Some((now, event)) = self.queue.pop() {
            if now > stop_at {
                if self.live_runs > 0 {
                    return Err(SimError::DrainLimit {
                        live_runs: self.live_runs,
                        limit_s: world.drain_limit_us as f64 / 1e6,
                    });
                }
                break;
            }
            events += 1;
            self.dispatch(now, event);
            if let Some(e) = self.error.take() {
                return Err(e);
            }
        }
        Ok(events)
    }

    #[inline(always)]
    fn dispatch(&mut self, now: Micros, event: Event) {
        match event {
            Event::Arrival { workflow } => {
                let w = workflow as usize;
                let workload = &self.model.world.workloads[w];
                let arrival = self.arrivals[w].arrivals - 1;
                if let Some(t) = self.arrivals[w].next(workload)
                    && t < self.model.world.duration_us
                {
                    self.queue.schedule(t, Event::Arrival { workflow });
                }
                self.start_run(now, w, arrival, 0, None);
            }
            Event::Resubmit { workflow, arrival, resubmission } => {
                self.start_run(now, workflow as usize, arrival, resubmission, None)
            }
            Event::PopulationStep { .. } | Event::UserWake { .. } | Event::UserAbandon { .. } => {
                self.on_user_event(now, event)
            }
            Event::ServiceEnd { job, generation } => self.on_service_end(now, job, generation),
            Event::Timeout { job, generation } => self.on_timeout(now, job, generation),
            Event::StepWake { run, run_gen, step, wake } => self.on_step_wake(now, run, run_gen, step, wake),
            Event::GuardWake => self.on_guard_wake(now),
            Event::QueueExpiry { job, generation } => self.on_queue_expiry(now, job, generation),
            Event::RemoteWake { job, generation } => self.on_remote_wake(now, job, generation),
            Event::CapacityChange { dependency } => self.on_capacity_change(now, dependency as usize),
            Event::ModeTick => self.on_mode_tick(now),
            Event::ClientWake { .. }
            | Event::ClientTimeout { .. }
            | Event::TaskWake { .. }
            | Event::StreamsBroken { .. }
            | Event::PushDelivered { .. } => self.on_task_event(now, event),
            Event::SdkWake { call, generation } => self.on_sdk_wake(now, call, generation),
            Event::SdkTimeout { call, generation } => self.on_sdk_timeout(now, call, generation),
            Event::CacheAnswer { call, generation } => self.on_cache_answer(now, call, generation),
            Event::CacheTimeout { call, generation } => self.on_cache_timeout(now, call, generation),
            Event::WindowEnd => {
                for d in 0..self.stations.len() {
                    let depth = self.stations[d].queued;
                    self.recorder.observe(now, true, Observation::QueueDepth { dependency: d as u16, depth });
                }
                // A breaker that stays open through a window marks it too, not only the one it opened in.
                for (breaker, state) in self.pipeline.breaker_states() {
                    self.recorder.observe(now, true, Observation::BreakerHeld { breaker, state });
                }
                // Once per window, never per event: the hot loop does no more work.
                for (index, level) in self.pipeline.levels(now).enumerate() {
                    self.recorder.sample_level(now, index, level);
                }
                // Open load has no user columns (and keeps its series byte for byte).
                if self.populations.iter().any(Option::is_some) {
                    self.sample_users(now);
                }
                self.recorder.carry_modes(now);
                if self.stop.is_some_and(|stop| stop.load(Ordering::Relaxed)) {
                    self.error = Some(SimError::Stopped);
                    return;
                }
                if now < self.model.world.duration_us || self.live_runs > 0 {
                    // What holds as the next window opens is part of that window too: a mode
                    // or a breaker state left in its first seconds still marks it.
                    self.recorder.open_window(now);
                    self.queue.schedule(now + self.model.world.window_us, Event::WindowEnd);
                }
            }
        }
    }
}

impl<T: Tracer> Simulation<'_, T> {
    /// Long-running tasks' own events, out of the hot dispatch.
    #[cold]
    #[inline(never)]
    fn on_task_event(&mut self, now: Micros, event: Event) {
        match event {
            Event::ClientWake { client, generation } => self.on_client_wake(now, client, generation),
            Event::ClientTimeout { client, generation } => self.on_client_timeout(now, client, generation),
            Event::TaskWake { task, generation, cause } => self.on_task_wake(now, task, generation, cause),
            Event::StreamsBroken { dependency } => self.on_streams_broken(now, dependency as usize),
            Event::PushDelivered { client, generation, seq, state } => {
                self.on_push_delivered(now, client, generation, seq, state)
            }
            Event::Arrival { .. }
            | Event::Resubmit { .. }
            | Event::PopulationStep { .. }
            | Event::UserWake { .. }
            | Event::UserAbandon { .. }
            | Event::ServiceEnd { .. }
            | Event::Timeout { .. }
            | Event::StepWake { .. }
            | Event::QueueExpiry { .. }
            | Event::GuardWake
            | Event::RemoteWake { .. }
            | Event::CapacityChange { .. }
            | Event::SdkWake { .. }
            | Event::SdkTimeout { .. }
            | Event::CacheAnswer { .. }
            | Event::CacheTimeout { .. }
            | Event::WindowEnd
            | Event::ModeTick => debug_assert!(false, "not a task event: {event:?}"),
        }
    }

    /// The workflows' mode machines read breakers, queues, refusals and their error budgets;
    /// each change of mode is an observation.
    fn on_mode_tick(&mut self, now: Micros) {
        let Some(modes) = &mut self.modes else { return };
        let scratch = &mut self.mode_scratch;
        scratch.breakers.clear();
        scratch.breakers.extend(self.pipeline.breaker_states());
        scratch.depths.clear();
        scratch.depths.extend(self.stations.iter().map(|s| s.queued));
        scratch.transitions.clear();
        scratch.readings.clear();
        scratch.burns.clear();
        modes.evaluate(
            now,
            &scratch.breakers,
            &scratch.depths,
            &self.recorder.refused_all,
            &mut scratch.transitions,
            &mut scratch.readings,
            &mut scratch.burns,
        );
        // Every budget's reading goes to the time series (workflow by workflow, its slots in
        // order: the order of its columns); the workflows' own budgets make the metrics too.
        let per_reading = scratch.burns.len().checked_div(scratch.readings.len()).unwrap_or(0);
        for (group, &(_, _, reading)) in scratch.readings.iter().enumerate() {
            let burns = &scratch.burns[group * per_reading..(group + 1) * per_reading];
            self.recorder.budget_series(now, group, reading.state, reading.spent, burns);
        }
        for &(workflow, slot, reading) in &scratch.readings {
            if slot != 0 {
                continue;
            }
            let o = Observation::BudgetRead {
                workflow: workflow as u16,
                state: reading.state,
                ticket: reading.ticket,
                spent: reading.spent as f32,
                long_burn: reading.long_burn as f32,
                short_burn: reading.short_burn as f32,
            };
            self.recorder.observe(now, true, o);
        }
        for &(workflow, t) in &scratch.transitions {
            let (from, to, flap, failed_canary) = (t.from, t.to, t.flap, t.failed_canary);
            let o = Observation::ModeTransition { workflow: workflow as u16, from, to, flap, failed_canary };
            self.recorder.observe(now, true, o);
            if T::ON {
                let acting = if t.to == DegradationMode::Recovery { t.from } else { t.to };
                self.tracer.mode_changed(now, workflow as u16, t.to, acting);
            }
        }
        if now < self.model.world.duration_us || self.live_runs > 0 {
            self.queue.schedule(now + modes.interval_us(), Event::ModeTick);
        }
        let cancels = self.policy.modes[DegradationMode::Paused.index()].cancel_in_flight;
        if cancels {
            let entered: Vec<usize> = self
                .mode_scratch
                .transitions
                .iter()
                .filter(|(_, t)| t.to == DegradationMode::Paused)
                .map(|&(w, _)| w)
                .collect();
            for w in entered {
                self.cancel_runs_in_flight(now, w);
            }
        }
    }

    /// Ends every run of `workflow` still in flight, cancelled (in slot order: deterministic).
    #[cold]
    fn cancel_runs_in_flight(&mut self, now: Micros, workflow: usize) {
        for r in 0..self.runs.slots.len() as u32 {
            let m = &self.runs[r].machine;
            if !m.ended && m.workflow as usize == workflow {
                self.drive_one(now, r, |m, cx, out| m.cancel_by_mode(cx, out));
            }
        }
    }
}
