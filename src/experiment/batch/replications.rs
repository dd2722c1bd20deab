//! What a command keeps of one policy's replications, run on the same seeds as every other
//! policy's: each replication's metrics and the window-by-window sum of their time series.

use super::workers::{Task, Workers, check_batch_size, replication_seed};
use crate::engine::{Model, Replication};
use crate::experiment::command::CommandError;
use crate::metrics::stats::t_quantile_975;
use crate::metrics::timeseries::FIXED_COLUMNS;
use crate::metrics::{MetricMap, TimeSeries};
use std::sync::Mutex;

/// What a command keeps of one policy's replications: each replication's metrics, in
/// replication order, and the sum of their time series.
pub struct PolicyRuns {
    pub metrics: Vec<MetricMap>,
    pub series: SeriesSum,
    /// The index of `metrics[0]`: replications are consecutive from here.
    pub first_replication: u32,
}

/// Runs replications `indices` of each policy on the same seeds. A replication's time series is added
/// to its policy's sum as soon as it finishes (integer sums: the order does not matter), so
/// memory holds one series per policy, not one per replication.
pub fn run_replications(
    model: &Model,
    policies: &[usize],
    indices: std::ops::Range<u32>,
    jobs: usize,
) -> Result<Vec<PolicyRuns>, CommandError> {
    let world = &model.world;
    let count = indices.len();
    let tasks: Vec<Task> = policies
        .iter()
        .flat_map(|&policy| {
            indices.clone().map(move |r| Task {
                model: 0,
                policy,
                replication: r,
                seed: replication_seed(world.seed, r),
            })
        })
        .collect();
    check_batch_size(Some(tasks.len()))?;
    let sums: Vec<Mutex<SeriesSum>> = policies.iter().map(|_| Mutex::new(SeriesSum::default())).collect();
    let mut workers = Workers::start(jobs, tasks.len() as u64, &model.name)?;
    workers.fit_guard_windows(model.guard_window_bytes())?;
    let keep = |t: &Task, r: Replication| {
        // Policies are distinct (select_policies), so the position is the policy's slot.
        let slot = policies.iter().position(|&p| p == t.policy).expect("a task's policy was selected");
        sums[slot].lock().unwrap_or_else(|p| p.into_inner()).add(&r.timeseries);
        r.metrics
    };
    let metrics = workers.simulate(std::slice::from_ref(model), &tasks, &|_| String::new(), &keep);
    workers.finish();
    let mut metrics = metrics?.into_iter();
    Ok(sums
        .into_iter()
        .map(|sum| PolicyRuns {
            metrics: metrics.by_ref().take(count).collect(),
            first_replication: indices.start,
            series: sum.into_inner().unwrap_or_else(|p| p.into_inner()),
        })
        .collect())
}

/// The window-by-window sum of replications' time series (replications may end in different
/// windows; a missing window counts as zero).
#[derive(Debug, Default)]
pub struct SeriesSum {
    columns: usize,
    values: Vec<u64>,
    /// Per window, the sum of squares of each fixed column (arrivals, goodput, ...): with the
    /// sums, a 95 % interval per window, exact in integers whatever the order replications add.
    squares: Vec<u128>,
}

impl SeriesSum {
    pub fn add(&mut self, series: &TimeSeries) {
        let columns = series.stride();
        if self.values.is_empty() {
            self.columns = columns;
        }
        debug_assert_eq!(self.columns, columns, "one policy's replications share their columns");
        let needed = series.rows() * columns;
        if self.values.len() < needed {
            self.values.resize(needed, 0);
        }
        for row in 0..series.rows() {
            for c in 0..columns {
                self.values[row * columns + c] += series.value(row, c);
            }
        }
        let fixed = FIXED_COLUMNS.len();
        if self.squares.len() < series.rows() * fixed {
            self.squares.resize(series.rows() * fixed, 0);
        }
        for row in 0..series.rows() {
            for c in 0..fixed {
                let v = u128::from(series.value(row, c));
                self.squares[row * fixed + c] += v * v;
            }
        }
    }

    /// The 95 % Student-t interval of a fixed column's mean per replication at one window, over
    /// `replications` replications (a replication without the window counts 0); NaN with fewer
    /// than two.
    pub fn interval(&self, row: usize, column: usize, replications: usize) -> (f64, f64) {
        let fixed = FIXED_COLUMNS.len();
        if replications < 2 || column >= fixed || row >= self.rows() {
            return (f64::NAN, f64::NAN);
        }
        let n = replications as u128;
        let sum = u128::from(self.value(row, column));
        let squares = self.squares.get(row * fixed + column).copied().unwrap_or(0);
        // n Σx² - (Σx)² is n (n - 1) times the sample variance, never negative in integers.
        let spread = (n * squares).saturating_sub(sum * sum) as f64;
        let variance = spread / (replications * (replications - 1)) as f64;
        let mean = sum as f64 / replications as f64;
        let half = t_quantile_975(replications - 1) * (variance / replications as f64).sqrt();
        (mean - half, mean + half)
    }

    pub fn rows(&self) -> usize {
        self.values.len().checked_div(self.columns).unwrap_or(0)
    }

    pub fn value(&self, row: usize, column: usize) -> u64 {
        self.values[row * self.columns + column]
    }
}
