//! `faultline compare A B` from outside: two folders `run` wrote, compared without simulating.
//! The pair is M/M/c (scenarios/mmc.toml, 4 replications) with 10 and with 11 servers: one more
//! server cuts every latency percentile, which `gate` confirms on the same seeds.

mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn faultline(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_faultline")).args(args).current_dir(dir).output().unwrap()
}

fn ok(o: Output, what: &str) -> Output {
    assert!(o.status.success(), "{what}: exit {:?}\n{}", o.status.code(), String::from_utf8_lossy(&o.stderr));
    o
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("faultline-compare-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `faultline run scenarios/mmc.toml --replications 4 --out DIR ARGS...`
fn run_mmc(dir: &Path, out: &str, args: &[&str]) {
    run_mmc_replications(dir, out, "4", args)
}

fn run_mmc_replications(dir: &Path, out: &str, replications: &str, args: &[&str]) {
    let scenario = format!("{ROOT}/scenarios/mmc.toml");
    let mut all = vec!["run", scenario.as_str(), "--replications", replications, "--out", out, "-j", "1"];
    all.extend_from_slice(args);
    ok(faultline(dir, &all), out);
}

fn json_rows(o: &Output) -> Vec<Value> {
    serde_json::from_slice::<Value>(&o.stdout).unwrap().as_array().unwrap().clone()
}

fn row<'a>(rows: &'a [Value], metric: &str) -> &'a Value {
    rows.iter().find(|r| r["metric"] == metric).unwrap_or_else(|| panic!("no row {metric} in {rows:?}"))
}

const LATENCIES: [&str; 3] = ["run_latency_ms.p50", "run_latency_ms.p95", "run_latency_ms.p99"];

/// compare's interval of B - A is gate's interval of candidate - baseline on the same seeds, bit
/// for bit, and its verdict is what gate's `< 0` and `> 0` regression checks say: 11 servers
/// are better than 10 on every latency percentile (p95 by 108 ms, [-117, -99]).
#[test]
fn compare_draws_the_interval_and_verdict_gate_judges() {
    let dir = scratch("gate");
    run_mmc(&dir, "a", &[]);
    run_mmc(&dir, "b", &["--set", "dependency.station.servers=11"]);
    let metrics = format!("auto_completion_ratio,{}", LATENCIES.join(","));
    let rows =
        json_rows(&ok(faultline(&dir, &["compare", "a", "b", "--metrics", &metrics, "--format", "json"]), "compare"));
    assert_eq!(rows.len(), 4);
    let checks: Vec<String> = metrics.split(',').map(|m| format!("\"{m}\" = [\"< 0\", \"> 0\"]")).collect();
    let slo = format!("slo={{ regression = {{ {} }} }}", checks.join(", "));
    let gate = faultline(
        &dir,
        &[
            "gate",
            &format!("{ROOT}/scenarios/mmc.toml"),
            "--candidate",
            "plain",
            "--baseline",
            "plain",
            "--candidate-set",
            "dependency.station.servers=11",
            "--replications",
            "4",
            "--set",
            &slo,
            "--format",
            "json",
            "-j",
            "1",
        ],
    );
    assert!(matches!(gate.status.code(), Some(0) | Some(99)), "{}", String::from_utf8_lossy(&gate.stderr));
    let gate: Value = serde_json::from_slice(&gate.stdout).unwrap();
    let checks = gate["checks"].as_array().unwrap();
    for m in metrics.split(',') {
        let r = row(&rows, m);
        let check =
            |expression: &str| checks.iter().find(|c| c["metric"] == m && c["expression"] == expression).unwrap();
        let (below, above) = (check("< 0"), check("> 0"));
        for key in ["mean", "ci95_low", "ci95_high"] {
            let mine = match key {
                "mean" => &r["b_minus_a"],
                "ci95_low" => &r["b_minus_a_ci95_low"],
                _ => &r["b_minus_a_ci95_high"],
            };
            assert_eq!(mine.as_f64(), below[key].as_f64(), "{m} {key}: compare {r}, gate {below}");
        }
        let verdict = match (below["pass"].as_bool().unwrap(), above["pass"].as_bool().unwrap()) {
            (true, false) => "better",
            (false, true) => "worse",
            (false, false) => "no clear difference",
            (true, true) => panic!("{m}: below and above 0 at once"),
        };
        // Latency is better lower; completion would be better higher (and is 1 on both sides).
        assert_eq!(r["verdict"], verdict, "{m}: {r}");
        assert_eq!(r["intervals"], "paired");
    }
    for m in LATENCIES {
        assert_eq!(row(&rows, m)["verdict"], "better", "one more server at rho 0.9 cuts waiting");
    }
    let p95 = row(&rows, "run_latency_ms.p95");
    assert!(p95["b_minus_a"].as_f64().unwrap() < -50.0, "{p95}");
    assert_eq!(row(&rows, "auto_completion_ratio")["verdict"], "no clear difference");
    // The table says the same, names both sides and warns that the scenarios differ.
    let table = stdout(&ok(faultline(&dir, &["compare", "a", "b"]), "table"));
    assert!(table.starts_with("A = a: scenario mmc, seed 11, 4 replication(s), policies plain, faultline "), "{table}");
    assert!(table.contains("\nB = b: scenario mmc, seed 11, 4 replication(s)"), "{table}");
    assert!(table.contains("--set dependency.station.servers=11 --replications 4\n"), "{table}");
    assert!(table.contains("warning: the scenarios differ"), "{table}");
    assert!(table.contains("policy plain: paired intervals: both ran the same 4 replication seed(s)"), "{table}");
    let line = table.lines().find(|l| l.starts_with("run_latency_ms.p95 ")).unwrap();
    assert!(line.ends_with("  better") && line.contains("[-117.0, -98.676]"), "{table}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A folder against itself: every difference is exactly 0 with the interval [0, 0] and no
/// clear difference, and nothing is warned. The incident's reference folder shows the
/// incident's figures by default.
#[test]
fn a_folder_against_itself_differs_by_exactly_zero() {
    let dir = scratch("itself");
    run_mmc(&dir, "a", &[]);
    let rows = json_rows(&ok(faultline(&dir, &["compare", "a", "a", "--format", "json"]), "compare"));
    assert!(rows.len() >= 5, "{rows:?}");
    for r in &rows {
        for key in ["b_minus_a", "b_minus_a_ci95_low", "b_minus_a_ci95_high"] {
            assert_eq!(r[key].as_f64(), Some(0.0), "{r}");
        }
        assert_eq!((&r["verdict"], &r["intervals"]), (&Value::from("no clear difference"), &Value::from("paired")));
        assert_eq!(r["a_mean"], r["b_mean"]);
    }
    let reference = format!("{ROOT}/reference/meeting-analysis-incident");
    let o = ok(faultline(&dir, &["compare", &reference, &reference]), "reference");
    let table = stdout(&o);
    assert!(!table.contains("warning") && o.stderr.is_empty(), "{table}");
    let metrics: Vec<&str> = table
        .lines()
        .filter(|l| l.ends_with("  no clear difference"))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    for m in ["auto_completion_ratio", "incident.deadline_exceeded_ratio", "incident.retry_amplification_ratio"] {
        assert!(metrics.contains(&m), "{m} not among the default rows {metrics:?}\n{table}");
    }
    // A row whose values are 0 in every replication of both folders is left out (the redesigned
    // resilient policy makes no duplicate effect), so the policies' row counts may differ; no row
    // of either may differ from itself.
    let verdicts = ["  better", "  worse", "  higher", "  lower"];
    assert!(!table.lines().any(|l| verdicts.iter().any(|v| l.ends_with(v))), "{table}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Welch's interval from the two replications.csv files, as a reader would compute it.
fn welch(a: &[f64], b: &[f64]) -> (f64, f64, f64) {
    let stats = |x: &[f64]| {
        let n = x.len() as f64;
        let mean = x.iter().sum::<f64>() / n;
        (mean, x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0) / n)
    };
    let ((ma, sa), (mb, sb)) = (stats(a), stats(b));
    let se2 = sa + sb;
    let df = se2 * se2 / (sa * sa / (a.len() - 1) as f64 + sb * sb / (b.len() - 1) as f64);
    let half = common::t_quantile(0.975, df.floor() as u32) * se2.sqrt();
    (mb - ma, mb - ma - half, mb - ma + half)
}

fn column(path: &Path, name: &str) -> Vec<f64> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let k = lines.next().unwrap().split(',').position(|c| c == name).unwrap();
    lines.map(|l| l.split(',').nth(k).unwrap().parse().unwrap()).collect()
}

/// Other seeds, or another replication count, share no random numbers: the intervals are
/// Welch's, the table says why, and the figure is Welch's from the files.
#[test]
fn runs_on_other_seeds_are_compared_unpaired_and_say_why() {
    let dir = scratch("welch");
    run_mmc(&dir, "a", &[]);
    run_mmc(&dir, "c", &["--seed", "12"]);
    run_mmc_replications(&dir, "d", "3", &[]);
    let rows = json_rows(&ok(faultline(&dir, &["compare", "a", "c", "--format", "json"]), "compare"));
    for m in LATENCIES {
        let r = row(&rows, m);
        assert_eq!(r["intervals"], "welch", "{r}");
        let (mean, low, high) =
            welch(&column(&dir.join("a/plain/replications.csv"), m), &column(&dir.join("c/plain/replications.csv"), m));
        let got = |k: &str| r[k].as_f64().unwrap();
        assert!((got("b_minus_a") - mean).abs() < 1e-9, "{r}");
        // The test's t quantile is computed, faultline's tabulated to 3 decimals.
        let tolerance = 2e-3 * (high - low);
        assert!((got("b_minus_a_ci95_low") - low).abs() < tolerance, "{r}: Welch [{low}, {high}]");
        assert!((got("b_minus_a_ci95_high") - high).abs() < tolerance, "{r}: Welch [{low}, {high}]");
        assert_eq!((r["a_seed"].as_u64(), r["b_seed"].as_u64()), (Some(11), Some(12)));
    }
    let table = stdout(&ok(faultline(&dir, &["compare", "a", "c"]), "table"));
    assert!(table.contains("policy plain: unpaired (Welch) intervals: the root seeds differ (A 11, B 12)"), "{table}");
    assert!(!table.contains("warning"), "one scenario on two seeds is no other scenario:\n{table}");
    let table = stdout(&ok(faultline(&dir, &["compare", "a", "d"]), "table"));
    assert!(table.contains("unpaired (Welch) intervals: the replications differ (A 4, B 3)"), "{table}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn refused(dir: &Path, args: &[&str], names: &str, says: &str) {
    let o = faultline(dir, args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(o.stdout.is_empty(), "{args:?}");
    assert!(err.contains(names) && err.contains(says), "{args:?} should name {names} and say {says}:\n{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Every refusal exits 2 and names the file (or argument) at fault; `-o` is left unwritten.
#[test]
fn bad_folders_and_arguments_are_refused_naming_the_file() {
    let dir = scratch("refusals");
    run_mmc(&dir, "a", &[]);
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    std::fs::write(dir.join("file"), "x").unwrap();
    refused(&dir, &["compare", "a", "empty"], "empty", "no manifest.json");
    refused(&dir, &["compare", "file", "a"], "file", "not a folder");
    refused(&dir, &["compare", "a", "missing"], "missing", "cannot open the folder");
    refused(&dir, &["compare", "a", "a", "--policy", "resilient"], "--policy resilient", "holds no policy `resilient`");
    refused(
        &dir,
        &["compare", "a", "a", "--metrics", "auto_completion_ratios"],
        "a/plain/summary.json",
        "did you mean",
    );
    // A damaged copy: a cut summary, then a changed replication.
    let copy = |name: &str| {
        let to = dir.join(name);
        std::fs::create_dir_all(to.join("plain")).unwrap();
        for f in ["manifest.json", "plain/summary.json", "plain/replications.csv"] {
            std::fs::copy(dir.join("a").join(f), to.join(f)).unwrap();
        }
    };
    copy("cut");
    let summary = std::fs::read(dir.join("cut/plain/summary.json")).unwrap();
    std::fs::write(dir.join("cut/plain/summary.json"), &summary[..summary.len() / 2]).unwrap();
    refused(&dir, &["compare", "a", "cut", "-o", "out.csv"], "cut/plain/summary.json", "not a faultline summary");
    assert!(!dir.join("out.csv").exists(), "a refused comparison writes nothing");
    copy("changed");
    let csv = std::fs::read_to_string(dir.join("changed/plain/replications.csv")).unwrap();
    let mut lines: Vec<String> = csv.lines().map(str::to_string).collect();
    let k = lines[0].split(',').position(|c| c == "run_latency_ms.p95").unwrap();
    let mut cells: Vec<String> = lines[1].split(',').map(str::to_string).collect();
    cells[k] = "1".into();
    lines[1] = cells.join(",");
    std::fs::write(dir.join("changed/plain/replications.csv"), lines.join("\n") + "\n").unwrap();
    refused(&dir, &["compare", "a", "changed"], "changed/plain/summary.json", "one of the files was changed");
    cells[k] = "fast".into();
    lines[1] = cells.join(",");
    std::fs::write(dir.join("changed/plain/replications.csv"), lines.join("\n") + "\n").unwrap();
    refused(
        &dir,
        &["compare", "a", "changed"],
        "changed/plain/replications.csv",
        "line 2, column `run_latency_ms.p95`",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The same folders give the same bytes; `-o` holds exactly what stdout would; the CSV has
/// one row per policy x metric under one header.
#[test]
fn output_is_deterministic_and_files_hold_what_stdout_would() {
    let dir = scratch("bytes");
    run_mmc(&dir, "a", &[]);
    run_mmc(&dir, "b", &["--set", "dependency.station.servers=11"]);
    for format in ["table", "json", "csv"] {
        let first = ok(faultline(&dir, &["compare", "a", "b", "--format", format]), format).stdout;
        let second = ok(faultline(&dir, &["compare", "a", "b", "--format", format]), format).stdout;
        assert_eq!(first, second, "{format}");
        let o = ok(faultline(&dir, &["compare", "a", "b", "--format", format, "-o", "out"]), format);
        assert_eq!(stdout(&o), "wrote out\n");
        assert!(String::from_utf8_lossy(&o.stderr).contains("warning: the scenarios differ"), "{format}");
        assert_eq!(std::fs::read(dir.join("out")).unwrap(), first, "{format}");
    }
    let csv = stdout(&ok(faultline(&dir, &["compare", "a", "b", "--format", "csv"]), "csv"));
    let rows: Vec<&str> = csv.lines().collect();
    let width = rows[0].split(',').count();
    assert!(rows[0].starts_with("policy,metric,direction,a_mean,a_ci95_low,a_ci95_high,a_replications,b_mean"));
    assert!(rows.len() > 3 && rows.iter().all(|r| r.split(',').count() == width), "{csv}");
    std::fs::remove_dir_all(&dir).unwrap();
}
