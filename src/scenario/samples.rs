//! `samples_file`: a distribution given as the user's own observations, one number per line in
//! a file beside the scenario. Files are read when the scenario is loaded (so every command
//! sees the same values and an unreadable file is reported at the field that names it), and
//! their digests are part of a sweep's identity (see [`sample_files`]).

use super::error::{FieldPath, ScenarioError, quote};
use super::input_file::{InputKind, read_input};
use super::load::{Source, parse_fields};
use super::loaded_samples::LoadedSamples;
use super::locate::error_at_path;
use super::types::{Scenario, ServiceTime, TokenCount};
use std::collections::BTreeMap;
use std::path::Path;

/// A samples file larger than this is refused: 64 MiB holds about eight million values, more
/// than any latency distribution needs (subsample a larger trace export).
pub const MAX_SAMPLES_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Samples files under the reading rule (`input_file.rs`).
pub const SAMPLES_FILES: InputKind =
    InputKind { plural: "samples files", max_bytes: MAX_SAMPLES_FILE_BYTES, advice: "subsample it" };
/// Values in one samples file or inline list.
pub const MAX_SAMPLES: usize = 8_000_000;

/// The file as a scenario, with the samples files it names read.
pub fn parse_source(source: &Source) -> Result<Scenario, ScenarioError> {
    let mut scenario = parse_fields(source)?;
    resolve_samples(&mut scenario, source)?;
    Ok(scenario)
}

/// Reads every `samples_file` the scenario names, relative to the scenario file's folder.
pub fn resolve_samples(scenario: &mut Scenario, source: &Source) -> Result<(), ScenarioError> {
    resolve_samples_with(scenario, source, &mut |full| read_samples_file(full))
}

/// The file as a scenario whose samples files are not on disk yet: `files` holds each one's
/// bytes by its path as the scenario names it (relative to the scenario's folder).
pub fn parse_source_with(source: &Source, files: &BTreeMap<String, Vec<u8>>) -> Result<Scenario, ScenarioError> {
    let folder = Path::new(&source.path).parent().map(Path::to_path_buf).unwrap_or_default();
    let by_full: BTreeMap<String, &Vec<u8>> =
        files.iter().map(|(name, bytes)| (folder.join(name).display().to_string(), bytes)).collect();
    let mut scenario = parse_fields(source)?;
    resolve_samples_with(&mut scenario, source, &mut |full| match by_full.get(full) {
        // The bound the file will be read under.
        Some(bytes) if bytes.len() as u64 > MAX_SAMPLES_FILE_BYTES => Err(format!(
            "the samples file {}: {}",
            quote(full),
            super::input_file::InputRefusal::TooLarge { size: Some(bytes.len() as u64), kind: SAMPLES_FILES }
        )),
        Some(bytes) => samples_from_bytes(full, bytes),
        None => Err(format!("the samples file {} is not among the files given", quote(full))),
    })?;
    Ok(scenario)
}

/// Every `samples_file` the scenario names, each read once by `read` (given its path joined to
/// the scenario's folder).
fn resolve_samples_with(
    scenario: &mut Scenario,
    source: &Source,
    read_file: &mut dyn FnMut(&str) -> Result<LoadedSamples, String>,
) -> Result<(), ScenarioError> {
    let folder = Path::new(&source.path).parent().map(Path::to_path_buf).unwrap_or_default();
    let mut cache: BTreeMap<String, LoadedSamples> = BTreeMap::new();
    let mut read = |path: &FieldPath, name: &str| -> Result<LoadedSamples, ScenarioError> {
        let full = folder.join(name).display().to_string();
        if let Some(hit) = cache.get(&full) {
            return Ok(hit.clone());
        }
        let loaded = read_file(&full).map_err(|m| error_at_path(source, path, m))?;
        cache.insert(full, loaded.clone());
        Ok(loaded)
    };
    for_each_distribution(scenario, &mut |path, spec| match spec {
        Spec::Duration(s) => {
            if let Some(name) = s.samples_file.clone() {
                s.loaded_samples = Some(read(&path.key("samples_file"), &name)?);
            }
            Ok(())
        }
        Spec::Count(c) => {
            if let Some(name) = c.samples_file.clone() {
                c.loaded_samples = Some(read(&path.key("samples_file"), &name)?);
            }
            Ok(())
        }
    })
}

/// Every samples file the scenario read, as `path sha` lines in a stable order: a sweep's key
/// holds them, so checkpoints, shards and merge refuse results computed from another file.
pub fn sample_files(scenario: &Scenario) -> Vec<String> {
    let mut files = std::collections::BTreeSet::new();
    let mut scenario = scenario.clone();
    let _ = for_each_distribution(&mut scenario, &mut |_, spec| {
        let loaded = match spec {
            Spec::Duration(s) => &s.loaded_samples,
            Spec::Count(c) => &c.loaded_samples,
        };
        if let Some(l) = loaded {
            files.insert(format!("{} {}", l.path, l.digest));
        }
        Ok(())
    });
    files.into_iter().collect()
}

enum Spec<'a> {
    Duration(&'a mut ServiceTime),
    Count(&'a mut TokenCount),
}

type Visit<'a> = dyn FnMut(FieldPath, Spec) -> Result<(), ScenarioError> + 'a;

/// Calls `visit` with every distribution in the scenario and its field path.
fn for_each_distribution(scenario: &mut Scenario, visit: &mut Visit) -> Result<(), ScenarioError> {
    let root = FieldPath::root();
    for (i, d) in scenario.dependencies.iter_mut().enumerate() {
        let p = root.key("dependency").index(i);
        for (field, spec) in [
            ("service_time", &mut d.service_time),
            ("status_lookup_time", &mut d.status_lookup_time),
            ("snapshot_age", &mut d.snapshot_age),
        ] {
            if let Some(spec) = spec {
                visit(p.key(field), Spec::Duration(spec))?;
            }
        }
        if let Some(t) = &mut d.tokens {
            let tp = p.key("tokens");
            visit(tp.key("time_to_first_token"), Spec::Duration(&mut t.time_to_first_token))?;
            visit(tp.key("time_per_output_token"), Spec::Duration(&mut t.time_per_output_token))?;
            for (field, spec) in [("input_tokens", &mut t.input_tokens), ("output_tokens", &mut t.output_tokens)] {
                if let Some(spec) = spec {
                    visit(tp.key(field), Spec::Count(spec))?;
                }
            }
        }
    }
    for (i, w) in scenario.workflows.iter_mut().enumerate() {
        for (j, s) in w.steps.iter_mut().enumerate() {
            let p = root.key("workflow").index(i).key("step").index(j);
            for (field, spec) in [("input_tokens", &mut s.input_tokens), ("output_tokens", &mut s.output_tokens)] {
                if let Some(spec) = spec {
                    visit(p.key(field), Spec::Count(spec))?;
                }
            }
        }
    }
    for (i, f) in scenario.faults.iter_mut().enumerate() {
        if let Some(spec) = &mut f.service_time {
            visit(root.key("fault").index(i).key("service_time"), Spec::Duration(spec))?;
        }
    }
    Ok(())
}

/// Reads one samples file: one number per line; blank lines and `#` comments skipped, and a
/// first line that is not a number taken for a column header.
pub fn read_samples_file(path: &str) -> Result<LoadedSamples, String> {
    let bytes = read_input(std::path::Path::new(path), SAMPLES_FILES)
        .map_err(|refusal| format!("the samples file {}: {refusal}", quote(path)))?;
    samples_from_bytes(path, &bytes)
}

/// A samples file's bytes as its values; `path` names it in errors and in the result.
pub fn samples_from_bytes(path: &str, bytes: &[u8]) -> Result<LoadedSamples, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| format!("the samples file {} is not UTF-8 text", quote(path)))?;
    let values = parse_samples(text).map_err(|(line, m)| format!("{}, line {line}: {m}", quote(path)))?;
    Ok(LoadedSamples { values: values.into(), digest: fnv_hex(bytes), path: path.to_string() })
}

/// The values of a samples file's text, or the line (from 1) and what is wrong with it.
fn parse_samples(text: &str) -> Result<Vec<f64>, (usize, String)> {
    let mut values = Vec::new();
    let mut seen_line = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim().trim_end_matches(',').trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let first = !seen_line;
        seen_line = true;
        if line.contains(',') || line.contains('\t') || line.contains(';') {
            return Err((i + 1, format!("{} has more than one column; give one number per line", quote(line))));
        }
        let Ok(value) = line.parse::<f64>() else {
            if first {
                continue; // a column header such as `latency_ms`
            }
            return Err((i + 1, format!("{} is not a number", quote(line))));
        };
        if !value.is_finite() || value < 0.0 {
            return Err((i + 1, format!("values must be finite numbers >= 0, got {}", quote(line))));
        }
        if values.len() == MAX_SAMPLES {
            return Err((i + 1, format!("more than {MAX_SAMPLES} values; subsample the file")));
        }
        values.push(value);
    }
    if values.is_empty() {
        return Err((1, "the file holds no values".into()));
    }
    Ok(values)
}

pub fn fnv_hex(bytes: &[u8]) -> String {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_comments_and_blank_lines_are_skipped() {
        assert_eq!(parse_samples("latency_ms\n# from prod\n\n12.5\n30\n7,\n").unwrap(), vec![12.5, 30.0, 7.0]);
    }

    #[test]
    fn bad_lines_are_named() {
        assert_eq!(parse_samples("1\nabc\n").unwrap_err().0, 2);
        assert_eq!(parse_samples("1\n-3\n").unwrap_err().0, 2);
        assert_eq!(parse_samples("1,2\n").unwrap_err().0, 1);
        assert!(parse_samples("# nothing\n").unwrap_err().1.contains("no values"));
        assert!(parse_samples("1\ninf\n").unwrap_err().1.contains("finite"));
    }

    #[test]
    fn a_directory_or_missing_file_is_refused_with_its_path() {
        let missing = read_samples_file("/nonexistent/x.csv").unwrap_err();
        assert!(missing.contains("/nonexistent/x.csv"), "{missing}");
        let dir = read_samples_file("/tmp").unwrap_err();
        assert!(dir.contains("not a regular file"), "{dir}");
    }
}
