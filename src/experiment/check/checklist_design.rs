//! The essay's section 29 checklist, its first three groups: graph and contracts, budgets and
//! deadlines, retries and side effects. Mostly answered from the file; the figures of the short
//! simulation are the evidence where the question is about what happens.

use super::figures::show;
use super::row::{Answer, Ask, Row, RowKind};
use super::view::{PolicyView, ms};
use crate::runtime::decision::OnEffectUnknown;
use crate::runtime::task_client::Jitter as TaskJitter;
use crate::runtime::{BackoffKind, Jitter};
use crate::scenario::{Criticality, Effect, Idempotency};
use crate::vocab::FailureKind;

const fn ask(id: &'static str, question: &'static str) -> Ask {
    Ask { kind: RowKind::Checklist, id, source: "essay 29", question }
}

pub const GRAPH: Ask = ask("s29.graph_versioned", "Dependency graph and critical path per task class, versioned?");
pub const CLASSES: Ask =
    ask("s29.dependency_classes", "Hard, soft, write, async and approval dependencies told apart?");
pub const EDGE_CONTRACTS: Ask =
    ask("s29.edge_contracts", "Every edge has its effect, fallback, cancel and reconciliation contract?");
pub const SDK_SEPARATED: Ask =
    ask("s29.sdk_runtime_retry_split", "Retry duties of provider SDK and runtime separated?");
pub const SHARED_BUDGETS: Ask =
    ask("s29.root_budgets_shared", "Root run shares time, retry, concurrency and cost budgets?");
pub const SDK_IN_ROOT: Ask = ask("s29.sdk_retries_in_root_budget", "SDK retries counted in the root budget?");
pub const RESERVE: Ask =
    ask("s29.downstream_reserve", "Remaining deadline keeps a reserve for downstream and reconciliation?");
pub const ADMISSION: Ask = ask("s29.early_admission_reject", "Hopeless work rejected early at admission?");
pub const FAILURE_KINDS: Ask =
    ask("s29.stable_failure_kinds", "Errors normalised into stable failure kinds, not provider codes?");
pub const BACKOFF_IN_BUDGET: Ask =
    ask("s29.backoff_within_budget", "Backoff, jitter and Retry-After applied within the remaining budget?");
pub const WRITE_TIMEOUT: Ask = ask("s29.write_timeout_not_failure", "A write timeout is not taken for a failure?");
pub const RECONCILE_PATH: Ask =
    ask("s29.reconciliation_path", "Idempotency key, status lookup, ledger or human reconciliation path?");

pub fn answers(view: &PolicyView) -> Vec<Row> {
    vec![
        graph(view),
        classes(view),
        edge_contracts(view),
        sdk_separated(view),
        shared_budgets(view),
        sdk_in_root(view),
        reserve(view),
        admission(view),
        failure_kinds(view),
        backoff_in_budget(view),
        write_timeout(view),
        reconcile_path(view),
    ]
}

fn graph(view: &PolicyView) -> Row {
    let steps: usize = view.scenario.workflows.iter().map(|w| w.steps.len()).sum();
    let evidence = format!(
        "{} workflow(s) (task classes) with {steps} steps and their `after` edges, in the scenario file under version control",
        view.scenario.workflows.len()
    );
    GRAPH.answer(view.name, Answer::Yes, evidence, view.at(&crate::scenario::FieldPath::root().key("workflow")))
}

fn classes(view: &PolicyView) -> Row {
    let (mut hard, mut soft, mut advisory, mut writes, mut tasks, mut approvals) = (0, 0, 0, 0, 0, 0);
    for s in view.steps() {
        match s.spec.criticality {
            Criticality::Hard => hard += 1,
            Criticality::Soft => soft += 1,
            Criticality::Advisory => advisory += 1,
        }
        writes += usize::from(s.spec.effect == Effect::Write);
        tasks += usize::from(view.model.world.dependencies[s.model.dependency].task.is_some());
        approvals += usize::from(s.model.approval);
    }
    let asynchronous = view.scenario.workflows.iter().filter(|w| w.async_allowed).count();
    let evidence = format!(
        "hard {hard}, soft {soft}, advisory {advisory}, write {writes}, task (async) {tasks}, approval {approvals}; workflows with async_allowed {asynchronous}"
    );
    let answer = Answer::yes_if(soft + advisory + writes + tasks + approvals > 0);
    CLASSES.answer(view.name, answer, evidence, view.at(&crate::scenario::FieldPath::root().key("workflow")))
}

fn edge_contracts(view: &PolicyView) -> Row {
    // A hard read needs a fallback or a handoff; a write, a deduplicating key or a status lookup.
    let missing = view.steps().find_map(|s| match (s.spec.effect, s.spec.criticality) {
        (Effect::Write, _) if s.spec.idempotency == Idempotency::None && !s.spec.status_lookup => Some((
            s.spec.id.clone(),
            "a write with neither idempotency = \"key\" nor status_lookup",
            view.step_path(&s),
        )),
        (Effect::Read, Criticality::Hard)
            if s.policy.fallbacks.is_empty()
                && s.policy.on_give_up == crate::runtime::step_policy::OnGiveUp::Fail
                && !s.model.approval =>
        {
            Some((s.spec.id.clone(), "a hard read with no fallback and on_give_up = \"fail\"", view.step_path(&s)))
        }
        _ => None,
    });
    match missing {
        Some((id, why, path)) => {
            EDGE_CONTRACTS.answer(view.name, Answer::No, format!("step `{id}` is {why}"), view.at(&path))
        }
        None => EDGE_CONTRACTS.answer(
            view.name,
            Answer::Yes,
            "every hard read has a fallback or a handoff, every write a key or a status lookup".into(),
            view.at(&view.field(&["steps"])),
        ),
    }
}

/// The SDK clients that retry (dependency name, retries, charged).
fn retrying_sdks(view: &PolicyView) -> Vec<(String, u32, bool)> {
    view.policy
        .sdk_clients
        .iter()
        .enumerate()
        .filter_map(|(d, c)| c.as_ref().map(|c| (d, c)))
        .filter(|(_, c)| c.max_retries > 0)
        .map(|(d, c)| (view.dependency_name(d).to_string(), c.max_retries, c.charged_to_root_budget))
        .collect()
}

fn sdk_separated(view: &PolicyView) -> Row {
    let sdks = retrying_sdks(view);
    let location = view.at(&view.field(&["sdk_client"]));
    let runtime_retries = view.steps().map(|s| s.policy.max_attempts).max().unwrap_or(1) > 1;
    let uncharged = sdks.iter().find(|(_, _, charged)| !charged);
    let (answer, evidence) = match (sdks.is_empty(), uncharged) {
        (true, _) => (Answer::NotApplicable, "no sdk_client that retries: only the runtime retries".to_string()),
        (false, Some((name, n, _))) if runtime_retries => (
            Answer::No,
            format!(
                "`{name}`'s SDK retries {n} times inside each of the runtime's attempts, uncharged: the two multiply"
            ),
        ),
        (false, _) => (
            Answer::Yes,
            "every SDK that retries is charged to the root budget, or the runtime does not retry".to_string(),
        ),
    };
    SDK_SEPARATED.answer(view.name, answer, evidence, location)
}

fn shared_budgets(view: &PolicyView) -> Row {
    let b = &view.policy.budget;
    let cost = b.cost_units.is_some() || b.model_tokens.is_some() || b.money.is_some();
    let parts = [
        ("time (deadline_propagation)", view.policy.rules.deadline_propagation),
        ("retry_tokens", b.retry_tokens.is_some()),
        ("concurrency_tokens", b.concurrency_tokens.is_some()),
        ("cost", cost),
    ];
    let missing: Vec<&str> = parts.iter().filter(|(_, set)| !set).map(|(n, _)| *n).collect();
    let (answer, evidence) = if missing.is_empty() {
        (Answer::Yes, "deadline propagated; retry, concurrency and cost budgets per run".to_string())
    } else {
        (Answer::No, format!("missing: {}", missing.join(", ")))
    };
    SHARED_BUDGETS.answer(view.name, answer, evidence, view.field_or_table(&["budget"], view.spec.budget.is_some()))
}

fn sdk_in_root(view: &PolicyView) -> Row {
    let f = view.figures;
    let sdks = retrying_sdks(view);
    let location = view.at(&view.field(&["sdk_client"]));
    // Hidden amplification: every attempt the dependencies saw over those the runtime sent.
    let all = f.count("dependency_attempt_total");
    let hidden = f.count("hidden_attempt_total");
    let ratio = if all > hidden { all / (all - hidden) } else { f64::NAN };
    let (answer, evidence) = match sdks.iter().find(|(_, _, charged)| !charged) {
        _ if sdks.is_empty() => (Answer::NotApplicable, "no sdk_client that retries".to_string()),
        Some((name, n, _)) => (
            Answer::No,
            format!(
                "dependency {name} uses an sdk_client with {n} hidden retries; hidden amplification {}",
                show(ratio)
            ),
        ),
        None => (
            Answer::Yes,
            format!(
                "every retrying sdk_client has charged_to_root_budget = true; hidden amplification {}",
                show(ratio)
            ),
        ),
    };
    SDK_IN_ROOT.answer(view.name, answer, evidence, location)
}

fn reserve(view: &PolicyView) -> Row {
    let multi = view.scenario.workflows.iter().any(|w| w.steps.len() > 1);
    let location = view.at(&view.field(&["steps"]));
    if !multi {
        return RESERVE.answer(view.name, Answer::NotApplicable, "every workflow has one step".into(), location);
    }
    let reserved = view.steps().filter(|s| s.policy.reserve_us > 0).count();
    let propagation = view.policy.rules.deadline_propagation;
    let answer = Answer::yes_if(propagation && reserved > 0);
    let evidence = format!(
        "deadline_propagation = {propagation}; {reserved} step(s) with deadline_reserve_ms; {}",
        view.figures.cite("budget_exhausted_total.time")
    );
    RESERVE.answer(view.name, answer, evidence, location)
}

fn admission(view: &PolicyView) -> Row {
    let location = view.field_or_table(&["admission"], view.spec.admission.is_some());
    let (answer, evidence) = match &view.policy.admission {
        Some(_) => (Answer::Yes, format!("admission set; {}", view.figures.cite("admission_rejected_total"))),
        None => (Answer::No, "no admission: every run starts, even one that cannot finish in time".to_string()),
    };
    ADMISSION.answer(view.name, answer, evidence, location)
}

fn failure_kinds(view: &PolicyView) -> Row {
    // The runtime decides on failure kinds; an SDK retries on HTTP status, so a kind the
    // runtime never retries may still be retried below it.
    let below = view.policy.sdk_clients.iter().enumerate().find_map(|(d, c)| {
        let c = c.as_ref().filter(|c| c.max_retries > 0)?;
        let kind =
            FailureKind::ALL.into_iter().find(|k| c.retry_on[k.index()] && !view.policy.rules.retryable[k.index()])?;
        Some((view.dependency_name(d).to_string(), kind))
    });
    let location = view.at(&view.field(&["retry", "retry_on"]));
    let (answer, evidence) = match below {
        Some((name, kind)) => (
            Answer::No,
            format!(
                "the sdk_client of `{name}` retries {} by HTTP status, a kind the runtime never retries",
                kind.name()
            ),
        ),
        None => {
            let kinds: Vec<&str> = FailureKind::ALL
                .into_iter()
                .filter(|k| view.policy.rules.retryable[k.index()])
                .map(|k| k.name())
                .collect();
            (Answer::Yes, format!("retries decided on failure kinds: retry_on = [{}]", kinds.join(", ")))
        }
    };
    FAILURE_KINDS.answer(view.name, answer, evidence, location)
}

fn backoff_in_budget(view: &PolicyView) -> Row {
    let rules = &view.policy.rules;
    let b = &rules.backoff;
    let sleeps = match b.kind {
        BackoffKind::None => "backoff none (no sleep)".to_string(),
        BackoffKind::Constant => format!("backoff constant {} ms, jitter {}", ms(b.base_us), b.jitter.name()),
        BackoffKind::Exponential => {
            format!("backoff exponential {}..{} ms, jitter {}", ms(b.base_us), ms(b.max_us), b.jitter.name())
        }
    };
    let shape = format!(
        "{sleeps}; honor_retry_after = {}; deadline_propagation = {}",
        rules.honor_retry_after, rules.deadline_propagation
    );
    let spread = match (b.kind, b.jitter) {
        (BackoffKind::None, _) | (_, Jitter::None) => false,
        (
            BackoffKind::Constant | BackoffKind::Exponential,
            Jitter::Full | Jitter::Equal | Jitter::Decorrelated | Jitter::Randomized,
        ) => true,
    };
    // At a task dependency the task client waits too (resubscribes, polls, its retry pauses):
    // without jitter its clients retry in lockstep after a shared failure (a recovery storm).
    let tasks = view.steps().any(|s| view.model.world.dependencies[s.model.dependency].task.is_some());
    let client = &view.policy.task_client;
    let client_spread = match client.jitter {
        TaskJitter::None => false,
        TaskJitter::Full | TaskJitter::Equal => true,
    };
    let lockstep = tasks && !client_spread;
    let shape = if tasks { format!("{shape}; task_client.jitter = {}", client.jitter.name()) } else { shape };
    let answer = Answer::yes_if(rules.deadline_propagation && spread && !lockstep);
    let location = if lockstep && rules.deadline_propagation && spread {
        let set = view.spec.task_client.as_ref().is_some_and(|c| c.jitter.is_some());
        view.field_or_table(&["task_client", "jitter"], set)
    } else {
        view.field_or_table(&["retry", "backoff"], view.spec.retry.as_ref().is_some_and(|r| r.backoff.is_some()))
    };
    BACKOFF_IN_BUDGET.answer(view.name, answer, shape, location)
}

fn has_writes(view: &PolicyView) -> bool {
    view.steps().any(|s| s.spec.effect == Effect::Write)
}

fn write_timeout(view: &PolicyView) -> Row {
    let location = view.field_or_table(&["on_effect_unknown"], view.spec.on_effect_unknown.is_some());
    if !has_writes(view) {
        return WRITE_TIMEOUT.answer(view.name, Answer::NotApplicable, "no write step".into(), location);
    }
    let policy = view.policy.rules.on_effect_unknown;
    let answer = match policy {
        OnEffectUnknown::Retry => Answer::No,
        OnEffectUnknown::ReconcileFirst | OnEffectUnknown::Handoff => Answer::Yes,
    };
    let evidence = format!("on_effect_unknown = {}; {}", policy.name(), view.figures.cite("effect_unknown_total"));
    WRITE_TIMEOUT.answer(view.name, answer, evidence, location)
}

fn reconcile_path(view: &PolicyView) -> Row {
    if !has_writes(view) {
        return RECONCILE_PATH.answer(view.name, Answer::NotApplicable, "no write step".into(), view.at(&view.path));
    }
    // Each path counts only where the policy takes it: a lookup under reconcile_first, a key
    // one call shares under per_call, a human under handoff. A lookup that finds the write not
    // committed (yet) sends it again (scenario.md 8.6): without a shared key a late commit of
    // the earlier attempt plus the re-send is a duplicate, so the lookup is a path only when
    // its re-send is deduplicated or the step never re-sends (max_attempts 1).
    let rules = &view.policy.rules;
    let lacking = view.steps().find(|s| {
        let key = s.spec.idempotency == Idempotency::Key && !view.policy.key_per_attempt;
        let lookup = s.spec.status_lookup
            && rules.on_effect_unknown == OnEffectUnknown::ReconcileFirst
            && (key || s.policy.max_attempts < 2);
        let human = rules.on_effect_unknown == OnEffectUnknown::Handoff;
        s.spec.effect == Effect::Write && !(lookup || key || human)
    });
    match lacking {
        Some(s) => {
            let idempotency = match s.spec.idempotency {
                Idempotency::None => "none",
                Idempotency::Key => "key",
            };
            let key_mode = if view.policy.key_per_attempt { "per_attempt" } else { "per_call" };
            let evidence = if s.spec.status_lookup && rules.on_effect_unknown == OnEffectUnknown::ReconcileFirst {
                format!(
                    "write step `{}`: its status lookup (on_effect_unknown = reconcile_first) sends it again when it finds it not committed (yet), and with idempotency = {idempotency}, idempotency_key = {key_mode} no key deduplicates a late commit of the earlier attempt (max_attempts {}); {}",
                    s.spec.id,
                    s.policy.max_attempts,
                    view.figures.cite("duplicate_effect_total")
                )
            } else {
                format!(
                    "write step `{}`: on_effect_unknown = {} and idempotency_key = {key_mode} leave it no lookup, no shared key and no handoff (status_lookup = {}, idempotency = {idempotency})",
                    s.spec.id,
                    rules.on_effect_unknown.name(),
                    s.spec.status_lookup,
                )
            };
            RECONCILE_PATH.answer(view.name, Answer::No, evidence, view.at(&view.step_path(&s)))
        }
        None => {
            let evidence = format!(
                "every write has a key one call shares, a status lookup whose re-send is deduplicated (or never made), or a human handoff; {}, {}",
                view.figures.cite("reconciled_total"),
                view.figures.cite("outcome_total.handoff")
            );
            RECONCILE_PATH.answer(view.name, Answer::Yes, evidence, view.at(&view.path))
        }
    }
}
