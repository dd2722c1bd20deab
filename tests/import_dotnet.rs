//! `faultline import dotnet-resilience` from outside: the binary reads appsettings.json files;
//! what it writes is checked line by line (with the key and line each value came from), appended
//! to a small scenario that `validate` and `run` accept, and run, where the figures follow the
//! imported values. What .NET's binder or validators refuse is refused at the key
//! (file:line:col, exit 2, nothing written). No .NET SDK is on this machine: these tests show
//! what the importer reads and writes, not what a .NET process does.

mod common;

use common::import::*;
use common::*;
use std::path::PathBuf;

fn scratch(tag: &str) -> PathBuf {
    scratch_dir("dotnet", tag)
}

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/dotnet/appsettings.json");

fn import_file(path: &str, extra: &[&str]) -> String {
    let mut all = vec!["import", "dotnet-resilience", path];
    all.extend_from_slice(extra);
    let out = faultline(&all);
    assert!(out.status.success(), "exit {:?}: {}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Imports `json` written to a scratch file named `appsettings.json`.
fn import_text(tag: &str, json: &str) -> String {
    let dir = scratch(tag);
    let file = dir.join("appsettings.json");
    std::fs::write(&file, json).unwrap();
    import_file(file.to_str().unwrap(), &[])
}

/// The fragment without its circuit breaker: against a dependency that always fails, the
/// standard handler's breaker (100 calls, 10 %) would soon refuse most attempts, and the retry
/// tests measure the sleeps alone.
fn without_breaker(fragment: &str) -> String {
    let mut out = String::new();
    let mut skip = false;
    for l in fragment.lines() {
        if l.starts_with('[') {
            skip = l.contains(".circuit_breaker]]");
        }
        if !skip {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

#[test]
fn the_example_maps_every_key_with_its_line() {
    let t = import_file(EXAMPLE, &["-p", "dotnet"]);
    for want in [
        "# section: Resilience:ModelApi",
        "timeout_ms = 5000                       # from Resilience:ModelApi:AttemptTimeout:Timeout (appsettings.json:22) = \"00:00:05\"",
        "max_attempts = 5                        # from Resilience:ModelApi:Retry:MaxRetryAttempts (appsettings.json:10) = 4; MaxRetryAttempts + 1",
        "kind = \"exponential\"                    # from Resilience:ModelApi:Retry:BackoffType (appsettings.json:11) = \"Exponential\"",
        "base_ms = 500                           # from Resilience:ModelApi:Retry:Delay (appsettings.json:13) = \"00:00:00.5\"",
        "max_ms = 4000                           # from Resilience:ModelApi:Retry:MaxDelay (appsettings.json:14) = \"00:00:04\"",
        "jitter = \"full\"                         # from Resilience:ModelApi:Retry:UseJitter (appsettings.json:12) = true; Polly draws DecorrelatedJitterBackoffV2",
        "failure_ratio = 0.2                     # from Resilience:ModelApi:CircuitBreaker:FailureRatio (appsettings.json:17) = 0.2",
        "minimum_throughput = 20                 # from Resilience:ModelApi:CircuitBreaker:MinimumThroughput (appsettings.json:18) = 20",
        "sampling_duration_ms = 15000            # from Resilience:ModelApi:CircuitBreaker:SamplingDuration (appsettings.json:19)",
        "break_duration_ms = 10000               # from Resilience:ModelApi:CircuitBreaker:BreakDuration (appsettings.json:20)",
        "max_concurrent_calls = 100              # from Resilience:ModelApi:RateLimiter:DefaultRateLimiterOptions:PermitLimit (appsettings.json:24) = 100",
        "# - Resilience:ModelApi:TotalRequestTimeout:Timeout (appsettings.json:8) = \"00:00:20\": the total timeout spans every attempt",
    ] {
        assert!(t.lines().any(|l| l.starts_with(want)), "missing {want}\n{t}");
    }
    // The same section named explicitly, in another case: .NET's keys ignore case.
    let named = import_file(EXAMPLE, &["-p", "dotnet", "--section", "resilience:modelapi"]);
    assert_eq!(
        named.lines().filter(|l| !l.starts_with("# section")).collect::<Vec<_>>(),
        t.lines().filter(|l| !l.starts_with("# section")).collect::<Vec<_>>()
    );
}

#[test]
fn every_default_is_the_standard_handlers() {
    let t = import_text("defaults", "{\"MyClient\": {\"retry\": {\"maxRetryAttempts\": \"3\"}}}");
    for (key, want) in [
        ("timeout_ms", "10000"),
        ("on_effect_unknown", "\"retry\""),
        ("max_attempts", "4"),
        ("retry_on", "[\"RATE_LIMITED\", \"OVERLOADED\", \"TRANSIENT_TRANSPORT\"]"),
        ("honor_retry_after", "true"),
        ("kind", "\"exponential\""),
        ("base_ms", "2000"),
        ("max_ms", "8000"),
        ("jitter", "\"full\""),
        ("failure_ratio", "0.1"),
        ("minimum_throughput", "100"),
        ("sampling_duration_ms", "30000"),
        ("break_duration_ms", "5000"),
        ("max_concurrent_calls", "1000"),
        ("max_wait_ms", "0"),
    ] {
        assert_eq!(value(&t, key), format!("{key} = {want}"), "{t}");
    }
    assert!(
        line(&t, "timeout_ms").contains("absent: the default, 10 s (HttpStandardResilienceOptions.AttemptTimeout)")
    );
    assert!(line(&t, "base_ms").contains("2 s (Polly's RetryConstants.DefaultBaseDelay)"));
    assert!(
        t.contains("# - MyClient:TotalRequestTimeout:Timeout = 00:00:30 (default): the total timeout spans"),
        "{t}"
    );
}

#[test]
fn timespans_read_as_dotnet_parses_them() {
    let t = import_text(
        "timespans",
        r#"{ "TotalRequestTimeout": { "Timeout": "1" },   // a bare number is days
             "AttemptTimeout": { "Timeout": "0.00:00:30" },
             "CircuitBreaker": { "SamplingDuration": "00:01", "BreakDuration": " 00:00:00.5 " },
             "Retry": { "BackoffType": "constant", "UseJitter": "False", "Delay": "00:00:00.0100000" } }"#,
    );
    assert_eq!(value(&t, "timeout_ms"), "timeout_ms = 30000");
    assert_eq!(value(&t, "sampling_duration_ms"), "sampling_duration_ms = 60000");
    assert_eq!(value(&t, "break_duration_ms"), "break_duration_ms = 500");
    assert_eq!(value(&t, "base_ms"), "base_ms = 10");
    assert_eq!(value(&t, "jitter"), "jitter = \"none\"");
    assert!(t.contains("TotalRequestTimeout:Timeout (appsettings.json:1) = \"1\""), "{t}");
}

#[test]
fn the_fragments_validate_and_run() {
    let dir = scratch("runs");
    let linear = r#"{"Retry": {"BackoffType": "Linear", "Delay": "00:00:00.1", "MaxRetryAttempts": 3}, "RateLimiter": {"DefaultRateLimiterOptions": {"PermitLimit": 5, "QueueLimit": 10}}}"#;
    for fragment in
        [import_file(EXAMPLE, &[]), import_text("run-defaults", "{\"Retry\": {}}"), import_text("run-linear", linear)]
    {
        let s = dir.join("s.toml");
        std::fs::write(&s, format!("{}{fragment}", model_scenario("overloaded = 0.2", 20))).unwrap();
        let v = faultline(&["validate", s.to_str().unwrap()]);
        assert!(v.status.success(), "{}\n{fragment}", String::from_utf8_lossy(&v.stderr));
        let out = dir.join("out");
        let r = faultline(&["run", s.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        assert!(out.join("imported").is_dir());
        std::fs::remove_dir_all(&out).unwrap();
    }
}

#[test]
fn the_imported_retry_sleeps_as_polly_without_jitter() {
    // Every attempt fails in 1 ms. Constant 100 ms, 2 retries: 3 ms + 200 ms = 203 ms a run.
    // Linear 100 ms, 3 retries: .NET sleeps 100 + 200 + 300 ms; the constant 200 ms written in
    // its place adds up to the same 600 ms, so every run takes 604 ms.
    for (json, want) in [
        (
            r#"{"Retry": {"BackoffType": "Constant", "UseJitter": false, "Delay": "00:00:00.1", "MaxRetryAttempts": 2}}"#,
            203.0,
        ),
        (
            r#"{"Retry": {"BackoffType": "Linear", "UseJitter": false, "Delay": "00:00:00.1", "MaxRetryAttempts": 3}}"#,
            604.0,
        ),
        (
            r#"{"Retry": {"BackoffType": "Exponential", "UseJitter": false, "Delay": "00:00:00.1", "MaxRetryAttempts": 3}}"#,
            704.0,
        ),
    ] {
        let fragment = without_breaker(&import_text("retry", json));
        let reps = replicate(&model(&format!("{}{fragment}", model_scenario("overloaded = 1.0", 200))), 0);
        for m in &reps {
            assert_eq!((m["run_latency_ms.mean"], m["run_latency_ms.max"]), (want, want), "{json}\n{fragment}");
        }
    }
}

#[test]
fn the_imported_jitter_spreads_the_sleeps_as_full_jitter() {
    // Default exponential with jitter, Delay 100 ms, 3 retries, every attempt failing: full
    // jitter sleeps 50 + 100 + 200 ms on average (350 ms + 4 ms of service); Polly's
    // DecorrelatedJitterBackoffV2 would average about 87 + 116 + 208 = 411 ms (NOT MAPPED).
    let fragment = without_breaker(&import_text("jitter", r#"{"Retry": {"Delay": "00:00:00.1"}}"#));
    let reps = replicate(&model(&format!("{}{fragment}", model_scenario("overloaded = 1.0", 400))), 0);
    for m in &reps {
        let mean = m["run_latency_ms.mean"];
        println!("full jitter, 3 retries of 100 ms: mean run {mean} ms, max {}", m["run_latency_ms.max"]);
        assert!((340.0..=368.0).contains(&mean), "{m:?}");
        assert!(m["run_latency_ms.max"] <= 704.0);
    }
}

/// MaxDelay <= Delay with the default jitter: Polly caps each decorrelated draw at MaxDelay and
/// the draws are mostly above it, so the sleeps are MaxDelay (2.91 s of 3 in the review's
/// simulation of Polly). Written as full jitter under MaxDelay, the runs took 1.5 s on average;
/// now every run takes 3 x 1 s of sleep and 4 ms of service.
#[test]
fn a_max_delay_below_delay_sleeps_max_delay_not_a_jittered_draw_under_it() {
    let json = r#"{"Retry": {"Delay": "00:00:02", "MaxDelay": "00:00:01"}}"#;
    let fragment = import_text("maxdelay", json);
    assert_eq!(value(&fragment, "jitter"), "jitter = \"none\"", "{fragment}");
    assert!(fragment.contains("draws capped at MaxDelay average a little under it"), "{fragment}");
    let reps =
        replicate(&model(&format!("{}{}", model_scenario("overloaded = 1.0", 200), without_breaker(&fragment))), 0);
    for m in &reps {
        assert_eq!((m["run_latency_ms.mean"], m["run_latency_ms.max"]), (3004.0, 3004.0), "{fragment}");
    }
}

#[test]
fn the_imported_breaker_breaks_for_its_break_duration() {
    // A dependency that always fails: 2 calls in the record break the circuit for 10 s, then the
    // first call after the break probes, fails, and breaks it again.
    let json = r#"{"Retry": {"MaxRetryAttempts": 1, "Delay": "00:00:00"},
      "AttemptTimeout": {"Timeout": "00:00:00.5"},
      "CircuitBreaker": {"FailureRatio": 0.5, "MinimumThroughput": 2, "SamplingDuration": "00:00:01", "BreakDuration": "00:00:10"}}"#;
    let fragment = import_text("breaker", json);
    assert!(fragment.contains("\nkind = \"polly\" "), "{fragment}");
    let reps = replicate(&model(&format!("{}{fragment}", model_scenario("overloaded = 1.0", 200))), 0);
    for m in &reps {
        let opens = m["breaker.model.transition_total.open"];
        let open_s = m["breaker.model.time_in_state_s.open"];
        println!("BreakDuration 10 s: {opens} opens, {open_s} s open");
        assert!((15.0..=20.0).contains(&opens), "{m:?}");
        assert!(open_s >= (opens - 1.0) * 10.0 && open_s <= opens * 10.6, "{open_s} s open in {opens} spells");
    }
    // Without BreakDuration, Polly's default 5 s: twice as many spells.
    let fragment = import_text("breaker-default", &json.replace(", \"BreakDuration\": \"00:00:10\"", ""));
    assert!(fragment.contains("break_duration_ms = 5000 "), "{fragment}");
    let reps = replicate(&model(&format!("{}{fragment}", model_scenario("overloaded = 1.0", 200))), 0);
    for m in &reps {
        let opens = m["breaker.model.transition_total.open"];
        println!("BreakDuration default 5 s: {opens} opens");
        assert!((30.0..=40.0).contains(&opens), "{m:?}");
    }
}

/// What .NET refuses is refused here, at the key, with exit 2 and no output file.
#[test]
fn refusals_are_located_with_exit_2_and_nothing_written() {
    let dir = scratch("refusals");
    let cases: [(&str, &str, &str); 12] = [
        (
            "unknown.json",
            "{\"Retry\": {\"MaxRetries\": 5}}",
            "unknown.json:1:26: Retry:MaxRetries: 'ErrorOnUnknownConfiguration' was set on the provided BinderOptions, but the following properties were not found on the instance of Microsoft.Extensions.Http.Resilience.HttpRetryStrategyOptions: 'MaxRetries'",
        ),
        (
            "total.json",
            "{\"TotalRequestTimeout\": {\"Timeout\": \"00:00:05\"}}",
            "total.json:1:37: TotalRequestTimeout:Timeout: Total request timeout resilience strategy must have a greater timeout than the attempt resilience strategy. Total Request Timeout: 5s, Attempt Timeout: 10s",
        ),
        (
            "sampling.json",
            "{\"CircuitBreaker\": {\"SamplingDuration\": \"00:00:19\"}}",
            "sampling.json:1:41: CircuitBreaker:SamplingDuration: The sampling duration of circuit breaker strategy needs to be at least double of an attempt timeout strategy’s timeout interval",
        ),
        (
            "attempts.json",
            "{\"Retry\": {\"MaxRetryAttempts\": 0}}",
            "attempts.json:1:32: Retry:MaxRetryAttempts: The field MaxRetryAttempts must be between 1 and 2147483647.",
        ),
        (
            "ratio.json",
            "{\"CircuitBreaker\": {\"FailureRatio\": 1.5}}",
            "ratio.json:1:37: CircuitBreaker:FailureRatio: The field FailureRatio must be between 0 and 1.",
        ),
        (
            "days.json",
            "{\"Retry\": {\"Delay\": \"30\"}}",
            "days.json:1:21: Retry:Delay: The field Delay must be between 00:00:00 and 1.00:00:00. (Polly's [Range] attribute; found 30.00:00:00",
        ),
        (
            "colons.json",
            "{\"Retry\": {\"Delay\": \"0:00:00:01\"}}",
            "colons.json:1:21: Retry:Delay: Failed to convert configuration value at 'Retry:Delay' to type 'System.TimeSpan'. (\"0:00:00:01\": d:hh:mm:ss is not read by this importer",
        ),
        (
            "permits.json",
            "{\"RateLimiter\": {\"DefaultRateLimiterOptions\": {\"PermitLimit\": 0}}}",
            "permits.json:1:63: RateLimiter:DefaultRateLimiterOptions:PermitLimit: PermitLimit must be set to a value greater than 0.",
        ),
        (
            "case.json",
            "{\"Retry\": {\"Delay\": \"00:00:01\", \"delay\": \"00:00:02\"}}",
            "case.json:1:42: Retry:delay: A duplicate key 'Retry:delay' was found.",
        ),
        (
            "timeout.json",
            "{\"AttemptTimeout\": {\"Timeout\": \"00:00:00.005\"}}",
            "timeout.json:1:32: AttemptTimeout:Timeout: The field Timeout must be between 00:00:00.0100000 and 1.00:00:00.",
        ),
        (
            "many.json",
            "{\"A\": {\"Retry\": {}}, \"B\": {\"CircuitBreaker\": {}}}",
            "many.json: 2 sections have the standard handler's keys: pass --section with one of A (line 1), B (line 1)",
        ),
        (
            "twenty.json",
            "{\"Retry\": {\"MaxRetryAttempts\": 20}}",
            "twenty.json:1:32: Retry:MaxRetryAttempts: 20 retries are 21 attempts; faultline's retry.max_attempts is at most 20",
        ),
    ];
    assert_refused("dotnet-resilience", &dir, &cases);
    // --section belongs to dotnet-resilience only.
    let out = faultline(&["import", "grpc-service-config", EXAMPLE, "--section", "A"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("only dotnet-resilience reads a configuration section"));
}
