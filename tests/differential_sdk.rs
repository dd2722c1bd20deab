//! The real client SDKs as the reference for `sdk_client` presets (docs/scenario.md 8.18): the
//! real openai 3.63.0 and anthropic 2.17.0 clients are pointed at a fault-injecting HTTP server
//! on 127.0.0.1 (tests/differential/http_sdks/) that answers each case of `cases.json` from a
//! fixed schedule, and faultline's pure `sdk_client` machine, with the library's preset, is run
//! on the same schedule. Every case must agree on the attempts per call, the call's outcome, the
//! sleep before each retry (exactly where the SDK is deterministic: a Retry-After; within the
//! jitter bounds otherwise) and the pause the server saw (that sleep, plus at most `SLACK_S` of
//! loopback overhead). The departures the harness found are listed in `DEPARTURES`, each with the
//! library's figures, and checked to be exactly what they say.
//!
//! botocore 1.44.18's standard mode is driven the same way (`drive_botocore.py`,
//! `botocore_cases.json`): an STS client makes one or more calls per case, which share its
//! retry quota, and the model's quota must leave exactly the capacity botocore's does after each.
//!
//! botocore's adaptive mode (`drive_botocore_adaptive.py`, `botocore_adaptive_cases.json`) runs
//! on a virtual clock: botocore's own send and answer times are replayed through faultline's
//! rate limiter, which must impose the same wait on every send and leave the same allowed rate,
//! measured rate and on/off state after every answer.
//!
//! Where python3 or the packages are missing, the test says so loudly and passes, unless
//! FAULTLINE_REQUIRE_DIFFERENTIAL is set: `pip install openai==3.63.0 anthropic==2.17.0
//! botocore==1.44.18`. FAULTLINE_PYTHON names the interpreter (default `python3`).

use faultline::runtime::AttemptResult;
use faultline::runtime::guard::HiddenEnd;
use faultline::runtime::guard::litellm_cooldown::{Cooldown, CooldownOptions, ErrorClass, Outcome as CooldownOutcome};
use faultline::runtime::sdk_client::{SdkCall, SdkClientConfig, SdkDecision};
use faultline::runtime::sdk_preset::SdkPreset;
use faultline::runtime::sdk_quota::RetryQuota;
use faultline::runtime::sdk_rate_limiter::ClientRateLimiter;
use faultline::vocab::FailureKind;
use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};

const HARNESS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/differential/http_sdks");
/// The driver's exit status when its package does not import (or is not the pinned version).
const MISSING: i32 = 3;
/// Loopback overhead allowed on top of a sleep in the pause the server sees (a new connection,
/// the SDK building its request; measured at most 45 ms on an idle machine, so 4x that for CI).
const SLACK_S: f64 = 0.2;
/// The driver records a sleep longer than this without waiting it (drive.py's LONG_S).
const LONG_S: f64 = 2.0;

/// Cases where the library and the model differ, with the sleeps the library made and why: the
/// test fails if the library stops doing exactly that (then the model or this list changes).
const DEPARTURES: [(&str, &[f64], &str); 1] = [(
    "408 with retry-after-ms 10",
    &[0.01],
    // Both SDKs honour a Retry-After on any status, 408 included, and slept 0.010 s here;
    // faultline files a 408 under the SDK's `timeout` outcome, which carries no Retry-After, so
    // the model backs off (0.375-0.5 s). No simulated fault answers 408 with a Retry-After.
    "slept 0.01 s (the Retry-After); the model backs off",
)];

/// Runs the driver for `sdk`; None (after saying so loudly, and failing when required) when
/// python3 or the package is missing.
fn drive(sdk: &str) -> Option<Value> {
    let (script, args) = match sdk {
        "botocore" => ("drive_botocore.py", vec![]),
        "botocore-adaptive" => ("drive_botocore_adaptive.py", vec![]),
        "litellm" => ("drive_litellm.py", vec![]),
        _ => ("drive.py", vec![sdk]),
    };
    // litellm is large and installed on its own line of .ci/run, with its own variables.
    let (require, install, python_var) = if sdk == "litellm" {
        ("FAULTLINE_REQUIRE_LITELLM", "pip install litellm==1.110.2", "FAULTLINE_LITELLM_PYTHON")
    } else {
        (
            "FAULTLINE_REQUIRE_DIFFERENTIAL",
            "pip install openai==3.63.0 anthropic==2.17.0 botocore==1.44.18",
            "FAULTLINE_PYTHON",
        )
    };
    let required = std::env::var_os(require).is_some();
    let skip = |why: String| {
        assert!(!required, "{require} is set, but the {sdk} driver cannot run: {why}");
        let _ =
            writeln!(std::io::stderr(), "\n*** NOT RUN: differential harness against {sdk}: {why} ({install}) ***\n");
        None
    };
    let python = std::env::var(python_var)
        .or_else(|_| std::env::var("FAULTLINE_PYTHON"))
        .unwrap_or_else(|_| "python3".to_string());
    let out = match Command::new(&python).arg(format!("{HARNESS}/{script}")).args(args).stdin(Stdio::null()).output() {
        Ok(out) => out,
        Err(e) => return skip(format!("{python} does not start ({e})")),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.code() == Some(MISSING) {
        return skip(format!("the package does not import: {}", stdout.trim()));
    }
    assert!(out.status.success(), "{script} {sdk} failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    Some(serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {stdout}")))
}

/// The failure kind faultline files an HTTP status under (docs/scenario.md 8.18, `retry_on`);
/// None for 408, which is the SDK's `timeout` outcome.
fn kind_of(status: u64) -> Option<FailureKind> {
    match status {
        408 => None,
        429 => Some(FailureKind::RateLimited),
        503 | 529 => Some(FailureKind::Overloaded),
        409 | 502 | 504 => Some(FailureKind::TransientTransport),
        401 | 403 => Some(FailureKind::Unauthorized),
        s if s >= 500 => Some(FailureKind::PermanentProvider),
        _ => Some(FailureKind::InvalidInput),
    }
}

/// A Retry-After as the Stainless SDKs read it: `retry-after-ms`, then `retry-after` as
/// (possibly fractional) seconds; in microseconds. (The HTTP-date form is not in the cases.)
fn retry_after_us(headers: &Value) -> Option<u64> {
    let seconds =
        |name: &str, scale: f64| headers[name].as_str().and_then(|v| v.parse::<f64>().ok()).map(|v| v / scale);
    seconds("retry-after-ms", 1000.0).or_else(|| seconds("retry-after", 1.0)).map(|s| (s * 1e6).round().max(0.0) as u64)
}

/// How the n-th scheduled answer ends an attempt, with its `x-should-retry`, and the outcome
/// the SDK reports if the call ends there.
fn attempt(entry: Option<&Value>, timeout_s: f64) -> (AttemptResult, Option<bool>, String) {
    let Some(entry) = entry else { return (AttemptResult::Ok, None, "ok".into()) };
    if entry["drop"].as_bool() == Some(true) {
        let reset = AttemptResult::Failed { kind: FailureKind::TransientTransport, retry_after_us: None };
        return (reset, None, "connection".into());
    }
    if entry["delay_s"].as_f64().unwrap_or(0.0) > timeout_s {
        return (AttemptResult::TimedOut, None, "timeout".into());
    }
    let status = entry["status"].as_u64().unwrap();
    if status == 200 {
        return (AttemptResult::Ok, None, "ok".into());
    }
    let headers = &entry["headers"];
    let should_retry = match headers["x-should-retry"].as_str() {
        Some("true") => Some(true),
        Some("false") => Some(false),
        _ => None,
    };
    let result = match kind_of(status) {
        Some(kind) => AttemptResult::Failed { kind, retry_after_us: retry_after_us(headers) },
        None => AttemptResult::TimedOut,
    };
    (result, should_retry, format!("status {status}"))
}

/// What the model does with a case: (lowest, highest) sleep before each retry in seconds,
/// the attempts, the outcome.
struct Modelled {
    sleeps_s: Vec<(f64, f64)>,
    attempts: usize,
    outcome: String,
}

/// Runs the machine on the schedule with the jitter draw `unit` (0: the longest sleep).
fn run(config: &SdkClientConfig, schedule: &[Value], timeout_s: f64, unit: f64) -> (Vec<f64>, usize, String) {
    let mut call = SdkCall::default();
    let mut sleeps = Vec::new();
    for n in 0.. {
        let (result, should_retry, outcome) = attempt(schedule.get(n), timeout_s);
        match call.on_response(config, result, should_retry, unit, |_| true) {
            SdkDecision::Retry { delay_us } => sleeps.push(delay_us as f64 / 1e6),
            SdkDecision::Answer(_) => return (sleeps, n + 1, outcome),
        }
    }
    unreachable!()
}

fn model(config: &SdkClientConfig, schedule: &[Value], timeout_s: f64) -> Modelled {
    let (longest, attempts, outcome) = run(config, schedule, timeout_s, 0.0);
    // U is drawn from [0, 1): just below 1 is the shortest sleep.
    let (shortest, attempts_again, _) = run(config, schedule, timeout_s, 1.0 - f64::EPSILON);
    assert_eq!(attempts, attempts_again, "the jitter draw never changes whether the SDK retries");
    Modelled { sleeps_s: shortest.into_iter().zip(longest).collect(), attempts, outcome }
}

/// One case's library figures against the model's; the differences, or why they agree.
fn compare(case: &Value, spec: &Value, m: &Modelled) -> Result<String, String> {
    let mut differences = Vec::new();
    let attempts = case["attempts"].as_u64().unwrap() as usize;
    let outcome = case["outcome"].as_str().unwrap();
    let sleeps: Vec<f64> = case["sleeps_s"].as_array().unwrap().iter().map(|s| s.as_f64().unwrap()).collect();
    let pauses: Vec<f64> = case["pauses_s"].as_array().unwrap().iter().map(|s| s.as_f64().unwrap()).collect();
    if attempts != m.attempts {
        differences.push(format!("attempts: library {attempts}, faultline {}", m.attempts));
    }
    if outcome != m.outcome {
        differences.push(format!("outcome: library {outcome}, faultline {}", m.outcome));
    }
    if sleeps.len() != m.sleeps_s.len() {
        differences.push(format!("sleeps: library {sleeps:?}, faultline {:?}", m.sleeps_s));
    }
    let schedule = spec["schedule"].as_array().unwrap();
    for (i, (&slept, &(lo, hi))) in sleeps.iter().zip(&m.sleeps_s).enumerate() {
        // The model counts whole microseconds.
        if !(lo - 1e-6..=hi + 1e-6).contains(&slept) {
            differences.push(format!("retry {}: library slept {slept} s, faultline {lo}..{hi} s", i + 1));
        }
        // The pause the server saw after an answered attempt whose sleep was waited.
        let answered = schedule.get(i).is_some_and(|e| e["delay_s"].is_null());
        if answered && slept <= LONG_S && !(slept - 1e-3..=slept + SLACK_S).contains(&pauses[i]) {
            differences.push(format!(
                "retry {}: the server saw a pause of {} s after a sleep of {slept} s",
                i + 1,
                pauses[i]
            ));
        }
    }
    let counts: Vec<Value> = (0..attempts).map(|n| Value::from(n.to_string())).collect();
    if case["retry_counts"].as_array().unwrap() != &counts {
        differences.push(format!("x-stainless-retry-count: {}", case["retry_counts"]));
    }
    if differences.is_empty() {
        Ok(format!("{attempts} attempts, {outcome}, sleeps {sleeps:?}"))
    } else {
        Err(differences.join("; "))
    }
}

fn differential(sdk: &str, preset: SdkPreset) {
    let cases: Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{HARNESS}/cases.json")).unwrap()).unwrap();
    let Some(library) = drive(sdk) else { return };
    let timeout_s = cases["timeout_s"].as_f64().unwrap();
    let config = preset.defaults();
    let specs = cases["cases"].as_array().unwrap();
    let ran = library["cases"].as_array().unwrap();
    assert_eq!(ran.len(), specs.len());
    let mut failures = Vec::new();
    for (spec, case) in specs.iter().zip(ran) {
        let name = spec["name"].as_str().unwrap();
        let m = model(&config, spec["schedule"].as_array().unwrap(), timeout_s);
        let verdict = compare(case, spec, &m);
        let departure = DEPARTURES.iter().find(|(case, _, _)| *case == name);
        let slept: Vec<f64> = case["sleeps_s"].as_array().unwrap().iter().map(|s| s.as_f64().unwrap()).collect();
        let row = match (&verdict, departure) {
            (Ok(agreed), None) => format!("agree: {agreed}"),
            (Err(differ), Some((_, sleeps, known))) if slept == *sleeps => {
                format!("DEPARTURE (documented: {known}): {differ}")
            }
            (Err(differ), Some((_, sleeps, _))) => {
                failures
                    .push(format!("  {name}: the library slept {slept:?}, the departure says {sleeps:?}: {differ}"));
                format!("DISAGREE: {differ}")
            }
            (Err(differ), None) => {
                failures.push(format!("  {name}: {differ}"));
                format!("DISAGREE: {differ}")
            }
            (Ok(agreed), Some(_)) => {
                failures.push(format!("  {name}: a documented departure no longer departs ({agreed})"));
                format!("no longer departs: {agreed}")
            }
        };
        let modelled = format!("{} attempts, {}, sleeps {:?}", m.attempts, m.outcome, m.sleeps_s);
        eprintln!("{sdk} {} | {name} | faultline: {modelled} | {row}", library["version"].as_str().unwrap());
    }
    assert!(failures.is_empty(), "{sdk} and faultline's {preset} preset disagree:\n{}", failures.join("\n"));
}

#[test]
fn openai_python_retries_as_its_preset_says() {
    differential("openai", SdkPreset::OpenaiPython);
}

#[test]
fn anthropic_sdk_python_retries_as_its_preset_says() {
    differential("anthropic", SdkPreset::AnthropicSdkPython);
}

/// Cases where botocore and the model differ: botocore made one attempt (it retries none of
/// these statuses) where the model, reading the status as faultline's failure kind, retries.
/// The test fails if botocore starts retrying one of them.
const BOTOCORE_DEPARTURES: [(&str, &str); 4] = [
    ("408 not retried", "408 is the SDK's `timeout` outcome, which the preset retries (botocore's own timeouts)"),
    ("409 not retried", "409 is TRANSIENT_TRANSPORT, with 502, 504 and connection errors, which botocore retries"),
    ("501 not retried", "501 is PERMANENT_PROVIDER, with 500 (InternalError), which botocore retries"),
    ("529 not retried", "529 is OVERLOADED, with 503, which botocore retries"),
];

/// botocore's throttling and transient error codes (`botocore/retries/standard.py`,
/// `ThrottledRetryableChecker._THROTTLED_ERROR_CODES`, `TransientRetryableChecker`).
const THROTTLING_CODES: [&str; 14] = [
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottledException",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "TransactionInProgressException",
    "RequestLimitExceeded",
    "BandwidthLimitExceeded",
    "LimitExceededException",
    "RequestThrottled",
    "SlowDown",
    "PriorRequestNotComplete",
    "EC2ThrottledException",
];
const TRANSIENT_CODES: [&str; 3] = ["RequestTimeout", "RequestTimeoutException", "PriorRequestNotComplete"];

/// How the n-th scheduled answer ends a botocore attempt, and the call's outcome if it ends
/// there: a throttling code is RATE_LIMITED whatever its status, a transient code
/// TRANSIENT_TRANSPORT, any other answer the kind its status has; the hint is
/// `x-amz-retry-after` (ms), the only one botocore reads.
fn botocore_attempt(entry: &Value, timeout_s: f64) -> (AttemptResult, String) {
    if entry["drop"].as_bool() == Some(true) {
        let reset = AttemptResult::Failed { kind: FailureKind::TransientTransport, retry_after_us: None };
        return (reset, "connection".into());
    }
    if entry["delay_s"].as_f64().unwrap_or(0.0) > timeout_s {
        return (AttemptResult::TimedOut, "timeout".into());
    }
    let status = entry["status"].as_u64().unwrap();
    if status == 200 {
        return (AttemptResult::Ok, "ok".into());
    }
    let code = entry["code"].as_str().map_or_else(|| status.to_string(), str::to_string);
    let retry_after_us = entry["headers"]["x-amz-retry-after"].as_str().map(|ms| ms.parse::<u64>().unwrap() * 1000);
    let kind = if THROTTLING_CODES.contains(&code.as_str()) {
        Some(FailureKind::RateLimited)
    } else if TRANSIENT_CODES.contains(&code.as_str()) {
        Some(FailureKind::TransientTransport)
    } else {
        kind_of(status)
    };
    let result = match kind {
        Some(kind) => AttemptResult::Failed { kind, retry_after_us },
        None => AttemptResult::TimedOut,
    };
    (result, format!("code {code}"))
}

/// One modelled call: its sleeps, attempts, outcome, and the quota's capacity after it.
type ModelledCall = (Vec<f64>, usize, String, u32);

/// Runs the machine on a case's calls, one client's quota shared by them, jitter draw `unit`.
fn botocore_run(config: &SdkClientConfig, case: &Value, timeout_s: f64, unit: f64) -> Vec<ModelledCall> {
    let mut quota = RetryQuota::new(config.retry_quota.as_ref().unwrap());
    let ok = serde_json::json!({"status": 200});
    let then = if case["then"].is_null() { &ok } else { &case["then"] };
    let schedule = case["schedule"].as_array().unwrap();
    let mut n = 0;
    let mut calls = Vec::new();
    for _ in 0..case["calls"].as_u64().unwrap_or(1) {
        let mut call = SdkCall::default();
        let mut sleeps = Vec::new();
        let first = n;
        loop {
            let (result, outcome) = botocore_attempt(schedule.get(n).unwrap_or(then), timeout_s);
            n += 1;
            match call.on_response_with_quota(config, result, None, unit, Some(&mut quota), |_| true) {
                SdkDecision::Retry { delay_us } => sleeps.push(delay_us as f64 / 1e6),
                SdkDecision::Answer(_) => {
                    calls.push((sleeps, n - first, outcome, quota.available));
                    break;
                }
            }
        }
    }
    calls
}

/// One botocore call's figures against the model's (shortest and longest sleeps).
fn botocore_compare(
    library: &Value,
    (shortest, attempts, outcome, quota_after): &ModelledCall,
    longest: &[f64],
    waited: bool,
) -> Vec<String> {
    let mut differences = Vec::new();
    let sleeps: Vec<f64> = library["sleeps_s"].as_array().unwrap().iter().map(|s| s.as_f64().unwrap()).collect();
    let pauses: Vec<f64> = library["pauses_s"].as_array().unwrap().iter().map(|s| s.as_f64().unwrap()).collect();
    if library["attempts"].as_u64().unwrap() as usize != *attempts {
        differences.push(format!("attempts: library {}, faultline {attempts}", library["attempts"]));
    }
    if library["outcome"].as_str().unwrap() != outcome {
        differences.push(format!("outcome: library {}, faultline {outcome}", library["outcome"]));
    }
    if library["quota_after"].as_u64().unwrap() != u64::from(*quota_after) {
        differences.push(format!("quota after the call: library {}, faultline {quota_after}", library["quota_after"]));
    }
    if sleeps.len() != shortest.len() {
        differences.push(format!("sleeps: library {sleeps:?}, faultline {shortest:?}..{longest:?}"));
    }
    for (i, ((&slept, &lo), &hi)) in sleeps.iter().zip(shortest).zip(longest).enumerate() {
        if !(lo - 1e-6..=hi + 1e-6).contains(&slept) {
            differences.push(format!("retry {}: library slept {slept} s, faultline {lo}..{hi} s", i + 1));
        }
        if waited && slept <= LONG_S && pauses[i] > slept + SLACK_S {
            differences.push(format!(
                "retry {}: the server saw a pause of {} s after a sleep of {slept} s",
                i + 1,
                pauses[i]
            ));
        }
    }
    let counts: Vec<String> = library["sdk_requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap().split("; ").find(|p| p.starts_with("attempt=")).unwrap_or("").to_string())
        .collect();
    let expected: Vec<String> = (1..=counts.len()).map(|n| format!("attempt={n}")).collect();
    if counts != expected {
        differences.push(format!("amz-sdk-request: {counts:?}"));
    }
    differences
}

/// The most a modelled wait or rate may differ from botocore's: its virtual clock moves at least
/// 1 ns a wait (drive_botocore_adaptive.py), and both keep botocore's f64 arithmetic.
const ADAPTIVE_TOLERANCE: f64 = 1e-6;

/// Replays one adaptive case's sends and answers through the model; the rows that differ.
fn adaptive_replay(case: &Value, spec: &Value, library: &Value, timeout_s: f64) -> Vec<String> {
    let mut limiter = ClientRateLimiter::new(spec["start_s"].as_f64().unwrap_or(0.0));
    let ok = serde_json::json!({"status": 200});
    let schedule = spec["schedule"].as_array().unwrap();
    let (mut sends, mut answers, mut differ) = (0usize, 0usize, Vec::new());
    let close = |a: f64, b: f64| (a - b).abs() <= ADAPTIVE_TOLERANCE * b.abs().max(1.0);
    // The driver writes floats as text, read back exactly (drive_botocore_adaptive.py `exact`).
    let f = |v: &Value| v.as_str().unwrap().parse::<f64>().unwrap();
    for event in library["events"].as_array().unwrap() {
        if event["send_s"].is_string() {
            let send_s = f(&event["send_s"]);
            let (wait, want) = (limiter.acquire(send_s), f(&event["wait_s"]));
            if !close(wait, want) {
                differ.push(format!("send {sends} at {send_s:.6} s: waits {wait:.6} s, botocore {want:.6} s"));
            }
            sends += 1;
            continue;
        }
        let entry = schedule.get(answers).unwrap_or(&ok);
        let throttling = faultline::runtime::sdk_client::is_throttling(botocore_attempt(entry, timeout_s).0);
        limiter.on_answer(f(&event["answer_s"]), throttling);
        let want = (f(&event["allowed_rate"]), f(&event["measured_rate"]));
        let got = (limiter.allowed_rate(), limiter.measured_rate());
        if !close(got.0, want.0) || !close(got.1, want.1) || limiter.enabled() != event["enabled"].as_bool().unwrap() {
            differ.push(format!(
                "answer {answers}: allowed/measured {got:?} on {}, botocore {want:?} on {}",
                limiter.enabled(),
                event["enabled"]
            ));
        }
        answers += 1;
    }
    assert_eq!(sends, answers, "{}: every send of one thread is answered before the next", case["name"]);
    differ
}

#[test]
fn botocore_adaptive_limits_as_its_preset_says() {
    assert!(SdkPreset::BotocoreAdaptive.defaults().client_rate_limiter);
    let spec: Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{HARNESS}/botocore_adaptive_cases.json")).unwrap())
            .unwrap();
    let Some(library) = drive("botocore-adaptive") else { return };
    let timeout_s = spec["timeout_s"].as_f64().unwrap();
    let cases = spec["cases"].as_array().unwrap();
    let (mut failures, mut paced_total) = (Vec::new(), 0usize);
    for (case, lib) in cases.iter().zip(library["cases"].as_array().unwrap()) {
        let name = case["name"].as_str().unwrap();
        assert_eq!(lib["name"].as_str(), Some(name));
        let events = lib["events"].as_array().unwrap();
        let paced =
            events.iter().filter(|e| e["wait_s"].as_str().is_some_and(|w| w.parse::<f64>().unwrap() > 0.0)).count();
        paced_total += paced;
        let differ = adaptive_replay(lib, case, lib, timeout_s);
        let last = events.iter().rev().find(|e| e["allowed_rate"].is_string()).unwrap();
        eprintln!(
            "botocore-adaptive | {name} | sends {}, paced {paced}, allowed rate at the end {:.3}/s | {}",
            events.len() / 2,
            last["allowed_rate"].as_str().unwrap().parse::<f64>().unwrap(),
            if differ.is_empty() { "agree".to_string() } else { format!("{} differ", differ.len()) }
        );
        failures.extend(differ.into_iter().take(3).map(|d| format!("{name}: {d}")));
    }
    // The cases exercise the limiter: a run where it never paced a send would prove nothing.
    assert!(paced_total > 100, "only {paced_total} sends waited for a token");
    assert!(failures.is_empty(), "botocore's adaptive limiter and faultline's disagree:\n{}", failures.join("\n"));
}

#[test]
fn botocore_standard_retries_as_its_preset_says() {
    let cases: Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{HARNESS}/botocore_cases.json")).unwrap()).unwrap();
    let Some(library) = drive("botocore") else { return };
    let timeout_s = cases["timeout_s"].as_f64().unwrap();
    let config = SdkPreset::BotocoreStandard.defaults();
    let specs = cases["cases"].as_array().unwrap();
    let ran = library["cases"].as_array().unwrap();
    assert_eq!(ran.len(), specs.len());
    let mut failures = Vec::new();
    for (spec, case) in specs.iter().zip(ran) {
        let name = spec["name"].as_str().unwrap();
        // U just below 1 is the shortest sleep, 0 the longest; neither changes the quota.
        let shortest = botocore_run(&config, spec, timeout_s, 1.0 - f64::EPSILON);
        let longest = botocore_run(&config, spec, timeout_s, 0.0);
        let calls = case["calls"].as_array().unwrap();
        assert_eq!(calls.len(), shortest.len());
        let waited = spec["wait"].as_bool() != Some(false);
        let differences: Vec<String> = calls
            .iter()
            .zip(&shortest)
            .zip(&longest)
            .enumerate()
            .flat_map(|(i, ((library, short), long))| {
                assert_eq!(short.1, long.1, "the jitter draw never changes whether botocore retries");
                botocore_compare(library, short, &long.0, waited)
                    .into_iter()
                    .map(move |d| format!("call {}: {d}", i + 1))
            })
            .collect();
        if name.starts_with("400 PriorRequestNotComplete") {
            // In both of botocore's lists: its 1 s throttling base, not the 50 ms transient one,
            // sets the sleeps (30 draws of U[0, 1) s all under 50 ms: p = 0.05^30).
            let longest_slept = calls
                .iter()
                .flat_map(|c| c["sleeps_s"].as_array().unwrap())
                .fold(0.0_f64, |m, s| m.max(s.as_f64().unwrap()));
            assert!(longest_slept > 0.05, "PriorRequestNotComplete slept at most {longest_slept} s");
        }
        let attempts: Vec<u64> = calls.iter().map(|c| c["attempts"].as_u64().unwrap()).collect();
        let quota: Vec<u64> = calls.iter().map(|c| c["quota_after"].as_u64().unwrap()).collect();
        let departure = BOTOCORE_DEPARTURES.iter().find(|(case, _)| *case == name);
        let row = match (differences.is_empty(), departure) {
            (true, None) => "agree".to_string(),
            (false, Some((_, why))) if attempts == [1] => {
                format!("DEPARTURE (documented: {why}): {}", differences.join("; "))
            }
            (false, _) => {
                failures.push(format!("  {name}: {}", differences.join("; ")));
                format!("DISAGREE: {}", differences.join("; "))
            }
            (true, Some(_)) => {
                failures.push(format!("  {name}: a documented departure no longer departs"));
                "no longer departs".to_string()
            }
        };
        let sleeps: Vec<Vec<f64>> = calls
            .iter()
            .map(|c| c["sleeps_s"].as_array().unwrap().iter().map(|s| s.as_f64().unwrap()).collect())
            .collect();
        let shown = if calls.len() == 1 {
            format!("sleeps {:?}", sleeps[0])
        } else {
            format!("{} sleeps", sleeps.concat().len())
        };
        let modelled_quota: Vec<u32> = shortest.iter().map(|c| c.3).collect();
        let bounds: Vec<(f64, f64)> =
            shortest.iter().zip(&longest).flat_map(|(s, l)| s.0.iter().copied().zip(l.0.iter().copied())).collect();
        let bounds = if calls.len() == 1 { format!("sleeps {bounds:?}") } else { format!("{} sleeps", bounds.len()) };
        eprintln!(
            "botocore {} | {name} | attempts {attempts:?}, {shown}, quota {quota:?}, last {} | faultline attempts {:?}, {bounds}, quota {modelled_quota:?} | {row}",
            library["version"].as_str().unwrap(),
            calls.last().unwrap()["outcome"],
            shortest.iter().map(|c| c.1).collect::<Vec<_>>(),
        );
    }
    assert!(
        failures.is_empty(),
        "botocore and faultline's botocore-standard preset disagree:\n{}",
        failures.join("\n")
    );
}

/// LiteLLM's router in a case that has deployments the model cannot stand for, or a setting it
/// does not carry: what the router did (attempts at each deployment, per call), and why the
/// model differs. The test fails if the router stops doing exactly that.
const LITELLM_DEPARTURES: [(&str, &[&[u64]], &str); 5] = [
    (
        "403 not retried",
        &[&[2]],
        "the router retries a 403 (PermissionDeniedError); faultline files 403 with 401 as UNAUTHORIZED, \
         and the router does not retry a 401, so the preset retries neither",
    ),
    (
        "retry_policy AuthenticationErrorRetries 1: a 401 cools the lone deployment it retries",
        &[&[1]],
        "the 401 cools the lone deployment at once (default mode: should_retry says no), so the retry \
         finds no deployment and the router raises RouterRateLimitError (429) after sleeping; the model \
         ends the call at the cooled deployment with its 401",
    ),
    (
        "cooldown: two deployments by order, allowed_fails 1, the first always 503",
        &[&[2, 1], &[0, 1]],
        "a group of two deployments: the router retries on the other at once (sleep 0) and cools the first \
         down; an sdk_client stands for one deployment",
    ),
    (
        "cooldown: two deployments, default (percentage) mode, the first 429",
        &[&[1, 1], &[0, 1]],
        "the default mode cools down a deployment of a group of several on its first 429 \
         (cooldown_handlers.py `_should_cooldown_deployment`); an sdk_client stands for one deployment",
    ),
    (
        "cooldown: two deployments, default (percentage) mode, the first 503",
        &[&[3, 1], &[2, 1]],
        "the default mode does not cool down on 503 below DEFAULT_FAILURE_THRESHOLD_MINIMUM_REQUESTS (5) a \
         minute; the router retries on the group (sleep 0) and reaches the second deployment; an sdk_client \
         stands for one deployment",
    ),
];

/// The router sleeps once more after the last retry failed, before it raises the error (every
/// case whose retries were spent, when it retried at all); the model answers at once. The extra sleep is checked to be the
/// next backoff.
const LITELLM_TRAILING_SLEEP: &str = "one more backoff after the last retry, before the error";

/// A Retry-After as LiteLLM reads it (`litellm/utils.py` `_get_retry_after_from_exception_header`):
/// `int(retry-after)`, whole seconds only (a fraction or `retry-after-ms` is not read).
fn litellm_retry_after_us(headers: &Value) -> Option<u64> {
    headers["retry-after"].as_str().and_then(|v| v.trim().parse::<u64>().ok()).map(|s| s * 1_000_000)
}

/// How a scheduled answer ends a router attempt, and the call's outcome if it ends there.
fn litellm_attempt(entry: &Value, timeout_s: f64) -> (AttemptResult, String) {
    if entry["drop"].as_bool() == Some(true) {
        return (
            AttemptResult::Failed { kind: FailureKind::TransientTransport, retry_after_us: None },
            "connection".into(),
        );
    }
    if entry["delay_s"].as_f64().unwrap_or(0.0) > timeout_s {
        return (AttemptResult::TimedOut, "timeout".into());
    }
    let status = entry["status"].as_u64().unwrap();
    if status == 200 {
        return (AttemptResult::Ok, "ok".into());
    }
    let result = match kind_of(status) {
        Some(kind) => AttemptResult::Failed { kind, retry_after_us: litellm_retry_after_us(&entry["headers"]) },
        None => AttemptResult::TimedOut,
    };
    (result, format!("status {status}"))
}

/// The preset as the case's Router arguments change it.
fn litellm_config(router: &Value) -> SdkClientConfig {
    let mut c = SdkPreset::LitellmRouter.defaults();
    if let Some(n) = router["num_retries"].as_u64() {
        c.max_retries = n as u32;
    }
    if let Some(s) = router["retry_after"].as_f64() {
        c.min_delay_us = (s * 1e6) as u64;
    }
    if let Some(s) = router["timeout"].as_f64() {
        c.timeout_us = Some((s * 1e6) as u64);
    }
    // retry_policy, or the group's model_group_retry_policy, as the importer maps it.
    let policy = router["model_group_retry_policy"]["g"].as_object().or(router["retry_policy"].as_object());
    for (name, n) in policy.into_iter().flatten() {
        let n = n.as_u64().unwrap() as u32;
        match name.as_str() {
            "TimeoutErrorRetries" => c.max_retries_on_timeout = Some(n),
            _ => {
                let kind = match name.as_str() {
                    "BadRequestErrorRetries" => FailureKind::InvalidInput,
                    "AuthenticationErrorRetries" => FailureKind::Unauthorized,
                    "RateLimitErrorRetries" => FailureKind::RateLimited,
                    "InternalServerErrorRetries" => FailureKind::PermanentProvider,
                    "ServiceUnavailableErrorRetries" => FailureKind::Overloaded,
                    other => panic!("no case sets {other}"),
                };
                c.max_retries_by_kind[kind.index()] = Some(n);
            }
        }
    }
    c
}

/// One modelled router call: attempts per deployment, each sleep (and whether it is the trailing
/// one), the outcome.
struct RouterCall {
    attempts: Vec<u64>,
    sleeps: Vec<(u64, bool)>,
    outcome: String,
}

/// The `litellm_cooldown` guard the importer writes for a group of one deployment, as the case's
/// Router arguments set it (None for a deployment whose group has several: not modelled).
fn litellm_cooldown(case: &Value, group: &str) -> Option<Cooldown> {
    let deployments = case["deployments"].as_array()?;
    if deployments.iter().filter(|d| d["group"] == group).count() != 1 {
        return None;
    }
    let router = &case["router"];
    let d = CooldownOptions::default();
    let mut policy = [None; ErrorClass::COUNT];
    if let Some(p) = router["allowed_fails_policy"].as_object() {
        for (i, class) in ErrorClass::ALL.iter().enumerate() {
            policy[i] = p.get(class.policy_field()).and_then(Value::as_u64).map(|n| n as u32);
        }
    }
    let fallbacks = router["fallbacks"].as_array().is_some_and(|f| f.iter().any(|e| !e[group].is_null()));
    Some(Cooldown::new(CooldownOptions {
        cooldown_time_us: router["cooldown_time"].as_f64().map_or(d.cooldown_time_us, |s| (s * 1e6) as u64),
        allowed_fails: router["allowed_fails"].as_u64().map(|n| n as u32),
        allowed_fails_policy: policy,
        policy_set: router["allowed_fails_policy"].is_object(),
        disable_cooldowns: router["disable_cooldowns"].as_bool() == Some(true),
        group_has_fallbacks: fallbacks,
    }))
}

/// The model on a case: each call sends to the first deployment through the sdk_client machine,
/// and after a failure to the next (its fallback) when the router has `fallbacks`. A deployment
/// that is a group of its own has the `litellm_cooldown` guard: it hears every request (the
/// engine's `sdk_attempt_end`), a cooled deployment gets none (the router answers 429 when no
/// fallback is left), and a failure that cools it ends the call's retries there. Time is the
/// calls' `gap_s` (the cooldown cases wait no sleep) plus, in a case that waits, each sleep.
fn litellm_model(config: &SdkClientConfig, case: &Value, unit: f64) -> Vec<RouterCall> {
    let one = serde_json::json!([{"group": "g", "schedule": case["schedule"].clone()}]);
    let deployments =
        if case["deployments"].is_null() { one.as_array().unwrap() } else { case["deployments"].as_array().unwrap() };
    let timeout_s = config.timeout_us.map_or(f64::INFINITY, |us| us as f64 / 1e6);
    let falls_back = !case["router"]["fallbacks"].is_null();
    let waited = case["wait"].as_bool() != Some(false);
    let ok = serde_json::json!({"status": 200});
    let mut sent = vec![0usize; deployments.len()];
    let mut cooldowns: Vec<Option<Cooldown>> =
        deployments.iter().map(|d| litellm_cooldown(case, d["group"].as_str().unwrap())).collect();
    let specs = case["calls"].as_array().cloned().unwrap_or_else(|| vec![serde_json::json!({})]);
    let mut now: u64 = 0;
    let mut modelled = Vec::new();
    for spec in &specs {
        now += (spec["gap_s"].as_f64().unwrap_or(0.0) * 1e6) as u64;
        let mut call = RouterCall { attempts: vec![0; deployments.len()], sleeps: Vec::new(), outcome: String::new() };
        for (d, deployment) in deployments.iter().enumerate() {
            let last = !falls_back || d + 1 == deployments.len();
            if cooldowns[d].as_ref().is_some_and(|c| c.cooled(now)) {
                // No deployment of the group is available: RouterRateLimitError (429).
                call.outcome = "status 429".into();
                if last {
                    break;
                }
                continue;
            }
            let then = if deployment["then"].is_null() { &ok } else { &deployment["then"] };
            let mut sdk = SdkCall::default();
            loop {
                let entry = deployment["schedule"].as_array().unwrap().get(sent[d]).unwrap_or(then);
                let (result, outcome) = litellm_attempt(entry, timeout_s);
                sent[d] += 1;
                call.attempts[d] += 1;
                let end = match result {
                    AttemptResult::Ok | AttemptResult::NotFound => HiddenEnd::Answered,
                    AttemptResult::Failed { kind, .. } => HiddenEnd::Failed(kind),
                    AttemptResult::TimedOut => HiddenEnd::TimedOut,
                };
                let cooled = cooldowns[d].as_mut().is_some_and(|c| {
                    c.record(now, CooldownOutcome::of_hidden(end));
                    c.cooled(now)
                });
                if cooled {
                    call.outcome = outcome;
                    break;
                }
                match sdk.on_response(config, result, None, unit, |_| true) {
                    SdkDecision::Retry { delay_us } => {
                        call.sleeps.push((delay_us, false));
                        if waited && delay_us as f64 / 1e6 <= LONG_S {
                            now += delay_us;
                        }
                    }
                    SdkDecision::Answer(stop) => {
                        // Only after a retry: with num_retries 0 the retry loop is never entered.
                        let allowed = sdk.retries_allowed.unwrap_or(config.max_retries);
                        if stop == faultline::runtime::sdk_client::Stop::RetriesSpent && allowed > 0 {
                            let more = SdkClientConfig { max_retries: config.max_retries + 1, ..config.clone() };
                            sdk.retries_allowed = sdk.retries_allowed.map(|n| n + 1);
                            if let SdkDecision::Retry { delay_us } =
                                sdk.on_response(&more, result, None, unit, |_| true)
                            {
                                call.sleeps.push((delay_us, true));
                            }
                        }
                        call.outcome = outcome;
                        break;
                    }
                }
            }
            if call.outcome == "ok" || last {
                break;
            }
        }
        modelled.push(call);
    }
    modelled
}

#[test]
fn litellm_router_retries_as_its_preset_says() {
    let cases: Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{HARNESS}/litellm_cases.json")).unwrap()).unwrap();
    let Some(library) = drive("litellm") else { return };
    let version = library["version"].as_str().unwrap();
    // The preset's figures are the ones constants.py writes.
    let d = &library["defaults"];
    let preset = SdkPreset::LitellmRouter.defaults();
    assert_eq!(d["INITIAL_RETRY_DELAY"].as_f64(), Some(preset.initial_delay_us as f64 / 1e6));
    assert_eq!(d["MAX_RETRY_DELAY"].as_f64(), Some(preset.max_delay_us as f64 / 1e6));
    assert_eq!(d["JITTER"].as_f64(), Some(preset.jitter_added_us as f64 / 1e6));
    assert_eq!(d["DEFAULT_MAX_RETRIES"].as_f64(), Some(f64::from(preset.max_retries)));
    let specs = cases["cases"].as_array().unwrap();
    let ran = library["cases"].as_array().unwrap();
    assert_eq!(ran.len(), specs.len());
    let (mut failures, mut agree, mut trailing, mut departed) = (Vec::new(), 0, 0, 0);
    for (spec, case) in specs.iter().zip(ran) {
        let name = spec["name"].as_str().unwrap();
        let config = litellm_config(&spec["router"]);
        // The jitter is added: U = 0 is the shortest sleep, U just below 1 the longest.
        let shortest = litellm_model(&config, spec, 0.0);
        let longest = litellm_model(&config, spec, 1.0 - f64::EPSILON);
        let calls = case["calls"].as_array().unwrap();
        assert_eq!(calls.len(), shortest.len());
        let waited = spec["wait"].as_bool() != Some(false);
        let mut differences = Vec::new();
        let mut tail = false;
        for (i, ((library, lo), hi)) in calls.iter().zip(&shortest).zip(&longest).enumerate() {
            let attempts: Vec<u64> =
                library["attempts"].as_array().unwrap().iter().map(|a| a.as_u64().unwrap()).collect();
            let outcome = library["outcome"].as_str().unwrap();
            let sleeps: Vec<f64> =
                library["sleeps_s"].as_array().unwrap().iter().map(|s| s.as_f64().unwrap()).collect();
            let pauses: Vec<f64> =
                library["pauses_s"].as_array().unwrap().iter().map(|s| s.as_f64().unwrap()).collect();
            if attempts != lo.attempts {
                differences.push(format!(
                    "call {}: attempts: library {attempts:?}, faultline {:?}",
                    i + 1,
                    lo.attempts
                ));
            }
            if outcome != lo.outcome {
                differences.push(format!("call {}: outcome: library {outcome}, faultline {}", i + 1, lo.outcome));
            }
            if sleeps.len() != lo.sleeps.len() {
                differences.push(format!(
                    "call {}: sleeps: library {sleeps:?}, faultline {} sleeps",
                    i + 1,
                    lo.sleeps.len()
                ));
                continue;
            }
            for (n, ((&slept, &(lo_us, is_tail)), &(hi_us, _))) in
                sleeps.iter().zip(&lo.sleeps).zip(&hi.sleeps).enumerate()
            {
                tail |= is_tail;
                let (a, b) = (lo_us.min(hi_us) as f64 / 1e6, lo_us.max(hi_us) as f64 / 1e6);
                if !(a - 1e-6..=b + 1e-6).contains(&slept) {
                    differences.push(format!(
                        "call {}: sleep {}: library {slept} s, faultline {a}..{b} s",
                        i + 1,
                        n + 1
                    ));
                }
                let entry = spec["schedule"].get(n);
                let answered = entry.is_some_and(|e| e["delay_s"].is_null());
                if waited
                    && !is_tail
                    && answered
                    && slept <= LONG_S
                    && n < pauses.len()
                    && !(slept - 1e-3..=slept + SLACK_S).contains(&pauses[n])
                {
                    differences.push(format!(
                        "call {}: the server saw a pause of {} s after a sleep of {slept} s",
                        i + 1,
                        pauses[n]
                    ));
                }
            }
        }
        let seen: Vec<Vec<u64>> = calls
            .iter()
            .map(|c| c["attempts"].as_array().unwrap().iter().map(|a| a.as_u64().unwrap()).collect())
            .collect();
        let departure = LITELLM_DEPARTURES.iter().find(|(case, _, _)| *case == name);
        let row = match (differences.is_empty(), departure) {
            (true, None) if tail => {
                trailing += 1;
                format!("agree but for the trailing sleep (DEPARTURE, documented: {LITELLM_TRAILING_SLEEP})")
            }
            (true, None) => {
                agree += 1;
                "agree".to_string()
            }
            (false, Some((_, figures, why))) if seen.iter().map(Vec::as_slice).eq(figures.iter().copied()) => {
                departed += 1;
                format!("DEPARTURE (documented: {why}): {}", differences.join("; "))
            }
            (false, _) => {
                failures.push(format!("  {name}: {}", differences.join("; ")));
                format!("DISAGREE: {}", differences.join("; "))
            }
            (true, Some(_)) => {
                failures.push(format!("  {name}: a documented departure no longer departs"));
                "no longer departs".to_string()
            }
        };
        let shown: Vec<String> = calls
            .iter()
            .map(|c| {
                format!(
                    "{} {} {:?}",
                    c["attempts"],
                    c["outcome"].as_str().unwrap(),
                    c["sleeps_s"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|s| (s.as_f64().unwrap() * 1e3).round() / 1e3)
                        .collect::<Vec<_>>()
                )
            })
            .collect();
        let modelled: Vec<String> = shortest
            .iter()
            .zip(&longest)
            .map(|(lo, hi)| {
                let bounds: Vec<(f64, f64)> =
                    lo.sleeps.iter().zip(&hi.sleeps).map(|(a, b)| (a.0 as f64 / 1e6, b.0 as f64 / 1e6)).collect();
                format!("{:?} {} {bounds:?}", lo.attempts, lo.outcome)
            })
            .collect();
        eprintln!("litellm {version} | {name} | {} | faultline {} | {row}", shown.join(", "), modelled.join(", "));
    }
    eprintln!(
        "litellm {version}: {} cases: {agree} agree, {trailing} agree but for the trailing sleep, {departed} documented departures",
        specs.len()
    );
    assert!(failures.is_empty(), "litellm and faultline's litellm-router preset disagree:\n{}", failures.join("\n"));
}
