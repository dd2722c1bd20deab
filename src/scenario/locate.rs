//! Finding where a field path sits in the source text, so that errors found after parsing
//! (semantic validation) still point at a line and column.

use super::error::{FieldPath, PathSegment};
use super::load::{Format, Source};
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
                let found = table?.iter().find(|(k, _)| k.get_ref().as_ref() == key.as_str());
                let (k, v) = found?;
                best = Some(k.span().start);
                v
            }
            PathSegment::Index(i) => {
                let v = array?.get(*i)?;
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

/// JSON has no spanned parser among our dependencies: find each key's first quoted occurrence
/// after the previous one. Good enough to point at the right line in ordinary files.
fn locate_json(text: &str, path: &FieldPath) -> Option<usize> {
    let mut from = 0;
    let mut best = None;
    for segment in &path.0 {
        if let PathSegment::Key(key) = segment {
            let needle = format!("\"{key}\"");
            let at = text[from..].find(&needle)? + from;
            best = Some(at);
            from = at + needle.len();
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::error::line_column;

    #[test]
    fn finds_keys_inside_arrays_of_tables() {
        let text = "[simulation]\nduration_s = 1\n\n[[dependency]]\nname = \"a\"\n\n[[dependency]]\nname = \"b\"\nservice_time = { p50_ms = 5, p95_ms = 1 }\n";
        let source = Source::from_text("x.toml", text, Format::Toml);
        let path = FieldPath::root().key("dependency").index(1).key("service_time").key("p95_ms");
        let offset = locate(&source, &path).unwrap();
        assert_eq!(line_column(text, offset), (9, 30));
    }
}

/// A validation error at a field path, positioned in the source when the field is found there.
pub fn error_at_path(source: &Source, path: &FieldPath, message: impl Into<String>) -> super::ScenarioError {
    source.error_at(locate(source, path), &path.to_string(), message)
}
