//! `faultline export RESULT_DIR` from outside: folders that `run` wrote (the incident, 2
//! replications; metastability's breaker and retry_budget policies, which have the breaker and
//! retry-budget columns the incident lacks) exported as Prometheus text, OpenMetrics and
//! OTLP/JSON, read back by their own rules (and by promtool where it is installed), and the
//! Grafana dashboard in examples/ checked against what the export writes.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const START_MS: i64 = 1_767_225_600_000;

fn faultline(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_faultline")).args(args).output().unwrap()
}

fn ok(o: Output, what: &str) -> Output {
    assert!(o.status.success(), "{what}: exit {:?}\n{}", o.status.code(), String::from_utf8_lossy(&o.stderr));
    o
}

fn text(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// The two result folders, run once for every test of this file.
fn folders() -> &'static (PathBuf, PathBuf) {
    static FOLDERS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    FOLDERS.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("faultline-export-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let incident = dir.join("incident");
        let scenario = format!("{ROOT}/scenarios/meeting-analysis-incident.toml");
        ok(
            faultline(&["run", &scenario, "--replications", "2", "-j", "1", "-o", incident.to_str().unwrap()]),
            "run the incident",
        );
        let meta = dir.join("meta");
        let scenario = format!("{ROOT}/scenarios/metastability.toml");
        ok(
            faultline(&[
                "run",
                &scenario,
                "-p",
                "breaker",
                "-p",
                "retry_budget",
                "--replications",
                "2",
                "-j",
                "1",
                "-o",
                meta.to_str().unwrap(),
            ]),
            "run metastability",
        );
        (incident, meta)
    })
}

/// The incident with a closed population (2 replications), whose time series has users.
fn closed_folder() -> &'static PathBuf {
    static FOLDER: OnceLock<PathBuf> = OnceLock::new();
    FOLDER.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("faultline-export-closed-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let closed = dir.join("closed");
        let scenario = format!("{ROOT}/scenarios/meeting-analysis-incident-closed.toml");
        ok(faultline(&["run", &scenario, "--replications", "2", "-o", closed.to_str().unwrap()]), "run closed");
        closed
    })
}

fn export(folder: &Path, format: &str) -> String {
    text(&ok(faultline(&["export", folder.to_str().unwrap(), "--format", format]), "export"))
}

/// One sample line of the 0.0.4 text format: name, labels, value, timestamp (ms).
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
    time_ms: i64,
}

/// Reads the text format strictly (as a scrape would be read): HELP then TYPE before a family's
/// samples, samples only of the family just typed, label values quoted, a timestamp on each.
fn parse_prometheus(text: &str) -> (BTreeMap<String, String>, Vec<Sample>) {
    let mut types = BTreeMap::new();
    let mut samples = Vec::new();
    let mut current: Option<String> = None;
    for (k, line) in text.lines().enumerate() {
        let at = format!("line {}: {line}", k + 1);
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').expect(&at);
            assert!(!help.is_empty() && !types.contains_key(name), "{at}");
            current = None;
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect(&at);
            assert!(kind == "counter" || kind == "gauge", "{at}");
            assert_eq!(kind == "counter", name.ends_with("_total"), "_total on counters only: {at}");
            assert!(types.insert(name.to_string(), kind.to_string()).is_none(), "a family typed twice: {at}");
            current = Some(name.to_string());
            continue;
        }
        let (series, rest) = match line.find('{') {
            Some(_) => {
                let close = line.rfind('}').expect(&at);
                (&line[..close + 1], &line[close + 2..])
            }
            None => line.split_once(' ').expect(&at),
        };
        let name = series.split('{').next().unwrap();
        assert!(
            name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                && name.starts_with("faultline_"),
            "{at}"
        );
        assert_eq!(current.as_deref(), Some(name), "a sample outside its family: {at}");
        let mut labels = BTreeMap::new();
        if let Some(inner) =
            series.strip_prefix(name).and_then(|s| s.strip_prefix('{')).and_then(|s| s.strip_suffix('}'))
        {
            for pair in inner.split("\",") {
                let (key, value) = pair.split_once("=\"").expect(&at);
                labels.insert(key.to_string(), value.trim_end_matches('"').to_string());
            }
        }
        let (value, time) = rest.split_once(' ').expect(&at);
        samples.push(Sample {
            name: name.to_string(),
            labels,
            value: value.parse().expect(&at),
            time_ms: time.parse().expect(&at),
        });
    }
    (types, samples)
}

fn csv_column(path: &Path, column: &str) -> Vec<f64> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let index = reader.headers().unwrap().iter().position(|h| h == column).unwrap();
    reader.records().map(|r| r.unwrap()[index].parse().unwrap()).collect()
}

#[test]
fn the_time_series_arrives_as_cumulative_counters_and_window_gauges() {
    let (incident, _) = folders();
    let (types, samples) = parse_prometheus(&export(incident, "prometheus"));
    let on_time = csv_column(&incident.join("naive/timeseries.csv"), "on_time_goodput");
    let series: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.name == "faultline_on_time_goodput_total" && s.labels["policy"] == "naive")
        .collect();
    // A 0 at the start, then one point per window, at its end, summing the CSV's column.
    assert_eq!(series.len(), on_time.len() + 1);
    assert_eq!((series[0].time_ms, series[0].value), (START_MS, 0.0));
    let mut total = 0.0;
    for (k, (s, v)) in series[1..].iter().zip(&on_time).enumerate() {
        total += v;
        assert_eq!(s.time_ms, START_MS + 60_000 * (k as i64 + 1));
        assert!((s.value - total).abs() < 1e-9, "window {k}: {} vs {total}", s.value);
    }
    assert!(total > 1000.0, "{total}");
    // A gauge is the window's value itself.
    let queue = csv_column(&incident.join("resilient/timeseries.csv"), "dependency.model-primary.queue_depth");
    let exported: Vec<f64> = samples
        .iter()
        .filter(|s| {
            s.name == "faultline_dependency_queue_depth"
                && s.labels["policy"] == "resilient"
                && s.labels["dependency"] == "model-primary"
        })
        .map(|s| s.value)
        .collect();
    assert_eq!(exported, queue);
    assert_eq!(types["faultline_dependency_queue_depth"], "gauge");
    assert_eq!(types["faultline_workflow_worst_mode"], "gauge");
    assert!(types.contains_key("faultline_error_budget_burn_rate"));
    // Every counter series only grows.
    let mut last: BTreeMap<String, (i64, f64)> = BTreeMap::new();
    for s in samples.iter().filter(|s| types[&s.name] == "counter") {
        let key = format!("{}{:?}", s.name, s.labels);
        if let Some(&(t, v)) = last.get(&key) {
            assert!(s.time_ms > t && s.value >= v, "{key} at {}", s.time_ms);
        }
        last.insert(key, (s.time_ms, s.value));
    }
}

/// A closed population's users arrive as two gauges, the CSV's columns window by window; the
/// open incident has neither (its export, like its CSV, is unchanged).
#[test]
fn a_closed_populations_users_arrive_as_gauges() {
    let closed = closed_folder();
    let (types, samples) = parse_prometheus(&export(closed, "prometheus"));
    for (family, column) in [("faultline_users_active", "users.active"), ("faultline_users_thinking", "users.thinking")]
    {
        assert_eq!(types[family], "gauge");
        for policy in ["naive", "resilient"] {
            let csv = csv_column(&closed.join(format!("{policy}/timeseries.csv")), column);
            let exported: Vec<f64> =
                samples.iter().filter(|s| s.name == family && s.labels["policy"] == policy).map(|s| s.value).collect();
            assert_eq!(exported, csv, "{family} {policy}");
        }
    }
    // 900 users throughout; fewer of naive's think while the model is slow (600 s to 1800 s).
    let thinking = |policy: &str, end_s: i64| {
        samples
            .iter()
            .find(|s| {
                s.name == "faultline_users_thinking"
                    && s.labels["policy"] == policy
                    && s.time_ms == START_MS + 1000 * end_s
            })
            .unwrap()
            .value
    };
    assert!(thinking("naive", 1200) < 0.9 * thinking("naive", 540), "{}", thinking("naive", 1200));
    let (incident, _) = folders();
    let open = parse_prometheus(&export(incident, "prometheus")).0;
    assert!(!open.contains_key("faultline_users_active"), "open load has no users");
}

#[test]
fn whole_run_figures_carry_the_mean_and_each_replication_in_base_units() {
    let (incident, _) = folders();
    let (_, samples) = parse_prometheus(&export(incident, "prometheus"));
    let summary: Value = serde_json::from_slice(&std::fs::read(incident.join("naive/summary.json")).unwrap()).unwrap();
    let p95_ms = summary["metrics"]["run_latency_ms.p95"].as_f64().unwrap();
    let find = |name: &str, want: &[(&str, &str)]| -> Vec<&Sample> {
        samples
            .iter()
            .filter(|s| {
                s.name == name
                    && s.labels["policy"] == "naive"
                    && want.iter().all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(v))
            })
            .collect()
    };
    let mean =
        find("faultline_result_run_latency_seconds", &[("stat", "p95"), ("replication", "mean"), ("scope", "run")]);
    assert_eq!(mean.len(), 1);
    assert!((mean[0].value - p95_ms / 1000.0).abs() < 1e-9, "{} vs {p95_ms} ms", mean[0].value);
    let end_s = *csv_column(&incident.join("naive/timeseries.csv"), "window_end_s").last().unwrap();
    assert_eq!(mean[0].time_ms, START_MS + (end_s * 1000.0) as i64, "at the last window's end");
    let incident_ratio = summary["metrics"]["incident.retry_amplification_ratio"].as_f64().unwrap();
    let got = find("faultline_result_retry_amplification_ratio", &[("scope", "incident"), ("replication", "mean")]);
    assert_eq!(got.len(), 1);
    assert!((got[0].value - incident_ratio).abs() < 1e-12);
    let seeds: BTreeSet<&str> = find("faultline_result_cost_units_total", &[("scope", "run")])
        .iter()
        .filter(|s| s.labels["replication"] != "mean")
        .map(|s| s.labels["seed"].as_str())
        .collect();
    assert_eq!(seeds.len(), 2, "one sample per replication, each with its seed");
    // A transition's whole and its parts: the whole is named "all", so a sum over `from` counts
    // each once.
    assert!(
        samples.iter().any(|s| s.name == "faultline_result_degradation_transition_total" && s.labels["from"] == "all")
    );
}

#[test]
fn the_export_is_reproducible_and_the_epoch_moves_every_timestamp() {
    let (_, meta) = folders();
    let a = export(meta, "prometheus");
    assert_eq!(a, export(meta, "prometheus"));
    let moved = text(&ok(
        faultline(&["export", meta.to_str().unwrap(), "--start-epoch-ms", "1000000000000"]),
        "export with an epoch",
    ));
    let (_, before) = parse_prometheus(&a);
    let (_, after) = parse_prometheus(&moved);
    assert_eq!(before.len(), after.len());
    for (x, y) in before.iter().zip(&after) {
        assert_eq!(y.time_ms - x.time_ms, 1_000_000_000_000 - START_MS);
        assert_eq!(x.value, y.value);
    }
}

#[test]
fn openmetrics_ends_in_eof_with_seconds_and_counter_families_without_total() {
    let (incident, _) = folders();
    let om = export(incident, "openmetrics");
    assert!(om.ends_with("\n# EOF\n"));
    assert!(om.contains("# TYPE faultline_on_time_goodput counter\n"));
    assert!(om.contains(
        "\nfaultline_on_time_goodput_total{scenario=\"meeting-analysis-incident\",policy=\"naive\"} 0 1767225600\n"
    ));
    let prom_samples = parse_prometheus(&export(incident, "prometheus")).1.len();
    let om_samples = om.lines().filter(|l| !l.starts_with('#')).count();
    assert_eq!(om_samples, prom_samples);
}

/// Says, where `cargo test` prints it, that a check could not run (the harness captures
/// `eprintln!` of a passing test, not a write to the process's stderr).
fn not_run(what: &str) {
    let required = std::env::var("FAULTLINE_REQUIRE_PROMTOOL").is_ok_and(|v| v == "1");
    assert!(!required, "FAULTLINE_REQUIRE_PROMTOOL=1 but {what}");
    let _ = writeln!(std::io::stderr(), "\n*** NOT RUN: {what} (apt-get install prometheus for promtool) ***\n");
}

#[test]
fn promtool_lints_the_text_and_backfills_every_openmetrics_sample() {
    let (incident, meta) = folders();
    if Command::new("promtool").arg("--version").output().is_err() {
        not_run("the promtool checks of faultline export: promtool is not installed");
        return;
    }
    for folder in [incident, meta] {
        let prom = export(folder, "prometheus");
        let mut child = Command::new("promtool")
            .args(["check", "metrics"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(prom.as_bytes()).unwrap();
        let o = child.wait_with_output().unwrap();
        let said = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(o.status.success() && said.trim().is_empty(), "promtool check metrics: {said}");
        let om = folder.join("metrics.om");
        ok(
            faultline(&["export", folder.to_str().unwrap(), "--format", "openmetrics", "-o", om.to_str().unwrap()]),
            "export",
        );
        let blocks = folder.join("blocks");
        let o = Command::new("promtool")
            .args(["tsdb", "create-blocks-from", "openmetrics"])
            .arg(&om)
            .arg(&blocks)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "backfill: {out}{}", String::from_utf8_lossy(&o.stderr));
        // The block table's NUM SAMPLES column, summed over the blocks.
        let backfilled: u64 = out
            .lines()
            .skip_while(|l| !l.starts_with("BLOCK ULID"))
            .skip(1)
            .filter_map(|l| l.split_whitespace().nth(4)?.parse::<u64>().ok())
            .sum();
        assert_eq!(backfilled as usize, parse_prometheus(&prom).1.len(), "{out}");
    }
}

#[test]
fn otlp_json_reads_back_as_an_export_metrics_service_request() {
    use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
    use opentelemetry_proto::tonic::metrics::v1::metric::Data;
    let (incident, _) = folders();
    let json = export(incident, "otlp-json");
    let request: ExportMetricsServiceRequest = serde_json::from_str(&json).unwrap();
    // The official types ignore fields they do not know, so what they write back must hold
    // every field we wrote, with the same value: a misspelt field would be missing.
    let ours: Value = serde_json::from_str(&json).unwrap();
    let theirs = serde_json::to_value(&request).unwrap();
    fn within(ours: &Value, theirs: &Value, at: &str) {
        match (ours, theirs) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, v) in a {
                    let w = b.get(k).unwrap_or_else(|| panic!("{at}.{k} is not a field of the proto"));
                    within(v, w, &format!("{at}.{k}"));
                }
            }
            (Value::Array(a), Value::Array(b)) => {
                assert_eq!(a.len(), b.len(), "{at}");
                for (k, (x, y)) in a.iter().zip(b).enumerate() {
                    within(x, y, &format!("{at}[{k}]"));
                }
            }
            (a, b) => assert_eq!(a, b, "{at}"),
        }
    }
    within(&ours, &theirs, "");
    let scope = &request.resource_metrics[0].scope_metrics[0];
    let metric = scope.metrics.iter().find(|m| m.name == "faultline_on_time_goodput").unwrap();
    let Some(Data::Sum(sum)) = &metric.data else { panic!("{metric:?}") };
    assert!(sum.is_monotonic);
    assert_eq!(sum.aggregation_temporality, 2, "cumulative");
    let last = sum
        .data_points
        .iter()
        .rfind(|p| p.attributes.iter().any(|a| format!("{:?}", a.value).contains("naive")))
        .unwrap();
    let end_s = *csv_column(&incident.join("naive/timeseries.csv"), "window_end_s").last().unwrap();
    assert_eq!(last.time_unix_nano, (START_MS as u64 + (end_s * 1000.0) as u64) * 1_000_000);
    assert_eq!(last.start_time_unix_nano, START_MS as u64 * 1_000_000);
    let latency = scope.metrics.iter().find(|m| m.name == "faultline_result_run_latency").unwrap();
    assert_eq!(latency.unit, "s");
    assert!(matches!(latency.data, Some(Data::Gauge(_))));
    // timeUnixNano is a decimal string, as the OTLP JSON mapping writes 64-bit integers.
    assert!(json.contains("\"timeUnixNano\":\"1767225660000000000\""));
}

#[test]
fn every_dashboard_query_names_a_metric_the_export_writes() {
    let (incident, meta) = folders();
    let mut written = BTreeSet::new();
    for folder in [incident, meta, closed_folder()] {
        written.extend(parse_prometheus(&export(folder, "prometheus")).0.into_keys());
    }
    let dashboard: Value =
        serde_json::from_slice(&std::fs::read(format!("{ROOT}/examples/grafana/faultline-dashboard.json")).unwrap())
            .unwrap();
    let vars: Vec<&str> =
        dashboard["templating"]["list"].as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert!(vars.contains(&"DS_PROMETHEUS") && vars.contains(&"policy"), "{vars:?}");
    let mut exprs: Vec<String> = dashboard["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["definition"].as_str().map(str::to_string))
        .collect();
    let mut queried = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        if panel["type"] == "row" {
            continue;
        }
        assert_eq!(panel["datasource"]["uid"], "${DS_PROMETHEUS}", "{}", panel["title"]);
        for target in panel["targets"].as_array().unwrap() {
            exprs.push(target["expr"].as_str().unwrap().to_string());
            queried += 1;
        }
    }
    assert!(queried >= 15, "{queried}");
    let mut used = BTreeSet::new();
    for expr in &exprs {
        let names: Vec<&str> = expr
            .match_indices("faultline_")
            .map(|(at, _)| {
                let end =
                    expr[at..].find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(expr.len(), |e| at + e);
                &expr[at..end]
            })
            .collect();
        assert!(!names.is_empty(), "a query with no faultline metric: {expr}");
        for name in names {
            assert!(written.contains(name), "{expr} names {name}, which the export does not write");
            used.insert(name);
        }
        assert!(
            expr.starts_with("label_values(") || expr.contains("policy=~\"$policy\""),
            "{expr} ignores the policy variable"
        );
    }
    // The report's panels: on-time goodput, deadline misses, amplification, queues, modes, cost.
    for name in [
        "faultline_on_time_goodput_total",
        "faultline_deadline_misses_total",
        "faultline_dependency_attempts_total",
        "faultline_dependency_queue_depth",
        "faultline_workflow_worst_mode",
        "faultline_error_budget_spent_ratio",
        "faultline_result_cost_per_success",
        "faultline_users_active",
        "faultline_users_thinking",
    ] {
        assert!(used.contains(name), "no panel shows {name}");
    }
}

/// Prometheus's OTLP receiver (and the collector's Prometheus exporter) name a metric by
/// prometheus/otlptranslator's `normalizeName`, the default with suffixes: the name split into
/// tokens at every character outside [a-zA-Z0-9:], the unit's suffix appended unless a token
/// already is it (`s` -> `seconds`, `1/s` -> `per_second`, `1` and `{...}` -> none), `total`
/// moved last for a monotonic sum, `ratio` moved last for a gauge of unit `1`. Every OTLP metric
/// must come out under the Prometheus export's name, which the dashboard queries: before, the
/// burn rate (a gauge of unit `1`) arrived as `faultline_error_budget_burn_rate_ratio` and every
/// `_per_second` figure as `..._per_second_per_second` (the token check sees `per` and
/// `second`, not `per_second`).
#[test]
fn otlp_metrics_arrive_in_prometheus_under_the_names_the_dashboard_queries() {
    fn translated(name: &str, unit: &str, monotonic_sum: bool, gauge: bool) -> String {
        let mut tokens: Vec<String> = name
            .split(|c: char| !c.is_ascii_alphanumeric() && c != ':')
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect();
        let (main, per) = match unit.split_once('/') {
            Some((main, per)) => (main, Some(per)),
            None => (unit, None),
        };
        let main = match main {
            "s" => "seconds",
            "ms" => "milliseconds",
            "By" => "bytes",
            "%" => "percent",
            u if u == "1" || u.starts_with('{') => "",
            u => u,
        };
        let per = per.map(|p| match p {
            "s" => "per_second",
            "m" => "per_minute",
            "h" => "per_hour",
            other => panic!("per unit {other}"),
        });
        if !main.is_empty() && !tokens.iter().any(|t| t == main) {
            tokens.push(main.to_string());
        }
        if let Some(per) = per
            && !tokens.iter().any(|t| t == per)
        {
            tokens.push(per.to_string());
        }
        if monotonic_sum {
            tokens.retain(|t| t != "total");
            tokens.push("total".into());
        }
        if unit == "1" && gauge {
            tokens.retain(|t| t != "ratio");
            tokens.push("ratio".into());
        }
        tokens.join("_")
    }
    let (incident, _) = folders();
    let prometheus: BTreeSet<String> = parse_prometheus(&export(incident, "prometheus")).0.into_keys().collect();
    let otlp: Value = serde_json::from_str(&export(incident, "otlp-json")).unwrap();
    let mut checked = 0;
    let mut units = BTreeSet::new();
    for metric in otlp["resourceMetrics"][0]["scopeMetrics"][0]["metrics"].as_array().unwrap() {
        let (name, unit) = (metric["name"].as_str().unwrap(), metric["unit"].as_str().unwrap());
        let sum = metric.get("sum").is_some_and(|s| s["isMonotonic"] == true);
        let gauge = metric.get("gauge").is_some();
        let arrives = translated(name, unit, sum, gauge);
        assert!(
            prometheus.contains(&arrives),
            "OTLP {name} (unit {unit:?}) arrives in Prometheus as {arrives}, which the export and the dashboard call otherwise"
        );
        units.insert(unit.to_string());
        checked += 1;
    }
    assert!(checked > 100, "{checked}");
    // The incident has every kind of unit the export writes.
    for unit in ["s", "1", "1/s", "{run}"] {
        assert!(units.contains(unit), "{units:?}");
    }
}

/// "Retry amplification" is attempts per logical call (docs/metrics.md,
/// `retry_amplification_ratio`: naive 2.97 during the incident). The time series counts no
/// logical calls, so a per-window panel of attempts over arrivals is attempts per root run (the
/// incident's naive policy: 9.9 before the fault, 28.9 during it, one per step and tool call and
/// more for retries): titled "Retry amplification" beside the bar gauge of 2.97 it read as a
/// storm ten times worse.
#[test]
fn only_a_panel_of_the_retry_amplification_metric_is_called_amplification() {
    let dashboard: Value =
        serde_json::from_slice(&std::fs::read(format!("{ROOT}/examples/grafana/faultline-dashboard.json")).unwrap())
            .unwrap();
    let mut named = 0;
    for panel in dashboard["panels"].as_array().unwrap() {
        let title = panel["title"].as_str().unwrap().to_lowercase();
        if panel["type"] == "row" || !title.contains("amplification") {
            continue;
        }
        named += 1;
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            assert!(
                expr.contains("faultline_result_retry_amplification_ratio"),
                "panel `{title}` is called amplification but shows {expr}"
            );
        }
    }
    assert_eq!(named, 1, "the whole-run bar gauge");
}

#[test]
fn a_damaged_folder_exits_2_naming_the_file_line_and_column() {
    let (incident, _) = folders();
    let dir = incident.parent().unwrap().join("damaged");
    let _ = std::fs::remove_dir_all(&dir);
    ok(Command::new("cp").arg("-r").arg(incident).arg(&dir).output().unwrap(), "copy");
    let csv = dir.join("naive/timeseries.csv");
    let original = std::fs::read_to_string(&csv).unwrap();
    let mut lines: Vec<String> = original.lines().map(str::to_string).collect();
    let mut cells: Vec<String> = lines[3].split(',').map(str::to_string).collect();
    cells[2] = format!("x{}", cells[2]);
    lines[3] = cells.join(",");
    std::fs::write(&csv, lines.join("\n")).unwrap();
    let out = dir.join("out.prom");
    let o = faultline(&["export", dir.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("naive/timeseries.csv: line 4, column 3 (arrivals)") && err.contains("is not a number"),
        "{err}"
    );
    assert!(!out.exists(), "nothing written");
    let o = faultline(&["export", dir.join("nowhere").to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("nowhere") && err.contains("cannot open the folder"), "{err}");
    let o = faultline(&["export", incident.to_str().unwrap(), "--start-epoch-ms", "-5"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--start-epoch-ms -5"));
    // A start in range whose run would end past year 9999 (the last instant the formats write)
    // is refused as well: the incident's run lasts 2 400 s.
    let late = "253402300000000";
    let o = faultline(&["export", incident.to_str().unwrap(), "--start-epoch-ms", late]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--start-epoch-ms 253402300000000: the run's end at"), "{err}");
}

/// `run --format json` carries each policy's `[slo]` verdicts as the text prints them: the
/// incident's naive policy misses its deadlines (87 % in the incident), the resilient one passes.
#[test]
fn run_json_carries_the_slo_verdicts() {
    let scenario = format!("{ROOT}/scenarios/meeting-analysis-incident.toml");
    let out = std::env::temp_dir().join(format!("faultline-export-json-{}", std::process::id()));
    let o = ok(
        faultline(&[
            "run",
            &scenario,
            "--replications",
            "2",
            "-j",
            "1",
            "--format",
            "json",
            "-o",
            out.to_str().unwrap(),
        ]),
        "run --format json",
    );
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    for (policy, pass) in [("naive", false), ("resilient", true)] {
        let slo = doc[policy]["slo"].as_array().unwrap_or_else(|| panic!("{policy}: no slo in {doc}"));
        assert_eq!(slo.len(), 4, "{slo:?}");
        let misses = slo.iter().find(|v| v["metric"] == "deadline_exceeded_ratio").unwrap();
        assert_eq!(misses["threshold"], "deadline_exceeded_ratio < 0.05");
        assert_eq!(misses["pass"], pass, "{policy}: {misses}");
        let judged = misses["judged"].as_f64().unwrap();
        assert!(if pass { judged < 0.05 } else { judged > 0.3 }, "{policy}: {judged}");
    }
    let _ = std::fs::remove_dir_all(&out);
}
