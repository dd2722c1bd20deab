//! Fixed windows over virtual time: arrivals, completions, goodput (all of it and on time),
//! deadline misses, attempts, sampled queue depth and refusals per dependency, the worst state of
//! each breaker, the most severe mode of each workflow, and the sampled level of each bulkhead and
//! retry budget, and a closed population's users at each window's end. Rows are appended as time advances, so memory is one row per window, not per
//! event. The recovery metrics ([`super::recovery`]) are read from these windows.

use crate::sim::Micros;
use crate::vocab::{BreakerState, DegradationMode};

/// Rows past this land in the last row (validation keeps simulations well below it).
const MAX_ROWS: u64 = 2_000_000;

pub const FIXED_COLUMNS: [&str; 6] =
    ["arrivals", "completions", "goodput", "on_time_goodput", "deadline_misses", "effect_unknown"];

/// Where each column lies in a row: what writes the series and what reads its sums (the CSV,
/// the report) share this one arithmetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub dependencies: usize,
    pub breakers: usize,
    /// Workflows, when the policy has degradation modes; else 0.
    pub modes: usize,
    /// Guards with a level (bulkheads, retry budgets).
    pub levels: usize,
    /// Error budgets with columns (per workflow its own, then one per budget dependency, when
    /// the policy has an `error_budget`); else 0.
    pub budgets: usize,
    /// Columns per budget: its state, its spent share, then a long and a short burn rate per
    /// burn-rate rule ([`BudgetColumn`]).
    pub budget_width: usize,
    /// [`USER_COLUMNS`] when some workflow has a closed population of users, else 0 (open load
    /// keeps its columns and its CSV).
    pub users: usize,
}

/// A closed population's columns, after the budgets: users present (waiting or thinking) and
/// users thinking, both sampled at the window's end and summed over the workflows' populations.
pub const USER_COLUMNS: [&str; 2] = ["users.active", "users.thinking"];

/// A user column by its offset after the budgets.
pub const USERS_ACTIVE: usize = 0;
pub const USERS_THINKING: usize = 1;

/// A column of an error budget's group, by its offset in the group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetColumn {
    /// The worst state (`BudgetState::index`), a whole number.
    State,
    /// The largest spent share, in millionths ([`BUDGET_SCALE`]).
    Spent,
    /// The largest burn rate of rule `r`'s long or short window, in millionths.
    Burn { rule: usize, short: bool },
}

impl BudgetColumn {
    pub fn of(offset: usize) -> BudgetColumn {
        match offset {
            0 => BudgetColumn::State,
            1 => BudgetColumn::Spent,
            k => BudgetColumn::Burn { rule: (k - 2) / 2, short: k % 2 == 1 },
        }
    }

    /// What a cell holds per unit of the column's figure.
    pub fn scale(self) -> f64 {
        match self {
            BudgetColumn::State => 1.0,
            BudgetColumn::Spent | BudgetColumn::Burn { .. } => BUDGET_SCALE,
        }
    }
}

/// Shares and burn rates are kept in the integer cells as millionths: the mean over
/// replications divides them back (six decimals are far below what a burn rate is read for).
pub const BUDGET_SCALE: f64 = 1e6;

impl Layout {
    /// A dependency's attempts in the window.
    pub fn attempts(&self, dependency: usize) -> usize {
        FIXED_COLUMNS.len() + dependency
    }

    /// A dependency's queue depth sampled at the window's end.
    pub fn queue(&self, dependency: usize) -> usize {
        FIXED_COLUMNS.len() + self.dependencies + dependency
    }

    /// A dependency's refused attempts in the window, every reason together.
    pub fn refused(&self, dependency: usize) -> usize {
        FIXED_COLUMNS.len() + 2 * self.dependencies + dependency
    }

    /// A breaker's worst state in the window.
    pub fn breaker(&self, breaker: usize) -> usize {
        FIXED_COLUMNS.len() + 3 * self.dependencies + breaker
    }

    /// A workflow's most severe mode in the window (a policy with modes only).
    pub fn mode(&self, workflow: usize) -> usize {
        FIXED_COLUMNS.len() + 3 * self.dependencies + self.breakers + workflow
    }

    /// A guard's level sampled at the window's end, last so that the columns before keep
    /// their places.
    pub fn level(&self, index: usize) -> usize {
        FIXED_COLUMNS.len() + 3 * self.dependencies + self.breakers + self.modes + index
    }

    /// Column `offset` of budget `group`'s, after the levels so that every column before keeps
    /// its place (and a policy without an error budget has none).
    pub fn budget(&self, group: usize, offset: usize) -> usize {
        self.level(self.levels) + group * self.budget_width + offset
    }

    /// User column `offset` ([`USERS_ACTIVE`], [`USERS_THINKING`]), last so that every column
    /// before keeps its place (a layout without users has none).
    pub fn user(&self, offset: usize) -> usize {
        self.budget(self.budgets, 0) + offset
    }

    /// Columns per row.
    pub fn stride(&self) -> usize {
        self.user(self.users)
    }
}

pub struct TimeSeries {
    pub window_us: Micros,
    layout: Layout,
    /// Columns per row (see [`TimeSeries::stride`]), kept so a row lookup does not work it out.
    stride: usize,
    /// Row-major: FIXED_COLUMNS, then per dependency attempts, queue depth and refusals, then
    /// per breaker its worst state in the window (0 closed, 1 half-open, 2 open), then per
    /// workflow (when the policy has modes) its most severe mode (`DegradationMode::severity`),
    /// then per guard with a level its level at the window's end, then per error budget its
    /// state, spent share and burn rates, then (closed populations only) the users present and
    /// thinking at the window's end ([`Layout`]).
    values: Vec<u64>,
    /// The row last looked up: its window [start, end) and its first index in `values`.
    /// Most lookups fall in the same window as the one before, so they skip the division.
    last_start_us: Micros,
    last_end_us: Micros,
    last_base: usize,
}

impl TimeSeries {
    pub fn new(window_us: Micros, layout: Layout) -> Self {
        // An empty window range: the first lookup takes the slow path.
        TimeSeries {
            window_us,
            layout,
            stride: layout.stride(),
            values: Vec::new(),
            last_start_us: Micros::MAX,
            last_end_us: 0,
            last_base: 0,
        }
    }

    pub fn stride(&self) -> usize {
        self.stride
    }

    pub fn rows(&self) -> usize {
        self.values.len() / self.stride
    }

    #[inline]
    fn row_mut(&mut self, now: Micros) -> &mut [u64] {
        if now >= self.last_start_us && now < self.last_end_us {
            let base = self.last_base;
            return &mut self.values[base..base + self.stride];
        }
        self.row_mut_slow(now)
    }

    fn row_mut_slow(&mut self, now: Micros) -> &mut [u64] {
        // Validation bounds the windows of a simulation; the cap only guards the arithmetic.
        let row = (now / self.window_us).min(MAX_ROWS);
        let stride = self.stride;
        let base = row as usize * stride;
        let need = base + stride;
        if self.values.len() < need {
            self.values.resize(need, 0);
        }
        // The capped last row stands for every time past it, so it is never remembered.
        if row < MAX_ROWS {
            self.last_start_us = row * self.window_us;
            self.last_end_us = self.last_start_us.saturating_add(self.window_us);
            self.last_base = base;
        }
        &mut self.values[base..need]
    }

    #[inline]
    pub fn add(&mut self, now: Micros, column: usize) {
        self.row_mut(now)[column] += 1;
    }

    /// A run ended at `now`: a completion, goodput if it succeeded, on-time goodput if it
    /// succeeded with a result by its deadline, a miss if it had none (one row lookup). A late
    /// answer is goodput but not on time: the report's first chart must not count it.
    #[inline]
    pub fn add_run_end(&mut self, now: Micros, goodput: bool, deadline_miss: bool) {
        let row = self.row_mut(now);
        row[COMPLETIONS] += 1;
        row[GOODPUT] += u64::from(goodput);
        row[ON_TIME_GOODPUT] += u64::from(goodput && !deadline_miss);
        row[DEADLINE_MISSES] += u64::from(deadline_miss);
    }

    #[inline]
    pub fn add_attempt(&mut self, now: Micros, dependency: usize) {
        let column = self.attempts_column(dependency);
        self.row_mut(now)[column] += 1;
    }

    /// The column of a dependency's attempts per window.
    pub fn attempts_column(&self, dependency: usize) -> usize {
        self.layout.attempts(dependency)
    }

    /// The column of a dependency's queue depth sampled at each window's end.
    pub fn queue_column(&self, dependency: usize) -> usize {
        self.layout.queue(dependency)
    }

    /// Queue depth sampled at the end of the window that `now` closes.
    pub fn sample_queue(&mut self, window_end: Micros, dependency: usize, depth: u32) {
        let at = window_end.saturating_sub(1);
        let offset = self.queue_column(dependency);
        self.row_mut(at)[offset] = u64::from(depth);
    }

    #[inline]
    pub fn add_refused(&mut self, now: Micros, dependency: usize) {
        let offset = self.layout.refused(dependency);
        self.row_mut(now)[offset] += 1;
    }

    /// A breaker entered `state` at `now`: the window keeps the worst state it saw. A breaker
    /// still open at a window's end marks that window too (see [`TimeSeries::carry_breaker`]).
    pub fn mark_breaker(&mut self, now: Micros, breaker: usize, state: BreakerState) {
        let offset = self.layout.breaker(breaker);
        let cell = &mut self.row_mut(now)[offset];
        *cell = (*cell).max(severity(state));
    }

    /// Marks the window that `window_end` closes with the state a breaker holds at its end.
    pub fn carry_breaker(&mut self, window_end: Micros, breaker: usize, state: BreakerState) {
        self.mark_breaker(window_end.saturating_sub(1), breaker, state);
    }

    /// A workflow entered `mode` at `now` (or holds it at a window's end): the window keeps
    /// the most severe mode it saw.
    pub fn mark_mode(&mut self, now: Micros, workflow: usize, mode: DegradationMode) {
        let offset = self.layout.mode(workflow);
        let cell = &mut self.row_mut(now)[offset];
        *cell = (*cell).max(u64::from(mode.severity()));
    }

    /// A budget column's reading at `now`: the window keeps the largest (the worst state, the
    /// most spent, the highest burn).
    pub fn mark_budget(&mut self, now: Micros, group: usize, offset: usize, value: u64) {
        let column = self.layout.budget(group, offset);
        let cell = &mut self.row_mut(now)[column];
        *cell = (*cell).max(value);
    }

    /// A guard's level at the end of the window that `window_end` closes.
    pub fn sample_level(&mut self, window_end: Micros, index: usize, level: u64) {
        let offset = self.layout.level(index);
        self.row_mut(window_end.saturating_sub(1))[offset] = level;
    }

    /// The users present and thinking at the end of the window that `window_end` closes (a
    /// layout with user columns only).
    pub fn sample_users(&mut self, window_end: Micros, active: u32, thinking: u32) {
        debug_assert_eq!(self.layout.users, USER_COLUMNS.len(), "sampled only with a population");
        let (a, t) = (self.layout.user(USERS_ACTIVE), self.layout.user(USERS_THINKING));
        let row = self.row_mut(window_end.saturating_sub(1));
        row[a] = u64::from(active);
        row[t] = u64::from(thinking);
    }

    pub fn value(&self, row: usize, column: usize) -> u64 {
        self.values[row * self.stride + column]
    }

    /// One fixed column (e.g. [`GOODPUT`]) per window, in window order.
    pub fn fixed_column(&self, column: usize) -> Vec<u64> {
        (0..self.rows()).map(|row| self.value(row, column)).collect()
    }

    /// Attempts per window, summed over every dependency.
    pub fn attempts_per_window(&self) -> Vec<u64> {
        let first = FIXED_COLUMNS.len();
        let dependencies = self.layout.dependencies;
        (0..self.rows()).map(|row| (first..first + dependencies).map(|c| self.value(row, c)).sum()).collect()
    }
}

/// Worse is larger: a window shows the worst state its breaker was in.
fn severity(state: BreakerState) -> u64 {
    match state {
        BreakerState::Closed => 0,
        BreakerState::HalfOpen => 1,
        BreakerState::Open => 2,
    }
}

pub const ARRIVALS: usize = 0;
pub const COMPLETIONS: usize = 1;
pub const GOODPUT: usize = 2;
pub const ON_TIME_GOODPUT: usize = 3;
pub const DEADLINE_MISSES: usize = 4;
pub const EFFECT_UNKNOWN: usize = 5;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_land_in_their_window() {
        let mut ts = TimeSeries::new(
            1_000,
            Layout { dependencies: 2, breakers: 1, modes: 1, levels: 1, budgets: 2, budget_width: 4, users: 2 },
        );
        ts.add(0, ARRIVALS);
        ts.add(999, ARRIVALS);
        ts.add(1_000, ARRIVALS);
        ts.add_attempt(2_500, 1);
        ts.sample_queue(2_000, 0, 7);
        assert_eq!(ts.rows(), 3);
        assert_eq!(ts.value(0, ARRIVALS), 2);
        assert_eq!(ts.value(1, ARRIVALS), 1);
        assert_eq!(ts.value(2, FIXED_COLUMNS.len() + 1), 1);
        assert_eq!(ts.value(1, FIXED_COLUMNS.len() + 2), 7);
        ts.add_refused(500, 1);
        assert_eq!(ts.value(0, FIXED_COLUMNS.len() + 5), 1);
        ts.mark_breaker(1_200, 0, BreakerState::Open);
        ts.mark_breaker(1_300, 0, BreakerState::HalfOpen);
        ts.carry_breaker(3_000, 0, BreakerState::HalfOpen);
        assert_eq!(ts.value(1, FIXED_COLUMNS.len() + 6), 2, "the worst state of the window");
        assert_eq!(ts.value(2, FIXED_COLUMNS.len() + 6), 1);
        ts.add_attempt(2_600, 0);
        ts.add(1_500, GOODPUT);
        assert_eq!(ts.attempts_per_window(), vec![0, 0, 2]);
        assert_eq!(ts.fixed_column(GOODPUT), vec![0, 1, 0]);
        ts.mark_mode(1_100, 0, DegradationMode::Constrained);
        ts.mark_mode(1_900, 0, DegradationMode::Recovery);
        assert_eq!(ts.value(1, FIXED_COLUMNS.len() + 7), 2, "constrained outranks the recovery after it");
        ts.sample_level(2_000, 0, 9);
        assert_eq!(ts.value(1, FIXED_COLUMNS.len() + 8), 9, "a level sits at the window it ends");
        ts.mark_budget(1_200, 1, 3, 7);
        ts.mark_budget(1_300, 1, 3, 5);
        assert_eq!(ts.value(1, FIXED_COLUMNS.len() + 9 + 4 + 3), 7, "budgets last, the window's largest reading");
        ts.sample_users(3_000, 12, 5);
        assert_eq!(ts.value(2, FIXED_COLUMNS.len() + 9 + 8), 12, "users after the budgets, at the window they end");
        assert_eq!(ts.value(2, FIXED_COLUMNS.len() + 9 + 8 + 1), 5);
        assert_eq!(ts.stride(), FIXED_COLUMNS.len() + 9 + 8 + 2);
        assert_eq!(BudgetColumn::of(3), BudgetColumn::Burn { rule: 0, short: true });
        assert_eq!(BudgetColumn::of(4), BudgetColumn::Burn { rule: 1, short: false });
    }
}
