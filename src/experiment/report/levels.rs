//! The panels of the levels the time series samples at each window's end: each bulkhead's
//! permits in use, and each retry budget's level, one chart per kind of budget since each
//! counts in its own unit.

use super::drawn::{Drawn, MAX_LINES, over, palette, panel, policy_slots, shaded, without};
use super::svg::{Line, LineChart, label, line_chart_in};
use super::windows::{fault_spans, window_points};
use crate::engine::Model;
use crate::runtime::guard::GuardSpec;

/// One guard with a level, of one drawn policy.
struct Level<'d, 'a> {
    policy: &'d Drawn<'a>,
    spec: &'a GuardSpec,
    /// Its time-series column, such as `bulkhead.acme.in_use`.
    column_name: &'a str,
    column: usize,
}

impl Level<'_, '_> {
    /// "policy / scope": the column's name between its family and its metric.
    fn name(&self) -> String {
        let scope = self.column_name.split_once('.').map_or(self.column_name, |(_, rest)| rest);
        let scope = scope.rsplit_once('.').map_or(scope, |(scope, _)| scope);
        format!("{} / {scope}", self.policy.name)
    }

    fn line(&self, model: &Model) -> Line {
        Line::plain(self.name(), window_points(model, self.policy.runs, &|row| self.policy.cell(row, self.column)))
    }

    /// The lowest and highest means over the drawn windows.
    fn range(&self, model: &Model) -> (f64, f64) {
        let points = self.line(model).points;
        points.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| (lo.min(p.1), hi.max(p.1)))
    }

    /// How far it moved: what decides which lines a crowded chart keeps.
    fn swing(&self, model: &Model) -> f64 {
        let (lo, hi) = self.range(model);
        if hi >= lo { hi - lo } else { 0.0 }
    }

    /// The same value in every drawn window, if it is.
    fn constant(&self, model: &Model) -> Option<f64> {
        let points = self.line(model).points;
        let first = points.first()?.1;
        points.iter().all(|p| p.1 == first).then_some(first)
    }
}

/// Every guard with a level of the drawn policies, in policy then pipeline order.
fn levels<'d, 'a>(drawn: &'d [Drawn<'a>]) -> Vec<Level<'d, 'a>> {
    drawn
        .iter()
        .flat_map(|d| {
            let specs = d.policy.pipeline.guards().iter().filter(|g| g.level_column().is_some());
            specs.zip(&d.policy.level_labels).enumerate().map(move |(i, (spec, column_name))| Level {
                policy: d,
                spec,
                column_name,
                column: d.layout.level(i),
            })
        })
        .collect()
}

/// What a kind of level counts, for a chart's title, axis and note.
struct Kind {
    title: &'static str,
    y_label: &'static str,
    what: &'static str,
}

/// The kind of a guard with a level, and the configured bound of that instance in words; None
/// for a guard without a level.
fn kind_of(spec: &GuardSpec) -> Option<(Kind, Option<String>)> {
    Some(match spec {
        GuardSpec::Bulkhead(c) => (
            Kind {
                title: "Bulkhead permits in use at window end",
                y_label: "permits held",
                what: "Permits each bulkhead held at each window's end (attempts waiting for one not counted)",
            },
            Some(format!("{} permits", c.max_concurrent_calls)),
        ),
        GuardSpec::GrpcRetryThrottle(c) => (
            Kind {
                title: "gRPC retry throttle tokens at window end",
                y_label: "tokens",
                what: "Tokens in each gRPC retry throttle at each window's end, rounded down; retries and hedges are refused while it holds half of max_tokens or fewer",
            },
            Some(format!("max_tokens {}, retries stop at {} or fewer", c.max_tokens, label(c.max_tokens as f64 / 2.0))),
        ),
        GuardSpec::FinagleRetryBudget(_) => (
            Kind {
                title: "Finagle retry budget balance at window end",
                y_label: "retries allowed",
                what: "Retries each Finagle budget would allow at each window's end (its balance: the reserve plus a share of recent requests, less recent retries; a balance owing reads 0)",
            },
            None,
        ),
        GuardSpec::EnvoyRetryBudget(_) => (
            Kind {
                title: "Envoy retry budget: free retry slots at window end",
                y_label: "retries that could start",
                what: "Retries each Envoy budget would let start at each window's end: its limit on concurrent retries (budget_percent of the attempts in flight, at least min_retry_concurrency) less the retries in flight",
            },
            None,
        ),
        GuardSpec::AwsRetryQuota(c) => (
            Kind {
                title: "AWS retry quota at window end",
                y_label: "quota tokens",
                what: "Tokens in each AWS retry quota at each window's end; a retry takes retry_cost (timeout_retry_cost after a timeout) and is refused when fewer are left",
            },
            Some(format!(
                "{} tokens at most, a retry costs {} ({} after a timeout)",
                c.initial_retry_tokens, c.retry_cost, c.timeout_retry_cost
            )),
        ),
        GuardSpec::Resilience4jBreaker(_)
        | GuardSpec::PollyBreaker(_)
        | GuardSpec::OpossumBreaker(_)
        | GuardSpec::CockatielBreaker(_)
        | GuardSpec::EnvoyOutlier(_)
        | GuardSpec::LitellmCooldown(_)
        | GuardSpec::AdaptiveThrottle(_)
        | GuardSpec::LoadShedder(_)
        | GuardSpec::AdmissionControl(_)
        | GuardSpec::RateLimiter(_) => return None,
    })
}

/// One panel per kind of level in `family` ("bulkhead" or "retry_budget") among the drawn
/// policies, kinds in the order they first appear; empty when no drawn policy has one.
pub fn level_panels(model: &Model, drawn: &[Drawn], family: &str) -> Vec<String> {
    let all: Vec<Level> =
        levels(drawn).into_iter().filter(|l| l.spec.level_column().is_some_and(|(f, _)| f == family)).collect();
    let mut kinds: Vec<&'static str> = Vec::new();
    for l in &all {
        if let Some((k, _)) = kind_of(l.spec)
            && !kinds.contains(&k.title)
        {
            kinds.push(k.title);
        }
    }
    kinds
        .iter()
        .map(|title| {
            let of_kind: Vec<&Level> =
                all.iter().filter(|l| kind_of(l.spec).is_some_and(|(k, _)| k.title == *title)).collect();
            kind_panel(model, drawn, &of_kind, family)
        })
        .collect()
}

/// One kind's chart: a line per instance (those that moved most when there are many).
fn kind_panel(model: &Model, drawn: &[Drawn], all: &[&Level], family: &str) -> String {
    let (kind, _) = kind_of(all[0].spec).expect("a level has a kind");
    // Each swing once (a policy may have thousands of instances); stable: among equal swings,
    // policy then pipeline order.
    let mut swings: Vec<(f64, &Level)> = all.iter().map(|l| (l.swing(model), *l)).collect();
    swings.sort_by(|a, b| b.0.total_cmp(&a.0));
    let shown: Vec<&Level> = swings.into_iter().take(MAX_LINES).map(|(_, l)| l).collect();
    let slots = policy_slots(drawn, &shown.iter().map(|l| l.policy.name).collect::<Vec<_>>());
    let chart = line_chart_in(
        &LineChart::over_time(
            kind.title,
            kind.y_label,
            shown.iter().map(|l| l.line(model)).collect(),
            fault_spans(model),
        ),
        &palette(&slots),
    );
    let some = if all.len() > shown.len() {
        format!("The {} of {} that moved most. ", shown.len(), all.len())
    } else {
        String::new()
    };
    let each: Vec<String> = shown.iter().map(|l| describe(model, l)).collect();
    let has =
        |d: &Drawn| d.policy.pipeline.guards().iter().any(|g| kind_of(g).is_some_and(|(k, _)| k.title == kind.title));
    let note = format!(
        "{some}{}, mean over {}; one line per instance (policy / scope).{} {} {}.{}",
        kind.what,
        over(drawn),
        without(drawn, has, if family == "bulkhead" { "bulkhead" } else { "retry budget of this kind" }),
        shaded(model),
        each.join("; "),
        if family == "retry_budget" { unlevelled(drawn) } else { "" }
    );
    panel(chart, &note)
}

/// What the retry budget panels leave out: adaptive throttling, a `retry_budget` kind with a
/// rejection probability rather than a level.
fn unlevelled(drawn: &[Drawn]) -> &'static str {
    let throttles =
        drawn.iter().any(|d| d.policy.pipeline.guards().iter().any(|g| matches!(g, GuardSpec::AdaptiveThrottle(_))));
    if throttles {
        " adaptive_throttling keeps no level in the time series: its refusals are under throttled (Refusals)."
    } else {
        ""
    }
}

/// One instance in words: its bound, and its one value when its line never moves (a line
/// hidden under another still reads here), else its range.
fn describe(model: &Model, l: &Level) -> String {
    let bound = kind_of(l.spec).and_then(|(_, b)| b).map(|b| format!(" ({b})")).unwrap_or_default();
    match l.constant(model) {
        Some(v) => format!("{}{bound}: {} at every window's end", l.name(), label(v)),
        None => {
            let (lo, hi) = l.range(model);
            format!("{}{bound}: from {} to {}", l.name(), label(lo), label(hi))
        }
    }
}
