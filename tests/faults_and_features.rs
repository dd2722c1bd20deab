//! Faults in their time windows, policy features and remote-agent cancellation, end to end.
//! Scenarios are small; where the mechanism makes a count exact (constant service times,
//! probabilities 0 or 1, a thousand servers so nothing queues) the test asserts it exactly, and
//! compares with the same scenario without the mechanism. Common random numbers make the two
//! replications identical outside the fault window, which the time-series checks use.

mod common;
use common::*;
use faultline::engine::{Model, Replication, SimError, simulate, simulate_traced};
use faultline::experiment::batch::replication_seed;
use faultline::metrics::MetricMap;
use faultline::metrics::stats::estimate;
use faultline::metrics::timeseries::{ARRIVALS, COMPLETIONS, FIXED_COLUMNS, GOODPUT};
use faultline::sim::StreamKey;
use faultline::world::tokens::CallTokens;
use faultline::world::{AttemptDraws, attempt_conditions};
use std::ops::RangeInclusive;

// ---------------------------------------------------------------------------------------------
// Scenario builder and time-series helpers
// ---------------------------------------------------------------------------------------------

/// A scenario with one workflow `w`. By default: 300 s, 10 s time-series windows, one
/// dependency `svc` (1000 servers, constant 100 ms), 5 arrivals/s, one read step `call` on
/// `svc`, and a policy `p` that makes a single attempt.
#[derive(Clone)]
struct Scn {
    duration_s: f64,
    seed: u64,
    replications: u32,
    sim: Vec<String>,
    deps: Vec<(String, String)>,
    arrivals: String,
    deadline_ms: f64,
    workflow: Vec<String>,
    steps: String,
    faults: Vec<String>,
    policy: String,
}

const CONSTANT_100: &str = "servers = 1000\nservice_time = { dist = \"constant\", value_ms = 100 }";
const ONE_STEP: &str = "  [[workflow.step]]\n  id = \"call\"\n  dependency = \"svc\"\n";

fn base() -> Scn {
    Scn {
        duration_s: 300.0,
        seed: 3,
        replications: 1,
        sim: vec![],
        deps: vec![("svc".into(), CONSTANT_100.into())],
        arrivals: "rate_per_s = 5".into(),
        deadline_ms: 60_000.0,
        workflow: vec![],
        steps: ONE_STEP.into(),
        faults: vec![],
        policy: "retry = { max_attempts = 1 }".into(),
    }
}

impl Scn {
    fn svc(mut self, body: &str) -> Self {
        self.deps[0].1 = body.into();
        self
    }
    fn dep(mut self, name: &str, body: &str) -> Self {
        self.deps.push((name.into(), body.into()));
        self
    }
    fn rate(mut self, per_s: f64) -> Self {
        self.arrivals = format!("rate_per_s = {per_s}");
        self
    }
    fn sim(mut self, line: &str) -> Self {
        self.sim.push(line.into());
        self
    }
    fn duration(mut self, s: f64) -> Self {
        self.duration_s = s;
        self
    }
    fn replications(mut self, n: u32) -> Self {
        self.replications = n;
        self
    }
    fn policy(mut self, body: &str) -> Self {
        self.policy = body.into();
        self
    }
    /// A fault on `svc` during [start_s, start_s + duration_s); `fields` are its other fields.
    fn fault(mut self, kind: &str, start_s: f64, duration_s: f64, fields: &str) -> Self {
        self.faults.push(format!(
            "[[fault]]\nkind = \"{kind}\"\ntarget = \"svc\"\nstart_s = {start_s}\nduration_s = {duration_s}\n{fields}\n"
        ));
        self
    }
    /// The usual fault window of these tests: 100 s to 200 s of a 300 s run.
    fn window_fault(self, kind: &str, fields: &str) -> Self {
        self.fault(kind, 100.0, 100.0, fields)
    }
    fn toml(&self) -> String {
        let mut t = format!(
            "[simulation]\nduration_s = {}\nseed = {}\nreplications = {}\ntimeseries_window_s = 10\n{}\n\n",
            self.duration_s,
            self.seed,
            self.replications,
            self.sim.join("\n")
        );
        for (name, body) in &self.deps {
            t += &format!("[[dependency]]\nname = \"{name}\"\n{body}\n\n");
        }
        t += &format!(
            "[[workflow]]\nname = \"w\"\narrivals = {{ {} }}\ndeadline_ms = {}\n{}\n\n{}\n",
            self.arrivals,
            self.deadline_ms,
            self.workflow.join("\n"),
            self.steps
        );
        for f in &self.faults {
            t += f;
            t += "\n";
        }
        t += &format!("[policy.p]\n{}\n", self.policy);
        t
    }
    fn model(&self) -> Model {
        model(&self.toml())
    }
    /// Replication 0 with its time series.
    fn run(&self) -> Replication {
        let m = self.model();
        simulate(&m, 0, replication_seed(m.world.seed, 0)).unwrap_or_else(|e| panic!("{e}"))
    }
    fn runs(&self) -> Vec<Replication> {
        let m = self.model();
        (0..m.world.replications)
            .map(|r| simulate(&m, 0, replication_seed(m.world.seed, r)).unwrap_or_else(|e| panic!("{e}")))
            .collect()
    }
    fn metrics(&self) -> MetricMap {
        self.run().metrics
    }
}

/// A time-series cell; rows past the end of the series are 0.
fn cell(r: &Replication, row: usize, column: usize) -> u64 {
    if row < r.timeseries.rows() { r.timeseries.value(row, column) } else { 0 }
}

/// Sum of a column over rows (row k is the window [10 k s, 10 (k + 1) s)).
fn sum(r: &Replication, column: usize, rows: RangeInclusive<usize>) -> f64 {
    rows.map(|row| cell(r, row, column) as f64).sum()
}

/// Column of attempts sent to dependency `d` (in file order).
fn attempts_col(d: usize) -> usize {
    FIXED_COLUMNS.len() + d
}

/// Column of the queue depth of dependency `d`, sampled at the end of each window.
fn depth_col(r: &Replication, d: usize) -> usize {
    let dependencies = (r.timeseries.stride() - FIXED_COLUMNS.len()) / 2;
    FIXED_COLUMNS.len() + dependencies + d
}

/// Every column of the given rows is identical in both replications.
fn assert_rows_equal(a: &Replication, b: &Replication, rows: RangeInclusive<usize>) {
    assert_eq!(a.timeseries.stride(), b.timeseries.stride());
    for row in rows {
        for column in 0..a.timeseries.stride() {
            assert_eq!(cell(a, row, column), cell(b, row, column), "row {row} column {column} differs");
        }
    }
}

fn close(actual: f64, expected: f64, label: &str) {
    assert!((actual - expected).abs() <= 1e-9 * expected.abs().max(1.0), "{label}: got {actual}, expected {expected}");
}

// ---------------------------------------------------------------------------------------------
// 1. Fault kinds, each in its window only
// ---------------------------------------------------------------------------------------------

#[test]
fn a_capacity_fault_of_zero_servers_serves_nothing_during_its_window() {
    // One server, 100 ms of work, 2 arrivals/s, no timeouts: the queue absorbs the window.
    let healthy = base()
        .svc("servers = 1\nservice_time = { dist = \"constant\", value_ms = 100 }")
        .rate(2.0)
        .policy("deadline_propagation = false\ntimeout_ms = 0\nretry = { max_attempts = 1 }");
    let faulty = healthy.clone().window_fault("capacity", "servers = 0");
    let (h, f) = (healthy.run(), faulty.run());
    let depth = depth_col(&f, 0);

    // Before the window nothing differs.
    assert_rows_equal(&h, &f, 0..=9);
    // At most the attempt in service at 100 s finishes in [100 s, 110 s); none after.
    assert!(sum(&f, COMPLETIONS, 10..=10) <= 1.0, "{}", sum(&f, COMPLETIONS, 10..=10));
    assert_eq!(sum(&f, COMPLETIONS, 11..=19), 0.0, "nothing is served while servers = 0");
    assert!(sum(&h, COMPLETIONS, 11..=19) > 100.0, "the healthy run serves about 180 in those windows");
    // Everything that arrived in the window is still waiting at 190 s (plus what waited at 100 s).
    let arrived = sum(&f, ARRIVALS, 10..=18);
    let waiting = cell(&f, 18, depth) as f64;
    assert!(waiting >= arrived && waiting <= arrived + 3.0, "waiting {waiting}, arrived {arrived}");
    assert!(cell(&h, 18, depth) < 5, "healthy depth {}", cell(&h, 18, depth));
    // After the window the backlog is served at 10/s and the queue empties again.
    assert!(sum(&f, COMPLETIONS, 20..=22) > 150.0, "backlog served after 200 s");
    assert_eq!(cell(&f, 28, depth), cell(&h, 28, depth));
    // Every run was served in the end, so the mean queue wait is far longer than without.
    assert_eq!(f.metrics["outcome_total.succeeded"], f.metrics["logical_run_total"]);
    assert!(f.metrics["dependency.svc.queue_wait_ms.mean"] > 10_000.0);
    assert!(h.metrics["dependency.svc.queue_wait_ms.mean"] < 50.0);
}

#[test]
fn a_capacity_cut_makes_the_queue_grow_during_its_window_and_raises_utilization() {
    // 4 servers, 400 ms, 5/s: rho = 0.5; with 1 server the queue grows 2.5/s, and after the
    // window it drains at 5/s, well before 300 s.
    let healthy = base()
        .svc("servers = 4\nservice_time = { dist = \"constant\", value_ms = 400 }")
        .rate(5.0)
        .policy("deadline_propagation = false\ntimeout_ms = 0\nretry = { max_attempts = 1 }");
    let faulty = healthy.clone().window_fault("capacity", "servers = 1");
    let (h, f) = (healthy.run(), faulty.run());
    let depth = depth_col(&f, 0);
    assert_rows_equal(&h, &f, 0..=9);
    assert!(cell(&f, 18, depth) > 100, "queue at 190 s: {}", cell(&f, 18, depth));
    assert!(cell(&h, 18, depth) < 10, "healthy queue at 190 s: {}", cell(&h, 18, depth));
    assert!(cell(&f, 28, depth) < 10, "the backlog drained after the window: {}", cell(&f, 28, depth));
    let (wh, wf) = (h.metrics["dependency.svc.queue_wait_ms.mean"], f.metrics["dependency.svc.queue_wait_ms.mean"]);
    assert!(wf > 10.0 * wh && wf > 1_000.0, "queue wait {wh} -> {wf}");
    // The same work over 900 instead of 1200 server-seconds.
    let (uh, uf) = (h.metrics["dependency.svc.utilization"], f.metrics["dependency.svc.utilization"]);
    assert!((uf / uh - 4.0 / 3.0).abs() < 0.02, "utilization {uh} -> {uf}");
}

/// 20 arrivals/s of 10 ms work, one attempt per run.
fn busy_scenario() -> Scn {
    base().svc("servers = 1000\nservice_time = { dist = \"constant\", value_ms = 10 }").rate(20.0)
}

#[test]
fn a_rate_limit_fault_refuses_the_excess_only_during_its_window() {
    let healthy = busy_scenario();
    let faulty = healthy.clone().window_fault("rate_limit", "per_s = 5");
    let (h, f) = (healthy.run(), faulty.run());
    assert_eq!(h.metrics["dependency.svc.error_total.rate_limited"], 0.0);
    assert_rows_equal(&h, &f, 0..=9);
    assert_rows_equal(&h, &f, 21..=29);

    let limited = f.metrics["dependency.svc.error_total.rate_limited"];
    let sent = sum(&f, attempts_col(0), 10..=19);
    let admitted = sent - limited;
    // 5 tokens a second for 100 s plus a full bucket of 5 (burst defaults to per_s).
    assert!((495.0..=505.0).contains(&admitted), "admitted {admitted} of {sent} in the window");
    assert!(limited > 1_000.0);
    assert_eq!(f.metrics["outcome_total.failed"], limited);
    assert_eq!(f.metrics["queue_rejected_total"], 0.0, "rate-limit refusals are not queue rejections");
    // Served attempts per 10 s window close to 50 inside the window.
    for row in 11..=18 {
        let good = sum(&f, GOODPUT, row..=row);
        assert!((46.0..=54.0).contains(&good), "window {row}: {good} served");
    }
}

#[test]
fn a_dependency_rate_limit_serves_close_to_per_s_and_counts_refusals() {
    let r = busy_scenario().svc(
        "servers = 1000\nservice_time = { dist = \"constant\", value_ms = 10 }\nrate_limit = { per_s = 5, retry_after_ms = 1000 }",
    );
    let f = r.run();
    let m = &f.metrics;
    let limited = m["dependency.svc.error_total.rate_limited"];
    let admitted = m["dependency.svc.attempt_total"] - limited;
    assert!((1_495.0..=1_505.0).contains(&admitted), "admitted {admitted}");
    assert_eq!(m["outcome_total.failed"], limited);
    assert_eq!(m["outcome_total.succeeded"], admitted);
    for row in 1..=28 {
        let good = sum(&f, GOODPUT, row..=row);
        assert!((46.0..=54.0).contains(&good), "window {row}: {good} served");
    }
}

#[test]
fn a_down_fault_refuses_every_attempt_in_its_window_at_once() {
    let healthy = base().rate(10.0);
    let faulty = healthy.clone().window_fault("down", "");
    let (h, f) = (healthy.run(), faulty.run());
    assert_rows_equal(&h, &f, 0..=9);
    assert_rows_equal(&h, &f, 21..=29);
    let in_window = sum(&f, ARRIVALS, 10..=19);
    let m = &f.metrics;
    assert_eq!(m["dependency.svc.error_total.transient_transport"], in_window);
    assert_eq!(m["outcome_total.failed"], in_window);
    assert_eq!(h.metrics["outcome_total.failed"], 0.0);
    // (A run that arrived just before 100 s may still succeed in [100 s, 110 s).)
    assert_eq!(sum(&f, GOODPUT, 11..=19), 0.0);
    // Refused at once: those runs last 0 ms, the others 100 ms.
    let runs = m["logical_run_total"];
    close(m["run_latency_ms.mean"], 100.0 * (runs - in_window) / runs, "mean latency");
    close(m["dependency.svc.sojourn_ms.mean"], 100.0 * (runs - in_window) / runs, "refusals count 0 ms");
    assert_eq!(m["queue_rejected_total"], 0.0, "down refusals are not queue rejections");
}

#[test]
fn an_attempt_refused_by_a_down_fault_takes_no_rate_limit_token() {
    // One token for the whole run. While `svc` is down (0-50 s) every attempt is refused
    // before the rate limit, so the first arrival after 50 s still finds the token.
    let r = quick("rate_limit = { per_s = 0.001, burst = 1 }").fault("down", 0.0, 50.0, "").run();
    let m = &r.metrics;
    let down = sum(&r, ARRIVALS, 0..=4);
    assert!(down > 20.0);
    assert_eq!(m["dependency.svc.error_total.transient_transport"], down);
    assert_eq!(m["outcome_total.succeeded"], 1.0);
    assert_eq!(m["dependency.svc.error_total.rate_limited"], m["logical_run_total"] - down - 1.0);
}

#[test]
fn a_down_fault_with_toxicity_one_half_refuses_about_half() {
    let healthy = base().rate(10.0).replications(8);
    let faulty = healthy.clone().window_fault("down", "toxicity = 0.5");
    let reps = faulty.runs();
    let fraction = estimate(
        reps.iter().map(|r| r.metrics["dependency.svc.error_total.transient_transport"] / sum(r, ARRIVALS, 10..=19)),
    );
    assert_in_ci("refused fraction in the window", &fraction, 0.5, 1);
    // Outside the window nothing is refused: the healthy twin agrees there.
    for (h, f) in healthy.runs().iter().zip(&reps) {
        assert_rows_equal(h, f, 0..=9);
        assert_rows_equal(h, f, 21..=29);
        assert_eq!(h.metrics["dependency.svc.error_total.transient_transport"], 0.0);
    }
}

#[test]
fn an_errors_fault_adds_its_probabilities_to_the_dependencys_own() {
    // Half the attempts fail anyway; the fault adds the other half: nothing succeeds inside.
    let svc = "servers = 1000\nservice_time = { dist = \"constant\", value_ms = 100 }\nerrors = { overloaded = 0.5 }";
    let healthy = base().svc(svc).rate(10.0);
    let faulty = healthy.clone().window_fault("errors", "errors = { overloaded = 0.5 }");
    let (h, f) = (healthy.run(), faulty.run());
    assert_rows_equal(&h, &f, 0..=9);
    assert_rows_equal(&h, &f, 21..=29);
    assert_eq!(sum(&f, GOODPUT, 11..=19), 0.0, "0.5 + 0.5: every attempt fails in the window");
    assert!(sum(&h, GOODPUT, 11..=19) > 300.0, "about half of 900 succeed without the fault");
    let in_window = sum(&f, ARRIVALS, 10..=19);
    let extra = f.metrics["dependency.svc.error_total.overloaded"] - h.metrics["dependency.svc.error_total.overloaded"];
    assert!(extra > 0.35 * in_window && extra < 0.65 * in_window, "{extra} more errors of {in_window}");
}

#[test]
fn an_errors_fault_over_one_gives_the_excess_to_the_earlier_kinds() {
    // 0.7 INVALID_INPUT (fault) + 0.6 OVERLOADED (own) = 1.3: INVALID_INPUT keeps 0.7,
    // OVERLOADED gets the remaining 0.3, and no attempt in the window succeeds.
    let svc = "servers = 1000\nservice_time = { dist = \"constant\", value_ms = 100 }\nerrors = { overloaded = 0.6 }";
    let faulty = base().svc(svc).rate(10.0).replications(6).window_fault("errors", "errors = { invalid_input = 0.7 }");
    let reps = faulty.runs();
    for r in &reps {
        assert_eq!(sum(r, GOODPUT, 11..=19), 0.0);
    }
    let invalid = estimate(
        reps.iter().map(|r| r.metrics["dependency.svc.error_total.invalid_input"] / sum(r, ARRIVALS, 10..=19)),
    );
    assert_in_ci("INVALID_INPUT share in the window", &invalid, 0.7, 1);
}

#[test]
fn a_timeout_or_lost_response_fault_with_toxicity_one_half_silences_about_half() {
    // Each attempt in the window draws once against the fault's toxicity: about half get no
    // reply and end at the caller's 1 s timeout, the others answer in 100 ms.
    for kind in ["timeout", "lost_response"] {
        let reps = base()
            .rate(10.0)
            .replications(8)
            .policy("timeout_ms = 1000\nretry = { max_attempts = 1 }")
            .window_fault(kind, "toxicity = 0.5")
            .runs();
        let silent =
            estimate(reps.iter().map(|r| r.metrics["dependency.svc.timeout_total"] / sum(r, ARRIVALS, 10..=19)));
        assert_in_ci(&format!("{kind}: share of the window's attempts timed out"), &silent, 0.5, 2);
    }
}

/// Mean run latency when runs arriving in [100 s, 200 s) take `inside` ms and the others 100 ms.
fn expected_mean(r: &Replication, inside: f64) -> f64 {
    let runs = r.metrics["logical_run_total"];
    let in_window = sum(r, ARRIVALS, 10..=19);
    (100.0 * (runs - in_window) + inside * in_window) / runs
}

#[test]
fn a_latency_fault_with_a_factor_multiplies_service_in_its_window_only() {
    let healthy = base();
    let f = healthy.clone().window_fault("latency", "factor = 3").run();
    let h = healthy.run();
    assert_rows_equal(&h, &f, 0..=9);
    assert_rows_equal(&h, &f, 21..=29);
    assert_eq!(h.metrics["run_latency_ms.max"], 100.0);
    assert_eq!(f.metrics["run_latency_ms.max"], 300.0);
    close(f.metrics["run_latency_ms.mean"], expected_mean(&f, 300.0), "mean latency");
}

#[test]
fn a_latency_fault_with_latency_ms_adds_a_constant() {
    let f = base().window_fault("latency", "latency_ms = 250").run();
    assert_eq!(f.metrics["run_latency_ms.max"], 350.0);
    close(f.metrics["run_latency_ms.mean"], expected_mean(&f, 350.0), "mean latency");
}

#[test]
fn a_latency_fault_with_a_service_time_replaces_the_distribution() {
    let f = base().window_fault("latency", "service_time = { dist = \"constant\", value_ms = 40 }").run();
    assert_eq!(f.metrics["run_latency_ms.max"], 100.0, "faster inside the window, unchanged outside");
    close(f.metrics["run_latency_ms.mean"], expected_mean(&f, 40.0), "mean latency");
    // Replacement x factor + latency_ms: 40 x 2 + 250.
    let f = base()
        .window_fault("latency", "service_time = { dist = \"constant\", value_ms = 40 }\nfactor = 2\nlatency_ms = 250")
        .run();
    assert_eq!(f.metrics["run_latency_ms.max"], 330.0);
    close(f.metrics["run_latency_ms.mean"], expected_mean(&f, 330.0), "mean latency");
}

#[test]
fn a_latency_fault_with_toxicity_slows_that_share_of_attempts() {
    let reps = base().replications(8).window_fault("latency", "factor = 3\ntoxicity = 0.5").runs();
    for r in &reps {
        assert_eq!(r.metrics["run_latency_ms.max"], 300.0);
    }
    // mean x runs = 100 x runs + 200 x (slowed attempts).
    let share = estimate(reps.iter().map(|r| {
        let runs = r.metrics["logical_run_total"];
        (r.metrics["run_latency_ms.mean"] - 100.0) * runs / 200.0 / sum(r, ARRIVALS, 10..=19)
    }));
    assert_in_ci("slowed share in the window", &share, 0.5, 1);
}

#[test]
fn a_latency_fault_with_jitter_ms_adds_a_uniform_delay() {
    let reps = base().replications(4).window_fault("latency", "jitter_ms = 100").runs();
    for r in &reps {
        let max = r.metrics["run_latency_ms.max"];
        assert!(max > 190.0 && max < 200.0, "100 ms + U[0, 100) ms: max {max}");
    }
    // Mean of the runs that arrived in the window: 100 + 50 ms.
    let inside = estimate(reps.iter().map(|r| {
        let runs = r.metrics["logical_run_total"];
        let in_window = sum(r, ARRIVALS, 10..=19);
        (r.metrics["run_latency_ms.mean"] * runs - 100.0 * (runs - in_window)) / in_window
    }));
    assert_in_ci("mean latency in the window", &inside, 150.0, 1);
}

#[test]
fn an_errors_fault_with_toxicity_one_half_fails_about_half_the_windows_attempts() {
    // The fault's table fails every attempt it touches; its toxicity touches about half.
    let reps =
        base().rate(10.0).replications(8).window_fault("errors", "errors = { overloaded = 1 }\ntoxicity = 0.5").runs();
    let failed =
        estimate(reps.iter().map(|r| r.metrics["dependency.svc.error_total.overloaded"] / sum(r, ARRIVALS, 10..=19)));
    assert_in_ci("failed share of the window's attempts", &failed, 0.5, 1);
}

#[test]
fn a_dependencys_own_hang_probability_silences_that_share_of_its_attempts() {
    // No fault: hang_probability = 0.3 leaves about 3 attempts in 10 unanswered, each ending at
    // the caller's 1 s timeout; the others answer in 100 ms.
    let reps = base()
        .svc(&format!("{CONSTANT_100}\nhang_probability = 0.3"))
        .rate(10.0)
        .replications(8)
        .policy("timeout_ms = 1000\nretry = { max_attempts = 1 }")
        .runs();
    let silent = estimate(
        reps.iter().map(|r| r.metrics["dependency.svc.timeout_total"] / r.metrics["dependency.svc.attempt_total"]),
    );
    assert_in_ci("share of attempts timed out", &silent, 0.3, 1);
}

/// `svc` as a token-shaped model (`extra` goes in its table): each call, 2000 tokens in and 300
/// out, sees its first token after 400 + 2 x 50 = 500 ms and ends after 500 + 300 x 20 = 6500 ms.
fn token_model(extra: &str) -> Scn {
    let svc = format!(
        "kind = \"model\"\nservers = 1000\n{extra}\n\n[dependency.tokens]\n\
         time_to_first_token = {{ dist = \"constant\", value_ms = 400 }}\nttft_ms_per_1k_input_tokens = 50\n\
         time_per_output_token = {{ dist = \"constant\", value_ms = 20 }}"
    );
    let steps = format!(
        "{ONE_STEP}  input_tokens = {{ dist = \"constant\", value = 2000 }}\n  \
         output_tokens = {{ dist = \"constant\", value = 300 }}\n"
    );
    Scn { steps, ..base().svc(&svc).policy("timeout_ms = 300000\nretry = { max_attempts = 1 }") }
}

#[test]
fn a_latency_fault_on_a_token_shaped_call_shapes_its_first_token_as_its_whole_time() {
    // factor 2 and 250 ms more, all run: the first token at 500 x 2 + 250 ms, the end at
    // 6500 x 2 + 250 ms.
    let healthy = token_model("").metrics();
    assert_eq!(healthy["gen_ai.client.time_to_first_chunk_ms.mean"], 500.0);
    assert_eq!(healthy["run_latency_ms.mean"], 6500.0);
    let m = token_model("").fault("latency", 0.0, 1000.0, "factor = 2\nlatency_ms = 250").metrics();
    assert_eq!(m["gen_ai.client.time_to_first_chunk_ms.mean"], 1250.0);
    assert_eq!(m["run_latency_ms.mean"], 13_250.0);
}

#[test]
fn a_status_lookup_at_a_token_shaped_model_keeps_its_own_time_even_handed_tokens() {
    // attempt_conditions called directly: the engine hands a lookup no tokens, so no scenario
    // can show that `lookup` alone keeps a status lookup off the token shape.
    let m = token_model("status_lookup_time = { dist = \"constant\", value_ms = 10 }").model();
    let dep = &m.world.dependencies[0];
    let draws = AttemptDraws::new(StreamKey::root(1));
    let tokens = Some(CallTokens { input: 2000, output: 300, truncated: false });
    let conditions = |lookup: bool| {
        let mut stream = draws.rest();
        let c = attempt_conditions(dep, &m.world.faults, 0, &draws, lookup, tokens, |d| d.sample_ms(&mut stream));
        (c.service_us, c.first_token_us)
    };
    assert_eq!(conditions(true), (10_000, 0), "the lookup's own 10 ms, no first token");
    assert_eq!(conditions(false), (6_500_000, 500_000), "the call's 6500 ms, its first token at 500 ms");
}

#[test]
fn a_slow_stream_faults_draw_is_its_own_not_the_error_draw() {
    // Half the calls fail (errors, 6500 ms) and a slow_stream fault of toxicity 0.5 makes half
    // of them take 500 + 300 x 20 x 3 = 18 500 ms, past the caller's 10 s timeout. Drawn apart,
    // a quarter of the calls are neither failed nor slow and succeed; were the slow draw the
    // error draw, every call that did not fail would be fast and half would succeed.
    let reps = token_model("errors = { overloaded = 0.5 }")
        .replications(8)
        .policy("timeout_ms = 10000\nretry = { max_attempts = 1 }")
        .fault("slow_stream", 0.0, 1000.0, "factor = 3\ntoxicity = 0.5")
        .runs();
    let succeeded =
        estimate(reps.iter().map(|r| r.metrics["outcome_total.succeeded"] / r.metrics["logical_run_total"]));
    assert_in_ci("share of runs that succeed", &succeeded, 0.25, 2);
    let timed_out = estimate(
        reps.iter().map(|r| r.metrics["dependency.svc.timeout_total"] / r.metrics["dependency.svc.attempt_total"]),
    );
    assert_in_ci("share of calls slowed past the timeout", &timed_out, 0.5, 2);
    // Given 20 s, every slowed call ends: 18 500 ms is the longest run and none times out.
    let m = token_model("errors = { overloaded = 0.5 }")
        .policy("timeout_ms = 20000\nretry = { max_attempts = 1 }")
        .fault("slow_stream", 0.0, 1000.0, "factor = 3\ntoxicity = 0.5")
        .metrics();
    assert_eq!(m["run_latency_ms.max"], 18_500.0);
    assert_eq!(m["dependency.svc.timeout_total"], 0.0);
}

// ---------------------------------------------------------------------------------------------
// 2. Policy features
// ---------------------------------------------------------------------------------------------

/// 10 ms of work; `svc_extra` adds dependency fields. 1 arrival/s for 100 s.
fn quick(svc_extra: &str) -> Scn {
    base()
        .svc(&format!("servers = 1000\nservice_time = {{ dist = \"constant\", value_ms = 10 }}\n{svc_extra}"))
        .rate(1.0)
        .duration(100.0)
}

const CONSTANT_300_BACKOFF: &str = "backoff = { kind = \"constant\", base_ms = 300, jitter = \"none\" }";

#[test]
fn honor_retry_after_sleeps_the_retry_after_instead_of_the_backoff() {
    // The bucket holds one token and refills 0.1 token in 100 s: the first run gets it, every
    // other run is refused twice, sleeping in between.
    let limited = "rate_limit = { per_s = 0.001, burst = 1, retry_after_ms = 2000 }";
    let policy =
        |honor: bool| format!("retry = {{ max_attempts = 2, {CONSTANT_300_BACKOFF}, honor_retry_after = {honor} }}");
    for (honor, sleep) in [(true, 2000.0), (false, 300.0)] {
        let m = quick(limited).policy(&policy(honor)).metrics();
        let runs = m["logical_run_total"];
        assert_eq!(m["outcome_total.succeeded"], 1.0);
        assert_eq!(m["dependency.svc.attempt_total"], 2.0 * runs - 1.0);
        assert_eq!(m["dependency.svc.error_total.rate_limited"], 2.0 * (runs - 1.0));
        assert_eq!(m["run_latency_ms.max"], sleep, "honor_retry_after = {honor}");
        close(m["run_latency_ms.mean"], (10.0 + sleep * (runs - 1.0)) / runs, "mean latency");
    }
}

#[test]
fn a_drawn_rate_limited_error_has_no_retry_after_so_the_backoff_applies() {
    let m = quick("errors = { rate_limited = 1.0 }")
        .policy(&format!("retry = {{ max_attempts = 2, {CONSTANT_300_BACKOFF}, honor_retry_after = true }}"))
        .metrics();
    assert_eq!(m["outcome_total.failed"], m["logical_run_total"]);
    assert_eq!(m["run_latency_ms.max"], 320.0, "10 ms, 300 ms backoff, 10 ms");
    assert_eq!(m["run_latency_ms.mean"], 320.0);
}

#[test]
fn a_rate_limit_fault_sends_the_dependencys_retry_after_or_one_second() {
    let policy = format!("retry = {{ max_attempts = 2, {CONSTANT_300_BACKOFF}, honor_retry_after = true }}");
    for (svc_extra, retry_after) in [("", 1000.0), ("rate_limit = { per_s = 1000, retry_after_ms = 2500 }", 2500.0)] {
        let m = quick(svc_extra).policy(&policy).fault("rate_limit", 0.0, 1000.0, "per_s = 0.001\nburst = 1").metrics();
        let (good, failed, runs) = (m["outcome_total.succeeded"], m["outcome_total.failed"], m["logical_run_total"]);
        assert!(good <= 2.0, "{good}");
        assert_eq!(good + failed, runs);
        assert_eq!(m["run_latency_ms.max"], retry_after, "{svc_extra:?}");
        close(m["run_latency_ms.mean"], (10.0 * good + retry_after * failed) / runs, "mean latency");
    }
}

#[test]
fn retry_on_limits_which_kinds_are_retried() {
    let attempts_per_run = |errors: &str, retry_on: &str| {
        let m = quick(&format!("errors = {{ {errors} = 1.0 }}"))
            .policy(&format!("retry = {{ max_attempts = 3, backoff = {{ kind = \"none\" }}{retry_on} }}"))
            .metrics();
        m["dependency.svc.attempt_total"] / m["logical_run_total"]
    };
    assert_eq!(attempts_per_run("overloaded", ""), 3.0, "default set retries OVERLOADED");
    assert_eq!(attempts_per_run("overloaded", ", retry_on = [\"overloaded\"]"), 3.0);
    assert_eq!(attempts_per_run("overloaded", ", retry_on = [\"TRANSIENT_TRANSPORT\"]"), 1.0);
    assert_eq!(attempts_per_run("transient_transport", ", retry_on = [\"OVERLOADED\"]"), 1.0);
    assert_eq!(attempts_per_run("transient_transport", ", retry_on = [\"TRANSIENT_TRANSPORT\"]"), 3.0);
    assert_eq!(attempts_per_run("rate_limited", ", retry_on = []"), 1.0);
}

#[test]
fn jitter_kinds_change_the_sleeps_but_not_the_attempts() {
    // Every attempt fails after 10 ms; 3 attempts with exponential 200 ms / 400 ms caps.
    let scenario = |jitter: &str| {
        base()
            .svc("servers = 1000\nservice_time = { dist = \"constant\", value_ms = 10 }\nerrors = { overloaded = 1.0 }")
            .duration(200.0)
            .replications(6)
            .policy(&format!(
                "retry = {{ max_attempts = 3, backoff = {{ kind = \"exponential\", base_ms = 200, max_ms = 2000, jitter = \"{jitter}\" }} }}"
            ))
    };
    let metrics = |jitter: &str| -> Vec<MetricMap> {
        let reps = replicate(&scenario(jitter).model(), 0);
        for m in &reps {
            assert_eq!(m["dependency.svc.attempt_total"], 3.0 * m["logical_run_total"], "{jitter}");
        }
        reps
    };
    let none = metrics("none");
    for m in &none {
        assert_eq!(m["run_latency_ms.mean"], 630.0);
        assert_eq!(m["run_latency_ms.max"], 630.0);
    }
    // full: 30 + U(0,200) + U(0,400); equal: 30 + U(100,200) + U(200,400);
    // decorrelated: s1 = U(200,600), s2 = 200 + U(0,1) (3 s1 - 200): 30 + 400 + 700.
    for (jitter, theory, below) in [("full", 330.0, 630.0), ("equal", 480.0, 630.0), ("decorrelated", 1130.0, 2430.0)] {
        let reps = metrics(jitter);
        assert_in_ci(&format!("{jitter} jitter mean latency"), &metric(&reps, "run_latency_ms.mean"), theory, 3);
        for m in &reps {
            assert!(m["run_latency_ms.max"] < below, "{jitter}: {}", m["run_latency_ms.max"]);
        }
    }
}

#[test]
fn the_cost_budget_stops_attempts_and_leaves_room_for_a_cheaper_fallback() {
    // Every attempt at `svc` (2 units) fails; `cheap` (1 unit) always works.
    let scenario = |policy: &str| {
        quick("errors = { overloaded = 1.0 }\ncost_units = 2")
            .dep("cheap", "servers = 1000\nservice_time = { dist = \"constant\", value_ms = 10 }\ncost_units = 1")
            .policy(&format!("retry = {{ max_attempts = 5, backoff = {{ kind = \"none\" }} }}\n{policy}"))
            .metrics()
    };
    let m = scenario("");
    let runs = m["logical_run_total"];
    assert_eq!(m["dependency.svc.attempt_total"], 5.0 * runs);
    assert_eq!(m["budget_exhausted_total.cost"], 0.0);

    let m = scenario("budget = { cost_units = 5 }");
    assert_eq!(m["dependency.svc.attempt_total"], 2.0 * runs, "a third attempt would cost 6 > 5");
    assert_eq!(m["budget_exhausted_total.cost"], runs);
    assert_eq!(m["cost_units_total"], 4.0 * runs);
    assert_eq!(m["outcome_total.failed"], runs);

    let m = scenario("budget = { cost_units = 5 }\nsteps.call = { fallback = \"cheap\" }");
    assert_eq!(m["dependency.svc.attempt_total"], 2.0 * runs);
    assert_eq!(m["dependency.cheap.attempt_total"], runs, "4 + 1 fits");
    assert_eq!(m["budget_exhausted_total.cost"], runs);
    assert_eq!(m["fallback_used_total"], runs);
    assert_eq!(m["outcome_total.degraded"], runs);
    assert_eq!(m["cost_units_total"], 5.0 * runs);

    let m = scenario("budget = { cost_units = 4.5 }\nsteps.call = { fallback = \"cheap\" }");
    assert_eq!(m["dependency.cheap.attempt_total"], 0.0, "4 + 1 > 4.5");
    assert_eq!(m["budget_exhausted_total.cost"], 2.0 * runs);
    assert_eq!(m["outcome_total.failed"], runs);
}

#[test]
fn concurrency_tokens_serialise_parallel_steps() {
    let steps =
        ["a", "b", "c"].map(|id| format!("  [[workflow.step]]\n  id = \"{id}\"\n  dependency = \"svc\"\n")).concat();
    let scenario = |policy: &str| {
        let mut s = base().rate(1.0).duration(100.0).policy(policy);
        s.steps = steps.clone();
        s.metrics()
    };
    for (policy, latency, waits) in [
        ("", 100.0, 0.0),
        ("budget = { concurrency_tokens = 3 }", 100.0, 0.0),
        ("budget = { concurrency_tokens = 2 }", 200.0, 1.0),
        ("budget = { concurrency_tokens = 1 }", 300.0, 2.0),
    ] {
        let m = scenario(policy);
        let runs = m["logical_run_total"];
        assert_eq!(m["run_latency_ms.max"], latency, "{policy:?}");
        assert_eq!(m["run_latency_ms.mean"], latency, "{policy:?}");
        assert_eq!(m["budget_exhausted_total.concurrency"], waits * runs, "{policy:?}");
        assert_eq!(m["logical_call_total"], 3.0 * runs);
        assert_eq!(m["outcome_total.succeeded"], runs);
    }
}

#[test]
fn a_resubmitted_run_is_a_new_measured_run() {
    let scenario = |errors: f64, resubmit: &str| {
        let mut s = base()
            .svc(&format!(
                "servers = 1000\nservice_time = {{ dist = \"constant\", value_ms = 100 }}\nerrors = {{ invalid_input = {errors} }}"
            ))
            .rate(2.0)
            .duration(200.0);
        if !resubmit.is_empty() {
            s.workflow.push(format!("resubmit = {{ {resubmit} }}"));
        }
        s.run()
    };
    // Every run fails.
    let plain = scenario(1.0, "");
    let originals = plain.metrics["logical_run_total"];
    assert_eq!(plain.metrics["resubmitted_run_total"], 0.0);
    let once = scenario(1.0, "probability = 1, delay_ms = 1000, max_resubmissions = 1");
    assert_eq!(once.metrics["resubmitted_run_total"], originals);
    assert_eq!(once.metrics["logical_run_total"], 2.0 * originals);
    assert_eq!(once.metrics["outcome_total.failed"], 2.0 * originals);
    assert_eq!(sum(&once, ARRIVALS, 0..=30), 2.0 * originals, "resubmissions are arrivals in the time series");
    let twice = scenario(1.0, "probability = 1, delay_ms = 1000, max_resubmissions = 2");
    assert_eq!(twice.metrics["resubmitted_run_total"], 2.0 * originals);
    assert_eq!(twice.metrics["logical_run_total"], 3.0 * originals);
    let never = scenario(1.0, "probability = 0, delay_ms = 1000");
    assert_eq!(never.metrics["logical_run_total"], originals);
    assert_eq!(never.metrics["resubmitted_run_total"], 0.0);

    // Half fail: the originals see the same draws with and without resubmission, so exactly
    // the runs that failed before are resubmitted.
    let plain = scenario(0.5, "");
    let failed = plain.metrics["outcome_total.failed"];
    assert!(failed > 0.0);
    let once = scenario(0.5, "probability = 1, delay_ms = 1000, max_resubmissions = 1");
    assert_eq!(once.metrics["resubmitted_run_total"], failed);
    assert_eq!(once.metrics["logical_run_total"], plain.metrics["logical_run_total"] + failed);
    assert!(once.metrics["outcome_total.failed"] > failed);
}

#[test]
fn a_run_past_its_deadline_is_resubmitted_too() {
    let mut s = base()
        .svc("servers = 1000\nservice_time = { dist = \"constant\", value_ms = 2000 }")
        .rate(1.0)
        .duration(100.0)
        .policy("deadline_propagation = false\nretry = { max_attempts = 1 }");
    s.deadline_ms = 1000.0;
    let originals = s.metrics()["logical_run_total"];
    s.workflow.push("resubmit = { probability = 1, delay_ms = 0 }".into());
    let m = s.metrics();
    assert_eq!(m["outcome_total.succeeded"], m["logical_run_total"]);
    assert_eq!(m["resubmitted_run_total"], originals);
    assert_eq!(m["logical_run_total"], 2.0 * originals);
}

#[test]
fn a_resubmission_that_starts_after_warm_up_is_measured() {
    // Every run is refused at once (down for the whole run), so it ends at its arrival and its
    // resubmission starts exactly 50 s later: originals from 50 s on have measured resubmissions.
    let scenario = |resubmit: bool| {
        let mut s = base().sim("warmup_s = 100").fault("down", 0.0, 1000.0, "");
        if resubmit {
            s.workflow.push("resubmit = { probability = 1, delay_ms = 50000 }".into());
        }
        s.run()
    };
    let plain = scenario(false);
    let measured_originals = plain.metrics["logical_run_total"];
    assert_eq!(measured_originals, sum(&plain, ARRIVALS, 10..=29));
    let r = scenario(true);
    // Only measured runs count as resubmitted: the warm-up's originals do not.
    assert_eq!(r.metrics["resubmitted_run_total"], measured_originals);
    assert_eq!(r.metrics["logical_run_total"], 2.0 * measured_originals + sum(&plain, ARRIVALS, 5..=9));
    assert_eq!(r.metrics["logical_run_total"], sum(&r, ARRIVALS, 10..=40));
    assert_eq!(r.metrics["outcome_total.failed"], r.metrics["logical_run_total"]);
}

#[test]
fn a_rate_profile_sets_the_arrivals_of_each_phase() {
    // 2/s to 100 s, none to 150 s, 10/s to 200 s, then 1/s to the end (300 s, past its until_s).
    let mut s = base().replications(10);
    s.arrivals = "profile = [{ until_s = 100, rate_per_s = 2 }, { until_s = 150, rate_per_s = 0 }, \
                  { until_s = 200, rate_per_s = 10 }, { until_s = 250, rate_per_s = 1 }]"
        .into();
    let reps = s.runs();
    for r in &reps {
        assert_eq!(sum(r, ARRIVALS, 10..=14), 0.0, "rate 0 from 100 s to 150 s");
        assert_eq!(sum(r, ARRIVALS, 0..=29), r.metrics["logical_run_total"]);
        assert_eq!(sum(r, ARRIVALS, 30..=40), 0.0, "no arrivals after duration_s");
    }
    for (rows, theory) in [(0..=9, 200.0), (15..=19, 500.0), (20..=24, 50.0), (25..=29, 50.0)] {
        let e = estimate(reps.iter().map(|r| sum(r, ARRIVALS, rows.clone())));
        assert_in_ci(&format!("arrivals in windows {rows:?}"), &e, theory, 4);
    }
}

#[test]
fn warm_up_runs_are_simulated_but_not_measured() {
    let measured = base().sim("warmup_s = 100");
    let r = measured.run();
    let m = &r.metrics;
    let after = sum(&r, ARRIVALS, 10..=29);
    let all = sum(&r, ARRIVALS, 0..=29);
    assert_eq!(m["logical_run_total"], after);
    assert!(all > after + 300.0, "the time series counts the warm-up's ~500 arrivals too");
    assert_eq!(m["dependency.svc.attempt_total"], after);
    assert_eq!(sum(&r, attempts_col(0), 0..=30), all);
    close(m["dependency.svc.attempt_rate_per_s"], after / 200.0, "attempt rate over the measured 200 s");
    // Without warm-up every arrival is measured, and the arrivals are the same.
    let all_measured = base().run();
    assert_eq!(all_measured.metrics["logical_run_total"], all);
}

#[test]
fn more_runs_in_flight_than_the_limit_is_an_error() {
    // Runs last 10 s, so the 11th arrival finds 10 runs alive.
    let s = base()
        .svc("servers = 1000\nservice_time = { dist = \"constant\", value_ms = 10000 }")
        .duration(100.0)
        .policy("deadline_propagation = false\nretry = { max_attempts = 1 }");
    let m = s.clone().sim("max_in_flight_runs = 10").model();
    let seed = replication_seed(m.world.seed, 0);
    match simulate(&m, 0, seed) {
        Err(SimError::TooManyRuns { limit, at_s }) => {
            assert_eq!(limit, 10);
            let (_, trace) = simulate_traced(&s.model(), 0, seed).unwrap();
            let eleventh = trace.iter().find(|t| t.arrival == 10).expect("an 11th run").run_start_us;
            assert_eq!(at_s, eleventh as f64 / 1e6);
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("more than 10 runs in flight must fail"),
    }
    assert!(simulate(&s.clone().sim("max_in_flight_runs = 100").model(), 0, seed).is_ok());

    // A run that gave up after 1 s is still in flight while its abandoned attempt is served
    // (10 s), unless the dependency drops abandoned work.
    let abandoning = |honors_cancel: bool| {
        s.clone()
            .svc(&format!(
                "servers = 1000\nservice_time = {{ dist = \"constant\", value_ms = 10000 }}\nhonors_cancel = {honors_cancel}"
            ))
            .policy("deadline_propagation = false\ntimeout_ms = 1000\nretry = { max_attempts = 1 }")
            .sim("max_in_flight_runs = 20")
            .model()
    };
    assert!(matches!(simulate(&abandoning(false), 0, seed), Err(SimError::TooManyRuns { limit: 20, .. })));
    let r = simulate(&abandoning(true), 0, seed).unwrap();
    assert_eq!(r.metrics["outcome_total.failed"], r.metrics["logical_run_total"]);
}

#[test]
fn runs_alive_past_the_drain_limit_are_an_error() {
    // 100 s of work per run, arrivals for 20 s, 10 s of drain.
    let slow = |svc_extra: &str, policy: &str, drain_s: f64| {
        base()
            .svc(&format!("servers = 1000\nservice_time = {{ dist = \"constant\", value_ms = 100000 }}\n{svc_extra}"))
            .rate(1.0)
            .duration(20.0)
            .sim(&format!("drain_limit_s = {drain_s}"))
            .policy(&format!("deadline_propagation = false\nretry = {{ max_attempts = 1 }}\n{policy}"))
            .model()
    };
    let ok = slow("", "timeout_ms = 0", 200.0);
    let seed = replication_seed(ok.world.seed, 0);
    let runs = simulate(&ok, 0, seed).unwrap().metrics["logical_run_total"];
    match simulate(&slow("", "timeout_ms = 0", 10.0), 0, seed) {
        Err(SimError::DrainLimit { live_runs, limit_s }) => {
            assert_eq!(limit_s, 10.0);
            assert_eq!(live_runs as f64, runs, "no run had finished");
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("runs still in flight after the drain limit must fail"),
    }
    // A run that gave up after 1 s stays alive while its abandoned attempt is served...
    assert!(matches!(simulate(&slow("", "timeout_ms = 1000", 10.0), 0, seed), Err(SimError::DrainLimit { .. })));
    // ...unless the dependency drops abandoned work.
    let r = simulate(&slow("honors_cancel = true", "timeout_ms = 1000", 10.0), 0, seed).unwrap();
    assert_eq!(r.metrics["outcome_total.failed"], runs);
}

// ---------------------------------------------------------------------------------------------
// 3. Remote agents and cancellation
// ---------------------------------------------------------------------------------------------

/// `svc` is an agent (10 ms of its own work) that then calls `model` (1 s) five times in a row;
/// the caller gives up after 2.5 s, while the agent is in its third call.
fn agent_scenario(agent_cancels: bool, model_cancels: bool) -> MetricMap {
    base()
        .svc(&format!(
            "servers = 1000\nservice_time = {{ dist = \"constant\", value_ms = 10 }}\nhonors_cancel = {agent_cancels}\n\
             calls = [{{ dependency = \"model\", count = 5, timeout_ms = 5000 }}]"
        ))
        .dep(
            "model",
            &format!(
                "servers = 1000\nservice_time = {{ dist = \"constant\", value_ms = 1000 }}\nhonors_cancel = {model_cancels}"
            ),
        )
        .rate(1.0)
        .duration(100.0)
        .policy("deadline_propagation = false\ntimeout_ms = 2500\nretry = { max_attempts = 1 }")
        .metrics()
}

#[test]
fn an_agent_that_honours_cancellation_stops_calling_when_abandoned() {
    let m = agent_scenario(true, false);
    let runs = m["logical_run_total"];
    assert_eq!(m["outcome_total.failed"], runs);
    assert_eq!(m["run_latency_ms.max"], 2500.0);
    assert_eq!(m["dependency.svc.timeout_total"], runs);
    assert_eq!(m["dependency.model.attempt_total"], 3.0 * runs, "calls at 0.01 s, 1.01 s, 2.01 s, then cancelled");
    assert_eq!(m["dependency_attempt_total"], 4.0 * runs);
    // The third call's caller (the agent) is gone; `model` finishes it anyway: 1 s of 3 wasted.
    close(m["dependency.model.wasted_service_ratio"], 1.0 / 3.0, "model wasted");
    assert_eq!(m["dependency.model.timeout_total"], 0.0);

    // When `model` honours cancellation too, the third call stops at 2.5 s after 490 ms.
    let m = agent_scenario(true, true);
    assert_eq!(m["dependency.model.attempt_total"], 3.0 * runs);
    close(m["dependency.model.wasted_service_ratio"], 490.0 / 2490.0, "model wasted");
}

#[test]
fn an_attempt_cancelled_in_service_counts_no_error_reply() {
    // Every attempt at `svc` draws a TRANSIENT_TRANSPORT error, answered at the end of its
    // 1 s of service; the caller gives up at 100 ms. Ignoring cancellation, `svc` serves each
    // to its end and sends the error reply: one error per run. Honouring it, `svc` stops each
    // attempt at 100 ms and sends no reply, so no error is counted, though each still departs
    // (its sojourn is the 100 ms it stayed).
    let cancelling = |honors_cancel: bool| {
        base()
            .svc(&format!(
                "servers = 1000\nservice_time = {{ dist = \"constant\", value_ms = 1000 }}\n\
                 errors = {{ transient_transport = 1.0 }}\nhonors_cancel = {honors_cancel}"
            ))
            .policy("deadline_propagation = false\ntimeout_ms = 100\nretry = { max_attempts = 1 }")
            .metrics()
    };
    for (honors_cancel, errors_per_run, sojourn_ms) in [(false, 1.0, 1000.0), (true, 0.0, 100.0)] {
        let m = cancelling(honors_cancel);
        let runs = m["logical_run_total"];
        assert!(runs > 1000.0, "{runs} runs");
        assert_eq!(m["dependency.svc.timeout_total"], runs);
        assert_eq!(m["outcome_total.failed"], runs);
        assert_eq!(m["dependency.svc.error_total.transient_transport"], errors_per_run * runs, "{honors_cancel}");
        assert_eq!(m["dependency.svc.sojourn_ms.mean"], sojourn_ms, "{honors_cancel}");
    }
}

#[test]
fn an_attempt_cancelled_in_the_queue_departs_after_the_time_it_waited() {
    // 1 s of service, the caller gives up at 100 ms and `svc` drops what its caller abandons;
    // a capacity fault leaves it no server in [100 s, 200 s). Outside the window each attempt
    // is stopped in service at 100 ms; in it, each waits its 100 ms in the queue and is taken
    // out of the queue (engine/stations.rs `stop_attempt`). Either way it stayed 100 ms, so
    // the mean sojourn is exactly 100 ms, the queued ones included.
    let r = base()
        .svc("servers = 1000\nservice_time = { dist = \"constant\", value_ms = 1000 }\nhonors_cancel = true")
        .policy("deadline_propagation = false\ntimeout_ms = 100\nretry = { max_attempts = 1 }")
        .window_fault("capacity", "servers = 0")
        .run();
    let m = &r.metrics;
    let runs = m["logical_run_total"];
    assert!(runs > 1000.0, "{runs} runs");
    assert_eq!(m["dependency.svc.timeout_total"], runs);
    assert_eq!(m["dependency.svc.sojourn_ms.mean"], 100.0);
    // The window's arrivals did wait in the queue: 100 ms each (those of its last 100 ms less,
    // as servers come back at 200 s), over the 300 s measured.
    let in_window = sum(&r, ARRIVALS, 10..=19);
    let queued_s = m["dependency.svc.queue_length.mean"] * 300.0;
    assert!(in_window > 400.0, "{in_window} arrivals in the window");
    assert!(queued_s <= 0.1 * in_window + 1e-6 && queued_s > 0.1 * (in_window - 5.0), "{queued_s} s queued");
}

#[test]
fn an_agent_that_ignores_cancellation_keeps_calling_after_its_caller_left() {
    let m = agent_scenario(false, false);
    let runs = m["logical_run_total"];
    assert_eq!(m["outcome_total.failed"], runs);
    assert_eq!(m["run_latency_ms.max"], 2500.0);
    assert_eq!(m["dependency.model.attempt_total"], 5.0 * runs, "all five calls are made");
    assert_eq!(m["dependency_attempt_total"], 6.0 * runs);
    assert_eq!(m["dependency.model.wasted_service_ratio"], 0.0, "the agent still waits for each call");
    assert_eq!(m["dependency.svc.wasted_service_ratio"], 1.0, "the agent's caller is gone");
}

#[test]
fn an_agent_retries_its_own_calls_with_its_backoff_and_reports_their_failure_kind() {
    // `model` admits one call in the whole run and refuses the others with a 5 s Retry-After,
    // which the agent ignores: it pauses its own 100 ms between its 3 attempts.
    let m = base()
        .svc(
            "servers = 1000\nservice_time = { dist = \"constant\", value_ms = 10 }\n\
             calls = [{ dependency = \"model\", max_attempts = 3, timeout_ms = 1000, backoff_ms = 100 }]",
        )
        .dep(
            "model",
            "servers = 1000\nservice_time = { dist = \"constant\", value_ms = 10 }\n\
             rate_limit = { per_s = 0.001, burst = 1, retry_after_ms = 5000 }",
        )
        .rate(1.0)
        .duration(100.0)
        .policy("retry = { max_attempts = 1 }")
        .metrics();
    let runs = m["logical_run_total"];
    assert_eq!(m["outcome_total.succeeded"], 1.0);
    assert_eq!(m["outcome_total.failed"], runs - 1.0);
    assert_eq!(m["dependency.model.attempt_total"], 3.0 * runs - 2.0);
    assert_eq!(m["dependency.model.error_total.rate_limited"], 3.0 * (runs - 1.0));
    assert_eq!(m["dependency.svc.error_total.rate_limited"], runs - 1.0, "the agent leaves with its call's kind");
    // 10 ms of the agent's own work, then refusal, 100 ms, refusal, 100 ms, refusal.
    assert_eq!(m["run_latency_ms.max"], 210.0);
    close(m["run_latency_ms.mean"], (20.0 + 210.0 * (runs - 1.0)) / runs, "mean latency");
}

#[test]
fn an_agents_own_calls_are_outside_the_callers_cost_budget() {
    // The run may spend 1 unit: the agent's attempt costs 1, its call to `model` costs 10.
    let m = base()
        .svc(
            "servers = 1000\nservice_time = { dist = \"constant\", value_ms = 10 }\ncost_units = 1\n\
             calls = [{ dependency = \"model\", timeout_ms = 1000 }]",
        )
        .dep("model", "servers = 1000\nservice_time = { dist = \"constant\", value_ms = 10 }\ncost_units = 10")
        .rate(1.0)
        .duration(100.0)
        .policy("retry = { max_attempts = 1 }\nbudget = { cost_units = 1 }")
        .metrics();
    let runs = m["logical_run_total"];
    assert_eq!(m["outcome_total.succeeded"], runs);
    assert_eq!(m["budget_exhausted_total.cost"], 0.0);
    assert_eq!(m["dependency.model.attempt_total"], runs);
    assert_eq!(m["cost_units_total"], 11.0 * runs, "the total counts the agent's calls");
    assert_eq!(m["run_latency_ms.max"], 20.0);
}
