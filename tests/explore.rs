//! `faultline explore`: random fault schedules, invariants, and the shrunk failing schedule
//! written as a scenario that `run` reproduces.

use std::path::Path;
use std::process::{Command, Output};

const INCIDENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/meeting-analysis-incident.toml");
const MMC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/mmc.toml");

fn faultline(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_faultline")).args(args).output().unwrap()
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("faultline-explore-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn explore(out: &Path, jobs: &str) -> Output {
    faultline(&[
        "explore",
        INCIDENT,
        "-p",
        "resilient",
        "--schedules",
        "40",
        "--seed",
        "1",
        "--replications",
        "1",
        "--set",
        "simulation.duration_s=600",
        "--set",
        "simulation.warmup_s=60",
        "-j",
        jobs,
        "-o",
        out.to_str().unwrap(),
    ])
}

#[test]
fn a_broken_invariant_is_shrunk_to_a_scenario_that_run_reproduces() {
    let dir = scratch("shrink");
    let o = explore(&dir.join("a"), "2");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(99), "{text}{}", String::from_utf8_lossy(&o.stderr));
    // Same schedules, same verdicts, same shrink, whatever the thread count.
    let again = explore(&dir.join("a"), "1");
    assert_eq!(String::from_utf8_lossy(&again.stdout), text);

    let broken = text.lines().find_map(|l| l.split("still: ").nth(1)).expect("a shrunk verdict");
    let invariant = broken.split(" (").next().unwrap();
    let count = |section: &str| {
        text.split(section)
            .nth(1)
            .unwrap()
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("  ") && !l.contains("load lowered"))
            .count()
    };
    let (before, after) = (count("\nfirst: "), count("\nshrunk in "));
    assert!(after >= 1 && after <= before, "{before} -> {after} faults\n{text}");

    // The shrunk file runs and breaks the same [slo] threshold.
    let shrunk = dir.join("a/meeting-analysis-incident-resilient-shrunk.toml");
    let file = std::fs::read_to_string(&shrunk).unwrap();
    assert!(file.starts_with("# The shrunk schedule found by `faultline explore"), "{file}");
    let out = dir.join("run");
    let run = faultline(&[
        "run",
        shrunk.to_str().unwrap(),
        "--policy",
        "resilient",
        "--format",
        "json",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("resilient/summary.json")).unwrap()).unwrap();
    if let Some(slo) = invariant.strip_prefix("[slo] ") {
        let mut parts = slo.split(' ');
        let (metric, op, limit) =
            (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap().parse::<f64>().unwrap());
        let v = summary["metrics"][metric].as_f64().unwrap();
        let holds = match op {
            "<" => v < limit,
            "<=" => v <= limit,
            ">" => v > limit,
            ">=" => v >= limit,
            "==" => v == limit,
            _ => panic!("{op}"),
        };
        assert!(!holds, "run of the shrunk file: {metric} = {v}, which satisfies {op} {limit}");
    }

    // The first violating run is traced, and the printed replay command writes the same trace.
    let trace = dir.join("a/meeting-analysis-incident-resilient-shrunk-trace.otlp.json");
    let explored: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    assert!(text.contains("agent.run run-") && text.contains("dependency.logical_call"), "{text}");
    let command = text.lines().find_map(|l| l.strip_prefix("replay: faultline ")).expect("a replay command");
    let replayed = dir.join("replayed.otlp.json");
    let mut args: Vec<&str> = command.split(' ').collect();
    args.extend_from_slice(&["-o", replayed.to_str().unwrap()]);
    let replay = faultline(&args);
    assert!(replay.status.success(), "{command}: {}", String::from_utf8_lossy(&replay.stderr));
    let again: serde_json::Value = serde_json::from_slice(&std::fs::read(&replayed).unwrap()).unwrap();
    assert_eq!(explored["resourceSpans"][0]["scopeSpans"], again["resourceSpans"][0]["scopeSpans"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_policy_that_keeps_every_invariant_exits_0() {
    let dir = scratch("clean");
    let o = faultline(&[
        "explore",
        MMC,
        "-p",
        "plain",
        "--schedules",
        "20",
        "--kind",
        "latency",
        "--kind",
        "capacity",
        "--set",
        "simulation.duration_s=200",
        "--set",
        "simulation.warmup_s=10",
        "--replications",
        "1",
        "-o",
        dir.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("no invariant broken in 20 schedule(s)"), "{text}");
    assert!(text.contains("kinds latency, capacity"), "{text}");
    assert!(!dir.exists(), "nothing is written when nothing broke");
    let bad = faultline(&["explore", MMC, "-p", "plain", "--kind", "lag"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown fault kind `lag`"));
}

/// Moves one figure of a replication's metrics.
type Tamper<'a> = &'a dyn Fn(&mut faultline::metrics::MetricMap);

/// One replication of `toml` under each of its policies, with explore's identity checks.
fn identities_broken(toml: &str, tamper: Tamper) -> Vec<String> {
    let source = faultline::scenario::Source::from_text("s.toml", toml, faultline::scenario::Format::Toml);
    let scenario = faultline::scenario::parse_source(&source).unwrap();
    let model = faultline::engine::Model::compile(&scenario, &source).unwrap();
    let measured_s = (model.world.duration_us - model.world.warmup_us) as f64 / 1e6;
    let mut broken = Vec::new();
    for p in 0..model.policies.len() {
        let mut m = faultline::engine::simulate(&model, p, 0).unwrap().metrics;
        tamper(&mut m);
        broken.extend(faultline::experiment::explore::broken_identities(&m, measured_s));
    }
    broken
}

#[test]
fn explore_checks_the_identities_of_caches_approvals_delegation_and_bad_results() {
    // docs/metrics.md section 5: the shipped scenarios of each feature keep them, and a figure
    // moved against its bound is named (before, explore checked none of these metrics).
    let read =
        |name: &str| std::fs::read_to_string(format!("{}/scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let cache = read("meeting-analysis-incident-cache");
    let approval = read("approval-change-request");
    let delegation = read("a2a-delegation-loop");
    let unchanged = |_: &mut faultline::metrics::MetricMap| {};
    for toml in [&cache, &approval, &delegation] {
        assert_eq!(identities_broken(toml, &unchanged), Vec::<String>::new());
    }
    let cases: [(&str, &str, Tamper); 5] = [
        (&cache, "cache lookups that needed the dependency", &|m| {
            *m.get_mut("cache_lookup_total.miss").unwrap() += 1.0
        }),
        (&cache, "cache_stale_run_total <= cache_stale_served_total", &|m| {
            *m.get_mut("cache_stale_run_total").unwrap() = m["cache_stale_served_total"] + 1.0
        }),
        (&approval, "outcome_total.approval_refused <= approval_total.refused", &|m| {
            *m.get_mut("approval_total.refused").unwrap() = m["outcome_total.approval_refused"] - 1.0
        }),
        (&approval, "add up to at most approval_requested_total", &|m| {
            *m.get_mut("approval_requested_total").unwrap() = 0.0
        }),
        (&delegation, "delegation_revisit_total <= delegation_hop_total", &|m| {
            *m.get_mut("delegation_revisit_total").unwrap() = m["delegation_hop_total"] + 1.0
        }),
    ];
    for (toml, named, tamper) in cases {
        let broken = identities_broken(toml, tamper);
        assert!(!broken.is_empty() && broken.iter().all(|b| b.contains(named)), "{named}: {broken:?}");
    }
}

/// A 3-of-5 quorum over one model that fails a fifth of its attempts, `max_attempts = 1`
/// (review31-quorum M1's qexp2.toml), 60 s.
const QUORUM: &str = r#"
[simulation]
duration_s = 60
warmup_s = 0
seed = 31
replications = 1

[[dependency]]
name = "model"
kind = "model"
servers = 100000
queue_capacity = 100000
service_time = { dist = "exponential", mean_ms = 100 }
errors = { transient_transport = 0.2 }

[[workflow]]
name = "w"
arrivals = { rate_per_s = 20 }
deadline_ms = 600000

  [[workflow.step]]
  id = "vote"
  dependency = "model"
  quorum = { k = 3, n = 5 }

[policy.p]
timeout_ms = 0
retry = { max_attempts = 1 }
"#;

#[test]
fn a_quorum_s_branches_are_first_attempts_not_retries_to_explore() {
    // Five branches of a step with max_attempts = 1 keep the runtime's promise: they are first
    // attempts, bounded by the quorum's n (before: every schedule broke "retries and hedges
    // within ... max_attempts", shrunk to no fault at all: "step vote made 2 attempts").
    let dir = scratch("quorum");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("q.toml");
    std::fs::write(&file, QUORUM).unwrap();
    let out = dir.join("out");
    let o = faultline(&[
        "explore",
        file.to_str().unwrap(),
        "-p",
        "p",
        "--schedules",
        "5",
        "--seed",
        "1",
        "-j",
        "1",
        "-o",
        out.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("no invariant broken in 5 schedule(s)"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn explore_checks_the_quorum_identities() {
    // docs/metrics.md section 5: a verdict closes a quorum that started, a cancelled branch
    // was sent; the quorum scenario keeps both, and a figure moved against its bound is named.
    let unchanged = |_: &mut faultline::metrics::MetricMap| {};
    assert_eq!(identities_broken(QUORUM, &unchanged), Vec::<String>::new());
    let cases: [(&str, Tamper); 2] = [
        ("quorum_total.<verdict> add up to at most quorum_started_total", &|m| {
            *m.get_mut("quorum_started_total").unwrap() -= 1.0
        }),
        ("quorum_branch_cancelled_total <= quorum_branch_sent_total", &|m| {
            *m.get_mut("quorum_branch_cancelled_total").unwrap() = m["quorum_branch_sent_total"] + 1.0
        }),
    ];
    for (named, tamper) in cases {
        let broken = identities_broken(QUORUM, tamper);
        assert!(!broken.is_empty() && broken.iter().all(|b| b.contains(named)), "{named}: {broken:?}");
    }
}
