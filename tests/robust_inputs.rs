//! Issue 36, from outside: calibrate never hangs on a cycle of parents and never refuses its own
//! output (it checks everything before it writes, and writes its scenario and samples as one
//! set); Prometheus series of one callee add up whatever other series there are; devices, FIFOs
//! and oversized files are refused at once by every reader; tune's shards and checkpoints are
//! sealed, so a changed digit is refused or computed again, never taken in.
//!
//! A command that could hang runs under a deadline: past it the process is killed and the test
//! fails, so a regression fails CI instead of hanging it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("faultline-robust-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The binary under test: this build's, or FAULTLINE_BIN (to show an older build's behaviour).
fn bin() -> String {
    std::env::var("FAULTLINE_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_faultline").to_string())
}

/// Runs faultline with `args`, killed after `limit`: Err(elapsed) when it had to be killed.
fn within(limit: Duration, args: &[&str]) -> Result<(Output, Duration), Duration> {
    let started = Instant::now();
    let mut child = Command::new(bin())
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    loop {
        if child.try_wait().unwrap().is_some() {
            return Ok((child.wait_with_output().unwrap(), started.elapsed()));
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs faultline and requires it to end within `limit`.
fn run(limit: Duration, args: &[&str]) -> Output {
    match within(limit, args) {
        Ok((o, _)) => o,
        Err(t) => panic!("{args:?} still ran after {t:?}: killed"),
    }
}

fn ok(args: &[&str]) -> String {
    let o = run(Duration::from_secs(300), args);
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// Exit 2 with one `error:` line that holds every fragment; returns it.
fn refused(o: &Output, fragments: &[&str]) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(o.status.code(), Some(2), "expected exit 2: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line expected: {err}");
    for f in fragments {
        assert!(lines[0].contains(f), "expected {f:?} in {}", lines[0]);
    }
    lines[0].to_string()
}

// ---------------------------------------------------------------------------------------------
// OTLP traces, written by hand
// ---------------------------------------------------------------------------------------------

/// One span: (span id, parent id or "", name, kind, start ms, end ms, attributes as JSON).
struct Span<'a>(&'a str, &'a str, &'a str, u8, u64, u64, &'a str);

fn document(trace: &str, spans: &[Span]) -> String {
    let spans: Vec<String> = spans
        .iter()
        .map(|Span(id, parent, name, kind, start, end, attributes)| {
            let parent = if parent.is_empty() { String::new() } else { format!(",\"parentSpanId\":\"{parent}\"") };
            format!(
                "{{\"traceId\":\"{trace}\",\"spanId\":\"{id}\"{parent},\"name\":\"{name}\",\"kind\":{kind},\"startTimeUnixNano\":\"{}\",\"endTimeUnixNano\":\"{}\",\"attributes\":[{attributes}]}}",
                start * 1_000_000,
                end * 1_000_000
            )
        })
        .collect();
    format!(
        "{{\"resourceSpans\":[{{\"resource\":{{\"attributes\":[]}},\"scopeSpans\":[{{\"spans\":[{}]}}]}}]}}\n",
        spans.join(",")
    )
}

const DB: &str = "{\"key\":\"server.address\",\"value\":{\"stringValue\":\"db\"}}";

/// `runs` whole runs: a root span calling `db` once, a second apart.
fn good_runs(runs: u64) -> String {
    (0..runs)
        .map(|i| {
            let trace = format!("{:032x}", 0xa000 + i);
            let t = 1_000 * i;
            document(
                &trace,
                &[
                    Span("00000000000000a1", "", "agent.run wf", 2, t, t + 50, ""),
                    Span("00000000000000a2", "00000000000000a1", "GET /x", 3, t + 5, t + 40, DB),
                ],
            )
        })
        .collect()
}

#[test]
fn a_cycle_of_parents_is_left_out_with_a_note_and_never_hangs() {
    let dir = scratch("cycle");
    let t = |i: u64| format!("{:032x}", 0xc000 + i);
    let mut text = good_runs(40);
    // A span that is its own parent, beside a root.
    text.push_str(&document(
        &t(1),
        &[
            Span("00000000000000b1", "", "agent.run wf", 2, 0, 50, ""),
            Span("00000000000000b2", "00000000000000b2", "GET /x", 3, 5, 40, DB),
        ],
    ));
    // Two spans each other's parent, and a client span below them.
    text.push_str(&document(
        &t(2),
        &[
            Span("00000000000000c1", "", "agent.run wf", 2, 0, 50, ""),
            Span("00000000000000c2", "00000000000000c3", "step", 1, 5, 40, ""),
            Span("00000000000000c3", "00000000000000c2", "GET /x", 3, 5, 40, DB),
            Span("00000000000000c4", "00000000000000c3", "GET /y", 3, 6, 30, DB),
        ],
    ));
    let traces = dir.join("cycles.jsonl");
    std::fs::write(&traces, text).unwrap();
    let out = dir.join("cycle.toml");
    let o = run(Duration::from_secs(20), &["calibrate", s(&traces), "-o", s(&out)]);
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        report.contains("4 span(s) in 2 trace(s) sit on or below a cycle of parents"),
        "the note counts the spans left out: {report}"
    );
    assert!(report.contains("00000000000000b2"), "the note names a span of the cycle: {report}");
    // The runs themselves still count: 42 root spans, the cycles' spans no attempt.
    assert!(report.contains("of 42 run(s)"), "{report}");
    let db_row: Vec<&str> = report.lines().find(|l| l.starts_with("db ")).unwrap().split_whitespace().collect();
    assert_eq!(db_row[1], "40", "40 answered attempts at db, none from a cycle: {report}");
    ok(&["validate", s(&out)]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_deep_chain_of_client_spans_is_read_in_linear_time() {
    // A root over a chain of 100 000 client spans, each the parent of the next: only the top
    // one is an attempt of the run, the others its callee's own calls. Walking every span up
    // to the root took over 20 s (19.5 s for 20 000 spans); once per span, a fraction of that.
    let dir = scratch("deep-client");
    let mut text = good_runs(50);
    let depth = 100_000u64;
    let ids: Vec<String> = (1..=depth + 1).map(|i| format!("{i:016x}")).collect();
    let mut chain = vec![Span(&ids[0], "", "agent.run wf", 2, 0, 1_000, "")];
    for pair in ids.windows(2) {
        chain.push(Span(&pair[1], &pair[0], "call", 3, 0, 100, DB));
    }
    text.push_str(&document(&format!("{:032x}", 0xdee9), &chain));
    let traces = dir.join("deep.jsonl");
    std::fs::write(&traces, text).unwrap();
    let out = dir.join("deep.toml");
    let o = run(Duration::from_secs(20), &["calibrate", s(&traces), "-o", s(&out)]);
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(report.contains("of 51 run(s)"), "{report}");
    let db_row: Vec<&str> = report.lines().find(|l| l.starts_with("db ")).unwrap().split_whitespace().collect();
    assert_eq!(db_row[1], "51", "one attempt per run, the chain below the first call left out: {report}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_run_calling_thousands_of_callees_is_refused_at_once_by_its_count_of_steps() {
    // One run whose root calls 5 000 different callees: 5 000 steps, where a workflow holds 64.
    // Counting which step ran after which for every pair first took 5.4 s and 1.8 GB (debug
    // build; 8 000 callees: 30 s and 7 GB in release) before the refusal.
    let dir = scratch("many-callees");
    let callees = 5_000u64;
    let ids: Vec<String> = (1..=callees + 1).map(|i| format!("{i:016x}")).collect();
    let attributes: Vec<String> = (1..=callees)
        .map(|i| format!("{{\"key\":\"server.address\",\"value\":{{\"stringValue\":\"db{i}\"}}}}"))
        .collect();
    let mut spans = vec![Span(&ids[0], "", "agent.run wf", 2, 0, 100_000, "")];
    for (i, (id, callee)) in ids[1..].iter().zip(&attributes).enumerate() {
        let start = 10 * (i as u64 + 1);
        spans.push(Span(id, &ids[0], "call", 3, start, start + 5, callee));
    }
    let traces = dir.join("many.jsonl");
    std::fs::write(&traces, document(&format!("{:032x}", 0xfeed), &spans)).unwrap();
    let out = dir.join("many.toml");
    let o = run(Duration::from_secs(5), &["calibrate", s(&traces), "-o", s(&out)]);
    refused(&o, &["many.jsonl", "workflow `wf` make 5000 different steps", "at most 64"]);
    assert!(!out.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_declared_sampling_ratio_outside_0_1_is_refused_naming_the_attribute_the_value_and_the_file() {
    // A declared -0.5 ended at "This is a defect of calibrate"; a declared 2.0 halved the rate
    // without a word.
    let dir = scratch("declared-ratio");
    let out = dir.join("r.toml");
    for (name, value, shown) in [
        ("neg", "{\"doubleValue\":-0.5}", "faultline.sampling_ratio = -0.5"),
        ("big", "{\"doubleValue\":2.0}", "faultline.sampling_ratio = 2.0"),
        ("nan", "{\"stringValue\":\"NaN\"}", "faultline.sampling_ratio = `NaN`"),
    ] {
        let declared =
            format!("\"resource\":{{\"attributes\":[{{\"key\":\"faultline.sampling_ratio\",\"value\":{value}}}]}}");
        let text = good_runs(40).replace("\"resource\":{\"attributes\":[]}", &declared);
        let traces = dir.join(format!("ratio-{name}.jsonl"));
        std::fs::write(&traces, text).unwrap();
        let o = run(Duration::from_secs(30), &["calibrate", s(&traces), "-o", s(&out)]);
        let line = refused(&o, &[&format!("ratio-{name}.jsonl`, line 1"), shown, "(0, 1]", "--sampling-ratio"]);
        assert!(!line.contains("defect"), "{line}");
        assert!(!out.exists(), "{name}: nothing written");
        // The share given on the command line replaces the declaration.
        let report = ok(&["calibrate", s(&traces), "--sampling-ratio", "0.5", "-o", s(&out)]);
        assert!(report.contains("of 40 run(s)"), "{report}");
        std::fs::remove_file(&out).unwrap();
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------------------
// calibrate refuses nothing of its own, and replaces nothing it then refuses
// ---------------------------------------------------------------------------------------------

/// Every file under `dir` with its bytes.
fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push((p.strip_prefix(dir).unwrap().display().to_string(), std::fs::read(&p).unwrap()));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn a_calibration_that_cannot_run_is_refused_in_the_users_words_and_replaces_nothing() {
    let dir = scratch("self-refusal");
    let out = dir.join("prod.toml");
    // An earlier calibration with its samples files.
    let python = repo("tests/data/otel-python-traces.jsonl");
    ok(&["calibrate", s(&python), "--fit", "empirical", "-o", s(&out)]);
    let before = files_under(&dir);
    assert!(
        before.iter().any(|(p, _)| p.starts_with("prod-data/")),
        "{:?}",
        before.iter().map(|f| &f.0).collect::<Vec<_>>()
    );

    // A trace whose root is itself a client call: a workflow without a step.
    let client_root = dir.join("client-root.jsonl");
    let text: String = (0..5)
        .map(|i| {
            document(
                &format!("{:032x}", 0xd000 + i),
                &[Span("00000000000000d1", "", "chat gpt-4o", 3, 1000 * i, 1000 * i + 80, "")],
            )
        })
        .collect();
    std::fs::write(&client_root, text).unwrap();
    let o = run(Duration::from_secs(30), &["calibrate", s(&client_root), "-o", s(&out)]);
    let line = refused(&o, &["client-root.jsonl", "no step"]);
    assert!(!line.contains("prod.toml"), "the refusal names the input, not the output: {line}");
    assert_eq!(files_under(&dir).len(), before.len() + 1, "only the trace file was added");
    assert!(
        files_under(&dir).iter().filter(|(p, _)| p != "client-root.jsonl").eq(before.iter()),
        "the earlier calibration is untouched"
    );

    // Sampling ratios that would need more arrivals than a simulation takes, or an infinite rate.
    for ratio in ["1e-12", "1e-300", "5e-324"] {
        let o = run(
            Duration::from_secs(30),
            &["calibrate", s(&python), "--fit", "empirical", "--sampling-ratio", ratio, "-o", s(&out)],
        );
        let line = refused(&o, &[&format!("--sampling-ratio {ratio}"), "run(s) in", "give the share"]);
        assert!(line.contains("arrivals a replication") || line.contains("an infinite rate"), "{line}");
        assert!(!line.contains("prod.toml"), "{line}");
        assert!(
            files_under(&dir).iter().filter(|(p, _)| p != "client-root.jsonl").eq(before.iter()),
            "{ratio}: the earlier calibration is untouched"
        );
    }

    // A new calibration replaces the set: the old samples files it no longer names are gone,
    // and every samples file the scenario names is there.
    ok(&["calibrate", s(&python), "--fit", "lognormal", "-o", s(&out)]);
    let after = files_under(&dir);
    assert!(
        !after.iter().any(|(p, _)| p.starts_with("prod-data/")),
        "a fit needs no samples file: {:?}",
        after.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    ok(&["validate", s(&out)]);
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Prometheus series add up
// ---------------------------------------------------------------------------------------------

#[test]
fn series_with_the_same_bounds_add_up_when_a_third_has_other_bounds() {
    let dir = scratch("prometheus");
    let metrics = dir.join("metrics.prom");
    let series = |status: &str, bounds: &[(&str, u64)]| -> String {
        bounds
            .iter()
            .map(|(le, n)| {
                format!("http_client_request_duration_seconds_bucket{{server_address=\"db\",status=\"{status}\",le=\"{le}\"}} {n}\n")
            })
            .collect()
    };
    let text = [
        series("200", &[("0.01", 300), ("0.05", 900), ("+Inf", 1000)]),
        series("500", &[("0.01", 10), ("0.05", 90), ("+Inf", 100)]),
        // Another instance's exporter with other buckets, 50 observations.
        series("429", &[("0.02", 20), ("0.1", 45), ("+Inf", 50)]),
    ]
    .concat();
    std::fs::write(&metrics, text).unwrap();
    let traces = dir.join("traces.jsonl");
    std::fs::write(&traces, good_runs(40)).unwrap();
    let out = dir.join("p.toml");
    let report = ok(&["calibrate", s(&traces), "--prometheus", s(&metrics), "-o", s(&out)]);
    let scenario: toml::Table = toml::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let db = scenario["dependency"].as_array().unwrap()[0].as_table().unwrap();
    let service_time = db["service_time"].as_table().unwrap();
    let counts: Vec<f64> = service_time["cumulative_counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_float().or(v.as_integer().map(|i| i as f64)).unwrap())
        .collect();
    assert_eq!(counts, vec![310.0, 990.0, 1100.0], "the two series of the same bounds are added up: {service_time:?}");
    assert!(report.contains("db: 1 histogram series with other buckets (50 observations) left out"), "{report}");
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Devices, FIFOs and oversized files, refused at once by every reader
// ---------------------------------------------------------------------------------------------

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

/// A tune's front.json, written by a small tune.
fn small_front(dir: &Path) -> PathBuf {
    let out = dir.join("tuned");
    ok(&tune_args(&["-o", s(&out)]));
    out.join("front.json")
}

#[test]
fn devices_fifos_and_oversized_files_are_refused_at_once_by_every_reader() {
    let dir = scratch("devices");
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    let huge = dir.join("huge.prom");
    // 300 MB, sparse: nothing is written, and nothing may be read.
    std::fs::File::create(&huge).unwrap().set_len(300_000_000).unwrap();
    let traces = dir.join("traces.jsonl");
    std::fs::write(&traces, good_runs(40)).unwrap();
    let out = dir.join("x.toml");
    let at_once = Duration::from_secs(5);
    // As Prometheus text, then as a trace file (whose bound is 4 GiB: the 300 MB of zeros are
    // one line past the line bound).
    let kinds: [(&Path, &str, &str); 3] = [
        (Path::new("/dev/zero"), "not a regular file", "not a regular file"),
        (&fifo, "not a regular file", "not a regular file"),
        (
            &huge,
            "holds 300000000 bytes; Prometheus text files are limited to 268435456 bytes (256 MiB)",
            "line 1: longer than 268435456 bytes (256 MiB)",
        ),
    ];
    for (path, as_prometheus, as_traces) in kinds {
        let o = run(at_once, &["calibrate", s(&traces), "--prometheus", s(path), "-o", s(&out)]);
        refused(&o, &[s(path), as_prometheus]);
        let o = run(at_once, &["calibrate", s(path), "-o", s(&out)]);
        refused(&o, &[s(path), as_traces]);
    }
    for (path, why) in [(Path::new("/dev/zero"), "not a regular file"), (&fifo, "not a regular file")] {
        let o = run(at_once, &["validate", s(path)]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(why) || err.contains("must end in"), "{err}");
    }
    assert!(!out.exists());

    let front = small_front(&dir);
    let big_front = dir.join("big.json");
    std::fs::File::create(&big_front).unwrap().set_len(300_000_000).unwrap();
    let gate = |front: &Path| {
        run(
            at_once,
            &[
                "gate",
                "scenarios/mmc.toml",
                "--candidate",
                "plain",
                "--front",
                s(front),
                "--replications",
                "2",
                "--set",
                "simulation.duration_s=20",
                "--set",
                "simulation.warmup_s=0",
            ],
        )
    };
    for (path, why) in [
        (Path::new("/dev/zero"), "not a regular file"),
        (&fifo, "not a regular file"),
        (&big_front, "front files are limited to 67108864 bytes (64 MiB)"),
    ] {
        refused(&gate(path), &[s(path), why]);
    }
    let o = gate(&front);
    assert!(matches!(o.status.code(), Some(0 | 99)), "a real front reads: {}", String::from_utf8_lossy(&o.stderr));
    // A front without objectives judged nothing and passed every candidate.
    let mut doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&front).unwrap()).unwrap();
    doc["objectives"] = serde_json::json!([]);
    let no_objectives = dir.join("no-objectives.json");
    std::fs::write(&no_objectives, doc.to_string()).unwrap();
    refused(&gate(&no_objectives), &["--front", s(&no_objectives), "`objectives` list is empty"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------------------
// tune's shards and checkpoints are sealed
// ---------------------------------------------------------------------------------------------

/// A small tune: 4 candidates of the M/M/c station's servers, 2 then 4 replications.
const TUNE: [&str; 21] = [
    "tune",
    "scenarios/mmc.toml",
    "-p",
    "plain",
    "--space",
    "dependency.station.servers=10..13",
    "--objective",
    "max:auto_completion_ratio",
    "--objective",
    "min:run_latency_ms.p95",
    "--replications",
    "4",
    "--initial-replications",
    "2",
    "--set",
    "simulation.duration_s=20",
    "--set",
    "simulation.warmup_s=0",
    "--jobs",
    "1",
    "--seed",
];

fn tune_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    [&TUNE[..], &["7"], extra].concat()
}

fn tune_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    files_under(dir).into_iter().filter(|(p, _)| p != "report.html").collect()
}

/// Changes one digit inside the first `"values":[[` (or `"objectives":[[`) list of a JSON file.
fn change_a_digit(path: &Path, after: &str) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = bytes
        .windows(after.len())
        .position(|w| w == after.as_bytes())
        .unwrap_or_else(|| panic!("{after} in {}", path.display()))
        + after.len();
    let digit = (at..bytes.len()).find(|&i| bytes[i].is_ascii_digit() && bytes[i + 1].is_ascii_digit()).unwrap() + 1;
    bytes[digit] = if bytes[digit] == b'3' { b'4' } else { b'3' };
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_tune_shard_with_one_digit_changed_is_refused_by_name() {
    let dir = scratch("tune-shard");
    let out = dir.join("sharded");
    for k in ["0/2", "1/2"] {
        ok(&tune_args(&["-o", s(&out), "--shard", k]));
    }
    let shard = dir.join(".sharded.faultline-checkpoint/round-1-shard-1-of-2.json");
    change_a_digit(&shard, "\"values\":[[");
    let o = run(Duration::from_secs(120), &tune_args(&["-o", s(&out), "--merge-shards"]));
    refused(&o, &["round-1-shard-1-of-2.json", "checksum", "1 of the 2 shard files of round 1"]);
    assert!(!out.exists(), "nothing is written from a damaged shard");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_tune_checkpoint_with_one_digit_changed_is_computed_again_and_said() {
    let dir = scratch("tune-checkpoint");
    let reference = dir.join("reference");
    ok(&tune_args(&["-o", s(&reference)]));
    // A checkpoint after round 1, left by a sharded tune's merge.
    let out = dir.join("out");
    for k in ["0/2", "1/2"] {
        ok(&tune_args(&["-o", s(&out), "--shard", k]));
    }
    let paused = ok(&tune_args(&["-o", s(&out), "--merge-shards"]));
    assert!(paused.contains("needs its shards"), "{paused}");
    let checkpoint = dir.join(".out.faultline-checkpoint/tune.json");
    change_a_digit(&checkpoint, "\"objectives\":[[");
    let text = ok(&tune_args(&["-o", s(&out), "--resume"]));
    assert!(
        text.contains("does not match its checksum") && text.contains("8 simulations are computed again"),
        "the damage and the simulations it costs are said: {text}"
    );
    assert_eq!(tune_files(&out), tune_files(&reference), "the files are the uninterrupted tune's");
    // A folder where the checkpoint goes (review of issue 36, F9): computed again as a damaged
    // checkpoint is (it was refused before, "it is a directory ... remove it").
    let folder = dir.join("folder");
    for k in ["0/2", "1/2"] {
        ok(&tune_args(&["-o", s(&folder), "--shard", k]));
    }
    ok(&tune_args(&["-o", s(&folder), "--merge-shards"]));
    let checkpoint = dir.join(".folder.faultline-checkpoint/tune.json");
    std::fs::remove_file(&checkpoint).unwrap();
    std::fs::create_dir_all(checkpoint.join("inside")).unwrap();
    let text = ok(&tune_args(&["-o", s(&folder), "--resume"]));
    assert!(text.contains("is not a regular file but a folder; what it held is computed again"), "{text}");
    assert_eq!(tune_files(&folder), tune_files(&reference), "the files are the uninterrupted tune's");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Review of issue 36, F3: a FIFO (or a link to /dev/null) where faultline keeps one of its own
/// files (a tune checkpoint or shard, a calibration's samples file) is replaced, never written
/// through: before, `tune` and `calibrate` waited for ever for a reader of the FIFO, and a link to
/// /dev/null swallowed a samples file, so calibrate wrote a scenario `validate` refused.
#[test]
fn a_fifo_where_faultline_keeps_its_own_files_is_replaced_not_written_through() {
    let dir = scratch("internal-fifo");
    let reference = dir.join("reference");
    ok(&tune_args(&["-o", s(&reference)]));
    let out = dir.join("out");
    let checkpoint_folder = dir.join(".out.faultline-checkpoint");
    std::fs::create_dir_all(&checkpoint_folder).unwrap();
    mkfifo(&checkpoint_folder.join("round-1-shard-0-of-2.json"));
    for k in ["0/2", "1/2"] {
        let o = run(Duration::from_secs(60), &tune_args(&["-o", s(&out), "--shard", k]));
        assert!(o.status.success(), "{k}: {}", String::from_utf8_lossy(&o.stderr));
    }
    let o = run(Duration::from_secs(60), &tune_args(&["-o", s(&out), "--merge-shards"]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let checkpoint = checkpoint_folder.join("tune.json");
    std::fs::remove_file(&checkpoint).unwrap();
    mkfifo(&checkpoint);
    let o = run(Duration::from_secs(60), &tune_args(&["-o", s(&out), "--resume"]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(tune_files(&out), tune_files(&reference), "the files are the uninterrupted tune's");

    // calibrate: the samples files' names hold a digest of their bytes, so a second calibration
    // of the same traces writes the same names; put a FIFO and a link to /dev/null there.
    let python = repo("tests/data/otel-python-traces.jsonl");
    let scenario = dir.join("prod.toml");
    ok(&["calibrate", s(&python), "--fit", "empirical", "-o", s(&scenario)]);
    let samples: Vec<PathBuf> = std::fs::read_dir(dir.join("prod-data")).unwrap().flatten().map(|e| e.path()).collect();
    assert!(samples.len() >= 2, "{samples:?}");
    std::fs::remove_file(&samples[0]).unwrap();
    mkfifo(&samples[0]);
    std::fs::remove_file(&samples[1]).unwrap();
    std::os::unix::fs::symlink("/dev/null", &samples[1]).unwrap();
    let o = run(Duration::from_secs(60), &["calibrate", s(&python), "--fit", "empirical", "-o", s(&scenario)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for path in &samples[..2] {
        let kind = std::fs::symlink_metadata(path).unwrap().file_type();
        assert!(kind.is_file(), "{} is a regular file again", path.display());
        assert!(std::fs::metadata(path).unwrap().len() > 0);
    }
    ok(&["validate", s(&scenario)]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Review of issue 36, F5: series are grouped by their bounds in ms, whatever the metric's unit.
/// Before, a `_milliseconds` series whose raw bounds matched a `_seconds` series' was added into
/// it (0.05 ms counted as 50 ms, no note), and series whose bounds were the same durations in
/// different units were kept apart.
#[test]
fn prometheus_series_are_grouped_by_their_bounds_in_milliseconds() {
    let dir = scratch("prometheus-units");
    let traces = dir.join("traces.jsonl");
    std::fs::write(&traces, good_runs(40)).unwrap();
    let bucket = |metric: &str, le: &str, n: u64| format!("{metric}_bucket{{server_address=\"db\",le=\"{le}\"}} {n}\n");
    let counts_of = |text: String, name: &str| -> (Vec<f64>, String) {
        let metrics = dir.join(format!("{name}.prom"));
        std::fs::write(&metrics, text).unwrap();
        let out = dir.join(format!("{name}.toml"));
        let report = ok(&["calibrate", s(&traces), "--prometheus", s(&metrics), "-o", s(&out)]);
        let scenario: toml::Table = toml::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let db = scenario["dependency"].as_array().unwrap()[0].as_table().unwrap();
        let counts = db["service_time"]["cumulative_counts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_float().or(v.as_integer().map(|i| i as f64)).unwrap())
            .collect();
        (counts, report)
    };
    let seconds = |le: [&str; 2], n: [u64; 3]| {
        [bucket("a_seconds", le[0], n[0]), bucket("a_seconds", le[1], n[1]), bucket("a_seconds", "+Inf", n[2])].concat()
    };
    let millis = |le: [&str; 2], n: [u64; 3]| {
        [
            bucket("b_milliseconds", le[0], n[0]),
            bucket("b_milliseconds", le[1], n[1]),
            bucket("b_milliseconds", "+Inf", n[2]),
        ]
        .concat()
    };
    // The same raw bounds, other durations: kept apart, the larger series used.
    let (counts, report) =
        counts_of(seconds(["0.05", "0.1"], [100, 900, 1000]) + &millis(["0.05", "0.1"], [10, 90, 100]), "raw");
    assert_eq!(counts, vec![100.0, 900.0, 1000.0], "{report}");
    assert!(report.contains("1 histogram series with other buckets (100 observations) left out"), "{report}");
    // The same durations in two units: added up.
    let (counts, report) =
        counts_of(seconds(["0.05", "0.1"], [100, 900, 1000]) + &millis(["50", "100"], [10, 90, 100]), "same");
    assert_eq!(counts, vec![110.0, 990.0, 1100.0], "{report}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Review of issue 36, F6: a small rate keeps its significant digits. Before, rates were written
/// with six decimals: five runs a week apart gave 0.000002 (3 % off the 2.0668e-06 observed).
#[test]
fn a_small_arrival_rate_keeps_its_significant_digits() {
    let dir = scratch("small-rate");
    let week_ms: u64 = 7 * 86_400 * 1_000;
    let text: String = (0..5)
        .map(|i| {
            document(
                &format!("{:032x}", 0xe000 + i),
                &[
                    Span("00000000000000e1", "", "handle", 1, week_ms * i, week_ms * i + 100, ""),
                    Span("00000000000000e2", "00000000000000e1", "query db", 3, week_ms * i + 10, week_ms * i + 60, DB),
                ],
            )
        })
        .collect();
    let traces = dir.join("weekly.jsonl");
    std::fs::write(&traces, text).unwrap();
    let out = dir.join("weekly.toml");
    ok(&["calibrate", s(&traces), "-o", s(&out)]);
    let scenario: toml::Table = toml::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let rate = scenario["workflow"].as_array().unwrap()[0]["arrivals"]["rate_per_s"].as_float().unwrap();
    let observed = 5.0 / (4.0 * week_ms as f64 / 1e3);
    assert!((rate / observed - 1.0).abs() < 0.3, "rate {rate} for {observed} observed");
    assert!(rate > 1e-6 && (rate * 1e6).fract() != 0.0, "more than six decimals: {rate}");
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Shapes the review found told in misleading words (issue 36's review, F8 to F10)
// ---------------------------------------------------------------------------------------------

/// The db row of calibrate's report: (dependency, answered attempts).
fn answered(report: &str, dependency: &str) -> String {
    let row = report.lines().find(|l| l.starts_with(&format!("{dependency} "))).unwrap_or_else(|| panic!("{report}"));
    row.split_whitespace().nth(1).unwrap().to_string()
}

#[test]
fn a_span_id_that_two_spans_share_and_a_third_points_to_leaves_its_trace_out_with_a_note() {
    let dir = scratch("dup-ids");
    let t = |i: u64| format!("{:032x}", 0xd000 + i);
    let mut text = good_runs(40);
    // A client span with its root's id, and a call below "it": whose child is the call?
    text.push_str(&document(
        &t(1),
        &[
            Span("00000000000000e1", "", "agent.run wf", 2, 0, 50, ""),
            Span("00000000000000e1", "00000000000000e1", "GET /x", 3, 5, 40, DB),
            Span("00000000000000e2", "00000000000000e1", "GET /y", 3, 6, 30, DB),
        ],
    ));
    // Two sibling calls sharing an id nobody points to: nothing is ambiguous, the trace counts.
    text.push_str(&document(
        &t(2),
        &[
            Span("00000000000000f1", "", "agent.run wf", 2, 0, 50, ""),
            Span("00000000000000f2", "00000000000000f1", "GET /x", 3, 5, 40, DB),
            Span("00000000000000f2", "00000000000000f1", "GET /x", 3, 41, 45, DB),
        ],
    ));
    let traces = dir.join("dup.jsonl");
    std::fs::write(&traces, &text).unwrap();
    let out = dir.join("dup.toml");
    let report = ok(&["calibrate", s(&traces), "-o", s(&out)]);
    assert!(
        report.contains("1 trace(s) (3 spans) were left out: two of their spans share a span id that another span names as its parent"),
        "{report}"
    );
    assert!(report.contains(&format!("trace {}, span id 00000000000000e1", t(1))), "{report}");
    assert!(report.contains("of 41 run(s)"), "40 good runs and the siblings' run: {report}");
    assert!(!report.contains("end before they start"), "{report}");
    assert_eq!(answered(&report, "db"), "42", "40 + the siblings' 2 attempts, none of the left-out trace: {report}");
    // Every trace ambiguous: the refusal says why there is no root.
    let only = dir.join("only.jsonl");
    std::fs::write(&only, text.lines().filter(|l| l.contains("e1")).collect::<Vec<_>>().join("\n")).unwrap();
    let o = run(Duration::from_secs(20), &["calibrate", s(&only), "-o", s(&dir.join("only.toml"))]);
    refused(&o, &["only.jsonl", "no root spans found in 3 span(s)", "share a span id", "00000000000000e1"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn two_callees_that_become_one_dependency_name_are_said_to_be_added_up() {
    let dir = scratch("merged-callees");
    let callee = |name: &str| format!("{{\"key\":\"server.address\",\"value\":{{\"stringValue\":\"{name}\"}}}}");
    let (dotted, dashed) = (callee("a.b"), callee("a-b"));
    let text: String = (0..40u64)
        .map(|i| {
            let t = 1_000 * i;
            let who = if i % 2 == 0 { dotted.as_str() } else { dashed.as_str() };
            document(
                &format!("{:032x}", 0xe000 + i),
                &[
                    Span("00000000000000a1", "", "agent.run wf", 2, t, t + 50, ""),
                    Span("00000000000000a2", "00000000000000a1", "GET /x", 3, t + 5, t + 40, who),
                ],
            )
        })
        .collect();
    let traces = dir.join("merged.jsonl");
    std::fs::write(&traces, &text).unwrap();
    let report = ok(&["calibrate", s(&traces), "-o", s(&dir.join("m.toml"))]);
    assert!(
        report.contains("the callees `a-b` and `a.b` are one dependency, a-b, here"),
        "the merge is said: {report}"
    );
    assert_eq!(answered(&report, "a-b"), "40", "{report}");
    // One call whose end precedes its start (hosts' clocks apart) is read as 0 ms, and said.
    let skewed =
        text.replacen(&format!("\"endTimeUnixNano\":\"{}\"", 40 * 1_000_000), "\"endTimeUnixNano\":\"1000\"", 1);
    assert_ne!(skewed, text);
    std::fs::write(&traces, &skewed).unwrap();
    let report = ok(&["calibrate", s(&traces), "-o", s(&dir.join("skewed.toml"))]);
    assert!(report.contains("1 span(s) end before they start"), "{report}");
    std::fs::write(&traces, &text).unwrap();
    // Kept apart with --map, as the note advises: two dependencies, no merge note.
    let report = ok(&["calibrate", s(&traces), "--map", "a.b=ab", "-o", s(&dir.join("kept.toml"))]);
    assert!(!report.contains("are one dependency"), "{report}");
    assert_eq!((answered(&report, "a-b"), answered(&report, "ab")), ("20".into(), "20".into()), "{report}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_refused_histogram_names_its_file_and_line_and_an_empty_one_is_said() {
    let dir = scratch("prometheus-words");
    let traces = dir.join("traces.jsonl");
    std::fs::write(&traces, good_runs(40)).unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let good = write(
        "good.prom",
        "a_seconds_bucket{server_address=\"db\",le=\"0.05\"} 100\na_seconds_bucket{server_address=\"db\",le=\"+Inf\"} 1000\n",
    );
    let out = dir.join("c.toml");
    // One file given twice (or two scrapes of one server): each bucket appears twice.
    let o = run(
        Duration::from_secs(20),
        &["calibrate", s(&traces), "--prometheus", s(&good), "--prometheus", s(&good), "-o", s(&out)],
    );
    refused(&o, &["the bucket le=0.05 appears twice", "good.prom`, line 1 and", "one file given twice"]);
    let falling = write(
        "falling.prom",
        "# a comment\na_seconds_bucket{server_address=\"db\",le=\"0.05\"} 500\na_seconds_bucket{server_address=\"db\",le=\"0.1\"} 400\na_seconds_bucket{server_address=\"db\",le=\"+Inf\"} 1000\n",
    );
    let o = run(Duration::from_secs(20), &["calibrate", s(&traces), "--prometheus", s(&falling), "-o", s(&out)]);
    refused(&o, &["falling.prom`, line 3:", "le=0.1 counts 400, fewer than the 500 of le=0.05", "line 2"]);
    let endless = write("endless.prom", "a_seconds_bucket{server_address=\"db\",le=\"0.05\"} 5\n");
    let o = run(Duration::from_secs(20), &["calibrate", s(&traces), "--prometheus", s(&endless), "-o", s(&out)]);
    refused(&o, &["endless.prom`, line 1:", "no le=\"+Inf\" bucket"]);
    let empty = write(
        "empty.prom",
        "a_seconds_bucket{server_address=\"db\",le=\"0.05\"} 0\na_seconds_bucket{server_address=\"db\",le=\"+Inf\"} 0\n",
    );
    let report = ok(&["calibrate", s(&traces), "--prometheus", s(&empty), "-o", s(&out)]);
    assert!(report.contains("db: the histogram series hold no observation (every count 0)"), "{report}");
    let scenario = std::fs::read_to_string(&out).unwrap();
    assert!(!scenario.contains("dist = \"histogram\""), "the traces' latency is used: {scenario}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_refused_calibration_leaves_no_folder_it_made_and_says_the_ratio_as_written() {
    let dir = scratch("refused-folders");
    let traces = dir.join("traces.jsonl");
    std::fs::write(&traces, "{\"resourceSpans\":[]}\n").unwrap();
    let out = dir.join("fresh/sub/x.toml");
    let o = run(Duration::from_secs(20), &["calibrate", s(&traces), "-o", s(&out)]);
    refused(&o, &["traces.jsonl"]);
    assert!(!dir.join("fresh").exists(), "the folders made for the lock are removed again");
    // A folder that was there stays, empty or not.
    std::fs::create_dir_all(dir.join("kept")).unwrap();
    let o = run(Duration::from_secs(20), &["calibrate", s(&traces), "-o", s(&dir.join("kept/x.toml"))]);
    refused(&o, &["traces.jsonl"]);
    assert!(dir.join("kept").is_dir());
    let o = run(Duration::from_secs(20), &["calibrate", s(&traces), "--sampling-ratio", "0", "-o", s(&out)]);
    refused(&o, &["argument `--sampling-ratio 0`: give a share in (0, 1]"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_tune_shard_copied_over_another_is_refused_for_what_it_holds() {
    let dir = scratch("tune-shard-copied");
    let out = dir.join("sharded");
    for k in ["0/2", "1/2"] {
        ok(&tune_args(&["-o", s(&out), "--shard", k]));
    }
    let folder = dir.join(".sharded.faultline-checkpoint");
    std::fs::copy(folder.join("round-1-shard-0-of-2.json"), folder.join("round-1-shard-1-of-2.json")).unwrap();
    let o = run(Duration::from_secs(120), &tune_args(&["-o", s(&out), "--merge-shards"]));
    refused(&o, &["round-1-shard-1-of-2.json", "it holds shard 0 of 2, which its name does not say"]);
    assert!(!out.exists(), "nothing is written from a copied shard");
    std::fs::remove_dir_all(&dir).unwrap();
}
