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

    /// The mode whose overrides apply now to work already running (paused writes).
    pub fn acting_mode(&self) -> DegradationMode {
        match self.mode {
            DegradationMode::Recovery => self.back_to,
            m => m,
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
                let watched = &cfg.watched[self.workflow];
                let closed = sig.breakers.iter().all(|(b, s)| {
                    *s == BreakerState::Closed || !watched.contains(&cfg.breaker_dependencies[*b as usize])
                });
                let clear = if closed { clear + 1 } else { 0 };
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
