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

/// A scenario of three models (`model` in `provider-x`, `model-c` in `provider-z`, `model-b`
/// with the fields `model_b`) and one step with `step_extra`, written to a file.
fn scenario_file(name: &str, model_b: &str, step_extra: &str, policy_extra: &str) -> std::path::PathBuf {
    let toml = format!(
        r#"[simulation]
duration_s = 10
seed = 1
replications = 1

[[dependency]]
name = "model"
service_time = {{ dist = "constant", value_ms = 1 }}
failure_domain = "provider-x"

[[dependency]]
name = "model-b"
service_time = {{ dist = "constant", value_ms = 1 }}
{model_b}

[[dependency]]
name = "model-c"
service_time = {{ dist = "constant", value_ms = 1 }}
failure_domain = "provider-z"

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
    let dir = std::env::temp_dir().join(format!("faultline-quorum-validation-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, toml).unwrap();
    file
}

fn faultline(args: &[&str]) -> String {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_faultline")).args(args).output().unwrap();
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The check row of the failure-domain rule.
fn domain_row(check: &str) -> &str {
    check.lines().find(|l| l.starts_with("Fallbacks and parallel branches in distinct failure domains?")).unwrap()
}

#[test]
fn quorum_branches_in_one_failure_domain_are_warned_of_and_check_says_no() {
    // review31-quorum M2: before, validate said nothing and check answered "yes, no fallback or
    // parallel branch shares its primary's" for three branches of one provider.
    let shared = scenario_file(
        "shared",
        "failure_domain = \"provider-x\"",
        "  quorum = { k = 2, dependencies = [\"model\", \"model-b\", \"model-b\"] }",
        "",
    );
    let path = shared.to_str().unwrap();
    let validated = faultline(&["validate", path]);
    let warning = "shared.toml:29:46: workflow[0].step[0].quorum.dependencies[1]: branches 0 (`model`), 1 (`model-b`) \
                   and 2 (`model-b`) of the 2-of-3 quorum are in one failure domain `provider-x` \
                   (dependency[0].failure_domain): a fault of `provider-x` alone leaves the quorum unmet";
    assert!(validated.contains(warning), "{validated}");
    let check = faultline(&["check", path]);
    let row = domain_row(&check);
    assert!(row.contains("no (warning)") && row.contains("one failure domain `provider-x`"), "{row}");

    // The same model asked three times: one dependency is one domain.
    let same = scenario_file("same", "", "  quorum = { k = 2, n = 3 }", "");
    let validated = faultline(&["validate", same.to_str().unwrap()]);
    assert!(
        validated.contains(
            "workflow[0].step[0].quorum.n: the 2-of-3 quorum's 3 branches all call `model`, one dependency and so one failure domain"
        ),
        "{validated}"
    );

    // Two of five in one domain: named, but one domain's fault does not decide a 3-of-5 alone.
    let two = scenario_file(
        "two",
        "failure_domain = \"provider-y\"",
        "  quorum = { k = 3, dependencies = [\"model\", \"model-b\", \"model-c\", \"model-b\", \"model-c\"] }",
        "",
    );
    let validated = faultline(&["validate", two.to_str().unwrap()]);
    assert_eq!(validated.matches("warning:").count(), 2, "{validated}");
    assert!(validated.contains("a fault of `provider-y` takes 2 of its branches together"), "{validated}");

    // Three models of three domains: no warning, and check says yes.
    let distinct = scenario_file(
        "distinct",
        "failure_domain = \"provider-y\"",
        "  quorum = { k = 2, dependencies = [\"model\", \"model-b\", \"model-c\"] }",
        "",
    );
    let path = distinct.to_str().unwrap();
    assert!(!faultline(&["validate", path]).contains("warning"));
    let check = faultline(&["check", path]);
    assert!(domain_row(&check).contains("yes"), "{}", domain_row(&check));
    for file in [shared, same, two, distinct] {
        std::fs::remove_dir_all(file.parent().unwrap()).unwrap();
    }
}

#[test]
fn settings_a_quorum_step_ignores_and_a_cache_in_front_of_it_are_warned_of() {
    // review31-quorum L1 and M3: before, each of these validated without a word.
    let ignored = scenario_file(
        "ignored",
        "",
        "  quorum = { k = 2, dependencies = [\"model\", \"model-b\", \"model-c\"] }",
        "timeout_ms = 1000\nretry = { max_attempts = 3 }\nhedging = { delay_ms = 50 }\nsteps.vote = { max_attempts = 5 }",
    );
    let validated = faultline(&["validate", ignored.to_str().unwrap()]);
    for words in [
        "policy.p.steps.vote.max_attempts: step `vote` is a quorum: each branch is one first attempt, never retried",
        "policy.p.hedging: quorum step `vote` is never hedged",
    ] {
        assert!(validated.contains(words), "{validated}\nlacks {words}");
    }
    let no_sharer = scenario_file(
        "no_sharer",
        "",
        "  quorum = { k = 2, n = 3, shared_cause_probability = 0.1, shared_cause_branches = [] }",
        "",
    );
    let validated = faultline(&["validate", no_sharer.to_str().unwrap()]);
    assert!(
        validated.contains(
            "quorum.shared_cause_branches: no branch of quorum `vote` shares the cause, so shared_cause_probability = 0.1 changes nothing"
        ),
        "{validated}"
    );
    let no_cause = scenario_file("no_cause", "", "  quorum = { k = 2, n = 3, shared_cause_branches = [0, 1] }", "");
    let validated = faultline(&["validate", no_cause.to_str().unwrap()]);
    assert!(validated.contains("no cause to share, so shared_cause_branches is ignored"), "{validated}");
    let cached = scenario_file(
        "cached",
        "  [dependency.cache]\n  data_class = \"answers\"\n  fresh_ttl_s = 3600\n  keys = 10",
        "  quorum = { k = 2, dependencies = [\"model\", \"model-b\", \"model-c\"] }",
        "[policy.p.cache.model-b]",
    );
    let validated = faultline(&["validate", cached.to_str().unwrap()]);
    assert!(
        validated.contains("policy.p.cache.model-b: quorum step `vote` calls `model-b` through this cache: its branches ask for one key"),
        "{validated}"
    );
    // A quorum without any of these: only the failure-domain note of n calls to one model.
    let plain =
        scenario_file("plain", "", "  quorum = { k = 2, dependencies = [\"model\", \"model-b\", \"model-c\"] }", "");
    assert!(!faultline(&["validate", plain.to_str().unwrap()]).contains("warning"));
    for file in [ignored, no_sharer, no_cause, cached, plain] {
        std::fs::remove_dir_all(file.parent().unwrap()).unwrap();
    }
}

#[test]
fn a_quorum_written_as_a_string_is_told_a_table_is_expected() {
    // review31-quorum L6: before, "expected a table ..., not a positional array" for a string.
    let e = rejection("  quorum = \"2of3\"", "");
    assert!(
        e.contains("q.toml:22:") && e.contains("invalid type: string \"2of3\", expected a table with named fields"),
        "{e}"
    );
    assert!(!e.contains("positional"), "{e}");
    let e = rejection("  quorum = [2, 3]", "");
    assert!(e.contains("invalid type: sequence") && e.contains("not a positional array"), "{e}");
}
