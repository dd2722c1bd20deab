//! Running a batch of simulations in parallel with a progress bar, and the seeds that make
//! replication k the same for every policy, grid point and thread count.

use crate::engine::{Model, Replication, SimError, simulate, simulate_until_stopped};
use crate::experiment::command::CommandError;
use crate::runtime::mechanisms::MAX_COMMAND_WINDOW_BYTES;
use crate::sim::StreamKey;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

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
    let mut workers = Workers::start(jobs, tasks.len() as u64, label)?;
    workers.fit_guard_windows(models.iter().map(Model::guard_window_bytes).max().unwrap_or(0))?;
    let results = workers.simulate(models, tasks, describe, &|_, r| r);
    workers.finish();
    results
}

/// A caller outside the command that follows its progress and may ask it to stop (the Python
/// package's progress bar and Ctrl-C). It only watches: the simulations and their results are
/// the same with or without it, and a stopped command ends with [`CommandError::Interrupted`]
/// before it writes anything (a sweep keeps the points it finished).
#[derive(Debug, Default)]
pub struct Watch {
    done: AtomicU64,
    total: AtomicU64,
    stop: AtomicBool,
}

impl Watch {
    /// Units of work done so far and the total the command counts to (0 while unknown).
    pub fn progress(&self) -> (u64, u64) {
        (self.done.load(Ordering::Relaxed), self.total.load(Ordering::Relaxed))
    }

    /// Asks the command to stop: simulations not yet started are not started, and those
    /// running stop at their next window's end (within one `simulation.timeseries_window_s` of simulated
    /// time), their figures dropped.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

thread_local! {
    /// The watch of the command running on this thread, if any ([`watched`]).
    static WATCH: RefCell<Option<Arc<Watch>>> = const { RefCell::new(None) };
}

/// Runs `command` on this thread with `watch` following every [`Workers`] it starts.
pub fn watched<R>(watch: Arc<Watch>, command: impl FnOnce() -> R) -> R {
    let previous = WATCH.with(|w| w.replace(Some(watch)));
    let result = command();
    WATCH.with(|w| *w.borrow_mut() = previous);
    result
}

/// A pool of worker threads and the progress bar of one command.
pub struct Workers {
    pool: rayon::ThreadPool,
    progress: ProgressBar,
    watch: Option<Arc<Watch>>,
}

impl Workers {
    /// `simulations` is the number the progress bar counts to.
    pub fn start(jobs: usize, simulations: u64, label: &str) -> Result<Workers, CommandError> {
        let pool = build_pool(jobs)?;
        let watch = WATCH.with(|w| w.borrow().clone());
        // A watched command's caller shows progress its own way.
        let target = if watch.is_some() { ProgressDrawTarget::hidden() } else { ProgressDrawTarget::stderr() };
        if let Some(w) = &watch {
            w.total.store(simulations, Ordering::Relaxed);
            w.done.store(0, Ordering::Relaxed);
        }
        let progress = ProgressBar::with_draw_target(Some(simulations), target);
        progress.set_style(
            ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} simulations, {elapsed} elapsed, eta {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        progress.set_message(label.to_string());
        Ok(Workers { pool, progress, watch })
    }

    fn count(&self, n: u64) {
        self.progress.inc(n);
        if let Some(w) = &self.watch {
            w.done.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Whether the watch asked to stop.
    pub fn stopped(&self) -> bool {
        self.watch.as_ref().is_some_and(|w| w.stopped())
    }

    /// Runs fewer simulations at once than `--jobs` asked when the guards' sliding windows of
    /// that many (`window_bytes` each) would take more than [`MAX_COMMAND_WINDOW_BYTES`]; the
    /// results are the same for any number of workers, so only the time changes, and a note on
    /// standard error says so.
    pub fn fit_guard_windows(&mut self, window_bytes: u64) -> Result<(), CommandError> {
        let threads = self.pool.current_num_threads();
        let fits = concurrent_simulations(window_bytes, threads);
        if fits < threads {
            self.pool = build_pool(fits)?;
            // Said even when standard error is not a terminal (a CI log), where the bar is hidden.
            self.progress.suspend(|| {
                eprintln!(
                    "note: running {fits} simulation(s) at once, not {threads}: the guards' sliding windows take {} MiB in each, and a command keeps them under {} MiB",
                    window_bytes.saturating_add(1 << 19) >> 20,
                    MAX_COMMAND_WINDOW_BYTES >> 20
                )
            });
        }
        Ok(())
    }

    /// Counts one unit of work that is not a simulation of [`Workers::simulate`].
    pub fn tick(&self) {
        self.count(1);
    }

    /// Sets what the progress bar counts to and says.
    pub fn set_total(&self, simulations: u64, label: &str) {
        self.progress.set_length(simulations);
        self.progress.set_position(0);
        self.progress.set_message(label.to_string());
        if let Some(w) = &self.watch {
            w.total.store(simulations, Ordering::Relaxed);
            w.done.store(0, Ordering::Relaxed);
        }
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
        let results: Vec<Option<Result<T, SimError>>> = self.pool.install(|| {
            tasks
                .par_iter()
                .map(|t| {
                    if self.stopped() {
                        return None;
                    }
                    let r = match &self.watch {
                        // A watched command's long replication stops within a window of its own.
                        Some(w) => simulate_until_stopped(&models[t.model], t.policy, t.seed, &w.stop),
                        None => simulate(&models[t.model], t.policy, t.seed),
                    };
                    if let Err(SimError::Stopped) = r {
                        return None;
                    }
                    let r = r.map(|r| keep(t, r));
                    self.count(1);
                    Some(r)
                })
                .collect()
        });
        if results.iter().any(Option::is_none) {
            return Err(CommandError::Interrupted);
        }
        results
            .into_iter()
            .flatten()
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

fn build_pool(threads: usize) -> Result<rayon::ThreadPool, CommandError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .map_err(|e| CommandError::Io(format!("cannot start worker threads: {e}")))
}

/// How many simulations whose guards' windows take `window_bytes` each may run at once on
/// `threads` workers: all of them, or as many as fit in [`MAX_COMMAND_WINDOW_BYTES`] (at least one;
/// a single simulation is held to `MAX_GUARD_WINDOW_BYTES` when the scenario compiles).
pub fn concurrent_simulations(window_bytes: u64, threads: usize) -> usize {
    let fit = MAX_COMMAND_WINDOW_BYTES.checked_div(window_bytes).unwrap_or(u64::MAX).max(1);
    threads.min(usize::try_from(fit).unwrap_or(usize::MAX)).max(1)
}

/// The most worker threads a command starts.
pub const MAX_JOBS: usize = 256;

/// The default worker count: every core.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}
