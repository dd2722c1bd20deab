//! Isolation and overload mechanisms end to end, as a user configures them in TOML: circuit
//! breakers, bulkheads, shared retry budgets, hedging, load shedding, queue policies, admission
//! and fan-out limits. Each test simulates a small scenario on a fixed seed and checks what the
//! mechanism's definition (docs/scenario.md 8.7-8.11, the runtime's rules) or a queueing
//! closed form makes exact or tightly bounded, usually against the same scenario without the
//! mechanism (common random numbers make the two comparable run by run).

mod common;
use common::*;
use faultline::engine::{Model, Replication, simulate};
use faultline::experiment::batch::replication_seed;
use faultline::metrics::MetricMap;
use faultline::metrics::timeseries::FIXED_COLUMNS;
use std::path::PathBuf;
use std::process::{Command, Output};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Replication 0 of the policy named `policy`, with its time series.
fn run(m: &Model, policy: &str) -> Replication {
    let p = m.policy_index(policy).unwrap_or_else(|| panic!("no policy {policy}"));
    simulate(m, p, replication_seed(m.world.seed, 0)).unwrap_or_else(|e| panic!("{e}"))
}

/// The metrics of replication 0 of `policy`.
fn metrics(m: &Model, policy: &str) -> MetricMap {
    run(m, policy).metrics
}

/// The metrics of replication 0 of the only (or first) policy of a scenario text.
fn only(toml: &str) -> MetricMap {
    replicate(&model(toml), 0).swap_remove(0)
}

fn get(m: &MetricMap, name: &str) -> f64 {
    *m.get(name).unwrap_or_else(|| panic!("no metric {name}"))
}

/// Refusals at dependency `d` (file order, of `dependencies`) in time-series row `row`; 0 past
/// the end. A row is fixed columns, then attempts, queue depth and refusals per dependency.
fn refused_in_row(r: &Replication, dependencies: usize, d: usize, row: usize) -> u64 {
    if row < r.timeseries.rows() { r.timeseries.value(row, FIXED_COLUMNS.len() + 2 * dependencies + d) } else { 0 }
}

fn assert_close(actual: f64, expected: f64, tolerance: f64, label: &str) {
    assert!((actual - expected).abs() <= tolerance, "{label}: got {actual}, expected {expected} +- {tolerance}");
}

// ---------------------------------------------------------------------------------------------
// 1. Circuit breakers
// ---------------------------------------------------------------------------------------------

/// `api` (constant 20 ms, 100 servers: nothing queues) fails every attempt that arrives in
/// [20 s, 30 s); the step falls back to `cache`. 20 runs/s for 60 s, 5 s warm-up, 1 s windows.
/// One attempt per call, so every failure or refusal goes straight to the fallback.
fn breaker_scenario(breaker: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 60
warmup_s = 5
seed = 11
timeseries_window_s = 1

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

/// What both breaker kinds must show on [`breaker_scenario`] with a 2 s open state.
fn check_breaker_cycle(text: &str) {
    let m = model(text);
    let rep = run(&m, "p");
    let r = &rep.metrics;
    let (open, half, closed) = (
        get(r, "breaker.api.transition_total.open"),
        get(r, "breaker.api.transition_total.half_open"),
        get(r, "breaker.api.transition_total.closed"),
    );
    assert!(open >= 1.0, "the fault opens the breaker");
    // Every probe during the fault fails (each reopens), the first probes after it succeed: the
    // cycle is closed -> open -> (half_open -> open)* -> half_open -> closed, so it closes once
    // and each half-open ends in exactly one open or the final close.
    assert_eq!(closed, 1.0, "closes again once, after the fault");
    assert_eq!(half, open, "every open ends in a half-open");

    let refused = get(r, "refused_total.circuit_open");
    assert!(refused > 50.0, "open for most of the 10 s fault at 20 runs/s: {refused}");
    assert_eq!(get(r, "dependency.api.refused_total.circuit_open"), refused);
    assert_eq!(get(r, "dependency.cache.refused_total.circuit_open"), 0.0, "the fallback is not guarded");
    // Refused or failed at api, every call is served by the fallback: no run fails.
    let api_errors = get(r, "dependency.api.error_total.transient_transport");
    assert_eq!(get(r, "fallback_used_total"), refused + api_errors);
    assert_eq!(get(r, "outcome_total.degraded"), get(r, "fallback_used_total"));
    assert_eq!(get(r, "outcome_total.failed"), 0.0);
    // Refusals happen only from the fault's start until the 2 s open state after its last
    // failure (by 30.02 s) and the half-open probes that follow have ended: rows 20 to 32.
    for row in (0..20).chain(33..70) {
        assert_eq!(refused_in_row(&rep, 2, 0, row), 0, "refusal in window {row} s, outside the fault");
    }

    // The states partition the measured 55 s (the integrals are whole microseconds).
    let t = |s: &str| get(r, &format!("breaker.api.time_in_state_s.{s}"));
    assert_close(t("closed") + t("open") + t("half_open"), 60.0 - 5.0, 1e-6, "time in states");
    // Closed before the fault (15 s) and from at most 2 s plus a probe round after it (28 s).
    assert!(t("closed") >= 15.0 + 28.0 - 0.5, "closed {}", t("closed"));
    // Open for most of the fault: the breaker trips within ~0.5 s, and half-open rounds last
    // a probe's arrival and service (well under 0.3 s each, five at most).
    assert!(t("open") >= 8.0 && t("open") <= 12.1, "open {}", t("open"));
}

#[test]
fn a_resilience4j_breaker_opens_in_the_fault_refuses_falls_back_and_closes_after() {
    check_breaker_cycle(&breaker_scenario(
        "failure_rate_threshold = 50\nminimum_number_of_calls = 10\nsliding_window_size = 10\n\
         wait_duration_in_open_state_ms = 2000\npermitted_number_of_calls_in_half_open_state = 3",
    ));
}

#[test]
fn a_polly_breaker_opens_in_the_fault_refuses_falls_back_and_closes_after() {
    check_breaker_cycle(&breaker_scenario(
        "kind = \"polly\"\nfailure_ratio = 0.5\nminimum_throughput = 10\nsampling_duration_ms = 2000\n\
         break_duration_ms = 2000",
    ));
}

#[test]
fn an_open_state_lasts_exactly_the_wait_with_automatic_transition_and_longer_without() {
    let fields = "failure_rate_threshold = 50\nminimum_number_of_calls = 10\nsliding_window_size = 10\n\
                  wait_duration_in_open_state_ms = 2000\npermitted_number_of_calls_in_half_open_state = 3";
    // A timer moves OPEN to HALF_OPEN when the 2 s are up: every open state lasts exactly 2 s
    // (all of them lie inside the measured window).
    let r = only(&breaker_scenario(&format!("{fields}\nautomatic_transition_from_open_to_half_open_enabled = true")));
    let opens = get(&r, "breaker.api.transition_total.open");
    assert!(opens >= 2.0, "{opens}");
    assert_close(get(&r, "breaker.api.time_in_state_s.open"), 2.0 * opens, 1e-6, "open time");
    // Without the timer the first attempt strictly after the 2 s moves it, and arrivals are
    // Poisson: every open state lasts longer than 2 s.
    let r = only(&breaker_scenario(fields));
    let opens = get(&r, "breaker.api.transition_total.open");
    assert!(get(&r, "breaker.api.time_in_state_s.open") > 2.0 * opens + 1e-3);
}

#[test]
fn a_breaker_that_never_trips_is_closed_for_the_whole_measured_window() {
    // The same scenario without the fault: no transition, all 55 s closed, nothing refused.
    let text = breaker_scenario("minimum_number_of_calls = 10\nsliding_window_size = 10")
        .replace("transient_transport = 1.0", "transient_transport = 0.0");
    let r = only(&text);
    for s in ["open", "half_open", "closed"] {
        assert_eq!(get(&r, &format!("breaker.api.transition_total.{s}")), 0.0, "{s}");
    }
    assert_close(get(&r, "breaker.api.time_in_state_s.closed"), 55.0, 1e-6, "closed");
    assert_eq!(get(&r, "refused_total.circuit_open"), 0.0);
}

#[test]
fn a_breaker_tripped_during_warm_up_counts_its_state_but_not_the_transition() {
    // The fault moves into the warm-up, [1 s, 3 s), and the breaker then stays open for 100 s:
    // the whole measured window [5 s, 60 s) is open, but no transition happened inside it.
    let text = breaker_scenario(
        "minimum_number_of_calls = 10\nsliding_window_size = 10\nwait_duration_in_open_state_ms = 100000",
    )
    .replace("start_s = 20\nduration_s = 10", "start_s = 1\nduration_s = 2");
    let r = only(&text);
    for s in ["open", "half_open", "closed"] {
        assert_eq!(get(&r, &format!("breaker.api.transition_total.{s}")), 0.0, "{s}");
    }
    assert_close(get(&r, "breaker.api.time_in_state_s.open"), 55.0, 1e-6, "open");
    assert_eq!(get(&r, "breaker.api.time_in_state_s.closed"), 0.0);
    // Every measured run is refused at api and served by the fallback.
    let runs = get(&r, "logical_run_total");
    assert_eq!(get(&r, "refused_total.circuit_open"), runs);
    assert_eq!(get(&r, "fallback_used_total"), runs);
    assert_eq!(get(&r, "dependency.api.attempt_total"), 0.0);
}

/// Two breaker entries that both guard only `api`.
fn two_breakers_on_one_dependency() -> String {
    breaker_scenario("minimum_number_of_calls = 10\nsliding_window_size = 10\nwait_duration_in_open_state_ms = 2000")
        + "\n[[policy.p.circuit_breaker]]\nkind = \"polly\"\ndependency = \"api\"\nminimum_throughput = 10\n\
           sampling_duration_ms = 2000\nbreak_duration_ms = 2000\n"
}

#[test]
fn two_breakers_on_one_dependency_get_distinct_labels_and_both_act() {
    let r = only(&two_breakers_on_one_dependency());
    let second: Vec<&String> =
        r.keys().filter(|k| k.starts_with("breaker.api-") && k.ends_with(".transition_total.open")).collect();
    assert_eq!(second.len(), 1, "one more label for the second breaker: {second:?}");
    // Both see the fault's first failures: 5 of the last 10 calls for resilience4j, 5 of the
    // ~45 calls of the last 2 s (11 % >= Polly's default 10 %) for Polly. Both open.
    assert!(get(&r, "breaker.api.transition_total.open") >= 1.0);
    assert!(get(&r, second[0]) >= 1.0, "{}", second[0]);
}

#[test]
fn a_repeated_breaker_label_gets_a_counting_suffix_as_the_docs_say() {
    let r = only(&two_breakers_on_one_dependency());
    assert!(
        r.contains_key("breaker.api-2.transition_total.open"),
        "{:?}",
        r.keys().filter(|k| k.starts_with("breaker.")).collect::<Vec<_>>()
    );
}

/// Writes at `tickets` take 5 s and time out at 1 s (EFFECT_UNKNOWN); their status lookups take
/// 10 ms and answer "not committed yet", so the write is sent again, up to 3 writes and 3
/// lookups per run. Policy `split` keys the breaker by operation, `shared` by dependency.
const WRITE_LOOKUP: &str = r#"
[simulation]
duration_s = 60
warmup_s = 5
seed = 5

[[dependency]]
name = "tickets"
servers = 1000
service_time = { dist = "constant", value_ms = 5000 }
status_lookup_time = { dist = "constant", value_ms = 10 }

[[workflow]]
name = "w"
arrivals = { rate_per_s = 5 }
deadline_ms = 60000

  [[workflow.step]]
  id = "draft"
  dependency = "tickets"
  effect = "write"
  idempotency = "key"
  status_lookup = true

[policy.split]
timeout_ms = 1000
retry = { max_attempts = 3, backoff = { kind = "none" } }

[[policy.split.circuit_breaker]]
dependency = "tickets"
circuit_key = "dependency_operation"
minimum_number_of_calls = 5
sliding_window_size = 10
wait_duration_in_open_state_ms = 5000

[policy.shared]
timeout_ms = 1000
retry = { max_attempts = 3, backoff = { kind = "none" } }

[[policy.shared.circuit_breaker]]
dependency = "tickets"
minimum_number_of_calls = 5
sliding_window_size = 10
wait_duration_in_open_state_ms = 5000
"#;

#[test]
fn per_operation_breakers_trip_the_write_circuit_and_keep_reconciliation_open() {
    let m = model(WRITE_LOOKUP);
    let r = metrics(&m, "split");
    assert!(get(&r, "breaker.tickets.write.transition_total.open") >= 1.0, "every write times out");
    assert!(get(&r, "dependency.tickets.refused_total.circuit_open") > 0.0);
    // Lookups all answer: the control circuit never opens and the read circuit sees nothing.
    for class in ["control", "read"] {
        for s in ["open", "half_open", "closed"] {
            assert_eq!(get(&r, &format!("breaker.tickets.{class}.transition_total.{s}")), 0.0, "{class} {s}");
        }
        assert_close(get(&r, &format!("breaker.tickets.{class}.time_in_state_s.closed")), 55.0, 1e-6, class);
    }
    // Every write attempt times out and is followed by exactly one lookup unless a lookup is
    // refused: attempts = writes + lookups = 2 x timed-out writes exactly.
    let unknown = get(&r, "effect_unknown_total");
    // The write circuit is open most of the time: the 5 timeouts that trip it, then 10 probes
    // per cycle of 5 s open plus 1 s of probing, about 90 in 55 s.
    assert!(unknown >= 20.0, "{unknown}");
    assert_eq!(get(&r, "dependency.tickets.attempt_total"), 2.0 * unknown, "no lookup was refused");

    // One circuit for everything: the open write circuit refuses the lookups too.
    let shared = metrics(&m, "shared");
    assert!(get(&shared, "breaker.tickets.transition_total.open") >= 1.0);
    assert!(
        get(&shared, "dependency.tickets.attempt_total") < 2.0 * get(&shared, "effect_unknown_total"),
        "a shared circuit refuses some lookups"
    );
}

/// `api` answers UNAUTHORIZED to every attempt; policy `default` ignores it (the default
/// `ignore`), policy `counted` counts every failure (`ignore = []`).
const UNAUTHORIZED: &str = r#"
[simulation]
duration_s = 30
seed = 2

[[dependency]]
name = "api"
servers = 100
service_time = { dist = "constant", value_ms = 20 }
errors = { unauthorized = 1.0 }

[[workflow]]
name = "w"
arrivals = { rate_per_s = 10 }
deadline_ms = 10000

  [[workflow.step]]
  id = "fetch"
  dependency = "api"

[policy.default]
[[policy.default.circuit_breaker]]
minimum_number_of_calls = 10
sliding_window_size = 10

[policy.counted]
[[policy.counted.circuit_breaker]]
minimum_number_of_calls = 10
sliding_window_size = 10
ignore = []
"#;

#[test]
fn ignored_failure_kinds_never_open_the_default_breaker() {
    let m = model(UNAUTHORIZED);
    let r = metrics(&m, "default");
    assert_eq!(get(&r, "dependency.api.error_total.unauthorized"), get(&r, "logical_run_total"));
    assert_eq!(get(&r, "breaker.api.transition_total.open"), 0.0);
    assert_eq!(get(&r, "refused_total.circuit_open"), 0.0);
    assert_close(get(&r, "breaker.api.time_in_state_s.closed"), 30.0, 1e-6, "closed");
    let counted = metrics(&m, "counted");
    assert!(get(&counted, "breaker.api.transition_total.open") >= 1.0, "counted, the same failures trip it");
    assert!(get(&counted, "refused_total.circuit_open") > 0.0);
}

// ---------------------------------------------------------------------------------------------
// 2. Bulkheads
// ---------------------------------------------------------------------------------------------

/// 100 runs/s of one 100 ms call at `api` (20 servers): an offered concurrency of 10. Policy
/// `p` makes one attempt per call under a bulkhead with `bulkhead` fields.
fn bulkhead_scenario(bulkhead: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 60
seed = 21

[[dependency]]
name = "api"
servers = 20
service_time = {{ dist = "constant", value_ms = 100 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 100 }}
deadline_ms = 10000

  [[workflow.step]]
  id = "fetch"
  dependency = "api"

[policy.p]
retry = {{ max_attempts = 1 }}

[[policy.p.bulkhead]]
dependency = "api"
{bulkhead}
"#
    )
}

#[test]
fn a_bulkhead_below_the_offered_concurrency_refuses_the_excess_as_erlang_b_says() {
    let r = only(&bulkhead_scenario("max_concurrent_calls = 5"));
    let runs = get(&r, "logical_run_total");
    let refused = get(&r, "refused_total.bulkhead");
    assert_eq!(get(&r, "dependency.api.refused_total.bulkhead"), refused);
    // A refused call fails its run (one attempt, no fallback); nothing else fails.
    assert_eq!(get(&r, "outcome_total.failed"), refused);
    assert_eq!(get(&r, "dependency.api.attempt_total"), runs - refused);
    // Permits are held exactly for the service time: an M/D/5/5 loss system, whose blocking is
    // Erlang B(5, 10) = 0.564 whatever the service distribution. 6000 arrivals; the standard
    // error of the blocking ratio is under 0.01 (positively correlated neighbours at most
    // double the binomial 0.0064), so 0.03 is three of them.
    let b = erlang_b(5, 10.0);
    assert_close(refused / runs, b, 0.03, "blocking");
    // Never more than 5 attempts busy at the 20 servers: utilization x servers <= 5 (nothing
    // queues, so in_system is the busy count), and on average the carried load 10 (1 - B).
    let busy = get(&r, "dependency.api.utilization") * 20.0;
    assert!(busy <= 5.0 + 1e-9, "{busy}");
    assert!(get(&r, "dependency.api.in_system.mean") <= 5.0 + 1e-9);
    assert_close(busy, 10.0 * (1.0 - b), 0.3, "carried load");
    assert_eq!(get(&r, "dependency.api.queue_wait_ms.mean"), 0.0, "5 permits never fill 20 servers");
}

#[test]
fn waiting_for_a_permit_turns_refusals_into_waits() {
    let at_once = only(&bulkhead_scenario("max_concurrent_calls = 5"));
    let r = only(&bulkhead_scenario("max_concurrent_calls = 5\nmax_wait_ms = 50"));
    let (refused, refused_at_once) = (get(&r, "refused_total.bulkhead"), get(&at_once, "refused_total.bulkhead"));
    // Offered 10 on 5 permits of 100 ms: at most 50 calls/s can pass however long they wait,
    // so about half are refused anyway (5 permits x 60 s / 0.1 s = 3000 calls, plus the 5 in
    // flight at the end). Waiting fills the permit time that refusing at once leaves idle
    // (Erlang B: 10 x 0.564 = 5.6 refused while 0.64 of the permits stand free on average).
    let served = get(&r, "dependency.api.attempt_total");
    assert!(served <= 3005.0, "{served}");
    assert!(served > get(&at_once, "dependency.api.attempt_total"));
    assert!(refused > 0.0 && refused < refused_at_once, "{refused} vs {refused_at_once}");
    assert_eq!(get(&r, "outcome_total.failed"), refused);
    // The permits still bound the busy servers.
    assert!(get(&r, "dependency.api.utilization") * 20.0 <= 5.0 + 1e-9);
    // Waiting happens at the bulkhead, not at the station, and adds at most 50 ms to a run.
    assert_eq!(get(&r, "dependency.api.queue_wait_ms.mean"), 0.0);
    let max = get(&r, "run_latency_ms.max");
    assert!(max > 100.0 && max <= 150.0 + 1e-3, "{max}");
}

/// Writes at `tickets` take 1.2 s and time out at 1 s (EFFECT_UNKNOWN); their status lookup,
/// sent at the timeout, takes 300 ms and so finds the write committed (at 1.2 s). 5 runs/s.
fn reserve_scenario(bulkhead: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 60
seed = 9

[[dependency]]
name = "tickets"
servers = 1000
service_time = {{ dist = "constant", value_ms = 1200 }}
status_lookup_time = {{ dist = "constant", value_ms = 300 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 5 }}
deadline_ms = 60000

  [[workflow.step]]
  id = "draft"
  dependency = "tickets"
  effect = "write"
  idempotency = "key"
  status_lookup = true

[policy.p]
timeout_ms = 1000
retry = {{ max_attempts = 1 }}

[[policy.p.bulkhead]]
dependency = "tickets"
{bulkhead}
"#
    )
}

#[test]
fn reserved_permits_let_status_lookups_through_while_writes_are_refused() {
    // Writes may hold 6 - 4 = 2 permits; lookups may take all 6. Either may wait 100 ms.
    let r = only(&reserve_scenario("max_concurrent_calls = 6\nreserved_for_control = 4\nmax_wait_ms = 100"));
    let runs = get(&r, "logical_run_total");
    let unknown = get(&r, "effect_unknown_total");
    // Each admitted write holds a permit for exactly its 1 s timeout, and at most 2 are held
    // at once: at most 2 x 60 writes in 60 s (+2 at the edges). A refused write fails its run.
    assert!(unknown > 50.0 && unknown <= 122.0, "{unknown}");
    assert_eq!(unknown, runs - get(&r, "outcome_total.failed"), "every admitted write times out");
    // Offered 5 writes/s on 2 permits of 1 s: more than half are refused (a 100 ms wait
    // rescues few, Erlang B(2, 5) = 0.68 are refused without one).
    assert!(get(&r, "refused_total.bulkhead") > 0.5 * runs);
    // A lookup is refused only when lookups and at most 2 writes hold all 6 permits for 100
    // ms, so at least 4 lookups at once: under 2 lookups/s of 0.3 s, B(4, 0.6) = 0.003. So
    // practically every unknown effect is reconciled.
    let handoff = get(&r, "outcome_total.handoff");
    assert!(handoff <= 0.01 * unknown, "{handoff} of {unknown}");
    assert_eq!(get(&r, "reconciled_total") + handoff, unknown);

    // The same 2 permits for writes, none kept for lookups. When a write times out, its permit
    // goes to a write waiting for one (one arrived in the last 100 ms with probability
    // 1 - exp(-0.5) = 0.39), and the lookup must get the other permit within 100 ms, which a
    // write holds for 1 s or a lookup for 0.3 s: the lookup is refused most of those times and
    // the run handed off. About 0.2 to 0.35 handoffs per unknown effect, against <= 0.01 above.
    let r = only(&reserve_scenario("max_concurrent_calls = 2\nmax_wait_ms = 100"));
    let unknown = get(&r, "effect_unknown_total");
    let handoff = get(&r, "outcome_total.handoff");
    assert!(handoff > 0.1 * unknown, "{handoff} of {unknown}");
    assert_eq!(get(&r, "reconciled_total") + handoff, unknown);
}

/// Two workflows on `api` (1000 servers, constant 100 ms), one attempt per call: `heavy`
/// (tenant `a`, 100 runs/s, a read step `h_read`) and `light` (tenant `b`, 10 runs/s, a write
/// step `l_write`). Offered concurrency: 10 and 1.
fn keyed_bulkhead(bulkhead: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 30
seed = 23

[[dependency]]
name = "api"
servers = 1000
service_time = {{ dist = "constant", value_ms = 100 }}

[[workflow]]
name = "heavy"
tenant = "a"
arrivals = {{ rate_per_s = 100 }}
deadline_ms = 10000

  [[workflow.step]]
  id = "h_read"
  dependency = "api"

[[workflow]]
name = "light"
tenant = "b"
arrivals = {{ rate_per_s = 10 }}
deadline_ms = 10000

  [[workflow.step]]
  id = "l_write"
  dependency = "api"
  effect = "write"

[policy.p]
retry = {{ max_attempts = 1 }}

[[policy.p.bulkhead]]
{bulkhead}
"#
    )
}

#[test]
fn bulkheads_keyed_by_tenant_workflow_or_effect_limit_only_their_own_traffic() {
    // Each of these gives the heavy traffic its own 5 permits and leaves the light traffic
    // alone (its 1 call in flight on average never meets a limit of 5: B(5, 1) = 0.003, and
    // for the effect pools the light writes have a pool of their own).
    for bulkhead in [
        "key = \"tenant\"\ntenant = \"a\"\nmax_concurrent_calls = 5",
        "key = \"workflow\"\nworkflow = \"heavy\"\nmax_concurrent_calls = 5",
        "key = \"tenant\"\nmax_concurrent_calls = 5",
        "key = \"effect\"\nmax_concurrent_calls = 5",
    ] {
        let r = only(&keyed_bulkhead(bulkhead));
        let refused = get(&r, "refused_total.bulkhead");
        assert_eq!(get(&r, "step.h_read.failed_total") + get(&r, "step.l_write.failed_total"), refused, "{bulkhead}");
        // Heavy: Erlang B(5, 10) = 0.564 of ~3000 runs.
        assert!(get(&r, "step.h_read.failed_total") > 0.45 * 3000.0, "{bulkhead}");
        assert!(get(&r, "step.l_write.failed_total") <= 5.0, "{bulkhead}: {}", get(&r, "step.l_write.failed_total"));
    }
    // One bulkhead for the dependency: the light writes compete for the same 5 permits and
    // are refused as often as the heavy reads.
    let r = only(&keyed_bulkhead("max_concurrent_calls = 5"));
    assert!(get(&r, "step.l_write.failed_total") > 0.4 * 300.0, "{}", get(&r, "step.l_write.failed_total"));
}

// ---------------------------------------------------------------------------------------------
// 3. Shared retry budgets and adaptive throttling
// ---------------------------------------------------------------------------------------------

/// 40 runs/s of one call at `api` (200 servers, constant `service_ms`), which fails with
/// TRANSIENT_TRANSPORT with probability `failure`; up to 3 attempts, no backoff. Policy `base`
/// has no shared budget; every other policy adds one entry of `budgets` (name, body).
fn budget_scenario(failure: f64, service_ms: f64, budgets: &[(&str, &str)]) -> String {
    let mut t = format!(
        r#"
[simulation]
duration_s = 30
seed = 17

[[dependency]]
name = "api"
servers = 200
service_time = {{ dist = "constant", value_ms = {service_ms} }}
errors = {{ transient_transport = {failure} }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 40 }}
deadline_ms = 10000

  [[workflow.step]]
  id = "fetch"
  dependency = "api"

[policy.base]
retry = {{ max_attempts = 3, backoff = {{ kind = "none" }} }}
"#
    );
    for (name, body) in budgets {
        t += &format!(
            "\n[policy.{name}]\nretry = {{ max_attempts = 3, backoff = {{ kind = \"none\" }} }}\n\n\
             [[policy.{name}.retry_budget]]\n{body}\n"
        );
    }
    t
}

const GRPC: (&str, &str) = ("grpc", "kind = \"grpc\"\nmax_tokens = 10\ntoken_ratio = 0.1");

#[test]
fn grpc_throttling_stops_retries_at_half_failures_and_leaves_them_at_two_percent() {
    let m = model(&budget_scenario(0.5, 50.0, &[GRPC]));
    let base = metrics(&m, "base");
    let r = metrics(&m, "grpc");
    // Without a budget: 1 + 0.5 + 0.25 attempts per call (standard deviation 0.83 per call,
    // 1200 calls: 0.024; 0.1 is four of them).
    assert_close(get(&base, "retry_amplification_ratio"), 1.75, 0.1, "base amplification");
    assert_eq!(get(&base, "refused_total.retry_budget"), 0.0);
    // A failure takes a token, a success gives 0.1 back: at 50 % failures the bucket sinks to
    // max_tokens / 2 = 5 within a few calls and stays there, where retries are refused. Only
    // after ~10 successes in a row (p = 0.001) does a retry pass.
    let calls = get(&r, "logical_call_total");
    assert!(get(&r, "retry_amplification_ratio") < 1.05, "{}", get(&r, "retry_amplification_ratio"));
    // Half the first attempts fail and ask for a retry; nearly all are refused.
    assert!(get(&r, "refused_total.retry_budget") > 0.4 * calls, "{}", get(&r, "refused_total.retry_budget"));
    assert_eq!(get(&r, "dependency.api.refused_total.retry_budget"), get(&r, "refused_total.retry_budget"));

    // At 2 % failures each call adds 0.1 x 0.98 - 0.02 = +0.078 tokens on average: the bucket
    // stays full, and sinking to 5 would take 5 failures within ~10 calls (p ~ 1e-5 per call).
    let m = model(&budget_scenario(0.02, 50.0, &[GRPC]));
    let (base, r) = (metrics(&m, "base"), metrics(&m, "grpc"));
    assert_eq!(get(&r, "refused_total.retry_budget"), 0.0);
    assert!(get(&base, "dependency_attempt_total") > get(&base, "logical_call_total"), "there are retries");
    assert_eq!(get(&r, "dependency_attempt_total"), get(&base, "dependency_attempt_total"), "the same retries");
}

/// One entry of each other kind, with its defaults (docs/scenario.md 8.9).
const OTHER_BUDGETS: [(&str, &str); 4] = [
    // A reserve of 10 retries/s plus 0.2 per request: about 18 of the 68 retries/s wanted.
    ("finagle", "kind = \"finagle\""),
    // At most max(20 % of 8 to 11 attempts in flight, 3) = 3 retries in flight of the ~14 wanted.
    ("envoy", "kind = \"envoy\""),
    // 500 tokens, 10 per retry after a timeout-like failure, +1 per successful first attempt
    // (4/s): the quota is spent after 50 retries, then allows 0.4/s.
    ("aws", "kind = \"aws\""),
    // Accepts are 10 % of requests: rejection probability (1 - 2 x 0.1) / (1 + 1/n) ~ 0.8.
    ("throttle", "kind = \"adaptive_throttling\""),
];

#[test]
fn every_kind_of_budget_refuses_under_heavy_failure_and_nothing_without_failures() {
    // 90 % failures and 200 ms calls: 40 x (0.9 + 0.81) = 68 retries/s wanted.
    let m = model(&budget_scenario(0.9, 200.0, &OTHER_BUDGETS));
    let base = metrics(&m, "base");
    for (name, _) in OTHER_BUDGETS {
        let r = metrics(&m, name);
        let reason = if name == "throttle" { "throttled" } else { "retry_budget" };
        let refused = get(&r, &format!("refused_total.{reason}"));
        assert!(refused > 100.0, "{name}: {refused} refused");
        assert!(
            get(&r, "dependency_attempt_total") < get(&base, "dependency_attempt_total"),
            "{name}: fewer attempts than without a budget"
        );
        let other = if name == "throttle" { "retry_budget" } else { "throttled" };
        assert_eq!(get(&r, &format!("refused_total.{other}")), 0.0, "{name}");
    }
    // Without failures nothing is retried: the retry budgets refuse nothing.
    let m = model(&budget_scenario(0.0, 200.0, &OTHER_BUDGETS));
    for (name, _) in &OTHER_BUDGETS[..3] {
        let r = metrics(&m, name);
        assert_eq!(get(&r, "refused_total.retry_budget") + get(&r, "refused_total.throttled"), 0.0, "{name}");
        assert_eq!(get(&r, "dependency_attempt_total"), get(&r, "logical_call_total"), "{name}");
        assert_eq!(get(&r, "outcome_total.succeeded"), get(&r, "logical_run_total"), "{name}");
    }
}

#[test]
fn an_empty_retry_budget_refuses_exactly_every_retry() {
    // Budgets that can never pay for a retry: each failed first attempt asks for one retry,
    // is refused, and its run fails; first attempts always pass. So refusals = failures of
    // first attempts = the dependency's errors, and there is one attempt per call.
    let empty = [
        ("finagle", "kind = \"finagle\"\nmin_retries_per_s = 0\npercent_can_retry = 0"),
        ("envoy", "kind = \"envoy\"\nbudget_percent = 0\nmin_retry_concurrency = 0"),
        ("aws", "kind = \"aws\"\ninitial_retry_tokens = 0"),
    ];
    let m = model(&budget_scenario(0.3, 50.0, &empty));
    for (name, _) in empty {
        let r = metrics(&m, name);
        let errors = get(&r, "dependency.api.error_total.transient_transport");
        assert!(errors > 200.0, "{name}");
        assert_eq!(get(&r, "refused_total.retry_budget"), errors, "{name}");
        assert_eq!(get(&r, "dependency_attempt_total"), get(&r, "logical_call_total"), "{name}");
        assert_eq!(get(&r, "outcome_total.failed"), errors, "{name}");
    }
}

/// Found as a bug: without a floor on the window's requests a cold client locked itself out
/// (561 of 1200 runs refused on seed 11017). `min_requests` (default 100) is that floor.
#[test]
fn adaptive_throttling_refuses_nothing_when_nothing_fails() {
    // The book's rule rejects with max(0, (requests - 2 accepts) / (requests + 1)): with every
    // answer an accept it is 0 in steady state, which is what a user expects at 0 failures.
    // At a cold start, before the first 200 ms reply, the n-th request sees (n - 1) / n.
    for seed in [17, 11_017] {
        let text = budget_scenario(0.0, 200.0, &OTHER_BUDGETS[3..])
            .replace("seed = 17", &format!("seed = {seed}\ntimeseries_window_s = 1"));
        let rep = run(&model(&text), "throttle");
        let refused = get(&rep.metrics, "refused_total.throttled");
        let by_second: Vec<u64> = (0..30).map(|row| refused_in_row(&rep, 1, 0, row)).collect();
        assert_eq!(refused, 0.0, "seed {seed}: refusals per second {by_second:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// 4. Hedging
// ---------------------------------------------------------------------------------------------

/// 50 runs/s of one call at `llm` (1000 servers: nothing queues), lognormal with p50 50 ms and
/// p95 500 ms (sigma = ln 10 / 1.645 = 1.400). One attempt per call. Policy `plain` does not
/// hedge; `hedged` hedges once after 100 ms, about the 69th percentile.
fn hedging_scenario(step_extra: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 60
seed = 31

[[dependency]]
name = "llm"
servers = 1000
service_time = {{ p50_ms = 50, p95_ms = 500 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 50 }}
deadline_ms = 60000

  [[workflow.step]]
  id = "ask"
  dependency = "llm"
  {step_extra}

[policy.plain]
retry = {{ max_attempts = 1 }}

[policy.hedged]
retry = {{ max_attempts = 1 }}
hedging = {{ delay_ms = 100, max_hedged_attempts = 1 }}
"#
    )
}

#[test]
fn hedging_a_heavy_tailed_read_cuts_its_tail() {
    let m = model(&hedging_scenario(""));
    let (plain, hedged) = (metrics(&m, "plain"), metrics(&m, "hedged"));
    let runs = get(&hedged, "logical_run_total");
    assert_eq!(get(&plain, "hedge_sent_total"), 0.0);
    // A hedge goes out when the attempt has not answered after 100 ms: P(T > 100) = 0.3102.
    // 3000 runs: binomial standard error 0.0084; 0.03 is 3.5 of them.
    let sent = get(&hedged, "hedge_sent_total");
    assert_close(sent / runs, 0.3102, 0.03, "hedges per run");
    // It wins when 100 + T2 < T1: 0.1972 per run (0.636 of the hedges sent).
    let won = get(&hedged, "hedge_won_total");
    assert_close(won / runs, 0.1972, 0.03, "hedges won per run");
    assert_eq!(get(&hedged, "dependency.llm.attempt_total"), runs + sent);
    // Latency without hedging is T, with it min(T1, 100 + T2). Theoretical p99: 1298 ms and
    // 353 ms. With 3000 runs the empirical p99 lies between the 98.46th and 99.54th
    // percentiles (three standard errors, 0.0018 each, of the share above it): 1028..1916 ms
    // and 305..456 ms (widened by the histogram's 0.1 %).
    let (p99_plain, p99_hedged) = (get(&plain, "run_latency_ms.p99"), get(&hedged, "run_latency_ms.p99"));
    assert!((1026.0..=1918.0).contains(&p99_plain), "plain p99 {p99_plain}");
    assert!((304.0..=457.0).contains(&p99_hedged), "hedged p99 {p99_hedged}");
    // And run by run the hedged latency is never longer: the median does not move up.
    assert!(get(&hedged, "run_latency_ms.p50") <= get(&plain, "run_latency_ms.p50"));
    assert!(get(&hedged, "run_latency_ms.max") <= get(&plain, "run_latency_ms.max"));
    assert_eq!(get(&hedged, "outcome_total.succeeded"), runs);
}

#[test]
fn a_hedge_is_charged_as_a_retry() {
    // An empty shared retry budget refuses every hedge (one per run whose attempt is slower
    // than 100 ms), which changes nothing else: the run waits for its first attempt, as
    // without hedging, and no later hedge is tried for that attempt.
    let text = hedging_scenario("")
        + "\n[[policy.hedged.retry_budget]]\nkind = \"finagle\"\nmin_retries_per_s = 0\npercent_can_retry = 0\n";
    let m = model(&text);
    let (plain, hedged) = (metrics(&m, "plain"), metrics(&m, "hedged"));
    let runs = get(&hedged, "logical_run_total");
    assert_eq!(get(&hedged, "hedge_sent_total"), 0.0);
    assert_close(get(&hedged, "refused_total.retry_budget") / runs, 0.3102, 0.03, "refused hedges per run");
    assert_eq!(get(&hedged, "dependency_attempt_total"), runs);
    assert_eq!(get(&hedged, "run_latency_ms.p99"), get(&plain, "run_latency_ms.p99"));
    assert_eq!(get(&hedged, "outcome_total.succeeded"), runs);
    // The per-run retry tokens pay for hedges too: with none, no hedge is sent either.
    let text = hedging_scenario("").replace(
        "hedging = { delay_ms = 100, max_hedged_attempts = 1 }",
        "hedging = { delay_ms = 100, max_hedged_attempts = 1 }\nbudget = { retry_tokens = 0 }",
    );
    let r = metrics(&model(&text), "hedged");
    assert_eq!(get(&r, "hedge_sent_total"), 0.0);
    assert_close(get(&r, "budget_exhausted_total.retry") / runs, 0.3102, 0.03, "hedges without a token");
}

#[test]
fn writes_are_never_hedged() {
    // The same slow tail on a write step, deduplicated even: no hedge is ever sent, and the
    // hedging policy behaves exactly as the plain one.
    let m = model(&hedging_scenario("effect = \"write\"\n  idempotency = \"key\""));
    let (plain, hedged) = (metrics(&m, "plain"), metrics(&m, "hedged"));
    assert_eq!(get(&hedged, "hedge_sent_total"), 0.0);
    assert_eq!(get(&hedged, "hedge_won_total"), 0.0);
    assert_eq!(get(&hedged, "dependency_attempt_total"), get(&hedged, "logical_run_total"));
    assert_eq!(get(&hedged, "run_latency_ms.p99"), get(&plain, "run_latency_ms.p99"));
    assert_eq!(get(&hedged, "effect_total"), get(&hedged, "logical_run_total"));
}

// ---------------------------------------------------------------------------------------------
// 5. Load shedding
// ---------------------------------------------------------------------------------------------

/// `api`: 10 servers of 100 ms, a capacity of 100 calls/s. Workflow `gold` (critical, 50/s,
/// step `gold_call`) and `bulk` (sheddable, 80/s, step `bulk_call`): 130/s offered, saturated.
/// One attempt per call. Policy `none` sheds nothing, `shed` sheds by priority.
const SHEDDING: &str = r#"
[simulation]
duration_s = 30
seed = 41

[[dependency]]
name = "api"
servers = 10
queue_capacity = 100000
service_time = { dist = "constant", value_ms = 100 }

[[workflow]]
name = "gold"
priority = "critical"
arrivals = { rate_per_s = 50 }
deadline_ms = 60000

  [[workflow.step]]
  id = "gold_call"
  dependency = "api"

[[workflow]]
name = "bulk"
priority = "sheddable"
arrivals = { rate_per_s = 80 }
deadline_ms = 60000

  [[workflow.step]]
  id = "bulk_call"
  dependency = "api"

[policy.none]
retry = { max_attempts = 1 }

[policy.shed]
retry = { max_attempts = 1 }

# Sheddable calls from 80 % busy servers on; critical ones never (the default 0.98 would shed
# them too once all 10 servers are busy, which saturation makes common).
[[policy.shed.load_shedding]]
dependency = "api"
shed_at_utilization = { critical = inf, sheddable = 0.8 }
"#;

#[test]
fn a_priority_shedder_drops_sheddable_runs_and_never_critical_ones() {
    let m = model(SHEDDING);
    let none = metrics(&m, "none");
    // Without shedding the queue grows by 30 calls/s: waits of seconds on average.
    assert!(get(&none, "dependency.api.queue_wait_ms.mean") > 1000.0, "saturated");
    assert_eq!(get(&none, "refused_total.shed"), 0.0);

    let r = metrics(&m, "shed");
    let shed = get(&r, "refused_total.shed");
    assert!(shed > 0.0);
    assert_eq!(get(&r, "dependency.api.refused_total.shed"), shed);
    // Every shed call is a sheddable one and fails its run; no critical call fails.
    assert_eq!(get(&r, "step.bulk_call.failed_total"), shed);
    assert_eq!(get(&r, "step.gold_call.failed_total"), 0.0);
    assert_eq!(get(&r, "outcome_total.failed"), shed);
    // Bulk calls pass only while at most 7 servers are busy, so they never make a queue; the
    // gold traffic (5 of 10 servers on average) then waits little. At least the 30 calls/s of
    // excess are shed: 30 x 30 s = 900 of the ~3900 runs.
    assert!(shed >= 0.8 * 900.0, "{shed}");
    assert!(get(&r, "dependency.api.queue_wait_ms.mean") < 100.0, "{}", get(&r, "dependency.api.queue_wait_ms.mean"));
}

/// 50 runs/s for 60 s of one call at `api` (1000 servers, 50 ms), failing with
/// TRANSIENT_TRANSPORT with probability `failure`; one attempt per call; Envoy admission
/// control with `fields` on `api`.
fn envoy_admission(failure: f64, fields: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 60
seed = 43

[[dependency]]
name = "api"
servers = 1000
service_time = {{ dist = "constant", value_ms = 50 }}
errors = {{ transient_transport = {failure} }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 50 }}
deadline_ms = 10000

  [[workflow.step]]
  id = "call"
  dependency = "api"

[policy.p]
retry = {{ max_attempts = 1 }}

[[policy.p.load_shedding]]
kind = "admission_control"
dependency = "api"
{fields}
"#
    )
}

#[test]
fn envoy_admission_control_rejects_as_the_success_rate_says() {
    // Only requests that went through are recorded: their success rate stays 0.5, so the
    // rejection probability settles at (n - 0.5 n / 0.95) / (n + 1) ~ 1 - 0.5 / 0.95 = 0.474
    // (under the 0.8 cap) within the first second. 3000 runs; the window's success rate has a
    // standard error of ~0.013 and the draws ~0.009: 0.05 is over three of both.
    let r = only(&envoy_admission(0.5, ""));
    let runs = get(&r, "logical_run_total");
    let throttled = get(&r, "refused_total.throttled");
    assert_close(throttled / runs, 1.0 - 0.5 / 0.95, 0.05, "rejected share");
    assert_eq!(get(&r, "dependency.api.refused_total.throttled"), throttled);
    assert_eq!(get(&r, "dependency.api.attempt_total"), runs - throttled);
    // A success rate at or above sr_threshold rejects nothing.
    let r = only(&envoy_admission(0.0, ""));
    assert_eq!(get(&r, "refused_total.throttled"), 0.0);
    // Nor does a rate below rps_threshold: ~25 recorded requests/s against 60.
    let r = only(&envoy_admission(0.5, "rps_threshold = 60"));
    assert_eq!(get(&r, "refused_total.throttled"), 0.0);
    // The cap: everything fails, so the probability is 100 / 101 but at most 0.3.
    let r = only(&envoy_admission(1.0, "max_rejection_probability = 0.3"));
    assert_close(get(&r, "refused_total.throttled") / get(&r, "logical_run_total"), 0.3, 0.03, "capped share");
}

// ---------------------------------------------------------------------------------------------
// 6. Queue policies at the dependency
// ---------------------------------------------------------------------------------------------

/// One workflow of `rate` runs/s, one call at `db` (1 server, `service`), with `queue_policy`
/// on the dependency. One attempt per call, timeout `timeout_ms`.
fn queue_scenario(duration_s: f64, rate: f64, service: &str, queue_policy: &str, timeout_ms: f64) -> String {
    format!(
        r#"
[simulation]
duration_s = {duration_s}
seed = 51

[[dependency]]
name = "db"
servers = 1
queue_capacity = 1000000
service_time = {service}
{queue_policy}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = {rate} }}
deadline_ms = 600000

  [[workflow.step]]
  id = "q"
  dependency = "db"

[policy.p]
timeout_ms = {timeout_ms}
retry = {{ max_attempts = 1 }}
"#
    )
}

const D100: &str = "{ dist = \"constant\", value_ms = 100 }";

#[test]
fn a_queue_max_wait_drops_attempts_that_waited_too_long() {
    // 15 calls/s on a 10/s server: without a bound the queue grows by 5/s.
    let r = only(&queue_scenario(60.0, 15.0, D100, "queue_policy = { max_wait_ms = 300 }", 0.0));
    let runs = get(&r, "logical_run_total");
    let expired = get(&r, "refused_total.expired");
    assert!(expired > 0.0);
    assert_eq!(get(&r, "dependency.db.refused_total.expired"), expired);
    // An attempt is either served (and succeeds) or dropped from the queue (OVERLOADED, its
    // run fails): nothing else can happen to it.
    assert_eq!(get(&r, "outcome_total.succeeded") + expired, runs);
    assert_eq!(get(&r, "outcome_total.failed"), expired);
    // The server serves at most 10/s: at least the 5/s of excess expire (300 in 60 s; Poisson
    // noise on 900 arrivals is 30, so 200 is over three of them below).
    assert!(get(&r, "outcome_total.succeeded") <= 60.0 * 10.0 + 1.0);
    assert!(expired >= 200.0, "{expired}");
    // No served attempt waited longer than 300 ms. The wait histogram keeps 2 significant
    // digits, so a quantile may read up to 1 % above the largest recorded value.
    let p95 = get(&r, "dependency.db.queue_wait_ms.p95");
    assert!(p95 <= 300.0 * 1.01, "{p95}");
    // And the run latency is bounded by the wait plus one service: 300 + 100 ms.
    assert!(get(&r, "run_latency_ms.max") <= 400.0 + 1e-3, "{}", get(&r, "run_latency_ms.max"));
}

#[test]
fn codel_serves_nothing_that_waited_past_its_interval() {
    // 15 calls/s on a 10/s server. CoDel drops, when it takes an attempt from the queue, one
    // that waited over 100 ms (the interval), or over 5 ms (the target) once the queue has not
    // been empty for 100 ms. (Its own drops empty the queue often, so both limits are used.)
    let codel = "queue_policy = { codel = { target_ms = 5, interval_ms = 100 } }";
    let r = only(&queue_scenario(60.0, 15.0, D100, codel, 0.0));
    let runs = get(&r, "logical_run_total");
    let expired = get(&r, "refused_total.expired");
    assert_eq!(get(&r, "outcome_total.succeeded") + expired, runs);
    // The server still serves at most 10/s, so at least the 5/s excess is dropped (see above).
    assert!(expired >= 200.0, "{expired}");
    // No served attempt waited over 100 ms: a run lasts at most 100 + 100 ms.
    assert!(get(&r, "run_latency_ms.max") <= 200.0 + 1e-3, "{}", get(&r, "run_latency_ms.max"));
    let p95 = get(&r, "dependency.db.queue_wait_ms.p95");
    assert!(p95 <= 100.0 * 1.01, "{p95}");
}

/// `db`: 1 server of 100 ms (10/s) and 5 waiting places; `gold` (critical, step `gold_q`) and
/// `bulk` (sheddable, step `bulk_q`) send 8 calls/s each for 60 s.
fn priority_queue(queue_policy: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 60
seed = 52

[[dependency]]
name = "db"
servers = 1
queue_capacity = 5
service_time = {{ dist = "constant", value_ms = 100 }}
{queue_policy}

[[workflow]]
name = "gold"
priority = "critical"
arrivals = {{ rate_per_s = 8 }}
deadline_ms = 600000

  [[workflow.step]]
  id = "gold_q"
  dependency = "db"

[[workflow]]
name = "bulk"
priority = "sheddable"
arrivals = {{ rate_per_s = 8 }}
deadline_ms = 600000

  [[workflow.step]]
  id = "bulk_q"
  dependency = "db"

[policy.p]
retry = {{ max_attempts = 1 }}
"#
    )
}

#[test]
fn a_priority_queue_that_evicts_the_least_important_serves_critical_runs_first() {
    // Each workflow sends ~480 runs (standard deviation 22).
    let r = only(&priority_queue("queue_policy = { order = \"priority\", overflow = \"reject_lowest_priority\" }"));
    let (gold, bulk) = (get(&r, "step.gold_q.failed_total"), get(&r, "step.bulk_q.failed_total"));
    // Critical calls are served first and push sheddable ones out of a full room: they are
    // refused only when 5 critical calls already wait behind the one in service, a loss near
    // M/M/1/6's 6.6 % at load 0.8 (constant service loses less; a sheddable call started in a
    // gap adds some): 8 % of 480 is 38. The server's remaining 2 calls/s go to the
    // sheddable traffic, so at least 6 of its 8/s fail: 0.75 x 480 = 360 expected.
    assert!(gold <= 38.0, "gold failures {gold}");
    assert!(bulk >= 290.0, "bulk failures {bulk}");
    assert_eq!(gold + bulk, get(&r, "outcome_total.failed"));
    assert!(get(&r, "queue_rejected_total") >= bulk - 1.0, "failures are full-room rejections");

    // FIFO with a plain bound treats both alike: 16/s on 10/s loses ~38 % of each.
    let r = only(&priority_queue(""));
    let (gold, bulk) = (get(&r, "step.gold_q.failed_total"), get(&r, "step.bulk_q.failed_total"));
    assert!(gold >= 0.25 * 480.0 && bulk >= 0.25 * 480.0, "{gold} {bulk}");
    assert!(gold >= 3.0 * 38.0, "priority order protects critical calls threefold at least");
    assert!((gold - bulk).abs() <= 0.25 * (gold + bulk), "{gold} {bulk}");
}

#[test]
fn dropping_abandoned_attempts_cuts_wasted_work() {
    // 12 calls/s on a 10/s server with a 500 ms timeout; an attempt served after its caller
    // left counts its whole service as wasted.
    let keep = only(&queue_scenario(60.0, 12.0, D100, "", 500.0));
    let drop = only(&queue_scenario(60.0, 12.0, D100, "queue_policy = { drop_abandoned = true }", 500.0));
    let (wasted_keep, wasted_drop) =
        (get(&keep, "dependency.db.wasted_service_ratio"), get(&drop, "dependency.db.wasted_service_ratio"));
    // Kept: the queue grows by 2/s (Poisson noise ~4.7 per square-root second), waits pass
    // 500 ms (5 waiting) within the first 15 s, and from then on the server works only for
    // callers that have left: over 3/4 of the 60 s.
    assert!(wasted_keep > 0.75, "{wasted_keep}");
    // Dropped: every attempt served has waited under 500 ms and is wasted only if its caller
    // leaves during its 100 ms of service. The head's age gains 100 - 83 = 17 ms per service
    // (sd 83 ms) and is capped at 500 ms, so its distance below the cap is roughly exponential
    // with mean 83^2 / (2 x 17) = 200 ms: about 1 - exp(-100 / 200) = 0.4 of the served
    // attempts time out in service. 0.6 of the kept figure leaves room for that estimate.
    assert!(wasted_drop < 0.6 * wasted_keep, "{wasted_drop} vs {wasted_keep}");
    // Dropping lets the live attempts through: more runs succeed.
    assert!(get(&drop, "outcome_total.succeeded") > get(&keep, "outcome_total.succeeded"));
}

#[test]
fn lifo_and_fifo_have_the_same_mean_wait_and_lifo_the_longer_tail() {
    // M/M/1 at rho = 0.8 (8/s, mean service 100 ms), 10,000 s: about 80,000 customers.
    let exp = "{ dist = \"exponential\", mean_ms = 100 }";
    let fifo = only(&queue_scenario(10000.0, 8.0, exp, "", 0.0));
    let lifo = only(&queue_scenario(10000.0, 8.0, exp, "queue_policy = { order = \"lifo\" }", 0.0));
    let mean = |r: &MetricMap| get(r, "dependency.db.queue_wait_ms.mean");
    let p95 = |r: &MetricMap| get(r, "dependency.db.queue_wait_ms.p95");
    // Both mean waits are Wq = rho / (mu - lambda) = 400 ms: the order does not change the
    // work in the system. At rho = 0.8 successive waits are strongly correlated (relaxation
    // time ~ 9 s), so 10,000 s give a standard error of about 3 % on the mean: 15 % is five of
    // them.
    assert_close(mean(&fifo), 400.0, 60.0, "FIFO mean wait");
    assert_close(mean(&lifo), 400.0, 60.0, "LIFO mean wait");
    // FIFO: P(W > t) = rho exp(-(mu - lambda) t), p95 = ln(16) / 2 s = 1386 ms. Non-preemptive
    // LIFO: P(W > t) = rho P(busy period > t), p95 = 1801 ms (by integrating the M/M/1 busy
    // period density). 15 % bounds, for the same correlation and the histogram's 1 %.
    assert_close(p95(&fifo), 1386.0, 0.15 * 1386.0, "FIFO p95");
    assert_close(p95(&lifo), 1801.0, 0.15 * 1801.0, "LIFO p95");
    assert!(p95(&lifo) > p95(&fifo));
    // Same arrivals and service draws: the same customers are served either way.
    assert_eq!(get(&fifo, "outcome_total.succeeded"), get(&lifo, "outcome_total.succeeded"));
}

// ---------------------------------------------------------------------------------------------
// 7. Admission
// ---------------------------------------------------------------------------------------------

/// Two steps in sequence at `model` (1000 servers, constant 500 ms): a predicted critical path
/// of 500 + 500 ms (medians, nothing queued). 10 runs/s for 30 s.
fn admission_scenario(deadline_ms: f64, workflow_extra: &str, admission: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 30
seed = 61

[[dependency]]
name = "model"
servers = 1000
service_time = {{ dist = "constant", value_ms = 500 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 10 }}
deadline_ms = {deadline_ms}
{workflow_extra}

  [[workflow.step]]
  id = "plan"
  dependency = "model"

  [[workflow.step]]
  id = "answer"
  after = ["plan"]
  dependency = "model"

[policy.p]
admission = {{ {admission} }}
"#
    )
}

#[test]
fn a_deadline_shorter_than_the_critical_path_rejects_every_run_before_any_attempt() {
    let r = only(&admission_scenario(999.0, "", ""));
    let runs = get(&r, "logical_run_total");
    assert!(runs > 250.0);
    assert_eq!(get(&r, "outcome_total.rejected"), runs);
    assert_eq!(get(&r, "admission_rejected_total"), runs);
    assert_eq!(get(&r, "admission_async_total"), 0.0);
    assert_eq!(get(&r, "dependency_attempt_total"), 0.0);
    assert_eq!(get(&r, "logical_call_total"), 0.0);
    // The reserve counts too: 1000 + 300 > 1299.
    let r = only(&admission_scenario(1299.0, "", "reserve_ms = 300"));
    assert_eq!(get(&r, "admission_rejected_total"), get(&r, "logical_run_total"));
}

#[test]
fn a_deadline_that_fits_the_critical_path_admits_every_run() {
    // Exactly enough: 1000 + 300 <= 1300.
    for (deadline, admission) in [(1000.0, ""), (1300.0, "reserve_ms = 300"), (60_000.0, "reserve_ms = 300")] {
        let r = only(&admission_scenario(deadline, "", admission));
        let runs = get(&r, "logical_run_total");
        assert_eq!(get(&r, "admission_rejected_total"), 0.0, "{deadline} {admission}");
        assert_eq!(get(&r, "outcome_total.rejected"), 0.0);
        assert_eq!(get(&r, "outcome_total.succeeded"), runs);
        assert_eq!(get(&r, "dependency_attempt_total"), 2.0 * runs);
    }
}

#[test]
fn an_inadmissible_run_becomes_an_async_task_only_where_the_workflow_allows_it() {
    let r = only(&admission_scenario(999.0, "async_allowed = true", "on_insufficient = \"async\""));
    let runs = get(&r, "logical_run_total");
    assert_eq!(get(&r, "admission_async_total"), runs);
    assert_eq!(get(&r, "admission_rejected_total"), 0.0);
    assert_eq!(get(&r, "dependency_attempt_total"), 0.0, "handed to the async path, not run here");
    // Without async_allowed the same rule rejects.
    let r = only(&admission_scenario(999.0, "", "on_insufficient = \"async\""));
    assert_eq!(get(&r, "admission_async_total"), 0.0);
    assert_eq!(get(&r, "admission_rejected_total"), get(&r, "logical_run_total"));
    // And with async_allowed but the default rule (reject).
    let r = only(&admission_scenario(999.0, "async_allowed = true", ""));
    assert_eq!(get(&r, "admission_async_total"), 0.0);
    assert_eq!(get(&r, "admission_rejected_total"), get(&r, "logical_run_total"));
}

#[test]
fn admission_reads_the_queue_and_bounds_the_latency_of_admitted_runs() {
    // One 100 ms server, 15 runs/s (overloaded), deadline 500 ms: a run is admitted only while
    // 100 + queued x 100 <= 500, i.e. at most 4 attempts wait. An admitted run then waits for
    // the one in service (<= 100 ms) and those 4 (FIFO), and is served: <= 600 ms. (Without
    // deadline propagation, so that no attempt is cut at the 500 ms deadline.)
    let text = queue_scenario(60.0, 15.0, D100, "", 0.0)
        .replace("deadline_ms = 600000", "deadline_ms = 500")
        .replace("[policy.p]", "[policy.p]\ndeadline_propagation = false\nadmission = {}");
    let r = only(&text);
    assert!(get(&r, "admission_rejected_total") > 0.0, "overloaded");
    assert!(get(&r, "run_latency_ms.max") <= 600.0 + 1e-3, "{}", get(&r, "run_latency_ms.max"));
    assert_eq!(
        get(&r, "outcome_total.succeeded") + get(&r, "outcome_total.rejected"),
        get(&r, "logical_run_total"),
        "an admitted run always completes"
    );
    // Without admission the queue grows by 5/s and so does the latency.
    let r = only(&text.replace("admission = {}", ""));
    assert!(get(&r, "run_latency_ms.max") > 5_000.0);
}

// ---------------------------------------------------------------------------------------------
// 8. Fan-out limits
// ---------------------------------------------------------------------------------------------

#[test]
fn max_total_attempts_caps_every_runs_attempts() {
    // Three soft steps in a row at a dependency that always fails: 3 attempts each without a
    // limit (9 per run), 2 per run with one. The third attempt of the first step and the first
    // of the other two are refused, and each of the three steps is omitted.
    let text = r#"
[simulation]
duration_s = 30
seed = 71

[[dependency]]
name = "flaky"
servers = 1000
service_time = { dist = "constant", value_ms = 10 }
errors = { transient_transport = 1.0 }

[[workflow]]
name = "w"
arrivals = { rate_per_s = 10 }
deadline_ms = 60000

  [[workflow.step]]
  id = "a"
  dependency = "flaky"
  criticality = "soft"

  [[workflow.step]]
  id = "b"
  after = ["a"]
  dependency = "flaky"
  criticality = "soft"

  [[workflow.step]]
  id = "c"
  after = ["b"]
  dependency = "flaky"
  criticality = "soft"

[policy.capped]
retry = { max_attempts = 3, backoff = { kind = "none" } }
fan_out = { max_total_attempts = 2 }

[policy.free]
retry = { max_attempts = 3, backoff = { kind = "none" } }
"#;
    let m = model(text);
    let free = metrics(&m, "free");
    assert_eq!(get(&free, "dependency_attempt_total"), 9.0 * get(&free, "logical_run_total"));
    let r = metrics(&m, "capped");
    let runs = get(&r, "logical_run_total");
    assert_eq!(get(&r, "dependency_attempt_total"), 2.0 * runs);
    assert_eq!(get(&r, "refused_total.fan_out"), 3.0 * runs);
    assert_eq!(get(&r, "dependency.flaky.refused_total.fan_out"), 3.0 * runs);
    assert_eq!(get(&r, "omitted_step_total"), 3.0 * runs);
    assert_eq!(get(&r, "outcome_total.degraded"), runs);
}

/// A diamond: `plan` (100 ms), then `left` (200 ms) and `right` (300 ms) in parallel, then
/// `join` (50 ms) after both; each on its own dependency with plenty of servers.
fn diamond(right_criticality: &str, policy: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 30
seed = 72

[[dependency]]
name = "d_plan"
servers = 1000
service_time = {{ dist = "constant", value_ms = 100 }}

[[dependency]]
name = "d_left"
servers = 1000
service_time = {{ dist = "constant", value_ms = 200 }}

[[dependency]]
name = "d_right"
servers = 1000
service_time = {{ dist = "constant", value_ms = 300 }}

[[dependency]]
name = "d_join"
servers = 1000
service_time = {{ dist = "constant", value_ms = 50 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 10 }}
deadline_ms = 60000

  [[workflow.step]]
  id = "plan"
  dependency = "d_plan"

  [[workflow.step]]
  id = "left"
  after = ["plan"]
  dependency = "d_left"
  criticality = "soft"

  [[workflow.step]]
  id = "right"
  after = ["plan"]
  dependency = "d_right"
  criticality = "{right_criticality}"

  [[workflow.step]]
  id = "join"
  after = ["left", "right"]
  dependency = "d_join"

[policy.p]
{policy}
"#
    )
}

#[test]
fn max_branches_omits_soft_branches_beyond_it_and_queues_hard_ones() {
    // No limit: both branches run in parallel, 100 + 300 + 50 ms.
    let r = only(&diamond("soft", ""));
    assert_eq!(get(&r, "run_latency_ms.max"), 450.0);
    assert_eq!(get(&r, "refused_total.fan_out"), 0.0);

    // One branch at a time: `left` (first in the file) runs, `right` is cut at once.
    let r = only(&diamond("soft", "fan_out = { max_branches = 1 }"));
    let runs = get(&r, "logical_run_total");
    assert_eq!(get(&r, "refused_total.fan_out"), runs);
    assert_eq!(get(&r, "dependency.d_right.refused_total.fan_out"), runs);
    assert_eq!(get(&r, "omitted_step_total"), runs);
    assert_eq!(get(&r, "step.right.omitted_total"), runs);
    assert_eq!(get(&r, "outcome_total.degraded"), runs);
    assert_eq!(get(&r, "dependency_attempt_total"), 3.0 * runs);
    assert_eq!(get(&r, "run_latency_ms.max"), 350.0, "100 + 200 + 50");

    // A hard branch is not cut: it waits for the slot, and the run is serialised.
    let r = only(&diamond("hard", "fan_out = { max_branches = 1 }"));
    let runs = get(&r, "logical_run_total");
    assert_eq!(get(&r, "refused_total.fan_out"), 0.0);
    assert_eq!(get(&r, "omitted_step_total"), 0.0);
    assert_eq!(get(&r, "outcome_total.succeeded"), runs);
    assert_eq!(get(&r, "dependency_attempt_total"), 4.0 * runs);
    assert_eq!(get(&r, "run_latency_ms.max"), 650.0, "100 + 200 + 300 + 50");
    assert_eq!(get(&r, "run_latency_ms.mean"), 650.0);
}

// ---------------------------------------------------------------------------------------------
// 9. Determinism with every mechanism on
// ---------------------------------------------------------------------------------------------

/// Every mechanism at once, under overload and a fault, so that each of them acts: breakers,
/// bulkheads (waiting and reserved), retry budgets and throttling, hedging, shedding, queue
/// policies, admission, fan-out, tenants and priorities.
const EVERYTHING: &str = r#"
[simulation]
duration_s = 40
warmup_s = 5
seed = 99
replications = 4
timeseries_window_s = 5

[[dependency]]
name = "model"
servers = 8
queue_capacity = 40
service_time = { p50_ms = 80, p95_ms = 400 }
errors = { overloaded = 0.02, transient_transport = 0.02 }
queue_policy = { order = "priority", overflow = "reject_lowest_priority", max_wait_ms = 300, drop_abandoned = true }

[[dependency]]
name = "lite"
servers = 50
service_time = { dist = "exponential", mean_ms = 20 }
queue_policy = { order = "lifo", codel = { target_ms = 5, interval_ms = 100 } }

[[dependency]]
name = "tickets"
servers = 10
service_time = { p50_ms = 100, p95_ms = 900 }
status_lookup_time = { dist = "constant", value_ms = 20 }
hang_probability = 0.05

[[workflow]]
name = "chat"
tenant = "acme"
priority = "critical"
arrivals = { rate_per_s = 12 }
deadline_ms = 3000

  [[workflow.step]]
  id = "plan"
  dependency = "model"
  fallback = "lite"

  [[workflow.step]]
  id = "enrich"
  after = ["plan"]
  dependency = "lite"
  criticality = "soft"

  [[workflow.step]]
  id = "search"
  after = ["plan"]
  dependency = "model"
  criticality = "soft"

  [[workflow.step]]
  id = "answer"
  after = ["enrich", "search"]
  dependency = "model"

[[workflow]]
name = "batch"
tenant = "globex"
priority = "sheddable"
load_units = 2
async_allowed = true
arrivals = { rate_per_s = 10 }
deadline_ms = 300

  [[workflow.step]]
  id = "draft"
  dependency = "model"

  [[workflow.step]]
  id = "file"
  after = ["draft"]
  dependency = "tickets"
  effect = "write"
  idempotency = "key"
  status_lookup = true

[[workflow]]
name = "report"
async_allowed = true
arrivals = { rate_per_s = 2 }
deadline_ms = 100

  [[workflow.step]]
  id = "summarise"
  dependency = "model"

[[fault]]
kind = "errors"
target = "model"
start_s = 15
duration_s = 10
errors = { transient_transport = 0.6 }

[policy.all]
timeout_ms = 1200
retry = { max_attempts = 3, backoff = { base_ms = 20, max_ms = 200 } }
hedging = { delay_ms = 150, max_hedged_attempts = 2 }
admission = { reserve_ms = 100, on_insufficient = "async" }
fan_out = { max_branches = 1, max_total_attempts = 10, max_parallel_cost_units = 50 }

[[policy.all.circuit_breaker]]
dependency = "model"
circuit_key = "dependency_operation"
minimum_number_of_calls = 20
sliding_window_size = 40
wait_duration_in_open_state_ms = 1000
permitted_number_of_calls_in_half_open_state = 4

[[policy.all.circuit_breaker]]
kind = "polly"
dependency = "tickets"
minimum_throughput = 10
sampling_duration_ms = 5000
break_duration_ms = 1000

[[policy.all.bulkhead]]
dependency = "tickets"
max_concurrent_calls = 2
reserved_for_control = 1
max_wait_ms = 50

[[policy.all.bulkhead]]
key = "tenant"
tenant = "globex"
max_concurrent_calls = 20

[[policy.all.retry_budget]]
kind = "grpc"
dependency = "model"

[[policy.all.retry_budget]]
kind = "adaptive_throttling"
dependency = "tickets"
window_ms = 10000
# The book's rule without the floor, so this short run exercises the throttle.
min_requests = 0

[[policy.all.retry_budget]]
kind = "finagle"
scope = "tenant"

[[policy.all.load_shedding]]
dependency = "model"
shed_at_utilization = { critical = inf, sheddable = 0.75 }
"#;

#[test]
fn every_mechanism_at_once_is_bit_for_bit_reproducible() {
    let m = model(EVERYTHING);
    let (a, b) = (run(&m, "all"), run(&m, "all"));
    assert_eq!(metric_bits(&a.metrics), metric_bits(&b.metrics));
    assert_eq!(a.events, b.events);
    assert_eq!(a.timeseries.rows(), b.timeseries.rows());
    for row in 0..a.timeseries.rows() {
        for col in 0..a.timeseries.stride() {
            assert_eq!(a.timeseries.value(row, col), b.timeseries.value(row, col), "row {row} column {col}");
        }
    }
    let c = simulate(&m, 0, replication_seed(m.world.seed, 1)).unwrap();
    assert_ne!(metric_bits(&a.metrics), metric_bits(&c.metrics), "another seed gives another run");
    // The scenario exercises the mechanisms it claims to (else the check above proves little).
    let r = &a.metrics;
    for name in [
        "refused_total.circuit_open",
        "refused_total.retry_budget",
        "refused_total.shed",
        "refused_total.fan_out",
        "hedge_sent_total",
        "hedge_won_total",
        "admission_async_total",
        "refused_total.expired",
        "refused_total.bulkhead",
        "refused_total.throttled",
        "breaker.model.read.transition_total.open",
    ] {
        assert!(get(r, name) > 0.0, "{name} is 0: the scenario does not exercise it");
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("faultline-mechanisms-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn faultline(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_faultline")).args(args).output().expect("start the faultline binary")
}

#[test]
fn every_mechanism_at_once_gives_the_same_files_for_any_thread_count() {
    let dir = temp_dir("jobs");
    let scenario = dir.join("everything.toml");
    std::fs::write(&scenario, EVERYTHING).unwrap();
    let (one, two) = (dir.join("one"), dir.join("two"));
    for (jobs, out) in [("1", &one), ("2", &two)] {
        let o = faultline(&["run", scenario.to_str().unwrap(), "--jobs", jobs, "--out", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let (a, b) = (read_all(&one), read_all(&two));
    assert!(!a.is_empty());
    assert_eq!(a, b);
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// 10. Bad input in the mechanism tables
// ---------------------------------------------------------------------------------------------

/// A valid scenario with one entry of every mechanism table.
const TABLES: &str = r#"[simulation]
duration_s = 10

[[dependency]]
name = "db"
servers = 2
service_time = { dist = "constant", value_ms = 10 }
queue_policy = { order = "priority", max_wait_ms = 100 }

[[workflow]]
name = "w"
tenant = "acme"
priority = "sheddable"
arrivals = { rate_per_s = 1 }
deadline_ms = 1000

  [[workflow.step]]
  id = "a"
  dependency = "db"

[policy.p]
hedging = { delay_ms = 100 }
admission = { reserve_ms = 10 }
fan_out = { max_branches = 2 }

[[policy.p.circuit_breaker]]
failure_rate_threshold = 50

[[policy.p.bulkhead]]
max_concurrent_calls = 5

[[policy.p.retry_budget]]
kind = "grpc"
max_tokens = 10

[[policy.p.load_shedding]]
shed_at_utilization = { sheddable = 0.8 }
"#;

/// 1-based line and column of the first `needle` in `text`.
fn at(text: &str, needle: &str) -> (usize, usize) {
    let offset = text.find(needle).unwrap_or_else(|| panic!("`{needle}` is not in the scenario"));
    let before = &text[..offset];
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    (before.matches('\n').count() + 1, before[line_start..].chars().count() + 1)
}

#[test]
fn the_mechanism_tables_scenario_is_valid() {
    let dir = temp_dir("valid");
    let path = dir.join("tables.toml");
    std::fs::write(&path, TABLES).unwrap();
    let o = faultline(&["validate", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_typo_or_a_misplaced_field_in_a_mechanism_table_is_located() {
    // (text replaced, replacement, where the error must point, field path, fragment of the message)
    let cases: [(&str, &str, &str, &str, &str); 16] = [
        (
            "failure_rate_threshold = 50",
            "failure_rate_treshold = 50",
            "failure_rate_treshold",
            "policy.p.circuit_breaker[0].failure_rate_treshold",
            "unknown field `failure_rate_treshold`",
        ),
        (
            "failure_rate_threshold = 50",
            "failure_ratio = 0.5",
            "failure_ratio",
            "policy.p.circuit_breaker[0].failure_ratio",
            "unknown field `failure_ratio`, expected one of `kind`, `dependency`, `circuit_key`, `ignore`, `failure_rate_threshold`",
        ),
        (
            "max_concurrent_calls = 5",
            "max_concurent_calls = 5",
            "max_concurent_calls",
            "policy.p.bulkhead[0].max_concurent_calls",
            "unknown field `max_concurent_calls`",
        ),
        (
            "max_concurrent_calls = 5",
            "max_concurrent_calls = 5\nworkflow = \"w\"",
            "workflow = \"w\"",
            "policy.p.bulkhead[0].workflow",
            "does not apply to key = \"dependency\"",
        ),
        (
            "max_concurrent_calls = 5",
            "max_concurrent_calls = 5\nreserved_for_control = 5",
            "reserved_for_control",
            "policy.p.bulkhead[0].reserved_for_control",
            "reserved_for_control",
        ),
        (
            "max_tokens = 10",
            "ttl_ms = 1000",
            "ttl_ms",
            "policy.p.retry_budget[0].ttl_ms",
            "unknown field `ttl_ms`, expected one of `kind`, `scope`, `dependency`, `max_tokens`, `token_ratio`",
        ),
        ("delay_ms = 100", "delay = 100", "delay", "policy.p.hedging.delay", "unknown field `delay`"),
        (
            "delay_ms = 100",
            "delay_ms = 100, max_hedged_attempts = 11",
            "max_hedged_attempts",
            "policy.p.hedging.max_hedged_attempts",
            "11",
        ),
        (
            "shed_at_utilization = { sheddable = 0.8 }",
            "shed_at_utilisation = { sheddable = 0.8 }",
            "shed_at_utilisation",
            "policy.p.load_shedding[0].shed_at_utilisation",
            "unknown field `shed_at_utilisation`",
        ),
        (
            "shed_at_utilization = { sheddable = 0.8 }",
            "sr_threshold = 0.9",
            "sr_threshold",
            "policy.p.load_shedding[0].sr_threshold",
            "unknown field `sr_threshold`, expected one of `kind`, `dependency`, `shed_at_utilization`",
        ),
        ("reserve_ms = 10", "reserve = 10", "reserve =", "policy.p.admission.reserve", "unknown field `reserve`"),
        (
            "reserve_ms = 10",
            "reserve_ms = 10, on_insufficient = \"later\"",
            "on_insufficient",
            "policy.p.admission.on_insufficient",
            "unknown value `later`",
        ),
        (
            "max_branches = 2",
            "max_branch = 2",
            "max_branch",
            "policy.p.fan_out.max_branch",
            "unknown field `max_branch`",
        ),
        (
            "max_wait_ms = 100 }",
            "max_wait = 100 }",
            "max_wait =",
            "dependency[0].queue_policy.max_wait",
            "unknown field `max_wait`",
        ),
        (
            "order = \"priority\", max_wait_ms = 100",
            "overflow = \"reject_lowest_priority\"",
            "overflow",
            "dependency[0].queue_policy.overflow",
            "needs order = \"priority\"",
        ),
        (
            "priority = \"sheddable\"",
            "priority = \"urgent\"",
            "priority = \"urgent\"",
            "workflow[0].priority",
            "`urgent`",
        ),
    ];
    let dir = temp_dir("bad");
    for (i, (from, to, needle, field, fragment)) in cases.iter().enumerate() {
        assert!(TABLES.contains(from), "case {i}: `{from}` is not in the scenario");
        let text = TABLES.replacen(from, to, 1);
        let path = dir.join(format!("bad{i}.toml"));
        std::fs::write(&path, &text).unwrap();
        let o = faultline(&["validate", path.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(2), "case {i}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "case {i}: one error line: {err}");
        let (line, column) = at(&text, needle);
        let prefix = format!("error: {}:{line}:{column}: {field}: ", path.display());
        assert!(lines[0].starts_with(&prefix), "case {i}: expected\n  {prefix}\ngot\n  {}", lines[0]);
        assert!(lines[0].contains(fragment), "case {i}: `{fragment}` missing from {}", lines[0]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Found as a defect: a retry refused by a guard spent the run's retry token, so the step's
/// fallback then gave up with `retry_budget_exhausted` instead of retrying. `api` always fails
/// and an empty AWS quota at `api` refuses every retry there; `backup` fails half its attempts.
/// With one token per run, each run's retry at `api` is refused (token back), the step falls
/// back, and the fallback's one retry is paid by that same token.
#[test]
fn a_retry_refused_by_a_guard_spends_no_token_and_the_fallback_retries_with_it() {
    let text = r#"
[simulation]
duration_s = 30
seed = 23

[[dependency]]
name = "api"
servers = 100
service_time = { dist = "constant", value_ms = 10 }
errors = { transient_transport = 1.0 }

[[dependency]]
name = "backup"
servers = 100
service_time = { dist = "constant", value_ms = 10 }
errors = { transient_transport = 0.5 }

[[workflow]]
name = "w"
arrivals = { rate_per_s = 20 }
deadline_ms = 10000

  [[workflow.step]]
  id = "fetch"
  dependency = "api"
  fallback = "backup"

[policy.p]
retry = { max_attempts = 2, backoff = { kind = "none" } }
budget = { retry_tokens = 1 }

[[policy.p.retry_budget]]
kind = "aws"
dependency = "api"
initial_retry_tokens = 0
"#;
    let r = only(text);
    let calls = get(&r, "logical_call_total");
    assert!(calls > 400.0, "{calls}");
    // Every call's one retry at api is refused, and every call falls back.
    assert_eq!(get(&r, "dependency.api.refused_total.retry_budget"), calls);
    assert_eq!(get(&r, "dependency.api.attempt_total"), calls);
    assert_eq!(get(&r, "fallback_used_total") + get(&r, "outcome_total.failed"), calls);
    // Half the fallback's first attempts fail; each is retried with the token the refusal gave back.
    let backup_errors = get(&r, "dependency.backup.error_total.transient_transport");
    let backup_attempts = get(&r, "dependency.backup.attempt_total");
    let first_failures = backup_attempts - calls;
    assert!(first_failures > 0.4 * calls, "the fallback retried {first_failures} of {calls} calls");
    assert_eq!(get(&r, "budget_exhausted_total.retry"), 0.0, "no retry ever found the token gone");
    // A failed retry of the fallback ends the call: failures are the calls whose two backup attempts failed.
    assert_eq!(get(&r, "outcome_total.failed"), backup_errors - first_failures);
}

/// Found as a defect: a call admitted while CLOSED that ended ignored during HALF_OPEN gave back
/// a probe permit it never held, so a Polly breaker sent a probe per ignored outcome. Polly has
/// no permits: an outcome its ShouldHandle does not handle counts as a success and closes a
/// half-open circuit (CircuitStateController.OnUnhandledOutcomeAsync). `api` takes 2 s; calls
/// arriving in [0, 0.2 s) end INVALID_INPUT (unhandled by default) at [2.0, 2.2 s); a `down`
/// fault in [0.2, 0.5 s) opens the breaker at once; after the 500 ms break the first call
/// flips it to HALF_OPEN at 0.7 s and every other call is refused until 2.0 s, when the first
/// unhandled outcome closes the circuit.
#[test]
fn an_unhandled_outcome_closes_a_half_open_polly_circuit_and_no_probe_leaks() {
    let text = r#"
[simulation]
duration_s = 4
seed = 5
timeseries_window_s = 0.1

[[dependency]]
name = "api"
servers = 1000
service_time = { dist = "constant", value_ms = 2000 }

[[workflow]]
name = "w"
arrivals = { rate_per_s = 50 }
deadline_ms = 10000

  [[workflow.step]]
  id = "fetch"
  dependency = "api"

[[fault]]
kind = "errors"
target = "api"
start_s = 0
duration_s = 0.2
errors = { invalid_input = 1.0 }

[[fault]]
kind = "down"
target = "api"
start_s = 0.2
duration_s = 0.3

[policy.p]
retry = { max_attempts = 1 }

[[policy.p.circuit_breaker]]
kind = "polly"
dependency = "api"
failure_ratio = 0.5
minimum_throughput = 2
break_duration_ms = 500
"#;
    let m = model(text);
    let r = run(&m, "p");
    let refused = |row| refused_in_row(&r, 1, 0, row);
    let m = &r.metrics;
    assert_eq!(get(m, "breaker.api.transition_total.open"), 1.0, "one break");
    assert_eq!(get(m, "breaker.api.transition_total.half_open"), 1.0, "one probe episode");
    assert_eq!(get(m, "breaker.api.transition_total.closed"), 1.0, "closed by the first unhandled outcome");
    // HALF_OPEN from 0.7 s: every window up to 2.0 s refuses (about 5 calls each). The first
    // unhandled outcome ends 2 s after the first arrival (within 0.1 s with near certainty):
    // from 2.1 s nothing is refused. Before the fix, the probe that went out at 0.7 s decided
    // only at 2.7 s and every window in between refused.
    for row in 8..20 {
        assert!(refused(row) >= 2, "window {row} refused {}", refused(row));
    }
    for row in 21..40 {
        assert_eq!(refused(row), 0, "window {row}: the circuit closed by 2.1 s");
    }
}

// ---------------------------------------------------------------------------------------------
// Rate limiter (resilience4j's RateLimiter)
// ---------------------------------------------------------------------------------------------

/// 50 calls/s at a 10 ms dependency with room for all; a limiter of 10 per 1 s cycle. Cycles and
/// 1 s windows both start at 0, so no window may hold more than 10 attempts.
fn rate_limited(timeout_ms: u32) -> String {
    format!(
        r#"
[simulation]
duration_s = 60
seed = 29
timeseries_window_s = 1

[[dependency]]
name = "api"
servers = 100
service_time = {{ dist = "constant", value_ms = 10 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 50 }}
deadline_ms = 60000

  [[workflow.step]]
  id = "fetch"
  dependency = "api"

[policy.p]
retry = {{ max_attempts = 1 }}

[[policy.p.rate_limiter]]
dependency = "api"
limit_for_period = 10
limit_refresh_period_ms = 1000
timeout_duration_ms = {timeout_ms}
"#
    )
}

#[test]
fn a_rate_limiter_sends_at_most_its_limit_per_cycle_and_waits_only_within_its_timeout() {
    for timeout_ms in [0, 3000] {
        let r = run(&model(&rate_limited(timeout_ms)), "p");
        let attempts_in = |row: usize| r.timeseries.value(row, FIXED_COLUMNS.len());
        let rows = r.timeseries.rows();
        assert!((0..rows).all(|row| attempts_in(row) <= 10), "timeout {timeout_ms}: a window above 10");
        // 50 calls a second against 10 permissions: every cycle's 10 are used.
        let full = (1..59).filter(|&row| attempts_in(row) == 10).count();
        assert_eq!(full, 58, "timeout {timeout_ms}");
        let m = &r.metrics;
        let calls = get(m, "logical_call_total");
        assert_eq!(get(m, "refused_total.throttled") + get(m, "dependency_attempt_total"), calls);
        // Four calls in five are refused at once; the admitted fifth either goes now (timeout
        // 0) or waits for its reserved cycle, up to 3 s ahead, which p95 sees.
        let p95 = get(m, "run_latency_ms.p95");
        if timeout_ms == 0 {
            assert!(p95 < 20.0, "nothing waits: {p95}");
        } else {
            assert!(p95 > 2000.0 && p95 <= 3010.0, "waited {p95}");
        }
    }
}

/// Attempts at `model` (exponential 100 ms, errors `q`) behind a bulkhead of 3 permits with a
/// 30 ms wait, from runs arriving at 20/s for 100 s and none after, until 180 s: the step
/// setup `steps` decides how many attempts of one run wait at the bulkhead together.
fn handover_scenario(q: f64, steps: &str, policy: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 180
seed = 31
timeseries_window_s = 60

[[dependency]]
name = "model"
servers = 100000
service_time = {{ dist = "exponential", mean_ms = 100 }}
errors = {{ transient_transport = {q} }}

[[workflow]]
name = "w"
arrivals = {{ profile = [{{ until_s = 100, rate_per_s = 20 }}, {{ until_s = 180, rate_per_s = 0 }}] }}
deadline_ms = 600000
{steps}

[policy.p]
timeout_ms = 0
retry = {{ max_attempts = 1 }}
{policy}

[[policy.p.bulkhead]]
max_concurrent_calls = 3
max_wait_ms = 30
"#
    )
}

/// An attempt cancelled while a released permit is on its way to it (a hedge's loser, a
/// sibling of a failed step, a quorum's surplus branch) gives the permit back: the permits in
/// use at 180 s, 80 s after the last arrival, are 0, and the bulkhead keeps passing attempts
/// through the second minute. Before the fix every such cancellation lost a permit, and the 3
/// were gone for good within the first minute (0 attempts from then on, 3 in use at the end).
#[test]
fn a_cancelled_waiter_gives_back_the_permit_handed_to_it() {
    let step = |id: &str, extra: &str| format!("[[workflow.step]]\nid = \"{id}\"\ndependency = \"model\"\n{extra}\n");
    let cases = [
        ("hedge", handover_scenario(0.1, &step("vote", ""), "hedging = { delay_ms = 50 }")),
        ("parallel steps", handover_scenario(0.3, &(step("a", "") + &step("b", "") + &step("c", "")), "")),
        ("quorum", handover_scenario(0.1, &step("vote", "quorum = { k = 2, n = 3 }"), "")),
    ];
    for (name, toml) in cases {
        let m = model(&toml);
        let r = run(&m, "p");
        let ts = &r.timeseries;
        assert_eq!(ts.rows(), 3, "{name}");
        // One dependency, no breaker, no mode, one level: the bulkhead's is the last column.
        assert_eq!(ts.stride(), FIXED_COLUMNS.len() + 4, "{name}");
        let in_use = |row: usize| ts.value(row, ts.stride() - 1);
        let attempts = |row: usize| ts.value(row, FIXED_COLUMNS.len()) as f64;
        assert_eq!(in_use(2), 0, "{name}: permits still held 80 s after the last arrival");
        // 3 permits of 100 ms carry at most 30 attempts/s; the runs offer 20/s or more, so a
        // bulkhead that keeps its permits passes well over half of 1,200 in the second minute
        // (40 s of arrivals and the tail of the waits).
        assert!(attempts(1) > 600.0, "{name}: {} attempts in 60-120 s", attempts(1));
        assert!(attempts(0) > 1000.0, "{name}: {} attempts in 0-60 s", attempts(0));
    }
}
