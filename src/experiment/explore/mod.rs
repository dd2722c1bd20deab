//! `faultline explore`: swarm testing of a policy against random fault schedules. Each schedule
//! enables a random subset of fault kinds, then draws faults (kind, target, window, toxicity,
//! strength) from them; every run is checked against invariants: the scenario's [slo]
//! thresholds as properties of each replication, the metric identities of docs/metrics.md
//! section 5, and what the policy promises (no duplicate effect when it reconciles writes with
//! one key per call; no run past its deadline when the deadline propagates), and each run
//! against the per-run invariants of `run_checks.rs` (retries within every budget, status
//! lookups never refused for capacity). The first failing schedule is shrunk, delta-debugging
//! style, to a small one that still breaks the same invariant, written as a scenario file that
//! `run` reproduces, and the run that shows the violation is traced as `replay` would.

pub mod run_checks;

use crate::engine::{Model, simulate_following};
use crate::experiment::batch::load::{collect_overrides, compile_scenario};
use crate::experiment::batch::slo::{Check, Comparison, compile_slo};
use crate::experiment::batch::workers::{Workers, replication_seed};
use crate::experiment::command::CommandError;
use crate::experiment::output::folder::write_atomically;
use crate::experiment::replay::spans::render_tree;
use crate::experiment::replay::{FirstRun, RunSelector, catalogue, first_matching, trace_run, write_trace};
use crate::metrics::MetricMap;
use crate::runtime::decision::OnEffectUnknown;
use crate::scenario::{Dependency, ErrorMix, Fault, Scenario, ScenarioInput, Source};
use crate::sim::StreamKey;
use crate::world::fault_kind::{FaultKind, TargetNeed};
use rayon::prelude::*;
use run_checks::RunChecks;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct ExploreOptions {
    pub scenario: ScenarioInput,
    pub policy: String,
    pub schedules: u32,
    pub seed: u64,
    pub max_faults: usize,
    pub kinds: Vec<String>,
    pub keep_faults: bool,
    pub sets: Vec<String>,
    pub replications: Option<u32>,
    pub jobs: usize,
    pub out: Option<PathBuf>,
}

/// The most schedules one command explores, and the most simulation sets a shrink may spend.
pub const MAX_SCHEDULES: u32 = 1_000_000;
const MAX_SHRINK_STEPS: usize = 400;

/// A small splitmix64 stream per schedule, keyed by the explore seed and the schedule number,
/// so schedule k is the same whatever the thread count or the number of schedules.
struct Draws(u64);

impl Draws {
    fn new(seed: u64, schedule: u32) -> Draws {
        Draws(StreamKey::root(seed).with(u64::from(schedule)).value())
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Values written to a scenario file stay short: a tenth of a second, a hundredth of a share.
fn round_to(v: f64, step: f64) -> f64 {
    // Dividing by the inverse keeps 249.6 as 249.6 (multiplying by 0.1 gives 249.60000000000002).
    let per_unit = (1.0 / step).round();
    (v * per_unit).round() / per_unit
}

fn fault(kind: FaultKind, target: &str, start_s: f64, duration_s: f64) -> Fault {
    Fault {
        kind: kind.name().to_string(),
        target: target.to_string(),
        start_s,
        duration_s,
        toxicity: None,
        service_time: None,
        factor: None,
        latency_ms: None,
        jitter_ms: None,
        errors: None,
        servers: None,
        per_s: None,
        burst: None,
        retry_after_ms: None,
        timeout_ms: None,
        max_attempts: None,
    }
}

/// Draws schedule `index`: a swarm of enabled kinds, then 1 ..= max_faults faults from them.
fn draw_schedule(base: &Scenario, opts: &ExploreOptions, kinds: &[FaultKind], index: u32) -> Vec<Fault> {
    let mut d = Draws::new(opts.seed, index);
    let mut enabled: Vec<FaultKind> = kinds.iter().copied().filter(|_| d.unit() < 0.5).collect();
    if enabled.is_empty() {
        enabled.push(kinds[d.below(kinds.len())]);
    }
    let (warmup, duration) = (base.simulation.warmup_s, base.simulation.duration_s);
    let span = (duration - warmup).max(1.0);
    let count = 1 + d.below(opts.max_faults);
    (0..count)
        .map(|_| {
            let kind = enabled[d.below(enabled.len())];
            // Every dependency fits most kinds (then the draw is the one it always was); an
            // approval desk fits none, and a delegation loop needs an agent in a delegation.
            let fitting: Vec<&Dependency> = base.dependencies.iter().filter(|t| fits(base, kind, t)).collect();
            let target = fitting[d.below(fitting.len())];
            let start_s = round_to(warmup + d.unit() * span * 0.8, 0.1);
            let duration_s = round_to((d.unit() * 0.3 * span).max(1.0), 0.1);
            let mut f = fault(kind, &target.name, start_s, duration_s);
            let toxicity = round_to(0.05 + 0.95 * d.unit(), 0.01);
            match kind {
                FaultKind::Latency => {
                    f.factor = Some(round_to(1.5 + 8.5 * d.unit(), 0.1));
                    f.toxicity = Some(toxicity);
                }
                FaultKind::Timeout
                | FaultKind::LostResponse
                | FaultKind::Down
                | FaultKind::StuckTask
                | FaultKind::InputRequired
                | FaultKind::IgnoredCancel
                | FaultKind::LostHandle
                | FaultKind::CacheOutage => f.toxicity = Some(toxicity),
                FaultKind::ColdCache => {}
                FaultKind::LateCancel | FaultKind::LateResult => {
                    // 1 s to 60 s in steps of 100 ms.
                    f.latency_ms = Some((10.0 + 590.0 * d.unit()).round() * 100.0);
                    f.toxicity = Some(toxicity);
                }
                FaultKind::Errors => {
                    let p = round_to(0.05 + 0.45 * d.unit(), 0.01);
                    let mut mix = ErrorMix::default();
                    match d.below(3) {
                        0 => mix.overloaded = p,
                        1 => mix.transient_transport = p,
                        _ => mix.rate_limited = p,
                    }
                    f.errors = Some(mix);
                    f.toxicity = Some(toxicity);
                }
                FaultKind::Capacity => f.servers = Some((d.unit() * f64::from(target.servers)).floor() as u32),
                FaultKind::RateLimit => f.per_s = Some(round_to(1.0 + 99.0 * d.unit(), 0.1)),
                FaultKind::TruncatedResult
                | FaultKind::EmptyResult
                | FaultKind::SchemaViolation
                | FaultKind::StreamCut
                | FaultKind::PartialResult
                | FaultKind::StaleIndex => f.toxicity = Some(toxicity),
                FaultKind::SlowStream => {
                    f.factor = Some(round_to(1.5 + 8.5 * d.unit(), 0.1));
                    f.toxicity = Some(toxicity);
                }
                // 5 % to 50 % of the quota left.
                FaultKind::QuotaCut => f.factor = Some(round_to(0.05 + 0.45 * d.unit(), 0.01)),
                FaultKind::DelegationLoop => {
                    // 1 s to 10 s per attempt of the hop back.
                    f.timeout_ms = Some((10.0 + 90.0 * d.unit()).round() * 100.0);
                    f.toxicity = Some(toxicity);
                }
            }
            f
        })
        .collect()
}

/// What one run must satisfy, and how to check a replication's metrics against it.
struct Invariants {
    measured_s: f64,
    thresholds: Vec<Check>,
    no_duplicates: bool,
    deadline_ms: Option<f64>,
    /// The policy's bound on mode flaps, when it has modes.
    max_flaps_per_hour: Option<f64>,
}

/// A broken invariant: which, in which replication, and the figures that show it.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub invariant: String,
    pub replication: u32,
    pub detail: String,
    /// The kind of run that shows the violation, for its trace.
    pub run: FirstRun,
    /// The run that broke a per-run invariant, when one did.
    pub run_number: Option<u64>,
}

fn holds(c: Comparison, v: f64, t: f64) -> bool {
    match c {
        Comparison::Less => v < t,
        Comparison::LessOrEqual => v <= t,
        Comparison::Greater => v > t,
        Comparison::GreaterOrEqual => v >= t,
        Comparison::Equal => v == t,
        Comparison::NotEqual => v != t,
    }
}

/// Sums of per-name metrics that must equal a total (docs/metrics.md section 5).
/// `measured_s` is duration_s - warmup_s: what each breaker's time in its three states adds up to.
fn identity_sums(m: &MetricMap, measured_s: f64) -> Vec<(String, f64, f64)> {
    let sum = |prefix: &str, suffix: &str| -> f64 {
        m.iter().filter(|(k, _)| k.starts_with(prefix) && k.ends_with(suffix)).map(|(_, v)| *v).sum()
    };
    let get = |k: &str| m.get(k).copied().unwrap_or(0.0);
    // Every outcome, those of approval steps included (absent, so 0, without approvals).
    let outcomes: f64 = crate::vocab::Outcome::ALL.iter().map(|o| get(&format!("outcome_total.{}", o.name()))).sum();
    let mut checks = vec![
        ("outcomes add up to logical_run_total".to_string(), outcomes, get("logical_run_total")),
        (
            "dependency attempts add up to dependency_attempt_total".into(),
            sum("dependency.", ".attempt_total"),
            get("dependency_attempt_total"),
        ),
        (
            "dependency rejections add up to queue_rejected_total".into(),
            sum("dependency.", ".rejected_total"),
            get("queue_rejected_total"),
        ),
        (
            "failed steps add up to outcome_total.failed".into(),
            sum("step.", ".failed_total"),
            get("outcome_total.failed"),
        ),
    ];
    let breakers = m.keys().filter_map(|k| k.strip_prefix("breaker.")?.strip_suffix(".time_in_state_s.closed"));
    for label in breakers {
        let total = sum(&format!("breaker.{label}.time_in_state_s."), "");
        checks.push((format!("breaker {label}'s time in its states adds up to the measured time"), total, measured_s));
    }
    // With a cache: every lookup that needed the dependency (stale, expired, miss) either sent
    // the one call for its key or waited for the call already out (an outage's `unavailable`
    // lookups bypass the cache and are in neither).
    if m.contains_key("cache_dependency_call_total") {
        let needed: f64 = ["stale", "expired", "miss"].iter().map(|s| get(&format!("cache_lookup_total.{s}"))).sum();
        checks.push((
            "cache lookups that needed the dependency add up to its calls and merges".into(),
            needed,
            get("cache_dependency_call_total") + get("cache_single_flight_merge_total"),
        ));
    }
    for reason in ["bulkhead", "circuit_open", "expired", "fan_out", "retry_budget", "shed", "throttled"] {
        let total = format!("refused_total.{reason}");
        checks.push((
            format!("dependency refusals add up to {total}"),
            sum("dependency.", &format!(".{total}")),
            get(&total),
        ));
    }
    checks
}

/// The identities of docs/metrics.md section 5 that explore checks and `m` (one replication's
/// metrics) breaks, each named with its figures; empty when all hold. `measured_s` is
/// duration_s - warmup_s.
pub fn broken_identities(m: &MetricMap, measured_s: f64) -> Vec<String> {
    let sums = identity_sums(m, measured_s)
        .into_iter()
        .filter(|(_, sum, total)| (sum - total).abs() > 1e-6 * total.abs().max(1.0));
    let bounds = identity_bounds(m).into_iter().filter(|(_, part, whole)| *part > whole + 1e-9 * whole.abs());
    sums.map(|(name, a, b)| format!("{name}: {a} != {b}"))
        .chain(bounds.map(|(name, a, b)| format!("{name}: {a} > {b}")))
        .collect()
}

/// Metrics bounded by others (docs/metrics.md section 5): each (name, part, whole) holds
/// part <= whole. A metric the scenario lacks reads NaN, so its pair is not checked.
fn identity_bounds(m: &MetricMap) -> Vec<(String, f64, f64)> {
    let get = |k: &str| m.get(k).copied().unwrap_or(f64::NAN);
    let pairs = [
        ("hedge_won_total", "hedge_sent_total"),
        ("duplicate_effect_total", "effect_total"),
        ("duplicate_effect_run_total", "duplicate_effect_total"),
        // Caches: a stale run got at least one stale answer; an unmarked one is a stale run.
        ("cache_stale_run_total", "cache_stale_served_total"),
        ("cache_unmarked_stale_run_total", "cache_stale_run_total"),
        // Delegation: a revisit is a hop, a hop an attempt.
        ("delegation_revisit_total", "delegation_hop_total"),
        ("delegation_hop_total", "dependency_attempt_total"),
        // Approvals: a run ended by a verdict had a request that got it.
        ("outcome_total.approval_refused", "approval_total.refused"),
        ("outcome_total.approval_expired", "approval_total.expired"),
        ("outcome_total.awaiting_approval", "approval_total.pending_at_deadline"),
    ];
    let mut bounds: Vec<(String, f64, f64)> =
        pairs.iter().map(|(a, b)| (format!("{a} <= {b}"), get(a), get(b))).collect();
    // Bad results: a validator catches only what came, kind by kind; an answer resting on a bad
    // result is an answer.
    for k in m.keys().filter_map(|k| k.strip_prefix("bad_result_detected_total.")) {
        let (a, b) = (format!("bad_result_detected_total.{k}"), format!("bad_result_total.{k}"));
        bounds.push((format!("{a} <= {b}"), get(&a), get(&b)));
    }
    bounds.push((
        "run_on_undetected_bad_result_total <= outcome_total.succeeded + .degraded".into(),
        get("run_on_undetected_bad_result_total"),
        get("outcome_total.succeeded") + get("outcome_total.degraded"),
    ));
    // Quorums: a verdict closes a quorum that started (one whose run ended first has none);
    // a branch cancelled by a decision was sent.
    let verdicts: f64 = ["met", "not_met", "wrong_agreement"].iter().map(|v| get(&format!("quorum_total.{v}"))).sum();
    bounds.push((
        "quorum_total.<verdict> add up to at most quorum_started_total".into(),
        verdicts,
        get("quorum_started_total"),
    ));
    bounds.push((
        "quorum_branch_cancelled_total <= quorum_branch_sent_total".into(),
        get("quorum_branch_cancelled_total"),
        get("quorum_branch_sent_total"),
    ));
    // Every verdict answers a request (a request whose run ended otherwise has none).
    let verdicts: f64 = ["approved", "refused", "expired", "pending_at_deadline"]
        .iter()
        .map(|v| get(&format!("approval_total.{v}")))
        .sum();
    bounds.push((
        "approval_total.<verdict> add up to at most approval_requested_total".into(),
        verdicts,
        get("approval_requested_total"),
    ));
    bounds
}

/// The kind of run that shows a broken threshold on `metric`: a duplicate, a late run, or a
/// failed one (unsafe, not merely degraded), else any run that did not succeed.
fn run_showing(metric: &str) -> FirstRun {
    let base = metric.rsplit('.').next().unwrap_or(metric);
    let tail = |prefix: &str| metric.starts_with(prefix) || base.starts_with(prefix);
    if tail("duplicate_effect") {
        FirstRun::Duplicate
    } else if tail("deadline_exceeded") {
        FirstRun::DeadlineMissed
    } else if tail("safe_outcome") || metric.ends_with("outcome_total.failed") || tail("step.") {
        FirstRun::Failed
    } else {
        FirstRun::NotSucceeded
    }
}

impl Invariants {
    fn new(model: &Model, scenario: &Scenario, source: &Source, policy: usize) -> Result<Invariants, CommandError> {
        let slo = compile_slo(scenario.slo.as_ref(), model, source)?;
        let p = &model.policies[policy];
        let rules = &p.rules;
        Ok(Invariants {
            measured_s: (model.world.duration_us - model.world.warmup_us) as f64 / 1e6,
            thresholds: slo.thresholds,
            no_duplicates: !p.key_per_attempt && rules.on_effect_unknown == OnEffectUnknown::ReconcileFirst,
            deadline_ms: rules
                .deadline_propagation
                .then(|| scenario.workflows.iter().map(|w| w.deadline_ms).fold(0.0, f64::max)),
            max_flaps_per_hour: p.degradation.as_ref().map(|d| d.max_flaps_per_hour),
        })
    }

    fn names(&self) -> Vec<String> {
        let mut names = vec!["metric identities (docs/metrics.md section 5)".to_string()];
        if self.no_duplicates {
            names.push("no duplicate effect (one key per call, reconcile first)".into());
        }
        if let Some(d) = self.deadline_ms {
            names.push(format!("no run longer than its deadline ({d} ms, propagated)"));
        }
        if let Some(max) = self.max_flaps_per_hour {
            names.push(format!("no more than {max} mode flaps per hour"));
        }
        names.extend(self.thresholds.iter().map(|c| format!("[slo] {} {}", c.metric, c.expression)));
        names.extend(RunChecks::names().map(String::from));
        names
    }

    fn check(&self, m: &MetricMap, replication: u32) -> Option<Violation> {
        let get = |k: &str| m.get(k).copied().unwrap_or(f64::NAN);
        // `run`: the kind of run that shows the violation, traced in the report.
        let broken = |invariant: String, detail: String, run: FirstRun| {
            Some(Violation { invariant, replication, detail, run, run_number: None })
        };
        for (name, sum, total) in identity_sums(m, self.measured_s) {
            if (sum - total).abs() > 1e-6 * total.abs().max(1.0) {
                return broken(format!("identity: {name}"), format!("{sum} != {total}"), FirstRun::NotSucceeded);
            }
        }
        for (name, part, whole) in identity_bounds(m) {
            // A metric the scenario lacks (no such feature) is NaN: the comparison is false.
            if part > whole + 1e-9 * whole.abs() {
                return broken(format!("identity: {name}"), format!("{part} > {whole}"), FirstRun::NotSucceeded);
            }
        }
        if self.no_duplicates && get("duplicate_effect_total") > 0.0 {
            let detail = format!("duplicate_effect_total = {}", get("duplicate_effect_total"));
            let invariant = "no duplicate effect (one key per call, reconcile first)".to_string();
            return broken(invariant, detail, FirstRun::Duplicate);
        }
        if let Some(deadline) = self.deadline_ms
            && get("run_latency_ms.max") > deadline + 1e-3
        {
            let detail = format!("run_latency_ms.max = {} > {deadline}", get("run_latency_ms.max"));
            let invariant = format!("no run longer than its deadline ({deadline} ms, propagated)");
            return broken(invariant, detail, FirstRun::DeadlineMissed);
        }
        if let Some(max) = self.max_flaps_per_hour
            && get("degradation_flaps_per_hour") > max
        {
            let detail = format!("degradation_flaps_per_hour = {}", get("degradation_flaps_per_hour"));
            return broken(format!("no more than {max} mode flaps per hour"), detail, FirstRun::NotSucceeded);
        }
        for c in &self.thresholds {
            let v = get(&c.metric);
            if v.is_finite() && !holds(c.comparison, v, c.threshold) {
                let invariant = format!("[slo] {} {}", c.metric, c.expression);
                let detail = format!("{} = {v}", c.metric);
                return broken(invariant, detail, run_showing(&c.metric));
            }
        }
        None
    }
}

/// Runs `scenario` (the base with a schedule) and returns the first broken invariant.
fn evaluate(scenario: &Scenario, source: &Source, policy: &str) -> Result<Option<Violation>, CommandError> {
    let model = Model::compile(scenario, source)?;
    let p = model.policy_index(policy).ok_or_else(|| CommandError::Input(format!("no policy `{policy}`")))?;
    let invariants = Invariants::new(&model, scenario, source, p)?;
    for r in 0..model.world.replications {
        let checks = RunChecks::new(&model, p);
        let (replication, checks) = simulate_following(&model, p, replication_seed(model.world.seed, r), checks)?;
        if let Some(v) = invariants.check(&replication.metrics, r) {
            return Ok(Some(v));
        }
        if let Some(b) = checks.breach {
            let (invariant, detail) = (b.invariant.to_string(), b.detail);
            return Ok(Some(Violation {
                invariant,
                replication: r,
                detail,
                run: FirstRun::NotSucceeded,
                run_number: Some(b.run),
            }));
        }
    }
    Ok(None)
}

fn with_faults(base: &Scenario, keep: bool, faults: Vec<Fault>) -> Scenario {
    let mut s = base.clone();
    if !keep {
        s.faults.clear();
    }
    s.faults.extend(faults);
    s
}

/// Smaller variants of a failing scenario, most reducing first.
fn candidates(current: &Scenario, base: &Scenario, first_own: usize) -> Vec<Scenario> {
    let mut out = Vec::new();
    let own = first_own..current.faults.len();
    for i in own.clone() {
        let mut s = current.clone();
        s.faults.remove(i);
        out.push(s);
    }
    if current.simulation.replications > 1 {
        let mut s = current.clone();
        s.simulation.replications = 1;
        out.push(s);
    }
    for i in own {
        let f = &current.faults[i];
        let mut edit = |change: &dyn Fn(&mut Fault)| {
            let mut s = current.clone();
            change(&mut s.faults[i]);
            // Rounding can leave a value where it was; such a variant is no smaller.
            let same = |a: &Fault, b: &Fault| serde_json::to_string(a).ok() == serde_json::to_string(b).ok();
            if !same(&s.faults[i], &current.faults[i]) {
                out.push(s);
            }
        };
        if f.duration_s > 1.0 {
            edit(&|f| f.duration_s = round_to((f.duration_s / 2.0).max(1.0), 0.1));
            edit(&|f| {
                f.start_s = round_to(f.start_s + f.duration_s / 2.0, 0.1);
                f.duration_s = round_to((f.duration_s / 2.0).max(1.0), 0.1);
            });
        }
        if f.toxicity.is_some_and(|t| t > 0.01) {
            edit(&|f| f.toxicity = f.toxicity.map(|t| round_to((t / 2.0).max(0.01), 0.01)));
        }
        if f.factor.is_some_and(|x| x > 1.1) {
            edit(&|f| f.factor = f.factor.map(|x| round_to(1.0 + (x - 1.0) / 2.0, 0.1)));
        }
        if let Some(original) = base.dependencies.iter().find(|d| d.name == f.target).map(|d| d.servers)
            && f.servers.is_some_and(|s| s < original)
        {
            edit(&|f| f.servers = f.servers.map(|s| s + (original - s).div_ceil(2)));
        }
        if f.per_s.is_some() {
            edit(&|f| f.per_s = f.per_s.map(|p| round_to(p * 2.0, 0.1)));
        }
        if let Some(mix) = &f.errors {
            let halved = ErrorMix {
                overloaded: round_to(mix.overloaded / 2.0, 0.01),
                transient_transport: round_to(mix.transient_transport / 2.0, 0.01),
                rate_limited: round_to(mix.rate_limited / 2.0, 0.01),
                ..mix.clone()
            };
            edit(&|f| f.errors = Some(halved.clone()));
        }
    }
    // Less load: every constant arrival rate three quarters as high.
    if current.workflows.iter().any(|w| w.arrivals.rate_per_s.is_some_and(|r| r > 0.5)) {
        let mut s = current.clone();
        for w in &mut s.workflows {
            w.arrivals.rate_per_s = w.arrivals.rate_per_s.map(|r| round_to(r * 0.75, 0.01));
        }
        out.push(s);
    }
    out
}

/// Shrinks a failing scenario while it still breaks `invariant`; returns it and the steps taken.
fn shrink(
    failing: Scenario,
    base: &Scenario,
    first_own: usize,
    source: &Source,
    policy: &str,
    invariant: &str,
    workers: &Workers,
) -> Result<(Scenario, Violation, usize), CommandError> {
    let mut current = failing;
    let mut violation = evaluate(&current, source, policy)?.expect("the schedule failed");
    let mut steps = 0;
    'outer: while steps < MAX_SHRINK_STEPS {
        let options = candidates(&current, base, first_own);
        // Candidates are judged in parallel and the first (in order) that still fails is kept.
        let results: Vec<Result<Option<Violation>, CommandError>> =
            workers.install(|| options.par_iter().map(|s| evaluate(s, source, policy)).collect());
        steps += options.len();
        for (s, r) in options.into_iter().zip(results) {
            if let Some(v) = r?
                && v.invariant == invariant
            {
                current = s;
                violation = v;
                continue 'outer;
            }
        }
        break;
    }
    Ok((current, violation, steps))
}

fn describe(f: &Fault) -> String {
    let mut text = format!("{} on {} from {} s for {} s", f.kind, f.target, f.start_s, f.duration_s);
    let mut add = |name: &str, v: Option<String>| {
        if let Some(v) = v {
            text.push_str(&format!(", {name} {v}"));
        }
    };
    add("toxicity", f.toxicity.map(|t| t.to_string()));
    add("factor", f.factor.map(|t| t.to_string()));
    add("servers", f.servers.map(|t| t.to_string()));
    add("per_s", f.per_s.map(|t| t.to_string()));
    if let Some(m) = &f.errors {
        let parts: Vec<String> = [
            ("overloaded", m.overloaded),
            ("transient_transport", m.transient_transport),
            ("rate_limited", m.rate_limited),
        ]
        .iter()
        .filter(|(_, p)| *p > 0.0)
        .map(|(n, p)| format!("{n} {p}"))
        .collect();
        text.push_str(&format!(", errors {}", parts.join(" ")));
    }
    text
}

fn scenario_file(s: &Scenario, header: &str) -> Result<Vec<u8>, CommandError> {
    let body = toml::to_string(s).map_err(|e| CommandError::Io(format!("cannot write the scenario as TOML: {e}")))?;
    Ok(format!("{header}\n{body}").into_bytes())
}

/// The outcome of an exploration, for the CLI's exit code.
pub struct ExploreReport {
    pub text: String,
    pub violated: bool,
}

pub fn explore(opts: &ExploreOptions) -> Result<ExploreReport, CommandError> {
    check_counts(opts)?;
    let overrides = collect_overrides(&opts.sets, opts.replications)?;
    let source = opts.scenario.load()?;
    let (model, base) = compile_scenario(&source, &overrides)?;
    let kinds = fault_kinds(opts, &base)?;
    let policy = check_target(opts, &model, &base, &source)?;
    let first_own = if opts.keep_faults { base.faults.len() } else { 0 };
    let mut workers = Workers::start(opts.jobs, u64::from(opts.schedules), &format!("exploring {}", model.name))?;
    // Schedules change faults only, never the guards.
    workers.fit_guard_windows(model.guard_window_bytes())?;
    let violations = try_schedules(opts, &base, &source, &kinds, &workers)?;
    let invariants = Invariants::new(&model, &base, &source, policy)?;
    let mut text = format!(
        "{}: policy `{}`, {} schedule(s) (seed {}, up to {} fault(s) each, kinds {}), {} replication(s) each\nchecked: {}\n",
        model.name,
        opts.policy,
        opts.schedules,
        opts.seed,
        opts.max_faults,
        kinds.iter().map(|k| k.name()).collect::<Vec<_>>().join(", "),
        model.world.replications,
        invariants.names().join("; ")
    );
    let Some((index, first)) = violations.first().cloned() else {
        workers.finish();
        text.push_str(&format!("no invariant broken in {} schedule(s)\n", opts.schedules));
        return Ok(ExploreReport { text, violated: false });
    };
    text.push_str(&tally(&violations, opts.schedules));
    let schedule = draw_schedule(&base, opts, &kinds, index);
    text.push_str(&format!(
        "\nfirst: schedule {index} (--seed {}), replication {}: {} ({})\n",
        opts.seed, first.replication, first.invariant, first.detail
    ));
    for f in &schedule {
        text.push_str(&format!("  {}\n", describe(f)));
    }
    let failing = with_faults(&base, opts.keep_faults, schedule);
    let (shrunk, violation, steps) =
        shrink(failing.clone(), &base, first_own, &source, &opts.policy, &first.invariant, &workers)?;
    workers.finish();
    text.push_str(&shrunk_summary(&shrunk, &base, first_own, steps, &violation));
    let found = Found { index, failing: &failing, shrunk: &shrunk, violation: &violation };
    text.push_str(&write_found(opts, &model, &source, &found)?);
    Ok(ExploreReport { text, violated: true })
}

/// Checks the counts asked for and reads `--kind` (every kind when none is named).
fn check_counts(opts: &ExploreOptions) -> Result<(), CommandError> {
    if opts.schedules == 0 || opts.schedules > MAX_SCHEDULES {
        return Err(CommandError::Input(format!(
            "argument `--schedules {}`: between 1 and {MAX_SCHEDULES}",
            opts.schedules
        )));
    }
    if opts.max_faults == 0 || opts.max_faults > 100 {
        return Err(CommandError::Input(format!("argument `--max-faults {}`: between 1 and 100", opts.max_faults)));
    }
    Ok(())
}

/// Whether dependency `d` of the scenario can take a fault of `kind` (`FaultKind::target_need`).
fn fits(base: &Scenario, kind: FaultKind, d: &Dependency) -> bool {
    if d.approval.is_some() {
        return false; // a person's desk, not a station: no fault acts on it
    }
    if kind == FaultKind::DelegationLoop {
        return delegating_agent(base, d);
    }
    match kind.target_need() {
        TargetNeed::Nothing => true,
        TargetNeed::Task => d.task.is_some(),
        TargetNeed::Tokens => d.tokens.is_some(),
        TargetNeed::Quota => d.tokens.as_ref().is_some_and(|t| {
            [t.requests_per_minute, t.tokens_per_minute, t.input_tokens_per_minute, t.output_tokens_per_minute]
                .iter()
                .any(Option::is_some)
        }),
        TargetNeed::Retrieval => d.kind.as_deref() == Some("retrieval"),
        TargetNeed::Cache => d.cache.is_some(),
    }
}

/// Whether `d` is an A2A agent in a delegation (it delegates, or is delegated to): the only
/// target a `delegation_loop` acts on (world/model.rs checks the same of a file).
fn delegating_agent(base: &Scenario, d: &Dependency) -> bool {
    let agent = match d.kind.as_deref() {
        Some(kind) => kind == "a2a_agent",
        None => !d.calls.is_empty(),
    };
    agent
        && (d.calls.iter().any(|c| c.delegate == Some(true))
            || base
                .dependencies
                .iter()
                .flat_map(|o| &o.calls)
                .any(|c| c.delegate == Some(true) && c.dependency == d.name))
}

/// The scenario already deals in answers that look like success: one of its faults makes them
/// (or slows a stream or cuts a quota), or one of its policies validates a step.
fn uses_bad_results(base: &Scenario) -> bool {
    base.faults.iter().any(|f| FaultKind::parse(&f.kind).is_some_and(FaultKind::looks_like_success))
        || base.policies.values().any(|p| p.steps.values().any(|s| s.validator.is_some()))
}

/// The kinds to draw from: those asked for, or every kind the scenario can take (the task
/// kinds only when some dependency runs tasks, a delegation loop only when some call delegates).
fn fault_kinds(opts: &ExploreOptions, base: &Scenario) -> Result<Vec<FaultKind>, CommandError> {
    let has_tasks = base.dependencies.iter().any(|d| d.task.is_some());
    let delegates = base.dependencies.iter().flat_map(|d| &d.calls).any(|c| c.delegate == Some(true));
    let has_caches = base.dependencies.iter().any(|d| d.cache.is_some());
    if opts.kinds.is_empty() {
        // The kinds that look like success join by default only where the scenario deals in
        // them already, so every other scenario's schedules stay the ones they were.
        let bad_results = uses_bad_results(base);
        return Ok(FaultKind::ALL
            .into_iter()
            .filter(|k| has_tasks || !k.needs_task())
            .filter(|&k| !k.looks_like_success() || bad_results)
            .filter(|&k| base.dependencies.iter().any(|d| fits(base, k, d)))
            .filter(|&k| delegates || k != FaultKind::DelegationLoop)
            .filter(|&k| has_caches || !k.needs_cache())
            .collect());
    }
    opts.kinds
        .iter()
        .map(|k| {
            let kind = FaultKind::parse(k).ok_or_else(|| {
                let known = FaultKind::ALL.iter().map(|k| k.name());
                CommandError::Input(format!(
                    "argument `--kind {k}`: {}",
                    crate::scenario::unknown_name("fault kind", k, known)
                ))
            })?;
            if kind.needs_cache() && !has_caches {
                return Err(CommandError::Input(format!(
                    "argument `--kind {k}`: acts on a cache, and no dependency of the scenario has a [dependency.cache]"
                )));
            }
            if kind.needs_task() && !has_tasks {
                return Err(CommandError::Input(format!(
                    "argument `--kind {k}`: acts on tasks, and no dependency of the scenario has a [dependency.task]"
                )));
            }
            if !base.dependencies.iter().any(|d| fits(base, kind, d)) {
                let need = match kind.target_need() {
                    TargetNeed::Tokens => "a [dependency.tokens] table",
                    TargetNeed::Quota => "a [dependency.tokens] table with a *_per_minute limit",
                    TargetNeed::Retrieval => "kind = \"retrieval\"",
                    TargetNeed::Task | TargetNeed::Cache | TargetNeed::Nothing => {
                        "what it acts on (not an approval desk)"
                    }
                };
                return Err(CommandError::Input(format!(
                    "argument `--kind {k}`: needs a dependency with {need}, and the scenario has none"
                )));
            }
            Ok(kind)
        })
        .collect()
}

/// The policy under test (its index) and a dependency to fault must both exist.
fn check_target(opts: &ExploreOptions, model: &Model, base: &Scenario, source: &Source) -> Result<usize, CommandError> {
    if model.policy_index(&opts.policy).is_none() {
        let known = model.policies.iter().map(|p| p.name.as_str());
        return Err(CommandError::Input(format!(
            "argument `--policy {}`: {}",
            opts.policy,
            crate::scenario::unknown_name("policy", &opts.policy, known)
        )));
    }
    if base.dependencies.is_empty() {
        return Err(CommandError::Input(format!("{}: the scenario has no dependency to fault", source.path)));
    }
    Ok(model.policy_index(&opts.policy).expect("checked"))
}

/// Runs every schedule in parallel; returns the broken ones, in schedule order, with their
/// numbers. A failed simulation fails the whole exploration (the lowest schedule's error).
fn try_schedules(
    opts: &ExploreOptions,
    base: &Scenario,
    source: &Source,
    kinds: &[FaultKind],
    workers: &Workers,
) -> Result<Vec<(u32, Violation)>, CommandError> {
    let results: Vec<Result<Option<Violation>, CommandError>> = workers.install(|| {
        (0..opts.schedules)
            .into_par_iter()
            .map(|i| {
                let s = with_faults(base, opts.keep_faults, draw_schedule(base, opts, kinds, i));
                let r = evaluate(&s, source, &opts.policy);
                workers.tick();
                r
            })
            .collect()
    });
    let mut violations = Vec::new();
    for (i, r) in results.into_iter().enumerate() {
        if let Some(v) = r? {
            violations.push((i as u32, v));
        }
    }
    Ok(violations)
}

/// How many schedules broke an invariant, and how often each one.
fn tally(violations: &[(u32, Violation)], schedules: u32) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for (_, v) in violations {
        match counts.iter_mut().find(|(n, _)| *n == v.invariant) {
            Some((_, c)) => *c += 1,
            None => counts.push((v.invariant.clone(), 1)),
        }
    }
    let mut text = format!("{} of {schedules} schedule(s) broke an invariant:\n", violations.len());
    for (name, count) in &counts {
        text.push_str(&format!("  {count:>6}  {name}\n"));
    }
    text
}

/// The shrunk schedule: its faults, and the load when shrinking lowered it.
fn shrunk_summary(shrunk: &Scenario, base: &Scenario, first_own: usize, steps: usize, violation: &Violation) -> String {
    let mut text = format!(
        "\nshrunk in {steps} simulation set(s) to {} fault(s), still: {} ({}):\n",
        shrunk.faults.len() - first_own,
        violation.invariant,
        violation.detail
    );
    for f in &shrunk.faults[first_own..] {
        text.push_str(&format!("  {}\n", describe(f)));
    }
    let rates: Vec<String> =
        shrunk.workflows.iter().filter_map(|w| w.arrivals.rate_per_s.map(|r| format!("{} {r}/s", w.name))).collect();
    if shrunk.workflows.iter().zip(&base.workflows).any(|(a, b)| a.arrivals.rate_per_s != b.arrivals.rate_per_s) {
        text.push_str(&format!("  load lowered to {}\n", rates.join(", ")));
    }
    text
}

/// What an exploration found: the first failing schedule (its number and scenario), the shrunk
/// scenario and the violation it still shows.
struct Found<'a> {
    index: u32,
    failing: &'a Scenario,
    shrunk: &'a Scenario,
    violation: &'a Violation,
}

/// Writes the failing and the shrunk scenario files and the trace of the run that shows the
/// violation; returns what the report says about them.
fn write_found(opts: &ExploreOptions, model: &Model, source: &Source, found: &Found) -> Result<String, CommandError> {
    let Found { index, failing, shrunk, violation } = *found;
    let out_dir = opts.out.clone().unwrap_or_else(|| Path::new("results").join(format!("{}-explore", model.name)));
    let stem = format!("{}-{}", model.name, opts.policy);
    let header = |what: &str| {
        format!(
            "# {what} by `faultline explore {} --policy {} --seed {}` (schedule {index}).\n# Broken: {}\n# Reproduce: faultline run THIS_FILE --policy {}",
            source.path, opts.policy, opts.seed, violation.invariant, opts.policy
        )
    };
    let failing_path = out_dir.join(format!("{stem}-failing.toml"));
    let shrunk_path = out_dir.join(format!("{stem}-shrunk.toml"));
    write_atomically(&failing_path, &scenario_file(failing, &header("The failing schedule found"))?)?;
    write_atomically(&shrunk_path, &scenario_file(shrunk, &header("The shrunk schedule found"))?)?;
    let mut text = format!(
        "\nwrote {} and {}\nreproduce: faultline run {} --policy {}\n",
        failing_path.display(),
        shrunk_path.display(),
        shrunk_path.display(),
        opts.policy
    );
    let trace_path = out_dir.join(format!("{stem}-shrunk-trace.otlp.json"));
    text.push_str(&trace_first_violating_run(shrunk, source, &opts.policy, violation, &shrunk_path, &trace_path)?);
    Ok(text)
}

/// The first run of the violating replication that shows the violation (a duplicate effect, a
/// run past its deadline, or else a run that did not succeed), traced as `replay` would: its
/// tree for the report, its OTLP/JSON beside the shrunk scenario.
fn trace_first_violating_run(
    shrunk: &Scenario,
    source: &Source,
    policy: &str,
    violation: &Violation,
    shrunk_path: &Path,
    trace_path: &Path,
) -> Result<String, CommandError> {
    let model = Model::compile(shrunk, source)?;
    let p = model.policy_index(policy).expect("the shrunk scenario keeps its policies");
    let k = violation.replication;
    let seed = replication_seed(model.world.seed, k);
    // A figure broken by the whole replication need not show in one run of the kind named;
    // then any run that did not succeed is the next best witness.
    if let Some(number) = violation.run_number {
        let traced = trace_run(&model, p, seed, RunSelector::Number(number))?;
        write_trace(&model, p, Some(k), seed, &traced, trace_path)?;
        return Ok(format!(
            "\nrun {number} of replication {k}, which broke it:\n{}wrote {}\nreplay: faultline replay {} --policy {policy} --replication {k} --run {number}\n",
            render_tree(&traced.spans),
            trace_path.display(),
            shrunk_path.display(),
        ));
    }
    // One catalogue for both kinds, and a failed simulation is an error, not "no such run".
    let runs = catalogue(&model, p, seed)?;
    let found = [violation.run, FirstRun::NotSucceeded]
        .into_iter()
        .find_map(|which| first_matching(&runs, which).map(|number| (which, number)));
    let Some((which, number)) = found else {
        return Ok(format!("\nevery run of replication {k} succeeded: no single run to trace\n"));
    };
    let traced = trace_run(&model, p, seed, RunSelector::Number(number))?;
    write_trace(&model, p, Some(k), seed, &traced, trace_path)?;
    Ok(format!(
        "\nthe first run of replication {k} that {} (run {} of {}):\n{}wrote {}\nreplay: faultline replay {} --policy {policy} --replication {k} --first {}\n",
        which.phrase(),
        traced.summary.number,
        traced.runs_started,
        render_tree(&traced.spans),
        trace_path.display(),
        shrunk_path.display(),
        which.name()
    ))
}
