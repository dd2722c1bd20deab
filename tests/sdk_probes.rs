//! The real SDKs as the reference: small servers of a2a-sdk 1.3.0 and of the mcp package
//! (1.30.0) run on 127.0.0.1 (tests/sdk_probes/*.py), are asked the calls faultline models, and
//! every answer is compared with what faultline's protocol model (`world::task::TaskProtocol`,
//! a pure function) says for the same call and state. Any difference fails.
//!
//! Where python3 or the packages are missing, each test says so loudly and passes, unless
//! FAULTLINE_REQUIRE_SDK_PROBES is set (.ci/run sets it once it has installed them):
//! `pip install a2a-sdk==1.3.0 mcp==1.30.0`.

use faultline::world::task::{
    CancelAnswer, CancelBehaviour, CancelHandling, IgnoredCancelAnswer, RepeatedMessage, TaskCall, TaskProtocol,
    TaskState, WorkOnCancel,
};
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PROBES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sdk_probes");
/// A probe's own requests are bounded (20 s each, a few seconds of work); past this it hangs.
const PROBE_LIMIT: Duration = Duration::from_secs(180);
/// A probe's exit status when its package does not import.
const MISSING: i32 = 3;

/// Runs `script` with `args` and reads the JSON it prints; None (after saying so loudly, and
/// failing when the probes are required) when python3 or the package is missing.
fn probe(script: &str, args: &[&str], packages: &str) -> Option<Value> {
    let required = std::env::var_os("FAULTLINE_REQUIRE_SDK_PROBES").is_some();
    let skip = |why: String| {
        assert!(!required, "FAULTLINE_REQUIRE_SDK_PROBES is set, but {script} cannot run: {why}");
        // Straight to the process's stderr, which the test harness does not capture.
        let _ = writeln!(
            std::io::stderr(),
            "\n*** NOT RUN: {script} against {packages}: {why} (pip install {packages}) ***\n"
        );
        None
    };
    let path = Path::new(PROBES).join(script);
    let mut child = match Command::new("python3")
        .arg(&path)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => return skip(format!("python3 does not start ({e})")),
    };
    let start = Instant::now();
    while child.try_wait().expect("a probe's status").is_none() {
        if start.elapsed() > PROBE_LIMIT {
            child.kill().expect("a hung probe is stopped");
            panic!("{script} {args:?} ran past {PROBE_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("a probe's output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.code() == Some(MISSING) {
        return skip(format!("the package does not import: {}", stdout.trim()));
    }
    assert!(out.status.success(), "{script} {args:?} failed: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    Some(serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {stdout}")))
}

/// The SDK's answer and the model's, side by side; the test fails listing every difference.
struct Comparison {
    sdk: &'static str,
    rows: Vec<(String, Value, Value)>,
}

impl Comparison {
    fn new(sdk: &'static str) -> Comparison {
        Comparison { sdk, rows: Vec::new() }
    }

    fn check(&mut self, what: &str, sdk: &Value, model: Value) {
        self.rows.push((what.to_string(), sdk.clone(), model));
    }

    fn assert_same(self) {
        let differences: Vec<String> = self
            .rows
            .iter()
            .filter(|(_, sdk, model)| sdk != model)
            .map(|(what, sdk, model)| format!("  {what}: {} answered {sdk}, faultline's model says {model}", self.sdk))
            .collect();
        assert!(
            differences.is_empty(),
            "{} of {} answers differ:\n{}",
            differences.len(),
            self.rows.len(),
            differences.join("\n")
        );
        for (what, sdk, _) in &self.rows {
            eprintln!("{}: {what}: {sdk} (as modelled)", self.sdk);
        }
    }
}

/// The code of an error answer, or null.
fn code(answer: &Value) -> Value {
    answer["error"]["code"].clone()
}

/// What the model answers: a state's name on the wire, or an error's code.
fn answered(p: TaskProtocol, answer: CancelAnswer) -> (Value, Value) {
    match answer {
        CancelAnswer::Task(state) => (json!(p.state_name(state)), Value::Null),
        CancelAnswer::Acknowledged => (Value::Null, Value::Null),
        CancelAnswer::Error(e) => (Value::Null, json!(p.error(e).0)),
    }
}

/// The state a task is read in after the cancel: CANCELED if the cancel made it so, else as it
/// was; and whether its work goes on past the answer (the probes' agents never stop it).
fn after_cancel(p: TaskProtocol, state: TaskState, h: CancelHandling) -> (Value, Value) {
    let after = if h.canceled_now { TaskState::Canceled } else { state };
    let goes_on = match h.work {
        WorkOnCancel::Untouched | WorkOnCancel::StopAfter(_) => true,
        WorkOnCancel::Stop => false,
    };
    (json!(p.state_name(after)), json!(goes_on))
}

/// The shared part of both a2a-sdk handlers' answers.
fn a2a_common(c: &mut Comparison, v: &Value) {
    let p = TaskProtocol::A2a;
    // A send without configuration blocks until the task ends (0.5 s of work); with
    // returnImmediately it answers the task as made.
    let blocking_state = if p.create_blocks(false) { TaskState::Succeeded } else { p.created_state() };
    c.check(
        "SendMessage, no configuration: the state answered",
        &v["send_default"]["state"],
        json!(p.state_name(blocking_state)),
    );
    c.check(
        "SendMessage, no configuration: answered only after the 0.5 s of work",
        &json!(v["send_default"]["seconds"].as_f64().unwrap() >= 0.45),
        json!(p.create_blocks(false)),
    );
    let quick_state = if p.create_blocks(true) { TaskState::Succeeded } else { p.created_state() };
    c.check(
        "SendMessage, returnImmediately: the state answered",
        &v["send_return_immediately"]["state"],
        json!(p.state_name(quick_state)),
    );
    c.check("a completed task's state", &v["completed_state"], json!(p.state_name(TaskState::Succeeded)));
    c.check("GetTask of a completed task", &v["get_completed"]["state"], json!(p.state_name(TaskState::Succeeded)));
    let done = p.cancel(TaskState::Succeeded, CancelBehaviour::Honor, 0, IgnoredCancelAnswer::Canceled);
    c.check("CancelTask of a completed task", &code(&v["cancel_completed"]), answered(p, done.answer).1);
    let subscribed = match p.subscribe(TaskState::Succeeded) {
        Ok(_) => Value::Null,
        Err(e) => json!(p.error(e).0),
    };
    c.check("SubscribeToTask of a completed task", &code(&v["subscribe_completed"]), subscribed);
    for (method, call) in
        [("GetTask", TaskCall::Get), ("CancelTask", TaskCall::Cancel), ("SubscribeToTask", TaskCall::Subscribe)]
    {
        c.check(
            &format!("{method} of a task never made"),
            &code(&v[format!("{method}_unknown")]),
            json!(p.error(p.unknown_task(call)).0),
        );
    }
    let tasks = match p.default_repeated_message() {
        RepeatedMessage::SecondTask => 2,
        RepeatedMessage::Deduplicate => 1,
    };
    c.check("the same messageId sent twice: tasks made", &v["repeated_message_id"]["tasks"], json!(tasks));
}

fn a2a_cancel_ignored(c: &mut Comparison, v: &Value, ignored: IgnoredCancelAnswer) {
    let p = TaskProtocol::A2a;
    let h = p.cancel(TaskState::Running, CancelBehaviour::Ignore, 0, ignored);
    let (state, error) = answered(p, h.answer);
    let (after, goes_on) = after_cancel(p, TaskState::Running, h);
    let seen = &v["cancel_ignored"];
    c.check("CancelTask the agent ignores: the state answered", &seen["state"], state);
    c.check("CancelTask the agent ignores: the error answered", &code(seen), error);
    c.check("CancelTask the agent ignores: GetTask after it", &seen["state_after"], after);
    c.check("CancelTask the agent ignores: the work goes on", &seen["work_went_on"], goes_on);
}

#[test]
fn a2a_sdk_default_handler_answers_as_the_a2a_model_with_ignored_cancels_answered_canceled() {
    let Some(v) = probe("a2a_probe.py", &["default"], "a2a-sdk==1.3.0") else { return };
    let mut c = Comparison::new("a2a-sdk 1.3.0 DefaultRequestHandler");
    a2a_common(&mut c, &v);
    a2a_cancel_ignored(&mut c, &v, IgnoredCancelAnswer::Canceled);
    // CANCELED stays so while the work goes on, and after it ends.
    c.check(
        "the task after its ignored cancel's work ended",
        &v["cancel_ignored"]["state_after_work"],
        json!(TaskProtocol::A2a.state_name(TaskState::Canceled)),
    );
    c.assert_same();
}

#[test]
fn a2a_sdk_legacy_handler_answers_as_the_a2a_model_with_ignored_cancels_not_cancelable() {
    let Some(v) = probe("a2a_probe.py", &["legacy"], "a2a-sdk==1.3.0") else { return };
    let mut c = Comparison::new("a2a-sdk 1.3.0 LegacyRequestHandler");
    a2a_common(&mut c, &v);
    a2a_cancel_ignored(&mut c, &v, IgnoredCancelAnswer::NotCancelable);
    c.assert_same();
}

#[test]
fn mcp_1_30_tasks_answer_as_the_mcp_2025_11_25_model() {
    let Some(v) = probe("mcp_probe.py", &[], "mcp==1.30.0") else { return };
    let p = TaskProtocol::Mcp20251125;
    let mut c = Comparison::new("mcp 1.30.0");
    // A task-augmented tools/call answers at once, `working`.
    let created = if p.create_blocks(false) { TaskState::Succeeded } else { p.created_state() };
    c.check("tools/call with a task: the status answered", &v["create"]["status"], json!(p.state_name(created)));
    c.check(
        "tools/call with a task: answered at once",
        &json!(v["create"]["seconds"].as_f64().unwrap() < 0.45),
        json!(!p.create_blocks(false)),
    );
    // tasks/cancel of a working task whose work goes on (the tool never stops it).
    let h = p.cancel(TaskState::Running, CancelBehaviour::Ignore, 0, IgnoredCancelAnswer::Canceled);
    let (state, error) = answered(p, h.answer);
    let (after, goes_on) = after_cancel(p, TaskState::Running, h);
    let seen = &v["cancel_working"];
    c.check("tasks/cancel of a working task: the status answered", &seen["status"], state);
    c.check("tasks/cancel of a working task: the error answered", &code(seen), error);
    c.check("tasks/cancel of a working task: tasks/get after it", &seen["status_after"], after.clone());
    c.check("tasks/cancel of a working task: the work goes on", &seen["work_went_on"], goes_on);
    c.check("tasks/cancel of a working task: tasks/get after the work ended", &seen["status_after_work"], after);
    c.check("a completed task's status", &v["completed"]["status"], json!(p.state_name(TaskState::Succeeded)));
    let done = p.cancel(TaskState::Succeeded, CancelBehaviour::Honor, 0, IgnoredCancelAnswer::Canceled);
    c.check("tasks/cancel of a completed task", &code(&v["cancel_completed"]), answered(p, done.answer).1);
    c.check(
        "tasks/get of a task never made",
        &code(&v["get_unknown"]),
        json!(p.error(p.unknown_task(TaskCall::Get)).0),
    );
    c.check(
        "tasks/cancel of a task never made",
        &code(&v["cancel_unknown"]),
        json!(p.error(p.unknown_task(TaskCall::Cancel)).0),
    );
    // No lookup by a tag of the client's: tasks/list takes only a cursor.
    let list = if p.can_find() { json!("a filter to find a task by") } else { json!(["cursor"]) };
    c.check("tasks/list's parameters", &v["list_params"], list);
    // A task deleted after its ttl is not found.
    c.check("tasks/get within the ttl", &v["ttl_before"]["status"], json!(p.state_name(TaskState::Succeeded)));
    c.check("tasks/get after the ttl", &code(&v["ttl_after"]), json!(p.error(p.unknown_task(TaskCall::Get)).0));
    c.check(
        "tasks/cancel after the ttl",
        &code(&v["ttl_cancel_after"]),
        json!(p.error(p.unknown_task(TaskCall::Cancel)).0),
    );
    c.assert_same();
}
