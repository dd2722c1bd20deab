//! Token-shaped model calls observed from outside: latency is time to first token (growing
//! with the prompt) plus output tokens times time per output token, exactly, when nothing
//! waits; a tokens-per-minute bucket admits its limit under overload; a request larger than
//! the context window fails as invalid input and is not retried; output past the maximum is
//! cut and counted; money is tokens times prices; token counts are the same under every
//! policy (common random numbers); and the file's checks.

mod common;
use common::{metric, model, replicate};
use faultline::engine::simulate;
use faultline::metrics::MetricMap;
use faultline::scenario::{Format, Source, parse_source};

/// One model with 100 servers and one chat step; `tokens` is appended to
/// `[dependency.tokens]`, `step` to the step, `policy` to the policy.
fn scenario(rate_per_s: f64, duration_s: u32, tokens: &str, step: &str, policy: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = {duration_s}
warmup_s = 0
seed = 3
replications = 2

[[dependency]]
name = "llm"
servers = 100
max_context_tokens = 8000

[dependency.tokens]
time_to_first_token = {{ dist = "constant", value_ms = 400 }}
ttft_ms_per_1k_input_tokens = 50
time_per_output_token = {{ dist = "constant", value_ms = 20 }}
price_per_million_input_tokens = 3
price_per_million_output_tokens = 15
{tokens}

[[workflow]]
name = "chat"
arrivals = {{ rate_per_s = {rate_per_s} }}
deadline_ms = 600000

  [[workflow.step]]
  id = "answer"
  dependency = "llm"
  {step}

[policy.plain]
timeout_ms = 300000
{policy}
"#
    )
}

const CONSTANT: &str = r#"input_tokens = { dist = "constant", value = 2000 }
  output_tokens = { dist = "constant", value = 300 }"#;

fn one(toml: &str) -> MetricMap {
    let m = model(toml);
    simulate(&m, 0, 11).unwrap_or_else(|e| panic!("{e}")).metrics
}

#[test]
fn latency_is_ttft_plus_prefill_plus_output_times_time_per_token_and_money_is_tokens_times_prices() {
    let m = one(&scenario(1.0, 200, "", CONSTANT, ""));
    // 400 + 2 x 50 + 300 x 20 ms, with no contention (100 servers, 1 call a second).
    assert_eq!(m["run_latency_ms.mean"], 6500.0);
    assert_eq!(m["run_latency_ms.max"], 6500.0);
    let calls = m["gen_ai.client.calls_served_total"];
    assert!(calls > 150.0, "{calls}");
    assert_eq!(m["gen_ai.client.token.usage.input_total"], 2000.0 * calls);
    assert_eq!(m["gen_ai.client.token.usage.output_total"], 300.0 * calls);
    // 2000 x 3e-6 + 300 x 15e-6 = 0.0105 a call.
    assert!((m["cost_money_total"] - 0.0105 * calls).abs() < 1e-9, "{}", m["cost_money_total"]);
    assert!((m["cost_money_per_success"] - 0.0105).abs() < 1e-12, "{}", m["cost_money_per_success"]);
    assert_eq!(m["dependency.llm.input_tokens_total"], 2000.0 * calls);
    assert_eq!(m["gen_ai.response.finish_reasons.length_total"], 0.0);
    // The first chunk comes after 400 + 2 x 50 ms, nobody waiting.
    assert_eq!(m["gen_ai.client.time_to_first_chunk_ms.mean"], 500.0);
    assert!((m["gen_ai.client.time_to_first_chunk_ms.p95"] - 500.0).abs() <= 0.5, "3 significant figures");
    // And the last after the whole call: OpenTelemetry's gen_ai.client.operation.duration.
    assert_eq!(m["gen_ai.client.operation.duration_ms.mean"], 6500.0);
    assert!((m["gen_ai.client.operation.duration_ms.p95"] - 6500.0).abs() <= 6.5, "3 significant figures");
}

#[test]
fn output_past_max_output_tokens_is_cut_counted_and_served_in_its_time() {
    let m = one(&scenario(1.0, 200, "max_output_tokens = 256", CONSTANT, ""));
    // 400 + 100 + 256 x 20 ms.
    assert_eq!(m["run_latency_ms.max"], 5620.0);
    assert_eq!(m["gen_ai.response.finish_reasons.length_total"], m["gen_ai.client.calls_served_total"]);
    assert_eq!(m["gen_ai.client.token.usage.output_total"], 256.0 * m["gen_ai.client.calls_served_total"]);
}

/// 4 calls a second of 500 tokens against 60 000 tokens a minute (1 000 a second): twice the
/// quota. Without retries, what passes is the bucket's first minute plus its refill.
#[test]
fn under_overload_a_tokens_per_minute_quota_admits_its_limit_within_one_percent() {
    let step = r#"input_tokens = { dist = "constant", value = 400 }
  output_tokens = { dist = "constant", value = 100 }"#;
    let toml = scenario(4.0, 3000, "tokens_per_minute = 60000", step, "");
    let m = model(&toml);
    for reps in [replicate(&m, 0)] {
        for r in &reps {
            let admitted = r["gen_ai.client.token.usage.input_total"] + r["gen_ai.client.token.usage.output_total"];
            let limit = 60_000.0 + 1_000.0 * 3_000.0;
            assert!((admitted - limit).abs() <= 0.01 * limit, "{admitted} tokens against the limit {limit}");
            assert!(admitted <= limit + 500.0, "never more than the bucket allows: {admitted}");
            // The rest were refused with 429 (rate limited), each a failed run.
            assert!(r["outcome_total.failed"] > 0.4 * r["logical_run_total"], "{}", r["outcome_total.failed"]);
        }
    }
}

/// A refusal carries the bucket's retry-after (the wait until it holds the request): a policy
/// that honours it retries into the refilled bucket. At 1.5 times the quota, the retries wait
/// and pass, refusals bill nothing, and what passes is still the quota.
#[test]
fn retries_that_honour_the_buckets_retry_after_pass_once_it_refills() {
    let step = r#"input_tokens = { dist = "constant", value = 400 }
  output_tokens = { dist = "constant", value = 100 }"#;
    let policy = "retry = { max_attempts = 20, honor_retry_after = true, backoff = { kind = \"none\" } }";
    let m = one(&scenario(1.5, 2000, "tokens_per_minute = 30000", step, policy));
    let admitted = m["gen_ai.client.token.usage.input_total"] + m["gen_ai.client.token.usage.output_total"];
    // Retries go on after the arrivals stop (until their runs' deadlines), so the quota's
    // refill runs a few seconds longer than the 2 000 s of arrivals: within 1 %.
    let limit = 30_000.0 + 500.0 * 2000.0;
    assert!((admitted - limit).abs() <= 0.01 * limit, "{admitted} against {limit}");
    // Every served call is a success: the refused attempts cost no tokens and no money.
    assert_eq!(m["gen_ai.client.calls_served_total"] * 500.0, admitted);
    assert_eq!(m["outcome_total.succeeded"], m["gen_ai.client.calls_served_total"]);
    // The retries waited the bucket's retry-after: most got in on a later attempt.
    assert!(m["retry_amplification_ratio"] > 1.3, "{}", m["retry_amplification_ratio"]);
    let without = one(&scenario(1.5, 2000, "tokens_per_minute = 30000", step, ""));
    assert!(m["outcome_total.succeeded"] > without["outcome_total.succeeded"], "waiting helps");
}

#[test]
fn a_prompt_larger_than_the_context_window_fails_as_invalid_input_and_is_not_retried() {
    let step = r#"input_tokens = { dist = "constant", value = 9000 }
  output_tokens = { dist = "constant", value = 10 }"#;
    let policy = "retry = { max_attempts = 5 }";
    let m = one(&scenario(1.0, 200, "", step, policy));
    assert_eq!(m["context_window_exceeded_total"], m["logical_run_total"]);
    assert_eq!(m["retry_amplification_ratio"], 1.0, "invalid input is never retried");
    assert_eq!(m["outcome_total.failed"], m["logical_run_total"]);
    assert_eq!(m["gen_ai.client.calls_served_total"], 0.0, "nothing was served, nothing billed");
    assert_eq!(m["cost_money_total"], 0.0);
}

/// Token counts come from the run and the step, not the attempt: two policies that differ
/// only in their timeouts see the same counts on the same seeds.
#[test]
fn token_counts_are_common_random_numbers_across_policies() {
    let step = r#"input_tokens = { p50 = 2000, p95 = 6000 }
  output_tokens = { p50 = 200, p95 = 900 }"#;
    let mut toml = scenario(2.0, 300, "", step, "");
    toml.push_str("\n[policy.other]\ntimeout_ms = 200000\n");
    let m = model(&toml);
    let (a, b) = (replicate(&m, 0), replicate(&m, 1));
    for name in ["gen_ai.client.token.usage.input_total", "gen_ai.client.token.usage.output_total"] {
        assert_eq!(metric(&a, name).mean, metric(&b, name).mean, "{name}");
    }
    // And they are drawn: lognormal counts, not constants.
    let calls = a[0]["gen_ai.client.calls_served_total"];
    let mean_input = a[0]["gen_ai.client.token.usage.input_total"] / calls;
    assert!(mean_input > 2000.0 && mean_input < 4000.0, "{mean_input}");
}

#[test]
fn a_remote_agent_calling_the_same_model_shares_its_quota() {
    // The agent's own calls use the model's default counts and its bucket.
    let toml = format!(
        "{}\n{}",
        scenario(
            1.0,
            600,
            "tokens_per_minute = 30000\ninput_tokens = { dist = \"constant\", value = 400 }\noutput_tokens = { dist = \"constant\", value = 100 }",
            "",
            ""
        )
        .replace("dependency = \"llm\"\n  \n", "dependency = \"agent\"\n"),
        r#"
[[dependency]]
name = "agent"
servers = 100
service_time = { dist = "constant", value_ms = 10 }
calls = [{ dependency = "llm", count = 2, max_attempts = 1, timeout_ms = 60000 }]
"#
    );
    let m = one(&toml);
    // 2 calls of 500 tokens a second against 500 a second: about half pass.
    let admitted = m["gen_ai.client.token.usage.input_total"] + m["gen_ai.client.token.usage.output_total"];
    let limit = 30_000.0 + 500.0 * 600.0;
    assert!(admitted <= limit + 500.0 && admitted > 0.95 * limit, "{admitted} against {limit}");
}

fn rejection(toml: &str) -> String {
    let source = Source::from_text("t.toml", toml, Format::Toml);
    let scenario = parse_source(&source).unwrap_or_else(|e| panic!("{e}"));
    match faultline::engine::Model::compile(&scenario, &source) {
        Ok(_) => panic!("compiled"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_files_token_tables_are_checked() {
    // A step at a token-shaped model without counts, and the model without defaults.
    let e = rejection(&scenario(1.0, 10, "", "", ""));
    assert!(e.contains("needs its input_tokens"), "{e}");
    // A dependency needs a service time or a token shape.
    let e = rejection(&scenario(1.0, 10, "", CONSTANT, "").replace(
        "max_context_tokens = 8000",
        "max_context_tokens = 8000\n\n[[dependency]]\nname = \"api\"\nservers = 1\n",
    ));
    assert!(e.contains("missing field `service_time`"), "{e}");
    let e = rejection(&scenario(1.0, 10, "tokens_per_minute = 0", CONSTANT, ""));
    assert!(e.contains("dependency[0].tokens.tokens_per_minute") && e.contains("> 0"), "{e}");
    let e = rejection(&scenario(1.0, 10, "cache_hit_ratio = 2", CONSTANT, ""));
    assert!(e.contains("cache_hit_ratio") && e.contains("[0, 1]"), "{e}");
    // `context_tokens` is read as the older name of input_tokens.
    let older = scenario(1.0, 100, "", &CONSTANT.replace("input_tokens", "context_tokens"), "");
    assert_eq!(one(&older)["run_latency_ms.max"], 6500.0);
}

/// The deadline arithmetic's typical attempt at a token-shaped model (the default
/// predicted_attempt_ms that the retry-fits check and admission read) is a call of median
/// counts and times: here 400 + 2 x 50 + 300 x 20 ms, not 0 for a model without service_time.
#[test]
fn the_predicted_attempt_at_a_token_shaped_model_is_a_call_of_medians() {
    let m = model(&scenario(1.0, 10, "", CONSTANT, ""));
    assert_eq!(m.policies[0].steps[0][0].predicted_attempt_us, 6_500_000);
    // Cut at max_output_tokens like the calls themselves: 400 + 100 + 256 x 20.
    let m = model(&scenario(1.0, 10, "max_output_tokens = 256", CONSTANT, ""));
    assert_eq!(m.policies[0].steps[0][0].predicted_attempt_us, 5_620_000);
}

/// A replayed run's model attempt carries the OpenTelemetry GenAI client attributes, read back
/// with the official OTLP types: the model, the usage by token type and the finish reason.
#[test]
fn a_replayed_model_call_carries_the_gen_ai_usage_attributes() {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    let dir = std::env::temp_dir().join(format!("faultline-tokens-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (file, out) = (dir.join("t.toml"), dir.join("trace.json"));
    std::fs::write(&file, scenario(1.0, 100, "max_output_tokens = 256", CONSTANT, "")).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["replay", file.to_str().unwrap(), "-p", "plain", "--run", "3", "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let request: ExportTraceServiceRequest = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let spans = &request.resource_spans[0].scope_spans[0].spans;
    let attempt = spans.iter().find(|s| s.name.starts_with("dependency.attempt llm")).expect("the model attempt");
    let value = |key: &str| {
        attempt.attributes.iter().find(|kv| kv.key == key).and_then(|kv| kv.value.clone()).and_then(|v| v.value)
    };
    assert_eq!(value("gen_ai.request.model"), Some(Any::StringValue("llm".into())));
    assert_eq!(value("gen_ai.usage.input_tokens"), Some(Any::IntValue(2000)));
    assert_eq!(value("gen_ai.usage.output_tokens"), Some(Any::IntValue(256)));
    let Some(Any::ArrayValue(reasons)) = value("gen_ai.response.finish_reasons") else { panic!("no finish reasons") };
    assert_eq!(reasons.values.len(), 1);
    assert_eq!(reasons.values[0].value, Some(Any::StringValue("length".into())));
    // 400 + 100 + 256 x 20 ms of service, the whole attempt.
    assert_eq!(attempt.end_time_unix_nano - attempt.start_time_unix_nano, 5_620_000_000);
}

/// A streaming caller's first-token timeout apart from the total: the first token comes at
/// 400 + 2 x 50 = 500 ms after service starts. At 300 ms every attempt gives up on its first
/// token; at 600 ms none does and the call takes its 6 500 ms; at 600 ms with a total timeout
/// of 3 000 ms the first token comes and the total ends the attempt.
#[test]
fn a_first_token_timeout_is_apart_from_the_total_timeout() {
    let early = one(&scenario(1.0, 200, "", CONSTANT, "first_token_timeout_ms = 300\nretry = { max_attempts = 1 }"));
    assert_eq!(early["first_token_timeout_total"], early["dependency_attempt_total"]);
    assert_eq!(early["outcome_total.failed"], early["logical_run_total"]);
    assert_eq!(early["run_latency_ms.max"], 300.0, "the caller gave up at 300 ms");

    let in_time = one(&scenario(1.0, 200, "", CONSTANT, "first_token_timeout_ms = 600"));
    assert_eq!(in_time["first_token_timeout_total"], 0.0);
    assert_eq!(in_time["run_latency_ms.max"], 6500.0);
    assert_eq!(in_time["outcome_total.failed"], 0.0);

    let total = one(&scenario(1.0, 200, "", CONSTANT, "first_token_timeout_ms = 600\nretry = { max_attempts = 1 }")
        .replace("timeout_ms = 300000", "timeout_ms = 3000"));
    assert_eq!(total["first_token_timeout_total"], 0.0);
    assert_eq!(total["run_latency_ms.max"], 3000.0, "the total timeout ended it");
    assert_eq!(total["outcome_total.failed"], total["logical_run_total"]);

    // A hung call never shows its first token: the caller gives up at 600 ms, not at the total.
    let hung = one(&scenario(1.0, 30, "", CONSTANT, "first_token_timeout_ms = 600\nretry = { max_attempts = 1 }")
        .replace("max_context_tokens = 8000", "max_context_tokens = 8000\nhang_probability = 1"));
    assert_eq!(hung["first_token_timeout_total"], hung["dependency_attempt_total"]);
    assert_eq!(hung["run_latency_ms.max"], 600.0);
    // Waiting in the queue counts: one server, a call every second, each holding it 6.5 s.
    let queued =
        one(&scenario(1.0, 30, "", CONSTANT, "first_token_timeout_ms = 600").replace("servers = 100", "servers = 1"));
    assert!(queued["first_token_timeout_total"] > 0.5 * queued["logical_run_total"], "{queued:?}");
    // The calls the model served (abandoned ones too) waited: their first chunk came late.
    assert!(queued["gen_ai.client.time_to_first_chunk_ms.p95"] > 600.0, "{queued:?}");

    // Only a token-shaped model has a first token.
    let toml = scenario(1.0, 10, "", CONSTANT, "")
        + "\n[[dependency]]\nname = \"api\"\nservers = 1\nservice_time = { dist = \"constant\", value_ms = 5 }\n"
        + "\n[policy.plain.steps.answer]\nfirst_token_timeout_ms = 100\n";
    let e = rejection(&toml.replace("dependency = \"llm\"\n  input", "dependency = \"api\"\n  input"));
    assert!(e.contains("steps.answer.first_token_timeout_ms") && e.contains("token-shaped"), "{e}");
}

/// A long-running task whose runner is a token-shaped model does the step's own call: the
/// work is billed the step's counts and takes their time.
#[test]
fn a_task_run_by_a_token_shaped_model_uses_the_steps_counts() {
    let toml = scenario(0.5, 200, "", CONSTANT, "")
        .replace("dependency = \"llm\"\n  input", "dependency = \"agent\"\n  input")
        + r#"
[[dependency]]
name = "agent"
servers = 8
service_time = { dist = "constant", value_ms = 10 }
task = { runner = "llm", poll_interval_ms = 1000 }
"#;
    let m = one(&toml);
    let calls = m["gen_ai.client.calls_served_total"];
    assert!(calls > 50.0, "{calls}");
    assert_eq!(m["gen_ai.client.token.usage.input_total"], 2000.0 * calls);
    assert_eq!(m["gen_ai.client.token.usage.output_total"], 300.0 * calls);
    assert_eq!(m["gen_ai.client.time_to_first_chunk_ms.mean"], 500.0);
}

/// A cost budget in model tokens or money stops retries where the next call would pass it.
/// Every call fails (transient transport errors) and a policy would try 4 times: each call of
/// 2 000 input and 300 output tokens costs 2 300 tokens and 0.0105 in money.
#[test]
fn a_budget_in_model_tokens_or_money_stops_the_calls_that_would_pass_it() {
    let failing = scenario(1.0, 200, "", CONSTANT, "retry = { max_attempts = 4, backoff = { kind = \"none\" } }")
        .replace("max_context_tokens = 8000", "max_context_tokens = 8000\nerrors = { transient_transport = 1.0 }");
    let attempts = |budget: &str| {
        let m = one(&failing.replace("[policy.plain]", &format!("[policy.plain]\nbudget = {{ {budget} }}")));
        let runs = m["logical_run_total"];
        (m["dependency.llm.attempt_total"] / runs, m["budget_exhausted_total.cost"] / runs, m)
    };
    let (unlimited, exhausted, _) = attempts("retry_tokens = 10");
    assert_eq!((unlimited, exhausted), (4.0, 0.0));
    // 7 000 tokens hold 3 calls (6 900); the fourth is refused by the budget.
    let (by_tokens, exhausted, _) = attempts("model_tokens = 7000");
    assert_eq!((by_tokens, exhausted), (3.0, 1.0));
    // 0.025 in money holds 2 calls (0.021).
    let (by_money, exhausted, m) = attempts("money = 0.025");
    assert_eq!((by_money, exhausted), (2.0, 1.0));
    assert!((m["cost_money_total"] / m["logical_run_total"] - 0.021).abs() < 1e-9);
    // Exactly at the limit is allowed: 0.0315 holds 3 calls.
    assert_eq!(attempts("money = 0.0315").0, 3.0);
}
