//! New candidates near the front, generation after generation: each child is a front point
//! with every dimension nudged, a Gaussian step in an interval (a tenth of its width, halved
//! each generation, as NSGA-II's mutation narrows around good points) and a step to a
//! neighbouring value in a list or a whole-number range, with probability one half. Drawn from
//! a stream of the tune's seed and the generation, so the same seed gives the same children.

use super::space::{Dimension, Range, format_decimal};
use crate::sim::rng::{StreamKey, stable_name_id};

/// A standard normal draw (Box-Muller) from two uniform draws in (0, 1].
fn normal(u1: f64, u2: f64) -> f64 {
    (-2.0 * u1.max(f64::MIN_POSITIVE).ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Up to `count` children of the `parents` (taken in turn) in `generation` (1 for the first),
/// none equal to a candidate in `existing` or to another child.
pub fn children(
    dimensions: &[Dimension],
    parents: &[Vec<String>],
    existing: &[Vec<String>],
    count: usize,
    generation: u32,
    seed: u64,
) -> Vec<Vec<String>> {
    let mut stream = StreamKey::root(seed).with(stable_name_id("tune.generation")).with(u64::from(generation)).stream();
    let mut out: Vec<Vec<String>> = Vec::new();
    if parents.is_empty() {
        return out;
    }
    let scale = 0.1 / f64::from(1u32 << generation.saturating_sub(1).min(20));
    for attempt in 0..count * 8 {
        if out.len() == count {
            break;
        }
        let parent = &parents[attempt % parents.len()];
        let child: Vec<String> = dimensions
            .iter()
            .zip(parent)
            .map(|(d, v)| match &d.range {
                Range::Interval { low, high } => {
                    let x = v.parse::<f64>().unwrap_or(*low);
                    let step = normal(stream.unit(), stream.unit()) * scale * (high - low);
                    format_decimal((x + step).clamp(*low, *high))
                }
                Range::List(_) | Range::Integers { .. } => {
                    let values = d.values().unwrap_or_default();
                    let at = values.iter().position(|w| w == v).unwrap_or(0);
                    let (move_it, up) = (stream.unit() < 0.5, stream.unit() < 0.5);
                    let to = match (move_it, up) {
                        (false, _) => at,
                        (true, true) => (at + 1).min(values.len().saturating_sub(1)),
                        (true, false) => at.saturating_sub(1),
                    };
                    values.get(to).cloned().unwrap_or_else(|| v.clone())
                }
            })
            .collect();
        if !existing.contains(&child) && !out.contains(&child) {
            out.push(child);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::tune::space::parse_dimension;

    /// Children stay inside the space, near their parents, differ from every candidate, and
    /// come out the same for the same seed.
    #[test]
    fn children_are_new_points_near_the_front_inside_the_space() {
        let dims = [parse_dimension("x=0.0..100.0").unwrap(), parse_dimension("n=1..5").unwrap()];
        let parents = vec![vec!["50.0".to_string(), "3".to_string()]];
        let kids = children(&dims, &parents, &parents, 10, 1, 7);
        assert_eq!(kids.len(), 10);
        for k in &kids {
            let x: f64 = k[0].parse().unwrap();
            let n: i64 = k[1].parse().unwrap();
            assert!((0.0..=100.0).contains(&x) && (2..=4).contains(&n), "{k:?}");
            assert!((x - 50.0).abs() < 50.0, "{k:?}");
            assert_ne!(k, &parents[0]);
        }
        assert_eq!(kids, children(&dims, &parents, &parents, 10, 1, 7));
        // A later generation steps less far: the mean distance shrinks.
        let spread = |g: u32| -> f64 {
            let kids = children(&dims, &parents, &parents, 40, g, 3);
            kids.iter().map(|k| (k[0].parse::<f64>().unwrap() - 50.0).abs()).sum::<f64>() / kids.len() as f64
        };
        assert!(spread(3) < spread(1), "{} vs {}", spread(3), spread(1));
    }
}
