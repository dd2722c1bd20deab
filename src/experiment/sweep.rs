//! `faultline sweep`: the cross product of parameter values, every point x policy x replication
//! in parallel, one row per (point, policy) with each metric's mean and 95 % interval.

use super::CommandError;
use super::batch::{Task, check_batch_size, compile_scenario, replication_seed, run_tasks};
use super::output::{OutputSet, VERSION, estimate_cells, estimate_columns, number};
use super::run::{aggregate_replications, apply_seed, collect_overrides, select_policies};
use super::slo::compile_slo_with;
use crate::engine::Model;
use crate::metrics::stats::Aggregate;
use crate::scenario::{Override, ScenarioError, canonical_path, load_file, parse_override};
use crate::world::model::MAX_TIMESERIES_CELLS;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// The largest grid a sweep accepts.
pub const MAX_GRID_POINTS: usize = 10_000;

#[derive(Debug, Clone)]
pub struct SweepOptions {
    pub scenario: PathBuf,
    pub params: Vec<String>,
    pub policies: Vec<String>,
    pub seed: Option<u64>,
    pub replications: Option<u32>,
    pub sets: Vec<String>,
    pub jobs: usize,
    pub out: Option<PathBuf>,
}

/// A swept parameter: its path and the raw values, in the order given.
#[derive(Debug, Clone)]
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
pub fn grid(params: &[Param]) -> Vec<Vec<String>> {
    params.iter().fold(vec![Vec::new()], |points, p| {
        points
            .iter()
            .flat_map(|point| p.values.iter().map(move |v| [point.clone(), vec![v.clone()]].concat()))
            .collect()
    })
}

pub fn sweep(opts: &SweepOptions) -> Result<String, CommandError> {
    if opts.params.is_empty() {
        return Err(CommandError::Input("sweep needs at least one --param path=v1,v2,...".into()));
    }
    let params: Vec<Param> = opts.params.iter().map(|p| parse_param(p)).collect::<Result<_, _>>()?;
    let source = load_file(&opts.scenario)?;
    let canonical: Vec<String> = params
        .iter()
        .map(|p| canonical_path(&source, &p.path.split('.').map(str::to_string).collect::<Vec<_>>()))
        .collect();
    if let Some((i, _)) = canonical.iter().enumerate().find(|(i, c)| canonical[..*i].contains(c)) {
        return Err(CommandError::Input(format!(
            "argument `--param {}`: the field {} is swept twice",
            opts.params[i], canonical[i]
        )));
    }
    let size: usize =
        params.iter().map(|p| p.values.len()).try_fold(1usize, |acc, n| acc.checked_mul(n)).unwrap_or(usize::MAX);
    if size > MAX_GRID_POINTS {
        let sizes: Vec<String> =
            params.iter().map(|p| format!("--param {} ({} values)", p.path, p.values.len())).collect();
        return Err(CommandError::Input(format!(
            "{}: the grid has {size} points; the limit is {MAX_GRID_POINTS}",
            sizes.join(" x ")
        )));
    }
    let base = collect_overrides(&opts.sets, opts.replications)?;
    let points = grid(&params);
    let mut models: Vec<Model> = Vec::with_capacity(points.len());
    for point in &points {
        let mut overrides: Vec<Override> = base.clone();
        for (p, v) in params.iter().zip(point) {
            let mut o = parse_override(&format!("{}={v}", p.path))?;
            o.argument = format!("--param {}={}", p.path, p.values.join(","));
            overrides.push(o);
        }
        let (mut model, scenario) = compile_scenario(&source, &overrides)?;
        // The same checks as run and gate, so a scenario a sweep accepts can be gated.
        compile_slo_with(scenario.slo.as_ref(), &model, &source, &overrides)?;
        apply_seed(&mut model, opts.seed, &overrides);
        models.push(model);
    }
    let policies = select_policies(&models[0], &opts.policies, "--policy")?;
    let per_point = policies.len().checked_mul(models[0].world.replications as usize);
    check_batch_size(per_point.and_then(|n| n.checked_mul(models.len())))?;
    // Each point is within the time-series bound on its own; the sweep holds them all.
    let cells: u128 = models.iter().map(|m| m.timeseries_size().cells()).sum();
    if cells > MAX_TIMESERIES_CELLS {
        return Err(CommandError::Input(format!(
            "{} grid points would hold {cells} time-series cells in all (windows x columns x replications, summed over the points); the limit is {MAX_TIMESERIES_CELLS} (fewer points or replications, or a wider simulation.timeseries_window_s)",
            models.len()
        )));
    }
    let mut tasks = Vec::new();
    for (m, model) in models.iter().enumerate() {
        for &policy in &policies {
            for r in 0..model.world.replications {
                tasks.push(Task { model: m, policy, replication: r, seed: replication_seed(model.world.seed, r) });
            }
        }
    }
    let describe = |t: &Task| {
        let point: Vec<String> = params.iter().zip(&points[t.model]).map(|(p, v)| format!("{}={v}", p.path)).collect();
        format!("grid point {}, ", point.join(" "))
    };
    let results = run_tasks(&models, &tasks, opts.jobs, &models[0].name, &describe)?;
    let mut cursor = 0;
    let mut rows: Vec<(usize, usize, Aggregate)> = Vec::new();
    for (m, model) in models.iter().enumerate() {
        for &policy in &policies {
            let n = model.world.replications as usize;
            rows.push((m, policy, aggregate_replications(&results[cursor..cursor + n])));
            cursor += n;
        }
    }

    // Every point's metrics: a parameter may rename a dependency or a step.
    let metric_names: Vec<String> =
        models.iter().flat_map(|m| m.metric_names()).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
    let out_dir = opts.out.clone().unwrap_or_else(|| Path::new("results").join(format!("{}-sweep", models[0].name)));
    let mut files = OutputSet::default();
    files.add(out_dir.join("sweep.csv"), sweep_csv(&params, &points, &models, &rows, &metric_names));
    files.add(out_dir.join("sweep.json"), sweep_json(&params, &points, &models, &rows));
    let written: Vec<String> = files.paths().map(|p| p.display().to_string()).collect();
    files.commit()?;
    Ok(format!(
        "{}: {} grid point(s) x {} polic{} x {} replication(s) = {} simulations\nwrote {}\n",
        models[0].name,
        points.len(),
        policies.len(),
        if policies.len() == 1 { "y" } else { "ies" },
        models[0].world.replications,
        tasks.len(),
        written.join(", ")
    ))
}

fn sweep_csv(
    params: &[Param],
    points: &[Vec<String>],
    models: &[Model],
    rows: &[(usize, usize, Aggregate)],
    metrics: &[String],
) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = params.iter().map(|p| p.path.clone()).collect();
    header.push("policy".into());
    header.push("replications".into());
    for m in metrics {
        header.extend(estimate_columns(m));
    }
    w.write_record(&header).expect("writing to memory cannot fail");
    for (m, policy, agg) in rows {
        let mut record: Vec<String> = points[*m].iter().map(|v| csv_value(v)).collect();
        record.push(models[*m].policies[*policy].name.clone());
        record.push(number(agg.replications as f64));
        for name in metrics {
            record.extend(estimate_cells(agg.estimates.get(name)));
        }
        w.write_record(&record).expect("writing to memory cannot fail");
    }
    w.into_inner().expect("flushing memory cannot fail")
}

fn sweep_json(
    params: &[Param],
    points: &[Vec<String>],
    models: &[Model],
    rows: &[(usize, usize, Aggregate)],
) -> Vec<u8> {
    let json_rows: Vec<Value> = rows
        .iter()
        .map(|(m, policy, agg)| {
            let mut point = Map::new();
            for (p, v) in params.iter().zip(&points[*m]) {
                point.insert(p.path.clone(), json_value(v));
            }
            let metrics: Map<String, Value> = agg.estimates.iter().map(|(k, e)| (k.clone(), json!(e.mean))).collect();
            let ci95: Map<String, Value> =
                agg.estimates.iter().map(|(k, e)| (k.clone(), json!([e.low, e.high]))).collect();
            json!({
                "params": point,
                "policy": models[*m].policies[*policy].name,
                "seed": models[*m].world.seed,
                "replications": agg.replications,
                "metrics": metrics,
                "ci95": ci95,
            })
        })
        .collect();
    let doc = json!({
        "scenario": models[0].name,
        "version": VERSION,
        "seed": models[0].world.seed,
        "params": params.iter().map(|p| p.path.clone()).collect::<Vec<_>>(),
        "rows": json_rows,
    });
    let mut text = serde_json::to_string_pretty(&doc).expect("a sweep always serializes");
    text.push('\n');
    text.into_bytes()
}

/// A parameter value as the scenario reads it (`1_000` is 1000), so CSV columns stay numeric.
fn csv_value(raw: &str) -> String {
    match json_value(raw) {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

/// A parameter value as typed JSON: numbers and booleans stay numbers and booleans.
fn json_value(raw: &str) -> Value {
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
