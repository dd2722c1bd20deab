//! Reading a scenario file (TOML, or JSON through the same serde types) into [`Scenario`], with
//! every error carrying the file, line, column and field path.

use super::error::{FieldPath, ScenarioError, line_column, quote};
use super::input_file::{InputKind, read_input};
use super::types::Scenario;
use std::path::{Path, PathBuf};

/// Scenario files larger than this are refused before parsing: parsed documents take tens of
/// times their size in memory (a 180 MB file of nested arrays took 8.8 GB), and no real
/// scenario comes near it.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// Scenario files under the reading rule (`input_file.rs`).
pub const SCENARIO_FILES: InputKind = InputKind { plural: "scenario files", max_bytes: MAX_FILE_BYTES, advice: "" };
/// Arrays and tables (counted as `[` and `{` bytes) in one file. A parsed value costs a
/// hundred bytes or more, so 16 MiB of `[],` would take over a gigabyte; the largest scenario
/// the other limits allow has a few hundred thousand.
pub const MAX_OPENERS: usize = 1_000_000;

/// Key/value and element separators (`=`, `:` and `,` bytes) in one file, for the same reason:
/// 16 MiB of `a=1` lines hold four million keys and took about 600 MB to parse. The largest
/// scenario the other limits allow has a few hundred thousand.
pub const MAX_SEPARATORS: usize = 1_000_000;

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
    if path.is_dir() {
        let message = "is a directory, not a scenario file: name the .toml or .json file";
        return Err(ScenarioError::in_file(&display, None, None, "", message));
    }
    let format = match path.extension().and_then(|e| e.to_str()) {
        Some("toml") => Format::Toml,
        Some("json") => Format::Json,
        _ => return Err(ScenarioError::in_file(&display, None, None, "", "scenario files must end in .toml or .json")),
    };
    let bytes = read_input(path, SCENARIO_FILES)
        .map_err(|m| ScenarioError::in_file(&display, None, None, "", m.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let (line, column) = line_column(std::str::from_utf8(valid).unwrap_or_default(), valid.len());
        ScenarioError::in_file(&display, Some(line), Some(column), "", "the file is not UTF-8 text")
    })?;
    checked(Source { path: display, text, format })
}

/// A scenario's text with the checks every file gets before it is parsed: not empty, and not
/// past the limits on arrays, tables and keys.
fn checked(source: Source) -> Result<Source, ScenarioError> {
    if source.text.len() as u64 > MAX_FILE_BYTES {
        let message = format!("the scenario is {} bytes; the limit is {MAX_FILE_BYTES}", source.text.len());
        return Err(ScenarioError::in_file(&source.path, None, None, "", message));
    }
    if is_empty_document(&source) {
        let message = "the file is empty: a scenario needs [simulation], a [[dependency]] and a [[workflow]] (`faultline init` writes a starter)";
        return Err(ScenarioError::in_file(&source.path, None, None, "", message));
    }
    check_openers(&source)?;
    Ok(source)
}

/// Where a command's scenario comes from: a file, or text already in memory (the Python
/// package's TOML string or dict), which messages name by `Source::path` and whose samples
/// files are read relative to the current folder.
#[derive(Debug, Clone)]
pub enum ScenarioInput {
    File(PathBuf),
    Text(Source),
}

impl ScenarioInput {
    /// The scenario's text, under the same checks for both kinds.
    pub fn load(&self) -> Result<Source, ScenarioError> {
        match self {
            ScenarioInput::File(path) => load_file(path),
            ScenarioInput::Text(source) => checked(source.clone()),
        }
    }

    /// How messages name it: the path as given, or the text's name.
    pub fn display(&self) -> String {
        match self {
            ScenarioInput::File(path) => path.display().to_string(),
            ScenarioInput::Text(source) => source.path.clone(),
        }
    }

    /// The file, when it is one.
    pub fn file(&self) -> Option<&Path> {
        match self {
            ScenarioInput::File(path) => Some(path),
            ScenarioInput::Text(_) => None,
        }
    }
}

impl From<PathBuf> for ScenarioInput {
    fn from(path: PathBuf) -> Self {
        ScenarioInput::File(path)
    }
}

/// Nothing but blank lines (and, in TOML, comments).
fn is_empty_document(source: &Source) -> bool {
    match source.format {
        Format::Toml => source.text.lines().map(str::trim).all(|l| l.is_empty() || l.starts_with('#')),
        Format::Json => source.text.trim().is_empty(),
    }
}

/// The key a TOML "duplicate key" error points at: the text from its position up to `=`, `]`
/// or the line's end, e.g. `duration_s` or `simulation`.
fn duplicate_key_name(source: &Source, offset: usize) -> Option<String> {
    let rest = source.text.get(offset..)?;
    let rest = rest.trim_start_matches('[');
    let end = rest.find(['=', ']', '\n']).unwrap_or(rest.len());
    let key = rest[..end].trim();
    (!key.is_empty()).then(|| key.to_string())
}

/// Refuses a file with more than [`MAX_OPENERS`] arrays and tables before it is parsed, at
/// the first one past the limit. Brackets inside strings and comments count too: a real
/// scenario is nowhere near the limit either way.
fn check_openers(source: &Source) -> Result<(), ScenarioError> {
    let mut openers = source.text.bytes().enumerate().filter(|(_, b)| matches!(b, b'[' | b'{'));
    match openers.nth(MAX_OPENERS) {
        None => Ok(()),
        Some((offset, _)) => Err(source.error_at(
            Some(offset),
            "",
            format!("more than {MAX_OPENERS} arrays and tables (`[` and `{{`) in one file; scenarios need far fewer"),
        )),
    }?;
    let mut separators = source.text.bytes().enumerate().filter(|(_, b)| matches!(b, b'=' | b':' | b','));
    match separators.nth(MAX_SEPARATORS) {
        None => Ok(()),
        Some((offset, _)) => Err(source.error_at(
            Some(offset),
            "",
            format!(
                "more than {MAX_SEPARATORS} keys and elements (`=`, `:` and `,`) in one file; scenarios need far fewer"
            ),
        )),
    }
}

/// The file as a scenario, before the samples files it names are read (the public
/// `parse_source` in `samples.rs` reads them).
pub fn parse_fields(source: &Source) -> Result<Scenario, ScenarioError> {
    match source.format {
        Format::Toml => parse_toml(source),
        Format::Json => parse_json(source),
    }
}

fn parse_toml(source: &Source) -> Result<Scenario, ScenarioError> {
    let table = toml::de::DeTable::parse(&source.text).map_err(|e| {
        let at = e.span().map(|s| s.start);
        let mut message = first_line(e.message());
        if message.starts_with("duplicate key")
            && let Some(key) = at.and_then(|offset| duplicate_key_name(source, offset))
        {
            message = format!("duplicate key {}: it is defined earlier in the same table", quote(&key));
        }
        source.error_at(at, "", message)
    })?;
    check_toml_integers(source, table.get_ref(), &FieldPath::root())?;
    let deserializer = toml::de::Deserializer::from(table);
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let field = field_name(e.path());
        let inner = e.inner();
        let mut message = with_suggestion(first_line(inner.message()));
        // `run_latency_ms.p95 = [...]` unquoted is a nested table in TOML.
        if field.starts_with("slo") && message.contains("invalid type: map, expected a sequence") {
            message.push_str("; quote metric names that contain dots: \"run_latency_ms.p95\" = [\"< 1000\"]");
        }
        source.error_at(inner.span().map(|s| s.start), &field, message)
    })
}

fn parse_json(source: &Source) -> Result<Scenario, ScenarioError> {
    check_json_integers(source)?;
    let mut deserializer = serde_json::Deserializer::from_str(&source.text);
    let scenario: Scenario = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let field = field_name(e.path());
        let inner = e.inner();
        let message = with_suggestion(json_message(inner));
        ScenarioError::in_file(&source.path, Some(inner.line()), Some(inner.column()), &field, message)
    })?;
    deserializer
        .end()
        .map_err(|e| ScenarioError::in_file(&source.path, Some(e.line()), Some(e.column()), "", json_message(&e)))?;
    Ok(scenario)
}

/// Why integers must fit in 64 signed bits: TOML integers are i64 (the spec), and `--set`,
/// `--param` and `--replications` rebuild the document as TOML values, so a larger integer
/// that serde would take for a u64 or f64 field passes `validate` and then fails every
/// override with "u64 value was too large". It is refused where it is written instead.
pub(crate) const INTEGER_RANGE: &str = "integers must lie in -9223372036854775808 ..= 9223372036854775807 (TOML's 64-bit range); \
write a larger number as a float (1.8e19), and pass a seed beyond it with --seed";

fn check_toml_integers(source: &Source, table: &toml::de::DeTable, path: &FieldPath) -> Result<(), ScenarioError> {
    for (key, value) in table.iter() {
        check_toml_value(source, value, &path.key(key.get_ref()))?;
    }
    Ok(())
}

/// Recursion is bounded by the parser's own nesting limit.
fn check_toml_value(
    source: &Source,
    value: &toml::Spanned<toml::de::DeValue>,
    path: &FieldPath,
) -> Result<(), ScenarioError> {
    match value.get_ref() {
        toml::de::DeValue::Integer(i) if i64::from_str_radix(i.as_str(), i.radix()).is_err() => {
            let written = &source.text[value.span()];
            Err(source.error_at(
                Some(value.span().start),
                &path.to_string(),
                format!("{} is out of range: {INTEGER_RANGE}", quote(written)),
            ))
        }
        toml::de::DeValue::Table(t) => check_toml_integers(source, t, path),
        toml::de::DeValue::Array(items) => {
            items.iter().enumerate().try_for_each(|(i, item)| check_toml_value(source, item, &path.index(i)))
        }
        _ => Ok(()),
    }
}

/// JSON has no integer type, but serde_json reads a number without fraction or exponent as
/// one (u64 up to 2^64 - 1); the same range as TOML applies, checked by a scan of the text
/// that follows object keys and array positions to name the field.
fn check_json_integers(source: &Source) -> Result<(), ScenarioError> {
    let bytes = source.text.as_bytes();
    // Per open container: Some(key) in an object, None in an array, with the element index.
    let mut stack: Vec<(Option<String>, usize)> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                // A key is a string followed by `:` inside an object.
                let mut j = i;
                while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                    j += 1;
                }
                if bytes.get(j) == Some(&b':')
                    && let Some((key @ Some(_), _)) = stack.last_mut()
                {
                    let raw = source.text.get(start..i.min(bytes.len())).unwrap_or("\"\"");
                    *key = Some(serde_json::from_str::<String>(raw).unwrap_or_default());
                }
                continue;
            }
            b'{' => stack.push((Some(String::new()), 0)),
            b'[' => stack.push((None, 0)),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => {
                if let Some((None, index)) = stack.last_mut() {
                    *index += 1;
                }
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len() && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    i += 1;
                }
                let token = &source.text[start..i];
                let digits = token.strip_prefix('-').unwrap_or(token);
                let integer = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
                if integer && token.parse::<i64>().is_err() {
                    let mut path = FieldPath::root();
                    for (key, index) in &stack {
                        path = match key {
                            Some(k) => path.key(k),
                            None => path.index(*index),
                        };
                    }
                    let message = format!("{} is out of range: {INTEGER_RANGE}", quote(token));
                    return Err(source.error_at(Some(start), &path.to_string(), message));
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
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

/// serde's "unknown field `sed`, expected one of `duration_s`, `seed`, ..." (or "unknown
/// variant") gains "; did you mean `seed`?" when a known name is a typo away.
pub(crate) fn with_suggestion(message: String) -> String {
    let message = plain_types(message);
    let Some(rest) = message.strip_prefix("unknown field `").or_else(|| message.strip_prefix("unknown variant `"))
    else {
        return message;
    };
    let Some((name, expected)) = rest.split_once('`') else { return message };
    let known: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    match super::error::closest(name, &known) {
        Some(close) => format!("{message}; did you mean `{close}`?"),
        None => message,
    }
}

/// serde names Rust types ("expected u32"); users read "a whole number".
fn plain_types(message: String) -> String {
    const WORDS: [(&str, &str); 9] = [
        ("expected u8", "expected a whole number from 0 to 255"),
        ("expected u16", "expected a whole number from 0 to 65535"),
        ("expected u32", "expected a whole number from 0 to 4294967295"),
        ("expected u64", "expected a whole number, 0 or more"),
        ("expected usize", "expected a whole number, 0 or more"),
        ("expected i32", "expected a whole number"),
        ("expected i64", "expected a whole number"),
        ("expected f64", "expected a number"),
        ("expected f32", "expected a number"),
    ];
    let mut message = message;
    for (rust, plain) in WORDS {
        if let Some(at) = message.find(rust) {
            let end = at + rust.len();
            // Only the whole word: `expected u32` but not `expected u320`.
            if !message[end..].starts_with(|c: char| c.is_ascii_alphanumeric()) {
                message.replace_range(at..end, plain);
            }
        }
    }
    message
}

pub(crate) fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or(message).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toml(text: &str) -> Result<Scenario, ScenarioError> {
        parse_fields(&Source::from_text("t.toml", text, Format::Toml))
    }

    #[test]
    fn unknown_field_names_line_column_and_path() {
        let err = toml("[simulation]\nduration_s = 10\nsed = 3\n").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("t.toml:3:1: simulation.sed: "), "{text}");
        assert!(text.contains("unknown field `sed`"), "{text}");
    }

    #[test]
    fn a_misspelt_field_gets_a_suggestion() {
        let err = toml("[simulation]\nduration_s = 10\nsed = 3\n").unwrap_err().to_string();
        assert!(err.ends_with("; did you mean `seed`?"), "{err}");
        let err = toml("[simulation]\nduration_s = 10\ncolour = 3\n").unwrap_err().to_string();
        assert!(!err.contains("did you mean"), "{err}");
    }

    #[test]
    fn types_are_named_in_plain_words() {
        let err = toml("[simulation]\nduration_s = 10\nreplications = -1\n").unwrap_err().to_string();
        assert!(err.contains("expected a whole number from 0 to 4294967295"), "{err}");
        assert!(!err.contains("u32"), "{err}");
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
        let err = parse_fields(&src).unwrap_err();
        assert!(err.to_string().starts_with("t.json:1:"), "{err}");
        assert!(err.to_string().contains("simulation.duration_s"), "{err}");
    }
}
