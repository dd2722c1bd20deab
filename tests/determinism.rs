//! Determinism is a product feature: same scenario + seed + binary gives the same bytes,
//! whatever the thread count, and two policies see the same draws for the same run.

mod common;
use common::*;
use faultline::engine::{AttemptTrace, SimError, simulate, simulate_traced, simulate_until_stopped};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;

const INCIDENT: &str = "scenarios/meeting-analysis-incident.toml";

fn incident() -> faultline::engine::Model {
    model(&std::fs::read_to_string(INCIDENT).unwrap())
}

#[test]
fn the_same_seed_gives_bit_identical_metrics_and_time_series() {
    let m = incident();
    for policy in 0..m.policies.len() {
        let a = simulate(&m, policy, 42).unwrap();
        let b = simulate(&m, policy, 42).unwrap();
        assert_eq!(metric_bits(&a.metrics), metric_bits(&b.metrics));
        assert_eq!(a.events, b.events);
        assert_eq!(a.timeseries.rows(), b.timeseries.rows());
        for row in 0..a.timeseries.rows() {
            for col in 0..a.timeseries.stride() {
                assert_eq!(a.timeseries.value(row, col), b.timeseries.value(row, col));
            }
        }
        let c = simulate(&m, policy, 43).unwrap();
        assert_ne!(metric_bits(&a.metrics), metric_bits(&c.metrics), "a different seed must give a different run");
    }
}

/// The Python package's Ctrl-C reaches a running replication through a stop flag, read at each
/// window's end: unset, it changes no figure; set, the replication ends at the first window
/// (were the flag ignored, the first call would return the full replication).
#[test]
fn a_stop_flag_ends_a_replication_at_a_window_and_an_unset_one_changes_nothing() {
    let m = incident();
    let unset = AtomicBool::new(false);
    let watched = simulate_until_stopped(&m, 0, 42, &unset).unwrap();
    let plain = simulate(&m, 0, 42).unwrap();
    assert_eq!(metric_bits(&watched.metrics), metric_bits(&plain.metrics));
    assert_eq!(watched.events, plain.events);
    let set = AtomicBool::new(true);
    assert!(matches!(simulate_until_stopped(&m, 0, 42, &set), Err(SimError::Stopped)));
}

/// Key of an attempt of a root run: (workflow, arrival, resubmission, stream key).
type AttemptKey = (u16, u32, u8, u64);

fn by_key(trace: &[AttemptTrace]) -> BTreeMap<AttemptKey, &AttemptTrace> {
    trace.iter().map(|t| ((t.workflow, t.arrival, t.resubmission, t.key), t)).collect()
}

#[test]
fn policies_share_arrivals_and_intrinsic_attempt_draws() {
    let m = incident();
    let naive = m.policy_index("naive").unwrap();
    let resilient = m.policy_index("resilient").unwrap();
    let (_, a) = simulate_traced(&m, naive, 9).unwrap();
    let (_, b) = simulate_traced(&m, resilient, 9).unwrap();
    let (a, b) = (by_key(&a), by_key(&b));

    // Arrivals: every first submission starts at the same time under both policies.
    let starts = |t: &BTreeMap<AttemptKey, &AttemptTrace>| {
        t.values()
            .filter(|x| x.resubmission == 0)
            .map(|x| ((x.workflow, x.arrival), x.run_start_us))
            .collect::<BTreeMap<_, _>>()
    };
    let (sa, sb) = (starts(&a), starts(&b));
    let mut shared_runs = 0;
    for (run, start) in &sa {
        if let Some(other) = sb.get(run) {
            assert_eq!(start, other, "run {run:?} arrives at the same time");
            shared_runs += 1;
        }
    }
    assert!(shared_runs > 30_000, "{shared_runs}");

    // Attempt k of step s of run n: the same uniforms, and the same base service time when
    // both policies sent it to the same dependency for the same purpose (one policy's retry
    // may be the other's fallback or status lookup).
    let mut shared_attempts = 0;
    for (key, x) in &a {
        if let Some(y) = b.get(key) {
            assert_eq!(x.draws, y.draws, "{key:?}");
            if (x.dependency, x.lookup) == (y.dependency, y.lookup) {
                assert_eq!(x.base_service_ms.to_bits(), y.base_service_ms.to_bits(), "{key:?}");
                shared_attempts += 1;
            }
        }
    }
    assert!(shared_attempts > 100_000, "{shared_attempts}");
}

#[test]
fn different_runs_and_attempts_get_different_draws() {
    let m = incident();
    let (_, trace) = simulate_traced(&m, 0, 9).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for t in &trace {
        assert!(seen.insert(t.draws[0].to_bits()), "a repeated draw means two attempts share a stream");
    }
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_faultline")
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("faultline-determinism-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn faultline(args: &[&str]) {
    let out = Command::new(bin()).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn sweep_files_are_identical_for_any_thread_count() {
    let (one, two) = (temp_dir("sweep-1"), temp_dir("sweep-2"));
    let base = [
        "sweep",
        INCIDENT,
        "--param",
        "policy.resilient.budget.retry_tokens=0,2",
        "--param",
        "workflow.meeting-analysis-draft.arrivals.rate_per_s=10,15",
        "--replications",
        "3",
        "--set",
        "simulation.duration_s=900",
    ];
    faultline(&[&base[..], &["--jobs", "1", "--out", one.to_str().unwrap()]].concat());
    faultline(&[&base[..], &["--jobs", "2", "--out", two.to_str().unwrap()]].concat());
    let (a, b) = (read_all(&one), read_all(&two));
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        vec![Path::new("manifest.json"), Path::new("report.html"), Path::new("sweep.csv"), Path::new("sweep.json")]
    );
    assert_eq!(a, b);
    let csv = String::from_utf8(a[Path::new("sweep.csv")].clone()).unwrap();
    assert_eq!(csv.lines().count(), 1 + 4 * 2, "4 grid points x 2 policies");
    for dir in [one, two] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn run_files_are_identical_for_any_thread_count() {
    let (one, two) = (temp_dir("run-1"), temp_dir("run-2"));
    let base = ["run", INCIDENT, "--replications", "4", "--set", "simulation.duration_s=900"];
    faultline(&[&base[..], &["--jobs", "1", "--out", one.to_str().unwrap()]].concat());
    faultline(&[&base[..], &["--jobs", "2", "--out", two.to_str().unwrap()]].concat());
    let (a, b) = (read_all(&one), read_all(&two));
    assert_eq!(a.len(), 8, "summary.json, timeseries.csv and replications.csv for two policies, report.html, manifest");
    assert_eq!(a, b);
    for dir in [one, two] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}
