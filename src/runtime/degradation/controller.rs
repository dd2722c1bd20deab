//! The modes of one replication: a machine and error budgets per workflow, fed by the engine at
//! run ends and at every evaluation. Engine-free: the engine hands it the signals it samples
//! (breakers, queues, refusals) and carries out nothing for it; runs read their treatment from
//! it as they start.

use super::config::Degradation;
use super::error_budget::{BudgetReading, BudgetWindows, RunEnd};
use super::machine::{ModeMachine, RunMode, RunVerdict, Signals, Transition};
use crate::sim::{Micros, us_as_f64};
use crate::vocab::{BreakerState, BudgetState, DegradationMode, Refusal};

pub struct ModeController<'c> {
    cfg: &'c Degradation,
    machines: Vec<ModeMachine>,
    /// Per workflow: its own budget, then one per budget dependency (empty without a budget).
    budgets: Vec<Vec<BudgetWindows>>,
    /// Refusals counted up to the last evaluation, by reason.
    last_refused: [u64; Refusal::COUNT],
    /// The budgets' states of the workflow being evaluated (reused).
    states: Vec<BudgetState>,
}

/// How a run that ended went, for the canary and the budgets.
#[derive(Debug, Clone, Copy)]
pub struct EndedRun {
    pub workflow: usize,
    pub mode: RunMode,
    pub end: RunEnd,
    /// It left a write whose effect it does not know (an integrity signal).
    pub effect_unknown: bool,
}

impl<'c> ModeController<'c> {
    pub fn new(cfg: &'c Degradation, workflows: usize) -> Self {
        let slots = 1 + cfg.budget_dependencies.len();
        let budgets = (0..workflows)
            .map(|_| match &cfg.error_budget {
                Some(b) => (0..slots).map(|_| BudgetWindows::new(b)).collect(),
                None => Vec::new(),
            })
            .collect();
        ModeController {
            cfg,
            machines: (0..workflows).map(|w| ModeMachine::new(w, cfg.rules.len())).collect(),
            budgets,
            last_refused: [0; Refusal::COUNT],
            states: vec![BudgetState::Healthy; slots],
        }
    }

    pub fn interval_us(&self) -> Micros {
        self.cfg.interval_us
    }

    pub fn mode(&self, workflow: usize) -> DegradationMode {
        self.machines[workflow].mode()
    }

    /// How a run of `workflow` starting now is treated; `u` is its own uniform draw.
    pub fn run_mode(&self, workflow: usize, u: f64) -> RunMode {
        self.machines[workflow].run_mode(self.cfg, u)
    }

    /// The mode whose `pause_writes` holds now for every run of `workflow`.
    pub fn pausing_mode(&self, workflow: usize) -> DegradationMode {
        self.machines[workflow].pausing_mode()
    }

    /// A run ended: the canary's judgement, the budgets' SLIs (all but safe outcome) and
    /// unknown write effects. `answered_at(d)` says how its calls at dependency `d` went,
    /// `unknown_at(d)` whether it left a write to `d` whose effect it does not know.
    pub fn run_ended(
        &mut self,
        run: EndedRun,
        answered_at: impl Fn(usize) -> Option<bool>,
        unknown_at: impl Fn(usize) -> bool,
    ) {
        if run.mode.label == DegradationMode::Recovery && !run.mode.probe {
            let verdict =
                RunVerdict { full_quality: run.end.full_quality, deadline_exceeded: run.end.deadline_exceeded };
            self.machines[run.workflow].run_ended(run.mode.canary, verdict);
        }
        if self.cfg.error_budget.as_ref().is_some_and(|b| !b.counts_at_finalize()) {
            self.count(run.workflow, run.end, &answered_at);
        }
        if run.effect_unknown {
            self.count_integrity(run.workflow, unknown_at);
        }
    }

    /// A run's last attempt left its station: the safe-outcome SLI and duplicate effects
    /// (`duplicated_at(d)`: a write to `d` took effect twice).
    pub fn run_finalized(
        &mut self,
        workflow: usize,
        end: RunEnd,
        answered_at: impl Fn(usize) -> Option<bool>,
        duplicated_at: impl Fn(usize) -> bool,
    ) {
        if self.cfg.error_budget.as_ref().is_some_and(|b| b.counts_at_finalize()) {
            self.count(workflow, end, &answered_at);
        }
        if end.duplicate_effect {
            self.count_integrity(workflow, duplicated_at);
        }
    }

    /// An integrity event (a duplicate effect, a write left unknown): the workflow's own budget
    /// sees every one, a dependency's budget those of writes to it only, so a rule on the
    /// model's budget does not fire on the ticket system's lost replies.
    fn count_integrity(&mut self, workflow: usize, at: impl Fn(usize) -> bool) {
        let Some((own, per_dependency)) = self.budgets[workflow].split_first_mut() else { return };
        own.count_integrity();
        for (windows, &d) in per_dependency.iter_mut().zip(&self.cfg.budget_dependencies) {
            if at(d) {
                windows.count_integrity();
            }
        }
    }

    /// Counts a run in the workflow's budget and, where it called a budget dependency, in that
    /// dependency's: bad there only when the dependency did not answer it.
    fn count(&mut self, workflow: usize, end: RunEnd, answered_at: &impl Fn(usize) -> Option<bool>) {
        let Some(budget) = &self.cfg.error_budget else { return };
        let Some(bad) = budget.is_bad(end) else { return };
        let slots = &mut self.budgets[workflow];
        slots[0].count_run(bad);
        for (k, &d) in self.cfg.budget_dependencies.iter().enumerate() {
            if let Some(answered) = answered_at(d) {
                slots[k + 1].count_run(bad && !answered);
            }
        }
    }

    /// One evaluation: every workflow's machine reads the signals; `transitions` gets
    /// (workflow, transition) for each one that moved, `readings` (workflow, slot, reading) for
    /// each of its budgets (slot 0 its own, k + 1 that of `budget_dependencies[k]`), and `burns`
    /// each reading's burn rates in the same order, a long and a short one per burn-rate rule.
    #[allow(clippy::too_many_arguments)]
    pub fn evaluate(
        &mut self,
        now: Micros,
        breakers: &[(u16, BreakerState)],
        queue_depths: &[u32],
        refused_total: &[u64; Refusal::COUNT],
        transitions: &mut Vec<(usize, Transition)>,
        readings: &mut Vec<(usize, usize, BudgetReading)>,
        burns: &mut Vec<f64>,
    ) {
        // Micros to seconds: a rate per second, as the rules' fields say.
        let seconds = us_as_f64(self.cfg.interval_us) / 1e6;
        let mut refused_per_s = [0.0; Refusal::COUNT];
        for r in 0..Refusal::COUNT {
            debug_assert!(refused_total[r] >= self.last_refused[r], "refusal counts never go down");
            refused_per_s[r] = (refused_total[r] - self.last_refused[r]) as f64 / seconds;
        }
        self.last_refused = *refused_total;
        for w in 0..self.machines.len() {
            if let Some(b) = &self.cfg.error_budget {
                for (slot, windows) in self.budgets[w].iter_mut().enumerate() {
                    let reading = windows.close_interval(b);
                    self.states[slot] = reading.state;
                    readings.push((w, slot, reading));
                    windows.burns(b, burns);
                }
            }
            let signals = Signals { now, breakers, queue_depths, refused_per_s: &refused_per_s, budgets: &self.states };
            if let Some(t) = self.machines[w].evaluate(self.cfg, &signals) {
                transitions.push((w, t));
            }
        }
    }
}
