//! The compiled world: dependencies, faults and workloads with names resolved to indices and
//! every parameter checked. Compilation is the only place scenario values are validated, so
//! the simulation itself never meets a bad value.

use super::check::Checker;
use super::dist::Distribution;
use super::failure::ErrorTable;
pub use super::fault_kind::FaultKind;
use super::queue_policy::{QueuePolicy, compile_queue_policy};
use super::task::{CancelBehaviour, IgnoredCancelAnswer, OnTtl, RepeatedMessage, TaskModel, TaskProtocol};
use super::tokens::{QuotaLimits, TokenPrices, TokenShape};
use crate::scenario::types::{TokenCount, TokensSpec};
use crate::scenario::{
    Arrivals, Dependency, Fault, FieldPath, RateLimit, Scenario, ScenarioError, Source, Stage, TaskSpec, Users,
    Workflow, quote, unknown_name,
};
use crate::sim::{Micros, ms_to_us, s_to_us, stable_name_id};
use crate::vocab::DependencyKind;
use std::collections::BTreeMap;

/// Dependency names to their indices: resolving a reference is a lookup, not a scan, so a
/// scenario at MAX_DEPENDENCIES with as many calls and faults still compiles in moments.
type NameIndex<'a> = BTreeMap<&'a str, usize>;

/// Limits that keep every run bounded; exceeding one is an input error.
pub const MAX_REPLICATIONS: u32 = 10_000;
/// Upper bound on simulations in one command: a typo in a grid should not run for a week.
/// A scenario's own policies x replications are held to it when it is compiled.
pub const MAX_SIMULATIONS: usize = 1_000_000;
pub const MAX_SERVERS: u32 = 1_000_000;
pub const MAX_QUEUE_CAPACITY: u32 = 10_000_000;
/// `[dependency.tokens] max_output_tokens`: above the largest output any provider offers.
pub const MAX_OUTPUT_TOKENS: u32 = 10_000_000;
pub const MAX_REMOTE_CALL_COUNT: u32 = 100;
pub const MAX_ATTEMPTS_LIMIT: u32 = 20;
pub const MAX_RESUBMISSIONS: u32 = 10;
pub const MAX_IN_FLIGHT_RUNS_LIMIT: u32 = 10_000_000;
pub const MAX_WINDOWS: f64 = 1_000_000.0;
/// Cells of the time series a command holds at once: windows x columns (summed over policies)
/// x replications, 8 bytes each (800 MB). Checked when the model is compiled, before any
/// simulation allocates its rows.
pub const MAX_TIMESERIES_CELLS: u128 = 100_000_000;
/// Indices of these are u16 in the engine's small events.
pub const MAX_DEPENDENCIES: usize = 10_000;
pub const MAX_WORKFLOWS: usize = 1_000;
pub const MAX_FAULTS: usize = 10_000;
/// Worst-case attempts one attempt at a remote agent can cause below it (count x max_attempts
/// multiplied along every chain of calls).
pub const MAX_REMOTE_FAN_OUT: f64 = 100_000.0;
pub const MAX_SIMULATED_S: f64 = 315_360_000.0;
/// Expected arrivals in one replication: past this a run would take hours, so it is an error.
pub const MAX_EXPECTED_ARRIVALS: f64 = 1e9;
/// A fault's slowdown (`latency` and `slow_stream` factors): past a thousandfold the attempt is
/// an outage (`timeout`, `down`), and its work would outlast any drain limit.
pub const MAX_FAULT_FACTOR: f64 = 1_000.0;
/// A fault's added time (`latency_ms`, `jitter_ms`): a day.
pub const MAX_FAULT_DELAY_MS: f64 = 86_400_000.0;
/// One attempt's (or one check's) `cost_units`: sums over a billion attempts stay finite.
pub const MAX_COST_UNITS: f64 = 1e9;

#[derive(Debug, Clone)]
pub struct RateLimitModel {
    pub per_s: f64,
    pub burst: f64,
    pub retry_after_us: Micros,
}

#[derive(Debug, Clone)]
pub struct RemoteCallModel {
    pub dependency: usize,
    pub count: u32,
    pub max_attempts: u32,
    pub timeout_us: Micros,
    pub backoff_us: Micros,
    /// An A2A delegation hop: carries the root run's delegation context (runtime/delegation.rs).
    pub delegate: bool,
}

#[derive(Debug, Clone)]
pub struct DependencyModel {
    pub name: String,
    pub kind: DependencyKind,
    pub stream_id: u64,
    pub servers: u32,
    pub queue_capacity: u32,
    pub service: Distribution,
    pub errors: ErrorTable,
    pub hang_probability: f64,
    pub rate_limit: Option<RateLimitModel>,
    pub cost_units: f64,
    pub honors_cancel: bool,
    pub queue: QueuePolicy,
    pub lookup_service: Distribution,
    /// A model's context window in tokens.
    pub max_context_tokens: Option<f64>,
    pub quality_score: Option<f64>,
    pub forbidden_task_classes: Vec<String>,
    /// An approved snapshot's age (ms), drawn per run and step.
    pub snapshot_age: Option<Distribution>,
    pub calls: Vec<RemoteCallModel>,
    /// What fails together with it (a provider, a region, a shared input), if stated.
    pub failure_domain: Option<String>,
    /// Long-running work: calls create tasks that run at another dependency.
    pub task: Option<TaskModel>,
    /// Calls shaped by tokens (a model provider).
    pub tokens: Option<TokenShape>,
    /// A desk of humans who approve (docs/scenario.md section 4.7): steps here wait for a
    /// decision, never for the station.
    pub approval: Option<super::approval::ApprovalModel>,
    /// Indices into `World::faults` of the faults that target this dependency.
    pub faults: Vec<usize>,
    /// Some fault in `faults` returns bad results (or cuts the quota): the attempt path asks
    /// only then, one load instead of a walk over the faults.
    pub has_bad_result_faults: bool,
    pub has_quota_cuts: bool,
    /// A cache in front of it (world::cache), which policies may look in first.
    pub cache: Option<super::cache::CacheModel>,
}

#[derive(Debug, Clone)]
pub enum FaultEffect {
    Latency {
        replace: Option<Distribution>,
        factor: f64,
        add_ms: f64,
        jitter_ms: f64,
    },
    /// The response never arrives (Toxiproxy `timeout` with timeout 0).
    Hang,
    Errors(ErrorTable),
    Capacity {
        servers: u32,
    },
    /// Every attempt fails fast with TRANSIENT_TRANSPORT (connection refused), or, with a
    /// Retry-After, as an HTTP 503 that carries it.
    Down {
        retry_after_us: Option<Micros>,
    },
    RateLimit {
        per_s: f64,
        burst: f64,
    },
    /// The work (and a write's effect) completes but the reply is lost.
    LostResponse,
    /// Tasks created in the window never finish: they stay working, holding their worker.
    StuckTask,
    /// Tasks created in the window stop for input that never comes.
    InputRequired,
    /// Cancels received in the window are accepted and ignored.
    IgnoredCancel,
    /// Cancels received in the window take effect this much later.
    LateCancel {
        delay_us: Micros,
    },
    /// Tasks created in the window publish their end this much after their work ends.
    LateResult {
        delay_us: Micros,
    },
    /// Create requests answered in the window lose their reply: the task exists, its handle
    /// never reaches the client.
    LostHandle,
    /// Answers in the window come back as successes that are not (world/bad_result.rs); a
    /// `stream_cut` also ends the call after its first token.
    BadResult(super::bad_result::BadResult),
    /// Each output token of a call in the window takes `factor` times as long.
    SlowStream {
        factor: f64,
    },
    /// The provider's per-minute quota is `factor` of its own during the window.
    QuotaCut {
        factor: f64,
    },
    /// An agent served in the window first delegates back to the first agent of its chain (a
    /// loop A -> B -> A ...), each attempt of that hop with this timeout.
    DelegationLoop {
        timeout_us: Micros,
        max_attempts: u32,
    },
    /// The dependency's cache fails its lookups in the window (a share: the toxicity): they
    /// go to the dependency as if there were no cache.
    CacheOutage,
    /// The dependency's cache restarts empty at the fault's start.
    ColdCache,
}

#[derive(Debug, Clone)]
pub struct FaultModel {
    pub kind: FaultKind,
    pub target: usize,
    pub start_us: Micros,
    pub end_us: Micros,
    pub toxicity: f64,
    pub effect: FaultEffect,
}

impl FaultModel {
    #[inline]
    pub fn active_at(&self, now: Micros) -> bool {
        now >= self.start_us && now < self.end_us
    }
}

#[derive(Debug, Clone)]
pub struct ResubmitModel {
    pub probability: f64,
    pub delay_us: Micros,
    pub max_resubmissions: u32,
}

/// One phase of an open arrival rate: linear from `start_rate_per_s` at the previous phase's
/// end (0 for the first) to `end_rate_per_s` at `end_us`; equal rates make it constant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatePhaseModel {
    pub end_us: Micros,
    pub start_rate_per_s: f64,
    pub end_rate_per_s: f64,
}

impl RatePhaseModel {
    pub fn constant(end_us: Micros, rate_per_s: f64) -> Self {
        RatePhaseModel { end_us, start_rate_per_s: rate_per_s, end_rate_per_s: rate_per_s }
    }
}

/// Locust's wait_time functions, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WaitModel {
    Constant {
        us: f64,
    },
    Between {
        min_us: f64,
        max_us: f64,
    },
    Exponential {
        mean_us: f64,
    },
    /// Locust's constant_pacing (and constant_throughput): one run every `us` at most.
    Pacing {
        us: f64,
    },
}

impl WaitModel {
    /// The think time for a uniform draw `u` in [0, 1), after a run (or a wait for one) that
    /// lasted `run_us`: only pacing reads it.
    pub fn draw_us(&self, u: f64, run_us: Micros) -> Micros {
        let us = match *self {
            WaitModel::Constant { us } => us,
            WaitModel::Between { min_us, max_us } => min_us + u * (max_us - min_us),
            WaitModel::Exponential { mean_us } => -mean_us * (1.0 - u).ln(),
            // Locust: max(0, wait_time - run_time). A run refused at its start took 0 time and
            // waits the whole pace, so a user never restarts at the same instant for ever.
            WaitModel::Pacing { us } => (us - run_us as f64).max(0.0),
        };
        crate::sim::round_u64(us)
    }

    /// The mean think time; for pacing, the pace (a user starts a run every pace at most).
    pub fn mean_s(&self) -> f64 {
        match *self {
            WaitModel::Constant { us } | WaitModel::Pacing { us } => us / 1e6,
            WaitModel::Between { min_us, max_us } => (min_us + max_us) / 2e6,
            WaitModel::Exponential { mean_us } => mean_us / 1e6,
        }
    }
}

/// A closed population of users (docs/scenario.md 4.3.2).
#[derive(Debug, Clone)]
pub struct PopulationModel {
    /// (time, target number of users), in time order: the population follows it one user at a time.
    pub schedule: Vec<(Micros, u32)>,
    pub wait: WaitModel,
    pub abandon_after_us: Option<Micros>,
    pub leave_after_failure: f64,
    /// The largest target the schedule reaches.
    pub max_users: u32,
}

/// A workflow's load: open arrivals (Poisson with a piecewise-linear rate) or a closed population.
#[derive(Debug, Clone)]
pub struct WorkloadModel {
    pub name: String,
    pub stream_id: u64,
    /// The open arrival rate's phases; the last extends to infinity. Empty for a closed population.
    pub phases: Vec<RatePhaseModel>,
    pub population: Option<PopulationModel>,
    pub deadline_us: Micros,
    pub resubmit: Option<ResubmitModel>,
}

#[derive(Debug, Clone)]
pub struct World {
    pub duration_us: Micros,
    pub warmup_us: Micros,
    pub window_us: Micros,
    pub drain_limit_us: Micros,
    pub max_in_flight_runs: u32,
    pub seed: u64,
    pub replications: u32,
    pub dependencies: Vec<DependencyModel>,
    pub faults: Vec<FaultModel>,
    pub workloads: Vec<WorkloadModel>,
}

impl World {
    /// Dependency names in file order, for messages.
    pub fn dependency_names(&self) -> impl Iterator<Item = &str> {
        self.dependencies.iter().map(|d| d.name.as_str())
    }

    pub fn dependency_index(&self, name: &str) -> Option<usize> {
        self.dependencies.iter().position(|d| d.name == name)
    }

    /// Whether any run may delegate between agents: a call delegates or a fault makes a loop.
    /// Delegation's bookkeeping and metrics exist only then.
    pub fn delegates(&self) -> bool {
        self.dependencies.iter().flat_map(|d| &d.calls).any(|c| c.delegate)
            || self.faults.iter().any(|f| matches!(f.effect, FaultEffect::DelegationLoop { .. }))
    }
}

/// Names become folder names, CSV and metric labels and `--set` path segments: letters,
/// digits, `_` and `-` only, so none of those can be broken or escaped.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a name cannot be empty".into());
    }
    if name.len() > 100 {
        return Err(format!("{} is longer than 100 characters", quote(name)));
    }
    match name.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-')) {
        Some(c) => Err(format!("{} contains {c:?}; names use letters, digits, `_` and `-` only", quote(name))),
        None => Ok(()),
    }
}

pub fn compile_world(scenario: &Scenario, source: &Source) -> Result<World, ScenarioError> {
    let c = Checker { source };
    let count_limits = [
        ("dependency", scenario.dependencies.len(), MAX_DEPENDENCIES),
        ("workflow", scenario.workflows.len(), MAX_WORKFLOWS),
        ("fault", scenario.faults.len(), MAX_FAULTS),
    ];
    for (table, count, limit) in count_limits {
        if count > limit {
            return Err(
                c.err(&FieldPath::root().key(table), format!("{count} [[{table}]] entries; the limit is {limit}"))
            );
        }
    }
    let sim = &scenario.simulation;
    let (duration_s, warmup_s, window_s, drain_limit_s) = compile_simulation(&c, sim)?;
    let (mut dependencies, names) = compile_dependencies(&c, &scenario.dependencies)?;
    compile_caches(&c, scenario, &mut dependencies)?;

    let mut faults = Vec::with_capacity(scenario.faults.len());
    for (i, f) in scenario.faults.iter().enumerate() {
        let path = FieldPath::root().key("fault").index(i);
        let fault = compile_fault(&c, &path, f, &names)?;
        if let Some(message) = target_lacks(fault.kind, &dependencies[fault.target])
            .or_else(|| target_cannot_act(fault.kind, fault.target, &dependencies))
        {
            return Err(c.err(&path.key("target"), message));
        }
        let target = &mut dependencies[fault.target];
        target.faults.push(i);
        target.has_bad_result_faults |= matches!(fault.effect, FaultEffect::BadResult(_));
        target.has_quota_cuts |= matches!(fault.effect, FaultEffect::QuotaCut { .. });
        faults.push(fault);
    }

    let mut workloads = Vec::with_capacity(scenario.workflows.len());
    for (i, w) in scenario.workflows.iter().enumerate() {
        let path = FieldPath::root().key("workflow").index(i);
        if scenario.workflows[..i].iter().any(|o| o.name == w.name) {
            return Err(c.err(&path.key("name"), format!("workflow {} is defined twice", quote(&w.name))));
        }
        workloads.push(compile_workload(&c, &path, w)?);
    }
    if workloads.is_empty() {
        return Err(c.err(&FieldPath::root(), "a scenario needs at least one [[workflow]]"));
    }
    let duration_us = s_to_us(duration_s);
    let expected: f64 = workloads.iter().map(|w| expected_arrivals(w, duration_us)).sum();
    if expected > MAX_EXPECTED_ARRIVALS {
        return Err(c.err(
            &FieldPath::root().key("workflow"),
            format!("about {expected:.3e} arrivals per replication; the limit is {MAX_EXPECTED_ARRIVALS:.0e} (lower the rates or the duration)"),
        ));
    }

    Ok(World {
        duration_us: s_to_us(duration_s),
        warmup_us: s_to_us(warmup_s),
        window_us: s_to_us(window_s).max(1),
        drain_limit_us: s_to_us(drain_limit_s),
        max_in_flight_runs: sim.max_in_flight_runs,
        seed: sim.seed,
        replications: sim.replications,
        dependencies,
        faults,
        workloads,
    })
}

/// The `[simulation]` table: (duration_s, warmup_s, timeseries_window_s, drain_limit_s).
fn compile_simulation(c: &Checker, sim: &crate::scenario::Simulation) -> Result<(f64, f64, f64, f64), ScenarioError> {
    let p = FieldPath::root().key("simulation");
    let duration_s = c.positive(&p.key("duration_s"), sim.duration_s)?;
    let warmup_s = c.non_negative(&p.key("warmup_s"), sim.warmup_s)?;
    if warmup_s >= duration_s {
        return Err(
            c.err(&p.key("warmup_s"), format!("warmup_s ({warmup_s}) must be less than duration_s ({duration_s})"))
        );
    }
    let window_s = c.positive(&p.key("timeseries_window_s"), sim.timeseries_window_s)?;
    c.in_range(&p.key("replications"), sim.replications, 1, MAX_REPLICATIONS)?;
    c.in_range(&p.key("max_in_flight_runs"), sim.max_in_flight_runs, 1, MAX_IN_FLIGHT_RUNS_LIMIT)?;
    let drain_limit_s = c.non_negative(&p.key("drain_limit_s"), sim.drain_limit_s)?;
    if (duration_s + drain_limit_s) / window_s > MAX_WINDOWS {
        return Err(c.err(
            &p.key("timeseries_window_s"),
            format!("more than {MAX_WINDOWS} windows over duration_s + drain_limit_s; use a wider window"),
        ));
    }
    if duration_s + drain_limit_s > MAX_SIMULATED_S {
        return Err(c.err(
            &p.key("duration_s"),
            format!("duration_s + drain_limit_s must be at most {MAX_SIMULATED_S} s (10 years)"),
        ));
    }

    Ok((duration_s, warmup_s, window_s, drain_limit_s))
}

/// Dependencies with their remote calls resolved and bounded (no cycle, bounded fan-out), and
/// the index of their names.
fn compile_dependencies<'s>(
    c: &Checker,
    specs: &'s [Dependency],
) -> Result<(Vec<DependencyModel>, NameIndex<'s>), ScenarioError> {
    let mut names = NameIndex::new();
    let mut dependencies = Vec::with_capacity(specs.len());
    for (i, d) in specs.iter().enumerate() {
        let path = FieldPath::root().key("dependency").index(i);
        check_name(&d.name).map_err(|m| c.err(&path.key("name"), m))?;
        if names.insert(d.name.as_str(), i).is_some() {
            return Err(c.err(&path.key("name"), format!("dependency {} is defined twice", quote(&d.name))));
        }
        dependencies.push(compile_dependency(c, &path, d)?);
    }
    for (i, d) in specs.iter().enumerate() {
        for (j, call) in d.calls.iter().enumerate() {
            let path = FieldPath::root().key("dependency").index(i).key("calls").index(j);
            let target = *names.get(call.dependency.as_str()).ok_or_else(|| {
                let known = specs.iter().map(|d| d.name.as_str());
                c.err(&path.key("dependency"), unknown_name("dependency", &call.dependency, known))
            })?;
            if specs[target].approval.is_some() {
                let message = format!(
                    "{} is an approval dependency: only a workflow step asks humans, not a remote agent's call",
                    quote(&call.dependency)
                );
                return Err(c.err(&path.key("dependency"), message));
            }
            dependencies[i].calls.push(RemoteCallModel {
                dependency: target,
                count: c.in_range(&path.key("count"), call.count, 1, MAX_REMOTE_CALL_COUNT)?,
                max_attempts: c.in_range(&path.key("max_attempts"), call.max_attempts, 1, MAX_ATTEMPTS_LIMIT)?,
                timeout_us: ms_to_us(c.positive(&path.key("timeout_ms"), call.timeout_ms)?),
                backoff_us: ms_to_us(c.non_negative(&path.key("backoff_ms"), call.backoff_ms)?),
                delegate: call.delegate.unwrap_or(false),
            });
        }
    }
    check_call_graph(c, &dependencies)?;
    for (i, d) in specs.iter().enumerate() {
        if let Some(task) = &d.task {
            let path = FieldPath::root().key("dependency").index(i).key("task");
            dependencies[i].task = Some(compile_task(c, &path, i, task, specs, &names)?);
        }
    }

    Ok((dependencies, names))
}

/// A cycle would recurse without bound and a large fan-out would flood the run with attempts.
/// The cycle check comes first: it yields the callees-first order the fan-out needs.
fn check_call_graph(c: &Checker, deps: &[DependencyModel]) -> Result<(), ScenarioError> {
    let calls_path = |i: usize| FieldPath::root().key("dependency").index(i).key("calls");
    let callees_first =
        call_order(deps).map_err(|(i, cycle)| c.err(&calls_path(i), format!("remote calls form a cycle: {cycle}")))?;
    let fan_outs = remote_fan_outs(deps, &callees_first);
    // In index order, so the error names the first offending dependency in the file.
    match fan_outs.iter().enumerate().find(|(_, f)| **f > MAX_REMOTE_FAN_OUT) {
        Some((i, fan_out)) => Err(c.err(
            &calls_path(i),
            format!("one attempt here can cause {fan_out:.0} attempts below it; the limit is {MAX_REMOTE_FAN_OUT:.0}"),
        )),
        None => Ok(()),
    }
}

/// A task dependency's table: its runner must be another dependency that is not itself a
/// task dependency (the work runs there; a task of tasks is not modelled).
fn compile_task(
    c: &Checker,
    path: &FieldPath,
    front: usize,
    t: &TaskSpec,
    specs: &[Dependency],
    names: &NameIndex,
) -> Result<TaskModel, ScenarioError> {
    let runner = *names.get(t.runner.as_str()).ok_or_else(|| {
        c.err(&path.key("runner"), unknown_name("dependency", &t.runner, specs.iter().map(|d| d.name.as_str())))
    })?;
    if runner == front {
        return Err(c.err(&path.key("runner"), "a task dependency cannot run its own tasks; name another dependency"));
    }
    if specs[runner].task.is_some() {
        return Err(c.err(
            &path.key("runner"),
            format!("runner {} is itself a task dependency; a runner does the work", quote(&t.runner)),
        ));
    }
    if !specs[front].calls.is_empty() {
        return Err(c.err(path, "a task dependency makes no calls itself; give its runner the calls"));
    }
    let optional_ms = |field: &str, value: Option<f64>| -> Result<Option<Micros>, ScenarioError> {
        value.map(|v| c.positive(&path.key(field), v).map(ms_to_us)).transpose()
    };
    let cancel = c.named(&path.key("cancel"), t.cancel.as_deref(), CancelBehaviour::Honor)?;
    let late_cancel_us = optional_ms("late_cancel_ms", t.late_cancel_ms)?;
    match (cancel, late_cancel_us) {
        (CancelBehaviour::Late, None) => {
            return Err(c.err(&path.key("late_cancel_ms"), "cancel = \"late\" needs late_cancel_ms, the delay"));
        }
        (CancelBehaviour::Honor | CancelBehaviour::Ignore, Some(_)) => {
            let message =
                format!("late_cancel_ms applies only with cancel = \"late\" (cancel is {})", quote(cancel.name()));
            return Err(c.err(&path.key("late_cancel_ms"), message));
        }
        (CancelBehaviour::Late, Some(_)) | (CancelBehaviour::Honor | CancelBehaviour::Ignore, None) => {}
    }
    let protocol = compile_protocol(c, &path.key("protocol"), t.protocol.as_deref())?;
    let repeated_path = path.key("on_repeated_message");
    let repeated_message =
        c.named(&repeated_path, t.on_repeated_message.as_deref(), protocol.default_repeated_message())?;
    match repeated_message {
        RepeatedMessage::Deduplicate if !protocol.has_message_id() => {
            let message = format!(
                "on_repeated_message = \"deduplicate\" needs a message id, and protocol {} has none (a tools/call sent again is a new request)",
                quote(protocol.name())
            );
            return Err(c.err(&repeated_path, message));
        }
        RepeatedMessage::Deduplicate | RepeatedMessage::SecondTask => {}
    }
    let on_ttl = c.named(&path.key("on_ttl"), t.on_ttl.as_deref(), OnTtl::Fail)?;
    if t.on_ttl.is_some() && t.ttl_ms.is_none() {
        return Err(c.err(&path.key("on_ttl"), "on_ttl applies only with ttl_ms, the task's time to live"));
    }
    let answer_path = path.key("ignored_cancel_answer");
    let ignored_cancel_answer =
        c.named(&answer_path, t.ignored_cancel_answer.as_deref(), IgnoredCancelAnswer::Canceled)?;
    if t.ignored_cancel_answer.is_some() && protocol.is_mcp() {
        let message = format!(
            "ignored_cancel_answer applies to protocol = \"a2a\"; {} answers a cancel as its specification says",
            quote(protocol.name())
        );
        return Err(c.err(&answer_path, message));
    }
    // MCP clients never receive push notifications (an MCP push client polls): a push delivery
    // setting at an MCP dependency could never act.
    let push_fields = [
        ("push_delivery_time", t.push_delivery_time.is_some()),
        ("push_lost_ratio", t.push_lost_ratio.is_some()),
        ("push_duplicate_ratio", t.push_duplicate_ratio.is_some()),
    ];
    if let Some((field, _)) = push_fields.iter().find(|(_, set)| *set)
        && !protocol.can_push()
    {
        let message = format!(
            "{field} applies to protocol = \"a2a\" (push notifications); a {} client polls",
            quote(protocol.name())
        );
        return Err(c.err(&path.key(field), message));
    }
    let input_answer =
        t.input_answer_time.as_ref().map(|d| c.distribution(&path.key("input_answer_time"), d)).transpose()?;
    let push_delivery =
        t.push_delivery_time.as_ref().map(|d| c.distribution(&path.key("push_delivery_time"), d)).transpose()?;
    Ok(TaskModel {
        push_delivery,
        push_lost_ratio: c.probability(&path.key("push_lost_ratio"), t.push_lost_ratio.unwrap_or(0.0))?,
        push_duplicate_ratio: c
            .probability(&path.key("push_duplicate_ratio"), t.push_duplicate_ratio.unwrap_or(0.0))?,
        input_required_ratio: c
            .probability(&path.key("input_required_ratio"), t.input_required_ratio.unwrap_or(0.0))?,
        input_unanswered_ratio: c
            .probability(&path.key("input_unanswered_ratio"), t.input_unanswered_ratio.unwrap_or(0.0))?,
        input_answer,
        protocol,
        repeated_message,
        on_ttl,
        ignored_cancel_answer,
        runner,
        poll_interval_us: optional_ms("poll_interval_ms", t.poll_interval_ms)?,
        ttl_us: optional_ms("ttl_ms", t.ttl_ms)?,
        cancel,
        late_cancel_us: late_cancel_us.unwrap_or(0),
        cost_per_s: c.non_negative(&path.key("cost_per_s"), t.cost_per_s)?,
    })
}

/// A task dependency's `protocol`: a revision's name, or the alias `mcp` (MCP 2025-11-25).
fn compile_protocol(c: &Checker, path: &FieldPath, text: Option<&str>) -> Result<TaskProtocol, ScenarioError> {
    let Some(text) = text else { return Ok(TaskProtocol::A2a) };
    TaskProtocol::parse_with_alias(text).ok_or_else(|| {
        let choices = TaskProtocol::ALL.map(TaskProtocol::name).join(", ");
        let (alias, meaning) = crate::world::task::MCP_ALIAS;
        c.err(path, format!("unknown value {}; expected one of {choices} ({alias} is {meaning})", quote(text)))
    })
}

/// The integral of the arrival rate over [0, duration); for a closed population, its largest
/// number of users each starting a run every think time (an upper bound: runs take time too).
pub fn expected_arrivals(w: &WorkloadModel, duration_us: Micros) -> f64 {
    if let Some(p) = &w.population {
        return f64::from(p.max_users) * (duration_us as f64 / 1e6) / p.wait.mean_s();
    }
    let mut start = 0;
    let mut total = 0.0;
    for phase in &w.phases {
        let (end, r0, r1) = (phase.end_us, phase.start_rate_per_s, phase.end_rate_per_s);
        let stop = end.min(duration_us);
        if stop > start {
            if r0 == r1 {
                total += r0 * (stop - start) as f64 / 1e6;
            } else {
                // Linear: the mean of the rates at both ends of [start, stop).
                let at_stop = r0 + (r1 - r0) * (stop - start) as f64 / (end - start) as f64;
                total += (r0 + at_stop) / 2.0 * (stop - start) as f64 / 1e6;
            }
        }
        start = end;
        if start >= duration_us {
            break;
        }
    }
    total
}

fn compile_dependency(c: &Checker, path: &FieldPath, d: &Dependency) -> Result<DependencyModel, ScenarioError> {
    let tokens = d.tokens.as_ref().map(|t| compile_tokens(c, &path.key("tokens"), t)).transpose()?;
    let service = match (&d.service_time, &tokens) {
        (Some(spec), _) => c.distribution(&path.key("service_time"), spec)?,
        // Unused: the token shape gives every call's service time.
        (None, Some(_)) => Distribution::Constant { value_ms: 0.0 },
        // Unused: humans decide, nothing is served.
        (None, None) if d.approval.is_some() => Distribution::Constant { value_ms: 0.0 },
        (None, None) => {
            let message = "missing field `service_time` (or a [dependency.tokens] table that shapes it)";
            return Err(c.err(path, message));
        }
    };
    let lookup_service = match (&d.status_lookup_time, &tokens) {
        (Some(spec), _) => c.distribution(&path.key("status_lookup_time"), spec)?,
        (None, Some(shape)) => shape.time_to_first_token.clone(),
        (None, None) => service.clone(),
    };
    let default_kind = if d.calls.is_empty() { DependencyKind::Api } else { DependencyKind::A2aAgent };
    let approval = match &d.approval {
        Some(spec) => {
            let ap = path.key("approval");
            // A person is not a provider: nothing of a station's work or a task applies.
            for (field, given) in
                [("task", d.task.is_some()), ("tokens", tokens.is_some()), ("calls", !d.calls.is_empty())]
            {
                if given {
                    let message = format!("an approval dependency is a desk of humans; `{field}` does not apply to it");
                    return Err(c.err(&path.key(field), message));
                }
            }
            Some(super::approval::compile_approval(c, &ap, spec)?)
        }
        None => None,
    };
    Ok(DependencyModel {
        name: d.name.clone(),
        kind: c.named(&path.key("kind"), d.kind.as_deref(), default_kind)?,
        stream_id: stable_name_id(&d.name),
        servers: c.in_range(&path.key("servers"), d.servers, 1, MAX_SERVERS)?,
        queue_capacity: c.in_range(&path.key("queue_capacity"), d.queue_capacity, 0, MAX_QUEUE_CAPACITY)?,
        service,
        errors: c.errors(&path.key("errors"), &d.errors)?,
        hang_probability: c.probability(&path.key("hang_probability"), d.hang_probability)?,
        rate_limit: d.rate_limit.as_ref().map(|r| compile_rate_limit(c, &path.key("rate_limit"), r)).transpose()?,
        cost_units: c.at_most(
            &path.key("cost_units"),
            c.non_negative(&path.key("cost_units"), d.cost_units)?,
            MAX_COST_UNITS,
        )?,
        honors_cancel: d.honors_cancel,
        queue: match &d.queue_policy {
            Some(q) => compile_queue_policy(c, &path.key("queue_policy"), q)?,
            None => QueuePolicy::default(),
        },
        lookup_service,
        max_context_tokens: d.max_context_tokens.map(|t| c.positive(&path.key("max_context_tokens"), t)).transpose()?,
        snapshot_age: d.snapshot_age.as_ref().map(|a| c.distribution(&path.key("snapshot_age"), a)).transpose()?,
        quality_score: d.quality_score.map(|q| c.probability(&path.key("quality_score"), q)).transpose()?,
        forbidden_task_classes: d.forbidden_task_classes.clone(),
        calls: Vec::new(),
        failure_domain: match &d.failure_domain {
            Some(domain) if domain.trim().is_empty() => {
                return Err(
                    c.err(&path.key("failure_domain"), "must name a domain (a provider, region or shared input)")
                );
            }
            domain => domain.clone(),
        },
        task: None,
        tokens,
        approval,
        faults: Vec::new(),
        has_bad_result_faults: false,
        has_quota_cuts: false,
        cache: None,
    })
}

fn compile_tokens(c: &Checker, path: &FieldPath, t: &TokensSpec) -> Result<TokenShape, ScenarioError> {
    let per_minute = |field: &str, value: Option<f64>| value.map(|v| c.positive(&path.key(field), v)).transpose();
    let per_million = |field: &str, value: f64| c.non_negative(&path.key(field), value).map(|p| p / 1e6);
    let input = per_million("price_per_million_input_tokens", t.price_per_million_input_tokens)?;
    let cached_input = match t.price_per_million_cached_input_tokens {
        Some(p) => per_million("price_per_million_cached_input_tokens", p)?,
        None => input,
    };
    let counts = |field: &str, spec: &Option<TokenCount>| {
        spec.as_ref().map(|s| c.count_distribution(&path.key(field), s)).transpose()
    };
    Ok(TokenShape {
        time_to_first_token: c.distribution(&path.key("time_to_first_token"), &t.time_to_first_token)?,
        ttft_ms_per_1k_input_tokens: c
            .non_negative(&path.key("ttft_ms_per_1k_input_tokens"), t.ttft_ms_per_1k_input_tokens)?,
        time_per_output_token: c.distribution(&path.key("time_per_output_token"), &t.time_per_output_token)?,
        max_output_tokens: t
            .max_output_tokens
            .map(|m| c.in_range(&path.key("max_output_tokens"), m, 1, MAX_OUTPUT_TOKENS))
            .transpose()?,
        input_tokens: counts("input_tokens", &t.input_tokens)?,
        output_tokens: counts("output_tokens", &t.output_tokens)?,
        quota: QuotaLimits {
            requests_per_minute: per_minute("requests_per_minute", t.requests_per_minute)?,
            tokens_per_minute: per_minute("tokens_per_minute", t.tokens_per_minute)?,
            input_tokens_per_minute: per_minute("input_tokens_per_minute", t.input_tokens_per_minute)?,
            output_tokens_per_minute: per_minute("output_tokens_per_minute", t.output_tokens_per_minute)?,
        },
        prices: TokenPrices {
            input,
            output: per_million("price_per_million_output_tokens", t.price_per_million_output_tokens)?,
            cached_input,
            cache_hit_ratio: c.probability(&path.key("cache_hit_ratio"), t.cache_hit_ratio)?,
        },
    })
}

fn compile_rate_limit(c: &Checker, path: &FieldPath, r: &RateLimit) -> Result<RateLimitModel, ScenarioError> {
    let per_s = c.positive(&path.key("per_s"), r.per_s)?;
    Ok(RateLimitModel {
        per_s,
        burst: burst(c, path, r.burst, per_s)?,
        retry_after_us: ms_to_us(c.non_negative(&path.key("retry_after_ms"), r.retry_after_ms)?),
    })
}

/// A token bucket's size: at least one token, or a request could never pass; by default one
/// second's worth.
fn burst(c: &Checker, path: &FieldPath, burst: Option<f64>, per_s: f64) -> Result<f64, ScenarioError> {
    match burst {
        Some(b) if b < 1.0 => Err(c.err(&path.key("burst"), format!("burst must be at least 1, got {b}"))),
        Some(b) => c.positive(&path.key("burst"), b),
        None => Ok(per_s.max(1.0)),
    }
}

/// Worst-case attempts below one attempt at each dependency. Callees come first in
/// `callees_first`, so each dependency is summed once: a layered graph has exponentially many
/// paths. In f64 because the products outgrow any integer; past f64::MAX they become infinity,
/// which still compares as too large (never NaN: count and max_attempts are at least 1).
fn remote_fan_outs(deps: &[DependencyModel], callees_first: &[usize]) -> Vec<f64> {
    let mut fan_out = vec![0.0; deps.len()];
    for &i in callees_first {
        fan_out[i] = deps[i]
            .calls
            .iter()
            .map(|c| f64::from(c.count) * f64::from(c.max_attempts) * (1.0 + fan_out[c.dependency]))
            .sum();
    }
    fan_out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Visit {
    Unvisited,
    OnStack,
    Done,
}

/// Every dependency, callees before callers (depth-first post-order), or the first cycle met
/// as (its first dependency, its names joined by ` -> `). Linear in dependencies plus calls.
/// An explicit stack, because a chain of MAX_DEPENDENCIES calls would overflow the call stack.
fn call_order(deps: &[DependencyModel]) -> Result<Vec<usize>, (usize, String)> {
    let mut state = vec![Visit::Unvisited; deps.len()];
    let mut order = Vec::with_capacity(deps.len());
    // (dependency, index of its next call to follow)
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for root in 0..deps.len() {
        if state[root] != Visit::Unvisited {
            continue;
        }
        state[root] = Visit::OnStack;
        stack.push((root, 0));
        while let Some(top) = stack.last_mut() {
            let (i, next) = *top;
            let Some(call) = deps[i].calls.get(next) else {
                stack.pop();
                state[i] = Visit::Done;
                order.push(i);
                continue;
            };
            top.1 += 1;
            let j = call.dependency;
            match state[j] {
                Visit::OnStack => return Err(cycle_from(deps, &stack, j)),
                Visit::Unvisited => {
                    state[j] = Visit::OnStack;
                    stack.push((j, 0));
                }
                Visit::Done => {}
            }
        }
    }
    Ok(order)
}

/// The cycle that closes when the top of `stack` calls `j`, which is on the stack. A long
/// cycle is shown by its ends and its length (one through MAX_DEPENDENCIES would be 70 kB).
fn cycle_from(deps: &[DependencyModel], stack: &[(usize, usize)], j: usize) -> (usize, String) {
    const SHOWN: usize = 4;
    let start = stack.iter().position(|&(k, _)| k == j).unwrap_or(0);
    let names: Vec<&str> = stack[start..].iter().map(|&(k, _)| k).chain([j]).map(|k| deps[k].name.as_str()).collect();
    let members = names.len() - 1;
    if names.len() <= 2 * SHOWN + 1 {
        return (j, names.join(" -> "));
    }
    let head = names[..SHOWN].join(" -> ");
    let tail = names[names.len() - SHOWN..].join(" -> ");
    (j, format!("{head} -> ... ({} more) -> {tail} ({members} dependencies)", members + 1 - 2 * SHOWN))
}

/// Every `[dependency.cache]`: a cache answers for a plain request-response dependency, not
/// for a task dependency (its calls are protocol requests about tasks).
fn compile_caches(c: &Checker, scenario: &Scenario, dependencies: &mut [DependencyModel]) -> Result<(), ScenarioError> {
    let tenants: Vec<Option<String>> = scenario.workflows.iter().map(|w| w.tenant.clone()).collect();
    for (i, d) in scenario.dependencies.iter().enumerate() {
        let Some(spec) = &d.cache else { continue };
        let path = FieldPath::root().key("dependency").index(i).key("cache");
        if d.task.is_some() {
            return Err(
                c.err(&path, format!("{} is a task dependency: a cache cannot answer for its tasks", quote(&d.name)))
            );
        }
        dependencies[i].cache = Some(super::cache::compile_cache(c, &path, &d.name, spec, &tenants)?);
    }
    Ok(())
}

fn compile_fault(c: &Checker, path: &FieldPath, f: &Fault, names: &NameIndex) -> Result<FaultModel, ScenarioError> {
    let kind = FaultKind::parse(&f.kind).ok_or_else(|| {
        let all: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
        c.err(&path.key("kind"), format!("unknown fault kind {}; expected one of {}", quote(&f.kind), all.join(", ")))
    })?;
    let target = *names
        .get(f.target.as_str())
        .ok_or_else(|| c.err(&path.key("target"), unknown_name("dependency", &f.target, names.keys().copied())))?;
    let start_s = c.non_negative(&path.key("start_s"), f.start_s)?;
    let duration_s = c.positive(&path.key("duration_s"), f.duration_s)?;
    let toxicity = c.probability(&path.key("toxicity"), f.toxicity.unwrap_or(1.0))?;
    check_fault_fields(c, path, f, kind)?;
    let effect = fault_effect(c, path, f, kind)?;
    Ok(FaultModel { kind, target, start_us: s_to_us(start_s), end_us: s_to_us(start_s + duration_s), toxicity, effect })
}

/// Why `target` cannot take a fault of `kind`, in words; None when it can.
fn target_lacks(kind: FaultKind, target: &DependencyModel) -> Option<String> {
    use super::fault_kind::TargetNeed;
    let (k, name) = (kind.name(), quote(&target.name));
    let lacks = match kind.target_need() {
        TargetNeed::Nothing => false,
        TargetNeed::Task => target.task.is_none(),
        TargetNeed::Tokens => target.tokens.is_none(),
        TargetNeed::Quota => !target.tokens.as_ref().is_some_and(|t| t.quota.any()),
        TargetNeed::Retrieval => target.kind != DependencyKind::Retrieval,
        TargetNeed::Cache => target.cache.is_none(),
    };
    if !lacks {
        return None;
    }
    Some(match kind.target_need() {
        TargetNeed::Nothing => String::new(),
        TargetNeed::Task => format!("a {k} fault acts on tasks, and dependency {name} has no [dependency.task]"),
        TargetNeed::Tokens => {
            format!("a {k} fault acts on streamed tokens, and dependency {name} has no [dependency.tokens]")
        }
        TargetNeed::Quota => format!(
            "a {k} fault lowers a provider's quota, and dependency {name} has no [dependency.tokens] *_per_minute limit"
        ),
        TargetNeed::Retrieval => {
            format!("a {k} fault acts on a vector search's hits, and dependency {name} is not kind = \"retrieval\"")
        }
        TargetNeed::Cache => format!("a {k} fault acts on a cache, and dependency {name} has no [dependency.cache]"),
    })
}

/// Why a fault of `kind` has nothing to act on at dependency `t`, in words; None when it has.
/// An approval desk is a person's decision, not a station: no fault reaches it. A
/// delegation loop makes an agent delegate back along its chain: only an A2A agent in a
/// delegation (one that delegates, or is delegated to) has a chain to loop on.
fn target_cannot_act(kind: FaultKind, t: usize, dependencies: &[DependencyModel]) -> Option<String> {
    let (k, target) = (kind.name(), &dependencies[t]);
    let name = quote(&target.name);
    if target.approval.is_some() {
        return Some(format!(
            "dependency {name} is an approval desk (a person's decision, not a station): a {k} fault has nothing to act on there"
        ));
    }
    let in_delegation = target.calls.iter().any(|c| c.delegate)
        || dependencies.iter().flat_map(|d| &d.calls).any(|c| c.delegate && c.dependency == t);
    if kind == FaultKind::DelegationLoop && !(target.kind == DependencyKind::A2aAgent && in_delegation) {
        return Some(format!(
            "a {k} fault makes an agent delegate back along its chain, and dependency {name} is not an A2A agent in a delegation (kind = \"a2a_agent\" with a `delegate = true` call from or to it)"
        ));
    }
    None
}

fn check_fault_fields(c: &Checker, path: &FieldPath, f: &Fault, kind: FaultKind) -> Result<(), ScenarioError> {
    let present: [(&str, bool); 12] = [
        ("service_time", f.service_time.is_some()),
        ("factor", f.factor.is_some()),
        ("latency_ms", f.latency_ms.is_some()),
        ("jitter_ms", f.jitter_ms.is_some()),
        ("errors", f.errors.is_some()),
        ("servers", f.servers.is_some()),
        ("per_s", f.per_s.is_some()),
        ("burst", f.burst.is_some()),
        ("toxicity", f.toxicity.is_some()),
        ("retry_after_ms", f.retry_after_ms.is_some()),
        ("timeout_ms", f.timeout_ms.is_some()),
        ("max_attempts", f.max_attempts.is_some()),
    ];
    let allowed = kind.allowed_fields();
    match present.iter().find(|(name, set)| *set && !allowed.contains(name)) {
        Some((name, _)) => Err(c.err(
            &path.key(name),
            match allowed {
                [] => format!("`{name}` does not apply to a `{}` fault (it takes no field)", kind.name()),
                _ => format!("`{name}` does not apply to a `{}` fault (it takes {})", kind.name(), allowed.join(", ")),
            },
        )),
        None => Ok(()),
    }
}

fn fault_effect(c: &Checker, path: &FieldPath, f: &Fault, kind: FaultKind) -> Result<FaultEffect, ScenarioError> {
    Ok(match kind {
        FaultKind::Latency => {
            if f.service_time.is_none() && f.factor.is_none() && f.latency_ms.is_none() && f.jitter_ms.is_none() {
                return Err(c.err(path, "a latency fault needs service_time, factor, latency_ms or jitter_ms"));
            }
            FaultEffect::Latency {
                replace: f.service_time.as_ref().map(|s| c.distribution(&path.key("service_time"), s)).transpose()?,
                factor: c.at_most(
                    &path.key("factor"),
                    c.positive(&path.key("factor"), f.factor.unwrap_or(1.0))?,
                    MAX_FAULT_FACTOR,
                )?,
                add_ms: c.at_most(
                    &path.key("latency_ms"),
                    c.non_negative(&path.key("latency_ms"), f.latency_ms.unwrap_or(0.0))?,
                    MAX_FAULT_DELAY_MS,
                )?,
                jitter_ms: c.at_most(
                    &path.key("jitter_ms"),
                    c.non_negative(&path.key("jitter_ms"), f.jitter_ms.unwrap_or(0.0))?,
                    MAX_FAULT_DELAY_MS,
                )?,
            }
        }
        FaultKind::Timeout => FaultEffect::Hang,
        FaultKind::StuckTask => FaultEffect::StuckTask,
        FaultKind::InputRequired => FaultEffect::InputRequired,
        FaultKind::IgnoredCancel => FaultEffect::IgnoredCancel,
        FaultKind::LostHandle => FaultEffect::LostHandle,
        FaultKind::CacheOutage => FaultEffect::CacheOutage,
        FaultKind::ColdCache => FaultEffect::ColdCache,
        FaultKind::LateCancel => FaultEffect::LateCancel { delay_us: fault_delay(c, path, f, kind)? },
        FaultKind::LateResult => FaultEffect::LateResult { delay_us: fault_delay(c, path, f, kind)? },
        FaultKind::LostResponse => FaultEffect::LostResponse,
        FaultKind::TruncatedResult
        | FaultKind::EmptyResult
        | FaultKind::SchemaViolation
        | FaultKind::StreamCut
        | FaultKind::PartialResult
        | FaultKind::StaleIndex => {
            FaultEffect::BadResult(super::bad_result::BadResult::of_fault(kind).expect("a bad-result kind"))
        }
        FaultKind::SlowStream => {
            let factor = f
                .factor
                .ok_or_else(|| c.err(path, "a slow_stream fault needs `factor`, the slowdown of each output token"))?;
            let factor = c.at_most(&path.key("factor"), c.positive(&path.key("factor"), factor)?, MAX_FAULT_FACTOR)?;
            if factor < 1.0 {
                return Err(c.err(
                    &path.key("factor"),
                    format!("a slow_stream fault slows tokens down: factor must be at least 1, got {factor}"),
                ));
            }
            FaultEffect::SlowStream { factor }
        }
        FaultKind::QuotaCut => {
            let factor =
                f.factor.ok_or_else(|| c.err(path, "a quota_cut fault needs `factor`, the share of the quota left"))?;
            let factor = c.positive(&path.key("factor"), factor)?;
            if factor > 1.0 {
                return Err(c.err(
                    &path.key("factor"),
                    format!("a quota_cut fault lowers the quota: factor must be in (0, 1], got {factor}"),
                ));
            }
            FaultEffect::QuotaCut { factor }
        }
        FaultKind::Down => FaultEffect::Down {
            retry_after_us: f
                .retry_after_ms
                .map(|v| c.positive(&path.key("retry_after_ms"), v).map(ms_to_us))
                .transpose()?,
        },
        FaultKind::Errors => {
            let mix = f
                .errors
                .as_ref()
                .ok_or_else(|| c.err(path, "an errors fault needs `errors = { kind = probability }`"))?;
            FaultEffect::Errors(c.errors(&path.key("errors"), mix)?)
        }
        FaultKind::Capacity => {
            let servers = f.servers.ok_or_else(|| c.err(path, "a capacity fault needs `servers`"))?;
            FaultEffect::Capacity { servers: c.in_range(&path.key("servers"), servers, 0, MAX_SERVERS)? }
        }
        FaultKind::RateLimit => {
            let per_s = c.positive(
                &path.key("per_s"),
                f.per_s.ok_or_else(|| c.err(path, "a rate_limit fault needs `per_s`"))?,
            )?;
            FaultEffect::RateLimit { per_s, burst: burst(c, path, f.burst, per_s)? }
        }
        FaultKind::DelegationLoop => {
            let timeout_ms = f.timeout_ms.ok_or_else(|| {
                c.err(path, "a delegation_loop fault needs `timeout_ms` (each attempt of the hop back)")
            })?;
            FaultEffect::DelegationLoop {
                timeout_us: ms_to_us(c.positive(&path.key("timeout_ms"), timeout_ms)?),
                max_attempts: c.in_range(
                    &path.key("max_attempts"),
                    f.max_attempts.unwrap_or(1),
                    1,
                    MAX_ATTEMPTS_LIMIT,
                )?,
            }
        }
    })
}

/// A late_cancel or late_result fault's delay, its `latency_ms`.
fn fault_delay(c: &Checker, path: &FieldPath, f: &Fault, kind: FaultKind) -> Result<Micros, ScenarioError> {
    let delay_ms = f
        .latency_ms
        .ok_or_else(|| c.err(path, format!("a {} fault needs `latency_ms`, the delay it adds", kind.name())))?;
    Ok(ms_to_us(c.at_most(
        &path.key("latency_ms"),
        c.positive(&path.key("latency_ms"), delay_ms)?,
        MAX_FAULT_DELAY_MS,
    )?))
}

fn compile_workload(c: &Checker, path: &FieldPath, w: &Workflow) -> Result<WorkloadModel, ScenarioError> {
    check_name(&w.name).map_err(|m| c.err(&path.key("name"), m))?;
    let ap = path.key("arrivals");
    let (phases, population) = match &w.arrivals.users {
        Some(users) => {
            let open = [
                ("rate_per_s", w.arrivals.rate_per_s.is_some()),
                ("profile", w.arrivals.profile.is_some()),
                ("stages", w.arrivals.stages.is_some()),
                ("start_rate", w.arrivals.start_rate.is_some()),
                ("time_unit_s", w.arrivals.time_unit_s.is_some()),
            ];
            if let Some((field, _)) = open.iter().find(|(_, given)| *given) {
                return Err(c.err(
                    &ap.key(field),
                    format!("`{field}` shapes open arrivals; a closed population (`users`) sets its own pace"),
                ));
            }
            if w.resubmit.is_some() {
                return Err(c.err(
                    &path.key("resubmit"),
                    "a closed population's users start their next run themselves (wait_time, leave_after_failure); drop `resubmit`",
                ));
            }
            (Vec::new(), Some(compile_population(c, &ap.key("users"), users)?))
        }
        None => (compile_phases(c, &ap, &w.arrivals)?, None),
    };
    let resubmit = match &w.resubmit {
        Some(r) => {
            let rp = path.key("resubmit");
            Some(ResubmitModel {
                probability: c.probability(&rp.key("probability"), r.probability)?,
                delay_us: ms_to_us(c.non_negative(&rp.key("delay_ms"), r.delay_ms)?),
                max_resubmissions: c.in_range(
                    &rp.key("max_resubmissions"),
                    r.max_resubmissions,
                    0,
                    MAX_RESUBMISSIONS,
                )?,
            })
        }
        None => None,
    };
    Ok(WorkloadModel {
        name: w.name.clone(),
        stream_id: stable_name_id(&w.name),
        phases,
        population,
        deadline_us: ms_to_us(c.positive(&path.key("deadline_ms"), w.deadline_ms)?),
        resubmit,
    })
}

/// The open arrival rate's phases; the last phase never ends.
fn compile_phases(c: &Checker, ap: &FieldPath, arrivals: &Arrivals) -> Result<Vec<RatePhaseModel>, ScenarioError> {
    let given = [arrivals.rate_per_s.is_some(), arrivals.profile.is_some(), arrivals.stages.is_some()];
    if given.iter().filter(|g| **g).count() != 1 {
        return Err(c.err(ap, "give exactly one of rate_per_s, profile, stages or users"));
    }
    if arrivals.stages.is_none() {
        for (field, value) in [("start_rate", arrivals.start_rate), ("time_unit_s", arrivals.time_unit_s)] {
            if value.is_some() {
                return Err(c.err(&ap.key(field), format!("`{field}` goes with `stages` (k6's ramping-arrival-rate)")));
            }
        }
    }
    if let Some(stages) = &arrivals.stages {
        return compile_rate_stages(c, ap, arrivals, stages);
    }
    let profile = match (&arrivals.rate_per_s, &arrivals.profile) {
        (Some(rate), _) => {
            return Ok(vec![RatePhaseModel::constant(Micros::MAX, c.non_negative(&ap.key("rate_per_s"), *rate)?)]);
        }
        (None, Some(profile)) => profile,
        (None, None) => return Err(c.err(ap, "give exactly one of rate_per_s, profile, stages or users")),
    };
    if profile.is_empty() {
        return Err(c.err(&ap.key("profile"), "a rate profile needs at least one phase"));
    }
    let mut phases = Vec::with_capacity(profile.len());
    let mut previous = 0.0;
    for (i, phase) in profile.iter().enumerate() {
        let pp = ap.key("profile").index(i);
        let until = c.positive(&pp.key("until_s"), phase.until_s)?;
        if until <= previous {
            return Err(
                c.err(&pp.key("until_s"), format!("phases must end in increasing order ({until} after {previous})"))
            );
        }
        previous = until;
        let end = if i + 1 == profile.len() { Micros::MAX } else { s_to_us(until) };
        phases.push(RatePhaseModel::constant(end, c.non_negative(&pp.key("rate_per_s"), phase.rate_per_s)?));
    }
    Ok(phases)
}

/// k6's ramping-arrival-rate: linear from the previous target to each stage's target over its
/// duration; the last target holds after the last stage.
fn compile_rate_stages(
    c: &Checker,
    ap: &FieldPath,
    arrivals: &Arrivals,
    stages: &[Stage],
) -> Result<Vec<RatePhaseModel>, ScenarioError> {
    let unit_s = match arrivals.time_unit_s {
        Some(u) => c.positive(&ap.key("time_unit_s"), u)?,
        None => 1.0,
    };
    let start = match arrivals.start_rate {
        Some(r) => c.non_negative(&ap.key("start_rate"), r)?,
        None => 0.0,
    };
    if stages.is_empty() {
        return Err(c.err(&ap.key("stages"), "give at least one stage ({ duration_s = ..., target = ... })"));
    }
    let mut phases = Vec::with_capacity(stages.len() + 1);
    let (mut rate_per_s, mut at_s, mut at_us) = (start / unit_s, 0.0, 0);
    for (i, stage) in stages.iter().enumerate() {
        let sp = ap.key("stages").index(i);
        let duration_s = c.non_negative(&sp.key("duration_s"), stage.duration_s)?;
        let target_per_s = c.non_negative(&sp.key("target"), stage.target)? / unit_s;
        at_s += duration_s;
        if at_s > MAX_SIMULATED_S {
            return Err(c.err(&sp.key("duration_s"), format!("the stages last past {MAX_SIMULATED_S} s")));
        }
        let end_us = s_to_us(at_s);
        // A stage of no duration is a step: nothing to integrate over.
        if end_us > at_us {
            phases.push(RatePhaseModel { end_us, start_rate_per_s: rate_per_s, end_rate_per_s: target_per_s });
        }
        (rate_per_s, at_us) = (target_per_s, end_us);
    }
    phases.push(RatePhaseModel::constant(Micros::MAX, rate_per_s));
    Ok(phases)
}

/// Users are whole and bounded: the schedule has one entry per user a ramp crosses.
pub const MAX_USERS: u32 = 1_000_000;

fn whole_users(c: &Checker, path: &FieldPath, value: f64) -> Result<u32, ScenarioError> {
    if value.is_finite() && value >= 0.0 && value.fract() == 0.0 && value <= f64::from(MAX_USERS) {
        Ok(value as u32)
    } else {
        Err(c.err(path, format!("a number of users is a whole number between 0 and {MAX_USERS}, got {value}")))
    }
}

fn compile_population(c: &Checker, up: &FieldPath, users: &Users) -> Result<PopulationModel, ScenarioError> {
    let mut schedule: Vec<(Micros, u32)> = Vec::new();
    match (&users.count, &users.stages) {
        (Some(count), None) => {
            if users.start_users.is_some() {
                return Err(c.err(&up.key("start_users"), "`start_users` goes with `stages` (k6's startVUs)"));
            }
            let n = whole_users(c, &up.key("count"), *count)?;
            if n == 0 {
                return Err(c.err(&up.key("count"), "a closed population needs at least 1 user"));
            }
            match users.spawn_rate {
                // Locust starts the first user at once, then one every 1/spawn_rate seconds.
                Some(rate) => {
                    let rate = c.positive(&up.key("spawn_rate"), rate)?;
                    schedule.extend((1..=n).map(|k| (s_to_us(f64::from(k - 1) / rate), k)));
                }
                None => schedule.push((0, n)),
            }
        }
        (None, Some(stages)) => {
            if users.spawn_rate.is_some() {
                return Err(c.err(&up.key("spawn_rate"), "`spawn_rate` goes with `count`; `stages` ramp by themselves"));
            }
            if stages.is_empty() {
                return Err(c.err(&up.key("stages"), "give at least one stage ({ duration_s = ..., target = ... })"));
            }
            let mut users_now = match users.start_users {
                Some(s) => whole_users(c, &up.key("start_users"), s)?,
                None => 0,
            };
            if users_now > 0 {
                schedule.push((0, users_now));
            }
            let mut at_s = 0.0;
            for (i, stage) in stages.iter().enumerate() {
                let sp = up.key("stages").index(i);
                let duration_s = c.non_negative(&sp.key("duration_s"), stage.duration_s)?;
                let target = whole_users(c, &sp.key("target"), stage.target)?;
                let start_s = at_s;
                at_s += duration_s;
                if at_s > MAX_SIMULATED_S {
                    return Err(c.err(&sp.key("duration_s"), format!("the stages last past {MAX_SIMULATED_S} s")));
                }
                // The count follows the linear ramp, one user at each whole number it crosses.
                let (from, to) = (f64::from(users_now), f64::from(target));
                let crossing = |k: u32| start_s + duration_s * (f64::from(k) - from).abs() / (to - from).abs();
                if target > users_now {
                    schedule.extend((users_now + 1..=target).map(|k| (s_to_us(crossing(k)), k)));
                } else {
                    schedule.extend((target..users_now).rev().map(|k| (s_to_us(crossing(k)), k)));
                }
                users_now = target;
            }
            if schedule.iter().all(|&(_, n)| n == 0) {
                return Err(c.err(&up.key("stages"), "the stages never have a user: give a target of at least 1"));
            }
        }
        (Some(_), Some(_)) | (None, None) => {
            return Err(c.err(up, "give exactly one of count (with spawn_rate) or stages"));
        }
    }
    let wp = up.key("wait_time");
    let wt = &users.wait_time;
    let given = [
        wt.constant_s.is_some(),
        wt.between_s.is_some(),
        wt.exponential_mean_s.is_some(),
        wt.constant_pacing_s.is_some(),
        wt.constant_throughput_per_s.is_some(),
    ];
    if given.iter().filter(|&&g| g).count() != 1 {
        return Err(c.err(
            &wp,
            "give exactly one of constant_s, between_s, exponential_mean_s, constant_pacing_s or constant_throughput_per_s",
        ));
    }
    let wait = if let Some(s) = wt.constant_s {
        if s == 0.0 {
            // Locust's default is constant(0); here a run refused at once would start again
            // at the same instant, forever.
            return Err(c.err(&wp.key("constant_s"), "a closed population needs a think time > 0, got 0"));
        }
        WaitModel::Constant { us: c.positive(&wp.key("constant_s"), s)? * 1e6 }
    } else if let Some(range) = &wt.between_s {
        let bp = wp.key("between_s");
        let [min, max] = range[..] else {
            return Err(c.err(&bp, format!("between_s is [min, max], got {} numbers", range.len())));
        };
        let min = c.non_negative(&bp.index(0), min)?;
        let max = c.positive(&bp.index(1), max)?;
        if max < min {
            return Err(c.err(&bp, format!("between_s is [min, max] with min <= max, got [{min}, {max}]")));
        }
        WaitModel::Between { min_us: min * 1e6, max_us: max * 1e6 }
    } else if let Some(mean) = wt.exponential_mean_s {
        WaitModel::Exponential { mean_us: c.positive(&wp.key("exponential_mean_s"), mean)? * 1e6 }
    } else if let Some(pace) = wt.constant_pacing_s {
        WaitModel::Pacing { us: c.positive(&wp.key("constant_pacing_s"), pace)? * 1e6 }
    } else {
        let per_s = wt.constant_throughput_per_s.expect("exactly one is given");
        WaitModel::Pacing { us: 1e6 / c.positive(&wp.key("constant_throughput_per_s"), per_s)? }
    };
    let abandon_after_us = match users.abandon_after_ms {
        Some(ms) => Some(ms_to_us(c.positive(&up.key("abandon_after_ms"), ms)?)),
        None => None,
    };
    let leave_after_failure = match users.leave_after_failure {
        Some(p) => c.probability(&up.key("leave_after_failure"), p)?,
        None => 0.0,
    };
    let max_users = schedule.iter().map(|&(_, n)| n).max().unwrap_or(0);
    Ok(PopulationModel { schedule, wait, abandon_after_us, leave_after_failure, max_users })
}
