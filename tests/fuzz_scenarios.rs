//! A mutation fuzzer over the shipped scenarios (issue 6). Each mutant of scenarios/*.toml
//! (and of their JSON translations) goes through what `validate` and `run` do, in process:
//! parse, compile, the SLO section, overrides, and a short simulation of one policy with its
//! outputs. Nothing may panic, every refusal is one short line, overrides accept what the file
//! accepts, and a scenario that compiles may fail to simulate only for the two reasons no
//! check can know in advance (the drain limit, the in-flight bound).
//!
//! Deterministic: a splitmix64 stream per iteration from a fixed seed, no OS randomness.
//! `quick_fuzz` runs a few hundred mutants on every `cargo test`; the long run is
//!
//! ```text
//! FAULTLINE_FUZZ_ITERATIONS=20000 cargo test --test fuzz_scenarios -- --ignored --nocapture
//! ```
//!
//! and a failure names its iteration, which `FAULTLINE_FUZZ_FIRST=<i> FAULTLINE_FUZZ_ITERATIONS=1`
//! reproduces alone.

// The properties checked of each mutant are the fuzz targets' (fuzz/checks.rs).
#[path = "../fuzz/checks.rs"]
mod checks;

use checks::{ScenarioOutcome, scenario_text};
use faultline::scenario::Format;
use std::panic::{AssertUnwindSafe, catch_unwind};

const SEED: u64 = 0x6661_756c_746c_696e;

/// splitmix64 (Steele, Lea and Flood 2014).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const EDGE_NUMBERS: [&str; 27] = [
    "null",
    "true",
    "\"\"",
    "0",
    "-1",
    "1",
    "2",
    "0.5",
    "1e308",
    "-1e308",
    "1e-308",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "4294967295",
    "4294967296",
    "65535",
    "65536",
    "nan",
    "inf",
    "-inf",
    "1e9",
    "100000",
    "0.000001",
    "-0.0",
];

const PUNCTUATION: &[u8] = b"[]{}\"=,.:-_#\n 09ae";

/// Byte ranges of tokens: runs of letters, digits and `._-+`, or single other bytes.
fn tokens(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-' | b'+');
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if word(b[i]) {
            while i < b.len() && word(b[i]) {
                i += 1;
            }
        } else {
            i += 1;
        }
        out.push((start, i));
    }
    on_boundaries(text, out)
}

/// Only ranges that start and end between characters (the scans walk bytes).
fn on_boundaries(text: &str, ranges: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    ranges.into_iter().filter(|&(s, e)| text.is_char_boundary(s) && text.is_char_boundary(e)).collect()
}

/// Byte ranges of number literals.
fn numbers(text: &str) -> Vec<(usize, usize)> {
    tokens(text)
        .into_iter()
        .filter(|&(s, e)| {
            let t = &text[s..e];
            t.starts_with(|c: char| c.is_ascii_digit() || c == '-') && t.parse::<f64>().is_ok()
        })
        .collect()
}

/// Byte ranges of the contents of double-quoted strings.
fn strings(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'"' {
            let start = i + 1;
            let mut j = start;
            while j < b.len() && b[j] != b'"' && b[j] != b'\n' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            if j < b.len() && b[j] == b'"' {
                out.push((start, j));
            }
            i = j + 1;
        } else {
            i += 1;
        }
    }
    on_boundaries(text, out)
}

/// Byte ranges of `{ ... }` on one line (inline tables, JSON objects without nesting).
fn inline_tables(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut open: Option<usize> = None;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'{' => open = Some(i),
            b'}' => {
                if let Some(s) = open.take() {
                    out.push((s, i + 1));
                }
            }
            b'\n' => open = None,
            _ => {}
        }
    }
    on_boundaries(text, out)
}

fn replace(text: &str, (s, e): (usize, usize), with: &str) -> String {
    format!("{}{with}{}", &text[..s], &text[e..])
}

/// One mutation of `text`.
fn mutate(rng: &mut Rng, text: &str) -> String {
    match rng.below(12) {
        // A byte replaced (possibly breaking UTF-8: the text is read lossily, as a file would
        // be refused; the parser must still cope with every character).
        0 => {
            let mut bytes = text.as_bytes().to_vec();
            if bytes.is_empty() {
                return text.to_string();
            }
            let i = rng.below(bytes.len());
            bytes[i] = if rng.below(4) == 0 { rng.next() as u8 } else { *rng.pick(PUNCTUATION) };
            String::from_utf8_lossy(&bytes).into_owned()
        }
        // A token deleted or duplicated.
        1 | 2 => {
            let t = tokens(text);
            if t.is_empty() {
                return text.to_string();
            }
            let (s, e) = *rng.pick(&t);
            let piece = if rng.below(2) == 0 { String::new() } else { format!("{0} {0}", &text[s..e]) };
            replace(text, (s, e), &piece)
        }
        // A number replaced by an edge value.
        3..=5 => {
            let n = numbers(text);
            if n.is_empty() {
                return text.to_string();
            }
            let at = *rng.pick(&n);
            let with = *rng.pick(&EDGE_NUMBERS);
            replace(text, at, with)
        }
        // A string replaced by a long one, an empty one, or one with odd characters.
        6 => {
            let s = strings(text);
            if s.is_empty() {
                return text.to_string();
            }
            let at = *rng.pick(&s);
            let with = match rng.below(5) {
                0 => "x".repeat(*rng.pick(&[101, 10_000, 1_000_000])),
                1 => String::new(),
                2 => "a.b c\\n\\u0000é".to_string(),
                3 => "lognormal".to_string(),
                _ => text[at.0..at.1].to_uppercase(),
            };
            replace(text, at, &with)
        }
        // A table written as a positional array.
        7 => {
            let tables = inline_tables(text);
            if !tables.is_empty() && rng.below(2) == 0 {
                let at = *rng.pick(&tables);
                let inside: Vec<&str> = text[at.0 + 1..at.1 - 1]
                    .split(',')
                    .map(|kv| kv.split_once(['=', ':']).map(|(_, v)| v.trim()).unwrap_or(kv.trim()))
                    .collect();
                return replace(text, at, &format!("[{}]", inside.join(", ")));
            }
            let headers: Vec<(usize, usize)> = text
                .match_indices('[')
                .filter(|(i, _)| *i == 0 || text.as_bytes()[i - 1] == b'\n')
                .filter_map(|(i, _)| text[i..].find('\n').map(|e| (i, i + e)))
                .collect();
            if headers.is_empty() {
                return text.to_string();
            }
            let at = *rng.pick(&headers);
            let name = text[at.0..at.1].trim_matches(['[', ']', ' ']);
            let last = name.rsplit('.').next().unwrap_or(name);
            replace(text, at, &format!("{last} = [[\"s\", [], \"d\"], 10]"))
        }
        // A line deleted, duplicated or moved.
        8..=10 => {
            let mut lines: Vec<&str> = text.lines().collect();
            if lines.is_empty() {
                return text.to_string();
            }
            let i = rng.below(lines.len());
            match rng.below(3) {
                0 => {
                    lines.remove(i);
                }
                1 => lines.insert(i, lines[i]),
                _ => {
                    let j = rng.below(lines.len());
                    lines.swap(i, j);
                }
            }
            lines.join("\n") + "\n"
        }
        // Deep nesting.
        _ => {
            let n = numbers(text);
            if n.is_empty() {
                return text.to_string();
            }
            let at = *rng.pick(&n);
            let depth = *rng.pick(&[2, 100, 10_000]);
            replace(text, at, &format!("{}1{}", "[".repeat(depth), "]".repeat(depth)))
        }
    }
}

/// The shipped scenarios, in TOML and translated to JSON.
fn seeds() -> Vec<(String, String, Format)> {
    let mut out = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir("scenarios")
        .expect("run from the crate root")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let value: serde_json::Value = toml::from_str(&text).unwrap();
        out.push((name.replace(".toml", ".json"), serde_json::to_string_pretty(&value).unwrap(), Format::Json));
        out.push((name, text, Format::Toml));
    }
    assert!(out.len() >= 10, "the shipped scenarios are missing");
    out
}

fn iterations(default: usize) -> usize {
    std::env::var("FAULTLINE_FUZZ_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn fuzz(count: usize) {
    let seeds = seeds();
    let first: usize = std::env::var("FAULTLINE_FUZZ_FIRST").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    let (mut refused, mut simulated, mut dynamic) = (0usize, 0usize, 0usize);
    let mut findings: Vec<String> = Vec::new();
    for (name, text, format) in &seeds {
        let outcome = scenario_text(name, text, *format, Rng(SEED).next(), 300.0);
        assert_ne!(outcome, ScenarioOutcome::Refused, "the unmutated {name} must compile and run");
    }
    for i in first..first + count {
        let mut rng = Rng(SEED ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let (name, original, format) = rng.pick(&seeds).clone();
        let mut text = original;
        let mutations = if rng.below(2) == 0 { 1 } else { 2 + rng.below(3) };
        for _ in 0..mutations {
            text = mutate(&mut rng, &text);
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| scenario_text(&name, &text, format, rng.next(), 300.0)));
        let excerpt = || text.chars().take(3_000).collect::<String>();
        match outcome {
            Err(panic) => {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                findings.push(format!("iteration {i} ({name}) panicked: {message}\n--- mutant ---\n{}", excerpt()));
            }
            Ok(ScenarioOutcome::Refused) => refused += 1,
            Ok(ScenarioOutcome::Simulated) => simulated += 1,
            Ok(ScenarioOutcome::DynamicBound) => dynamic += 1,
        }
    }
    eprintln!(
        "fuzz: {count} mutants from iteration {first}: {refused} refused, {simulated} simulated, {dynamic} stopped by a dynamic bound, {} findings",
        findings.len()
    );
    assert!(findings.is_empty(), "{} findings:\n\n{}", findings.len(), findings.join("\n\n"));
}

/// A few hundred mutants on every test run.
#[test]
fn quick_fuzz() {
    fuzz(iterations(200).min(1_000));
}

/// The long run: FAULTLINE_FUZZ_ITERATIONS (default 20 000).
#[test]
#[ignore]
fn long_fuzz() {
    fuzz(iterations(20_000));
}
