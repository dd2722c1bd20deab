//! The essay's section 26 verification questions, answered from the short simulation and the
//! fields that explain its figures. Each answer names the metric that decides it.

use super::figures::show;
use super::row::{Answer, Ask, Row, RowKind};
use super::view::{PolicyView, StepView, ms};
use crate::runtime::decision::OnEffectUnknown;
use crate::scenario::{Criticality, Effect};
use crate::vocab::DegradationMode;

const fn ask(id: &'static str, question: &'static str) -> Ask {
    Ask { kind: RowKind::Verification, id, source: "essay 26", question }
}

pub const DEADLINE_BOUND: Ask =
    ask("s26.deadline_bounded_every_branch", "Root deadline actually bounded every branch?");
pub const RETRIES_WITHIN_BUDGET: Ask = ask("s26.retries_within_budget", "Retry attempts stayed within the budget?");
pub const SOFT_BEFORE_HARD: Ask = ask("s26.soft_stopped_before_hard", "Soft branches stopped before hard ones?");
pub const WRITES_RECONCILED: Ask =
    ask("s26.write_timeout_reconciled", "Write timeouts reconciled without duplicate execution?");
pub const CONTROL_PATH: Ask = ask("s26.control_path_capacity", "Control path (status, cancel) kept its capacity?");
pub const EVIDENCE_MARKED: Ask =
    ask("s26.degraded_evidence_marked", "Degraded results marked with their evidence level?");
pub const NO_OSCILLATION: Ask =
    ask("s26.restoration_without_oscillation", "Automatic restoration after shedding load did not oscillate?");

pub fn answers(view: &PolicyView) -> Vec<Row> {
    if let Some(why) = &view.figures.unfinished {
        return unfinished(view, why);
    }
    vec![
        deadline_bound(view),
        retries_within_budget(view),
        soft_before_hard(view),
        writes_reconciled(view),
        control_path(view),
        evidence_marked(view),
        no_oscillation(view),
    ]
}

/// The short simulation did not end: the deadline bounded nothing (an error: `check` is a
/// gate), and no other question has figures to be answered from.
fn unfinished(view: &PolicyView, why: &str) -> Vec<Row> {
    let propagation = view.policy.rules.deadline_propagation;
    let location = view.field_or_table(&["deadline_propagation"], view.spec.deadline_propagation.is_some());
    let evidence = format!("the short simulation never ended: {why} (deadline_propagation = {propagation})");
    let mut rows =
        vec![DEADLINE_BOUND.row(view.name, Answer::No, super::row::Severity::Error, evidence, location.clone())];
    let evidence = "no figures: the short simulation never ended (see the deadline question)".to_string();
    for ask in [
        &RETRIES_WITHIN_BUDGET,
        &SOFT_BEFORE_HARD,
        &WRITES_RECONCILED,
        &CONTROL_PATH,
        &EVIDENCE_MARKED,
        &NO_OSCILLATION,
    ] {
        rows.push(ask.answer(view.name, Answer::NotShown, evidence.clone(), view.at(&view.path)));
    }
    rows
}

fn deadline_bound(view: &PolicyView) -> Row {
    let f = view.figures;
    let propagation = view.policy.rules.deadline_propagation;
    let evidence = format!("{} (deadline_propagation = {propagation})", f.cite("run_past_deadline_ratio"));
    let location = view.field_or_table(&["deadline_propagation"], view.spec.deadline_propagation.is_some());
    DEADLINE_BOUND.answer(view.name, Answer::yes_if(f.count("run_past_deadline_total") == 0.0), evidence, location)
}

/// Hidden attempts of SDK clients the root budget does not see.
fn uncharged_hidden(view: &PolicyView) -> f64 {
    view.policy
        .sdk_clients
        .iter()
        .enumerate()
        .filter(|(_, c)| c.as_ref().is_some_and(|c| !c.charged_to_root_budget))
        .map(|(d, _)| view.figures.count(&format!("dependency.{}.hidden_attempt_total", view.dependency_name(d))))
        .sum()
}

fn retries_within_budget(view: &PolicyView) -> Row {
    let f = view.figures;
    let amplification = f.cite("retry_amplification_ratio");
    let tokens = view.policy.budget.retry_tokens;
    // The shared budgets of scenario.md 8.9 bound retries too: per run and together, both apply.
    let shared: Vec<&str> =
        view.spec.retry_budget.iter().map(|t| t.0.get("kind").and_then(|v| v.as_str()).unwrap_or("?")).collect();
    let location = if view.spec.budget.as_ref().is_some_and(|b| b.retry_tokens.is_some()) {
        view.at(&view.field(&["budget", "retry_tokens"]))
    } else if !shared.is_empty() {
        view.at(&view.field(&["retry_budget"]))
    } else {
        view.at(&view.path)
    };
    let mut bounds = Vec::new();
    let mut refusals = vec!["budget_exhausted_total.retry"];
    if let Some(n) = tokens {
        bounds.push(format!("budget.retry_tokens {n}"));
    }
    if !shared.is_empty() {
        bounds.push(format!("retry_budget {}", shared.join(", ")));
        refusals.push("refused_total.retry_budget");
    }
    // Adaptive throttling refuses attempts, not only retries: its refusals count here too.
    if shared.contains(&"adaptive_throttling") {
        refusals.push("refused_total.throttled");
    }
    let refused: f64 = refusals.iter().map(|m| f.count(m)).sum();
    let cited: Vec<String> = refusals.iter().map(|m| f.cite(m)).collect();
    let hidden = uncharged_hidden(view);
    let (answer, evidence) = if hidden > 0.0 {
        (
            Answer::No,
            format!("{} hidden SDK attempts a replication outside the retry budgets; {amplification}", show(hidden)),
        )
    } else if bounds.is_empty() {
        (
            Answer::No,
            format!("budget.retry_tokens unlimited and no retry_budget: nothing bounds the retries; {amplification}"),
        )
    } else if refused > 0.0 {
        (Answer::Yes, format!("{}; refused: {}; {amplification}", bounds.join(" and "), cited.join(", ")))
    } else {
        // A budget that never refused anything was never reached: the run shows no retry it
        // held back, so it cannot show that the retries stayed within it under load.
        (
            Answer::NotShown,
            format!(
                "{}; never reached in the short simulation: {}; {amplification}",
                bounds.join(" and "),
                cited.join(", ")
            ),
        )
    };
    RETRIES_WITHIN_BUDGET.answer(view.name, answer, evidence, location)
}

/// When a step gives up at the latest: an advisory step is left out when its window
/// (`advisory_wait_ms`) closes, whatever its timeout (scenario.md 6.1); any other step when its
/// attempt times out (u64::MAX: never).
fn give_up_us(step: &StepView) -> u64 {
    let timeout = step.policy.timeout_us.unwrap_or(u64::MAX);
    match step.spec.criticality {
        Criticality::Advisory => timeout.min(step.model.advisory_wait_us),
        Criticality::Soft | Criticality::Hard => timeout,
    }
}

fn soft_before_hard(view: &PolicyView) -> Row {
    let is_soft = |c: Criticality| match c {
        Criticality::Soft | Criticality::Advisory => true,
        Criticality::Hard => false,
    };
    let give_up =
        |soft: bool| view.steps().filter(move |s| is_soft(s.spec.criticality) == soft).map(|s| give_up_us(&s));
    if give_up(true).next().is_none() {
        return SOFT_BEFORE_HARD.answer(view.name, Answer::NotApplicable, "no soft step".into(), view.at(&view.path));
    }
    // A soft step gives up first when it ends (timeout, or advisory window) before every hard
    // step's attempt could time out; otherwise only a degradation mode that omitted soft steps
    // in the short simulation stopped them first: a mode that never engaged shows nothing.
    let soft_longest = give_up(true).max().unwrap_or(0);
    let hard_shortest = give_up(false).min().unwrap_or(u64::MAX);
    let declared = view.policy.modes.iter().any(|m| m.omit.iter().flatten().any(|&o| o));
    let by_mode = view.figures.count("omitted_by_mode_total");
    let shows = |t: u64| if t == u64::MAX { "none".to_string() } else { format!("{} ms", ms(t)) };
    let evidence = format!(
        "soft steps' latest give-up (attempt timeout, or advisory_wait_ms) {} vs hard steps' shortest attempt timeout {}; a mode omits soft steps: {declared}; {}, {}, {}",
        shows(soft_longest),
        shows(hard_shortest),
        view.figures.cite("omitted_by_mode_total"),
        view.figures.cite("omitted_step_total"),
        view.figures.cite("outcome_total.failed")
    );
    let answer = Answer::yes_if(soft_longest < hard_shortest || by_mode > 0.0);
    SOFT_BEFORE_HARD.answer(view.name, answer, evidence, view.at(&view.field(&["steps"])))
}

fn writes_reconciled(view: &PolicyView) -> Row {
    let f = view.figures;
    let location = view.field_or_table(&["on_effect_unknown"], view.spec.on_effect_unknown.is_some());
    if !view.steps().any(|s| s.spec.effect == Effect::Write) {
        return WRITES_RECONCILED.answer(view.name, Answer::NotApplicable, "no write step".into(), location);
    }
    let evidence = format!(
        "{}, {}, {} (on_effect_unknown = {})",
        f.cite("duplicate_effect_total"),
        f.cite("effect_unknown_total"),
        f.cite("reconciled_total"),
        crate::vocab::Named::name(view.policy.rules.on_effect_unknown)
    );
    // No write's effect was ever unknown: nothing was reconciled, so nothing shows it would be.
    let answer = if f.count("duplicate_effect_total") > 0.0 {
        Answer::No
    } else if f.count("effect_unknown_total") == 0.0 {
        Answer::NotShown
    } else {
        Answer::Yes
    };
    WRITES_RECONCILED.answer(view.name, answer, evidence, location)
}

/// A step whose writes the policy looks up: lookups are sent only under
/// `on_effect_unknown = "reconcile_first"` (scenario.md 8.6).
pub fn sends_lookups(view: &PolicyView, step: &StepView) -> bool {
    step.spec.status_lookup && view.policy.rules.on_effect_unknown == OnEffectUnknown::ReconcileFirst
}

/// Breaker entries that put status lookups in the same circuit as the reads and writes of a
/// dependency some step looks its writes up at: (entry index, dependency).
pub fn shared_control_circuits(view: &PolicyView) -> Vec<(usize, String)> {
    let lookups: Vec<usize> = view.steps().filter(|s| sends_lookups(view, s)).map(|s| s.model.dependency).collect();
    let mut shared = Vec::new();
    for (i, table) in view.spec.circuit_breaker.iter().enumerate() {
        let key = table.0.get("circuit_key").and_then(|v| v.as_str()).unwrap_or("dependency");
        if key == "dependency_operation" {
            continue;
        }
        let guarded = table.0.get("dependency").and_then(|v| v.as_str());
        for &d in &lookups {
            let name = view.dependency_name(d);
            if guarded.is_none_or(|g| g == name) && !shared.iter().any(|(j, n)| *j == i && n == name) {
                shared.push((i, name.to_string()));
            }
        }
    }
    shared
}

fn control_path(view: &PolicyView) -> Row {
    let lookups = view.steps().filter(|s| sends_lookups(view, s)).count();
    let tasks = view.model.world.dependencies.iter().filter(|d| d.task.is_some()).count();
    if lookups == 0 && tasks == 0 {
        let evidence = format!(
            "no status lookup the policy sends (on_effect_unknown = {}) and no task dependency: no control path",
            view.policy.rules.on_effect_unknown.name()
        );
        return CONTROL_PATH.answer(view.name, Answer::NotApplicable, evidence, view.at(&view.path));
    }
    let f = view.figures;
    let shared = shared_control_circuits(view);
    let (answer, evidence, location) = match shared.first() {
        Some((i, name)) => (
            Answer::No,
            format!(
                "circuit_breaker[{i}] keeps one circuit for `{name}` (circuit_key = \"dependency\"): an open circuit refuses the status lookups too; {}",
                f.cite("refused_total.circuit_open")
            ),
            view.at(&view.field(&["circuit_breaker"]).index(*i)),
        ),
        None => (
            Answer::Yes,
            format!(
                "{lookups} step(s) with status lookups, {tasks} task dependencies, no circuit shared with the control path; {}, {}",
                f.cite("reconciled_total"),
                f.cite("task_request_total.cancel")
            ),
            view.at(&view.field(&["circuit_breaker"])),
        ),
    };
    CONTROL_PATH.answer(view.name, answer, evidence, location)
}

fn evidence_marked(view: &PolicyView) -> Row {
    let f = view.figures;
    let unmarked = f.count("cache_unmarked_stale_run_total");
    let degradable = view.steps().any(|s| s.spec.criticality != Criticality::Hard || !s.policy.fallbacks.is_empty())
        || view.policy.caches.iter().any(Option::is_some)
        || view.policy.snapshots;
    let (answer, evidence) = if unmarked > 0.0 {
        (Answer::No, format!("{} runs a replication rested on stale cache data marked as fresh", show(unmarked)))
    } else if !degradable {
        (Answer::NotApplicable, "no soft step, fallback, cache or snapshot: no run can degrade".to_string())
    } else if ["outcome_total.degraded", "evidence_run_total.approved_snapshot", "evidence_run_total.stale"]
        .iter()
        .all(|m| f.count(m) == 0.0)
    {
        // No run degraded in the short simulation: no degraded result to see marked.
        (
            Answer::NotShown,
            format!(
                "no run degraded in the short simulation: {}, {}, {}",
                f.cite("outcome_total.degraded"),
                f.cite("evidence_run_total.approved_snapshot"),
                f.cite("evidence_run_total.stale")
            ),
        )
    } else {
        (
            Answer::Yes,
            format!(
                "every degraded run carries its reason and evidence level: {}, {}, {}",
                f.cite("outcome_total.degraded"),
                f.cite("evidence_run_total.approved_snapshot"),
                f.cite("evidence_run_total.stale")
            ),
        )
    };
    EVIDENCE_MARKED.answer(view.name, answer, evidence, view.at(&view.path))
}

/// Moves to a milder mode in the short simulation: the restorations whose flapping is judged.
fn restorations(view: &PolicyView) -> f64 {
    let modes = DegradationMode::ALL;
    let mut total = 0.0;
    for from in modes {
        for to in modes.into_iter().filter(|to| to.severity() < from.severity()) {
            total += view.figures.count(&format!("degradation_transition_total.{}.{}", from.name(), to.name()));
        }
    }
    total
}

fn no_oscillation(view: &PolicyView) -> Row {
    let f = view.figures;
    let location = view.at(&view.field(&["runtime_policy"]));
    if view.policy.degradation.is_none() {
        let evidence = "no runtime_policy: no automatic degradation or restoration".to_string();
        return NO_OSCILLATION.answer(view.name, Answer::NotApplicable, evidence, location);
    }
    let restored = restorations(view);
    let evidence = format!(
        "{}, {}, {} of them to a milder mode",
        f.cite("degradation_flaps_per_hour"),
        f.cite("degradation_transition_total"),
        show(restored)
    );
    // No restoration happened: nothing could oscillate, and nothing shows it would not.
    let answer =
        if restored == 0.0 { Answer::NotShown } else { Answer::yes_if(f.count("degradation_flaps_per_hour") == 0.0) };
    NO_OSCILLATION.answer(view.name, answer, evidence, location)
}
