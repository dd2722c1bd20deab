//! Long-running remote tasks, observed from outside: polls against the closed form of a
//! geometric number of polls, what a cancel that is honoured, late or ignored leaves behind
//! (orphans, cost after the caller left, late results), a lost task handle found by its message
//! id instead of sent again, stuck and interrupted tasks, the two storm scenarios, and the checks on
//! the file's task tables.

mod common;
use common::{assert_in_ci, metric, model, replicate};
use faultline::scenario::{Format, Source, parse_source};

/// One agent: creates at `agent` (8 servers), work at `agent_runner` (exponential, mean 20 s,
/// enough workers that nobody waits), one step per run; `extra` is appended.
fn scenario(extra: &str) -> String {
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
task = {{ runner = "agent_runner", poll_interval_ms = 2000, cost_per_s = 1 }}

[[dependency]]
name = "agent_runner"
servers = 2000
service_time = {{ dist = "exponential", mean_ms = 20000 }}

[[workflow]]
name = "research"
arrivals = {{ rate_per_s = 2 }}
deadline_ms = 3600000

  [[workflow.step]]
  id = "delegate"
  dependency = "agent"
{extra}
"#
    )
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

fn one_policy(extra: &str, policy: &str) -> Vec<faultline::metrics::MetricMap> {
    let m = model(&scenario(&format!("{extra}\n[policy.p]\n{}\n", at_once(policy))));
    replicate(&m, 0)
}

#[test]
fn polls_per_task_follow_the_geometric_closed_form() {
    // A poll every tau after the handle sees the end of an exponential work W (mean mu) at poll
    // ceil(W / tau): E = sum_k P(W > k tau) = 1 / (1 - exp(-tau / mu)).
    let reps = one_policy("", "timeout_ms = 3000000");
    let theory = 1.0 / (1.0 - (-2.0f64 / 20.0).exp());
    assert_in_ci("task_polls_per_task", &metric(&reps, "task_polls_per_task"), theory, 2);
    // Every task ran to the end and was answered; time running is the work's mean.
    assert_in_ci("task_state_time_s.running", &metric(&reps, "task_state_time_s.running"), 20.0, 2);
    for r in &reps {
        assert_eq!(r["task_created_total"], r["task_ended_total.succeeded"]);
        assert_eq!(r["orphan_task_total"], 0.0);
        assert_eq!(r["task_duplicate_total"], 0.0);
    }
}

#[test]
fn a_client_that_does_not_honour_the_servers_interval_polls_at_its_own() {
    let reps =
        one_policy("", "timeout_ms = 3000000\ntask_client = { poll_interval_ms = 500, honor_poll_interval = false }");
    let theory = 1.0 / (1.0 - (-0.5f64 / 20.0).exp());
    assert_in_ci("task_polls_per_task at 0.5 s", &metric(&reps, "task_polls_per_task"), theory, 1);
}

#[test]
fn polls_that_back_off_while_the_task_works_follow_the_closed_form() {
    // Google's long-running operations client: 5 s, x1.5, capped at 45 s (above the server's
    // 2 s, so its floor never acts). Polls at t_1, t_2, ... with t_0 = 0 and t_{k+1} = t_k +
    // min(5 x 1.5^k, 45) s see the end of an exponential work W at the first t_k >= W:
    // E = sum_k P(W > t_k) = sum_k exp(-t_k / mu).
    let lro = "task_client = { poll_interval_ms = 5000, poll_multiplier = 1.5, poll_max_interval_ms = 45000 }";
    let reps = one_policy("", &format!("timeout_ms = 3000000\n{lro}"));
    let (mut t, mut theory) = (0.0f64, 0.0);
    for k in 0..200 {
        theory += (-t / 20.0).exp();
        t += (5.0 * 1.5f64.powi(k)).min(45.0);
    }
    assert!((theory - 2.79).abs() < 0.01, "{theory}");
    assert_in_ci("task_polls_per_task with backoff", &metric(&reps, "task_polls_per_task"), theory, 2);
    // Without the backoff the same 5 s polls make 1 / (1 - exp(-5 / 20)) = 4.52 a task.
    let fixed = one_policy("", "timeout_ms = 3000000\ntask_client = { poll_interval_ms = 5000 }");
    let fixed_theory = 1.0 / (1.0 - (-5.0f64 / 20.0).exp());
    assert_in_ci("task_polls_per_task at 5 s", &metric(&fixed, "task_polls_per_task"), fixed_theory, 2);
}

#[test]
fn a_poll_refused_with_a_retry_after_is_made_again_no_sooner() {
    // The agent advertises Retry-After 10 s on its 429s; a rate limit of one request a
    // minute holds it for 200 s. The clients' own retry pause is 1 s: without Retry-After each
    // client waiting out the limit polls every second, honouring it every 10 s.
    let limited = scenario(
        r#"
[[fault]]
kind = "rate_limit"
target = "agent"
start_s = 500
duration_s = 200
per_s = 0.016
burst = 1
"#,
    )
    .replace(
        "cost_per_s = 1 }",
        "cost_per_s = 1 }\nrate_limit = { per_s = 100000, burst = 100000, retry_after_ms = 10000 }",
    );
    let run = |client: &str, text: &str| {
        let m = model(&format!(
            "{text}\n[policy.p]\ntimeout_ms = 3000000\ntask_client = {{ return_immediately = true, {client} }}\n"
        ));
        metric(&replicate(&m, 0), "task_request_total.get").mean
    };
    // About 40 tasks work at any time (2 a second, 20 s each), and their clients wait out the
    // limit (few polls get through): 40 x 200 s of it is 8 000 gets a second apart, 800 ten
    // seconds apart, against 4 000 at the server's 2 s without the limit.
    let calm = run("honor_retry_after = true", &scenario(""));
    let honoured = run("honor_retry_after = true", &limited);
    let deaf = run("honor_retry_after = false", &limited);
    eprintln!("gets: no limit {calm}, honoured {honoured}, not honoured {deaf}");
    assert!(
        honoured < calm - 2_000.0,
        "honouring clients poll slower than the server's 2 s: {honoured} against {calm}"
    );
    assert!(deaf > calm + 2_000.0, "the others poll every second: {deaf} against {calm}");
    assert!(deaf - honoured > 0.8 * 40.0 * 200.0 * 0.9, "{deaf} - {honoured}");
}

#[test]
fn an_ignored_cancel_leaves_an_orphan_that_spends_its_remaining_work_for_nobody() {
    // A 10 s timeout abandons every task that has not been seen to end; the work is
    // memoryless, so an ignored task works on for mu = 20 s on average, at 1 unit per second.
    let ignore = one_policy("", "timeout_ms = 10000\nretry = { max_attempts = 1 }");
    let text = scenario("")
        .replace("cost_per_s = 1 }", "cost_per_s = 1, cancel = \"ignore\", ignored_cancel_answer = \"working\" }");
    let m = model(
        &(text
            + "\n[policy.p]\ntimeout_ms = 10000\nretry = { max_attempts = 1 }\ntask_client = { return_immediately = true }\n"),
    );
    let ignored = replicate(&m, 0);
    for (honoured, ignored) in ignore.iter().zip(&ignored) {
        assert_eq!(honoured["orphan_task_total"], 0.0, "an honoured cancel leaves no orphan");
        assert_eq!(honoured["cancel_observed_total.still_running"], 0.0);
        assert!(honoured["cancel_observed_total.canceled"] > 100.0);
        assert_eq!(ignored["cancel_ignored_total"], ignored["orphan_tracked_total"]);
        assert_eq!(ignored["orphan_task_total"], ignored["orphan_tracked_total"]);
        assert!(ignored["late_result_total.cache"] > 0.9 * ignored["orphan_task_total"], "orphans end late");
    }
    let per_orphan: Vec<f64> =
        ignored.iter().map(|r| r["cost_after_cancel_units_total"] / r["orphan_task_total"]).collect();
    let e = faultline::metrics::stats::estimate(per_orphan.iter().copied());
    assert_in_ci("cost after cancel per orphan", &e, 20.0, 1);
    // An honoured cancel stops the spending within the cancel request's own time.
    for r in &ignore {
        assert!(r["cost_after_cancel_units_total"] / r["cancel_requested_total"] < 0.1);
    }
}

#[test]
fn a_late_cancel_stops_the_task_after_its_delay() {
    let text = scenario("").replace("cost_per_s = 1 }", "cost_per_s = 1, cancel = \"late\", late_cancel_ms = 5000 }");
    let m = model(
        &(text
            + "\n[policy.p]\ntimeout_ms = 10000\nretry = { max_attempts = 1 }\ntask_client = { return_immediately = true }\n"),
    );
    let reps = replicate(&m, 0);
    // Remaining work is exponential (mean 20 s), cut at 5 s: E[min(W, 5)] = 20 (1 - exp(-1/4)).
    let per_cancel: Vec<f64> =
        reps.iter().map(|r| r["cost_after_cancel_units_total"] / r["cancel_late_total"]).collect();
    let e = faultline::metrics::stats::estimate(per_cancel.iter().copied());
    assert_in_ci("cost after a late cancel", &e, 20.0 * (1.0 - (-0.25f64).exp()), 1);
}

#[test]
fn a_lost_handle_is_found_by_message_id_instead_of_sending_the_message_again() {
    let fault = r#"
[[fault]]
kind = "lost_handle"
target = "agent"
start_s = 500
duration_s = 500
toxicity = 0.2
"#;
    let policy = "timeout_ms = 3000000\nretry = { max_attempts = 3 }\ntask_client = { request_timeout_ms = 1000, on_send_timeout = \"{}\" }";
    let find = one_policy(fault, &policy.replace("{}", "find"));
    let resend = one_policy(fault, &policy.replace("{}", "resend"));
    for (f, r) in find.iter().zip(&resend) {
        assert!(f["task_lost_handle_total"] > 50.0);
        assert_eq!(f["task_duplicate_total"], 0.0, "a found task is not made again");
        assert!(f["task_request_total.find"] >= f["task_lost_handle_total"]);
        assert!(
            r["task_duplicate_total"] >= 0.5 * r["task_lost_handle_total"],
            "lost handles resent: {} duplicates for {} lost handles",
            r["task_duplicate_total"],
            r["task_lost_handle_total"]
        );
        assert_eq!(r["task_request_total.find"], 0.0);
    }
}

#[test]
fn stuck_tasks_hold_their_workers_until_cancelled_and_interrupted_ones_are_handed_back() {
    let stuck = r#"
[[fault]]
kind = "stuck_task"
target = "agent"
start_s = 500
duration_s = 100
"#;
    let reps = one_policy(stuck, "timeout_ms = 60000\nretry = { max_attempts = 1 }");
    for r in &reps {
        // About 200 tasks made in the window never end; each is cancelled at its timeout.
        assert!(r["cancel_observed_total.canceled"] >= 150.0, "{}", r["cancel_observed_total.canceled"]);
        assert_eq!(r["task_running_at_end_total"], 0.0);
    }
    let no_cancel = one_policy(
        stuck,
        "timeout_ms = 60000\nretry = { max_attempts = 1 }\ntask_client = { cancel_on_abandon = false }",
    );
    for r in &no_cancel {
        assert!(r["task_running_at_end_total"] >= 150.0, "stuck and never cancelled: still working at the end");
        assert_eq!(r["orphan_tracked_total"], 0.0, "nobody knows about them");
        assert!(r["orphan_task_total"] >= r["task_running_at_end_total"]);
    }
    let interrupted = r#"
[[fault]]
kind = "input_required"
target = "agent"
start_s = 500
duration_s = 100
"#;
    let reps = one_policy(interrupted, "timeout_ms = 60000\nretry = { max_attempts = 3 }");
    for r in &reps {
        assert!(r["step.delegate.failed_total"] >= 150.0 || r["outcome_total.failed"] >= 150.0);
        assert!(r["cancel_observed_total.canceled"] >= 150.0, "the waiting task is let go of");
    }
}

/// A shipped storm scenario's policies, each replicated: (name, replications).
fn storm(file: &str) -> Vec<(String, Vec<faultline::metrics::MetricMap>)> {
    let text = std::fs::read_to_string(format!("{}/scenarios/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let m = model(&text);
    (0..m.policies.len()).map(|p| (m.policies[p].name.clone(), replicate(&m, p))).collect()
}

fn policy<'a>(
    runs: &'a [(String, Vec<faultline::metrics::MetricMap>)],
    name: &str,
) -> &'a [faultline::metrics::MetricMap] {
    &runs.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no policy {name}")).1
}

const AGENT: &str = "dependency.research_agent.";

#[test]
fn the_subscribe_storm_puts_clients_in_step_and_jitter_alone_spreads_them() {
    let runs = storm("a2a-subscribe-storm.toml");
    let (sync, jitter, resend) = (policy(&runs, "synchronised"), policy(&runs, "jittered"), policy(&runs, "resend"));
    let m = |reps, name: &str| metric(reps, &format!("{AGENT}{name}"));
    // Jitter is the one difference between synchronised and jittered: it takes the peak after
    // the outage down more than threefold, and the queue's drain with it.
    let (s, j) = (m(sync, "recovery_peak_ratio"), m(jitter, "recovery_peak_ratio"));
    assert!(s.low > 3.0 * j.high, "after the outage: synchronised {s:?} against jittered {j:?}");
    let (s, j) = (m(sync, "recovery_drain_s"), m(jitter, "recovery_drain_s"));
    assert!(s.low > j.high && s.mean > 2.0 * j.mean, "drain: synchronised {s:?} against jittered {j:?}");
    // Inside the outage it does not: a full-jitter wait after the break is drawn from [0, 1 s),
    // so every first resubscription lands in the break's own second.
    let (s, j) = (m(sync, "fault_peak_ratio"), m(jitter, "fault_peak_ratio"));
    assert!(j.low > s.high, "inside the outage: jittered {j:?} against synchronised {s:?}");
    assert!(s.low > 10.0, "the synchronised clients' retries inside the outage are a burst too: {s:?}");
    // Resending is the one difference between synchronised and resend: the same peaks, and the
    // duplicates and orphans are resend's alone.
    for name in ["recovery_peak_ratio", "fault_peak_ratio"] {
        assert_eq!(m(resend, name).mean, m(sync, name).mean, "{name}: the same requests until a create times out");
    }
    for name in ["task_duplicate_total", "orphan_task_total"] {
        let (r, s) = (metric(resend, name), metric(sync, name));
        assert!(r.low > 10.0 * s.high.max(0.1), "{name}: resend {r:?} against synchronised {s:?}");
    }
    assert!(metric(sync, "task_request_total.find").mean > 0.0, "the synchronised creates that time out are found");
    assert_eq!(metric(resend, "task_request_total.find").mean, 0.0);
}

#[test]
fn the_poll_storm_is_not_in_step_so_jitter_does_not_lower_its_peak() {
    let polls = storm("a2a-poll-storm.toml");
    let subs = storm("a2a-subscribe-storm.toml");
    let m = |reps, name: &str| metric(reps, &format!("{AGENT}{name}"));
    let (sync, jitter) = (policy(&polls, "synchronised"), policy(&polls, "jittered"));
    // The two files differ only in how the clients follow their tasks: synchronised pollers
    // come back at a tenth of the synchronised subscribers' peak, or less.
    let (p, s) = (m(sync, "recovery_peak_ratio"), m(policy(&subs, "synchronised"), "recovery_peak_ratio"));
    assert!(p.high < 2.0 && s.low > 10.0 * p.high, "pollers {p:?} against subscribers {s:?}");
    assert!(metric(sync, "task_request_total.get").mean > 10.0 * metric(sync, "task_request_total.subscribe").mean);
    // Jitter has nothing to spread: it does not lower the pollers' peak after the outage, and
    // full jitter's shorter retry pauses raise the one inside it.
    let (s, j) = (m(sync, "recovery_peak_ratio"), m(jitter, "recovery_peak_ratio"));
    assert!(j.high > s.mean, "jittered {j:?} against synchronised {s:?}");
    let (s, j) = (m(sync, "fault_peak_ratio"), m(jitter, "fault_peak_ratio"));
    assert!(j.low > s.high, "inside the outage: jittered {j:?} against synchronised {s:?}");
    // No create times out, so a policy that resends would change nothing: the file has none.
    assert!(metric(sync, "task_duplicate_total").mean < 1.0);
    assert_eq!(metric(sync, "task_send_timeout_total").mean, 0.0);
    assert_eq!(metric(sync, "task_request_total.find").mean, 0.0);
    // Each policy of each storm differs from `synchronised` in one setting, and shows it: some
    // figure differs (a row equal to its baseline in every figure shows nothing).
    for runs in [&polls, &subs] {
        let base = policy(runs, "synchronised");
        for (name, reps) in runs.iter().filter(|(n, _)| n != "synchronised") {
            let differs = reps.iter().zip(base).any(|(r, b)| common::metric_bits(r) != common::metric_bits(b));
            assert!(differs, "policy {name} equals synchronised in every figure");
        }
    }
}

fn error_of(text: &str) -> String {
    let source = Source::from_text("t.toml", text, Format::Toml);
    let scenario = match parse_source(&source) {
        Ok(s) => s,
        Err(e) => return e.to_string(),
    };
    match faultline::engine::Model::compile(&scenario, &source) {
        Ok(_) => panic!("compiled"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn task_tables_are_checked_with_located_errors() {
    let base = scenario("");
    let e = error_of(&base.replace("runner = \"agent_runner\"", "runner = \"agent_runer\""));
    assert!(e.contains("dependency[0].task.runner") && e.contains("agent_runner"), "{e}");
    let e = error_of(&base.replace("runner = \"agent_runner\"", "runner = \"agent\""));
    assert!(e.contains("cannot run its own tasks"), "{e}");
    let e = error_of(&base.replace("cost_per_s = 1 }", "cost_per_s = 1, cancel = \"late\" }"));
    assert!(e.contains("late_cancel_ms"), "{e}");
    let e = error_of(&base.replace("cost_per_s = 1 }", "cost_per_s = 1, late_cancel_ms = 5 }"));
    assert!(e.contains("applies only with cancel = \"late\""), "{e}");
    let e = error_of(&base.replace("cost_per_s = 1 }", "cost_per_s = 1, protocol = \"grpc\" }"));
    assert!(e.contains("protocol") && e.contains("a2a"), "{e}");
    let fault = "\n[[fault]]\nkind = \"stuck_task\"\ntarget = \"agent_runner\"\nstart_s = 1\nduration_s = 1\n";
    let e = error_of(&scenario(fault));
    assert!(e.contains("fault[0].target") && e.contains("no [dependency.task]"), "{e}");
    let late = "\n[[fault]]\nkind = \"late_cancel\"\ntarget = \"agent\"\nstart_s = 1\nduration_s = 1\n";
    assert!(error_of(&scenario(late)).contains("latency_ms"));
    let step = base.replace("dependency = \"agent\"\n", "dependency = \"agent_runner\"\n  late_result = \"cache\"\n");
    let e = error_of(&step);
    assert!(e.contains("late_result") && e.contains("task dependency"), "{e}");
    let e = error_of(&(base.clone() + "\n[policy.p]\ntask_client = { observe = \"webhook\" }\n"));
    assert!(e.contains("task_client.observe"), "{e}");
    let e = error_of(&(base + "\n[policy.p]\ntask_client = { retry_multiplier = 0.5 }\n"));
    assert!(e.contains("retry_multiplier"), "{e}");
}

#[test]
fn tasks_replay_bit_for_bit_and_share_their_work_draws_across_policies() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/a2a-subscribe-storm.toml")).unwrap();
    let m = model(&text);
    let first = replicate(&m, 0);
    let again = replicate(&m, 0);
    for (a, b) in first.iter().zip(&again) {
        assert_eq!(common::metric_bits(a), common::metric_bits(b));
    }
    // The same runs create the same tasks with the same work under both policies: before the
    // outage nothing differs, so the mean running time of a task is paired closely.
    let other = replicate(&m, 1);
    for (a, b) in first.iter().zip(&other) {
        let (x, y) = (a["task_state_time_s.running"], b["task_state_time_s.running"]);
        assert!((x - y).abs() < 0.02 * x, "{x} against {y}");
    }
}

#[test]
fn a_write_task_commits_once_per_key_and_a_status_lookup_finds_it() {
    // Tasks that outlive the 10 s timeout leave their effect unknown; the lookup asks the task
    // dependency about the key (no task is made for it) and finds the effect once committed.
    let text = scenario("")
        .replace(
            "  dependency = \"agent\"\n",
            "  dependency = \"agent\"\n  effect = \"write\"\n  idempotency = \"key\"\n  status_lookup = true\n",
        )
        .replace("cost_per_s = 1 }", "cost_per_s = 1, cancel = \"ignore\" }");
    let m = model(
        &(text
            + "\n[policy.p]\ntimeout_ms = 10000\nretry = { max_attempts = 3 }\ntask_client = { return_immediately = true }\n"),
    );
    for r in replicate(&m, 0) {
        assert!(r["effect_unknown_total"] > 100.0);
        assert_eq!(r["duplicate_effect_total"], 0.0, "one key, deduplicated");
        assert!(r["effect_total"] > 0.0);
        assert_eq!(r["task_request_total.find"], 0.0, "a lookup is not a task request");
    }
}

#[test]
fn an_honoured_retry_after_keeps_the_jittered_subscribers_spread() {
    // scenario.md 8.17 `jitter`: "Randomises every wait of the client, polls and retry pauses
    // alike". The subscribe storm's down front end answers 503 with Retry-After: 20 s, longer
    // than every retry pause: the jittered clients must still come back spread (the jitter
    // applied above the Retry-After's floor, as above an honoured poll interval), not all
    // exactly 20 s after their refusal, in step with the synchronised ones. Two replications.
    let path = format!("{}/scenarios/a2a-subscribe-storm.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(path).unwrap();
    let text = text.replacen("duration_s = 60\n", "duration_s = 60\nretry_after_ms = 20000\n", 1);
    let text = text.replacen("replications = 8", "replications = 2", 1);
    assert!(text.contains("retry_after_ms = 20000"));
    let m = model(&text);
    let peak = |name: &str| {
        let p = m.policies.iter().position(|p| p.name == name).unwrap();
        metric(&replicate(&m, p), &format!("{AGENT}recovery_peak_ratio"))
    };
    let (s, j) = (peak("synchronised"), peak("jittered"));
    assert!(s.mean > 3.0 * j.mean, "after the outage: synchronised {s:?} against jittered {j:?}");
}
