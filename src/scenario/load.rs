//! Reading a scenario file (TOML, or JSON through the same serde types) into [`Scenario`], with
//! every error carrying the file, line, column and field path.

use super::error::{ScenarioError, line_column};
use super::types::Scenario;
use std::io::Read;
use std::path::Path;

/// Scenario files larger than this are refused before parsing: parsed documents take tens of
/// times their size in memory (a 180 MB file of nested arrays took 8.8 GB), and no real
/// scenario comes near it.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Toml,
    Json,
}

/// The text of a scenario file and where it came from.
#[derive(Debug, Clone)]
pub struct Source {
    pub path: String,
    pub text: String,
    pub format: Format,
}

impl Source {
    pub fn from_text(path: &str, text: &str, format: Format) -> Self {
        Source { path: path.to_string(), text: text.to_string(), format }
    }

    pub fn error_at(&self, offset: Option<usize>, field: &str, message: impl Into<String>) -> ScenarioError {
        let (line, column) = match offset {
            Some(o) => {
                let (l, c) = line_column(&self.text, o);
                (Some(l), Some(c))
            }
            None => (None, None),
        };
        ScenarioError::in_file(&self.path, line, column, field, message)
    }

    /// The file stem, used to name output folders.
    pub fn stem(&self) -> String {
        Path::new(&self.path).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "scenario".into())
    }
}

pub fn load_file(path: &Path) -> Result<Source, ScenarioError> {
    let display = path.display().to_string();
    let format = match path.extension().and_then(|e| e.to_str()) {
        Some("toml") => Format::Toml,
        Some("json") => Format::Json,
        _ => return Err(ScenarioError::in_file(&display, None, None, "", "scenario files must end in .toml or .json")),
    };
    let bytes = read_limited(path, MAX_FILE_BYTES).map_err(|m| ScenarioError::in_file(&display, None, None, "", m))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let (line, column) = line_column(std::str::from_utf8(valid).unwrap_or_default(), valid.len());
        ScenarioError::in_file(&display, Some(line), Some(column), "", "the file is not UTF-8 text")
    })?;
    Ok(Source { path: display, text, format })
}

/// The file's text, refused when it holds more than `limit` bytes. The size is checked before
/// reading, and the read stops one byte past the limit, so a file that grows meanwhile or a
/// special file without a size is refused the same way.
fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    let too_large = |size: String| {
        format!("the file {size} bytes; scenario files are limited to {limit} bytes ({} MiB)", limit >> 20)
    };
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read the file: {e}"))?;
    let size = file.metadata().map_err(|e| format!("cannot read the file: {e}"))?.len();
    if size > limit {
        return Err(too_large(format!("is {size}")));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read the file: {e}"))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(format!("holds more than {limit}")));
    }
    Ok(bytes)
}

pub fn parse_source(source: &Source) -> Result<Scenario, ScenarioError> {
    match source.format {
        Format::Toml => parse_toml(source),
        Format::Json => parse_json(source),
    }
}

fn parse_toml(source: &Source) -> Result<Scenario, ScenarioError> {
    let deserializer = toml::de::Deserializer::parse(&source.text)
        .map_err(|e| source.error_at(e.span().map(|s| s.start), "", first_line(e.message())))?;
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let field = field_name(e.path());
        let inner = e.inner();
        let mut message = first_line(inner.message());
        // `run_latency_ms.p95 = [...]` unquoted is a nested table in TOML.
        if field.starts_with("slo") && message.contains("invalid type: map, expected a sequence") {
            message.push_str("; quote metric names that contain dots: \"run_latency_ms.p95\" = [\"< 1000\"]");
        }
        source.error_at(inner.span().map(|s| s.start), &field, message)
    })
}

fn parse_json(source: &Source) -> Result<Scenario, ScenarioError> {
    let mut deserializer = serde_json::Deserializer::from_str(&source.text);
    let scenario: Scenario = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let field = field_name(e.path());
        let inner = e.inner();
        ScenarioError::in_file(&source.path, Some(inner.line()), Some(inner.column()), &field, json_message(inner))
    })?;
    deserializer
        .end()
        .map_err(|e| ScenarioError::in_file(&source.path, Some(e.line()), Some(e.column()), "", json_message(&e)))?;
    Ok(scenario)
}

fn field_name(path: &serde_path_to_error::Path) -> String {
    let s = path.to_string();
    if s == "." { String::new() } else { s }
}

/// serde_json appends " at line L column C"; the position is already in the prefix.
fn json_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or(message).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toml(text: &str) -> Result<Scenario, ScenarioError> {
        parse_source(&Source::from_text("t.toml", text, Format::Toml))
    }

    #[test]
    fn unknown_field_names_line_column_and_path() {
        let err = toml("[simulation]\nduration_s = 10\nsed = 3\n").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("t.toml:3:1: simulation.sed: "), "{text}");
        assert!(text.contains("unknown field `sed`"), "{text}");
    }

    #[test]
    fn wrong_type_names_the_field() {
        let err = toml("[simulation]\nduration_s = 10\n\n[[dependency]]\nname = \"a\"\nservers = \"many\"\nservice_time = { p50_ms = 1, p95_ms = 2 }\n")
            .unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("t.toml:6:11: dependency[0].servers: "), "{text}");
    }

    #[test]
    fn syntax_error_has_a_position() {
        let err = toml("[simulation\nduration_s = 10\n").unwrap_err();
        assert!(err.to_string().starts_with("t.toml:1:"), "{err}");
    }

    #[test]
    fn json_errors_have_positions_too() {
        let src = Source::from_text("t.json", "{\"simulation\": {\"duration_s\": \"x\"}}", Format::Json);
        let err = parse_source(&src).unwrap_err();
        assert!(err.to_string().starts_with("t.json:1:"), "{err}");
        assert!(err.to_string().contains("simulation.duration_s"), "{err}");
    }
}
