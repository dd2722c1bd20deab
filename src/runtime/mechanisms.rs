//! Compiles a policy's mechanisms (circuit breakers, bulkheads, shared retry budgets, client-
//! side throttling) into guard specifications and routes: for every kind of attempt a step
//! makes (at its dependency, at its fallback, status lookups), the ordered guards it passes.
//! Order within a route: retry budgets and throttles first (they refuse cheaply, before a
//! breaker permit is taken), then load shedders, then circuit breakers, then bulkheads (a waiting attempt holds
//! its breaker permit, not the other way round); within a kind, file order.

use super::guard::GuardSpec;
use super::guard::adaptive_throttle::AdaptiveThrottleConfig;
use super::guard::admission_control::AdmissionControlConfig;
use super::guard::bulkhead::BulkheadConfig;
use super::guard::circuit_breaker::Resilience4jSpec;
use super::guard::circuit_breaker::{CircuitBreakerConfig, SlidingWindowType};
use super::guard::load_shedder::LoadShedder;
use super::guard::load_shedder::ShedderSpec;
use super::guard::pipeline::PipelineSpec;
use super::guard::polly_breaker::PollyBreakerOptions;
use super::guard::polly_breaker::PollySpec;
use super::guard::retry_budget::{
    AwsRetryQuotaConfig, EnvoyRetryBudgetConfig, FinagleRetryBudgetConfig, GrpcRetryThrottleConfig, RetryBudgetConfig,
};
use super::step_policy::{StepPolicy, StepRoutes};
use super::workflow::WorkflowModel;
use crate::scenario::{
    Bulkhead, CircuitBreaker, Effect, FieldPath, LoadShedding, Policy, PriorityThresholds, RetryBudget, ScenarioError,
    Source, error_at_path, parse_named, quote, unknown_name,
};
use crate::sim::{Micros, ms_to_us};
use crate::vocab::{FailureKind, OperationClass};
use crate::vocab::{Named, Priority};
use crate::world::World;

/// Upper bound on guard instances per policy (indices are u16 in routes).
pub const MAX_GUARDS: usize = 10_000;

crate::named_enum! {
    enum BreakerKind { Resilience4j => "resilience4j", Polly => "polly" }
}

crate::named_enum! {
    enum CircuitKey { Dependency => "dependency", DependencyOperation => "dependency_operation" }
}

crate::named_enum! {
    enum WindowType { CountBased => "count_based", TimeBased => "time_based" }
}

crate::named_enum! {
    enum BulkheadKey { Dependency => "dependency", Workflow => "workflow", Tenant => "tenant", Effect => "effect" }
}

crate::named_enum! {
    enum BudgetKindName {
        Grpc => "grpc",
        Finagle => "finagle",
        Envoy => "envoy",
        Aws => "aws",
        AdaptiveThrottling => "adaptive_throttling",
    }
}

crate::named_enum! {
    enum BudgetScope { Dependency => "dependency", Tenant => "tenant", Global => "global" }
}

crate::named_enum! {
    enum SheddingKind { Priority => "priority", AdmissionControl => "admission_control" }
}

/// A breaker's checked configuration, before its label is known.
#[derive(Debug, Clone, Copy)]
enum BreakerSpec {
    Resilience4j(CircuitBreakerConfig),
    Polly(PollyBreakerOptions),
}

/// Which attempts a guard instance applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Global,
    Dependency(usize),
    /// A dependency and one operation class.
    Operation(usize, OperationClass),
    Workflow(usize),
    Tenant(usize),
    /// A dependency's pool for reads, or for writes and their status lookups.
    Effect(usize, Effect),
}

impl Scope {
    fn covers(self, a: &AttemptShape) -> bool {
        match self {
            Scope::Global => true,
            Scope::Dependency(d) => d == a.dependency,
            Scope::Operation(d, c) => d == a.dependency && c == a.class,
            Scope::Workflow(w) => w == a.workflow,
            Scope::Tenant(t) => Some(t) == a.tenant,
            Scope::Effect(d, e) => d == a.dependency && e == pool_of(a.class),
        }
    }
}

/// The pool of an effect-keyed bulkhead an operation class draws from.
fn pool_of(class: OperationClass) -> Effect {
    match class {
        OperationClass::Read => Effect::Read,
        OperationClass::Write | OperationClass::Control => Effect::Write,
    }
}

/// One kind of attempt of one step, as routes are keyed.
struct AttemptShape {
    workflow: usize,
    tenant: Option<usize>,
    dependency: usize,
    class: OperationClass,
}

/// Guard order in a route: budgets, shedders, breakers, bulkheads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    Budget,
    Shed,
    Breaker,
    Bulkhead,
}

/// What compiling a policy's mechanisms gives the policy model.
pub struct Mechanisms {
    pub pipeline: PipelineSpec,
    pub breaker_labels: Vec<String>,
    /// `routes[w][s]`.
    pub routes: Vec<Vec<StepRoutes>>,
}

struct Compiler<'a> {
    source: &'a Source,
    world: &'a World,
    workflows: &'a [WorkflowModel],
    tenants: Vec<String>,
    specs: Vec<(Stage, Scope, GuardSpec)>,
    breaker_labels: Vec<String>,
}

pub fn compile_mechanisms(
    source: &Source,
    path: &FieldPath,
    policy: &Policy,
    world: &World,
    workflows: &[WorkflowModel],
    steps: &[Vec<StepPolicy>],
) -> Result<Mechanisms, ScenarioError> {
    let mut tenants: Vec<String> = workflows.iter().filter_map(|w| w.tenant.clone()).collect();
    tenants.sort();
    tenants.dedup();
    let mut c = Compiler { source, world, workflows, tenants, specs: Vec::new(), breaker_labels: Vec::new() };
    for (i, b) in policy.retry_budget.iter().enumerate() {
        c.retry_budget(&path.key("retry_budget").index(i), b)?;
    }
    for (i, s) in policy.load_shedding.iter().enumerate() {
        c.load_shedding(&path.key("load_shedding").index(i), s)?;
    }
    for (i, b) in policy.circuit_breaker.iter().enumerate() {
        c.circuit_breaker(&path.key("circuit_breaker").index(i), b)?;
    }
    for (i, b) in policy.bulkhead.iter().enumerate() {
        c.bulkhead(&path.key("bulkhead").index(i), b)?;
    }
    if c.specs.len() > MAX_GUARDS {
        let message = format!("at most {MAX_GUARDS} guard instances per policy, got {}", c.specs.len());
        return Err(error_at_path(source, path, message));
    }
    Ok(c.finish(steps))
}

impl Compiler<'_> {
    fn err(&self, path: &FieldPath, message: impl Into<String>) -> ScenarioError {
        error_at_path(self.source, path, message)
    }

    fn dependency(&self, path: &FieldPath, name: &Option<String>) -> Result<Option<usize>, ScenarioError> {
        match name {
            Some(n) => self
                .world
                .dependency_index(n)
                .map(Some)
                .ok_or_else(|| self.err(path, unknown_name("dependency", n, self.world.dependency_names()))),
            None => Ok(None),
        }
    }

    /// The dependency named, or every dependency.
    fn dependencies(&self, path: &FieldPath, name: &Option<String>) -> Result<Vec<usize>, ScenarioError> {
        Ok(match self.dependency(path, name)? {
            Some(d) => vec![d],
            None => (0..self.world.dependencies.len()).collect(),
        })
    }

    fn duration(&self, path: &FieldPath, ms: Option<f64>, default_us: Micros) -> Result<Micros, ScenarioError> {
        match ms {
            None => Ok(default_us),
            Some(ms) if ms.is_finite() && ms >= 0.0 => Ok(ms_to_us(ms)),
            Some(ms) => Err(self.err(path, format!("must be a finite number >= 0, got {ms}"))),
        }
    }

    /// Refuses fields that belong to another kind, naming the first one present.
    fn only(
        &self,
        path: &FieldPath,
        kind: &str,
        present: &[(&str, bool)],
        allowed: &[&str],
    ) -> Result<(), ScenarioError> {
        match present.iter().find(|(name, set)| *set && !allowed.contains(name)) {
            Some((name, _)) => Err(self.err(
                &path.key(name),
                format!("`{name}` does not apply to kind {} (it takes {})", quote(kind), allowed.join(", ")),
            )),
            None => Ok(()),
        }
    }

    fn named<T: Named>(&self, path: &FieldPath, value: Option<&str>, default: T) -> Result<T, ScenarioError> {
        parse_named(self.source, path, value, default)
    }

    /// Orders the guards (budgets, breakers, bulkheads; file order within each) and builds the
    /// routes of every step: its dependency, its fallback (from `steps`) and its lookups.
    fn finish(self, steps: &[Vec<StepPolicy>]) -> Mechanisms {
        let mut order: Vec<usize> = (0..self.specs.len()).collect();
        order.sort_by_key(|&i| (self.specs[i].0, i));
        let mut pipeline = PipelineSpec::default();
        for &i in &order {
            pipeline.add_guard(self.specs[i].2);
        }
        let scopes: Vec<Scope> = order.iter().map(|&i| self.specs[i].1).collect();
        let mut routes = Vec::with_capacity(self.workflows.len());
        for (w, wf) in self.workflows.iter().enumerate() {
            let tenant = wf.tenant.as_ref().and_then(|t| self.tenants.iter().position(|n| n == t));
            let mut route = |dependency, class| {
                let shape = AttemptShape { workflow: w, tenant, dependency, class };
                let members: Vec<u16> =
                    (0..scopes.len()).filter(|&g| scopes[g].covers(&shape)).map(|g| g as u16).collect();
                pipeline.add_route(&members)
            };
            let mut step_routes = Vec::with_capacity(wf.steps.len());
            for (s, step) in wf.steps.iter().enumerate() {
                let class = match step.effect {
                    Effect::Read => OperationClass::Read,
                    Effect::Write => OperationClass::Write,
                };
                let fallback = steps[w][s].fallback.unwrap_or(step.dependency);
                step_routes.push(StepRoutes {
                    primary: route(step.dependency, class),
                    fallback: route(fallback, class),
                    lookup: route(step.dependency, OperationClass::Control),
                });
            }
            routes.push(step_routes);
        }
        Mechanisms { pipeline, breaker_labels: self.breaker_labels, routes }
    }

    fn circuit_breaker(&mut self, path: &FieldPath, b: &CircuitBreaker) -> Result<(), ScenarioError> {
        let kind = self.named(&path.key("kind"), b.kind.as_deref(), BreakerKind::Resilience4j)?;
        let circuit_key = self.named(&path.key("circuit_key"), b.circuit_key.as_deref(), CircuitKey::Dependency)?;
        let ignored = self.ignored(&path.key("ignore"), b.ignore.as_deref())?;
        let present = [
            ("failure_rate_threshold", b.failure_rate_threshold.is_some()),
            ("slow_call_rate_threshold", b.slow_call_rate_threshold.is_some()),
            ("slow_call_duration_threshold_ms", b.slow_call_duration_threshold_ms.is_some()),
            ("minimum_number_of_calls", b.minimum_number_of_calls.is_some()),
            ("sliding_window_type", b.sliding_window_type.is_some()),
            ("sliding_window_size", b.sliding_window_size.is_some()),
            ("wait_duration_in_open_state_ms", b.wait_duration_in_open_state_ms.is_some()),
            ("permitted_number_of_calls_in_half_open_state", b.permitted_number_of_calls_in_half_open_state.is_some()),
            ("max_wait_duration_in_half_open_state_ms", b.max_wait_duration_in_half_open_state_ms.is_some()),
            (
                "automatic_transition_from_open_to_half_open_enabled",
                b.automatic_transition_from_open_to_half_open_enabled.is_some(),
            ),
            ("failure_ratio", b.failure_ratio.is_some()),
            ("minimum_throughput", b.minimum_throughput.is_some()),
            ("sampling_duration_ms", b.sampling_duration_ms.is_some()),
            ("break_duration_ms", b.break_duration_ms.is_some()),
        ];
        let spec = match kind {
            BreakerKind::Polly => {
                self.only(path, kind.name(), &present, &POLLY_FIELDS)?;
                let options = self.polly(path, b, ignored)?;
                BreakerSpec::Polly(options)
            }
            BreakerKind::Resilience4j => {
                self.only(path, kind.name(), &present, &RESILIENCE4J_FIELDS)?;
                BreakerSpec::Resilience4j(self.resilience4j(path, b, ignored)?)
            }
        };
        for d in self.dependencies(&path.key("dependency"), &b.dependency)? {
            let name = self.world.dependencies[d].name.clone();
            if circuit_key == CircuitKey::DependencyOperation {
                for class in OperationClass::ALL {
                    self.add_breaker(Scope::Operation(d, class), spec, format!("{name}.{}", class.name()));
                }
            } else {
                self.add_breaker(Scope::Dependency(d), spec, name);
            }
        }
        Ok(())
    }

    fn add_breaker(&mut self, scope: Scope, spec: BreakerSpec, label: String) {
        // Two entries may cover the same circuit; their labels must still be unique.
        let label = {
            let mut unique = label.clone();
            let mut n = 2;
            while self.breaker_labels.contains(&unique) {
                unique = format!("{label}-{n}");
                n += 1;
            }
            unique
        };
        let label_index = self.breaker_labels.len() as u16;
        let guard = match spec {
            BreakerSpec::Resilience4j(config) => {
                GuardSpec::Resilience4jBreaker(Resilience4jSpec { config, label: label_index })
            }
            BreakerSpec::Polly(options) => GuardSpec::PollyBreaker(PollySpec { options, label: label_index }),
        };
        self.specs.push((Stage::Breaker, scope, guard));
        self.breaker_labels.push(label);
    }

    /// Failure kinds a breaker never counts; cancellations are the caller's own doing and never
    /// count either.
    fn ignored(&self, path: &FieldPath, names: Option<&[String]>) -> Result<[bool; FailureKind::COUNT], ScenarioError> {
        let mut ignored = [false; FailureKind::COUNT];
        match names {
            None => {
                ignored[FailureKind::InvalidInput.index()] = true;
                ignored[FailureKind::Unauthorized.index()] = true;
            }
            Some(names) => {
                for (i, n) in names.iter().enumerate() {
                    let kind = FailureKind::parse(n)
                        .ok_or_else(|| self.err(&path.index(i), format!("unknown failure kind {}", quote(n))))?;
                    ignored[kind.index()] = true;
                }
            }
        }
        ignored[FailureKind::Canceled.index()] = true;
        Ok(ignored)
    }

    fn resilience4j(
        &self,
        path: &FieldPath,
        b: &CircuitBreaker,
        ignored: [bool; FailureKind::COUNT],
    ) -> Result<CircuitBreakerConfig, ScenarioError> {
        let d = CircuitBreakerConfig::default();
        let window =
            self.named(&path.key("sliding_window_type"), b.sliding_window_type.as_deref(), WindowType::CountBased)?;
        let config = CircuitBreakerConfig {
            failure_rate_threshold: b.failure_rate_threshold.unwrap_or(d.failure_rate_threshold),
            slow_call_rate_threshold: b.slow_call_rate_threshold.unwrap_or(d.slow_call_rate_threshold),
            slow_call_duration_threshold_us: self.duration(
                &path.key("slow_call_duration_threshold_ms"),
                b.slow_call_duration_threshold_ms,
                d.slow_call_duration_threshold_us,
            )?,
            minimum_number_of_calls: b.minimum_number_of_calls.unwrap_or(d.minimum_number_of_calls),
            sliding_window_type: match window {
                WindowType::TimeBased => SlidingWindowType::TimeBased,
                WindowType::CountBased => SlidingWindowType::CountBased,
            },
            sliding_window_size: b.sliding_window_size.unwrap_or(d.sliding_window_size),
            wait_duration_in_open_state_us: self.duration(
                &path.key("wait_duration_in_open_state_ms"),
                b.wait_duration_in_open_state_ms,
                d.wait_duration_in_open_state_us,
            )?,
            permitted_number_of_calls_in_half_open_state: b
                .permitted_number_of_calls_in_half_open_state
                .unwrap_or(d.permitted_number_of_calls_in_half_open_state),
            max_wait_duration_in_half_open_state_us: self.duration(
                &path.key("max_wait_duration_in_half_open_state_ms"),
                b.max_wait_duration_in_half_open_state_ms,
                d.max_wait_duration_in_half_open_state_us,
            )?,
            automatic_transition_from_open_to_half_open_enabled: b
                .automatic_transition_from_open_to_half_open_enabled
                .unwrap_or(d.automatic_transition_from_open_to_half_open_enabled),
            ignored,
        };
        config.check().map_err(|m| self.err(&self.field_of(path, &m, &RESILIENCE4J_FIELDS), m))?;
        Ok(config)
    }

    fn polly(
        &self,
        path: &FieldPath,
        b: &CircuitBreaker,
        ignored: [bool; FailureKind::COUNT],
    ) -> Result<PollyBreakerOptions, ScenarioError> {
        let d = PollyBreakerOptions::default();
        let options = PollyBreakerOptions {
            failure_ratio: b.failure_ratio.unwrap_or(d.failure_ratio),
            minimum_throughput: b.minimum_throughput.unwrap_or(d.minimum_throughput),
            sampling_duration_us: self.duration(
                &path.key("sampling_duration_ms"),
                b.sampling_duration_ms,
                d.sampling_duration_us,
            )?,
            break_duration_us: self.duration(
                &path.key("break_duration_ms"),
                b.break_duration_ms,
                d.break_duration_us,
            )?,
            ignored,
        };
        options.check().map_err(|m| self.err(&self.field_of(path, &m, &POLLY_FIELDS), m))?;
        Ok(options)
    }

    /// The field a mechanism's own check names first in its message (checks name their
    /// field in snake_case, with `_us` where the file says `_ms`).
    fn field_of(&self, path: &FieldPath, message: &str, fields: &[&str]) -> FieldPath {
        let first = message.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or("");
        let first = first.strip_suffix("_us").map(|f| format!("{f}_ms")).unwrap_or_else(|| first.to_string());
        match fields.iter().find(|f| **f == first) {
            Some(f) => path.key(f),
            None => path.clone(),
        }
    }

    fn bulkhead(&mut self, path: &FieldPath, b: &Bulkhead) -> Result<(), ScenarioError> {
        let key = self.named(&path.key("key"), b.key.as_deref(), BulkheadKey::Dependency)?;
        let d = BulkheadConfig::default();
        let config = BulkheadConfig {
            max_concurrent_calls: b.max_concurrent_calls.unwrap_or(d.max_concurrent_calls),
            max_wait_us: self.duration(&path.key("max_wait_ms"), b.max_wait_ms, d.max_wait_us)?,
            reserved_for_control: b.reserved_for_control.unwrap_or(d.reserved_for_control),
            max_waiting: d.max_waiting,
        };
        config.check().map_err(|m| self.err(&self.field_of(path, &m, &BULKHEAD_FIELDS), m))?;
        let spec = GuardSpec::Bulkhead(config);
        let wrong =
            |field: &str| self.err(&path.key(field), format!("`{field}` does not apply to key = \"{}\"", key.name()));
        if matches!(key, BulkheadKey::Workflow | BulkheadKey::Tenant) && b.dependency.is_some() {
            return Err(wrong("dependency"));
        }
        match key {
            BulkheadKey::Workflow => {
                if b.tenant.is_some() {
                    return Err(wrong("tenant"));
                }
                for w in self.workflows_named(&path.key("workflow"), &b.workflow)? {
                    self.push(Stage::Bulkhead, Scope::Workflow(w), spec);
                }
            }
            BulkheadKey::Tenant => {
                if b.workflow.is_some() {
                    return Err(wrong("workflow"));
                }
                for t in self.tenants_named(&path.key("tenant"), &b.tenant)? {
                    self.push(Stage::Bulkhead, Scope::Tenant(t), spec);
                }
            }
            BulkheadKey::Dependency | BulkheadKey::Effect => {
                for field in ["workflow", "tenant"] {
                    if (field == "workflow" && b.workflow.is_some()) || (field == "tenant" && b.tenant.is_some()) {
                        return Err(wrong(field));
                    }
                }
                for dep in self.dependencies(&path.key("dependency"), &b.dependency)? {
                    if key == BulkheadKey::Effect {
                        // Reads never carry control traffic: the read pool reserves nothing.
                        let reads = GuardSpec::Bulkhead(BulkheadConfig { reserved_for_control: 0, ..config });
                        self.push(Stage::Bulkhead, Scope::Effect(dep, Effect::Read), reads);
                        self.push(Stage::Bulkhead, Scope::Effect(dep, Effect::Write), spec);
                    } else {
                        self.push(Stage::Bulkhead, Scope::Dependency(dep), spec);
                    }
                }
            }
        }
        Ok(())
    }

    fn push(&mut self, stage: Stage, scope: Scope, spec: GuardSpec) {
        self.specs.push((stage, scope, spec));
    }

    fn workflows_named(&self, path: &FieldPath, name: &Option<String>) -> Result<Vec<usize>, ScenarioError> {
        match name {
            Some(n) => match self.workflows.iter().position(|w| &w.name == n) {
                Some(w) => Ok(vec![w]),
                None => Err(self.err(path, format!("unknown workflow {}", quote(n)))),
            },
            None => Ok((0..self.workflows.len()).collect()),
        }
    }

    fn tenants_named(&self, path: &FieldPath, name: &Option<String>) -> Result<Vec<usize>, ScenarioError> {
        match name {
            Some(n) => match self.tenants.iter().position(|t| t == n) {
                Some(t) => Ok(vec![t]),
                None => Err(self.err(path, format!("no workflow has tenant {}", quote(n)))),
            },
            None if self.tenants.is_empty() => Err(self.err(path, "no workflow has a tenant to key by")),
            None => Ok((0..self.tenants.len()).collect()),
        }
    }

    fn retry_budget(&mut self, path: &FieldPath, b: &RetryBudget) -> Result<(), ScenarioError> {
        let kind = self.named(&path.key("kind"), Some(&b.kind), BudgetKindName::Grpc)?;
        let present = [
            ("max_tokens", b.max_tokens.is_some()),
            ("token_ratio", b.token_ratio.is_some()),
            ("ttl_ms", b.ttl_ms.is_some()),
            ("min_retries_per_s", b.min_retries_per_s.is_some()),
            ("percent_can_retry", b.percent_can_retry.is_some()),
            ("budget_percent", b.budget_percent.is_some()),
            ("min_retry_concurrency", b.min_retry_concurrency.is_some()),
            ("initial_retry_tokens", b.initial_retry_tokens.is_some()),
            ("retry_cost", b.retry_cost.is_some()),
            ("timeout_retry_cost", b.timeout_retry_cost.is_some()),
            ("no_retry_increment", b.no_retry_increment.is_some()),
            ("k", b.k.is_some()),
            ("window_ms", b.window_ms.is_some()),
            ("min_requests", b.min_requests.is_some()),
        ];
        let (allowed, spec): (&[&str], GuardSpec) = match kind {
            BudgetKindName::Grpc => {
                let d = GrpcRetryThrottleConfig::default();
                let c = GrpcRetryThrottleConfig {
                    max_tokens: b.max_tokens.unwrap_or(d.max_tokens),
                    token_ratio: b.token_ratio.unwrap_or(d.token_ratio),
                    ..d
                };
                (&["max_tokens", "token_ratio"], GuardSpec::RetryBudget(RetryBudgetConfig::Grpc(c)))
            }
            BudgetKindName::Finagle => {
                let d = FinagleRetryBudgetConfig::default();
                let c = FinagleRetryBudgetConfig {
                    ttl_us: self.duration(&path.key("ttl_ms"), b.ttl_ms, d.ttl_us)?,
                    min_retries_per_s: b.min_retries_per_s.unwrap_or(d.min_retries_per_s),
                    percent_can_retry: b.percent_can_retry.unwrap_or(d.percent_can_retry),
                };
                (
                    &["ttl_ms", "min_retries_per_s", "percent_can_retry"],
                    GuardSpec::RetryBudget(RetryBudgetConfig::Finagle(c)),
                )
            }
            BudgetKindName::Envoy => {
                let d = EnvoyRetryBudgetConfig::default();
                let c = EnvoyRetryBudgetConfig {
                    budget_percent: b.budget_percent.unwrap_or(d.budget_percent),
                    min_retry_concurrency: b.min_retry_concurrency.unwrap_or(d.min_retry_concurrency),
                };
                (&["budget_percent", "min_retry_concurrency"], GuardSpec::RetryBudget(RetryBudgetConfig::Envoy(c)))
            }
            BudgetKindName::Aws => {
                let d = AwsRetryQuotaConfig::default();
                let c = AwsRetryQuotaConfig {
                    initial_retry_tokens: b.initial_retry_tokens.unwrap_or(d.initial_retry_tokens),
                    retry_cost: b.retry_cost.unwrap_or(d.retry_cost),
                    timeout_retry_cost: b.timeout_retry_cost.unwrap_or(d.timeout_retry_cost),
                    no_retry_increment: b.no_retry_increment.unwrap_or(d.no_retry_increment),
                };
                let fields: &[&str] =
                    &["initial_retry_tokens", "retry_cost", "timeout_retry_cost", "no_retry_increment"];
                (fields, GuardSpec::RetryBudget(RetryBudgetConfig::Aws(c)))
            }
            BudgetKindName::AdaptiveThrottling => {
                let d = AdaptiveThrottleConfig::default();
                let c = AdaptiveThrottleConfig {
                    k: b.k.unwrap_or(d.k),
                    window_us: self.duration(&path.key("window_ms"), b.window_ms, d.window_us)?,
                    min_requests: b.min_requests.unwrap_or(d.min_requests),
                };
                c.check().map_err(|m| self.err(&self.field_of(path, &m, &["k", "window_ms"]), m))?;
                (&["k", "window_ms", "min_requests"], GuardSpec::AdaptiveThrottle(c))
            }
        };
        self.only(path, kind.name(), &present, allowed)?;
        if let GuardSpec::RetryBudget(c) = &spec {
            c.check().map_err(|m| self.err(&self.field_of(path, &m, allowed), m))?;
        }
        let scope = self.named(&path.key("scope"), b.scope.as_deref(), BudgetScope::Dependency)?;
        if scope != BudgetScope::Dependency && b.dependency.is_some() {
            let message = format!("`dependency` does not apply to scope = \"{}\"", scope.name());
            return Err(self.err(&path.key("dependency"), message));
        }
        match scope {
            BudgetScope::Global => self.push(Stage::Budget, Scope::Global, spec),
            BudgetScope::Tenant => {
                for t in self.tenants_named(&path.key("scope"), &None)? {
                    self.push(Stage::Budget, Scope::Tenant(t), spec);
                }
            }
            BudgetScope::Dependency => {
                for d in self.dependencies(&path.key("dependency"), &b.dependency)? {
                    self.push(Stage::Budget, Scope::Dependency(d), spec);
                }
            }
        }
        Ok(())
    }
}

impl Compiler<'_> {
    fn load_shedding(&mut self, path: &FieldPath, s: &LoadShedding) -> Result<(), ScenarioError> {
        let kind = self.named(&path.key("kind"), s.kind.as_deref(), SheddingKind::Priority)?;
        let present = [
            ("shed_at_utilization", s.shed_at_utilization.is_some()),
            ("shed_at_queue_ratio", s.shed_at_queue_ratio.is_some()),
            ("load_unit_step", s.load_unit_step.is_some()),
            ("sampling_window_ms", s.sampling_window_ms.is_some()),
            ("sr_threshold", s.sr_threshold.is_some()),
            ("aggression", s.aggression.is_some()),
            ("rps_threshold", s.rps_threshold.is_some()),
            ("max_rejection_probability", s.max_rejection_probability.is_some()),
        ];
        let dependencies = self.dependencies(&path.key("dependency"), &s.dependency)?;
        if kind == SheddingKind::Priority {
            const FIELDS: [&str; 3] = ["shed_at_utilization", "shed_at_queue_ratio", "load_unit_step"];
            self.only(path, kind.name(), &present, &FIELDS)?;
            let d = LoadShedder::default();
            let shedder = LoadShedder {
                shed_at_utilization: thresholds(s.shed_at_utilization.as_ref(), d.shed_at_utilization),
                shed_at_queue_ratio: thresholds(s.shed_at_queue_ratio.as_ref(), d.shed_at_queue_ratio),
                load_unit_step: s.load_unit_step.unwrap_or(d.load_unit_step),
            };
            shedder.check().map_err(|m| self.err(&self.field_of(path, &m, &FIELDS), m))?;
            for d in dependencies {
                let spec = ShedderSpec { shedder, dependency: d as u16 };
                self.push(Stage::Shed, Scope::Dependency(d), GuardSpec::LoadShedder(spec));
            }
        } else {
            const FIELDS: [&str; 5] =
                ["sampling_window_ms", "sr_threshold", "aggression", "rps_threshold", "max_rejection_probability"];
            self.only(path, kind.name(), &present, &FIELDS)?;
            let d = AdmissionControlConfig::default();
            let config = AdmissionControlConfig {
                sampling_window_us: self.duration(
                    &path.key("sampling_window_ms"),
                    s.sampling_window_ms,
                    d.sampling_window_us,
                )?,
                sr_threshold: s.sr_threshold.unwrap_or(d.sr_threshold),
                aggression: s.aggression.unwrap_or(d.aggression),
                rps_threshold: s.rps_threshold.unwrap_or(d.rps_threshold),
                max_rejection_probability: s.max_rejection_probability.unwrap_or(d.max_rejection_probability),
            };
            config.check().map_err(|m| self.err(&self.field_of(path, &m, &FIELDS), m))?;
            for d in dependencies {
                self.push(Stage::Shed, Scope::Dependency(d), GuardSpec::AdmissionControl(config));
            }
        }
        Ok(())
    }
}

/// A threshold per priority: the file's where given, the default elsewhere.
fn thresholds(t: Option<&PriorityThresholds>, default: [f64; Priority::COUNT]) -> [f64; Priority::COUNT] {
    let Some(t) = t else { return default };
    let mut out = default;
    for p in Priority::ALL {
        let given = match p {
            Priority::CriticalPlus => t.critical_plus,
            Priority::Critical => t.critical,
            Priority::SheddablePlus => t.sheddable_plus,
            Priority::Sheddable => t.sheddable,
        };
        if let Some(v) = given {
            out[p.index()] = v;
        }
    }
    out
}

const RESILIENCE4J_FIELDS: [&str; 10] = [
    "failure_rate_threshold",
    "slow_call_rate_threshold",
    "slow_call_duration_threshold_ms",
    "minimum_number_of_calls",
    "sliding_window_type",
    "sliding_window_size",
    "wait_duration_in_open_state_ms",
    "permitted_number_of_calls_in_half_open_state",
    "max_wait_duration_in_half_open_state_ms",
    "automatic_transition_from_open_to_half_open_enabled",
];

const POLLY_FIELDS: [&str; 4] = ["failure_ratio", "minimum_throughput", "sampling_duration_ms", "break_duration_ms"];

const BULKHEAD_FIELDS: [&str; 3] = ["max_concurrent_calls", "max_wait_ms", "reserved_for_control"];
