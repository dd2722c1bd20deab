//! SDK clients inside the caller (runtime::sdk_client, docs/scenario.md 8.18), shown from
//! outside: scenario runs whose figures follow the closed forms of independent retries, the
//! backoff's range, the Retry-After cap, and the incident unchanged by an SDK that never retries.

mod common;

use common::{assert_in_ci, metric, metric_bits, model, replicate};
use faultline::engine::{simulate, simulate_traced};
use faultline::runtime::AttemptTrace;
use std::collections::BTreeMap;
use std::process::Command;

/// One step at a dependency whose attempts fail independently with probability `p` after a
/// constant 100 ms, no runtime retry and no runtime timeout: every extra attempt is the SDK's.
fn independent(p: f64, sdk: &str, budget: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 1500
warmup_s = 0
seed = 11
replications = 10

[[dependency]]
name = "model"
servers = 1000
queue_capacity = 1000
service_time = {{ dist = "constant", value_ms = 100 }}
errors = {{ transient_transport = {p} }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 20 }}
deadline_ms = 600000

  [[workflow.step]]
  id = "call"
  dependency = "model"

[policy.p]
timeout_ms = 0
retry = {{ max_attempts = 1 }}
{budget}

[policy.p.sdk_client.model]
{sdk}
"#
    )
}

/// Failure share p^(k+1) and attempts per call (1 - p^(k+1)) / (1 - p) with k retries, checked
/// in the confidence interval of 10 replications (family-wise over the test's checks).
fn check_closed_forms(label: &str, toml: &str, p: f64, k: i32, checks: usize) -> Vec<faultline::metrics::MetricMap> {
    let reps = replicate(&model(toml), 0);
    let failed: Vec<_> = reps
        .iter()
        .map(|m| {
            let mut m = m.clone();
            let share = m["outcome_total.failed"] / m["logical_run_total"];
            m.insert("failed_share".into(), share);
            m
        })
        .collect();
    assert_in_ci(&format!("{label} failure share"), &metric(&failed, "failed_share"), p.powi(k + 1), checks);
    let mean_attempts = (1.0 - p.powi(k + 1)) / (1.0 - p);
    assert_in_ci(
        &format!("{label} attempts per call"),
        &metric(&reps, "retry_amplification_ratio"),
        mean_attempts,
        checks,
    );
    reps
}

#[test]
fn hidden_retries_follow_the_closed_forms_of_independent_failures() {
    let p = 0.3;
    // Two SDK retries: p^3 of calls fail, 1 + p + p^2 attempts per call.
    let reps = check_closed_forms("r=2", &independent(p, "max_retries = 2", ""), p, 2, 6);
    for m in &reps {
        // The runtime saw one attempt per call; everything else was hidden.
        assert_eq!(m["runtime_retry_amplification_ratio"], 1.0);
        assert_eq!(m["hidden_attempt_total"], m["dependency_attempt_total"] - m["logical_call_total"]);
        assert_eq!(m["dependency.model.hidden_attempt_total"], m["hidden_attempt_total"]);
    }
    // Four retries, no jitter (Portkey's shape): p^5 and 1 + p + ... + p^4.
    check_closed_forms("r=4", &independent(p, "max_retries = 4\njitter = 0", ""), p, 4, 6);
    // Charged to a root budget of 1 retry token: the SDK's second retry is refused, so the
    // closed forms are those of one retry, and each refusal is a budget_exhausted_total.retry.
    let charged = independent(p, "max_retries = 2\ncharged_to_root_budget = true", "budget = { retry_tokens = 1 }");
    let reps = check_closed_forms("charged, 1 token", &charged, p, 1, 6);
    for m in &reps {
        // Calls whose two attempts failed asked for a second retry: p^2 of them, all refused.
        assert_eq!(m["budget_exhausted_total.retry"], m["outcome_total.failed"]);
    }
}

/// Attempts of each run (one step, no runtime retry) in order of arrival.
fn attempts_by_run(traces: &[AttemptTrace]) -> Vec<Vec<u64>> {
    let mut runs: BTreeMap<(u32, u8), Vec<u64>> = BTreeMap::new();
    for t in traces {
        runs.entry((t.arrival, t.resubmission)).or_default().push(t.at_us);
    }
    runs.into_values()
        .map(|mut v| {
            v.sort_unstable();
            v
        })
        .collect()
}

/// The sleeps before retry 1 and retry 2, given each answer comes `answer_us` after its attempt.
fn sleeps(traces: &[AttemptTrace], answer_us: u64) -> [Vec<u64>; 2] {
    let mut out = [Vec::new(), Vec::new()];
    for at in attempts_by_run(traces) {
        for n in 1..at.len().min(3) {
            out[n - 1].push(at[n] - at[n - 1] - answer_us);
        }
    }
    out
}

#[test]
fn backoff_sleeps_fill_the_stainless_range() {
    // openai-python's defaults: retry n sleeps min(0.5 s x 2^n, 8 s) x (1 - 0.25 U).
    let m = model(&independent(0.5, "", ""));
    let (_, traces) = simulate_traced(&m, 0, 3).unwrap();
    let [first, second] = sleeps(&traces, 100_000);
    for (label, sleeps, cap) in [("retry 1", &first, 500_000u64), ("retry 2", &second, 1_000_000)] {
        assert!(sleeps.len() > 1000, "{label}: {} sleeps", sleeps.len());
        let (min, max) = (*sleeps.iter().min().unwrap(), *sleeps.iter().max().unwrap());
        eprintln!("{label}: {} sleeps in [{min}, {max}] us, formula [{}, {cap}]", sleeps.len(), cap * 3 / 4);
        assert!(min >= cap * 3 / 4 && max <= cap, "{label}: [{min}, {max}] outside [{}, {cap}]", cap * 3 / 4);
        // Thousands of uniform draws reach within 0.5 % of both ends.
        assert!(
            min < cap * 3 / 4 + cap / 200 && max > cap - cap / 200,
            "{label}: [{min}, {max}] does not fill the range"
        );
    }
}

/// Arrivals at 10/s at a dependency that admits 5/s and refuses the rest at once with
/// RATE_LIMITED and `retry_after_ms`.
fn rate_limited(retry_after_ms: u64, sdk: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 600
warmup_s = 0
seed = 5
replications = 2

[[dependency]]
name = "model"
servers = 1000
queue_capacity = 1000
service_time = {{ dist = "constant", value_ms = 100 }}
rate_limit = {{ per_s = 5, burst = 5, retry_after_ms = {retry_after_ms} }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 10 }}
deadline_ms = 1000000

  [[workflow.step]]
  id = "call"
  dependency = "model"

[policy.p]
timeout_ms = 0
retry = {{ max_attempts = 1 }}

[policy.p.sdk_client.model]
{sdk}
"#
    )
}

#[test]
fn retry_after_is_slept_exactly_up_to_its_cap_then_refused_backed_off_or_slept() {
    // Within the 120 s cap: every hidden retry comes exactly 3 s after its refusal.
    let (r, traces) = simulate_traced(&model(&rate_limited(3000, "")), 0, 1).unwrap();
    let [first, second] = sleeps(&traces, 0);
    assert!(!first.is_empty() && !second.is_empty());
    assert!(first.iter().chain(&second).all(|&s| s == 3_000_000), "{:?}", &first[..first.len().min(5)]);
    assert!(r.metrics["hidden_attempt_total"] > 0.0);
    // Beyond it, openai-python gives up at once: refusals, and no hidden attempt.
    let r = simulate(&model(&rate_limited(130_000, "")), 0, 1).unwrap();
    assert!(r.metrics["dependency.model.error_total.rate_limited"] > 100.0);
    assert_eq!(r.metrics["hidden_attempt_total"], 0.0);
    // An SDK that backs off instead sleeps its own backoff...
    let (_, traces) =
        simulate_traced(&model(&rate_limited(130_000, "retry_after_over_max = \"backoff\"")), 0, 1).unwrap();
    let [first, _] = sleeps(&traces, 0);
    assert!(!first.is_empty() && first.iter().all(|&s| (375_000..=500_000).contains(&s)));
    // ...and one that sleeps any value (anthropic as measured) waits the full 130 s.
    let (_, traces) =
        simulate_traced(&model(&rate_limited(130_000, "retry_after_over_max = \"sleep\"")), 0, 1).unwrap();
    let [first, _] = sleeps(&traces, 0);
    assert!(!first.is_empty() && first.iter().all(|&s| s == 130_000_000));
    // Ignored: the backoff, whatever the header says.
    let (_, traces) = simulate_traced(&model(&rate_limited(3000, "retry_after = \"ignore\"")), 0, 1).unwrap();
    let [first, _] = sleeps(&traces, 0);
    assert!(!first.is_empty() && first.iter().all(|&s| (375_000..=500_000).contains(&s)));
}

#[test]
fn presets_fill_the_fields_the_table_leaves_and_yield_to_those_it_sets() {
    // A Retry-After of 130 s: openai-python 3.63.0 refuses it, anthropic-sdk-python 2.17.0
    // sleeps it in full (its cap is 4 294 967 s).
    let r = simulate(&model(&rate_limited(130_000, "preset = \"openai-python\"")), 0, 1).unwrap();
    assert_eq!(r.metrics["hidden_attempt_total"], 0.0);
    let (r, traces) =
        simulate_traced(&model(&rate_limited(130_000, "preset = \"anthropic-sdk-python\"")), 0, 1).unwrap();
    assert!(r.metrics["hidden_attempt_total"] > 0.0);
    let [first, _] = sleeps(&traces, 0);
    assert!(!first.is_empty() && first.iter().all(|&s| s == 130_000_000));
    // A field the table sets wins over the preset's.
    let sdk = "preset = \"anthropic-sdk-python\"\nretry_after_max_ms = 60000\nretry_after_over_max = \"backoff\"";
    let (_, traces) = simulate_traced(&model(&rate_limited(130_000, sdk)), 0, 1).unwrap();
    let [first, _] = sleeps(&traces, 0);
    assert!(!first.is_empty() && first.iter().all(|&s| (375_000..=500_000).contains(&s)));
    // openai-python's preset is faultline's defaults: the same run, bit for bit.
    let plain = simulate(&model(&rate_limited(3000, "")), 0, 1).unwrap().metrics;
    let preset = simulate(&model(&rate_limited(3000, "preset = \"openai-python\"")), 0, 1).unwrap().metrics;
    assert_eq!(metric_bits(&plain), metric_bits(&preset));
}

#[test]
fn an_sdk_that_never_retries_leaves_the_incident_as_it_was() {
    let root = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(format!("{root}/scenarios/meeting-analysis-incident.toml")).unwrap();
    let off = format!(
        "{text}\n[policy.naive.sdk_client.model-primary]\nmax_retries = 0\n\n[policy.resilient.sdk_client.model-primary]\nmax_retries = 0\n"
    );
    let (plain, through_sdk) = (model(&text), model(&off));
    for policy in 0..2 {
        let a = simulate(&plain, policy, 7).unwrap().metrics;
        let mut b = simulate(&through_sdk, policy, 7).unwrap().metrics;
        assert_eq!(b.remove("hidden_attempt_total"), Some(0.0));
        assert_eq!(b.remove("incident.hidden_attempt_total"), Some(0.0));
        assert_eq!(
            b.remove("runtime_retry_amplification_ratio").map(f64::to_bits),
            Some(a["retry_amplification_ratio"].to_bits())
        );
        b.remove("incident.runtime_retry_amplification_ratio");
        b.retain(|k, _| !k.ends_with(".hidden_attempt_total"));
        assert_eq!(metric_bits(&a), metric_bits(&b), "policy {policy}");
    }
}

#[test]
fn a_bad_sdk_client_table_is_an_error_at_its_field() {
    let dir = std::env::temp_dir().join(format!("faultline-sdk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        ("[policy.p.sdk_client.model]\njitter = 1.5\n", "jitter"),
        ("[policy.p.sdk_client.nowhere]\n", "nowhere"),
        ("[policy.p.sdk_client.model]\nretry_on = [\"rate_limited\", \"teapot\"]\n", "retry_on[1]"),
        ("[policy.p.sdk_client.model]\nretry_after_over_max = \"maybe\"\n", "retry_after_over_max"),
        ("[policy.p.sdk_client.model]\nmax_retry = 3\n", "max_retry"),
        // Review S13: the message names both values, the one the user set included.
        ("[policy.p.sdk_client.model]\ninitial_delay_ms = 9000\n", "initial_delay_ms 9000 ms"),
        // Review recheck N8/B3: a huge delay is named as written, not as a saturated count.
        (
            "[policy.p.sdk_client.model]\ninitial_delay_ms = 1e300\n",
            "initial_delay_ms: 1e300 ms is more than 3600000 ms",
        ),
        ("[policy.p.sdk_client.model]\nmax_delay_ms = 1e308\n", "max_delay_ms: 1e308 ms is more than 3600000 ms"),
        (
            "[policy.p.sdk_client.model]\npreset = \"openai-node\"\n",
            "preset: unknown preset `openai-node`; known presets: openai-python, anthropic-sdk-python, botocore-standard",
        ),
        ("[policy.p.sdk_client.model]\nretry_cost = 3\n", "retry_cost: applies only to a client with a retry quota"),
        (
            "[policy.p.sdk_client.model]\npreset = \"botocore-standard\"\nthrottling_initial_delay_ms = 30000\n",
            "throttling_initial_delay_ms: must be at most max_delay_ms (20000 ms)",
        ),
        ("[policy.p.sdk_client.model]\nretry_after = \"later\"\n", "retry_after"),
    ];
    for (i, (table, field)) in cases.iter().enumerate() {
        let text = independent(0.1, "", "").replace("[policy.p.sdk_client.model]\n", table);
        let path = dir.join(format!("bad-{i}.toml"));
        std::fs::write(&path, text).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_faultline")).args(["run", path.to_str().unwrap()]).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{table}: {err}");
        assert!(err.contains(field) && err.contains(&format!("bad-{i}.toml:")), "{table}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn data(name: &str) -> faultline::engine::Model {
    let root = env!("CARGO_MANIFEST_DIR");
    model(&std::fs::read_to_string(format!("{root}/tests/data/{name}")).unwrap())
}

/// Runs policy `name` of the model (policies are held in name order, not the file's).
fn run_policy(m: &faultline::engine::Model, name: &str, seed: u64) -> faultline::metrics::MetricMap {
    let p = m.policies.iter().position(|p| p.name == name).unwrap_or_else(|| panic!("no policy {name}"));
    simulate(m, p, seed).unwrap().metrics
}

#[test]
fn a_charged_client_pays_no_token_for_a_retry_the_runtime_timeout_would_cut() {
    // Review S1: the SDK's sleep (0.75-1 s) always outlasts the runtime's 500 ms timeout. Before
    // the fix the charged client took the run's only token for that retry, never sent, and the
    // runtime's own retry was refused: 2 931 attempts (one per run), 2 931 refusals. Now the
    // client answers at once and the runtime retries: two attempts a run, as without charging.
    let m = data("sdk-token-cut.toml");
    let charged = run_policy(&m, "charged", 3);
    let nosdk = run_policy(&m, "nosdk", 3);
    let runs = charged["logical_run_total"];
    assert!(runs > 2500.0, "{runs}");
    assert_eq!(charged["hidden_attempt_total"], 0.0);
    assert_eq!(charged["dependency_attempt_total"], 2.0 * runs);
    assert_eq!(charged["dependency_attempt_total"], nosdk["dependency_attempt_total"]);
    // The second call's hidden retry is refused too: never for a token, and nothing waits.
    assert_eq!(charged["budget_exhausted_total.retry"], 0.0);
    assert!(charged["run_latency_ms.max"] < 300.0, "{}", charged["run_latency_ms.max"]);
}

#[test]
fn a_charged_retry_never_sent_gives_its_token_back() {
    // Review S1, 8.3's rule: a token pays only for an attempt that is sent. Step a's first SDK
    // call fails at 100 ms and sleeps 0.75-1 s on a charged token; its hedge (150 ms, the
    // run's second token) wins half the time, cancelling the sleeping call. Step b always fails
    // once and wants a runtime retry: with the token back it has one. Of the runs reaching b,
    // b's retry is granted when a's first attempt succeeded (1/2 of all runs) or its hedge won
    // with the token back (1/4): about (1/2 + 1/4) / P(a succeeds). Before the fix: 0.576
    // (3 018 of 5 239), the token of the cancelled call lost.
    let m = data("sdk-token-return-hedge.toml");
    let r = simulate(&m, 0, 3).unwrap().metrics;
    let reached_b = r["logical_run_total"] - r["step.a.failed_total"];
    let granted = (r["dependency.other.attempt_total"] - reached_b) / reached_b;
    eprintln!("b reached {reached_b}, retries granted {granted:.4}");
    assert!(granted > 0.7, "{granted}");
}

#[test]
fn an_sdks_resends_keep_the_runtime_attempts_key_under_per_attempt() {
    // Review S2: with one runtime attempt per call, `per_call` and `per_attempt` put the same
    // single key in the request and the SDK resends that request (openai-python sets
    // `idempotency_key` once and reuses it across its retries), so `api-dedup` deduplicates
    // the SDK's resends under both: only `api`'s count. Before the fix: 1 139 (per_call) and
    // 2 285 (per_attempt), the resends at `api-dedup` counted as fresh keys.
    let m = data("sdk-write-keys.toml");
    let per_call = run_policy(&m, "sdk", 3);
    let per_attempt = run_policy(&m, "sdk_perattempt", 3);
    eprintln!(
        "duplicates: per_call {}, per_attempt {}",
        per_call["duplicate_effect_total"], per_attempt["duplicate_effect_total"]
    );
    assert!(per_attempt["dependency.api-dedup.hidden_attempt_total"] > 500.0);
    assert!(per_call["duplicate_effect_total"] > 500.0);
    assert_eq!(per_attempt["duplicate_effect_total"], per_call["duplicate_effect_total"]);
    assert_eq!(per_attempt["duplicate_effect_run_total"], per_call["duplicate_effect_run_total"]);
}

#[test]
fn the_runtimes_first_token_timeout_cuts_the_sdk_call_and_is_not_retried() {
    // Review S3: an SDK returns at the response's headers; the wait for the first chunk is the
    // streaming caller's, so the runtime's 200 ms first-token timeout ends the whole SDK call
    // and the SDK never retries it. Before the fix each hidden attempt got its own 200 ms and
    // the SDK retried it as its own timeout: 1 782 attempts, 1 188 hidden, money x3.
    let m = data("sdk-first-token.toml");
    let sdk = run_policy(&m, "sdk", 3);
    let nosdk = run_policy(&m, "nosdk", 3);
    assert!(nosdk["first_token_timeout_total"] > 400.0, "{}", nosdk["first_token_timeout_total"]);
    assert_eq!(sdk["hidden_attempt_total"], 0.0);
    for name in ["dependency_attempt_total", "first_token_timeout_total", "cost_money_total", "run_latency_ms.p50"] {
        assert_eq!(sdk[name].to_bits(), nosdk[name].to_bits(), "{name}: {} vs {}", sdk[name], nosdk[name]);
    }
}

#[test]
fn a_charged_clients_retries_pass_the_runs_cost_budget() {
    // Review S9, the essay's "SDK retries in the root budget" (sections 2, 9, 29): a charged
    // client's hidden retry costs the run what the runtime's attempt cost. Every attempt fails
    // and costs 1 unit against a budget of 1.5: the first attempt fits, the SDK's retry does
    // not, nor does the runtime's. Before the fix: 3 attempts a run (cost 3.0 a run), the
    // cost budget refusing only the runtime's retries.
    let m = data("sdk-cost-budget.toml");
    let r = run_policy(&m, "charged", 3);
    let runs = r["logical_run_total"];
    assert!(runs > 500.0, "{runs}");
    assert_eq!(r["hidden_attempt_total"], 0.0);
    assert_eq!(r["cost_units_total"], runs);
    // Each run: the SDK's retry refused, then the runtime's.
    assert_eq!(r["budget_exhausted_total.cost"], 2.0 * runs);
}

#[test]
fn a_zero_initial_delay_never_sleeps_whatever_the_multiplier() {
    // Review S6: 0 x 1e200^4 overflowed to 0 x infinity = NaN, and NaN.min(8 s) is 8 s: runs of
    // 16 284.9 ms. Now every sleep is 0: 5 attempts of 100 ms at most.
    let sdk = "initial_delay_ms = 0\nmultiplier = 1e200\nmax_retries = 4\nmax_delay_ms = 8000";
    let r = simulate(&model(&independent(0.3, sdk, "")), 0, 3).unwrap().metrics;
    assert!(r["hidden_attempt_total"] > 1000.0);
    assert!(r["run_latency_ms.max"] <= 500.5, "{}", r["run_latency_ms.max"]);
}

#[test]
fn an_sdk_timeout_bounds_a_hanging_dependency_without_a_runtime_timeout() {
    // Review S12: no runtime timeout and no propagation, but the SDK's own 600 s timeout ends
    // each of its 3 attempts: the run ends, so the file is accepted (it was refused, "the run
    // would never end"). A hung call lasts 3 x 600 s plus two sleeps of at most 0.5 and 1 s.
    let m = data("sdk-hang.toml");
    let r = simulate(&m, 0, 3).unwrap().metrics;
    assert!(r["hidden_attempt_total"] > 0.0);
    let max = r["run_latency_ms.max"];
    assert!(max > 600_000.0 && max <= 1_801_500.0, "{max}");
    // Without the SDK client's timeout it is refused, as before.
    let root = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(format!("{root}/tests/data/sdk-hang.toml")).unwrap();
    let refused = format!("{text}timeout_ms = 0\n");
    let source = faultline::scenario::Source::from_text("s.toml", &refused, faultline::scenario::Format::Toml);
    let scenario = faultline::scenario::parse_source(&source).unwrap();
    let Err(err) = faultline::engine::Model::compile(&scenario, &source) else { panic!("accepted") };
    let err = err.to_string();
    assert!(err.contains("can hang"), "{err}");
}

#[test]
fn validate_warns_of_an_sdk_client_no_step_calls() {
    // Review S10: an SDK client on a dependency the policy's steps never call (here `spare`;
    // in the incident, the remote agent's runner) was accepted silently and never used.
    let dir = std::env::temp_dir().join(format!("faultline-sdk-unused-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let spare =
        "[[dependency]]\nname = \"spare\"\nservice_time = { dist = \"constant\", value_ms = 10 }\n\n[[workflow]]";
    let text = independent(0.1, "", "").replacen("[[workflow]]", spare, 1) + "\n[policy.p.sdk_client.spare]\n";
    let path = dir.join("unused.toml");
    std::fs::write(&path, text).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_faultline")).args(["validate", path.to_str().unwrap()]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("warning: policy.p.sdk_client.spare: no step calls `spare`"), "{out}");
    assert!(!out.contains("sdk_client.model"), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn calibrate_fits_the_dependency_from_the_sdks_attempts_and_emits_its_client() {
    // Review S7: `calibrate` read the `sdk.attempt` spans as a remote agent's calls and fitted
    // the SDK call instead: errors 37 of 2 000 (the calls' p^3), a p95 of 1 571 ms (the sleeps
    // folded in), no sdk_client. Now the dependency is fitted from the SDK's attempts (30 %
    // fail, 100 ms each) and the policy gets the client with the most retries seen.
    let dir = std::env::temp_dir().join(format!("faultline-sdk-calibrate-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let root = env!("CARGO_MANIFEST_DIR");
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_faultline")).args(args).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let out = dir.join("out");
    let scenario = format!("{root}/tests/data/sdk-calibrate.toml");
    run(&["run", &scenario, "--traces", "2000", "-o", out.to_str().unwrap()]);
    let calibrated = dir.join("cal.toml");
    let traces = out.join("p/traces.otlp.jsonl");
    let report = run(&["calibrate", traces.to_str().unwrap(), "-o", calibrated.to_str().unwrap()]);
    assert!(report.contains("sdk.attempt spans"), "{report}");
    let t: toml::Table = std::fs::read_to_string(&calibrated).unwrap().parse().unwrap();
    let dep = t["dependency"].as_array().unwrap()[0].as_table().unwrap();
    let share = dep["errors"]["transient_transport"].as_float().unwrap();
    // About 2 770 attempts: the share's standard error is under 0.009.
    assert!((share - 0.3).abs() < 0.04, "{share}");
    let client = &t["policy"]["calibrated"]["sdk_client"]["model"];
    assert_eq!(client["max_retries"].as_integer(), Some(2), "{client:?}");
    assert_eq!(t["policy"]["calibrated"]["retry"]["max_attempts"].as_integer(), Some(1));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `timeout_ms = 0` is an SDK without a timeout of its own, as the docs' 0 means everywhere:
/// on calls that never hang it changes nothing against the 600 s default, draw for draw (an
/// SDK that read 0 as "time out at once" would fail every call).
#[test]
fn an_sdk_timeout_of_zero_is_none() {
    let with = |sdk: &str| {
        replicate(&model(&independent(0.1, sdk, "").replace("duration_s = 1500", "duration_s = 100")), 0).swap_remove(0)
    };
    let (none, default) = (with("timeout_ms = 0"), with(""));
    assert!(none["outcome_total.succeeded"] > 1900.0);
    assert_eq!(metric_bits(&none), metric_bits(&default));
}

/// Every attempt fails; the runtime watches for the first token for 2 s from the SDK call's
/// start. The SDK's first retry (after a 375-500 ms sleep) starts inside those 2 s and is sent:
/// only a retry that would start after them is cut in the SDK's sleep (an uncharged client
/// decides its retries alone, so the engine makes that cut).
#[test]
fn an_sdk_retry_that_starts_before_the_first_token_deadline_is_sent() {
    let root = env!("CARGO_MANIFEST_DIR");
    let text = std::fs::read_to_string(format!("{root}/tests/data/sdk-first-token.toml")).unwrap();
    let text = text
        .replace("queue_capacity = 1000\n", "queue_capacity = 1000\nerrors = { transient_transport = 1.0 }\n")
        .replace("first_token_timeout_ms = 200", "first_token_timeout_ms = 2000");
    let m = model(&text);
    let r = run_policy(&m, "sdk", 3);
    let runs = r["logical_run_total"];
    assert!(runs > 500.0, "{runs}");
    assert!(r["hidden_attempt_total"] >= 0.9 * runs, "{} hidden for {runs} runs", r["hidden_attempt_total"]);
}

/// botocore 1.44.18's retry quota, shared by every call of one client (here: the policy's
/// client at the dependency): against a dependency that always fails, the first 35 retries
/// after ordinary errors empty its 500 (14 each) and no call retries after that; after
/// throttling errors (5 each) 100 do. Without the quota every call would retry twice.
#[test]
fn botocores_retry_quota_stops_the_clients_retries_once_spent() {
    let always = |kind: &str, sdk: &str| {
        let text = independent(0.5, sdk, "").replace("transient_transport = 0.5", &format!("{kind} = 1.0"));
        let r = simulate(&model(&text), 0, 1).unwrap().metrics;
        (r["hidden_attempt_total"], r["logical_run_total"])
    };
    let (hidden, calls) = always("transient_transport", "preset = \"botocore-standard\"");
    assert_eq!(hidden, 35.0);
    assert!(calls > 10_000.0);
    assert_eq!(always("rate_limited", "preset = \"botocore-standard\"").0, 100.0);
    assert_eq!(always("overloaded", "preset = \"botocore-standard\"").0, 35.0);
    // A quota the table sizes (botocore's costs): 28 pays two ordinary retries.
    assert_eq!(always("transient_transport", "preset = \"botocore-standard\"\nretry_quota = 28").0, 2.0);
    assert_eq!(always("transient_transport", "retry_quota = 30\nretry_cost = 10").0, 3.0);
    // No quota: two retries per call.
    let (hidden, calls) = always("transient_transport", "");
    assert_eq!(hidden, 2.0 * calls);
}

/// Successes refill the quota, and whether they keep up decides everything. Per call with
/// independent failures p, the quota changes by (1 - p) x 1 (a first-try success) + p (1 - p) x
/// 0 (one retry of 14, given back) - p^2 (1 - p) x 14 - p^3 x 28 (two retries, 14 given back or
/// none): +0.128 at p = 0.2, so the quota stays full and hidden retries follow the closed form of
/// two independent retries; -0.938 at p = 0.3, so it runs dry and calls fail far more often
/// than p^3 = 2.7 % (18.0 % measured over 10 replications; botocore would do the same).
#[test]
fn botocores_quota_refills_on_success_but_not_fast_enough_at_thirty_percent() {
    check_closed_forms("botocore p=0.2", &independent(0.2, "preset = \"botocore-standard\"", ""), 0.2, 2, 4);
    let r = simulate(&model(&independent(0.3, "preset = \"botocore-standard\"", "")), 0, 1).unwrap().metrics;
    let failed = r["outcome_total.failed"] / r["logical_run_total"];
    assert!(failed > 5.0 * 0.027, "p = 0.3: {failed} of calls failed");
}

/// botocore's backoff: full jitter from 50 ms after an ordinary error and from 1 s after a
/// throttling one, doubling, and a Retry-After raised to at most 5 s over it.
#[test]
fn botocores_backoff_base_depends_on_the_error() {
    let (_, traces) = simulate_traced(&model(&rate_limited(3000, "preset = \"botocore-standard\"")), 0, 1).unwrap();
    let [first, _] = sleeps(&traces, 0);
    // rate_limited(3000): a Retry-After of 3 s raises the sleep to 3 s (under backoff + 5 s).
    assert!(!first.is_empty() && first.iter().all(|&s| s == 3_000_000), "{first:?}");
    let (_, traces) = simulate_traced(&model(&rate_limited(9000, "preset = \"botocore-standard\"")), 0, 1).unwrap();
    let [first, _] = sleeps(&traces, 0);
    // 9 s asked: at most the backoff (below 1 s) plus 5 s.
    assert!(!first.is_empty() && first.iter().all(|&s| (5_000_000..6_000_000).contains(&s)), "{first:?}");
    let sdk = "preset = \"botocore-standard\"\nretry_after = \"ignore\"";
    let (_, traces) = simulate_traced(&model(&rate_limited(9000, sdk)), 0, 1).unwrap();
    let [first, _] = sleeps(&traces, 0);
    // Throttling base: full jitter below 1 s, spread over the whole range.
    assert!(first.len() > 20 && first.iter().all(|&s| s < 1_000_000), "{first:?}");
    assert!(first.iter().any(|&s| s < 250_000) && first.iter().any(|&s| s > 750_000), "{first:?}");
}

/// botocore's adaptive mode (runtime::sdk_rate_limiter): its limiter turns on only at a
/// throttling answer, so against errors that are not throttling the run is standard mode's to
/// the byte; against a provider that admits 5 requests a second from 10 offered, the client
/// paces its sends (attempts 7 076 -> 4 324, throttled answers 4 073 -> 826 over 600 s) and
/// the runs wait at the client instead (median run 0.1 s -> about 13 minutes: botocore's
/// waits have no bound). Off, both figures would be standard mode's.
#[test]
fn botocores_adaptive_mode_paces_sends_only_after_throttling() {
    let standard = "preset = \"botocore-standard\"";
    let adaptive = "preset = \"botocore-adaptive\"";
    let run = |text: String| simulate(&model(&text), 0, 1).unwrap().metrics;
    let (s, a) = (run(independent(0.3, standard, "")), run(independent(0.3, adaptive, "")));
    assert!(s["hidden_attempt_total"] > 1000.0);
    assert_eq!(metric_bits(&s), metric_bits(&a), "no throttling answer: adaptive is standard mode");
    let (s, a) = (run(rate_limited(0, standard)), run(rate_limited(0, adaptive)));
    let throttled = "dependency.model.error_total.rate_limited";
    assert!(a[throttled] * 4.0 < s[throttled], "throttled {} standard, {} adaptive", s[throttled], a[throttled]);
    let attempts = "dependency.model.attempt_total";
    assert!(a[attempts] * 1.5 < s[attempts], "attempts {} standard, {} adaptive", s[attempts], a[attempts]);
    // Sent above the provider's 5 a second (CUBIC probes past it), far below the 10 offered.
    let rate = a["dependency.model.attempt_rate_per_s"];
    assert!((5.0..9.0).contains(&rate), "adaptive sends {rate} a second");
    assert!(a["run_latency_ms.p50"] > 60_000.0 && s["run_latency_ms.p50"] < 1_000.0);
    // A runtime timeout cuts calls that wait for a token: each gives its token back, so the
    // client keeps sending at least at the bucket's 0.5 a second floor (24 attempts in 600 s,
    // all in the first minute, before the tokens came back; the review's finding H1).
    let cut = run(rate_limited(0, adaptive).replace("timeout_ms = 0", "timeout_ms = 2000"));
    assert!(cut[attempts] >= 0.5 * 600.0, "attempts {} with a 2 s runtime timeout", cut[attempts]);
}

/// A charged client's hidden retry at a token-shaped model pays the call's tokens and their
/// price again (`hidden_spend`): with every attempt failing and a run budget of 2.5 calls'
/// worth of tokens (or of money), the first attempt and one hidden retry fit and the second
/// retry is refused, so every run makes exactly 2 attempts and ends out of cost budget. A
/// retry that paid only its cost units would make all 4 attempts.
#[test]
fn a_charged_clients_retries_pay_a_token_shaped_calls_tokens_and_money() {
    // 400 input and 100 output tokens: 500 tokens, and 400 x 3 + 100 x 15 = 2 700 millionths.
    // `independent` with every attempt failing, its dependency made a token-shaped model.
    let tokens = "kind = \"model\"\n\n[dependency.tokens]\n\
                  time_to_first_token = { dist = \"constant\", value_ms = 40 }\n\
                  time_per_output_token = { dist = \"constant\", value_ms = 1 }\n\
                  price_per_million_input_tokens = 3\nprice_per_million_output_tokens = 15\n\
                  input_tokens = { dist = \"constant\", value = 400 }\n\
                  output_tokens = { dist = \"constant\", value = 100 }\n";
    let scenario = |budget: &str| {
        independent(1.0, "max_retries = 3\ncharged_to_root_budget = true", &format!("budget = {{ {budget} }}"))
            .replace("queue_capacity = 1000\nservice_time = { dist = \"constant\", value_ms = 100 }\n", "")
            .replace(
                "errors = { transient_transport = 1 }\n",
                &format!("errors = {{ transient_transport = 1 }}\n{tokens}"),
            )
            .replace("duration_s = 1500", "duration_s = 100")
    };
    for budget in ["model_tokens = 1250", "money = 0.00675"] {
        let text = scenario(budget);
        assert!(text.contains("[dependency.tokens]") && !text.contains("value_ms = 100"), "{text}");
        let m = simulate(&model(&text), 0, 3).expect("runs").metrics;
        let runs = m["logical_run_total"];
        assert!(runs > 400.0, "{budget}: {runs}");
        assert_eq!(m["dependency_attempt_total"], 2.0 * runs, "{budget}");
        assert_eq!(m["budget_exhausted_total.cost"], runs, "{budget}");
    }
}
