//! Caches in front of dependencies (world::cache, engine::cache, docs/scenario.md 4.8), shown
//! from outside: scenario runs whose figures follow the closed forms of a TTL cache, of
//! single-flight merging, of a cold start, and stale-if-error during an outage (with a task
//! class the contract forbids never served stale).

mod common;

use common::{assert_in_ci, metric, metric_bits, model, replicate};
use std::process::Command;

/// One workflow of `rate` runs per second whose one step reads `search` through its cache of
/// `keys` uniform keys. The search answers in `service` and never fails unless a fault says so;
/// no runtime timeout or retry, so every figure is the cache's.
#[allow(clippy::too_many_arguments)]
fn scenario(
    warmup_s: f64,
    duration_s: f64,
    rate: f64,
    keys: u32,
    cache: &str,
    service: &str,
    faults: &str,
    use_cache: &str,
) -> String {
    format!(
        r#"
[simulation]
duration_s = {duration_s}
warmup_s = {warmup_s}
seed = 23
replications = 10

[[dependency]]
name = "search"
servers = 100000
queue_capacity = 0
service_time = {service}

  [dependency.cache]
  data_class = "policy-document"
  keys = {keys}
  {cache}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = {rate} }}
deadline_ms = 600000

  [[workflow.step]]
  id = "rag"
  dependency = "search"
  task_class = "summary"

{faults}

[policy.p]
timeout_ms = 0
retry = {{ max_attempts = 1 }}

[policy.p.cache.search]
{use_cache}
"#
    )
}

const FAST: &str = r#"{ dist = "constant", value_ms = 1 }"#;

#[test]
fn a_ttl_cache_hits_lambda_t_over_one_plus_lambda_t() {
    // 200 keys at 20 runs/s: lambda = 0.1 per key per s. An entry set by a miss and not
    // renewed by hits is fresh for T after its fill (1 ms), then the next request misses:
    // a cycle holds 1 miss, lambda S merges and lambda T hits in S + T + 1/lambda.
    // A sliding TTL (hits renew) would give 1 - exp(-lambda T): 0.632 and 0.950.
    let (lambda, s) = (0.1, 0.001);
    for t in [10.0, 30.0] {
        let toml = scenario(200.0, 2200.0, 20.0, 200, &format!("fresh_ttl_s = {t}"), FAST, "", "");
        let reps = replicate(&model(&toml), 0);
        let theory = lambda * t / (1.0 + lambda * s + lambda * t);
        assert_in_ci(&format!("T = {t} hit ratio"), &metric(&reps, "cache_hit_ratio"), theory, 2);
        for m in &reps {
            // Every miss reached the dependency once; a hit never did.
            let sent = m["dependency.search.attempt_total"];
            assert_eq!(sent, m["cache_dependency_call_total"]);
            let lookups: f64 = ["fresh", "negative", "stale", "expired", "miss", "unavailable"]
                .iter()
                .map(|s| m[&format!("cache_lookup_total.{s}")])
                .sum();
            assert_eq!(lookups, m["logical_call_total"]);
            assert_eq!(m["cache_stale_run_total"], 0.0);
        }
    }
}

#[test]
fn a_zipf_key_space_hits_each_key_at_its_own_rate() {
    // Zipf(1) over 100 keys: key i is asked with p_i = (1/i) / H_100, at rate lambda_i = 20 p_i
    // per s, and hits lambda_i T / (1 + lambda_i S + lambda_i T) of its lookups (the renewal
    // cycle of the uniform test, key by key); the hit ratio is their p-weighted sum. 4 000 s
    // (80 000 lookups a replication) because the popular keys' long cycles make the ratio noisy.
    let (rate, s, t, keys) = (20.0, 0.001, 5.0, 100);
    let weights: Vec<f64> = (1..=keys).map(|i| 1.0 / f64::from(i)).collect();
    let total: f64 = weights.iter().sum();
    let theory: f64 = weights
        .iter()
        .map(|w| {
            let (p, lambda) = (w / total, rate * w / total);
            p * lambda * t / (1.0 + lambda * s + lambda * t)
        })
        .sum();
    let cache = format!("fresh_ttl_s = {t}\n  popularity = \"zipf\"\n  zipf_exponent = 1");
    let toml = scenario(100.0, 4100.0, rate, keys, &cache, FAST, "", "");
    let reps = replicate(&model(&toml), 0);
    assert_in_ci("zipf hit ratio", &metric(&reps, "cache_hit_ratio"), theory, 1);
    // Uniform keys at the same rate hit far less (0.2 x 5 / 2.0002 = 0.49995 against 0.6527), so
    // a key law that lost its weights (every key at 0.2 per s) would fall outside the interval.
    assert!(theory > 0.65, "{theory}");
}

#[test]
fn single_flight_merges_lambda_times_the_mean_call_time_per_call() {
    // Never fresh (fresh_ttl_s = 0): every lookup needs the dependency. 10 keys at 20 runs/s
    // (lambda = 2 per key per s) and calls of mean 200 ms: a call gathers lambda E[S] = 0.4
    // merged lookups on average (Poisson arrivals during it); the next lookup after it sends
    // the next call.
    let service = r#"{ dist = "exponential", mean_ms = 200 }"#;
    let toml = scenario(50.0, 1050.0, 20.0, 10, "fresh_ttl_s = 0", service, "", "");
    let reps: Vec<_> = replicate(&model(&toml), 0)
        .into_iter()
        .map(|mut m| {
            let per_call = m["cache_single_flight_merge_total"] / m["cache_dependency_call_total"];
            m.insert("merges_per_call".into(), per_call);
            m
        })
        .collect();
    assert_in_ci("merges per call", &metric(&reps, "merges_per_call"), 2.0 * 0.2, 1);
    // Without single-flight every lookup is its own call.
    let off = scenario(50.0, 1050.0, 20.0, 10, "fresh_ttl_s = 0", service, "", "single_flight = false");
    for m in replicate(&model(&off), 0) {
        assert_eq!(m["cache_single_flight_merge_total"], 0.0);
        assert_eq!(m["cache_dependency_call_total"], m["logical_call_total"]);
    }
}

#[test]
fn a_cold_cache_misses_once_per_key_in_the_window_after_it() {
    // T = 600 s, lambda = 0.1: warm, the hit ratio is 60 / 61. Emptied at 1000 s, the start of
    // the measured window W = 100 s: each key misses on its first lookup in the window and then
    // hits (T > W): 1 - (1 - exp(-lambda W)) / (lambda W) = 0.900005.
    let warm = scenario(1000.0, 1100.0, 20.0, 200, "fresh_ttl_s = 600", FAST, "", "");
    let fault = "[[fault]]\nkind = \"cold_cache\"\ntarget = \"search\"\nstart_s = 1000\nduration_s = 100\n";
    let cold = scenario(1000.0, 1100.0, 20.0, 200, "fresh_ttl_s = 600", FAST, fault, "");
    let warm_reps = replicate(&model(&warm), 0);
    let cold_reps = replicate(&model(&cold), 0);
    let lw: f64 = 0.1 * 100.0;
    assert_in_ci("cold hit ratio", &metric(&cold_reps, "cache_hit_ratio"), 1.0 - (1.0 - (-lw).exp()) / lw, 2);
    // Warm: a cycle of 1 miss and lambda T hits, started before the window (near 60 / 61).
    assert!(metric(&warm_reps, "cache_hit_ratio").low > 0.97, "{:?}", metric(&warm_reps, "cache_hit_ratio"));
}

/// Two workflows at the same cached search, one of a task class the contract forbids stale
/// data for; the search is down from 600 s to 900 s.
fn outage(stale_if_error: bool) -> String {
    format!(
        r#"
[simulation]
duration_s = 1200
warmup_s = 300
seed = 29
replications = 6

[[dependency]]
name = "search"
servers = 100000
queue_capacity = 0
service_time = {{ dist = "constant", value_ms = 5 }}

  [dependency.cache]
  keys = 50
  fresh_ttl_s = 10
  stale_if_error_s = 3600
  forbidden_for = ["permission_decision"]

[[workflow]]
name = "answer"
arrivals = {{ rate_per_s = 5 }}
deadline_ms = 60000

  [[workflow.step]]
  id = "rag"
  dependency = "search"
  task_class = "summary"

[[workflow]]
name = "permission"
arrivals = {{ rate_per_s = 5 }}
deadline_ms = 60000

  [[workflow.step]]
  id = "check"
  dependency = "search"
  task_class = "permission_decision"

[[fault]]
kind = "down"
target = "search"
start_s = 600
duration_s = 300

[policy.p]
timeout_ms = 0
retry = {{ max_attempts = 1 }}

[policy.p.cache.search]
stale_if_error = {stale_if_error}
"#
    )
}

#[test]
fn stale_if_error_answers_through_an_outage_except_for_a_forbidden_task_class() {
    let with = replicate(&model(&outage(true)), 0);
    let without = replicate(&model(&outage(false)), 0);
    for (w, wo) in with.iter().zip(&without) {
        // The outage's runs of the allowed class all complete on stale data (every key was
        // filled long before; none ages past 3610 s), marked: degraded, evidence stale.
        let answer_runs = w["workflow.answer.logical_run_total"];
        let answer_failed = w["workflow.answer.outcome_total.failed"];
        assert_eq!(answer_failed, 0.0, "no allowed run fails with stale-if-error");
        assert!(w["cache_stale_run_total"] > 0.0);
        assert_eq!(w["cache_stale_run_total"], w["cache_stale_served_total"]);
        assert_eq!(w["cache_stale_run_total"], w["degraded_total.stale_cache"]);
        assert_eq!(w["cache_stale_run_total"], w["workflow.answer.outcome_total.degraded"]);
        assert_eq!(w["cache_unmarked_stale_run_total"], 0.0);
        assert!(w["evidence_run_total.stale"] >= w["cache_stale_run_total"]);
        // The forbidden class is never served stale: its runs are those of the policy that
        // serves no stale entry, run for run.
        for name in ["logical_run_total", "outcome_total.failed", "outcome_total.succeeded"] {
            let key = format!("workflow.permission.{name}");
            assert_eq!(w[&key], wo[&key], "{key}");
        }
        // Without stale-if-error the outage fails what fresh entries cannot answer: most
        // of 300 s x 5 runs/s; with it, none of the allowed class.
        let lost = wo["workflow.answer.outcome_total.failed"];
        assert!(lost > 0.8 * 300.0 * 5.0, "{lost}");
        assert_eq!(wo["cache_stale_served_total"], 0.0);
        assert!(w["workflow.answer.auto_completion_ratio"] > wo["workflow.answer.auto_completion_ratio"]);
        assert!(answer_runs > 0.0);
    }
}

#[test]
fn an_outage_of_the_cache_sends_every_lookup_to_the_dependency() {
    let fault = "[[fault]]\nkind = \"cache_outage\"\ntarget = \"search\"\nstart_s = 100\nduration_s = 1000\n";
    let toml = scenario(100.0, 1100.0, 20.0, 200, "fresh_ttl_s = 600", FAST, fault, "");
    for m in replicate(&model(&toml), 0) {
        assert_eq!(m["cache_lookup_total.unavailable"], m["logical_call_total"]);
        assert_eq!(m["dependency.search.attempt_total"], m["logical_call_total"]);
        assert_eq!(m["cache_hit_ratio"], 0.0);
    }
}

#[test]
fn negative_entries_answer_not_found_keys_for_their_own_ttl() {
    // A share q of keys holds nothing: their entries are negative and answer for T_n; the
    // others are fresh for T. Hit ratio (1 - q) lambda T / (1 + lambda T) + q lambda T_n /
    // (1 + lambda T_n), with lambda = 0.1, T = 30 s, T_n = 5 s (fills of 1 ms left out).
    let cache = "fresh_ttl_s = 30\nnot_found_ratio = 0.5\nnegative_ttl_s = 5";
    let toml = scenario(200.0, 2200.0, 20.0, 200, cache, FAST, "", "");
    let reps: Vec<_> = replicate(&model(&toml), 0)
        .into_iter()
        .map(|mut m| {
            let share = m["cache_lookup_total.negative"] / m["logical_call_total"];
            m.insert("negative_share".into(), share);
            m
        })
        .collect();
    // Which keys hold nothing is the key space's own draw, so the realised share of 200 keys
    // is read from the model (lookups are uniform over keys: it is their share too).
    let model = model(&toml);
    let cache = model.world.dependencies[0].cache.as_ref().expect("a cache");
    let q = (0..200).filter(|&e| cache.absent(e)).count() as f64 / 200.0;
    assert!((0.35..0.65).contains(&q), "{q}");
    let negative = q * 0.5 / 1.5;
    assert_in_ci("negative hit share", &metric(&reps, "negative_share"), negative, 2);
    let hits = (1.0 - q) * 3.0 / 4.0 + negative;
    assert_in_ci("hit ratio", &metric(&reps, "cache_hit_ratio"), hits, 2);
}

#[test]
fn a_cache_no_policy_uses_changes_nothing() {
    // The same scenario with the dependency's cache table and without it: bit for bit.
    let with_table = scenario(100.0, 600.0, 20.0, 200, "fresh_ttl_s = 30", FAST, "", "");
    let with_table = with_table.replace("[policy.p.cache.search]\n", "");
    let cache_start = with_table.find("  [dependency.cache]").expect("a cache table");
    let cache_end = with_table.find("[[workflow]]").expect("a workflow");
    let without = format!("{}{}", &with_table[..cache_start], &with_table[cache_end..]);
    let a = replicate(&model(&with_table), 0);
    let b = replicate(&model(&without), 0);
    for (a, b) in a.iter().zip(&b) {
        assert_eq!(metric_bits(a), metric_bits(b));
        assert!(!a.contains_key("cache_hit_ratio"));
        assert!(!a.contains_key("degraded_total.stale_cache"));
    }
}

fn validate(toml: &str) -> (i32, String) {
    let dir = std::env::temp_dir().join(format!("faultline-cache-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("s{}.toml", toml.len()));
    std::fs::write(&path, toml).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_faultline")).arg("validate").arg(&path).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn bad_cache_tables_and_faults_are_located_errors() {
    let good = scenario(10.0, 100.0, 1.0, 10, "fresh_ttl_s = 30", FAST, "", "");
    assert_eq!(validate(&good).0, 0, "{}", validate(&good).1);
    let cases = [
        (good.replace("fresh_ttl_s = 30", "fresh_ttl_s = -1"), "dependency[0].cache.fresh_ttl_s"),
        (good.replace("keys = 10", "keys = 0"), "dependency[0].cache.keys"),
        (good.replace("fresh_ttl_s = 30", "fresh_ttl_s = 30\n  cache_scope = \"planet\""), "cache_scope"),
        (good.replace("fresh_ttl_s = 30", "fresh_ttl_s = 30\n  cache_scope = \"user\""), "users"),
        (good.replace("fresh_ttl_s = 30", "fresh_ttl_s = 30\n  zipf_exponent = 1.2"), "zipf_exponent"),
        (good.replace("[policy.p.cache.search]", "[policy.p.cache.nowhere]"), "policy.p.cache.nowhere"),
        (
            good.replace(
                "[policy.p]",
                "[[fault]]\nkind = \"cold_cache\"\ntarget = \"search\"\nstart_s = 1\nduration_s = 1\ntoxicity = 0.5\n\n[policy.p]",
            ),
            "fault[0].toxicity",
        ),
    ];
    for (toml, field) in cases {
        let (code, stderr) = validate(&toml);
        assert_eq!(code, 2, "{field}: {stderr}");
        assert!(stderr.contains(field), "{field} not named in: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // The bound on entries is inclusive: 1,000 keys for each of 4,000 users is the largest cache.
    let per_user =
        |keys: u32| good.replace("keys = 10", &format!("keys = {keys}\n  cache_scope = \"user\"\n  users = 4000"));
    assert_eq!(validate(&per_user(1000)).0, 0, "{}", validate(&per_user(1000)).1);
    let (code, stderr) = validate(&per_user(1001));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("dependency[0].cache.keys") && stderr.contains("1001 keys x 4000 scopes"), "{stderr}");
    // A cache fault at a dependency with no cache.
    let no_cache =
        good.replace("  [dependency.cache]\n  data_class = \"policy-document\"\n  keys = 10\n  fresh_ttl_s = 30\n", "");
    let no_cache = no_cache.replace("[policy.p.cache.search]\n", "").replace(
        "[policy.p]",
        "[[fault]]\nkind = \"cache_outage\"\ntarget = \"search\"\nstart_s = 1\nduration_s = 1\n\n[policy.p]",
    );
    let (code, stderr) = validate(&no_cache);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("fault[0].target") && stderr.contains("no [dependency.cache]"), "{stderr}");
}

/// `scenario`'s file with `policy` added to `[policy.p]`.
fn with_policy(toml: &str, policy: &str) -> String {
    toml.replace("retry = { max_attempts = 1 }\n", &format!("retry = {{ max_attempts = 1 }}\n{policy}\n"))
}

#[test]
fn a_hedge_of_a_cached_step_races_its_own_call_and_every_run_ends() {
    // Never fresh, a million keys (no two runs share one), calls of lognormal time (p50
    // 100 ms, long tail) hedged at 300 ms with single-flight on. The hedge's lookup finds the
    // fill its own primary waits for: joining it could never win, so it sends a call of its
    // own. Before the fix it joined, and the primary's answer cancelled it after its fill's
    // slot was freed, which freed the slot twice: runs never ended ("still in flight").
    let service = r#"{ dist = "lognormal", p50_ms = 100, p95_ms = 2000 }"#;
    let toml = scenario(0.0, 300.0, 20.0, 1_000_000, "fresh_ttl_s = 0", service, "", "");
    let toml = with_policy(&toml, "hedging = { delay_ms = 300 }");
    for m in replicate(&model(&toml), 0) {
        let (runs, hedges) = (m["logical_run_total"], m["hedge_sent_total"]);
        assert_eq!(
            m["outcome_total.succeeded"], runs,
            "every run ends and succeeds (no attempt timeout, the search never fails)"
        );
        assert!(hedges > 0.1 * runs, "{hedges} hedges of {runs} runs");
        // Every hedge reached the search (no merge into its own primary's fill) and some won.
        assert_eq!(m["cache_single_flight_merge_total"], 0.0);
        assert_eq!(m["dependency.search.attempt_total"], runs + hedges);
        assert_eq!(m["cache_dependency_call_total"], runs + hedges);
        assert!(m["hedge_won_total"] > 0.2 * hedges, "{} of {hedges} hedges won", m["hedge_won_total"]);
    }
}

#[test]
fn a_user_scoped_cache_draws_the_user_once_per_run() {
    // One key, a million users, entries fresh for the whole run: two steps of one run are the
    // same user, so the second always finds what the first filled (hit ratio 1/2); were the
    // user drawn per step, the second would almost never find it (0.0014 before the fix).
    let toml =
        scenario(0.0, 200.0, 1.0, 1, "fresh_ttl_s = 100000\n  cache_scope = \"user\"\n  users = 1000000", FAST, "", "");
    let toml = toml.replace(
        "  task_class = \"summary\"\n",
        "  task_class = \"summary\"\n\n  [[workflow.step]]\n  id = \"rag2\"\n  dependency = \"search\"\n  after = [\"rag\"]\n",
    );
    for m in replicate(&model(&toml), 0) {
        let (fresh, miss) = (m["cache_lookup_total.fresh"], m["cache_lookup_total.miss"]);
        assert!(miss > 150.0, "{miss}");
        assert!((fresh - miss).abs() <= 2.0, "fresh {fresh} vs miss {miss}: one user per run");
    }
}

#[test]
fn a_bad_answer_filled_into_the_cache_stays_bad_for_every_lookup_it_answers() {
    // Half of the search's answers are partial (a success-looking fault) and a grounding
    // validator catches every one. Without a cache, half the runs fail on it; with the cache
    // (fresh 60 s over 100 keys at 20 runs/s: ~92 % hits) a bad answer is stored as it came and
    // served to every hit until it expires, so about as many runs get a bad answer and fail.
    // Before the fix the cache dropped the fault: 0 bad results, 0 failed.
    let fault =
        "[[fault]]\nkind = \"partial_result\"\ntarget = \"search\"\nstart_s = 0\nduration_s = 1000\ntoxicity = 0.5\n";
    let toml = scenario(0.0, 600.0, 20.0, 100, "fresh_ttl_s = 60", FAST, fault, "");
    let toml = toml.replace("servers = 100000", "kind = \"retrieval\"\nservers = 100000");
    let validator = "[policy.p.steps.rag.validator]\ncheck = \"grounding\"\ndetects = { partial_result = 1.0 }\n";
    let toml = toml.replace("[policy.p.cache.search]", &format!("{validator}\n[policy.p.cache.search]"));
    let plain = toml.replace("[policy.p.cache.search]\n", "");
    for (cached, plain) in replicate(&model(&toml), 0).iter().zip(replicate(&model(&plain), 0)) {
        let runs = cached["logical_run_total"];
        let bad = cached["bad_result_total.partial_result"];
        assert!(cached["cache_hit_ratio"] > 0.85, "{}", cached["cache_hit_ratio"]);
        // Each entry is bad with probability 1/2 and answers every lookup while fresh.
        assert!((0.4 * runs..0.6 * runs).contains(&bad), "{bad} bad of {runs}");
        assert_eq!(cached["outcome_total.failed"], bad, "the validator catches each, no fallback");
        let plain_share = plain["bad_result_total.partial_result"] / plain["logical_run_total"];
        assert!((0.45..0.55).contains(&plain_share), "{plain_share}");
        // Only the fills reached the search.
        assert_eq!(cached["dependency.search.attempt_total"], cached["cache_dependency_call_total"]);
    }
}

#[test]
fn a_cache_hit_spends_nothing_of_the_run_s_cost_budget() {
    // Two parallel steps at a search of cost 1 with one key that stays fresh: after the first
    // fill every lookup is a hit and nothing is spent, so a budget of 1.5 cost units never
    // runs out. Before the fix each step reserved 1 at its send and the second was refused:
    // every run failed "over budget" having spent nothing.
    let toml = scenario(10.0, 200.0, 5.0, 1, "fresh_ttl_s = 100000", FAST, "", "");
    let toml = toml.replace("servers = 100000", "cost_units = 1\nservers = 100000").replace(
        "  task_class = \"summary\"\n",
        "  task_class = \"summary\"\n\n  [[workflow.step]]\n  id = \"rag2\"\n  dependency = \"search\"\n",
    );
    let toml = with_policy(&toml, "budget = { cost_units = 1.5 }");
    for m in replicate(&model(&toml), 0) {
        assert_eq!(m["cache_hit_ratio"], 1.0);
        assert_eq!(m["cost_units_total"], 0.0);
        assert_eq!(m["budget_exhausted_total.cost"], 0.0);
        assert_eq!(m["outcome_total.succeeded"], m["logical_run_total"]);
    }
}

/// `outage(true)`'s file with the search failing with `errors` of one kind instead of `down`.
fn failing_with(kind: &str) -> String {
    outage(true).replace(
        "kind = \"down\"\ntarget = \"search\"",
        &format!("kind = \"errors\"\ntarget = \"search\"\nerrors = {{ {kind} = 1.0 }}"),
    )
}

#[test]
fn stale_if_error_answers_only_the_failures_rfc_5861_names() {
    // RFC 5861: an error is what would be a 500, 502, 503 or 504 (and a transport's timeout or
    // refused connection). A caller refused for itself (401/403, 400, 429) gets the refusal,
    // not the stale entry (before the fix it got the entry: 0 failed).
    for kind in ["transient_transport", "overloaded", "permanent_provider"] {
        for m in replicate(&model(&failing_with(kind)), 0) {
            assert_eq!(m["workflow.answer.outcome_total.failed"], 0.0, "{kind}");
            assert!(m["cache_stale_served_total"] > 1000.0, "{kind}: {}", m["cache_stale_served_total"]);
        }
    }
    for kind in ["unauthorized", "invalid_input", "rate_limited"] {
        for m in replicate(&model(&failing_with(kind)), 0) {
            assert_eq!(m["cache_stale_served_total"], 0.0, "{kind}");
            assert!(m["workflow.answer.outcome_total.failed"] > 0.8 * 300.0 * 5.0, "{kind}");
        }
    }
}

fn scratch_file(name: &str, toml: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("faultline-cache-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

#[test]
fn a_stale_answer_is_in_the_trace_and_explore_takes_it_as_a_degraded_run_s_evidence() {
    // The outage file with one replication: its degraded runs rest on stale entries (marked).
    let toml = outage(true).replace("replications = 6", "replications = 1");
    let path = scratch_file("stale", &toml);
    let out = path.with_file_name("explore");
    let args = ["explore", path.to_str().unwrap(), "-p", "p", "--schedules", "3", "--seed", "1"];
    let o = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(args)
        .args(["--replications", "1", "--kind", "down", "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    // Before the fix every schedule broke "a degraded result carries its evidence" (exit 99).
    assert!(!text.contains("ended degraded with every step answered"), "{text}");
    assert_eq!(o.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&o.stderr));
    // replay names the stale entry on the attempt it answered.
    let o = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["replay", path.to_str().unwrap(), "-p", "p", "--first", "degraded"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("DEGRADED") && text.contains("search STALE_CACHE_ENTRY"), "{text}");
}

#[test]
fn a_lookup_slower_than_a_minute_and_a_field_on_a_cold_cache_are_named() {
    let good = scenario(10.0, 100.0, 1.0, 10, "fresh_ttl_s = 30", FAST, "", "");
    let (code, stderr) = validate(&good.replace("fresh_ttl_s = 30", "fresh_ttl_s = 30\n  lookup_ms = 1e300"));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("dependency[0].cache.lookup_ms"), "{stderr}");
    let cold = "[[fault]]\nkind = \"cold_cache\"\ntarget = \"search\"\nstart_s = 1\nduration_s = 1\ntoxicity = 0.5\n\n[policy.p]";
    let (code, stderr) = validate(&good.replace("[policy.p]", cold));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("(it takes no field)"), "{stderr}");
}

#[test]
fn each_result_carries_its_own_ttl_and_the_contract_caps_it() {
    // MCP 2026-07-28: a list or read result carries `ttlMs`. With `result_ttl_ms` an entry is
    // fresh for the lesser of its key's hint and the contract's `fresh_ttl_s`, so the hit
    // ratio follows lambda T / (1 + lambda S + lambda T) with T that lesser value (same
    // workload as the TTL test: lambda = 0.1 per key per s, S = 1 ms).
    let (lambda, s) = (0.1, 0.001);
    for (contract_s, hint_ms, t) in [(300.0, "10000", 10.0), (10.0, "1e9", 10.0)] {
        let cache =
            format!("fresh_ttl_s = {contract_s}\n  result_ttl_ms = {{ dist = \"constant\", value_ms = {hint_ms} }}");
        let reps = replicate(&model(&scenario(200.0, 2200.0, 20.0, 200, &cache, FAST, "", "")), 0);
        let theory = lambda * t / (1.0 + lambda * s + lambda * t);
        assert_in_ci(
            &format!("contract {contract_s} s, hint {hint_ms} ms"),
            &metric(&reps, "cache_hit_ratio"),
            theory,
            2,
        );
    }
    // A server that sends no hint is MCP's default, ttlMs 0: immediately stale, never a hit.
    let cache = "fresh_ttl_s = 300\n  result_ttl_ms = { dist = \"constant\", value_ms = 0 }";
    let reps = replicate(&model(&scenario(20.0, 220.0, 20.0, 200, cache, FAST, "", "")), 0);
    for m in &reps {
        assert_eq!(m["cache_lookup_total.fresh"], 0.0);
        assert!(m["cache_lookup_total.stale"] + m["cache_lookup_total.expired"] > 1000.0);
    }
    // Hints that differ by key: an exponential of mean 10 s averages lambda T / (1 + lambda T)
    // over T ~ Exp(10 s): E = 1 - e^(1/(lambda m)) E1(1/(lambda m)) / (lambda m) with lambda m = 1:
    // 1 - e E1(1) = 1 - 2.71828 x 0.219384 = 0.40365. The keys' hints are drawn once (from the
    // dependency's name, as in every replication), so their average over 2,000 keys is off by
    // about 0.3 / sqrt(2000) = 0.007: the tolerance is that draw's, 3 sigma.
    let cache = "fresh_ttl_s = 300\n  result_ttl_ms = { dist = \"exponential\", mean_ms = 10000 }";
    let reps = replicate(&model(&scenario(200.0, 1200.0, 200.0, 2000, cache, FAST, "", "")), 0);
    let e = metric(&reps, "cache_hit_ratio");
    eprintln!("exponential hints: hit ratio {:.5} vs 0.40365", e.mean);
    assert!((e.mean - 0.40365).abs() < 0.021, "exponential hints: hit ratio {} vs 0.40365", e.mean);
    // A bad hint is named.
    let good = scenario(10.0, 100.0, 1.0, 10, "fresh_ttl_s = 30", FAST, "", "");
    let bad =
        good.replace("fresh_ttl_s = 30", "fresh_ttl_s = 30\n  result_ttl_ms = { dist = \"constant\", value_ms = -5 }");
    let (code, stderr) = validate(&bad);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("dependency[0].cache.result_ttl_ms"), "{stderr}");
}

/// A plan call of 4.8-4.95 s (uniform), then a cached read whose hits take 100 ms, on a 5 s
/// deadline: a hit that starts less than 100 ms before the deadline cannot answer in time.
fn late_hit(cache: bool) -> String {
    let use_cache = if cache { "[policy.p.cache.search]" } else { "" };
    format!(
        r#"
[simulation]
duration_s = 300
seed = 3
replications = 1

[[dependency]]
name = "model"
servers = 1000
service_time = {{ dist = "uniform", min_ms = 4800, max_ms = 4950 }}

[[dependency]]
name = "search"
servers = 100
service_time = {{ dist = "constant", value_ms = 100 }}

  [dependency.cache]
  data_class = "x"
  keys = 1
  fresh_ttl_s = 100000
  lookup_ms = 100

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 1 }}
deadline_ms = 5000

  [[workflow.step]]
  id = "plan"
  dependency = "model"

  [[workflow.step]]
  id = "rag"
  dependency = "search"
  after = ["plan"]

[policy.p]
timeout_ms = 10000
{use_cache}
"#
    )
}

/// Under deadline propagation a hit is bounded by the run's time left like any attempt: the
/// runs whose read starts within 100 ms of the deadline fail at the deadline, with the cache
/// as without it (the search's own 100 ms call cannot fit either). Before, the hit answered
/// after its 100 ms regardless, and those runs "succeeded" up to 50 ms past their deadline.
#[test]
fn a_cache_hit_never_answers_past_the_root_deadline() {
    let get = |toml: &str, name: &str| replicate(&model(toml), 0)[0][name];
    let (cached, uncached) = (late_hit(true), late_hit(false));
    let late = get(&uncached, "outcome_total.failed");
    // plan ends in [4.8, 4.95] s, so a run is late when it ends past 4.9 s: a third of them.
    assert!(late > 60.0 && late < 150.0, "{late} of ~300 runs");
    assert!(get(&cached, "cache_lookup_total.fresh") > 250.0);
    assert_eq!(get(&cached, "outcome_total.failed"), late);
    assert_eq!(get(&cached, "outcome_total.succeeded"), get(&uncached, "outcome_total.succeeded"));
    assert!(get(&cached, "run_latency_ms.max") <= 5000.0 + 1e-6);
}

/// A retrieval of 100 cached keys whose answers are partial half the time, a grounding check
/// that catches every partial one, and a repair before a handoff.
const REPAIR: &str = r#"
[simulation]
duration_s = 600
seed = 23
replications = 1

[[dependency]]
name = "search"
kind = "retrieval"
servers = 100000
queue_capacity = 0
service_time = { dist = "constant", value_ms = 1 }

  [dependency.cache]
  data_class = "policy-document"
  keys = 100
  fresh_ttl_s = 60

[[workflow]]
name = "w"
arrivals = { rate_per_s = 20 }
deadline_ms = 600000

  [[workflow.step]]
  id = "rag"
  dependency = "search"

[[fault]]
kind = "partial_result"
target = "search"
start_s = 0
duration_s = 1000
toxicity = 0.5

[policy.cached]
timeout_ms = 5000
retry = { max_attempts = 2 }
[policy.cached.steps.rag]
on_schema_failure = "repair_once_then_handoff"
validator = { check = "grounding", detects = { partial_result = 1.0 } }
[policy.cached.cache.search]
"#;

/// A repair prompt is new input: it goes to the dependency, whose answer is partial with the
/// fault's toxicity, so half the repairs fail again and hand off. Before, the repair looked up
/// the step's key, met the bad entry just detected, and every repair handed off (5598 of 5598).
#[test]
fn a_repair_prompt_goes_past_the_cache() {
    let r = &replicate(&model(REPAIR), 0)[0];
    let repairs = r["schema_repair_total"];
    assert!(repairs > 4000.0, "{repairs}");
    // Binomial standard error of the share over ~5,000 repairs is under 0.0071; 4 of them.
    let share = r["outcome_total.handoff"] / repairs;
    assert!((share - 0.5).abs() < 0.03, "handoff share of repairs {share}");
}

/// Runs of two parallel steps: a cached read of one key that expires at once (so nearly every
/// lookup fills), and a `gate` that fails half its calls at 10 ms and so ends the run while
/// the read's fill is out.
fn abandoned_fills(cache: bool) -> String {
    let use_cache = if cache { "[policy.p.cache.search]" } else { "" };
    format!(
        r#"
[simulation]
duration_s = 200
seed = 5
replications = 1

[[dependency]]
name = "search"
servers = 100000
service_time = {{ dist = "constant", value_ms = 100 }}

  [dependency.cache]
  data_class = "x"
  keys = 1
  fresh_ttl_s = 0.001

[[dependency]]
name = "gate"
servers = 100000
service_time = {{ dist = "constant", value_ms = 10 }}
errors = {{ permanent_provider = 0.5 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 20 }}
deadline_ms = 60000

  [[workflow.step]]
  id = "read"
  dependency = "search"

  [[workflow.step]]
  id = "check"
  dependency = "gate"

[policy.p]
timeout_ms = 1000
retry = {{ max_attempts = 1 }}
{use_cache}
"#
    )
}

/// A fill whose last waiter left (its run ended) is abandoned and forgotten by the store: the
/// next lookup of the key starts a fill of its own and is answered. Only the gate fails runs,
/// with the cache as without it; a store that kept pointing at the abandoned fill would make
/// later lookups join a call nobody finishes and time out.
#[test]
fn a_fill_left_by_its_last_waiter_is_forgotten() {
    let get = |toml: &str, name: &str| replicate(&model(toml), 0)[0][name];
    let (cached, uncached) = (abandoned_fills(true), abandoned_fills(false));
    let failed = get(&uncached, "outcome_total.failed");
    assert!(failed > 1500.0, "{failed}: the gate fails about half of 4,000 runs");
    assert!(get(&cached, "cache_single_flight_merge_total") > 100.0);
    assert_eq!(get(&cached, "outcome_total.failed"), failed);
    assert_eq!(get(&cached, "outcome_total.succeeded"), get(&uncached, "outcome_total.succeeded"));
}

/// One key, fresh for 1 s and stale-usable for a day; from 100 s every call times out after
/// 10 s, and runs arrive until 104 s. With a cold cache at 104.5 s, the calls that time out
/// at 110..114 s find the cache emptied: no stale answer, the runs fail.
fn stale_after_restart(cold: bool) -> String {
    let cold_fault = if cold {
        "[[fault]]\nkind = \"cold_cache\"\ntarget = \"search\"\nstart_s = 104.5\nduration_s = 1\n"
    } else {
        ""
    };
    format!(
        r#"
[simulation]
duration_s = 200
warmup_s = 0
seed = 5
replications = 20

[[dependency]]
name = "search"
servers = 1000
queue_capacity = 0
service_time = {{ dist = "constant", value_ms = 1 }}

  [dependency.cache]
  data_class = "doc"
  keys = 1
  fresh_ttl_s = 1
  stale_if_error_s = 100000

[[workflow]]
name = "w"
arrivals = {{ profile = [{{ until_s = 100, rate_per_s = 0.5 }}, {{ until_s = 104, rate_per_s = 1 }}, {{ until_s = 200, rate_per_s = 0 }}] }}
deadline_ms = 600000

  [[workflow.step]]
  id = "rag"
  dependency = "search"
  task_class = "summary"

[[fault]]
kind = "timeout"
target = "search"
start_s = 100
duration_s = 100

{cold_fault}
[policy.p]
timeout_ms = 10000
retry = {{ max_attempts = 1 }}

[policy.p.cache.search]
"#
    )
}

#[test]
fn a_restart_empties_the_cache_before_a_failed_call_looks_for_a_stale_entry() {
    // No lookup comes between the restart and the failures: the restart must still count.
    let warm = replicate(&model(&stale_after_restart(false)), 0);
    let cold = replicate(&model(&stale_after_restart(true)), 0);
    let total = |reps: &[faultline::metrics::MetricMap], name: &str| reps.iter().map(|m| m[name]).sum::<f64>();
    assert!(total(&warm, "cache_stale_served_total") > 40.0, "the warm cache answers the failures stale");
    assert_eq!(total(&warm, "outcome_total.failed"), 0.0);
    assert_eq!(total(&cold, "cache_stale_served_total"), 0.0, "nothing stored before the restart answers");
    assert_eq!(total(&cold, "outcome_total.failed"), total(&warm, "cache_stale_served_total"));
}

#[test]
fn a_tenant_scope_has_one_key_space_per_tenant_and_one_more_only_for_workflows_without() {
    let tenants = |names: &[&str]| -> String {
        names
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let tenant = if t.is_empty() { String::new() } else { format!("tenant = \"{t}\"\n") };
                format!("\n[[workflow]]\nname = \"w{i}\"\n{tenant}arrivals = {{ rate_per_s = 1 }}\ndeadline_ms = 1000\n\n  [[workflow.step]]\n  id = \"s{i}\"\n  dependency = \"search\"\n")
            })
            .collect()
    };
    let file = |names: &[&str]| {
        format!(
            "[simulation]\nduration_s = 10\n\n[[dependency]]\nname = \"search\"\nservice_time = {{ dist = \"constant\", value_ms = 1 }}\n\n  [dependency.cache]\n  data_class = \"doc\"\n  fresh_ttl_s = 5\n  cache_scope = \"tenant\"\n  keys = 1000000\n{}\n[policy.p]\n[policy.p.cache.search]\n",
            tenants(names)
        )
    };
    // 4 tenants x 1,000,000 keys is the documented bound, 4,000,000 entries.
    let (code, out) = validate(&file(&["ta", "tb", "tc", "td"]));
    assert_eq!(code, 0, "{out}");
    // A workflow without a tenant adds its own key space: 5 x 1,000,000 is over.
    let (code, out) = validate(&file(&["ta", "tb", "tc", "td", ""]));
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("1000000 keys x 5 scopes"), "{out}");
}
