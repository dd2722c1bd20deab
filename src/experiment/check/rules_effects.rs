//! Lint rules on side effects and hidden work, answered from the file alone: a write that is
//! sent again without an idempotency key the dependency deduplicates, a hedge on a write, SDK
//! retries not charged to the root budget, fallbacks and parallel branches in one failure
//! domain, and a cache whose stale answers reach a task class it is forbidden for or pass as
//! fresh.

use super::row::{Answer, Ask, Location, Row, RowKind, Severity};
use super::rule_rows::RuleRows;
use super::view::{PolicyView, ms};
use crate::runtime::decision::OnEffectUnknown;
use crate::scenario::{Effect, Idempotency, ScenarioError};

pub const WRITE_WITHOUT_KEY: Ask = Ask {
    kind: RowKind::Rule,
    id: "rule.write_retried_without_idempotency_key",
    source: "essay 11, 29 (idempotency key, status lookup); scenario.md 8.6, 8.18",
    question: "Every write sent again carries a key the dependency deduplicates?",
};

pub const HEDGE_ON_WRITE: Ask = Ask {
    kind: RowKind::Rule,
    id: "rule.hedge_on_write",
    source: "essay 22 (hedge only idempotent reads); scenario.md 8.10",
    question: "Hedges only on reads?",
};

pub const SDK_UNCHARGED: Ask = Ask {
    kind: RowKind::Rule,
    id: "rule.sdk_retries_not_charged",
    source: "essay 2, 9, 29 (SDK retries in the root budget); scenario.md 8.18",
    question: "SDK retries charged to the root budget?",
};

pub const SHARED_DOMAIN: Ask = Ask {
    kind: RowKind::Rule,
    id: "rule.shared_failure_domain",
    source: "essay 22 (fan out only if failure domains are meaningfully distinct)",
    question: "Fallbacks and parallel branches in distinct failure domains?",
};

pub const STALE_UNCLASSIFIED: Ask = Ask {
    kind: RowKind::Rule,
    id: "rule.stale_cache_unclassified_step",
    source: "essay 23 (cache contract: forbidden task classes); scenario.md 4.8",
    question: "Stale cache answers kept from the task classes they are forbidden for?",
};

pub const STALE_UNMARKED: Ask = Ask {
    kind: RowKind::Rule,
    id: "rule.stale_cache_unmarked",
    source: "essay 18, 23 (stale data is marked with its provenance); scenario.md 4.8",
    question: "Stale cache answers marked with their provenance?",
};

pub fn write_without_key(view: &PolicyView) -> Vec<Row> {
    let mut rows = RuleRows::new(&WRITE_WITHOUT_KEY, view.name);
    let mut writes = 0;
    for step in view.steps() {
        if step.spec.effect != Effect::Write {
            continue;
        }
        writes += 1;
        let keyed = step.spec.idempotency == Idempotency::Key;
        let id = &step.spec.id;
        // The runtime's own re-sends of a write whose effect is unknown: blindly under `retry`,
        // after a status lookup that found it not committed (yet) under `reconcile_first`
        // (scenario.md 8.6). Only one key per call deduplicates a late commit of the earlier
        // attempt against the re-send.
        let deduplicated = keyed && !view.policy.key_per_attempt;
        let resend = match view.policy.rules.on_effect_unknown {
            OnEffectUnknown::Retry => Some("on_effect_unknown = \"retry\" sends it again after a timeout"),
            OnEffectUnknown::ReconcileFirst if step.spec.status_lookup => Some(
                "on_effect_unknown = \"reconcile_first\" sends it again when its status lookup finds it not committed (yet), and a late commit of the earlier attempt is a second effect",
            ),
            OnEffectUnknown::ReconcileFirst | OnEffectUnknown::Handoff => None,
        };
        if let Some(resend) = resend
            && step.policy.max_attempts > 1
            && !deduplicated
        {
            let why = if keyed {
                "idempotency_key = \"per_attempt\" gives each attempt a fresh key"
            } else {
                "the step has idempotency = \"none\""
            };
            let mut evidence =
                format!("write step `{id}`: {why}, and {resend} (max_attempts {})", step.policy.max_attempts);
            if view.policy.rules.on_effect_unknown == OnEffectUnknown::ReconcileFirst {
                evidence.push_str(&format!("; {}", view.figures.cite("duplicate_effect_total")));
            }
            let location = if keyed {
                view.at(&view.field(&["idempotency_key"]))
            } else {
                view.at(&view.step_path(&step).key("idempotency"))
            };
            rows.fire(Severity::Error, evidence, location);
        }
        // The SDK's hidden re-sends after its own timeout share the attempt's key: only a
        // deduplicating dependency makes them harmless.
        let d = step.model.dependency;
        if let Some(sdk) = view.policy.sdk_clients[d].as_ref()
            && sdk.max_retries > 0
            && sdk.retry_on_timeout
            && !keyed
            && let Some(sdk_timeout) = sdk.timeout_us
            // Only an SDK timeout shorter than the runtime's attempt (clipped to the deadline
            // under propagation, scenario.md 8.5, 8.18) can fire and be retried.
            && view.attempt_bound(&step).is_none_or(|t| sdk_timeout < t)
        {
            let name = view.dependency_name(d);
            let evidence = format!(
                "write step `{id}`: the sdk_client of `{name}` retries its own {} ms timeout up to {} times, and the step has idempotency = \"none\": a lost reply commits twice",
                ms(sdk_timeout),
                sdk.max_retries
            );
            let location = view.at(&view.field(&["sdk_client", name]));
            rows.fire(Severity::Error, evidence, location);
        }
    }
    // Duplicates from a path the rule does not read (a task created twice, ...): the figure
    // contradicts a quiet "yes", so it is reported.
    let duplicates = view.figures.count("duplicate_effect_total");
    if writes > 0 && duplicates > 0.0 && rows.is_quiet() {
        let evidence = format!(
            "no write step is sent again without a deduplicated key by the runtime or an sdk_client, yet the short simulation counted {}",
            view.figures.cite("duplicate_effect_total")
        );
        rows.fire(Severity::Warning, evidence, view.at(&view.field(&["on_effect_unknown"])));
    }
    rows.or_else(|| {
        let (answer, evidence) = match writes {
            0 => (Answer::NotApplicable, "no write step".to_string()),
            n => (Answer::Yes, format!("{n} write step(s); none is sent again without a deduplicated key")),
        };
        (answer, evidence, view.at(&view.field(&["on_effect_unknown"])))
    })
}

/// The runtime never hedges a write (scenario.md 8.10), so this rule cannot fire; it is
/// answered so that the table says why.
pub fn hedge_on_write(view: &PolicyView) -> Vec<Row> {
    let writes = view.steps().filter(|s| s.spec.effect == Effect::Write).count();
    let (answer, evidence) = match (&view.policy.hedging, writes) {
        (None, _) => (Answer::NotApplicable, "no hedging".to_string()),
        (Some(_), 0) => (Answer::Yes, "hedging; every step is a read".to_string()),
        (Some(h), n) => (
            Answer::Yes,
            format!(
                "hedging.delay_ms {}: the runtime hedges read steps only; {n} write step(s) never hedged",
                ms(h.delay_us)
            ),
        ),
    };
    vec![HEDGE_ON_WRITE.answer(view.name, answer, evidence, view.at(&view.field(&["hedging"])))]
}

pub fn sdk_uncharged(view: &PolicyView) -> Vec<Row> {
    let mut rows = RuleRows::new(&SDK_UNCHARGED, view.name);
    let mut clients = 0;
    for (name, spec) in &view.spec.sdk_client {
        let Some(d) = view.model.world.dependency_index(name) else { continue };
        let Some(sdk) = view.policy.sdk_clients[d].as_ref() else { continue };
        clients += 1;
        if sdk.max_retries == 0 || sdk.charged_to_root_budget {
            continue;
        }
        let hidden = view.figures.count(&format!("dependency.{name}.hidden_attempt_total"));
        let evidence = format!(
            "dependency {name} uses an sdk_client with {} hidden retries, charged_to_root_budget = false; hidden attempts {} a replication",
            sdk.max_retries,
            super::figures::show(hidden)
        );
        let table = view.field(&["sdk_client", name]);
        let location = if spec.charged_to_root_budget.is_some() {
            view.at(&table.key("charged_to_root_budget"))
        } else {
            view.at(&table)
        };
        rows.fire(Severity::Warning, evidence, location);
    }
    rows.or_else(|| {
        let (answer, evidence) = match clients {
            0 => (Answer::NotApplicable, "no sdk_client: the runtime's attempts are all there is".to_string()),
            n => (Answer::Yes, format!("{n} sdk_client(s), each charged to the root budget or without retries")),
        };
        (answer, evidence, view.at(&view.field(&["sdk_client"])))
    })
}

/// The failure-domain warnings of `validate` (runtime/failure_domain.rs) that concern this
/// policy: those in its own table, and those of the workflows, which every policy runs.
pub fn shared_domain(view: &PolicyView, warnings: &[ScenarioError]) -> Vec<Row> {
    let own = format!("policy.{}.", view.name);
    let mut rows = RuleRows::new(&SHARED_DOMAIN, view.name);
    for w in warnings.iter().filter(|w| !w.field.starts_with("policy.") || w.field.starts_with(&own)) {
        rows.fire(Severity::Warning, w.message.clone(), Location::from_error(w));
    }
    rows.or_else(|| {
        let stated = view.scenario.dependencies.iter().filter(|d| d.failure_domain.is_some()).count();
        let (answer, evidence) = match stated {
            0 => (Answer::NotApplicable, "no dependency states a failure_domain".to_string()),
            n => (
                Answer::Yes,
                format!(
                    "{n} dependencies state a failure_domain; no fallback or parallel branch shares its primary's, no two quorum branches share one"
                ),
            ),
        };
        (answer, evidence, view.at(&view.path))
    })
}

pub fn stale_cache(view: &PolicyView) -> Vec<Row> {
    let mut unclassified = RuleRows::new(&STALE_UNCLASSIFIED, view.name);
    let mut unmarked = RuleRows::new(&STALE_UNMARKED, view.name);
    let mut stale_caches = 0;
    // Stale caches whose contract forbids some task class: only they can serve a forbidden one.
    let mut forbidding_caches = 0;
    for name in view.spec.cache.keys() {
        let Some(d) = view.model.world.dependency_index(name) else { continue };
        let (Some(usage), Some(contract)) = (view.policy.caches[d], view.scenario.dependencies[d].cache.as_ref())
        else {
            continue;
        };
        if !usage.stale_if_error || contract.stale_if_error_s.unwrap_or(0.0) <= 0.0 {
            continue;
        }
        stale_caches += 1;
        let contract_path = crate::scenario::FieldPath::root().key("dependency").index(d).key("cache");
        if contract.provenance_required == Some(false) {
            let evidence = format!(
                "policy serves stale entries of `{name}` (stale_if_error_s {}) and its contract has provenance_required = false: a run resting on them passes as fresh; cache_unmarked_stale_run_total {}",
                super::figures::show(contract.stale_if_error_s.unwrap_or(0.0)),
                super::figures::show(view.figures.count("cache_unmarked_stale_run_total"))
            );
            let location = view.at(&contract_path.key("provenance_required"));
            unmarked.fire(Severity::Error, evidence, location);
        }
        if contract.forbidden_for.is_empty() {
            continue;
        }
        forbidding_caches += 1;
        for step in view.steps() {
            // A fallback attempt or a quorum branch at the cached dependency is a lookup too.
            if !step.dependencies_called().contains(&d)
                || step.spec.effect == Effect::Write
                || step.spec.task_class.is_some()
            {
                continue;
            }
            let evidence = format!(
                "step `{}` reads `{name}` through its cache with no task_class, so the runtime cannot keep stale entries from it; the contract forbids them for {}",
                step.spec.id,
                contract.forbidden_for.join(", ")
            );
            let location = view.at(&view.step_path(&step));
            unclassified.fire(Severity::Warning, evidence, location);
        }
    }
    let quiet = |yes: &str| {
        let (answer, evidence) = match stale_caches {
            0 => (Answer::NotApplicable, "the policy serves no stale cache entry".to_string()),
            _ => (Answer::Yes, yes.to_string()),
        };
        (answer, evidence, view.at(&view.field(&["cache"])))
    };
    let unclassified = unclassified.or_else(|| match (stale_caches, forbidding_caches) {
        (1.., 0) => (
            Answer::NotApplicable,
            "no cache the policy serves stale from forbids a task class".to_string(),
            view.at(&view.field(&["cache"])),
        ),
        _ => quiet("every step a stale entry may answer states its task_class"),
    });
    let unmarked = unmarked.or_else(|| quiet("every cache it serves stale from requires provenance"));
    unclassified.into_iter().chain(unmarked).collect()
}
