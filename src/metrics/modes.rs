//! Degradation modes over a replication: time in each mode, transitions by from and to, flaps,
//! and root-run outcomes by the mode they started in (docs/metrics.md section 2.9).

use super::MetricMap;
use crate::sim::Micros;
use crate::vocab::{BudgetState, DegradationMode, Outcome};

const MODES: usize = DegradationMode::COUNT;

/// One evaluation's reading of a workflow's error budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetRead {
    pub state: BudgetState,
    pub ticket: bool,
    pub spent: f32,
    pub long_burn: f32,
    pub short_burn: f32,
}

/// The error budgets' readings over the measured window, summed over workflows.
#[derive(Debug, Clone, Default)]
pub struct BudgetStats {
    /// Per workflow: when its budget was last read.
    last_read_us: Vec<Option<Micros>>,
    pub time_us: [Micros; BudgetState::COUNT],
    pub ticket_us: Micros,
    pub spent_max: f64,
    pub long_burn_max: f64,
    pub short_burn_max: f64,
}

pub struct ModeStats {
    /// Per workflow: the mode it is in and since when.
    current: Vec<(DegradationMode, Micros)>,
    /// Summed over workflows, clipped to the measured window.
    pub time_us: [Micros; MODES],
    pub transitions: [[u64; MODES]; MODES],
    pub flaps: u64,
    /// Runs that arrived after the warm-up, by the mode they started in.
    pub runs: [u64; MODES],
    pub outcomes: [[u64; Outcome::COUNT]; MODES],
    pub budget: BudgetStats,
    /// Measured runs started as canary runs and as probe runs; canary stages failed.
    pub canary_runs: u64,
    pub probe_runs: u64,
    pub failed_canaries: u64,
    /// Measured runs cancelled in flight as their workflow entered PAUSED.
    pub cancelled_runs: u64,
}

impl ModeStats {
    pub fn new(workflows: usize) -> Self {
        ModeStats {
            current: vec![(DegradationMode::Normal, 0); workflows],
            time_us: [0; MODES],
            transitions: [[0; MODES]; MODES],
            flaps: 0,
            runs: [0; MODES],
            outcomes: [[0; Outcome::COUNT]; MODES],
            budget: BudgetStats { last_read_us: vec![None; workflows], ..BudgetStats::default() },
            canary_runs: 0,
            probe_runs: 0,
            failed_canaries: 0,
            cancelled_runs: 0,
        }
    }

    /// A budget reading at `now` stands for the interval since the workflow's last one: that
    /// span, clipped to the measured window, is credited to its state.
    pub fn budget_read(&mut self, workflow: usize, now: Micros, window: (Micros, Micros), read: BudgetRead) {
        let b = &mut self.budget;
        let since = b.last_read_us[workflow].unwrap_or(0);
        b.last_read_us[workflow] = Some(now);
        let (start, end) = (since.max(window.0), now.min(window.1));
        if end <= start {
            return;
        }
        b.time_us[read.state.index()] += end - start;
        if read.ticket {
            b.ticket_us += end - start;
        }
        b.spent_max = b.spent_max.max(f64::from(read.spent));
        b.long_burn_max = b.long_burn_max.max(f64::from(read.long_burn));
        b.short_burn_max = b.short_burn_max.max(f64::from(read.short_burn));
    }

    /// Credits the time since the workflow's last change, clipped to `window`, to its mode.
    fn advance(&mut self, workflow: usize, now: Micros, window: (Micros, Micros)) {
        let (mode, since) = self.current[workflow];
        let (start, end) = (since.max(window.0), now.min(window.1));
        if end > start {
            self.time_us[mode.index()] += end - start;
        }
        self.current[workflow].1 = now;
    }

    pub fn transition(
        &mut self,
        workflow: usize,
        now: Micros,
        window: (Micros, Micros),
        to: DegradationMode,
        flap: bool,
    ) {
        let from = self.current[workflow].0;
        self.advance(workflow, now, window);
        self.current[workflow].0 = to;
        if (window.0..window.1).contains(&now) {
            self.transitions[from.index()][to.index()] += 1;
            self.flaps += u64::from(flap);
        }
    }

    pub fn run_ended(&mut self, mode: DegradationMode, outcome: Outcome) {
        self.runs[mode.index()] += 1;
        self.outcomes[mode.index()][outcome.index()] += 1;
    }

    /// The mode each workflow is in now.
    pub fn modes(&self) -> impl Iterator<Item = DegradationMode> + '_ {
        self.current.iter().map(|(m, _)| *m)
    }

    pub fn finish(&mut self, end: Micros, window: (Micros, Micros)) {
        for w in 0..self.current.len() {
            self.advance(w, end, window);
        }
    }

    pub fn put(&self, window: (Micros, Micros), m: &mut MetricMap) {
        let mut total = 0;
        for from in DegradationMode::ALL {
            for to in DegradationMode::ALL.into_iter().filter(|&to| to != from) {
                let n = self.transitions[from.index()][to.index()];
                total += n;
                m.insert(format!("degradation_transition_total.{}.{}", from.name(), to.name()), n as f64);
            }
        }
        m.insert("degradation_transition_total".into(), total as f64);
        let hours = (window.1 - window.0) as f64 / 3.6e9;
        m.insert("degradation_flaps_per_hour".into(), if hours > 0.0 { self.flaps as f64 / hours } else { f64::NAN });
        m.insert("degradation_canary_run_total".into(), self.canary_runs as f64);
        m.insert("degradation_canary_stage_failed_total".into(), self.failed_canaries as f64);
        m.insert("degradation_probe_run_total".into(), self.probe_runs as f64);
        m.insert("degradation_cancelled_run_total".into(), self.cancelled_runs as f64);
        let b = &self.budget;
        for state in BudgetState::ALL {
            m.insert(format!("error_budget_time_s.{}", state.name()), b.time_us[state.index()] as f64 / 1e6);
        }
        m.insert("error_budget_ticket_time_s".into(), b.ticket_us as f64 / 1e6);
        m.insert("error_budget_spent_max".into(), b.spent_max);
        m.insert("error_budget_burn_rate_max.long".into(), b.long_burn_max);
        m.insert("error_budget_burn_rate_max.short".into(), b.short_burn_max);
        for mode in DegradationMode::ALL {
            let i = mode.index();
            m.insert(format!("degradation_mode_time_s.{}", mode.name()), self.time_us[i] as f64 / 1e6);
            let runs = self.runs[i] as f64;
            let p = |metric: &str| format!("mode.{}.{metric}", mode.name());
            m.insert(p("logical_run_total"), runs);
            for o in Outcome::ALL {
                m.insert(p(&format!("outcome_total.{}", o.name())), self.outcomes[i][o.index()] as f64);
            }
            let good: u64 = Outcome::ALL.iter().filter(|o| o.is_success()).map(|o| self.outcomes[i][o.index()]).sum();
            m.insert(p("auto_completion_ratio"), if runs > 0.0 { good as f64 / runs } else { f64::NAN });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_is_credited_to_the_mode_held_within_the_measured_window() {
        let window = (10, 110);
        let mut s = ModeStats::new(2);
        s.transition(0, 5, window, DegradationMode::Constrained, false);
        s.transition(0, 50, window, DegradationMode::Recovery, false);
        s.transition(0, 60, window, DegradationMode::Constrained, true);
        s.finish(200, window);
        assert_eq!(s.time_us[DegradationMode::Constrained.index()], 40 + 50, "10..50 and 60..110");
        assert_eq!(s.time_us[DegradationMode::Recovery.index()], 10);
        assert_eq!(s.time_us[DegradationMode::Normal.index()], 100, "workflow 1 stayed normal all along");
        assert_eq!(
            s.transitions[DegradationMode::Normal.index()][DegradationMode::Constrained.index()],
            0,
            "at 5, before the window"
        );
        assert_eq!(s.flaps, 1);
        let mut m = MetricMap::new();
        s.put(window, &mut m);
        assert_eq!(m["degradation_transition_total"], 2.0);
        assert_eq!(m["degradation_flaps_per_hour"], 3.6e9 / 100.0);
    }
}
