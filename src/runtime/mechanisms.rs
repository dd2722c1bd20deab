//! Compiles a policy's mechanisms into guard specifications and routes: each table of a
//! mechanism array is read by the module its `kind` names (`guard::kinds_of`), which checks it
//! and adds its guard instances; then, for every kind of attempt a step makes (at its
//! dependency, at its fallback, status lookups), the route is the ordered list of the guards
//! that cover it: by stage (retry budgets and throttles, shedders, breakers, bulkheads), file
//! order within a stage.

use super::guard::compile::{AttemptShape, Compile, Scope, UniqueLabels};
use super::guard::pipeline::PipelineSpec;
use super::guard::{GuardSpec, Kinds, kinds_of};
use super::step_policy::{StepPolicy, StepRoutes};
use super::workflow::WorkflowModel;
use crate::scenario::{
    Effect, FieldPath, MechanismArray, Policy, RawTable, ScenarioError, Source, error_at_path, quote,
};
use crate::vocab::OperationClass;
use crate::world::World;

/// Upper bound on guard instances per policy (indices are u16 in routes).
pub const MAX_GUARDS: usize = 10_000;
/// Memory the guards' sliding windows may take in one simulation (a resilience4j breaker's
/// window is 24 bytes a call or a second: at the largest window, 1 000 000, 24 MB an instance).
pub const MAX_GUARD_WINDOW_BYTES: u64 = 256 << 20;
/// Memory the guards' sliding windows may take in one command, over all its workers: a command
/// runs fewer simulations at once than `--jobs` asks when their windows would pass it (the
/// results do not depend on the number of workers).
pub const MAX_COMMAND_WINDOW_BYTES: u64 = 1 << 30;

/// What compiling a policy's mechanisms gives the policy model.
pub struct Mechanisms {
    pub pipeline: PipelineSpec,
    pub breaker_labels: Vec<String>,
    /// The dependency each breaker label guards.
    pub breaker_dependencies: Vec<usize>,
    /// Whether each breaker half-opens only on a call (no timer of its own).
    pub breaker_half_opens_on_call: Vec<bool>,
    /// The time-series column of each guard with a level, in pipeline order.
    pub level_labels: Vec<String>,
    /// `routes[w][s]`.
    pub routes: Vec<Vec<StepRoutes>>,
    /// `fallback_routes[w][s][c]`: the route of fallback candidate c (the first is
    /// `routes[w][s].fallback`).
    pub fallback_routes: Vec<Vec<Vec<super::guard::pipeline::RouteId>>>,
    /// `quorum_routes[w][s][b]`: the route of a quorum step's branch b (empty for other steps).
    pub quorum_routes: Vec<Vec<Vec<super::guard::pipeline::RouteId>>>,
    /// What the guards' sliding windows take in one simulation, in bytes.
    pub window_bytes: u64,
}

pub fn compile_mechanisms(
    source: &Source,
    path: &FieldPath,
    policy: &Policy,
    world: &World,
    workflows: &[WorkflowModel],
    steps: &[Vec<StepPolicy>],
) -> Result<Mechanisms, ScenarioError> {
    // Refused before any per-guard work: every table makes at least one instance.
    let tables: usize = MechanismArray::ALL.iter().map(|a| a.tables(policy).len()).sum();
    if tables > MAX_GUARDS {
        let message = format!("at most {MAX_GUARDS} guard instances per policy, and it has {tables} guard tables");
        return Err(error_at_path(source, path, message));
    }
    let mut cx = Compile::new(source, world, workflows);
    for array in MechanismArray::ALL {
        for (i, table) in array.tables(policy).iter().enumerate() {
            compile_table(&mut cx, &path.key(array.name()).index(i), array, table)?;
        }
    }
    if cx.guards.len() > MAX_GUARDS {
        let message = format!("at most {MAX_GUARDS} guard instances per policy, got {}", cx.guards.len());
        return Err(error_at_path(source, path, message));
    }
    if cx.window_bytes > MAX_GUARD_WINDOW_BYTES {
        let (field, bytes) = cx.largest_window.clone().expect("windows were counted");
        let message = format!(
            "the guards' sliding windows would take {} MiB in each simulation (the bound is {} MiB; a command holds one simulation per worker); the largest share, {} MiB, is sized here: lower sliding_window_size or use fewer instances",
            cx.window_bytes >> 20,
            MAX_GUARD_WINDOW_BYTES >> 20,
            bytes >> 20
        );
        return Err(error_at_path(source, &field, message));
    }
    Ok(finish(cx, workflows, steps))
}

/// Hands one table to the module of its kind.
fn compile_table(
    cx: &mut Compile<GuardSpec>,
    path: &FieldPath,
    array: MechanismArray,
    table: &RawTable,
) -> Result<(), ScenarioError> {
    let (default, kinds) = match kinds_of(array) {
        Kinds::One(compile) => return compile(cx, path, table),
        Kinds::ByKind { default, kinds } => (default, kinds),
    };
    let kind = match (table.0.get("kind"), default) {
        (Some(value), _) => value.as_str().ok_or_else(|| cx.err(&path.key("kind"), "expected a string"))?,
        (None, Some(default)) => default,
        (None, None) => return Err(cx.err(path, "missing field `kind`")),
    };
    match kinds.iter().find(|(name, _)| *name == kind) {
        Some((_, compile)) => compile(cx, path, table),
        None => {
            let choices: Vec<&str> = kinds.iter().map(|(name, _)| *name).collect();
            let message = format!("unknown value {}; expected one of {}", quote(kind), choices.join(", "));
            Err(cx.err(&path.key("kind"), message))
        }
    }
}

/// Orders the guards (by stage, file order within each) and builds the routes of every step:
/// its dependency, its fallback (from `steps`) and its lookups.
fn finish(cx: Compile<GuardSpec>, workflows: &[WorkflowModel], steps: &[Vec<StepPolicy>]) -> Mechanisms {
    let mut order: Vec<usize> = (0..cx.guards.len()).collect();
    order.sort_by_key(|&i| (cx.guards[i].0, i));
    let mut pipeline = PipelineSpec::default();
    for &i in &order {
        pipeline.add_guard(cx.guards[i].2);
    }
    let scopes: Vec<Scope> = order.iter().map(|&i| cx.guards[i].1).collect();
    let level_labels = level_labels(&cx, &order);
    let mut routes = Vec::with_capacity(workflows.len());
    let mut fallback_routes = Vec::with_capacity(workflows.len());
    let mut quorum_routes = Vec::with_capacity(workflows.len());
    for (w, wf) in workflows.iter().enumerate() {
        let tenant = wf.tenant.as_ref().and_then(|t| cx.tenants.iter().position(|n| n == t));
        let mut route = |dependency, class| {
            let shape = AttemptShape { workflow: w, tenant, dependency, class };
            let members: Vec<u16> = (0..scopes.len()).filter(|&g| scopes[g].covers(&shape)).map(|g| g as u16).collect();
            pipeline.add_route(&members)
        };
        let mut step_routes = Vec::with_capacity(wf.steps.len());
        let mut candidate_routes = Vec::with_capacity(wf.steps.len());
        let mut branch_routes = Vec::with_capacity(wf.steps.len());
        for (s, step) in wf.steps.iter().enumerate() {
            let class = match step.effect {
                Effect::Read => OperationClass::Read,
                Effect::Write => OperationClass::Write,
            };
            let fallback = steps[w][s].fallback.unwrap_or(step.dependency);
            let r = StepRoutes {
                primary: route(step.dependency, class),
                fallback: route(fallback, class),
                lookup: route(step.dependency, OperationClass::Control),
            };
            // Candidates after the first get routes of their own (after every step's usual
            // three, so a policy with one fallback a step has the routes it always had).
            let mut candidates = vec![r.fallback];
            candidates.extend(steps[w][s].fallbacks.iter().skip(1).map(|c| route(c.dependency, class)));
            step_routes.push(r);
            candidate_routes.push(candidates);
            // A quorum's branches get routes of their own, after everything else of the step:
            // a step without a quorum has the routes it always had.
            let branches = step.quorum.as_ref().map_or(&[][..], |q| &q.branches[..]);
            branch_routes.push(branches.iter().map(|&d| route(d, class)).collect());
        }
        routes.push(step_routes);
        fallback_routes.push(candidate_routes);
        quorum_routes.push(branch_routes);
    }
    Mechanisms {
        pipeline,
        breaker_labels: cx.breaker_labels,
        breaker_dependencies: cx.breaker_dependencies,
        breaker_half_opens_on_call: cx.breaker_half_opens_on_call,
        level_labels,
        routes,
        fallback_routes,
        quorum_routes,
        window_bytes: cx.window_bytes,
    }
}

/// The time-series column of every guard with a level, in pipeline order:
/// `<family>.<scope>.<metric>` (`bulkhead.acme.in_use`, `retry_budget.search.level`), the scope
/// named by what the instance covers: a dependency (with `.read` or `.write` for a pool of one
/// effect, or the operation class), a workflow, a tenant, or `global`. A column already taken
/// (two entries covering the same scope) gets `-2` on its scope, then `-3` and so on.
fn level_labels(cx: &Compile<GuardSpec>, order: &[usize]) -> Vec<String> {
    let dependency = |d: usize| cx.world.dependencies[d].name.as_str();
    let mut taken = UniqueLabels::default();
    let mut labels = Vec::new();
    for &i in order {
        let (_, scope, spec) = &cx.guards[i];
        let Some((family, metric)) = spec.level_column() else { continue };
        let scope = match *scope {
            Scope::Global => "global".to_string(),
            Scope::Dependency(d) => dependency(d).to_string(),
            Scope::Operation(d, class) => format!("{}.{}", dependency(d), class.name()),
            Scope::Workflow(w) => cx.workflows[w].name.clone(),
            Scope::Tenant(t) => cx.tenants[t].clone(),
            Scope::Effect(d, Effect::Read) => format!("{}.read", dependency(d)),
            Scope::Effect(d, Effect::Write) => format!("{}.write", dependency(d)),
        };
        labels.push(taken.unique(&format!("{family}.{scope}.{metric}"), |n| format!("{family}.{scope}-{n}.{metric}")));
    }
    labels
}
