//! The commands without writing, as the Python package calls them (docs/python.md): the same
//! bytes as the binary's files, a scenario given as text located in its errors, and a watch
//! that stops a command (Ctrl-C from Python) keeping a sweep's finished points.

use faultline::experiment::CommandError;
use faultline::experiment::OutputFormat;
use faultline::experiment::batch::workers::{Watch, watched};
use faultline::experiment::run::{RunOptions, simulate_run};
use faultline::experiment::sweep::files::SweepView;
use faultline::experiment::sweep::{SweepOptions, sweep_in_memory};
use faultline::scenario::error::Origin;
use faultline::scenario::{Format, ScenarioInput, Source};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

const STARTER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/experiment/starter.toml");

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("faultline-in-memory-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every file of a folder the binary wrote but its manifest.
fn folder(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().unwrap() != "manifest.json" {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                files.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

fn binary(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_faultline")).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn run_options(scenario: ScenarioInput, jobs: usize) -> RunOptions {
    RunOptions {
        scenario,
        policies: vec![],
        seed: Some(3),
        replications: Some(2),
        sets: vec!["policy.resilient.budget.retry_tokens=2".into()],
        out: None,
        format: OutputFormat::Text,
        jobs,
        replication: None,
        traces: None,
        metrics: Vec::new(),
        check_slo: false,
    }
}

fn sweep_options(jobs: usize) -> SweepOptions {
    SweepOptions {
        scenario: PathBuf::from(STARTER).into(),
        params: vec!["policy.resilient.budget.retry_tokens=0,1,2".into()],
        policies: vec![],
        seed: Some(4),
        replications: Some(2),
        sets: vec![],
        jobs,
        out: None,
        resume: false,
        shard: None,
        view: SweepView::default(),
    }
}

#[test]
fn a_run_in_memory_holds_the_binary_s_files_from_a_file_or_its_text() {
    let dir = scratch("run");
    let out = dir.join("out");
    binary(&[
        "run",
        STARTER,
        "--seed",
        "3",
        "--replications",
        "2",
        "--set",
        "policy.resilient.budget.retry_tokens=2",
        "--out",
        out.to_str().unwrap(),
    ]);
    let expected = folder(&out);
    let text = std::fs::read_to_string(STARTER).unwrap();
    #[derive(Debug, Clone, Copy)]
    enum Kind {
        File,
        Text,
    }
    for (input_kind, jobs) in [(Kind::File, 1), (Kind::File, 2), (Kind::Text, 2)] {
        let input = match input_kind {
            Kind::File => ScenarioInput::File(STARTER.into()),
            Kind::Text => ScenarioInput::Text(Source::from_text("<string>", &text, Format::Toml)),
        };
        let results = simulate_run(&run_options(input, jobs)).unwrap();
        let mut files = BTreeMap::new();
        results
            .each_file(&mut |path, bytes| {
                files.insert(path.to_string(), bytes.to_vec());
                Ok(())
            })
            .unwrap();
        assert_eq!(files.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>());
        let text = matches!(input_kind, Kind::Text);
        for (name, bytes) in &expected {
            if text && name == "report.html" {
                continue; // it names the scenario, and a text's name is `<string>`
            }
            let mut ours = files[name].clone();
            if text {
                // A text has no file stem to name the scenario by.
                let named = String::from_utf8(ours).unwrap();
                ours = named.replace("\"scenario\": \"<string>\"", "\"scenario\": \"starter\"").into_bytes();
            }
            assert!(&ours == bytes, "{name} differs from the binary's (jobs {jobs}, {input_kind:?})");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_sweep_in_memory_holds_the_binary_s_files() {
    let dir = scratch("sweep");
    let out = dir.join("out");
    let out_arg = out.to_str().unwrap();
    let param = "policy.resilient.budget.retry_tokens=0,1,2";
    binary(&["sweep", STARTER, "--param", param, "--seed", "4", "--replications", "2", "--out", out_arg]);
    let expected = folder(&out);
    for jobs in [1, 2] {
        let tables = sweep_in_memory(&sweep_options(jobs)).unwrap();
        assert!(!tables.interrupted && tables.finished == 3 && tables.points == 3);
        assert!(tables.csv == expected["sweep.csv"], "sweep.csv (jobs {jobs})");
        assert!(tables.json == expected["sweep.json"], "sweep.json (jobs {jobs})");
        assert!(tables.report_html.as_bytes() == &expected["report.html"][..], "report.html (jobs {jobs})");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_stopped_watch_stops_a_run_and_leaves_a_sweep_its_finished_points() {
    let watch = Arc::new(Watch::default());
    watch.stop();
    let run = watched(watch.clone(), || simulate_run(&run_options(PathBuf::from(STARTER).into(), 1)));
    assert!(matches!(run, Err(CommandError::Interrupted)));
    let tables = watched(watch, || sweep_in_memory(&sweep_options(1))).unwrap();
    assert!(tables.interrupted && tables.finished == 0 && tables.points == 3);
    // The header row only, and no report.
    assert_eq!(String::from_utf8(tables.csv).unwrap().lines().count(), 1);
    assert!(tables.report_html.is_empty());
    // Unwatched, the same sweep finishes: the watch only watches.
    let full = sweep_in_memory(&sweep_options(1)).unwrap();
    let watch = Arc::new(Watch::default());
    let watched_full = watched(watch.clone(), || sweep_in_memory(&sweep_options(1))).unwrap();
    assert!(full.csv == watched_full.csv);
    assert_eq!(watch.progress(), (3 * 2 * 2, 3 * 2 * 2), "every simulation counted");
}

#[test]
fn a_scenario_given_as_text_is_located_in_its_errors() {
    let text = std::fs::read_to_string(STARTER).unwrap().replacen("servers = 30 ", "servers = -3 ", 1);
    let line = text.lines().position(|l| l.contains("servers = -3")).unwrap() + 1;
    let input = ScenarioInput::Text(Source::from_text("<string>", &text, Format::Toml));
    match simulate_run(&run_options(input, 1)) {
        Err(CommandError::Scenario(e)) => {
            assert_eq!(e.field, "dependency[0].servers");
            match e.origin {
                Origin::File { path, line: Some(l), column: Some(_) } => {
                    assert_eq!((path.as_str(), l), ("<string>", line))
                }
                other => panic!("not located: {other:?}"),
            }
        }
        Err(e) => panic!("not a located error: {e}"),
        Ok(_) => panic!("a negative server count was accepted"),
    }
}

/// A calibration made in memory runs with no file beside it (the Python package's
/// `CalibrateResult.scenario`): its samples inline give the figures of the set the binary
/// writes, samples files and all.
#[test]
fn a_calibration_with_samples_files_runs_from_its_self_contained_text() {
    use faultline::experiment::calibrate::choose::FitChoice;
    use faultline::experiment::calibrate::{CalibrateOptions, calibrate_in_memory};
    let dir = scratch("calibrate");
    let traced = dir.join("traced");
    binary(&[
        "run",
        STARTER,
        "-p",
        "resilient",
        "--replications",
        "2",
        "--traces",
        "50",
        "--out",
        traced.to_str().unwrap(),
    ]);
    let traces = traced.join("resilient/traces.otlp.jsonl");
    let written = dir.join("cal/calibrated.toml");
    binary(&["calibrate", traces.to_str().unwrap(), "--fit", "empirical", "--out", written.to_str().unwrap()]);
    let made = calibrate_in_memory(&CalibrateOptions {
        traces: vec![traces.clone()],
        out: PathBuf::from("calibrated.toml"),
        renames: vec![],
        fit: FitChoice::parse("empirical").unwrap(),
        sampling_ratio: None,
        prometheus: vec![],
    })
    .unwrap();
    assert!(!made.samples.is_empty(), "--fit empirical writes samples files");
    assert_eq!(made.text, std::fs::read_to_string(&written).unwrap());
    assert!(!made.report.contains("wrote "), "nothing was written: {}", made.report);
    let text = made.self_contained().unwrap();
    assert!(text.contains("samples_ms = [") && !text.contains("samples_file"));
    let from_files = dir.join("from-files");
    binary(&[
        "run",
        written.to_str().unwrap(),
        "--seed",
        "3",
        "--replications",
        "2",
        "--out",
        from_files.to_str().unwrap(),
    ]);
    let mut options = run_options(ScenarioInput::Text(Source::from_text("<string>", &text, Format::Toml)), 2);
    options.sets.clear();
    options.policies.clear();
    let results = simulate_run(&options).unwrap();
    let mut files = BTreeMap::new();
    results
        .each_file(&mut |path, bytes| {
            files.insert(path.to_string(), bytes.to_vec());
            Ok(())
        })
        .unwrap();
    let expected = folder(&from_files);
    for name in ["calibrated/replications.csv", "calibrated/timeseries.csv"] {
        assert!(files[name] == expected[name], "{name} differs from the written set's");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
