//! What each fuzz target checks of one input. Shared by the cargo-fuzz targets (fuzz_targets/)
//! and by tests/fuzz_targets.rs and tests/fuzz_scenarios.rs, which compile it on stable and
//! replay seeds through it on every `cargo test`.
//!
//! A finding is a panic: either faultline panicked, or one of these properties failed:
//! - every refusal is one line of at most 1 500 characters, with no control characters;
//! - a scenario file the parser accepts also accepts `--set simulation.seed=5` and
//!   `--set simulation.replications=1`;
//! - a scenario that compiles simulates, or stops at one of the two bounds no check can know in
//!   advance (the drain limit, the in-flight bound);
//! - a point record sealed for a sweep reads back equal, and any other change is refused;
//! - a shard file's records come out in the header's order, each verified;
//! - calibrate, from any OTLP/JSON text (and any Prometheus text beside real traces), either
//!   refuses it in one line or makes a scenario that loads and compiles: it never refuses the
//!   scenario it made itself (and a hang is libFuzzer's timeout);
//! - a Prometheus histogram read has ascending bounds ending at +Inf and counts that never
//!   decrease, finite and 0 or more;
//! - a tune shard or checkpoint read is one sealed for its tune: sealed again it reads back
//!   bit for bit, and under another tune's key it is refused (or not resumed).

#![allow(dead_code)]

use faultline::engine::{Model, SimError, simulate};
use faultline::experiment::batch::compile_scenario;
use faultline::experiment::batch::replications::SeriesSum;
use faultline::experiment::batch::slo::compile_slo;
use faultline::experiment::calibrate::choose::FitChoice;
use faultline::experiment::calibrate::read::{ObservedTrace, TraceSet};
use faultline::experiment::calibrate::{Inputs, make, prometheus};
use faultline::experiment::command::CommandError;
use faultline::experiment::output::formats::{summary_json, timeseries_csv};
use faultline::experiment::sweep::checkpoint::{PointRecord, SweepKey};
use faultline::experiment::sweep::shard::ShardReader;
use faultline::experiment::tune::checkpoint::{Loaded, RaceState, TuneKey};
use faultline::experiment::tune::shards::{read_shard_values, shard_bytes};
use faultline::metrics::stats::aggregate;
use faultline::scenario::{Format, Source, apply_overrides, canonical_path, parse_override, parse_source};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What became of one scenario input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScenarioOutcome {
    /// Not a scenario faultline accepts: refused with a one-line error.
    Refused,
    Simulated,
    /// Compiled, then stopped by the drain limit or the in-flight bound.
    DynamicBound,
}

/// FNV-1a: picks the policy and the seed from the input itself, so a crash reproduces from
/// the saved input alone.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xCBF2_9CE4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3))
}

fn assert_one_line(what: &str, error: &str) {
    let chars = error.chars().count();
    assert!(
        chars <= 1_500 && !error.chars().any(char::is_control),
        "{what}: an error of {chars} characters, on several lines or with control characters: {error:?}"
    );
}

/// The fuzz target: any bytes as a scenario file (JSON if it starts with `{`, else TOML).
pub fn scenario(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (name, format) =
        if text.trim_start().starts_with('{') { ("fuzz.json", Format::Json) } else { ("fuzz.toml", Format::Toml) };
    let pick = fnv(data);
    scenario_text(name, text, format, pick, 100.0);
}

/// Everything `validate` and a short `run` do with a scenario text: the policy and seed come
/// from `pick`, and the run is cut to about `arrivals` expected arrivals.
pub fn scenario_text(name: &str, text: &str, format: Format, pick: u64, arrivals: f64) -> ScenarioOutcome {
    let source = Source::from_text(name, text, format);
    let parsed = parse_source(&source);
    // Overrides go through the re-serialized document: they must agree with the file.
    let overrides =
        [parse_override("simulation.seed=5").unwrap(), parse_override("simulation.replications=1").unwrap()];
    let with = apply_overrides(&source, &overrides);
    let _ = canonical_path(&source, &["dependency".into(), "0".into(), "servers".into()]);
    for error in [parsed.as_ref().err(), with.as_ref().err()].into_iter().flatten() {
        assert_one_line("parse", &error.to_string());
    }
    let Ok(scenario) = parsed else { return ScenarioOutcome::Refused };
    if let Err(e) = &with {
        panic!("the file parses but `--set simulation.seed=5` fails: {e}");
    }
    let compiled = compile_scenario(&source, &[])
        .and_then(|(model, _)| compile_slo(scenario.slo.as_ref(), &model, &source).map(|_| model));
    let mut model = match compiled {
        Ok(model) => model,
        Err(e) => {
            assert_one_line("compile", &e.to_string());
            return ScenarioOutcome::Refused;
        }
    };
    if let Err(e) = compile_scenario(&source, &overrides) {
        panic!("validate accepts the file but `--set simulation.seed=5 --replications 1` fails: {e}");
    }
    cap(&mut model, arrivals);
    let policy = (pick % model.policies.len() as u64) as usize;
    let seed = [0, 1, u64::MAX, pick.rotate_left(17)][(pick >> 60) as usize % 4];
    match simulate(&model, policy, seed) {
        Ok(replication) => {
            let aggregate = aggregate(std::slice::from_ref(&replication.metrics));
            let labels = model.labels(policy);
            let mut series = SeriesSum::default();
            series.add(&replication.timeseries);
            let _ = timeseries_csv(&model, &labels, &series, 1);
            let _ = summary_json(&model, &model.policies[policy].name, seed, &[], &aggregate);
            ScenarioOutcome::Simulated
        }
        Err(SimError::DrainLimit { .. } | SimError::TooManyRuns { .. }) => ScenarioOutcome::DynamicBound,
        Err(SimError::Stopped) => unreachable!("simulate has no stop flag to stop it"),
    }
}

/// A short simulation: about `arrivals` expected arrivals at most, a drain of at most 60 s.
fn cap(model: &mut Model, arrivals: f64) {
    let world = &mut model.world;
    let peak = |w: &faultline::world::WorkloadModel| match &w.population {
        // A closed population starts at most one run per user per think time.
        Some(p) => f64::from(p.max_users) / p.wait.mean_s(),
        None => w.phases.iter().map(|p| p.start_rate_per_s.max(p.end_rate_per_s)).fold(0.0, f64::max),
    };
    let rate: f64 = world.workloads.iter().map(peak).sum();
    let budget_us = if rate > 0.0 { (arrivals / rate * 1e6) as u64 } else { u64::MAX };
    world.duration_us = world.duration_us.min(budget_us).clamp(1, 30_000_000);
    world.warmup_us = world.warmup_us.min(world.duration_us / 2);
    world.drain_limit_us = world.drain_limit_us.min(60_000_000);
}

/// The first byte picks the reader (0 a shard file, 1 a checkpoint point, 2 a checkpoint key,
/// modulo 3); the rest is the file.
pub fn readers(data: &[u8]) {
    let Some((&selector, file)) = data.split_first() else { return };
    match selector % 3 {
        0 => {
            shard_file(file);
        }
        1 => point_file(file),
        _ => key_file(file),
    }
}

/// What merge reads of one shard file, from memory.
pub fn shard_file(bytes: &[u8]) -> usize {
    let reader = ShardReader::new(Path::new("fuzz.jsonl"), bytes);
    let mut reader = match reader {
        Ok(reader) => reader,
        Err(e) => {
            assert_one_line("shard header", &e.to_string());
            return 0;
        }
    };
    let (first, step) = (reader.header.shard, reader.header.shards);
    let mut records = 0;
    loop {
        match reader.next_record() {
            Ok(Some(record)) => {
                assert_eq!(record.point, first + records * step, "a record out of the header's order");
                for row in &record.rows {
                    let _ = row.aggregate();
                }
                records += 1;
            }
            Ok(None) => return records,
            Err(e) => {
                assert_one_line("shard record", &e.to_string());
                return records;
            }
        }
    }
}

/// What resume reads of one checkpoint point: refused, or read back exactly once sealed.
pub fn point_file(bytes: &[u8]) {
    const SWEEP: &str = "0123456789abcdef";
    let Ok(record) = serde_json::from_slice::<PointRecord>(bytes) else {
        match PointRecord::read(bytes, 0, SWEEP) {
            Err(why) => assert_one_line("point", &why),
            Ok(_) => panic!("a file that is not a point record was read as one"),
        }
        return;
    };
    for row in &record.rows {
        let _ = row.aggregate();
    }
    // Unless the bytes are this sweep's sealed record, reading them is refused.
    let sealed = record.sealed(SWEEP);
    if let Ok(back) = PointRecord::read(bytes, record.point, SWEEP) {
        assert_eq!(back, sealed, "a point read back differs from the record sealed");
    }
    let text = serde_json::to_vec(&sealed).expect("a point always serializes");
    let back = PointRecord::read(&text, record.point, SWEEP);
    assert_eq!(back.as_ref().ok(), Some(&sealed), "a sealed point does not read back: {back:?}");
    assert!(PointRecord::read(&text, record.point, "fedcba9876543210").is_err(), "another sweep's point was taken");
}

/// What resume reads of a checkpoint's key: a key that reads has one digest, and round-trips.
pub fn key_file(bytes: &[u8]) {
    let Ok(key) = serde_json::from_slice::<SweepKey>(bytes) else { return };
    let text = serde_json::to_string(&key).expect("a key always serializes");
    let back: SweepKey = serde_json::from_str(&text).expect("a key reads back");
    assert_eq!(back, key);
    assert_eq!(back.digest(), key.digest());
}

/// What calibrate makes of one OTLP/JSON text: the report, or None when it refused (in one
/// line, naming the input). The fit and a sampling ratio come from the input's hash.
pub fn otlp(data: &[u8]) -> Option<String> {
    let pick = fnv(data);
    let fit = [FitChoice::Auto, FitChoice::Empirical, FitChoice::LogNormal, FitChoice::Gamma, FitChoice::Weibull]
        [(pick % 5) as usize];
    let ratio = [None, None, Some(0.1), Some(1e-12)][(pick >> 8) as usize % 4];
    otlp_with(data, fit, ratio)
}

/// [`otlp`] with the fit and the sampling ratio given.
pub fn otlp_with(data: &[u8], fit: FitChoice, ratio: Option<f64>) -> Option<String> {
    let mut set = TraceSet::default();
    if let Err(e) = set.read("`fuzz.jsonl`", data) {
        assert_one_line("otlp", &e.to_string());
        return None;
    }
    calibrated(set.traces, Vec::new(), &BTreeMap::new(), fit, ratio)
}

/// calibrate's whole making of a scenario, in memory: a refusal must be one line that is not
/// a refusal of its own scenario.
fn calibrated(
    traces: Vec<ObservedTrace>,
    histograms: Vec<prometheus::Histogram>,
    renames: &BTreeMap<String, String>,
    fit: FitChoice,
    sampling_ratio: Option<f64>,
) -> Option<String> {
    let files = [PathBuf::from("fuzz.jsonl")];
    let inputs = Inputs { traces: &files, sampling_ratio };
    match make(&inputs, traces, histograms, renames, fit, Path::new("out/fuzz.toml")) {
        Ok(made) => {
            // What was made reads back as `run` would read it, with its samples files.
            let source = Source::from_text("out/fuzz.toml", &made.text, Format::Toml);
            let scenario = faultline::scenario::parse_source_with(&source, &made.samples)
                .unwrap_or_else(|e| panic!("calibrate wrote a scenario that does not load: {e}\n{}", made.text));
            Model::compile(&scenario, &source)
                .unwrap_or_else(|e| panic!("calibrate wrote a scenario that does not compile: {e}\n{}", made.text));
            Some(made.report)
        }
        Err(e) => {
            let text = e.to_string();
            assert!(!text.contains("defect of calibrate"), "calibrate refused its own scenario: {text}");
            assert!(matches!(e, CommandError::Input(_)), "not an input error: {text}");
            assert_one_line("calibrate", &text);
            None
        }
    }
}

/// Forty runs of a root span calling `db` once, a second apart: the traces a Prometheus text
/// is calibrated beside.
pub fn forty_runs() -> String {
    (0..40u64)
        .map(|i| {
            format!(
                "{{\"resourceSpans\":[{{\"resource\":{{\"attributes\":[]}},\"scopeSpans\":[{{\"spans\":[{{\"traceId\":\"{:032x}\",\"spanId\":\"00000000000000a1\",\"name\":\"agent.run wf\",\"kind\":2,\"startTimeUnixNano\":\"{}\",\"endTimeUnixNano\":\"{}\"}},{{\"traceId\":\"{:032x}\",\"spanId\":\"00000000000000a2\",\"parentSpanId\":\"00000000000000a1\",\"name\":\"GET /x\",\"kind\":3,\"startTimeUnixNano\":\"{}\",\"endTimeUnixNano\":\"{}\",\"attributes\":[{{\"key\":\"server.address\",\"value\":{{\"stringValue\":\"db\"}}}}]}}]}}]}}]}}\n",
                0xa000 + i,
                i * 1_000_000_000,
                i * 1_000_000_000 + 50_000_000,
                0xa000 + i,
                i * 1_000_000_000 + 5_000_000,
                i * 1_000_000_000 + (5 + i) * 1_000_000,
            )
        })
        .collect()
}

/// What calibrate makes of a Prometheus text: every histogram checked, then all of them given
/// to `db` of [`forty_runs`] (each callee mapped to it). Returns the histograms read.
pub fn prometheus_text(data: &[u8]) -> usize {
    let histograms = match prometheus::histograms_from("`fuzz.prom`", data) {
        Ok(h) => h,
        Err(e) => {
            assert_one_line("prometheus", &e.to_string());
            return 0;
        }
    };
    for h in &histograms {
        assert_eq!(h.buckets.last().map(|b| b.0), Some(f64::INFINITY), "{h:?}");
        assert!(h.buckets.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1), "{h:?}");
        assert!(h.buckets.iter().all(|b| b.1.is_finite() && b.1 >= 0.0), "{h:?}");
        if h.total() > 0.0 {
            for p in [0.1, 0.5, 0.99] {
                assert!(!h.quantile_ms(p).is_nan(), "quantile {p} of {h:?}");
            }
        }
    }
    static RUNS: std::sync::OnceLock<Vec<ObservedTrace>> = std::sync::OnceLock::new();
    let runs = RUNS.get_or_init(|| {
        let mut set = TraceSet::default();
        set.read("forty", forty_runs().as_bytes()).expect("forty runs read");
        set.traces
    });
    let renames: BTreeMap<String, String> = histograms.iter().map(|h| (h.callee(), "db".to_string())).collect();
    let n = histograms.len();
    calibrated(runs.clone(), histograms, &renames, FitChoice::Auto, None);
    n
}

/// The first byte picks tune's reader (0 a shard file, 1 a checkpoint, modulo 2); the rest is
/// the file.
pub fn tune_readers(data: &[u8]) {
    let Some((&selector, file)) = data.split_first() else { return };
    if selector % 2 == 0 {
        tune_shard(file);
    } else {
        tune_checkpoint(file);
    }
}

/// The key a tune file names, when it names one: a real file reads under its own tune's key.
fn key_of(doc: Option<&serde_json::Value>) -> TuneKey {
    doc.and_then(|d| serde_json::from_value(d["key"].clone()).ok()).unwrap_or_else(|| TuneKey {
        version: "v".into(),
        build: "b".into(),
        scenario: "{}".into(),
        policy: "p".into(),
        space: vec!["a=1..2".into()],
        objectives: vec!["max:x".into()],
        sets: vec![],
        seed: None,
        replications: None,
        candidates: 2,
        initial_replications: 2,
        budget: None,
        generations: 0,
        files: vec![],
    })
}

fn another(key: &TuneKey) -> TuneKey {
    TuneKey { seed: Some(key.seed.map_or(1, |s| s ^ 1)), ..key.clone() }
}

/// Values as their bits, so a read back is compared exactly (NaN included).
type Bits = Vec<Vec<u64>>;

fn bits(values: &[Vec<f64>]) -> Bits {
    values.iter().map(|r| r.iter().map(|x| x.to_bits()).collect()).collect()
}

/// What --merge-shards takes of one tune shard file: true when it is taken.
pub fn tune_shard(bytes: &[u8]) -> bool {
    let doc: Option<serde_json::Value> = serde_json::from_slice(bytes).ok();
    let key = key_of(doc.as_ref());
    let round = doc.as_ref().and_then(|d| d["round"].as_u64()).unwrap_or(1) as usize;
    match read_shard_values(bytes, &key, round) {
        Err(why) => {
            assert_one_line("tune shard", &why);
            false
        }
        Ok(read) => {
            let again = shard_bytes(&key, round, read.shard, &read.tasks, &read.values);
            let back = read_shard_values(&again, &key, round).expect("a sealed shard reads back");
            assert_eq!((&back.tasks, bits(&back.values)), (&read.tasks, bits(&read.values)));
            assert!(read_shard_values(bytes, &another(&key), round).is_err(), "another tune's shard was taken");
            true
        }
    }
}

/// What --resume takes of one tune checkpoint: true when it is resumed.
pub fn tune_checkpoint(bytes: &[u8]) -> bool {
    let doc: Option<serde_json::Value> = serde_json::from_slice(bytes).ok();
    let key = key_of(doc.as_ref());
    let first: Vec<Vec<String>> = doc
        .as_ref()
        .and_then(|d| d["candidates"].as_array())
        .map(|cs| {
            cs.iter()
                .take_while(|c| c["generation"].as_u64() == Some(0))
                .filter_map(|c| serde_json::from_value(c["values"].clone()).ok())
                .collect()
        })
        .unwrap_or_default();
    match RaceState::read(bytes, &key, &first) {
        Loaded::State(state) => {
            let sealed = serde_json::to_vec(&state.sealed(&key)).expect("a state serializes");
            let Loaded::State(back) = RaceState::read(&sealed, &key, &first) else {
                panic!("a sealed checkpoint does not read back")
            };
            let samples = |s: &RaceState| -> Vec<(Bits, Bits)> {
                s.samples().iter().map(|x| (bits(&x.objectives), bits(&x.constraints))).collect()
            };
            assert_eq!(samples(&back), samples(&state));
            assert_eq!((back.values(), back.status()), (state.values(), state.status()));
            assert!(
                !matches!(RaceState::read(bytes, &another(&key), &first), Loaded::State(_)),
                "another tune's checkpoint was resumed"
            );
            true
        }
        Loaded::Damaged { why, .. } => {
            assert_one_line("tune checkpoint", &why);
            false
        }
        Loaded::Nothing | Loaded::OtherTune => false,
    }
}
