//! Running a batch of simulations in parallel with a progress bar, and the seeds that make
//! replication k the same for every policy, grid point and thread count.

use crate::engine::{Model, Replication, SimError, simulate};
use crate::experiment::command::CommandError;
use crate::sim::StreamKey;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;

pub use crate::world::model::MAX_SIMULATIONS;

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

/// Checks a batch size before anything is allocated for it.
pub fn check_batch_size(simulations: Option<usize>) -> Result<(), CommandError> {
    match simulations {
        Some(n) if n <= MAX_SIMULATIONS => Ok(()),
        _ => Err(CommandError::Input(format!(
            "{} simulations requested; the limit is {MAX_SIMULATIONS} (fewer grid points, policies or replications)",
            simulations.map(|n| n.to_string()).unwrap_or_else(|| "too many".into())
        ))),
    }
}

/// Runs every task on a pool of `jobs` threads; results come back in task order. A failed
/// simulation is reported with its policy, replication and seed (and `describe`'s words for
/// its model, such as the grid point); the lowest failed task is reported, whatever the
/// thread count.
pub fn run_tasks(
    models: &[Model],
    tasks: &[Task],
    jobs: usize,
    label: &str,
    describe: &dyn Fn(&Task) -> String,
) -> Result<Vec<Replication>, CommandError> {
    check_batch_size(Some(tasks.len()))?;
    let workers = Workers::start(jobs, tasks.len() as u64, label)?;
    let results = workers.simulate(models, tasks, describe, &|_, r| r);
    workers.finish();
    results
}

/// A pool of worker threads and the progress bar of one command.
pub struct Workers {
    pool: rayon::ThreadPool,
    progress: ProgressBar,
}

impl Workers {
    /// `simulations` is the number the progress bar counts to.
    pub fn start(jobs: usize, simulations: u64, label: &str) -> Result<Workers, CommandError> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(jobs.max(1))
            .build()
            .map_err(|e| CommandError::Io(format!("cannot start worker threads: {e}")))?;
        let progress = ProgressBar::with_draw_target(Some(simulations), ProgressDrawTarget::stderr());
        progress.set_style(
            ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} simulations, {elapsed} elapsed, eta {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        progress.set_message(label.to_string());
        Ok(Workers { pool, progress })
    }

    /// Counts one unit of work that is not a simulation of [`Workers::simulate`].
    pub fn tick(&self) {
        self.progress.inc(1);
    }

    /// Sets what the progress bar counts to and says.
    pub fn set_total(&self, simulations: u64, label: &str) {
        self.progress.set_length(simulations);
        self.progress.set_position(0);
        self.progress.set_message(label.to_string());
    }

    /// Runs `f` on the pool (for parallel work other than simulations).
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        self.pool.install(f)
    }

    /// Simulates every task and keeps what `keep` takes of each replication (called on the
    /// worker as each finishes), in task order.
    pub fn simulate<T: Send>(
        &self,
        models: &[Model],
        tasks: &[Task],
        describe: &dyn Fn(&Task) -> String,
        keep: &(dyn Fn(&Task, Replication) -> T + Sync),
    ) -> Result<Vec<T>, CommandError> {
        let results: Vec<Result<T, SimError>> = self.pool.install(|| {
            tasks
                .par_iter()
                .map(|t| {
                    let r = simulate(&models[t.model], t.policy, t.seed).map(|r| keep(t, r));
                    self.progress.inc(1);
                    r
                })
                .collect()
        });
        results
            .into_iter()
            .zip(tasks)
            .map(|(r, t)| {
                r.map_err(|e| {
                    let what = describe(t);
                    let policy = &models[t.model].policies[t.policy].name;
                    CommandError::Input(format!(
                        "{what}policy `{policy}`, replication {} (seed {}): {e}",
                        t.replication, t.seed
                    ))
                })
            })
            .collect()
    }

    pub fn finish(self) {
        self.progress.finish_and_clear();
    }
}

/// The most worker threads a command starts.
pub const MAX_JOBS: usize = 256;

/// The default worker count: every core.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}
