//! A task that talks back: input-required answered by a scripted user (or never) and resumed,
//! push notifications with their own delivery faults, and a `down` front end's 503 with a
//! Retry-After. Each claim is shown by a scenario run whose figures would differ if it were
//! false: closed forms where the scenario has one, otherwise a figure that is zero on one side.

mod common;
use common::task_agent::scenario;
use common::{assert_in_ci, metric, model, replicate};
use faultline::metrics::MetricMap;
use faultline::metrics::stats::estimate;
use std::process::Command;

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
    assert_in_ci(
        "answered share",
        &per(&reps, "task_input_answered_total", "task_created_total"),
        1.0 - (-0.5f64).exp(),
        2,
    );
}

#[test]
fn an_mcp_client_learns_of_input_required_by_polling_and_answers_with_the_methods_of_its_revision() {
    // MCP: tools/call answers `working` at once; the first tasks/get, 2 s later
    // (pollIntervalMs), shows `input_required`; the user answers 3 s (mean, exponential) after
    // that: waiting_input lasts 2 + 3 = 5 s per task. 2025-11-25 carries the answer on
    // tasks/result, 2026-07-28 on tasks/update (inputResponses, SEP-2663), acknowledged with an
    // empty result, after which the client polls tasks/get as the 2025-11-25 client does after
    // the reply to tasks/result.
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
    assert_eq!(tree.matches("tasks/update agent").count(), 1, "the answer: {tree}");
    let (tree, json) = trace("a2a");
    assert_eq!(tree.matches("SendMessage agent").count(), 2, "the create and the follow-up message: {tree}");
    assert!(json.contains("TASK_STATE_INPUT_REQUIRED"));
}

/// A2A clients that register a webhook with their send (returned at once) and poll every 30 s
/// as a fallback; work exponential of mean 20 s; the step waits as long as it takes.
const PUSH: &str = "timeout_ms = 600000\nretry = { max_attempts = 1 }\ntask_client = { return_immediately = true, observe = \"push\", poll_interval_ms = 30000 }";

/// E[fallback polls] before the end of exponential work of mean 20 s, polled every 30 s:
/// sum over k >= 1 of P(W > 30 k) = q / (1 - q), q = e^-3/2.
fn polls_before_end() -> f64 {
    let q = (-1.5f64).exp();
    q / (1.0 - q)
}

#[test]
fn a_lost_push_notification_is_made_up_for_by_the_fallback_poll() {
    // Each update is POSTed (the work's start and its end: 2 a task); 30 % never arrive. The
    // end reaches the client by push for 0.7 of the tasks, at once; for the rest the fallback
    // poll finds it, ceil(W / 30 s) polls in all. E[gets] = 0.7 q/(1-q) + 0.3 / (1 - q).
    let reps = run(", push_lost_ratio = 0.3", 20000.0, "", PUSH);
    let q = (-1.5f64).exp();
    assert_in_ci("learned by push", &per(&reps, "task_push_learned_total", "task_created_total"), 0.7, 4);
    assert_in_ci("lost", &per(&reps, "task_push_lost_total", "task_push_sent_total"), 0.3, 4);
    assert_in_ci("gets per task", &metric(&reps, "task_polls_per_task"), 0.7 * polls_before_end() + 0.3 / (1.0 - q), 4);
    for r in &reps {
        assert_eq!(r["outcome_total.succeeded"], r["task_ended_total.succeeded"], "no end goes unlearned");
    }
    // Nothing lost: only the polls made while the work went on.
    let sure = run("", 20000.0, "", PUSH);
    assert_in_ci("gets, nothing lost", &metric(&sure, "task_polls_per_task"), polls_before_end(), 4);
    // A plain poller of the same interval learns every end by a get, none by push.
    let poller = PUSH.replace("observe = \"push\"", "observe = \"poll\"");
    for r in run(", push_lost_ratio = 0.3", 20000.0, "", &poller) {
        assert_eq!(r["task_push_sent_total"], 0.0);
        assert_eq!(r["task_push_learned_total"], 0.0);
    }
}

#[test]
fn a_delayed_push_notification_loses_to_a_poll_that_lands_in_its_delay() {
    // Delivered 5 s after the update: the fallback poll at 30 k s learns the end first when it
    // falls in (W, W + 5 s], with probability sum over k of P(30k - 5 < W <= 30k) =
    // (e^1/4 - 1) q / (1 - q).
    let reps = run(", push_delivery_time = { dist = \"constant\", value_ms = 5000 }", 20000.0, "", PUSH);
    let beaten = ((0.25f64).exp() - 1.0) * polls_before_end();
    assert_in_ci("learned by push", &per(&reps, "task_push_learned_total", "task_created_total"), 1.0 - beaten, 1);
}

#[test]
fn a_duplicated_push_notification_changes_nothing_the_client_does() {
    // A2A: "Clients SHOULD process notifications idempotently, as duplicate deliveries may
    // occur". Half the delivered notifications arrive twice, 100 ms apart (or both at once,
    // the duplicate queued after the first): every figure but the count of duplicates is what
    // it is without them, bit for bit.
    for task in [", push_delivery_time = { dist = \"constant\", value_ms = 100 }", ""] {
        let once = run(task, 20000.0, "", PUSH);
        let twice = run(&format!("{task}, push_duplicate_ratio = 0.5"), 20000.0, "", PUSH);
        for (a, b) in once.iter().zip(&twice) {
            assert_eq!(a["task_push_duplicate_total"], 0.0);
            for (name, value) in a {
                if name != "task_push_duplicate_total" {
                    assert_eq!(value.to_bits(), b[name].to_bits(), "{task} {name}: {value} against {}", b[name]);
                }
            }
        }
        let delivered = estimate(
            twice
                .iter()
                .map(|r| r["task_push_duplicate_total"] / (r["task_push_sent_total"] - r["task_push_lost_total"])),
        );
        assert_in_ci(&format!("duplicated{task}"), &delivered, 0.5, 2);
    }
}

#[test]
fn a_down_front_end_that_answers_503_with_a_retry_after_slows_the_polls_it_refuses() {
    // The agent's front end is down from 500 s to 600 s and answers every request 503 with
    // Retry-After: 10 s. About L = 2/s x 20.5 s = 41 clients poll then (Little's law: a
    // client follows its task for the work's 20 s and half a poll interval more), each
    // refused every 10 s when it honours the header (10 refusals each), every 5 s when it caps
    // it at 5 s (20), every second (its retry pause) when it does not (100); the 200 creates of
    // the outage are refused once each.
    let fault =
        "\n[[fault]]\nkind = \"down\"\ntarget = \"agent\"\nstart_s = 500\nduration_s = 100\nretry_after_ms = 10000\n";
    let refused = |client: &str| {
        let policy = format!(
            "timeout_ms = 600000\nretry = {{ max_attempts = 1 }}\ntask_client = {{ return_immediately = true{client} }}"
        );
        let reps = run("", 20000.0, fault, &policy);
        estimate(reps.iter().map(|r| r["dependency.agent.error_total.transient_transport"] - 200.0))
    };
    assert_in_ci("honoured", &refused(""), 410.0, 3);
    assert_in_ci("capped at 5 s", &refused(", retry_after_max_ms = 5000"), 820.0, 3);
    assert_in_ci("not honoured", &refused(", honor_retry_after = false"), 4100.0, 3);
}

#[test]
fn an_answer_that_fails_is_sent_again_and_only_the_one_that_arrives_resumes_the_task() {
    // scenario.md 8.17: "An answer that fails is sent again after the retry pause". The agent's
    // front end refuses half the requests at once (a `down` fault of toxicity 0.5 for the whole
    // run). A2A's blocking send returns at the interrupted state, the user answers 3 s later,
    // each refused answer is sent again 1 s later (the retry pause, no jitter): 1 refusal per
    // task on average (p / (1 - p)), so a task waits for input 3 + 1 s, plus the 5 ms mean
    // service of the answer that arrives; and each answer that arrives was sent twice on average.
    let fault = "\n[[fault]]\nkind = \"down\"\ntarget = \"agent\"\nstart_s = 0\nduration_s = 100000\ntoxicity = 0.5\n";
    let policy = format!("timeout_ms = 600000\nretry = {{ max_attempts = 1 }}\ntask_client = {{ {WAIT} }}");
    let reps = run(&asking("{ dist = \"constant\", value_ms = 3000 }", 0.0), 2000.0, fault, &policy);
    assert_in_ci("time waiting for input", &metric(&reps, "task_state_time_s.waiting_input"), 4.005, 2);
    assert_in_ci(
        "answers sent per answer that resumed",
        &per(&reps, "task_request_total.answer", "task_input_answered_total"),
        2.0,
        2,
    );
}

#[test]
fn a_push_of_a_state_the_client_already_read_from_a_reply_changes_nothing() {
    // A2A push notifications may arrive late; a client drops one no newer than what it has
    // seen. Here every notification takes 60 s, the fallback poll comes every 30 s: the first
    // get (30 s) shows the task waiting for input, the user answers 1 s later, and the reply to
    // the answer shows it working again. The notification of the wait, at 60 s, is older than
    // both replies: the client neither learns from it nor asks the user again, and every end is
    // read by a poll before its notification comes.
    let task = format!(
        "{}, push_delivery_time = {{ dist = \"constant\", value_ms = 60000 }}",
        asking("{ dist = \"constant\", value_ms = 1000 }", 0.0)
    );
    let policy = PUSH.replace("poll_interval_ms = 30000", &format!("poll_interval_ms = 30000, {WAIT}"));
    let reps = run(&task, 2000.0, "", &policy);
    for r in &reps {
        // Four notifications a task (its start, the wait, the resumption, the end), the last
        // tasks' aside.
        assert!(r["task_push_sent_total"] > 3.9 * r["task_created_total"], "{}", r["task_push_sent_total"]);
        assert_eq!(r["task_push_learned_total"], 0.0, "no notification is newer than the replies");
        // The user is asked once a task, and every answer sent resumes its task (but one still
        // out when the simulation stops).
        assert!(r["task_request_total.answer"] - r["task_input_answered_total"] <= 1.0, "{r:?}");
        // Only the tasks of the last 31 s are not answered yet (2 a second).
        assert!(r["task_input_required_total"] - r["task_input_answered_total"] < 100.0, "{r:?}");
        assert!(r["task_input_answered_total"] > 3000.0, "{}", r["task_input_answered_total"]);
    }
}

#[test]
fn a_get_still_out_when_a_push_tells_the_end_is_dropped_and_its_service_wasted() {
    // scenario.md 8.17: a notification that shows the task ended tells the step at once, "a
    // request still out is dropped". Notifications come at once; each get takes 5 s at the
    // agent (100 servers: nobody waits) and the client polls 30 s after each reply, so its
    // gets are in service over [35k - 5, 35k) s after the handle. A task whose work (exponential,
    // mean 20 s) ends inside one has that get dropped, and the get's whole 5 s is served for
    // nobody. With q = e^-35/20: gets per task e^1/4 q / (1 - q), dropped (e^1/4 - 1) q / (1 - q),
    // and the agent's service per task is the create's 20 ms plus 5 s a get.
    let text = scenario("", 20000.0, "", PUSH).replace("servers = 8\n", "servers = 100\n").replace(
        "status_lookup_time = { dist = \"exponential\", mean_ms = 5 }",
        "status_lookup_time = { dist = \"constant\", value_ms = 5000 }",
    );
    let reps = replicate(&model(&text), 0);
    let q = (-1.75f64).exp();
    let gets = 0.25f64.exp() * q / (1.0 - q);
    let dropped = (0.25f64.exp() - 1.0) * q / (1.0 - q);
    let theory = 5.0 * dropped / (0.02 + 5.0 * gets);
    assert_in_ci(
        "wasted share of the agent's service",
        &metric(&reps, "dependency.agent.wasted_service_ratio"),
        theory,
        1,
    );
}
