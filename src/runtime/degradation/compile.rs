//! Reads a policy's `[policy.X.degradation]` table and its `[[policy.X.runtime_policy]]`
//! rules into a [`Degradation`], every value checked and every error located.

use super::config::{BreakerCheck, Condition, Degradation, FallbackMode, ModeOverrides, Promotion, RecoveryPlan, Rule};
use super::error_budget::{BurnRule, ErrorBudget, RefusedRuns, Severity, Sli};
use super::machine::MAX_RULES;
use crate::runtime::guard::compile::Compile;
use crate::runtime::workflow::WorkflowModel;
use crate::scenario::{
    Criticality, FieldPath, ModeActions, Policy, RuleCondition, ScenarioError, Source, duration_ms, parse_named, quote,
    unknown_name,
};
use crate::sim::Micros;
use crate::vocab::{BudgetState, DegradationMode, Refusal};
use crate::world::World;

/// Longest burn-rate window, in evaluation intervals (the ring's memory per workflow).
pub const MAX_WINDOW_INTERVALS: u64 = 100_000;

/// The shared compile helpers (lookups, errors, durations, closed-set names) of the guards.
type Cx<'a> = Compile<'a, ()>;

/// A duration field given in ms, with its default in ms.
fn ms(cx: &Cx, path: &FieldPath, value: Option<f64>, default_ms: f64) -> Result<Micros, ScenarioError> {
    cx.duration(path, value, crate::sim::ms_to_us(default_ms))
}

/// A duration in ms that must be more than 0.
fn positive_ms(cx: &Cx, path: &FieldPath, value: Option<f64>, default_us: Micros) -> Result<Micros, ScenarioError> {
    let us = ms(cx, path, value, default_us as f64 / 1e3)?;
    if us == 0 { Err(cx.err(path, "must be more than 0")) } else { Ok(us) }
}

/// A share in [0, 1], or (0, 1] when `open_low`.
fn check_share(cx: &Cx, path: &FieldPath, value: f64, open_low: bool) -> Result<f64, ScenarioError> {
    let ok = value.is_finite() && value <= 1.0 && if open_low { value > 0.0 } else { value >= 0.0 };
    if ok { Ok(value) } else { Err(cx.err(path, format!("must be a share in (0, 1], got {value}"))) }
}

/// The policy's degradation, or None when it declares no rules. `normal` is the policy's own
/// treatment of runs; each mode's overrides start from it.
pub fn compile_degradation(
    source: &Source,
    path: &FieldPath,
    policy: &Policy,
    world: &World,
    workflows: &[WorkflowModel],
    normal: &ModeOverrides,
) -> Result<(Option<Degradation>, Vec<ModeOverrides>), ScenarioError> {
    let cx: Cx = Compile::new(source, world, workflows);
    let mut overrides = vec![normal.clone(); DegradationMode::COUNT];
    let spec = policy.degradation.clone().unwrap_or_default();
    if policy.runtime_policy.is_empty() {
        if policy.degradation.is_some() {
            let message = "a degradation table needs at least one [[policy.<name>.runtime_policy]] rule";
            return Err(cx.err(&path.key("degradation"), message));
        }
        return Ok((None, overrides));
    }
    let rules_path = path.key("runtime_policy");
    if policy.runtime_policy.len() > MAX_RULES {
        return Err(cx.err(&rules_path, format!("at most {MAX_RULES} rules, got {}", policy.runtime_policy.len())));
    }
    let dp = path.key("degradation");
    let interval_us = ms(&cx, &dp.key("evaluation_interval_ms"), spec.evaluation_interval_ms, 5000.0)?;
    if interval_us < 1000 {
        return Err(cx.err(&dp.key("evaluation_interval_ms"), "must be at least 1 ms"));
    }
    let flap_window_us = ms(&cx, &dp.key("flap_window_ms"), spec.flap_window_ms, 300_000.0)?;
    let max_flaps_per_hour = spec.max_flaps_per_hour.unwrap_or(6.0);
    if !(max_flaps_per_hour.is_finite() && max_flaps_per_hour >= 0.0) {
        let message = format!("must be a finite number >= 0, got {max_flaps_per_hour}");
        return Err(cx.err(&dp.key("max_flaps_per_hour"), message));
    }
    let error_budget = match &spec.error_budget {
        Some(b) => Some(compile_error_budget(&cx, &dp.key("error_budget"), b, interval_us)?),
        None => None,
    };
    let recovery = compile_recovery(&cx, &dp.key("recovery"), spec.recovery.as_ref())?;
    if recovery.stop_canary_when_budget.is_some() && error_budget.is_none() {
        let message = "stop_canary_when_budget needs [policy.<name>.degradation.error_budget]";
        return Err(cx.err(&dp.key("recovery").key("stop_canary_when_budget"), message));
    }
    let mut rules = Vec::new();
    let mut limits_set = [LimitsSet::default(); DegradationMode::COUNT];
    let mut watched = vec![Vec::new(); workflows.len()];
    let mut budget_dependencies = Vec::new();
    let mut exit_warnings = Vec::new();
    for (i, r) in policy.runtime_policy.iter().enumerate() {
        let rp = rules_path.index(i);
        let mut rule = compile_rule(&cx, &rp, r, interval_us)?;
        for condition in std::iter::once(&mut rule.enter).chain(rule.exit.as_mut()) {
            assign_budget_slot(condition, &mut budget_dependencies);
        }
        if let Some(exit) = &rule.exit
            && let Some(warning) = check_exit_apart(&cx, &rp, &rule.enter, exit)?
        {
            exit_warnings.push(warning);
        }
        let reads_budget = [(Some(rule.enter), "when"), (rule.exit, "exit")]
            .into_iter()
            .find(|(c, _)| c.is_some_and(|c| c.budget_at_least.is_some() || c.budget_at_most.is_some()));
        if let (Some((_, field)), None) = (reads_budget, &error_budget) {
            let message = "completion_budget needs [policy.<name>.degradation.error_budget]";
            return Err(cx.err(&rp.key(field).key("completion_budget"), message));
        }
        for (w, list) in watched.iter_mut().enumerate() {
            if rule.workflow.is_some_and(|x| x != w) {
                continue;
            }
            // A rule on a dependency watches its breakers; one on the workflow's own signals
            // (its budget, refusals) watches every dependency the workflow calls.
            let named: Vec<usize> =
                [rule.enter.dependency, rule.exit.and_then(|e| e.dependency)].into_iter().flatten().collect();
            let all_called = workflows[w].steps.iter().flat_map(|s| std::iter::once(s.dependency).chain(s.fallback));
            let deps: Vec<usize> = if named.is_empty() { all_called.collect() } else { named };
            for d in deps {
                if !list.contains(&d) {
                    list.push(d);
                }
            }
        }
        let set = &mut limits_set[rule.mode.index()];
        apply_actions(&cx, &rp.key("actions"), rule.mode, &r.actions, &mut overrides[rule.mode.index()], set)?;
        rules.push(rule);
    }
    inherit_milder_modes(&mut overrides);
    let mut warnings = exit_warnings;
    warnings.extend(starved_signals(&cx, &rules_path, &rules, &overrides, &recovery));
    if let Some(budget) = &error_budget {
        warnings.extend(self_held_budgets(&cx, &rules_path, &rules, &overrides, budget));
    }
    let degradation = Degradation {
        interval_us,
        flap_window_us,
        max_flaps_per_hour,
        rules,
        error_budget,
        recovery,
        watched,
        budget_dependencies,
        breaker_dependencies: Vec::new(),
        breaker_half_opens_on_call: Vec::new(),
        warnings,
    };
    Ok((Some(degradation), overrides))
}

fn compile_error_budget(
    cx: &Cx,
    path: &FieldPath,
    b: &crate::scenario::ErrorBudgetSpec,
    interval_us: Micros,
) -> Result<ErrorBudget, ScenarioError> {
    let objective = b.objective.unwrap_or(0.99);
    if !(objective.is_finite() && objective > 0.0 && objective < 1.0) {
        return Err(cx.err(&path.key("objective"), format!("must be in (0, 1), got {objective}")));
    }
    let sli = parse_named(cx.source, &path.key("sli"), b.sli.as_deref(), Sli::AutoCompletion)?;
    let refused = parse_named(cx.source, &path.key("refused_runs"), b.refused_runs.as_deref(), RefusedRuns::Excluded)?;
    let period_intervals = match b.period_s {
        Some(period_s) => whole_intervals(cx, &path.key("period_s"), period_s, interval_us)?,
        // The default day, in whole intervals (rounded up: an interval need not divide it).
        None => {
            usize::try_from((86_400_000_000 as Micros).div_ceil(interval_us).min(MAX_WINDOW_INTERVALS)).unwrap_or(1)
        }
    };
    let min_runs = b.min_runs.unwrap_or(100);
    let rules = match &b.burn_rate {
        None => ErrorBudget::workbook_rules(period_intervals),
        Some(list) if list.is_empty() => {
            let message = "at least one rule, e.g. { long_window_s = 3600, short_window_s = 300, burn_rate = 14.4 } (the SRE workbook's page), or leave burn_rate out for the workbook's three rules scaled to period_s";
            return Err(cx.err(&path.key("burn_rate"), message));
        }
        Some(list) => {
            let mut rules = Vec::new();
            for (i, r) in list.iter().enumerate() {
                let rp = path.key("burn_rate").index(i);
                let long_intervals = whole_intervals(cx, &rp.key("long_window_s"), r.long_window_s, interval_us)?;
                let short_intervals = whole_intervals(cx, &rp.key("short_window_s"), r.short_window_s, interval_us)?;
                if short_intervals > long_intervals {
                    return Err(cx.err(&rp.key("short_window_s"), "must not be longer than long_window_s"));
                }
                if !(r.burn_rate.is_finite() && r.burn_rate > 0.0) {
                    let message = format!("must be a finite number > 0, got {}", r.burn_rate);
                    return Err(cx.err(&rp.key("burn_rate"), message));
                }
                let severity = parse_named(cx.source, &rp.key("severity"), r.severity.as_deref(), Severity::Page)?;
                rules.push(BurnRule { long_intervals, short_intervals, burn_rate: r.burn_rate, severity });
            }
            rules
        }
    };
    Ok(ErrorBudget { objective, sli, period_intervals, min_runs, refused, rules })
}

/// A span given in seconds as a whole number of evaluation intervals.
fn whole_intervals(cx: &Cx, path: &FieldPath, seconds: f64, interval_us: Micros) -> Result<usize, ScenarioError> {
    let us = duration_ms(cx.source, path, seconds * 1e3)?;
    let n = us / interval_us;
    if us == 0 || us % interval_us != 0 || n > MAX_WINDOW_INTERVALS {
        let message = format!(
            "must be a positive multiple of evaluation_interval_ms ({} s), at most {MAX_WINDOW_INTERVALS} of them, got {seconds}",
            interval_us as f64 / 1e6
        );
        return Err(cx.err(path, message));
    }
    Ok(n as usize)
}

fn compile_recovery(
    cx: &Cx,
    path: &FieldPath,
    r: Option<&crate::scenario::RecoverySpec>,
) -> Result<RecoveryPlan, ScenarioError> {
    let defaults = RecoveryPlan::default();
    let Some(r) = r else { return Ok(defaults) };
    let stages = r.canary_stages.clone().unwrap_or(defaults.canary_stages);
    let sp = path.key("canary_stages");
    if stages.is_empty() {
        return Err(cx.err(&sp, "at least one stage, the last 1.0"));
    }
    for (i, &share) in stages.iter().enumerate() {
        check_share(cx, &sp.index(i), share, true)?;
        if i > 0 && share <= stages[i - 1] {
            return Err(cx.err(&sp.index(i), "stages must grow"));
        }
    }
    if stages.last() != Some(&1.0) {
        return Err(cx.err(&sp, "the last stage must be 1.0: every run back on the normal policy"));
    }
    let share = |field: &str, value: Option<f64>, default: f64| -> Result<f64, ScenarioError> {
        check_share(cx, &path.key(field), value.unwrap_or(default), false)
    };
    let min_canary_runs = r.min_canary_runs.unwrap_or(defaults.min_canary_runs);
    if min_canary_runs == 0 {
        return Err(
            cx.err(&path.key("min_canary_runs"), "must be at least 1: a stage with no canary run shows nothing")
        );
    }
    let backoff_multiplier = r.backoff_multiplier.unwrap_or(defaults.backoff_multiplier);
    if !(backoff_multiplier.is_finite() && backoff_multiplier >= 1.0) {
        let message = format!("must be a finite number >= 1, got {backoff_multiplier}");
        return Err(cx.err(&path.key("backoff_multiplier"), message));
    }
    let stop_canary_when_budget = r
        .stop_canary_when_budget
        .as_deref()
        .map(|b| parse_named(cx.source, &path.key("stop_canary_when_budget"), Some(b), BudgetState::AtRisk))
        .transpose()?;
    if stop_canary_when_budget == Some(BudgetState::Healthy) {
        let message = "healthy always holds, so the canary would never run: at_risk, exhausted or integrity_incident";
        return Err(cx.err(&path.key("stop_canary_when_budget"), message));
    }
    let ms_or =
        |field: &str, value: Option<f64>, default: Micros| ms(cx, &path.key(field), value, default as f64 / 1e3);
    Ok(RecoveryPlan {
        probe_evaluations: r.probe_evaluations.unwrap_or(defaults.probe_evaluations),
        probe_share: share("probe_share", r.probe_share, defaults.probe_share)?,
        canary_stages: stages,
        stage_us: ms_or("stage_ms", r.stage_ms, defaults.stage_us)?,
        min_canary_runs,
        canary_min_success: share("canary_min_success", r.canary_min_success, defaults.canary_min_success)?,
        canary_max_deadline_miss_increase: share(
            "canary_max_deadline_miss_increase",
            r.canary_max_deadline_miss_increase,
            defaults.canary_max_deadline_miss_increase,
        )?,
        progress_deadline_us: positive_ms(
            cx,
            &path.key("progress_deadline_ms"),
            r.progress_deadline_ms,
            defaults.progress_deadline_us,
        )?,
        backoff_multiplier,
        max_dwell_us: ms_or("max_dwell_ms", r.max_dwell_ms, defaults.max_dwell_us)?,
        stop_canary_when_budget,
        promotion: parse_named(cx.source, &path.key("promotion"), r.promotion.as_deref(), Promotion::Automatic)?,
        approval_us: ms_or("approval_ms", r.approval_ms, defaults.approval_us)?,
    })
}

fn compile_rule(
    cx: &Cx,
    path: &FieldPath,
    r: &crate::scenario::RuntimeRule,
    interval_us: Micros,
) -> Result<Rule, ScenarioError> {
    let mode = parse_named(cx.source, &path.key("mode"), Some(&r.mode), DegradationMode::Constrained)?;
    if !mode.is_degraded() {
        let message = format!(
            "a rule moves to constrained, degraded, handoff or paused; {} is reached by leaving them",
            mode.name()
        );
        return Err(cx.err(&path.key("mode"), message));
    }
    let workflow = match &r.workflow {
        Some(name) => Some(cx.workflows.iter().position(|w| &w.name == name).ok_or_else(|| {
            cx.err(&path.key("workflow"), unknown_name("workflow", name, cx.workflows.iter().map(|w| w.name.as_str())))
        })?),
        None => None,
    };
    let enter = compile_condition(cx, &path.key("when"), &r.when, false)?;
    let exit = r.exit.as_ref().map(|e| compile_condition(cx, &path.key("exit"), e, true)).transpose()?;
    let min_dwell_us = ms(cx, &path.key("min_dwell_ms"), r.min_dwell_ms, 60_000.0)?;
    let for_us = ms(cx, &path.key("for_ms"), r.for_ms, 0.0)?;
    // Prometheus's `for:`: pending at the first evaluation that holds, firing once it has held
    // for the whole duration, one evaluation later than `for / interval` of them.
    let for_evaluations =
        if for_us == 0 { 1 } else { u32::try_from(for_us.div_ceil(interval_us) + 1).unwrap_or(u32::MAX) };
    Ok(Rule { mode, workflow, enter, exit, min_dwell_us, for_evaluations })
}

/// `exit`: the condition to leave a mode, where `completion_budget` means "back to this state
/// or better" (to enter, it means "this state or worse").
fn compile_condition(cx: &Cx, path: &FieldPath, c: &RuleCondition, exit: bool) -> Result<Condition, ScenarioError> {
    let dependency = cx.dependency(&path.key("dependency"), &c.dependency)?;
    let breaker = match c.breaker.as_deref() {
        None => None,
        Some("open") => Some(BreakerCheck::Open),
        Some("not_closed") => Some(BreakerCheck::NotClosed),
        Some("closed") => Some(BreakerCheck::Closed),
        Some(other) => {
            let message = format!("unknown value {}; expected one of open, not_closed, closed", quote(other));
            return Err(cx.err(&path.key("breaker"), message));
        }
    };
    let needs_dependency = breaker.is_some() || c.queue_depth_above.is_some() || c.queue_depth_below.is_some();
    if needs_dependency && dependency.is_none() {
        return Err(cx.err(&path.key("dependency"), "breaker and queue conditions name the dependency they watch"));
    }
    let budget = c
        .completion_budget
        .as_deref()
        .map(|b| parse_named(cx.source, &path.key("completion_budget"), Some(b), BudgetState::AtRisk))
        .transpose()?;
    if !exit && budget == Some(BudgetState::Healthy) {
        // "At least this bad": healthy always holds, so the rule would hold the workflow in its
        // mode from the first evaluation to the end whatever the budget did.
        let message = "healthy always holds (a budget is at least healthy), so the rule would never let go: at_risk, exhausted or integrity_incident";
        return Err(cx.err(&path.key("completion_budget"), message));
    }
    let (budget_at_least, budget_at_most) = if exit { (None, budget) } else { (budget, None) };
    let refusal = c
        .refusal
        .as_deref()
        .map(|r| parse_named(cx.source, &path.key("refusal"), Some(r), Refusal::RetryBudget))
        .transpose()?;
    let rates = c.refused_per_s_above.is_some() || c.refused_per_s_below.is_some();
    if rates != refusal.is_some() {
        return Err(cx.err(
            &path.key("refusal"),
            "refused_per_s_above and refused_per_s_below go with a refusal reason, and a reason with one of them",
        ));
    }
    for (field, v) in [("refused_per_s_above", c.refused_per_s_above), ("refused_per_s_below", c.refused_per_s_below)] {
        if let Some(v) = v
            && !(v.is_finite() && v >= 0.0)
        {
            return Err(cx.err(&path.key(field), format!("must be a finite number >= 0, got {v}")));
        }
    }
    let condition = Condition {
        dependency,
        breaker,
        budget_slot: 0,
        budget_at_least,
        budget_at_most,
        queue_depth_above: c.queue_depth_above,
        queue_depth_below: c.queue_depth_below,
        refusal,
        refused_per_s_above: c.refused_per_s_above,
        refused_per_s_below: c.refused_per_s_below,
    };
    if condition == (Condition { dependency, ..Condition::default() }) {
        let message = "names no signal: breaker, completion_budget, queue_depth_above/below or refusal with a rate";
        return Err(cx.err(path, message));
    }
    Ok(condition)
}

/// A budget condition that names a dependency reads that dependency's own budget.
fn assign_budget_slot(condition: &mut Condition, budget_dependencies: &mut Vec<usize>) {
    let reads_budget = condition.budget_at_least.is_some() || condition.budget_at_most.is_some();
    let Some(d) = condition.dependency.filter(|_| reads_budget) else { return };
    let k = budget_dependencies.iter().position(|&x| x == d).unwrap_or_else(|| {
        budget_dependencies.push(d);
        budget_dependencies.len() - 1
    });
    condition.budget_slot = k + 1;
}

/// An exit that can hold while its `when` holds would latch and unlatch the rule at every
/// evaluation. The two cannot both hold when some signal they share has disjoint regions; when
/// every shared signal overlaps, the rule is refused; when they share none, nothing can be
/// proved and `validate` warns.
fn check_exit_apart(
    cx: &Cx,
    path: &FieldPath,
    enter: &Condition,
    exit: &Condition,
) -> Result<Option<ScenarioError>, ScenarioError> {
    // (field, None when disjoint, Some(why) when the two regions meet), per shared signal.
    let mut shared: Vec<(&str, Option<String>)> = Vec::new();
    let same_dependency = enter.dependency == exit.dependency;
    if let (Some(a), Some(b), true) = (enter.breaker, exit.breaker, same_dependency) {
        let disjoint = matches!(
            (a, b),
            (BreakerCheck::Open | BreakerCheck::NotClosed, BreakerCheck::Closed)
                | (BreakerCheck::Closed, BreakerCheck::Open | BreakerCheck::NotClosed)
        );
        shared.push(("breaker", (!disjoint).then(|| format!("a breaker {} satisfies both", breaker_name(a)))));
    }
    if same_dependency {
        let bounds = [enter.queue_depth_above, enter.queue_depth_below, exit.queue_depth_above, exit.queue_depth_below];
        if bounds[..2].iter().any(Option::is_some) && bounds[2..].iter().any(Option::is_some) {
            let (lo_in, hi_in) = (bounds[0].map_or(0, |a| u64::from(a) + 1), bounds[1].map_or(u64::MAX, u64::from));
            let (lo_out, hi_out) = (bounds[2].map_or(0, |a| u64::from(a) + 1), bounds[3].map_or(u64::MAX, u64::from));
            // Depths in [lo, hi): both hold where the two ranges meet.
            let meet = lo_in.max(lo_out) < hi_in.min(hi_out);
            shared
                .push(("queue_depth_below", meet.then(|| format!("a depth of {} satisfies both", lo_in.max(lo_out)))));
        }
    }
    if let (Some(reason), true) = (enter.refusal, enter.refusal == exit.refusal) {
        let (lo_in, hi_in) = (
            enter.refused_per_s_above.unwrap_or(f64::NEG_INFINITY),
            enter.refused_per_s_below.unwrap_or(f64::INFINITY),
        );
        let (lo_out, hi_out) =
            (exit.refused_per_s_above.unwrap_or(f64::NEG_INFINITY), exit.refused_per_s_below.unwrap_or(f64::INFINITY));
        // Rates in (lo, hi): open intervals meet when the larger low is below the smaller high.
        let meet = lo_in.max(lo_out) < hi_in.min(hi_out);
        shared.push((
            "refused_per_s_below",
            meet.then(|| format!("a rate of {} refusals satisfies both", reason.name())),
        ));
    }
    if let (Some(at_least), Some(at_most)) = (enter.budget_at_least, exit.budget_at_most)
        && enter.budget_slot == exit.budget_slot
    {
        let meet = at_most >= at_least;
        shared.push(("completion_budget", meet.then(|| format!("a budget {} satisfies both", at_least.name()))));
    }
    if shared.iter().any(|(_, why)| why.is_none()) {
        return Ok(None);
    }
    if let Some((field, Some(why))) = shared.first() {
        let message =
            format!("overlaps when: {why}, and where both hold the rule would enter and leave at every evaluation");
        return Err(cx.err(&path.key("exit").key(field), message));
    }
    let message = "shares no signal with when, so nothing keeps both from holding at once (the rule would then enter and leave at every evaluation): name one of when's signals in exit with the other side of its threshold";
    Ok(Some(cx.err(&path.key("exit"), message)))
}

fn breaker_name(check: BreakerCheck) -> &'static str {
    match check {
        BreakerCheck::Open => "open",
        BreakerCheck::NotClosed => "half-open or open",
        BreakerCheck::Closed => "closed",
    }
}

/// The degraded modes, mildest first.
const DEGRADED_BY_SEVERITY: [DegradationMode; 4] =
    [DegradationMode::Constrained, DegradationMode::Degraded, DegradationMode::Handoff, DegradationMode::Paused];

/// A more severe mode is at least as strict as every milder one: escalating never gives back
/// retry tokens, branches, omissions or pauses that a milder mode took.
fn inherit_milder_modes(overrides: &mut [ModeOverrides]) {
    for pair in DEGRADED_BY_SEVERITY.windows(2) {
        let milder = overrides[pair[0].index()].clone();
        let o = &mut overrides[pair[1].index()];
        let min_u32 = |a: Option<u32>, b: Option<u32>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        let min_f64 = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        };
        o.budget.retry_tokens = min_u32(o.budget.retry_tokens, milder.budget.retry_tokens);
        o.budget.concurrency_tokens = min_u32(o.budget.concurrency_tokens, milder.budget.concurrency_tokens);
        o.budget.cost_units = min_f64(o.budget.cost_units, milder.budget.cost_units);
        o.fan_out.max_branches = min_u32(o.fan_out.max_branches, milder.fan_out.max_branches);
        o.hedging &= milder.hedging;
        if o.fallback == FallbackMode::Normal {
            o.fallback = milder.fallback;
        }
        for (mine, theirs) in o.omit.iter_mut().zip(&milder.omit) {
            mine.iter_mut().zip(theirs).for_each(|(a, b)| *a |= *b);
        }
        for (mine, theirs) in o.fallback_first.iter_mut().zip(&milder.fallback_first) {
            mine.iter_mut().zip(theirs).for_each(|(a, b)| *a |= *b);
        }
        o.pause_writes |= milder.pause_writes;
        pause_writes_to(o, &milder.pause_writes_to);
        o.refuse_new_runs |= milder.refuse_new_runs;
        o.per_step |= milder.per_step;
    }
}

/// Adds the dependencies marked in `more` to the mode's paused writes.
fn pause_writes_to(o: &mut ModeOverrides, more: &[bool]) {
    if o.pause_writes_to.len() < more.len() {
        o.pause_writes_to.resize(more.len(), false);
    }
    o.pause_writes_to.iter_mut().zip(more).for_each(|(a, b)| *a |= *b);
}

/// Rules that wait for a breaker their own mode keeps from getting calls: with no probe runs,
/// a half-open breaker that gets no call never closes and the mode never ends.
fn starved_signals(
    cx: &Cx,
    rules_path: &FieldPath,
    rules: &[Rule],
    overrides: &[ModeOverrides],
    recovery: &RecoveryPlan,
) -> Vec<ScenarioError> {
    let mut warnings = Vec::new();
    if recovery.probe_share > 0.0 {
        return warnings;
    }
    for (i, rule) in rules.iter().enumerate() {
        let o = &overrides[rule.mode.index()];
        for (field, c) in [("when", Some(&rule.enter)), ("exit", rule.exit.as_ref())] {
            let Some((d, _)) = c.and_then(|c| c.dependency.zip(c.breaker)) else { continue };
            for (w, wf) in cx.workflows.iter().enumerate() {
                if rule.workflow.is_some_and(|x| x != w) {
                    continue;
                }
                let calls = wf.steps.iter().enumerate().filter(|(_, s)| s.dependency == d);
                let mut calls = calls.peekable();
                if calls.peek().is_none() {
                    continue;
                }
                let stopped = o.refuse_new_runs
                    || calls.all(|(s, step)| {
                        let first = o.fallback_first[w][s] || o.fallback == FallbackMode::FallbackFirst;
                        o.omit[w][s] || (first && step.fallback.is_some())
                    });
                if stopped {
                    let message = format!(
                        "mode {} sends no call to {} in workflow {} (its steps are omitted, go to their fallback first, or new runs are refused), so a half-open breaker there gets no trial call and never closes; with degradation.recovery.probe_share = 0 no probe run is sent and the workflow stays in {}",
                        rule.mode.name(),
                        quote(&cx.world.dependencies[d].name),
                        quote(&wf.name),
                        rule.mode.name()
                    );
                    warnings.push(cx.err(&rules_path.index(i).key(field).key("breaker"), message));
                }
            }
        }
    }
    warnings
}

/// Rules on the workflow's own budget whose mode refuses new runs or pauses writes while the
/// budget counts such runs as bad (`refused_runs = "bad"`): every run the mode refuses or hands
/// off is a bad event, so the budget can only worsen while the mode holds and the rule never
/// lets go. A dependency's budget does not see them (a refused run called no dependency).
fn self_held_budgets(
    cx: &Cx,
    rules_path: &FieldPath,
    rules: &[Rule],
    overrides: &[ModeOverrides],
    budget: &ErrorBudget,
) -> Vec<ScenarioError> {
    let mut warnings = Vec::new();
    if budget.refused != RefusedRuns::Bad {
        return warnings;
    }
    for (i, rule) in rules.iter().enumerate() {
        let o = &overrides[rule.mode.index()];
        let what = if o.refuse_new_runs {
            "refuses every new run"
        } else if o.pause_writes || o.pause_writes_to.iter().any(|&p| p) {
            // The safe-outcome SLI counts a handoff as good: only a refusal holds it.
            if budget.sli == Sli::SafeOutcome {
                continue;
            }
            "hands off every run that reaches a paused write"
        } else {
            continue;
        };
        let own_budget = [("when", Some(&rule.enter)), ("exit", rule.exit.as_ref())].into_iter().find(|(_, c)| {
            c.is_some_and(|c| c.budget_slot == 0 && (c.budget_at_least.is_some() || c.budget_at_most.is_some()))
        });
        let Some((field, _)) = own_budget else { continue };
        let message = format!(
            "mode {} {what}, and degradation.error_budget.refused_runs = \"bad\" counts each such run as bad, so the workflow's budget can only worsen while the mode holds and the rule never lets go; leave refused_runs at \"excluded\" (the default) unless the SLO owner wants exactly that",
            rule.mode.name()
        );
        warnings.push(cx.err(&rules_path.index(i).key(field).key("completion_budget"), message));
    }
    warnings
}

/// Which of a mode's limits some rule has set already.
#[derive(Debug, Clone, Copy, Default)]
struct LimitsSet {
    retry_tokens: bool,
    max_fanout: bool,
    concurrency_tokens: bool,
    cost_units: bool,
}

/// Folds one rule's actions into its mode's overrides. The first rule to set a limit replaces
/// the policy's own (the essay's "retry tokens go from 4 to 1"); when later rules of the mode
/// set it too, the strictest value wins (fewer tokens, fewer branches, every omission, any pause).
fn apply_actions(
    cx: &Cx,
    path: &FieldPath,
    mode: DegradationMode,
    a: &ModeActions,
    o: &mut ModeOverrides,
    set: &mut LimitsSet,
) -> Result<(), ScenarioError> {
    let strictest = |current: Option<u32>, new: u32, already: bool| match current {
        Some(c) if already => c.min(new),
        Some(_) | None => new,
    };
    if let Some(tokens) = a.retry_tokens_per_run {
        o.budget.retry_tokens = Some(strictest(o.budget.retry_tokens, tokens, set.retry_tokens));
        set.retry_tokens = true;
    }
    if let Some(n) = a.max_fanout {
        if n == 0 {
            return Err(cx.err(&path.key("max_fanout"), "must be at least 1"));
        }
        o.fan_out.max_branches = Some(strictest(o.fan_out.max_branches, n, set.max_fanout));
        set.max_fanout = true;
    }
    if let Some(tokens) = a.concurrency_tokens_per_run {
        if tokens == 0 {
            return Err(cx.err(&path.key("concurrency_tokens_per_run"), "must be at least 1"));
        }
        o.budget.concurrency_tokens = Some(strictest(o.budget.concurrency_tokens, tokens, set.concurrency_tokens));
        set.concurrency_tokens = true;
    }
    if let Some(cost) = a.cost_units_per_run {
        if !(cost.is_finite() && cost > 0.0) {
            return Err(cx.err(&path.key("cost_units_per_run"), format!("must be a finite number > 0, got {cost}")));
        }
        o.budget.cost_units = Some(match o.budget.cost_units {
            Some(c) if set.cost_units => c.min(cost),
            Some(_) | None => cost,
        });
        set.cost_units = true;
    }
    if a.disable_hedging == Some(true) {
        o.hedging = false;
    }
    if let Some(f) = a.fallback_mode.as_deref() {
        let mode = parse_named(cx.source, &path.key("fallback_mode"), Some(f), FallbackMode::Normal)?;
        if o.fallback != FallbackMode::Normal && o.fallback != mode {
            return Err(cx.err(&path.key("fallback_mode"), "another rule of this mode sets a different fallback_mode"));
        }
        o.fallback = mode;
    }
    o.pause_writes |= a.pause_writes == Some(true);
    for (i, name) in a.pause_writes_to.iter().enumerate() {
        let ip = path.key("pause_writes_to").index(i);
        let dependencies = &cx.world.dependencies;
        let Some(d) = dependencies.iter().position(|x| &x.name == name) else {
            return Err(cx.err(&ip, unknown_name("dependency", name, dependencies.iter().map(|x| x.name.as_str()))));
        };
        let written = cx
            .workflows
            .iter()
            .flat_map(|w| &w.steps)
            .any(|s| s.effect == crate::scenario::Effect::Write && (s.dependency == d || s.fallback == Some(d)));
        if !written {
            let message = format!(
                "no write step calls {} (its primary or fallback), so pausing its writes would stop nothing",
                quote(name)
            );
            return Err(cx.err(&ip, message));
        }
        let mut one = vec![false; dependencies.len()];
        one[d] = true;
        pause_writes_to(o, &one);
    }
    o.refuse_new_runs |= a.refuse_new_runs == Some(true);
    if a.cancel_in_flight == Some(true) {
        if mode != DegradationMode::Paused {
            let message = format!(
                "cancels the runs in flight as the workflow enters paused; this rule's mode is {}",
                mode.name()
            );
            return Err(cx.err(&path.key("cancel_in_flight"), message));
        }
        o.cancel_in_flight = true;
    }
    let all_soft = a.omit_soft_steps == Some(true);
    for (w, wf) in cx.workflows.iter().enumerate() {
        for (s, step) in wf.steps.iter().enumerate() {
            if all_soft && step.criticality == Criticality::Soft {
                o.omit[w][s] = true;
                o.per_step = true;
            }
        }
    }
    for (i, id) in a.fallback_first_steps.iter().enumerate() {
        let ip = path.key("fallback_first_steps").index(i);
        let mut found = false;
        for (w, wf) in cx.workflows.iter().enumerate() {
            for (s, step) in wf.steps.iter().enumerate() {
                if &step.id == id {
                    o.fallback_first[w][s] = true;
                    o.per_step = true;
                    found = true;
                }
            }
        }
        if !found {
            let known = cx.workflows.iter().flat_map(|w| w.steps.iter().map(|s| s.id.as_str()));
            return Err(cx.err(&ip, unknown_name("step", id, known)));
        }
    }
    for (i, id) in a.omit_steps.iter().enumerate() {
        let ip = path.key("omit_steps").index(i);
        let mut found = false;
        for (w, wf) in cx.workflows.iter().enumerate() {
            for (s, step) in wf.steps.iter().enumerate() {
                if &step.id != id {
                    continue;
                }
                if step.criticality != Criticality::Soft {
                    // An advisory step is reference only: it already goes without when late.
                    let (what, why) = match step.criticality {
                        Criticality::Advisory => ("advisory", "an advisory one is left out by its own window"),
                        Criticality::Hard | Criticality::Soft => ("hard", "a hard one fails the run"),
                    };
                    let message = format!("step {} is {what}: only soft steps may be omitted ({why})", quote(id));
                    return Err(cx.err(&ip, message));
                }
                o.omit[w][s] = true;
                o.per_step = true;
                found = true;
            }
        }
        if !found {
            let known = cx.workflows.iter().flat_map(|w| w.steps.iter().map(|s| s.id.as_str()));
            return Err(cx.err(&ip, unknown_name("step", id, known)));
        }
    }
    Ok(())
}
