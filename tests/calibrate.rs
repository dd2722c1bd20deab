//! `faultline calibrate` observed from outside: traces written by the official OpenTelemetry
//! Python SDK calibrate to the distributions that produced them; a simulated scenario exported
//! with `run --traces`, calibrated and simulated again agrees with the original; the same
//! traces give the same bytes; bad input is refused with the file and the line.

use faultline::experiment::calibrate::fit::Family;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_faultline")
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("faultline-calibrate-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn faultline(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().unwrap()
}

fn ok(args: &[&str]) -> String {
    let o = faultline(args);
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn dependency<'a>(scenario: &'a toml::Table, name: &str) -> &'a toml::Table {
    scenario["dependency"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_table().unwrap())
        .find(|d| d["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no dependency {name}"))
}

fn float(t: &toml::Table, key: &str) -> f64 {
    t[key].as_float().or_else(|| t[key].as_integer().map(|i| i as f64)).unwrap_or_else(|| panic!("{key} in {t:?}"))
}

/// The family a calibrated `service_time` table gives.
fn family(service_time: &toml::Table) -> Family {
    match service_time.get("dist").and_then(|d| d.as_str()) {
        None => {
            let (p50, p95) = (float(service_time, "p50_ms"), float(service_time, "p95_ms"));
            Family::LogNormal { mu: p50.ln(), sigma: (p95 / p50).ln() / faultline::world::dist::Z95 }
        }
        Some("gamma") => Family::Gamma { shape: float(service_time, "shape"), scale: float(service_time, "scale_ms") },
        Some("weibull") => {
            Family::Weibull { shape: float(service_time, "shape"), scale: float(service_time, "scale_ms") }
        }
        Some(other) => panic!("calibrated to {other}: {service_time:?}"),
    }
}

/// The largest gap between two CDFs, over the true distribution's quantiles 0.001 .. 0.999.
fn ks_between(fitted: Family, truth: Family) -> f64 {
    (1..1000)
        .map(|i| truth.quantile(i as f64 / 1000.0))
        .map(|x| (fitted.cdf(x) - truth.cdf(x)).abs())
        .fold(0.0, f64::max)
}

#[test]
fn the_official_python_sdks_traces_calibrate_to_their_distributions() {
    let dir = scratch("python");
    let out = dir.join("python.toml");
    let report = ok(&["calibrate", s(&repo("tests/data/otel-python-traces.jsonl")), "-o", s(&out)]);
    assert!(report.contains("read 16244 span(s) of 4000 run(s)"), "{report}");
    let scenario: toml::Table = toml::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    // tests/data/otel-python-traces.truth.json: what scripts/otel-python-traces.py drew from.
    let truths = [
        ("gpt-4o", Family::LogNormal { mu: 800f64.ln(), sigma: (2000f64 / 800.0).ln() / faultline::world::dist::Z95 }),
        ("vector-db", Family::Gamma { shape: 2.0, scale: 50.0 }),
        ("ticketing", Family::Weibull { shape: 1.5, scale: 300.0 }),
    ];
    for (name, truth) in truths {
        let d = dependency(&scenario, name);
        let fitted = family(d["service_time"].as_table().unwrap());
        assert_eq!(fitted.name(), truth.name(), "{name}: the true family is chosen");
        let ks = ks_between(fitted, truth);
        assert!(ks < 0.05, "{name}: KS distance {ks} from the true distribution");
        // 4 000 draws pin a fit much closer than the 0.05: about 1.36 / sqrt(4000) = 0.02.
        assert!(ks < 0.025, "{name}: KS distance {ks}");
    }
    // Error rates: 5 % of 4 244 gpt-4o attempts (standard error 0.33 %) and 2 % of 4 000
    // ticketing calls (0.22 %), within 3 standard errors; vector-db never failed.
    let errors = |name: &str| dependency(&scenario, name).get("errors").map(|e| e.as_table().unwrap().clone());
    let rate_limited = float(&errors("gpt-4o").unwrap(), "rate_limited");
    assert!((rate_limited - 0.05).abs() < 3.0 * 0.0033, "{rate_limited}");
    let overloaded = float(&errors("ticketing").unwrap(), "overloaded");
    assert!((overloaded - 0.02).abs() < 3.0 * 0.0022, "{overloaded}");
    assert!(errors("vector-db").is_none());
    assert!(report.contains("vector-db: no error in 4000 attempts"), "{report}");
    // Arrivals: 4 000 of a Poisson process at 2 a second (standard error 2 / sqrt(4000) = 0.032).
    let workflow = scenario["workflow"].as_array().unwrap()[0].as_table().unwrap();
    let rate = float(workflow["arrivals"].as_table().unwrap(), "rate_per_s");
    assert!((rate - 2.0).abs() < 3.0 * 0.032, "{rate}");
    // The calls ran one after another; gpt-4o was tried up to 3 times.
    let steps: Vec<(String, Vec<String>)> = workflow["step"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let s = s.as_table().unwrap();
            let after =
                s.get("after").map(|a| a.as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect());
            (s["id"].as_str().unwrap().to_string(), after.unwrap_or_default())
        })
        .collect();
    let expected = |id: &str, after: &[&str]| (id.to_string(), after.iter().map(|a| a.to_string()).collect::<Vec<_>>());
    assert_eq!(
        steps,
        vec![expected("gpt-4o", &[]), expected("vector-db", &["gpt-4o"]), expected("ticketing", &["vector-db"])]
    );
    let retry = scenario["policy"]["calibrated"]["retry"].as_table().unwrap();
    assert_eq!(retry["max_attempts"].as_integer(), Some(3));
    // Fitted families need no samples file: the report says what it wrote and how to run it.
    assert!(report.ends_with(&format!("\nwrote {}\nnext: faultline run {}\n", s(&out), s(&out))), "{report}");
    // The calibrated scenario runs.
    ok(&["validate", s(&out)]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Simulates `scenario` with `policy`, exports `traces` runs per replication, calibrates, runs
/// the calibrated scenario, and compares the headline figures: each within the original's
/// 95 % confidence interval or 5 %, whichever is wider.
fn round_trip(name: &str, scenario: &str, policy: &str, traces: &str) -> Vec<String> {
    let dir = scratch(name);
    let original = dir.join("original");
    ok(&["run", s(&repo(scenario)), "-p", policy, "--traces", traces, "-o", s(&original)]);
    let calibrated = dir.join("calibrated.toml");
    ok(&["calibrate", s(&original.join(policy).join("traces.otlp.jsonl")), "-o", s(&calibrated)]);
    let again = dir.join("again");
    ok(&["run", s(&calibrated), "-o", s(&again)]);
    let read = |path: PathBuf| -> serde_json::Value { serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap() };
    let o = read(original.join(policy).join("summary.json"));
    let c = read(again.join("calibrated").join("summary.json"));
    let mut names: Vec<String> = [
        "auto_completion_ratio",
        "run_latency_ms.p50",
        "run_latency_ms.p95",
        "run_latency_ms.p99",
        "retry_amplification_ratio",
    ]
    .iter()
    .map(|n| n.to_string())
    .collect();
    // Per-dependency attempt rates, for dependencies the sample reached.
    for (k, v) in o["metrics"].as_object().unwrap() {
        if k.ends_with(".attempt_rate_per_s") && v.as_f64().unwrap() > 0.01 {
            names.push(k.clone());
        }
    }
    let mut rows = Vec::new();
    for n in &names {
        let a = o["metrics"][n].as_f64().unwrap_or_else(|| panic!("{n}"));
        let b = c["metrics"][n].as_f64().unwrap_or_else(|| panic!("{n} in the calibrated run"));
        let ci = o["ci95"][n].as_array().unwrap();
        let half = (ci[1].as_f64().unwrap() - ci[0].as_f64().unwrap()) / 2.0;
        let tolerance = half.max(0.05 * a.abs());
        assert!((a - b).abs() <= tolerance, "{name}: {n} {b} against {a} (tolerance {tolerance})");
        rows.push(format!("{n}: {a:.4} -> {b:.4} (tolerance {tolerance:.4})"));
    }
    std::fs::remove_dir_all(&dir).unwrap();
    rows
}

#[test]
fn a_queue_round_trips_through_its_traces() {
    // M/M/c at 90 % load: the waits are in the traced latencies, so the calibrated station
    // needs no queue of its own at the same load.
    let rows = round_trip("mmc", "scenarios/mmc.toml", "plain", "300");
    assert_eq!(rows.len(), 6, "{rows:?}");
}

#[test]
fn an_agent_workflow_round_trips_through_its_traces() {
    // Parallel lookups, retries with a pause, errors by kind, timeouts and a fallback.
    let rows = round_trip("agent", "tests/data/calibrate-roundtrip.toml", "retrying", "300");
    assert!(rows.len() >= 9, "{rows:?}");
}

#[test]
fn a_token_shaped_model_round_trips_with_its_prefill_decoding_speed_and_counts() {
    let dir = scratch("tokens");
    let original = dir.join("original");
    ok(&["run", s(&repo("tests/data/calibrate-tokens.toml")), "--traces", "300", "-o", s(&original)]);
    let calibrated = dir.join("calibrated.toml");
    ok(&["calibrate", s(&original.join("plain/traces.otlp.jsonl")), "-o", s(&calibrated)]);
    let scenario: toml::Table = std::fs::read_to_string(&calibrated).unwrap().parse().unwrap();
    let tokens = dependency(&scenario, "model")["tokens"].as_table().expect("a token-shaped model").clone();
    let within = |what: &str, got: f64, want: f64, share: f64| {
        assert!((got - want).abs() <= share * want, "{what}: {got} against {want} (within {share})")
    };
    // 2 400 answers: the decoding speed and the first token's quantiles are recovered within
    // 10 %. The prefill's effect is small beside the decoding noise (about 100 ms across the
    // prompts against a spread of +-500 ms), so its estimate's standard error is about 3 ms per
    // 1 000 tokens: checked within 35 %.
    let tpot = tokens["time_per_output_token"].as_table().unwrap();
    within("time per output token p50", float(tpot, "p50_ms"), 7.0, 0.10);
    within("time per output token p95", float(tpot, "p95_ms"), 10.0, 0.10);
    let ttft = tokens["time_to_first_token"].as_table().unwrap();
    within("time to first token p50", float(ttft, "p50_ms"), 400.0, 0.10);
    within("time to first token p95", float(ttft, "p95_ms"), 900.0, 0.10);
    within("prefill", float(&tokens, "ttft_ms_per_1k_input_tokens"), 20.0, 0.35);
    // Each step's own counts, from 1 200 runs: within 5 %.
    let steps = scenario["workflow"].as_array().unwrap()[0]["step"].as_array().unwrap();
    for (step, input, output) in
        [("plan", (4000.0, 9000.0), (60.0, 150.0)), ("write", (8000.0, 15000.0), (300.0, 900.0))]
    {
        let t = steps.iter().find(|x| x["id"].as_str() == Some(step)).unwrap().as_table().unwrap();
        let counts = |key: &str| {
            let c = t[key].as_table().unwrap();
            (c["p50"].as_integer().unwrap() as f64, c["p95"].as_integer().unwrap() as f64)
        };
        let (p50, p95) = counts("input_tokens");
        within(&format!("{step} input p50"), p50, input.0, 0.05);
        within(&format!("{step} input p95"), p95, input.1, 0.05);
        let (p50, p95) = counts("output_tokens");
        within(&format!("{step} output p50"), p50, output.0, 0.05);
        within(&format!("{step} output p95"), p95, output.1, 0.05);
    }
    std::fs::remove_dir_all(&dir).unwrap();
    // And the calibrated model gives the original's run latencies.
    let rows = round_trip("tokens-again", "tests/data/calibrate-tokens.toml", "plain", "300");
    assert!(rows.len() >= 6, "{rows:?}");
}

#[test]
fn exports_and_calibrations_are_the_same_bytes_every_time() {
    let dir = scratch("bytes");
    let scenario = repo("tests/data/calibrate-roundtrip.toml");
    for jobs in ["1", "2"] {
        let out = dir.join(format!("run-{jobs}"));
        ok(&["run", s(&scenario), "--traces", "20", "--replications", "2", "--jobs", jobs, "-o", s(&out)]);
    }
    let traces = |jobs: &str| std::fs::read(dir.join(format!("run-{jobs}/retrying/traces.otlp.jsonl"))).unwrap();
    assert_eq!(traces("1"), traces("2"), "the export does not depend on --jobs");
    assert_eq!(traces("1").iter().filter(|&&b| b == b'\n').count(), 40, "20 runs of each of 2 replications");
    let trace_file = dir.join("run-1/retrying/traces.otlp.jsonl");
    let mut reports = Vec::new();
    for k in ["a", "b"] {
        let out = dir.join(format!("{k}.toml"));
        reports.push((ok(&["calibrate", s(&trace_file), "--fit", "empirical", "-o", s(&out)]), out));
    }
    // The report ends with what was written, samples files counted, and the command to run it.
    let (report, out) = &reports[0];
    let files = std::fs::read_dir(dir.join("a-data")).unwrap().count();
    let tail = format!("\nwrote {} and {files} samples file(s)\nnext: faultline run {}\n", s(out), s(out));
    assert!(report.ends_with(&tail), "{report}");
    let read = |p: &str| std::fs::read(dir.join(p)).unwrap();
    // The same scenario but for the name of its samples folder, and the same samples.
    let b = String::from_utf8(read("b.toml")).unwrap().replace("b-data/", "a-data/");
    assert_eq!(String::from_utf8(read("a.toml")).unwrap(), b);
    let samples = |folder: &str| {
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir.join(folder))
            .unwrap()
            .flatten()
            .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
            .collect();
        files.sort();
        files
    };
    assert_eq!(samples("a-data"), samples("b-data"));
    assert!(!samples("a-data").is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_input_is_refused_with_the_file_and_the_line() {
    let dir = scratch("refusals");
    let refused = |args: &[&str], expected: &str| {
        let o = faultline(args);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: expected {expected:?} in {err}");
    };
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"resourceSpans\": []}\n{\"resourceSpans\": 7}\n").unwrap();
    refused(&["calibrate", s(&bad), "-o", s(&dir.join("x.toml"))], "line 2: not an OTLP/JSON trace document");
    let empty = dir.join("empty.jsonl");
    std::fs::write(&empty, "{\"resourceSpans\": []}\n").unwrap();
    refused(&["calibrate", s(&empty), "-o", s(&dir.join("x.toml"))], "no root spans found in 0 span(s)");
    let traces = repo("tests/data/otel-python-traces.jsonl");
    refused(&["calibrate", s(&traces), "--map", "gpt-4o", "-o", s(&dir.join("x.toml"))], "write CALLEE=DEPENDENCY");
    refused(&["calibrate", s(&traces), "-o", s(&dir.join("x.json"))], "is a .toml file");
    refused(
        &["calibrate", s(&traces), "--sampling-ratio", "0", "-o", s(&dir.join("x.toml"))],
        "give a share in (0, 1]",
    );
    refused(&["calibrate", s(&dir.join("missing.jsonl")), "-o", s(&dir.join("x.toml"))], "missing.jsonl");
    assert!(!dir.join("x.toml").exists(), "a refused calibration writes nothing");
    // --map merges callees: two names become one dependency.
    let merged = dir.join("merged.toml");
    ok(&["calibrate", s(&traces), "--map", "vector-db=backend", "--map", "ticketing=backend", "-o", s(&merged)]);
    let scenario: toml::Table = toml::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    assert_eq!(scenario["dependency"].as_array().unwrap().len(), 2, "gpt-4o and backend");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_prometheus_histogram_gives_a_traced_dependency_its_latency() {
    let dir = scratch("prometheus");
    let metrics = dir.join("metrics.prom");
    // Two series of vector-db (by status) with the same buckets are added up; a series of a
    // callee the traces never call is said and left out.
    std::fs::write(
        &metrics,
        "# TYPE http_client_request_duration_seconds histogram\n\
         http_client_request_duration_seconds_bucket{server_address=\"vector-db\",status=\"200\",le=\"0.05\"} 300\n\
         http_client_request_duration_seconds_bucket{server_address=\"vector-db\",status=\"200\",le=\"0.1\"} 600\n\
         http_client_request_duration_seconds_bucket{server_address=\"vector-db\",status=\"200\",le=\"0.25\"} 900\n\
         http_client_request_duration_seconds_bucket{server_address=\"vector-db\",status=\"200\",le=\"+Inf\"} 1000\n\
         http_client_request_duration_seconds_bucket{server_address=\"vector-db\",status=\"500\",le=\"0.05\"} 0\n\
         http_client_request_duration_seconds_bucket{server_address=\"vector-db\",status=\"500\",le=\"0.1\"} 0\n\
         http_client_request_duration_seconds_bucket{server_address=\"vector-db\",status=\"500\",le=\"0.25\"} 50\n\
         http_client_request_duration_seconds_bucket{server_address=\"vector-db\",status=\"500\",le=\"+Inf\"} 100\n\
         http_client_request_duration_seconds_bucket{server_address=\"billing\",le=\"1\"} 5\n\
         http_client_request_duration_seconds_bucket{server_address=\"billing\",le=\"+Inf\"} 5\n",
    )
    .unwrap();
    let out = dir.join("with-prometheus.toml");
    let traces = repo("tests/data/otel-python-traces.jsonl");
    let report = ok(&["calibrate", s(&traces), "--prometheus", s(&metrics), "-o", s(&out)]);
    assert!(report.contains("`billing` name no callee of the traces"), "{report}");
    let scenario: toml::Table = toml::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let service_time = dependency(&scenario, "vector-db")["service_time"].as_table().unwrap();
    assert_eq!(service_time["dist"].as_str(), Some("histogram"));
    let floats = |key: &str| -> Vec<f64> {
        service_time[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_float().or(v.as_integer().map(|i| i as f64)).unwrap())
            .collect()
    };
    assert_eq!(floats("le_ms"), vec![50.0, 100.0, 250.0], "seconds become milliseconds");
    assert_eq!(floats("cumulative_counts"), vec![300.0, 600.0, 950.0, 1100.0]);
    // The other dependencies keep their fits from the traces.
    assert!(dependency(&scenario, "gpt-4o")["service_time"].as_table().unwrap().get("p50_ms").is_some());
    ok(&["validate", s(&out)]);
    std::fs::remove_dir_all(&dir).unwrap();
}
