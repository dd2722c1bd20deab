//! The user's own latency data: `dist = "empirical"` with `samples_ms` or a `samples_file`
//! beside the scenario. Observed from outside: only observed values are drawn, each equally
//! often; the file is found from any working folder; a bad file is reported at the field that
//! names it, with the data file's line; and a sweep's checkpoints and shards refuse results
//! computed from a changed file.

mod common;
use common::{metric, replicate};
use faultline::engine::Model;
use faultline::scenario::{Format, Source, parse_source};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_faultline")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("faultline-samples-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One station with room for everyone, so a run's latency is its one attempt's service time.
fn scenario(service_time: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 2000
warmup_s = 0
seed = 11
replications = 2

[[dependency]]
name = "provider"
servers = 200
service_time = {service_time}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 5 }}
deadline_ms = 60000

  [[workflow.step]]
  id = "call"
  dependency = "provider"

[policy.plain]
timeout_ms = 30000
"#
    )
}

fn compile_in(dir: &Path, text: &str) -> Result<Model, String> {
    let path = dir.join("scenario.toml");
    std::fs::write(&path, text).unwrap();
    let source = Source::from_text(path.to_str().unwrap(), text, Format::Toml);
    let scenario = parse_source(&source).map_err(|e| e.to_string())?;
    Model::compile(&scenario, &source).map_err(|e| e.to_string())
}

fn faultline(dir: &Path, args: &[&str]) -> Output {
    Command::new(bin()).current_dir(dir).args(args).output().unwrap()
}

#[test]
fn only_observed_values_are_drawn_each_equally_often() {
    let dir = scratch("draws");
    std::fs::write(dir.join("latency.txt"), "latency_ms\n100\n200\n# a comment\n\n700\n").unwrap();
    let model = compile_in(&dir, &scenario(r#"{ dist = "empirical", samples_file = "latency.txt" }"#)).unwrap();
    let reps = replicate(&model, 0);
    // 2 x 10 000 runs; one service time has mean 333.3 ms and standard deviation 262.5 ms, so
    // the mean over 20 000 has a standard error of 1.86 ms: 8 ms is 4.3 standard errors.
    let mean = metric(&reps, "run_latency_ms.mean").mean;
    assert!((mean - 1000.0 / 3.0).abs() < 8.0, "mean run latency {mean} ms, expected 333.3");
    // Nothing between or beyond the observed values: the p50 of {100, 200, 700} is 200, and
    // nothing is faster than 100 or slower than 700 (the histogram's buckets are within 1 %).
    for r in &reps {
        let p50 = r["run_latency_ms.p50"];
        assert!((p50 - 200.0).abs() <= 2.0, "p50 {p50}");
        let p99 = r["run_latency_ms.p99"];
        assert!((p99 - 700.0).abs() <= 7.0, "p99 {p99}");
    }
    // Inline samples are the same distribution.
    let inline = compile_in(&dir, &scenario(r#"{ dist = "empirical", samples_ms = [700, 100, 200] }"#)).unwrap();
    let again = replicate(&inline, 0);
    assert_eq!(again[0]["run_latency_ms.mean"].to_bits(), reps[0]["run_latency_ms.mean"].to_bits());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_file_is_found_beside_the_scenario_and_bad_files_are_named() {
    let dir = scratch("errors");
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("ok.txt"), "10\n20\n").unwrap();
    std::fs::write(data.join("bad.txt"), "10\n20\nslow\n").unwrap();
    let scenario_with = |file: &str| scenario(&format!(r#"{{ dist = "empirical", samples_file = "{file}" }}"#));
    std::fs::write(dir.join("good.toml"), scenario_with("data/ok.txt")).unwrap();
    // From another working folder, the file is still found beside the scenario.
    let o = faultline(Path::new("/"), &["validate", dir.join("good.toml").to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let refused = |file: &str, expected: &[&str]| {
        let path = dir.join("bad.toml");
        std::fs::write(&path, scenario_with(file)).unwrap();
        let o = faultline(Path::new("/"), &["validate", path.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(2), "{err}");
        // The scenario file, the line of `service_time` (11) and the field.
        assert!(err.contains(&format!("{}:11:", path.display())), "{err}");
        assert!(err.contains("dependency[0].service_time.samples_file"), "{err}");
        for e in expected {
            assert!(err.contains(e), "expected {e:?} in {err}");
        }
    };
    refused("data/bad.txt", &["data/bad.txt", "line 3", "`slow` is not a number"]);
    refused("data/missing.txt", &["data/missing.txt", "No such file"]);
    refused("data", &["is not a regular file"]);
    // A samples file with another distribution's fields is refused at the field.
    let mixed = scenario(r#"{ dist = "lognormal", p50_ms = 10, p95_ms = 30, samples_file = "data/ok.txt" }"#);
    let err = compile_in(&dir, &mixed).unwrap_err();
    assert!(err.contains("`samples_file` does not apply to dist = \"lognormal\""), "{err}");
    let both = scenario(r#"{ dist = "empirical", samples_ms = [1], samples_file = "data/ok.txt" }"#);
    assert!(compile_in(&dir, &both).unwrap_err().contains("not both"));
    // `--set` can point at another file; its errors name the argument.
    let o = faultline(
        &dir,
        &["run", "good.toml", "--set", "dependency.provider.service_time.samples_file=data/bad.txt", "--out", "o"],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("argument `--set dependency.provider.service_time.samples_file=data/bad.txt`")
            && err.contains("line 3"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn token_counts_take_samples_too() {
    let dir = scratch("tokens");
    std::fs::write(dir.join("out.txt"), "output_tokens\n100\n300\n").unwrap();
    let text = r#"
[simulation]
duration_s = 1000
warmup_s = 0
seed = 5
replications = 1

[[dependency]]
name = "llm"
servers = 200

[dependency.tokens]
time_to_first_token = { dist = "constant", value_ms = 100 }
time_per_output_token = { dist = "constant", value_ms = 10 }

[[workflow]]
name = "chat"
arrivals = { rate_per_s = 5 }
deadline_ms = 600000

  [[workflow.step]]
  id = "answer"
  dependency = "llm"
  input_tokens = { dist = "constant", value = 1000 }
  output_tokens = { dist = "empirical", samples_file = "out.txt" }

[policy.plain]
timeout_ms = 300000
"#;
    let model = compile_in(&dir, text).unwrap();
    let reps = replicate(&model, 0);
    // Each call is 100 ms + 100 or 300 tokens x 10 ms: 1.1 s or 3.1 s, nothing else.
    let served = reps[0]["gen_ai.client.token.usage.output_total"];
    let calls = reps[0]["gen_ai.client.calls_served_total"];
    let per_call = served / calls;
    // 5 000 calls of 100 or 300 tokens: mean 200, standard error 100 / sqrt(5000) = 1.41.
    assert!((per_call - 200.0).abs() < 6.0, "{per_call} output tokens a call");
    let p50 = reps[0]["run_latency_ms.p50"];
    assert!((p50 - 1100.0).abs() < 12.0 || (p50 - 3100.0).abs() < 32.0, "p50 {p50}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_changed_samples_file_is_another_sweep() {
    let dir = scratch("sweep");
    std::fs::write(dir.join("latency.txt"), "100\n200\n700\n").unwrap();
    std::fs::write(
        dir.join("s.toml"),
        scenario(r#"{ dist = "empirical", samples_file = "latency.txt" }"#)
            .replace("duration_s = 2000", "duration_s = 100"),
    )
    .unwrap();
    let sweep = |shard: &str, out: &str| {
        let o = faultline(
            &dir,
            &["sweep", "s.toml", "--param", "policy.plain.timeout_ms=500,30000", "--shard", shard, "--out", out],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    sweep("0/2", "shards");
    std::fs::write(dir.join("latency.txt"), "100\n200\n900\n").unwrap();
    sweep("1/2", "shards");
    let o = faultline(&dir, &["merge", "shards/shard-0-of-2.jsonl", "shards/shard-1-of-2.jsonl", "--out", "merged"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("samples files"), "{err}");
    assert!(!dir.join("merged").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
