//! The engine's plain-call fast path (src/engine/plain_call.rs) changes no figure: every
//! scenario below runs on the usual path and with the fast paths off
//! (`simulate_without_fast_paths`), and the two give the same metrics bit for bit, the same
//! time series and the same number of events. Each case where the fast path is expected
//! also shows it was taken (`plain_call_runs`), so a fast path that quietly never ran would
//! fail here, and the cases cover what hands a run back to its machine: failures, retries,
//! timeouts, lost replies, bad answers, deadlines, refusals, queue expiry, cancellation,
//! resubmission, closed populations and remote agents.

mod common;
use common::*;
use faultline::engine::{Model, Replication, simulate, simulate_without_fast_paths};
use faultline::experiment::batch::replication_seed;

const POLICY_PLAIN: &str = "timeout_ms = 0\nretry = { max_attempts = 1 }";

/// One workflow `w` of one read step on `svc`, 4 exponential servers, 32 arrivals a second
/// (an M/M/4 at rho 0.8), 200 s; `svc`, `workflow`, `policy` and `rest` add or replace lines.
fn scenario(svc: &str, workflow: &str, policy: &str, rest: &str) -> String {
    format!(
        r#"[simulation]
duration_s = 200
seed = 7
replications = 2
timeseries_window_s = 10

[[dependency]]
name = "svc"
servers = 4
service_time = {{ dist = "exponential", mean_ms = 100 }}
{svc}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 32 }}
deadline_ms = 60000
{workflow}

  [[workflow.step]]
  id = "call"
  dependency = "svc"

{rest}

[policy.p]
{policy}
"#
    )
}

fn fault(kind: &str, fields: &str) -> String {
    format!("[[fault]]\nkind = \"{kind}\"\ntarget = \"svc\"\nstart_s = 60\nduration_s = 60\n{fields}\n")
}

/// Runs every policy and replication of `m` both ways; returns the fast path's plain-call runs.
fn same_both_ways(label: &str, m: &Model) -> u64 {
    let mut plain_runs = 0;
    for p in 0..m.policies.len() {
        for k in 0..m.world.replications {
            let seed = replication_seed(m.world.seed, k);
            let fast = simulate(m, p, seed).unwrap_or_else(|e| panic!("{label}: {e}"));
            let general = simulate_without_fast_paths(m, p, seed).unwrap_or_else(|e| panic!("{label}: {e}"));
            assert_eq!(general.plain_call_runs, 0, "{label}: the general path takes no fast path");
            assert_eq!(metric_bits(&fast.metrics), metric_bits(&general.metrics), "{label}: policy {p}, rep {k}");
            assert_eq!(fast.events, general.events, "{label}: events, policy {p}, rep {k}");
            assert_eq!(series(&fast), series(&general), "{label}: time series, policy {p}, rep {k}");
            plain_runs += fast.plain_call_runs;
        }
    }
    plain_runs
}

fn series(r: &Replication) -> Vec<u64> {
    let t = &r.timeseries;
    (0..t.rows()).flat_map(|row| (0..t.stride()).map(move |c| t.value(row, c))).collect()
}

/// A case where the fast path must be taken by a good share of the runs.
fn plain_case(label: &str, text: &str) {
    let m = model(text);
    let plain_runs = same_both_ways(label, &m);
    let runs = (0..m.policies.len())
        .flat_map(|p| (0..m.world.replications).map(move |k| (p, k)))
        .map(|(p, k)| simulate(&m, p, replication_seed(m.world.seed, k)).expect("runs").metrics["logical_run_total"])
        .sum::<f64>();
    // Runs in the warm-up are not counted in logical_run_total but may take the fast path.
    assert!(plain_runs as f64 >= 0.2 * runs && plain_runs > 100, "{label}: {plain_runs} plain runs of {runs}");
}

#[test]
fn an_mmc_queue_takes_the_fast_path_with_the_same_figures() {
    plain_case("M/M/4", &scenario("", "", POLICY_PLAIN, ""));
    plain_case("M/M/4, 60 s timeout", &scenario("", "", "timeout_ms = 60000\nretry = { max_attempts = 1 }", ""));
    let mmc = std::fs::read_to_string("scenarios/mmc.toml").expect("scenarios/mmc.toml");
    plain_case("scenarios/mmc.toml", &mmc.replace("duration_s = 2000", "duration_s = 200"));
    let mmck = std::fs::read_to_string("scenarios/mmck.toml").expect("scenarios/mmck.toml");
    plain_case("scenarios/mmck.toml", &mmck);
    plain_case(
        "warm-up",
        &scenario("", "", POLICY_PLAIN, "")
            .replace("timeseries_window_s = 10", "timeseries_window_s = 10\nwarmup_s = 50"),
    );
}

#[test]
fn failures_and_retries_hand_the_run_back_with_the_same_figures() {
    let retrying = "timeout_ms = 300\nretry = { max_attempts = 3, backoff = { base_ms = 20, max_ms = 200 } }";
    let cases = [
        ("errors", scenario("errors = { transient_transport = 0.2, overloaded = 0.1 }", "", retrying, "")),
        ("errors, no retry", scenario("errors = { invalid_input = 0.3 }", "", POLICY_PLAIN, "")),
        ("timeouts", scenario("", "", "timeout_ms = 150\nretry = { max_attempts = 2 }", "")),
        ("lost responses", scenario("", "", retrying, &fault("lost_response", ""))),
        ("a timeout fault", scenario("", "", retrying, &fault("timeout", ""))),
        ("a latency fault", scenario("", "", retrying, &fault("latency", "factor = 5"))),
        ("down", scenario("", "", retrying, &fault("down", "retry_after_ms = 50"))),
        ("capacity", scenario("", "", retrying, &fault("capacity", "servers = 1"))),
        ("truncated answers", scenario("", "", retrying, &fault("truncated_result", ""))),
        ("schema violations", scenario("", "", retrying, &fault("schema_violation", ""))),
        ("a rate limit", scenario("rate_limit = { per_s = 20, retry_after_ms = 100 }", "", retrying, "")),
        (
            "a small queue that expires and cancels",
            scenario(
                "queue_capacity = 3\nqueue_policy = { max_wait_ms = 200 }\nhonors_cancel = true",
                "",
                retrying,
                "",
            ),
        ),
        (
            "a tight deadline, propagated",
            scenario("", "", "deadline_propagation = true\ntimeout_ms = 400\nretry = { max_attempts = 3 }", "")
                .replace("deadline_ms = 60000", "deadline_ms = 250"),
        ),
        (
            "resubmission",
            scenario(
                "errors = { invalid_input = 0.3 }",
                "resubmit = { probability = 1, delay_ms = 100 }",
                POLICY_PLAIN,
                "",
            ),
        ),
        (
            "a remote agent that retries its own calls",
            scenario(
                "calls = [{ dependency = \"inner\", max_attempts = 3, timeout_ms = 500 }]",
                "",
                retrying,
                "[[dependency]]\nname = \"inner\"\nservers = 8\nservice_time = { dist = \"exponential\", mean_ms = 20 }\nerrors = { transient_transport = 0.3 }\n",
            ),
        ),
    ];
    for (label, text) in &cases {
        // At a quarter of the load: retries must not turn a fault into a storm in which every
        // attempt times out (the fast path would then have little to do).
        plain_case(label, &text.replace("rate_per_s = 32", "rate_per_s = 8"));
    }
}

#[test]
fn a_closed_population_takes_the_fast_path_with_the_same_figures() {
    let users = "[workflow.arrivals.users]\ncount = 16\nspawn_rate = 10\nwait_time = { exponential_mean_s = 1 }\nabandon_after_ms = 300";
    let text = scenario("", "", "timeout_ms = 250\nretry = { max_attempts = 2 }", "")
        .replace("arrivals = { rate_per_s = 32 }\n", "")
        .replace("deadline_ms = 60000\n", &format!("deadline_ms = 60000\n{users}\n"));
    plain_case("closed population", &text);
}

#[test]
fn runs_the_fast_path_cannot_take_keep_their_figures() {
    // A write, two steps at once, a breaker on the route: each goes through the machine.
    let side_by_side = "  [[workflow.step]]\n  id = \"beside\"\n  dependency = \"svc\"\n";
    let cases = [
        (
            "a write",
            scenario("", "", POLICY_PLAIN, "")
                .replace("dependency = \"svc\"\n", "dependency = \"svc\"\n  effect = \"write\"\n"),
        ),
        ("two steps side by side", scenario("", "", POLICY_PLAIN, side_by_side)),
        (
            "a chain whose second step writes",
            scenario("", "", POLICY_PLAIN, &format!("{}  effect = \"write\"\n", then_step("svc"))),
        ),
        (
            "a breaker",
            scenario(
                "errors = { transient_transport = 0.3 }",
                "",
                &format!("{POLICY_PLAIN}\n\n[[policy.p.circuit_breaker]]\ndependency = \"svc\""),
                "",
            ),
        ),
    ];
    for (label, text) in &cases {
        let m = model(text);
        assert_eq!(same_both_ways(label, &m), 0, "{label}: no run is a plain call");
    }
}

/// A step after `call` at `dependency`, to be appended to a workflow (scenario's `rest`
/// comes after the step, so it lands in the workflow).
fn then_step(dependency: &str) -> String {
    format!("  [[workflow.step]]\n  id = \"then\"\n  dependency = \"{dependency}\"\n  after = [\"call\"]\n")
}

const SECOND: &str =
    "[[dependency]]\nname = \"second\"\nservers = 2\nservice_time = { dist = \"exponential\", mean_ms = 40 }\n";

/// Chains of steps, each after the one before: the fast path sends each step's attempt when
/// the one before succeeds, and hands the run back at any other answer, or when too little
/// of a propagated deadline is left to start the next step.
#[test]
fn chains_of_steps_take_the_fast_path_with_the_same_figures() {
    let chain = |policy: &str, second: &str| scenario("", "", policy, &format!("{}\n{second}", then_step("second")));
    let second_errors = SECOND.replace("mean_ms = 40 }", "mean_ms = 40 }\nerrors = { transient_transport = 0.2 }");
    let three = format!(
        "{}  [[workflow.step]]\n  id = \"last\"\n  dependency = \"svc\"\n  after = [\"then\"]\n\n{SECOND}",
        then_step("second")
    );
    let cases = [
        ("two steps, no timeout", chain(POLICY_PLAIN, SECOND)),
        ("two steps, fixed timeouts", chain("deadline_propagation = false\ntimeout_ms = 250\nretry = { max_attempts = 2 }", SECOND)),
        ("two steps, errors and retries at the second", chain(RETRYING, &second_errors)),
        ("three steps", scenario("", "", RETRYING, &three)),
        (
            "two steps, a propagated deadline that runs out between them",
            chain("deadline_propagation = true\ntimeout_ms = 0\nretry = { max_attempts = 2 }", SECOND)
                .replace("deadline_ms = 60000", "deadline_ms = 160"),
        ),
        (
            "two steps, a propagated deadline with a reserve",
            chain(
                "deadline_propagation = true\ntimeout_ms = 120\nretry = { max_attempts = 2 }\n\n[policy.p.steps]\nthen = { deadline_reserve_ms = 30 }",
                SECOND,
            )
            .replace("deadline_ms = 60000", "deadline_ms = 220"),
        ),
        ("two steps, a fault at the first", chain(RETRYING, &format!("{SECOND}\n{}", fault("latency", "factor = 4")))),
    ];
    for (label, text) in &cases {
        plain_case(label, &text.replace("rate_per_s = 32", "rate_per_s = 12"));
    }
}

/// A chain declared out of order (`call`, declared first, runs after `first`, declared
/// second) is left to the machine: `ask_machine` takes a chain only when each send is of the
/// next step in declaration order, which `hand_back`'s check of a replayed success
/// (`chain[step + 1]`) relies on. The errors at `call` hand runs back after `first`
/// succeeded; were the chain taken (the guard read as `true`), that check would index step
/// 1 + 1 of a chain of two and panic.
#[test]
fn a_chain_declared_out_of_order_is_left_to_the_machine_with_the_same_figures() {
    let first = format!("  [[workflow.step]]\n  id = \"first\"\n  dependency = \"second\"\n\n{SECOND}");
    // Not propagated: under propagation the first send, of step 1, would be refused anyway
    // (only step 0's timeout is taken as fixed).
    let policy = format!("deadline_propagation = false\n{RETRYING}");
    let text = scenario("errors = { transient_transport = 0.2 }", "", &policy, &first)
        .replace(
            "  id = \"call\"\n  dependency = \"svc\"\n",
            "  id = \"call\"\n  dependency = \"svc\"\n  after = [\"first\"]\n",
        )
        .replace("rate_per_s = 32", "rate_per_s = 12");
    assert!(text.contains("after = [\"first\"]"), "{text}");
    let m = model(&text);
    assert_eq!(same_both_ways("two steps declared out of order", &m), 0, "no run is a plain call");
    // The runs do reach `call` after `first` and fail there (the hand-back the check would
    // get wrong): `call` retries its 20 % of errors, `first` has none.
    let r = simulate(&m, 0, replication_seed(m.world.seed, 0)).expect("runs");
    let attempts = |d: &str| r.metrics[&format!("dependency.{d}.attempt_total")];
    let (first, call) = (attempts("second"), attempts("svc"));
    assert!(first > 1000.0 && call > 1.1 * first, "{first} attempts at `first`, {call} at `call`");
}

#[test]
fn every_shipped_scenario_gives_the_same_figures_both_ways() {
    let mut paths: Vec<_> = std::fs::read_dir("scenarios")
        .expect("scenarios/")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    paths.push("benches/mechanisms.toml".into());
    for path in &paths {
        let text = std::fs::read_to_string(path).expect("a scenario");
        let m = model(&text);
        // Shorter runs: the point is the paths taken, not the figures' precision.
        let mut m = m;
        m.world.replications = 1;
        same_both_ways(&path.display().to_string(), &m);
    }
}

/// A second dependency `alt` for fallbacks and shared-dependency cases.
const ALT: &str =
    "[[dependency]]\nname = \"alt\"\nservers = 4\nservice_time = { dist = \"exponential\", mean_ms = 50 }\n";
const RETRYING: &str = "timeout_ms = 300\nretry = { max_attempts = 3, backoff = { base_ms = 20, max_ms = 200 } }";

#[test]
fn budgets_fan_out_limits_and_fallbacks_hand_the_run_back_with_the_same_figures() {
    let errors = "errors = { transient_transport = 0.3 }\ncost_units = 1";
    let with = |extra: &str| format!("{RETRYING}\n{extra}");
    let cases = [
        ("a fallback after failures", scenario(errors, "", &with("\n[policy.p.steps]\ncall = { fallback = \"alt\" }"), ALT)),
        ("a cost budget that pays one attempt", scenario(errors, "", &with("budget = { cost_units = 1 }"), "")),
        (
            "a cost budget for one attempt, then a fallback that costs nothing",
            scenario(errors, "", &with("budget = { cost_units = 1.5 }\n\n[policy.p.steps]\ncall = { fallback = \"alt\" }"), ALT),
        ),
        ("one retry token", scenario(errors, "", &with("budget = { retry_tokens = 1 }"), "")),
        ("no retry token", scenario(errors, "", &with("budget = { retry_tokens = 0 }"), "")),
        ("one concurrency token", scenario(errors, "", &with("budget = { concurrency_tokens = 1 }"), "")),
        ("fan-out: one attempt in all", scenario(errors, "", &with("fan_out = { max_total_attempts = 1, max_branches = 1 }"), "")),
        ("fan-out: one unit in flight", scenario(errors, "", &with("fan_out = { max_parallel_cost_units = 1 }"), "")),
        (
            "a deadline shorter than the timeout, not propagated: late successes are resubmitted",
            scenario("", "resubmit = { probability = 0.5, delay_ms = 50, max_resubmissions = 2 }", "timeout_ms = 5000\nretry = { max_attempts = 2 }", "")
                .replace("deadline_ms = 60000", "deadline_ms = 150"),
        ),
        (
            "a propagated deadline with a reserve",
            scenario(
                errors,
                "",
                "deadline_propagation = true\ntimeout_ms = 1000\nretry = { max_attempts = 3 }\n\n[policy.p.steps]\ncall = { deadline_reserve_ms = 100 }",
                "",
            )
            .replace("deadline_ms = 60000", "deadline_ms = 300"),
        ),
        (
            "a propagated deadline that passes in the queue, cancelled at the station",
            scenario("honors_cancel = true", "", "deadline_propagation = true\ntimeout_ms = 0\nretry = { max_attempts = 2 }", "")
                .replace("deadline_ms = 60000", "deadline_ms = 200")
                .replace("mean_ms = 100", "mean_ms = 120"),
        ),
    ];
    for (label, text) in &cases {
        // At a quarter of the load, as above: at half of it the fallback case tips into a
        // retry storm that leaves 34 of 3,232 runs a first-attempt success.
        plain_case(label, &text.replace("rate_per_s = 32", "rate_per_s = 8"));
    }
}

#[test]
fn station_queue_policies_under_load_keep_the_same_figures() {
    let low = "[[workflow]]\nname = \"low\"\npriority = \"sheddable\"\narrivals = { rate_per_s = 14 }\ndeadline_ms = 60000\n\n  [[workflow.step]]\n  id = \"low_call\"\n  dependency = \"svc\"\n";
    let cases = [
        (
            "priorities, eviction of the less important workflow",
            scenario(
                "queue_capacity = 4\nqueue_policy = { order = \"priority\", overflow = \"reject_lowest_priority\", max_wait_ms = 300 }",
                "",
                RETRYING,
                low,
            ),
        ),
        (
            "lifo with CoDel",
            scenario("queue_capacity = 30\nqueue_policy = { order = \"lifo\", codel = { target_ms = 5, interval_ms = 100 } }", "", RETRYING, ""),
        ),
        (
            "abandoned attempts dropped at dequeue",
            scenario("queue_policy = { drop_abandoned = true }", "", "timeout_ms = 150\nretry = { max_attempts = 2 }", ""),
        ),
        (
            "a plain workflow sharing its dependency with a two-step one",
            scenario(
                "",
                "",
                RETRYING,
                &format!(
                    "{}\n  [[workflow.step]]\n  id = \"low_then\"\n  dependency = \"alt\"\n  after = [\"low_call\"]\n\n{ALT}",
                    low.replace("priority = \"sheddable\"\n", "")
                ),
            )
            // Below the load at which 300 ms timeouts start a retry storm (at 16 + 14 a second
            // 317 of 5,913 runs succeed).
            .replace("rate_per_s = 32", "rate_per_s = 8")
            .replace("rate_per_s = 14", "rate_per_s = 6"),
        ),
    ];
    for (label, text) in &cases {
        plain_case(label, text);
    }
    // At full load a capacity fault starts a retry storm: few runs end on the fast path, but
    // the figures must still agree.
    let storm = scenario("", "", RETRYING, &fault("capacity", "servers = 2"));
    assert!(same_both_ways("a capacity fault at full load", &model(&storm)) > 0);
}

#[test]
fn incidents_slos_and_replications_keep_the_same_figures() {
    let mut text = scenario("errors = { transient_transport = 0.05 }", "", RETRYING, &fault("latency", "factor = 4"))
        .replace("timeseries_window_s = 10", "timeseries_window_s = 7\nwarmup_s = 33")
        .replace("replications = 2", "replications = 3")
        .replace("rate_per_s = 32", "rate_per_s = 8");
    text.push_str("\n[slo]\n\"run_latency_ms.p99\" = [\"< 2000\"]\n");
    plain_case("an incident window, an uneven warm-up and window, an SLO, 3 replications", &text);
}

#[test]
fn steps_the_probe_must_refuse_keep_their_figures() {
    let errors = "errors = { transient_transport = 0.3 }\ncost_units = 1";
    let cases = [
        ("a cost budget too small for one attempt", scenario(errors, "", "timeout_ms = 300\nbudget = { cost_units = 0.5 }", "")),
        (
            "a cost budget too small, a fallback that fits",
            scenario(errors, "", "timeout_ms = 300\nbudget = { cost_units = 0.5 }\n\n[policy.p.steps]\ncall = { fallback = \"alt\" }", ALT),
        ),
        (
            "a reserve longer than the propagated deadline",
            scenario("", "", "deadline_propagation = true\ntimeout_ms = 300\n\n[policy.p.steps]\ncall = { deadline_reserve_ms = 500 }", "")
                .replace("deadline_ms = 60000", "deadline_ms = 400"),
        ),
        ("hedging", scenario("", "", "timeout_ms = 1000\nhedging = { delay_ms = 150 }", "")),
        (
            "a validator",
            scenario(
                "",
                "",
                "timeout_ms = 1000\n\n[policy.p.steps.call.validator]\ncheck = \"schema\"\nlatency_ms = 5\ndetects = { truncated = 0.9 }",
                &fault("truncated_result", ""),
            ),
        ),
        (
            "an idempotent write",
            scenario("errors = { transient_transport = 0.3 }", "", RETRYING, "")
                .replace("dependency = \"svc\"\n", "dependency = \"svc\"\n  effect = \"write\"\n  idempotency = \"key\"\n"),
        ),
        ("a soft step", scenario("", "", POLICY_PLAIN, "").replace("dependency = \"svc\"\n", "dependency = \"svc\"\n  criticality = \"soft\"\n")),
    ];
    for (label, text) in &cases {
        let m = model(&text.replace("rate_per_s = 32", "rate_per_s = 16"));
        assert_eq!(same_both_ways(label, &m), 0, "{label}: no run is a plain call");
    }
}

#[test]
fn ties_between_an_answer_and_its_timeout_or_deadline_keep_the_same_figures() {
    // Constant service times: an attempt that starts at once answers exactly at its timeout
    // (the service end, scheduled first, wins) or at the run's deadline.
    let constant = |svc_ms: u32| format!("service_time = {{ dist = \"constant\", value_ms = {svc_ms} }}");
    let cases = [
        (
            "an answer at its timeout",
            scenario(&constant(100), "", "timeout_ms = 100\nretry = { max_attempts = 2 }", ""),
        ),
        (
            "an answer at the propagated deadline",
            scenario(
                &constant(100),
                "",
                "deadline_propagation = true\ntimeout_ms = 0\nretry = { max_attempts = 2 }",
                "",
            )
            .replace("deadline_ms = 60000", "deadline_ms = 100"),
        ),
        (
            "an answer at the deadline, not propagated, resubmitted when late",
            scenario(
                &constant(100),
                "resubmit = { probability = 1, delay_ms = 10 }",
                "timeout_ms = 0\nretry = { max_attempts = 1 }",
                "",
            )
            .replace("deadline_ms = 60000", "deadline_ms = 100"),
        ),
    ];
    for (label, text) in &cases {
        // The service_time line replaces the exponential one (the later key would be refused).
        let text = text.replace("service_time = { dist = \"exponential\", mean_ms = 100 }\n", "");
        plain_case(label, &text.replace("rate_per_s = 32", "rate_per_s = 8"));
    }
}

#[test]
fn two_policies_one_plain_and_a_closed_population_that_abandons_and_leaves_keep_the_same_figures() {
    let users = "[workflow.arrivals.users]\ncount = 24\nspawn_rate = 10\nwait_time = { exponential_mean_s = 0.5 }\nabandon_after_ms = 150\nleave_after_failure = 0.2";
    let text = scenario(
        "errors = { transient_transport = 0.1 }",
        "",
        &format!("{RETRYING}\n\n[policy.q]\n{RETRYING}\n\n[[policy.q.circuit_breaker]]\ndependency = \"svc\""),
        "",
    )
    .replace("arrivals = { rate_per_s = 32 }\n", "")
    .replace("deadline_ms = 60000\n", &format!("deadline_ms = 200\n{users}\n"))
    .replace("timeseries_window_s = 10", "timeseries_window_s = 10\nwarmup_s = 15");
    plain_case("two policies, users who abandon and leave, a warm-up", &text);
}

/// Features the engine leaves to the machine although `start` and a success would look plain
/// to it at a workflow's first run: each varies from run to run or lives outside the machine
/// (an SDK client's hidden attempts, a token-shaped call's counts, a snapshot's age drawn per
/// run, admission on the stations' load, a task client). Each keeps its figures and takes no
/// plain-call run; the static conditions of `may_be_plain` are what keep them off the path.
#[test]
fn features_the_machine_keeps_never_take_the_fast_path() {
    let tokens = "kind = \"model\"\n\n[dependency.tokens]\ntime_to_first_token = { dist = \"constant\", value_ms = 40 }\n\
                  time_per_output_token = { dist = \"constant\", value_ms = 1 }\n\
                  price_per_million_input_tokens = 3\nprice_per_million_output_tokens = 15\n\
                  input_tokens = { dist = \"constant\", value = 400 }\noutput_tokens = { dist = \"constant\", value = 100 }";
    let task = "kind = \"a2a_agent\"\nstatus_lookup_time = { dist = \"exponential\", mean_ms = 5 }\n\
                task = { runner = \"runner\", poll_interval_ms = 200, cost_per_s = 1 }";
    let runner =
        "[[dependency]]\nname = \"runner\"\nservers = 200\nservice_time = { dist = \"exponential\", mean_ms = 300 }\n";
    let cases = [
        (
            "an SDK client",
            scenario(
                "kind = \"model\"",
                "",
                &format!("{POLICY_PLAIN}\n\n[policy.p.sdk_client.svc]\npreset = \"openai-python\""),
                "",
            ),
        ),
        ("a token-shaped model", scenario(tokens, "", POLICY_PLAIN, "")),
        (
            "an approved snapshot, stale for some runs",
            scenario(
                "snapshot_age = { dist = \"exponential\", mean_ms = 60000 }",
                "",
                &format!("{POLICY_PLAIN}\n\n[policy.p.steps.call]\nmax_snapshot_age_s = 60"),
                "",
            ),
        ),
        (
            "admission on the stations' load",
            scenario("", "", &format!("{POLICY_PLAIN}\nadmission = {{ on_insufficient = \"reject\" }}"), ""),
        ),
        ("a task dependency", scenario(task, "", "timeout_ms = 0\nretry = { max_attempts = 1 }", runner)),
    ];
    for (label, text) in &cases {
        let m = model(&text.replace("rate_per_s = 32", "rate_per_s = 8"));
        assert_eq!(same_both_ways(label, &m), 0, "{label}: no run is a plain call");
    }
}

/// A traced run follows its machine: with a tracer the fast path is off, and the traced
/// replication's figures are the untraced one's.
#[test]
fn a_traced_replication_follows_the_machine_with_the_same_figures() {
    use faultline::engine::simulate_following;
    use faultline::runtime::RunTracer;
    let m = model(&scenario("", "", POLICY_PLAIN, ""));
    let seed = replication_seed(m.world.seed, 0);
    let fast = simulate(&m, 0, seed).expect("runs");
    let (traced, tracer) = simulate_following(&m, 0, seed, RunTracer::for_runs(&[1, 2, 3])).expect("runs");
    assert!(fast.plain_call_runs > 1000, "{}", fast.plain_call_runs);
    assert_eq!(traced.plain_call_runs, 0);
    assert_eq!(metric_bits(&fast.metrics), metric_bits(&traced.metrics));
    // The traced runs show their machine's step: started, sent, ended.
    let events = format!("{:?}", tracer.events_of(1));
    assert!(events.contains("StepStarted") && events.contains("RunEnded"), "{events}");
}

/// A cache table for `[[dependency]]` (the contract's required fields; 1,000 keys fresh for 1 s).
const CACHE: &str = "\n  [dependency.cache]\n  data_class = \"doc\"\n  fresh_ttl_s = 1\n  keys = 1000\n";

/// The static conditions of `may_be_plain` no test above reached: degradation modes, a
/// delegating world, an approval step, a quorum step and a cache the policy looks in at the
/// step's dependency. Each keeps its figures both ways and takes no plain-call run. With its
/// condition replaced by `true`, each case but the quorum fails here: the paused mode's runs
/// are not refused, the delegating run's hops see a machine that never started, the probe's
/// `start` leaves a second request at the approval desk, the cached call breaks the run. A
/// quorum's `start` observes `Quorum(Started)`, so the probe refuses it anyway: its condition
/// only saves asking.
#[test]
fn modes_delegation_approvals_quorums_and_caches_never_take_the_fast_path() {
    let inner =
        "[[dependency]]\nname = \"inner\"\nservers = 8\nservice_time = { dist = \"exponential\", mean_ms = 20 }\n";
    let approval = "[simulation]\nduration_s = 200\nseed = 7\nreplications = 2\ntimeseries_window_s = 10\n\n\
                    [[dependency]]\nname = \"desk\"\napproval = { decision_time = { dist = \"exponential\", mean_ms = 100 }, approvers = 1, expires_after_s = 5 }\n\n\
                    [[workflow]]\nname = \"w\"\narrivals = { rate_per_s = 5 }\ndeadline_ms = 2000\n\n  [[workflow.step]]\n  id = \"call\"\n  dependency = \"desk\"\n\n\
                    [policy.p]\ntimeout_ms = 0\n"
        .to_string();
    let cases = [
        (
            // At the full load of 32 a second the queue passes 2 often: new runs are refused.
            "a mode that refuses new runs while the queue is long",
            scenario(
                "",
                "",
                &format!(
                    "{POLICY_PLAIN}\n\n[[policy.p.runtime_policy]]\nmode = \"paused\"\nmin_dwell_ms = 5000\n\
                     when = {{ queue_depth_above = 2, dependency = \"svc\" }}\nactions = {{ refuse_new_runs = true }}"
                ),
                "",
            ),
        ),
        (
            "an agent that delegates",
            scenario(
                "kind = \"a2a_agent\"\ncalls = [{ dependency = \"inner\", delegate = true, max_attempts = 1, timeout_ms = 1000 }]",
                "",
                &format!("{POLICY_PLAIN}\nfan_out = {{ max_total_attempts = 2 }}"),
                inner,
            )
            .replace("rate_per_s = 32", "rate_per_s = 8"),
        ),
        ("an approval step, one person deciding", approval),
        (
            "a quorum step",
            scenario("", "", POLICY_PLAIN, "")
                .replace("dependency = \"svc\"\n", "dependency = \"svc\"\n  quorum = { k = 2, n = 3 }\n")
                .replace("rate_per_s = 32", "rate_per_s = 8"),
        ),
        (
            "a cache the policy looks in, at the step's dependency",
            scenario(CACHE, "", &format!("{POLICY_PLAIN}\n\n[policy.p.cache.svc]"), "")
                .replace("rate_per_s = 32", "rate_per_s = 8"),
        ),
    ];
    for (label, text) in &cases {
        let m = model(text);
        assert_eq!(same_both_ways(label, &m), 0, "{label}: no run is a plain call");
    }
}

/// A cache at another dependency keeps the plain workflow on the fast path: the condition is
/// the cache at the step's own dependency, not any cache of the policy.
#[test]
fn a_cache_at_another_dependency_leaves_the_fast_path_open() {
    let alt_cached = format!("{ALT}{CACHE}");
    let text = scenario("", "", &format!("{POLICY_PLAIN}\n\n[policy.p.cache.alt]"), &alt_cached);
    plain_case("a cache at alt, the step at svc", &text.replace("rate_per_s = 32", "rate_per_s = 8"));
}

/// The unarmed timer (engine/stations.rs `answered_before`): an attempt that starts service at
/// once is left without a timer only when its service ends no later than its timeout. Constant
/// service, 4 servers at 1 arrival a second (no queue): at 100 ms under a 150 ms timeout no
/// attempt times out; at 200 ms every one does. Both paths agree, so only absolute figures can
/// show a wrong decision here (with `<=` read as `>`, no attempt of 200 ms would time out).
#[test]
fn an_attempt_served_past_its_timeout_times_out_and_one_served_within_does_not() {
    for (svc_ms, all_time_out) in [(100, false), (200, true)] {
        let text = scenario("", "", "timeout_ms = 150\nretry = { max_attempts = 1 }", "")
            .replace(
                "service_time = { dist = \"exponential\", mean_ms = 100 }",
                &format!("service_time = {{ dist = \"constant\", value_ms = {svc_ms} }}"),
            )
            .replace("rate_per_s = 32", "rate_per_s = 1");
        let m = model(&text);
        let r = simulate(&m, 0, replication_seed(m.world.seed, 0)).expect("runs");
        let (attempts, timeouts) = (r.metrics["dependency_attempt_total"], r.metrics["dependency.svc.timeout_total"]);
        assert!(attempts > 100.0, "{svc_ms} ms: {attempts} attempts");
        assert_eq!(timeouts, if all_time_out { attempts } else { 0.0 }, "{svc_ms} ms: {timeouts} of {attempts}");
    }
}

/// An adversarial review of chains of 2 to 4 plain steps (review-chain): each scenario below
/// aims at something a chain's later step could see differently on the fast path than through
/// the machine. Self-contained: its own scenario text, not `scenario`'s.
#[test]
fn adversarial_chains_of_two_to_four_steps_keep_the_same_figures() {
    /// Dependencies `a` (4 servers, 100 ms), `b` (4, 40 ms), `c` (4, 60 ms), each with `extra[i]`
    /// lines; one workflow `w` at `rate` a second with `wf` lines and the steps `steps`
    /// (id, dependency, after); `policy` for `[policy.p]`; `rest` appended.
    fn chain_text(extra: [&str; 3], wf: &str, steps: &[(&str, &str, &[&str])], policy: &str, rest: &str) -> String {
        let mut t =
            String::from("[simulation]\nduration_s = 200\nseed = 11\nreplications = 2\ntimeseries_window_s = 10\n\n");
        for (i, (name, mean)) in [("a", 100), ("b", 40), ("c", 60)].iter().enumerate() {
            let extra = extra[i];
            let service = if extra.contains("service_time") {
                String::new()
            } else {
                format!("service_time = {{ dist = \"exponential\", mean_ms = {mean} }}\n")
            };
            t.push_str(&format!("[[dependency]]\nname = \"{name}\"\nservers = 4\n{service}{extra}\n\n"));
        }
        t.push_str(&format!(
            "[[workflow]]\nname = \"w\"\narrivals = {{ rate_per_s = 8 }}\ndeadline_ms = 60000\n{wf}\n"
        ));
        for (id, dep, after) in steps {
            t.push_str(&format!("  [[workflow.step]]\n  id = \"{id}\"\n  dependency = \"{dep}\"\n"));
            if !after.is_empty() {
                let list: Vec<String> = after.iter().map(|a| format!("\"{a}\"")).collect();
                t.push_str(&format!("  after = [{}]\n", list.join(", ")));
            }
            t.push('\n');
        }
        t.push_str(&format!("{rest}\n\n[policy.p]\n{policy}\n"));
        t
    }
    fn fault_at(target: &str, kind: &str, fields: &str) -> String {
        format!("[[fault]]\nkind = \"{kind}\"\ntarget = \"{target}\"\nstart_s = 60\nduration_s = 60\n{fields}\n")
    }
    const TWO: &[(&str, &str, &[&str])] = &[("s1", "a", &[]), ("s2", "b", &["s1"])];
    const THREE: &[(&str, &str, &[&str])] = &[("s1", "a", &[]), ("s2", "b", &["s1"]), ("s3", "c", &["s2"])];
    const FOUR: &[(&str, &str, &[&str])] =
        &[("s1", "a", &[]), ("s2", "b", &["s1"]), ("s3", "c", &["s2"]), ("s4", "b", &["s3"])];
    const RETRY: &str = "timeout_ms = 400\nretry = { max_attempts = 3, backoff = { base_ms = 20, max_ms = 200 } }";
    let none = ["", "", ""];
    let b_errors = ["", "errors = { transient_transport = 0.2 }", ""];
    let constant = |ms: u32| format!("service_time = {{ dist = \"constant\", value_ms = {ms} }}");
    let (c50, c30) = (constant(50), constant(30));
    let consts = [c50.as_str(), c30.as_str(), c50.as_str()];
    let users = "[workflow.arrivals.users]\ncount = 12\nspawn_rate = 10\nwait_time = { exponential_mean_s = 0.5 }\nabandon_after_ms = 250";
    let closed = |t: String| {
        t.replace("arrivals = { rate_per_s = 8 }\n", "")
            .replace("deadline_ms = 60000\n", &format!("deadline_ms = 60000\n{users}\n"))
    };
    let deadline = |t: String, ms: u32| t.replace("deadline_ms = 60000", &format!("deadline_ms = {ms}"));
    let inner = "[[dependency]]\nname = \"inner\"\nservers = 8\nservice_time = { dist = \"exponential\", mean_ms = 20 }\nerrors = { transient_transport = 0.3 }\n";
    let other_wf = "[[workflow]]\nname = \"fan\"\narrivals = { rate_per_s = 4 }\ndeadline_ms = 60000\n\n  [[workflow.step]]\n  id = \"f1\"\n  dependency = \"b\"\n\n  [[workflow.step]]\n  id = \"f2\"\n  dependency = \"a\"\n  after = [\"f1\"]\n\n  [[workflow.step]]\n  id = \"f3\"\n  dependency = \"c\"\n  after = [\"f1\"]\n";
    let plain: Vec<(&str, String)> = vec![
        ("3 steps, truncated answers at the 2nd", chain_text(none, "", THREE, RETRY, &fault_at("b", "truncated_result", ""))),
        ("3 steps, schema violations at the 3rd", chain_text(none, "", THREE, RETRY, &fault_at("c", "schema_violation", ""))),
        ("3 steps, lost replies at the 3rd", chain_text(none, "", THREE, RETRY, &fault_at("c", "lost_response", ""))),
        ("3 steps, a timeout fault at the 2nd", chain_text(none, "", THREE, RETRY, &fault_at("b", "timeout", ""))),
        ("3 steps, down at the 2nd", chain_text(none, "", THREE, RETRY, &fault_at("b", "down", "retry_after_ms = 50"))),
        ("3 steps, errors and backoff at the 2nd", chain_text(b_errors, "", THREE, RETRY, "")),
        ("4 steps, errors at the 2nd and 4th", chain_text(b_errors, "", FOUR, RETRY, "")),
        ("2 steps, invalid input at the 2nd, no retry", chain_text(["", "errors = { invalid_input = 0.3 }", ""], "", TWO, "timeout_ms = 0\nretry = { max_attempts = 1 }", "")),
        (
            "3 steps, propagated, clipped timeouts and a reserve per step",
            deadline(chain_text(none, "", THREE, "deadline_propagation = true\ntimeout_ms = 150\nretry = { max_attempts = 2 }\n\n[policy.p.steps]\ns2 = { deadline_reserve_ms = 20 }\ns3 = { deadline_reserve_ms = 40, timeout_ms = 90 }", ""), 260),
        ),
        (
            "3 steps, propagated, no timeout_ms",
            deadline(chain_text(none, "", THREE, "deadline_propagation = true\ntimeout_ms = 0\nretry = { max_attempts = 2 }", ""), 220),
        ),
        (
            "3 constant steps, propagated deadline ends exactly after the 3rd",
            deadline(chain_text(consts, "", THREE, "deadline_propagation = true\ntimeout_ms = 0\nretry = { max_attempts = 2 }", ""), 130),
        ),
        (
            "3 constant steps, propagated, timeouts equal to the service at the 2nd",
            deadline(chain_text(consts, "", THREE, "deadline_propagation = true\ntimeout_ms = 30\nretry = { max_attempts = 2 }\n\n[policy.p.steps]\ns1 = { timeout_ms = 50 }\ns3 = { timeout_ms = 50 }", ""), 200),
        ),
        (
            "2 steps, not propagated, a short deadline, late 2nd steps",
            deadline(chain_text(none, "", TWO, RETRY, ""), 120),
        ),
        (
            "3 steps, resubmission after failures at the 2nd",
            chain_text(["", "errors = { invalid_input = 0.3 }", ""], "resubmit = { probability = 1, delay_ms = 100 }", THREE, "timeout_ms = 0\nretry = { max_attempts = 1 }", ""),
        ),
        ("3 steps, a closed population that abandons", closed(chain_text(b_errors, "", THREE, RETRY, ""))),
        (
            "3 steps, a remote agent in the middle",
            chain_text(["", "calls = [{ dependency = \"inner\", max_attempts = 3, timeout_ms = 500 }]", ""], "", THREE, RETRY, inner),
        ),
        (
            "3 steps, a rate limit at the 3rd",
            chain_text(["", "", "rate_limit = { per_s = 6, retry_after_ms = 100 }"], "", THREE, RETRY, ""),
        ),
        (
            "3 steps, queue expiry and cancel at the 3rd",
            chain_text(["", "", "servers = 1\nqueue_capacity = 3\nqueue_policy = { max_wait_ms = 80 }\nhonors_cancel = true"].map(|s| s), "", THREE, RETRY, "")
                .replace("name = \"c\"\nservers = 4\n", "name = \"c\"\n"),
        ),
        (
            "3 steps, a warm-up boundary",
            chain_text(b_errors, "", THREE, RETRY, "").replace("timeseries_window_s = 10", "timeseries_window_s = 7\nwarmup_s = 33"),
        ),
        ("3 steps beside a workflow that fans out, sharing dependencies", chain_text(b_errors, "", THREE, RETRY, other_wf)),
        (
            "3 steps, two policies",
            chain_text(b_errors, "", THREE, &format!("{RETRY}\n\n[policy.q]\ndeadline_propagation = true\ntimeout_ms = 200\nretry = {{ max_attempts = 2 }}"), ""),
        ),
        (
            "3 steps, a cost budget the 2nd step's retries exhaust",
            chain_text(["cost_units = 1", "cost_units = 1\nerrors = { transient_transport = 0.3 }", "cost_units = 1"], "", THREE, &format!("{RETRY}\nbudget = {{ cost_units = 3.5 }}"), ""),
        ),
        (
            "3 steps, a cost budget exactly the chain's",
            chain_text(["cost_units = 1", "cost_units = 1\nerrors = { transient_transport = 0.3 }", "cost_units = 1"], "", THREE, &format!("{RETRY}\nbudget = {{ cost_units = 3 }}"), ""),
        ),
        ("3 steps, one retry token", chain_text(["", "errors = { transient_transport = 0.3 }", "errors = { transient_transport = 0.3 }"], "", THREE, &format!("{RETRY}\nbudget = {{ retry_tokens = 1 }}"), "")),
        ("3 steps, attempts in all exactly the chain's", chain_text(b_errors, "", THREE, &format!("{RETRY}\nfan_out = {{ max_total_attempts = 3, max_branches = 1 }}"), "")),
        ("3 steps, one attempt more than the chain", chain_text(b_errors, "", THREE, &format!("{RETRY}\nfan_out = {{ max_total_attempts = 4 }}"), "")),
        (
            "3 steps, one cost unit in flight",
            chain_text(["cost_units = 1", "cost_units = 1\nerrors = { transient_transport = 0.3 }", "cost_units = 1"], "", THREE, &format!("{RETRY}\nfan_out = {{ max_parallel_cost_units = 1 }}"), ""),
        ),
        (
            "3 steps, the 3rd after both before it",
            chain_text(b_errors, "", &[("s1", "a", &[]), ("s2", "b", &["s1"]), ("s3", "c", &["s1", "s2"])], RETRY, ""),
        ),
        (
            "3 steps, fallback at the 2nd",
            chain_text(b_errors, "", THREE, &format!("{RETRY}\n\n[policy.p.steps]\ns2 = {{ fallback = \"c\" }}"), ""),
        ),
        (
            "3 steps, a breaker at the 2nd's fallback only",
            chain_text(b_errors, "", THREE, &format!("{RETRY}\n\n[policy.p.steps]\ns2 = {{ fallback = \"alt\" }}\n\n[[policy.p.circuit_breaker]]\ndependency = \"alt\""), ALT),
        ),
        (
            "3 steps, the 2nd hands off when it gives up",
            chain_text(["", "errors = { invalid_input = 0.2 }", ""], "", THREE, &format!("{RETRY}\n\n[policy.p.steps]\ns2 = {{ on_give_up = \"handoff\" }}"), ""),
        ),
        (
            "3 steps, a retry that must fit the deadline at the 2nd",
            deadline(chain_text(b_errors, "", THREE, "deadline_propagation = true\ntimeout_ms = 200\nretry = { max_attempts = 3, backoff = { base_ms = 20, max_ms = 200 } }\n\n[policy.p.steps]\ns2 = { predicted_attempt_ms = 60, deadline_reserve_ms = 10 }", ""), 330),
        ),
        (
            "4 steps at one dependency, a capacity fault",
            chain_text(["", "", ""], "", &[("s1", "a", &[]), ("s2", "a", &["s1"]), ("s3", "a", &["s2"]), ("s4", "a", &["s3"])], RETRY, &fault_at("a", "capacity", "servers = 2"))
                .replace("rate_per_s = 8", "rate_per_s = 3"),
        ),
        (
            "3 steps, one branch at a time",
            chain_text(b_errors, "", THREE, &format!("{RETRY}\nfan_out = {{ max_branches = 1 }}"), ""),
        ),
        (
            "3 steps, queue drops abandoned attempts at the 2nd",
            chain_text(["", "servers = 1\nqueue_policy = { drop_abandoned = true }", ""], "", THREE, "timeout_ms = 120\nretry = { max_attempts = 2 }", "")
                .replace("name = \"b\"\nservers = 4\n", "name = \"b\"\n"),
        ),
        (
            "two chain workflows sharing dependencies, propagated deadlines",
            deadline(
                chain_text(b_errors, "", THREE, "deadline_propagation = true\ntimeout_ms = 150\nretry = { max_attempts = 2 }", &other_wf.replace("after = [\"f1\"]\n\n  [[workflow.step]]\n  id = \"f3\"\n  dependency = \"c\"\n  after = [\"f1\"]", "after = [\"f1\"]\n\n  [[workflow.step]]\n  id = \"f3\"\n  dependency = \"c\"\n  after = [\"f2\"]")),
                300,
            ),
        ),
    ];
    let mut tried = 0;
    for (label, text) in &plain {
        plain_case(label, text);
        tried += 1;
    }
    // Not chains, or chains the probe may refuse: the bytes must agree either way.
    let either: Vec<(&str, String)> = vec![
        (
            "3 constant steps, not propagated, no timeout, the deadline at the 2nd's end",
            deadline(chain_text(consts, "", THREE, "timeout_ms = 0\nretry = { max_attempts = 1 }", ""), 80),
        ),
        (
            "3 steps, not propagated, no timeout, a deadline most runs miss",
            deadline(chain_text(none, "", THREE, "timeout_ms = 0\nretry = { max_attempts = 1 }", ""), 80),
        ),
        (
            "3 constant steps, not propagated, deadline ends exactly after the 2nd, resubmitted",
            deadline(
                chain_text(
                    consts,
                    "resubmit = { probability = 0.5, delay_ms = 10, max_resubmissions = 2 }",
                    THREE,
                    "timeout_ms = 0\nretry = { max_attempts = 1 }",
                    "",
                ),
                80,
            ),
        ),
        (
            "3 constant steps, propagated, a reserve that leaves exactly nothing at the 3rd",
            deadline(
                chain_text(
                    consts,
                    "",
                    THREE,
                    "deadline_propagation = true\ntimeout_ms = 0\nretry = { max_attempts = 2 }\n\n[policy.p.steps]\ns3 = { deadline_reserve_ms = 50 }",
                    "",
                ),
                130,
            ),
        ),
        (
            "3 constant steps, propagated deadline ends exactly after the 2nd",
            deadline(
                chain_text(
                    consts,
                    "",
                    THREE,
                    "deadline_propagation = true\ntimeout_ms = 0\nretry = { max_attempts = 2 }",
                    "",
                ),
                80,
            ),
        ),
        (
            "b after a, c after a",
            chain_text(b_errors, "", &[("s1", "a", &[]), ("s2", "b", &["s1"]), ("s3", "c", &["s1"])], RETRY, ""),
        ),
        (
            "steps listed against their order",
            chain_text(b_errors, "", &[("s3", "c", &["s2"]), ("s1", "a", &[]), ("s2", "b", &["s1"])], RETRY, ""),
        ),
        (
            "steps listed against their order, 2",
            chain_text(b_errors, "", &[("s2", "b", &["s1"]), ("s1", "a", &[])], RETRY, ""),
        ),
        (
            "3 steps, a cost budget short of the chain's",
            chain_text(
                ["cost_units = 1", "cost_units = 1", "cost_units = 1"],
                "",
                THREE,
                &format!("{RETRY}\nbudget = {{ cost_units = 2.5 }}"),
                "",
            ),
        ),
        (
            "3 steps, attempts in all short of the chain",
            chain_text(none, "", THREE, &format!("{RETRY}\nfan_out = {{ max_total_attempts = 2 }}"), ""),
        ),
        (
            "3 steps, a reserve longer than the deadline at the 3rd",
            deadline(
                chain_text(
                    none,
                    "",
                    THREE,
                    "deadline_propagation = true\ntimeout_ms = 0\n\n[policy.p.steps]\ns3 = { deadline_reserve_ms = 500 }",
                    "",
                ),
                400,
            ),
        ),
        (
            "3 steps, soft middle step",
            chain_text(b_errors, "", THREE, RETRY, "")
                .replace("dependency = \"b\"\n  after", "dependency = \"b\"\n  criticality = \"soft\"\n  after"),
        ),
    ];
    for (label, text) in &either {
        let m = model(text);
        let runs = same_both_ways(label, &m);
        eprintln!("{label}: {runs} plain runs");
        tried += 1;
    }
    eprintln!("{tried} cases");
}
