//! Delegation between A2A agents (runtime::delegation, docs/scenario.md 4.3 and 8.14), shown
//! from outside: scenario runs whose figures would differ if a limit were ignored. A loop fault
//! with and without `visited_agents_required`, `max_total_attempts` and
//! `max_parallel_cost_units` across hops, and a chain's completion against p^d.

mod common;

use common::{assert_in_ci, metric, model, replicate};
use faultline::metrics::MetricMap;
use std::process::Command;

/// Agents a0 -> a1 -> ... -> a{depth}, each delegating to the next; the root run's one step
/// calls a0. Agent a{i} (i >= 1) fails a share `error` of its attempts (TRANSIENT_TRANSPORT);
/// each hop has `hop_attempts` attempts. `extra` goes in after the dependencies, `fan_out` is
/// the policy's table.
fn chain(depth: usize, error: f64, hop_attempts: u32, cost: f64, extra: &str, fan_out: &str) -> String {
    let mut deps = String::new();
    for i in 0..=depth {
        let calls = if i < depth {
            format!(
                "calls = [{{ dependency = \"a{}\", delegate = true, max_attempts = {hop_attempts}, timeout_ms = 600000 }}]",
                i + 1
            )
        } else {
            String::new()
        };
        let errors =
            if i > 0 && error > 0.0 { format!("errors = {{ transient_transport = {error} }}") } else { String::new() };
        deps.push_str(&format!(
            r#"
[[dependency]]
name = "a{i}"
kind = "a2a_agent"
servers = 10000
queue_capacity = 10000
service_time = {{ dist = "constant", value_ms = 10 }}
cost_units = {cost}
{errors}
{calls}
"#
        ));
    }
    format!(
        r#"
[simulation]
duration_s = 200
warmup_s = 0
seed = 5
replications = 8
{deps}
{extra}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 20 }}
deadline_ms = 600000

  [[workflow.step]]
  id = "ask"
  dependency = "a0"

[policy.p]
timeout_ms = 0
retry = {{ max_attempts = 1 }}
fan_out = {{ {fan_out} }}
"#
    )
}

/// a0 -> a1 (one hop) and a delegation loop fault at a1 over the whole run: a1 delegates back
/// to a0, which delegates to a1 again, and so on. a1 fails a share `error` of its attempts;
/// a hop a0 -> a1 has `hop_attempts` attempts, the hop back one.
fn looping_with(error: f64, hop_attempts: u32, fan_out: &str) -> String {
    let fault = r#"
[[fault]]
kind = "delegation_loop"
target = "a1"
start_s = 0
duration_s = 10000
timeout_ms = 600000
"#;
    chain(1, error, hop_attempts, 1.0, fault, fan_out)
}

fn looping(fan_out: &str) -> String {
    looping_with(0.0, 1, fan_out)
}

fn each(reps: &[MetricMap], name: &str) -> Vec<f64> {
    reps.iter().map(|m| *m.get(name).unwrap_or_else(|| panic!("no metric {name}"))).collect()
}

fn total(reps: &[MetricMap], name: &str) -> f64 {
    each(reps, name).iter().sum()
}

#[test]
fn a_loop_is_cut_at_the_first_revisit_only_with_visited_agents_required() {
    // Without the flag the loop a0 -> a1 -> a0 -> a1 ... goes on to the depth limit: 4 hops, the
    // fifth refused, and the refusal fails every call above it (PERMANENT_PROVIDER, never
    // retried): 1 + 4 attempts per root run, every run failed.
    let open = replicate(&model(&looping("max_delegation_depth = 4")), 0);
    // With it the first hop back (a1 -> a0) is refused at once and a1 goes on without it (a0 is
    // at work on the chain already): 1 + 1 attempts, every run succeeded.
    let strict = replicate(&model(&looping("max_delegation_depth = 4, visited_agents_required = true")), 0);
    let runs = total(&open, "logical_run_total");
    assert!(runs > 1000.0, "{runs} runs");
    for (name, open_v, strict_v) in [
        ("delegation_attempts_per_run.max", 5.0, 2.0),
        ("delegation_attempts_per_run.mean", 5.0, 2.0),
        ("delegation_depth.max", 4.0, 1.0),
    ] {
        assert!(each(&open, name).iter().all(|&v| v == open_v), "{name} without the flag: {:?}", each(&open, name));
        assert!(each(&strict, name).iter().all(|&v| v == strict_v), "{name} with it: {:?}", each(&strict, name));
    }
    // Every hop after the first is a revisit; each run is refused once, for its reason.
    assert_eq!(total(&open, "delegation_hop_total"), 4.0 * runs);
    assert_eq!(total(&open, "delegation_revisit_total"), 3.0 * runs);
    assert_eq!(total(&open, "delegation_refused_total.depth"), runs);
    assert_eq!(total(&open, "delegation_refused_total.visited"), 0.0);
    assert_eq!(total(&open, "outcome_total.failed"), runs);
    assert_eq!(total(&strict, "delegation_refused_total.visited"), runs, "one loop detected per run");
    assert_eq!(total(&strict, "delegation_revisit_total"), 0.0);
    assert_eq!(total(&strict, "outcome_total.succeeded"), runs);
    // Four times the cost per run: the runtime's attempt at a0 and each hop cost 1 unit.
    assert_eq!(total(&open, "cost_units_total"), 5.0 * runs);
    assert_eq!(total(&strict, "cost_units_total"), 2.0 * runs);
}

#[test]
fn without_any_limit_a_loop_ends_at_the_simulators_bound() {
    // No delegation limit: the chain stops at MAX_DELEGATION_DEPTH = 16 hops.
    let unbounded = replicate(&model(&looping("")), 0);
    assert!(each(&unbounded, "delegation_attempts_per_run.max").iter().all(|&v| v == 17.0));
    assert!(each(&unbounded, "delegation_depth.max").iter().all(|&v| v == 16.0));
}

#[test]
fn with_retries_a_loop_stays_within_its_attempts_product_and_the_flag_cuts_it() {
    // a1 fails 40 % of its attempts, before it delegates; a hop a0 -> a1 may be retried once,
    // the hop back not. A failure below a level is retried above it (TRANSIENT_TRANSPORT runs
    // up the chain), so retries multiply by level, as layers of retries do (ANCHORS.md 1): with
    // m_k attempts at level k, a root run makes at most 1 + sum_k prod_{j<=k} m_j attempts.
    let per_level = [2.0, 1.0, 2.0, 1.0];
    let bound = 1.0 + (1..=4).map(|k| per_level[..k].iter().product::<f64>()).sum::<f64>();
    assert_eq!(bound, 13.0);
    let open = replicate(&model(&looping_with(0.4, 2, "max_delegation_depth = 4")), 0);
    let strict =
        replicate(&model(&looping_with(0.4, 2, "max_delegation_depth = 4, visited_agents_required = true")), 0);
    let open_max = each(&open, "delegation_attempts_per_run.max");
    let strict_max = each(&strict, "delegation_attempts_per_run.max");
    // Retried levels reach past the 5 attempts of the loop without errors, never past the bound.
    assert!(open_max.iter().all(|&v| (7.0..=bound).contains(&v)), "{open_max:?}");
    // With the flag one level: 1 + 2 attempts at most, reached.
    assert!(strict_max.iter().all(|&v| v == 3.0), "{strict_max:?}");
    let runs = total(&strict, "logical_run_total");
    let cut = total(&strict, "delegation_refused_total.visited");
    // Every run whose hop to a1 succeeded detected the loop once: a share 1 - 0.4^2 of them.
    assert!((cut / runs - 0.84).abs() < 0.02, "{cut} of {runs}");
}

#[test]
fn max_total_attempts_caps_the_attempts_of_a_root_run_across_hops_exactly() {
    // A chain of 4 hops whose agents fail 30 % of their attempts, 3 attempts a hop: a run makes
    // from 5 to 13 attempts without a cap.
    let free = replicate(&model(&chain(4, 0.3, 3, 1.0, "", "")), 0);
    let capped = replicate(&model(&chain(4, 0.3, 3, 1.0, "", "max_total_attempts = 6")), 0);
    let free_max = each(&free, "delegation_attempts_per_run.max");
    assert!(free_max.iter().all(|&v| v > 6.0), "without the cap: {free_max:?}");
    let capped_max = each(&capped, "delegation_attempts_per_run.max");
    assert!(capped_max.iter().all(|&v| v == 6.0), "the cap is reached and never passed: {capped_max:?}");
    assert!(total(&capped, "delegation_refused_total.total_attempts") > 0.0);
    assert_eq!(total(&free, "delegation_refused_total.total_attempts"), 0.0);
}

#[test]
fn max_parallel_cost_units_caps_the_cost_in_flight_across_hops() {
    // Each agent costs 2 units and holds them while its hop below is out: a0 + a1 + ... + a4 is
    // 10 units in flight at the deepest hop. A cap of 7 lets a0, a1, a2 (6) and refuses a3.
    let free = replicate(&model(&chain(4, 0.0, 1, 2.0, "", "")), 0);
    let capped = replicate(&model(&chain(4, 0.0, 1, 2.0, "", "max_parallel_cost_units = 7")), 0);
    assert!(each(&free, "delegation_parallel_cost_units.max").iter().all(|&v| v == 10.0));
    assert!(each(&capped, "delegation_parallel_cost_units.max").iter().all(|&v| v == 6.0));
    let runs = total(&capped, "logical_run_total");
    assert_eq!(total(&capped, "delegation_refused_total.parallel_cost"), runs);
    assert_eq!(total(&capped, "outcome_total.failed"), runs);
    assert_eq!(total(&free, "outcome_total.succeeded"), total(&free, "logical_run_total"));
}

#[test]
fn a_chain_of_depth_d_completes_with_the_product_of_its_hops_successes() {
    // Each of the 3 hops' agents fails 20 % of its attempts, one attempt a hop: p^d = 0.8^3.
    let p: f64 = 0.8;
    let reps = replicate(&model(&chain(3, 1.0 - p, 1, 1.0, "", "")), 0);
    let shares: Vec<MetricMap> = reps
        .iter()
        .map(|m| {
            let mut m = m.clone();
            m.insert("share".into(), m["outcome_total.succeeded"] / m["logical_run_total"]);
            m
        })
        .collect();
    assert_in_ci("chain of 3 hops", &metric(&shares, "share"), p.powi(3), 2);
    // With 2 attempts a hop, a failure below a hop is retried too (it comes up as
    // TRANSIENT_TRANSPORT): the subtree from hop k succeeds with s_k = 1 - (1 - p s_(k+1))^2,
    // s_4 = 1, not with (1 - 0.2^2)^3 (0.8847), which a chain that retried only its own
    // agent's errors would give.
    let reps = replicate(&model(&chain(3, 1.0 - p, 2, 1.0, "", "")), 0);
    let shares: Vec<MetricMap> = reps
        .iter()
        .map(|m| {
            let mut m = m.clone();
            m.insert("share".into(), m["outcome_total.succeeded"] / m["logical_run_total"]);
            m
        })
        .collect();
    let nested = (0..3).fold(1.0, |below: f64, _| 1.0 - (1.0 - p * below).powi(2));
    assert!((nested - 0.940922).abs() < 1e-6, "{nested}");
    assert_in_ci("chain of 3 hops, 2 attempts each", &metric(&shares, "share"), nested, 2);
}

#[test]
fn a_scenario_without_delegation_has_no_delegation_metrics() {
    let plain = chain(2, 0.0, 1, 1.0, "", "").replace(", delegate = true", "");
    let reps = replicate(&model(&plain), 0);
    assert!(reps[0].keys().all(|k| !k.starts_with("delegation_")));
    let delegating = replicate(&model(&chain(2, 0.0, 1, 1.0, "", "")), 0);
    assert!(delegating[0].contains_key("delegation_hop_total"));
}

#[test]
fn a_delegation_loop_fault_checks_its_fields_with_located_errors() {
    let base = looping("");
    let cases = [
        (base.replace("duration_s = 10000\ntimeout_ms = 600000\n", "duration_s = 10000\n"), "needs `timeout_ms`"),
        (base.replace("timeout_ms = 600000\n", "timeout_ms = 600000\nmax_attempts = 0\n"), "max_attempts"),
        (base.replace("timeout_ms = 600000\n", "timeout_ms = 600000\nfactor = 2\n"), "`factor` does not apply"),
        (base.replace("fan_out = {  }", "fan_out = { max_delegation_depth = 17 }"), "max_delegation_depth"),
        // A loop needs an A2A agent in a delegation (before: accepted; at a model it held its
        // one server while waiting for itself until the deadline; after a plain call it
        // started a chain of its own).
        (base.replace("delegate = true", "delegate = false"), "not an A2A agent in a delegation"),
        (
            base.replace("target = \"a1\"", "target = \"m\"").replace(
                "[[workflow]]",
                "[[dependency]]\nname = \"m\"\nkind = \"model\"\nservice_time = { dist = \"constant\", value_ms = 1 }\n\n[[workflow]]",
            ),
            "not an A2A agent in a delegation",
        ),
    ];
    for (toml, needle) in cases {
        let source = faultline::scenario::Source::from_text("t.toml", &toml, faultline::scenario::Format::Toml);
        let scenario = faultline::scenario::parse_source(&source).unwrap_or_else(|e| panic!("{e}"));
        let err = match faultline::engine::Model::compile(&scenario, &source) {
            Ok(_) => panic!("accepted: {needle}"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(needle) && err.starts_with("t.toml:"), "{err}");
    }
}

#[test]
fn validate_warns_when_a_fallback_or_a_parallel_branch_shares_its_primarys_failure_domain() {
    let dir = std::env::temp_dir().join(format!("faultline-delegation-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let toml = r#"
[simulation]
duration_s = 10

[[dependency]]
name = "model-a"
service_time = { dist = "constant", value_ms = 10 }
failure_domain = "provider-x"

[[dependency]]
name = "model-b"
service_time = { dist = "constant", value_ms = 10 }
failure_domain = "provider-x"

[[dependency]]
name = "model-c"
service_time = { dist = "constant", value_ms = 10 }
failure_domain = "provider-y"

[[workflow]]
name = "w"
arrivals = { rate_per_s = 1 }
deadline_ms = 1000

  [[workflow.step]]
  id = "one"
  dependency = "model-a"

  [[workflow.step]]
  id = "two"
  dependency = "model-b"

[policy.p]
steps.one = { fallback = "model-b" }
steps.two = { fallback = "model-c" }
"#;
    let path = dir.join("domains.toml");
    std::fs::write(&path, toml).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_faultline")).arg("validate").arg(&path).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let warnings: Vec<&str> = stdout.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 2, "{stdout}");
    // The parallel branch two (model-b) beside one (model-a), and one's fallback model-b.
    assert!(
        warnings[0].contains("workflow[0].step[1].dependency") && warnings[0].contains("parallel branch `model-b`")
    );
    assert!(warnings[1].contains("policy.p.steps.one.fallback") && warnings[1].contains("fallback `model-b`"));
    assert!(warnings[0].contains("as its sibling `model-a`"), "{}", warnings[0]);
    assert!(warnings[1].contains("as its primary `model-a`"), "{}", warnings[1]);
    for w in &warnings {
        assert!(
            w.contains("`provider-x`") && w.contains("`model-a`") && w.contains("dependency[0].failure_domain"),
            "{w}"
        );
    }
    // model-c is in another domain: two's fallback is fine.
    assert!(!stdout.contains("model-c"), "{stdout}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn under_propagation_a_hop_waits_no_longer_than_the_root_deadline() {
    // a0 (3 s) delegates to a1 (3 s) at 3 s on a 5 s deadline. Before: the hop waited for a1
    // until 6 s (its call's 600 s timeout), so a0 held its server to 6 000 ms.
    let slow = looping("")
        .replace("value_ms = 10 }", "value_ms = 3000 }")
        .replace("deadline_ms = 600000", "deadline_ms = 5000");
    let reps = replicate(&model(&slow), 0);
    for r in &reps {
        assert_eq!(r["dependency.a0.sojourn_ms.mean"], 5000.0, "a0 stops waiting at the deadline");
        assert!(r["dependency.a1.timeout_total"] > 0.0);
    }
    // Without propagation the hop waits for a1's answer (and its own hop back): 6 s and more.
    let noprop = slow.replace("timeout_ms = 0\n", "timeout_ms = 100000\ndeadline_propagation = false\n");
    let reps = replicate(&model(&noprop), 0);
    assert!(reps.iter().all(|r| r["dependency.a0.sojourn_ms.mean"] > 5000.0));
}

#[test]
fn a_hop_to_a_looping_agent_times_out_before_the_loop_answers() {
    // a0 (10 ms) delegates to a1 (10 ms) with a 15 ms hop timeout, and a1's loop fault sends a
    // hop back to a0 when a1's service ends: a1's answer waits for a0 again, past the timeout,
    // though a1's own service ends 5 ms before it. With t the root attempt's start: hop 1 to a1
    // at t+10 times out at t+25 (a1 goes on, detached); its hop back reaches a0 at t+20, whose
    // hop 3 to a1 at t+30 times out at t+45; a1's hop back at t+40 reaches a0 at depth 4, whose
    // fifth hop is refused at t+50. Two a1 timeouts and four hops per run, every run failed;
    // a0 holds 25, 25 and 10 ms (mean 20), a1 35 (to its hop back's failure at t+45) and 20.
    let toml = looping("max_delegation_depth = 4")
        .replace("max_attempts = 1, timeout_ms = 600000 }", "max_attempts = 1, timeout_ms = 15 }");
    assert!(toml.contains("timeout_ms = 15 }"));
    let reps = replicate(&model(&toml), 0);
    for r in &reps {
        let runs = r["logical_run_total"];
        assert!(runs > 3000.0, "{runs} runs");
        assert_eq!(r["dependency.a1.timeout_total"], 2.0 * runs, "each hop to a1 times out");
        assert_eq!(r["dependency.a0.timeout_total"], 0.0);
        assert_eq!(r["delegation_hop_total"], 4.0 * runs);
        assert_eq!(r["outcome_total.failed"], runs);
        assert_eq!(r["dependency.a0.sojourn_ms.mean"], 20.0);
        assert_eq!(r["dependency.a1.sojourn_ms.mean"], 27.5);
    }
}
