//! The `opossum` and `cockatiel` breaker kinds end to end, as a user configures them in TOML
//! (docs/scenario.md 8.7): a dependency that fails every attempt for 10 s, its step falling back
//! to a cache. The figures that tell the two libraries apart, and would change if the model's
//! semantics were wrong: opossum leaves OPEN by a timer, so every open spell lasts exactly
//! `reset_timeout_ms` and the half-open spell waits for the next call; cockatiel leaves OPEN only
//! on the next call after `half_open_after_ms`, so every open spell lasts longer, and its one
//! trial decides a constant 20 ms later, so every half-open spell lasts exactly 20 ms.

mod common;
use common::*;
use faultline::engine::{Model, simulate};
use faultline::experiment::batch::replication_seed;
use faultline::metrics::MetricMap;
use faultline::scenario::{Format, Source, parse_source};

/// `api` (constant 20 ms, 100 servers: nothing queues) fails every attempt that arrives in
/// [20 s, 30 s); the step falls back to `cache`. 20 runs/s (Poisson) for 60 s, 5 s warm-up.
fn scenario(breaker: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 60
warmup_s = 5
seed = 11

[[dependency]]
name = "api"
servers = 100
service_time = {{ dist = "constant", value_ms = 20 }}

[[dependency]]
name = "cache"
servers = 100
service_time = {{ dist = "constant", value_ms = 5 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 20 }}
deadline_ms = 10000

  [[workflow.step]]
  id = "fetch"
  dependency = "api"
  fallback = "cache"

[[fault]]
kind = "errors"
target = "api"
start_s = 20
duration_s = 10
errors = {{ transient_transport = 1.0 }}

[policy.p]
retry = {{ max_attempts = 1 }}

[[policy.p.circuit_breaker]]
dependency = "api"
{breaker}
"#
    )
}

fn run(text: &str) -> MetricMap {
    let m = model(text);
    let p = m.policy_index("p").unwrap();
    simulate(&m, p, replication_seed(m.world.seed, 0)).unwrap_or_else(|e| panic!("{e}")).metrics
}

fn get(m: &MetricMap, name: &str) -> f64 {
    *m.get(name).unwrap_or_else(|| panic!("no metric {name}"))
}

/// (opens, half-opens, closes, open s, half-open s) of breaker `api`, after checking the cycle
/// both kinds must show: open in the fault, every open ends in a half-open, one close after it,
/// every refused or failed call served by the fallback.
fn cycle(r: &MetricMap) -> (f64, f64, f64, f64, f64) {
    let n = |s: &str| get(r, &format!("breaker.api.transition_total.{s}"));
    let t = |s: &str| get(r, &format!("breaker.api.time_in_state_s.{s}"));
    let (open, half, closed) = (n("open"), n("half_open"), n("closed"));
    assert!(open >= 2.0, "the fault opens the breaker, and trials in the fault reopen it: {open}");
    assert_eq!(half, open, "every open ends in a half-open");
    assert_eq!(closed, 1.0, "closes once, after the fault");
    let refused = get(r, "refused_total.circuit_open");
    assert!(refused > 50.0, "open for most of the 10 s fault at 20 runs/s: {refused}");
    let errors = get(r, "dependency.api.error_total.transient_transport");
    assert_eq!(get(r, "fallback_used_total"), refused + errors);
    assert_eq!(get(r, "outcome_total.failed"), 0.0);
    assert!((t("closed") + t("open") + t("half_open") - 55.0).abs() < 1e-6, "the states partition 55 s");
    (open, half, closed, t("open"), t("half_open"))
}

#[test]
fn an_opossum_breaker_is_open_exactly_reset_timeout_each_time_and_half_open_until_a_call() {
    let r = run(&scenario(
        "kind = \"opossum\"\nreset_timeout_ms = 2000\nrolling_count_timeout_ms = 2000\nrolling_count_buckets = 10",
    ));
    let (opens, halves, _, open_s, half_s) = cycle(&r);
    // The reset timer: every open spell is exactly 2 s (all inside the measured window).
    assert!((open_s - 2.0 * opens).abs() < 1e-6, "open {open_s} s over {opens} opens");
    // HALF_OPEN waits for the next call (Poisson, 50 ms apart on average) and its 20 ms.
    assert!(half_s > 0.020 * halves + 1e-3, "half-open {half_s} s over {halves}");
    println!("opossum: {opens} opens, open {open_s} s, half-open {half_s} s");
}

#[test]
fn a_cockatiel_breaker_is_open_until_the_next_call_and_half_open_exactly_one_trial() {
    for breaker in [
        "breaker = \"consecutive\"\nthreshold = 5",
        "breaker = \"sampling\"\nthreshold = 0.5\nduration_ms = 2000\nminimum_rps = 5",
    ] {
        let r = run(&scenario(&format!("kind = \"cockatiel\"\n{breaker}\nhalf_open_after_ms = 2000")));
        let (opens, halves, _, open_s, half_s) = cycle(&r);
        // No timer: each open spell runs from the break to the first call after 2 s.
        assert!(open_s > 2.0 * opens + 1e-3, "{breaker}: open {open_s} s over {opens} opens");
        // One trial, decided by its own outcome 20 ms later (constant service, no queue).
        assert!((half_s - 0.020 * halves).abs() < 1e-6, "{breaker}: half-open {half_s} s over {halves}");
        println!("cockatiel {breaker:?}: {opens} opens, open {open_s} s, half-open {half_s} s");
    }
}

#[test]
fn a_cockatiel_consecutive_breaker_lets_exactly_threshold_failures_through_before_it_opens() {
    // The fault makes every attempt fail; the errors are the first `threshold` failures, one
    // per failed trial (each reopens) and the attempts already in flight when it opened.
    for threshold in [3u32, 8] {
        let r = run(&scenario(&format!(
            "kind = \"cockatiel\"\nbreaker = \"consecutive\"\nthreshold = {threshold}\nhalf_open_after_ms = 2000"
        )));
        let (opens, ..) = cycle(&r);
        let errors = get(&r, "dependency.api.error_total.transient_transport");
        let trials_failed = opens - 1.0;
        let extra = errors - f64::from(threshold) - trials_failed;
        assert!((0.0..=2.0).contains(&extra), "threshold {threshold}: {errors} errors, {opens} opens");
        println!("threshold {threshold}: {errors} errors, {opens} opens");
    }
}

#[test]
fn kinds_reject_the_other_kinds_fields_and_require_cockatiels_own() {
    let bad = |breaker: &str| {
        let source = Source::from_text("breaker.toml", &scenario(breaker), Format::Toml);
        let scenario = parse_source(&source).unwrap_or_else(|e| panic!("{e}"));
        Model::compile(&scenario, &source).map(|_| ()).unwrap_err().to_string()
    };
    let e = bad("kind = \"opossum\"\nfailure_ratio = 0.5");
    assert!(e.contains("unknown field `failure_ratio`"), "{e}");
    let e = bad("kind = \"cockatiel\"\nbreaker = \"consecutive\"\nthreshold = 5");
    assert!(e.contains("half_open_after_ms"), "{e}");
    let e = bad("kind = \"cockatiel\"\nbreaker = \"consecutive\"\nthreshold = 2.5\nhalf_open_after_ms = 1000");
    assert!(e.contains("threshold"), "{e}");
    let e = bad("kind = \"cockatiel\"\nbreaker = \"sampling\"\nthreshold = 0.5\nhalf_open_after_ms = 1000");
    assert!(e.contains("duration_ms"), "{e}");
    let e = bad("kind = \"opossum\"\nrolling_count_buckets = 0");
    assert!(e.contains("rolling_count_buckets"), "{e}");
}

#[test]
fn an_opossum_timeout_shorter_than_the_service_time_opens_a_breaker_on_a_healthy_dependency() {
    // `api` answers every call correctly in 20 ms. opossum's timer fails a call still out
    // after `timeout_ms`: at 10 ms every call is a failure when its timer fires (no end
    // needed), so the breaker opens though `api` never errs; at 30 ms nothing times out.
    let text = |timeout_ms: u32| {
        scenario(&format!("kind = \"opossum\"\nreset_timeout_ms = 2000\ntimeout_ms = {timeout_ms}"))
            .replace("transient_transport = 1.0", "transient_transport = 0.0")
    };
    let r = run(&text(10));
    assert_eq!(get(&r, "dependency.api.error_total.transient_transport"), 0.0);
    let opens = get(&r, "breaker.api.transition_total.open");
    assert!(opens >= 10.0, "opened {opens} times by timeouts alone");
    assert_eq!(get(&r, "breaker.api.transition_total.closed"), 0.0, "every trial times out: never closes");
    let r = run(&text(30));
    assert_eq!(get(&r, "breaker.api.transition_total.open"), 0.0);
    println!("timeout 10 ms: {opens} opens; 30 ms: none");
}
