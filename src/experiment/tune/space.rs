//! The search space of `faultline tune`: one dimension per `--space PATH=RANGE`, and the
//! candidates that fill it (the whole grid when it is small, else a Latin hypercube drawn from
//! the tune's seed).

use crate::experiment::batch::grid::{Param, grid};
use crate::experiment::command::CommandError;
use crate::sim::rng::{StreamKey, stable_name_id};

/// What values one parameter may take.
#[derive(Debug, Clone, PartialEq)]
pub enum Range {
    /// `a,b,c`: these values, as written.
    List(Vec<String>),
    /// `lo..hi` or `lo..hi:step` with whole numbers: lo, lo + step, ... up to hi.
    Integers { low: i64, high: i64, step: i64 },
    /// `lo..hi` with a decimal point: any value in [lo, hi].
    Interval { low: f64, high: f64 },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Dimension {
    pub path: String,
    pub range: Range,
}

/// At most this many values in one integer range (a list of that size is a grid already).
const MAX_RANGE_VALUES: i64 = 10_000;

impl Dimension {
    /// The values of a discrete dimension, or None for an interval.
    pub fn values(&self) -> Option<Vec<String>> {
        match &self.range {
            Range::List(v) => Some(v.clone()),
            Range::Integers { low, high, step } => {
                Some((0..).map(|k| low + k * step).take_while(|v| v <= high).map(|v| v.to_string()).collect())
            }
            Range::Interval { .. } => None,
        }
    }

    /// The value at `x` in [0, 1): a discrete dimension's values are equal strata.
    fn at(&self, x: f64) -> String {
        match (&self.range, self.values()) {
            (Range::Interval { low, high }, _) => format_decimal(low + x * (high - low)),
            (_, Some(values)) => values[((x * values.len() as f64) as usize).min(values.len() - 1)].clone(),
            (_, None) => unreachable!("only an interval has no values"),
        }
    }
}

/// A decimal with six significant digits, as a scenario value (always with a point, so an
/// integer-looking draw stays a float).
pub fn format_decimal(x: f64) -> String {
    let digits = (6 - 1 - x.abs().max(1e-12).log10().floor() as i32).clamp(0, 12) as usize;
    let text = format!("{x:.digits$}");
    let text = if text.contains('.') { text.trim_end_matches('0').to_string() } else { text };
    if text.ends_with('.') { format!("{text}0") } else { text }
}

pub fn parse_dimension(argument: &str) -> Result<Dimension, CommandError> {
    let bad = |why: &str| CommandError::Input(format!("argument `--space {argument}`: {why}"));
    let (path, range) =
        argument.split_once('=').ok_or_else(|| bad("write PATH=RANGE, like policy.p.retry.max_attempts=1..5"))?;
    let (path, range) = (path.trim(), range.trim());
    if path.is_empty() || range.is_empty() {
        return Err(bad("write PATH=RANGE, like policy.p.retry.max_attempts=1..5"));
    }
    let range = match range.split_once("..") {
        None => {
            let values: Vec<String> = range.split(',').map(|v| v.trim().to_string()).collect();
            if values.iter().any(String::is_empty) {
                return Err(bad("a list has no empty values: a,b,c"));
            }
            if values.len() < 2 {
                return Err(bad("give at least two values (a,b) or a range (lo..hi)"));
            }
            Range::List(values)
        }
        Some((low, rest)) => {
            let (high, step) = match rest.split_once(':') {
                Some((h, s)) => (h.trim(), Some(s.trim())),
                None => (rest.trim(), None),
            };
            let low = low.trim();
            let integers = [low, high].iter().chain(step.iter()).all(|t| t.parse::<i64>().is_ok());
            if integers {
                let (l, h): (i64, i64) = (low.parse().unwrap_or(0), high.parse().unwrap_or(0));
                let s: i64 = step.map_or(Ok(1), str::parse).unwrap_or(0);
                if s <= 0 {
                    return Err(bad("the step of a range is a whole number above 0"));
                }
                if h <= l {
                    return Err(bad("a range goes from a low value to a higher one: lo..hi"));
                }
                if (h - l) / s + 1 > MAX_RANGE_VALUES {
                    return Err(bad(&format!("the range has more than {MAX_RANGE_VALUES} values; give a larger step")));
                }
                Range::Integers { low: l, high: h, step: s }
            } else {
                if step.is_some() {
                    return Err(bad(
                        "a step is for whole-number ranges; an interval of decimals is searched as a whole",
                    ));
                }
                let parse = |t: &str| t.parse::<f64>().ok().filter(|v| v.is_finite());
                let (Some(l), Some(h)) = (parse(low), parse(high)) else {
                    return Err(bad("a range is two numbers: lo..hi, lo..hi:step (whole numbers) or 0.5..2.0"));
                };
                if h <= l {
                    return Err(bad("a range goes from a low value to a higher one: lo..hi"));
                }
                Range::Interval { low: l, high: h }
            }
        }
    };
    Ok(Dimension { path: path.to_string(), range })
}

/// The candidates: every combination when the space is discrete and has at most `count` of
/// them; else `count` points of a Latin hypercube (each dimension cut into `count` equal
/// strata, each stratum used once, a point drawn within it), duplicates dropped.
pub fn candidates(dimensions: &[Dimension], count: usize, seed: u64) -> Vec<Vec<String>> {
    let discrete: Option<Vec<Vec<String>>> = dimensions.iter().map(Dimension::values).collect();
    if let Some(values) = &discrete {
        let size = values.iter().try_fold(1usize, |acc, v| acc.checked_mul(v.len()));
        if size.is_some_and(|s| s <= count) {
            let params: Vec<Param> =
                dimensions.iter().zip(values).map(|(d, v)| Param { path: d.path.clone(), values: v.clone() }).collect();
            return grid(&params);
        }
    }
    let key = StreamKey::root(seed).with(stable_name_id("tune.latin_hypercube"));
    let mut stream = key.stream();
    let mut columns: Vec<Vec<String>> = Vec::with_capacity(dimensions.len());
    for d in dimensions {
        let mut strata: Vec<usize> = (0..count).collect();
        // Fisher-Yates, from the tune's own stream.
        for i in (1..count).rev() {
            let j = ((stream.unit() * (i + 1) as f64) as usize).min(i);
            strata.swap(i, j);
        }
        columns.push(strata.iter().map(|&s| d.at((s as f64 + stream.unit()) / count as f64)).collect());
    }
    let mut out: Vec<Vec<String>> = Vec::with_capacity(count);
    for i in 0..count {
        let point: Vec<String> = columns.iter().map(|c| c[i].clone()).collect();
        if !out.contains(&point) {
            out.push(point);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_read_as_lists_integer_steps_and_intervals() {
        assert_eq!(parse_dimension("a.b=1,2,4").unwrap().values().unwrap(), ["1", "2", "4"]);
        assert_eq!(parse_dimension("a.b=0..10:5").unwrap().values().unwrap(), ["0", "5", "10"]);
        assert_eq!(parse_dimension("a.b=1..3").unwrap().values().unwrap(), ["1", "2", "3"]);
        assert_eq!(parse_dimension("a.b=0.5..2").unwrap().range, Range::Interval { low: 0.5, high: 2.0 });
        for bad in ["a.b", "a.b=", "a.b=3..1", "a.b=1..5:0", "a.b=0.5..2:0.1", "a.b=x..y", "a.b=1", "a.b=1,,2"] {
            assert!(parse_dimension(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_small_discrete_space_is_its_whole_grid_in_order() {
        let dims = [parse_dimension("x=0..2").unwrap(), parse_dimension("y=a,b").unwrap()];
        let c = candidates(&dims, 64, 1);
        assert_eq!(c.len(), 6);
        assert_eq!(c[0], ["0", "a"]);
        assert_eq!(c[5], ["2", "b"]);
    }

    /// Every stratum of every dimension is used exactly once, and the same seed gives the same
    /// points.
    #[test]
    fn a_latin_hypercube_covers_each_stratum_once() {
        let dims = [parse_dimension("x=0.0..1.0").unwrap(), parse_dimension("y=0.0..100.0").unwrap()];
        let c = candidates(&dims, 20, 7);
        assert_eq!(c.len(), 20);
        for (d, scale) in [(0, 1.0), (1, 100.0)] {
            let mut strata: Vec<usize> =
                c.iter().map(|p| (p[d].parse::<f64>().unwrap() / scale * 20.0) as usize).collect();
            strata.sort();
            assert_eq!(strata, (0..20).collect::<Vec<_>>(), "dimension {d}");
        }
        assert_eq!(c, candidates(&dims, 20, 7));
        assert_ne!(c, candidates(&dims, 20, 8));
    }
}
