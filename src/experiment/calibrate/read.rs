//! Reading OpenTelemetry traces in OTLP/JSON (the Collector's file exporter output: one
//! `{"resourceSpans": ...}` document per line, or one document) with the official
//! `opentelemetry-proto` types, into flat spans grouped by trace.

use crate::experiment::command::CommandError;
use crate::scenario::input_file::next_line;
use crate::scenario::{InputKind, open_input, quote};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};

/// A trace file larger than this is refused (split it, or sample it).
pub const MAX_TRACE_FILE_BYTES: u64 = 4 << 30;
/// One line (one document) of a JSON Lines file.
pub const MAX_LINE_BYTES: u64 = 256 << 20;

/// An attribute value as calibration reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Attr {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Attr::Str(s) => Some(s),
            Attr::Int(_) | Attr::Float(_) | Attr::Bool(_) => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Attr::Int(i) => Some(*i as f64),
            Attr::Float(f) => Some(*f),
            Attr::Str(s) => s.parse().ok(),
            Attr::Bool(_) => None,
        }
    }

    /// The value as text (a status code may come as an integer or a string).
    pub fn text(&self) -> String {
        match self {
            Attr::Str(s) => s.clone(),
            Attr::Int(i) => i.to_string(),
            Attr::Float(f) => f.to_string(),
            Attr::Bool(b) => b.to_string(),
        }
    }
}

/// One span, flattened.
#[derive(Debug, Clone)]
pub struct ObservedSpan {
    pub span_id: Vec<u8>,
    /// Empty for a root span.
    pub parent_id: Vec<u8>,
    pub name: String,
    /// OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer.
    pub kind: i32,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Status code 2 (ERROR).
    pub error: bool,
    pub attributes: BTreeMap<String, Attr>,
}

impl ObservedSpan {
    pub fn attr(&self, key: &str) -> Option<&Attr> {
        self.attributes.get(key)
    }

    pub fn duration_ms(&self) -> f64 {
        self.end_ns.saturating_sub(self.start_ns) as f64 / 1e6
    }
}

/// The spans of one trace, and the resource that sent them.
#[derive(Debug, Clone, Default)]
pub struct ObservedTrace {
    /// Its trace id (to name it in notes).
    pub trace_id: Vec<u8>,
    pub spans: Vec<ObservedSpan>,
    /// The resource's attributes, as `key=value` text: traces from one resource (one process,
    /// one simulated replication) share a clock.
    pub resource: String,
    /// `faultline.sampling_ratio` on the resource, when a faultline export wrote it.
    pub sampling_ratio: Option<f64>,
}

/// Trace files under the reading rule (`scenario/input_file.rs`).
pub const TRACE_FILES: InputKind =
    InputKind { plural: "trace files", max_bytes: MAX_TRACE_FILE_BYTES, advice: "split or sample it" };

/// Every trace in `paths`, in file order and first-seen order within a file (a trace split
/// over several documents is joined).
/// A declared `faultline.sampling_ratio` that is no share of root runs (outside (0, 1], or
/// not a number) is refused naming the file, the line and the value, unless `--sampling-ratio`
/// (`given`) replaces it.
pub fn read_traces(paths: &[std::path::PathBuf], given: Option<f64>) -> Result<Vec<ObservedTrace>, CommandError> {
    let mut set = TraceSet::default();
    for path in paths {
        let shown = quote(&path.display().to_string());
        let file = open_input(path, TRACE_FILES).map_err(|r| CommandError::Input(format!("{shown}: {r}")))?;
        set.read(&shown, BufReader::new(file))?;
        if let (None, Some(why)) = (given, set.unusable_ratio.take()) {
            return Err(CommandError::Input(why));
        }
    }
    Ok(set.traces)
}

/// Traces as they are read, joined by trace id across documents and files.
#[derive(Default)]
pub struct TraceSet {
    pub traces: Vec<ObservedTrace>,
    index: BTreeMap<Vec<u8>, usize>,
    /// The first declared sampling ratio that is no share of root runs, said with its file
    /// and line.
    pub unusable_ratio: Option<String>,
}

impl TraceSet {
    /// Adds the documents of one file; `shown` names it in errors.
    pub fn read(&mut self, shown: &str, reader: impl BufRead) -> Result<(), CommandError> {
        for document in documents(reader) {
            let (first_line, text) = document.map_err(|e| CommandError::Input(format!("{shown}: {e}")))?;
            let request: ExportTraceServiceRequest = serde_json::from_str(&text).map_err(|e| {
                CommandError::Input(crate::scenario::tame_message(&format!(
                    "{shown}, line {}: not an OTLP/JSON trace document ({e})",
                    first_line + e.line().saturating_sub(1)
                )))
            })?;
            if let Some(value) = add_request(request, &mut self.traces, &mut self.index)
                && self.unusable_ratio.is_none()
            {
                self.unusable_ratio = Some(format!(
                    "{shown}, line {first_line}: the resource attribute faultline.sampling_ratio = {value} is no share of root runs: it must be a number in (0, 1]; give the share the traces hold with --sampling-ratio"
                ));
            }
        }
        Ok(())
    }
}

/// Line `number` (from 1) as text, at most [`MAX_LINE_BYTES`] read: None at the end.
fn bounded_line(reader: &mut impl BufRead, number: usize) -> Option<Result<String, String>> {
    Some(match next_line(reader, MAX_LINE_BYTES)? {
        Ok(raw) => String::from_utf8(raw).map_err(|_| format!("line {number}: not UTF-8 text")),
        Err(e) => Err(format!("line {number}: {e}")),
    })
}

/// The file's documents with the line each starts on: one per non-blank line when the first
/// line is a whole JSON value (JSON Lines), else the whole file as one (pretty-printed) document.
fn documents(mut reader: impl BufRead) -> impl Iterator<Item = Result<(usize, String), String>> {
    let mut number = 0;
    let mut lines = std::iter::from_fn(move || {
        number += 1;
        bounded_line(&mut reader, number).map(|line| (number - 1, line))
    });
    let mut json_lines: Option<bool> = None;
    let mut whole: Option<(usize, String)> = None;
    std::iter::from_fn(move || {
        loop {
            let Some((i, line)) = lines.next() else { return whole.take().map(Ok) };
            let line = match line {
                Ok(line) => line,
                Err(e) => return Some(Err(e)),
            };
            match json_lines {
                None if line.trim().is_empty() => {}
                None => {
                    let complete = serde_json::from_str::<serde::de::IgnoredAny>(line.trim()).is_ok();
                    json_lines = Some(complete);
                    if complete {
                        return Some(Ok((i + 1, line)));
                    }
                    whole = Some((i + 1, format!("{line}\n")));
                }
                Some(true) if line.trim().is_empty() => {}
                Some(true) => return Some(Ok((i + 1, line))),
                Some(false) => {
                    let text = &mut whole.get_or_insert_with(|| (i + 1, String::new())).1;
                    text.push_str(&line);
                    text.push('\n');
                }
            }
        }
    })
}

/// Adds the request's spans; returns the first declared sampling ratio outside (0, 1] (or not
/// a number), as written, which is then not taken.
fn add_request(
    request: ExportTraceServiceRequest,
    traces: &mut Vec<ObservedTrace>,
    index: &mut BTreeMap<Vec<u8>, usize>,
) -> Option<String> {
    let mut unusable = None;
    for resource_spans in request.resource_spans {
        let resource_attrs = resource_spans.resource.map(|r| r.attributes).unwrap_or_default();
        let resource_map = attributes(resource_attrs);
        let declared = resource_map.get("faultline.sampling_ratio");
        let sampling_ratio = declared.and_then(Attr::as_f64).filter(|r| *r > 0.0 && *r <= 1.0);
        if let (Some(value), None) = (declared, sampling_ratio) {
            unusable = unusable.or(Some(match value {
                Attr::Str(s) => quote(s),
                Attr::Float(f) => format!("{f:?}"),
                Attr::Int(_) | Attr::Bool(_) => value.text(),
            }));
        }
        let resource: String =
            resource_map.iter().map(|(k, v)| format!("{k}={}", v.text())).collect::<Vec<_>>().join(",");
        for scope_spans in resource_spans.scope_spans {
            for span in scope_spans.spans {
                let slot = *index.entry(span.trace_id.clone()).or_insert_with(|| {
                    traces.push(ObservedTrace {
                        trace_id: span.trace_id.clone(),
                        spans: Vec::new(),
                        resource: resource.clone(),
                        sampling_ratio,
                    });
                    traces.len() - 1
                });
                traces[slot].spans.push(ObservedSpan {
                    span_id: span.span_id,
                    parent_id: span.parent_span_id,
                    name: span.name,
                    kind: span.kind,
                    start_ns: span.start_time_unix_nano,
                    end_ns: span.end_time_unix_nano,
                    error: span.status.is_some_and(|s| s.code == 2),
                    attributes: attributes(span.attributes),
                });
            }
        }
    }
    unusable
}

fn attributes(list: Vec<KeyValue>) -> BTreeMap<String, Attr> {
    list.into_iter().filter_map(|kv| Some((kv.key, attr(kv.value?)?))).collect()
}

fn attr(value: AnyValue) -> Option<Attr> {
    Some(match value.value? {
        any_value::Value::StringValue(s) => Attr::Str(s),
        any_value::Value::IntValue(i) => Attr::Int(i),
        any_value::Value::DoubleValue(f) => Attr::Float(f),
        any_value::Value::BoolValue(b) => Attr::Bool(b),
        // Arrays (finish reasons) and the rest: the first string of an array, else nothing.
        any_value::Value::ArrayValue(a) => a.values.into_iter().find_map(attr)?,
        any_value::Value::KvlistValue(_)
        | any_value::Value::BytesValue(_)
        | any_value::Value::StringValueStrindex(_) => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_a_pretty_printed_document_both_read() {
        let lines = "{\"a\":1}\n\n{\"b\":2}\n";
        let docs: Vec<_> = documents(lines.as_bytes()).map(Result::unwrap).collect();
        assert_eq!(docs, vec![(1, "{\"a\":1}".to_string()), (3, "{\"b\":2}".to_string())]);
        let pretty = "{\n  \"a\": 1\n}\n";
        let docs: Vec<_> = documents(pretty.as_bytes()).map(Result::unwrap).collect();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].0, 1);
    }
}
