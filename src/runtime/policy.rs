//! Compiled policies: a named runtime configuration resolved against every workflow step, so
//! the engine reads one `StepPolicy` per (workflow, step) with no lookups by name.

use super::admission::{AdmissionRule, compile_admission};
use super::backoff::{Backoff, BackoffKind, Jitter};
use super::budget::BudgetLimits;
use super::decision::{NEVER_RETRIED, OnEffectUnknown, RetryRules, default_retryable};
use super::degradation::config::normal_overrides;
use super::degradation::{Degradation, ModeOverrides, compile_degradation};
use super::fan_out::{FanOutLimits, compile_fan_out};
use super::guard::pipeline::PipelineSpec;
use super::hedging::{Hedging, compile_hedging};
use super::mechanisms::compile_mechanisms;
use super::step_policy::{FallbackCandidate, OnGiveUp, OnSchemaFailure, StepPolicy, StepRoutes};
use super::workflow::WorkflowModel;
use crate::scenario::{
    FieldPath, Policy, Scenario, ScenarioError, Source, duration_ms, error_at_path, parse_named, quote, unknown_name,
};
use crate::sim::{Micros, ms_to_us};
use crate::vocab::FailureKind;
use crate::world::model::MAX_ATTEMPTS_LIMIT;
use crate::world::{FaultEffect, World};

/// Defaults when a policy is silent (documented in docs/scenario.md).
pub const DEFAULT_TIMEOUT_MS: f64 = 30_000.0;
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
pub const DEFAULT_BACKOFF: Backoff = Backoff::doubling(BackoffKind::Exponential, 200_000, 2_000_000, Jitter::Full);

#[derive(Debug, Clone)]
pub struct PolicyModel {
    pub name: String,
    pub rules: RetryRules,
    pub budget: BudgetLimits,
    /// A fresh idempotency key per attempt (defeats deduplication) instead of one per call.
    pub key_per_attempt: bool,
    /// Indexed [workflow][step].
    pub steps: Vec<Vec<StepPolicy>>,
    /// One label per circuit-breaker instance, in instance order.
    pub breaker_labels: Vec<String>,
    /// The time-series column of each guard with a level (bulkheads, retry budgets), in
    /// pipeline order: `bulkhead.<scope>.in_use`, `retry_budget.<scope>.level`.
    pub level_labels: Vec<String>,
    pub hedging: Option<Hedging>,
    pub admission: Option<AdmissionRule>,
    pub fan_out: FanOutLimits,
    /// The guards and the routes through them that `steps[..].routes` name.
    pub pipeline: PipelineSpec,
    /// The rules that move workflows between degradation modes; None when it declares none.
    pub degradation: Option<Degradation>,
    /// What each degradation mode does to the runs that start in it, by mode index; without
    /// modes every entry is the policy itself.
    pub modes: Vec<ModeOverrides>,
    /// Some dependency serves approved snapshots: answers are checked for freshness.
    pub snapshots: bool,
    /// How runs track long-running tasks.
    pub task_client: crate::runtime::task_client::TaskClientConfig,
    /// Per dependency, the SDK client the runtime calls it through, if any: its hidden retries.
    pub sdk_clients: Vec<Option<crate::runtime::sdk_client::SdkClientConfig>>,
    /// Per dependency, how the runtime uses its cache, if it looks there first.
    pub caches: Vec<Option<crate::runtime::cache_use::CacheUse>>,
    /// Whether any of `caches` is set: one load on the attempt path instead of an index.
    pub looks_in_caches: bool,
    /// What the guards' sliding windows take in one simulation, in bytes.
    pub guard_window_bytes: u64,
}

pub fn compile_policies(
    scenario: &Scenario,
    source: &Source,
    world: &World,
    workflows: &[WorkflowModel],
) -> Result<Vec<PolicyModel>, ScenarioError> {
    if scenario.policies.is_empty() {
        let default = Policy::default();
        return Ok(vec![compile_policy("default", &default, &FieldPath::root(), source, world, workflows)?]);
    }
    scenario
        .policies
        .iter()
        .map(|(name, p)| {
            let path = FieldPath::root().key("policy").key(name);
            crate::world::model::check_name(name).map_err(|m| error_at_path(source, &path, m))?;
            compile_policy(name, p, &path, source, world, workflows)
        })
        .collect()
}

crate::named_enum! {
    /// One idempotency key per logical call, or a fresh one per attempt (which defeats a
    /// dependency's deduplication).
    enum IdempotencyKey {
        PerCall => "per_call",
        PerAttempt => "per_attempt",
    }
}

fn attempts(source: &Source, path: &FieldPath, n: u32) -> Result<u32, ScenarioError> {
    if (1..=MAX_ATTEMPTS_LIMIT).contains(&n) {
        Ok(n)
    } else {
        Err(error_at_path(
            source,
            path,
            format!("must be between 1 and {MAX_ATTEMPTS_LIMIT} (it includes the first attempt), got {n}"),
        ))
    }
}

/// A cap that grows faster than this per retry is a typo: 100^20 already overflows a day.
const MAX_BACKOFF_MULTIPLIER: f64 = 100.0;
/// resilience4j's `IntervalFunction.DEFAULT_RANDOMIZATION_FACTOR`.
const DEFAULT_RANDOMIZATION_FACTOR: f64 = 0.5;

fn compile_backoff(source: &Source, path: &FieldPath, b: &crate::scenario::Backoff) -> Result<Backoff, ScenarioError> {
    let kind = parse_named(source, &path.key("kind"), b.kind.as_deref(), BackoffKind::Exponential)?;
    let jitter = parse_named(source, &path.key("jitter"), b.jitter.as_deref(), Jitter::Full)?;
    let base_us = duration_ms(source, &path.key("base_ms"), b.base_ms.unwrap_or(DEFAULT_BACKOFF.base_us as f64 / 1e3))?;
    let max_us = duration_ms(source, &path.key("max_ms"), b.max_ms.unwrap_or(DEFAULT_BACKOFF.max_us as f64 / 1e3))?;
    if kind == BackoffKind::Exponential && max_us < base_us {
        return Err(error_at_path(source, &path.key("max_ms"), "max_ms must be at least base_ms"));
    }
    let multiplier = match (kind, b.multiplier) {
        (_, None) => 2.0,
        (BackoffKind::Exponential, Some(m)) if m.is_finite() && m > 0.0 && m <= MAX_BACKOFF_MULTIPLIER => m,
        (BackoffKind::Exponential, Some(m)) => {
            let message = format!("must be above 0 and at most {MAX_BACKOFF_MULTIPLIER}, got {m}");
            return Err(error_at_path(source, &path.key("multiplier"), message));
        }
        (BackoffKind::None | BackoffKind::Constant, Some(_)) => {
            return Err(error_at_path(source, &path.key("multiplier"), "applies only with kind = \"exponential\""));
        }
    };
    let randomization_factor = match (jitter, b.randomization_factor) {
        (Jitter::Randomized, None) => DEFAULT_RANDOMIZATION_FACTOR,
        (Jitter::Randomized, Some(f)) if (0.0..=1.0).contains(&f) => f,
        (Jitter::Randomized, Some(f)) => {
            let message = format!("must be between 0 and 1, got {f}");
            return Err(error_at_path(source, &path.key("randomization_factor"), message));
        }
        (_, None) => 0.0,
        (Jitter::None | Jitter::Full | Jitter::Equal | Jitter::Decorrelated, Some(_)) => {
            let message = "applies only with jitter = \"randomized\"";
            return Err(error_at_path(source, &path.key("randomization_factor"), message));
        }
    };
    Ok(Backoff { kind, base_us, max_us, jitter, multiplier, randomization_factor })
}

fn compile_policy(
    name: &str,
    p: &Policy,
    path: &FieldPath,
    source: &Source,
    world: &World,
    workflows: &[WorkflowModel],
) -> Result<PolicyModel, ScenarioError> {
    let retry = p.retry.clone().unwrap_or_default();
    let rp = path.key("retry");
    let max_attempts = attempts(source, &rp.key("max_attempts"), retry.max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS))?;
    let backoff = match &retry.backoff {
        Some(b) => compile_backoff(source, &rp.key("backoff"), b)?,
        None => DEFAULT_BACKOFF,
    };
    let on_effect_unknown = parse_named(
        source,
        &path.key("on_effect_unknown"),
        p.on_effect_unknown.as_deref(),
        OnEffectUnknown::ReconcileFirst,
    )?;
    let idempotency_key =
        parse_named(source, &path.key("idempotency_key"), p.idempotency_key.as_deref(), IdempotencyKey::PerCall)?;
    let key_per_attempt = idempotency_key == IdempotencyKey::PerAttempt;
    let rules = RetryRules {
        max_attempts,
        backoff,
        honor_retry_after: retry.honor_retry_after.unwrap_or(true),
        retryable: compile_retry_on(source, &rp.key("retry_on"), retry.retry_on.as_deref())?,
        on_effect_unknown,
        deadline_propagation: p.deadline_propagation.unwrap_or(true),
    };
    let default_timeout = duration_ms(source, &path.key("timeout_ms"), p.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS))?;
    let default_first_token_timeout =
        duration_ms(source, &path.key("first_token_timeout_ms"), p.first_token_timeout_ms.unwrap_or(0.0))?;
    let context =
        StepContext { source, world, policy: p, path, rules: &rules, default_timeout, default_first_token_timeout };
    for step_id in p.steps.keys() {
        if !workflows.iter().any(|w| w.steps.iter().any(|s| &s.id == step_id)) {
            let known = workflows.iter().flat_map(|w| w.steps.iter().map(|s| s.id.as_str()));
            let message = unknown_name("step", step_id, known);
            return Err(error_at_path(source, &path.key("steps").key(step_id), message));
        }
    }
    let mut steps = workflows
        .iter()
        .map(|w| w.steps.iter().map(|s| context.step_policy(s)).collect::<Result<Vec<_>, _>>())
        .collect::<Result<Vec<_>, _>>()?;
    let mechanisms = compile_mechanisms(source, path, p, world, workflows, &steps)?;
    for (w, routes) in mechanisms.routes.iter().enumerate() {
        for (s, r) in routes.iter().enumerate() {
            steps[w][s].routes = *r;
            for (c, &route) in mechanisms.fallback_routes[w][s].iter().enumerate() {
                if let Some(candidate) = steps[w][s].fallbacks.get_mut(c) {
                    candidate.route = route;
                }
            }
            steps[w][s].quorum_routes = mechanisms.quorum_routes[w][s].clone();
        }
    }
    let budget = compile_budget(source, &path.key("budget"), p.budget.clone().unwrap_or_default())?;
    let hedging = compile_hedging(source, &path.key("hedging"), p.hedging.as_ref())?;
    let fan_out = compile_fan_out(source, &path.key("fan_out"), p.fan_out.as_ref())?;
    let step_counts: Vec<usize> = workflows.iter().map(|w| w.steps.len()).collect();
    let normal = normal_overrides(budget, fan_out, hedging.is_some(), &step_counts);
    let (mut degradation, modes) = compile_degradation(source, path, p, world, workflows, &normal)?;
    if let Some(d) = &mut degradation {
        d.breaker_dependencies = mechanisms.breaker_dependencies.clone();
        d.breaker_half_opens_on_call = mechanisms.breaker_half_opens_on_call.clone();
    }
    // In the order their errors were always reported: admission, task client, SDK clients, caches.
    let admission = compile_admission(source, &path.key("admission"), p.admission.as_ref())?;
    let task_client =
        crate::runtime::task_client::compile_task_client(source, &path.key("task_client"), p.task_client.as_ref())?;
    let sdk_clients = compile_sdk_clients(source, &path.key("sdk_client"), p, world)?;
    let caches = crate::runtime::cache_use::compile_cache_uses(source, &path.key("cache"), p, world)?;
    Ok(PolicyModel {
        name: name.to_string(),
        rules,
        budget,
        key_per_attempt,
        steps,
        breaker_labels: mechanisms.breaker_labels,
        level_labels: mechanisms.level_labels,
        guard_window_bytes: mechanisms.window_bytes,
        hedging,
        admission,
        fan_out,
        pipeline: mechanisms.pipeline,
        degradation,
        modes,
        snapshots: world.dependencies.iter().any(|d| d.snapshot_age.is_some()),
        task_client,
        sdk_clients,
        looks_in_caches: caches.iter().any(Option::is_some),
        caches,
    })
}

/// `[policy.P.sdk_client.<dependency>]`, by dependency index. A task dependency has its task
/// client instead: an SDK in front of it is refused.
fn compile_sdk_clients(
    source: &Source,
    path: &FieldPath,
    p: &Policy,
    world: &World,
) -> Result<Vec<Option<crate::runtime::sdk_client::SdkClientConfig>>, ScenarioError> {
    let mut clients = vec![None; world.dependencies.len()];
    for (name, spec) in &p.sdk_client {
        let at = path.key(name);
        let Some(d) = world.dependency_index(name) else {
            return Err(error_at_path(source, &at, unknown_name("dependency", name, world.dependency_names())));
        };
        if world.dependencies[d].task.is_some() {
            let message = format!(
                "{} is a task dependency: its calls go through the policy's task_client, not an SDK client",
                quote(name)
            );
            return Err(error_at_path(source, &at, message));
        }
        clients[d] = Some(crate::runtime::sdk_compile::compile_sdk_client(source, &at, spec)?);
    }
    Ok(clients)
}

/// The kinds a policy retries: the default table, or its own `retry_on` list, which may not
/// name kinds the essay forbids retrying.
fn compile_retry_on(
    source: &Source,
    path: &FieldPath,
    kinds: Option<&[String]>,
) -> Result<[bool; FailureKind::COUNT], ScenarioError> {
    let Some(kinds) = kinds else { return Ok(default_retryable()) };
    let mut table = [false; FailureKind::COUNT];
    for (i, k) in kinds.iter().enumerate() {
        let kp = path.index(i);
        let kind = FailureKind::parse(k)
            .ok_or_else(|| error_at_path(source, &kp, format!("unknown failure kind {}", quote(k))))?;
        if NEVER_RETRIED.contains(&kind) {
            let message = format!("{} is never retried with the same input (docs/essay.md section 8)", kind.name());
            return Err(error_at_path(source, &kp, message));
        }
        if kind == FailureKind::EffectUnknown {
            return Err(error_at_path(source, &kp, "EFFECT_UNKNOWN is governed by on_effect_unknown, not retry_on"));
        }
        table[kind.index()] = true;
    }
    Ok(table)
}

fn compile_budget(
    source: &Source,
    path: &FieldPath,
    budget: crate::scenario::Budget,
) -> Result<BudgetLimits, ScenarioError> {
    if budget.concurrency_tokens == Some(0) {
        let message = "at least 1 concurrency token is needed to run a step";
        return Err(error_at_path(source, &path.key("concurrency_tokens"), message));
    }
    for (field, limit) in
        [("cost_units", budget.cost_units), ("model_tokens", budget.model_tokens), ("money", budget.money)]
    {
        if let Some(c) = limit
            && !(c.is_finite() && c >= 0.0)
        {
            return Err(error_at_path(source, &path.key(field), format!("must be a finite number >= 0, got {c}")));
        }
    }
    Ok(BudgetLimits {
        retry_tokens: budget.retry_tokens,
        concurrency_tokens: budget.concurrency_tokens,
        cost_units: budget.cost_units,
        model_tokens: budget.model_tokens,
        money: budget.money,
    })
}

/// What resolving one step's policy needs.
struct StepContext<'a> {
    source: &'a Source,
    world: &'a World,
    policy: &'a Policy,
    path: &'a FieldPath,
    rules: &'a RetryRules,
    /// The policy's timeout_ms in microseconds; 0 means none.
    default_timeout: Micros,
    /// The policy's first_token_timeout_ms in microseconds; 0 means none.
    default_first_token_timeout: Micros,
}

impl StepContext<'_> {
    fn step_policy(&self, s: &super::workflow::StepModel) -> Result<StepPolicy, ScenarioError> {
        let (source, world) = (self.source, self.world);
        let o = self.policy.steps.get(&s.id).cloned().unwrap_or_default();
        let sp = self.path.key("steps").key(&s.id);
        let timeout_us = match o.timeout_ms {
            Some(ms) => duration_ms(source, &sp.key("timeout_ms"), ms)?,
            None => self.default_timeout,
        };
        let timeout_us = (timeout_us > 0).then_some(timeout_us);
        let first_token_timeout_us = match o.first_token_timeout_ms {
            Some(ms) => {
                let field = sp.key("first_token_timeout_ms");
                if world.dependencies[s.dependency].tokens.is_none() {
                    let message = format!(
                        "first_token_timeout_ms applies to a token-shaped model (a [dependency.tokens] table), and {} has none",
                        quote(&world.dependencies[s.dependency].name)
                    );
                    return Err(error_at_path(source, &field, message));
                }
                duration_ms(source, &field, ms)?
            }
            None => self.default_first_token_timeout,
        };
        let first_token_timeout_us = (first_token_timeout_us > 0).then_some(first_token_timeout_us);
        let fallbacks = self.fallback_candidates(s, &o, &sp)?;
        if s.quorum.is_some() && !fallbacks.is_empty() {
            let field = if o.fallbacks.is_some() { sp.key("fallbacks") } else { sp.key("fallback") };
            let message = "a quorum that is not met gives up: a quorum step has no fallback";
            return Err(error_at_path(source, &field, message));
        }
        let fallback = fallbacks.first().map(|c| c.dependency);
        if timeout_us.is_none() && !self.rules.deadline_propagation {
            // An SDK client's own timeout (600 s unless set to 0) ends each of its attempts, and
            // it makes at most max_retries + 1 of them: the call ends.
            let sdk_bounds = |dep: usize| {
                let client = self.policy.sdk_client.get(&world.dependencies[dep].name);
                client.is_some_and(|c| c.timeout_ms.is_none_or(|ms| ms > 0.0))
            };
            for dep in std::iter::once(s.dependency).chain(fallbacks.iter().map(|c| c.dependency)) {
                if can_hang(world, dep) && !sdk_bounds(dep) {
                    let field = if o.timeout_ms.is_some() { sp.key("timeout_ms") } else { self.path.key("timeout_ms") };
                    let message = format!(
                        "step {} has no timeout and no deadline propagation, but {} can hang: the run would never end",
                        quote(&s.id),
                        quote(&world.dependencies[dep].name)
                    );
                    return Err(error_at_path(source, &field, message));
                }
            }
        }
        let predicted_attempt_us = match o.predicted_attempt_ms {
            Some(ms) => duration_ms(source, &sp.key("predicted_attempt_ms"), ms)?,
            None => ms_to_us(typical_attempt_ms(&world.dependencies[s.dependency], s)),
        };
        Ok(StepPolicy {
            timeout_us,
            first_token_timeout_us,
            max_attempts: match o.max_attempts {
                Some(n) => attempts(source, &sp.key("max_attempts"), n)?,
                None => self.rules.max_attempts,
            },
            reserve_us: duration_ms(source, &sp.key("deadline_reserve_ms"), o.deadline_reserve_ms.unwrap_or(0.0))?,
            predicted_attempt_us,
            max_snapshot_age_us: o
                .max_snapshot_age_s
                .map(|s| duration_ms(source, &sp.key("max_snapshot_age_s"), s * 1e3))
                .transpose()?,
            on_give_up: parse_named(source, &sp.key("on_give_up"), o.on_give_up.as_deref(), OnGiveUp::Fail)?,
            on_schema_failure: parse_named(
                source,
                &sp.key("on_schema_failure"),
                o.on_schema_failure.as_deref(),
                OnSchemaFailure::Fail,
            )?,
            validator: match &o.validator {
                // The faults that look like success never touch a write (docs/scenario.md
                // section 7): a check there would cost on every write and catch nothing.
                Some(_) if s.effect == crate::scenario::Effect::Write => {
                    let message = "a write's answer is never a bad result: a validator applies to a read step";
                    return Err(error_at_path(source, &sp.key("validator"), message));
                }
                // The branches' agreement is the quorum's own check (docs/scenario.md 6.2).
                Some(_) if s.quorum.is_some() => {
                    let message = "a quorum step's check is its branches' agreement: a validator applies to a step without `quorum`";
                    return Err(error_at_path(source, &sp.key("validator"), message));
                }
                Some(v) => Some(super::validator::compile_validator(source, &sp.key("validator"), v)?),
                None => None,
            },
            fallback,
            fallbacks,
            routes: StepRoutes::default(),
            quorum_routes: Vec::new(),
        })
    }

    /// The step's fallback candidates in order: the policy's `fallbacks`, else its `fallback`,
    /// else the workflow step's own `fallback`; each contract checked for the step.
    fn fallback_candidates(
        &self,
        s: &super::workflow::StepModel,
        o: &crate::scenario::StepOverride,
        sp: &FieldPath,
    ) -> Result<Vec<FallbackCandidate>, ScenarioError> {
        let (source, world) = (self.source, self.world);
        let write_err = |field: FieldPath| {
            let message = "a write cannot fall back to another dependency";
            Err(error_at_path(source, &field, message))
        };
        // A fallback candidate: a known dependency, never an approval desk (a human is
        // nobody's fallback, as the step's own `fallback` is checked in runtime/workflow.rs).
        let dependency = |field: &FieldPath, name: &str| {
            let d = world.dependency_index(name).ok_or_else(|| {
                error_at_path(source, field, unknown_name("dependency", name, world.dependency_names()))
            })?;
            if world.dependencies[d].approval.is_some() {
                let message = format!("{} is an approval dependency: a human is nobody's fallback", quote(name));
                return Err(error_at_path(source, field, message));
            }
            Ok(d)
        };
        let candidate = |d: usize, admits_class: bool, context_share: Option<f64>| FallbackCandidate {
            dependency: d,
            predicted_us: ms_to_us(typical_attempt_ms(&world.dependencies[d], s)),
            admits_class,
            context_share,
            route: Default::default(),
        };
        let Some(list) = &o.fallbacks else {
            let fallback = match &o.fallback {
                Some(f) => {
                    if s.effect == crate::scenario::Effect::Write {
                        return write_err(sp.key("fallback"));
                    }
                    Some(dependency(&sp.key("fallback"), f)?)
                }
                None => s.fallback,
            };
            let Some(f) = fallback else { return Ok(Vec::new()) };
            let (floor, class) = (sp.key("fallback_quality_floor"), sp.key("fallback"));
            check_fallback_contract(source, &floor, &class, s, &world.dependencies[f], o.fallback_quality_floor)?;
            return Ok(vec![candidate(f, true, None)]);
        };
        let lp = sp.key("fallbacks");
        if o.fallback.is_some() {
            let message = "give either fallback (one candidate) or fallbacks (a list), not both";
            return Err(error_at_path(source, &lp, message));
        }
        if o.fallback_quality_floor.is_some() {
            let message = "with fallbacks, each candidate has its own quality_floor";
            return Err(error_at_path(source, &sp.key("fallback_quality_floor"), message));
        }
        if list.is_empty() {
            return Err(error_at_path(source, &lp, "at least one candidate (or leave fallbacks out)"));
        }
        if s.effect == crate::scenario::Effect::Write {
            return write_err(lp);
        }
        let mut candidates = Vec::with_capacity(list.len());
        for (i, c) in list.iter().enumerate() {
            let cp = lp.index(i);
            let d = dependency(&cp.key("dependency"), &c.dependency)?;
            if d == s.dependency {
                let message = format!("{} is the step's own dependency, not a fallback", quote(&c.dependency));
                return Err(error_at_path(source, &cp.key("dependency"), message));
            }
            if candidates.iter().any(|x: &FallbackCandidate| x.dependency == d) {
                let message = format!("{} is already an earlier candidate", quote(&c.dependency));
                return Err(error_at_path(source, &cp.key("dependency"), message));
            }
            let (floor, class) = (cp.key("quality_floor"), cp.key("dependency"));
            check_fallback_contract(source, &floor, &class, s, &world.dependencies[d], c.quality_floor)?;
            let admits_class = match &c.allowed_task_classes {
                None => true,
                Some(classes) if classes.is_empty() => {
                    let message = "an empty list admits no task: leave the candidate out instead";
                    return Err(error_at_path(source, &cp.key("allowed_task_classes"), message));
                }
                Some(classes) => s.task_class.as_ref().is_some_and(|t| classes.contains(t)),
            };
            if let Some(share) = c.context_reduction {
                if !(share.is_finite() && share > 0.0 && share <= 1.0) {
                    let message = format!("must be a share of the context in (0, 1], got {share}");
                    return Err(error_at_path(source, &cp.key("context_reduction"), message));
                }
                if s.input_tokens.is_none() && world.dependencies[d].tokens.is_none() {
                    let message = format!(
                        "step {} declares no input_tokens and {} is no token-shaped model: there is no context to reduce",
                        quote(&s.id),
                        quote(&c.dependency)
                    );
                    return Err(error_at_path(source, &cp.key("context_reduction"), message));
                }
            }
            candidates.push(candidate(d, admits_class, c.context_reduction));
        }
        Ok(candidates)
    }
}

/// The contract a fallback must keep, checked once: its evaluated quality is at least the
/// step's floor, and it may serve the step's task class (docs/essay.md section 17).
fn check_fallback_contract(
    source: &Source,
    floor_path: &FieldPath,
    class_path: &FieldPath,
    step: &super::workflow::StepModel,
    fallback: &crate::world::DependencyModel,
    floor: Option<f64>,
) -> Result<(), ScenarioError> {
    if let Some(floor) = floor {
        if !(0.0..=1.0).contains(&floor) {
            return Err(error_at_path(source, floor_path, format!("must be in [0, 1], got {floor}")));
        }
        let quality = fallback.quality_score.unwrap_or(0.0);
        if quality < floor {
            let message = format!(
                "the fallback {} has quality_score {quality} (0 when unset), below this step's floor {floor}: it breaks the contract",
                quote(&fallback.name)
            );
            return Err(error_at_path(source, floor_path, message));
        }
    }
    if let Some(class) = &step.task_class
        && fallback.forbidden_task_classes.contains(class)
    {
        let message = format!(
            "the fallback {} may not serve task class {} (its forbidden_task_classes)",
            quote(&fallback.name),
            quote(class)
        );
        return Err(error_at_path(source, class_path, message));
    }
    Ok(())
}

/// True if some attempt at `dep` may never get a reply (its own hang probability, a timeout or
/// lost_response fault, or a remote call below it that can hang... which is bounded by the
/// remote call's own timeout, so only the station itself counts).
fn can_hang(world: &World, dep: usize) -> bool {
    let d = &world.dependencies[dep];
    d.hang_probability > 0.0
        || d.faults.iter().any(|&f| matches!(world.faults[f].effect, FaultEffect::Hang | FaultEffect::LostResponse))
}

/// What one attempt of `step` at `dependency` typically takes: the median service time, or at a
/// token-shaped model the service of a call with the median counts, median time to first token
/// and median time per token.
fn typical_attempt_ms(dependency: &crate::world::DependencyModel, step: &super::workflow::StepModel) -> f64 {
    if let Some(desk) = &dependency.approval {
        // A person's decision: admission (docs/scenario.md 8.13) predicts its mean working
        // time, not 0 ms; the wait for working hours and for a busy approver is not foreseen.
        return desk.decision_time.mean_ms();
    }
    let Some(shape) = &dependency.tokens else { return dependency.service.median_ms() };
    let median = |own: &Option<crate::world::Distribution>, default: &Option<crate::world::Distribution>| {
        own.as_ref().or(default.as_ref()).map_or(0.0, |d| d.median_ms().round().clamp(0.0, f64::from(u32::MAX)))
    };
    let output = median(&step.output_tokens, &shape.output_tokens);
    let tokens = crate::world::tokens::CallTokens {
        input: median(&step.input_tokens, &shape.input_tokens) as u32,
        output: shape.max_output_tokens.map_or(output, |m| output.min(f64::from(m))) as u32,
        truncated: false,
    };
    shape.service_ms(tokens, shape.time_to_first_token.median_ms(), shape.time_per_output_token.median_ms())
}
