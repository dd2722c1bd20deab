//! Reads a policy's `[policy.X.degradation]` table and its `[[policy.X.runtime_policy]]`
//! rules into a [`Degradation`], every value checked and every error located.

use super::config::{BreakerCheck, Condition, Degradation, FallbackMode, ModeOverrides, RecoveryPlan, Rule};
use super::error_budget::{BurnRule, ErrorBudget, Sli};
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
    let mut rules = Vec::new();
    let mut limits_set = [LimitsSet::default(); DegradationMode::COUNT];
    let mut watched = vec![Vec::new(); workflows.len()];
    for (i, r) in policy.runtime_policy.iter().enumerate() {
        let rp = rules_path.index(i);
        let rule = compile_rule(&cx, &rp, r)?;
        let reads_budget = [(Some(rule.enter), "when"), (rule.exit, "exit")]
            .into_iter()
            .find(|(c, _)| c.is_some_and(|c| c.budget_at_least.is_some() || c.budget_at_most.is_some()));
        if let (Some((_, field)), None) = (reads_budget, &error_budget) {
            let message = "completion_budget needs [policy.<name>.degradation.error_budget]";
            return Err(cx.err(&rp.key(field).key("completion_budget"), message));
        }
        for d in [rule.enter.dependency, rule.exit.and_then(|e| e.dependency)].into_iter().flatten() {
            for (w, list) in watched.iter_mut().enumerate() {
                if rule.workflow.is_none_or(|x| x == w) && !list.contains(&d) {
                    list.push(d);
                }
            }
        }
        let set = &mut limits_set[rule.mode.index()];
        apply_actions(&cx, &rp.key("actions"), &r.actions, &mut overrides[rule.mode.index()], set)?;
        rules.push(rule);
    }
    let degradation = Degradation {
        interval_us,
        flap_window_us,
        max_flaps_per_hour,
        rules,
        error_budget,
        recovery,
        watched,
        breaker_dependencies: Vec::new(),
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
    if b.burn_rate.is_empty() {
        let message = "at least one rule, e.g. { long_window_s = 3600, short_window_s = 300, burn_rate = 14.4 } (the SRE workbook's page)";
        return Err(cx.err(&path.key("burn_rate"), message));
    }
    let mut rules = Vec::new();
    for (i, r) in b.burn_rate.iter().enumerate() {
        let rp = path.key("burn_rate").index(i);
        let intervals = |field: &str, seconds: f64| -> Result<usize, ScenarioError> {
            let us = duration_ms(cx.source, &rp.key(field), seconds * 1e3)?;
            let n = us / interval_us;
            if us == 0 || us % interval_us != 0 || n > MAX_WINDOW_INTERVALS {
                let message = format!(
                    "must be a positive multiple of evaluation_interval_ms ({} s), at most {MAX_WINDOW_INTERVALS} of them, got {seconds}",
                    interval_us as f64 / 1e6
                );
                return Err(cx.err(&rp.key(field), message));
            }
            Ok(n as usize)
        };
        let long_intervals = intervals("long_window_s", r.long_window_s)?;
        let short_intervals = intervals("short_window_s", r.short_window_s)?;
        if short_intervals > long_intervals {
            return Err(cx.err(&rp.key("short_window_s"), "must not be longer than long_window_s"));
        }
        if !(r.burn_rate.is_finite() && r.burn_rate > 0.0) {
            return Err(cx.err(&rp.key("burn_rate"), format!("must be a finite number > 0, got {}", r.burn_rate)));
        }
        rules.push(BurnRule { long_intervals, short_intervals, burn_rate: r.burn_rate });
    }
    Ok(ErrorBudget { objective, sli, rules })
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
    let canary_min_completion = r.canary_min_completion.unwrap_or(defaults.canary_min_completion);
    check_share(cx, &path.key("canary_min_completion"), canary_min_completion, false)?;
    Ok(RecoveryPlan {
        probe_evaluations: r.probe_evaluations.unwrap_or(defaults.probe_evaluations),
        canary_stages: stages,
        stage_us: ms(cx, &path.key("stage_ms"), r.stage_ms, defaults.stage_us as f64 / 1e3)?,
        min_canary_runs: r.min_canary_runs.unwrap_or(defaults.min_canary_runs),
        canary_min_completion,
    })
}

fn compile_rule(cx: &Cx, path: &FieldPath, r: &crate::scenario::RuntimeRule) -> Result<Rule, ScenarioError> {
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
    Ok(Rule { mode, workflow, enter, exit, min_dwell_us: ms(cx, &path.key("min_dwell_ms"), r.min_dwell_ms, 60_000.0)? })
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

/// Which of a mode's limits some rule has set already.
#[derive(Debug, Clone, Copy, Default)]
struct LimitsSet {
    retry_tokens: bool,
    max_fanout: bool,
}

/// Folds one rule's actions into its mode's overrides. The first rule to set a limit replaces
/// the policy's own (the essay's "retry tokens go from 4 to 1"); when later rules of the mode
/// set it too, the strictest value wins (fewer tokens, fewer branches, every omission, any pause).
fn apply_actions(
    cx: &Cx,
    path: &FieldPath,
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
    o.refuse_new_runs |= a.refuse_new_runs == Some(true);
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
                    let message = format!(
                        "step {} is hard: only soft steps may be omitted (a hard one fails the run)",
                        quote(id)
                    );
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
