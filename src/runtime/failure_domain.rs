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
//!
//! A quorum's branches are redundant copies, and the essay's quorum is evidence only across
//! distinct failure domains: branches that call one dependency (a quorum of `n` calls to the
//! step's model) or dependencies of one stated domain get one warning per such group, naming
//! the branches. A dependency without a stated domain is a domain of its own.

use crate::scenario::{FieldPath, Scenario, ScenarioError, Source, error_at_path};

const FALLBACK: (&str, &str) = ("fallback", "its primary");

/// One warning per fallback (a step's own, a policy's `fallback` or each of its `fallbacks`)
/// and per pair of parallel branches (steps of a workflow with the same `after`) whose two
/// dependencies differ and state the same failure domain, in file order; then one per group of
/// a quorum's branches in one domain ([`quorum_domains`]).
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
    // Quorums last: their branches are one step's copies, not the workflow's shape.
    for (w, workflow) in scenario.workflows.iter().enumerate() {
        for (j, step) in workflow.steps.iter().enumerate() {
            if let Some(q) = &step.quorum {
                let path = FieldPath::root().key("workflow").index(w).key("step").index(j).key("quorum");
                warnings.extend(quorum_domains(scenario, source, step, q, &path));
            }
        }
    }
    warnings
}

/// One warning per failure domain that holds two or more of quorum `q`'s branches (step
/// `step`, at `path`): the same dependency called again, or dependencies stating one
/// `failure_domain`. A quorum the compiler refuses (no branches, too many) gets none here.
fn quorum_domains(
    scenario: &Scenario,
    source: &Source,
    step: &crate::scenario::Step,
    q: &crate::scenario::QuorumStepSpec,
    path: &FieldPath,
) -> Vec<ScenarioError> {
    let branches: Vec<&str> = match (&q.dependencies, q.n) {
        (Some(list), _) => list.iter().map(String::as_str).collect(),
        (None, Some(n)) if (1..=crate::runtime::quorum_step::MAX_BRANCHES).contains(&n) => {
            vec![step.dependency.as_str(); n as usize]
        }
        (None, _) => return Vec::new(),
    };
    let stated = |name: &str| {
        let i = scenario.dependencies.iter().position(|d| d.name == name)?;
        scenario.dependencies[i].failure_domain.as_deref().map(|domain| (i, domain))
    };
    // Each branch's domain: its dependency's stated one, or the dependency itself.
    let domain_of = |name: &'_ str| -> (bool, String) {
        match stated(name) {
            Some((_, domain)) => (true, domain.to_string()),
            None => (false, name.to_string()),
        }
    };
    let (n, k) = (branches.len(), q.k);
    let mut warnings = Vec::new();
    let mut seen: Vec<(bool, String)> = Vec::new();
    for (b, name) in branches.iter().enumerate() {
        let domain = domain_of(name);
        if seen.contains(&domain) {
            continue;
        }
        let members: Vec<usize> = (b..n).filter(|&c| domain_of(branches[c]) == domain).collect();
        seen.push(domain.clone());
        if members.len() < 2 {
            continue;
        }
        let shown = if domain.0 { format!("`{}`", domain.1) } else { format!("`{name}`") };
        let together = if members.len() > n - k as usize {
            format!("a fault of {shown} alone leaves the quorum unmet")
        } else {
            format!("a fault of {shown} takes {} of its branches together", members.len())
        };
        let what = match (&q.dependencies, stated(name)) {
            (None, _) => format!(
                "the {k}-of-{n} quorum's {n} branches all call `{name}`, one dependency and so one failure domain"
            ),
            (Some(_), found) => {
                let listed: Vec<String> = members.iter().map(|&c| format!("{c} (`{}`)", branches[c])).collect();
                let listed = match listed.split_last() {
                    Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
                    Some((last, _)) => last.clone(),
                    None => String::new(),
                };
                match (domain.0, found) {
                    (true, Some((i, d))) => format!(
                        "branches {listed} of the {k}-of-{n} quorum are in one failure domain `{d}` (dependency[{i}].failure_domain)"
                    ),
                    (true, None) | (false, _) => {
                        format!("branches {listed} of the {k}-of-{n} quorum call one dependency, so one failure domain")
                    }
                }
            }
        };
        let message = format!(
            "{what}: {together}; a quorum is evidence only across distinct failure domains (docs/essay.md section 22)"
        );
        // At the second branch of the group: where the domain repeats.
        let at = match &q.dependencies {
            Some(_) => path.key("dependencies").index(members[1]),
            None => path.key("n"),
        };
        warnings.push(error_at_path(source, &at, message));
    }
    warnings
}
