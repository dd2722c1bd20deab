//! A step's ordered fallback candidates with allowed task classes, and context reduction on a
//! candidate (docs/essay.md sections 16 and 17; docs/scenario.md 8.4), each shown from outside:
//! a run whose figures would differ if the behaviour were not there. Before, a step had one
//! fallback (`fallback`), admitted whatever its task class, always sent the whole context, and
//! `fallbacks` was refused as an unknown field.

mod common;

use common::*;
use faultline::engine::simulate;
use faultline::metrics::MetricMap;

/// The primary model always fails; `lite` (a 4 000-token window, token-shaped, so its input
/// tokens are counted) and `mini` are the candidates. `summary` is a summary draft, `decision` a
/// security decision, each with 6 000 input tokens. `policy` completes `[policy.p]`.
fn scenario(policy: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 60
warmup_s = 0
seed = 3
replications = 1

[[dependency]]
name = "model"
kind = "model"
servers = 50
service_time = {{ dist = "constant", value_ms = 100 }}
errors = {{ overloaded = 1.0 }}

[[dependency]]
name = "lite"
kind = "model"
servers = 50
max_context_tokens = 4000
[dependency.tokens]
time_to_first_token = {{ p50_ms = 100, p95_ms = 200 }}
time_per_output_token = {{ p50_ms = 1, p95_ms = 2 }}
output_tokens = {{ dist = "constant", value = 50 }}

[[dependency]]
name = "mini"
kind = "model"
servers = 50
service_time = {{ dist = "constant", value_ms = 50 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 10 }}
deadline_ms = 20000

  [[workflow.step]]
  id = "summary"
  dependency = "model"
  task_class = "summary_draft"
  input_tokens = {{ dist = "constant", value = 6000 }}

  [[workflow.step]]
  id = "decision"
  after = ["summary"]
  dependency = "model"
  task_class = "security_decision"
  input_tokens = {{ dist = "constant", value = 6000 }}

[policy.p]
timeout_ms = 5000
retry = {{ max_attempts = 1 }}

{policy}
"#
    )
}

/// Both steps try `lite` (summaries only, half the context) first, then `mini`.
const CANDIDATES: &str = r#"[policy.p.steps]
summary = { fallbacks = [{ dependency = "lite", allowed_task_classes = ["summary_draft"], context_reduction = 0.5 }, { dependency = "mini" }] }
decision = { fallbacks = [{ dependency = "lite", allowed_task_classes = ["summary_draft"], context_reduction = 0.5 }, { dependency = "mini" }] }
"#;

fn run(policy: &str) -> MetricMap {
    simulate(&model(&scenario(policy)), 0, 0).unwrap_or_else(|e| panic!("{e}")).metrics
}

fn get(m: &MetricMap, name: &str) -> f64 {
    *m.get(name).unwrap_or_else(|| panic!("no metric {name}"))
}

/// In order, by task class: the summary goes to `lite` (it admits summaries, and half of 6 000
/// tokens fits its 4 000-token window), the security decision skips `lite` (not an allowed
/// class) and goes to `mini`. Each run calls `lite` once and `mini` once.
#[test]
fn candidates_are_tried_in_order_and_admit_only_their_task_classes() {
    let m = run(CANDIDATES);
    let runs = get(&m, "logical_run_total");
    assert!(runs >= 500.0, "{runs}");
    assert_eq!(get(&m, "dependency.lite.attempt_total"), runs, "one summary a run at lite");
    assert_eq!(get(&m, "dependency.mini.attempt_total"), runs, "one decision a run at mini");
    assert_eq!(get(&m, "step.summary.fallback_total"), runs);
    assert_eq!(get(&m, "step.decision.fallback_total"), runs);
    assert_eq!(get(&m, "fallback_refused_total"), runs, "lite refused each decision: not its class");
    assert_eq!(get(&m, "outcome_total.degraded"), runs);
}

/// Context reduction is what lets the summary use `lite`, and it is not free: `lite` is sent
/// 3 000 input tokens a call (half of 6 000), and the run is degraded with its own reason,
/// `context_reduced`. Without the reduction 6 000 tokens do not fit `lite`'s window: the summary
/// goes on to `mini` (two refusals a run), and no run lacks context.
#[test]
fn a_reduced_context_fits_a_smaller_window_and_degrades_the_result() {
    let reduced = run(CANDIDATES);
    let runs = get(&reduced, "logical_run_total");
    assert_eq!(get(&reduced, "dependency.lite.input_tokens_total"), 3000.0 * runs, "half the context is sent");
    assert_eq!(get(&reduced, "degraded_total.context_reduced"), runs, "every run's summary lacks half its context");
    assert_eq!(get(&reduced, "degraded_total.fallback_used"), runs);
    assert_eq!(get(&reduced, "full_quality_completion_ratio"), 0.0);

    let whole = run(&CANDIDATES.replace(", context_reduction = 0.5", ""));
    let runs = get(&whole, "logical_run_total");
    assert_eq!(get(&whole, "dependency.lite.attempt_total"), 0.0, "6 000 tokens do not fit 4 000");
    assert_eq!(get(&whole, "dependency.mini.attempt_total"), 2.0 * runs);
    assert_eq!(get(&whole, "fallback_refused_total"), 2.0 * runs);
    assert!(!whole.contains_key("degraded_total.context_reduced"), "no candidate reduces: no such metric");
}

/// The one-candidate `fallback` is a list of one: the same run, figure for figure.
#[test]
fn a_single_fallback_is_a_list_of_one() {
    let single = run("[policy.p.steps]\nsummary = { fallback = \"mini\" }\ndecision = { fallback = \"mini\" }\n");
    let list = run(
        "[policy.p.steps]\nsummary = { fallbacks = [{ dependency = \"mini\" }] }\ndecision = { fallbacks = [{ dependency = \"mini\" }] }\n",
    );
    assert_eq!(metric_bits(&single), metric_bits(&list));
    assert!(get(&single, "dependency.mini.attempt_total") > 0.0);
}

/// Contracts that make no sense are refused, naming the file, line and field (exit 2).
#[test]
fn bad_candidates_are_refused_with_their_field() {
    let cases = [
        (
            "summary = { fallback = \"mini\", fallbacks = [{ dependency = \"lite\" }] }",
            "policy.p.steps.summary.fallbacks",
            "not both",
        ),
        ("summary = { fallbacks = [] }", "policy.p.steps.summary.fallbacks", "at least one candidate"),
        (
            "summary = { fallbacks = [{ dependency = \"lite\", context_reduction = 1.5 }] }",
            "policy.p.steps.summary.fallbacks[0].context_reduction",
            "(0, 1]",
        ),
        (
            "summary = { fallbacks = [{ dependency = \"lite\", allowed_task_classes = [] }] }",
            "policy.p.steps.summary.fallbacks[0].allowed_task_classes",
            "admits no task",
        ),
        (
            "summary = { fallbacks = [{ dependency = \"mini\" }, { dependency = \"nope\" }] }",
            "policy.p.steps.summary.fallbacks[1].dependency",
            "nope",
        ),
        (
            "summary = { fallbacks = [{ dependency = \"model\" }] }",
            "policy.p.steps.summary.fallbacks[0].dependency",
            "own dependency",
        ),
        (
            "summary = { fallbacks = [{ dependency = \"mini\" }, { dependency = \"mini\" }] }",
            "policy.p.steps.summary.fallbacks[1].dependency",
            "earlier candidate",
        ),
        (
            "summary = { fallbacks = [{ dependency = \"lite\", quality_floor = 0.9 }] }",
            "policy.p.steps.summary.fallbacks[0].quality_floor",
            "quality_score",
        ),
    ];
    for (i, (line, field, words)) in cases.iter().enumerate() {
        let dir = std::env::temp_dir().join(format!("faultline-candidates-{}-{i}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.toml");
        std::fs::write(&path, scenario(&format!("[policy.p.steps]\n{line}\n"))).unwrap();
        let o =
            std::process::Command::new(env!("CARGO_BIN_EXE_faultline")).arg("validate").arg(&path).output().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{line}: {err}");
        assert!(err.contains("s.toml:") && err.contains(field) && err.contains(words), "{line}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}
