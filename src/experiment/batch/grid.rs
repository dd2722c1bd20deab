//! A sweep's grid: the swept parameters, their cross product in order, the values as the files
//! write them, and the layout every file and shard of one sweep shares.

use crate::scenario::ScenarioError;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The largest grid a sweep accepts.
pub const MAX_GRID_POINTS: usize = 10_000;

/// A swept parameter: its path and the raw values, in the order given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Param {
    pub path: String,
    pub values: Vec<String>,
}

pub fn parse_param(argument: &str) -> Result<Param, ScenarioError> {
    let bad = |m: &str| ScenarioError::in_argument(&format!("--param {argument}"), "", m);
    let (path, values) = argument.split_once('=').ok_or_else(|| bad("expected path=v1,v2,..."))?;
    let path = path.trim();
    if path.is_empty() || path.split('.').any(|s| s.trim().is_empty()) {
        return Err(bad("the path is empty or has an empty segment"));
    }
    let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
    if values.iter().any(|v| v.is_empty()) {
        return Err(bad("a value is empty (values are separated by commas)"));
    }
    Ok(Param { path: path.to_string(), values })
}

/// Every combination, the first parameter varying slowest.
/// The first of `paths` that names a field an earlier one already names (elements of arrays by
/// name or position alike), with that field's canonical path.
pub fn repeated_field(source: &crate::scenario::Source, paths: &[&str]) -> Option<(usize, String)> {
    let canonical: Vec<String> = paths
        .iter()
        .map(|p| crate::scenario::canonical_path(source, &p.split('.').map(str::to_string).collect::<Vec<_>>()))
        .collect();
    canonical.iter().enumerate().find(|(i, c)| canonical[..*i].contains(c)).map(|(i, c)| (i, c.clone()))
}

pub fn grid(params: &[Param]) -> Vec<Vec<String>> {
    params.iter().fold(vec![Vec::new()], |points, p| {
        points
            .iter()
            .flat_map(|point| p.values.iter().map(move |v| [point.clone(), vec![v.clone()]].concat()))
            .collect()
    })
}

/// What the files need besides the points: the same for every shard of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepLayout {
    pub scenario: String,
    pub seed: u64,
    pub params: Vec<Param>,
    /// Every metric any point reports, in column order.
    pub metric_names: Vec<String>,
    pub points: usize,
}

/// A parameter value as the scenario reads it (`1_000` is 1000), so CSV columns stay numeric.
pub fn csv_value(raw: &str) -> String {
    match json_value(raw) {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

/// A parameter value as typed JSON: numbers and booleans stay numbers and booleans.
pub fn json_value(raw: &str) -> Value {
    match crate::scenario::overrides::parse_value(raw) {
        toml::Value::Integer(i) => json!(i),
        toml::Value::Float(f) => json!(f),
        toml::Value::Boolean(b) => json!(b),
        toml::Value::String(s) => json!(s),
        _ => json!(raw),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_are_cross_products_in_order() {
        let params = vec![parse_param("a=1,2").unwrap(), parse_param("b=x,y,z").unwrap()];
        let g = grid(&params);
        assert_eq!(g.len(), 6);
        assert_eq!(g[0], vec!["1", "x"]);
        assert_eq!(g[1], vec!["1", "y"]);
        assert_eq!(g[5], vec!["2", "z"]);
        assert!(parse_param("a=").is_err());
        assert!(parse_param("a=1,,2").is_err());
        assert!(parse_param("novalues").is_err());
    }
}
