//! Finding where a field path sits in the source text, so that errors found after parsing
//! (semantic validation) still point at a line and column.

use super::error::{FieldPath, PathSegment, ScenarioError, quote};
use super::load::{Format, Source};
use crate::sim::{Micros, ms_to_us};
use toml::de::{DeTable, DeValue};

/// The byte offset of the deepest part of `path` present in the source.
pub fn locate(source: &Source, path: &FieldPath) -> Option<usize> {
    match source.format {
        Format::Toml => locate_toml(&source.text, path),
        Format::Json => locate_json(&source.text, path),
    }
}

fn locate_toml(text: &str, path: &FieldPath) -> Option<usize> {
    let root = DeTable::parse(text).ok()?;
    let mut best = None;
    let mut table: Option<&DeTable> = Some(root.get_ref());
    let mut array: Option<&[toml::Spanned<DeValue>]> = None;
    for segment in &path.0 {
        let value = match segment {
            PathSegment::Key(key) => {
                let found = table.and_then(|t| t.iter().find(|(k, _)| k.get_ref().as_ref() == key.as_str()));
                let Some((k, v)) = found else { return best };
                best = Some(k.span().start);
                v
            }
            PathSegment::Index(i) => {
                let Some(v) = array.and_then(|a| a.get(*i)) else { return best };
                best = Some(v.span().start);
                v
            }
        };
        table = None;
        array = None;
        match value.get_ref() {
            DeValue::Table(t) => table = Some(t),
            DeValue::Array(a) => array = Some(a.as_ref()),
            _ => {}
        }
    }
    best
}

/// JSON has no spanned parser among our dependencies: walk the text with a small scanner that
/// follows object keys and array positions, and return the deepest position found.
fn locate_json(text: &str, path: &FieldPath) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut pos = skip_ws(bytes, 0);
    let mut best = None;
    for segment in &path.0 {
        match (segment, bytes.get(pos)) {
            (PathSegment::Key(key), Some(b'{')) => {
                let Some((key_at, value_at)) = find_member(bytes, pos, key) else { return best };
                best = Some(key_at);
                pos = value_at;
            }
            (PathSegment::Index(i), Some(b'[')) => {
                let Some(at) = find_element(bytes, pos, *i) else { return best };
                best = Some(at);
                pos = at;
            }
            _ => return best,
        }
    }
    best
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// End of the JSON value starting at `i` (strings, nesting; scalars end at a delimiter).
fn skip_value(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(b'"') => skip_string(b, i),
        Some(b'{') | Some(b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = skip_string(b, j);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            j
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']') && !b[j].is_ascii_whitespace() {
                j += 1;
            }
            j
        }
    }
}

fn skip_string(b: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return j + 1,
            _ => j += 1,
        }
    }
    j
}

/// In the object at `i`, the positions of `key` and of its value.
fn find_member(b: &[u8], i: usize, key: &str) -> Option<(usize, usize)> {
    let mut j = skip_ws(b, i + 1);
    while j < b.len() && b[j] == b'"' {
        let end = skip_string(b, j);
        let name = std::str::from_utf8(&b[j + 1..end.saturating_sub(1)]).ok()?;
        let colon = skip_ws(b, end);
        if b.get(colon) != Some(&b':') {
            return None;
        }
        let value = skip_ws(b, colon + 1);
        if name == key {
            return Some((j, value));
        }
        j = skip_ws(b, skip_value(b, value));
        if b.get(j) == Some(&b',') {
            j = skip_ws(b, j + 1);
        }
    }
    None
}

/// In the array at `i`, the position of element `index`.
fn find_element(b: &[u8], i: usize, index: usize) -> Option<usize> {
    let mut j = skip_ws(b, i + 1);
    for _ in 0..index {
        if b.get(j) == Some(&b']') {
            return None;
        }
        j = skip_ws(b, skip_value(b, j));
        if b.get(j) != Some(&b',') {
            return None;
        }
        j = skip_ws(b, j + 1);
    }
    (b.get(j).is_some_and(|c| *c != b']')).then_some(j)
}

/// A validation error at a field path, positioned in the source when the field is found there.
pub fn error_at_path(source: &Source, path: &FieldPath, message: impl Into<String>) -> super::ScenarioError {
    source.error_at(locate(source, path), &path.to_string(), message)
}

/// A value of a closed set spelled in the file (`kind = "polly"`), or `default` when absent; an
/// unknown spelling is an error at `path` that lists the choices.
pub fn parse_named<T: crate::vocab::Named>(
    source: &Source,
    path: &FieldPath,
    value: Option<&str>,
    default: T,
) -> Result<T, ScenarioError> {
    let Some(value) = value else { return Ok(default) };
    T::parse(value).ok_or_else(|| {
        error_at_path(source, path, format!("unknown value {}; expected one of {}", quote(value), T::choices()))
    })
}

/// A duration the file gives in milliseconds, checked and in microseconds.
pub fn duration_ms(source: &Source, path: &FieldPath, ms: f64) -> Result<Micros, ScenarioError> {
    if ms.is_finite() && ms >= 0.0 {
        Ok(ms_to_us(ms))
    } else {
        Err(error_at_path(source, path, format!("must be a finite number >= 0, got {}", shown(ms))))
    }
}

/// A number as an error message quotes it: as written for everyday sizes, in exponent form
/// past 1e15 (where `{}` would print every one of 1e300's 301 digits).
pub fn shown(x: f64) -> String {
    if x.is_finite() && x.abs() >= 1e15 { format!("{x:e}") } else { format!("{x}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::error::line_column;

    #[test]
    fn json_paths_follow_array_positions() {
        let text = "{\"dependency\": [\n {\"name\": \"a\", \"s\": {\"p95_ms\": 1}},\n {\"name\": \"b,]\", \"s\": {\"p95_ms\": 2}}\n]}";
        let source = Source::from_text("x.json", text, Format::Json);
        let path = FieldPath::root().key("dependency").index(1).key("s").key("p95_ms");
        let offset = locate(&source, &path).unwrap();
        assert_eq!(line_column(text, offset), (3, 24));
        let missing = FieldPath::root().key("dependency").index(1).key("nothing");
        assert_eq!(line_column(text, locate(&source, &missing).unwrap()).0, 3, "deepest part found");
    }

    #[test]
    fn finds_keys_inside_arrays_of_tables() {
        let text = "[simulation]\nduration_s = 1\n\n[[dependency]]\nname = \"a\"\n\n[[dependency]]\nname = \"b\"\nservice_time = { p50_ms = 5, p95_ms = 1 }\n";
        let source = Source::from_text("x.toml", text, Format::Toml);
        let path = FieldPath::root().key("dependency").index(1).key("service_time").key("p95_ms");
        let offset = locate(&source, &path).unwrap();
        assert_eq!(line_column(text, offset), (9, 30));
    }
}
