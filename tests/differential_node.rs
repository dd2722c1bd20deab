//! The real npm circuit breakers as the reference for the `opossum` and `cockatiel` breaker kinds
//! (docs/scenario.md 8.7): tests/differential/node/drive.mjs runs opossum 10.0.0 and cockatiel
//! 4.0.0 on each schedule of `cases.json` under Node's mock clock (node:test MockTimers, so every
//! time is an exact virtual millisecond: the slack is 0 ms), and faultline's pure machines are run
//! on the same schedule here. Every case must agree exactly on each call's admission and on every
//! state change with its time. The departures the harness found are listed in `DEPARTURES`, each
//! with the library's figures, and checked to be exactly what they say.
//!
//! cockatiel's bulkhead (`bulkhead(limit, queue)`, cases.json's `cockatiel-bulkhead` cases) runs
//! on the same schedules against faultline's bulkhead machine with `limit` permits, a waiting room
//! of `queue` and no wait limit. cockatiel's retry (`retry_cases.json`) runs one call under
//! `retry(handleWhen(..), { maxAttempts, backoff })` with Math.random replaced by the case's draws,
//! against faultline's retry decision (`decide`) given the same draws: each attempt's start, each
//! delay, the outcome.
//!
//! Order at one instant, as the driver's 1 ms ticks make it: timers (a call settling, opossum's
//! reset timer and bucket rotation, opossum's call timeout) first, then the calls made at that
//! instant, in file order.
//!
//! Where node or the packages are missing, the test says so loudly and passes, unless
//! FAULTLINE_REQUIRE_DIFFERENTIAL is set (or FAULTLINE_REQUIRE_DIFFERENTIAL_NODE, which .ci/run
//! sets to 1 after `npm ci --prefix tests/differential/node`, or to 0 when npm cannot run, so
//! that the pip packages' variable does not require this harness).
//! FAULTLINE_NODE names the interpreter (default `node`).

use faultline::runtime::backoff::{Backoff, BackoffKind, Jitter};
use faultline::runtime::decision::{
    Decision, FailedAttempt, GiveUp, OnEffectUnknown, RetryRules, decide, default_retryable,
};
use faultline::runtime::guard::bulkhead::{Acquire, Bulkhead, BulkheadConfig, DEFAULT_MAX_WAITING};
use faultline::runtime::guard::cockatiel_breaker::{BreakerKind, CockatielBreaker, CockatielOptions};
use faultline::runtime::guard::opossum_breaker::{Admission, OpossumBreaker, OpossumOptions};
use faultline::runtime::guard::{AttemptEnd, Ending};
use faultline::vocab::{BreakerState, FailureKind};
use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};

const HARNESS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/differential/node");
/// The driver's exit status when a package is missing or not the pinned version.
const MISSING: i32 = 3;
const US_PER_MS: u64 = 1_000;

/// Cases where a library and the model differ: (case, call index, what the library did with
/// that call, why). The test fails if the library stops doing exactly that.
const DEPARTURES: [(&str, usize, Fate, &str); 2] = [
    (
        "cockatiel half-open holds a second call until the trial succeeds",
        2,
        Fate::AdmittedAt(260),
        // cockatiel's executeHalfOpen awaits the half-open decision for calls beyond
        // halfOpenSampling.calls, then runs them (closed) or throws BrokenCircuitError (open);
        // the model refuses them at once (circuit_open): the pipeline has no wait at a breaker.
        "cockatiel held the call from 220 ms and ran it at 260 ms, when the trial closed the circuit; faultline refuses it at 220 ms",
    ),
    (
        "cockatiel half-open holds a second call until the trial fails",
        2,
        Fate::RefusedAt(260),
        "cockatiel held the call from 220 ms and refused it at 260 ms, when the trial reopened the circuit; faultline refuses it at 220 ms",
    ),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Let through when made.
    Admitted,
    /// Refused when made.
    Refused,
    /// Held, then let through at this ms.
    AdmittedAt(u64),
    /// Held, then refused at this ms.
    RefusedAt(u64),
}

struct Call {
    at: u64,
    duration: u64,
    ok: bool,
    /// A failure the breaker is told not to count: opossum's `errorFilter`, cockatiel's
    /// handler; faultline's `ignore` (INVALID_INPUT by default).
    filtered: bool,
}

struct Outcome {
    fates: Vec<Fate>,
    transitions: Vec<(u64, &'static str)>,
}

fn drive() -> Option<Value> {
    let required = match std::env::var("FAULTLINE_REQUIRE_DIFFERENTIAL_NODE").as_deref() {
        Ok("0") => false,
        Ok(_) => true,
        Err(_) => std::env::var_os("FAULTLINE_REQUIRE_DIFFERENTIAL").is_some(),
    };
    let skip = |why: String| {
        assert!(!required, "FAULTLINE_REQUIRE_DIFFERENTIAL is set, but the Node driver cannot run: {why}");
        let _ = writeln!(
            std::io::stderr(),
            "\n*** NOT RUN: differential harness against opossum and cockatiel: {why} \
             (npm ci --prefix tests/differential/node) ***\n"
        );
        None
    };
    let node = std::env::var("FAULTLINE_NODE").unwrap_or_else(|_| "node".to_string());
    let out = match Command::new(&node)
        .arg("--no-warnings")
        .arg(format!("{HARNESS}/drive.mjs"))
        .stdin(Stdio::null())
        .output()
    {
        Ok(out) => out,
        Err(e) => return skip(format!("{node} does not start ({e})")),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.code() == Some(MISSING) {
        return skip(format!("a package does not load: {}", stdout.trim()));
    }
    assert!(out.status.success(), "drive.mjs failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    Some(serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {stdout}")))
}

fn calls(case: &Value) -> Vec<Call> {
    case["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| Call {
            at: c["at"].as_u64().unwrap(),
            duration: c["duration"].as_u64().unwrap(),
            ok: c["ok"].as_bool().unwrap(),
            filtered: c.get("filtered").and_then(Value::as_bool).unwrap_or(false),
        })
        .collect()
}

/// The last instant the driver ticks to.
fn last_ms(case: &Value, calls: &[Call]) -> u64 {
    calls.iter().map(|c| c.at + c.duration).max().unwrap_or(0) + case["tail"].as_u64().unwrap_or(500)
}

fn name(state: BreakerState) -> &'static str {
    match state {
        BreakerState::Closed => "closed",
        BreakerState::Open => "open",
        BreakerState::HalfOpen => "half_open",
    }
}

fn ending(call: &Call) -> Ending {
    let d = call.duration * US_PER_MS;
    Ending::Outcome(match (call.ok, call.filtered) {
        (true, _) => AttemptEnd::success(d),
        (false, false) => AttemptEnd::failed(FailureKind::TransientTransport, d),
        (false, true) => AttemptEnd::failed(FailureKind::InvalidInput, d),
    })
}

/// Events of a schedule in the driver's order: at each ms, ends (by call) before arrivals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    End(u64, usize),
    Arrive(u64, usize),
}

impl Event {
    fn key(self) -> (u64, u8, usize) {
        match self {
            Event::End(t, i) => (t, 0, i),
            Event::Arrive(t, i) => (t, 1, i),
        }
    }
}

fn opossum_options(o: &Value) -> OpossumOptions {
    let d = OpossumOptions::default();
    let ms = |k: &str, default: u64| o.get(k).and_then(Value::as_u64).map_or(default, |v| v * US_PER_MS);
    OpossumOptions {
        error_threshold_percentage: o.get("errorThresholdPercentage").and_then(Value::as_f64).unwrap_or(50.0),
        reset_timeout_us: ms("resetTimeout", d.reset_timeout_us),
        // `timeout: false` turns it off.
        timeout_us: match o.get("timeout") {
            Some(Value::Bool(false)) => 0,
            _ => ms("timeout", d.timeout_us),
        },
        rolling_count_timeout_us: ms("rollingCountTimeout", d.rolling_count_timeout_us),
        rolling_count_buckets: o.get("rollingCountBuckets").and_then(Value::as_u64).map_or(10, |v| v as u32),
        volume_threshold: o.get("volumeThreshold").and_then(Value::as_u64).map_or(0, |v| v as u32),
        allow_warm_up: o.get("allowWarmUp").and_then(Value::as_bool).unwrap_or(false),
        capacity: o.get("capacity").and_then(Value::as_u64).map_or(u32::MAX, |v| v as u32),
        ..d
    }
}

/// A schedule's events in order; ends are added as calls are admitted.
struct Schedule {
    events: std::collections::BTreeSet<(u64, u8, usize)>,
}

impl Schedule {
    fn new(calls: &[Call]) -> Self {
        Schedule { events: calls.iter().enumerate().map(|(i, c)| Event::Arrive(c.at, i).key()).collect() }
    }

    fn next(&mut self) -> Option<Event> {
        self.events.pop_first().map(|(t, kind, i)| if kind == 0 { Event::End(t, i) } else { Event::Arrive(t, i) })
    }
}

fn run_opossum(case: &Value) -> Outcome {
    let calls = calls(case);
    let mut b = OpossumBreaker::new(opossum_options(&case["options"]));
    assert_eq!(b.options().check(), Ok(()));
    let mut fates = vec![Fate::Refused; calls.len()];
    let mut transitions = Vec::new();
    let mut schedule = Schedule::new(&calls);
    let record = |b: &OpossumBreaker, before: BreakerState, at: u64, transitions: &mut Vec<(u64, &'static str)>| {
        if b.state() != before {
            transitions.push((at / US_PER_MS, name(b.state())));
        }
    };
    // Timers due by `until` fire first, each at its own time.
    let timers = |b: &mut OpossumBreaker, until: u64, transitions: &mut Vec<(u64, &'static str)>| {
        while let Some(due) = b.wake_at().filter(|&t| t <= until) {
            let before = b.state();
            b.on_wake(due);
            if b.state() != before {
                transitions.push((due / US_PER_MS, name(b.state())));
            }
        }
    };
    while let Some(event) = schedule.next() {
        let (t, _, i) = event.key();
        let now = t * US_PER_MS;
        timers(&mut b, now, &mut transitions);
        let before = b.state();
        match event {
            Event::Arrive(..) => {
                if b.try_acquire(now, i as u64) == Admission::Admitted {
                    fates[i] = Fate::Admitted;
                    schedule.events.insert(Event::End(t + calls[i].duration, i).key());
                }
            }
            Event::End(..) => b.on_end(now, i as u64, ending(&calls[i])),
        }
        record(&b, before, now, &mut transitions);
    }
    timers(&mut b, last_ms(case, &calls) * US_PER_MS, &mut transitions);
    Outcome { fates, transitions }
}

fn run_cockatiel(case: &Value) -> Outcome {
    let calls = calls(case);
    let o = &case["options"];
    let threshold = o["threshold"].as_f64().unwrap();
    let kind = match o["breaker"].as_str().unwrap() {
        "consecutive" => BreakerKind::Consecutive { threshold: threshold as u32 },
        "sampling" => BreakerKind::Sampling {
            threshold,
            duration_ms: o["duration"].as_f64().unwrap(),
            minimum_rps: o.get("minimumRps").and_then(Value::as_f64),
        },
        other => panic!("breaker {other}"),
    };
    let mut options = CockatielOptions::new(kind, o["halfOpenAfter"].as_u64().unwrap() * US_PER_MS);
    if let Some(sampling) = o.get("halfOpenSampling") {
        options.half_open_calls = sampling["calls"].as_u64().unwrap() as u32;
        options.half_open_threshold = sampling["threshold"].as_f64().unwrap();
    }
    assert_eq!(options.check(), Ok(()));
    let mut b = CockatielBreaker::new(options);
    let mut fates = vec![Fate::Refused; calls.len()];
    let mut tickets = vec![None; calls.len()];
    let mut transitions = Vec::new();
    let mut schedule = Schedule::new(&calls);
    while let Some(event) = schedule.next() {
        let (t, _, i) = event.key();
        let now = t * US_PER_MS;
        let before = b.state();
        match event {
            Event::Arrive(..) => {
                if let Some(ticket) = b.try_acquire(now) {
                    fates[i] = Fate::Admitted;
                    tickets[i] = Some(ticket);
                    schedule.events.insert(Event::End(t + calls[i].duration, i).key());
                }
            }
            Event::End(..) => {
                let verdict = b.verdict(ending(&calls[i]));
                b.on_end(now, tickets[i].unwrap(), verdict);
            }
        }
        if b.state() != before {
            transitions.push((t, name(b.state())));
        }
    }
    Outcome { fates, transitions }
}

/// cockatiel's `bulkhead(limit, queue)` as faultline's bulkhead machine: `limit` permits, a FIFO
/// waiting room of `queue` (refused at once when 0), and no wait limit (cockatiel's queued call
/// waits until a slot frees).
fn run_bulkhead(case: &Value) -> Outcome {
    let queue = case["options"]["queue"].as_u64().unwrap() as usize;
    run_bulkhead_with(case, queue)
}

/// The bulkhead machine with a waiting room of `max_waiting`.
fn run_bulkhead_with(case: &Value, max_waiting: usize) -> Outcome {
    let calls = calls(case);
    let o = &case["options"];
    let queue = o["queue"].as_u64().unwrap() as usize;
    let config = BulkheadConfig {
        max_concurrent_calls: o["limit"].as_u64().unwrap() as u32,
        max_wait_us: if queue == 0 { 0 } else { u64::MAX },
        reserved_for_control: 0,
        max_waiting,
    };
    assert_eq!(config.check(), Ok(()));
    let mut b = Bulkhead::new(config);
    let mut fates = vec![Fate::Refused; calls.len()];
    let mut schedule = Schedule::new(&calls);
    while let Some(event) = schedule.next() {
        let (t, _, i) = event.key();
        let now = t * US_PER_MS;
        match event {
            Event::Arrive(..) => match b.try_acquire(now, false) {
                Acquire::Granted => {
                    fates[i] = Fate::Admitted;
                    schedule.events.insert(Event::End(t + calls[i].duration, i).key());
                }
                Acquire::Wait { .. } => assert!(b.wait(i as u64, now, false), "call {i} waits"),
                Acquire::Refused => fates[i] = Fate::Refused,
            },
            Event::End(..) => {
                if let Some(next) = b.release(now) {
                    b.claim(next);
                    let next = next as usize;
                    fates[next] = Fate::AdmittedAt(t);
                    schedule.events.insert(Event::End(t + calls[next].duration, next).key());
                }
            }
        }
    }
    assert_eq!(b.waiting(), 0, "every queued call ran");
    Outcome { fates, transitions: Vec::new() }
}

fn library_outcome(result: &Value) -> Outcome {
    let fates = result["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let at = c["at"].as_u64().unwrap();
            match (c["admitted"].as_bool().unwrap(), c["admitted_at"].as_u64(), c["refused_at"].as_u64()) {
                (true, Some(t), _) if t == at => Fate::Admitted,
                (true, Some(t), _) => Fate::AdmittedAt(t),
                (false, _, Some(t)) if t == at => Fate::Refused,
                (false, _, Some(t)) => Fate::RefusedAt(t),
                other => panic!("call at {at}: {other:?}"),
            }
        })
        .collect();
    let transitions = result["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let state = match t[1].as_str().unwrap() {
                "closed" => "closed",
                "open" => "open",
                "half_open" => "half_open",
                other => panic!("state {other}"),
            };
            (t[0].as_u64().unwrap(), state)
        })
        .collect();
    Outcome { fates, transitions }
}

#[test]
fn opossum_and_cockatiel_agree_with_the_model() {
    let Some(driven) = drive() else { return };
    let cases: Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{HARNESS}/cases.json")).unwrap()).unwrap();
    let cases = cases.as_array().unwrap();
    let results = driven["cases"].as_array().unwrap();
    assert_eq!(cases.len(), results.len());
    let mut tally: std::collections::BTreeMap<&str, (usize, usize)> = Default::default();
    let mut departures_seen = 0;
    // Every disagreement, reported together.
    let mut wrong: Vec<String> = Vec::new();
    for (case, result) in cases.iter().zip(results) {
        let case_name = case["name"].as_str().unwrap();
        assert_eq!(result["name"].as_str(), Some(case_name));
        let library = case["library"].as_str().unwrap();
        let model = match library {
            "opossum" => run_opossum(case),
            "cockatiel" => run_cockatiel(case),
            "cockatiel-bulkhead" => run_bulkhead(case),
            other => panic!("library {other}"),
        };
        let real = library_outcome(result);
        let row = tally.entry(library).or_default();
        row.0 += 1;
        if model.transitions != real.transitions {
            wrong.push(format!(
                "{case_name}: state changes: model {:?}, library {:?}",
                model.transitions, real.transitions
            ));
            continue;
        }
        let departure = DEPARTURES.iter().find(|d| d.0 == case_name);
        match departure {
            None if model.fates != real.fates => {
                wrong.push(format!("{case_name}: admissions: model {:?}, library {:?}", model.fates, real.fates));
            }
            None => row.1 += 1,
            Some(&(_, call, library_fate, why)) => {
                departures_seen += 1;
                assert_eq!(real.fates[call], library_fate, "{case_name}: the library no longer does this: {why}");
                assert_eq!(model.fates[call], Fate::Refused, "{case_name}: the model: {why}");
                let mut others = real.fates.clone();
                others[call] = Fate::Refused;
                assert_eq!(model.fates, others, "{case_name}: every other call agrees");
            }
        }
    }
    assert!(wrong.is_empty(), "{} disagreements:\n{}", wrong.len(), wrong.join("\n"));
    assert_eq!(departures_seen, DEPARTURES.len(), "every departure is a case");
    println!("node {}", driven["node"].as_str().unwrap_or("?"));
    for (library, (run, agree)) in &tally {
        println!("{library}: {run} cases run, {agree} agree");
    }
    // The figures README's agreement table quotes.
    assert_eq!(tally.get("opossum"), Some(&(11, 11)));
    assert_eq!(tally.get("cockatiel"), Some(&(12, 10)));
    assert_eq!(tally.get("cockatiel-bulkhead"), Some(&(5, 5)));
    // A scenario's `[[policy.X.bulkhead]]` has no field for the queue's bound: its waiting room
    // holds DEFAULT_MAX_WAITING (10 000). Written as max_concurrent_calls = limit and a
    // max_wait_ms past the run, it queues the calls cockatiel refuses for a full queue.
    // (cases with a queue, calls cockatiel refused that the scenario queues and runs, calls run
    // later than cockatiel runs them, because those run first)
    let mut room = (0, 0, 0);
    for (case, result) in cases.iter().zip(results) {
        if case["library"].as_str() != Some("cockatiel-bulkhead") || case["options"]["queue"].as_u64() == Some(0) {
            continue;
        }
        room.0 += 1;
        let (scenario, real) = (run_bulkhead_with(case, DEFAULT_MAX_WAITING).fates, library_outcome(result).fates);
        for (s, r) in scenario.iter().zip(&real) {
            match (r, s) {
                (Fate::Refused, Fate::AdmittedAt(_)) => room.1 += 1,
                (Fate::AdmittedAt(a), Fate::AdmittedAt(b)) if b > a => room.2 += 1,
                (r, s) => assert_eq!(r, s, "{}: the scenario's room changes nothing else", case["name"]),
            }
        }
    }
    assert_eq!(room, (4, 6, 2), "the scenario's waiting room of {DEFAULT_MAX_WAITING}");
}

/// Retry cases where cockatiel and the model differ: (case, cockatiel's delays, the model's
/// delays, both in µs, why). The test fails if the library stops doing exactly that.
const RETRY_DEPARTURES: [(&str, [u64; 3], [u64; 3], &str); 3] = [
    (
        "retry ExponentialBackoff fullJitterGenerator floors to whole ms",
        [12_000, 91_000, 399_000],
        [12_300, 91_340, 399_600],
        // fullJitterGenerator: Math.floor(Math.random() * delay); faultline's full jitter keeps
        // the microseconds of u x cap.
        "cockatiel floors u x cap to whole ms (12, 91, 399 ms for u = 0.123, 0.4567, 0.999 on caps 100, 200, 400 ms); faultline sleeps 12.3, 91.34, 399.6 ms",
    ),
    (
        "retry ExponentialBackoff halfJitterGenerator floors to whole ms",
        [56_000, 145_000, 399_000],
        [56_150, 145_670, 399_800],
        "cockatiel floors (cap + u x cap) / 2 to whole ms (56, 145, 399 ms); faultline's equal jitter sleeps 56.15, 145.67, 399.8 ms",
    ),
    (
        "retry ExponentialBackoff defaults: decorrelated jitter from 128 ms",
        [114_868, 139_904, 260_576],
        [64_000, 128_000, 256_000],
        // decorrelatedJitterGenerator (ExponentialBackoffGenerators.js): t = attempt + u,
        // next = exponent^t x tanh(sqrt(4 t)), sleep = min(maxDelay, (next - previous next) / 1.4
        // x initialDelay): Polly's DecorrelatedJitterBackoffV2, which faultline does not have;
        // its nearest, full jitter (as `import dotnet-resilience` writes Polly's), is the model.
        "cockatiel's default generator is Polly's DecorrelatedJitterBackoffV2 (114.87, 139.90, 260.58 ms for u = 0.5 from initialDelay 128 ms); faultline has no such jitter and its nearest, full jitter from 128 ms, sleeps 64, 128, 256 ms",
    ),
];

/// What one logical call did under a retry policy: when each attempt started, the delay before
/// each retry (µs), and whether the call succeeded.
#[derive(Debug, PartialEq)]
struct RetryRun {
    starts_us: Vec<u64>,
    delays_us: Vec<u64>,
    ok: bool,
    settled_us: u64,
}

fn ms_to_us(v: &Value) -> u64 {
    (v.as_f64().unwrap() * US_PER_MS as f64).round() as u64
}

/// cockatiel's backoff as faultline's: ConstantBackoff(d) is constant d; no backoff is
/// ConstantBackoff(0), none; ExponentialBackoff (defaults initialDelay 128, maxDelay 30000,
/// ExponentialBackoff.js) is exponential doubling from initialDelay to maxDelay whatever its
/// `exponent` (noJitterGenerator computes initialDelay x 2^attempt), with jitter none (noJitter),
/// full (fullJitter), equal (halfJitter), or, for the default decorrelated generator, full.
fn cockatiel_backoff(b: Option<&Value>) -> (Backoff, bool) {
    let Some(b) = b else { return (Backoff::NONE, false) };
    let ms = |k: &str, default: u64| b.get(k).and_then(Value::as_u64).unwrap_or(default) * US_PER_MS;
    match b["kind"].as_str().unwrap() {
        "constant" => (Backoff::doubling(BackoffKind::Constant, ms("delay", 0), 0, Jitter::None), false),
        "exponential" => {
            let jitter = match b.get("generator").and_then(Value::as_str) {
                Some("none") => Jitter::None,
                Some("full") | None => Jitter::Full,
                Some("half") => Jitter::Equal,
                Some(other) => panic!("generator {other}"),
            };
            let backoff =
                Backoff::doubling(BackoffKind::Exponential, ms("initialDelay", 128), ms("maxDelay", 30_000), jitter);
            (backoff, jitter != Jitter::None)
        }
        other => panic!("backoff {other}"),
    }
}

/// faultline's retry decision (`decide`) on the case's attempts: `maxAttempts` retries are
/// max_attempts = maxAttempts + 1; a handled error is a retryable TRANSIENT_TRANSPORT on a read,
/// an unhandled one INVALID_INPUT, which is never retried (cockatiel throws it past the retry).
fn run_retry_model(case: &Value) -> RetryRun {
    let (backoff, _) = cockatiel_backoff(case.get("backoff"));
    let max_attempts = case["maxAttempts"].as_u64().unwrap() as u32 + 1;
    let rules = RetryRules {
        max_attempts,
        backoff,
        honor_retry_after: false,
        retryable: default_retryable(),
        on_effect_unknown: OnEffectUnknown::Retry,
        deadline_propagation: false,
    };
    let attempts = case["attempts"].as_array().unwrap();
    let draws: Vec<f64> = case["draws"].as_array().unwrap().iter().map(|d| d.as_f64().unwrap()).collect();
    let mut run = RetryRun { starts_us: Vec::new(), delays_us: Vec::new(), ok: false, settled_us: 0 };
    let mut now = 0;
    loop {
        let made = run.starts_us.len();
        let a = &attempts[made.min(attempts.len() - 1)];
        run.starts_us.push(now);
        now += a["duration"].as_u64().unwrap() * US_PER_MS;
        let kind = match a["outcome"].as_str().unwrap() {
            "ok" => {
                run.ok = true;
                break;
            }
            "handled" => FailureKind::TransientTransport,
            "unhandled" => FailureKind::InvalidInput,
            other => panic!("outcome {other}"),
        };
        let failed = FailedAttempt {
            kind,
            is_write: false,
            deduplicated: false,
            status_lookup: false,
            attempts_made: made as u32 + 1,
            max_attempts,
            has_retry_token: true,
            retry_after_us: None,
            remaining_us: u64::MAX,
            reserve_us: 0,
            predicted_attempt_us: 0,
            previous_sleep_us: run.delays_us.last().copied().unwrap_or(0),
            jitter: draws.get(made).copied().unwrap_or(0.5),
        };
        match decide(&rules, &failed) {
            Decision::Retry { sleep_us } => {
                run.delays_us.push(sleep_us);
                now += sleep_us;
            }
            Decision::GiveUp(GiveUp::AttemptsExhausted | GiveUp::NotRetryable) => break,
            other => panic!("{other:?}"),
        }
    }
    run.settled_us = now;
    run
}

fn library_retry(result: &Value) -> RetryRun {
    let us = |k: &str| result[k].as_array().unwrap().iter().map(ms_to_us).collect::<Vec<_>>();
    RetryRun {
        starts_us: us("starts"),
        delays_us: us("delays"),
        ok: result["settled"]["ok"].as_bool().unwrap(),
        settled_us: ms_to_us(&result["settled"]["at"]),
    }
}

#[test]
fn cockatiel_retry_agrees_with_the_model() {
    let Some(driven) = drive() else { return };
    let cases: Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{HARNESS}/retry_cases.json")).unwrap()).unwrap();
    let cases = cases.as_array().unwrap();
    let results = driven["retries"].as_array().unwrap();
    assert_eq!(cases.len(), results.len());
    let (mut agree, mut departures_seen) = (0, 0);
    let mut wrong: Vec<String> = Vec::new();
    for (case, result) in cases.iter().zip(results) {
        let case_name = case["name"].as_str().unwrap();
        assert_eq!(result["name"].as_str(), Some(case_name));
        let model = run_retry_model(case);
        let real = library_retry(result);
        // One draw per retry, and only for a jittered backoff: the model's `u` per retry.
        let jittered = cockatiel_backoff(case.get("backoff")).1;
        let draws = if jittered { real.delays_us.len() } else { 0 };
        assert_eq!(result["draws"].as_u64(), Some(draws as u64), "{case_name}: draws");
        match RETRY_DEPARTURES.iter().find(|d| d.0 == case_name) {
            None if model != real => wrong.push(format!("{case_name}: model {model:?}, library {real:?}")),
            None => agree += 1,
            Some(&(_, library_delays, model_delays, why)) => {
                departures_seen += 1;
                assert_eq!(real.delays_us, library_delays, "{case_name}: the library no longer does this: {why}");
                assert_eq!(model.delays_us, model_delays, "{case_name}: the model: {why}");
                assert_eq!(model.starts_us.len(), real.starts_us.len(), "{case_name}: attempts agree");
                assert_eq!(model.ok, real.ok, "{case_name}: the outcome agrees");
            }
        }
    }
    assert!(wrong.is_empty(), "{} disagreements:\n{}", wrong.len(), wrong.join("\n"));
    assert_eq!(departures_seen, RETRY_DEPARTURES.len(), "every departure is a case");
    println!("cockatiel retry: {} cases run, {agree} agree", cases.len());
    // The figures README's agreement table quotes.
    assert_eq!((cases.len(), agree), (11, 8));
}
