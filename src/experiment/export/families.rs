//! From a result folder's files to metric families: the time series' columns (timeseries.csv)
//! by a fixed table of names, and the whole-run figures (summary.json's means, replications.csv's
//! rows) by one naming rule. Names follow Prometheus's conventions (snake_case, base units,
//! `_total` on counters only, `_seconds`, `_ratio`); what a dotted name carries (a dependency, a
//! workflow, a percentile, a reason) becomes a label.

use std::collections::{BTreeMap, BTreeSet};

/// How a family's value behaves over time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only grows: a cumulative count (the name ends in `_total`).
    Counter,
    /// A level at an instant, or a whole-run figure that is not a count.
    Gauge,
}

/// A label set, in the order it is written: `scenario`, `policy`, then the family's own.
pub type Labels = Vec<(String, String)>;

/// One metric family: its name, help, kind and unit, and its series (label set to points in
/// time order, timestamps in milliseconds since the Unix epoch).
#[derive(Debug, Clone)]
pub struct Family {
    pub name: String,
    pub help: String,
    pub kind: Kind,
    /// The unit in UCUM as OTLP writes it ("s", "1", "{run}"; "" for none).
    pub otlp_unit: &'static str,
    pub series: BTreeMap<Labels, Vec<(i64, f64)>>,
}

impl Family {
    fn new(name: String, help: String, kind: Kind, otlp_unit: &'static str) -> Family {
        Family { name, help, kind, otlp_unit, series: BTreeMap::new() }
    }

    /// The name OTLP gives the family: the Prometheus name without the suffixes that
    /// Prometheus's OTLP translation adds back from the type and unit (`_total` for a monotonic
    /// sum, `_seconds` for unit "s", `_ratio` for a gauge of unit "1"), so that metrics sent as
    /// OTLP arrive in Prometheus under the names the dashboard queries.
    pub fn otlp_name(&self) -> &str {
        let mut name = self.name.as_str();
        if self.kind == Kind::Counter {
            name = name.strip_suffix("_total").unwrap_or(name);
        }
        match self.otlp_unit {
            "s" => name.strip_suffix("_seconds").unwrap_or(name),
            // The translation looks for a token `per_second`, which a name split at every `_`
            // never has: it would append a second `_per_second`.
            "1/s" => name.strip_suffix("_per_second").unwrap_or(name),
            "1" if self.kind == Kind::Gauge => name.strip_suffix("_ratio").unwrap_or(name),
            _ => name,
        }
    }

    pub fn samples(&self) -> usize {
        self.series.values().map(Vec::len).sum()
    }
}

/// Every family of an export, by name.
#[derive(Debug, Default)]
pub struct Families {
    pub by_name: BTreeMap<String, Family>,
}

impl Families {
    /// Adds a point to a family, creating the family on first use.
    pub fn add(&mut self, def: &Def, labels: Labels, time_ms: i64, value: f64) {
        let family = self
            .by_name
            .entry(def.name.clone())
            .or_insert_with(|| Family::new(def.name.clone(), def.help.clone(), def.kind, def.otlp_unit));
        family.series.entry(labels).or_default().push((time_ms, value));
    }

    pub fn samples(&self) -> usize {
        self.by_name.values().map(Family::samples).sum()
    }

    /// Where a family's series differ in which of the labels a dotted name gave they carry
    /// (`degradation_transition_total` beside `degradation_transition_total.normal.constrained`),
    /// the series without one gets it as "all": a query that sums over `from` then counts each
    /// transition once, and the whole is still there, named.
    pub fn fill_missing_labels(&mut self) {
        for family in self.by_name.values_mut() {
            let keys: BTreeSet<String> = family
                .series
                .keys()
                .flat_map(|labels| labels.iter().map(|(k, _)| k.clone()))
                .filter(|k| FILLABLE.contains(&k.as_str()))
                .collect();
            if keys.is_empty() {
                continue;
            }
            let old = std::mem::take(&mut family.series);
            for (mut labels, points) in old {
                for key in &keys {
                    if !labels.iter().any(|(k, _)| k == key) {
                        labels.push((key.clone(), "all".into()));
                    }
                }
                family.series.entry(labels).or_default().extend(points);
            }
        }
    }
}

/// The labels a dotted name's tail gives, which a whole may lack.
const FILLABLE: [&str; 4] = ["kind", "from", "to", "stat"];

/// What a column or summary metric becomes: a family (name, help, kind, unit), its own labels,
/// and what its values are divided by (milliseconds to seconds).
#[derive(Debug, Clone, PartialEq)]
pub struct Def {
    pub name: String,
    pub help: String,
    pub kind: Kind,
    pub otlp_unit: &'static str,
    pub labels: Labels,
    /// What the file's values are divided by (1000 for milliseconds to seconds).
    pub divisor: f64,
}

fn def(name: &str, help: &str, kind: Kind, otlp_unit: &'static str, labels: Labels) -> Def {
    Def { name: format!("faultline_{name}"), help: help.into(), kind, otlp_unit, labels, divisor: 1.0 }
}

fn label(key: &str, value: &str) -> (String, String) {
    (key.to_string(), value.to_string())
}

/// The family of a timeseries.csv column (not the two window columns), or None for a column
/// this version does not know.
pub fn timeseries_column(column: &str) -> Option<Def> {
    use Kind::{Counter, Gauge};
    let fixed = |name: &str, help: &str, unit: &'static str| Some(def(name, help, Counter, unit, Vec::new()));
    match column {
        "arrivals" => {
            return fixed(
                "arrivals_total",
                "Root runs started (arrivals and resubmissions), cumulative from the start of the simulation; mean over the replications.",
                "{run}",
            );
        }
        "completions" => {
            return fixed(
                "completions_total",
                "Root runs that ended, any outcome, cumulative; mean over the replications.",
                "{run}",
            );
        }
        "goodput" => {
            return fixed(
                "goodput_total",
                "Root runs that ended succeeded or degraded (late answers included), cumulative; mean over the replications.",
                "{run}",
            );
        }
        "on_time_goodput" => {
            return fixed(
                "on_time_goodput_total",
                "Root runs that ended succeeded or degraded with a result by their deadline, cumulative; mean over the replications.",
                "{run}",
            );
        }
        "deadline_misses" => {
            return fixed(
                "deadline_misses_total",
                "Root runs that ended with no result by their deadline, cumulative; mean over the replications.",
                "{run}",
            );
        }
        "effect_unknown" => {
            return fixed(
                "effect_unknown_total",
                "Write attempts whose caller timed out (effect unknown), cumulative; mean over the replications.",
                "{attempt}",
            );
        }
        // A closed population's users (k6's vus, Locust's user count): levels, so gauges.
        "users.active" => {
            return Some(def(
                "users_active",
                "Users of the closed populations present (waiting for an answer or thinking) at the end of the window; mean over the replications.",
                Gauge,
                "{user}",
                Vec::new(),
            ));
        }
        "users.thinking" => {
            return Some(def(
                "users_thinking",
                "Users of the closed populations thinking (between an answer, or giving up, and their next run) at the end of the window; mean over the replications.",
                Gauge,
                "{user}",
                Vec::new(),
            ));
        }
        _ => {}
    }
    // A guard's scope may hold a dot (`bulkhead.<dependency>.read.in_use`).
    if let Some(scope) = column.strip_prefix("bulkhead.").and_then(|r| r.strip_suffix(".in_use")) {
        return Some(def(
            "bulkhead_in_use",
            "Permits of the bulkhead in use at the end of the window; mean over the replications.",
            Gauge,
            "{permit}",
            vec![label("scope", scope)],
        ));
    }
    if let Some(scope) = column.strip_prefix("retry_budget.").and_then(|r| r.strip_suffix(".level")) {
        return Some(def(
            "retry_budget_level",
            "What the retry budget holds at the end of the window (tokens or retries, by its kind); mean over the replications.",
            Gauge,
            "{token}",
            vec![label("scope", scope)],
        ));
    }
    let parts: Vec<&str> = column.split('.').collect();
    match parts.as_slice() {
        ["dependency", d, "attempt_total"] => Some(def(
            "dependency_attempts_total",
            "Attempts sent to the dependency (control requests included), cumulative; mean over the replications.",
            Counter,
            "{attempt}",
            vec![label("dependency", d)],
        )),
        ["dependency", d, "queue_depth"] => Some(def(
            "dependency_queue_depth",
            "Attempts waiting (not in service) at the dependency, sampled at the end of each window; mean over the replications.",
            Gauge,
            "{attempt}",
            vec![label("dependency", d)],
        )),
        ["dependency", d, "refused_total"] => Some(def(
            "dependency_refused_total",
            "Attempts for the dependency refused (by a guard, a fan-out limit, or expired in its queue), cumulative; mean over the replications.",
            Counter,
            "{attempt}",
            vec![label("dependency", d)],
        )),
        ["breaker", b, "worst_state"] => Some(def(
            "breaker_worst_state",
            "The worst state of the circuit breaker in the window ending at the sample (0 closed, 1 half-open, 2 open); mean over the replications.",
            Gauge,
            "{state}",
            vec![label("breaker", b)],
        )),
        ["workflow", w, "worst_mode"] => Some(def(
            "workflow_worst_mode",
            "The most severe degradation mode of the workflow in the window ending at the sample (0 normal, 1 recovery, 2 constrained, 3 degraded, 4 handoff, 5 paused); mean over the replications.",
            Gauge,
            "{mode}",
            vec![label("workflow", w)],
        )),
        ["workflow", w, "error_budget", rest @ ..] => budget_column(vec![label("workflow", w)], rest),
        ["workflow", w, "dependency", d, "error_budget", rest @ ..] => {
            budget_column(vec![label("workflow", w), label("dependency", d)], rest)
        }
        _ => None,
    }
}

fn budget_column(mut labels: Labels, rest: &[&str]) -> Option<Def> {
    use Kind::Gauge;
    match rest {
        ["state"] => Some(def(
            "error_budget_state",
            "The worst state of the error budget in the window (0 healthy, 1 at risk, 2 exhausted, 3 integrity incident); mean over the replications.",
            Gauge,
            "{state}",
            labels,
        )),
        ["spent"] => Some(def(
            "error_budget_spent_ratio",
            "The largest share of the period's error budget spent in the window (1 is exhausted); mean over the replications.",
            Gauge,
            "1",
            labels,
        )),
        ["burn_rate", rule, window @ ("long" | "short")] => {
            labels.push(label("rule", rule));
            labels.push(label("window", window));
            // A multiple of the rate that spends the budget exactly, dimensionless; no unit "1",
            // for which Prometheus's OTLP translation would append `_ratio` to the name.
            Some(def(
                "error_budget_burn_rate",
                "The largest burn rate of the burn-rate rule's long or short window in the window; mean over the replications.",
                Gauge,
                "",
                labels,
            ))
        }
        _ => None,
    }
}

/// The statistics a dotted summary name may end in.
const STATS: [&str; 6] = ["mean", "p50", "p90", "p95", "p99", "max"];

/// The family of a summary metric (summary.json's name): `faultline_result_` and the name with
/// its scope (`incident.` becomes `scope="incident"`, else `scope="run"`), its entity
/// (`dependency.<d>.`, `workflow.<w>.`, `step.<s>.`, `mode.<m>.` become a label and a family
/// prefix), its unit (`_ms` becomes `_seconds` with the value divided by 1000, `_s` and
/// `_per_s` become `_seconds` and `_per_second`) and its tail after the base name (a statistic
/// becomes `stat`, a transition `from` and `to`, anything else `kind`) as labels.
pub fn summary_metric(metric: &str) -> Def {
    let mut labels: Labels = Vec::new();
    let mut rest = metric;
    let scope = match rest.strip_prefix("incident.") {
        Some(r) => {
            rest = r;
            "incident"
        }
        None => "run",
    };
    labels.push(label("scope", scope));
    let mut prefix = String::from("result_");
    // The name with its labelled parts as placeholders, for the family's help.
    let mut pattern = String::new();
    for entity in ["dependency", "workflow", "step", "mode"] {
        if let Some(r) = rest.strip_prefix(entity).and_then(|r| r.strip_prefix('.'))
            && let Some((name, tail)) = r.split_once('.')
        {
            labels.push(label(entity, name));
            pattern = format!("{entity}.<{entity}>.");
            prefix.push_str(entity);
            prefix.push('_');
            rest = tail;
            break;
        }
    }
    let segments: Vec<&str> = rest.split('.').collect();
    // The base name runs to the first segment that names a unit or a count; a name without one
    // keeps its first segment as the base.
    let end = segments
        .iter()
        .position(|s| ["_total", "_ms", "_s", "_ratio"].iter().any(|u| s.ends_with(u)))
        .map_or(1, |k| k + 1);
    let (base, tail) = segments.split_at(end);
    pattern.push_str(&base.join("."));
    let mut name = base.join("_");
    let mut divisor = 1.0;
    let mut otlp_unit = "";
    if let Some(stem) = name.strip_suffix("_ms") {
        name = format!("{stem}_seconds");
        divisor = 1000.0;
        otlp_unit = "s";
    } else if let Some(stem) = name.strip_suffix("_per_s") {
        name = format!("{stem}_per_second");
        otlp_unit = "1/s";
    } else if let Some(stem) = name.strip_suffix("_s") {
        name = format!("{stem}_seconds");
        otlp_unit = "s";
    } else if name.ends_with("_ratio") {
        otlp_unit = "1";
    }
    let name = sanitize(&format!("{prefix}{name}"));
    match tail {
        [] => {}
        [stat] if STATS.contains(stat) => {
            labels.push(label("stat", stat));
            pattern.push_str(".<stat>");
        }
        [from, to] if name.ends_with("transition_total") => {
            labels.push(label("from", from));
            labels.push(label("to", to));
            pattern.push_str(".<from>.<to>");
        }
        more => {
            labels.push(label("kind", &more.join(".")));
            pattern.push_str(".<kind>");
        }
    }
    let kind = if name.ends_with("_total") { Kind::Counter } else { Kind::Gauge };
    let help = format!(
        "summary.json's {} (docs/metrics.md): a whole-run figure at the run's end; replication=\"mean\" is the mean over the replications, scope=\"incident\" the incident.* figure.",
        pattern
    );
    Def { name: format!("faultline_{name}"), help, kind, otlp_unit, labels, divisor }
}

/// A name as Prometheus allows it: `[a-zA-Z_][a-zA-Z0-9_]*` (colons are for recording rules).
pub fn sanitize(name: &str) -> String {
    let mut out: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(metric: &str) -> (String, Labels) {
        let d = summary_metric(metric);
        (d.name, d.labels)
    }

    #[test]
    fn summary_names_carry_units_and_labels() {
        let d = summary_metric("run_latency_ms.p95");
        assert_eq!(d.name, "faultline_result_run_latency_seconds");
        assert_eq!(d.divisor, 1000.0);
        assert_eq!(d.labels, vec![label("scope", "run"), label("stat", "p95")]);
        assert_eq!(d.kind, Kind::Gauge);
        let (name, labels) = named("incident.retry_amplification_ratio");
        assert_eq!(name, "faultline_result_retry_amplification_ratio");
        assert_eq!(labels, vec![label("scope", "incident")]);
        let (name, labels) = named("dependency.model-primary.refused_total.bulkhead");
        assert_eq!(name, "faultline_result_dependency_refused_total");
        assert_eq!(
            labels,
            vec![label("scope", "run"), label("dependency", "model-primary"), label("kind", "bulkhead")]
        );
        let (name, labels) = named("degradation_transition_total.normal.constrained");
        assert_eq!(name, "faultline_result_degradation_transition_total");
        assert_eq!(labels[1..], [label("from", "normal"), label("to", "constrained")]);
        assert_eq!(named("dependency.x.attempt_rate_per_s").0, "faultline_result_dependency_attempt_rate_per_second");
        assert_eq!(named("recovery_time_s").0, "faultline_result_recovery_time_seconds");
        assert_eq!(
            named("gen_ai.client.operation.duration_ms.p50").0,
            "faultline_result_gen_ai_client_operation_duration_seconds"
        );
        assert_eq!(named("error_budget_burn_rate_max.long").1[1], label("kind", "long"));
        assert_eq!(summary_metric("cost_units_total").kind, Kind::Counter);
    }

    #[test]
    fn otlp_names_drop_what_the_translation_adds() {
        let f = |name: &str, kind, unit| Family::new(name.into(), String::new(), kind, unit);
        assert_eq!(f("faultline_arrivals_total", Kind::Counter, "{run}").otlp_name(), "faultline_arrivals");
        assert_eq!(f("faultline_x_seconds", Kind::Gauge, "s").otlp_name(), "faultline_x");
        assert_eq!(f("faultline_x_ratio", Kind::Gauge, "1").otlp_name(), "faultline_x");
        assert_eq!(f("faultline_queue_depth", Kind::Gauge, "{attempt}").otlp_name(), "faultline_queue_depth");
        assert_eq!(f("faultline_x_per_second", Kind::Gauge, "1/s").otlp_name(), "faultline_x");
    }

    #[test]
    fn every_timeseries_column_kind_has_a_family() {
        for column in [
            "arrivals",
            "on_time_goodput",
            "dependency.a-b.queue_depth",
            "breaker.m.worst_state",
            "workflow.w.worst_mode",
            "bulkhead.m.read.in_use",
            "retry_budget.global.level",
            "workflow.w.error_budget.burn_rate.2.short",
            "workflow.w.dependency.m.error_budget.spent",
            "users.active",
            "users.thinking",
        ] {
            assert!(timeseries_column(column).is_some(), "{column}");
        }
        assert!(timeseries_column("dependency.a.unknown").is_none());
    }
}
