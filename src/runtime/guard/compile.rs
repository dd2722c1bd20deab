//! What every mechanism's compiler shares: the scenario it reads, the scopes a guard instance
//! can cover, where it stands in a route, breaker labels, and the helpers that turn a file's
//! values into checked ones with located errors (dependency and workflow lookups, durations,
//! closed-set names, failure-kind lists). Each mechanism's module reads its own table and
//! pushes its guard instances here; `runtime::mechanisms` builds the routes from them.
//!
//! Generic over the guard specification type `G`, which the registry defines above the
//! mechanisms: a module asks only that its own configuration converts into it.

use crate::runtime::workflow::WorkflowModel;
use crate::scenario::{Effect, FieldPath, ScenarioError, Source, error_at_path, parse_named, quote, unknown_name};
use crate::sim::{Micros, ms_to_us};
use crate::vocab::{FailureKind, Named, OperationClass};
use crate::world::World;

/// A configuration value out of its mechanism's range: the field as the mechanism names it
/// (durations in `_us`; the file spells them in `_ms`) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub field: &'static str,
    pub message: String,
}

impl Invalid {
    pub fn new(field: &'static str, message: String) -> Self {
        Invalid { field, message }
    }

    /// The field as the scenario file spells it.
    fn file_field(&self) -> String {
        match self.field.strip_suffix("_us") {
            Some(stem) => format!("{stem}_ms"),
            None => self.field.to_string(),
        }
    }
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Which attempts a guard instance applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Global,
    Dependency(usize),
    /// A dependency and one operation class.
    Operation(usize, OperationClass),
    Workflow(usize),
    Tenant(usize),
    /// A dependency's pool for reads, or for writes and their status lookups.
    Effect(usize, Effect),
}

/// One kind of attempt of one step, as routes are keyed.
pub struct AttemptShape {
    pub workflow: usize,
    pub tenant: Option<usize>,
    pub dependency: usize,
    pub class: OperationClass,
}

impl Scope {
    pub fn covers(self, a: &AttemptShape) -> bool {
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

/// Where a guard stands in a route: retry budgets and throttles first (they refuse cheaply,
/// before a breaker permit is taken), then load shedders, then circuit breakers, then rate
/// limiters and bulkheads as in resilience4j's order (CircuitBreaker(RateLimiter(Bulkhead))): a
/// waiting attempt holds its breaker permit, not the other way round; file order within.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    Budget,
    Shed,
    Breaker,
    RateLimit,
    Bulkhead,
}

crate::named_enum! {
    /// One circuit per dependency, or one per dependency and operation class.
    pub enum CircuitKey { Dependency => "dependency", DependencyOperation => "dependency_operation" }
}

crate::named_enum! {
    /// What one instance of a retry budget covers.
    pub enum BudgetScope { Dependency => "dependency", Tenant => "tenant", Global => "global" }
}

/// A policy's mechanisms being compiled: the guard instances so far, with their stage and scope.
/// Names made unique as they are handed out: a name already taken gets the first free suffix
/// 2, 3, ... (placed where `suffixed` puts it). Per base name the next suffix to try is kept,
/// so thousands of instances on one name are named in log time (a scan per suffix was cubic).
#[derive(Debug, Default)]
pub struct UniqueLabels {
    taken: std::collections::BTreeSet<String>,
    next_suffix: std::collections::BTreeMap<String, u32>,
}

impl UniqueLabels {
    pub fn unique(&mut self, base: &str, suffixed: impl Fn(u32) -> String) -> String {
        let mut unique = base.to_string();
        if self.taken.contains(&unique) {
            let n = self.next_suffix.entry(base.to_string()).or_insert(2);
            loop {
                unique = suffixed(*n);
                *n += 1;
                if !self.taken.contains(&unique) {
                    break;
                }
            }
        }
        self.taken.insert(unique.clone());
        unique
    }
}

pub struct Compile<'a, G> {
    pub source: &'a Source,
    pub world: &'a World,
    pub workflows: &'a [WorkflowModel],
    /// Every tenant named by a workflow, sorted.
    pub tenants: Vec<String>,
    pub guards: Vec<(Stage, Scope, G)>,
    pub breaker_labels: Vec<String>,
    /// The dependency each breaker label guards, by label index.
    pub breaker_dependencies: Vec<usize>,
    /// Whether each breaker leaves OPEN only when a call arrives after its wait (no timer of
    /// its own): a mode that stops calling the dependency must send it probe runs while open.
    pub breaker_half_opens_on_call: Vec<bool>,
    /// The breaker labels taken.
    labels: UniqueLabels,
    /// Bytes the guards' sliding windows take in one simulation, and the field of the entry
    /// that takes the most (for the message when the sum is over the bound).
    pub window_bytes: u64,
    pub largest_window: Option<(FieldPath, u64)>,
}

impl<'a, G> Compile<'a, G> {
    pub fn new(source: &'a Source, world: &'a World, workflows: &'a [WorkflowModel]) -> Self {
        let mut tenants: Vec<String> = workflows.iter().filter_map(|w| w.tenant.clone()).collect();
        tenants.sort();
        tenants.dedup();
        Compile {
            source,
            world,
            workflows,
            tenants,
            guards: Vec::new(),
            breaker_labels: Vec::new(),
            breaker_dependencies: Vec::new(),
            breaker_half_opens_on_call: Vec::new(),
            labels: UniqueLabels::default(),
            window_bytes: 0,
            largest_window: None,
        }
    }

    pub fn err(&self, path: &FieldPath, message: impl Into<String>) -> ScenarioError {
        error_at_path(self.source, path, message)
    }

    /// A mechanism's own check, its failure located at the field it names.
    pub fn check(&self, path: &FieldPath, checked: Result<(), Invalid>) -> Result<(), ScenarioError> {
        checked.map_err(|invalid| self.err(&path.key(&invalid.file_field()), invalid.message))
    }

    pub fn push(&mut self, stage: Stage, scope: Scope, spec: impl Into<G>) {
        self.guards.push((stage, scope, spec.into()));
    }

    /// A breaker for each circuit the entry covers, each labelled by its dependency (and
    /// operation class); `make` builds its spec from its label's index.
    pub fn add_breakers(
        &mut self,
        path: &FieldPath,
        dependency: &Option<String>,
        circuit_key: Option<&str>,
        half_opens_on_call: bool,
        make: impl Fn(u16) -> G,
    ) -> Result<(), ScenarioError> {
        let circuit_key = self.named(&path.key("circuit_key"), circuit_key, CircuitKey::Dependency)?;
        for d in self.dependencies(&path.key("dependency"), dependency)? {
            let name = self.world.dependencies[d].name.clone();
            match circuit_key {
                CircuitKey::DependencyOperation => {
                    for class in OperationClass::ALL {
                        let label = self.unique_label(format!("{name}.{}", class.name()));
                        self.breaker_dependencies.push(d);
                        self.breaker_half_opens_on_call.push(half_opens_on_call);
                        self.guards.push((Stage::Breaker, Scope::Operation(d, class), make(label)));
                    }
                }
                CircuitKey::Dependency => {
                    let label = self.unique_label(name);
                    self.breaker_dependencies.push(d);
                    self.breaker_half_opens_on_call.push(half_opens_on_call);
                    self.guards.push((Stage::Breaker, Scope::Dependency(d), make(label)));
                }
            }
        }
        Ok(())
    }

    /// One budget instance per scope value the entry covers: one per dependency (or the one
    /// named), one per tenant, or one for every attempt of the policy.
    pub fn add_budgets(
        &mut self,
        path: &FieldPath,
        scope: Option<&str>,
        dependency: &Option<String>,
        spec: impl Into<G> + Copy,
    ) -> Result<(), ScenarioError> {
        let scope = self.named(&path.key("scope"), scope, BudgetScope::Dependency)?;
        if scope != BudgetScope::Dependency && dependency.is_some() {
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
                for d in self.dependencies(&path.key("dependency"), dependency)? {
                    self.push(Stage::Budget, Scope::Dependency(d), spec);
                }
            }
        }
        Ok(())
    }

    /// Two entries may cover the same circuit; their labels must still be unique: the second
    /// gets `-2`, the third `-3`, the first suffix still free.
    fn unique_label(&mut self, label: String) -> u16 {
        let unique = self.labels.unique(&label, |n| format!("{label}-{n}"));
        self.breaker_labels.push(unique);
        (self.breaker_labels.len() - 1) as u16
    }

    /// Counts the memory of the sliding windows the instances an entry just added hold
    /// (`bytes` in all), naming the field that sizes them.
    pub fn add_window_bytes(&mut self, field: FieldPath, bytes: u64) {
        self.window_bytes = self.window_bytes.saturating_add(bytes);
        if self.largest_window.as_ref().is_none_or(|(_, b)| bytes > *b) {
            self.largest_window = Some((field, bytes));
        }
    }

    pub fn dependency(&self, path: &FieldPath, name: &Option<String>) -> Result<Option<usize>, ScenarioError> {
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
    pub fn dependencies(&self, path: &FieldPath, name: &Option<String>) -> Result<Vec<usize>, ScenarioError> {
        Ok(match self.dependency(path, name)? {
            Some(d) => vec![d],
            None => (0..self.world.dependencies.len()).collect(),
        })
    }

    pub fn workflows_named(&self, path: &FieldPath, name: &Option<String>) -> Result<Vec<usize>, ScenarioError> {
        match name {
            Some(n) => match self.workflows.iter().position(|w| &w.name == n) {
                Some(w) => Ok(vec![w]),
                None => Err(self.err(path, format!("unknown workflow {}", quote(n)))),
            },
            None => Ok((0..self.workflows.len()).collect()),
        }
    }

    pub fn tenants_named(&self, path: &FieldPath, name: &Option<String>) -> Result<Vec<usize>, ScenarioError> {
        match name {
            Some(n) => match self.tenants.iter().position(|t| t == n) {
                Some(t) => Ok(vec![t]),
                None => Err(self.err(path, format!("no workflow has tenant {}", quote(n)))),
            },
            None if self.tenants.is_empty() => Err(self.err(path, "no workflow has a tenant to key by")),
            None => Ok((0..self.tenants.len()).collect()),
        }
    }

    /// A duration the file gives in milliseconds, or the default.
    pub fn duration(&self, path: &FieldPath, ms: Option<f64>, default_us: Micros) -> Result<Micros, ScenarioError> {
        match ms {
            None => Ok(default_us),
            Some(ms) if ms.is_finite() && ms >= 0.0 => Ok(ms_to_us(ms)),
            Some(ms) => Err(self.err(path, format!("must be a finite number >= 0, got {ms}"))),
        }
    }

    pub fn named<T: Named>(&self, path: &FieldPath, value: Option<&str>, default: T) -> Result<T, ScenarioError> {
        parse_named(self.source, path, value, default)
    }

    /// Failure kinds a breaker does not count: the file's list, or INVALID_INPUT and
    /// UNAUTHORIZED; cancellations are the caller's own doing and are always in it.
    pub fn ignored(
        &self,
        path: &FieldPath,
        names: Option<&[String]>,
    ) -> Result<[bool; FailureKind::COUNT], ScenarioError> {
        let mut ignored = [false; FailureKind::COUNT];
        match names {
            None => ignored = FailureKind::ALL.map(FailureKind::is_request_fault),
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
}
