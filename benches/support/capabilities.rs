//! What each capability costs (issue 33): the incident with one family of capabilities switched
//! off at a time, so the bench can price each one per root run. Shared by
//! `benches/throughput.rs` and `tests/bench_capabilities.rs`, which checks that every switch
//! turns its own family off and leaves the others on (so no two rows of the table measure the
//! same thing).
//!
//! A family switched off is replaced by the plainest thing that does the same work, where there
//! is one, so the difference is the family's machinery more than the work it stands for:
//! - tokens: each model dependency gets a lognormal service time of about the same latency
//!   (time to first token plus 100 output tokens at p50, 200 at p95) instead of token-shaped
//!   calls; the steps lose their token counts and the models their context windows.
//! - modes: the policies lose their degradation modes (and the error budget that drives them).
//! - tasks: a task dependency becomes a remote agent that calls its runner synchronously (the
//!   same work, no task lifecycle, polls or cancels); the policies lose their task clients and
//!   the faults and step settings that act on tasks (the agent's ignored cancels, the
//!   specialist step's `late_result`) go.
//! - guards: the policies lose their bulkheads, circuit breakers, load shedders, rate limiters
//!   and retry budgets (the incident's resilient policy has one bulkhead).
//! - time series: one window for the whole run instead of 60 s windows. The per-event
//!   recording into the series cannot be switched off from a scenario, so this prices the
//!   windows, not the recording.
//! - traces: off in every other row (the engine compiles its hooks away); this row turns them
//!   on as `replay` does: a summary of every root run and every event of run 1.
#![allow(dead_code)]

use toml::{Table, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Tokens,
    Modes,
    Tasks,
    Guards,
    TimeSeries,
    Traces,
}

impl Family {
    pub const ALL: [Family; 6] =
        [Family::Tokens, Family::Modes, Family::Tasks, Family::Guards, Family::TimeSeries, Family::Traces];

    pub fn name(self) -> &'static str {
        match self {
            Family::Tokens => "tokens",
            Family::Modes => "modes",
            Family::Tasks => "tasks",
            Family::Guards => "guards",
            Family::TimeSeries => "time series",
            Family::Traces => "traces",
        }
    }

    /// Whether the family is on in the baseline (traces are off in a plain run).
    pub fn on_in_baseline(self) -> bool {
        !matches!(self, Family::Traces)
    }
}

/// A scenario to time: the incident with `switched` toggled from its baseline state.
pub struct Variant {
    pub label: String,
    pub switched: Option<Family>,
    pub text: String,
    /// Run with the replay's tracer instead of none.
    pub traced: bool,
}

impl Variant {
    /// Whether `family` is on in this variant.
    pub fn on(&self, family: Family) -> bool {
        family.on_in_baseline() != (self.switched == Some(family))
    }
}

/// The baseline first, then one variant per family.
pub fn variants(incident: &str) -> Vec<Variant> {
    let base: Table = incident.parse().expect("the incident parses as TOML");
    let mut out = vec![Variant { label: "baseline".into(), switched: None, text: incident.to_string(), traced: false }];
    for family in Family::ALL {
        let mut doc = base.clone();
        let traced = family == Family::Traces;
        switch(&mut doc, family);
        let state = if family.on_in_baseline() { "off" } else { "on" };
        out.push(Variant {
            label: format!("{} {state}", family.name()),
            switched: Some(family),
            text: toml::to_string(&doc).expect("a TOML table serialises"),
            traced,
        });
    }
    out
}

fn tables<'a>(doc: &'a mut Table, key: &str) -> impl Iterator<Item = &'a mut Table> {
    doc.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten().filter_map(Value::as_table_mut)
}

fn policies(doc: &mut Table) -> impl Iterator<Item = &mut Table> {
    doc.get_mut("policy")
        .and_then(Value::as_table_mut)
        .into_iter()
        .flat_map(|t| t.iter_mut().map(|(_, v)| v))
        .filter_map(Value::as_table_mut)
}

fn number(t: &Table, path: &[&str]) -> f64 {
    let mut v = &t[path[0]];
    for key in &path[1..] {
        v = &v[*key];
    }
    v.as_float().or_else(|| v.as_integer().map(|i| i as f64)).unwrap_or_else(|| panic!("{path:?} is a number"))
}

fn switch(doc: &mut Table, family: Family) {
    match family {
        Family::Tokens => {
            for dependency in tables(doc, "dependency") {
                if let Some(Value::Table(tokens)) = dependency.remove("tokens") {
                    let p50 = number(&tokens, &["time_to_first_token", "p50_ms"])
                        + 100.0 * number(&tokens, &["time_per_output_token", "p50_ms"]);
                    let p95 = number(&tokens, &["time_to_first_token", "p95_ms"])
                        + 200.0 * number(&tokens, &["time_per_output_token", "p95_ms"]);
                    let mut service = Table::new();
                    service.insert("p50_ms".into(), Value::Float(p50));
                    service.insert("p95_ms".into(), Value::Float(p95));
                    dependency.insert("service_time".into(), Value::Table(service));
                    dependency.remove("max_context_tokens");
                }
            }
            for workflow in tables(doc, "workflow") {
                for step in tables(workflow, "step") {
                    step.remove("input_tokens");
                    step.remove("output_tokens");
                }
            }
        }
        Family::Modes => {
            for policy in policies(doc) {
                policy.remove("degradation");
                policy.remove("runtime_policy");
            }
        }
        Family::Tasks => {
            let mut had_tasks = Vec::new();
            for dependency in tables(doc, "dependency") {
                if let Some(Value::Table(task)) = dependency.remove("task") {
                    let mut call = Table::new();
                    call.insert("dependency".into(), task["runner"].clone());
                    call.insert("timeout_ms".into(), Value::Float(3_600_000.0));
                    dependency.insert("calls".into(), Value::Array(vec![Value::Table(call)]));
                    had_tasks.push(dependency["name"].clone());
                }
            }
            for policy in policies(doc) {
                policy.remove("task_client");
            }
            // A step's `late_result` is about a task's answer nobody waits for.
            for workflow in tables(doc, "workflow") {
                for step in tables(workflow, "step") {
                    if step.get("dependency").is_some_and(|d| had_tasks.contains(d)) {
                        step.remove("late_result");
                    }
                }
            }
            // A fault that acts on tasks (a cancel the agent ignores) has nothing to act on.
            if let Some(faults) = doc.get_mut("fault").and_then(Value::as_array_mut) {
                faults.retain(|f| {
                    !(f.get("kind").and_then(Value::as_str) == Some("ignored_cancel")
                        && f.get("target").is_some_and(|t| had_tasks.contains(t)))
                });
            }
        }
        Family::Guards => {
            for policy in policies(doc) {
                for guard in ["bulkhead", "circuit_breaker", "load_shedding", "rate_limiter", "retry_budget"] {
                    policy.remove(guard);
                }
            }
        }
        Family::TimeSeries => {
            let simulation = doc.get_mut("simulation").and_then(Value::as_table_mut).expect("[simulation]");
            let duration = number(simulation, &["duration_s"]);
            let drain =
                simulation.get("drain_limit_s").map(|_| number(simulation, &["drain_limit_s"])).unwrap_or(3600.0);
            simulation.insert("timeseries_window_s".into(), Value::Float(duration + drain));
        }
        Family::Traces => {}
    }
}
