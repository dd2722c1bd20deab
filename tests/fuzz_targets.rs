//! The cargo-fuzz targets' checks (fuzz/checks.rs) compiled on stable and run over the inputs
//! their corpora are seeded with, so the targets cannot rot between fuzzing campaigns: every
//! shipped scenario and every TOML example in the docs through the scenario target, and a
//! real shard file, its records and their single-byte damage through the readers target.

#[path = "../fuzz/checks.rs"]
mod checks;

use checks::ScenarioOutcome;
use std::path::Path;
use std::process::Command;

/// The fenced TOML blocks of a markdown file.
fn toml_blocks(path: &str) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line.trim_start()) {
            (None, fence) if fence.starts_with("```toml") => current = Some(String::new()),
            (Some(_), "```") => blocks.push(current.take().unwrap()),
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

#[test]
fn the_scenario_target_runs_every_shipped_scenario_and_survives_the_docs_examples() {
    let mut shipped = 0;
    for entry in std::fs::read_dir("scenarios").unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let outcome = checks::scenario_text("seed.toml", &text, faultline::scenario::Format::Toml, 7, 100.0);
        // A capped run may stop at the drain limit (the metastable scenario does by design).
        assert_ne!(outcome, ScenarioOutcome::Refused, "{}", path.display());
        checks::scenario(text.as_bytes());
        shipped += 1;
    }
    assert!(shipped >= 6, "the shipped scenarios are missing");
    let blocks: Vec<String> =
        ["docs/scenario.md", "docs/metrics.md", "README.md"].iter().flat_map(|p| toml_blocks(p)).collect();
    assert!(blocks.len() >= 20, "the docs' TOML examples were not found ({})", blocks.len());
    for block in &blocks {
        // Most are fragments and are refused; none may panic or break a check.
        checks::scenario(block.as_bytes());
    }
}

/// A real shard file: shard 0 of 2 of a small sweep of the M/M/c scenario.
fn real_shard(dir: &Path) -> Vec<u8> {
    let out = dir.join("sweep");
    let status = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["sweep", "scenarios/mmc.toml", "--param", "dependency.station.servers=10,11,12"])
        .args([
            "--replications",
            "2",
            "--set",
            "simulation.duration_s=20",
            "--set",
            "simulation.warmup_s=0",
            "--shard",
            "0/2",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    std::fs::read(out.join("shard-0-of-2.jsonl")).unwrap()
}

#[test]
fn the_readers_target_reads_a_real_shard_and_refuses_every_single_byte_change_to_a_record() {
    let dir = std::env::temp_dir().join(format!("faultline-fuzz-targets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let shard = real_shard(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    // Points 0 and 2 of 3.
    assert_eq!(checks::shard_file(&shard), 2);
    checks::readers(&[&[0u8][..], &shard].concat());
    let header_end = shard.iter().position(|&b| b == b'\n').unwrap() + 1;
    let first_record = &shard[header_end..header_end + shard[header_end..].iter().position(|&b| b == b'\n').unwrap()];
    checks::point_file(first_record);
    checks::readers(&[&[1u8][..], first_record].concat());
    checks::key_file(
        serde_json::to_string(&serde_json::from_slice::<serde_json::Value>(&shard[..header_end]).unwrap()["key"])
            .unwrap()
            .as_bytes(),
    );

    // Every 7th byte of the records, changed to another printable byte: never a full read.
    let mut damaged = 0;
    for at in (header_end..shard.len() - 1).step_by(7) {
        let mut copy = shard.clone();
        copy[at] = if copy[at] == b'7' { b'8' } else { b'7' };
        let records = checks::shard_file(&copy);
        assert!(records < 2, "a change at byte {at} was merged unnoticed");
        checks::readers(&[&[0u8][..], &copy].concat());
        damaged += 1;
    }
    assert!(damaged > 100, "too few damaged copies ({damaged})");
}

/// The readers target's first finding: serde_json quotes a whole string it did not expect, so a
/// shard file whose first line was one long JSON string gave an error of that length.
#[test]
fn a_shard_or_point_that_is_one_long_string_is_refused_in_one_short_line() {
    let long = format!("\"{}\"\n", "a\\n".repeat(100_000));
    assert_eq!(checks::shard_file(long.as_bytes()), 0);
    checks::point_file(long.as_bytes());
}
