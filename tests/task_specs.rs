//! The task lifecycles against the letter of their specifications (A2A 1.0, MCP 2025-11-25 and
//! the 2026-07-28 tasks extension) and against what docs/scenario.md 4.5 and 8.17 say, each
//! claim shown by a scenario run whose figures would differ if the claim were false: closed
//! forms where the scenario has one, otherwise a figure that is zero on one side of the claim.

mod common;
use common::task_agent::scenario;
use common::{assert_in_ci, metric, model, replicate};
use faultline::metrics::MetricMap;
use faultline::metrics::stats::estimate;

fn run(task: &str, work_ms: f64, extra: &str, policy: &str) -> Vec<MetricMap> {
    replicate(&model(&scenario(task, work_ms, extra, &at_once(policy))), 0)
}

/// `policy` with a client whose sends return at once (A2A `returnImmediately`): the clients
/// these tests follow poll or subscribe, as before sends blocked by default.
fn at_once(policy: &str) -> String {
    if policy.contains("task_client = {") {
        policy.replacen("task_client = {", "task_client = { return_immediately = true,", 1)
    } else {
        format!("{policy}\ntask_client = {{ return_immediately = true }}")
    }
}

/// The per-replication ratio of two metrics, as an estimate over the replications.
fn per(reps: &[MetricMap], a: &str, b: &str) -> faultline::metrics::stats::Estimate {
    estimate(reps.iter().map(|r| r[a] / r[b]))
}

const ABANDON_AT_10_S: &str = "timeout_ms = 10000\nretry = { max_attempts = 1 }";

/// A fault in force for the whole run at the agent, the drain after it included.
fn fault_all_run(kind: &str, fields: &str) -> String {
    format!("\n[[fault]]\nkind = \"{kind}\"\ntarget = \"agent\"\nstart_s = 0\nduration_s = 100000\n{fields}\n")
}

#[test]
fn a_late_cancel_fault_overrides_a_dependency_that_ignores_cancels() {
    // scenario.md 4.5: "A cancel fault in force overrides it". The dependency ignores every
    // cancel; a late_cancel fault in force for the whole run makes every cancel late instead,
    // so a task works on after its cancel for E[min(W, 5 s)] = 20 (1 - e^-1/4) at 1 unit/s.
    let task = ", poll_interval_ms = 2000, cost_per_s = 1, cancel = \"ignore\"";
    let reps = run(task, 20000.0, &fault_all_run("late_cancel", "latency_ms = 5000"), ABANDON_AT_10_S);
    for r in &reps {
        assert_eq!(r["cancel_ignored_total"], 0.0, "the fault overrides the dependency's ignore");
        assert!(r["cancel_late_total"] > 100.0, "{}", r["cancel_late_total"]);
        assert_eq!(r["orphan_escalated_total"], 0.0);
    }
    let e = per(&reps, "cost_after_cancel_units_total", "cancel_late_total");
    assert_in_ci("cost after a late cancel", &e, 20.0 * (1.0 - (-0.25f64).exp()), 1);
    // The same fault with an ignored_cancel fault in force too: ignoring wins among faults.
    let both = fault_all_run("late_cancel", "latency_ms = 5000") + &fault_all_run("ignored_cancel", "");
    for r in run(task.replace("\"ignore\"", "\"honor\"").as_str(), 20000.0, &both, ABANDON_AT_10_S) {
        assert_eq!(r["cancel_late_total"], 0.0);
        assert!(r["cancel_ignored_total"] > 100.0);
    }
}

/// E[polls] for exponential work of mean `mu` polled after iid waits T: the work outlives k
/// waits with probability phi^k, phi = E[exp(-T / mu)], so E[polls] = 1 / (1 - phi).
fn polls_closed_form(phi: f64) -> f64 {
    1.0 / (1.0 - phi)
}

#[test]
fn a_jittered_poll_never_comes_sooner_than_the_servers_interval() {
    // scenario.md 8.17: a client that honours the advertised interval polls no faster. The
    // server advertises 2 s; jitter spreads the wait above it: uniform on [2, 4) s (full) or
    // [2, 3) s (equal), so phi = mu / (b - a) (exp(-a / mu) - exp(-b / mu)) with mu = 20 s.
    let task = ", poll_interval_ms = 2000";
    let forever = "timeout_ms = 3000000";
    let uniform = |a: f64, b: f64| 20.0 / (b - a) * ((-a / 20.0f64).exp() - (-b / 20.0f64).exp());
    let none = run(task, 20000.0, "", forever);
    assert_in_ci("polls, no jitter", &metric(&none, "task_polls_per_task"), polls_closed_form((-0.1f64).exp()), 3);
    let full = run(task, 20000.0, "", &format!("{forever}\ntask_client = {{ jitter = \"full\" }}"));
    assert_in_ci("polls, full jitter", &metric(&full, "task_polls_per_task"), polls_closed_form(uniform(2.0, 4.0)), 3);
    let equal = run(task, 20000.0, "", &format!("{forever}\ntask_client = {{ jitter = \"equal\" }}"));
    assert_in_ci(
        "polls, equal jitter",
        &metric(&equal, "task_polls_per_task"),
        polls_closed_form(uniform(2.0, 3.0)),
        3,
    );
    // Not honouring the interval, full jitter polls below the client's own 1 s: uniform on [0, 1).
    let eager = run(
        task,
        20000.0,
        "",
        &format!("{forever}\ntask_client = {{ jitter = \"full\", honor_poll_interval = false }}"),
    );
    assert_in_ci(
        "polls, eager full jitter",
        &metric(&eager, "task_polls_per_task"),
        polls_closed_form(uniform(0.0, 1.0)),
        1,
    );
}

#[test]
fn cost_after_cancel_counts_only_after_a_cancel_and_cost_after_the_caller_left_counts_all() {
    // A client that walks away sends no cancel: nothing is spent after a cancel, while each
    // orphan works on for the remaining work, E[W - 10 | W > 10] = 20 s at 1 unit a second.
    let task = ", poll_interval_ms = 2000, cost_per_s = 1";
    let walk_away =
        run(task, 20000.0, "", &format!("{ABANDON_AT_10_S}\ntask_client = {{ cancel_on_abandon = false }}"));
    for r in &walk_away {
        assert_eq!(r["cancel_requested_total"], 0.0);
        assert_eq!(r["cost_after_cancel_units_total"], 0.0, "no cancel was sent");
        assert!(r["orphan_task_total"] > 100.0);
    }
    let e = per(&walk_away, "cost_after_caller_left_units_total", "orphan_task_total");
    assert_in_ci("running cost after the caller left, per orphan", &e, 20.0, 2);
    // The same tasks with a cancel the agent ignores: the same spending, now after a cancel.
    let ignored = run(&format!("{task}, cancel = \"ignore\""), 20000.0, "", ABANDON_AT_10_S);
    for r in &ignored {
        assert_eq!(r["cost_after_cancel_units_total"], r["cost_after_caller_left_units_total"]);
    }
    let e = per(&ignored, "cost_after_cancel_units_total", "cancel_ignored_total");
    assert_in_ci("running cost after an ignored cancel, per cancel", &e, 20.0, 2);
}

#[test]
fn a_success_the_step_never_heard_of_is_a_late_result_and_its_work_is_wasted() {
    // scenario.md 8.17: a cancel whose answer shows `completed` found a task that "had already
    // succeeded: a late result". The server asks for a poll a minute, so no step ever hears of
    // its task before its 10 s timeout; each task that succeeded by then (work exponential,
    // mean 5 s: 1 - e^-2 of them) is found completed by the cancel, the rest are cancelled.
    let task = ", poll_interval_ms = 60000";
    let reps = run(task, 5000.0, "", ABANDON_AT_10_S);
    let e = per(&reps, "late_result_total", "task_created_total");
    assert_in_ci("late results per task", &e, 1.0 - (-2.0f64).exp(), 1);
    for r in &reps {
        assert_eq!(r["outcome_total.succeeded"], 0.0, "no step hears of its task");
        assert!(r["cancel_observed_total.completed"] > 1000.0);
        // Every service at the runner was for nobody: the cancelled works' and the completed ones',
        // each counted once (a share of the service, so never above 1).
        let wasted = r["dependency.agent_runner.wasted_service_ratio"];
        assert!(wasted > 0.9999 && wasted <= 1.0 + 1e-12, "{wasted}");
    }
}

#[test]
fn a_refused_cancel_leaves_the_task_on_the_orphan_queue_whatever_its_true_state() {
    // scenario.md 8.17: a cancel request refused leaves the task's fate unknown, and the task
    // goes on the orphan queue. The agent is down from 500 s to 600 s, so every cancel of a task
    // made in the 10 s before (2 a second: 20 a replication) is refused; most of those tasks
    // (1 - e^-2) had already succeeded, which their client cannot know.
    let task = ", poll_interval_ms = 60000";
    let down = "\n[[fault]]\nkind = \"down\"\ntarget = \"agent\"\nstart_s = 500\nduration_s = 100\n";
    let reps = run(task, 5000.0, down, ABANDON_AT_10_S);
    assert_in_ci("tracked orphans", &metric(&reps, "orphan_tracked_total"), 20.0, 2);
    assert_in_ci("unknown cancels", &metric(&reps, "cancel_observed_total.unknown"), 20.0, 2);
    for r in &reps {
        assert_eq!(r["cancel_observed_total.still_running"], 0.0, "every answered cancel is honoured");
    }
}

#[test]
fn mcp_2025_11_25_cancels_at_once_and_the_task_stays_cancelled_while_its_work_goes_on() {
    // MCP 2025-11-25: the receiver moves the task to `cancelled` before it answers, and the task
    // stays `cancelled` even if execution continues. The agent ignores the cancel (its work goes
    // on): every cancel of a live task is answered `cancelled`, none `still_running`; no task
    // that was cancelled ever completes (no late result from them), while the work spends on
    // for nobody E[W - 10 | W > 10] = 20 s at 1 unit a second, untracked.
    let task = ", protocol = \"mcp-2025-11-25\", poll_interval_ms = 2000, cost_per_s = 1, cancel = \"ignore\"";
    let reps = run(task, 20000.0, "", ABANDON_AT_10_S);
    for r in &reps {
        assert_eq!(r["cancel_observed_total.still_running"], 0.0);
        assert!(r["cancel_observed_total.canceled"] > 1000.0);
        assert_eq!(r["task_ended_total.canceled"], r["cancel_observed_total.canceled"]);
        assert_eq!(r["late_result_total"], r["cancel_observed_total.completed"], "only tasks already done were late");
        assert_eq!(r["orphan_tracked_total"], 0.0, "the client believes them cancelled");
        assert_eq!(r["task_running_at_end_total"], 0.0, "a cancelled task has ended, whatever its work does");
    }
    let e = per(&reps, "cost_after_cancel_units_total", "cancel_observed_total.canceled");
    assert_in_ci("work after a cancelled MCP task", &e, 20.0, 3);
    let e = per(&reps, "orphan_task_total", "cancel_observed_total.canceled");
    assert_in_ci("orphans per cancelled task (their work goes on)", &e, 1.0, 3);
    // `mcp` is this revision.
    let alias = run(&task.replace("mcp-2025-11-25", "mcp"), 20000.0, "", ABANDON_AT_10_S);
    for (a, b) in alias.iter().zip(&reps) {
        assert_eq!(common::metric_bits(a), common::metric_bits(b));
    }
}

#[test]
fn mcp_2025_11_25_refuses_to_cancel_an_ended_task_and_the_client_reads_it_with_tasks_get() {
    // "Receivers MUST reject cancellation requests for tasks already in a terminal status with
    // -32602": the cancel changes nothing, and the client's tasks/get shows how it ended. No
    // poll comes before the 10 s timeout; 1 - e^-2 of the tasks (5 s work) have completed.
    let task = ", protocol = \"mcp-2025-11-25\", poll_interval_ms = 60000";
    let reps = run(task, 5000.0, "", ABANDON_AT_10_S);
    let e = per(&reps, "task_request_total.get", "task_created_total");
    assert_in_ci("gets after a refused cancel, per task", &e, 1.0 - (-2.0f64).exp(), 2);
    let e = per(&reps, "cancel_observed_total.completed", "task_created_total");
    assert_in_ci("cancels that found the task completed", &e, 1.0 - (-2.0f64).exp(), 2);
}

#[test]
fn mcp_2026_07_28_acknowledges_a_cancel_so_the_client_knows_nothing_and_tracks_the_task() {
    // The extension's tasks/cancel answers an empty acknowledgement; the cancel is cooperative
    // and eventually consistent. An agent that honours it still cancels the task, but no
    // client learns so: every cancel's outcome is unknown and its task goes on the orphan queue.
    let task = ", protocol = \"mcp-2026-07-28\", poll_interval_ms = 2000";
    let reps = run(task, 20000.0, "", ABANDON_AT_10_S);
    for r in &reps {
        assert!(r["cancel_requested_total"] > 1000.0);
        assert_eq!(r["cancel_observed_total.unknown"], r["cancel_requested_total"]);
        assert_eq!(r["orphan_tracked_total"], r["cancel_requested_total"]);
        assert_eq!(r["task_request_total.get"] / r["task_created_total"], r["task_polls_per_task"]);
    }
    // What the agent did is no less real: a task still working at its cancel ends cancelled,
    // e^-1/2 of them (20 s work, 10 s timeout; polls every 2 s see most of the others end).
    let e = per(&reps, "task_ended_total.canceled", "task_created_total");
    assert!((e.mean - (-0.5f64).exp()).abs() < 0.1, "{e:?}");
}

#[test]
fn a2a_refuses_to_subscribe_to_an_ended_task_and_the_client_gets_it() {
    // A2A SubscribeToTask on a task in a terminal state answers UnsupportedOperationError; the
    // client then reads it with GetTask. The work (exponential, mean 20 ms) starts as the create
    // is served, the subscription is served in an exponential 5 ms: the work ends first with
    // probability 5 / (5 + 20), and then one GetTask follows.
    let reps = run("", 20.0, "", "timeout_ms = 3000000\ntask_client = { observe = \"subscribe\" }");
    let e = per(&reps, "task_request_total.get", "task_created_total");
    assert_in_ci("gets after a refused subscription, per task", &e, 0.2, 1);
    for r in &reps {
        assert_eq!(r["task_request_total.subscribe"], r["task_created_total"]);
        assert_eq!(r["task_ended_total.succeeded"], r["task_created_total"]);
    }
}

#[test]
fn an_mcp_client_cannot_find_a_lost_task_so_the_step_s_retry_sends_it_again() {
    // MCP's tasks/list takes only a cursor (2025-11-25) and is gone in 2026-07-28: a client that
    // lost a create's reply cannot look the task up by its message id. With the default
    // `on_send_timeout = "find"`, an A2A client finds every lost task (no duplicate); an MCP
    // client reports the timeout and the step's retry makes a second task, as with `resend`.
    let fault =
        "\n[[fault]]\nkind = \"lost_handle\"\ntarget = \"agent\"\nstart_s = 500\nduration_s = 500\ntoxicity = 0.2\n";
    let policy = "timeout_ms = 3000000\nretry = { max_attempts = 3 }\ntask_client = { request_timeout_ms = 1000 }";
    let a2a = run("", 2000.0, fault, policy);
    for protocol in ["mcp-2025-11-25", "mcp-2026-07-28"] {
        let mcp = run(&format!(", protocol = \"{protocol}\""), 2000.0, fault, policy);
        let mean = |reps: &[MetricMap], name: &str| reps.iter().map(|r| r[name]).sum::<f64>() / reps.len() as f64;
        eprintln!(
            "{protocol}: {} lost handles, {} duplicates, {} finds; a2a: {} lost handles, {} duplicates, {} finds",
            mean(&mcp, "task_lost_handle_total"),
            mean(&mcp, "task_duplicate_total"),
            mean(&mcp, "task_request_total.find"),
            mean(&a2a, "task_lost_handle_total"),
            mean(&a2a, "task_duplicate_total"),
            mean(&a2a, "task_request_total.find")
        );
        for (a, m) in a2a.iter().zip(&mcp) {
            assert!(a["task_lost_handle_total"] > 50.0 && m["task_lost_handle_total"] > 50.0);
            assert_eq!(a["task_duplicate_total"], 0.0, "an A2A client finds the task it lost");
            assert!(a["task_request_total.find"] >= a["task_lost_handle_total"]);
            assert_eq!(m["task_request_total.find"], 0.0, "{protocol} has no lookup by message id");
            assert!(
                m["task_duplicate_total"] >= 0.5 * m["task_lost_handle_total"],
                "{protocol}: {} duplicates for {} lost handles",
                m["task_duplicate_total"],
                m["task_lost_handle_total"]
            );
        }
    }
}

/// The scenario as written: the client's sends block unless the policy says otherwise.
fn run_as_sent(task: &str, work_ms: f64, extra: &str, policy: &str) -> Vec<MetricMap> {
    replicate(&model(&scenario(task, work_ms, extra, policy)), 0)
}

#[test]
fn a_blocking_send_times_out_with_no_handle_when_the_work_outlasts_the_request() {
    // A2A's SendMessage blocks by default until the task ends (a2a-sdk 1.3.0 does:
    // tests/sdk_probes.rs). With exponential work of mean 20 s and the default 10 s request
    // timeout, a send times out with no handle with probability e^-1/2; `find` (the default)
    // then looks the task up and follows it, `resend` sends it again: a second task.
    let long = "timeout_ms = 3000000\nretry = { max_attempts = 3 }";
    let blocking = run_as_sent("", 20000.0, "", long);
    let e = per(&blocking, "task_send_timeout_total", "task_created_total");
    assert_in_ci("send timeouts per task, blocking", &e, (-0.5f64).exp(), 1);
    let resend = run_as_sent("", 20000.0, "", &format!("{long}\ntask_client = {{ on_send_timeout = \"resend\" }}"));
    let at_once = run("", 20000.0, "", &format!("{long}\ntask_client = {{ on_send_timeout = \"resend\" }}"));
    for ((b, r), a) in blocking.iter().zip(&resend).zip(&at_once) {
        assert_eq!(b["task_request_total.find"], b["task_send_timeout_total"], "each timed-out send is looked up");
        assert_eq!(b["task_duplicate_total"], 0.0, "and found: no second task");
        assert!(r["task_duplicate_total"] > 0.5 * r["task_send_timeout_total"], "{}", r["task_duplicate_total"]);
        assert!(r["task_send_timeout_total"] > 1000.0);
        assert_eq!(a["task_send_timeout_total"], 0.0, "a send that returns at once has its handle");
        assert_eq!(a["task_duplicate_total"], 0.0);
    }
    eprintln!(
        "a replication: blocking {} send timeouts, {} finds, {} duplicates; resend {} send timeouts, {} duplicates, {} orphans; returnImmediately {} and {}",
        metric(&blocking, "task_send_timeout_total").mean,
        metric(&blocking, "task_request_total.find").mean,
        metric(&blocking, "task_duplicate_total").mean,
        metric(&resend, "task_send_timeout_total").mean,
        metric(&resend, "task_duplicate_total").mean,
        metric(&resend, "orphan_task_total").mean,
        metric(&at_once, "task_send_timeout_total").mean,
        metric(&at_once, "task_duplicate_total").mean,
    );
}

#[test]
fn a_step_that_stops_waiting_on_a_blocking_send_has_no_handle_to_cancel() {
    // The step gives up at 10 s, the send's own timeout is 20 s: a blocking client has no task
    // handle then and walks away (no cancel), so each task whose work outlasts 10 s is an
    // orphan spending its remaining work (memoryless: 20 s at 1 unit a second) for nobody. A
    // client whose send returned at once cancels it, and the cancel is honoured.
    let abandon = "timeout_ms = 10000\nretry = { max_attempts = 1 }\ntask_client = { request_timeout_ms = 20000 }";
    let task = ", cost_per_s = 1";
    let blocking = run_as_sent(task, 20000.0, "", abandon);
    let at_once = run(task, 20000.0, "", abandon);
    for (b, a) in blocking.iter().zip(&at_once) {
        assert_eq!(b["cancel_requested_total"], 0.0, "no handle, nothing to cancel");
        assert_eq!(b["orphan_tracked_total"], 0.0, "and nothing on the orphan queue");
        assert!(a["cancel_requested_total"] > 1000.0);
        assert_eq!(a["orphan_task_total"], 0.0, "every cancel honoured");
    }
    assert_in_ci(
        "orphans per task, blocking",
        &per(&blocking, "orphan_task_total", "task_created_total"),
        (-0.5f64).exp(),
        1,
    );
    assert_in_ci(
        "cost after the caller left per orphan",
        &per(&blocking, "cost_after_caller_left_units_total", "orphan_task_total"),
        20.0,
        1,
    );
    eprintln!(
        "a replication: blocking {} orphans, {} cancels, {} units after the caller left; returnImmediately {} orphans, {} cancels, {} units",
        metric(&blocking, "orphan_task_total").mean,
        metric(&blocking, "cancel_requested_total").mean,
        metric(&blocking, "cost_after_caller_left_units_total").mean,
        metric(&at_once, "orphan_task_total").mean,
        metric(&at_once, "cancel_requested_total").mean,
        metric(&at_once, "cost_after_caller_left_units_total").mean,
    );
}

#[test]
fn a_server_that_deduplicates_by_message_id_answers_a_resend_with_the_first_task() {
    // A lost_handle fault loses a fifth of the create replies for the whole run; the client
    // sends the message again after its 1 s request timeout. a2a-sdk 1.3.0 makes a second task
    // of each resend (tests/sdk_probes.rs), as `second_task` (the default) does; a server that
    // deduplicates answers with the first task, which the new client then follows: no second
    // task, and no orphan left by the send that lost its handle (unless that task ended in the
    // 1 s, when the resend makes a new one).
    let policy = "timeout_ms = 3000000\nretry = { max_attempts = 3 }\ntask_client = { request_timeout_ms = 1000, on_send_timeout = \"resend\" }";
    let fault = fault_all_run("lost_handle", "toxicity = 0.2");
    let second = run("", 20000.0, &fault, policy);
    let dedup = run(", on_repeated_message = \"deduplicate\"", 20000.0, &fault, policy);
    for (s, d) in second.iter().zip(&dedup) {
        assert!(s["task_duplicate_total"] > 500.0, "{}", s["task_duplicate_total"]);
        assert_eq!(s["task_deduplicated_total"], 0.0);
        assert_eq!(d["task_duplicate_total"], 0.0, "no second task");
        let dups = s["task_duplicate_total"];
        assert!(s["orphan_task_total"] > 500.0);
        assert!(d["orphan_task_total"] < 0.1 * s["orphan_task_total"], "{} orphans", d["orphan_task_total"]);
        assert!(d["task_created_total"] < s["task_created_total"] - 0.8 * dups);
    }
    // Each lost handle's resend finds its first task still working unless the work (mean 20 s)
    // ended in the 1 s: e^-1/20 of them are answered with the first task.
    let e = per(&dedup, "task_deduplicated_total", "task_lost_handle_total");
    assert_in_ci("answered with the first task per lost handle", &e, (-0.05f64).exp(), 1);
    eprintln!(
        "a replication: second_task {} duplicates, {} orphans, {} tasks; deduplicate {} answered with the first task, {} duplicates, {} orphans, {} tasks",
        metric(&second, "task_duplicate_total").mean,
        metric(&second, "orphan_task_total").mean,
        metric(&second, "task_created_total").mean,
        metric(&dedup, "task_deduplicated_total").mean,
        metric(&dedup, "task_duplicate_total").mean,
        metric(&dedup, "orphan_task_total").mean,
        metric(&dedup, "task_created_total").mean,
    );
    // MCP has no message id to deduplicate by.
    let text = scenario(", protocol = \"mcp\", on_repeated_message = \"deduplicate\"", 20.0, "", "");
    let source = faultline::scenario::Source::from_text("t.toml", &text, faultline::scenario::Format::Toml);
    let parsed = faultline::scenario::parse_source(&source).unwrap();
    let e = faultline::engine::Model::compile(&parsed, &source).unwrap_err().to_string();
    assert!(e.contains("dependency[0].task.on_repeated_message") && e.contains("needs a message id"), "{e}");
}

#[test]
fn a_task_deleted_after_its_ttl_answers_task_not_found_and_its_outcome_is_lost() {
    // MCP: "receivers may delete the task and its results after ttl" (mcp 1.30.0 does, and a
    // tasks/get then answers -32602: tests/sdk_probes.rs). ttl 10 s, polls every 2 s (the
    // server's pollIntervalMs), work exponential of mean 20 s: the poll at about 8 s is the last
    // before the deletion, so the client learns the end only of work shorter than that, and
    // meets TaskNotFound for the rest, e^-8/20 of the tasks. The work goes on: each of those
    // succeeds later for nobody (a late result). Under `on_ttl = "fail"` (the default) the task
    // is failed at 10 s instead, e^-10/20 of them, and nothing is not found.
    let policy = "timeout_ms = 3000000\nretry = { max_attempts = 1 }";
    let task = ", protocol = \"mcp\", poll_interval_ms = 2000, ttl_ms = 10000";
    let deleted = run(&format!("{task}, on_ttl = \"delete\""), 20000.0, "", policy);
    let failed = run(task, 20000.0, "", policy);
    assert_in_ci(
        "TaskNotFound per task",
        &per(&deleted, "task_not_found_total", "task_created_total"),
        (-0.4f64).exp(),
        1,
    );
    assert_in_ci("expired per task", &per(&failed, "task_expired_total", "task_created_total"), (-0.5f64).exp(), 1);
    for (d, f) in deleted.iter().zip(&failed) {
        assert_eq!(f["task_not_found_total"], 0.0);
        assert_eq!(f["task_deleted_total"], 0.0);
        assert_eq!(d["task_expired_total"], 0.0, "deleted, not failed");
        assert_eq!(d["task_ended_total.failed"], 0.0);
        assert!(d["task_deleted_total"] >= d["task_not_found_total"]);
        // Every task not found works on and succeeds unheard (or is still working at the end).
        let unheard = d["late_result_total"] + d["task_running_at_end_total"];
        assert!((unheard - d["task_not_found_total"]).abs() <= 2.0, "{unheard} against {}", d["task_not_found_total"]);
        assert!(d["orphan_task_total"] <= d["task_not_found_total"]);
    }
    // Those whose work outlasts the poll that met TaskNotFound (at about 10 s) are orphans.
    assert_in_ci("orphans per task", &per(&deleted, "orphan_task_total", "task_created_total"), (-0.5f64).exp(), 1);
    eprintln!(
        "a replication: delete {} TaskNotFound, {} late results, {} orphans; fail {} expired, {} TaskNotFound",
        metric(&deleted, "task_not_found_total").mean,
        metric(&deleted, "late_result_total").mean,
        metric(&deleted, "orphan_task_total").mean,
        metric(&failed, "task_expired_total").mean,
        metric(&failed, "task_not_found_total").mean,
    );
    // on_ttl needs a ttl.
    let text = scenario(", on_ttl = \"delete\"", 20.0, "", "");
    let source = faultline::scenario::Source::from_text("t.toml", &text, faultline::scenario::Format::Toml);
    let parsed = faultline::scenario::parse_source(&source).unwrap();
    let e = faultline::engine::Model::compile(&parsed, &source).unwrap_err().to_string();
    assert!(e.contains("dependency[0].task.on_ttl") && e.contains("only with ttl_ms"), "{e}");
}

#[test]
fn an_ignored_a2a_cancel_is_answered_as_a2a_sdks_handlers_answer_it() {
    // The agent ignores every cancel; the step gives up at 10 s, so e^-1/2 of the tasks are
    // cancelled while they work, and each works on for its remaining 20 s. a2a-sdk 1.3.0's
    // DefaultRequestHandler answers CANCELED at once (`canceled`, the default): the client
    // believes the task stopped and tracks no orphan, while the work goes on for nobody. Its
    // LegacyRequestHandler answers -32002 (`not_cancelable`): the client reads the task with a
    // GetTask, sees it WORKING and tracks it. `working` answers the task as it is.
    let task = |answer: &str| format!(", poll_interval_ms = 2000, cost_per_s = 1, cancel = \"ignore\"{answer}");
    let canceled = run(&task(""), 20000.0, "", ABANDON_AT_10_S);
    let legacy = run(&task(", ignored_cancel_answer = \"not_cancelable\""), 20000.0, "", ABANDON_AT_10_S);
    let working = run(&task(", ignored_cancel_answer = \"working\""), 20000.0, "", ABANDON_AT_10_S);
    for ((c, l), w) in canceled.iter().zip(&legacy).zip(&working) {
        let cancels = c["cancel_requested_total"];
        assert!(cancels > 1000.0);
        // A task that had succeeded unheard is refused (-32002) and read: `completed`.
        let live = cancels - c["cancel_observed_total.completed"];
        assert_eq!(c["cancel_observed_total.canceled"], live, "every live task's answer says CANCELED");
        assert_eq!(c["orphan_tracked_total"], 0.0, "so nothing is tracked");
        assert_eq!(c["orphan_task_total"], live, "though every one works on");
        assert_eq!(c["task_ended_total.canceled"], live);
        let live = l["cancel_requested_total"] - l["cancel_observed_total.completed"];
        assert_eq!(l["cancel_observed_total.still_running"], live, "-32002, then a get");
        assert_eq!(l["orphan_tracked_total"], l["orphan_task_total"]);
        // One GetTask more for each -32002 about a live task (the same runs otherwise).
        let refused_live = l["cancel_requested_total"] - c["cancel_observed_total.completed"];
        assert_eq!(l["task_request_total.get"] - c["task_request_total.get"], refused_live);
        assert_eq!(l["task_ended_total.canceled"], 0.0);
        let live = w["cancel_requested_total"] - w["cancel_observed_total.completed"];
        assert_eq!(w["cancel_observed_total.still_running"], live);
        assert_eq!(w["orphan_tracked_total"], w["orphan_task_total"]);
    }
    // What the canceled-at-once work spends after the cancel: its remaining work, 20 s.
    assert_in_ci(
        "cost after a CANCELED answer",
        &per(&canceled, "cost_after_cancel_units_total", "cancel_observed_total.canceled"),
        20.0,
        1,
    );
    eprintln!(
        "a replication: canceled {} cancels, {} answered canceled, {} orphans, {} tracked; not_cancelable {} still running, {} tracked; working {} still running",
        metric(&canceled, "cancel_requested_total").mean,
        metric(&canceled, "cancel_observed_total.canceled").mean,
        metric(&canceled, "orphan_task_total").mean,
        metric(&canceled, "orphan_tracked_total").mean,
        metric(&legacy, "cancel_observed_total.still_running").mean,
        metric(&legacy, "orphan_tracked_total").mean,
        metric(&working, "cancel_observed_total.still_running").mean,
    );
}

#[test]
fn a_steps_retry_after_its_timeout_is_a_new_message_that_no_server_answers_with_the_first_task() {
    // scenario.md 4.5 `on_repeated_message`: deduplication applies to "a message sent again with
    // the same message id" (a send that timed out with no handle, resent). A step's retry after
    // its own timeout is a new message with a new messageId (references.md 8), so a server that
    // deduplicates makes a second task as any other does. The step gives up at 10 s on work of
    // mean 20 s and retries twice; its client does not cancel, so each retry's task works beside
    // the first. No create times out here, so `deduplicate` must change nothing.
    let policy = "timeout_ms = 10000\nretry = { max_attempts = 3, backoff = { kind = \"constant\", base_ms = 100 } }\ntask_client = { cancel_on_abandon = false }";
    let second = run("", 20000.0, "", policy);
    let dedup = run(", on_repeated_message = \"deduplicate\"", 20000.0, "", policy);
    for (s, d) in second.iter().zip(&dedup) {
        assert_eq!(d["task_send_timeout_total"], 0.0, "no send timed out, so no message was sent again");
        assert_eq!(d["task_deduplicated_total"], 0.0, "a retry after the step's timeout is a new message");
        assert!(s["task_duplicate_total"] > 1000.0, "{}", s["task_duplicate_total"]);
        assert_eq!(common::metric_bits(s), common::metric_bits(d), "deduplicate changes nothing");
    }
}

#[test]
fn a_resumed_task_waits_for_a_runner_server_as_pending_and_costs_only_while_it_runs() {
    // scenario.md 4.5: "The task is `pending` while the work waits and `running` from the moment
    // a runner server takes it", and `cost_per_s` accrues only while `running`. One runner
    // server, work exponential of mean 400 ms, 2 tasks a second: M/M/1 at rho = 0.8, whose wait
    // in queue is Wq = rho S / (1 - rho) = 1.6 s and whose service is 0.4 s. A task that asks
    // for input first, answered 1 s after its client (a subscriber) learns of it, sends its work
    // 1 s later: the arrivals at the runner are still Poisson, so the same figures hold.
    let policy = "timeout_ms = 600000\nretry = { max_attempts = 1 }\ntask_client = { on_input_required = \"wait\", observe = \"subscribe\" }";
    let at_one_server = |task: &str| {
        let text = scenario(task, 400.0, "", &at_once(policy)).replace("servers = 2000", "servers = 1");
        replicate(&model(&text), 0)
    };
    let asking =
        ", cost_per_s = 1, input_required_ratio = 1, input_answer_time = { dist = \"constant\", value_ms = 1000 }";
    for task in [", cost_per_s = 1", asking] {
        let reps = at_one_server(task);
        assert_in_ci(&format!("pending{task}"), &metric(&reps, "task_state_time_s.pending"), 1.6, 6);
        assert_in_ci(&format!("running{task}"), &metric(&reps, "task_state_time_s.running"), 0.4, 6);
        let cost = per(&reps, "task_cost_units_total", "task_created_total");
        assert_in_ci(&format!("cost per task{task}"), &cost, 0.4, 6);
    }
}

#[test]
fn a_tasks_running_cost_is_in_the_runs_cost_and_in_the_incidents() {
    // scenario.md 4.5: `cost_per_s` is "added to `cost_units_total` (and to
    // `incident.cost_per_success`...)". No dependency charges a request here, so the whole cost
    // is the tasks' running time: work exponential of mean 5 s, a runner server free for each,
    // at 1 unit a second is 5 units a task. A harmless fault (factor 1) in force all run makes
    // an incident span that covers every run, each of which succeeds with its one task.
    let harmless = fault_all_run("latency", "factor = 1");
    let reps = run(", cost_per_s = 1", 5000.0, &harmless, "timeout_ms = 600000\nretry = { max_attempts = 1 }");
    assert_in_ci("cost per task", &per(&reps, "cost_units_total", "task_created_total"), 5.0, 2);
    assert_in_ci("incident cost per success", &metric(&reps, "incident.cost_per_success"), 5.0, 2);
}

#[test]
fn a_clients_status_polls_are_control_requests_that_cost_as_attempts_do() {
    // metrics.md: a client's gets, finds, subscriptions and cancels at a task dependency are
    // control requests: they count in its control_request_total, not in its attempt_total, and
    // cost like attempts. The agent charges 1 unit a request and its runner nothing, and no task
    // has a running cost, so the run's cost is the agent's attempts (the creates) and its polls.
    let text = scenario(", poll_interval_ms = 2000", 20000.0, "", &at_once("timeout_ms = 3000000")).replacen(
        "servers = 8\n",
        "servers = 8\ncost_units = 1\n",
        1,
    );
    for r in replicate(&model(&text), 0) {
        let requests = ["get", "find", "subscribe", "cancel"].map(|call| r[&format!("task_request_total.{call}")]);
        assert!(requests[0] > 1000.0, "{requests:?}");
        assert_eq!(r["dependency.agent.control_request_total"], requests.iter().sum::<f64>());
        assert_eq!(r["dependency.agent_runner.control_request_total"], r["task_created_total"], "one work a task");
        let attempts = r["dependency.agent.attempt_total"];
        assert_eq!(attempts, r["task_created_total"], "only the creates are attempts");
        assert_eq!(r["cost_units_total"], attempts + r["dependency.agent.control_request_total"]);
    }
}

#[test]
fn a_task_deleted_while_it_waits_for_input_is_gone_neither_orphan_nor_running() {
    // `on_ttl = "delete"`: "its work, if any, goes on". A task waiting for input holds no runner
    // server and has no work; once its record is deleted (ttl 10 s) nothing can answer or run
    // it (the answer at 15 s meets TaskNotFound). So it is no orphan and does not run at the
    // end (only the tasks made in the last 10 s, not yet deleted, wait at the end), and its
    // wait, 10 s, counts in waiting_input up to the deletion, as under `on_ttl = "fail"`.
    let task = ", input_required_ratio = 1, input_answer_time = { dist = \"constant\", value_ms = 15000 }, ttl_ms = 10000, on_ttl = \"delete\"";
    let policy = "timeout_ms = 60000\nretry = { max_attempts = 1 }\ntask_client = { on_input_required = \"wait\" }";
    let reps = run(task, 2000.0, "", policy);
    for r in &reps {
        assert!(r["task_deleted_total"] > 3000.0, "{}", r["task_deleted_total"]);
        assert_eq!(r["task_not_found_total"], r["task_deleted_total"], "each answer meets TaskNotFound");
        assert_eq!(r["orphan_task_total"], 0.0, "a deleted waiting task works for nobody: it does not work");
        assert!(r["task_running_at_end_total"] < 40.0, "{}", r["task_running_at_end_total"]);
        assert!((r["task_state_time_s.waiting_input"] - 10.0).abs() < 0.05, "{}", r["task_state_time_s.waiting_input"]);
    }
}

/// The `task.state` values in an OTLP trace file, in document order (a span's attribute, then
/// its events).
fn traced_states(json: &str) -> Vec<String> {
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(map) => {
                if map.get("key").and_then(|k| k.as_str()) == Some("task.state")
                    && let Some(state) = map.get("value").and_then(|v| v.get("stringValue")).and_then(|s| s.as_str())
                {
                    out.push(state.to_string());
                }
                map.values().for_each(|v| walk(v, out));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            serde_json::Value::Null
            | serde_json::Value::Bool(_)
            | serde_json::Value::Number(_)
            | serde_json::Value::String(_) => {}
        }
    }
    let mut states = Vec::new();
    walk(&serde_json::from_str(json).expect("an OTLP JSON file"), &mut states);
    states
}

#[test]
fn a_tool_that_fails_ends_completed_under_mcp_2026_07_28_and_failed_under_2025_11_25() {
    // SEP-2663 (the 2026-07-28 extension): "The `failed` status MUST NOT be used to represent
    // non-JSON-RPC errors, such as a tool result that completed with `isError: true`"; 2025-11-25:
    // `failed` "includes cases where the tool call result has `isError` set to true". Every
    // work fails (PERMANENT_PROVIDER): the step is told the failure under both; the trace names
    // the task's end as each revision does.
    let policy = "timeout_ms = 60000\nretry = { max_attempts = 1 }";
    let trace = |protocol: &str| {
        let task = format!(", protocol = \"{protocol}\", poll_interval_ms = 1000");
        let text = scenario(&task, 2000.0, "", &at_once(policy))
            .replace("mean_ms = 2000 }", "mean_ms = 2000 }\nerrors = { permanent_provider = 1.0 }");
        for r in replicate(&model(&text), 0) {
            assert_eq!(r["outcome_total.succeeded"], 0.0, "{protocol}: the step is told the failure");
            assert_eq!(r["task_ended_total.failed"], r["task_created_total"], "{protocol}");
        }
        let dir = std::env::temp_dir().join(format!("faultline-specs-{}-{protocol}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("s.toml");
        std::fs::write(&file, &text).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_faultline"))
            .args(["replay", file.to_str().unwrap(), "-p", "p", "--run", "300", "-o"])
            .arg(dir.join("t.json"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let json = std::fs::read_to_string(dir.join("t.json")).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        traced_states(&json)
    };
    let states = trace("mcp-2025-11-25");
    assert_eq!(states.last().map(String::as_str), Some("failed"), "{states:?}");
    let states = trace("mcp-2026-07-28");
    assert_eq!(states.last().map(String::as_str), Some("completed"), "{states:?}");
    assert!(!states.iter().any(|s| s == "failed"), "{states:?}");
}

#[test]
fn a_refused_request_carries_the_protocols_error_code_in_the_trace() {
    // The issue: "each with its own methods, answers and errors, so a reader of that
    // specification recognises every call, state and error code in the traces". Every work
    // takes 5 s; the step gives up at 10 s, before its first poll (20 s), and cancels a task
    // that has completed: A2A answers TaskNotCancelableError (-32002), MCP -32602 (Invalid
    // params); the refused cancel's span is an error carrying the code, not a success.
    let policy = "timeout_ms = 10000\nretry = { max_attempts = 1 }\ntask_client = { poll_interval_ms = 20000 }";
    for (protocol, code, name) in [("a2a", "-32002", "TaskNotCancelableError"), ("mcp", "-32602", "Invalid params")] {
        let task = format!(", protocol = \"{protocol}\"");
        let text = scenario(&task, 5000.0, "", &at_once(policy))
            .replace("{ dist = \"exponential\", mean_ms = 5000 }", "{ dist = \"constant\", value_ms = 5000 }");
        assert!(text.contains("value_ms = 5000"));
        let dir = std::env::temp_dir().join(format!("faultline-refused-{}-{protocol}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("s.toml");
        std::fs::write(&file, &text).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_faultline"))
            .args(["replay", file.to_str().unwrap(), "-p", "p", "--run", "300", "-o"])
            .arg(dir.join("t.json"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let json = std::fs::read_to_string(dir.join("t.json")).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let tree = String::from_utf8(out.stdout).unwrap();
        let cancel = if protocol == "a2a" { "CancelTask agent" } else { "tasks/cancel agent" };
        let line = tree.lines().find(|l| l.contains(cancel)).unwrap_or_else(|| panic!("{tree}"));
        assert!(line.contains(&format!("{name} ({code})")) && !line.contains("SUCCESS"), "{line}");
        // The refusal says the task had ended: the client reads it with a get, made after the
        // step's attempt ended, which has a span of its own under the same attempt.
        let get = if protocol == "a2a" { "GetTask agent" } else { "tasks/get agent" };
        let after: Vec<&str> = tree.lines().skip_while(|l| !l.contains(cancel)).skip(1).collect();
        assert!(after.iter().any(|l| l.contains(get)), "{protocol}: no span for the get after the refusal: {tree}");
        assert!(
            json.contains("rpc.jsonrpc.error_code") && json.contains(code),
            "{protocol}: the code in the OTLP file"
        );
    }
}

#[test]
fn a_retrys_task_beside_work_that_goes_on_under_a_canceled_record_is_a_duplicate() {
    // metrics.md `task_duplicate_total`: "a step's retry while its first task works on". The step
    // gives up at 10 s on work of mean 20 s and retries twice. Its client cancels the task it
    // leaves; the agent ignores cancels and answers CANCELED (a2a-sdk's DefaultRequestHandler,
    // `ignored_cancel_answer = "canceled"`), so the work goes on under a CANCELED record: each
    // retry's task works beside it exactly as when the client sends no cancel at all. The
    // duplicates are the same, up to the few ms the cancels add to the agent's queue.
    let retrying = "timeout_ms = 10000\nretry = { max_attempts = 3, backoff = { kind = \"constant\", base_ms = 100 } }";
    let ignored = run(", cancel = \"ignore\"", 20000.0, "", retrying);
    let silent = run("", 20000.0, "", &format!("{retrying}\ntask_client = {{ cancel_on_abandon = false }}"));
    for (i, s) in ignored.iter().zip(&silent) {
        assert!(i["cancel_ignored_total"] > 4000.0, "{}", i["cancel_ignored_total"]);
        assert!(s["task_duplicate_total"] > 3000.0, "{}", s["task_duplicate_total"]);
        let gap = (i["task_duplicate_total"] - s["task_duplicate_total"]).abs();
        assert!(
            gap < 0.02 * s["task_duplicate_total"],
            "CANCELED while working: {} duplicates, no cancel: {}",
            i["task_duplicate_total"],
            s["task_duplicate_total"]
        );
    }
}

#[test]
fn settings_that_can_never_act_are_refused_at_their_field() {
    // An MCP client never receives push notifications, and retry_after_max_ms caps only an
    // honoured Retry-After: each is refused at its field, as ignored_cancel_answer at MCP is.
    let refused = |task: &str, policy: &str| {
        let text = scenario(task, 20.0, "", policy);
        let source = faultline::scenario::Source::from_text("t.toml", &text, faultline::scenario::Format::Toml);
        let parsed = faultline::scenario::parse_source(&source).unwrap();
        faultline::engine::Model::compile(&parsed, &source).err().map(|e| e.to_string())
    };
    for field in ["push_lost_ratio = 0.5", "push_duplicate_ratio = 0.5"] {
        let e = refused(&format!(", protocol = \"mcp\", {field}"), "").expect(field);
        assert!(e.contains(&format!("dependency[0].task.{}", &field[..field.find(' ').unwrap()])), "{e}");
    }
    assert!(refused(", push_lost_ratio = 0.5", "").is_none(), "A2A pushes");
    let e = refused("", "task_client = { honor_retry_after = false, retry_after_max_ms = 1000 }").expect("cap");
    assert!(e.contains("task_client.retry_after_max_ms"), "{e}");
    assert!(refused("", "task_client = { retry_after_max_ms = 1000 }").is_none());
}

#[test]
fn a_tasks_work_at_a_token_shaped_runner_is_the_call_of_its_own_workflows_step() {
    // scenario.md 4.6: "A task's work at a token-shaped runner is the step's own call: it takes
    // the step's counts". The task's step is in the second workflow, whose step gives 2 000
    // input and 300 output tokens; the first workflow's step declares none, and the model's
    // defaults are 500 and 50. Every call the model serves is a task's work: each bills the
    // task's step's counts, and its first chunk comes after 400 + 2 x 50 ms.
    let toml = r#"
[simulation]
duration_s = 200
warmup_s = 0
seed = 3
replications = 2

[[dependency]]
name = "api"
servers = 10
service_time = { dist = "constant", value_ms = 10 }

[[dependency]]
name = "llm"
servers = 100

[dependency.tokens]
time_to_first_token = { dist = "constant", value_ms = 400 }
ttft_ms_per_1k_input_tokens = 50
time_per_output_token = { dist = "constant", value_ms = 20 }
input_tokens = { dist = "constant", value = 500 }
output_tokens = { dist = "constant", value = 50 }

[[dependency]]
name = "agent"
servers = 8
service_time = { dist = "constant", value_ms = 10 }
task = { runner = "llm", poll_interval_ms = 1000 }

[[workflow]]
name = "lookup"
arrivals = { rate_per_s = 1 }
deadline_ms = 600000

  [[workflow.step]]
  id = "fetch"
  dependency = "api"

[[workflow]]
name = "research"
arrivals = { rate_per_s = 0.5 }
deadline_ms = 600000

  [[workflow.step]]
  id = "delegate"
  dependency = "agent"
  input_tokens = { dist = "constant", value = 2000 }
  output_tokens = { dist = "constant", value = 300 }

[policy.p]
timeout_ms = 300000
"#;
    for r in replicate(&model(toml), 0) {
        let calls = r["gen_ai.client.calls_served_total"];
        assert!(calls > 50.0, "{calls}");
        assert_eq!(r["gen_ai.client.token.usage.input_total"], 2000.0 * calls);
        assert_eq!(r["gen_ai.client.token.usage.output_total"], 300.0 * calls);
        assert_eq!(r["gen_ai.client.time_to_first_chunk_ms.mean"], 500.0);
    }
}

#[test]
fn a_blocking_send_whose_service_ends_first_still_times_out_at_the_request_timeout() {
    // Constant times: the agent serves a create in 20 ms, the task's work takes 1 000 ms, and a
    // blocking send's answer waits for the task's end (1 020 ms), past the 500 ms request
    // timeout though the create's own service ends before it. Every send times out with no
    // handle and is looked up by message id: one send timeout and one find per task.
    let constant = |toml: String| {
        toml.replace("dist = \"exponential\", mean_ms = 20 }", "dist = \"constant\", value_ms = 20 }")
            .replace("dist = \"exponential\", mean_ms = 1000 }", "dist = \"constant\", value_ms = 1000 }")
    };
    let policy = "timeout_ms = 3000000\nretry = { max_attempts = 1 }\ntask_client = { request_timeout_ms = 500 }";
    let toml = constant(scenario("", 1000.0, "", policy));
    assert!(!toml.contains("exponential\", mean_ms = 20 }") && !toml.contains("mean_ms = 1000 }"), "{toml}");
    for r in &replicate(&model(&toml), 0) {
        let created = r["task_created_total"];
        assert!(created > 3000.0, "{created} tasks");
        assert_eq!(r["task_send_timeout_total"], created, "every blocking send times out");
        assert_eq!(r["dependency.agent.timeout_total"], created);
        assert_eq!(r["task_request_total.find"], created, "and is looked up by message id");
        assert_eq!(r["task_duplicate_total"], 0.0);
        assert_eq!(r["outcome_total.succeeded"], created, "the find follows the task to its end");
    }
}
