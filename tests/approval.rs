//! Approval and advisory dependencies (docs/essay.md section 4, docs/scenario.md 4.7 and 6.1),
//! shown from outside: scenario runs whose shares follow the closed forms of exponential
//! decision times against a business expiry and a root deadline, working hours that hold a
//! night's requests until the morning, approvers that queue as M/M/c (Erlang C), and an
//! advisory step that is left out in the share its distribution predicts without delaying the
//! run, against the same step as soft.

mod common;

use common::{assert_in_ci, metric, mmc_wq, model, replicate};
use faultline::metrics::MetricMap;
use std::process::Command;

/// One approval step at a desk; `desk` is the rest of the approval table.
fn approval_scenario(sim: &str, rate_per_s: f64, deadline_ms: f64, desk: &str) -> String {
    format!(
        r#"
[simulation]
{sim}

[[dependency]]
name = "change-board"
approval = {{ {desk} }}

[[workflow]]
name = "change"
arrivals = {{ rate_per_s = {rate_per_s} }}
deadline_ms = {deadline_ms}

  [[workflow.step]]
  id = "approve"
  dependency = "change-board"

[policy.p]
retry = {{ max_attempts = 3 }}
"#
    )
}

/// `name` per run, as a new metric `share`.
fn shares(reps: &[MetricMap], name: &str) -> Vec<MetricMap> {
    reps.iter()
        .map(|m| {
            let mut m = m.clone();
            m.insert("share".into(), m[name] / m["logical_run_total"]);
            m
        })
        .collect()
}

const SIM: &str = "duration_s = 600\nwarmup_s = 0\nseed = 5\nreplications = 10";

#[test]
fn expiry_before_the_deadline_lapses_exp_minus_e_over_m_of_requests() {
    // Mean decision time m = 60 s, expiry E = 30 s, deadline D = 120 s: a request is decided
    // with probability 1 - exp(-E/m), approved in 80 % of those, and lapses otherwise.
    let (m, e, p) = (60.0_f64, 30.0_f64, 0.8);
    let desk = format!(
        r#"decision_time = {{ dist = "exponential", mean_ms = {} }}, approved_share = {p}, expires_after_s = {e}"#,
        m * 1e3
    );
    let reps = replicate(&model(&approval_scenario(SIM, 5.0, 120_000.0, &desk)), 0);
    let decided = 1.0 - (-e / m).exp();
    let checks = 4;
    assert_in_ci("approved", &metric(&shares(&reps, "outcome_total.succeeded"), "share"), p * decided, checks);
    let refused = shares(&reps, "outcome_total.approval_refused");
    assert_in_ci("refused", &metric(&refused, "share"), (1.0 - p) * decided, checks);
    let expired = shares(&reps, "approval_total.expired");
    assert_in_ci("expired", &metric(&expired, "share"), (-e / m).exp(), checks);
    // A decided request's wait is an exponential cut at E: m - E exp(-E/m) / (1 - exp(-E/m)).
    let wait_ms = 1e3 * (m - e * (-e / m).exp() / decided);
    assert_in_ci("decision wait", &metric(&reps, "approval_wait_ms.mean"), wait_ms, checks);
    for r in &reps {
        assert_eq!(r["approval_total.pending_at_deadline"], 0.0, "the expiry always comes first");
        assert_eq!(r["approval_requested_total"], r["logical_run_total"]);
    }
}

#[test]
fn a_deadline_before_the_expiry_hands_exp_minus_d_over_m_of_runs_on_without_a_deadline_miss() {
    // D = 30 s, E = 1 h: exp(-D/m) of runs still wait at the deadline and are handed to an
    // asynchronous task; they end exactly at the deadline and are no deadline miss.
    let (m, d) = (60.0_f64, 30.0_f64);
    let desk = format!(r#"decision_time = {{ dist = "exponential", mean_ms = {} }}, expires_after_s = 3600"#, m * 1e3);
    let reps = replicate(&model(&approval_scenario(SIM, 5.0, d * 1e3, &desk)), 0);
    let waiting = shares(&reps, "outcome_total.awaiting_approval");
    assert_in_ci("awaiting approval", &metric(&waiting, "share"), (-d / m).exp(), 2);
    let approved = shares(&reps, "approval_total.approved");
    assert_in_ci("approved", &metric(&approved, "share"), 1.0 - (-d / m).exp(), 2);
    for r in &reps {
        assert_eq!(r["deadline_exceeded_total"], 0.0, "told on time: not a miss");
        assert_eq!(r["run_latency_ms.max"], d * 1e3, "nobody waits past the deadline");
        assert_eq!(r["outcome_total.approval_expired"], 0.0);
        assert_eq!(r["safe_outcome_ratio"], 1.0);
    }
}

/// Requests arriving in the first hour of a Monday (from 00:00, or from `start_h` of the
/// week), decided in 1 h of working time on average, with a 10 h deadline.
fn night_shift(hours: &str) -> String {
    let sim = "duration_s = 3600\nwarmup_s = 0\nseed = 9\nreplications = 6\ndrain_limit_s = 40000";
    let desk =
        format!(r#"decision_time = {{ dist = "exponential", mean_ms = 3600000 }}, expires_after_s = 172800{hours}"#);
    approval_scenario(sim, 0.5, 36_000_000.0, &desk)
}

#[test]
fn a_request_made_at_night_waits_for_the_morning() {
    // Working hours 09:00-17:00: a request at a (uniform in the first hour) is decided at
    // 9 h + d, in time when d < 1 h + a: 1 - E[exp(-(1 + a))] = 1 - exp(-1) (1 - exp(-1)).
    let office = ", working_hours = { start_h = 9, end_h = 17 }";
    let reps = replicate(&model(&night_shift(office)), 0);
    let in_time = 1.0 - (-1.0_f64).exp() * (1.0 - (-1.0_f64).exp());
    assert_in_ci("approved by the deadline", &metric(&shares(&reps, "outcome_total.succeeded"), "share"), in_time, 2);
    // Nobody decides before 09:00: the quickest decision waited at least 8 hours.
    for r in &reps {
        assert!(r["approval_wait_ms.p50"] > 8.0 * 3.6e6, "{}", r["approval_wait_ms.p50"]);
    }
    // The same desk at any hour: 1 - exp(-10) of requests are decided within the 10 h.
    let any_hour = replicate(&model(&night_shift("")), 0);
    let approved = metric(&shares(&any_hour, "outcome_total.succeeded"), "share");
    assert!(approved.mean > 0.999, "{approved:?}");
    assert_in_ci("decision wait at any hour", &metric(&any_hour, "approval_wait_ms.mean"), 3.6e6, 2);
    // Virtual time 0 on a Saturday: nobody decides before Monday 09:00, 57 hours on.
    let weekend = ", working_hours = { start_h = 9, end_h = 17, days = [\"mon\", \"tue\", \"wed\", \"thu\", \"fri\"], week_hour_at_start = 120 }";
    for r in replicate(&model(&night_shift(weekend)), 0) {
        assert_eq!(r["outcome_total.awaiting_approval"], r["logical_run_total"]);
    }
}

#[test]
fn approvers_queue_as_m_m_c() {
    // Two approvers, requests at 0.25/s, 6 s to decide: a = 1.5, Erlang C 0.643, mean wait in
    // the queue 7.71 s, so a request waits 13.7 s for its decision (6 s with unlimited people).
    let (c, lambda, mean_s) = (2, 0.25, 6.0);
    let sim = "duration_s = 60000\nwarmup_s = 1000\nseed = 3\nreplications = 20";
    let desk = format!(
        r#"decision_time = {{ dist = "exponential", mean_ms = {} }}, approvers = {c}, expires_after_s = 1000000"#,
        mean_s * 1e3
    );
    let reps = replicate(&model(&approval_scenario(sim, lambda, 1e9, &desk)), 0);
    let sojourn_ms = 1e3 * (mean_s + mmc_wq(c, lambda, 1.0 / mean_s));
    assert_in_ci("M/M/2 approval wait", &metric(&reps, "approval_wait_ms.mean"), sojourn_ms, 1);
}

/// A hard step of exactly 1 s beside a step at `estimator` (exponential, mean 400 ms, errors
/// with probability 0.2) of the given criticality.
fn advisory_scenario(criticality: &str) -> String {
    let window = if criticality == "advisory" { "advisory_wait_ms = 500" } else { "" };
    format!(
        r#"
[simulation]
duration_s = 500
warmup_s = 0
seed = 21
replications = 8

[[dependency]]
name = "answerer"
servers = 1000
service_time = {{ dist = "constant", value_ms = 1000 }}

[[dependency]]
name = "estimator"
servers = 1000
service_time = {{ dist = "exponential", mean_ms = 400 }}
errors = {{ transient_transport = 0.2 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 20 }}
deadline_ms = 60000

  [[workflow.step]]
  id = "answer"
  dependency = "answerer"

  [[workflow.step]]
  id = "cost_estimate"
  dependency = "estimator"
  criticality = "{criticality}"
  {window}

[policy.p]
retry = {{ max_attempts = 3 }}
"#
    )
}

#[test]
fn an_advisory_step_is_left_out_in_the_share_its_window_predicts_without_delaying_the_run() {
    // Used when it answers without error within 500 ms: 0.8 (1 - exp(-500/400)).
    let reps = replicate(&model(&advisory_scenario("advisory")), 0);
    let used = 0.8 * (1.0 - (-500.0_f64 / 400.0).exp());
    assert_in_ci("advisory omitted", &metric(&reps, "advisory_omitted_ratio"), 1.0 - used, 2);
    for r in &reps {
        // The hard step alone sets the latency; nothing is degraded or retried.
        assert_eq!(r["run_latency_ms.max"], 1000.0);
        assert_eq!(r["outcome_total.succeeded"], r["logical_run_total"], "an omitted advisory is a notice");
        assert_eq!(r["dependency.estimator.attempt_total"], r["logical_run_total"], "one attempt each");
    }
    // The same step as soft: retried up to 3 times, omitted only when all fail (0.2^3), the
    // answer then degraded; the run waits for it: latency 1000 + E[(X - 1000)+] and more.
    let soft = replicate(&model(&advisory_scenario("soft")), 0);
    let degraded = shares(&soft, "outcome_total.degraded");
    assert_in_ci("soft omitted", &metric(&degraded, "share"), 0.2_f64.powi(3), 2);
    assert!(soft.iter().all(|r| !r.contains_key("advisory_omitted_total")), "no advisory step, no advisory metrics");
    let soft_latency = metric(&soft, "run_latency_ms.mean");
    assert!(soft_latency.low > 1000.0 + 400.0 * (-2.5_f64).exp(), "{soft_latency:?}");
    assert!(soft.iter().all(|r| r["run_latency_ms.max"] > 2000.0));
}

fn validate(toml: &str) -> (i32, String) {
    let dir = std::env::temp_dir().join(format!("faultline-approval-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("s{}.toml", toml.len()));
    std::fs::write(&path, toml).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_faultline")).arg("validate").arg(&path).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn bad_approval_and_advisory_fields_are_located_errors() {
    let desk = r#"decision_time = { dist = "exponential", mean_ms = 1000 }, expires_after_s = 60"#;
    let base = approval_scenario(SIM, 1.0, 1000.0, desk);
    let step = "dependency = \"change-board\"\n";
    let with = |extra: &str| base.replace(step, &format!("{step}  {extra}\n"));
    let desk_with = |extra: &str| base.replace("expires_after_s = 60", &format!("expires_after_s = 60, {extra}"));
    let advisory = advisory_scenario("advisory");
    let agent = "[[dependency]]\nname = \"agent\"\nservice_time = { dist = \"constant\", value_ms = 1 }\ncalls = [{ dependency = \"change-board\", timeout_ms = 100 }]\n\n[policy.p]";
    let cases = [
        (base.replace("expires_after_s = 60", "expires_after_s = 0"), ":10:72", "approval.expires_after_s", "> 0"),
        (with("effect = \"write\""), ":20:3", "step[0].effect", "not a write"),
        (with("criticality = \"soft\""), ":20:3", "step[0].criticality", "cannot be left out"),
        (with("fallback = \"change-board\""), ":20:3", "step[0].fallback", "nobody's fallback"),
        (desk_with("approved_share = 1.5"), ":10:94", "approval.approved_share", "[0, 1]"),
        (desk_with("working_hours = { start_h = 17, end_h = 9 }"), ":10:126", "working_hours.end_h", "before end_h"),
        (
            desk_with("working_hours = { start_h = 9, end_h = 17, days = [\"mon\", \"funday\"] }"),
            ":10:152",
            "working_hours.days[1]",
            "unknown day",
        ),
        (base.replace("[policy.p]", agent), ":24:12", "dependency[1].calls[0].dependency", "only a workflow step"),
        (advisory.replace("advisory_wait_ms = 500", ""), ":28:3", "step[1]", "needs `advisory_wait_ms`"),
        (advisory.replace("advisory_wait_ms = 500", "advisory_wait_ms = -1"), ":32:3", "advisory_wait_ms", "> 0"),
        (
            advisory_scenario("soft").replace("criticality = \"soft\"", "advisory_wait_ms = 5"),
            ":31:3",
            "advisory_wait_ms",
            "applies only",
        ),
        (
            advisory.replace("advisory_wait_ms = 500", "advisory_wait_ms = 500\n  effect = \"write\""),
            ":33:3",
            "step[1].effect",
            "reference only",
        ),
    ];
    for (toml, at, field, says) in cases {
        let (code, err) = validate(&toml);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(at) && err.contains(field) && err.contains(says), "{at} {field} {says}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// The approval scenario with a machine step `check` at `tool` after the approval, and `extra`
/// appended.
fn with_machine_step(extra: &str) -> String {
    let desk = r#"decision_time = { dist = "constant", value_ms = 100 }, expires_after_s = 1000"#;
    let base = approval_scenario(SIM, 1.0, 10000.0, desk);
    let tool = "[[dependency]]\nname = \"tool\"\nservice_time = { dist = \"constant\", value_ms = 10 }\n\n[[workflow]]";
    let step =
        "\n  [[workflow.step]]\n  id = \"check\"\n  dependency = \"tool\"\n  after = [\"approve\"]\n\n[policy.p]";
    format!("{}\n{extra}\n", base.replacen("[[workflow]]", tool, 1).replacen("\n[policy.p]", step, 1))
}

#[test]
fn a_policys_fallback_and_a_fault_cannot_name_an_approval_desk() {
    // Before: the policy's fallback was accepted and the desk answered machine attempts in
    // 0 ms; the faults were accepted and did nothing.
    let (code, err) = validate(&with_machine_step(""));
    assert_eq!(code, 0, "{err}");
    let down = "[[fault]]\nkind = \"down\"\ntarget = \"change-board\"\nstart_s = 0\nduration_s = 100";
    let looping = down.replace("\"down\"", "\"delegation_loop\"") + "\ntimeout_ms = 100";
    let cases = [
        ("[policy.p.steps.check]\nfallback = \"change-board\"", "policy.p.steps.check.fallback", "nobody's fallback"),
        (
            "[policy.p.steps.check]\nfallbacks = [{ dependency = \"change-board\" }]",
            "policy.p.steps.check.fallbacks[0].dependency",
            "nobody's fallback",
        ),
        (down, "fault[0].target", "approval desk"),
        (&looping, "fault[0].target", "approval desk"),
    ];
    for (extra, field, says) in cases {
        let (code, err) = validate(&with_machine_step(extra));
        assert_eq!(code, 2, "{extra}: {err}");
        assert!(err.contains(field) && err.contains(says), "{field} {says}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn an_approval_pending_at_the_deadline_beside_an_unfinished_hard_step_fails_the_run_under_every_policy() {
    // A 10 s hard step beside a 1 h decision, a 5 s deadline. Before: `failed` with the
    // request in no verdict under propagation, `awaiting_approval` and no deadline miss
    // without it (while the hard step still ran).
    let toml = r#"
[simulation]
duration_s = 100
warmup_s = 0
seed = 3
replications = 1
drain_limit_s = 100000

[[dependency]]
name = "slow"
servers = 1000
service_time = { dist = "constant", value_ms = 10000 }

[[dependency]]
name = "board"
approval = { decision_time = { dist = "constant", value_ms = 3600000 }, expires_after_s = 100000 }

[[workflow]]
name = "par"
arrivals = { rate_per_s = 1 }
deadline_ms = 5000
  [[workflow.step]]
  id = "slowstep"
  dependency = "slow"
  [[workflow.step]]
  id = "approve"
  dependency = "board"

[policy.prop]
timeout_ms = 100000

[policy.noprop]
timeout_ms = 100000
deadline_propagation = false
"#;
    let m = model(toml);
    for policy in ["prop", "noprop"] {
        let r = faultline::engine::simulate(&m, m.policy_index(policy).unwrap(), 1).unwrap().metrics;
        let runs = r["logical_run_total"];
        let get = |k: &str| r.get(k).copied().unwrap_or(0.0);
        assert_eq!(get("outcome_total.failed"), runs, "{policy}");
        assert_eq!(get("outcome_total.awaiting_approval"), 0.0, "{policy}");
        assert_eq!(r["deadline_exceeded_ratio"], 1.0, "{policy}");
        assert_eq!(r["run_latency_ms.max"], 5000.0, "{policy}");
        assert_eq!(get("approval_total.pending_at_deadline"), r["approval_requested_total"], "{policy}");
    }
}

#[test]
fn admission_predicts_an_approval_step_as_its_mean_decision_time() {
    // A 1 h decision against a 15 min deadline. Before: predicted 0 ms, every run admitted.
    let desk = r#"decision_time = { dist = "constant", value_ms = 3600000 }, expires_after_s = 100000"#;
    let base = approval_scenario(SIM, 1.0, 900_000.0, desk);
    let reject = base.replace("[policy.p]", "[policy.p]\nadmission = { on_insufficient = \"reject\" }");
    let m = model(&reject);
    let r = faultline::engine::simulate(&m, 0, 1).unwrap().metrics;
    assert_eq!(r["outcome_total.rejected"], r["logical_run_total"]);
    // A decision that fits is admitted.
    let fits = reject.replace("value_ms = 3600000", "value_ms = 60000");
    let m = model(&fits);
    let r = faultline::engine::simulate(&m, 0, 1).unwrap().metrics;
    assert_eq!(r.get("outcome_total.rejected").copied().unwrap_or(0.0), 0.0);
}

#[test]
fn a_mode_cannot_omit_an_advisory_step_and_says_why() {
    // Before: "step cost_estimate is hard", of an advisory step.
    let rule = "[[policy.p.runtime_policy]]\nmode = \"degraded\"\nwhen = { dependency = \"estimator\", queue_depth_below = 1000000 }\nactions = { omit_steps = [\"cost_estimate\"] }\n";
    let (code, err) = validate(&format!("{}\n{rule}", advisory_scenario("advisory")));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("omit_steps[0]") && err.contains("is advisory") && !err.contains("is hard"), "{err}");
}

#[test]
fn a_run_awaiting_approval_is_not_resubmitted_and_replay_finds_each_approval_outcome() {
    // A 6 s machine step, then an approval, under a 5 s deadline without propagation: every
    // run reaches the desk late and is still waiting at its end (awaiting_approval, late).
    // With resubmit = 1 the user used to ask again: a second request to people who still had
    // the first (before: 416 runs and 817 requests for 208 arrivals in review apR.toml).
    let toml = approval_scenario(
        "duration_s = 200\nwarmup_s = 0\nseed = 3\nreplications = 1\ndrain_limit_s = 100000",
        1.0,
        5000.0,
        "decision_time = { dist = \"constant\", value_ms = 3600000 }, expires_after_s = 100000",
    )
    .replace("arrivals = { rate_per_s = 1.0 }", "arrivals = { rate_per_s = 1.0 }\nresubmit = { probability = 1, delay_ms = 1000 }")
    .replace(
        "[[workflow.step]]\n  id = \"approve\"",
        "[[workflow.step]]\n  id = \"pre\"\n  dependency = \"pre\"\n  [[workflow.step]]\n  id = \"approve\"\n  after = [\"pre\"]",
    )
    .replace(
        "[[workflow]]",
        "[[dependency]]\nname = \"pre\"\nservers = 1000\nservice_time = { dist = \"constant\", value_ms = 6000 }\n\n[[workflow]]",
    )
    .replace("retry = { max_attempts = 3 }", "retry = { max_attempts = 3 }\ndeadline_propagation = false");
    let m = &replicate(&model(&toml), 0)[0];
    assert!(m["outcome_total.awaiting_approval"] > 150.0, "{}", m["outcome_total.awaiting_approval"]);
    assert_eq!(m["outcome_total.awaiting_approval"], m["logical_run_total"]);
    assert_eq!(m["resubmitted_run_total"], 0.0);
    assert_eq!(m["approval_requested_total"], m["logical_run_total"]);
    // replay --first names the approval outcomes.
    let dir = std::env::temp_dir().join(format!("faultline-approval-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("late.toml");
    std::fs::write(&path, &toml).unwrap();
    let replay = |first: &str| {
        Command::new(env!("CARGO_BIN_EXE_faultline"))
            .args(["replay", path.to_str().unwrap(), "-p", "p", "--first", first, "-o"])
            .arg(dir.join(format!("{first}.json")))
            .output()
            .unwrap()
    };
    let out = replay("awaiting-approval");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("was still awaiting approval at its deadline"), "{stdout}");
    let out = replay("approval-refused");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--first approval-refused`: none of"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn settings_an_approval_or_advisory_step_ignores_are_warned_where_they_stand() {
    // Before: validate said only "ok" and the runs were those of the file without them.
    let shipped =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/approval-change-request.toml"))
            .unwrap();
    let toml = format!(
        "{shipped}\n[policy.naive.steps.approve]\ntimeout_ms = 5\nmax_attempts = 9\nvalidator = {{ check = \"schema\", detects = {{ schema_violation = 0.5 }} }}\n\n[policy.naive.steps.cost_estimate]\nfallback = \"risk-policy\"\ntimeout_ms = 200\n"
    );
    let dir = std::env::temp_dir().join(format!("faultline-approval-ignored-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ignored.toml");
    std::fs::write(&path, &toml).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_faultline")).arg("validate").arg(&path).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let warnings: Vec<&str> = stdout.lines().filter(|l| l.starts_with("warning: ")).collect();
    assert_eq!(warnings.len(), 4, "{stdout}");
    assert!(warnings[0].contains("policy.naive.steps.approve.timeout_ms") && warnings[0].contains("approval desk"));
    assert!(warnings[1].contains("policy.naive.steps.approve.max_attempts"));
    // Review recheck N6: a validator on an approval step never runs (a person's verdict is no answer).
    assert!(warnings[2].contains("policy.naive.steps.approve.validator"), "{stdout}");
    // An advisory step's timeout is its own attempt's and does act: no warning for it.
    assert!(warnings[3].contains("policy.naive.steps.cost_estimate.fallback") && warnings[3].contains("advisory"));
    // Each names its line in the file.
    assert!(warnings.iter().all(|w| w.contains("ignored.toml:")), "{stdout}");
    // The shipped file has none.
    let out = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["validate", concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/approval-change-request.toml")])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("warning"));
}

#[test]
fn a_friday_evening_request_waits_for_monday_and_its_percentiles_say_so() {
    // A request at Friday 16:59 with a 2 h decision under 09-17 Mon-Fri is decided Monday
    // 10:59: 66 h = 237,600,000 ms. Before, the percentiles saturated at 27.7 h and read
    // 100,059,316 ms, below every sample; now they resolve the wait (HDR, 3 digits).
    let toml = approval_scenario(
        "duration_s = 1\nwarmup_s = 0\nseed = 1\nreplications = 2\ndrain_limit_s = 300000",
        5.0,
        400_000_000.0,
        "decision_time = { dist = \"constant\", value_ms = 7200000 }, expires_after_s = 1000000, working_hours = { start_h = 9, end_h = 17, week_hour_at_start = 112.98333333333333 }",
    );
    for m in &replicate(&model(&toml), 0) {
        assert_eq!(m["approval_wait_ms.max"], 237_600_000.0);
        for p in ["approval_wait_ms.p50", "approval_wait_ms.p95", "run_latency_ms.p50", "run_latency_ms.p99"] {
            let rel = (m[p] - 237_600_000.0) / 237_600_000.0;
            assert!((0.0..1e-3).contains(&rel), "{p} = {}", m[p]);
        }
    }
}
