//! The essay's rule "fan out only if failure domains are meaningfully distinct" (section 22) as
//! a check `faultline validate` runs: a dependency may state its `failure_domain` (a provider, a
//! region, a shared input such as one retrieval result), and a fallback or a parallel branch
//! that goes to another dependency of its primary's domain gets a warning naming both and the
//! field. Warnings, not errors: a same-domain fallback still helps against the primary's own
//! faults, just not against the domain's.
//!
//! Hedges are not checked: a hedge goes to its primary's own dependency, the same domain by
//! construction. The runtime does not skip branches whose domain is covered: a step of a
//! workflow is its own piece of work, not a redundant copy of a sibling (redundant copies are
//! a quorum's business).

use crate::scenario::{FieldPath, Scenario, ScenarioError, Source, error_at_path};

const FALLBACK: (&str, &str) = ("fallback", "its primary");

/// One warning per fallback (a step's own, a policy's `fallback` or each of its `fallbacks`)
/// and per pair of parallel branches (steps of a workflow with the same `after`) whose two
/// dependencies differ and state the same failure domain; file order.
pub fn failure_domain_warnings(scenario: &Scenario, source: &Source) -> Vec<ScenarioError> {
    let domain = |name: &str| {
        scenario.dependencies.iter().position(|d| d.name == name).and_then(|i| {
            let d = &scenario.dependencies[i];
            d.failure_domain.as_deref().map(|domain| (i, domain))
        })
    };
    let mut warnings = Vec::new();
    let mut check = |primary: &str, other: &str, path: FieldPath, (what, relation): (&str, &str)| {
        if primary == other {
            return;
        }
        if let (Some((i, a)), Some((_, b))) = (domain(primary), domain(other))
            && a == b
        {
            let message = format!(
                "{what} `{other}` is in the same failure domain `{a}` as {relation} `{primary}` \
                 (dependency[{i}].failure_domain): a fault of `{a}` takes both (docs/essay.md section 22)"
            );
            warnings.push(error_at_path(source, &path, message));
        }
    };
    for (w, workflow) in scenario.workflows.iter().enumerate() {
        let steps_path = FieldPath::root().key("workflow").index(w).key("step");
        for (j, step) in workflow.steps.iter().enumerate() {
            if let Some(fallback) = &step.fallback {
                check(&step.dependency, fallback, steps_path.index(j).key("fallback"), FALLBACK);
            }
            // Parallel branches: a later sibling with the same predecessors.
            for (k, sibling) in workflow.steps.iter().enumerate().skip(j + 1) {
                let (mut a, mut b) = (step.after.clone(), sibling.after.clone());
                a.sort();
                b.sort();
                if a == b {
                    check(
                        &step.dependency,
                        &sibling.dependency,
                        steps_path.index(k).key("dependency"),
                        ("parallel branch", "its sibling"),
                    );
                }
            }
        }
    }
    for (name, policy) in &scenario.policies {
        let steps_path = FieldPath::root().key("policy").key(name).key("steps");
        for (step_id, over) in &policy.steps {
            let primaries = scenario.workflows.iter().flat_map(|w| &w.steps).filter(|s| &s.id == step_id);
            for primary in primaries {
                if let Some(fallback) = &over.fallback {
                    check(&primary.dependency, fallback, steps_path.key(step_id).key("fallback"), FALLBACK);
                }
                for (c, candidate) in over.fallbacks.iter().flatten().enumerate() {
                    let path = steps_path.key(step_id).key("fallbacks").index(c).key("dependency");
                    check(&primary.dependency, &candidate.dependency, path, ("fallback candidate", "its primary"));
                }
            }
        }
    }
    warnings
}
