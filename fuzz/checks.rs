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
//! - a shard file's records come out in the header's order, each verified.

#![allow(dead_code)]

use faultline::engine::{Model, SimError, simulate};
use faultline::experiment::batch::compile_scenario;
use faultline::experiment::batch::replications::SeriesSum;
use faultline::experiment::batch::slo::compile_slo;
use faultline::experiment::output::formats::{summary_json, timeseries_csv};
use faultline::experiment::sweep::checkpoint::{PointRecord, SweepKey};
use faultline::experiment::sweep::shard::ShardReader;
use faultline::metrics::stats::aggregate;
use faultline::scenario::{Format, Source, apply_overrides, canonical_path, parse_override, parse_source};
use std::path::Path;

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
    }
}

/// A short simulation: about `arrivals` expected arrivals at most, a drain of at most 60 s.
fn cap(model: &mut Model, arrivals: f64) {
    let world = &mut model.world;
    let rate: f64 = world.workloads.iter().map(|w| w.phases.iter().map(|p| p.1).fold(0.0, f64::max)).sum();
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
