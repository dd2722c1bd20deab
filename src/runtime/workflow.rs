//! Compiled workflows: the step graph of a task class with names resolved and the graph
//! checked (unknown names, cycles, contracts that make no sense).

use crate::scenario::{
    Criticality, Effect, FieldPath, Idempotency, Scenario, ScenarioError, Source, error_at_path, parse_named, quote,
    unknown_name,
};
use crate::sim::{StreamKey, StreamPart, stable_name_id};
use crate::vocab::{DependencyKind, Priority};
use crate::world::World;
use crate::world::task::LateResult;
use crate::world::tokens::{CallTokens, TokenShape};

/// Steps of one workflow are indexed by u8 in hot state; 64 is far beyond any agent graph.
pub const MAX_STEPS: usize = 64;

#[derive(Debug, Clone)]
pub struct StepModel {
    pub id: String,
    pub stream_id: u64,
    /// `stream_id` mixed once: attempt keys are `run key.with(stream_id).with(serial)`.
    pub stream_part: StreamPart,
    pub dependency: usize,
    pub criticality: Criticality,
    pub effect: Effect,
    pub idempotency: Idempotency,
    pub status_lookup: bool,
    pub fallback: Option<usize>,
    /// The step's input (context) in tokens, drawn per run: fallback contracts and context
    /// windows check it, and a token-shaped model's service time grows with it.
    pub input_tokens: Option<crate::world::Distribution>,
    /// The step's output in tokens, drawn per run (at a token-shaped model).
    pub output_tokens: Option<crate::world::Distribution>,
    pub task_class: Option<String>,
    /// At a task dependency: what becomes of a result that arrives after the caller left.
    pub late_result: LateResult,
    /// The step waits for a human's decision (its dependency is an approval desk).
    pub approval: bool,
    /// An advisory step's window (docs/scenario.md section 6.1); 0 for other steps.
    pub advisory_wait_us: crate::sim::Micros,
    /// A k-of-n quorum over n branches (docs/scenario.md 6.2); boxed: most steps have none.
    pub quorum: Option<Box<super::quorum_step::StepQuorum>>,
    pub predecessors: u32,
    pub successors: Vec<u8>,
}

/// Purpose tag of a step's token counts (input, then output) below a run's key: the same draws
/// under every policy, every attempt and the fallback.
pub const TAG_CONTEXT: u64 = 6;

/// A step without a count of its own at a model without a default (compile refuses it).
const NO_TOKENS: crate::world::Distribution = crate::world::Distribution::Constant { value_ms: 0.0 };

impl StepModel {
    /// The stream of the step's token counts in the run keyed `run_key`: one per run and
    /// step, so every attempt, every policy and the fallback see the same counts.
    fn token_stream(&self, run_key: StreamKey) -> crate::sim::KeyedStream {
        run_key.with(TAG_CONTEXT).with(self.stream_id).stream()
    }

    /// The step's input tokens in the run keyed `run_key`, when it declares them.
    pub fn input_tokens_in(&self, run_key: StreamKey) -> Option<u32> {
        let input = self.input_tokens.as_ref()?;
        Some(crate::world::tokens::draw_count(input, &mut self.token_stream(run_key)))
    }

    /// The step's call at token-shaped `shape` in the run keyed `run_key`: its own counts,
    /// or the model's defaults.
    pub fn tokens_in(&self, run_key: StreamKey, shape: &TokenShape) -> CallTokens {
        let input = self.input_tokens.as_ref().or(shape.input_tokens.as_ref()).unwrap_or(&NO_TOKENS);
        let output = self.output_tokens.as_ref().or(shape.output_tokens.as_ref()).unwrap_or(&NO_TOKENS);
        shape.draw(input, output, &mut self.token_stream(run_key))
    }
}

#[derive(Debug, Clone)]
pub struct WorkflowModel {
    pub name: String,
    /// Who the traffic belongs to; bulkheads and retry budgets may be keyed by it.
    pub tenant: Option<String>,
    pub priority: Priority,
    pub load_units: f64,
    pub async_allowed: bool,
    pub steps: Vec<StepModel>,
    /// Steps with no `after`: ready when the run starts.
    pub roots: Vec<u8>,
    /// Some step is a quorum: the one flag the run machine reads on every attempt's result
    /// before it looks for a quorum (other workflows pay nothing more).
    pub has_quorum: bool,
}

pub fn compile_workflows(
    scenario: &Scenario,
    source: &Source,
    world: &World,
) -> Result<Vec<WorkflowModel>, ScenarioError> {
    let path = FieldPath::root().key("workflow");
    scenario.workflows.iter().enumerate().map(|(i, w)| compile_workflow(source, world, &path.index(i), w)).collect()
}

/// One workflow: its steps, the graph they form, and its traffic class.
fn compile_workflow(
    source: &Source,
    world: &World,
    path: &FieldPath,
    w: &crate::scenario::Workflow,
) -> Result<WorkflowModel, ScenarioError> {
    let err = |p: &FieldPath, m: String| error_at_path(source, p, m);
    if w.steps.is_empty() {
        return Err(err(path, format!("workflow {} has no [[workflow.step]]", quote(&w.name))));
    }
    if w.steps.len() > MAX_STEPS {
        return Err(err(&path.key("step"), format!("at most {MAX_STEPS} steps per workflow, got {}", w.steps.len())));
    }
    let mut steps = Vec::with_capacity(w.steps.len());
    for (j, s) in w.steps.iter().enumerate() {
        let sp = path.key("step").index(j);
        if w.steps[..j].iter().any(|o| o.id == s.id) {
            crate::world::model::check_name(&s.id).map_err(|m| err(&sp.key("id"), m))?;
            return Err(err(&sp.key("id"), format!("step {} is defined twice", quote(&s.id))));
        }
        steps.push(compile_step(source, world, &sp, s)?);
    }
    link_steps(source, path, w, &mut steps)?;
    if let Some(cycle) = find_cycle(&steps) {
        return Err(err(&path.key("step"), format!("the steps form a cycle: {cycle}")));
    }
    let roots = (0..steps.len()).filter(|&j| steps[j].predecessors == 0).map(|j| j as u8).collect();
    let tenant = match &w.tenant {
        Some(t) => {
            crate::world::model::check_name(t).map_err(|m| err(&path.key("tenant"), m))?;
            Some(t.clone())
        }
        None => None,
    };
    let priority = match &w.priority {
        Some(p) => Priority::parse(p).ok_or_else(|| {
            let names: Vec<&str> = Priority::ALL.iter().map(|p| p.name()).collect();
            err(&path.key("priority"), format!("unknown priority {}; expected one of {}", quote(p), names.join(", ")))
        })?,
        None => Priority::Critical,
    };
    let load_units = w.load_units.unwrap_or(1.0);
    if !(load_units.is_finite() && load_units > 0.0) {
        return Err(err(&path.key("load_units"), format!("must be a finite number > 0, got {load_units}")));
    }
    let async_allowed = w.async_allowed;
    let has_quorum = steps.iter().any(|s| s.quorum.is_some());
    Ok(WorkflowModel { name: w.name.clone(), tenant, priority, load_units, async_allowed, steps, roots, has_quorum })
}

/// A token count's distribution, its errors named without the duration fields' `_ms`.
fn count_distribution(
    source: &Source,
    path: &FieldPath,
    spec: &Option<crate::scenario::types::TokenCount>,
) -> Result<Option<crate::world::Distribution>, ScenarioError> {
    let Some(spec) = spec else { return Ok(None) };
    crate::world::Distribution::from_spec(&spec.as_service_time()).map(Some).map_err(|(field, message)| {
        let field = field.strip_suffix("_ms").unwrap_or(field);
        error_at_path(source, &path.key(field), message.replace("_ms", ""))
    })
}

/// Checks that every token-shaped model a step calls (its dependency, its fallback) knows the
/// step's token counts: the step's own, or the model's defaults.
fn check_step_tokens(source: &Source, world: &World, sp: &FieldPath, step: &StepModel) -> Result<(), ScenarioError> {
    for (field, target) in [("dependency", Some(step.dependency)), ("fallback", step.fallback)] {
        let Some(target) = target else { continue };
        let Some(shape) = &world.dependencies[target].tokens else { continue };
        for (what, own, default) in [
            ("input_tokens", &step.input_tokens, &shape.input_tokens),
            ("output_tokens", &step.output_tokens, &shape.output_tokens),
        ] {
            if own.is_none() && default.is_none() {
                let message = format!(
                    "step {} calls the token-shaped model {} ({field}), which needs its {what}: give the step {what} = {{ p50 = ..., p95 = ... }} or the model a default in [dependency.tokens]",
                    quote(&step.id),
                    quote(&world.dependencies[target].name)
                );
                return Err(error_at_path(source, sp, message));
            }
        }
    }
    Ok(())
}

/// One step, its names resolved; its place in the graph comes later (`link_steps`).
fn compile_step(
    source: &Source,
    world: &World,
    sp: &FieldPath,
    s: &crate::scenario::Step,
) -> Result<StepModel, ScenarioError> {
    let err = |p: &FieldPath, m: String| error_at_path(source, p, m);
    crate::world::model::check_name(&s.id).map_err(|m| err(&sp.key("id"), m))?;
    let dependency = world.dependency_index(&s.dependency).ok_or_else(|| {
        err(&sp.key("dependency"), unknown_name("dependency", &s.dependency, world.dependency_names()))
    })?;
    let fallback = match &s.fallback {
        Some(name) => {
            if s.effect == Effect::Write {
                return Err(err(
                    &sp.key("fallback"),
                    "a write cannot fall back to another dependency: the first may have committed (docs/essay.md section 4)".into(),
                ));
            }
            Some(
                world.dependency_index(name).ok_or_else(|| {
                    err(&sp.key("fallback"), unknown_name("dependency", name, world.dependency_names()))
                })?,
            )
        }
        None => None,
    };
    if s.effect == Effect::Read && (s.status_lookup || s.idempotency == Idempotency::Key) {
        let field = if s.status_lookup { "status_lookup" } else { "idempotency" };
        return Err(err(&sp.key(field), format!("`{field}` applies only to steps with effect = \"write\"")));
    }
    let step = StepModel {
        id: s.id.clone(),
        stream_id: stable_name_id(&s.id),
        stream_part: StreamPart::new(stable_name_id(&s.id)),
        dependency,
        criticality: s.criticality,
        effect: s.effect,
        idempotency: s.idempotency,
        status_lookup: s.status_lookup,
        fallback,
        input_tokens: count_distribution(source, &sp.key("input_tokens"), &s.input_tokens)?,
        output_tokens: count_distribution(source, &sp.key("output_tokens"), &s.output_tokens)?,
        task_class: s.task_class.clone(),
        late_result: late_result(source, world, sp, s, dependency)?,
        approval: world.dependencies[dependency].approval.is_some(),
        advisory_wait_us: advisory_wait(source, sp, s)?,
        quorum: super::quorum_step::compile_quorum(source, world, sp, s, dependency)?.map(Box::new),
        predecessors: 0,
        successors: Vec::new(),
    };
    check_step_tokens(source, world, sp, &step)?;
    check_contract(source, world, sp, s, &step)?;
    Ok(step)
}

/// An advisory step's window in microseconds: required there, refused elsewhere.
fn advisory_wait(
    source: &Source,
    sp: &FieldPath,
    s: &crate::scenario::Step,
) -> Result<crate::sim::Micros, ScenarioError> {
    let path = sp.key("advisory_wait_ms");
    match (s.criticality, s.advisory_wait_ms) {
        (Criticality::Advisory, Some(ms)) if ms.is_finite() && ms > 0.0 => Ok(crate::sim::ms_to_us(ms)),
        (Criticality::Advisory, Some(ms)) => {
            Err(error_at_path(source, &path, format!("must be a finite number > 0, got {ms}")))
        }
        (Criticality::Advisory, None) => Err(error_at_path(
            source,
            sp,
            "an advisory step needs `advisory_wait_ms`: how long after it starts its result is still used",
        )),
        (Criticality::Hard | Criticality::Soft, Some(_)) => Err(error_at_path(
            source,
            &path,
            "`advisory_wait_ms` applies only to steps with criticality = \"advisory\"",
        )),
        (Criticality::Hard | Criticality::Soft, None) => Ok(0),
    }
}

/// The contracts of the essay's approval and advisory classes (docs/essay.md section 4): a
/// human decision commits nothing, cannot be skipped and has no other path; a reference-only
/// result never writes and has no fallback worth waiting for.
fn check_contract(
    source: &Source,
    world: &World,
    sp: &FieldPath,
    s: &crate::scenario::Step,
    step: &StepModel,
) -> Result<(), ScenarioError> {
    let err = |field: &str, m: String| Err(error_at_path(source, &sp.key(field), m));
    if let Some(f) = step.fallback
        && world.dependencies[f].approval.is_some()
    {
        return err(
            "fallback",
            format!("{} is an approval dependency: a human is nobody's fallback", quote(&world.dependencies[f].name)),
        );
    }
    if step.approval {
        let name = quote(&s.dependency);
        if step.effect == Effect::Write {
            return err(
                "effect",
                format!(
                    "the step asks the approval dependency {name}: a decision is not a write (put the write in a step after it)"
                ),
            );
        }
        if step.criticality != Criticality::Hard {
            return err(
                "criticality",
                format!(
                    "the step asks the approval dependency {name}: an approval cannot be left out (docs/essay.md section 3), so it is hard"
                ),
            );
        }
        if step.fallback.is_some() {
            return err(
                "fallback",
                format!(
                    "the step asks the approval dependency {name}: no other path may stand in for a human's decision"
                ),
            );
        }
    }
    if step.criticality == Criticality::Advisory {
        if step.effect == Effect::Write {
            return err("effect", "an advisory step is used for reference only: it cannot be a write (an omitted write would leave its effect unknown)".into());
        }
        if step.fallback.is_some() {
            return err(
                "fallback",
                "an advisory step is omitted when it fails or is late; a fallback would only delay the run".into(),
            );
        }
    }
    Ok(())
}

/// A write's late result goes to review, a model's is discarded, any other is cached, unless
/// the step says; only a step at a task dependency may say.
fn late_result(
    source: &Source,
    world: &World,
    sp: &FieldPath,
    s: &crate::scenario::Step,
    dependency: usize,
) -> Result<LateResult, ScenarioError> {
    let dep = &world.dependencies[dependency];
    let default = match (s.effect, dep.kind) {
        (Effect::Write, _) => LateResult::Review,
        (Effect::Read, DependencyKind::Model) => LateResult::Discard,
        (Effect::Read, _) => LateResult::Cache,
    };
    if s.late_result.is_some() && dep.task.is_none() {
        let message = format!(
            "`late_result` applies to steps at a task dependency; {} has no [dependency.task]",
            quote(&dep.name)
        );
        return Err(error_at_path(source, &sp.key("late_result"), message));
    }
    parse_named(source, &sp.key("late_result"), s.late_result.as_deref(), default)
}

/// Resolves every step's `after` into predecessor counts and successor lists.
fn link_steps(
    source: &Source,
    path: &FieldPath,
    w: &crate::scenario::Workflow,
    steps: &mut [StepModel],
) -> Result<(), ScenarioError> {
    let err = |p: &FieldPath, m: String| error_at_path(source, p, m);
    for (j, s) in w.steps.iter().enumerate() {
        for (k, before) in s.after.iter().enumerate() {
            let ap = path.key("step").index(j).key("after").index(k);
            let p = w
                .steps
                .iter()
                .position(|o| &o.id == before)
                .ok_or_else(|| err(&ap, format!("unknown step {}", quote(before))))?;
            if p == j {
                return Err(err(&ap, format!("step {} cannot come after itself", quote(before))));
            }
            if s.after[..k].contains(before) {
                return Err(err(&ap, format!("step {} is listed twice", quote(before))));
            }
            steps[p].successors.push(j as u8);
            steps[j].predecessors += 1;
        }
    }
    Ok(())
}

/// Kahn's algorithm; the steps left over when no step is free lie on or behind a cycle.
fn find_cycle(steps: &[StepModel]) -> Option<String> {
    let mut indegree: Vec<u32> = steps.iter().map(|s| s.predecessors).collect();
    let mut free: Vec<usize> = (0..steps.len()).filter(|&j| indegree[j] == 0).collect();
    let mut done = 0;
    while let Some(j) = free.pop() {
        done += 1;
        for &k in &steps[j].successors {
            indegree[k as usize] -= 1;
            if indegree[k as usize] == 0 {
                free.push(k as usize);
            }
        }
    }
    if done == steps.len() {
        return None;
    }
    let stuck: Vec<&str> = (0..steps.len()).filter(|&j| indegree[j] > 0).map(|j| steps[j].id.as_str()).collect();
    Some(stuck.join(", "))
}
