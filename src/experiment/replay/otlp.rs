//! A traced run in the OpenTelemetry protocol's JSON encoding (OTLP/JSON, as the Collector's
//! file receiver and `otlp` exporters write it): one ResourceSpans, one ScopeSpans, the run's
//! spans. IDs are lowercase hex, enums integers and 64-bit integers decimal strings, as the
//! OTLP specification asks. Virtual time is laid from [`EPOCH_UNIX_NANO`], so a trace reads as
//! starting on 2025-01-01 at 00:00:00 UTC.

use super::spans::{RunSpans, SpanKind, Status, Value};
use crate::sim::{Micros, StreamKey};
use serde_json::{Value as Json, json};

/// 2025-01-01T00:00:00Z: virtual time zero.
pub const EPOCH_UNIX_NANO: u64 = 1_735_689_600_000_000_000;

/// What the trace's resource says about where it came from.
#[derive(Debug, Clone)]
pub struct TraceOrigin<'a> {
    pub scenario: &'a str,
    pub policy: &'a str,
    /// `simulation.seed` after overrides.
    pub seed: u64,
    pub replication: Option<u32>,
    pub replication_seed: u64,
    /// The share of the replication's measured runs exported (`run --traces`), so that
    /// `calibrate` can tell the arrival rate from a sample.
    pub sampling_ratio: Option<f64>,
}

/// The trace's 16-byte id and each span's 8-byte id, derived from the replication seed and the
/// run number: the same run always gets the same ids.
pub struct TraceIds {
    key: StreamKey,
}

impl TraceIds {
    pub fn new(replication_seed: u64, run_number: u64) -> TraceIds {
        TraceIds { key: StreamKey::root(replication_seed).with(0x07_1e_1e).with(run_number) }
    }

    pub fn trace_id(&self) -> String {
        format!("{:016x}{:016x}", self.key.with(1).value(), self.key.with(2).value())
    }

    pub fn span_id(&self, index: usize) -> String {
        // An all-zero id is invalid in OTLP.
        format!("{:016x}", self.key.with(3).with(index as u64).value().max(1))
    }
}

fn nanos(us: Micros) -> String {
    (EPOCH_UNIX_NANO + us * 1_000).to_string()
}

fn any_value(v: &Value) -> Json {
    match v {
        Value::Str(s) => json!({ "stringValue": s }),
        Value::Int(i) => json!({ "intValue": i.to_string() }),
        Value::Float(f) => json!({ "doubleValue": f }),
        Value::Bool(b) => json!({ "boolValue": b }),
        Value::StrList(items) => {
            let values: Vec<Json> = items.iter().map(|s| json!({ "stringValue": s })).collect();
            json!({ "arrayValue": { "values": values } })
        }
    }
}

fn attributes(attrs: &[(&str, Value)]) -> Json {
    Json::Array(attrs.iter().map(|(k, v)| json!({ "key": k, "value": any_value(v) })).collect())
}

/// The OTLP/JSON document of one run's spans.
pub fn to_otlp_json(run: &RunSpans, origin: &TraceOrigin) -> Json {
    let ids = TraceIds::new(origin.replication_seed, run.run_number);
    let trace_id = ids.trace_id();
    let spans: Vec<Json> = run
        .spans
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let status = match &s.status {
                Status::Unset => json!({}),
                Status::Ok => json!({ "code": 1 }),
                Status::Error(message) => json!({ "code": 2, "message": message }),
            };
            let events: Vec<Json> = s
                .events
                .iter()
                .map(|e| json!({ "timeUnixNano": nanos(e.at_us), "name": e.name, "attributes": attributes(&e.attributes) }))
                .collect();
            json!({
                "traceId": trace_id,
                "spanId": ids.span_id(i),
                "parentSpanId": s.parent.map(|p| ids.span_id(p)).unwrap_or_default(),
                "name": s.name,
                "kind": match s.kind { SpanKind::Internal => 1, SpanKind::Client => 3 },
                "startTimeUnixNano": nanos(s.start_us),
                "endTimeUnixNano": nanos(s.end_us.unwrap_or(s.start_us)),
                "attributes": attributes(&s.attributes),
                "events": events,
                "status": status,
            })
        })
        .collect();
    let mut resource = vec![
        ("service.name", Value::Str("faultline-simulated-agent".into())),
        ("faultline.scenario", Value::Str(origin.scenario.into())),
        ("faultline.policy", Value::Str(origin.policy.into())),
        ("faultline.seed", Value::Str(origin.seed.to_string())),
        ("faultline.replication_seed", Value::Str(origin.replication_seed.to_string())),
    ];
    if let Some(k) = origin.replication {
        resource.push(("faultline.replication", Value::Int(i64::from(k))));
    }
    if let Some(ratio) = origin.sampling_ratio {
        resource.push(("faultline.sampling_ratio", Value::Float(ratio)));
    }
    json!({
        "resourceSpans": [{
            "resource": { "attributes": attributes(&resource) },
            "scopeSpans": [{
                "scope": { "name": "faultline", "version": env!("CARGO_PKG_VERSION") },
                "spans": spans,
            }],
        }],
    })
}
