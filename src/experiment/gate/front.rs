//! `gate --front FILE`: is the candidate still on the front a `faultline tune` found? It passes
//! when some front point is no better than the candidate by more than the tolerance on every
//! objective, each judged on the candidate's unfavourable 95 % bound (the lower bound of a
//! `max:` objective, the upper of a `min:`), as a share of that point's mean.

use crate::experiment::command::CommandError;
use crate::metrics::MetricMap;
use crate::metrics::stats::estimate;
use crate::scenario::{InputKind, read_input};
use std::path::Path;

/// The front of a tune, as front.json gives it.
pub struct Front {
    /// (metric, larger is better) per objective.
    pub objectives: Vec<(String, bool)>,
    /// Per front point: its candidate number and its mean per objective.
    pub points: Vec<(u64, Vec<f64>)>,
}

/// How far the candidate is from the front: the nearest point and the candidate's worst
/// shortfall against it, as a fraction of that point's value (0 or below: no shortfall).
pub struct Distance {
    pub point: u64,
    pub judged: f64,
    pub at_means: f64,
}

/// A tune's front.json under the reading rule: a front of ten thousand points is a few MiB.
pub const FRONT_FILES: InputKind = InputKind { plural: "front files", max_bytes: 64 << 20, advice: "" };

pub fn read_front(path: &Path) -> Result<Front, CommandError> {
    let bad = |why: String| CommandError::Input(format!("argument `--front {}`: {why}", path.display()));
    let bytes = read_input(path, FRONT_FILES).map_err(|r| bad(r.to_string()))?;
    let doc: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| bad(format!("not a tune's front.json: {e}")))?;
    let objectives: Vec<(String, bool)> = doc["objectives"]
        .as_array()
        .ok_or_else(|| bad("no `objectives` list: give the front.json a `faultline tune` wrote".into()))?
        .iter()
        .map(|o| match o.as_str().and_then(|s| s.split_once(':')) {
            Some(("max", m)) => Ok((m.to_string(), true)),
            Some(("min", m)) => Ok((m.to_string(), false)),
            _ => Err(bad(format!("objective {o} is neither max:METRIC nor min:METRIC"))),
        })
        .collect::<Result<_, _>>()?;
    if objectives.is_empty() {
        // With nothing to compare, every candidate would be on the front: the gate would pass
        // vacuously.
        return Err(bad(
            "its `objectives` list is empty, so no candidate could be judged against the front: give the front.json a `faultline tune` wrote".into(),
        ));
    }
    let points = doc["front"]
        .as_array()
        .ok_or_else(|| bad("no `front` list".into()))?
        .iter()
        .map(|p| {
            let means =
                objectives.iter().map(|(m, _)| p["objectives"][m]["mean"].as_f64().unwrap_or(f64::NAN)).collect();
            (p["candidate"].as_u64().unwrap_or(0), means)
        })
        .collect::<Vec<_>>();
    if points.is_empty() {
        return Err(bad("its front is empty: the tune found no feasible candidate".into()));
    }
    Ok(Front { objectives, points })
}

/// The candidate's distance from the front over its replications.
pub fn distance(front: &Front, runs: &[MetricMap]) -> Distance {
    let judged_and_mean: Vec<(f64, f64)> = front
        .objectives
        .iter()
        .map(|(m, larger_better)| {
            let e = estimate(runs.iter().map(|r| r.get(m).copied().unwrap_or(f64::NAN)));
            let bound = match (larger_better, e.low.is_nan()) {
                (_, true) => e.mean,
                (true, false) => e.low,
                (false, false) => e.high,
            };
            (bound, e.mean)
        })
        .collect();
    let shortfall = |value: f64, target: f64, larger_better: bool| {
        let gap = if larger_better { target - value } else { value - target };
        gap / target.abs().max(f64::MIN_POSITIVE)
    };
    let worst = |point: &[f64], pick: fn(&(f64, f64)) -> f64| -> f64 {
        front
            .objectives
            .iter()
            .zip(point)
            .zip(&judged_and_mean)
            .map(|(((_, larger), target), v)| shortfall(pick(v), *target, *larger))
            .fold(f64::NEG_INFINITY, |a, b| if b.is_nan() || a.is_nan() { f64::NAN } else { a.max(b) })
    };
    front
        .points
        .iter()
        .map(|(id, point)| Distance { point: *id, judged: worst(point, |v| v.0), at_means: worst(point, |v| v.1) })
        .min_by(|a, b| a.judged.total_cmp(&b.judged))
        .expect("a front has points")
}
