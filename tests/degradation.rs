//! Degradation modes end to end (docs/scenario.md section 8.16): the rules move a workflow on
//! the simulation's own signals, each mode changes what the runs that start in it do, and the
//! tables are checked with located errors.

mod common;

use common::*;
use faultline::engine::simulate;
use faultline::metrics::MetricMap;
use faultline::scenario::{Format, Source, parse_source};

/// A model whose latency fault [100 s, 200 s) makes a slow-call breaker open; a soft
/// enrichment step beside a hard answer, and a write. `policy` completes `[policy.p]`.
fn scenario(policy: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 400
warmup_s = 20
seed = 11
replications = 1
timeseries_window_s = 10

[[dependency]]
name = "model"
servers = 40
service_time = {{ dist = "constant", value_ms = 200 }}

[[dependency]]
name = "search"
servers = 40
service_time = {{ dist = "constant", value_ms = 50 }}

[[dependency]]
name = "backup"
servers = 40
service_time = {{ dist = "constant", value_ms = 100 }}

[[dependency]]
name = "tickets"
servers = 40
service_time = {{ dist = "constant", value_ms = 50 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 20 }}
deadline_ms = 10000

  [[workflow.step]]
  id = "enrich"
  dependency = "search"
  criticality = "soft"

  [[workflow.step]]
  id = "answer"
  dependency = "model"
  fallback = "backup"

  [[workflow.step]]
  id = "save"
  after = ["answer", "enrich"]
  dependency = "tickets"
  effect = "write"
  idempotency = "key"

[[fault]]
kind = "latency"
target = "model"
start_s = 100
duration_s = 100
service_time = {{ dist = "constant", value_ms = 2000 }}

[policy.p]
timeout_ms = 5000

[[policy.p.circuit_breaker]]
dependency = "model"
slow_call_duration_threshold_ms = 1000
slow_call_rate_threshold = 50
sliding_window_type = "time_based"
sliding_window_size = 10
minimum_number_of_calls = 20
wait_duration_in_open_state_ms = 30000
automatic_transition_from_open_to_half_open_enabled = true

{policy}
"#
    )
}

/// The `[policy.p.degradation]` table every test with rules uses.
const DEGRADATION: &str = r#"
[policy.p.degradation]
evaluation_interval_ms = 1000
recovery = { probe_evaluations = 2, canary_stages = [0.2, 1.0], stage_ms = 10000, min_canary_runs = 10 }
"#;

/// The scenario with the degradation table and `rules`.
fn with_rules(rules: &str) -> String {
    scenario(&format!("{DEGRADATION}\n{rules}"))
}

fn one(text: &str) -> MetricMap {
    let m = model(text);
    simulate(&m, 0, 5).unwrap_or_else(|e| panic!("{e}")).metrics
}

fn get(m: &MetricMap, name: &str) -> f64 {
    *m.get(name).unwrap_or_else(|| panic!("no metric {name}"))
}

const CONSTRAINED: &str = r#"
[[policy.p.runtime_policy]]
mode = "constrained"
when = { dependency = "model", breaker = "not_closed" }
min_dwell_ms = 20000
actions = { omit_steps = ["enrich"], retry_tokens_per_run = 0 }
"#;

#[test]
fn the_breaker_moves_the_workflow_to_constrained_and_back_through_recovery() {
    let m = one(&with_rules(CONSTRAINED));
    assert_eq!(get(&m, "degradation_transition_total.normal.constrained"), 1.0, "{m:?}");
    assert!(get(&m, "degradation_transition_total.constrained.recovery") >= 1.0);
    assert_eq!(get(&m, "degradation_transition_total.recovery.normal"), 1.0, "back to normal after the fault");
    let constrained_s = get(&m, "degradation_mode_time_s.constrained");
    assert!((80.0..=140.0).contains(&constrained_s), "about the fault's 100 s: {constrained_s}");
    // Runs that started constrained left the soft step out, with a notice, and never failed for it.
    let omitted = get(&m, "omitted_by_mode_total");
    assert!(omitted > 0.0 && omitted == get(&m, "degraded_total.omitted_by_mode"), "{omitted}");
    let constrained_runs = get(&m, "mode.constrained.logical_run_total");
    assert_eq!(constrained_runs, get(&m, "mode.constrained.outcome_total.degraded"), "each omitted it");
    assert!(omitted >= constrained_runs, "recovery's runs off the canary omit it too");
}

#[test]
fn a_policy_without_rules_reports_no_mode_metrics_and_runs_as_before() {
    let m = one(&scenario(""));
    assert!(!m.keys().any(|k| k.starts_with("degradation_") || k.starts_with("mode.")));
    assert_eq!(get(&m, "omitted_by_mode_total"), 0.0);
    // The same breaker and fault, without modes: the soft step is always started.
    assert_eq!(get(&m, "step.enrich.omitted_total"), 0.0);
}

#[test]
fn paused_refuses_new_runs_and_handoff_stops_writes() {
    let paused = r#"
[[policy.p.runtime_policy]]
mode = "paused"
when = { dependency = "model", breaker = "open" }
actions = { refuse_new_runs = true }
"#;
    let m = one(&with_rules(paused));
    let refused = get(&m, "refused_total.paused");
    assert!(refused > 100.0, "{refused}");
    assert_eq!(refused, get(&m, "outcome_total.rejected"), "a refused run is rejected before it starts");
    let in_modes = get(&m, "mode.paused.outcome_total.rejected") + get(&m, "mode.recovery.outcome_total.rejected");
    assert_eq!(refused, in_modes, "paused, and recovery's runs off the canary");
    assert_eq!(get(&m, "degradation_transition_total.recovery.normal"), 1.0, "the canary's calls closed the breaker");
    let handoff = r#"
[[policy.p.runtime_policy]]
mode = "handoff"
when = { dependency = "model", breaker = "open" }
actions = { pause_writes = true }
"#;
    let m = one(&with_rules(handoff));
    let paused_writes = get(&m, "write_paused_total");
    assert!(paused_writes > 100.0, "{paused_writes}");
    assert_eq!(paused_writes, get(&m, "outcome_total.handoff"), "every paused write hands its run off");
    assert_eq!(get(&m, "degradation_transition_total.recovery.normal"), 1.0, "the canary's writes go out: it recovers");
    let unpaused = one(&scenario(""));
    let writes = |m: &MetricMap| get(m, "dependency.tickets.attempt_total");
    assert_eq!(writes(&m) + paused_writes, writes(&unpaused), "a paused write is never sent");
}

#[test]
fn modes_are_deterministic_and_the_same_seed_gives_the_same_bits() {
    let text = with_rules(CONSTRAINED);
    let m = model(&text);
    let a = simulate(&m, 0, 99).unwrap().metrics;
    let b = simulate(&m, 0, 99).unwrap().metrics;
    assert_eq!(metric_bits(&a), metric_bits(&b));
}

fn error_of(text: &str) -> String {
    let source = Source::from_text("test.toml", text, Format::Toml);
    let scenario = parse_source(&source).unwrap_or_else(|e| panic!("{e}"));
    match faultline::engine::Model::compile(&scenario, &source) {
        Ok(_) => panic!("compiled"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_rules_are_refused_at_their_field() {
    let cases: [(&str, &str); 7] = [
        ("mode = \"normal\"\nwhen = { dependency = \"model\", breaker = \"open\" }", "runtime_policy[0].mode"),
        ("mode = \"calm\"\nwhen = { dependency = \"model\", breaker = \"open\" }", "unknown value `calm`"),
        ("mode = \"constrained\"\nwhen = { dependency = \"model\" }", "names no signal"),
        ("mode = \"constrained\"\nwhen = { breaker = \"open\" }", "name the dependency they watch"),
        (
            "mode = \"constrained\"\nwhen = { completion_budget = \"at_risk\" }",
            "needs [policy.<name>.degradation.error_budget]",
        ),
        (
            "mode = \"constrained\"\nwhen = { dependency = \"model\", breaker = \"open\" }\nactions = { omit_steps = [\"answer\"] }",
            "only soft steps may be omitted",
        ),
        (
            "mode = \"constrained\"\nwhen = { dependency = \"model\", breaker = \"open\" }\nactions = { omit_steps = [\"nope\"] }",
            "unknown step",
        ),
    ];
    for (rule, expected) in cases {
        let text = with_rules(&format!("[[policy.p.runtime_policy]]\n{rule}\n"));
        let err = error_of(&text);
        assert!(err.contains(expected), "{rule}\n-> {err}");
        assert!(err.contains("test.toml:"), "located: {err}");
    }
}

#[test]
fn bad_budgets_and_recoveries_are_refused_at_their_field() {
    let rule = "[[policy.p.runtime_policy]]\nmode = \"constrained\"\nwhen = { completion_budget = \"at_risk\" }\n";
    let with = |degradation: &str| {
        with_rules(rule).replace(
            "recovery = { probe_evaluations = 2, canary_stages = [0.2, 1.0], stage_ms = 10000, min_canary_runs = 10 }",
            degradation,
        )
    };
    let err = error_of(&with(
        "error_budget = { objective = 0.99, burn_rate = [{ long_window_s = 60, short_window_s = 2.5, burn_rate = 14.4 }] }",
    ));
    assert!(err.contains("short_window_s") && err.contains("multiple of evaluation_interval_ms"), "{err}");
    let err = error_of(&with(
        "error_budget = { objective = 1.0, burn_rate = [{ long_window_s = 60, short_window_s = 5, burn_rate = 14.4 }] }",
    ));
    assert!(err.contains("objective") && err.contains("(0, 1)"), "{err}");
    let err = error_of(&with("error_budget = { burn_rate = [] }"));
    assert!(err.contains("burn_rate") && err.contains("at least one rule"), "{err}");
    let ok_budget = "error_budget = { burn_rate = [{ long_window_s = 60, short_window_s = 5, burn_rate = 14.4 }] }";
    let err = error_of(&with(&format!("{ok_budget}\nrecovery = {{ canary_stages = [0.5, 0.25] }}")));
    assert!(err.contains("canary_stages[1]") && err.contains("grow"), "{err}");
    let err = error_of(&with(&format!("{ok_budget}\nrecovery = {{ canary_stages = [0.5] }}")));
    assert!(err.contains("the last stage must be 1.0"), "{err}");
}

#[test]
fn a_fallback_that_breaks_the_step_s_contract_is_refused() {
    let base = scenario("")
        .replace("  fallback = \"backup\"\n", "  fallback = \"backup\"\n  task_class = \"permission_decision\"\n");
    let floor = base.replace("[policy.p]\n", "[policy.p]\nsteps = { answer = { fallback_quality_floor = 0.8 } }\n");
    let err = error_of(&floor.replace("name = \"backup\"\n", "name = \"backup\"\nquality_score = 0.7\n"));
    assert!(err.contains("fallback_quality_floor") && err.contains("0.7") && err.contains("below"), "{err}");
    model(&floor.replace("name = \"backup\"\n", "name = \"backup\"\nquality_score = 0.85\n"));
    let forbidden =
        base.replace("name = \"backup\"\n", "name = \"backup\"\nforbidden_task_classes = [\"permission_decision\"]\n");
    let err = error_of(&forbidden);
    assert!(err.contains("may not serve task class") && err.contains("permission_decision"), "{err}");
}
