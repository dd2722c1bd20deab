//! What `faultline run` prints: first the headline, the figures the scenario's story is about,
//! during the fault windows (`incident.*`) and over the whole run side by side, each with its
//! 95 % interval over the replications; then the `[slo]` thresholds' verdicts, as k6 prints its
//! thresholds after a run. Every other figure is printed only on request (`--metrics`), since
//! a table of 70 rows hides the few a reader came for.
//!
//! The headline's figures (docs/metrics.md 6.5 states the rule): completion, safe outcomes,
//! deadline misses, p95 run latency, retry amplification and cost per success, then in a scenario
//! with a quorum step the shares of quorums not met and agreed wrong, then every metric the
//! `[slo]` section names, then the recovery figures. A figure that is not in `[slo]` and is zero or
//! undefined for every policy (no deadlines: nothing past one; no prices: no cost) answers no
//! question, so it is left out and a line names it.

use crate::experiment::batch::slo::{Check, SloChecks, judge_threshold};
use crate::experiment::command::CommandError;
use crate::experiment::report::table::{human, render, render_aligned, with_interval};
use crate::metrics::MetricMap;
use crate::metrics::range::Range;
use crate::metrics::stats::{Aggregate, Estimate};
use crate::scenario::{name_hint, quote};

/// The story's figures, in the order the headline shows them.
pub const STORY: [&str; 6] = [
    "auto_completion_ratio",
    "safe_outcome_ratio",
    "deadline_exceeded_ratio",
    "run_latency_ms.p95",
    "retry_amplification_ratio",
    "cost_per_success",
];

/// After the story, where a step is a quorum (the names exist only there): how often the
/// quorum gave no answer, and how often it agreed on a wrong one.
pub const QUORUM: [&str; 2] = ["quorum_ratio.not_met", "quorum_ratio.wrong_agreement"];

/// After the `[slo]` metrics: whether and how fast the system came back after its faults.
pub const RECOVERY: [&str; 2] = ["recovery_never_total", "recovery_time_s"];

/// Where a metric's figure during the fault windows lives (docs/metrics.md 2.8).
const INCIDENT: &str = "incident.";

/// Which figures the first table shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Figures {
    /// The headline's rule (the module's note).
    Headline,
    /// The metrics `--metrics` named, in its order.
    Chosen(Vec<String>),
    /// `--metrics all`: every metric of summary.json.
    All,
}

impl Figures {
    /// Reads `--metrics`: nothing is the headline, `all` every metric, else names that `names`
    /// (the scenario's metrics) must hold.
    pub fn parse(metrics: &[String], names: &[String]) -> Result<Figures, CommandError> {
        if metrics.is_empty() {
            return Ok(Figures::Headline);
        }
        if metrics.len() == 1 && metrics[0] == "all" {
            return Ok(Figures::All);
        }
        for m in metrics {
            if !names.contains(m) {
                return Err(CommandError::Input(format!(
                    "argument `--metrics {}`: this scenario has no metric {}{}; docs/metrics.md lists them (or summary.json), and `--metrics all` shows every one",
                    metrics.join(","),
                    quote(m),
                    name_hint(m, names)
                )));
            }
        }
        Ok(Figures::Chosen(metrics.to_vec()))
    }
}

/// One policy's figures and replications, as the headline reads them.
pub struct Policy<'a> {
    pub name: &'a str,
    pub aggregate: &'a Aggregate,
    pub replications: &'a [MetricMap],
}

/// A row of the first table: its name, and the metrics of its two columns where they exist.
struct Row {
    name: String,
    whole: Option<String>,
    during: Option<String>,
}

/// The first table's rows, and the headline's figures left out (zero or undefined everywhere).
fn rows(figures: &Figures, slo: &SloChecks, policies: &[Policy]) -> (Vec<Row>, Vec<String>) {
    let has = |name: &str| policies.iter().any(|p| p.aggregate.estimates.contains_key(name));
    let during = |name: &str| {
        let incident = format!("{INCIDENT}{name}");
        has(&incident).then_some(incident)
    };
    let row = |name: &str| match name.strip_prefix(INCIDENT) {
        // A figure only defined during the faults has no whole-run column.
        Some(_) => Row { name: name.to_string(), whole: None, during: Some(name.to_string()) },
        None => Row { name: name.to_string(), whole: has(name).then(|| name.to_string()), during: during(name) },
    };
    let mut left_out = Vec::new();
    let names: Vec<String> = match figures {
        Figures::Chosen(names) => names.clone(),
        Figures::All => {
            let mut all: Vec<String> = Vec::new();
            for p in policies {
                for name in p.aggregate.estimates.keys() {
                    // incident.x is x's "during the faults" column, unless x itself is missing.
                    let folded = name.strip_prefix(INCIDENT).is_some_and(has);
                    if !folded && !all.contains(name) {
                        all.push(name.clone());
                    }
                }
            }
            all.sort();
            all
        }
        Figures::Headline => {
            let slo_metrics: Vec<&str> =
                slo.thresholds.iter().chain(&slo.regressions).map(|c| c.metric.as_str()).collect();
            let mut names: Vec<String> = Vec::new();
            for name in STORY.iter().copied().chain(QUORUM).chain(slo_metrics.iter().copied()).chain(RECOVERY) {
                // An [slo] metric `incident.x` is x's "during the faults" column: x's row shows
                // it, so a row of its own would print the same figure twice.
                let name = match name.strip_prefix(INCIDENT) {
                    Some(whole) if has(whole) => whole,
                    _ => name,
                };
                if names.iter().any(|n| n == name) || !has(name) {
                    continue;
                }
                let informative = |metric: &str| {
                    policies
                        .iter()
                        .any(|p| p.aggregate.estimates.get(metric).is_some_and(|e| e.mean != 0.0 && !e.mean.is_nan()))
                };
                let incident = format!("{INCIDENT}{name}");
                let in_slo = slo_metrics.contains(&name) || slo_metrics.contains(&incident.as_str());
                if in_slo || informative(name) || informative(&incident) {
                    names.push(name.to_string());
                } else {
                    left_out.push(name.to_string());
                }
            }
            names
        }
    };
    (names.iter().map(|n| row(n)).collect(), left_out)
}

/// A figure as the headline prints it: the mean and its 95 % interval clipped to the metric's
/// range ([`with_interval`]); `-` where the metric does not exist.
pub fn figure(e: Option<&Estimate>, metric: &str) -> String {
    match e {
        Some(e) => with_interval(e.mean, e.low, e.high, Range::of_metric(metric)),
        None => "-".into(),
    }
}

/// The first table: a row per figure, for each policy its value during the fault windows (when
/// the scenario has faults) and over the whole run.
pub fn figures_table(figures: &Figures, slo: &SloChecks, policies: &[Policy]) -> String {
    let (rows, left_out) = rows(figures, slo, policies);
    let faults = policies
        .iter()
        .any(|p| p.aggregate.estimates.iter().any(|(name, e)| name.starts_with(INCIDENT) && !e.mean.is_nan()));
    let mut header = vec!["metric".to_string(), "policy".to_string()];
    if faults {
        header.push("during the faults".into());
    }
    header.push("whole run".into());
    let mut table: Vec<Vec<String>> = Vec::new();
    for Row { name, whole, during } in &rows {
        for (k, p) in policies.iter().enumerate() {
            let mut line = vec![if k == 0 { name.clone() } else { String::new() }, p.name.to_string()];
            let cell = |metric: &Option<String>| match metric {
                Some(m) => figure(p.aggregate.estimates.get(m), m),
                None => "-".to_string(),
            };
            if faults {
                line.push(cell(during));
            }
            line.push(cell(whole));
            table.push(line);
        }
    }
    let mut text = render_aligned(&header, &table, &[0, 1]);
    let replications = policies.first().map_or(0, |p| p.aggregate.replications);
    let mut notes = Vec::new();
    if replications > 1 {
        notes.push(format!(
            "[low, high] is the 95 % confidence interval over the {replications} replications, clipped to the values the metric can take ([0, 1] for a share, 0 or more otherwise)."
        ));
    }
    if faults {
        notes.push(
            "During the faults: the runs that started while a fault was active (the incident.* metrics); - where a figure has none."
                .into(),
        );
    }
    if !left_out.is_empty() {
        notes.push(format!("Not shown, zero or undefined for every policy: {}.", left_out.join(", ")));
    }
    if matches!(figures, Figures::Headline) {
        notes.push("--metrics picks other figures (summary.json's names), --metrics all shows every one.".into());
    }
    for n in notes {
        text.push_str(&n);
        text.push('\n');
    }
    text
}

/// The `[slo]` thresholds' verdicts per policy and how many failed.
pub struct Verdicts {
    pub text: String,
    pub failed: usize,
}

/// Judges every `[slo]` threshold on each policy's replications, as `faultline gate
/// --thresholds-only` does (the unfavourable bound of the clipped 95 % interval), and prints a
/// row per threshold, a column per policy: ✓ or ✗ and the value judged.
pub fn thresholds(slo: &SloChecks, policies: &[Policy]) -> Verdicts {
    if slo.thresholds.is_empty() && slo.regressions.is_empty() {
        return Verdicts { text: String::new(), failed: 0 };
    }
    let mut text = String::new();
    let mut failed = 0;
    let mut passed_per_policy = vec![0; policies.len()];
    if !slo.thresholds.is_empty() {
        let mut header = vec!["[slo] threshold".to_string()];
        header.extend(policies.iter().map(|p| p.name.to_string()));
        let mut table = Vec::new();
        for check in &slo.thresholds {
            let mut line = vec![said(check)];
            for (k, p) in policies.iter().enumerate() {
                let values: Vec<f64> =
                    p.replications.iter().map(|r| r.get(&check.metric).copied().unwrap_or(f64::NAN)).collect();
                let (verdict, _) = judge_threshold(check, &values);
                if verdict.pass {
                    passed_per_policy[k] += 1;
                } else {
                    failed += 1;
                }
                line.push(format!("{} {}", if verdict.pass { "✓" } else { "✗" }, human(verdict.judged)));
            }
            table.push(line);
        }
        text.push_str(&render(&header, &table));
        let counts: Vec<String> = policies
            .iter()
            .zip(&passed_per_policy)
            .map(|(p, n)| format!("{} {n} of {}", p.name, slo.thresholds.len()))
            .collect();
        text.push_str(&format!(
            "✓ passed, ✗ failed, beside the value judged: `<`/`<=` on the upper 95 % bound, `>`/`>=` on the lower, `==` on both, as `faultline gate` judges. Passed: {}.\n",
            counts.join(", ")
        ));
    }
    if !slo.regressions.is_empty() {
        let limits: Vec<String> = slo.regressions.iter().map(said).collect();
        text.push_str(&format!(
            "[slo.regression] {} compares two policies: `faultline gate --candidate P --baseline Q` judges it.\n",
            limits.join(", ")
        ));
    }
    Verdicts { text, failed }
}

/// Each `[slo]` threshold's verdict on one policy, for `run --format json`: the check as the
/// scenario writes it, whether it passed and the value judged (the unfavourable bound of the
/// clipped 95 % interval, as the table prints it; null where the metric is undefined).
pub fn threshold_verdicts(slo: &SloChecks, policy: &Policy) -> Vec<serde_json::Value> {
    slo.thresholds
        .iter()
        .map(|check| {
            let values: Vec<f64> =
                policy.replications.iter().map(|r| r.get(&check.metric).copied().unwrap_or(f64::NAN)).collect();
            let (verdict, _) = judge_threshold(check, &values);
            serde_json::json!({
                "threshold": said(check),
                "metric": check.metric,
                "expression": check.expression,
                "pass": verdict.pass,
                "judged": if verdict.judged.is_finite() { serde_json::json!(verdict.judged) } else { serde_json::Value::Null },
            })
        })
        .collect()
}

/// As the scenario file writes the check: `deadline_exceeded_ratio < 0.05`.
fn said(check: &Check) -> String {
    format!("{} {}", check.metric, check.expression)
}
