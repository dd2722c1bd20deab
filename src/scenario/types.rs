//! The scenario file as written by users: serde types only, no behaviour. Unknown fields are
//! errors everywhere (`deny_unknown_fields`), so a typo never silently becomes a default.
//!
//! Every table is a table: serde's derive also accepts a struct written as a positional array
//! (`simulation = [10]`, `step = [["s", [], "d"]]`), so each struct's derived code is kept
//! (`#[serde(remote = "Self")]` makes it an inherent function) and reached only through
//! [`tables_only!`], whose visitor takes maps and refuses sequences.

use super::loaded_samples::LoadedSamples;
use super::raw_table::RawTable;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct Scenario {
    pub simulation: Simulation,
    #[serde(default, rename = "dependency")]
    pub dependencies: Vec<Dependency>,
    #[serde(default, rename = "workflow")]
    pub workflows: Vec<Workflow>,
    #[serde(default, rename = "fault")]
    pub faults: Vec<Fault>,
    #[serde(default, rename = "policy")]
    pub policies: BTreeMap<String, Policy>,
    #[serde(default)]
    pub slo: Option<Slo>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct Simulation {
    /// Arrivals happen in [0, duration_s); runs still in flight then are allowed to finish.
    pub duration_s: f64,
    /// Runs that arrive before warmup_s are simulated but not measured.
    #[serde(default)]
    pub warmup_s: f64,
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default = "default_replications")]
    pub replications: u32,
    /// Width of the windows in timeseries.csv.
    #[serde(default = "default_window_s")]
    pub timeseries_window_s: f64,
    /// After duration_s, in-flight runs get at most this long to end; past it the simulation
    /// stops with an error rather than running unbounded.
    #[serde(default = "default_drain_limit_s")]
    pub drain_limit_s: f64,
    /// Upper bound on root runs in flight at once; exceeding it is an error, not a hang.
    #[serde(default = "default_max_in_flight_runs")]
    pub max_in_flight_runs: u32,
}

fn default_seed() -> u64 {
    1
}
fn default_replications() -> u32 {
    1
}
fn default_window_s() -> f64 {
    60.0
}
fn default_drain_limit_s() -> f64 {
    3_600.0
}
fn default_max_in_flight_runs() -> u32 {
    1_000_000
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct ServiceTime {
    /// lognormal (the default when p50_ms/p95_ms are given), exponential, gamma, weibull,
    /// pareto, uniform, constant.
    pub dist: Option<String>,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub mean_ms: Option<f64>,
    pub shape: Option<f64>,
    pub scale_ms: Option<f64>,
    pub min_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub value_ms: Option<f64>,
    /// dist = "quantiles": the value at each listed quantile, keyed `p50`, `p90`, `p99`,
    /// `"p99.9"` (docs/scenario.md section 3).
    #[serde(default)]
    pub quantiles_ms: Option<BTreeMap<String, f64>>,
    /// dist = "histogram": the buckets' upper bounds (Prometheus `le`), ascending, without +Inf.
    #[serde(default)]
    pub le_ms: Option<Vec<f64>>,
    /// dist = "histogram": the cumulative count at each bound, then the +Inf bucket's (the
    /// total): one more than `le_ms`, as a `_bucket` series reads.
    #[serde(default)]
    pub cumulative_counts: Option<Vec<f64>>,
    /// dist = "empirical": the observed values themselves, drawn with equal probability.
    #[serde(default)]
    pub samples_ms: Option<Vec<f64>>,
    /// dist = "empirical": a file of observed values, one number per line, relative to the
    /// scenario file (docs/scenario.md section 3).
    #[serde(default)]
    pub samples_file: Option<String>,
    /// The values of `samples_file`, read when the scenario is loaded (never from the file).
    #[serde(skip)]
    pub loaded_samples: Option<LoadedSamples>,
}

/// A distribution of counts (tokens): the fields of `ServiceTime` without the unit.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct TokenCount {
    #[serde(default)]
    pub dist: Option<String>,
    #[serde(default)]
    pub p50: Option<f64>,
    #[serde(default)]
    pub p95: Option<f64>,
    #[serde(default)]
    pub mean: Option<f64>,
    #[serde(default)]
    pub shape: Option<f64>,
    #[serde(default)]
    pub scale: Option<f64>,
    #[serde(default)]
    pub min: Option<f64>,
    #[serde(default)]
    pub max: Option<f64>,
    #[serde(default)]
    pub value: Option<f64>,
    #[serde(default)]
    pub quantiles: Option<BTreeMap<String, f64>>,
    #[serde(default)]
    pub le: Option<Vec<f64>>,
    #[serde(default)]
    pub cumulative_counts: Option<Vec<f64>>,
    #[serde(default)]
    pub samples: Option<Vec<f64>>,
    #[serde(default)]
    pub samples_file: Option<String>,
    #[serde(skip)]
    pub loaded_samples: Option<LoadedSamples>,
}

impl TokenCount {
    /// The same distribution read by the duration code (whose field names end in `_ms`).
    pub fn as_service_time(&self) -> ServiceTime {
        ServiceTime {
            dist: self.dist.clone(),
            p50_ms: self.p50,
            p95_ms: self.p95,
            mean_ms: self.mean,
            shape: self.shape,
            scale_ms: self.scale,
            min_ms: self.min,
            max_ms: self.max,
            value_ms: self.value,
            quantiles_ms: self.quantiles.clone(),
            le_ms: self.le.clone(),
            cumulative_counts: self.cumulative_counts.clone(),
            samples_ms: self.samples.clone(),
            samples_file: self.samples_file.clone(),
            loaded_samples: self.loaded_samples.clone(),
        }
    }
}

/// Per-attempt error probabilities by failure kind. Drawn once per attempt; at most one kind.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct ErrorMix {
    #[serde(default)]
    pub invalid_input: f64,
    #[serde(default)]
    pub unauthorized: f64,
    #[serde(default)]
    pub rate_limited: f64,
    #[serde(default)]
    pub overloaded: f64,
    #[serde(default)]
    pub transient_transport: f64,
    #[serde(default)]
    pub permanent_provider: f64,
    #[serde(default)]
    pub result_invalid: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct RateLimit {
    pub per_s: f64,
    #[serde(default)]
    pub burst: Option<f64>,
    #[serde(default = "default_retry_after_ms")]
    pub retry_after_ms: f64,
}

fn default_retry_after_ms() -> f64 {
    1_000.0
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct RemoteCall {
    pub dependency: String,
    #[serde(default = "one")]
    pub count: u32,
    #[serde(default = "one")]
    pub max_attempts: u32,
    pub timeout_ms: f64,
    /// Fixed pause between the remote agent's own attempts.
    #[serde(default)]
    pub backoff_ms: f64,
    /// An A2A delegation hop: the callee gets the root run's delegation context, and the hop is
    /// checked against the policy's `fan_out` delegation limits before it is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delegate: Option<bool>,
}

fn one() -> u32 {
    1
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct Dependency {
    pub name: String,
    /// model, retrieval, mcp_tool, a2a_agent or api: what traces call it (`dependency.kind`).
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default = "one")]
    pub servers: u32,
    #[serde(default = "default_queue_capacity")]
    pub queue_capacity: u32,
    /// Required, unless `tokens` shapes the service time.
    #[serde(default)]
    pub service_time: Option<ServiceTime>,
    #[serde(default)]
    pub errors: ErrorMix,
    /// Probability that a response never arrives (only the caller's timeout ends the attempt).
    #[serde(default)]
    pub hang_probability: f64,
    #[serde(default)]
    pub rate_limit: Option<RateLimit>,
    #[serde(default)]
    pub cost_units: f64,
    /// When true, an attempt abandoned by its caller is dropped from the queue or stops
    /// service at once; when false (the default) the station keeps working on it.
    #[serde(default)]
    pub honors_cancel: bool,
    /// How the waiting room orders, expires and drops attempts (docs/essay.md section 12).
    #[serde(default)]
    pub queue_policy: Option<QueuePolicySpec>,
    /// Service time of a status lookup (EFFECT_UNKNOWN reconciliation); defaults to service_time.
    #[serde(default)]
    pub status_lookup_time: Option<ServiceTime>,
    /// A model's context window: a request whose context is larger cannot use it.
    #[serde(default)]
    pub max_context_tokens: Option<f64>,
    /// The evaluated quality of a model's answers in [0, 1]: a fallback below a step's
    /// fallback_quality_floor breaks the step's contract.
    #[serde(default)]
    pub quality_score: Option<f64>,
    /// Task classes this dependency may not serve as a fallback (e.g. permission_decision).
    #[serde(default)]
    pub forbidden_task_classes: Vec<String>,
    /// An approved snapshot: the age of what it answers with (a distribution in ms, drawn per
    /// run and step). Its answers are evidence of level approved_snapshot, or stale when
    /// older than the step's max_snapshot_age_s.
    #[serde(default)]
    pub snapshot_age: Option<ServiceTime>,
    /// A remote agent: its own calls to other dependencies, made after its own service time,
    /// with its own attempts and timeouts, outside the caller's budget.
    #[serde(default)]
    pub calls: Vec<RemoteCall>,
    /// What fails together with this dependency: a provider, a region, a shared input such as
    /// one retrieval result. `validate` warns when a fallback or a parallel branch shares its
    /// primary's domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_domain: Option<String>,
    /// Long-running work: a call returns a task handle at once and the work runs at `runner`
    /// (A2A tasks, MCP tasks); this dependency's servers answer the protocol's requests.
    #[serde(default)]
    pub task: Option<TaskSpec>,
    /// A model provider's calls shaped by tokens: time to first token plus output tokens times
    /// time per output token, token quotas, prices (docs/scenario.md section 4.6).
    #[serde(default)]
    pub tokens: Option<TokensSpec>,
    /// A human approval desk instead of a service (docs/scenario.md section 4.7): steps at this
    /// dependency wait for a person's decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalSpec>,
    /// A cache in front of this dependency with its contract and key space (docs/essay.md
    /// section 23); a policy uses it through `[policy.P.cache.<dependency>]`. Not written when
    /// absent, so a scenario without one keeps its digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheSpec>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct ApprovalSpec {
    /// A human's time to decide, counted in working time (a distribution in ms).
    pub decision_time: ServiceTime,
    /// People deciding, first come first served; absent: unlimited (nobody queues).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvers: Option<u32>,
    /// The share of decisions that approve (the rest refuse); default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_share: Option<f64>,
    /// The business expiry: a request nobody decided this long after it was made lapses.
    pub expires_after_s: f64,
    /// When people decide; absent: at any hour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_hours: Option<WorkingHoursSpec>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct WorkingHoursSpec {
    /// Opening hour of day, 0 <= start_h < end_h <= 24 (fractions allowed: 8.5 is 08:30).
    pub start_h: f64,
    pub end_h: f64,
    /// Open days: "mon" .. "sun"; default Monday to Friday.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub days: Option<Vec<String>>,
    /// Where virtual time 0 falls, in hours after Monday 00:00 (0 <= h < 168); default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub week_hour_at_start: Option<f64>,
}

/// A dependency's cache (world::cache): the essay's `cache_contract` with units last, and the
/// key space its lookups draw from.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct CacheSpec {
    /// What is cached (a label, e.g. policy-document).
    #[serde(default)]
    pub data_class: Option<String>,
    /// global (default), tenant or user: whose lookups share entries.
    #[serde(default)]
    pub cache_scope: Option<String>,
    /// An entry is fresh this long after it was stored; 0: never fresh.
    pub fresh_ttl_s: f64,
    /// After its fresh TTL, an entry may still answer this long when the dependency fails
    /// (RFC 5861 stale-if-error; default 0).
    #[serde(default)]
    pub stale_if_error_s: Option<f64>,
    /// A not-found answer is kept this long (default 0: not kept).
    #[serde(default)]
    pub negative_ttl_s: Option<f64>,
    /// A stale answer carries its time and source: the run is degraded and its evidence stale
    /// (default true); false serves it as if fresh.
    #[serde(default)]
    pub provenance_required: Option<bool>,
    /// Task classes (a step's `task_class`) never served a stale entry.
    #[serde(default)]
    pub forbidden_for: Vec<String>,
    /// Keys per scope (per tenant, per user, or in all).
    pub keys: u32,
    /// uniform (default) or zipf: how a lookup picks its key.
    #[serde(default)]
    pub popularity: Option<String>,
    /// The Zipf law's exponent s: key k (from 1) has weight k^-s (default 1).
    #[serde(default)]
    pub zipf_exponent: Option<f64>,
    /// The share of keys the dependency finds nothing for (default 0).
    #[serde(default)]
    pub not_found_ratio: Option<f64>,
    /// With cache_scope = "user": the users whose runs draw keys, one drawn per run.
    #[serde(default)]
    pub users: Option<u32>,
    /// A lookup's own time (default 0).
    #[serde(default)]
    pub lookup_ms: Option<f64>,
    /// The TTL each result carries (MCP 2026-07-28's `ttlMs` on a list or read result), drawn
    /// once per key; an entry is fresh for the lesser of it and `fresh_ttl_s` (default: no
    /// hint, every entry fresh for `fresh_ttl_s`).
    #[serde(default)]
    pub result_ttl_ms: Option<ServiceTime>,
}

/// How a policy's runtime uses a dependency's cache (runtime::cache_use).
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct CacheUseSpec {
    /// Serve a stale entry within the contract's window when the dependency fails (default true).
    #[serde(default)]
    pub stale_if_error: Option<bool>,
    /// Concurrent misses on one key wait for one call (default true).
    #[serde(default)]
    pub single_flight: Option<bool>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct TokensSpec {
    /// Time to first token for an empty prompt (ms); the prompt adds `ttft_ms_per_1k_input_tokens`.
    pub time_to_first_token: ServiceTime,
    /// Prefill: how much each 1 000 input tokens add to the time to first token (ms).
    #[serde(default)]
    pub ttft_ms_per_1k_input_tokens: f64,
    /// Time per output token (ms), drawn once per attempt (the request's decoding speed).
    pub time_per_output_token: ServiceTime,
    /// Generation stops here (finish reason `length`).
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    /// Token counts of callers that declare none (a remote agent's calls).
    #[serde(default)]
    pub input_tokens: Option<TokenCount>,
    #[serde(default)]
    pub output_tokens: Option<TokenCount>,
    /// Quotas, continuously replenished buckets that hold a minute's worth.
    #[serde(default)]
    pub requests_per_minute: Option<f64>,
    /// Input and output tokens together (OpenAI's TPM).
    #[serde(default)]
    pub tokens_per_minute: Option<f64>,
    /// Input tokens alone (Anthropic's ITPM).
    #[serde(default)]
    pub input_tokens_per_minute: Option<f64>,
    /// Output tokens alone (Anthropic's OTPM).
    #[serde(default)]
    pub output_tokens_per_minute: Option<f64>,
    #[serde(default)]
    pub price_per_million_input_tokens: f64,
    #[serde(default)]
    pub price_per_million_output_tokens: f64,
    /// Cached input tokens' price; defaults to the input price.
    #[serde(default)]
    pub price_per_million_cached_input_tokens: Option<f64>,
    /// The share of input tokens read from the provider's prompt cache.
    #[serde(default)]
    pub cache_hit_ratio: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct TaskSpec {
    /// a2a (default) or mcp: the names of states and calls in traces.
    #[serde(default)]
    pub protocol: Option<String>,
    /// The dependency that does the work: its servers are the remote task capacity, its
    /// queue the remote task queue, its service time the work time.
    pub runner: String,
    /// The poll interval the server advertises (MCP pollIntervalMs).
    #[serde(default)]
    pub poll_interval_ms: Option<f64>,
    /// A task not ended this long after its creation fails (MCP ttlMs).
    #[serde(default)]
    pub ttl_ms: Option<f64>,
    /// honor (default), late or ignore: what the remote side does with a cancel.
    #[serde(default)]
    pub cancel: Option<String>,
    /// With cancel = "late": how long after the request the task stops.
    #[serde(default)]
    pub late_cancel_ms: Option<f64>,
    /// Cost units per second of work, accrued while the task runs.
    #[serde(default)]
    pub cost_per_s: f64,
    /// canceled (default), not_cancelable or working: what an A2A server answers a cancel whose
    /// work goes on.
    #[serde(default)]
    pub ignored_cancel_answer: Option<String>,
    /// fail (default) or delete: what ttl_ms does to a task.
    #[serde(default)]
    pub on_ttl: Option<String>,
    /// second_task (default) or deduplicate: what the server does with a message sent again
    /// with the same message id.
    #[serde(default)]
    pub on_repeated_message: Option<String>,
    /// The share of tasks that ask for the user's input once, before their work (default 0).
    #[serde(default)]
    pub input_required_ratio: Option<f64>,
    /// The scripted user's time to answer, from the moment its client learns of the request;
    /// none: the user never answers.
    #[serde(default)]
    pub input_answer_time: Option<ServiceTime>,
    /// The share of input requests the scripted user never answers (default 0).
    #[serde(default)]
    pub input_unanswered_ratio: Option<f64>,
    /// A push notification's time from the task's update to the client's webhook (default 0).
    #[serde(default)]
    pub push_delivery_time: Option<ServiceTime>,
    /// The share of push notifications that never arrive (default 0).
    #[serde(default)]
    pub push_lost_ratio: Option<f64>,
    /// The share of delivered push notifications delivered a second time (default 0).
    #[serde(default)]
    pub push_duplicate_ratio: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct QueuePolicySpec {
    /// fifo (default), lifo or priority.
    #[serde(default)]
    pub order: Option<String>,
    /// Drop an attempt that has waited this long (OVERLOADED to its caller).
    #[serde(default)]
    pub max_wait_ms: Option<f64>,
    /// reject_new (default) or reject_lowest_priority (needs order = "priority").
    #[serde(default)]
    pub overflow: Option<String>,
    /// Skip attempts whose caller has given up instead of serving them.
    #[serde(default)]
    pub drop_abandoned: bool,
    /// Adaptive queue timeouts (CoDel as Facebook runs it): { target_ms = 5, interval_ms = 100 }.
    #[serde(default)]
    pub codel: Option<CodelSpec>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct CodelSpec {
    #[serde(default)]
    pub target_ms: Option<f64>,
    #[serde(default)]
    pub interval_ms: Option<f64>,
}

fn default_queue_capacity() -> u32 {
    1_000
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct RatePhase {
    /// The phase lasts until this time; the last phase's rate continues to the end.
    pub until_s: f64,
    pub rate_per_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct Arrivals {
    /// Constant Poisson rate.
    #[serde(default)]
    pub rate_per_s: Option<f64>,
    /// Piecewise-constant Poisson rate.
    #[serde(default)]
    pub profile: Option<Vec<RatePhase>>,
    /// k6's ramping-arrival-rate: the rate ramps linearly from the previous stage's target
    /// (`start_rate` for the first) to this stage's target over its duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<Vec<Stage>>,
    /// The rate at t = 0 when `stages` are given, per `time_unit_s` (k6's startRate, default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_rate: Option<f64>,
    /// The period `start_rate` and the stages' targets count root runs in (k6's timeUnit,
    /// default 1 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_unit_s: Option<f64>,
    /// A closed population of users instead of open arrivals (Locust's users, k6's ramping-vus).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<Users>,
}

/// One stage of a ramp: the target (a rate, or a number of users) is reached linearly at its end.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct Stage {
    pub duration_s: f64,
    pub target: f64,
}

/// A closed population: each user starts a root run, waits for its answer (or gives up after
/// `abandon_after_ms`), thinks for `wait_time`, and starts the next.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct Users {
    /// A fixed number of users (Locust's --users); or give `stages`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<f64>,
    /// Users started per second until `count` run (Locust's --spawn-rate); all at t = 0 without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawn_rate: Option<f64>,
    /// The number of users ramps linearly to each stage's target (k6's ramping-vus).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<Vec<Stage>>,
    /// Users at t = 0 when `stages` are given (k6's startVUs; default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_users: Option<f64>,
    /// The think time between an answer (or giving up) and the next run.
    pub wait_time: WaitTime,
    /// A user stops waiting for an answer after this long; the run goes on in the system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abandon_after_ms: Option<f64>,
    /// The share of users who leave for good after a failed, late or abandoned run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leave_after_failure: Option<f64>,
}

/// Locust's wait_time functions: exactly one of them.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct WaitTime {
    /// Locust's constant(s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constant_s: Option<f64>,
    /// Locust's between(min, max): uniform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub between_s: Option<Vec<f64>>,
    /// Exponential with this mean (a memoryless human).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exponential_mean_s: Option<f64>,
    /// Locust's constant_pacing(s): a run starts every s seconds at most (the wait is s less
    /// the time the last run took, 0 when it took longer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constant_pacing_s: Option<f64>,
    /// Locust's constant_throughput(x): constant_pacing(1 / x).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constant_throughput_per_s: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct Resubmit {
    /// Probability that a user resubmits a run that ended failed or past its deadline.
    pub probability: f64,
    pub delay_ms: f64,
    #[serde(default = "one")]
    pub max_resubmissions: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct Workflow {
    pub name: String,
    pub arrivals: Arrivals,
    pub deadline_ms: f64,
    #[serde(default)]
    pub resubmit: Option<Resubmit>,
    /// Who the traffic belongs to: bulkheads and retry budgets may be keyed by it.
    #[serde(default)]
    pub tenant: Option<String>,
    /// critical_plus, critical (default), sheddable_plus or sheddable.
    #[serde(default)]
    pub priority: Option<String>,
    /// Estimated load of one run relative to a typical one (docs/essay.md section 15), default 1.
    #[serde(default)]
    pub load_units: Option<f64>,
    /// The run may be turned into a durable asynchronous task when admission says it cannot
    /// finish in time (docs/essay.md section 7); counted, not simulated further yet.
    #[serde(default)]
    pub async_allowed: bool,
    #[serde(default, rename = "step")]
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Criticality {
    #[default]
    Hard,
    Soft,
    /// Used for reference only (docs/essay.md section 4): used when it answers within the
    /// step's `advisory_wait_ms`, else omitted with a notice; never retried, never fails the run.
    Advisory,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    #[default]
    Read,
    Write,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Idempotency {
    /// The dependency has no key support: every committed attempt is a new effect.
    #[default]
    None,
    /// The dependency returns the first result for a repeated idempotency key.
    Key,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct Step {
    pub id: String,
    #[serde(default)]
    pub after: Vec<String>,
    pub dependency: String,
    #[serde(default)]
    pub criticality: Criticality,
    #[serde(default)]
    pub effect: Effect,
    #[serde(default)]
    pub idempotency: Idempotency,
    #[serde(default)]
    pub status_lookup: bool,
    /// Dependency called after the step's own attempts fail (reads only).
    #[serde(default)]
    pub fallback: Option<String>,
    /// The step's input (prompt and context) in tokens, a distribution drawn once per run and
    /// step, so every attempt, every policy and the fallback see the same count: a dependency
    /// with a smaller max_context_tokens cannot serve it. `context_tokens` is its older name.
    #[serde(default, alias = "context_tokens")]
    pub input_tokens: Option<TokenCount>,
    /// The step's output in tokens, drawn like input_tokens (at a token-shaped model).
    #[serde(default)]
    pub output_tokens: Option<TokenCount>,
    /// What kind of task the step is, for fallback contracts (a dependency's forbidden_task_classes).
    #[serde(default)]
    pub task_class: Option<String>,
    /// At a task dependency: what becomes of a result that arrives after the caller stopped
    /// waiting: cache, keep_draft, review or discard (default: review for writes, discard
    /// for a model, cache otherwise).
    #[serde(default)]
    pub late_result: Option<String>,
    /// An advisory step's window: how long after it starts its result is still used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advisory_wait_ms: Option<f64>,
    /// A k-of-n quorum: the step sends n branches and succeeds when k agree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quorum: Option<QuorumStepSpec>,
}

/// A step's `quorum` table (docs/scenario.md 6.2).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct QuorumStepSpec {
    /// Branches that must agree: a strict majority of n.
    pub k: u32,
    /// Branches, each a call to the step's dependency (default: one per `dependencies` entry).
    #[serde(default)]
    pub n: Option<u32>,
    /// One branch per entry, the first the step's own dependency (e.g. three models).
    #[serde(default)]
    pub dependencies: Option<Vec<String>>,
    /// `all` (every branch at once, the rest cancelled once decided) or `as_needed` (k at
    /// first, one more only when the answers so far cannot decide).
    #[serde(default)]
    pub send: Option<String>,
    /// Probability, per run, that the input the sharing branches have in common (a retrieval
    /// result, a prompt) is bad and makes every one of them wrong together.
    #[serde(default)]
    pub shared_cause_probability: Option<f64>,
    /// The branches (0-based) that share it; default every branch.
    #[serde(default)]
    pub shared_cause_branches: Option<Vec<u32>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct Fault {
    /// latency, timeout, errors, capacity, down, rate_limit, lost_response, and at a task
    /// dependency stuck_task, input_required, ignored_cancel, late_cancel, late_result,
    /// lost_handle; at a remote agent delegation_loop
    pub kind: String,
    pub target: String,
    pub start_s: f64,
    pub duration_s: f64,
    /// Probability that the fault applies to a given attempt (Toxiproxy's name). Default 1.
    #[serde(default)]
    pub toxicity: Option<f64>,
    /// latency: replacement service-time distribution.
    #[serde(default)]
    pub service_time: Option<ServiceTime>,
    /// latency: multiplies the drawn service time.
    #[serde(default)]
    pub factor: Option<f64>,
    /// latency: added to the drawn service time (Toxiproxy `latency`).
    #[serde(default)]
    pub latency_ms: Option<f64>,
    /// latency: uniform extra in [0, jitter_ms) (Toxiproxy `jitter`).
    #[serde(default)]
    pub jitter_ms: Option<f64>,
    /// errors: added per-attempt error probabilities.
    #[serde(default)]
    pub errors: Option<ErrorMix>,
    /// capacity: the number of servers during the window.
    #[serde(default)]
    pub servers: Option<u32>,
    /// down: the Retry-After its 503 carries (none: the connection is refused).
    #[serde(default)]
    pub retry_after_ms: Option<f64>,
    /// rate_limit: the quota during the window.
    #[serde(default)]
    pub per_s: Option<f64>,
    #[serde(default)]
    pub burst: Option<f64>,
    /// delegation_loop: the timeout of each attempt of the hop back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<f64>,
    /// delegation_loop: attempts of the hop back (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct Backoff {
    /// none, constant, exponential
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub base_ms: Option<f64>,
    #[serde(default)]
    pub max_ms: Option<f64>,
    /// none, full, equal, decorrelated, randomized
    #[serde(default)]
    pub jitter: Option<String>,
    /// Exponential only: growth of the cap per retry (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiplier: Option<f64>,
    /// Randomized jitter only: the share either side of the cap (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub randomization_factor: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct Retry {
    #[serde(default)]
    pub max_attempts: Option<u32>,
    #[serde(default)]
    pub backoff: Option<Backoff>,
    #[serde(default)]
    pub honor_retry_after: Option<bool>,
    /// Failure kinds that may be retried, replacing the default table.
    #[serde(default)]
    pub retry_on: Option<Vec<String>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct Budget {
    #[serde(default)]
    pub retry_tokens: Option<u32>,
    #[serde(default)]
    pub concurrency_tokens: Option<u32>,
    #[serde(default)]
    pub cost_units: Option<f64>,
    /// Input plus output tokens of a run's token-shaped model calls.
    #[serde(default)]
    pub model_tokens: Option<f64>,
    /// Money a run may spend at the models' token prices.
    #[serde(default)]
    pub money: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct StepOverride {
    #[serde(default)]
    pub timeout_ms: Option<f64>,
    /// At a token-shaped model: give up when the first token has not come this long after
    /// the attempt was sent (a streaming client's first-chunk timeout).
    #[serde(default)]
    pub first_token_timeout_ms: Option<f64>,
    #[serde(default)]
    pub max_attempts: Option<u32>,
    #[serde(default)]
    pub deadline_reserve_ms: Option<f64>,
    #[serde(default)]
    pub predicted_attempt_ms: Option<f64>,
    #[serde(default)]
    pub fallback: Option<String>,
    /// Fallback candidates tried in order (docs/essay.md section 17's `candidates`); `fallback`
    /// is the one-candidate form, and the two are not given together.
    #[serde(default)]
    pub fallbacks: Option<Vec<FallbackCandidateSpec>>,
    /// An approved snapshot older than this is stale: not evidence this step may use.
    #[serde(default)]
    pub max_snapshot_age_s: Option<f64>,
    /// fail (default) or handoff: what a hard step that gives up does to its run.
    #[serde(default)]
    pub on_give_up: Option<String>,
    /// The least quality_score the step's fallback must have.
    #[serde(default)]
    pub fallback_quality_floor: Option<f64>,
    /// fail (default) or repair_once_then_handoff: what a RESULT_INVALID answer does.
    #[serde(default)]
    pub on_schema_failure: Option<String>,
    /// A check of every answer the step gets (runtime/validator.rs): what it finds becomes
    /// RESULT_INVALID. Left out of the serialized scenario when absent, so a scenario without
    /// one keeps its `scenario_digest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validator: Option<ValidatorSpec>,
}

/// A step's validator (docs/scenario.md 8.4): one check, its time and cost per answer, and
/// the share of each bad-result kind it detects.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct ValidatorSpec {
    /// schema, length or grounding.
    pub check: String,
    #[serde(default)]
    pub latency_ms: f64,
    #[serde(default)]
    pub cost_units: f64,
    /// Bad-result kind to the share of it the check detects, in [0, 1].
    pub detects: std::collections::BTreeMap<String, f64>,
}

/// One fallback candidate of a step (docs/essay.md section 17).
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct FallbackCandidateSpec {
    pub dependency: String,
    /// The task classes it may serve (the step's `task_class`); absent: every class.
    #[serde(default)]
    pub allowed_task_classes: Option<Vec<String>>,
    /// The share of the step's drawn input tokens sent to it (a smaller context, with its
    /// quality cost); absent: the whole context.
    #[serde(default)]
    pub context_reduction: Option<f64>,
    /// The least quality_score it must have, as `fallback_quality_floor`.
    #[serde(default)]
    pub quality_floor: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct Policy {
    #[serde(default)]
    pub deadline_propagation: Option<bool>,
    /// Per-attempt timeout cap; 0 means no timeout.
    #[serde(default)]
    pub timeout_ms: Option<f64>,
    /// At token-shaped models: the first token's timeout, apart from the total (0 or absent:
    /// none), as provider SDKs have both.
    #[serde(default)]
    pub first_token_timeout_ms: Option<f64>,
    #[serde(default)]
    pub retry: Option<Retry>,
    #[serde(default)]
    pub budget: Option<Budget>,
    /// retry, reconcile_first, handoff
    #[serde(default)]
    pub on_effect_unknown: Option<String>,
    /// per_call (one key for all attempts of a logical call) or per_attempt (a fresh key each
    /// attempt, which defeats the dependency's deduplication).
    #[serde(default)]
    pub idempotency_key: Option<String>,
    #[serde(default)]
    pub steps: BTreeMap<String, StepOverride>,
    /// Circuit breakers (resilience4j or Polly semantics), applied in file order. The tables of
    /// every mechanism array are read by the mechanism that owns them (runtime::guard).
    #[serde(default)]
    pub circuit_breaker: Vec<RawTable>,
    /// Concurrency limits (resilience4j's semaphore bulkhead).
    #[serde(default)]
    pub bulkhead: Vec<RawTable>,
    /// Shared retry budgets and client-side throttling.
    #[serde(default)]
    pub retry_budget: Vec<RawTable>,
    /// Hedged requests for read-only steps (Polly / gRPC hedging).
    #[serde(default)]
    pub hedging: Option<Hedging>,
    /// Client-side load shedding by priority, or Envoy-style admission control.
    #[serde(default)]
    pub load_shedding: Vec<RawTable>,
    /// Client-side rate limiters (resilience4j's RateLimiter).
    #[serde(default)]
    pub rate_limiter: Vec<RawTable>,
    /// Admission of root runs against their deadline (docs/essay.md section 7).
    #[serde(default)]
    pub admission: Option<AdmissionSpec>,
    /// Limits on one run's fan-out (docs/essay.md section 22).
    #[serde(default)]
    pub fan_out: Option<FanOutSpec>,
    /// How the mode machine reads its signals: evaluation interval, error budget, recovery
    /// (docs/essay.md sections 16 and 24).
    #[serde(default)]
    pub degradation: Option<DegradationSpec>,
    /// The rules that move a workflow between degradation modes, in the essay's
    /// `runtime_policy` shape: `when` -> `mode` with `actions`.
    #[serde(default)]
    pub runtime_policy: Vec<RuntimeRule>,
    /// How this policy's runtime tracks long-running tasks (every task dependency).
    #[serde(default)]
    pub task_client: Option<TaskClientSpec>,
    /// Provider SDK clients the runtime calls dependencies through, by dependency name: their
    /// own hidden retries inside the caller (docs/essay.md sections 2 and 28). Not written
    /// when empty, so a scenario without one keeps its digest.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sdk_client: BTreeMap<String, SdkClientSpec>,
    /// The dependencies' caches this policy's runtime looks in first, by dependency name
    /// (docs/essay.md section 23). Not written when empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cache: BTreeMap<String, CacheUseSpec>,
}

/// One dependency's SDK client (runtime::sdk_client); every default is openai-python's.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct SdkClientSpec {
    /// A client library at a pinned version whose defaults fill every field not set here
    /// (runtime::sdk_preset); none: openai-python's. Not written when absent, so a scenario
    /// without one keeps its digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Retries after the first attempt (default 2).
    #[serde(default)]
    pub max_retries: Option<u32>,
    /// The first retry's sleep before jitter (default 500).
    #[serde(default)]
    pub initial_delay_ms: Option<f64>,
    /// The sleep's cap before jitter (default 8000).
    #[serde(default)]
    pub max_delay_ms: Option<f64>,
    /// Each retry's sleep is the previous one times this (default 2).
    #[serde(default)]
    pub multiplier: Option<f64>,
    /// The most a sleep is shortened by, as a share: sleep x (1 - jitter x U) (default 0.25).
    #[serde(default)]
    pub jitter: Option<f64>,
    /// Failure kinds retried, and "timeout" (default: rate_limited, overloaded,
    /// transient_transport, permanent_provider, timeout).
    #[serde(default)]
    pub retry_on: Option<Vec<String>>,
    /// One hidden attempt's timeout; 0: none (default 600 000).
    #[serde(default)]
    pub timeout_ms: Option<f64>,
    /// honour (default), ignore or raise (botocore's x-amz-retry-after).
    #[serde(default)]
    pub retry_after: Option<String>,
    /// The longest Retry-After honoured (default 120 000).
    #[serde(default)]
    pub retry_after_max_ms: Option<f64>,
    /// give_up (default), backoff or sleep: a Retry-After beyond the cap.
    #[serde(default)]
    pub retry_after_over_max: Option<String>,
    /// Each hidden retry takes a root retry token and must fit the root deadline (default false).
    #[serde(default)]
    pub charged_to_root_budget: Option<bool>,
    /// The first retry's sleep after a throttling error (RATE_LIMITED); none: `initial_delay_ms`
    /// (botocore: 1000). This and the quota's fields are not written when absent, so a scenario
    /// without them keeps its digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttling_initial_delay_ms: Option<f64>,
    /// The capacity of a retry quota shared by the client's calls (botocore: 500); none: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_quota: Option<u32>,
    /// What a retry takes from the quota (botocore: 14).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_cost: Option<u32>,
    /// What a retry after a throttling error takes (botocore: 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttling_retry_cost: Option<u32>,
    /// What a call answered without a retry gives back (botocore: 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_retry_increment: Option<u32>,
    /// The most added to every sleep: sleep + U x this (LiteLLM's router: 750). This and
    /// `min_delay_ms` are not written when absent, so a scenario without them keeps its digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_added_ms: Option<f64>,
    /// The backoff before its cap is at least this (LiteLLM's router `retry_after`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_delay_ms: Option<f64>,
    /// Every send waits for a token from a client-side rate limiter that turns on at the
    /// first throttling answer (botocore's adaptive retry mode; default false). Not written
    /// when absent, so a scenario without it keeps its digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_rate_limiter: Option<bool>,
    /// Retries by the first failure's kind (or `timeout`), over `max_retries` (LiteLLM's
    /// router `retry_policy`); not written when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries_by_kind: Option<std::collections::BTreeMap<String, u32>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct DegradationSpec {
    /// Signals are read and rules evaluated this often (default 5000).
    #[serde(default)]
    pub evaluation_interval_ms: Option<f64>,
    /// A return to a degraded mode within this long of leaving one counts as a flap (default 300 000).
    #[serde(default)]
    pub flap_window_ms: Option<f64>,
    /// The most flaps per hour `explore` accepts (default 6).
    #[serde(default)]
    pub max_flaps_per_hour: Option<f64>,
    #[serde(default)]
    pub error_budget: Option<ErrorBudgetSpec>,
    #[serde(default)]
    pub recovery: Option<RecoverySpec>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct ErrorBudgetSpec {
    /// The share of good root runs the SLO promises (default 0.99).
    #[serde(default)]
    pub objective: Option<f64>,
    /// auto_completion (default), full_quality, on_time or safe_outcome: which runs are good.
    #[serde(default)]
    pub sli: Option<String>,
    /// The rolling SLO period the budget is spent over (default 86 400: one day).
    #[serde(default)]
    pub period_s: Option<f64>,
    /// Runs a window (or the period) needs before it is judged (default 100).
    #[serde(default)]
    pub min_runs: Option<u32>,
    /// excluded (default), bad or good: how runs refused by the policy itself count.
    #[serde(default)]
    pub refused_runs: Option<String>,
    /// Multiwindow, multi-burn-rate rules (default: the SRE workbook's three, scaled to the period).
    #[serde(default)]
    pub burn_rate: Option<Vec<BurnRateSpec>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct BurnRateSpec {
    pub long_window_s: f64,
    pub short_window_s: f64,
    /// The budget's burn rate both windows must reach.
    pub burn_rate: f64,
    /// page (default: the budget is at risk) or ticket (reported only).
    #[serde(default)]
    pub severity: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct RecoverySpec {
    /// Consecutive evaluations the trigger must stay clear, with its breakers closed, before
    /// the canary starts (default 3).
    #[serde(default)]
    pub probe_evaluations: Option<u32>,
    /// Share of new runs sent on the normal policy while a watched breaker is half-open in a
    /// degraded mode, so that it gets trial calls (default 0.05).
    #[serde(default)]
    pub probe_share: Option<f64>,
    /// Shares of new runs on the normal policy, stage by stage (default [0.05, 0.25, 1.0]).
    #[serde(default)]
    pub canary_stages: Option<Vec<f64>>,
    /// How long each canary stage lasts at least (default 60 000).
    #[serde(default)]
    pub stage_ms: Option<f64>,
    /// Canary runs a stage needs before it is judged (default 20).
    #[serde(default)]
    pub min_canary_runs: Option<u32>,
    /// The canary's full-quality success ratio must stay at least this (default 0.95).
    #[serde(default)]
    pub canary_min_success: Option<f64>,
    /// The canary's deadline-miss ratio may exceed the other runs' by at most this (default 0.05).
    #[serde(default)]
    pub canary_max_deadline_miss_increase: Option<f64>,
    /// A stage that has not got min_canary_runs within this long fails (default 600 000, Flagger's).
    #[serde(default)]
    pub progress_deadline_ms: Option<f64>,
    /// Each failed recovery in a row multiplies the next dwell by this (default 2).
    #[serde(default)]
    pub backoff_multiplier: Option<f64>,
    /// The longest dwell the back-off reaches (default 1 800 000).
    #[serde(default)]
    pub max_dwell_ms: Option<f64>,
    /// healthy, at_risk, exhausted or integrity_incident: while the budget is at least this, no
    /// new canary run starts (default: never).
    #[serde(default)]
    pub stop_canary_when_budget: Option<String>,
    /// automatic (default) or manual: a human approves the return to normal.
    #[serde(default)]
    pub promotion: Option<String>,
    /// How long the human's approval takes (default 300 000).
    #[serde(default)]
    pub approval_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct RuntimeRule {
    /// The mode the rule moves its workflows to: constrained, degraded, handoff or paused.
    pub mode: String,
    /// The workflows it watches (default: every workflow, each with its own machine).
    #[serde(default)]
    pub workflow: Option<String>,
    /// All conditions must hold to enter.
    pub when: RuleCondition,
    /// All must hold to leave; default: `when` no longer holds.
    #[serde(default)]
    pub exit: Option<RuleCondition>,
    /// The least time in the mode before leaving it (default 60 000).
    #[serde(default)]
    pub min_dwell_ms: Option<f64>,
    /// `when` must hold this long, at every evaluation, before the rule latches (Prometheus's
    /// `for:`; default 0).
    #[serde(default)]
    pub for_ms: Option<f64>,
    #[serde(default)]
    pub actions: ModeActions,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct RuleCondition {
    /// The dependency the breaker, queue and refusal conditions look at.
    #[serde(default)]
    pub dependency: Option<String>,
    /// open (a breaker on the dependency is open), not_closed (open or half-open) or closed.
    #[serde(default)]
    pub breaker: Option<String>,
    /// healthy, at_risk, exhausted or integrity_incident: the budget state is at least this.
    #[serde(default)]
    pub completion_budget: Option<String>,
    #[serde(default)]
    pub queue_depth_above: Option<u32>,
    #[serde(default)]
    pub queue_depth_below: Option<u32>,
    /// A refusal reason (retry_budget, admission, shed, ...) and its rate per second over the
    /// last evaluation interval.
    #[serde(default)]
    pub refusal: Option<String>,
    #[serde(default)]
    pub refused_per_s_above: Option<f64>,
    #[serde(default)]
    pub refused_per_s_below: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct ModeActions {
    #[serde(default)]
    pub retry_tokens_per_run: Option<u32>,
    /// Steps of one run active at once.
    #[serde(default)]
    pub max_fanout: Option<u32>,
    #[serde(default)]
    pub disable_hedging: Option<bool>,
    /// Soft steps not started in this mode (omitted with a notice).
    #[serde(default)]
    pub omit_steps: Vec<String>,
    /// Every soft step not started.
    #[serde(default)]
    pub omit_soft_steps: Option<bool>,
    /// Steps that go straight to their fallback in this mode (the approved snapshot).
    #[serde(default)]
    pub fallback_first_steps: Vec<String>,
    /// normal (the primary, then the step's fallback), fallback_first (straight to the
    /// step's fallback) or no_fallback.
    #[serde(default)]
    pub fallback_mode: Option<String>,
    /// Writes go to a human with the evidence instead of being sent.
    #[serde(default)]
    pub pause_writes: Option<bool>,
    /// Writes to these dependencies only are paused (the essay's "pause the affected write
    /// capability"); the others go on.
    #[serde(default)]
    pub pause_writes_to: Vec<String>,
    /// New runs are refused (status lookups and reconciliation of runs in flight go on).
    #[serde(default)]
    pub refuse_new_runs: Option<bool>,
    /// A `paused` rule: the runs in flight when the workflow enters PAUSED are cancelled.
    #[serde(default)]
    pub cancel_in_flight: Option<bool>,
    /// Replaces the run's concurrency tokens.
    #[serde(default)]
    pub concurrency_tokens_per_run: Option<u32>,
    /// Replaces the run's cost budget.
    #[serde(default)]
    pub cost_units_per_run: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct AdmissionSpec {
    /// Time kept free beyond the predicted critical path (result assembly, reconciliation).
    #[serde(default)]
    pub reserve_ms: Option<f64>,
    /// reject (default) or async (where the workflow has async_allowed = true).
    #[serde(default)]
    pub on_insufficient: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct FanOutSpec {
    /// Steps of one run active at once; a soft step beyond it is omitted, a hard one waits.
    #[serde(default)]
    pub max_branches: Option<u32>,
    /// Attempts of one run in all (retries, hedges, fallbacks and lookups included).
    #[serde(default)]
    pub max_total_attempts: Option<u32>,
    /// Cost units of one run's attempts in flight at once.
    #[serde(default)]
    pub max_parallel_cost_units: Option<f64>,
    /// Delegation hops between A2A agents below the run's first agent (1..=16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_delegation_depth: Option<u32>,
    /// A delegation hop to an agent already on the chain is refused at once (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visited_agents_required: Option<bool>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct TaskClientSpec {
    /// poll (default) or subscribe.
    #[serde(default)]
    pub observe: Option<String>,
    /// The client's own poll interval (default 1000).
    #[serde(default)]
    pub poll_interval_ms: Option<f64>,
    /// Poll no faster than the server's advertised interval (default true).
    #[serde(default)]
    pub honor_poll_interval: Option<bool>,
    /// While the task works, each poll wait is the previous one times this (default 1: a
    /// fixed interval), up to poll_max_interval_ms (default none).
    #[serde(default)]
    pub poll_multiplier: Option<f64>,
    #[serde(default)]
    pub poll_max_interval_ms: Option<f64>,
    /// Wait at least a refusal's Retry-After before the request is made again (default true).
    #[serde(default)]
    pub honor_retry_after: Option<bool>,
    /// The longest Retry-After honoured (default none: no cap).
    #[serde(default)]
    pub retry_after_max_ms: Option<f64>,
    /// none (default), full or equal: randomises every wait.
    #[serde(default)]
    pub jitter: Option<String>,
    /// After a failed request: wait this long (default 1000), times retry_multiplier after
    /// each further failure (default 1), up to retry_max_interval_ms (default 30000).
    #[serde(default)]
    pub retry_interval_ms: Option<f64>,
    #[serde(default)]
    pub retry_multiplier: Option<f64>,
    #[serde(default)]
    pub retry_max_interval_ms: Option<f64>,
    /// Each protocol request's timeout (default 10000).
    #[serde(default)]
    pub request_timeout_ms: Option<f64>,
    /// find (default) or resend: what a create request that timed out leads to.
    #[serde(default)]
    pub on_send_timeout: Option<String>,
    /// A2A's SendMessageConfiguration.returnImmediately (default false: the send blocks until
    /// the task ends or is interrupted).
    #[serde(default)]
    pub return_immediately: Option<bool>,
    /// Send a cancel when the caller stops waiting (default true).
    #[serde(default)]
    pub cancel_on_abandon: Option<bool>,
    /// give_up (default) or wait: what the step does when its task asks for input.
    #[serde(default)]
    pub on_input_required: Option<String>,
    /// Pass the root run's deadline with the task (default false).
    #[serde(default)]
    pub propagate_deadline: Option<bool>,
    /// How long an orphan stays on the orphan queue before it is escalated (default 3600000).
    #[serde(default)]
    pub orphan_ttl_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[serde(remote = "Self")]
pub struct Hedging {
    /// Wait this long for an answer before sending the next hedge (Polly's Delay, 2 s).
    #[serde(default)]
    pub delay_ms: Option<f64>,
    /// Hedges beyond the first attempt (Polly's MaxHedgedAttempts, 1; at most 10).
    #[serde(default)]
    pub max_hedged_attempts: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(remote = "Self")]
pub struct Slo {
    /// Limits on paired differences candidate - baseline.
    #[serde(default)]
    pub regression: BTreeMap<String, Vec<String>>,
    /// Thresholds on the candidate's metrics, k6 style: `"metric" = ["< 0.05"]`.
    #[serde(flatten)]
    pub thresholds: BTreeMap<String, Vec<String>>,
}

/// The arrays of `[policy.<name>]` whose tables are mechanisms, in the order they are compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MechanismArray {
    RetryBudget,
    LoadShedding,
    CircuitBreaker,
    RateLimiter,
    Bulkhead,
}

impl MechanismArray {
    pub const ALL: [MechanismArray; 5] = [
        MechanismArray::RetryBudget,
        MechanismArray::LoadShedding,
        MechanismArray::CircuitBreaker,
        MechanismArray::RateLimiter,
        MechanismArray::Bulkhead,
    ];

    /// The array's name in the file.
    pub fn name(self) -> &'static str {
        match self {
            MechanismArray::RetryBudget => "retry_budget",
            MechanismArray::LoadShedding => "load_shedding",
            MechanismArray::CircuitBreaker => "circuit_breaker",
            MechanismArray::RateLimiter => "rate_limiter",
            MechanismArray::Bulkhead => "bulkhead",
        }
    }

    pub fn tables(self, policy: &Policy) -> &[RawTable] {
        match self {
            MechanismArray::RetryBudget => &policy.retry_budget,
            MechanismArray::LoadShedding => &policy.load_shedding,
            MechanismArray::CircuitBreaker => &policy.circuit_breaker,
            MechanismArray::RateLimiter => &policy.rate_limiter,
            MechanismArray::Bulkhead => &policy.bulkhead,
        }
    }
}

/// `Deserialize` for each struct: a map goes to the derived code, anything else (a sequence
/// above all) is an "invalid type" error at the value's position. `Serialize` forwards.
macro_rules! tables_only {
    ($($t:ident),* $(,)?) => {$(
        impl<'de> ::serde::Deserialize<'de> for $t {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Table;
                impl<'de> ::serde::de::Visitor<'de> for Table {
                    type Value = $t;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("a table with named fields (a JSON object)")
                    }
                    fn visit_map<A: ::serde::de::MapAccess<'de>>(self, map: A) -> Result<$t, A::Error> {
                        $t::deserialize(::serde::de::value::MapAccessDeserializer::new(map))
                    }
                    // Only an array is told it is positional: a string or a number is not.
                    fn visit_seq<A: ::serde::de::SeqAccess<'de>>(self, _: A) -> Result<$t, A::Error> {
                        Err(<A::Error as ::serde::de::Error>::invalid_type(
                            ::serde::de::Unexpected::Seq,
                            &"a table with named fields (a JSON object), not a positional array",
                        ))
                    }
                }
                // `any`, not `map`: a JSON array reaches `visit_seq` too (serde_json answers `map` for
                // any other type with `expecting` alone).
                deserializer.deserialize_any(Table)
            }
        }
        impl ::serde::Serialize for $t {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                $t::serialize(self, serializer)
            }
        }
    )*};
}

/// Mechanisms' own tables (runtime::guard) use it too.
pub(crate) use tables_only;

tables_only!(
    Scenario,
    ApprovalSpec,
    WorkingHoursSpec,
    Simulation,
    ServiceTime,
    TokenCount,
    ErrorMix,
    RateLimit,
    RemoteCall,
    Dependency,
    TaskSpec,
    TokensSpec,
    TaskClientSpec,
    SdkClientSpec,
    CacheSpec,
    CacheUseSpec,
    QueuePolicySpec,
    CodelSpec,
    RatePhase,
    Arrivals,
    Stage,
    Users,
    WaitTime,
    Resubmit,
    Workflow,
    Step,
    QuorumStepSpec,
    Fault,
    Backoff,
    Retry,
    Budget,
    StepOverride,
    FallbackCandidateSpec,
    ValidatorSpec,
    Policy,
    AdmissionSpec,
    FanOutSpec,
    Hedging,
    DegradationSpec,
    ErrorBudgetSpec,
    BurnRateSpec,
    RecoverySpec,
    RuntimeRule,
    RuleCondition,
    ModeActions,
    Slo,
);

#[cfg(test)]
mod tests {
    /// A struct derived the plain way would accept a positional array again.
    #[test]
    fn every_struct_goes_through_tables_only() {
        let text = include_str!("types.rs");
        let macro_call = &text[text.find("\ntables_only!(\n").expect("the macro is called")..];
        let mut previous = "";
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("pub struct ") {
                let name: String = rest.chars().take_while(|c| c.is_alphanumeric()).collect();
                assert_eq!(previous, "#[serde(remote = \"Self\")]", "{name} lacks remote = \"Self\"");
                assert!(macro_call.contains(&format!("    {name},\n")), "{name} is not in tables_only!");
            }
            previous = line;
        }
    }
}
