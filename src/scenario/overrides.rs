//! `--set path=value` and sweep points: edit the parsed document before it becomes a
//! [`Scenario`], so overridden values get exactly the same checks as values in the file.
//!
//! Paths are dotted. Arrays of tables are addressed by an element's `name` (dependency,
//! workflow), `id` (step) or position: `dependency.model-primary.servers`,
//! `workflow.meeting-analysis-draft.step.plan.dependency`, `fault.0.start_s`,
//! `policy.resilient.budget.retry_tokens`.

use super::error::{ScenarioError, quote};
use super::load::{Format, INTEGER_RANGE, Source};
use super::types::Scenario;
use serde::Deserialize;
use toml::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// The argument as the user wrote it, for error messages.
    pub argument: String,
    pub path: Vec<String>,
    pub value: Value,
}

/// Parses `a.b.c=value`. The value is read as a TOML value (`3`, `0.5`, `true`, `"x"`,
/// `[1, 2]`, `{ p50_ms = 1, p95_ms = 2 }`); anything that is not valid TOML is taken as a bare string.
pub fn parse_override(argument: &str) -> Result<Override, ScenarioError> {
    let (path, raw) =
        argument.split_once('=').ok_or_else(|| ScenarioError::in_argument(argument, "", "expected path=value"))?;
    let path: Vec<String> = path.trim().split('.').map(|s| s.trim().to_string()).collect();
    if path.iter().any(|s| s.is_empty()) {
        return Err(ScenarioError::in_argument(argument, "", "the path has an empty segment"));
    }
    let raw = raw.trim();
    if raw.is_empty() {
        return Err(ScenarioError::in_argument(argument, &path.join("."), "the value is empty"));
    }
    let digits = raw.strip_prefix(['-', '+']).unwrap_or(raw).replace('_', "");
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && raw.replace('_', "").parse::<i64>().is_err()
    {
        let message = format!("{} is out of range: {INTEGER_RANGE}", quote(raw));
        return Err(ScenarioError::in_argument(argument, &path.join("."), message));
    }
    Ok(Override { argument: argument.to_string(), path, value: parse_value(raw) })
}

/// Whether `--set path=VALUE` reads `value` back as this very string: not as a number, a bool,
/// a date, an array or a table, nor trimmed, nor empty (the Python package quotes the strings
/// that would not).
pub fn reads_as_string(value: &str) -> bool {
    let raw = value.trim();
    !raw.is_empty() && raw == value && matches!(parse_value(raw), Value::String(s) if s == value)
}

pub fn parse_value(raw: &str) -> Value {
    let doc = format!("v = {raw}");
    match toml::from_str::<toml::Table>(&doc) {
        Ok(mut table) => table.remove("v").unwrap_or_else(|| Value::String(raw.to_string())),
        Err(_) => Value::String(raw.to_string()),
    }
}

/// Applies the overrides to the source document and deserializes the result.
pub fn apply_overrides(source: &Source, overrides: &[Override]) -> Result<Scenario, ScenarioError> {
    let mut document = parse_document(source)?;
    for o in overrides {
        require_named_policy(&document, &o.path)
            .map_err(|m| ScenarioError::in_argument(&o.argument, &o.path.join("."), m))?;
        set_path(&mut document, &o.path, o.value.clone())
            .map_err(|message| ScenarioError::in_argument(&o.argument, &o.path.join("."), message))?;
    }
    let mut scenario: Scenario = serde_path_to_error::deserialize(document).map_err(|e| {
        let field = e.path().to_string();
        let culprit =
            overrides.iter().rev().find(|o| normalized(&field).starts_with(&o.path.join("."))).or(overrides.last());
        let message = super::load::with_suggestion(super::load::first_line(e.inner().message()));
        match culprit {
            Some(o) => ScenarioError::in_argument(&o.argument, &field, message),
            None => ScenarioError::in_file(&source.path, None, None, &field, message),
        }
    })?;
    super::samples::resolve_samples(&mut scenario, source)?;
    Ok(scenario)
}

/// Optional tables are created on demand (`policy.p.budget`), but a policy is not: a typo in
/// its name must not quietly add a policy with default settings.
fn require_named_policy(document: &Value, path: &[String]) -> Result<(), String> {
    if path.first().map(String::as_str) != Some("policy") {
        return Ok(());
    }
    if path.len() < 2 {
        return Err("set fields of a named policy (policy.<name>.<field>), not the whole policy table".into());
    }
    let policies = document.get("policy").and_then(Value::as_table);
    if policies.is_some_and(|p| p.contains_key(&path[1])) {
        return Ok(());
    }
    // A scenario without policies runs one named `default`; its settings can be overridden.
    if policies.is_none_or(|p| p.is_empty()) && path[1] == "default" {
        return Ok(());
    }
    let known: Vec<&str> = policies.map(|p| p.keys().map(String::as_str).collect()).unwrap_or_default();
    Err(super::error::unknown_name("policy", &path[1], known))
}

/// serde_path_to_error writes array positions as `dependency[1]`; override paths address
/// elements by name, so compare on the leading key only.
fn normalized(field: &str) -> String {
    field.split('[').next().unwrap_or(field).to_string()
}

fn set_path(node: &mut Value, path: &[String], value: Value) -> Result<(), String> {
    let (head, rest) = path.split_first().ok_or("empty path")?;
    match node {
        Value::Table(table) => {
            if rest.is_empty() {
                table.insert(head.clone(), value);
                return Ok(());
            }
            let child = table.entry(head.clone()).or_insert_with(|| Value::Table(toml::Table::new()));
            set_path(child, rest, value)
        }
        Value::Array(items) => {
            let index = find_element(items, head)?;
            if rest.is_empty() {
                items[index] = value;
                return Ok(());
            }
            set_path(&mut items[index], rest, value)
        }
        _ => Err(format!("cannot descend into {}: the value there is not a table", quote(head))),
    }
}

fn parse_document(source: &Source) -> Result<Value, ScenarioError> {
    Ok(match source.format {
        Format::Toml => Value::Table(
            toml::from_str::<toml::Table>(&source.text)
                .map_err(|e| source.error_at(e.span().map(|s| s.start), "", e.message().to_string()))?,
        ),
        Format::Json => {
            let json_error = |e: serde_json::Error| {
                ScenarioError::in_file(&source.path, Some(e.line()), Some(e.column()), "", e.to_string())
            };
            let mut value: serde_json::Value = serde_json::from_str(&source.text).map_err(json_error)?;
            drop_nulls(&mut value);
            Value::deserialize(value)
                .map_err(|e| ScenarioError::in_file(&source.path, None, None, "", e.to_string()))?
        }
    })
}

/// TOML has no null. In a JSON scenario `"field": null` reads as the field left out (every
/// field that accepts null is an optional one whose default is None), so the document that
/// overrides edit drops such members; otherwise a file that `validate` accepts would fail
/// every `--set` and `--replications`. Nesting is bounded by serde_json's recursion limit.
fn drop_nulls(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(members) => {
            members.retain(|_, v| !v.is_null());
            members.values_mut().for_each(drop_nulls);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// The path with array elements written as positions (`dependency.0.servers` for
/// `dependency.db.servers`), so that two spellings of one field compare equal.
pub fn canonical_path(source: &Source, path: &[String]) -> String {
    let Ok(document) = parse_document(source) else { return path.join(".") };
    let mut node = Some(&document);
    let mut out = Vec::with_capacity(path.len());
    for segment in path {
        node = match node {
            Some(Value::Array(items)) => match find_element(items, segment) {
                Ok(i) => {
                    out.push(i.to_string());
                    items.get(i)
                }
                Err(_) => {
                    out.push(segment.clone());
                    None
                }
            },
            Some(Value::Table(t)) => {
                out.push(segment.clone());
                t.get(segment)
            }
            _ => {
                out.push(segment.clone());
                None
            }
        };
    }
    out.join(".")
}

/// The value the file itself gives at `path` (elements of arrays by name or position), as an
/// override would write it; None when the file leaves the field to its default.
pub fn value_at(source: &Source, path: &[String]) -> Option<String> {
    let document = parse_document(source).ok()?;
    let mut node = &document;
    for segment in path {
        node = match node {
            Value::Array(items) => items.get(find_element(items, segment).ok()?)?,
            Value::Table(t) => t.get(segment)?,
            _ => return None,
        };
    }
    match node {
        Value::String(s) => Some(s.clone()),
        Value::Integer(_) | Value::Float(_) | Value::Boolean(_) => Some(node.to_string()),
        _ => None,
    }
}

fn find_element(items: &[Value], selector: &str) -> Result<usize, String> {
    let by_label = items.iter().position(|item| {
        item.as_table()
            .map(|t| ["name", "id"].iter().any(|k| t.get(*k).and_then(Value::as_str) == Some(selector)))
            .unwrap_or(false)
    });
    if let Some(i) = by_label {
        return Ok(i);
    }
    match selector.parse::<usize>() {
        Ok(i) if i < items.len() => Ok(i),
        _ => Err(format!("no element named or numbered {} (there are {})", quote(selector), items.len())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "[simulation]\nduration_s = 10\n\n[[dependency]]\nname = \"db\"\nservice_time = { p50_ms = 1, p95_ms = 2 }\n\n[policy.p]\n";

    #[test]
    fn value_at_reads_what_the_file_gives_and_nothing_it_leaves_out() {
        let source = Source::from_text("b.toml", BASE, Format::Toml);
        let path = |p: &str| p.split('.').map(str::to_string).collect::<Vec<_>>();
        assert_eq!(value_at(&source, &path("simulation.duration_s")).as_deref(), Some("10"));
        assert_eq!(value_at(&source, &path("dependency.db.name")).as_deref(), Some("db"));
        assert_eq!(value_at(&source, &path("dependency.0.service_time.p95_ms")).as_deref(), Some("2"));
        assert_eq!(value_at(&source, &path("dependency.db.servers")), None);
        assert_eq!(value_at(&source, &path("policy.p")), None, "a table is no value");
    }

    #[test]
    fn sets_values_by_element_name_and_creates_tables() {
        let source = Source::from_text("b.toml", BASE, Format::Toml);
        let overrides = vec![
            parse_override("dependency.db.servers=7").unwrap(),
            parse_override("policy.p.budget.retry_tokens=2").unwrap(),
            parse_override("simulation.seed=99").unwrap(),
        ];
        let s = apply_overrides(&source, &overrides).unwrap();
        assert_eq!(s.dependencies[0].servers, 7);
        assert_eq!(s.simulation.seed, 99);
        assert_eq!(s.policies["p"].budget.as_ref().unwrap().retry_tokens, Some(2));
    }

    #[test]
    fn bad_overrides_name_the_argument() {
        assert!(parse_override("no-equals").unwrap_err().to_string().contains("expected path=value"));
        assert!(parse_override("a..b=1").is_err());
        let source = Source::from_text("b.toml", BASE, Format::Toml);
        let err = apply_overrides(&source, &[parse_override("dependency.nope.servers=1").unwrap()]).unwrap_err();
        assert!(err.to_string().starts_with("argument `dependency.nope.servers=1`"), "{err}");
        let err = apply_overrides(&source, &[parse_override("policy.typo.timeout_ms=5").unwrap()]).unwrap_err();
        assert!(err.to_string().contains("unknown policy `typo` (known: `p`)"), "{err}");
        let err = apply_overrides(&source, &[parse_override("dependency.db.servers=lots").unwrap()]).unwrap_err();
        assert!(err.to_string().contains("argument `dependency.db.servers=lots`"), "{err}");
    }

    #[test]
    fn canonical_paths_use_positions() {
        let source = Source::from_text("b.toml", BASE, Format::Toml);
        let by_name = canonical_path(&source, &["dependency".into(), "db".into(), "servers".into()]);
        let by_position = canonical_path(&source, &["dependency".into(), "0".into(), "servers".into()]);
        assert_eq!(by_name, "dependency.0.servers");
        assert_eq!(by_name, by_position);
    }

    #[test]
    fn bare_words_become_strings() {
        assert_eq!(parse_value("handoff"), Value::String("handoff".into()));
        assert_eq!(parse_value("3"), Value::Integer(3));
        assert_eq!(parse_value("0.5"), Value::Float(0.5));
    }
}
