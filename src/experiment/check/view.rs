//! One policy as the checker reads it: the file's table (for where a field is) beside the
//! compiled policy (for what it resolves to, defaults included), and the short simulation's
//! figures.

use super::figures::Figures;
use super::row::Location;
use crate::engine::Model;
use crate::runtime::policy::PolicyModel;
use crate::runtime::step_policy::StepPolicy;
use crate::runtime::workflow::StepModel;
use crate::scenario::{FieldPath, Override, Policy, Scenario, ScenarioError, Source, Step};
use crate::sim::Micros;

pub struct PolicyView<'a> {
    pub name: &'a str,
    pub model: &'a Model,
    pub policy: &'a PolicyModel,
    /// The file's table; every default for the implied policy of a file without any.
    pub spec: &'a Policy,
    /// `policy.<name>`; `policy.default` for the implied policy, which the file does not hold.
    pub path: FieldPath,
    pub scenario: &'a Scenario,
    pub source: &'a Source,
    pub figures: &'a Figures,
    /// The `--set` values: a field one of them wrote is located at the argument, not the file.
    pub overrides: &'a [Override],
}

/// One step of one workflow, as the file wrote it and as the policy compiled it.
pub struct StepView<'a> {
    pub workflow: usize,
    pub index: usize,
    pub spec: &'a Step,
    pub model: &'a StepModel,
    pub policy: &'a StepPolicy,
    /// The workflow's root deadline.
    pub deadline_us: Micros,
}

impl<'a> PolicyView<'a> {
    /// Where the value at `path` comes from: the last `--set` that wrote it (or a table above
    /// it), as validation errors name it, else its place in the file.
    pub fn at(&self, path: &FieldPath) -> Location {
        let field = path.to_string();
        let dotted: Vec<String> =
            field.replace('[', ".").replace(']', "").split('.').filter(|k| !k.is_empty()).map(String::from).collect();
        match self.overrides.iter().rev().find(|o| dotted.starts_with(&o.path)) {
            Some(o) => Location::from_error(&ScenarioError::in_argument(&o.argument, &field, "")),
            None => Location::at(self.source, path),
        }
    }

    /// A field of the policy's table.
    pub fn field(&self, keys: &[&str]) -> FieldPath {
        keys.iter().fold(self.path.clone(), |p, k| p.key(k))
    }

    /// The policy's field if the file sets it, else the policy's table: what decides a default.
    pub fn field_or_table(&self, keys: &[&str], set: bool) -> Location {
        if set { self.at(&self.field(keys)) } else { self.at(&self.path) }
    }

    pub fn steps(&self) -> impl Iterator<Item = StepView<'a>> + '_ {
        self.scenario.workflows.iter().enumerate().flat_map(move |(w, workflow)| {
            workflow.steps.iter().enumerate().map(move |(j, spec)| StepView {
                workflow: w,
                index: j,
                spec,
                model: &self.model.workflows[w].steps[j],
                policy: &self.policy.steps[w][j],
                deadline_us: self.model.world.workloads[w].deadline_us,
            })
        })
    }

    /// Where a step's attempt timeout is set: its override, the policy's `timeout_ms`, or (the
    /// default) the policy's table.
    pub fn timeout_location(&self, step: &Step) -> Location {
        let over = self.spec.steps.get(&step.id);
        if over.is_some_and(|o| o.timeout_ms.is_some()) {
            self.at(&self.field(&["steps", &step.id, "timeout_ms"]))
        } else {
            self.field_or_table(&["timeout_ms"], self.spec.timeout_ms.is_some())
        }
    }

    /// Where a step's `max_attempts` is set.
    pub fn attempts_location(&self, step: &Step) -> Location {
        let over = self.spec.steps.get(&step.id);
        if over.is_some_and(|o| o.max_attempts.is_some()) {
            self.at(&self.field(&["steps", &step.id, "max_attempts"]))
        } else {
            let set = self.spec.retry.as_ref().is_some_and(|r| r.max_attempts.is_some());
            self.field_or_table(&["retry", "max_attempts"], set)
        }
    }

    pub fn dependency_name(&self, d: usize) -> &str {
        &self.model.world.dependencies[d].name
    }

    /// How long an attempt at a step can last: its timeout, clipped by the deadline when the
    /// policy propagates it (scenario.md 8.5); None when nothing bounds it.
    pub fn attempt_bound(&self, step: &StepView) -> Option<Micros> {
        let deadline = self.policy.rules.deadline_propagation.then_some(step.deadline_us);
        match (step.policy.timeout_us, deadline) {
            (Some(t), Some(d)) => Some(t.min(d)),
            (Some(t), None) => Some(t),
            (None, d) => d,
        }
    }

    /// `workflow[w].step[j]`: where a step is declared.
    pub fn step_path(&self, step: &StepView) -> FieldPath {
        FieldPath::root().key("workflow").index(step.workflow).key("step").index(step.index)
    }
}

impl StepView<'_> {
    /// Every dependency an attempt of the step can go to: a quorum's branches (never retried
    /// or sent to a fallback, scenario.md 6.2), else its primary and its fallback candidates.
    pub fn dependencies_called(&self) -> Vec<usize> {
        if let Some(q) = &self.model.quorum {
            return q.branches.clone();
        }
        let mut called = vec![self.model.dependency];
        let fallbacks = self.model.fallback.into_iter().chain(self.policy.fallbacks.iter().map(|c| c.dependency));
        for d in fallbacks {
            if !called.contains(&d) {
                called.push(d);
            }
        }
        called
    }
}

/// Milliseconds for evidence: whole numbers without a fraction.
pub fn ms(us: Micros) -> String {
    crate::experiment::check::figures::show(us as f64 / 1e3)
}
