//! Validation stays fast and stack-safe at the size limits: remote-call graphs with
//! exponentially many paths, call chains as long as MAX_DEPENDENCIES, and the fault kinds'
//! closed vocabulary. Exponential or recursive validation would hang or overflow here.

use faultline::engine::Model;
use faultline::experiment::batch::workers::concurrent_simulations;
use faultline::scenario::{Format, ScenarioError, Source, parse_source};
use faultline::world::fault_kind::FaultKind;
use faultline::world::model::{MAX_DEPENDENCIES, MAX_REMOTE_FAN_OUT};

fn compile(toml: &str) -> Result<Model, ScenarioError> {
    let source = Source::from_text("limits.toml", toml, Format::Toml);
    let scenario = parse_source(&source).unwrap_or_else(|e| panic!("{e}"));
    Model::compile(&scenario, &source)
}

fn rejection(toml: &str) -> ScenarioError {
    match compile(toml) {
        Ok(_) => panic!("the scenario compiled"),
        Err(e) => e,
    }
}

/// A scenario whose dependencies are `(name, callees)`, with one workflow calling `entry`.
fn scenario(deps: &[(String, Vec<String>)], entry: &str) -> String {
    let mut text = String::from("[simulation]\nduration_s = 10\nwarmup_s = 1\nseed = 1\nreplications = 1\n\n");
    for (name, callees) in deps {
        let calls: Vec<String> =
            callees.iter().map(|c| format!("{{ dependency = \"{c}\", timeout_ms = 100 }}")).collect();
        text += &format!(
            "[[dependency]]\nname = \"{name}\"\nservice_time = {{ dist = \"constant\", value_ms = 1 }}\ncalls = [{}]\n\n",
            calls.join(", ")
        );
    }
    text += &format!(
        "[[workflow]]\nname = \"w\"\narrivals = {{ rate_per_s = 1 }}\ndeadline_ms = 1000\n\n  [[workflow.step]]\n  id = \"s\"\n  dependency = \"{entry}\"\n\n[policy.plain]\nretry = {{ max_attempts = 1 }}\n"
    );
    text
}

/// `layers` layers of two dependencies, `a{k}` and `b{k}`, each calling both of layer k + 1
/// once with one attempt: 2^(h + 1) - 2 attempts below a dependency h layers above the bottom.
/// Listed bottom layer first when `bottom_first`.
fn diamond(layers: usize, bottom_first: bool) -> Vec<(String, Vec<String>)> {
    let mut deps = Vec::with_capacity(2 * layers);
    for k in 0..layers {
        let callees = if k + 1 < layers { vec![format!("a{}", k + 1), format!("b{}", k + 1)] } else { Vec::new() };
        deps.push((format!("a{k}"), callees.clone()));
        deps.push((format!("b{k}"), callees));
    }
    if bottom_first {
        deps.reverse();
    }
    deps
}

#[test]
fn a_deep_diamond_is_rejected_for_its_fan_out_without_walking_every_path() {
    // 2^401 - 2 attempts below a0: one visit per path would never finish.
    let e = rejection(&scenario(&diamond(400, false), "a0"));
    assert_eq!(e.field, "dependency[0].calls", "{e}");
    assert!(e.message.starts_with("one attempt here can cause "), "{e}");
    assert!(e.message.ends_with(&format!(" attempts below it; the limit is {MAX_REMOTE_FAN_OUT:.0}")), "{e}");
}

#[test]
fn the_fan_out_error_names_the_first_offending_dependency_in_the_file() {
    // Bottom first, so callees precede callers in the file. Height 15 has 65534 attempts
    // below it, height 16 (b16 at index 32, then a16) the first count past the limit.
    let e = rejection(&scenario(&diamond(40, true), "a0"));
    assert_eq!(e.field, "dependency[32].calls", "{e}");
    assert_eq!(e.message, "one attempt here can cause 131070 attempts below it; the limit is 100000");
}

#[test]
fn a_diamond_under_the_limit_compiles() {
    let model = compile(&scenario(&diamond(16, false), "a0")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(model.world.dependencies.len(), 32);
}

#[test]
fn a_comb_of_max_dependencies_compiles() {
    // A spine a0 -> a1 -> ... 5 000 deep whose every vertebra also calls a leaf b{k + 1}:
    // 2 attempts per layer, 9 998 below a0.
    let layers = MAX_DEPENDENCIES / 2;
    let mut deps = Vec::with_capacity(MAX_DEPENDENCIES);
    for k in 0..layers {
        let callees = if k + 1 < layers { vec![format!("a{}", k + 1), format!("b{}", k + 1)] } else { Vec::new() };
        deps.push((format!("a{k}"), callees));
        deps.push((format!("b{k}"), Vec::new()));
    }
    let model = compile(&scenario(&deps, "a0")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(model.world.dependencies.len(), MAX_DEPENDENCIES);
}

/// d0 -> d1 -> ... -> d{n - 1}, and back to d0 when `closed`.
fn chain(n: usize, closed: bool) -> Vec<(String, Vec<String>)> {
    (0..n)
        .map(|k| {
            let callees = match (k + 1 < n, closed) {
                (true, _) => vec![format!("d{}", k + 1)],
                (false, true) => vec!["d0".to_string()],
                (false, false) => Vec::new(),
            };
            (format!("d{k}"), callees)
        })
        .collect()
}

#[test]
fn a_chain_of_max_dependencies_compiles_without_overflowing_the_stack() {
    let model = compile(&scenario(&chain(MAX_DEPENDENCIES, false), "d0")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(model.world.dependencies.len(), MAX_DEPENDENCIES);
}

#[test]
fn a_cycle_through_max_dependencies_is_reported_by_its_ends_and_length() {
    let e = rejection(&scenario(&chain(MAX_DEPENDENCIES, true), "d0"));
    assert_eq!(e.field, "dependency[0].calls", "{e}");
    let last = MAX_DEPENDENCIES - 1;
    assert_eq!(
        e.message,
        format!(
            "remote calls form a cycle: d0 -> d1 -> d2 -> d3 -> ... ({} more) -> d{} -> d{} -> d{last} -> d0 ({MAX_DEPENDENCIES} dependencies)",
            MAX_DEPENDENCIES - 7,
            last - 2,
            last - 1
        )
    );
}

#[test]
fn a_cycle_below_an_acyclic_start_names_its_first_member() {
    let deps = [
        ("top".to_string(), vec!["x".to_string()]),
        ("y".to_string(), vec!["x".to_string()]),
        ("x".to_string(), vec!["leaf".to_string(), "y".to_string()]),
        ("leaf".to_string(), Vec::new()),
    ];
    let e = rejection(&scenario(&deps, "top"));
    assert_eq!(e.field, "dependency[2].calls", "{e}");
    assert_eq!(e.message, "remote calls form a cycle: x -> y -> x");
}

#[test]
fn fault_kinds_round_trip_through_their_names() {
    for kind in FaultKind::ALL {
        assert_eq!(FaultKind::parse(kind.name()), Some(kind));
    }
    let names: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(
        names,
        [
            "latency",
            "timeout",
            "errors",
            "capacity",
            "down",
            "rate_limit",
            "lost_response",
            "stuck_task",
            "input_required",
            "ignored_cancel",
            "late_cancel",
            "late_result",
            "lost_handle",
            "truncated_result",
            "empty_result",
            "schema_violation",
            "stream_cut",
            "slow_stream",
            "partial_result",
            "stale_index",
            "quota_cut",
            "delegation_loop",
            "cache_outage",
            "cold_cache"
        ]
    );
    assert_eq!(FaultKind::parse("meteor"), None);
    assert_eq!(FaultKind::parse("Latency"), None);
}

/// `count` resilience4j breakers of `window` calls each on the one dependency of a small scenario.
fn breakers(count: usize, window: u32) -> String {
    let mut s = String::from(
        "[simulation]\nduration_s = 10\n\n[[dependency]]\nname = \"api\"\nservice_time = { dist = \"exponential\", mean_ms = 10 }\n\n[[workflow]]\nname = \"w\"\narrivals = { rate_per_s = 1 }\ndeadline_ms = 10000\n\n  [[workflow.step]]\n  id = \"s\"\n  dependency = \"api\"\n\n[policy.p]\n",
    );
    for _ in 0..count {
        s.push_str(&format!("\n[[policy.p.circuit_breaker]]\ndependency = \"api\"\nsliding_window_size = {window}\n"));
    }
    s
}

#[test]
fn many_bulkheads_on_one_dependency_get_unique_level_columns_in_n_log_n() {
    // Each bulkhead's permits in use is a time-series column: bulkhead.api.in_use,
    // bulkhead.api-2.in_use, ... (a scan of the suffixes per instance would be quadratic).
    let started = std::time::Instant::now();
    let text =
        breakers(0, 100) + &"\n[[policy.p.bulkhead]]\ndependency = \"api\"\nmax_concurrent_calls = 5\n".repeat(10_000);
    let m = compile(&text).unwrap_or_else(|e| panic!("{e}"));
    let levels = &m.policies[0].level_labels;
    assert_eq!(levels.len(), 10_000);
    assert_eq!((levels[0].as_str(), levels[9_999].as_str()), ("bulkhead.api.in_use", "bulkhead.api-10000.in_use"));
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
}

#[test]
fn many_breakers_compile_in_n_log_n_and_big_windows_are_refused_with_their_size() {
    // Ten thousand breakers on one dependency get labels api, api-2, ... api-10000: a scan per
    // suffix made this cubic (22 s for 4 000, minutes for 10 000).
    let started = std::time::Instant::now();
    let m = compile(&breakers(10_000, 100)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.policies[0].breaker_labels.len(), 10_000);
    assert_eq!(m.policies[0].breaker_labels[9_999], "api-10000");
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    // 25 breakers at the largest window would take 572 MiB a simulation: refused at the field.
    let e = rejection(&breakers(25, 1_000_000));
    assert_eq!(e.field, "policy.p.circuit_breaker[0].sliding_window_size", "{e}");
    assert!(e.message.contains("572 MiB") && e.message.contains("256 MiB"), "{e}");
    // 10 of them (229 MiB) are allowed.
    compile(&breakers(10, 1_000_000)).unwrap_or_else(|e| panic!("{e}"));
    // The bound per command: workers x windows under 1 GiB. 10 such breakers take
    // 10 x 24 B x 1 000 000 = 240 000 000 B a simulation: 4 fit in 1 GiB (4.47), not 8.
    let m = compile(&breakers(10, 1_000_000)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.guard_window_bytes(), 240_000_000);
    assert_eq!(concurrent_simulations(m.guard_window_bytes(), 8), 4);
    assert_eq!(concurrent_simulations(m.guard_window_bytes(), 2), 2);
    assert_eq!(concurrent_simulations(0, 8), 8);
    assert_eq!(concurrent_simulations(u64::MAX, 8), 1);
    // One table over the instance limit is refused before any guard is compiled.
    let e = rejection(&breakers(10_001, 100));
    assert!(e.message.contains("10001 guard tables"), "{e}");
}

#[test]
fn a_command_runs_fewer_simulations_at_once_when_their_windows_would_pass_a_gibibyte() {
    let dir = std::env::temp_dir().join(format!("faultline-windows-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("big.toml");
    std::fs::write(&file, breakers(10, 1_000_000)).unwrap();
    let run = |jobs: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_faultline"))
            .args(["run", file.to_str().unwrap(), "--replications", "4", "--jobs", jobs, "--out"])
            .arg(dir.join(format!("out-{jobs}")))
            .output()
            .unwrap()
    };
    let (eight, one) = (run("8"), run("1"));
    let stderr = String::from_utf8_lossy(&eight.stderr);
    assert!(eight.status.success(), "{stderr}");
    assert!(stderr.contains("note: running 4 simulation(s) at once, not 8"), "{stderr}");
    assert!(stderr.contains("229 MiB in each"), "{stderr}");
    // Only the time changes: the same bytes as one worker.
    let summary = |jobs: &str| std::fs::read(dir.join(format!("out-{jobs}")).join("p/summary.json")).unwrap();
    assert!(one.status.success());
    assert_eq!(summary("8"), summary("1"));
    std::fs::remove_dir_all(&dir).unwrap();
}
