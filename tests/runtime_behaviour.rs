//! Runtime behaviour end to end, on small scenarios where the expected counts are exact.

mod common;
use common::*;

/// One write step at a dependency; `extra` adds dependency fields, `policy` the policy body.
fn write_scenario(dependency_extra: &str, step_extra: &str, faults: &str, policy: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 200
seed = 4

[[dependency]]
name = "tickets"
servers = 100
service_time = {{ dist = "constant", value_ms = 100 }}
{dependency_extra}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 5 }}
deadline_ms = 60000

  [[workflow.step]]
  id = "draft"
  dependency = "tickets"
  effect = "write"
  {step_extra}

{faults}

[policy.p]
{policy}
"#
    )
}

const LOST_REPLIES: &str = r#"
[[fault]]
kind = "lost_response"
target = "tickets"
start_s = 0
duration_s = 200
toxicity = 0.2
"#;

#[test]
fn re_sending_a_lost_write_without_a_key_duplicates_it() {
    let text = write_scenario(
        "",
        "",
        LOST_REPLIES,
        "timeout_ms = 1000\non_effect_unknown = \"retry\"\nretry = { max_attempts = 3, backoff = { kind = \"none\" } }",
    );
    let r = &replicate(&model(&text), 0)[0];
    assert!(r["effect_unknown_total"] > 100.0, "{}", r["effect_unknown_total"]);
    // Every lost reply was committed, then sent again: each re-send that committed is a duplicate.
    assert!(r["duplicate_effect_total"] > 100.0);
    assert_eq!(r["duplicate_effect_total"], r["effect_total"] - r["logical_run_total"]);
    assert!(r["safe_outcome_ratio"] < 1.0);
}

#[test]
fn reconcile_first_reuses_the_committed_effect() {
    let text = write_scenario(
        "status_lookup_time = { dist = \"constant\", value_ms = 10 }",
        "idempotency = \"key\"\n  status_lookup = true",
        LOST_REPLIES,
        "timeout_ms = 1000\non_effect_unknown = \"reconcile_first\"",
    );
    let r = &replicate(&model(&text), 0)[0];
    assert!(r["effect_unknown_total"] > 100.0);
    // Lookups lose their replies too (20 %); they are asked again up to max_attempts (3) times,
    // so only 0.8 % of unknown effects end in a handoff.
    assert_eq!(r["reconciled_total"] + r["outcome_total.handoff"], r["effect_unknown_total"]);
    assert!(r["outcome_total.handoff"] < 0.03 * r["effect_unknown_total"], "{}", r["outcome_total.handoff"]);
    assert_eq!(r["duplicate_effect_total"], 0.0);
    assert_eq!(r["effect_total"], r["logical_run_total"]);
    assert_eq!(r["outcome_total.succeeded"] + r["outcome_total.handoff"], r["logical_run_total"]);
    assert_eq!(r["safe_outcome_ratio"], 1.0);
}

#[test]
fn a_shared_key_makes_blind_resends_safe_and_per_attempt_keys_do_not() {
    let shared =
        write_scenario("", "idempotency = \"key\"", LOST_REPLIES, "timeout_ms = 1000\non_effect_unknown = \"retry\"");
    let r = &replicate(&model(&shared), 0)[0];
    assert_eq!(r["duplicate_effect_total"], 0.0);
    assert_eq!(r["effect_total"], r["logical_run_total"]);
    // The deduplicated re-send returns the first result; only runs whose 3 replies were all
    // lost (0.2^3 = 0.8 %) fail.
    assert!(r["outcome_total.failed"] < 0.03 * r["logical_run_total"], "{}", r["outcome_total.failed"]);
    assert_eq!(r["outcome_total.succeeded"] + r["outcome_total.failed"], r["logical_run_total"]);
    let fresh = write_scenario(
        "",
        "idempotency = \"key\"",
        LOST_REPLIES,
        "timeout_ms = 1000\non_effect_unknown = \"retry\"\nidempotency_key = \"per_attempt\"",
    );
    let r = &replicate(&model(&fresh), 0)[0];
    assert!(r["duplicate_effect_total"] > 100.0, "a fresh key per attempt defeats deduplication");
}

#[test]
fn handoff_policy_stops_at_the_first_unknown_effect() {
    let text = write_scenario("", "", LOST_REPLIES, "timeout_ms = 1000\non_effect_unknown = \"handoff\"");
    let r = &replicate(&model(&text), 0)[0];
    assert_eq!(r["outcome_total.handoff"], r["effect_unknown_total"]);
    assert_eq!(r["duplicate_effect_total"], 0.0);
    assert_eq!(r["safe_outcome_ratio"], 1.0);
}

#[test]
fn a_write_that_never_commits_is_looked_up_a_bounded_number_of_times() {
    // 5 s of work, 1 s timeout, and the dependency drops abandoned work: nothing ever commits,
    // every lookup says "not yet", and the resends stop at max_attempts with a handoff.
    let text = write_scenario(
        "honors_cancel = true\nstatus_lookup_time = { dist = \"constant\", value_ms = 10 }",
        "idempotency = \"key\"\n  status_lookup = true",
        "",
        "timeout_ms = 1000\ndeadline_propagation = false\nretry = { max_attempts = 3, backoff = { kind = \"none\" } }",
    )
    .replace("value_ms = 100 }", "value_ms = 5000 }");
    let r = &replicate(&model(&text), 0)[0];
    let runs = r["logical_run_total"];
    assert_eq!(r["outcome_total.handoff"], runs);
    assert_eq!(r["effect_total"], 0.0);
    // 3 writes and 3 lookups per run; each write was abandoned after 1 s of work, each lookup
    // took its 10 ms.
    assert_eq!(r["dependency.tickets.attempt_total"], 6.0 * runs);
    assert!((r["dependency.tickets.wasted_service_ratio"] - 3_000.0 / 3_030.0).abs() < 1e-9);
}

fn graph_scenario(policy: &str, soft_errors: f64) -> String {
    format!(
        r#"
[simulation]
duration_s = 200
seed = 8

[[dependency]]
name = "model"
servers = 100
service_time = {{ dist = "constant", value_ms = 500 }}

[[dependency]]
name = "search"
servers = 100
service_time = {{ dist = "constant", value_ms = 100 }}
errors = {{ invalid_input = {soft_errors} }}

[[dependency]]
name = "cache"
servers = 100
service_time = {{ dist = "constant", value_ms = 5 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 5 }}
deadline_ms = 3000

  [[workflow.step]]
  id = "plan"
  dependency = "model"

  [[workflow.step]]
  id = "enrich"
  after = ["plan"]
  dependency = "search"
  criticality = "soft"

  [[workflow.step]]
  id = "answer"
  after = ["plan", "enrich"]
  dependency = "model"

[policy.p]
{policy}
"#
    )
}

#[test]
fn a_failed_soft_step_is_omitted_and_the_run_degraded() {
    let r = &replicate(&model(&graph_scenario("", 1.0)), 0)[0];
    let runs = r["logical_run_total"];
    assert_eq!(r["outcome_total.degraded"], runs);
    assert_eq!(r["step.enrich.omitted_total"], runs);
    assert_eq!(r["dependency.search.attempt_total"], runs, "INVALID_INPUT is never retried");
    assert_eq!(r["run_latency_ms.max"], 1100.0, "plan, search, answer");
}

#[test]
fn a_fallback_rescues_the_step_and_marks_the_run_degraded() {
    let r = &replicate(&model(&graph_scenario("steps.enrich = { fallback = \"cache\" }", 1.0)), 0)[0];
    let runs = r["logical_run_total"];
    assert_eq!(r["outcome_total.degraded"], runs);
    assert_eq!(r["fallback_used_total"], runs);
    assert_eq!(r["step.enrich.omitted_total"], 0.0);
    assert_eq!(r["dependency.cache.attempt_total"], runs);
}

#[test]
fn deadline_propagation_bounds_the_run_and_fixed_timeouts_do_not() {
    // The model takes 2 s per call; the deadline is 3 s for two sequential calls.
    let slow = |policy: &str| graph_scenario(policy, 0.0).replace("value_ms = 500", "value_ms = 2000");
    let fixed = &replicate(&model(&slow("deadline_propagation = false\ntimeout_ms = 10000")), 0)[0];
    assert_eq!(fixed["deadline_exceeded_ratio"], 1.0);
    assert_eq!(fixed["run_past_deadline_ratio"], 1.0);
    assert_eq!(fixed["outcome_total.succeeded"], fixed["logical_run_total"]);
    let propagated = &replicate(&model(&slow("deadline_propagation = true\ntimeout_ms = 10000")), 0)[0];
    // Stopped at the deadline: none ran past it, and none had a result by it.
    assert_eq!(propagated["run_past_deadline_ratio"], 0.0);
    assert_eq!(propagated["deadline_exceeded_ratio"], 1.0, "a run stopped for lack of time missed its deadline");
    assert_eq!(propagated["outcome_total.failed"], propagated["logical_run_total"]);
    assert!(propagated["run_latency_ms.max"] <= 3000.0);
}

#[test]
fn the_retry_budget_caps_attempts_per_run() {
    // Every search attempt fails with a retryable error; 3 attempts allowed but 1 retry token.
    let text = graph_scenario(
        "retry = { max_attempts = 3, backoff = { kind = \"none\" } }\nbudget = { retry_tokens = 1 }",
        0.0,
    )
    .replace("errors = { invalid_input = 0 }", "errors = { overloaded = 1.0 }");
    let r = &replicate(&model(&text), 0)[0];
    let runs = r["logical_run_total"];
    assert_eq!(r["dependency.search.attempt_total"], 2.0 * runs);
    assert_eq!(r["budget_exhausted_total.retry"], runs);
}

#[test]
fn a_run_ended_by_one_branch_frees_a_sibling_waiting_for_a_lost_reply() {
    // Branch a never gets its reply (the station served it); branch b fails at once and ends
    // the run. The run's slot must be freed, not kept until the drain limit.
    let text = r#"
[simulation]
duration_s = 20
seed = 1
drain_limit_s = 60

[[dependency]]
name = "lossy"
servers = 10
service_time = { dist = "exponential", mean_ms = 10 }
hang_probability = 1.0

[[dependency]]
name = "bad"
servers = 10
service_time = { dist = "exponential", mean_ms = 100 }
errors = { invalid_input = 1.0 }

[[workflow]]
name = "w"
arrivals = { rate_per_s = 1 }
deadline_ms = 10000

  [[workflow.step]]
  id = "a"
  dependency = "lossy"

  [[workflow.step]]
  id = "b"
  dependency = "bad"

[policy.p]
deadline_propagation = false
timeout_ms = 5000
retry = { max_attempts = 1 }
"#;
    let r = &replicate(&model(text), 0)[0];
    assert_eq!(r["outcome_total.failed"], r["logical_run_total"]);
    assert_eq!(r["step.b.failed_total"], r["logical_run_total"]);
    assert_eq!(r["safe_outcome_ratio"], 0.0, "finalized runs are counted: none safe, all failed");
}

#[test]
fn steps_waiting_for_a_concurrency_token_start_first_come_first_served() {
    // One token. Roots a (100 ms) and b (fails after 100 ms); c follows a and takes 1 s.
    // b waits for the token before c is ready, so b runs second and fails the run at 200 ms.
    let text = r#"
[simulation]
duration_s = 10
seed = 1

[[dependency]]
name = "d100"
servers = 100
service_time = { dist = "constant", value_ms = 100 }

[[dependency]]
name = "d1000"
servers = 100
service_time = { dist = "constant", value_ms = 1000 }

[[dependency]]
name = "bad"
servers = 100
service_time = { dist = "constant", value_ms = 100 }
errors = { invalid_input = 1.0 }

[[workflow]]
name = "w"
arrivals = { rate_per_s = 1 }
deadline_ms = 100000

  [[workflow.step]]
  id = "a"
  dependency = "d100"

  [[workflow.step]]
  id = "b"
  dependency = "bad"

  [[workflow.step]]
  id = "c"
  after = ["a"]
  dependency = "d1000"

[policy.p]
budget = { concurrency_tokens = 1 }
"#;
    let r = &replicate(&model(text), 0)[0];
    assert_eq!(r["run_latency_ms.max"], 200.0);
    assert_eq!(r["dependency.d1000.attempt_total"], 0.0, "c never overtook b");
    assert_eq!(r["budget_exhausted_total.concurrency"], 2.0 * r["logical_run_total"], "b waited, then c waited");
}

#[test]
fn a_write_that_timed_out_earlier_is_handed_off_even_if_the_last_attempt_failed_otherwise() {
    // Every reply is lost, so the first write always ends EFFECT_UNKNOWN; the same-key re-send
    // then either loses its reply too or is refused OVERLOADED (50 %). Either way the effect of
    // the first write may have landed, so the run is handed off, never reported as failed.
    let text = write_scenario(
        "errors = { overloaded = 0.5 }\nstatus_lookup_time = { dist = \"constant\", value_ms = 1 }",
        "idempotency = \"key\"",
        LOST_REPLIES.replace("toxicity = 0.2", "toxicity = 1.0").as_str(),
        "timeout_ms = 1000\non_effect_unknown = \"reconcile_first\"\nretry = { max_attempts = 2, backoff = { kind = \"none\" } }",
    );
    let r = &replicate(&model(&text), 0)[0];
    assert_eq!(r["outcome_total.failed"], 0.0);
    assert_eq!(r["outcome_total.handoff"] + r["outcome_total.succeeded"], r["logical_run_total"]);
    assert!(r["outcome_total.handoff"] > 0.0);
}
