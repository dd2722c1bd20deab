//! Metric families written out: the Prometheus text exposition format 0.0.4 (timestamps in
//! milliseconds), OpenMetrics 1.0 text (timestamps in seconds, counters' families named without
//! `_total`, `# EOF` last: what `promtool tsdb create-blocks-from openmetrics` reads), and an
//! OTLP/JSON `ExportMetricsServiceRequest` (opentelemetry-proto's metrics.proto under the OTLP
//! JSON mapping: lowerCamelCase field names, 64-bit integers as decimal strings, enums as
//! integers).

use super::families::{Families, Family, Kind};
use serde_json::{Value as Json, json};
use std::fmt::Write;

/// `AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE` in metrics.proto.
const CUMULATIVE: u64 = 2;

/// A label value or an OpenMetrics help text with `\`, `"` and newlines escaped.
fn escape_quoted(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// A 0.0.4 help text: only `\` and newlines are escaped there.
fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

fn label_set(labels: &[(String, String)]) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape_quoted(v))).collect();
    format!("{{{}}}", inner.join(","))
}

/// Shortest round-trip decimal (Rust's `Display` for f64 never writes an exponent).
fn number(value: f64) -> String {
    format!("{value}")
}

fn type_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Counter => "counter",
        Kind::Gauge => "gauge",
    }
}

/// Prometheus text exposition format 0.0.4.
pub fn prometheus_text(families: &Families) -> String {
    let mut out = String::new();
    for family in families.by_name.values() {
        let _ = writeln!(out, "# HELP {} {}", family.name, escape_help(&family.help));
        let _ = writeln!(out, "# TYPE {} {}", family.name, type_name(family.kind));
        for (labels, points) in &family.series {
            let labels = label_set(labels);
            for (time_ms, value) in points {
                let _ = writeln!(out, "{}{labels} {} {time_ms}", family.name, number(*value));
            }
        }
    }
    out
}

/// An OpenMetrics timestamp: seconds, with the milliseconds as a fraction where there are any.
fn seconds(time_ms: i64) -> String {
    let (s, ms) = (time_ms.div_euclid(1000), time_ms.rem_euclid(1000));
    if ms == 0 { s.to_string() } else { format!("{s}.{ms:03}") }
}

/// OpenMetrics 1.0 text, ending in `# EOF`.
pub fn openmetrics_text(families: &Families) -> String {
    let mut out = String::new();
    for family in families.by_name.values() {
        let base = match family.kind {
            Kind::Counter => family.name.strip_suffix("_total").unwrap_or(&family.name),
            Kind::Gauge => &family.name,
        };
        let _ = writeln!(out, "# TYPE {base} {}", type_name(family.kind));
        let _ = writeln!(out, "# HELP {base} {}", escape_quoted(&family.help));
        for (labels, points) in &family.series {
            let labels = label_set(labels);
            for (time_ms, value) in points {
                let _ = writeln!(out, "{}{labels} {} {}", family.name, number(*value), seconds(*time_ms));
            }
        }
    }
    out.push_str("# EOF\n");
    out
}

fn nanos(time_ms: i64) -> String {
    (i128::from(time_ms) * 1_000_000).to_string()
}

fn attribute(key: &str, value: &str) -> Json {
    json!({ "key": key, "value": { "stringValue": value } })
}

fn data_points(family: &Family, start_ms: i64) -> Vec<Json> {
    let mut points = Vec::new();
    for (labels, series) in &family.series {
        let attributes: Vec<Json> = labels.iter().map(|(k, v)| attribute(k, v)).collect();
        for &(time_ms, value) in series {
            let mut point = json!({
                "attributes": attributes,
                "timeUnixNano": nanos(time_ms),
                "asDouble": value,
            });
            if family.kind == Kind::Counter {
                // A cumulative sum counts from the start of the simulation; its point at that
                // instant (0) is what startTimeUnixNano already says.
                if time_ms <= start_ms {
                    continue;
                }
                point["startTimeUnixNano"] = Json::String(nanos(start_ms));
            }
            points.push(point);
        }
    }
    points
}

/// What the resource and the scope say about the export.
pub struct Origin<'a> {
    pub scenario: &'a str,
    /// The faultline version that wrote the result folder.
    pub folder_version: &'a str,
    /// The instant the simulation's time 0 is mapped to.
    pub start_ms: i64,
}

/// An OTLP/JSON ExportMetricsServiceRequest: one resource (faultline and the scenario), one
/// scope (this binary), a gauge or a cumulative monotonic sum per family.
pub fn otlp_json(families: &Families, origin: &Origin) -> String {
    let metrics: Vec<Json> = families
        .by_name
        .values()
        .map(|family| {
            let points = data_points(family, origin.start_ms);
            let mut metric = json!({
                "name": family.otlp_name(),
                "description": family.help,
                "unit": family.otlp_unit,
            });
            match family.kind {
                Kind::Gauge => metric["gauge"] = json!({ "dataPoints": points }),
                Kind::Counter => {
                    metric["sum"] = json!({
                        "dataPoints": points,
                        "aggregationTemporality": CUMULATIVE,
                        "isMonotonic": true,
                    })
                }
            }
            metric
        })
        .collect();
    let request = json!({
        "resourceMetrics": [{
            "resource": { "attributes": [
                attribute("service.name", "faultline"),
                attribute("faultline.scenario", origin.scenario),
                attribute("faultline.version", origin.folder_version),
            ] },
            "scopeMetrics": [{
                "scope": { "name": "faultline", "version": crate::experiment::output::formats::VERSION },
                "metrics": metrics,
            }],
        }],
    });
    let mut text = serde_json::to_string(&request).expect("a JSON value always serializes");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmetrics_seconds_keep_milliseconds() {
        assert_eq!(seconds(1_767_225_660_000), "1767225660");
        assert_eq!(seconds(1_767_225_660_250), "1767225660.250");
        assert_eq!(escape_quoted("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
