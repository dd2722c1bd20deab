//! What `compare` puts side by side: the policies (those both folders hold, or those named) and
//! the metrics (the headline figures README quotes, or those named with `--metrics`).

use super::saved::{SavedPolicy, SavedRun};
use crate::experiment::command::CommandError;
use crate::scenario::{name_hint, quote};

/// The default figures, in this order: those README's tables quote, whole-run then during the
/// incident (`incident.*`). A policy shows those both folders hold and that are neither 0 nor
/// undefined on both sides (a scenario without costs or faults keeps a short table).
pub const DEFAULT_METRICS: [&str; 19] = [
    "auto_completion_ratio",
    "safe_outcome_ratio",
    "deadline_exceeded_ratio",
    "retry_amplification_ratio",
    "cost_per_success",
    "cost_money_per_success",
    "run_latency_ms.p50",
    "run_latency_ms.p95",
    "run_latency_ms.p99",
    "duplicate_effect_total",
    "orphan_task_total",
    "recovery_time_s",
    "recovery_never_total",
    "incident.auto_completion_ratio",
    "incident.safe_outcome_ratio",
    "incident.deadline_exceeded_ratio",
    "incident.retry_amplification_ratio",
    "incident.cost_per_success",
    "incident.duplicate_effect_run_total",
];

/// The policies to compare, in A's order, and those only one folder holds (left out, said).
pub struct Policies {
    pub compared: Vec<String>,
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
}

/// `requested` empty: every policy both hold. Otherwise each named one, which both must hold.
pub fn policies(a: &SavedRun, b: &SavedRun, requested: &[String]) -> Result<Policies, CommandError> {
    let in_b = |p: &String| b.policies.contains(p);
    let in_a = |p: &String| a.policies.contains(p);
    let only_a: Vec<String> = a.policies.iter().filter(|p| !in_b(p)).cloned().collect();
    let only_b: Vec<String> = b.policies.iter().filter(|p| !in_a(p)).cloned().collect();
    if requested.is_empty() {
        let compared: Vec<String> = a.policies.iter().filter(|p| in_b(p)).cloned().collect();
        if compared.is_empty() {
            return Err(CommandError::Input(format!(
                "{} holds policies {} and {} holds {}: none in both; name one of each with --policy to compare two \
                 different policies, or compare folders of the same policies",
                a.folder.display(),
                a.policies.join(", "),
                b.folder.display(),
                b.policies.join(", ")
            )));
        }
        return Ok(Policies { compared, only_a, only_b });
    }
    let mut compared = Vec::new();
    for p in requested {
        for side in [a, b] {
            if !side.policies.contains(p) {
                return Err(CommandError::Input(format!(
                    "argument `--policy {p}`: {} holds no policy {} (its manifest.json lists {}){}",
                    side.folder.display(),
                    quote(p),
                    side.policies.join(", "),
                    name_hint(p, &side.policies)
                )));
            }
        }
        if !compared.contains(p) {
            compared.push(p.clone());
        }
    }
    Ok(Policies { compared, only_a, only_b })
}

/// The metrics of one policy: `requested` (each must be in both sides' files), or the defaults
/// that both hold and that are not 0 or undefined on both sides.
pub fn metrics(a: &SavedPolicy, b: &SavedPolicy, requested: &[String]) -> Result<Vec<String>, CommandError> {
    if requested.is_empty() {
        let shown = |m: &str| {
            let nothing = |p: &SavedPolicy| p.means.get(m).is_none_or(|v| *v == 0.0 || v.is_nan());
            a.has(m) && b.has(m) && !(nothing(a) && nothing(b))
        };
        return Ok(DEFAULT_METRICS.iter().filter(|m| shown(m)).map(|m| m.to_string()).collect());
    }
    let mut chosen: Vec<String> = Vec::new();
    for m in requested {
        let m = m.trim();
        if m.is_empty() {
            return Err(CommandError::Input(
                "argument `--metrics`: an empty name; give metric names separated by commas".into(),
            ));
        }
        for side in [a, b] {
            if !side.means.contains_key(m) {
                return Err(CommandError::Input(format!(
                    "argument `--metrics {m}`: {} has no metric {}{}; docs/metrics.md lists them",
                    side.summary_path.display(),
                    quote(m),
                    name_hint(m, &side.names())
                )));
            }
        }
        if !chosen.iter().any(|c| c == m) {
            chosen.push(m.to_string());
        }
    }
    Ok(chosen)
}
