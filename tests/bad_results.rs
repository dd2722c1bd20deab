//! Faults that look like success, observed from outside: the share of runs whose answer rests
//! on an undetected bad result is toxicity x (1 - the validator's detection share); a
//! validator's latency and cost show in the run's; a stream cut after the first token bills one
//! output token and ends early; a quota cut raises 429s in its window only; slow streaming
//! chunks lengthen a call by the factor on its output; and the file's checks.

mod common;
use common::{assert_in_ci, metric, model, replicate};
use faultline::engine::simulate;
use faultline::metrics::MetricMap;
use faultline::scenario::{Format, Source, parse_source};

/// A tool with a good fallback, one step; `faults` and `policies` are appended.
fn tool_scenario(faults: &str, policies: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 100
warmup_s = 0
seed = 7
replications = 10

[[dependency]]
name = "tool"
servers = 1000
cost_units = 1
service_time = {{ dist = "constant", value_ms = 100 }}

[[dependency]]
name = "tool-b"
servers = 1000
cost_units = 1
service_time = {{ dist = "constant", value_ms = 100 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 20 }}
deadline_ms = 60000

  [[workflow.step]]
  id = "call"
  dependency = "tool"
  fallback = "tool-b"

{faults}

{policies}
"#
    )
}

const SCHEMA_FAULT: &str = r#"
[[fault]]
kind = "schema_violation"
target = "tool"
start_s = 0
duration_s = 1000
toxicity = 0.4
"#;

const TWO_POLICIES: &str = r#"
[policy.unchecked]
timeout_ms = 5000

[policy.checked]
timeout_ms = 5000
[policy.checked.steps.call.validator]
check = "schema"
latency_ms = 50
cost_units = 0.25
detects = { schema_violation = 0.5 }
"#;

#[test]
fn the_share_of_answers_on_an_undetected_bad_result_is_toxicity_times_what_the_validator_misses() {
    let m = model(&tool_scenario(SCHEMA_FAULT, TWO_POLICIES));
    let unchecked = replicate(&m, m.policy_index("unchecked").unwrap());
    let checked = replicate(&m, m.policy_index("checked").unwrap());
    // Every run answers: a detected bad result goes to the fallback, which is good.
    for reps in [&unchecked, &checked] {
        assert_eq!(metric(reps, "auto_completion_ratio").mean, 1.0);
    }
    // Unchecked: 0.4 of the answers rest on a schema violation; checked: 0.4 x (1 - 0.5).
    assert_in_ci("unchecked share", &metric(&unchecked, "run_on_undetected_bad_result_ratio"), 0.4, 4);
    assert_in_ci("checked share", &metric(&checked, "run_on_undetected_bad_result_ratio"), 0.2, 4);
    // Half of what reached the validator was caught; the other policy caught nothing.
    let detected: f64 = checked.iter().map(|r| r["bad_result_detected_total.schema_violation"]).sum();
    let received: f64 = checked.iter().map(|r| r["bad_result_total.schema_violation"]).sum();
    let share = detected / received;
    assert!((share - 0.5).abs() < 0.03, "detected share {share}");
    assert_eq!(metric(&unchecked, "bad_result_detected_total.schema_violation").mean, 0.0);
    // The caught ones went to the fallback: 0.4 x 0.5 of the runs.
    let fell_back: f64 = checked.iter().map(|r| r["fallback_used_total"]).sum();
    let runs: f64 = checked.iter().map(|r| r["logical_run_total"]).sum();
    assert!((fell_back / runs - 0.2).abs() < 0.02, "{}", fell_back / runs);
    assert_eq!(fell_back, detected, "each caught answer went to the fallback");
}

#[test]
fn a_validators_latency_and_cost_show_in_the_runs() {
    let m = model(&tool_scenario("", TWO_POLICIES));
    let unchecked = simulate(&m, m.policy_index("unchecked").unwrap(), 3).unwrap().metrics;
    let checked = simulate(&m, m.policy_index("checked").unwrap(), 3).unwrap().metrics;
    assert_eq!(unchecked["run_latency_ms.mean"], 100.0);
    assert_eq!(checked["run_latency_ms.mean"], 150.0, "100 ms of service and 50 of checking");
    let runs = checked["logical_run_total"];
    assert_eq!(runs, unchecked["logical_run_total"]);
    assert!((unchecked["cost_units_total"] - runs).abs() < 1e-9);
    assert!((checked["cost_units_total"] - 1.25 * runs).abs() < 1e-6, "{}", checked["cost_units_total"]);
    assert_eq!(checked["validation_total"], runs);
    assert_eq!(checked["run_on_undetected_bad_result_total"], 0.0);
}

/// One token-shaped model; `faults` appended.
fn model_scenario(faults: &str, tokens: &str, warmup_s: u32) -> String {
    format!(
        r#"
[simulation]
duration_s = 200
warmup_s = {warmup_s}
seed = 3
replications = 1

[[dependency]]
name = "llm"
kind = "model"
servers = 1000

[dependency.tokens]
time_to_first_token = {{ dist = "constant", value_ms = 400 }}
ttft_ms_per_1k_input_tokens = 50
time_per_output_token = {{ dist = "constant", value_ms = 20 }}
price_per_million_input_tokens = 3
price_per_million_output_tokens = 15
{tokens}

[[workflow]]
name = "chat"
arrivals = {{ rate_per_s = 1 }}
deadline_ms = 600000

  [[workflow.step]]
  id = "answer"
  dependency = "llm"
  input_tokens = {{ dist = "constant", value = 2000 }}
  output_tokens = {{ dist = "constant", value = 300 }}

{faults}

[policy.plain]
timeout_ms = 300000
retry = {{ max_attempts = 1 }}
"#
    )
}

fn one(toml: &str) -> MetricMap {
    let m = model(toml);
    simulate(&m, 0, 11).unwrap_or_else(|e| panic!("{e}")).metrics
}

#[test]
fn a_stream_cut_after_the_first_token_ends_early_and_bills_one_output_token() {
    let cut = r#"
[[fault]]
kind = "stream_cut"
target = "llm"
start_s = 0
duration_s = 1000
"#;
    let whole = one(&model_scenario("", "", 0));
    let m = one(&model_scenario(cut, "", 0));
    let calls = m["gen_ai.client.calls_served_total"];
    assert_eq!(calls, whole["gen_ai.client.calls_served_total"]);
    assert_eq!(whole["gen_ai.client.token.usage.output_total"], 300.0 * calls);
    assert_eq!(m["gen_ai.client.token.usage.output_total"], calls, "one token each");
    // 400 + 2 x 50 + 1 x 20 ms instead of 400 + 100 + 300 x 20.
    assert_eq!(whole["run_latency_ms.mean"], 6500.0);
    assert_eq!(m["run_latency_ms.mean"], 520.0);
    // It looked like success: every run answered, on a cut stream.
    assert_eq!(m["auto_completion_ratio"], 1.0);
    assert_eq!(m["bad_result_total.stream_cut"], calls);
    assert_eq!(m["run_on_undetected_bad_result_ratio"], 1.0);
    // Money: 2000 x 3e-6 + 1 x 15e-6 a call.
    assert!((m["cost_money_total"] - (0.006 + 15e-6) * calls).abs() < 1e-9, "{}", m["cost_money_total"]);
}

/// A stream cut after its first token did not stop at `max_output_tokens`: its finish reason
/// is not `length`, even for a call whose whole output would have been cut there.
#[test]
fn a_stream_cut_is_not_counted_as_stopped_at_max_output_tokens() {
    let cut = "[[fault]]\nkind = \"stream_cut\"\ntarget = \"llm\"\nstart_s = 0\nduration_s = 1000\n";
    let capped = "max_output_tokens = 256";
    let whole = one(&model_scenario("", capped, 0));
    let calls = whole["gen_ai.client.calls_served_total"];
    assert!(calls > 150.0, "{calls} calls");
    assert_eq!(whole["gen_ai.response.finish_reasons.length_total"], calls, "every whole output stops at 256");
    let m = one(&model_scenario(cut, capped, 0));
    assert_eq!(m["gen_ai.client.calls_served_total"], calls);
    assert_eq!(m["gen_ai.client.token.usage.output_total"], calls, "one token each");
    assert_eq!(m["gen_ai.response.finish_reasons.length_total"], 0.0);
}

#[test]
fn slow_streaming_chunks_lengthen_the_output_by_the_factor() {
    let slow = r#"
[[fault]]
kind = "slow_stream"
target = "llm"
start_s = 0
duration_s = 1000
factor = 3
"#;
    let m = one(&model_scenario(slow, "", 0));
    // 400 + 100 + 300 x 20 x 3; the first chunk is as early as ever.
    assert_eq!(m["run_latency_ms.mean"], 18_500.0);
    assert_eq!(m["gen_ai.client.time_to_first_chunk_ms.mean"], 500.0);
    assert!(!m.contains_key("bad_result_total.truncated"), "slow chunks are no bad result");
}

#[test]
fn a_quota_cut_raises_429s_in_its_window_only() {
    // 2300 tokens a call, 1 call a second: 138 000 a minute of a 300 000 quota.
    let quota = "tokens_per_minute = 300000";
    let cut = r#"
[[fault]]
kind = "quota_cut"
target = "llm"
start_s = 60
duration_s = 60
factor = 0.1
"#;
    let limited = |m: &MetricMap| m["dependency.llm.error_total.rate_limited"];
    assert_eq!(limited(&one(&model_scenario("", quota, 0))), 0.0, "no cut, no 429");
    let during = one(&model_scenario(cut, quota, 0));
    // 30 000 tokens a minute left: the cut bucket and its minute's refill hold about 26 calls
    // of 2 300 tokens, of the 60 or so that arrive in the window; the rest are refused.
    assert!(limited(&during) > 15.0, "{}", limited(&during));
    assert!(limited(&during) < 45.0, "{}", limited(&during));
    // Runs that arrive once the window is over meet no 429.
    let after = one(&model_scenario(cut, quota, 125));
    assert_eq!(limited(&after), 0.0);
}

fn refusal(toml: &str) -> String {
    let source = Source::from_text("bad.toml", toml, Format::Toml);
    let scenario = match parse_source(&source) {
        Ok(s) => s,
        Err(e) => return e.to_string(),
    };
    match faultline::engine::Model::compile(&scenario, &source) {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_files_checks_name_the_field() {
    let stream_at_api = tool_scenario(
        "[[fault]]\nkind = \"stream_cut\"\ntarget = \"tool\"\nstart_s = 0\nduration_s = 10\n",
        "[policy.p]\ntimeout_ms = 1000\n",
    );
    let e = refusal(&stream_at_api);
    assert!(e.contains("fault[0].target") && e.contains("[dependency.tokens]"), "{e}");
    let stale_at_api = stream_at_api.replace("stream_cut", "stale_index");
    let e = refusal(&stale_at_api);
    assert!(e.contains("retrieval"), "{e}");
    let quota_without_limit = model_scenario(
        "[[fault]]\nkind = \"quota_cut\"\ntarget = \"llm\"\nstart_s = 0\nduration_s = 10\nfactor = 0.5\n",
        "",
        0,
    );
    assert!(refusal(&quota_without_limit).contains("per_minute"));
    let big_cut = model_scenario(
        "[[fault]]\nkind = \"quota_cut\"\ntarget = \"llm\"\nstart_s = 0\nduration_s = 10\nfactor = 2\n",
        "tokens_per_minute = 300000",
        0,
    );
    assert!(refusal(&big_cut).contains("fault[0].factor"), "{}", refusal(&big_cut));
    let toxic_quota = big_cut.replace("factor = 2", "factor = 0.5\ntoxicity = 0.5");
    assert!(refusal(&toxic_quota).contains("`toxicity` does not apply"), "{}", refusal(&toxic_quota));
    let blind = tool_scenario("", &TWO_POLICIES.replace("schema_violation = 0.5", "stale_index = 0.5"));
    let e = refusal(&blind);
    assert!(e.contains("detects.stale_index") && e.contains("cannot see"), "{e}");
    let over = tool_scenario("", &TWO_POLICIES.replace("0.5 }", "1.5 }"));
    assert!(refusal(&over).contains("[0, 1]"), "{}", refusal(&over));
    let slow = tool_scenario("", &TWO_POLICIES.replace("latency_ms = 50", "latency_ms = 1e300"));
    let e = refusal(&slow);
    assert!(e.contains("validator.latency_ms: 1e300 ms is more than 3600000 ms"), "{e}");
    let unknown = tool_scenario("", &TWO_POLICIES.replace("\"schema\"", "\"vibes\""));
    assert!(refusal(&unknown).contains("validator.check"), "{}", refusal(&unknown));
}

#[test]
fn scenarios_without_them_have_no_bad_result_metrics() {
    let m = one(&model_scenario("", "", 0));
    assert!(m.keys().all(|k| !k.contains("bad_result") && !k.starts_with("validat")));
}

fn faultline(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_faultline")).args(args).output().unwrap()
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("faultline-bad-results-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The mean of `metric` in `policy`'s summary.json under `out`.
fn summary_mean(out: &std::path::Path, policy: &str, metric: &str) -> f64 {
    let text = std::fs::read_to_string(out.join(policy).join("summary.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let m = &json["metrics"][metric];
    m.as_f64().or_else(|| m["mean"].as_f64()).unwrap_or_else(|| panic!("{metric}: {m}"))
}

#[test]
fn a_validators_share_is_a_set_path_and_explore_draws_the_new_kinds_where_they_fit() {
    let dir = scratch("cli");
    let file = dir.join("tool.toml");
    std::fs::write(&file, tool_scenario(SCHEMA_FAULT, TWO_POLICIES).replace("replications = 10", "replications = 2"))
        .unwrap();
    let file = file.to_str().unwrap();
    // A validator that catches every violation: no answer rests on one (0.2 with half).
    let out = dir.join("run");
    let o = faultline(&[
        "run",
        file,
        "--set",
        "policy.checked.steps.call.validator.detects.schema_violation=1.0",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(summary_mean(&out, "checked", "run_on_undetected_bad_result_ratio"), 0.0);
    assert!(summary_mean(&out, "unchecked", "run_on_undetected_bad_result_ratio") > 0.35);
    // A value out of range is refused at its path, exit 2.
    let o = faultline(&["run", file, "--set", "policy.checked.steps.call.validator.detects.schema_violation=2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("detects.schema_violation"));

    // explore: the kinds that look like success join where the scenario deals in them, and only
    // those its dependencies can take (no tokens, no retrieval here).
    let explored = dir.join("explored");
    let explored = explored.to_str().unwrap();
    let o = faultline(&["explore", file, "-p", "checked", "--schedules", "2", "--replications", "1", "-o", explored]);
    let text = String::from_utf8_lossy(&o.stdout);
    let kinds = text.split("kinds ").nth(1).and_then(|k| k.split(')').next()).unwrap_or_else(|| panic!("{text}"));
    for k in ["truncated_result", "empty_result", "schema_violation", "latency"] {
        assert!(kinds.contains(k), "{k} in {kinds}");
    }
    for k in ["stream_cut", "slow_stream", "quota_cut", "partial_result", "stale_index"] {
        assert!(!kinds.contains(k), "{k} in {kinds}");
    }
    let o = faultline(&["explore", file, "-p", "checked", "--kind", "stream_cut", "-o", explored]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("[dependency.tokens]"));
    // A token model with a quota takes all three of its kinds when asked.
    let tokens = dir.join("llm.toml");
    std::fs::write(&tokens, model_scenario("", "tokens_per_minute = 300000", 0)).unwrap();
    let o = faultline(&[
        "explore",
        tokens.to_str().unwrap(),
        "-p",
        "plain",
        "--kind",
        "stream_cut",
        "--kind",
        "slow_stream",
        "--kind",
        "quota_cut",
        "--schedules",
        "3",
        "--replications",
        "1",
        "-o",
        explored,
    ]);
    assert!(matches!(o.status.code(), Some(0 | 99)), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `outcome_total.<o>`, 0 when no run had it.
fn outcome(m: &MetricMap, o: &str) -> f64 {
    m.get(&format!("outcome_total.{o}")).copied().unwrap_or(0.0)
}

#[test]
fn a_validators_check_ends_at_the_root_deadline() {
    // Before: runs "succeeded" at 120 100 ms on a 60 s deadline, and 1e300 ms hung every run
    // (now refused at the file, the_files_checks_name_the_field).
    for latency_ms in ["120000", "3600000"] {
        let policy = format!(
            "[policy.p]\ntimeout_ms = 5000\n[policy.p.steps.call.validator]\ncheck = \"schema\"\nlatency_ms = {latency_ms}\ndetects = {{ schema_violation = 0.5 }}\n"
        );
        let m = model(&tool_scenario("", &policy));
        let r = simulate(&m, 0, 3).unwrap_or_else(|e| panic!("{latency_ms}: {e}")).metrics;
        assert_eq!(r["run_latency_ms.max"], 60_000.0, "{latency_ms}: the check is cut at the deadline");
        assert_eq!(outcome(&r, "succeeded"), 0.0, "{latency_ms}: no answer was checked in time");
        assert_eq!(outcome(&r, "failed"), r["logical_run_total"]);
        assert_eq!(r["deadline_exceeded_ratio"], 1.0);
    }
}

/// Without deadline propagation the deadline is never consulted: an answer that comes after it
/// (a 120 s tool on a 60 s deadline) is checked in full, so a 1 ms check lets as many runs
/// succeed as a 0 ms one, and no time budget counts as exhausted. Before: the 1 ms check was
/// cut at once, 0 of 2000 runs succeeded (2000 with a 0 ms check) and
/// `budget_exhausted_total.time` counted 2000.
#[test]
fn without_propagation_a_late_answer_is_still_checked() {
    let late = |latency_ms: &str| {
        let policy = format!(
            "[policy.p]\ntimeout_ms = 0\ndeadline_propagation = false\n[policy.p.steps.call.validator]\ncheck = \"schema\"\nlatency_ms = {latency_ms}\ndetects = {{ schema_violation = 0.5 }}\n"
        );
        let toml = tool_scenario("", &policy).replace(
            "value_ms = 100 }\n\n[[dependency]]\nname = \"tool-b\"",
            "value_ms = 120000 }\n\n[[dependency]]\nname = \"tool-b\"",
        );
        simulate(&model(&toml), 0, 3).unwrap().metrics
    };
    let (instant, one_ms) = (late("0"), late("1"));
    assert!(instant["run_latency_ms.p50"] >= 120_000.0, "the answers come after the deadline");
    assert!(outcome(&instant, "succeeded") > 1900.0);
    assert_eq!(outcome(&one_ms, "succeeded"), outcome(&instant, "succeeded"));
    assert_eq!(one_ms.get("budget_exhausted_total.time").copied().unwrap_or(0.0), 0.0);
    assert_eq!(one_ms["run_latency_ms.max"], instant["run_latency_ms.max"] + 1.0);
}

#[test]
fn an_advisory_step_whose_window_closes_during_its_check_ends_once() {
    // The advisory step answers at 100 ms, its check would end at 200, its window closes at
    // 150: it is left out then, and the hard step after it runs 150 .. 250 ms. Before: the
    // step ended twice (used + omitted = 2 x runs) and the run "succeeded" at 200 ms with its
    // hard step abandoned.
    let advisory = tool_scenario(SCHEMA_FAULT, "").replace(
        "  fallback = \"tool-b\"\n",
        "  criticality = \"advisory\"\n  advisory_wait_ms = 150\n\n  [[workflow.step]]\n  id = \"after\"\n  dependency = \"tool-b\"\n  after = [\"call\"]\n",
    );
    let policy = "[policy.p]\ntimeout_ms = 5000\n[policy.p.steps.call.validator]\ncheck = \"schema\"\nlatency_ms = 100\ndetects = { schema_violation = 1.0 }\n";
    let m = model(&format!("{advisory}\n{policy}"));
    let r = simulate(&m, 0, 3).unwrap().metrics;
    let runs = r["logical_run_total"];
    let used = r.get("advisory_used_total").copied().unwrap_or(0.0);
    assert_eq!(used, 0.0, "no check ends inside the window");
    assert_eq!(r["advisory_omitted_total"], runs, "each advisory step ends once");
    assert_eq!(r["run_latency_ms.max"], 250.0);
    assert_eq!(r["run_latency_ms.mean"], 250.0);
    assert_eq!(outcome(&r, "succeeded"), runs);
}

#[test]
fn a_stream_cut_leaves_a_failing_call_its_time_and_its_bill() {
    // Every call fails: a stream cut has no success to touch. Before: the failing calls were
    // cut to 520 ms and billed one output token (cost 1.2210 instead of 2.1315 in the review).
    let errors = "[[fault]]\nkind = \"errors\"\ntarget = \"llm\"\nstart_s = 0\nduration_s = 1000\nerrors = { permanent_provider = 1.0 }\n";
    let cut = "[[fault]]\nkind = \"stream_cut\"\ntarget = \"llm\"\nstart_s = 0\nduration_s = 1000\n";
    let failing = one(&model_scenario(errors, "", 0));
    let both = one(&model_scenario(&format!("{errors}\n{cut}"), "", 0));
    assert_eq!(failing["run_latency_ms.mean"], 6500.0);
    for name in ["run_latency_ms.mean", "gen_ai.client.token.usage.output_total", "cost_money_total"] {
        assert_eq!(both[name], failing[name], "{name}");
    }
    assert_eq!(both.get("bad_result_total.stream_cut").copied().unwrap_or(0.0), 0.0);
}

#[test]
fn an_sdk_clients_answer_carries_its_bad_result() {
    // The SDK's first attempt is the runtime's call: its bad answer reaches the validator as
    // without the SDK. Before: 0 bad results and every run succeeded under the SDK.
    let policies = "[policy.plain]\ntimeout_ms = 5000\n[policy.plain.steps.call.validator]\ncheck = \"schema\"\ndetects = { schema_violation = 1.0 }\n\n[policy.sdk]\ntimeout_ms = 5000\n[policy.sdk.steps.call.validator]\ncheck = \"schema\"\ndetects = { schema_violation = 1.0 }\n[policy.sdk.sdk_client.tool]\n";
    let m = model(&tool_scenario(SCHEMA_FAULT, policies));
    let plain = simulate(&m, m.policy_index("plain").unwrap(), 3).unwrap().metrics;
    let sdk = simulate(&m, m.policy_index("sdk").unwrap(), 3).unwrap().metrics;
    let bad = |r: &MetricMap| r.get("bad_result_total.schema_violation").copied().unwrap_or(0.0);
    assert!(bad(&plain) > 0.3 * plain["logical_run_total"], "{}", bad(&plain));
    assert_eq!(bad(&sdk), bad(&plain), "the same draws, the same bad answers");
    assert_eq!(outcome(&sdk, "degraded"), outcome(&plain, "degraded"));
}

#[test]
fn a_validator_names_kinds_as_the_faults_do_and_is_refused_on_a_write() {
    // Before: `truncated_result` was an unknown kind, and a validator on a write ran on every
    // write (cost and latency) with nothing it could ever catch.
    let by_fault = tool_scenario("", &TWO_POLICIES.replace("schema_violation = 0.5", "truncated_result = 0.5"));
    let m = model(&by_fault);
    let r = simulate(&m, m.policy_index("checked").unwrap(), 3).unwrap().metrics;
    assert_eq!(r["validation_total"], r["logical_run_total"]);
    let write = tool_scenario("", TWO_POLICIES).replace("  fallback = \"tool-b\"\n", "  effect = \"write\"\n");
    let e = refusal(&write);
    assert!(e.contains("policy.checked.steps.call.validator") && e.contains("never a bad result"), "{e}");
}

#[test]
fn huge_strengths_are_named_at_the_file_instead_of_holding_runs_past_the_drain_limit() {
    // Before the bounds, a slow_stream factor of 1e308 was accepted and every run it touched
    // stayed in flight until the drain limit ("15 root runs were still in flight", no field).
    let slow = |factor: &str| {
        format!(
            "[[fault]]\nkind = \"slow_stream\"\ntarget = \"llm\"\nstart_s = 10\nduration_s = 20\nfactor = {factor}\n"
        )
    };
    let e = refusal(&model_scenario(&slow("1e308"), "", 0));
    assert!(e.contains("fault[0].factor") && e.contains("at most 1000"), "{e}");
    // The bound itself is accepted, and a strong but bounded slowdown runs to its end.
    model(&model_scenario(&slow("1000"), "", 0));
    let m = one(&model_scenario(&slow("10"), "", 0));
    assert_eq!(m["run_latency_ms.max"], 500.0 + 300.0 * 20.0 * 10.0);
    let latency = |field: &str| {
        format!("[[fault]]\nkind = \"latency\"\ntarget = \"llm\"\nstart_s = 10\nduration_s = 20\n{field}\n")
    };
    for (field, named) in [
        ("factor = 1e6", "fault[0].factor"),
        ("latency_ms = 1e300", "fault[0].latency_ms"),
        ("jitter_ms = 1e300", "fault[0].jitter_ms"),
    ] {
        let e = refusal(&model_scenario(&latency(field), "", 0));
        assert!(e.contains(named) && e.contains("at most"), "{field}: {e}");
    }
    // Costs: a dependency's and a validator's, whose sums over a run must stay finite.
    let costly = tool_scenario("", TWO_POLICIES).replacen("cost_units = 1\n", "cost_units = 1e300\n", 1);
    let e = refusal(&costly);
    assert!(e.contains(".cost_units") && e.contains("at most"), "{e}");
    let e = refusal(&tool_scenario("", &TWO_POLICIES.replace("cost_units = 0.25", "cost_units = 1e300")));
    assert!(e.contains("validator.cost_units") && e.contains("1000000000"), "{e}");
}
