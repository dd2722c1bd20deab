//! The modes of one replication: a machine and an error budget per workflow, fed by the
//! engine at run ends and at every evaluation. Engine-free: the engine hands it the
//! signals it samples (breakers, queues, refusals) and carries out nothing for it; runs read
//! their treatment from it as they start.

use super::config::Degradation;
use super::error_budget::{BudgetWindows, Sli};
use super::machine::{ModeMachine, RunMode, Signals, Transition};
use crate::sim::{Micros, us_as_f64};
use crate::vocab::{BreakerState, BudgetState, DegradationMode, Outcome, Refusal};

pub struct ModeController<'c> {
    cfg: &'c Degradation,
    machines: Vec<ModeMachine>,
    budgets: Vec<BudgetWindows>,
    /// Refusals counted up to the last evaluation, by reason.
    last_refused: [u64; Refusal::COUNT],
}

impl<'c> ModeController<'c> {
    pub fn new(cfg: &'c Degradation, workflows: usize) -> Self {
        let longest = cfg
            .error_budget
            .as_ref()
            .map(|b| b.rules.iter().map(|r| r.long_intervals.max(r.short_intervals)).max().unwrap_or(1))
            .unwrap_or(1);
        ModeController {
            cfg,
            machines: (0..workflows).map(ModeMachine::new).collect(),
            budgets: (0..workflows).map(|_| BudgetWindows::new(longest)).collect(),
            last_refused: [0; Refusal::COUNT],
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

    /// A run's writes go to a human now: the workflow's acting mode for it pauses them.
    pub fn writes_paused(&self, pauses: impl Fn(DegradationMode) -> bool, workflow: usize, canary: bool) -> bool {
        pauses(self.machines[workflow].acting_mode(canary))
    }

    /// A run ended: the auto-completion SLI, the canary's judgement and unknown write effects.
    pub fn run_ended(&mut self, workflow: usize, mode: RunMode, outcome: Outcome, effect_unknown: bool) {
        if mode.canary {
            self.machines[workflow].canary_ended(outcome.is_success());
        }
        let budget = &mut self.budgets[workflow];
        if self.cfg.error_budget.as_ref().is_some_and(|b| b.sli == Sli::AutoCompletion) {
            budget.count_run(!outcome.is_success());
        }
        if effect_unknown {
            budget.count_integrity();
        }
    }

    /// A run's last attempt left its station: the safe-outcome SLI and duplicate effects.
    pub fn run_finalized(&mut self, workflow: usize, outcome: Outcome, duplicate_effect: bool) {
        let budget = &mut self.budgets[workflow];
        if self.cfg.error_budget.as_ref().is_some_and(|b| b.sli == Sli::SafeOutcome) {
            budget.count_run(!outcome.is_safe() || duplicate_effect);
        }
        if duplicate_effect {
            budget.count_integrity();
        }
    }

    /// One evaluation: every workflow's machine reads the signals; `transitions` gets
    /// (workflow, transition) for each one that moved.
    pub fn evaluate(
        &mut self,
        now: Micros,
        breakers: &[(u16, BreakerState)],
        queue_depths: &[u32],
        refused_total: &[u64; Refusal::COUNT],
        transitions: &mut Vec<(usize, Transition)>,
    ) {
        let seconds = us_as_f64(self.cfg.interval_us);
        let mut refused_per_s = [0.0; Refusal::COUNT];
        for r in 0..Refusal::COUNT {
            debug_assert!(refused_total[r] >= self.last_refused[r], "refusal counts never go down");
            refused_per_s[r] = (refused_total[r] - self.last_refused[r]) as f64 / seconds;
        }
        self.last_refused = *refused_total;
        for w in 0..self.machines.len() {
            let budget = match &self.cfg.error_budget {
                Some(b) => self.budgets[w].close_interval(b),
                None => BudgetState::Healthy,
            };
            let signals = Signals { now, breakers, queue_depths, refused_per_s: &refused_per_s, budget };
            if let Some(t) = self.machines[w].evaluate(self.cfg, &signals) {
                transitions.push((w, t));
            }
        }
    }
}
