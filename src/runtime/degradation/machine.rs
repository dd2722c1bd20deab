//! One workflow's degradation mode as a pure state machine (docs/essay.md section 16): rules
//! latch on their enter condition and unlatch on their exit condition (hysteresis), the most
//! severe latched rule names the mode, a mode is left only after its minimum dwell, and the
//! way back goes through RECOVERY: probes (the trigger clear and its breakers closed for some
//! evaluations), then canary stages of runs on the normal policy, judged on their completion,
//! back to the mode left when a stage fails.

use super::config::{Condition, Degradation, breaker_matches};
use crate::sim::Micros;
use crate::vocab::{BreakerState, BudgetState, DegradationMode, Refusal};

/// Rules per policy: the latches are one bit each.
pub const MAX_RULES: usize = 64;

/// What the simulation shows at an evaluation.
#[derive(Debug, Clone, Copy)]
pub struct Signals<'a> {
    pub now: Micros,
    /// (breaker label index, state) of every breaker of the policy.
    pub breakers: &'a [(u16, BreakerState)],
    /// Queue length per dependency.
    pub queue_depths: &'a [u32],
    /// Refusals per second over the last interval, by reason.
    pub refused_per_s: &'a [f64; Refusal::COUNT],
    /// This workflow's error budget.
    pub budget: BudgetState,
}

impl Condition {
    /// Whether every condition it sets holds; one that sets none never holds.
    pub fn holds(&self, cfg: &Degradation, sig: &Signals) -> bool {
        let mut any = false;
        let mut all = true;
        if let (Some(check), Some(d)) = (self.breaker, self.dependency) {
            any = true;
            let states =
                sig.breakers.iter().filter(|(b, _)| cfg.breaker_dependencies[*b as usize] == d).map(|(_, s)| *s);
            all &= breaker_matches(check, states);
        }
        if let Some(at_least) = self.budget_at_least {
            any = true;
            all &= sig.budget >= at_least;
        }
        if let Some(at_most) = self.budget_at_most {
            any = true;
            all &= sig.budget <= at_most;
        }
        if let Some(d) = self.dependency {
            let depth = sig.queue_depths[d];
            if let Some(above) = self.queue_depth_above {
                any = true;
                all &= depth > above;
            }
            if let Some(below) = self.queue_depth_below {
                any = true;
                all &= depth < below;
            }
        }
        if let Some(reason) = self.refusal {
            let rate = sig.refused_per_s[reason.index()];
            if let Some(above) = self.refused_per_s_above {
                any = true;
                all &= rate > above;
            }
            if let Some(below) = self.refused_per_s_below {
                any = true;
                all &= rate < below;
            }
        }
        any && all
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Not recovering.
    Steady,
    /// The trigger has been clear for `clear` evaluations.
    Probing { clear: u32 },
    /// Canary stage `stage` since `since_us`: its canary runs so far and the good ones.
    Canary { stage: usize, since_us: Micros, runs: u32, good: u32 },
}

/// A change of mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    pub from: DegradationMode,
    pub to: DegradationMode,
    /// A return to a degraded mode soon after leaving one.
    pub flap: bool,
}

/// How a new run is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunMode {
    /// The workflow's mode as the run starts (outcomes by mode).
    pub label: DegradationMode,
    /// Whose overrides it runs under: the mode's, the mode left (recovery) or normal (canary).
    pub overrides: DegradationMode,
    pub canary: bool,
}

#[derive(Debug, Clone)]
pub struct ModeMachine {
    workflow: usize,
    mode: DegradationMode,
    since_us: Micros,
    latched: u64,
    /// The degraded mode a recovery came from (its overrides stay in force for non-canary runs).
    back_to: DegradationMode,
    phase: Phase,
    left_degraded_us: Option<Micros>,
}

impl ModeMachine {
    pub fn new(workflow: usize) -> Self {
        ModeMachine {
            workflow,
            mode: DegradationMode::Normal,
            since_us: 0,
            latched: 0,
            back_to: DegradationMode::Normal,
            phase: Phase::Steady,
            left_degraded_us: None,
        }
    }

    pub fn mode(&self) -> DegradationMode {
        self.mode
    }

    /// The mode whose overrides apply now to work already running (paused writes): during a
    /// recovery, the mode left for most runs and the normal policy for the canary's.
    pub fn acting_mode(&self, canary: bool) -> DegradationMode {
        match (self.mode, canary) {
            (DegradationMode::Recovery, true) => DegradationMode::Normal,
            (DegradationMode::Recovery, false) => self.back_to,
            (m, _) => m,
        }
    }

    /// A new run's treatment; `u` is its own uniform draw in [0, 1).
    pub fn run_mode(&self, cfg: &Degradation, u: f64) -> RunMode {
        let steady = |m| RunMode { label: self.mode, overrides: m, canary: false };
        match (self.mode, self.phase) {
            (DegradationMode::Recovery, Phase::Canary { stage, .. }) if u < cfg.recovery.canary_stages[stage] => {
                RunMode { label: self.mode, overrides: DegradationMode::Normal, canary: true }
            }
            (DegradationMode::Recovery, _) => steady(self.back_to),
            (m, _) => steady(m),
        }
    }

    /// A canary run ended; `good` when it completed automatically.
    pub fn canary_ended(&mut self, good: bool) {
        if let Phase::Canary { runs, good: g, .. } = &mut self.phase {
            *runs += 1;
            *g += u32::from(good);
        }
    }

    /// Reads the signals, updates the rules' latches and moves the mode if it must.
    pub fn evaluate(&mut self, cfg: &Degradation, sig: &Signals) -> Option<Transition> {
        self.update_latches(cfg, sig);
        let target = self.target(cfg);
        let now = sig.now;
        let to = match self.mode {
            DegradationMode::Normal => target.is_degraded().then_some(target),
            DegradationMode::Recovery => {
                if target.is_degraded() {
                    Some(target)
                } else {
                    self.recover(cfg, sig)
                }
            }
            current => {
                let dwelt = now.saturating_sub(self.since_us) >= cfg.min_dwell_us(current);
                if target.severity() > current.severity() {
                    Some(target)
                } else if !dwelt || target == current {
                    None
                } else if target.is_degraded() {
                    Some(target)
                } else {
                    Some(DegradationMode::Recovery)
                }
            }
        };
        to.map(|to| self.enter(cfg, now, to))
    }

    fn update_latches(&mut self, cfg: &Degradation, sig: &Signals) {
        for (i, rule) in cfg.rules.iter().enumerate() {
            if rule.workflow.is_some_and(|w| w != self.workflow) {
                continue;
            }
            let bit = 1u64 << i;
            let latched = self.latched & bit != 0;
            let now_latched = if latched {
                match &rule.exit {
                    Some(exit) => !exit.holds(cfg, sig),
                    None => rule.enter.holds(cfg, sig),
                }
            } else {
                rule.enter.holds(cfg, sig)
            };
            self.latched = if now_latched { self.latched | bit } else { self.latched & !bit };
        }
    }

    /// The most severe mode of a latched rule, or normal.
    fn target(&self, cfg: &Degradation) -> DegradationMode {
        cfg.rules
            .iter()
            .enumerate()
            .filter(|(i, _)| self.latched & (1u64 << i) != 0)
            .map(|(_, r)| r.mode)
            .max_by_key(|m| m.severity())
            .unwrap_or(DegradationMode::Normal)
    }

    /// One evaluation of a recovery with no rule latched: probe, then judge the canary stage.
    fn recover(&mut self, cfg: &Degradation, sig: &Signals) -> Option<DegradationMode> {
        let plan = &cfg.recovery;
        match self.phase {
            Phase::Steady => unreachable!("a recovery always has a phase (asserted at every transition)"),
            Phase::Probing { clear } => {
                // A half-open breaker passes: its trial calls are the canary's, and a mode that
                // sends nothing (PAUSED) would otherwise never see it close.
                let watched = &cfg.watched[self.workflow];
                let ready = sig.breakers.iter().all(|(b, s)| {
                    *s != BreakerState::Open || !watched.contains(&cfg.breaker_dependencies[*b as usize])
                });
                let clear = if ready { clear + 1 } else { 0 };
                self.phase = if clear >= plan.probe_evaluations {
                    Phase::Canary { stage: 0, since_us: sig.now, runs: 0, good: 0 }
                } else {
                    Phase::Probing { clear }
                };
                None
            }
            Phase::Canary { stage, since_us, runs, good } => {
                if sig.now.saturating_sub(since_us) < plan.stage_us || runs < plan.min_canary_runs {
                    return None;
                }
                if f64::from(good) < plan.canary_min_completion * f64::from(runs) {
                    return Some(self.back_to);
                }
                if stage + 1 == plan.canary_stages.len() {
                    return Some(DegradationMode::Normal);
                }
                self.phase = Phase::Canary { stage: stage + 1, since_us: sig.now, runs: 0, good: 0 };
                None
            }
        }
    }

    fn enter(&mut self, cfg: &Degradation, now: Micros, to: DegradationMode) -> Transition {
        let from = self.mode;
        debug_assert_ne!(from, to, "a transition changes the mode");
        let flap = to.is_degraded()
            && !from.is_degraded()
            && self.left_degraded_us.is_some_and(|t| now.saturating_sub(t) < cfg.flap_window_us);
        if from.is_degraded() && !to.is_degraded() {
            self.left_degraded_us = Some(now);
        }
        match to {
            DegradationMode::Recovery => {
                self.back_to = from;
                self.phase = Phase::Probing { clear: 0 };
            }
            _ => self.phase = Phase::Steady,
        }
        self.mode = to;
        self.since_us = now;
        self.assert_invariants();
        Transition { from, to, flap }
    }

    fn assert_invariants(&self) {
        let recovering = self.mode == DegradationMode::Recovery;
        assert_eq!(recovering, self.phase != Phase::Steady, "only a recovery has a probing or canary phase");
        assert!(!recovering || self.back_to.is_degraded(), "a recovery returns from a degraded mode");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::degradation::config::{BreakerCheck, RecoveryPlan, Rule};

    const S: Micros = 1_000_000;
    const MODEL: usize = 0;

    /// One workflow; breaker 0 guards dependency 0 (the model). The rule: the model's breaker
    /// not closed -> constrained, 60 s dwell; recovery: 2 probes, stages 10 % then 100 %, 30 s
    /// each, judged on 4 canary runs at 75 %.
    fn config(rules: Vec<Rule>) -> Degradation {
        Degradation {
            interval_us: 5 * S,
            flap_window_us: 300 * S,
            max_flaps_per_hour: 6.0,
            rules,
            error_budget: None,
            recovery: RecoveryPlan {
                probe_evaluations: 2,
                canary_stages: vec![0.1, 1.0],
                stage_us: 30 * S,
                min_canary_runs: 4,
                canary_min_completion: 0.75,
            },
            watched: vec![vec![MODEL]],
            breaker_dependencies: vec![MODEL],
        }
    }

    fn breaker_rule() -> Rule {
        let enter =
            Condition { dependency: Some(MODEL), breaker: Some(BreakerCheck::NotClosed), ..Condition::default() };
        Rule { mode: DegradationMode::Constrained, workflow: None, enter, exit: None, min_dwell_us: 60 * S }
    }

    struct World {
        breaker: BreakerState,
        depth: u32,
        budget: BudgetState,
    }

    impl World {
        fn calm() -> Self {
            World { breaker: BreakerState::Closed, depth: 0, budget: BudgetState::Healthy }
        }

        fn tick(&self, m: &mut ModeMachine, cfg: &Degradation, at_s: u64) -> Option<DegradationMode> {
            let breakers = [(0u16, self.breaker)];
            let depths = [self.depth];
            let refused = [0.0; Refusal::COUNT];
            let sig = Signals {
                now: at_s * S,
                breakers: &breakers,
                queue_depths: &depths,
                refused_per_s: &refused,
                budget: self.budget,
            };
            m.evaluate(cfg, &sig).map(|t| t.to)
        }
    }

    #[test]
    fn a_breaker_moves_the_workflow_to_constrained_and_the_return_goes_through_probes_and_a_canary() {
        let cfg = config(vec![breaker_rule()]);
        let mut m = ModeMachine::new(0);
        let mut w = World::calm();
        assert_eq!(w.tick(&mut m, &cfg, 5), None, "a closed breaker: normal stays");
        w.breaker = BreakerState::Open;
        assert_eq!(w.tick(&mut m, &cfg, 10), Some(DegradationMode::Constrained), "escalation is immediate");
        w.breaker = BreakerState::HalfOpen;
        assert_eq!(w.tick(&mut m, &cfg, 100), None, "half-open is not closed: the rule holds");
        w.breaker = BreakerState::Closed;
        assert_eq!(w.tick(&mut m, &cfg, 105), Some(DegradationMode::Recovery), "dwelt 95 s >= 60 s: recover");
        // Non-canary runs keep the constrained treatment while probing.
        assert_eq!(m.run_mode(&cfg, 0.0).overrides, DegradationMode::Constrained);
        assert_eq!(m.acting_mode(false), DegradationMode::Constrained);
        assert_eq!(m.acting_mode(true), DegradationMode::Normal, "a canary run is on the normal policy");
        assert_eq!(w.tick(&mut m, &cfg, 110), None, "probe 1 of 2");
        assert_eq!(w.tick(&mut m, &cfg, 115), None, "probe 2 of 2: the canary starts");
        let canary = m.run_mode(&cfg, 0.05);
        assert!(
            canary.canary && canary.overrides == DegradationMode::Normal && canary.label == DegradationMode::Recovery
        );
        assert!(!m.run_mode(&cfg, 0.5).canary, "90 % of runs stay constrained in stage 1");
        for good in [true, true, true, false] {
            m.canary_ended(good);
        }
        assert_eq!(w.tick(&mut m, &cfg, 140), None, "25 s: the stage is not over");
        assert_eq!(w.tick(&mut m, &cfg, 145), None, "30 s, 3 of 4 good = 75 %: stage 2");
        assert!(m.run_mode(&cfg, 0.99).canary, "stage 2 sends every new run on the normal policy");
        for _ in 0..4 {
            m.canary_ended(true);
        }
        assert_eq!(w.tick(&mut m, &cfg, 175), Some(DegradationMode::Normal));
        assert_eq!(
            m.run_mode(&cfg, 0.0),
            RunMode { label: DegradationMode::Normal, overrides: DegradationMode::Normal, canary: false }
        );
    }

    #[test]
    fn the_minimum_dwell_holds_a_mode_after_its_trigger_clears() {
        let cfg = config(vec![breaker_rule()]);
        let mut m = ModeMachine::new(0);
        let mut w = World::calm();
        w.breaker = BreakerState::Open;
        w.tick(&mut m, &cfg, 0);
        w.breaker = BreakerState::Closed;
        assert_eq!(w.tick(&mut m, &cfg, 55), None, "55 s < 60 s of dwell");
        assert_eq!(w.tick(&mut m, &cfg, 60), Some(DegradationMode::Recovery));
    }

    #[test]
    fn separate_enter_and_exit_thresholds_keep_the_mode_between_them() {
        let enter = Condition { dependency: Some(MODEL), queue_depth_above: Some(100), ..Condition::default() };
        let exit = Condition { dependency: Some(MODEL), queue_depth_below: Some(20), ..Condition::default() };
        let rule = Rule { mode: DegradationMode::Degraded, workflow: None, enter, exit: Some(exit), min_dwell_us: 0 };
        let cfg = config(vec![rule]);
        let mut m = ModeMachine::new(0);
        let mut w = World::calm();
        w.depth = 100;
        assert_eq!(w.tick(&mut m, &cfg, 5), None, "100 is not above 100");
        w.depth = 101;
        assert_eq!(w.tick(&mut m, &cfg, 10), Some(DegradationMode::Degraded));
        w.depth = 50;
        assert_eq!(w.tick(&mut m, &cfg, 15), None, "below the enter threshold, above the exit one: stays");
        w.depth = 19;
        assert_eq!(w.tick(&mut m, &cfg, 20), Some(DegradationMode::Recovery));
    }

    #[test]
    fn a_more_severe_rule_wins_at_once_and_a_milder_one_takes_over_after_the_dwell() {
        let paused = Rule {
            mode: DegradationMode::Paused,
            workflow: None,
            enter: Condition { budget_at_least: Some(BudgetState::IntegrityIncident), ..Condition::default() },
            exit: None,
            min_dwell_us: 30 * S,
        };
        let cfg = config(vec![breaker_rule(), paused]);
        let mut m = ModeMachine::new(0);
        let mut w = World::calm();
        w.breaker = BreakerState::Open;
        assert_eq!(w.tick(&mut m, &cfg, 0), Some(DegradationMode::Constrained));
        w.budget = BudgetState::IntegrityIncident;
        assert_eq!(w.tick(&mut m, &cfg, 5), Some(DegradationMode::Paused), "no dwell holds an escalation back");
        w.budget = BudgetState::Healthy;
        assert_eq!(w.tick(&mut m, &cfg, 30), None, "paused dwells 30 s");
        assert_eq!(w.tick(&mut m, &cfg, 35), Some(DegradationMode::Constrained), "the breaker rule still holds");
    }

    #[test]
    fn a_budget_rule_leaves_when_the_budget_is_back_to_its_exit_state() {
        let rule = Rule {
            mode: DegradationMode::Constrained,
            workflow: None,
            enter: Condition { budget_at_least: Some(BudgetState::AtRisk), ..Condition::default() },
            exit: Some(Condition { budget_at_most: Some(BudgetState::Healthy), ..Condition::default() }),
            min_dwell_us: 0,
        };
        let cfg = config(vec![rule]);
        let mut m = ModeMachine::new(0);
        let mut w = World::calm();
        w.budget = BudgetState::Exhausted;
        assert_eq!(w.tick(&mut m, &cfg, 5), Some(DegradationMode::Constrained), "exhausted is at least at risk");
        w.budget = BudgetState::AtRisk;
        assert_eq!(w.tick(&mut m, &cfg, 10), None, "at risk is not yet healthy");
        w.budget = BudgetState::Healthy;
        assert_eq!(w.tick(&mut m, &cfg, 15), Some(DegradationMode::Recovery));
    }

    #[test]
    fn a_failed_canary_goes_back_to_the_mode_left_and_a_quick_return_is_a_flap() {
        let cfg = config(vec![breaker_rule()]);
        let mut m = ModeMachine::new(0);
        let mut w = World::calm();
        w.breaker = BreakerState::Open;
        w.tick(&mut m, &cfg, 0);
        w.breaker = BreakerState::Closed;
        w.tick(&mut m, &cfg, 60);
        w.tick(&mut m, &cfg, 65);
        w.tick(&mut m, &cfg, 70);
        for good in [true, false, false, true] {
            m.canary_ended(good);
        }
        let back = {
            let breakers = [(0u16, BreakerState::Closed)];
            let refused = [0.0; Refusal::COUNT];
            let sig = Signals {
                now: 100 * S,
                breakers: &breakers,
                queue_depths: &[0],
                refused_per_s: &refused,
                budget: BudgetState::Healthy,
            };
            m.evaluate(&cfg, &sig).expect("the stage failed")
        };
        assert_eq!((back.from, back.to), (DegradationMode::Recovery, DegradationMode::Constrained));
        assert!(back.flap, "back in a degraded mode 40 s after leaving it");
    }

    #[test]
    fn probes_wait_while_a_watched_breaker_is_open() {
        // The rule holds on a refusal rate; the model's breaker is only watched.
        let enter = Condition {
            refusal: Some(Refusal::RetryBudget),
            refused_per_s_above: Some(1.0),
            dependency: Some(MODEL),
            ..Condition::default()
        };
        let rule = Rule { mode: DegradationMode::Constrained, workflow: None, enter, exit: None, min_dwell_us: 0 };
        let cfg = config(vec![rule]);
        let mut m = ModeMachine::new(0);
        let breakers = [(0u16, BreakerState::Open)];
        let mut refused = [0.0; Refusal::COUNT];
        refused[Refusal::RetryBudget.index()] = 2.0;
        fn sig<'a>(now_s: u64, breakers: &'a [(u16, BreakerState)], refused: &'a [f64; Refusal::COUNT]) -> Signals<'a> {
            Signals {
                now: now_s * S,
                breakers,
                queue_depths: &[0],
                refused_per_s: refused,
                budget: BudgetState::Healthy,
            }
        }
        assert_eq!(m.evaluate(&cfg, &sig(0, &breakers, &refused)).map(|t| t.to), Some(DegradationMode::Constrained));
        let calm = [0.0; Refusal::COUNT];
        assert_eq!(m.evaluate(&cfg, &sig(5, &breakers, &calm)).map(|t| t.to), Some(DegradationMode::Recovery));
        for now in [10, 15, 20, 25] {
            m.evaluate(&cfg, &sig(now, &breakers, &calm));
            assert!(!m.run_mode(&cfg, 0.0).canary, "an open watched breaker keeps the probes from passing");
        }
    }
}
