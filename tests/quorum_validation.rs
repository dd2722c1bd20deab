//! A quorum step's bad input (docs/scenario.md 6.2) is refused with the file, line, column and
//! field of the mistake, never a panic, as tests/validate_limits.rs refuses the size limits.

use faultline::engine::Model;
use faultline::scenario::{Format, Source, parse_source};

/// The error of compiling a scenario whose one step has `step_extra` lines and whose policy has
/// `policy_extra` lines.
fn rejection(step_extra: &str, policy_extra: &str) -> String {
    let toml = format!(
        r#"[simulation]
duration_s = 10
seed = 1
replications = 1

[[dependency]]
name = "model"
service_time = {{ dist = "constant", value_ms = 1 }}

[[dependency]]
name = "model-b"
service_time = {{ dist = "constant", value_ms = 1 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 1 }}
deadline_ms = 1000

  [[workflow.step]]
  id = "vote"
  dependency = "model"
{step_extra}

[policy.p]
{policy_extra}
"#
    );
    let source = Source::from_text("q.toml", &toml, Format::Toml);
    let scenario = match parse_source(&source) {
        Ok(s) => s,
        Err(e) => return e.to_string(),
    };
    match Model::compile(&scenario, &source) {
        Ok(_) => panic!("the scenario compiled:\n{toml}"),
        Err(e) => e.to_string(),
    }
}

fn assert_says(step_extra: &str, policy_extra: &str, place: &str, words: &str) {
    let e = rejection(step_extra, policy_extra);
    assert!(e.contains(place), "{e}\nlacks {place}");
    assert!(e.contains(words), "{e}\nlacks {words}");
}

#[test]
fn k_must_be_a_reachable_strict_majority() {
    assert_says("  quorum = { k = 4, n = 3 }", "", "q.toml:22:", "workflow[0].step[0].quorum.k: k = 4 is more than");
    assert_says("  quorum = { k = 0, n = 3 }", "", "quorum.k", "must be at least 1");
    assert_says("  quorum = { k = 2, n = 4 }", "", "quorum.k", "not a strict majority");
    assert_says("  quorum = { k = 1, n = 0 }", "", "quorum.n", "1 to 15 branches, got 0");
    assert_says("  quorum = { k = 9, n = 16 }", "", "quorum.n", "1 to 15 branches, got 16");
    // Checked before the branches are made: this once asked for 32 GB and aborted (exit 134).
    assert_says("  quorum = { k = 2, n = 4000000000 }", "", "quorum.n", "1 to 15 branches, got 4000000000");
    assert_says("  quorum = { k = 2 }", "", "workflow[0].step[0].quorum", "needs `n`");
    assert_says("  quorum = { k = -1, n = 3 }", "", "q.toml:22:", "k");
}

#[test]
fn branches_name_known_dependencies_the_first_the_steps_own() {
    assert_says(
        r#"  quorum = { k = 2, dependencies = ["model", "model-c", "model-b"] }"#,
        "",
        "quorum.dependencies[1]",
        "unknown dependency `model-c`",
    );
    assert_says(
        r#"  quorum = { k = 2, dependencies = ["model-b", "model", "model"] }"#,
        "",
        "quorum.dependencies[0]",
        "the first branch is the step's own dependency `model`",
    );
    assert_says(
        r#"  quorum = { k = 2, n = 4, dependencies = ["model", "model-b", "model"] }"#,
        "",
        "quorum.n",
        "n = 4, but `dependencies` lists 3 branches",
    );
}

#[test]
fn the_shared_cause_and_the_send_rule_are_checked() {
    assert_says(
        "  quorum = { k = 2, n = 3, shared_cause_probability = 1.5 }",
        "",
        "shared_cause_probability",
        "[0, 1]",
    );
    assert_says(
        "  quorum = { k = 2, n = 3, shared_cause_branches = [0, 3] }",
        "",
        "shared_cause_branches[1]",
        "branch 3 does not exist",
    );
    assert_says(
        "  quorum = { k = 2, n = 3, shared_cause_branches = [1, 1] }",
        "",
        "shared_cause_branches[1]",
        "listed twice",
    );
    assert_says("  quorum = { k = 2, n = 3, send = \"first\" }", "", "quorum.send", "as_needed");
    assert_says("  quorum = { k = 2, n = 3, m = 1 }", "", "q.toml:22:", "unknown field `m`");
}

#[test]
fn a_quorum_is_a_read_without_a_fallback_or_a_validator() {
    assert_says("  effect = \"write\"\n  quorum = { k = 2, n = 3 }", "", "step[0].effect", "commit it n times");
    assert_says("  fallback = \"model-b\"\n  quorum = { k = 2, n = 3 }", "", "step[0].fallback", "no fallback");
    assert_says(
        "  criticality = \"advisory\"\n  advisory_wait_ms = 100\n  quorum = { k = 2, n = 3 }",
        "",
        "step[0].criticality",
        "cannot be a quorum",
    );
    assert_says(
        "  quorum = { k = 2, n = 3 }",
        "steps.vote.fallback = \"model-b\"",
        "policy.p.steps.vote.fallback",
        "no fallback",
    );
    assert_says(
        "  quorum = { k = 2, n = 3 }",
        "steps.vote.validator = { check = \"schema\", detects = { schema_violation = 0.5 } }",
        "policy.p.steps.vote.validator",
        "agreement",
    );
}
