//! `faultline import envoy` and the `envoy_outlier` guard from outside: the binary reads
//! examples/envoy/envoy.yaml (a bootstrap) and bare Clusters and Routes; what it writes is
//! checked line by line, appended to a small scenario that `validate` and `run` accept, and run.
//! The outlier guard's claims (ejection only at interval sweeps, ejection time growing with the
//! backoff, enforcing 0 never ejecting, a one-host cluster never ejected under
//! max_ejection_percent 100, panic routing) are runs whose figures would differ if the claim were
//! false. Files Envoy refuses are refused at their key (file:line:col, exit 2, nothing written).
//! Envoy itself is not run: no binary from the reachable registries.

mod common;

use common::import::*;
use common::*;
use std::path::PathBuf;

fn import(args: &[&str]) -> String {
    import_fragment("envoy", args)
}

fn scratch(tag: &str) -> PathBuf {
    scratch_dir("envoy", tag)
}

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/envoy/envoy.yaml");

/// One dependency, `model-primary`, failing as `errors` says; 10 runs a second of one step.
fn scenario(errors: &str, duration_s: u32) -> String {
    scenario_with(1, errors, duration_s, "read")
}

/// [`scenario`] with the dependency's constant service time and the step's effect.
fn scenario_with(service_ms: u32, errors: &str, duration_s: u32, effect: &str) -> String {
    format!(
        r#"[simulation]
duration_s = {duration_s}
warmup_s = 0
seed = 7
replications = 2

[[dependency]]
name = "model-primary"
servers = 100000
queue_capacity = 0
service_time = {{ dist = "constant", value_ms = {service_ms} }}
errors = {{ {errors} }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 10 }}
deadline_ms = 600000

  [[workflow.step]]
  id = "call"
  dependency = "model-primary"
  effect = "{effect}"

"#
    )
}

/// A policy of one attempt per call and one `envoy_outlier` guard with `fields`.
fn outlier_policy(fields: &str) -> String {
    format!(
        "[policy.p]\nretry = {{ max_attempts = 1 }}\n[[policy.p.circuit_breaker]]\nkind = \"envoy_outlier\"\ndependency = \"model-primary\"\n{fields}\n"
    )
}

fn runs(text: &str) -> Vec<faultline::metrics::MetricMap> {
    replicate(&model(text), 0)
}

#[test]
fn the_example_maps_every_setting_with_the_key_it_came_from() {
    let out = import(&[EXAMPLE, "--dependency", "model_api=model-primary", "-p", "envoy"]);
    for want in [
        "# file: envoy.yaml (bootstrap)",
        "timeout_ms = 3000                       # from ",
        "max_attempts = 4                        # from ",
        "retry_on = [\"RATE_LIMITED\", \"OVERLOADED\", \"TRANSIENT_TRANSPORT\"] # from ",
        "honor_retry_after = true ",
        "base_ms = 100 ",
        "max_ms = 1000 ",
        "jitter = \"full\" ",
        "max_concurrent_calls = 64               # from static_resources.clusters[0].circuit_breakers.thresholds[0].max_requests (envoy.yaml:48) = 64",
        "max_wait_ms = 10000 ",
        "budget_percent = 25 ",
        "min_retry_concurrency = 5 ",
        "kind = \"envoy_outlier\"",
        "consecutive_5xx = 3                     # from static_resources.clusters[0].outlier_detection.consecutive_5xx (envoy.yaml:55) = 3",
        "interval_ms = 5000 ",
        "base_ejection_time_ms = 10000 ",
        "max_ejection_percent = 100 ",
        "healthy_panic_threshold = 0 ",
        "# - static_resources.clusters[0].circuit_breakers.thresholds[1] (envoy.yaml:52)",
        "# - static_resources.clusters[0].circuit_breakers.thresholds[0].max_pending_requests (envoy.yaml:47) = 100",
    ] {
        assert!(out.lines().any(|l| l.starts_with(want)), "no line starting {want:?} in\n{out}");
    }
    for l in out.lines().filter(|l| !l.starts_with('#') && !l.starts_with('[')) {
        assert!(l.contains(" # "), "uncommented: {l}");
    }
}

#[test]
fn the_example_fragment_validates_and_runs() {
    let dir = scratch("runs");
    let fragment = import(&[EXAMPLE, "--dependency", "model_api=model-primary"]);
    let text = format!("{}{fragment}", scenario("overloaded = 1.0", 60));
    let s = dir.join("s.toml");
    std::fs::write(&s, &text).unwrap();
    let v = faultline(&["validate", s.to_str().unwrap()]);
    assert!(v.status.success(), "{}\n{fragment}", String::from_utf8_lossy(&v.stderr));
    let out = dir.join("out");
    let r = faultline(&["run", s.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    for m in runs(&text) {
        // consecutive_5xx 3, base 10 s, interval 5 s, panic 0: the cluster is ejected and refuses.
        assert!(m["breaker.model-primary.transition_total.open"] >= 2.0, "{m:?}");
        assert!(m["refused_total.circuit_open"] > 100.0, "{m:?}");
    }
}

#[test]
fn envoys_defaults_apply_to_what_the_file_leaves_out() {
    let dir = scratch("defaults");
    let route = dir.join("route.yaml");
    std::fs::write(
        &route,
        "name: r\nmatch: {prefix: /}\nroute:\n  cluster: api\n  retry_policy: {retry_on: gateway-error}\n",
    )
    .unwrap();
    let t = import(&[route.to_str().unwrap()]);
    for want in [
        "max_attempts = 2 ",
        "retry_on = [\"OVERLOADED\", \"TRANSIENT_TRANSPORT\"]",
        "honor_retry_after = false ",
        "base_ms = 25 ",
        "max_ms = 250 ",
        "timeout_ms = 15000 ",
    ] {
        assert!(t.lines().any(|l| l.starts_with(want)), "no {want:?} in\n{t}");
    }
    // num_retries 1 by default: every failing call makes 2 attempts.
    let text = format!("{}{t}", scenario("overloaded = 1.0", 20));
    for m in runs(&text) {
        assert_eq!(m["dependency.model-primary.attempt_total"], 2.0 * m["logical_run_total"], "{m:?}");
    }
    let cluster = dir.join("cluster.json");
    std::fs::write(&cluster, r#"{"name": "api", "outlier_detection": {}}"#).unwrap();
    let t = import(&[cluster.to_str().unwrap()]);
    for want in [
        "max_concurrent_calls = 1024 ",
        "budget_percent = 0 ",
        "min_retry_concurrency = 3 ",
        "healthy_panic_threshold = 50 ",
    ] {
        assert!(t.lines().any(|l| l.starts_with(want)), "no {want:?} in\n{t}");
    }
}

#[test]
fn refusals_are_located_with_exit_2_and_nothing_written() {
    let dir = scratch("refusals");
    let cases: [(&str, &str, &str); 8] = [
        (
            "a.yaml",
            "match: {prefix: /}\nroute:\n  retry_policy:\n    retry_back_off: {base_interval: 1s, max_interval: 0.5s}\n",
            "a.yaml:4:55: route.retry_policy.retry_back_off.max_interval: retry_policy.max_interval must greater than or equal to the base_interval",
        ),
        (
            "b.yaml",
            "name: c\noutlier_detection:\n  base_ejection_time: 60s\n  max_ejection_time: 30s\n",
            "b.yaml:4:22: outlier_detection.max_ejection_time: outlier detector's max_ejection_time cannot be smaller than base_ejection_time",
        ),
        (
            "c.yaml",
            "name: c\noutlier_detection: {consecutive_5xxx: 3}\n",
            "c.yaml:2:39: outlier_detection.consecutive_5xxx: unknown field",
        ),
        (
            "d.yaml",
            "name: c\ncircuit_breakers:\n  thresholds:\n  - max_requests: -1\n",
            "d.yaml:4:19: circuit_breakers.thresholds[0].max_requests: -1 is not a uint32",
        ),
        (
            "e.yaml",
            "name: c\ncircuit_breakers:\n  thresholds:\n  - retry_budget: {budget_percent: {value: 120}}\n",
            "e.yaml:4:44: circuit_breakers.thresholds[0].retry_budget.budget_percent.value: 120 is outside 0 ..= 100",
        ),
        (
            "f.yaml",
            "match: {prefix: /}\nroute: {timeout: 5}\n",
            "f.yaml:2:18: route.timeout: must be a duration string",
        ),
        // outlier_detection.proto: max_ejection_percent `(validate.rules).uint32 = {lte: 100}`.
        (
            "g.yaml",
            "name: c\noutlier_detection:\n  max_ejection_percent: 150\n",
            "g.yaml:3:25: outlier_detection.max_ejection_percent: 150 is over 100 (Envoy: lte 100)",
        ),
        // One `(YAML):` prefix; refused where Envoy's yaml-cpp keeps the last (documented).
        (
            "h.yaml",
            "name: c\noutlier_detection: {consecutive_5xx: 2, consecutive_5xx: 3}\n",
            "h.yaml:2:41: (YAML): duplicate key `consecutive_5xx` (refused: stricter than Envoy",
        ),
    ];
    assert_refused("envoy", &dir, &cases);
    let out = faultline(&["import", "envoy", EXAMPLE, "--dependency", "nope=x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the file has no cluster `nope` (clusters: model_api)"));
    let out = faultline(&["import", "envoy", EXAMPLE, "--route", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    let out = faultline(&["import", "litellm", EXAMPLE, "--route", "chat"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Every call fails (a 503); one host that may be ejected, no panic routing. Ejected at about
/// 0.5 s (the 5th failure) for 30 s, the host is back at the 40 s sweep (not at 30.5 s), ejected
/// again at once for 60 s (backoff 2), back at the 110 s sweep, ejected a third time for 90 s,
/// past the run's 200 s: 3 ejections. Un-ejected at the exact time it would be 4 (0.5, 31, 91.5,
/// 182); with a fixed 30 s ejection, 5 (0.5, 40.5, 80.5, 120.5, 160.5).
#[test]
fn ejections_last_longer_each_time_and_end_only_at_sweeps() {
    let on = "max_ejection_percent = 100\nhealthy_panic_threshold = 0";
    for m in runs(&format!("{}{}", scenario("overloaded = 1.0", 200), outlier_policy(on))) {
        assert_eq!(m["breaker.model-primary.transition_total.open"], 3.0, "{m:?}");
        assert_eq!(m["breaker.model-primary.transition_total.closed"], 2.0, "{m:?}");
        // About 1.5 s of 200 s are not ejected: nearly every run is refused.
        assert!(m["refused_total.circuit_open"] > 0.97 * m["logical_run_total"], "{m:?}");
    }
    // A 2 s interval lets the host back sooner: 0.5 -> 32, 32.5 -> 94, 94.5 -> 186, 186.5.
    let fast = format!("{on}\ninterval_ms = 2000");
    for m in runs(&format!("{}{}", scenario("overloaded = 1.0", 200), outlier_policy(&fast))) {
        assert_eq!(m["breaker.model-primary.transition_total.open"], 4.0, "{m:?}");
    }
}

#[test]
fn envoys_rules_that_keep_a_host_in_service() {
    let text = |fields: &str| format!("{}{}", scenario("overloaded = 1.0", 60), outlier_policy(fields));
    // enforcing_consecutive_5xx 0: detected, never ejected.
    for m in runs(&text("max_ejection_percent = 100\nhealthy_panic_threshold = 0\nenforcing_consecutive_5xx = 0")) {
        assert_eq!(m["breaker.model-primary.transition_total.open"], 0.0, "{m:?}");
        assert_eq!(m["refused_total.circuit_open"], 0.0, "{m:?}");
    }
    // Envoy's default max_ejection_percent (10) never ejects the one host of a cluster.
    for m in runs(&text("healthy_panic_threshold = 0")) {
        assert_eq!(m["breaker.model-primary.transition_total.open"], 0.0, "{m:?}");
    }
    // ... unless always_eject_one_host.
    for m in runs(&text("healthy_panic_threshold = 0\nalways_eject_one_host = true")) {
        assert!(m["breaker.model-primary.transition_total.open"] >= 1.0, "{m:?}");
    }
    // Envoy's default panic threshold (50 %): ejected, and still called.
    for m in runs(&text("max_ejection_percent = 100")) {
        assert!(m["breaker.model-primary.transition_total.open"] >= 1.0, "{m:?}");
        assert_eq!(m["refused_total.circuit_open"], 0.0, "{m:?}");
    }
    // A 500 is 5xx but not a gateway error: consecutive_gateway_failure (enforced) never fires.
    let gw = "max_ejection_percent = 100\nhealthy_panic_threshold = 0\nconsecutive_5xx = 0\nenforcing_consecutive_gateway_failure = 100";
    let ejections = |errors: &str| runs(&format!("{}{}", scenario(errors, 60), outlier_policy(gw)))[0]["breaker.model-primary.transition_total.open"];
    assert_eq!(ejections("permanent_provider = 1.0"), 0.0);
    assert!(ejections("overloaded = 1.0") >= 1.0);
}

/// Envoy's backoff as its code draws it: retry n sleeps below min(base x 2^(n-1), max). With
/// base 100 ms, 3 retries of a call that always fails sleep below 100, 200 and 400 ms: 350 ms on
/// average, plus 4 ms of service. The router documentation's [0, (2^n - 1) x base) would give
/// caps of 100, 300 and 700 ms, 550 ms on average.
#[test]
fn the_imported_backoff_follows_envoys_code() {
    let dir = scratch("backoff");
    let route = dir.join("route.yaml");
    std::fs::write(
        &route,
        "name: chat\nmatch: {prefix: /}\nroute:\n  cluster: api\n  retry_policy:\n    retry_on: 5xx\n    num_retries: 3\n    retry_back_off: {base_interval: 0.1s, max_interval: 1s}\n",
    )
    .unwrap();
    let t = import(&[route.to_str().unwrap(), "--route", "chat"]);
    assert!(t.contains("# route: the route (chat)"), "{t}");
    for m in runs(&format!("{}{t}", scenario("overloaded = 1.0", 60))) {
        assert_eq!(m["dependency.model-primary.attempt_total"], 4.0 * m["logical_run_total"], "{m:?}");
        // sd of one run's sleeps: sqrt((100^2 + 200^2 + 400^2) / 12) = 132 ms; about 600 runs:
        // 4 standard errors is 22 ms.
        assert!((m["run_latency_ms.mean"] - 354.0).abs() < 22.0, "{m:?}");
    }
}

fn not_mapped(text: &str) -> Vec<&str> {
    text.lines().skip_while(|l| !l.starts_with("# NOT MAPPED")).collect()
}

/// M1: `retry_on: connect-failure` alone is written as TRANSIENT_TRANSPORT, which in faultline
/// also retries an attempt's timeout, where Envoy retries a per-try timeout only under 5xx,
/// gateway-error or reset (router.cc onPerTryTimeoutCommon -> wouldRetryFromReset(LocalReset)).
/// The import lists it, with the run's figure: 3 attempts a call here, 1 in Envoy.
#[test]
fn a_connect_failure_retry_lists_the_timeouts_faultline_retries_too() {
    let dir = scratch("connect-failure");
    let route = dir.join("cf.yaml");
    let policy = |retry_on: &str| {
        std::fs::write(&route, format!("name: r\nmatch: {{prefix: /}}\nroute:\n  cluster: m\n  retry_policy:\n    retry_on: {retry_on}\n    num_retries: 2\n    per_try_timeout: 2s\n")).unwrap();
        import(&[route.to_str().unwrap()])
    };
    let t = policy("connect-failure");
    assert!(
        not_mapped(&t).iter().any(|l| l.contains(
            "(cf.yaml:6) = \"connect-failure\": Envoy retries a per-try timeout only under 5xx, gateway-error or reset"
        )),
        "{t}"
    );
    // 5 s answers, 2 s per try: every attempt times out, and each is retried here.
    for m in runs(&format!("{}{t}", scenario_with(5000, "", 60, "read"))) {
        let per_call = m["dependency.model-primary.attempt_total"] / m["logical_run_total"];
        assert!((per_call - 3.0).abs() < 0.05, "{per_call} {m:?}");
    }
    for retry_on in ["refused-stream", "\"connect-failure,deadline-exceeded\""] {
        assert!(policy(retry_on).contains("only under 5xx, gateway-error or reset"), "{retry_on}");
    }
    for retry_on in ["\"5xx,connect-failure\"", "\"reset,connect-failure\"", "gateway-error"] {
        assert!(!policy(retry_on).contains("only under 5xx, gateway-error or reset"), "{retry_on}");
    }
}

/// M2: Envoy retries a write like a read; faultline gives up a write that is not deduplicated
/// after TRANSIENT_TRANSPORT. Listed, with the figure: 1 attempt a call where Envoy makes 4.
#[test]
fn envoys_retried_writes_are_listed() {
    let dir = scratch("writes");
    let route = dir.join("w.yaml");
    std::fs::write(
        &route,
        "name: r\nmatch: {prefix: /}\nroute:\n  cluster: m\n  retry_policy: {retry_on: \"5xx,reset\", num_retries: 3}\n",
    )
    .unwrap();
    let t = import(&[route.to_str().unwrap()]);
    assert!(value(&t, "max_attempts") == "max_attempts = 4", "{t}");
    assert!(not_mapped(&t).iter().any(|l| l.contains("Envoy retries a write (POST) like a read")), "{t}");
    for m in runs(&format!("{}{t}", scenario_with(1, "transient_transport = 1.0", 20, "write"))) {
        assert_eq!(m["dependency.model-primary.attempt_total"], m["logical_run_total"], "{m:?}");
    }
    for m in runs(&format!("{}{t}", scenario_with(1, "transient_transport = 1.0", 20, "read"))) {
        assert_eq!(m["dependency.model-primary.attempt_total"], 4.0 * m["logical_run_total"], "{m:?}");
    }
}

/// M4: Envoy keeps whole milliseconds (PROTOBUF_GET_MS_OR_DEFAULT -> DurationToMilliseconds
/// truncates), and a 0 ms route timeout or per_try_timeout is none; the fragment always loads.
#[test]
fn durations_are_whole_milliseconds_and_the_fragment_loads() {
    let dir = scratch("whole-ms");
    let route = dir.join("r.yaml");
    std::fs::write(
        &route,
        "name: r\nmatch: {prefix: /}\nroute:\n  cluster: m\n  timeout: 0.0004s\n  retry_policy:\n    retry_on: 5xx\n    per_try_timeout: 0.0009s\n",
    )
    .unwrap();
    let t = import(&[route.to_str().unwrap()]);
    assert_eq!(value(&t, "timeout_ms"), "timeout_ms = 0", "0.4 ms is 0 ms, no timeout: {t}");
    let cluster = dir.join("c.yaml");
    std::fs::write(
        &cluster,
        "name: model-primary\noutlier_detection:\n  interval: 0.0005s\n  base_ejection_time: 1.0009s\n  max_ejection_time: 1.0005s\n  max_ejection_percent: 100\n",
    )
    .unwrap();
    let t = import(&[cluster.to_str().unwrap()]);
    assert_eq!(value(&t, "interval_ms"), "interval_ms = 1", "{t}");
    assert_eq!(value(&t, "base_ejection_time_ms"), "base_ejection_time_ms = 1000", "{t}");
    assert_eq!(value(&t, "max_ejection_time_ms"), "max_ejection_time_ms = 1000", "both 1000 ms: {t}");
    assert!(not_mapped(&t).iter().any(|l| l.contains("which Envoy reads as 0 ms")), "{t}");
    let s = dir.join("s.toml");
    std::fs::write(&s, format!("{}{t}", scenario("overloaded = 1.0", 10))).unwrap();
    let v = faultline(&["validate", s.to_str().unwrap()]);
    assert!(v.status.success(), "{}\n{t}", String::from_utf8_lossy(&v.stderr));
}

/// M5: the default route is the first that forwards; a route that calls no upstream retries
/// nothing, and no retry table is left empty.
#[test]
fn the_default_route_is_the_first_that_forwards() {
    let dir = scratch("first-forwarding");
    let rc = dir.join("rc.yaml");
    std::fs::write(&rc, "name: local\nvirtual_hosts:\n- name: vh\n  domains: [\"*\"]\n  retry_policy: {retry_on: gateway-error, num_retries: 4}\n  routes:\n  - match: {prefix: /health}\n    direct_response: {status: 200}\n  - name: chat\n    match: {prefix: /}\n    route: {cluster: m, timeout: 5s}\n").unwrap();
    let t = import(&[rc.to_str().unwrap()]);
    assert!(t.contains("# route: .virtual_hosts[0].routes[1] (chat)"), "{t}");
    assert_eq!(value(&t, "max_attempts"), "max_attempts = 5", "the virtual host's num_retries 4: {t}");
    let only = dir.join("direct.yaml");
    std::fs::write(&only, "match: {prefix: /}\ndirect_response: {status: 200}\n").unwrap();
    let t = import(&[only.to_str().unwrap()]);
    assert_eq!(value(&t, "max_attempts"), "max_attempts = 1", "{t}");
    for t in [t, import(&[rc.to_str().unwrap(), "--route", "chat"])] {
        let lines: Vec<&str> = t.lines().collect();
        for (i, l) in lines.iter().enumerate() {
            if l.starts_with('[') && l.ends_with(".retry]") {
                assert!(
                    lines.get(i + 1).is_some_and(|n| !n.starts_with('[') && !n.starts_with('#')),
                    "empty {l}:\n{t}"
                );
            }
        }
    }
}

/// M6, L1: the retry slot held through the backoff and the failure-percentage detector are
/// listed with what Envoy does.
#[test]
fn the_retry_slot_and_the_failure_percentage_detector_are_listed_as_envoy_has_them() {
    let dir = scratch("listed");
    let c = dir.join("fp.yaml");
    std::fs::write(
        &c,
        "name: c\noutlier_detection: {failure_percentage_minimum_hosts: 1, enforcing_failure_percentage: 100}\n",
    )
    .unwrap();
    let t = import(&[c.to_str().unwrap()]);
    let nm = not_mapped(&t);
    assert!(
        nm.iter().any(|l| l.contains(
            "(max_retries): Envoy takes a retry slot when it decides to retry and holds it through the backoff"
        ) && l.contains("662 of about 35 000")),
        "{t}"
    );
    let fp: Vec<&&str> = nm.iter().filter(|l| l.contains("failure_percentage")).collect();
    assert_eq!(fp.len(), 2, "{t}");
    for l in fp {
        assert!(l.contains("the threshold is absolute") && !l.contains("one station is one host"), "{l}");
    }
}

/// L3: the guard's refusals name the TOML keys.
#[test]
fn the_outlier_guards_refusals_name_its_toml_keys() {
    let dir = scratch("toml-keys");
    for (fields, want) in [
        ("interval_ms = 0.5", "interval_ms must be at least 1 ms"),
        ("base_ejection_time_ms = 0.5", "base_ejection_time_ms must be at least 1 ms"),
        (
            "base_ejection_time_ms = 2000\nmax_ejection_time_ms = 1000",
            "max_ejection_time_ms cannot be smaller than base_ejection_time_ms",
        ),
    ] {
        let s = dir.join("s.toml");
        std::fs::write(&s, format!("{}{}", scenario("overloaded = 1.0", 10), outlier_policy(fields))).unwrap();
        let v = faultline(&["validate", s.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&v.stderr);
        assert_eq!(v.status.code(), Some(2), "{err}");
        assert!(err.contains(want) && !err.contains("_us"), "{err}");
    }
}
