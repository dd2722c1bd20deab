//! Loading a scenario with overrides, deriving replication seeds, and running a batch of
//! simulations in parallel with a progress bar.

use super::CommandError;
use crate::engine::{Model, Replication, SimError, simulate};
use crate::scenario::{Override, Scenario, ScenarioError, Source, apply_overrides, load_file, parse_source};
use crate::sim::StreamKey;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use std::path::Path;

/// Upper bound on simulations in one command: a typo in a grid should not run for a week.
pub const MAX_SIMULATIONS: usize = 1_000_000;

/// A scenario as the command sees it: the file with every override applied, and its model.
pub struct Loaded {
    pub model: Model,
    pub scenario: Scenario,
    pub source: Source,
}

pub fn load_model(path: &Path, overrides: &[Override]) -> Result<Loaded, ScenarioError> {
    let source = load_file(path)?;
    let (model, scenario) = compile_scenario(&source, overrides)?;
    Ok(Loaded { model, scenario, source })
}

pub fn compile_with(source: &Source, overrides: &[Override]) -> Result<Model, ScenarioError> {
    compile_scenario(source, overrides).map(|(model, _)| model)
}

/// Compiles the file with `overrides` applied; returns the model and the overridden scenario.
pub fn compile_scenario(source: &Source, overrides: &[Override]) -> Result<(Model, Scenario), ScenarioError> {
    // Parse the file on its own first so that its errors carry line and column.
    let original = parse_source(source)?;
    if overrides.is_empty() {
        return Model::compile(&original, source).map(|m| (m, original));
    }
    let scenario = apply_overrides(source, overrides)?;
    let model = Model::compile(&scenario, source).map_err(|e| {
        // The same error without the overrides is the file's; otherwise an override caused it
        // and the error must name the argument, not a line that holds another value.
        match Model::compile(&original, source) {
            Err(file_error) if file_error.field == e.field && file_error.message == e.message => e,
            _ => {
                let culprit = overrides.iter().rev().find(|o| overrides_field(o, &e.field)).or(overrides.last());
                match culprit {
                    Some(o) => ScenarioError::in_argument(&o.argument, &e.field, e.message),
                    None => e,
                }
            }
        }
    })?;
    Ok((model, scenario))
}

/// Whether an override's path (names or positions) plausibly addresses an error's field path
/// (positions only): compare the keys, ignoring array selectors.
fn overrides_field(o: &Override, field: &str) -> bool {
    let keys = |segments: Vec<&str>| {
        segments.into_iter().filter(|s| s.parse::<usize>().is_err()).map(str::to_string).collect::<Vec<_>>()
    };
    let field_keys: Vec<String> = field.split(['.', '[', ']']).filter(|s| !s.is_empty()).map(str::to_string).collect();
    let field_keys = keys(field_keys.iter().map(String::as_str).collect());
    let path: Vec<&str> = o.path.iter().map(String::as_str).collect();
    let last = path.last().copied().unwrap_or_default();
    path.first().is_some_and(|first| field_keys.first().is_some_and(|f| f == first))
        && field_keys.iter().any(|k| k == last)
}

/// The seed of replication `r`: derived from the scenario seed by a stable mix, the same for
/// every policy (common random numbers) and every grid point.
pub fn replication_seed(seed: u64, r: u32) -> u64 {
    StreamKey::root(seed).with(u64::from(r)).value()
}

/// One simulation to run: which model (grid point), policy and replication.
#[derive(Debug, Clone, Copy)]
pub struct Task {
    pub model: usize,
    pub policy: usize,
    pub replication: u32,
    pub seed: u64,
}

/// Runs every task on a pool of `jobs` threads; results come back in task order.
pub fn run_tasks(models: &[Model], tasks: &[Task], jobs: usize, label: &str) -> Result<Vec<Replication>, CommandError> {
    if tasks.len() > MAX_SIMULATIONS {
        return Err(CommandError::Input(format!(
            "{} simulations requested; the limit is {MAX_SIMULATIONS} (fewer grid points or replications)",
            tasks.len()
        )));
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .map_err(|e| CommandError::Io(format!("cannot start worker threads: {e}")))?;
    let progress = ProgressBar::with_draw_target(Some(tasks.len() as u64), ProgressDrawTarget::stderr());
    progress.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} simulations, {elapsed} elapsed, eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    progress.set_message(label.to_string());
    let results: Vec<Result<Replication, SimError>> = pool.install(|| {
        tasks
            .par_iter()
            .map(|t| {
                let r = simulate(&models[t.model], t.policy, t.seed);
                progress.inc(1);
                r
            })
            .collect()
    });
    progress.finish_and_clear();
    results.into_iter().map(|r| r.map_err(CommandError::from)).collect()
}

/// The default worker count: every core.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}
