//! grpcio as the reference for the imported gRPC policy (issue 32). tests/differential/grpc/
//! harness.py runs a gRPC server and a grpcio client with a service config on 127.0.0.1; the
//! server answers a fixed fault schedule and records each attempt it receives (its number from
//! `grpc-previous-rpc-attempts`, its time, the status it answered). Here the same service config
//! goes through `faultline import`, and the fragment's retry rules and `grpc` retry budget, as
//! faultline's own pure state machines (`runtime::decision::decide`,
//! `runtime::guard::retry_budget::grpc::GrpcRetryThrottle`), are driven with the attempts the
//! server saw. Attempts per call, the status each retry followed, the throttling decisions and the
//! final statuses must agree exactly; each pause between attempts must lie within grpc-core's
//! jitter bounds around faultline's sleep. A departure is asserted as documented in
//! docs/import.md, with its figures, so a change on either side fails here.
//!
//! Where python3 or grpcio is missing, each test says so loudly and passes, unless
//! FAULTLINE_REQUIRE_DIFFERENTIAL is set: `pip install grpcio==1.85.1`.

use faultline::runtime::backoff::{Backoff, BackoffKind, Jitter};
use faultline::runtime::decision::{Decision, FailedAttempt, OnEffectUnknown, RetryRules, decide};
use faultline::runtime::guard::AttemptEnd;
use faultline::runtime::guard::retry_budget::grpc::{GrpcRetryThrottle, GrpcRetryThrottleConfig};
use faultline::vocab::FailureKind;
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const HARNESS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/differential/grpc/harness.py");
const PIP: &str = "grpcio==1.85.1";
/// The whole harness takes a few seconds; past this it hangs.
const LIMIT: Duration = Duration::from_secs(240);
/// grpc-core's retry jitter (retry_filter.h `BackoffJitter()`): each sleep is cap x U[0.8, 1.2).
const JITTER: f64 = 0.2;
/// What a pause measured at the server holds besides the sleep: the attempt's own round trip
/// and the timers' and threads' lateness on a shared 2-core machine. Early never; late by this.
const LATE_S: f64 = 0.030;

/// Runs the harness on `cases`; None (after saying so loudly) when python3 or grpcio is missing.
fn harness(cases: &Value) -> Option<Value> {
    let required = std::env::var_os("FAULTLINE_REQUIRE_DIFFERENTIAL").is_some();
    let skip = |why: String| {
        assert!(!required, "FAULTLINE_REQUIRE_DIFFERENTIAL is set, but the grpcio harness cannot run: {why}");
        let _ =
            writeln!(std::io::stderr(), "\n*** NOT RUN: grpcio differential harness: {why} (pip install {PIP}) ***\n");
        None
    };
    let dir = std::env::temp_dir().join(format!("faultline-differential-grpc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("cases-{}.json", cases[0]["name"].as_str().unwrap()));
    std::fs::write(&file, serde_json::to_vec(cases).unwrap()).unwrap();
    let mut child = match Command::new("python3")
        .arg(HARNESS)
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => return skip(format!("python3 does not start ({e})")),
    };
    let start = Instant::now();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).unwrap();
        text
    });
    while child.try_wait().expect("the harness's status").is_none() {
        if start.elapsed() > LIMIT {
            child.kill().expect("a hung harness is stopped");
            panic!("the grpcio harness ran past {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = child.wait().unwrap();
    let text = reader.join().unwrap();
    if status.code() == Some(3) {
        return skip(format!("grpcio does not import in {}", python_version()));
    }
    assert!(status.success(), "the harness failed ({status})");
    let out: Value = serde_json::from_str(&text).expect("the harness prints JSON");
    assert_eq!(out["grpcio"], "1.85.1", "the harness ran another grpcio than the pinned one");
    Some(out)
}

fn python_version() -> String {
    Command::new("python3")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|_| "python3".into())
}

/// The policy `faultline import` writes for `config`, as the state machines take it.
struct Imported {
    /// The policy's `timeout_ms`; None when 0 (no timeout).
    timeout_ms: Option<f64>,
    rules: RetryRules,
    throttle: Option<GrpcRetryThrottleConfig>,
}

fn import(config: &Value) -> Imported {
    // A file of each call's own: the tests run in parallel, and one writing the file while
    // another's import reads it left the reader an empty file (CI, stop 45).
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("faultline-differential-grpc-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("service_config.json");
    std::fs::write(&file, serde_json::to_vec_pretty(config).unwrap()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["import", "grpc-service-config", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let fragment: toml::Table = String::from_utf8(out.stdout).unwrap().parse().expect("the fragment is TOML");
    let policy = &fragment["policy"]["imported"];
    let retry = &policy["retry"];
    let mut retryable = [false; FailureKind::COUNT];
    for kind in retry.get("retry_on").and_then(|v| v.as_array()).into_iter().flatten() {
        retryable[FailureKind::parse(&kind.as_str().unwrap().to_lowercase()).unwrap().index()] = true;
    }
    let backoff = match retry.get("backoff") {
        None => Backoff::NONE,
        Some(b) => {
            let ms = |k: &str| b.get(k).map(|v| v.as_float().or(v.as_integer().map(|i| i as f64)).unwrap());
            Backoff {
                kind: BackoffKind::parse(b["kind"].as_str().unwrap()).unwrap(),
                base_us: (ms("base_ms").unwrap() * 1000.0).round() as u64,
                max_us: (ms("max_ms").unwrap_or(ms("base_ms").unwrap()) * 1000.0).round() as u64,
                jitter: Jitter::parse(b["jitter"].as_str().unwrap()).unwrap(),
                multiplier: b
                    .get("multiplier")
                    .map_or(2.0, |v| v.as_float().or(v.as_integer().map(|i| i as f64)).unwrap()),
                randomization_factor: b.get("randomization_factor").map_or(0.0, |v| v.as_float().unwrap()),
            }
        }
    };
    let rules = RetryRules {
        max_attempts: retry["max_attempts"].as_integer().unwrap() as u32,
        backoff,
        honor_retry_after: retry.get("honor_retry_after").and_then(|v| v.as_bool()).unwrap_or(true),
        retryable,
        on_effect_unknown: OnEffectUnknown::Retry,
        deadline_propagation: false,
    };
    let throttle = policy.get("retry_budget").and_then(|b| b.as_array()).map(|budgets| {
        let b = &budgets[0];
        assert_eq!(b["kind"].as_str(), Some("grpc"));
        GrpcRetryThrottleConfig {
            max_tokens: b["max_tokens"].as_integer().unwrap() as u32,
            token_ratio: b["token_ratio"].as_float().unwrap(),
            ..GrpcRetryThrottleConfig::default()
        }
    });
    let timeout_ms =
        policy.get("timeout_ms").and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64))).filter(|ms| *ms > 0.0);
    Imported { timeout_ms, rules, throttle }
}

/// A status as the simulated dependency fails: the importer's table (docs/import.md).
fn kind_of(status: &str) -> FailureKind {
    match status {
        "UNAVAILABLE" => FailureKind::Overloaded,
        "RESOURCE_EXHAUSTED" => FailureKind::RateLimited,
        "DEADLINE_EXCEEDED" => FailureKind::TransientTransport,
        "INTERNAL" | "UNKNOWN" | "DATA_LOSS" => FailureKind::PermanentProvider,
        "UNAUTHENTICATED" | "PERMISSION_DENIED" => FailureKind::Unauthorized,
        "CANCELLED" => FailureKind::Canceled,
        _ => FailureKind::InvalidInput,
    }
}

/// One call as grpcio made it: the attempts the server saw, in order.
#[derive(Debug)]
struct SeenCall {
    statuses: Vec<String>,
    styles: Vec<String>,
    times_s: Vec<f64>,
    final_status: String,
}

fn calls_of(case: &Value) -> Vec<SeenCall> {
    let mut calls: Vec<SeenCall> = case["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| SeenCall {
            statuses: vec![],
            styles: vec![],
            times_s: vec![],
            final_status: c["status"].as_str().unwrap().to_string(),
        })
        .collect();
    for a in case["attempts"].as_array().unwrap() {
        let call = &mut calls[a["call"].as_u64().unwrap() as usize];
        assert_eq!(a["attempt"].as_u64().unwrap() as usize, call.statuses.len() + 1, "attempts arrive in order");
        call.statuses.push(a["status"].as_str().unwrap().to_string());
        call.styles.push(a["style"].as_str().unwrap().to_string());
        call.times_s.push(a["t_s"].as_f64().unwrap());
    }
    calls
}

/// What faultline does with the same answers, call after call: for each call the number of
/// attempts it sends (the server's answers replayed in order), why it stopped, and the sleeps it
/// takes before each retry.
#[derive(Debug, PartialEq)]
struct Predicted {
    attempts: usize,
    stop: &'static str,
    sleeps_us: Vec<u64>,
}

fn predict(imported: &Imported, calls: &[SeenCall]) -> Vec<Predicted> {
    let mut throttle = imported.throttle.map(|c| GrpcRetryThrottle::new(c).unwrap());
    let mut out = Vec::new();
    for call in calls {
        let mut sleeps_us = Vec::new();
        let mut previous_sleep_us = 0;
        let mut stop = "answers ran out";
        let mut attempts = 0;
        for (i, status) in call.statuses.iter().enumerate() {
            attempts = i + 1;
            if status == "OK" {
                if let Some(t) = throttle.as_mut() {
                    t.on_attempt_end(AttemptEnd::success(1_000));
                }
                stop = "ok";
                break;
            }
            let kind = kind_of(status);
            if let Some(t) = throttle.as_mut() {
                t.on_attempt_end(AttemptEnd::failed(kind, 1_000));
            }
            let failed = FailedAttempt {
                kind,
                is_write: false,
                deduplicated: false,
                status_lookup: false,
                attempts_made: attempts as u32,
                max_attempts: imported.rules.max_attempts,
                has_retry_token: true,
                retry_after_us: None,
                remaining_us: u64::MAX / 4,
                reserve_us: 0,
                predicted_attempt_us: 0,
                previous_sleep_us,
                jitter: 0.5, // randomized with factor 0.2 at the middle draw sleeps the cap itself
            };
            match decide(&imported.rules, &failed) {
                Decision::Retry { sleep_us } => {
                    // faultline's budget is asked after the backoff; with one call at a time
                    // nothing ends in between, so it sees the state gRPC sees at the decision.
                    if throttle.as_ref().is_some_and(|t| !t.allows_retry()) {
                        stop = "throttled";
                        break;
                    }
                    sleeps_us.push(sleep_us);
                    previous_sleep_us = sleep_us;
                }
                Decision::GiveUp(why) => {
                    stop = match why {
                        faultline::runtime::decision::GiveUp::NotRetryable => "not retryable",
                        faultline::runtime::decision::GiveUp::AttemptsExhausted => "attempts exhausted",
                        faultline::runtime::decision::GiveUp::Budget(_) => "budget",
                    };
                    break;
                }
                Decision::Reconcile | Decision::Handoff => unreachable!("reads only"),
            }
        }
        out.push(Predicted { attempts, stop, sleeps_us });
    }
    out
}

fn service_config(
    max_attempts: u32,
    initial: &str,
    max: &str,
    codes: &[&str],
    throttling: Option<(u32, f64)>,
) -> Value {
    let mut config = json!({"methodConfig": [{
        "name": [{"service": "faultline.Probe"}],
        "retryPolicy": {
            "maxAttempts": max_attempts,
            "initialBackoff": initial,
            "maxBackoff": max,
            "backoffMultiplier": 2,
            "retryableStatusCodes": codes,
        }
    }]});
    if let Some((tokens, ratio)) = throttling {
        config["retryThrottling"] = json!({"maxTokens": tokens, "tokenRatio": ratio});
    }
    config
}

fn fail(status: &str) -> Value {
    json!({"status": status, "style": "abort"})
}

fn ok() -> Value {
    json!({"status": "OK"})
}

/// Compares attempts per call, the statuses, and (with `check_pauses`) the pauses; prints the
/// agreement row. Returns the number of calls.
fn compare(case: &Value, imported: &Imported, check_pauses: bool) -> usize {
    let calls = calls_of(case);
    let predicted = predict(imported, &calls);
    let name = case["name"].as_str().unwrap();
    for (i, (seen, p)) in calls.iter().zip(&predicted).enumerate() {
        assert_eq!(
            seen.statuses.len(),
            p.attempts,
            "{name} call {i}: grpcio sent {} attempts ({:?}), faultline {} ({})",
            seen.statuses.len(),
            seen.statuses,
            p.attempts,
            p.stop
        );
        assert_ne!(
            p.stop, "answers ran out",
            "{name} call {i}: grpcio stopped after {:?}, faultline would retry",
            seen.statuses
        );
        assert_eq!(
            &seen.final_status,
            seen.statuses.last().unwrap(),
            "{name} call {i}: the call ends with its last attempt's status"
        );
        if check_pauses {
            for (n, sleep_us) in p.sleeps_us.iter().enumerate() {
                let pause = seen.times_s[n + 1] - seen.times_s[n];
                let cap = *sleep_us as f64 / 1e6;
                assert!(
                    pause >= cap * (1.0 - JITTER) - 0.001 && pause <= cap * (1.0 + JITTER) + LATE_S,
                    "{name} call {i}: pause {n} of grpcio was {pause:.4} s, outside cap {cap} s x [0.8, 1.2) (+{LATE_S} s late)"
                );
            }
        }
    }
    let attempts: usize = calls.iter().map(|c| c.statuses.len()).sum();
    let failed = calls.iter().filter(|c| c.final_status != "OK").count();
    println!("| {name} | {} calls, {attempts} attempts, {failed} failed | the same | yes |", calls.len());
    calls.len()
}

#[test]
fn grpcio_retries_as_the_imported_retry_policy_does() {
    let u = || fail("UNAVAILABLE");
    let config = service_config(4, "0.02s", "0.05s", &["UNAVAILABLE"], None);
    let clamped = service_config(7, "0.01s", "0.01s", &["UNAVAILABLE", "RESOURCE_EXHAUSTED"], None);
    let cases = json!([
        {"name": "retry_policy", "calls": 6, "service_config": config, "schedule": [
            [ok()],
            [u(), ok()],
            [u(), u(), u(), ok()],
            [u(), u(), u(), u(), ok()],
            [fail("RESOURCE_EXHAUSTED"), ok()],
            [u(), fail("INTERNAL"), ok()],
        ]},
        {"name": "max_attempts_clamped", "calls": 2, "service_config": clamped, "schedule": [
            [u(), u(), u(), u(), u(), u(), u(), ok()],
            [fail("RESOURCE_EXHAUSTED"), u(), ok()],
        ]},
    ]);
    let Some(out) = harness(&cases) else { return };
    println!("| case | grpcio 1.85.1 | faultline | agree |");
    let imported = import(&cases[0]["service_config"]);
    assert_eq!(compare(&out["cases"][0], &imported, true), 6);
    let calls = calls_of(&out["cases"][0]);
    let attempts: Vec<usize> = calls.iter().map(|c| c.statuses.len()).collect();
    // The figures themselves: 4 attempts at most; RESOURCE_EXHAUSTED and INTERNAL end the call.
    assert_eq!(attempts, [1, 2, 4, 4, 1, 2]);
    let finals: Vec<&str> = calls.iter().map(|c| c.final_status.as_str()).collect();
    assert_eq!(finals, ["OK", "OK", "OK", "UNAVAILABLE", "RESOURCE_EXHAUSTED", "INTERNAL"]);
    let imported = import(&cases[1]["service_config"]);
    assert_eq!(imported.rules.max_attempts, 5, "maxAttempts 7 is clamped to 5");
    compare(&out["cases"][1], &imported, true);
    let attempts: Vec<usize> = calls_of(&out["cases"][1]).iter().map(|c| c.statuses.len()).collect();
    assert_eq!(attempts, [5, 3]);
}

/// maxTokens 10, tokenRatio 0.1: retries stop once a failure leaves 5 tokens or fewer. Calls 0
/// and 1 always fail, then 20 successes, a failing call, 10 successes, a failing call.
#[test]
fn grpcio_throttles_retries_where_the_grpc_budget_does() {
    let u = || fail("UNAVAILABLE");
    let config = service_config(5, "0.005s", "0.005s", &["UNAVAILABLE"], Some((10, 0.1)));
    let always = json!([u(), u(), u(), u(), u(), u()]);
    let mut schedule = vec![always.clone(), always.clone()];
    schedule.extend((0..20).map(|_| json!([ok()])));
    schedule.push(always.clone());
    schedule.extend((0..30).map(|_| json!([ok()])));
    schedule.push(always);
    let n = schedule.len();
    let cases = json!([{"name": "retry_throttling", "calls": n, "service_config": config, "schedule": schedule}]);
    let Some(out) = harness(&cases) else { return };
    let imported = import(&cases[0]["service_config"]);
    assert!(imported.throttle.is_some());
    compare(&out["cases"][0], &imported, true);
    let calls = calls_of(&out["cases"][0]);
    let failing: Vec<usize> = calls.iter().filter(|c| c.final_status != "OK").map(|c| c.statuses.len()).collect();
    // 10 tokens: call 0 takes 5 attempts (10 -> 5, the fifth is its last); call 1 is throttled
    // at once (5 -> 4); 20 successes make 6, a failure 5 (throttled); 30 more make 8: 8 -> 7 -> 6
    // -> 5, so three attempts.
    assert_eq!(failing, [5, 1, 1, 3], "attempts of the failing calls");
}

/// The commit rule (docs/import.md, departures): a handler that fails after sending headers
/// (or with a response message, `set_code`) is never retried by grpcio; faultline retries it.
/// And the probe: 5 % of attempts fail with UNAVAILABLE, 600 calls, maxAttempts 4.
#[test]
fn grpcio_never_retries_a_committed_call_a_documented_departure() {
    let config = service_config(4, "0.005s", "0.005s", &["UNAVAILABLE"], None);
    let probe = |style: &str| {
        json!({"name": format!("probe_{style}"), "calls": 600, "failure_probability": 0.05, "seed": 7,
               "style": style, "service_config": config})
    };
    let cases = json!([probe("abort"), probe("set_code"), probe("headers_first")]);
    let Some(out) = harness(&cases) else { return };
    let imported = import(&config);
    // Trailers-Only failures: grpcio retries them exactly as faultline does.
    compare(&out["cases"][0], &imported, false);
    for case in [&out["cases"][1], &out["cases"][2]] {
        let name = case["name"].as_str().unwrap();
        let calls = calls_of(case);
        let predicted = predict(&imported, &calls);
        let failed_first: Vec<&SeenCall> = calls.iter().filter(|c| c.statuses[0] != "OK").collect();
        assert!(!failed_first.is_empty(), "{name}: the seed fails some first attempts");
        // grpcio: one attempt each, the failure final. faultline would retry every one of them.
        assert!(failed_first.iter().all(|c| c.statuses.len() == 1 && c.final_status == "UNAVAILABLE"), "{name}");
        let retried_by_faultline = calls
            .iter()
            .zip(&predicted)
            .filter(|(c, _)| c.statuses[0] != "OK")
            .filter(|(_, p)| p.stop == "answers ran out")
            .count();
        assert_eq!(retried_by_faultline, failed_first.len(), "{name}: faultline retries what grpcio committed");
        let attempts: usize = calls.iter().map(|c| c.statuses.len()).sum();
        println!(
            "| {name} | {} calls, {attempts} attempts, {} failed ({:.1} %) | retries each of them | no: documented departure (commit rule) |",
            calls.len(),
            failed_first.len(),
            100.0 * failed_first.len() as f64 / calls.len() as f64
        );
    }
    let abort_failed = calls_of(&out["cases"][0]).iter().filter(|c| c.final_status != "OK").count();
    assert_eq!(abort_failed, 0, "Trailers-Only failures are retried: none of 600 calls fails 4 times at 5 %");
}

#[test]
fn the_harness_is_where_the_docs_say() {
    assert!(Path::new(HARNESS).is_file());
}

/// Issue 32's probe, explained: with `initialBackoff` 1 ms, grpc-core's jittered sleep
/// (1 ms x U[0.8, 1.2), held in whole milliseconds) is 0 ms about half the time; the posix
/// EventEngine runs a 0 ms `RunAfter` at once and returns `TaskHandle::kInvalid`, which
/// `RetryFilter::LegacyCallData::OnRetryTimerLocked` reads as a cancelled timer, so no next
/// attempt is made and the call waits for its deadline (DEADLINE_EXCEEDED). faultline sleeps
/// 1 ms and retries: a documented departure (docs/import.md), asserted with its figures. With
/// 2 ms nothing is lost.
#[test]
fn grpcio_loses_retries_whose_backoff_rounds_to_zero_ms_a_documented_departure() {
    let u = || fail("UNAVAILABLE");
    let case = |name: &str, backoff: &str| {
        json!({"name": name, "calls": 40, "deadline_s": 0.2,
               "service_config": service_config(4, backoff, backoff, &["UNAVAILABLE"], None),
               "schedule": [[u(), ok()]]})
    };
    let cases = json!([case("backoff_1ms", "0.001s"), case("backoff_2ms", "0.002s")]);
    let Some(out) = harness(&cases) else { return };
    let lost = |case: &Value| {
        let calls = calls_of(case);
        for c in &calls {
            // Either the retry was sent and succeeded, or it never left and the deadline ended it.
            match c.statuses.len() {
                2 => assert_eq!(c.final_status, "OK"),
                1 => assert_eq!(c.final_status, "DEADLINE_EXCEEDED"),
                n => panic!("{n} attempts"),
            }
        }
        calls.iter().filter(|c| c.statuses.len() == 1).count()
    };
    let lost_1ms = lost(&out["cases"][0]);
    let lost_2ms = lost(&out["cases"][1]);
    // faultline retries every one of them (its sleep is the 1 ms cap).
    let imported = import(&cases[0]["service_config"]);
    let predicted = predict(&imported, &calls_of(&out["cases"][0]));
    assert!(predicted.iter().all(|p| p.attempts == 2 || p.stop == "answers ran out"));
    println!(
        "| backoff_1ms | 40 calls, {lost_1ms} retries never sent ({:.0} %), those calls DEADLINE_EXCEEDED | retries all 40 | no: documented departure (0 ms retry timer lost) |",
        100.0 * lost_1ms as f64 / 40.0
    );
    println!("| backoff_2ms | 40 calls, {lost_2ms} retries lost | retries all 40 | yes |");
    // Half of U[0.8, 1.2) lies below 1: binomial(40, 0.5) is inside [8, 32] but for 4e-5.
    assert!((8..=32).contains(&lost_1ms), "{lost_1ms} of 40 retries lost at 1 ms");
    assert_eq!(lost_2ms, 0, "a 2 ms backoff is never 0 ms after jitter");
}

/// Server pushback (gRFC A6): `grpc-retry-pushback-ms` replaces the backoff. The importer maps it
/// to `honor_retry_after`, which faultline applies to RATE_LIMITED (RESOURCE_EXHAUSTED) with a
/// Retry-After: the pause must be the pushback, not the 5 ms backoff. A negative pushback stops
/// grpc-core's retries; faultline has no such answer and retries (NOT MAPPED in the fragment).
#[test]
fn grpcio_sleeps_a_server_pushback_as_faultline_sleeps_a_retry_after() {
    let pushback = |ms: i64| json!({"status": "RESOURCE_EXHAUSTED", "style": "abort", "pushback_ms": ms});
    let config = service_config(3, "0.005s", "0.005s", &["RESOURCE_EXHAUSTED"], None);
    let cases = json!([{"name": "pushback", "calls": 2, "service_config": config, "schedule": [
        [pushback(60), ok()],
        [pushback(-1), ok()],
    ]}]);
    let Some(out) = harness(&cases) else { return };
    let calls = calls_of(&out["cases"][0]);
    let imported = import(&config);
    assert!(imported.rules.honor_retry_after);
    // Call 0: faultline told the Retry-After sleeps it, as grpcio sleeps the pushback.
    let failed = FailedAttempt {
        kind: FailureKind::RateLimited,
        is_write: false,
        deduplicated: false,
        status_lookup: false,
        attempts_made: 1,
        max_attempts: imported.rules.max_attempts,
        has_retry_token: true,
        retry_after_us: Some(60_000),
        remaining_us: u64::MAX / 4,
        reserve_us: 0,
        predicted_attempt_us: 0,
        previous_sleep_us: 0,
        jitter: 0.5,
    };
    assert_eq!(decide(&imported.rules, &failed), Decision::Retry { sleep_us: 60_000 });
    assert_eq!(calls[0].statuses.len(), 2);
    let pause = calls[0].times_s[1] - calls[0].times_s[0];
    assert!((0.060 - 0.001..=0.060 + LATE_S).contains(&pause), "grpcio paused {pause:.4} s for a 60 ms pushback");
    // Call 1: grpcio stops at a negative pushback; faultline would retry (documented departure).
    assert_eq!((calls[1].statuses.len(), calls[1].final_status.as_str()), (1, "RESOURCE_EXHAUSTED"));
    let predicted = predict(&imported, &calls[1..]);
    assert_eq!(predicted[0].stop, "answers ran out", "faultline retries after a negative pushback");
    println!("| pushback 60 ms | pause {:.1} ms, then OK | sleeps the Retry-After, 60 ms | yes |", pause * 1000.0);
    println!("| pushback -1 | 1 attempt, RESOURCE_EXHAUSTED | retries | no: documented departure (NOT MAPPED) |");
}

/// A service config's `timeout` ends grpcio's calls early: grpcio 1.85.1 starts the clock of a
/// service-config deadline about a second before the call (1.0 to 1.75 s measured, constant
/// within a process and different in each), so a 3 s timeout ends a call after about 1.3 to
/// 2 s, and a 1 s one at once. A call deadline of 3 s (`timeout=` on the call) ends at 3 s.
/// grpc/grpc#34547 (grpcio 1.54, open) and #40633 (1.74, open) report the same. faultline ends
/// the imported timeout at the time written: a documented departure (docs/import.md), asserted.
#[test]
fn grpcio_ends_a_service_config_timeout_early_a_documented_departure() {
    let slow = json!({"status": "OK", "delay_s": 4.0});
    let config = |timeout: Option<&str>| {
        let mut method = json!({"name": [{"service": "faultline.Probe"}]});
        if let Some(t) = timeout {
            method["timeout"] = json!(t);
        }
        json!({"methodConfig": [method]})
    };
    let cases = json!([
        {"name": "service_config_timeout", "calls": 2, "service_config": config(Some("3s")), "schedule": [[slow]]},
        {"name": "call_deadline", "calls": 1, "deadline_s": 3.0, "service_config": config(None), "schedule": [[slow]]},
    ]);
    let Some(out) = harness(&cases) else { return };
    let elapsed = |case: usize, call: usize| {
        let c = &out["cases"][case]["calls"][call];
        assert_eq!(c["status"], "DEADLINE_EXCEEDED", "{c}");
        c["elapsed_s"].as_f64().unwrap()
    };
    let (early_a, early_b, exact) = (elapsed(0, 0), elapsed(0, 1), elapsed(1, 0));
    // The imported timeout is the one written.
    assert_eq!(import(&cases[0]["service_config"]).timeout_ms, Some(3000.0));
    for early in [early_a, early_b] {
        assert!(early < 2.5, "grpcio ended a 3 s service-config timeout after {early:.3} s");
    }
    assert!((early_a - early_b).abs() < 0.05, "one offset per process: {early_a:.3} vs {early_b:.3}");
    assert!((3.0..3.0 + LATE_S).contains(&exact), "a 3 s call deadline ended after {exact:.3} s");
    println!(
        "| service_config_timeout 3s | DEADLINE_EXCEEDED after {early_a:.3} and {early_b:.3} s (a 3 s call deadline: {exact:.3} s) | ends at 3 s | no: documented departure (grpc/grpc#34547) |"
    );
}
