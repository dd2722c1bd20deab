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
//! Where python3 or the packages are missing, the test says so loudly and passes, unless
//! FAULTLINE_REQUIRE_DIFFERENTIAL is set: `pip install openai==3.63.0 anthropic==2.17.0`.
//! FAULTLINE_PYTHON names the interpreter (default `python3`).

use faultline::runtime::AttemptResult;
use faultline::runtime::sdk_client::{SdkCall, SdkClientConfig, SdkDecision};
use faultline::runtime::sdk_preset::SdkPreset;
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
    let required = std::env::var_os("FAULTLINE_REQUIRE_DIFFERENTIAL").is_some();
    let skip = |why: String| {
        assert!(!required, "FAULTLINE_REQUIRE_DIFFERENTIAL is set, but the {sdk} driver cannot run: {why}");
        let _ = writeln!(
            std::io::stderr(),
            "\n*** NOT RUN: differential harness against {sdk}: {why} \
             (pip install openai==3.63.0 anthropic==2.17.0) ***\n"
        );
        None
    };
    let python = std::env::var("FAULTLINE_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let out = match Command::new(&python).arg(format!("{HARNESS}/drive.py")).arg(sdk).stdin(Stdio::null()).output() {
        Ok(out) => out,
        Err(e) => return skip(format!("{python} does not start ({e})")),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.code() == Some(MISSING) {
        return skip(format!("the package does not import: {}", stdout.trim()));
    }
    assert!(out.status.success(), "drive.py {sdk} failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
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
