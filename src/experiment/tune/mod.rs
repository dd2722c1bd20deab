//! `faultline tune`: the Pareto front of one policy's parameters. Candidates fill the space
//! (space.rs), race on common random numbers (race.rs: more replications only for those that
//! may still be on the front), and the front is written with its intervals and one runnable
//! scenario per point (files.rs).

pub mod checkpoint;
pub mod files;
pub mod generations;
pub mod outcome;
pub mod race;
pub mod shards;
pub mod space;

use crate::engine::Model;
use crate::experiment::batch::grid::repeated_field;
use crate::experiment::batch::load::{apply_seed, collect_overrides, compile_scenario, select_policies};
use crate::experiment::batch::slo::{Check, compile_slo_with};
use crate::experiment::batch::workers::{Task, Workers, replication_seed};
use crate::experiment::command::CommandError;
use crate::experiment::output::folder::{OutputFolder, checkpoint_folder};
use crate::experiment::output::formats::VERSION;
use crate::experiment::sweep::checkpoint::build_id;
use crate::scenario::{ScenarioInput, Source, name_hint, parse_override, parse_source, quote, sample_files, value_at};
use checkpoint::{Checkpoint, Loaded, RaceState, TuneKey};
use outcome::{Candidate, Outcome, Round, point_text};
use race::{Objective, Samples, Status, parse_objective};
use shards::{RoundMode, RoundTask};
use space::{Dimension, parse_dimension};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct TuneOptions {
    pub scenario: ScenarioInput,
    pub policy: String,
    /// `PATH=RANGE` per dimension.
    pub space: Vec<String>,
    /// `max:METRIC` or `min:METRIC`.
    pub objectives: Vec<String>,
    /// At most this many simulations in all.
    pub budget: Option<usize>,
    /// How many candidates fill a space too large for its whole grid.
    pub candidates: usize,
    /// Replications every candidate starts with.
    pub initial_replications: u32,
    pub seed: Option<u64>,
    /// The most replications a candidate gets (default: the scenario's).
    pub replications: Option<u32>,
    pub sets: Vec<String>,
    pub jobs: usize,
    pub out: Option<PathBuf>,
    /// Continue a killed tune from its last finished round.
    pub resume: bool,
    /// Generations of new candidates near the front after the first race.
    pub generations: u32,
    /// Every round here, one shard of the next round, or the next rounds from their shards.
    pub rounds: RoundMode,
}

/// How a race ends in one process: with its outcome, or paused for a sharded round.
enum RaceEnd {
    Finished(Box<Outcome>),
    /// What the process did and what comes next.
    Paused(String),
}

pub fn tune(opts: &TuneOptions) -> Result<String, CommandError> {
    let dimensions: Vec<Dimension> = opts.space.iter().map(|s| parse_dimension(s)).collect::<Result<_, _>>()?;
    if dimensions.is_empty() {
        return Err(CommandError::Input("tune needs at least one --space PATH=RANGE".into()));
    }
    let objectives: Vec<Objective> = opts.objectives.iter().map(|o| parse_objective(o)).collect::<Result<_, _>>()?;
    if objectives.is_empty() {
        return Err(CommandError::Input(
            "tune needs at least one --objective max:METRIC or min:METRIC, like --objective max:auto_completion_ratio"
                .into(),
        ));
    }
    if opts.candidates < 2 {
        return Err(CommandError::Input(format!("argument `--candidates {}`: give at least 2", opts.candidates)));
    }
    if opts.initial_replications < 2 {
        return Err(CommandError::Input(format!(
            "argument `--initial-replications {}`: give at least 2 (a paired comparison needs two)",
            opts.initial_replications
        )));
    }
    let source = opts.scenario.load()?;
    check_paths(&source, &opts.space, &dimensions)?;
    let base = collect_overrides(&opts.sets, opts.replications)?;
    let (mut first, scenario) = compile_scenario(&source, &base)?;
    apply_seed(&mut first, opts.seed, &base);
    let policy = select_policies(&first, std::slice::from_ref(&opts.policy), "--policy")?[0];
    check_metrics(&first, &objectives)?;
    let checks = compile_slo_with(scenario.slo.as_ref(), &first, &source, &base)?.thresholds;
    let max_replications = first.world.replications;
    if max_replications < 2 {
        return Err(CommandError::Input(format!(
            "{}: a tune needs at least 2 replications per candidate; give --replications N",
            quote(&opts.scenario.display())
        )));
    }
    let seed = first.world.seed;
    let (scenario_name, policy_name) = (first.name.clone(), first.policies[policy].name.clone());
    let points = space::candidates(&dimensions, opts.candidates, seed);
    let mut candidates = Vec::with_capacity(points.len() + 1);
    let mut models = Vec::with_capacity(points.len() + 1);
    let make = |values: Vec<String>, generation: u32| -> Result<(Candidate, Model), CommandError> {
        let mut overrides = base.clone();
        for ((d, v), argument) in dimensions.iter().zip(&values).zip(&opts.space) {
            let mut o = parse_override(&format!("{}={v}", d.path))?;
            o.argument = format!("--space {argument}");
            overrides.push(o);
        }
        let (mut model, _) = compile_scenario(&source, &overrides)?;
        apply_seed(&mut model, opts.seed, &overrides);
        Ok((Candidate { values, overrides, samples: Samples::default(), generation }, model))
    };
    for values in points {
        let (candidate, model) = make(values, 0)?;
        models.push(model);
        candidates.push(candidate);
    }
    // The scenario's own values race too, so the front says where today's policy stands.
    let own: Vec<Option<String>> = dimensions
        .iter()
        .map(|d| value_at(&source, &d.path.split('.').map(str::to_string).collect::<Vec<_>>()))
        .collect();
    let current = match candidates.iter().position(|c| same_values(&c.values, &own)) {
        Some(i) => i,
        None => {
            let values = own.iter().map(|v| v.clone().unwrap_or_else(|| "(default)".into())).collect();
            models.push(first);
            candidates.push(Candidate { values, overrides: base.clone(), samples: Samples::default(), generation: 0 });
            candidates.len() - 1
        }
    };
    // A foreign --out is refused, and the folder locked, before anything is computed. A shard
    // takes no lock on the folder (its N processes run at once; each writes its own file): the
    // merge does.
    let out_dir = opts.out.clone().unwrap_or_else(|| Path::new("results").join(format!("{scenario_name}-tune")));
    let mut folder = match opts.rounds {
        RoundMode::Shard(_) => None,
        RoundMode::Local | RoundMode::Merge => Some(OutputFolder::create(&out_dir)?),
    };
    let target = match &folder {
        Some(f) => f.target().to_path_buf(),
        None => std::path::absolute(&out_dir)
            .map_err(|e| CommandError::Io(format!("cannot resolve {}: {e}", out_dir.display())))?,
    };
    let checkpoint = Checkpoint::at(&checkpoint_folder(&target));
    let key = tune_key(opts, &source, &scenario)?;
    let first_values: Vec<Vec<String>> = candidates.iter().map(|c| c.values.clone()).collect();
    // A sharded tune always continues from the rounds merged so far.
    let resume = opts.resume || opts.rounds != RoundMode::Local;
    let loaded = if resume { checkpoint.load(&key, &first_values) } else { Loaded::Nothing };
    let shown = checkpoint.path().display().to_string();
    let (resumed, resume_note) = match loaded {
        Loaded::State(state) => {
            let note = format!(
                "resumed from the checkpoint at {} replications of generation {} ({} simulations kept)",
                state.done, state.generation, state.simulations
            );
            (Some(*state), Some(note))
        }
        Loaded::Damaged { why, simulations } => {
            let lost = match simulations {
                Some(n) => format!("its {n} simulations are computed again"),
                None => "what it held is computed again".to_string(),
            };
            (None, Some(format!("the checkpoint {shown} is not resumed: {why}; {lost}, the race started again")))
        }
        Loaded::OtherTune if opts.resume => (
            None,
            Some(format!(
                "nothing to resume (the checkpoint {shown} is another tune's: another scenario, other arguments or another build): the race started again"
            )),
        ),
        Loaded::Nothing if opts.resume => {
            (None, Some("nothing to resume (no checkpoint of this tune): the race started again".to_string()))
        }
        Loaded::OtherTune | Loaded::Nothing => (None, None),
    };
    let mut workers = Workers::start(opts.jobs, 0, "tuning")?;
    workers.fit_guard_windows(models.iter().map(Model::guard_window_bytes).max().unwrap_or(0))?;
    let outcome = race_all(
        opts,
        &workers,
        Field { models, candidates, make: &make },
        policy,
        Progress { checkpoint: &checkpoint, key: &key, resumed, mode: opts.rounds },
        RaceSetup {
            current,
            scenario: scenario_name,
            policy: policy_name,
            seed,
            dimensions: dimensions.clone(),
            objectives,
            checks,
            max_replications,
        },
    )?;
    workers.finish();
    let (outcome, mut folder) = match (outcome, folder.take()) {
        (RaceEnd::Finished(outcome), Some(folder)) => (outcome, folder),
        (RaceEnd::Paused(text), _) => {
            return Ok(match resume_note.filter(|n| !n.starts_with("resumed ") && !n.starts_with("nothing ")) {
                Some(note) => format!("{note}\n{text}"),
                None => text,
            });
        }
        (RaceEnd::Finished(_), None) => unreachable!("a shard pauses before the race is over"),
    };
    files::write_tune_files(&mut folder, &outcome, &source)?;
    let written = folder.commit("tune", &outcome.scenario)?;
    checkpoint.remove();
    let mut text = files::summary(&outcome);
    if let Some(note) = resume_note {
        text = format!("{note}\n{text}");
    }
    text.push_str(&format!(
        "wrote {}\n",
        written.iter().map(|f| out_dir.join(f).display().to_string()).collect::<Vec<_>>().join(", ")
    ));
    Ok(text)
}

/// Whether a candidate's values are the file's own (numbers compared as numbers).
fn same_values(values: &[String], own: &[Option<String>]) -> bool {
    values.iter().zip(own).all(|(v, o)| match o {
        None => false,
        Some(o) => match (v.parse::<f64>(), o.parse::<f64>()) {
            (Ok(a), Ok(b)) => a == b,
            _ => v == o,
        },
    })
}

/// Everything a tune's results depend on, for its checkpoint.
fn tune_key(
    opts: &TuneOptions,
    source: &Source,
    scenario: &crate::scenario::Scenario,
) -> Result<TuneKey, CommandError> {
    Ok(TuneKey {
        version: VERSION.to_string(),
        build: build_id(),
        scenario: serde_json::to_string(&parse_source(source)?).expect("a scenario always serializes"),
        policy: opts.policy.clone(),
        space: opts.space.clone(),
        objectives: opts.objectives.clone(),
        sets: opts.sets.clone(),
        seed: opts.seed,
        replications: opts.replications,
        candidates: opts.candidates,
        initial_replications: opts.initial_replications,
        budget: opts.budget,
        generations: opts.generations,
        files: sample_files(scenario),
    })
}

/// The candidates, their models, and how to make one more (a child of a generation).
struct Field<'a> {
    models: Vec<Model>,
    candidates: Vec<Candidate>,
    make: &'a dyn Fn(Vec<String>, u32) -> Result<(Candidate, Model), CommandError>,
}

/// Where the race keeps its state between rounds, the state it resumes from, and how its
/// rounds are computed.
struct Progress<'a> {
    checkpoint: &'a Checkpoint,
    key: &'a TuneKey,
    resumed: Option<RaceState>,
    mode: RoundMode,
}

/// What the race needs besides the candidates.
struct RaceSetup {
    current: usize,
    scenario: String,
    policy: String,
    seed: u64,
    dimensions: Vec<Dimension>,
    objectives: Vec<Objective>,
    checks: Vec<Check>,
    max_replications: u32,
}

/// Rounds: every candidate still racing runs up to the round's replications (the first round
/// `--initial-replications`, then twice as many, up to the most), then the beaten and the
/// infeasible leave. When the survivors have every replication, each `--generations` adds
/// children of the front and races them the same way (a candidate that has a round's
/// replications already runs nothing, and comparisons use the replications both ran). Stops
/// before a round the budget cannot pay for.
fn race_all(
    opts: &TuneOptions,
    workers: &Workers,
    field: Field,
    policy: usize,
    progress: Progress,
    setup: RaceSetup,
) -> Result<RaceEnd, CommandError> {
    let Field { mut models, mut candidates, make } = field;
    let mut status = vec![Status::Racing; candidates.len()];
    let mut rounds = Vec::new();
    let (mut generation, mut done, mut simulations, mut budget_stopped) = (0u32, 0u32, 0usize, false);
    let metrics: Vec<String> = setup
        .objectives
        .iter()
        .map(|o| o.metric.clone())
        .chain(setup.checks.iter().map(|c| c.metric.clone()))
        .collect();
    let empty = Samples {
        objectives: vec![Vec::new(); setup.objectives.len()],
        constraints: vec![Vec::new(); setup.checks.len()],
    };
    for c in &mut candidates {
        c.samples = empty.clone();
    }
    if let Some(state) = progress.resumed {
        for (values, g) in state.values().iter().zip(state.generations()).skip(candidates.len()) {
            let (candidate, model) = make(values.clone(), g)?;
            models.push(model);
            candidates.push(candidate);
        }
        for (c, s) in candidates.iter_mut().zip(state.samples()) {
            c.samples = s;
        }
        (status, rounds, generation, done, simulations) =
            (state.status(), state.rounds.clone(), state.generation, state.done, state.simulations);
    }
    loop {
        while done < setup.max_replications {
            let next = if done == 0 { opts.initial_replications } else { done * 2 }.min(setup.max_replications);
            let racing: Vec<usize> = (0..candidates.len()).filter(|&i| status[i] == Status::Racing).collect();
            let from = |i: usize| (candidates[i].samples.replications() as u32).min(next);
            let cost: usize = racing.iter().map(|&i| (next - from(i)) as usize).sum();
            if opts.budget.is_some_and(|b| simulations + cost > b) {
                budget_stopped = true;
                break;
            }
            let seeds: Vec<u64> = models.iter().map(|m| m.world.seed).collect();
            let tasks: Vec<Task> = racing
                .iter()
                .flat_map(|&i| {
                    let seed = seeds[i];
                    (from(i)..next).map(move |r| Task {
                        model: i,
                        policy,
                        replication: r,
                        seed: replication_seed(seed, r),
                    })
                })
                .collect();
            let running = racing.iter().filter(|&&i| from(i) < next).count();
            let round = rounds.len() + 1;
            let describe = |t: &Task| {
                format!("candidate {} ({}), ", t.model, point_text(&setup.dimensions, &candidates[t.model].values))
            };
            let simulate = |tasks: &[Task]| {
                workers.set_total(tasks.len() as u64, &format!("tune round {round} ({running} candidates)"));
                workers.simulate(&models, tasks, &describe, &|_, r| {
                    metrics.iter().map(|m| r.metrics.get(m).copied().unwrap_or(f64::NAN)).collect::<Vec<f64>>()
                })
            };
            let all: Vec<RoundTask> = tasks.iter().map(|t| (t.model, t.replication)).collect();
            let values = match progress.mode {
                _ if tasks.is_empty() => Vec::new(),
                RoundMode::Local => simulate(&tasks)?,
                RoundMode::Shard(shard) => {
                    let mine: Vec<Task> =
                        tasks.iter().enumerate().filter(|(i, _)| shard.owns(*i)).map(|(_, t)| *t).collect();
                    let values = simulate(&mine)?;
                    let dir = progress.checkpoint.dir();
                    let path = shards::write(dir, progress.key, round, shard, &shards::share(&all, shard), &values)?;
                    return Ok(RaceEnd::Paused(format!(
                        "round {round} (generation {generation}, {running} candidates to {next} replications): shard {} of {}, {} of its {} simulations, written to {}\nwhen every shard of round {round} is written, run the same tune with --merge-shards\n",
                        shard.index,
                        shard.count,
                        mine.len(),
                        tasks.len(),
                        path.display()
                    )));
                }
                RoundMode::Merge => match shards::gather(progress.checkpoint.dir(), progress.key, round, &all)? {
                    Some(values) => values,
                    None => {
                        return Ok(RaceEnd::Paused(format!(
                            "round {round} (generation {generation}, {running} candidates to {next} replications, {} simulations) needs its shards: run the same tune with --shard K/N for every K, then --merge-shards again ({} simulations so far)\n",
                            tasks.len(),
                            simulations
                        )));
                    }
                },
            };
            for (task, row) in tasks.iter().zip(values) {
                let s = &mut candidates[task.model].samples;
                let (objective_values, check_values) = row.split_at(setup.objectives.len());
                for (k, v) in objective_values.iter().enumerate() {
                    s.objectives[k].push(*v);
                }
                for (c, v) in check_values.iter().enumerate() {
                    s.constraints[c].push(*v);
                }
            }
            simulations += tasks.len();
            done = next;
            let samples: Vec<Samples> = candidates.iter().map(|c| c.samples.clone()).collect();
            race::pair_twins(&samples, &mut status);
            race::eliminate(&samples, &mut status, &setup.objectives, &setup.checks);
            let left = status.iter().filter(|s| **s == Status::Racing).count();
            let twins = status.iter().filter(|s| matches!(s, Status::Twin { .. })).count();
            rounds.push(Round {
                generation,
                replications: next,
                candidates: running,
                simulations: tasks.len(),
                left,
                twins,
            });
            let kept: Vec<&Samples> = candidates.iter().map(|c| &c.samples).collect();
            let values: Vec<(Vec<String>, u32)> = candidates.iter().map(|c| (c.values.clone(), c.generation)).collect();
            progress.checkpoint.save(&RaceState::new(
                progress.key,
                (generation, done, simulations),
                &rounds,
                &values,
                &kept,
                &status,
            ))?;
        }
        if budget_stopped || generation >= opts.generations {
            break;
        }
        generation += 1;
        done = 0;
        let parents: Vec<Vec<String>> = (0..candidates.len())
            .filter(|&i| status[i] == Status::Racing)
            .map(|i| candidates[i].values.clone())
            .collect();
        let existing: Vec<Vec<String>> = candidates.iter().map(|c| c.values.clone()).collect();
        let kids =
            generations::children(&setup.dimensions, &parents, &existing, opts.candidates, generation, setup.seed);
        if kids.is_empty() {
            break;
        }
        for values in kids {
            let (mut candidate, model) = make(values, generation)?;
            candidate.samples = empty.clone();
            models.push(model);
            candidates.push(candidate);
            status.push(Status::Racing);
        }
    }
    let samples: Vec<Samples> = candidates.iter().map(|c| c.samples.clone()).collect();
    race::finish(&samples, &mut status, &setup.objectives, &setup.checks);
    race::settle_twins(&mut status);
    // A twin on the front shares the figures of the candidate it followed: they matched in
    // every replication both ran.
    for i in 0..candidates.len() {
        if let Status::Twin { of, .. } = status[i] {
            candidates[i].samples = candidates[of].samples.clone();
        }
    }
    if let RoundMode::Shard(_) = progress.mode {
        return Ok(RaceEnd::Paused(
            "the race needs no more simulations: run the same tune with --merge-shards to write its files\n".into(),
        ));
    }
    Ok(RaceEnd::Finished(Box::new(Outcome {
        current: setup.current,
        scenario: setup.scenario,
        policy: setup.policy,
        seed: setup.seed,
        dimensions: setup.dimensions,
        objectives: setup.objectives,
        checks: setup.checks,
        candidates,
        status,
        rounds,
        max_replications: setup.max_replications,
        simulations,
        budget_stopped,
    })))
}

/// Each dimension names a field once.
fn check_paths(source: &Source, arguments: &[String], dimensions: &[Dimension]) -> Result<(), CommandError> {
    let paths: Vec<&str> = dimensions.iter().map(|d| d.path.as_str()).collect();
    match repeated_field(source, &paths) {
        Some((i, field)) => Err(CommandError::Input(format!(
            "argument `--space {}`: the field {field} is searched twice",
            arguments[i]
        ))),
        None => Ok(()),
    }
}

/// Every objective is a metric the scenario reports.
fn check_metrics(model: &Model, objectives: &[Objective]) -> Result<(), CommandError> {
    let names = model.metric_names();
    for o in objectives {
        if !names.contains(&o.metric) {
            let hint = name_hint(&o.metric, &names);
            return Err(CommandError::Input(format!(
                "argument `--objective {}`: this scenario has no metric {}{hint}; docs/metrics.md lists them",
                o.label(),
                quote(&o.metric)
            )));
        }
    }
    Ok(())
}
