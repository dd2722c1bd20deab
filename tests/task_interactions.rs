//! A task that talks back: input-required answered by a scripted user (or never) and resumed,
//! push notifications with their own delivery faults, and a `down` front end's 503 with a
//! Retry-After. Each claim is shown by a scenario run whose figures would differ if it were
//! false: closed forms where the scenario has one, otherwise a figure that is zero on one side.

mod common;
use common::{assert_in_ci, metric, model, replicate};
use faultline::metrics::MetricMap;
use faultline::metrics::stats::estimate;
use std::process::Command;

/// One agent: creates at `agent` (8 servers), work at `agent_runner` (exponential work of mean
/// `work_ms`, enough workers that nobody waits), one step per run at 2 runs a second for
/// 2000 s (100 s of warm-up); `task` is the inside of the task table after the runner, `extra`
/// is appended (faults), `policy` is `[policy.p]`'s body.
fn scenario(task: &str, work_ms: f64, extra: &str, policy: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 2000
warmup_s = 100
seed = 5
replications = 8

[[dependency]]
name = "agent"
kind = "a2a_agent"
servers = 8
service_time = {{ dist = "exponential", mean_ms = 20 }}
status_lookup_time = {{ dist = "exponential", mean_ms = 5 }}
task = {{ runner = "agent_runner"{task} }}

[[dependency]]
name = "agent_runner"
servers = 2000
service_time = {{ dist = "exponential", mean_ms = {work_ms} }}

[[workflow]]
name = "research"
arrivals = {{ rate_per_s = 2 }}
deadline_ms = 3600000

  [[workflow.step]]
  id = "delegate"
  dependency = "agent"
{extra}
[policy.p]
{policy}
"#
    )
}

fn run(task: &str, work_ms: f64, extra: &str, policy: &str) -> Vec<MetricMap> {
    replicate(&model(&scenario(task, work_ms, extra, policy)), 0)
}

/// The per-replication ratio of two metrics, as an estimate over the replications.
fn per(reps: &[MetricMap], a: &str, b: &str) -> faultline::metrics::stats::Estimate {
    estimate(reps.iter().map(|r| r[a] / r[b]))
}

/// Every task asks for input before its work; the scripted user answers after `answer`.
fn asking(answer: &str, unanswered: f64) -> String {
    format!(", input_required_ratio = 1, input_answer_time = {answer}, input_unanswered_ratio = {unanswered}")
}

const WAIT: &str = "on_input_required = \"wait\"";

#[test]
fn an_a2a_task_that_asks_for_input_resumes_when_the_scripted_user_answers() {
    // A2A's blocking SendMessage returns at the interrupted state (TASK_STATE_INPUT_REQUIRED),
    // the user answers 3 s later for 3 of 4 tasks, the follow-up SendMessage on the same task
    // sends the task back to TASK_STATE_WORKING and its work (mean 2 s) starts then. The step
    // gives up at 60 s, cancelling the tasks whose user never answered. So per task the time in
    // waiting_input is 0.75 x 3 s + 0.25 x 60 s = 17.25 s (the requests' own few ms aside).
    let task = asking("{ dist = \"constant\", value_ms = 3000 }", 0.25);
    let policy = format!("timeout_ms = 60000\nretry = {{ max_attempts = 1 }}\ntask_client = {{ {WAIT} }}");
    let reps = run(&task, 2000.0, "", &policy);
    for r in &reps {
        assert_eq!(r["task_input_required_total"], r["task_created_total"], "every task asks");
        assert_eq!(r["task_request_total.answer"], r["task_input_answered_total"], "each answer sent resumes one");
        assert_eq!(r["task_ended_total.succeeded"], r["task_input_answered_total"], "and every resumed task ends");
        assert_eq!(r["task_ended_total.canceled"], r["cancel_requested_total"], "the others are cancelled at 60 s");
        assert_eq!(r["outcome_total.succeeded"], r["task_ended_total.succeeded"]);
    }
    assert_in_ci("answered share", &per(&reps, "task_input_answered_total", "task_created_total"), 0.75, 2);
    assert_in_ci("time waiting for input", &metric(&reps, "task_state_time_s.waiting_input"), 17.25, 2);
    // The default client gives up at once: the step hears INVALID_INPUT, the task is cancelled,
    // nothing is answered and the task waited only for its cancel.
    for r in run(&task, 2000.0, "", "timeout_ms = 60000\nretry = { max_attempts = 1 }") {
        assert_eq!(r["task_request_total.answer"], 0.0);
        assert_eq!(r["task_ended_total.succeeded"], 0.0);
        assert_eq!(r["task_ended_total.canceled"], r["task_created_total"]);
        assert!(r["task_state_time_s.waiting_input"] < 0.1, "{}", r["task_state_time_s.waiting_input"]);
    }
}

#[test]
fn the_steps_timeout_still_runs_while_the_user_thinks() {
    // The user answers after an exponential time U of mean 20 s, the work W is exponential of
    // mean 2 s, the step gives up at 10 s: it succeeds when U + W < 10 s, whose law is
    // 1 - (b e^-at - a e^-bt) / (b - a) with a = 1/20, b = 1/2 (per second), t = 10: 0.3268.
    let task = asking("{ dist = \"exponential\", mean_ms = 20000 }", 0.0);
    // A subscriber hears of the end at once (a poller would learn it at its next poll).
    let client = format!("task_client = {{ {WAIT}, observe = \"subscribe\" }}");
    let policy = format!("timeout_ms = 10000\nretry = {{ max_attempts = 1 }}\n{client}");
    let reps = run(&task, 2000.0, "", &policy);
    let (a, b, t) = (1.0 / 20.0, 0.5, 10.0f64);
    let theory = 1.0 - (b * (-a * t).exp() - a * (-b * t).exp()) / (b - a);
    assert_in_ci("success share", &per(&reps, "outcome_total.succeeded", "task_created_total"), theory, 2);
    // Answered in time: P(U < 10 s) = 1 - e^-1/2 of the tasks; the rest were cancelled
    // while they waited, so no answer was sent for them.
    assert_in_ci("answered share", &per(&reps, "task_input_answered_total", "task_created_total"), 1.0 - (-0.5f64).exp(), 2);
}

#[test]
fn an_mcp_client_learns_of_input_required_by_polling_and_answers_with_the_methods_of_its_revision() {
    // MCP: tools/call answers `working` at once; the first tasks/get, 2 s later
    // (pollIntervalMs), shows `input_required`; the user answers 3 s (mean, exponential) after
    // that: waiting_input lasts 2 + 3 = 5 s per task. 2025-11-25 carries the answer on
    // tasks/result, 2026-07-28 on tasks/get (inputResponses): one more get per task.
    let answer = "{ dist = \"exponential\", mean_ms = 3000 }";
    let policy = format!("timeout_ms = 600000\nretry = {{ max_attempts = 1 }}\ntask_client = {{ {WAIT} }}");
    let mut gets = Vec::new();
    for protocol in ["mcp-2025-11-25", "mcp-2026-07-28"] {
        let task = format!(", protocol = \"{protocol}\", poll_interval_ms = 2000{}", asking(answer, 0.0));
        let reps = run(&task, 2000.0, "", &policy);
        assert_in_ci(protocol, &metric(&reps, "task_state_time_s.waiting_input"), 5.0, 4);
        for r in &reps {
            assert_eq!(r["task_input_answered_total"], r["task_created_total"], "{protocol}");
            assert_eq!(r["outcome_total.succeeded"], r["task_created_total"], "{protocol}");
        }
        gets.push(reps[0]["task_request_total.get"]);
    }
    assert_eq!(gets[0], gets[1], "the same polls; only the answer's method name differs");
    let trace = |protocol: &str| {
        let dir = std::env::temp_dir().join(format!("faultline-interactions-{}-{protocol}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("s.toml");
        let task = format!(", protocol = \"{protocol}\", poll_interval_ms = 2000{}", asking(answer, 0.0));
        std::fs::write(&file, scenario(&task, 2000.0, "", &policy)).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_faultline"))
            .args(["replay", file.to_str().unwrap(), "-p", "p", "--run", "300", "-o"])
            .arg(dir.join("t.json"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let json = std::fs::read_to_string(dir.join("t.json")).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        (String::from_utf8(out.stdout).unwrap(), json)
    };
    let (tree, json) = trace("mcp-2025-11-25");
    assert!(tree.contains("tasks/result agent"), "{tree}");
    assert!(json.contains("\"input_required\""), "the state under MCP's name");
    let (tree, _) = trace("mcp-2026-07-28");
    assert!(!tree.contains("tasks/result"), "{tree}");
    let (tree, json) = trace("a2a");
    assert_eq!(tree.matches("SendMessage agent").count(), 2, "the create and the follow-up message: {tree}");
    assert!(json.contains("TASK_STATE_INPUT_REQUIRED"));
}
