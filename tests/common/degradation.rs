//! The small degradation scenario tests/degradation_fidelity.rs and tests/degradation_actions.rs
//! share: a soft search, a model with a cheaper fallback, a write.

use faultline::metrics::MetricMap;

/// A model whose fault `fault` (a `[[fault]]` body aimed at "model" or "search") runs
/// [100 s, 200 s); a slow-call breaker on the model; `policy` completes `[policy.p]`. Time series
/// in 10 s windows (they change no metric).
pub fn scenario(fault: &str, policy: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 400
warmup_s = 20
seed = 11
replications = 1
timeseries_window_s = 10

[[dependency]]
name = "model"
servers = 40
service_time = {{ dist = "constant", value_ms = 200 }}

[[dependency]]
name = "search"
servers = 40
service_time = {{ dist = "constant", value_ms = 50 }}

[[dependency]]
name = "backup"
servers = 40
service_time = {{ dist = "constant", value_ms = 100 }}

[[dependency]]
name = "tickets"
servers = 40
service_time = {{ dist = "constant", value_ms = 50 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 20 }}
deadline_ms = 10000

  [[workflow.step]]
  id = "enrich"
  dependency = "search"
  criticality = "soft"

  [[workflow.step]]
  id = "answer"
  dependency = "model"
  fallback = "backup"

  [[workflow.step]]
  id = "save"
  after = ["answer", "enrich"]
  dependency = "tickets"
  effect = "write"
  idempotency = "key"

[[fault]]
start_s = 100
duration_s = 100
{fault}

[policy.p]
timeout_ms = 5000

[[policy.p.circuit_breaker]]
dependency = "model"
slow_call_duration_threshold_ms = 1000
slow_call_rate_threshold = 50
sliding_window_type = "time_based"
sliding_window_size = 10
minimum_number_of_calls = 20
wait_duration_in_open_state_ms = 30000
automatic_transition_from_open_to_half_open_enabled = true

{policy}
"#
    )
}

pub const SLOW_MODEL: &str =
    "kind = \"latency\"\ntarget = \"model\"\nservice_time = { dist = \"constant\", value_ms = 2000 }";
pub const FAILING_MODEL: &str = "kind = \"errors\"\ntarget = \"model\"\nerrors = { overloaded = 1.0 }";
pub const FAILING_SEARCH: &str = "kind = \"errors\"\ntarget = \"search\"\nerrors = { overloaded = 1.0 }";

/// The mode and budget figures of a run, for a failure's message.
pub fn modes(m: &MetricMap) -> String {
    let shown = m.iter().filter(|(k, v)| {
        **v != 0.0 && (k.starts_with("degradation") || k.starts_with("error_budget") || k.starts_with("mode."))
    });
    shown.map(|(k, v)| format!("{k} = {v}\n")).collect()
}

pub fn get(m: &MetricMap, name: &str) -> f64 {
    *m.get(name).unwrap_or_else(|| panic!("no metric {name}"))
}
