//! `faultline sweep`: the cross product of parameter values, every point x policy x replication
//! in parallel, one row per (point, policy) with each metric's mean and 95 % interval.

pub mod checkpoint;
pub mod files;
pub mod shard;

use crate::engine::Model;
use crate::experiment::batch::grid::{MAX_GRID_POINTS, Param, SweepLayout, grid, parse_param, repeated_field};
use crate::experiment::batch::load::{apply_seed, collect_overrides, compile_scenario, select_policies};
use crate::experiment::batch::slo::compile_slo_with;
use crate::experiment::batch::workers::{Task, Workers, check_batch_size, replication_seed};
use crate::experiment::command::CommandError;
use crate::experiment::output::folder::{OutputFolder, OutputLock, checkpoint_folder};
use crate::experiment::output::formats::VERSION;
use crate::metrics::stats::aggregate;
use crate::scenario::{Override, ScenarioInput, Source, parse_override, parse_source, sample_files};
use checkpoint::{Checkpoint, PointRecord, PolicyRecord, Resumed, SweepKey, build_id};
use files::{SweepView, write_sweep_files, write_sweep_tables};
use rayon::prelude::*;
use shard::{Shard, ShardHeader, write_shard};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Debug, Clone)]
pub struct SweepOptions {
    pub scenario: ScenarioInput,
    pub params: Vec<String>,
    pub policies: Vec<String>,
    pub seed: Option<u64>,
    pub replications: Option<u32>,
    pub sets: Vec<String>,
    pub jobs: usize,
    pub out: Option<PathBuf>,
    /// Continue from the checkpoint a killed sweep left.
    pub resume: bool,
    /// Compute one shard and write a shard file instead of the sweep's files.
    pub shard: Option<Shard>,
    pub view: SweepView,
}

/// A grid point as planned: its parameter values, its overrides and its replication count.
pub struct PlannedPoint {
    pub values: Vec<String>,
    pub overrides: Vec<Override>,
    pub replications: u32,
}

/// Everything about a sweep but its simulations: checked, compiled once and then dropped, so
/// memory does not grow with the models.
pub struct SweepPlan {
    pub key: SweepKey,
    pub layout: SweepLayout,
    pub points: Vec<PlannedPoint>,
    pub policies: Vec<usize>,
    pub seed: Option<u64>,
    pub source: Source,
    /// What the guards' sliding windows take in one simulation, at the hungriest point.
    pub guard_window_bytes: u64,
}

impl SweepPlan {
    pub fn simulations(&self, point: usize) -> usize {
        self.policies.len() * self.points[point].replications as usize
    }

    fn compile(&self, point: usize) -> Result<Model, CommandError> {
        let (mut model, _) = compile_scenario(&self.source, &self.points[point].overrides)?;
        apply_seed(&mut model, self.seed, &self.points[point].overrides);
        Ok(model)
    }
}

/// The scenario file and the `--param` arguments as a grid: each field swept once, and a grid
/// within the limit.
fn read_grid(opts: &SweepOptions) -> Result<(Source, Vec<Param>), CommandError> {
    if opts.params.is_empty() {
        return Err(CommandError::Input("sweep needs at least one --param path=v1,v2,...".into()));
    }
    let params: Vec<Param> = opts.params.iter().map(|p| parse_param(p)).collect::<Result<_, _>>()?;
    let source = opts.scenario.load()?;
    let paths: Vec<&str> = params.iter().map(|p| p.path.as_str()).collect();
    if let Some((i, field)) = repeated_field(&source, &paths) {
        return Err(CommandError::Input(format!(
            "argument `--param {}`: the field {field} is swept twice",
            opts.params[i]
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
    Ok((source, params))
}

/// What checking a point keeps: its replications, its metric names, its guard window bytes,
/// the samples files it reads.
type CheckedPoint = (u32, Vec<String>, u64, Vec<String>);

/// What checking every point found: the metric names, the largest guard window memory, the
/// samples files.
type CheckedGrid = (Vec<String>, u64, Vec<String>);

/// Compiles each point once, in parallel, with the same checks as run and gate (so a scenario
/// a sweep accepts can be gated); keeps each point's replication count and returns every
/// metric any point reports, the largest guard window memory and every samples file read,
/// the models dropped.
fn check_points(source: &Source, points: &mut [PlannedPoint], workers: &Workers) -> Result<CheckedGrid, CommandError> {
    let checked: Vec<Result<CheckedPoint, CommandError>> = workers.install(|| {
        points
            .par_iter()
            .map(|p| {
                let (model, scenario) = compile_scenario(source, &p.overrides)?;
                compile_slo_with(scenario.slo.as_ref(), &model, source, &p.overrides)?;
                let files = sample_files(&scenario);
                Ok((model.world.replications, model.metric_names(), model.guard_window_bytes(), files))
            })
            .collect()
    });
    let mut metric_names = std::collections::BTreeSet::new();
    let mut window_bytes = 0;
    let mut files = std::collections::BTreeSet::new();
    for (point, result) in points.iter_mut().zip(checked) {
        let (replications, names, bytes, point_files) = result?;
        point.replications = replications;
        metric_names.extend(names);
        window_bytes = window_bytes.max(bytes);
        files.extend(point_files);
    }
    Ok((metric_names.into_iter().collect(), window_bytes, files.into_iter().collect()))
}

/// Checks every grid point (parse, compile, SLO) before anything runs.
pub fn plan(opts: &SweepOptions, workers: &Workers) -> Result<SweepPlan, CommandError> {
    let (source, params) = read_grid(opts)?;
    let base = collect_overrides(&opts.sets, opts.replications)?;
    let grid = grid(&params);
    let mut points = Vec::with_capacity(grid.len());
    for values in grid {
        let mut overrides: Vec<Override> = base.clone();
        for (p, v) in params.iter().zip(&values) {
            let mut o = parse_override(&format!("{}={v}", p.path))?;
            o.argument = format!("--param {}={}", p.path, p.values.join(","));
            overrides.push(o);
        }
        points.push(PlannedPoint { values, overrides, replications: 0 });
    }
    let (metric_names, guard_window_bytes, files) = check_points(&source, &mut points, workers)?;
    let first = {
        let (mut model, _) = compile_scenario(&source, &points[0].overrides)?;
        apply_seed(&mut model, opts.seed, &points[0].overrides);
        model
    };
    let policies = select_policies(&first, &opts.policies, "--policy")?;
    let total = points.iter().try_fold(0usize, |acc, p| acc.checked_add(policies.len() * p.replications as usize));
    check_batch_size(total)?;
    let key = SweepKey {
        version: VERSION.to_string(),
        build: build_id(),
        scenario: serde_json::to_string(&parse_source(&source)?).expect("a scenario always serializes"),
        sets: opts.sets.clone(),
        params: params.iter().map(|p| format!("{}={}", p.path, p.values.join(","))).collect(),
        policies: policies.iter().map(|&p| first.policies[p].name.clone()).collect(),
        seed: opts.seed,
        replications: opts.replications,
        files,
    };
    let layout = SweepLayout {
        scenario: first.name.clone(),
        seed: first.world.seed,
        params,
        metric_names,
        points: points.len(),
    };
    Ok(SweepPlan { key, layout, points, policies, seed: opts.seed, source, guard_window_bytes })
}

/// Runs the points in `todo` in parallel (a point's replications in parallel too), reduces each
/// point as soon as its replications finish and hands the record to `done` (on a worker
/// thread, in completion order: records are stored per point and read back in grid order).
/// A failure reports the lowest failing point's lowest failing simulation, whatever the thread
/// count; points after it are skipped.
fn compute_points(
    plan: &SweepPlan,
    todo: &[usize],
    workers: &Workers,
    done: &(dyn Fn(PointRecord) -> Result<(), CommandError> + Sync),
) -> Result<(), CommandError> {
    let lowest_failure = AtomicUsize::new(usize::MAX);
    let failures: Mutex<Vec<(usize, CommandError)>> = Mutex::new(Vec::new());
    workers.install(|| {
        todo.par_iter().for_each(|&point| {
            if point > lowest_failure.load(Ordering::Relaxed) {
                return;
            }
            if let Err(e) = compute_point(plan, point, workers).and_then(done) {
                lowest_failure.fetch_min(point, Ordering::Relaxed);
                failures.lock().unwrap_or_else(|p| p.into_inner()).push((point, e));
            }
        })
    });
    let failures = failures.into_inner().unwrap_or_else(|p| p.into_inner());
    match failures.into_iter().min_by_key(|(point, _)| *point) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

fn compute_point(plan: &SweepPlan, point: usize, workers: &Workers) -> Result<PointRecord, CommandError> {
    let model = plan.compile(point)?;
    let replications = model.world.replications;
    let tasks: Vec<Task> = plan
        .policies
        .iter()
        .flat_map(|&policy| {
            (0..replications).map(move |r| Task {
                model: 0,
                policy,
                replication: r,
                seed: replication_seed(model.world.seed, r),
            })
        })
        .collect();
    let describe = |_: &Task| {
        let values = &plan.points[point].values;
        let point: Vec<String> =
            plan.layout.params.iter().zip(values).map(|(p, v)| format!("{}={v}", p.path)).collect();
        format!("grid point {}, ", point.join(" "))
    };
    let maps = workers.simulate(std::slice::from_ref(&model), &tasks, &describe, &|_, r| r.metrics)?;
    let rows = plan
        .policies
        .iter()
        .zip(maps.chunks(replications.max(1) as usize))
        .map(|(&policy, reps)| PolicyRecord::new(&model.policies[policy].name, &aggregate(reps)))
        .collect();
    Ok(PointRecord::new(point, model.world.seed, rows))
}

pub fn sweep(opts: &SweepOptions) -> Result<String, CommandError> {
    let mut workers = Workers::start(opts.jobs, 0, "checking the grid")?;
    let plan = plan(opts, &workers)?;
    workers.fit_guard_windows(plan.guard_window_bytes)?;
    let key = opts.view.key_metrics(&plan.layout)?;
    let name = plan.layout.scenario.clone();
    let owned: Vec<usize> = (0..plan.points.len()).filter(|&p| opts.shard.is_none_or(|s| s.owns(p))).collect();
    let out_dir = opts.out.clone().unwrap_or_else(|| {
        let suffix = if opts.shard.is_some() { "shards" } else { "sweep" };
        Path::new("results").join(format!("{name}-{suffix}"))
    });
    // A foreign --out is refused before anything is computed.
    // One writer per output: shard K's file (shards of one sweep run side by side in one
    // folder), or the whole folder, locked before its checkpoint is read.
    let (folder, checkpoint_dir, _shard_lock) = match opts.shard {
        Some(shard) => {
            let lock = OutputLock::take(&out_dir.join(shard.file_name()))?;
            (None, out_dir.join(format!(".{}.faultline-checkpoint", shard.file_name())), Some(lock))
        }
        None => {
            let folder = OutputFolder::create(&out_dir)?;
            let dir = checkpoint_folder(folder.target());
            (Some(folder), dir, None)
        }
    };
    let (checkpoint, resumed, done) = Checkpoint::open(&checkpoint_dir, &plan.key, opts.resume, &owned)?;
    let todo: Vec<usize> = owned.iter().zip(&done).filter(|(_, d)| !**d).map(|(p, _)| *p).collect();
    let simulations: usize = todo.iter().map(|&p| plan.simulations(p)).sum();
    workers.set_total(simulations as u64, &name);
    compute_points(&plan, &todo, &workers, &|record| checkpoint.save(&record))?;
    workers.finish();

    let (written, digest) = match (opts.shard, folder) {
        (Some(shard), _) => {
            let path = out_dir.join(shard.file_name());
            let header = ShardHeader::new(&plan.key, &plan.layout, shard);
            write_shard(&path, &header, &owned, &mut |p| checkpoint.load(p))?;
            (vec![path.display().to_string()], None)
        }
        (None, Some(mut folder)) => {
            let digest = write_sweep_files(&mut folder, &plan.layout, key, &mut |p| checkpoint.load(p))?;
            let files = folder.commit("sweep", &name)?;
            (files.iter().map(|f| out_dir.join(f).display().to_string()).collect(), Some(digest))
        }
        (None, None) => unreachable!("a full sweep always has its folder"),
    };
    checkpoint.remove();
    let mut text = headline(&plan, &owned, opts.shard);
    text.push_str(&match resumed {
        Resumed::Kept { kept, rejected: 0 } => {
            format!("; {kept} point(s) resumed from the checkpoint, {simulations} simulations run\n")
        }
        Resumed::Kept { kept, rejected } => format!(
            "; {kept} point(s) resumed from the checkpoint, {rejected} computed again (their checkpoint files were damaged, changed or another sweep's), {simulations} simulations run\n"
        ),
        Resumed::NothingToResume => "; no checkpoint to resume, every point computed\n".into(),
        Resumed::KeyChanged => "; the checkpoint was made from another scenario, other arguments or another build, so every point was computed again\n".into(),
        Resumed::Fresh => "\n".into(),
    });
    if let Some(digest) = digest {
        text.push('\n');
        text.push_str(&digest.render(opts.view.layout()));
        text.push('\n');
    }
    text.push_str(&format!("wrote {}\n", written.join(", ")));
    Ok(text)
}

/// What a sweep ran: its points (of a shard), policies, replications and simulations.
fn headline(plan: &SweepPlan, owned: &[usize], shard: Option<Shard>) -> String {
    let total: usize = owned.iter().map(|&p| plan.simulations(p)).sum();
    let shard = shard.map(|s| format!(" (shard {} of {}, of {} points)", s.index, s.count, plan.points.len()));
    // A shard that owns no point (more shards than points) still names the grid's replications.
    let counted: Vec<usize> = if owned.is_empty() { (0..plan.points.len()).collect() } else { owned.to_vec() };
    let replications = |f: fn(u32, u32) -> u32| counted.iter().map(|&p| plan.points[p].replications).reduce(f);
    let replications = match (replications(u32::min), replications(u32::max)) {
        (Some(low), Some(high)) if low < high => format!("{low}-{high}"),
        (Some(n), _) => n.to_string(),
        _ => "0".into(),
    };
    format!(
        "{}: {} grid point(s){} x {} polic{} x {replications} replication(s) = {total} simulations",
        plan.layout.scenario,
        owned.len(),
        shard.unwrap_or_default(),
        plan.policies.len(),
        if plan.policies.len() == 1 { "y" } else { "ies" },
    )
}

/// A sweep computed in memory, its files' contents ready (the Python package's `sweep`
/// without an output folder): the same plan, points and bytes as [`sweep`], without a
/// checkpoint. Stopped by its [`crate::experiment::batch::workers::Watch`], it keeps the points
/// it finished: the tables hold their rows, in grid order, and no report is drawn.
pub struct SweepTables {
    pub csv: Vec<u8>,
    pub json: Vec<u8>,
    /// report.html; empty when interrupted.
    pub report_html: String,
    /// What `sweep` prints, without the files it wrote.
    pub text: String,
    /// The grid points finished, of `points`.
    pub finished: usize,
    pub points: usize,
    pub interrupted: bool,
}

pub fn sweep_in_memory(opts: &SweepOptions) -> Result<SweepTables, CommandError> {
    if opts.resume || opts.shard.is_some() || opts.out.is_some() {
        return Err(CommandError::Input(
            "a sweep in memory has no output folder, checkpoint or shard: give those to `sweep`".into(),
        ));
    }
    let mut workers = Workers::start(opts.jobs, 0, "checking the grid")?;
    let plan = plan(opts, &workers)?;
    workers.fit_guard_windows(plan.guard_window_bytes)?;
    let key = opts.view.key_metrics(&plan.layout)?;
    let owned: Vec<usize> = (0..plan.points.len()).collect();
    let simulations: usize = owned.iter().map(|&p| plan.simulations(p)).sum();
    workers.set_total(simulations as u64, &plan.layout.scenario);
    let records: Mutex<Vec<Option<PointRecord>>> = Mutex::new((0..plan.points.len()).map(|_| None).collect());
    let computed = compute_points(&plan, &owned, &workers, &|record| {
        let point = record.point;
        records.lock().unwrap_or_else(|p| p.into_inner())[point] = Some(record);
        Ok(())
    });
    workers.finish();
    let interrupted = match computed {
        Ok(()) => false,
        Err(CommandError::Interrupted) => true,
        Err(e) => return Err(e),
    };
    let mut records = records.into_inner().unwrap_or_else(|p| p.into_inner());
    let finished = records.iter().filter(|r| r.is_some()).count();
    let (mut csv, mut json) = (Vec::new(), Vec::new());
    let digest = write_sweep_tables(&mut csv, &mut json, &plan.layout, key, &mut |p| Ok(records[p].take()))?;
    let mut text = headline(&plan, &owned, None);
    let report_html = if interrupted {
        text.push_str(&format!("; interrupted: {finished} of {} point(s) finished\n", plan.points.len()));
        String::new()
    } else {
        text.push_str("\n\n");
        text.push_str(&digest.render(opts.view.layout()));
        text.push('\n');
        crate::experiment::report::html::sweep_report(&plan.layout, &digest.shown())
    };
    Ok(SweepTables { csv, json, report_html, text, finished, points: plan.points.len(), interrupted })
}
