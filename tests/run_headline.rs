//! What `faultline run` prints first (docs/metrics.md 6.5): the headline figures during the
//! fault windows and over the whole run with their 95 % intervals, then the `[slo]` verdicts,
//! exit 99 with `--check-slo` when one fails. Checked from outside: the binary's output against
//! README's incident table, and against intervals and verdicts recomputed here from the
//! replications.csv the same run wrote.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const INCIDENT: &str = "scenarios/meeting-analysis-incident.toml";

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("faultline-headline-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn faultline(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_faultline")).args(args).current_dir(dir).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// The headline table's cells for `metric` and `policy`: (during the faults, whole run).
fn cells(text: &str, metric: &str, policy: &str) -> (String, String) {
    let mut current = String::new();
    for line in text.lines() {
        if line.starts_with("[slo]") {
            break;
        }
        let first = line.split("  ").next().unwrap_or("").trim();
        if !line.starts_with(' ') && !first.is_empty() {
            current = first.to_string();
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let at = usize::from(!line.starts_with(' '));
        if current == metric && words.get(at) == Some(&policy) {
            // The cells are separated by two spaces or more; a cell holds `mean [low, high]`.
            let rest: Vec<&str> = line.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
            let n = rest.len();
            return (rest[n - 2].to_string(), rest[n - 1].to_string());
        }
    }
    panic!("no row {metric} / {policy} in:\n{text}")
}

/// `0.9633 [0.9622, 0.9644]` as (mean, low, high).
fn parse(cell: &str) -> (f64, f64, f64) {
    let (mean, interval) = cell.split_once(" [").unwrap_or_else(|| panic!("no interval in `{cell}`"));
    let (low, high) = interval.trim_end_matches(']').split_once(", ").unwrap();
    (mean.parse().unwrap(), low.parse().unwrap(), high.parse().unwrap())
}

/// A column of replications.csv.
fn column(csv: &Path, name: &str) -> Vec<f64> {
    let text = std::fs::read_to_string(csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let k = header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no column {name}"));
    lines.map(|l| l.split(',').nth(k).unwrap().parse().unwrap()).collect()
}

/// Mean and Student-t 95 % half-width, computed here and not by the crate's statistics.
fn mean_and_half_width(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    (mean, common::t_quantile(0.975, xs.len() as u32 - 1) * sd / n.sqrt())
}

/// README's incident table quotes the figures during the incident; `run` prints them first,
/// with intervals that are the replications' own.
#[test]
fn the_incident_headline_shows_the_figures_readme_quotes_during_the_fault() {
    let dir = scratch("incident");
    let o = faultline(&dir, &["run", &format!("{ROOT}/{INCIDENT}"), "-o", "out"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[2].starts_with("metric") && lines[2].contains("during the faults") && lines[2].ends_with("whole run")
    );
    // Headline rows in order, and no row of the old 70 unless asked for.
    let rows: Vec<&str> = lines[4..]
        .iter()
        .take_while(|l| !l.starts_with('['))
        .filter(|l| !l.starts_with(' '))
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(
        rows,
        [
            "auto_completion_ratio",
            "safe_outcome_ratio",
            "deadline_exceeded_ratio",
            "run_latency_ms.p95",
            "retry_amplification_ratio",
            "cost_per_success",
            "duplicate_effect_total",
            // The file's [slo.regression] names incident.retry_amplification_ratio: that is
            // retry_amplification_ratio's "during the faults" column above, not a row again.
            "recovery_time_s"
        ],
        "{text}"
    );
    assert!(!text.contains("logical_run_total") && !text.contains("dependency."), "{text}");

    // README's table: naive during the incident 96.3 % [96.2, 96.4] completion, 87.1 %
    // [86.9, 87.3] deadline misses, 2.97 [2.96, 2.97] amplification.
    let readme = std::fs::read_to_string(format!("{ROOT}/README.md")).unwrap();
    for (metric, row, percent) in [
        ("auto_completion_ratio", "| automatic completion |", true),
        ("deadline_exceeded_ratio", "| root deadline misses |", true),
        ("retry_amplification_ratio", "| retry amplification |", false),
    ] {
        let line = readme.lines().find(|l| l.starts_with(row)).unwrap();
        let quoted = line.split('|').nth(3).unwrap().trim().replace(" %", "");
        let (during, whole) = cells(&text, metric, "naive");
        let (m, l, h) = parse(&during);
        let scale = if percent { 100.0 } else { 1.0 };
        let decimals = if percent { 1 } else { 2 };
        let said = format!("{:.decimals$} [{:.decimals$}, {:.decimals$}]", m * scale, l * scale, h * scale);
        assert_eq!(said, quoted, "{metric}: the headline's {during} against README's {quoted}");
        // The whole run is another figure: the storm is in the fault window.
        assert_ne!(parse(&whole).0, m, "{metric}");
    }

    // Every interval is the Student-t one of replications.csv's column, clipped to the range.
    for policy in ["naive", "resilient"] {
        let csv = dir.join("out").join(policy).join("replications.csv");
        for (metric, column_name, during) in [
            ("auto_completion_ratio", "incident.auto_completion_ratio", true),
            ("deadline_exceeded_ratio", "deadline_exceeded_ratio", false),
            ("cost_per_success", "incident.cost_per_success", true),
            ("run_latency_ms.p95", "run_latency_ms.p95", false),
        ] {
            let (mean, half) = mean_and_half_width(&column(&csv, column_name));
            let (d, w) = cells(&text, metric, policy);
            let (m, l, h) = parse(if during { &d } else { &w });
            let ulp = 10f64.powi(-(1 - half.log10().floor() as i32).clamp(0, 4)) / 2.0 + 1e-12;
            assert!((m - mean).abs() <= ulp, "{policy} {column_name}: {m} against {mean}");
            assert!((l - (mean - half).max(0.0)).abs() <= ulp, "{policy} {column_name}: low {l}, mean {mean} ± {half}");
            assert!((h - (mean + half)).abs() <= ulp, "{policy} {column_name}: high {h}, mean {mean} ± {half}");
        }
    }
    // A share near 1 is clipped to 1: the resilient policy's safe outcomes.
    let (_, whole) = cells(&text, "safe_outcome_ratio", "resilient");
    assert!(parse(&whole).2 <= 1.0, "{whole}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The [slo] verdicts: the naive policy fails every threshold, the resilient one passes them
/// all; each judged value is the unfavourable bound recomputed from replications.csv; exit 99
/// only with --check-slo, as k6 exits.
#[test]
fn a_failed_threshold_exits_99_with_check_slo_and_0_without() {
    let dir = scratch("slo");
    let scenario = format!("{ROOT}/{INCIDENT}");
    let args = ["run", &scenario, "--replications", "3", "-o", "out"];
    let plain = faultline(&dir, &args);
    assert_eq!(plain.status.code(), Some(0), "{}", String::from_utf8_lossy(&plain.stderr));
    let text = stdout(&plain);
    let row = |check: &str| -> Vec<String> {
        let line = text.lines().find(|l| l.starts_with(check)).unwrap_or_else(|| panic!("no {check}:\n{text}"));
        line[check.len()..].split("  ").map(str::trim).filter(|c| !c.is_empty()).map(String::from).collect()
    };
    let deadline = row("deadline_exceeded_ratio < 0.05");
    assert!(deadline[0].starts_with('✗') && deadline[1].starts_with('✓'), "{text}");
    for (policy, cell) in ["naive", "resilient"].iter().zip(&deadline) {
        let csv = dir.join("out").join(policy).join("replications.csv");
        let (mean, half) = mean_and_half_width(&column(&csv, "deadline_exceeded_ratio"));
        let judged: f64 = cell[cell.find(' ').unwrap() + 1..].parse().unwrap();
        assert!(
            (judged - (mean + half).min(1.0)).abs() < 6e-4,
            "{policy}: judged {judged}, upper bound {}",
            mean + half
        );
    }
    assert!(text.contains("Passed: naive 0 of 4, resilient 4 of 4."), "{text}");
    assert!(text.contains("--check-slo makes a failed threshold exit 99"), "{text}");

    let mut gated: Vec<&str> = args.to_vec();
    gated.push("--check-slo");
    let failed = faultline(&dir, &gated);
    assert_eq!(failed.status.code(), Some(99), "{}", stdout(&failed));
    assert!(stdout(&failed).contains("--check-slo: 4 threshold verdict(s) failed: exit 99."));
    gated.extend(["-p", "resilient"]);
    let passed = faultline(&dir, &gated);
    assert_eq!(passed.status.code(), Some(0), "{}", stdout(&passed));
    assert!(stdout(&passed).contains("--check-slo: every threshold passed for every policy."));

    // Nothing to gate on is an input error, not a silent pass.
    let none = faultline(&dir, &["run", &format!("{ROOT}/scenarios/mmc.toml"), "--replications", "2", "--check-slo"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("has no [slo] thresholds to check"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--metrics` as sweep's: the rows named, in order, or `all`; an unknown name is exit 2 with
/// a suggestion.
#[test]
fn metrics_picks_the_rows_and_all_shows_every_metric() {
    let dir = scratch("metrics");
    let scenario = format!("{ROOT}/scenarios/mmck.toml");
    let o = faultline(&dir, &["run", &scenario, "--metrics", "run_latency_ms.p99,logical_run_total", "-o", "a"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    let rows: Vec<&str> = text.lines().skip(4).take(2).map(|l| l.split(' ').next().unwrap()).collect();
    assert_eq!(rows, ["run_latency_ms.p99", "logical_run_total"], "{text}");
    assert!(!text.contains("auto_completion_ratio"), "{text}");

    let all = stdout(&faultline(&dir, &["run", &scenario, "--metrics", "all", "-o", "b"]));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("b/plain/summary.json")).unwrap()).unwrap();
    let names = summary["metrics"].as_object().unwrap();
    for name in names.keys() {
        assert!(all.lines().any(|l| l.starts_with(&format!("{name} "))), "--metrics all has no row {name}");
    }

    let bad = faultline(&dir, &["run", &scenario, "--metrics", "run_latency_ms.p95,auto_completion_rate"]);
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("no metric `auto_completion_rate`") && err.contains("auto_completion_ratio"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
