//! Issue 29's defects, each reproduced from outside: a scenario run whose figures would differ
//! if the behaviour docs/scenario.md 8.16 states were false. The scenario is small (one
//! workflow: a soft search, a model with a cheaper fallback, a write) and each test names the
//! figure before and after the fix in its comments.

mod common;

use common::degradation::*;
use common::*;
use faultline::engine::simulate;
use faultline::metrics::MetricMap;
use faultline::vocab::DegradationMode;

fn degradation(recovery: &str) -> String {
    format!(
        "[policy.p.degradation]\nevaluation_interval_ms = 1000\nrecovery = {{ probe_evaluations = 2, canary_stages = [0.2, 1.0], stage_ms = 10000, min_canary_runs = 10{recovery} }}\n"
    )
}

/// One replication's metrics; the mode figures are printed (`--nocapture` shows them) for the
/// closing notes' before-and-after figures.
fn run(text: &str) -> MetricMap {
    let m = simulate(&model(text), 0, 5).unwrap_or_else(|e| panic!("{e}")).metrics;
    eprintln!("figures: {}", modes(&m).replace('\n', "; "));
    m
}

fn validate(text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("faultline-fidelity-{}-{}", std::process::id(), text.len()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.toml");
    std::fs::write(&path, text).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_faultline")).args(["validate"]).arg(&path).output().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// Item 1. Before: of the runs that started in RECOVERY after a handoff mode paused writes,
/// 218 succeeded with their write sent. A canary run is on the normal policy but its writes
/// stay paused until the workflow is back to normal.
#[test]
fn paused_writes_stay_paused_for_canary_runs_through_the_recovery() {
    let rule = "[[policy.p.runtime_policy]]\nmode = \"handoff\"\nwhen = { dependency = \"model\", breaker = \"open\" }\nactions = { pause_writes = true }\n";
    let m = run(&scenario(SLOW_MODEL, &format!("{}{rule}", degradation(""))));
    let started_in_recovery = get(&m, "mode.recovery.logical_run_total");
    let handed_off = get(&m, "mode.recovery.outcome_total.handoff");
    let succeeded = get(&m, "mode.recovery.outcome_total.succeeded");
    assert!(get(&m, "degradation_canary_run_total") > 20.0, "{m:?}");
    // Only runs whose write came after the return to normal (the last ~0.4 s of the recovery
    // at 20 runs a second) can have written.
    assert!(succeeded <= 20.0, "{succeeded} runs that started in recovery wrote");
    assert!(handed_off >= 0.9 * started_in_recovery, "{handed_off} of {started_in_recovery}");
    assert_eq!(get(&m, "degradation_transition_total.recovery.normal"), 1.0, "judged on what came before the write");
}

/// Items 2 and 3. A CONSTRAINED mode that sends the model nothing (fallback first): before,
/// the half-open breaker passed the probes (item 2) or, on `not_closed`, the rule never let go
/// (item 3: 293 s of CONSTRAINED for a fault that ended at 200 s). Probe runs send a share of
/// new runs to the model while its breaker is half-open; without them the workflow stays
/// constrained and `validate` says why.
#[test]
fn a_mode_that_starves_its_breaker_returns_through_probe_runs_and_is_warned_of_without_them() {
    let rule = "[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = { dependency = \"model\", breaker = \"not_closed\" }\nmin_dwell_ms = 20000\nactions = { fallback_mode = \"fallback_first\" }\n";
    let with_probes = scenario(SLOW_MODEL, &format!("{}{rule}", degradation("")));
    let m = run(&with_probes);
    assert!(get(&m, "degradation_probe_run_total") > 0.0);
    assert_eq!(get(&m, "degradation_transition_total.recovery.normal"), 1.0, "{m:?}");
    let constrained = get(&m, "degradation_mode_time_s.constrained");
    assert!(constrained < 160.0, "the fault is 100 s, the breaker's open state 30 s: {constrained}");
    assert!(!validate(&with_probes).contains("warning"));

    let without = scenario(SLOW_MODEL, &format!("{}{rule}", degradation(", probe_share = 0")));
    let m = run(&without);
    assert_eq!(get(&m, "degradation_probe_run_total"), 0.0);
    assert_eq!(get(&m, "degradation_transition_total.recovery.normal"), 0.0, "no call closes the breaker");
    assert!(get(&m, "degradation_mode_time_s.constrained") > 250.0);
    let out = validate(&without);
    assert!(out.contains("warning: test.toml") || out.contains("warning: "), "{out}");
    assert!(out.contains("runtime_policy[0].when.breaker") && out.contains("probe_share = 0"), "{out}");
}

/// Item 2 alone: the probes need the watched breaker closed. A rule on `open` lets go as soon
/// as the breaker is half-open; before, RECOVERY's probes passed then and the canary began on a
/// breaker still judging its trial calls.
#[test]
fn probes_wait_for_the_watched_breaker_to_close() {
    let rule = "[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = { dependency = \"model\", breaker = \"open\" }\nmin_dwell_ms = 0\n";
    let m = run(&scenario(SLOW_MODEL, &format!("{}{rule}", degradation(""))));
    // Each half-open period of the fault fails its trials and reopens the breaker: with probes
    // that wait for CLOSED, no canary run starts before the fault is over.
    let canary = get(&m, "degradation_canary_run_total");
    let recovery_runs = get(&m, "mode.recovery.logical_run_total");
    assert!(canary > 0.0 && canary < recovery_runs, "{canary} canary runs of {recovery_runs}");
    assert_eq!(get(&m, "degradation_transition_total.recovery.normal"), 1.0);
}

/// Item 4. A canary whose runs all fall back to the cheaper model must not pass: before, 6
/// canary stages passed on fallback answers during an outage. Here search's breaker moves the
/// workflow to CONSTRAINED and closes when search comes back at 200 s, while every model call
/// keeps failing to the end (the model has no breaker of the rule's: its own refusals only
/// send the runs to the fallback).
#[test]
fn a_canary_stage_fails_on_fallback_answers() {
    let breaker = "[[policy.p.circuit_breaker]]\ndependency = \"search\"\nfailure_rate_threshold = 50\nsliding_window_type = \"time_based\"\nsliding_window_size = 10\nminimum_number_of_calls = 20\nwait_duration_in_open_state_ms = 10000\nautomatic_transition_from_open_to_half_open_enabled = true\n";
    let rule = "[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = { dependency = \"search\", breaker = \"not_closed\" }\nmin_dwell_ms = 5000\n";
    let outage = "[[fault]]\nkind = \"errors\"\ntarget = \"model\"\nstart_s = 100\nduration_s = 300\nerrors = { overloaded = 1.0 }\n";
    let text = scenario(FAILING_SEARCH, &format!("{}{breaker}{rule}", degradation("")))
        .replace("[policy.p]\n", &format!("{outage}\n[policy.p]\n"));
    let m = run(&text);
    assert!(get(&m, "degradation_canary_run_total") >= 10.0, "{}", modes(&m));
    assert!(get(&m, "degradation_canary_stage_failed_total") >= 1.0, "{}", modes(&m));
    assert_eq!(get(&m, "degradation_transition_total.recovery.normal"), 0.0, "the model never answered: {}", modes(&m));
}

/// A canary whose runs answer at full quality passes: the same scenario with the model healthy.
#[test]
fn a_healthy_canary_passes_every_stage() {
    let breaker = "[[policy.p.circuit_breaker]]\ndependency = \"search\"\nfailure_rate_threshold = 50\nsliding_window_type = \"time_based\"\nsliding_window_size = 10\nminimum_number_of_calls = 20\nwait_duration_in_open_state_ms = 10000\nautomatic_transition_from_open_to_half_open_enabled = true\n";
    let rule = "[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = { dependency = \"search\", breaker = \"not_closed\" }\nmin_dwell_ms = 5000\n";
    let m = run(&scenario(FAILING_SEARCH, &format!("{}{breaker}{rule}", degradation(""))));
    assert_eq!(get(&m, "degradation_canary_stage_failed_total"), 0.0, "{}", modes(&m));
    assert_eq!(get(&m, "degradation_transition_total.recovery.normal"), 1.0, "{}", modes(&m));
}

/// The refusal-rate signal is per second, as its field says: before, the rate was divided by
/// the interval in microseconds and no refusal rule could fire (the model's breaker refuses
/// 20 runs a second, each attempt of their answer step, while open; never 200).
#[test]
fn a_refusal_rate_rule_fires_at_its_rate_per_second() {
    let rule = |above: u32| {
        format!(
            "[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = {{ refusal = \"circuit_open\", refused_per_s_above = {above} }}\nmin_dwell_ms = 5000\n"
        )
    };
    // Evaluated each second and each 5 s: the rate is a count over the interval divided by its
    // seconds (cargo mutants, session e: the count multiplied by them survived every test, all
    // evaluated each second, where the two agree; at 5 s the breaker's ~100 refusals an interval
    // read 500 a second and the rule at 200 fired).
    for interval_ms in ["1000", "5000"] {
        let text = |above: u32| {
            scenario(SLOW_MODEL, &format!("{}{}", degradation(""), rule(above)))
                .replace("evaluation_interval_ms = 1000", &format!("evaluation_interval_ms = {interval_ms}"))
        };
        let fires = run(&text(10));
        assert!(
            get(&fires, "degradation_transition_total.normal.constrained") >= 1.0,
            "{interval_ms}: {}",
            modes(&fires)
        );
        let quiet = run(&text(200));
        assert_eq!(
            get(&quiet, "degradation_transition_total.normal.constrained"),
            0.0,
            "{interval_ms}: {}",
            modes(&quiet)
        );
    }
}

/// Item 5. PAUSED that refuses new runs on an auto-completion budget: before, the refused runs
/// counted as bad, the budget could only worsen, and the workflow stayed PAUSED. By default a
/// run the policy refused is no event of the SLI; `refused_runs = "bad"` keeps the old count.
#[test]
fn runs_refused_by_paused_do_not_hold_the_budget_at_risk() {
    let policy = |refused: &str| {
        format!(
            "[policy.p.degradation]\nevaluation_interval_ms = 1000\nerror_budget = {{ objective = 0.99, sli = \"full_quality\", period_s = 3600, min_runs = 20, refused_runs = \"{refused}\", burn_rate = [{{ long_window_s = 30, short_window_s = 5, burn_rate = 10 }}] }}\nrecovery = {{ probe_evaluations = 2, canary_stages = [0.2, 1.0], stage_ms = 10000, min_canary_runs = 10 }}\n[[policy.p.runtime_policy]]\nmode = \"paused\"\nwhen = {{ completion_budget = \"at_risk\" }}\nmin_dwell_ms = 10000\nactions = {{ refuse_new_runs = true }}\n"
        )
    };
    let excluded = run(&scenario(FAILING_MODEL, &policy("excluded")));
    assert!(get(&excluded, "degradation_transition_total.normal.paused") >= 1.0, "{excluded:?}");
    assert_eq!(get(&excluded, "degradation_transition_total.recovery.normal"), 1.0, "{}", modes(&excluded));
    let paused_s = get(&excluded, "degradation_mode_time_s.paused");
    assert!(paused_s < 200.0, "{paused_s}");
    let bad = run(&scenario(FAILING_MODEL, &policy("bad")));
    assert_eq!(get(&bad, "degradation_transition_total.recovery.normal"), 0.0, "its own refusals keep it paused");
    assert!(get(&bad, "degradation_mode_time_s.paused") > paused_s + 100.0);
}

/// Item 6. A swing between two degraded modes is a flap: before, 426 CONSTRAINED <-> DEGRADED
/// moves gave 0 flaps per hour.
#[test]
fn a_swing_between_two_degraded_modes_counts_as_flaps() {
    let rules = "[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = { dependency = \"model\", breaker = \"not_closed\" }\nmin_dwell_ms = 0\n[[policy.p.runtime_policy]]\nmode = \"degraded\"\nwhen = { dependency = \"model\", breaker = \"open\" }\nmin_dwell_ms = 0\n";
    let m = run(&scenario(SLOW_MODEL, &format!("{}{rules}", degradation(""))));
    let up = get(&m, "degradation_transition_total.constrained.degraded");
    let down = get(&m, "degradation_transition_total.degraded.constrained");
    assert!(up >= 2.0 && down >= 1.0, "the breaker reopens after failed half-open trials: {up} up, {down} down");
    let hours = (400.0 - 20.0) / 3600.0;
    assert!(get(&m, "degradation_flaps_per_hour") * hours >= up - 1.0, "{m:?}");
}

/// Item 7. A more severe mode is at least as strict as every milder one: before, DEGRADED gave
/// back the retry tokens CONSTRAINED removed.
#[test]
fn a_more_severe_mode_keeps_the_stricter_settings_of_the_milder_ones() {
    let rules = "[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = { dependency = \"model\", breaker = \"not_closed\" }\nactions = { retry_tokens_per_run = 0, disable_hedging = true, omit_steps = [\"enrich\"] }\n[[policy.p.runtime_policy]]\nmode = \"degraded\"\nwhen = { dependency = \"model\", queue_depth_above = 5 }\nactions = { fallback_mode = \"fallback_first\" }\n";
    let m = model(&scenario(SLOW_MODEL, &format!("{}{rules}", degradation(""))));
    let p = &m.policies[0];
    let degraded = &p.modes[DegradationMode::Degraded.index()];
    assert_eq!(degraded.budget.retry_tokens, Some(0));
    assert!(!degraded.hedging && degraded.omit[0][0]);
    let constrained = &p.modes[DegradationMode::Constrained.index()];
    assert_eq!(
        constrained.fallback,
        faultline::runtime::degradation::FallbackMode::Normal,
        "milder modes keep their own"
    );
}

/// Item 8. A budget rule that names a dependency reads that dependency's budget: before, a rule
/// on search's budget fired on the model's errors.
#[test]
fn a_budget_rule_on_a_dependency_fires_on_that_dependency_only() {
    let policy = "[policy.p.degradation]\nevaluation_interval_ms = 1000\nerror_budget = { objective = 0.99, sli = \"full_quality\", period_s = 3600, min_runs = 20, burn_rate = [{ long_window_s = 30, short_window_s = 5, burn_rate = 10 }] }\n[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = { completion_budget = \"at_risk\", dependency = \"search\" }\nactions = { omit_steps = [\"enrich\"] }\n";
    let model_fault = run(&scenario(FAILING_MODEL, policy));
    assert!(get(&model_fault, "error_budget_time_s.at_risk") > 0.0, "the workflow's own budget burns");
    assert_eq!(get(&model_fault, "degradation_transition_total.normal.constrained"), 0.0, "search answered every run");
    let search_fault = run(&scenario(FAILING_SEARCH, policy));
    assert!(get(&search_fault, "degradation_transition_total.normal.constrained") >= 1.0, "{search_fault:?}");
}

/// Item 9. The budget is judged over a rolling period with a minimum of runs: before, 25 bad
/// runs in the first 5 s marked the period's budget exhausted (DEGRADED for 125 s).
#[test]
fn a_burst_at_the_start_does_not_exhaust_the_period_s_budget() {
    let policy = "[policy.p.degradation]\nevaluation_interval_ms = 5000\nerror_budget = { objective = 0.99, sli = \"full_quality\" }\n[[policy.p.runtime_policy]]\nmode = \"degraded\"\nwhen = { completion_budget = \"exhausted\" }\nactions = { omit_soft_steps = true }\n";
    let text =
        scenario(FAILING_SEARCH, policy).replace("start_s = 100\nduration_s = 100", "start_s = 0\nduration_s = 5");
    let m = run(&text);
    assert_eq!(get(&m, "degradation_transition_total.normal.degraded"), 0.0, "{m:?}");
    assert_eq!(get(&m, "error_budget_time_s.exhausted"), 0.0);
    // The workbook's default rules (one day scaled: 120 s / 10 s at 14.4) page on it.
    let spent = get(&m, "error_budget_spent_max");
    assert!(spent > 0.0 && spent < 0.2, "{spent}");
}

/// The budget's figures are there to see why a rule fired.
#[test]
fn the_budget_s_state_and_burn_rates_are_reported() {
    let policy = "[policy.p.degradation]\nevaluation_interval_ms = 1000\nerror_budget = { objective = 0.99, sli = \"full_quality\", period_s = 3600, min_runs = 20, burn_rate = [{ long_window_s = 30, short_window_s = 5, burn_rate = 10 }] }\n[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = { completion_budget = \"at_risk\" }\n";
    let m = run(&scenario(FAILING_SEARCH, policy));
    let states: f64 = ["healthy", "at_risk", "exhausted", "integrity_incident"]
        .iter()
        .map(|s| get(&m, &format!("error_budget_time_s.{s}")))
        .sum();
    assert!((states - 380.0).abs() <= 1.0, "every measured second is in one state: {states}");
    assert!(get(&m, "error_budget_burn_rate_max.short") >= 90.0, "every run bad: burn 100");
    assert!(get(&m, "error_budget_burn_rate_max.long") >= 10.0);
}

/// Review H1: with resilience4j's default (no automatic OPEN -> HALF_OPEN), the breaker leaves
/// OPEN only on a call after its wait. A mode that sends the model nothing stayed CONSTRAINED to
/// the end (293 s, 0 probe runs); probe runs now go while such a breaker is open too.
#[test]
fn probe_runs_also_wake_a_breaker_that_half_opens_only_on_a_call() {
    let rule = "[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = { dependency = \"model\", breaker = \"not_closed\" }\nmin_dwell_ms = 20000\nactions = { fallback_mode = \"fallback_first\" }\n";
    let text = scenario(SLOW_MODEL, &format!("{}{rule}", degradation(""))).replace(
        "automatic_transition_from_open_to_half_open_enabled = true",
        "automatic_transition_from_open_to_half_open_enabled = false",
    );
    let m = run(&text);
    assert!(get(&m, "degradation_probe_run_total") > 0.0, "{}", modes(&m));
    assert_eq!(get(&m, "degradation_transition_total.recovery.normal"), 1.0, "{}", modes(&m));
}

/// Review H2: a budget rule on the full-quality SLI whose mode omits a step held itself in place
/// (DEGRADED for 292 s after a 30 s outage): the runs the mode degraded on purpose counted as
/// bad. They are no event of the SLI now.
#[test]
fn a_full_quality_budget_does_not_count_the_mode_s_own_omissions() {
    let policy = "[policy.p.degradation]\nevaluation_interval_ms = 1000\nerror_budget = { objective = 0.99, sli = \"full_quality\", min_runs = 20, burn_rate = [{ long_window_s = 30, short_window_s = 5, burn_rate = 10 }] }\nrecovery = { probe_evaluations = 2, canary_stages = [0.2, 1.0], stage_ms = 10000, min_canary_runs = 10 }\n[[policy.p.runtime_policy]]\nmode = \"degraded\"\nwhen = { completion_budget = \"at_risk\" }\nexit = { completion_budget = \"healthy\" }\nmin_dwell_ms = 5000\nactions = { omit_soft_steps = true }\n";
    let text = scenario(FAILING_MODEL, policy)
        .replace("duration_s = 100\nkind = \"errors\"", "duration_s = 30\nkind = \"errors\"");
    let m = run(&text);
    let degraded = get(&m, "degradation_mode_time_s.degraded");
    assert!(degraded < 120.0, "{}", modes(&m));
    assert_eq!(get(&m, "degradation_transition_total.recovery.normal"), 1.0, "{}", modes(&m));
}

/// Review H3: a call its own breaker refused is a call the dependency did not answer. The
/// per-dependency budget did not see them (DEGRADED 7 s while the breaker was open 210 s).
#[test]
fn a_dependency_s_budget_counts_the_calls_its_breaker_refused() {
    let policy = |dependency: &str| {
        format!(
            "[policy.p.degradation]\nevaluation_interval_ms = 1000\nerror_budget = {{ objective = 0.99, sli = \"full_quality\", period_s = 3600, min_runs = 20, burn_rate = [{{ long_window_s = 30, short_window_s = 5, burn_rate = 10 }}] }}\n[[policy.p.runtime_policy]]\nmode = \"degraded\"\nwhen = {{ completion_budget = \"at_risk\"{dependency} }}\nmin_dwell_ms = 5000\n"
        )
    };
    let text = |p: &str| {
        scenario(FAILING_MODEL, p).replace("duration_s = 100\nkind = \"errors\"", "duration_s = 200\nkind = \"errors\"")
    };
    let model_budget = run(&text(&policy(", dependency = \"model\"")));
    let own_budget = run(&text(&policy("")));
    let (a, b) =
        (get(&model_budget, "degradation_mode_time_s.degraded"), get(&own_budget, "degradation_mode_time_s.degraded"));
    assert!(a > 150.0 && (a - b).abs() < 30.0, "model's budget {a} s, the workflow's {b} s");
}

/// Review M1: `stop_canary_when_budget` holds the stage (its clock stopped) instead of failing
/// it at its progress deadline; and it needs an error budget.
#[test]
fn a_stopped_canary_waits_instead_of_failing() {
    let policy = "[policy.p.degradation]\nevaluation_interval_ms = 1000\nerror_budget = { objective = 0.99, sli = \"auto_completion\", period_s = 3600, min_runs = 20, burn_rate = [{ long_window_s = 30, short_window_s = 5, burn_rate = 10 }] }\nrecovery = { probe_evaluations = 2, canary_stages = [0.2, 1.0], stage_ms = 10000, min_canary_runs = 10, stop_canary_when_budget = \"at_risk\", progress_deadline_ms = 30000 }\n[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = { dependency = \"model\", breaker = \"not_closed\" }\nmin_dwell_ms = 20000\n";
    let m = run(&scenario(SLOW_MODEL, policy));
    assert_eq!(get(&m, "degradation_transition_total.recovery.normal"), 1.0, "{}", modes(&m));
    let err = faultline_error(&scenario(SLOW_MODEL, &policy.replace("error_budget = { objective = 0.99, sli = \"auto_completion\", period_s = 3600, min_runs = 20, burn_rate = [{ long_window_s = 30, short_window_s = 5, burn_rate = 10 }] }\n", "")));
    assert!(err.contains("stop_canary_when_budget needs"), "{err}");
}

fn faultline_error(text: &str) -> String {
    let source = faultline::scenario::Source::from_text("test.toml", text, faultline::scenario::Format::Toml);
    let scenario = faultline::scenario::parse_source(&source).unwrap_or_else(|e| panic!("{e}"));
    match faultline::engine::Model::compile(&scenario, &source) {
        Ok(_) => panic!("compiled"),
        Err(e) => e.to_string(),
    }
}

/// Review M2: `for_ms` as Prometheus's `for:`: a condition must hold for one more evaluation
/// than `for / interval`; `for_ms = 1000` at 1 s intervals was the same as 0.
#[test]
fn for_ms_holds_back_the_rule_as_prometheus_for_does() {
    let rule = |for_ms: u32| {
        format!(
            "[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = {{ dependency = \"model\", breaker = \"open\" }}\nfor_ms = {for_ms}\nmin_dwell_ms = 0\n"
        )
    };
    let at_once = run(&scenario(SLOW_MODEL, &format!("{}{}", degradation(""), rule(0))));
    let one_s = run(&scenario(SLOW_MODEL, &format!("{}{}", degradation(""), rule(1000))));
    let long = run(&scenario(SLOW_MODEL, &format!("{}{}", degradation(""), rule(40000))));
    let constrained = |m: &MetricMap| get(m, "degradation_mode_time_s.constrained");
    assert!(constrained(&one_s) < constrained(&at_once), "{} {}", constrained(&one_s), constrained(&at_once));
    assert_eq!(constrained(&long), 0.0, "the breaker is never open 40 s in a row (30 s waits)");
}

/// Review M3: while a manual promotion waits, the last stage is still judged: a write outage
/// during the wait sends the workflow back (before: promoted with 1 898 runs failed meanwhile).
#[test]
fn a_manual_promotion_is_judged_while_it_waits() {
    let rule = "[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = { dependency = \"model\", breaker = \"not_closed\" }\nmin_dwell_ms = 20000\n";
    let manual = degradation(", promotion = \"manual\", approval_ms = 120000");
    let healthy = run(&scenario(SLOW_MODEL, &format!("{manual}{rule}")));
    assert_eq!(get(&healthy, "degradation_transition_total.recovery.normal"), 1.0, "{}", modes(&healthy));
    let recovery_s = get(&healthy, "degradation_mode_time_s.recovery");
    assert!(recovery_s >= 120.0, "the approval takes 120 s: {recovery_s}");
    let outage = "[[fault]]\nkind = \"errors\"\ntarget = \"tickets\"\nstart_s = 260\nduration_s = 140\nerrors = { overloaded = 1.0 }\n";
    let text =
        scenario(SLOW_MODEL, &format!("{manual}{rule}")).replace("[policy.p]\n", &format!("{outage}\n[policy.p]\n"));
    let broken = run(&text);
    assert!(get(&broken, "degradation_canary_stage_failed_total") >= 1.0, "{}", modes(&broken));
    assert_eq!(get(&broken, "degradation_transition_total.recovery.normal"), 0.0, "{}", modes(&broken));
}

/// Review M4: an exit is refused only when every signal it shares with `when` overlaps; with no
/// shared signal `validate` warns.
#[test]
fn an_exit_is_refused_only_when_it_cannot_be_told_apart_from_when() {
    let rule = |when: &str, exit: &str| {
        format!(
            "{}[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = {when}\nexit = {exit}\n",
            degradation("")
        )
    };
    // Disjoint on the breaker, overlapping on the queue: fine.
    model(&scenario(
        SLOW_MODEL,
        &rule(
            "{ dependency = \"model\", breaker = \"not_closed\", queue_depth_above = 100 }",
            "{ dependency = \"model\", breaker = \"closed\", queue_depth_below = 200 }",
        ),
    ));
    let err = faultline_error(&scenario(
        SLOW_MODEL,
        &rule(
            "{ dependency = \"model\", queue_depth_above = 100 }",
            "{ dependency = \"model\", queue_depth_below = 150 }",
        ),
    ));
    assert!(err.contains("exit.queue_depth_below") && err.contains("overlaps when"), "{err}");
    let out = validate(&scenario(
        SLOW_MODEL,
        &rule("{ dependency = \"model\", breaker = \"open\" }", "{ dependency = \"model\", queue_depth_below = 5 }"),
    ));
    assert!(out.contains("warning: ") && out.contains("shares no signal with when"), "{out}");
}

/// Review M5: a failed canary stage is a flap, however long the recovery took.
#[test]
fn every_failed_canary_stage_is_a_flap() {
    let breaker = "[[policy.p.circuit_breaker]]\ndependency = \"search\"\nfailure_rate_threshold = 50\nsliding_window_type = \"time_based\"\nsliding_window_size = 10\nminimum_number_of_calls = 20\nwait_duration_in_open_state_ms = 10000\nautomatic_transition_from_open_to_half_open_enabled = true\n";
    let rule = "[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = { dependency = \"search\", breaker = \"not_closed\" }\nmin_dwell_ms = 5000\n";
    let outage = "[[fault]]\nkind = \"errors\"\ntarget = \"model\"\nstart_s = 100\nduration_s = 300\nerrors = { overloaded = 1.0 }\n";
    let text = scenario(FAILING_SEARCH, &format!("{}{breaker}{rule}", degradation("")))
        .replace("[policy.p]\n", &format!("{outage}\n[policy.p]\n"))
        .replace("[policy.p.degradation]\n", "[policy.p.degradation]\nflap_window_ms = 0\n");
    let m = run(&text);
    let failed = get(&m, "degradation_canary_stage_failed_total");
    let flaps = get(&m, "degradation_flaps_per_hour") * (380.0 / 3600.0);
    assert!(failed >= 1.0 && (flaps - failed).abs() < 1e-9, "{failed} failed stages, {flaps} flaps");
}

/// Review L1: the default one-day period need not be a multiple of the interval.
#[test]
fn the_default_period_fits_any_interval() {
    let policy = "[policy.p.degradation]\nevaluation_interval_ms = 7000\nerror_budget = { objective = 0.99 }\n[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = { completion_budget = \"at_risk\" }\n";
    let m = run(&scenario(FAILING_SEARCH, policy));
    assert!(get(&m, "error_budget_time_s.healthy") > 0.0);
}

/// Review D1 (session d): an integrity event belongs to the dependency its write went to. A
/// ticket write whose reply is lost (5 % of them, [100 s, 200 s)) leaves runs handed off with
/// their effect unknown; the model answers every call. Before, every budget of the workflow read
/// the integrity incident, so a rule on the model's own budget moved the workflow to CONSTRAINED
/// (1 entry, 3 returns from RECOVERY, 25 s CONSTRAINED, 28.4 flaps an hour) on the tickets'
/// trouble, as item 8's rule on search's budget once fired on the model's errors.
#[test]
fn an_integrity_event_reaches_the_budget_of_the_dependency_it_happened_at_only() {
    let policy = |dependency: &str| {
        format!(
            "[policy.p.degradation]\nevaluation_interval_ms = 1000\nerror_budget = {{ objective = 0.99, sli = \"full_quality\", period_s = 3600, min_runs = 20, burn_rate = [{{ long_window_s = 30, short_window_s = 5, burn_rate = 10 }}] }}\n[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = {{ completion_budget = \"at_risk\"{dependency} }}\nmin_dwell_ms = 5000\n"
        )
    };
    let lost = "kind = \"lost_response\"\ntarget = \"tickets\"\ntoxicity = 0.05";
    let on_model = run(&scenario(lost, &policy(", dependency = \"model\"")));
    assert!(get(&on_model, "outcome_total.handoff") >= 3.0, "writes left unknown: {on_model:?}");
    assert!(get(&on_model, "error_budget_time_s.integrity_incident") > 0.0, "the workflow's own budget reads it");
    assert_eq!(get(&on_model, "degradation_transition_total.normal.constrained"), 0.0, "{}", modes(&on_model));
    assert_eq!(get(&on_model, "degradation_mode_time_s.constrained"), 0.0, "{}", modes(&on_model));
    // The tickets' budget and the workflow's own see it.
    for dependency in [", dependency = \"tickets\"", ""] {
        let m = run(&scenario(lost, &policy(dependency)));
        assert!(get(&m, "degradation_transition_total.normal.constrained") >= 1.0, "{dependency}: {}", modes(&m));
    }
}

/// Review D2 (session d): a run handed off only because its mode paused its write is the mode's
/// choice, as a refused run is. A HANDOFF rule with `pause_writes` on the full-quality budget:
/// before, every run the mode handed off counted as bad, the budget burned at 10 (all bad) to the
/// end and the workflow stayed in HANDOFF 284 s, never back, though the model was healthy again
/// from 200 s. `refused_runs = "bad"` keeps that count, as the SLO owner's choice.
#[test]
fn runs_handed_off_by_the_mode_s_write_pause_do_not_hold_the_budget_at_risk() {
    let policy = |refused: &str| {
        format!(
            "[policy.p.degradation]\nevaluation_interval_ms = 1000\nerror_budget = {{ objective = 0.9, sli = \"full_quality\", period_s = 36000, min_runs = 20, refused_runs = \"{refused}\", burn_rate = [{{ long_window_s = 30, short_window_s = 5, burn_rate = 5 }}] }}\nrecovery = {{ probe_evaluations = 2, canary_stages = [0.2, 1.0], stage_ms = 10000, min_canary_runs = 10 }}\n[[policy.p.runtime_policy]]\nmode = \"handoff\"\nwhen = {{ completion_budget = \"at_risk\" }}\nmin_dwell_ms = 10000\nactions = {{ pause_writes = true }}\n"
        )
    };
    let excluded = run(&scenario(FAILING_MODEL, &policy("excluded")));
    assert!(get(&excluded, "degradation_transition_total.normal.handoff") >= 1.0, "{}", modes(&excluded));
    assert_eq!(get(&excluded, "degradation_transition_total.recovery.normal"), 1.0, "{}", modes(&excluded));
    let handoff_s = get(&excluded, "degradation_mode_time_s.handoff");
    assert!(handoff_s < 200.0, "{handoff_s}");
    let bad = run(&scenario(FAILING_MODEL, &policy("bad")));
    assert_eq!(get(&bad, "degradation_transition_total.recovery.normal"), 0.0, "its own handoffs keep it there");
    assert!(get(&bad, "degradation_mode_time_s.handoff") > handoff_s + 50.0, "{}", modes(&bad));
}

/// Review D3 (session d): `validate` warns of a rule that its own mode holds in place through
/// the budget it reads. With `refused_runs = "bad"`, a PAUSED rule that refuses new runs (or a
/// HANDOFF rule that pauses writes) on the workflow's budget can only worsen it: the run stays in
/// the mode to the end (PAUSED 297 s, HANDOFF 296 s of 380, never back). Before, `validate`
/// printed nothing for either; with the default `excluded` it has nothing to say.
#[test]
fn validate_warns_of_a_rule_its_own_refusals_hold_in_place() {
    let policy = |refused: &str, mode: &str, action: &str| {
        format!(
            "[policy.p.degradation]\nevaluation_interval_ms = 1000\nerror_budget = {{ objective = 0.99, sli = \"full_quality\", period_s = 3600, min_runs = 20, refused_runs = \"{refused}\", burn_rate = [{{ long_window_s = 30, short_window_s = 5, burn_rate = 10 }}] }}\nrecovery = {{ probe_evaluations = 2, canary_stages = [0.2, 1.0], stage_ms = 10000, min_canary_runs = 10 }}\n[[policy.p.runtime_policy]]\nmode = \"{mode}\"\nwhen = {{ completion_budget = \"at_risk\" }}\nmin_dwell_ms = 10000\nactions = {{ {action} = true }}\n"
        )
    };
    for (mode, action, time) in [("paused", "refuse_new_runs", 250.0), ("handoff", "pause_writes", 250.0)] {
        let held = scenario(FAILING_MODEL, &policy("bad", mode, action));
        let m = run(&held);
        assert_eq!(get(&m, "degradation_transition_total.recovery.normal"), 0.0, "{mode}: {}", modes(&m));
        assert!(get(&m, &format!("degradation_mode_time_s.{mode}")) > time, "{mode}: {}", modes(&m));
        let out = validate(&held);
        assert!(
            out.contains("warning: ")
                && out.contains("runtime_policy[0].when.completion_budget")
                && out.contains("refused_runs = \"bad\""),
            "{mode}: {out}"
        );
        assert!(!validate(&scenario(FAILING_MODEL, &policy("excluded", mode, action))).contains("warning"), "{mode}");
    }
}

/// Review D4 (session d): `when = { completion_budget = "healthy" }` always holds ("at least
/// healthy"), so the rule held the workflow in its mode from the first evaluation to the end
/// (CONSTRAINED 380 s of 380 with a healthy budget); it compiled without a word. It is refused
/// now, as `stop_canary_when_budget = "healthy"` is; in `exit` it stays the usual way back.
#[test]
fn a_rule_entered_on_a_healthy_budget_is_refused() {
    let policy = |when: &str| {
        format!(
            "[policy.p.degradation]\nevaluation_interval_ms = 1000\nerror_budget = {{ objective = 0.99 }}\n[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = {when}\nexit = {{ completion_budget = \"healthy\" }}\n"
        )
    };
    let err = faultline_error(&scenario(SLOW_MODEL, &policy("{ completion_budget = \"healthy\" }")));
    assert!(err.contains("runtime_policy[0].when.completion_budget") && err.contains("healthy always holds"), "{err}");
    model(&scenario(SLOW_MODEL, &policy("{ completion_budget = \"at_risk\" }")));
}

/// Failed recoveries back off (cargo mutants, session d: `min_dwell x multiplier^k` computed as
/// `min_dwell / multiplier^k` survived every test). The canary fails on fallback answers while
/// the model is down to the end; with a backoff of 4 the dwell after each failed stage grows (5,
/// 20, 80, 320 s), so fewer recoveries are tried and more time is spent constrained than with no
/// backoff (5 s every time); `max_dwell_ms = 5000` caps the backed-off dwell at the mode's own.
#[test]
fn failed_recoveries_back_off_the_dwell_up_to_its_cap() {
    let breaker = "[[policy.p.circuit_breaker]]\ndependency = \"search\"\nfailure_rate_threshold = 50\nsliding_window_type = \"time_based\"\nsliding_window_size = 10\nminimum_number_of_calls = 20\nwait_duration_in_open_state_ms = 10000\nautomatic_transition_from_open_to_half_open_enabled = true\n";
    let rule = "[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = { dependency = \"search\", breaker = \"not_closed\" }\nmin_dwell_ms = 5000\n";
    let outage = "[[fault]]\nkind = \"errors\"\ntarget = \"model\"\nstart_s = 100\nduration_s = 300\nerrors = { overloaded = 1.0 }\n";
    let with = |backoff: &str| {
        let text = scenario(FAILING_SEARCH, &format!("{}{breaker}{rule}", degradation(backoff)))
            .replace("[policy.p]\n", &format!("{outage}\n[policy.p]\n"));
        run(&text)
    };
    let flat = with(", backoff_multiplier = 1");
    let backed = with(", backoff_multiplier = 4");
    let capped = with(", backoff_multiplier = 4, max_dwell_ms = 5000");
    let failed = |m: &MetricMap| get(m, "degradation_canary_stage_failed_total");
    let constrained = |m: &MetricMap| get(m, "degradation_mode_time_s.constrained");
    assert!(failed(&flat) >= 4.0, "{}", modes(&flat));
    assert!(failed(&backed) < failed(&flat), "{} failed stages backed off, {} flat", failed(&backed), failed(&flat));
    assert!(constrained(&backed) > constrained(&flat) + 60.0, "{} s, {} s", constrained(&backed), constrained(&flat));
    assert_eq!((failed(&capped), constrained(&capped)), (failed(&flat), constrained(&flat)), "the cap");
}

/// The incident's resilient policy with its guards off (`--set 'policy.resilient.bulkhead=[]'`,
/// one replication, `--jobs 1`): its summary's metrics and the time series' rows (header, cells).
fn incident_without_bulkhead() -> (serde_json::Value, Vec<String>, Vec<Vec<f64>>) {
    let root = env!("CARGO_MANIFEST_DIR");
    let dir = std::env::temp_dir().join(format!("faultline-fidelity-incident-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_faultline"))
        .arg("run")
        .arg(std::path::Path::new(root).join("scenarios/meeting-analysis-incident.toml"))
        .args(["--policy", "resilient", "--jobs", "1", "--replications", "1"])
        .args(["--set", "policy.resilient.bulkhead=[]", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("resilient/summary.json")).unwrap()).unwrap();
    let series = std::fs::read_to_string(dir.join("resilient/timeseries.csv")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let mut lines = series.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(str::to_owned).collect();
    let rows = lines.map(|l| l.split(',').map(|c| c.parse().unwrap_or(f64::NAN)).collect()).collect();
    (summary["metrics"].clone(), header, rows)
}

/// Session e: a run whose call at a dependency got no answer in time is bad for that
/// dependency's budget (the SRE workbook: a request that did not get a good answer in time is
/// bad for the SLI of what it waited on). The incident with its bulkhead off collapses while the
/// model is slow (completion 0.07 % during the incident, deadline misses 99.9 %, the workflow's
/// budget at risk 755 s and exhausted 1 025 s), but its runs end at their deadline with the
/// model's calls still queued or in flight, or handed off by the model step that ran out of time,
/// and before the fix none of them counted at the model: its budget stayed healthy (spent 0) and
/// the rule `when = { completion_budget = "at_risk", dependency = "model-primary" }` never fired
/// (2 100 s NORMAL, 0 transitions).
#[test]
fn a_call_left_unanswered_at_the_deadline_is_bad_for_the_dependency_it_waited_on() {
    let (m, header, rows) = incident_without_bulkhead();
    let metric = |k: &str| m[k].as_f64().unwrap_or_else(|| panic!("no metric {k}"));
    let column = |k: &str| header.iter().position(|h| h == k).unwrap_or_else(|| panic!("no column {k}"));
    let (start, state) = (
        column("window_start_s"),
        column("workflow.meeting-analysis-draft.dependency.model-primary.error_budget.state"),
    );
    let worst_during_incident =
        rows.iter().filter(|r| (600.0..1800.0).contains(&r[start])).map(|r| r[state]).fold(0.0, f64::max);
    assert!(worst_during_incident >= 1.0, "the model's budget stays healthy while the model is slow");
    assert!(metric("degradation_transition_total.normal.constrained") >= 1.0, "the model's budget rule never fires");
    assert!(metric("degradation_mode_time_s.constrained") > 0.0);
}

/// Session e, the same defect on the small scenario, with runs waiting on two dependencies at
/// once: the model hangs (20 s a call, [100 s, 200 s)) and the answer step has no fallback, so
/// each run ends when its model step gives up, while search (in parallel) has answered. Only the
/// dependency whose call went unanswered is bad: the model's budget rule fires (before: 0
/// transitions, the model step was skipped as "abandoned" by its own end of the run; after:
/// CONSTRAINED 291 s), search's never does (0 before and after).
#[test]
fn only_the_dependency_a_run_waited_on_in_vain_is_bad_for_it() {
    let policy = |dependency: &str| {
        format!(
            "[policy.p.degradation]\nevaluation_interval_ms = 1000\nerror_budget = {{ objective = 0.99, sli = \"full_quality\", period_s = 3600, min_runs = 20, burn_rate = [{{ long_window_s = 30, short_window_s = 5, burn_rate = 10 }}] }}\n[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = {{ completion_budget = \"at_risk\", dependency = \"{dependency}\" }}\nmin_dwell_ms = 5000\n"
        )
    };
    let hang = "kind = \"latency\"\ntarget = \"model\"\nservice_time = { dist = \"constant\", value_ms = 20000 }";
    let text = |dependency: &str| scenario(hang, &policy(dependency)).replace("fallback = \"backup\"\n", "");
    let on_model = run(&text("model"));
    assert!(get(&on_model, "outcome_total.failed") > 1000.0, "the runs fail at the model: {on_model:?}");
    assert!(get(&on_model, "degradation_transition_total.normal.constrained") >= 1.0, "{}", modes(&on_model));
    let on_search = run(&text("search"));
    assert_eq!(get(&on_search, "degradation_transition_total.normal.constrained"), 0.0, "{}", modes(&on_search));
}

/// cargo mutants (session e): `ModeController::run_finalized` emptied survived every test: no
/// test drove a mode from a budget counted when a run's last attempt leaves its station. The
/// safe-outcome SLI is counted there: with no fallback for the model, its outage fails the runs
/// (not a safe outcome), and the rule on that budget enters CONSTRAINED; a run handed off (the
/// step's `on_give_up = "handoff"`) is a safe outcome, and the same rule stays quiet.
#[test]
fn a_safe_outcome_budget_is_counted_as_runs_are_finalized() {
    let policy = |on_give_up: &str| {
        format!(
            "[policy.p.steps]\nanswer = {{ on_give_up = \"{on_give_up}\" }}\n[policy.p.degradation]\nevaluation_interval_ms = 1000\nerror_budget = {{ objective = 0.99, sli = \"safe_outcome\", period_s = 3600, min_runs = 20, burn_rate = [{{ long_window_s = 30, short_window_s = 5, burn_rate = 10 }}] }}\n[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = {{ completion_budget = \"at_risk\" }}\nmin_dwell_ms = 5000\n"
        )
    };
    let text = |on_give_up: &str| scenario(FAILING_MODEL, &policy(on_give_up)).replace("fallback = \"backup\"\n", "");
    let failing = run(&text("fail"));
    assert!(get(&failing, "outcome_total.failed") > 1000.0, "{failing:?}");
    assert!(get(&failing, "error_budget_time_s.at_risk") > 0.0, "{}", modes(&failing));
    assert!(get(&failing, "degradation_transition_total.normal.constrained") >= 1.0, "{}", modes(&failing));
    let handed_off = run(&text("handoff"));
    assert!(get(&handed_off, "outcome_total.handoff") > 1000.0, "{handed_off:?}");
    assert_eq!(get(&handed_off, "degradation_transition_total.normal.constrained"), 0.0, "{}", modes(&handed_off));
}

/// Mutant `&&` -> `||` in `ModeController::run_ended`: only runs that started in RECOVERY and
/// are not probe runs are the canary's "other runs". Probe runs sent while the model's breaker
/// is half-open at the start of the recovery are on the normal policy, as slow as the canaries
/// (search answers in 8 s from 150 s on, past the 3 s deadline), and end in the canary stage;
/// the mode's own runs omit search and are fast. A single stage of 1.0 leaves the canary, as
/// other runs, only a few of the mode's fast runs started during the probes, so its deadline
/// misses (all of them) exceed the others' (0) by more than 0.5: the stage fails. Counted as
/// others, the probes make the others' share about as late as the canary's: the stage passes.
#[test]
fn probe_runs_are_not_the_canary_s_other_runs() {
    let rule = "[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = { dependency = \"model\", breaker = \"open\" }\nmin_dwell_ms = 0\nactions = { omit_soft_steps = true }\n";
    let degradation = "[policy.p.degradation]\nevaluation_interval_ms = 1000\nrecovery = { probe_evaluations = 1, probe_share = 1, canary_stages = [1.0], stage_ms = 10000, min_canary_runs = 10, canary_min_success = 0, canary_max_deadline_miss_increase = 0.5 }\n";
    let slow_search = "[[fault]]\nkind = \"latency\"\ntarget = \"search\"\nstart_s = 150\nduration_s = 250\nservice_time = { dist = \"constant\", value_ms = 8000 }\n";
    let text = scenario(SLOW_MODEL, &format!("{degradation}{rule}"))
        .replace("deadline_ms = 10000", "deadline_ms = 3000")
        .replace("[policy.p]\n", &format!("{slow_search}\n[policy.p]\n"));
    let m = run(&text);
    assert!(get(&m, "degradation_probe_run_total") > 0.0, "{}", modes(&m));
    assert!(get(&m, "degradation_canary_run_total") >= 10.0, "{}", modes(&m));
    // The figures: failed canary stages (64; 0 under the mutant, whose first stage passes on the
    // probes' misses) and returns to normal while search is slow (0; 1 under the mutant).
    assert!(get(&m, "degradation_canary_stage_failed_total") >= 1.0, "{}", modes(&m));
    assert_eq!(get(&m, "degradation_transition_total.recovery.normal"), 0.0, "{}", modes(&m));
}

/// Input checks of the modes' compiler that cargo mutants found untested (a one-in-eight sample
/// of compile.rs, machine.rs and error_budget.rs, session 4 of 2026-12-05): a burn window of
/// exactly `MAX_WINDOW_INTERVALS` evaluations is accepted and one more refused (`n > MAX` read
/// as `>=` or `==` survived), and a `backoff_multiplier` below 1 is refused although it is finite
/// (`is_finite() && >= 1` read as `||` survived).
#[test]
fn burn_windows_are_bounded_at_exactly_the_documented_count_and_backoff_below_one_is_refused() {
    let policy = |long_window_s: u64, backoff: &str| {
        format!(
            "[policy.p.degradation]\nevaluation_interval_ms = 1000\nerror_budget = {{ objective = 0.99, period_s = 100000, burn_rate = [{{ long_window_s = {long_window_s}, short_window_s = 5, burn_rate = 10 }}] }}\nrecovery = {{ probe_evaluations = 2, canary_stages = [1.0], min_canary_runs = 10{backoff} }}\n[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = {{ completion_budget = \"at_risk\" }}\n"
        )
    };
    let max = faultline::runtime::degradation::compile::MAX_WINDOW_INTERVALS;
    model(&scenario(SLOW_MODEL, &policy(max, "")));
    let err = faultline_error(&scenario(SLOW_MODEL, &policy(max + 1, "")));
    assert!(err.contains("long_window_s") && err.contains("at most 100000"), "{err}");
    let err = faultline_error(&scenario(SLOW_MODEL, &policy(30, ", backoff_multiplier = 0.5")));
    assert!(err.contains("recovery.backoff_multiplier") && err.contains(">= 1, got 0.5"), "{err}");
    model(&scenario(SLOW_MODEL, &policy(30, ", backoff_multiplier = 1")));
}

/// The canary's defaults are durations in milliseconds (cargo mutants: the default `stage_ms`
/// scaled by `* 1e3` instead of `/ 1e3` survived, since every recovery test sets `stage_ms`).
/// With the documented default of 60 s, a one-stage canary after a 100 s slow model passes and the
/// workflow is back in NORMAL within the 400 s run, its RECOVERY lasting at least the stage's
/// 60 s; scaled a million times, the stage would never end and NORMAL never come back.
#[test]
fn the_default_canary_stage_lasts_sixty_seconds() {
    let policy = "[policy.p.degradation]\nevaluation_interval_ms = 1000\nrecovery = { probe_evaluations = 2, canary_stages = [1.0], min_canary_runs = 10 }\n[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = { dependency = \"model\", breaker = \"open\" }\n";
    let m = run(&scenario(SLOW_MODEL, policy));
    assert_eq!(get(&m, "degradation_transition_total.recovery.normal"), 1.0, "{}", modes(&m));
    let recovery_s = get(&m, "degradation_mode_time_s.recovery");
    assert!((60.0..120.0).contains(&recovery_s), "RECOVERY {recovery_s} s: {}", modes(&m));
}

/// A rule names its workflow by name (cargo mutants: the name compared with `!=` survived, as no
/// test named one): the workflow `w` is found, an unknown name is refused naming the field.
#[test]
fn a_rule_finds_the_workflow_it_names() {
    let policy = |workflow: &str| {
        format!(
            "[policy.p.degradation]\nevaluation_interval_ms = 1000\n[[policy.p.runtime_policy]]\nmode = \"constrained\"\nworkflow = \"{workflow}\"\nwhen = {{ dependency = \"model\", breaker = \"open\" }}\n"
        )
    };
    let m = run(&scenario(SLOW_MODEL, &policy("w")));
    assert!(get(&m, "degradation_mode_time_s.constrained") > 0.0, "the rule on `w` fires: {}", modes(&m));
    let err = faultline_error(&scenario(SLOW_MODEL, &policy("other")));
    assert!(err.contains("runtime_policy[0].workflow") && err.contains("other"), "{err}");
}

/// The duplicate-effect half of review D1 (cargo mutants of issue 30's run: every mutant of the
/// engine's `duplicated_at`, `step.dependency == d && ledger.duplicates() > 0`, survived, as no
/// test made a duplicate effect with a rule on a dependency's budget): the ticket writes carry
/// no idempotency key, so a lost reply retried commits twice. The duplicate is an integrity event
/// of the tickets' budget only: a rule on the model's budget stays quiet, one on the tickets'
/// fires. Under the mutants the model's budget reads the tickets' duplicates (`>=`, `||`, `!=`) or
/// the tickets' reads none (`==`, `<`).
#[test]
fn a_duplicate_effect_reaches_the_budget_of_the_dependency_it_happened_at_only() {
    let policy = |dependency: &str| {
        format!(
            "[policy.p.degradation]\nevaluation_interval_ms = 1000\nerror_budget = {{ objective = 0.99, sli = \"full_quality\", period_s = 3600, min_runs = 20, burn_rate = [{{ long_window_s = 30, short_window_s = 5, burn_rate = 10 }}] }}\n[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = {{ completion_budget = \"integrity_incident\"{dependency} }}\nmin_dwell_ms = 5000\n"
        )
    };
    let lost = "kind = \"lost_response\"\ntarget = \"tickets\"\ntoxicity = 0.05";
    // No idempotency key, and a write that timed out is sent again (the incident's naive way).
    let unkeyed = |text: String| {
        text.replace("  idempotency = \"key\"\n", "").replace(
            "[policy.p]\ntimeout_ms = 5000\n",
            "[policy.p]\ntimeout_ms = 5000\nretry = { max_attempts = 2 }\non_effect_unknown = \"retry\"\n",
        )
    };
    let on_model = run(&unkeyed(scenario(lost, &policy(", dependency = \"model\""))));
    assert!(get(&on_model, "duplicate_effect_total") >= 3.0, "writes committed twice: {on_model:?}");
    assert!(get(&on_model, "error_budget_time_s.integrity_incident") > 0.0, "the workflow's own budget reads it");
    assert_eq!(get(&on_model, "degradation_mode_time_s.constrained"), 0.0, "{}", modes(&on_model));
    let on_tickets = run(&unkeyed(scenario(lost, &policy(", dependency = \"tickets\""))));
    assert!(get(&on_tickets, "degradation_mode_time_s.constrained") > 0.0, "{}", modes(&on_tickets));
}

/// The rest of the compiler's input checks the cargo-mutants sample found untested: a queue
/// condition must name the dependency it watches (the check's `||` read as `&&` survived), and a
/// refusal-rate bound must be >= 0 (`is_finite() && >= 0` read as `||` survived).
#[test]
fn a_queue_condition_names_its_dependency_and_refusal_bounds_are_not_negative() {
    let policy = |when: &str| {
        format!(
            "[policy.p.degradation]\nevaluation_interval_ms = 1000\n[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = {when}\n"
        )
    };
    let err = faultline_error(&scenario(SLOW_MODEL, &policy("{ queue_depth_above = 10 }")));
    assert!(err.contains("runtime_policy[0].when.dependency") && err.contains("name the dependency"), "{err}");
    model(&scenario(SLOW_MODEL, &policy("{ queue_depth_above = 10, dependency = \"model\" }")));
    let err = faultline_error(&scenario(
        SLOW_MODEL,
        &policy("{ refusal = \"circuit_open\", refused_per_s_above = -1, dependency = \"model\" }"),
    ));
    assert!(err.contains("refused_per_s_above") && err.contains(">= 0, got -1"), "{err}");
}

/// Two rules on two dependencies' budgets each read their own (cargo mutants sample: the budget
/// slot found with `!=` survived, under which the second rule, on the model, read search's
/// budget, the first one named). The model failing: the model's rule (DEGRADED) fires, search's
/// (CONSTRAINED) does not.
#[test]
fn rules_on_two_dependencies_budgets_each_read_their_own() {
    let policy = "[policy.p.degradation]\nevaluation_interval_ms = 1000\nerror_budget = { objective = 0.99, sli = \"full_quality\", period_s = 3600, min_runs = 20, burn_rate = [{ long_window_s = 30, short_window_s = 5, burn_rate = 10 }] }\n[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = { completion_budget = \"at_risk\", dependency = \"search\" }\n[[policy.p.runtime_policy]]\nmode = \"degraded\"\nwhen = { completion_budget = \"at_risk\", dependency = \"model\" }\n";
    let m = run(&scenario(FAILING_MODEL, policy));
    assert!(get(&m, "degradation_transition_total.normal.degraded") >= 1.0, "{}", modes(&m));
    assert_eq!(get(&m, "degradation_mode_time_s.constrained"), 0.0, "{}", modes(&m));
}
