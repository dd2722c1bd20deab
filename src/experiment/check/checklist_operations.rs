//! The essay's section 29 checklist, its last three groups: capacity and degradation, MCP, A2A
//! and long-running tasks, operations and verification.

use super::row::{Answer, Ask, Row, RowKind};
use super::verification::shared_control_circuits;
use super::view::PolicyView;
use crate::runtime::task_client::{Observe, OnSendTimeout};
use crate::scenario::FieldPath;

const fn ask(id: &'static str, question: &'static str) -> Ask {
    Ask { kind: RowKind::Checklist, id, source: "essay 29", question }
}

pub const QUEUES_BOUNDED: Ask = ask("s29.queue_depth_and_wait_bounded", "Queue depth and longest wait bounded?");
pub const BULKHEADS: Ask =
    ask("s29.bulkheads", "Interactive, batch, write and recovery resources protected by bulkheads?");
pub const CONTROL_NOT_BLOCKED: Ask =
    ask("s29.circuit_spares_control_path", "Circuits do not also block the control path (status, cancel)?");
pub const SHEDDING_APPROVED: Ask =
    ask("s29.shedding_and_modes_declared", "Load-shedding priorities and degradation states declared?");
pub const QUALITY_SHOWN: Ask = ask("s29.lower_quality_shown", "Lowered evidence or quality shown to the user?");
pub const TRANSPORT_VS_TASK: Ask =
    ask("s29.transport_vs_task_lifetime", "Transport connection lifetime kept apart from the remote task's?");
pub const HANDLES_DURABLE: Ask = ask("s29.task_handles_durable", "MCP and A2A task handles stored durably?");
pub const OBSERVE_BY_CAPABILITY: Ask =
    ask("s29.observe_by_capability", "Poll interval, streaming and push used as the server's capability says?");
pub const CANCEL_NOT_ROLLBACK: Ask =
    ask("s29.cancel_not_rollback", "Cancellation not taken for a rollback or a completed stop?");
pub const ORPHANS_OWNED: Ask =
    ask("s29.late_result_and_orphan_owner", "Late results and orphan tasks have an owner, a TTL and reconciliation?");
pub const AMPLIFICATION_MEASURED: Ask =
    ask("s29.amplification_measured", "Actual attempt amplification per logical run measured?");
pub const EXHAUSTION_OBSERVED: Ask =
    ask("s29.exhaustion_observed", "Budget exhaustion, fallback, degradation and unknown effects observed?");
pub const CHAOS_TESTED: Ask =
    ask("s29.chaos_overload_recovery_tested", "Chaos, overload and recovery storms tested regularly?");
pub const SLO_DRIVES_POLICY: Ask =
    ask("s29.slo_changes_runtime_policy", "SLO and error-budget state change the runtime policy?");

pub fn answers(view: &PolicyView) -> Vec<Row> {
    vec![
        queues_bounded(view),
        bulkheads(view),
        control_not_blocked(view),
        shedding_approved(view),
        quality_shown(view),
        transport_vs_task(view),
        handles_durable(view),
        observe_by_capability(view),
        cancel_not_rollback(view),
        orphans_owned(view),
        amplification_measured(view),
        exhaustion_observed(view),
        chaos_tested(view),
        slo_drives_policy(view),
    ]
}

fn queues_bounded(view: &PolicyView) -> Row {
    // Primaries, fallbacks and quorum branches: every queue a call of the policy can wait in.
    let called: Vec<usize> = view.steps().flat_map(|s| s.dependencies_called()).collect();
    let unbounded = view
        .scenario
        .dependencies
        .iter()
        .enumerate()
        .find(|(d, dep)| called.contains(d) && dep.queue_policy.as_ref().and_then(|q| q.max_wait_ms).is_none());
    match unbounded {
        Some((d, dep)) => {
            let evidence = format!(
                "dependency `{}` bounds its queue at queue_capacity {} but sets no queue_policy.max_wait_ms: a call may wait until its timeout",
                dep.name, dep.queue_capacity
            );
            let path = FieldPath::root().key("dependency").index(d);
            QUEUES_BOUNDED.answer(view.name, Answer::No, evidence, view.at(&path))
        }
        None => QUEUES_BOUNDED.answer(
            view.name,
            Answer::Yes,
            "every dependency a step calls has a queue_capacity and a queue_policy.max_wait_ms".into(),
            view.at(&FieldPath::root().key("dependency")),
        ),
    }
}

fn bulkheads(view: &PolicyView) -> Row {
    let n = view.spec.bulkhead.len();
    let evidence = format!("{n} bulkhead(s); {}", view.figures.cite("refused_total.bulkhead"));
    BULKHEADS.answer(view.name, Answer::yes_if(n > 0), evidence, view.at(&view.field(&["bulkhead"])))
}

fn control_not_blocked(view: &PolicyView) -> Row {
    let location = view.at(&view.field(&["circuit_breaker"]));
    if view.spec.circuit_breaker.is_empty() {
        return CONTROL_NOT_BLOCKED.answer(view.name, Answer::NotApplicable, "no circuit breaker".into(), location);
    }
    match shared_control_circuits(view).first() {
        Some((i, name)) => CONTROL_NOT_BLOCKED.answer(
            view.name,
            Answer::No,
            format!("circuit_breaker[{i}] guards `{name}` with circuit_key = \"dependency\": status lookups share the circuit"),
            view.at(&view.field(&["circuit_breaker"]).index(*i)),
        ),
        None => CONTROL_NOT_BLOCKED.answer(
            view.name,
            Answer::Yes,
            "no circuit puts a dependency's status lookups with its reads and writes".into(),
            location,
        ),
    }
}

fn shedding_approved(view: &PolicyView) -> Row {
    let shedders = view.spec.load_shedding.len();
    let rules = view.spec.runtime_policy.len();
    let evidence = format!("{shedders} load_shedding entr(ies), {rules} runtime_policy rule(s)");
    SHEDDING_APPROVED.answer(view.name, Answer::yes_if(shedders + rules > 0), evidence, view.at(&view.path))
}

fn quality_shown(view: &PolicyView) -> Row {
    // A stale answer without provenance passes as fresh: the only way the model hides a
    // lowered evidence level.
    let hidden = view.spec.cache.keys().find(|name| {
        view.model.world.dependency_index(name).is_some_and(|d| {
            let served = view.policy.caches[d].as_ref().is_some_and(|c| c.stale_if_error);
            let contract = view.scenario.dependencies[d].cache.as_ref();
            served
                && contract
                    .is_some_and(|c| c.provenance_required == Some(false) && c.stale_if_error_s.unwrap_or(0.0) > 0.0)
        })
    });
    match hidden {
        Some(name) => QUALITY_SHOWN.answer(
            view.name,
            Answer::No,
            format!("stale entries of `{name}` are served with provenance_required = false"),
            view.at(&view.field(&["cache", name])),
        ),
        None => QUALITY_SHOWN.answer(
            view.name,
            Answer::Yes,
            format!(
                "a degraded run names its reason and evidence level; {}",
                view.figures.cite("degraded_total.fallback_used")
            ),
            view.at(&view.path),
        ),
    }
}

/// Steps at task dependencies: the questions on remote tasks apply only to them.
fn task_steps(view: &PolicyView) -> usize {
    view.steps().filter(|s| view.model.world.dependencies[s.model.dependency].task.is_some()).count()
}

fn task_location(view: &PolicyView) -> crate::experiment::check::row::Location {
    view.field_or_table(&["task_client"], view.spec.task_client.is_some())
}

fn no_tasks(view: &PolicyView, ask: &Ask) -> Option<Row> {
    (task_steps(view) == 0).then(|| {
        ask.answer(view.name, Answer::NotApplicable, "no step at a task dependency".into(), task_location(view))
    })
}

fn transport_vs_task(view: &PolicyView) -> Row {
    if let Some(row) = no_tasks(view, &TRANSPORT_VS_TASK) {
        return row;
    }
    let on_timeout = view.policy.task_client.on_send_timeout;
    let answer = match on_timeout {
        OnSendTimeout::Find => Answer::Yes,
        OnSendTimeout::Resend => Answer::No,
    };
    let evidence = format!(
        "task_client.on_send_timeout = {} (resend makes a second task when a create's reply is lost); {}",
        crate::vocab::Named::name(on_timeout),
        view.figures.cite("task_send_timeout_total")
    );
    TRANSPORT_VS_TASK.answer(view.name, answer, evidence, task_location(view))
}

fn handles_durable(view: &PolicyView) -> Row {
    let evidence = if task_steps(view) == 0 {
        "no step at a task dependency".to_string()
    } else {
        "not modelled: a simulated client never loses a handle it got (a lost reply is the lost_handle fault)"
            .to_string()
    };
    HANDLES_DURABLE.answer(view.name, Answer::NotApplicable, evidence, task_location(view))
}

fn observe_by_capability(view: &PolicyView) -> Row {
    if let Some(row) = no_tasks(view, &OBSERVE_BY_CAPABILITY) {
        return row;
    }
    let c = &view.policy.task_client;
    let ok = match c.observe {
        Observe::Poll => c.honor_poll_interval,
        Observe::Subscribe | Observe::Push => true,
    };
    let evidence = format!(
        "task_client.observe = {}, honor_poll_interval = {}, jitter = {}; {}",
        crate::vocab::Named::name(c.observe),
        c.honor_poll_interval,
        crate::vocab::Named::name(c.jitter),
        view.figures.cite("task_polls_per_task")
    );
    OBSERVE_BY_CAPABILITY.answer(view.name, Answer::yes_if(ok), evidence, task_location(view))
}

fn cancel_not_rollback(view: &PolicyView) -> Row {
    if let Some(row) = no_tasks(view, &CANCEL_NOT_ROLLBACK) {
        return row;
    }
    let cancels = view.policy.task_client.cancel_on_abandon;
    let evidence = if cancels {
        format!(
            "cancel_on_abandon = true: each cancel's answer is read as one of four branches; {}, {}",
            view.figures.cite("cancel_observed_total.completed"),
            view.figures.cite("cancel_ignored_total")
        )
    } else {
        format!("cancel_on_abandon = false: the client walks away; {}", view.figures.cite("orphan_task_total"))
    };
    CANCEL_NOT_ROLLBACK.answer(view.name, Answer::yes_if(cancels), evidence, task_location(view))
}

fn orphans_owned(view: &PolicyView) -> Row {
    if let Some(row) = no_tasks(view, &ORPHANS_OWNED) {
        return row;
    }
    let c = &view.policy.task_client;
    let evidence = format!(
        "cancel_on_abandon = {}, orphan_ttl_ms {}; {}, {}, {}",
        c.cancel_on_abandon,
        super::view::ms(c.orphan_ttl_us),
        view.figures.cite("orphan_task_total"),
        view.figures.cite("orphan_tracked_total"),
        view.figures.cite("late_result_total")
    );
    // Only a cancel's answer puts an orphan on the queue that its TTL escalates; an orphan the
    // run counted but nobody tracks has no owner (the figures decide, not the setting alone).
    let untracked = view.figures.count("orphan_task_total") > view.figures.count("orphan_tracked_total");
    ORPHANS_OWNED.answer(view.name, Answer::yes_if(c.cancel_on_abandon && !untracked), evidence, task_location(view))
}

fn amplification_measured(view: &PolicyView) -> Row {
    let f = view.figures;
    // The runtime's own share exists only where SDK clients add hidden attempts.
    let evidence = match f.get("runtime_retry_amplification_ratio") {
        Some(_) => format!("{}, {}", f.cite("retry_amplification_ratio"), f.cite("runtime_retry_amplification_ratio")),
        None => f.cite("retry_amplification_ratio"),
    };
    AMPLIFICATION_MEASURED.answer(view.name, Answer::Yes, evidence, view.at(&view.path))
}

fn exhaustion_observed(view: &PolicyView) -> Row {
    let f = view.figures;
    let evidence = format!(
        "{}, {}, {}, {}",
        f.cite("budget_exhausted_total.retry"),
        f.cite("fallback_used_total"),
        f.cite("outcome_total.degraded"),
        f.cite("effect_unknown_total")
    );
    EXHAUSTION_OBSERVED.answer(view.name, Answer::Yes, evidence, view.at(&view.path))
}

fn chaos_tested(view: &PolicyView) -> Row {
    let faults = view.scenario.faults.len();
    let evidence = format!("{faults} fault(s) in the scenario; {}", view.figures.cite("recovery_storm_ratio"));
    CHAOS_TESTED.answer(view.name, Answer::yes_if(faults > 0), evidence, view.at(&FieldPath::root().key("fault")))
}

fn slo_drives_policy(view: &PolicyView) -> Row {
    let budget_rule =
        view.spec.runtime_policy.iter().any(|r| {
            r.when.completion_budget.is_some() || r.exit.as_ref().is_some_and(|e| e.completion_budget.is_some())
        });
    let error_budget = view.policy.degradation.as_ref().is_some_and(|d| d.error_budget.is_some());
    let evidence = format!(
        "degradation.error_budget set: {error_budget}; a runtime_policy rule reads completion_budget: {budget_rule}; {}",
        view.figures.cite("degradation_transition_total")
    );
    SLO_DRIVES_POLICY.answer(
        view.name,
        Answer::yes_if(budget_rule),
        evidence,
        view.at(&view.field(&["runtime_policy"])),
    )
}
