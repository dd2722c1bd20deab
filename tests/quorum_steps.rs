//! k-of-n quorum steps (docs/scenario.md 6.2, docs/essay.md section 22), shown from outside:
//! scenario runs whose figures match the closed forms of runtime::quorum within the
//! replications' confidence intervals. Failed branches (errors), wrong ones (a bad-result fault
//! at the dependency), a shared cause that makes the sharing branches wrong together, the early
//! tally's branches sent and cancelled, three models as three branches, and the bytes of a run
//! under any thread count.

mod common;

use common::{assert_in_ci, metric, model, replicate};
use faultline::engine::simulate;
use faultline::experiment::batch::replication_seed;
use faultline::metrics::MetricMap;
use faultline::runtime::quorum::{BranchOdds, QuorumSpec, expected_branches, outcome_shares};
use std::process::Command;

/// One workflow whose one step is a quorum `quorum` (the inside of its table) over `model`,
/// which fails a share `error` of its attempts; `extra` goes after the dependencies (faults,
/// more models). 20 runs a second for 500 s, 8 replications.
fn scenario(error: f64, quorum: &str, extra: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 500
warmup_s = 0
seed = 31
replications = 8

[[dependency]]
name = "model"
kind = "model"
servers = 100000
queue_capacity = 100000
service_time = {{ dist = "exponential", mean_ms = 100 }}
errors = {{ transient_transport = {error} }}
{extra}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 20 }}
deadline_ms = 600000

  [[workflow.step]]
  id = "vote"
  dependency = "model"
  quorum = {{ {quorum} }}

[policy.p]
timeout_ms = 0
retry = {{ max_attempts = 1 }}
"#
    )
}

/// Each replication's `name` over its decided quorums, as a metric of its own.
fn per_quorum(reps: &[MetricMap], name: &str) -> Vec<MetricMap> {
    reps.iter()
        .map(|m| {
            let decided: f64 =
                ["met", "not_met", "wrong_agreement"].iter().map(|v| m[&format!("quorum_total.{v}")]).sum();
            let mut m = m.clone();
            m.insert("share".into(), m[name] / decided);
            m
        })
        .collect()
}

fn each(reps: &[MetricMap], name: &str) -> Vec<f64> {
    reps.iter().map(|m| *m.get(name).unwrap_or_else(|| panic!("no metric {name}"))).collect()
}

#[test]
fn two_of_three_with_failing_branches_fails_3q2_minus_2q3() {
    // Each branch fails (an error, no answer) with q = 0.1: the quorum is not met when two or
    // three fail, 3q^2 - 2q^3 = 0.028, against 0.1 for one call.
    let q = 0.1;
    let reps = replicate(&model(&scenario(q, "k = 2, n = 3", "")), 0);
    let shares = outcome_shares(3, 2, BranchOdds { right: 1.0 - q, wrong: 0.0 }, 0.0);
    assert!((shares.not_met - 0.028).abs() < 1e-12);
    assert_in_ci("not met", &metric(&reps, "quorum_ratio.not_met"), shares.not_met, 3);
    assert_in_ci("met", &metric(&reps, "quorum_ratio.met"), shares.met, 3);
    // A quorum not met gives its hard step up: the run fails, one for one.
    assert_eq!(each(&reps, "outcome_total.failed"), each(&reps, "quorum_total.not_met"));
    assert!(each(&reps, "quorum_total.wrong_agreement").iter().all(|&v| v == 0.0), "no cause, no wrong answer");
    let failed_share: Vec<MetricMap> = per_quorum(&reps, "outcome_total.failed");
    assert_in_ci("runs failed", &metric(&failed_share, "share"), 0.028, 3);
}

#[test]
fn a_shared_cause_makes_the_branches_agree_on_its_error() {
    // The same quorum, and one run in 20 (s = 0.05) a shared input is bad: every branch that
    // answers answers wrong, and two answers agree. Not right: s + (1 - s)(3q^2 - 2q^3) =
    // 0.0766, of which wrong agreements s x P(two or more answer) = 0.0486.
    let (q, s) = (0.1, 0.05);
    let reps = replicate(&model(&scenario(q, "k = 2, n = 3, shared_cause_probability = 0.05", "")), 0);
    let shares = outcome_shares(3, 2, BranchOdds { right: 1.0 - q, wrong: 0.0 }, s);
    assert!((shares.not_met + shares.wrong_agreement - 0.0766).abs() < 1e-12);
    let not_right: Vec<MetricMap> = reps
        .iter()
        .map(|m| {
            let mut m = m.clone();
            m.insert("not_right".into(), m["quorum_ratio.not_met"] + m["quorum_ratio.wrong_agreement"]);
            m
        })
        .collect();
    assert_in_ci("not right", &metric(&not_right, "not_right"), 0.0766, 3);
    assert_in_ci("wrong agreement", &metric(&reps, "quorum_ratio.wrong_agreement"), shares.wrong_agreement, 3);
    assert_in_ci("met", &metric(&reps, "quorum_ratio.met"), shares.met, 3);
    // A wrong agreement is a success to the runtime: the run's answer rests on a bad result
    // nobody caught (the bad-result accounting, docs/metrics.md 2.18), once per such quorum.
    assert_eq!(each(&reps, "run_on_undetected_bad_result_total"), each(&reps, "quorum_total.wrong_agreement"));
    let succeeded: Vec<f64> = reps.iter().map(|m| m["outcome_total.succeeded"]).collect();
    let agreed: Vec<f64> = reps.iter().map(|m| m["quorum_total.met"] + m["quorum_total.wrong_agreement"]).collect();
    assert_eq!(succeeded, agreed);
}

#[test]
fn a_certain_answer_is_wrong_exactly_as_often_as_the_shared_cause() {
    // Branches that never fail: every quorum agrees, wrongly in a share s of runs.
    let s = 0.2;
    let reps = replicate(&model(&scenario(0.0, "k = 2, n = 3, shared_cause_probability = 0.2", "")), 0);
    assert_in_ci("wrong agreement", &metric(&reps, "quorum_ratio.wrong_agreement"), s, 2);
    assert_in_ci("run on bad result", &metric(&reps, "run_on_undetected_bad_result_ratio"), s, 2);
    assert!(each(&reps, "quorum_total.not_met").iter().all(|&v| v == 0.0));
    // One branch in three outside the cause (its own retrieval): the two sharing still agree.
    let two = replicate(
        &model(&scenario(0.0, "k = 2, n = 3, shared_cause_probability = 0.2, shared_cause_branches = [0, 1]", "")),
        0,
    );
    assert_eq!(each(&two, "quorum_total.wrong_agreement"), each(&reps, "quorum_total.wrong_agreement"));
    // Only one sharing: it is outvoted every time.
    let one = replicate(
        &model(&scenario(0.0, "k = 2, n = 3, shared_cause_probability = 0.2, shared_cause_branches = [2]", "")),
        0,
    );
    assert!(each(&one, "quorum_total.wrong_agreement").iter().all(|&v| v == 0.0));
    assert_eq!(each(&one, "quorum_total.met"), each(&one, "logical_run_total"));
}

#[test]
fn independent_wrong_answers_follow_the_dependencys_own_bad_results() {
    // A schema_violation fault of toxicity 0.1 over the whole run: each branch is wrong on its
    // own with q = 0.1 (the dependency's own error model), and with the shared cause s the
    // quorum agrees wrongly with quorum.rs's P = s + (1 - s)(3q^2(1 - q) + q^3).
    let fault = r#"
[[fault]]
kind = "schema_violation"
target = "model"
start_s = 0
duration_s = 100000
toxicity = 0.1
"#;
    for s in [0.0, 0.05] {
        let quorum = format!("k = 2, n = 3, shared_cause_probability = {s}");
        let reps = replicate(&model(&scenario(0.0, &quorum, fault)), 0);
        let p = QuorumSpec { n: 3, k: 2, wrong: 0.1, shared: s }.p_agreed_wrong();
        assert_in_ci(&format!("wrong agreement at s = {s}"), &metric(&reps, "quorum_ratio.wrong_agreement"), p, 2);
        // Every bad answer a branch received is counted, the cancelled ones' excepted.
        assert!(each(&reps, "bad_result_total.schema_violation").iter().all(|&v| v > 0.0));
    }
}

#[test]
fn the_early_tally_cancels_what_it_no_longer_needs_and_as_needed_sends_less() {
    // 2-of-3 at q = 0.1. All at once: 3 branches per quorum, the third cancelled when the
    // first two decide (both right, or both failed): 0.81 + 0.01. As needed: 2 at first, the
    // third only when the first two do not agree: 3 - 0.81 = 2.19 sent.
    let q = 0.1;
    let odds = BranchOdds { right: 1.0 - q, wrong: 0.0 };
    let all = replicate(&model(&scenario(q, "k = 2, n = 3", "")), 0);
    let needed = replicate(&model(&scenario(q, "k = 2, n = 3, send = \"as_needed\"", "")), 0);
    let (all_sent, all_heard) = expected_branches(3, 2, odds, 0.0, false);
    let (needed_sent, needed_heard) = expected_branches(3, 2, odds, 0.0, true);
    assert_eq!((all_sent, (needed_sent * 100.0).round()), (3.0, 219.0));
    let sent = per_quorum(&all, "quorum_branch_sent_total");
    assert!(each(&sent, "share").iter().all(|&v| v == 3.0), "every branch goes out at once");
    assert_in_ci(
        "cancelled, all",
        &metric(&per_quorum(&all, "quorum_branch_cancelled_total"), "share"),
        3.0 - all_heard,
        4,
    );
    assert_in_ci("sent, as needed", &metric(&per_quorum(&needed, "quorum_branch_sent_total"), "share"), needed_sent, 4);
    assert_in_ci(
        "cancelled, as needed",
        &metric(&per_quorum(&needed, "quorum_branch_cancelled_total"), "share"),
        needed_sent - needed_heard,
        4,
    );
    // The same decisions either way: sending as needed changes what is sent, not the outcome.
    assert_in_ci("not met, as needed", &metric(&needed, "quorum_ratio.not_met"), 0.028, 1);
    // Cancelled branches still cost what they spent: every branch sent is an attempt.
    assert_eq!(each(&all, "dependency_attempt_total"), each(&all, "quorum_branch_sent_total"));
    assert_eq!(each(&needed, "dependency_attempt_total"), each(&needed, "quorum_branch_sent_total"));
}

#[test]
fn three_models_are_three_branches() {
    // One branch each at three models; the third fails a fifth of its calls. 2-of-3 is met
    // unless two fail: only the third can, so never; every model is asked once per run.
    let extra = r#"
[[dependency]]
name = "model-b"
kind = "model"
servers = 100000
service_time = { dist = "exponential", mean_ms = 100 }

[[dependency]]
name = "model-c"
kind = "model"
servers = 100000
service_time = { dist = "exponential", mean_ms = 100 }
errors = { transient_transport = 0.2 }
"#;
    let reps = replicate(&model(&scenario(0.0, r#"k = 2, dependencies = ["model", "model-b", "model-c"]"#, extra)), 0);
    let runs = each(&reps, "logical_run_total");
    assert_eq!(each(&reps, "quorum_total.met"), runs);
    for d in ["model", "model-b", "model-c"] {
        assert_eq!(each(&reps, &format!("dependency.{d}.attempt_total")), runs, "{d}: one branch a run");
    }
    // A quorum decided on two answers cancels the third: at least the runs where model-c failed.
    assert!(each(&reps, "quorum_branch_cancelled_total").iter().zip(&runs).all(|(c, r)| *c > 0.2 * r));
}

#[test]
fn a_quorum_run_is_the_same_bytes_under_any_thread_count() {
    let dir = std::env::temp_dir().join(format!("faultline-quorum-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("q.toml");
    let text = scenario(0.1, "k = 2, n = 3, shared_cause_probability = 0.05, send = \"as_needed\"", "")
        .replace("duration_s = 500", "duration_s = 100");
    std::fs::write(&file, text).unwrap();
    let run = |jobs: &str, out: &str| {
        let out = dir.join(out);
        let o = Command::new(env!("CARGO_BIN_EXE_faultline"))
            .args(["run", file.to_str().unwrap(), "--jobs", jobs, "--out", out.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        // The report's summary shows the verdicts the headline shows (review31-quorum L3).
        let report = std::fs::read_to_string(out.join("report.html")).unwrap();
        for row in ["<tr><td>quorum_ratio.not_met</td>", "<tr><td>quorum_ratio.wrong_agreement</td>"] {
            assert!(report.contains(row), "report.html lacks {row}");
        }
        (String::from_utf8(o.stdout).unwrap(), std::fs::read(out.join("p").join("summary.json")).unwrap())
    };
    let (one_text, one) = run("1", "one");
    let (two_text, two) = run("2", "two");
    assert_eq!(one, two, "summary.json under 1 and 2 threads");
    assert_eq!(one_text.replace("two", "one"), two_text.replace("two", "one"));
    // The terminal's headline shows the quorum's figures where the model has a quorum.
    assert!(
        one_text.contains("quorum_ratio.not_met") && one_text.contains("quorum_ratio.wrong_agreement"),
        "{one_text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The quorum scenario at q = 0.02 for 300 s, its model down from 100 s to 160 s, behind a
/// resilience4j breaker that opens on half its last 50 calls failing and lets 10 trial calls
/// through after 5 s (review31-quorum H3's qbrk10.toml).
fn behind_a_breaker(quorum: &str) -> String {
    let fault = r#"
[[fault]]
kind = "down"
target = "model"
start_s = 100
duration_s = 60
"#;
    let breaker = r#"
[[policy.p.circuit_breaker]]
minimum_number_of_calls = 20
sliding_window_size = 50
wait_duration_in_open_state_ms = 5000
permitted_number_of_calls_in_half_open_state = 10
"#;
    scenario(0.02, quorum, fault)
        .replace("duration_s = 500", "duration_s = 300")
        .replace("replications = 8", "replications = 4")
        + breaker
}

#[test]
fn a_quorum_lets_a_half_open_breakers_trial_call_finish_so_the_breaker_closes_after_the_fault() {
    // Half-open, the breaker admits one branch of three and refuses two: the two refusals
    // decide the quorum not met at once. Cancelled, the admitted branch (the breaker's trial
    // call) would give its permit back unjudged, so no trial call would ever be judged and
    // the breaker would stay half-open to the end, refusing two branches of every run (before
    // the fix: no closing, ~194 s of 300 half-open, 1187 attempts for ~1200 runs in each
    // minute after 180 s, 3952 quorums of ~5970 not met). Left to finish, the trial calls are
    // judged, the breaker closes once the model is back, and from then on every branch of
    // every run goes out.
    let model = model(&behind_a_breaker("k = 2, n = 3"));
    for r in 0..model.world.replications {
        let rep = simulate(&model, 0, replication_seed(model.world.seed, r)).unwrap();
        let m = &rep.metrics;
        assert!(m["breaker.model.transition_total.closed"] >= 1.0, "rep {r}: the breaker closes again");
        assert!(m["breaker.model.time_in_state_s.half_open"] < 10.0, "rep {r}: half-open only while judging");
        assert_eq!(m["recovery_never_total"], 0.0, "rep {r}: recovered");
        // The minutes from 180 s to 300 s (20 s after the fault): three attempts per run.
        let (arrivals, attempts) = (rep.timeseries.fixed_column(0), rep.timeseries.attempts_per_window());
        for w in [3, 4] {
            assert!(arrivals[w] > 1000, "rep {r}, minute {w}: {} runs", arrivals[w]);
            assert_eq!(attempts[w], 3 * arrivals[w], "rep {r}, minute {w}: every branch goes out");
        }
        // A trial call left to finish is neither cancelled nor counted in its quorum's tally:
        // every quorum is still decided once, every run has its verdict.
        let decided: f64 = ["met", "not_met", "wrong_agreement"].iter().map(|v| m[&format!("quorum_total.{v}")]).sum();
        assert_eq!(decided, m["logical_run_total"], "rep {r}");
        assert!(m["quorum_total.not_met"] < 1600.0, "rep {r}: the fault's 60 s of runs and its edges, not 3952");
    }
}

#[test]
fn a_replayed_quorum_shows_its_verdict_on_its_logical_call() {
    // review31-quorum L2: the logical call's span carries `quorum.verdict` and a
    // `quorum.decided` event; the tree names the verdict (before: neither said it).
    let dir = std::env::temp_dir().join(format!("faultline-quorum-replay-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("q.toml");
    std::fs::write(&file, behind_a_breaker("k = 2, n = 3")).unwrap();
    let replay = |run: &str| {
        let out = dir.join(format!("run-{run}.json"));
        let o = Command::new(env!("CARGO_BIN_EXE_faultline"))
            .args(["replay", file.to_str().unwrap(), "-p", "p", "--run", run, "-o", out.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        (String::from_utf8(o.stdout).unwrap(), std::fs::read_to_string(out).unwrap())
    };
    // Run 1 (t ~ 0): the model is up, the quorum met.
    let (tree, otlp) = replay("1");
    assert!(tree.contains("dependency.logical_call vote (quorum met) SUCCEEDED"), "{tree}");
    assert!(otlp.contains("\"quorum.verdict\"") && otlp.contains("\"quorum.decided\""), "{otlp}");
    // Run 3325 (t = 163 s, 3 s after the fault): the half-open breaker refused two branches;
    // the one it admitted, its trial call, is left to finish after the step failed.
    let (tree, otlp) = replay("3325");
    assert!(tree.contains("vote (quorum not_met) FAILED"), "{tree}");
    assert!(tree.contains("dependency.attempt 1 model SUCCESS"), "{tree}");
    let compact: String = otlp.chars().filter(|c| !c.is_whitespace()).collect();
    let left = r#""key":"quorum.trial_calls_left_running","value":{"intValue":"1"}"#;
    assert!(compact.contains(left), "{otlp}");
    std::fs::remove_dir_all(&dir).unwrap();
}
