//! One workflow's degradation mode as a pure state machine (docs/essay.md section 16): rules
//! latch on their enter condition (held for `for_ms`) and unlatch on their exit condition
//! (hysteresis), the most severe latched rule names the mode, a mode is left only after its
//! minimum dwell (backed off after failed recoveries), and the way back goes through RECOVERY:
//! probes (the trigger clear and its breakers closed for some evaluations), then canary stages
//! of runs on the normal policy, judged as Flagger judges a canary (their own full-quality
//! success and their deadline misses against the other runs'), back to the mode left when a
//! stage fails. While a watched breaker is half-open, a share of new runs goes on the normal
//! policy (probe runs), so a mode that stops calling a dependency cannot starve its breaker.

use super::config::{Condition, Degradation, Promotion, breaker_matches};
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
    /// This workflow's error budgets: its own, then one per budget dependency.
    pub budgets: &'a [BudgetState],
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
        let budget = sig.budgets[self.budget_slot];
        if let Some(at_least) = self.budget_at_least {
            any = true;
            all &= budget >= at_least;
        }
        if let Some(at_most) = self.budget_at_most {
            any = true;
            all &= budget <= at_most;
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

/// What a canary stage has seen so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StageTally {
    /// Canary runs ended, those answered at full quality in time, those past their deadline.
    pub runs: u32,
    pub good: u32,
    pub late: u32,
    /// The other runs of the workflow ended during the stage, and those past their deadline.
    pub others: u32,
    pub others_late: u32,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Not recovering.
    Steady,
    /// The trigger has been clear for `clear` evaluations.
    Probing { clear: u32 },
    /// Canary stage `stage` since `since_us` (moved forward while the canary is stopped, so a
    /// stopped stage's clock does not run).
    Canary { stage: usize, since_us: Micros, tally: StageTally },
    /// Every stage passed; a human approves the return at `at_us`. The last stage is still
    /// judged meanwhile, as Flagger goes on running its checks while promotion waits.
    Approval { at_us: Micros, tally: StageTally },
}

/// A change of mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    pub from: DegradationMode,
    pub to: DegradationMode,
    /// A move to a more severe mode soon after a move to a milder one.
    pub flap: bool,
    /// A canary stage failed: the move back from RECOVERY to the mode it left.
    pub failed_canary: bool,
}

/// How a new run is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunMode {
    /// The workflow's mode as the run starts (outcomes by mode).
    pub label: DegradationMode,
    /// Whose overrides it runs under: the mode's, the mode left (recovery) or normal (canary
    /// and probe runs).
    pub overrides: DegradationMode,
    pub canary: bool,
    /// Sent on the normal policy so that a half-open breaker gets trial calls.
    pub probe: bool,
}

/// How a run ended, as a canary stage judges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunVerdict {
    /// Answered at full quality (no fallback, nothing omitted), or handed off only because its
    /// writes were paused with everything before them at full quality.
    pub full_quality: bool,
    pub deadline_exceeded: bool,
}

#[derive(Debug, Clone)]
pub struct ModeMachine {
    workflow: usize,
    mode: DegradationMode,
    since_us: Micros,
    latched: u64,
    /// Per rule: evaluations in a row its `when` has held while unlatched.
    held: Vec<u32>,
    /// The degraded mode a recovery came from (its overrides stay in force for non-canary runs).
    back_to: DegradationMode,
    phase: Phase,
    /// When the workflow last moved to a milder mode.
    relieved_us: Option<Micros>,
    /// Canaries failed in a row since the workflow was last normal.
    failed_recoveries: u32,
    /// Some watched breaker wanted trial calls at the last evaluation (half-open, or open
    /// and leaving OPEN only on a call).
    half_open: bool,
    /// The canary takes no new run (the budget is too bad).
    canary_stopped: bool,
    /// The transition being made follows a failed canary stage.
    canary_failed: bool,
}

impl ModeMachine {
    pub fn new(workflow: usize, rules: usize) -> Self {
        ModeMachine {
            workflow,
            mode: DegradationMode::Normal,
            since_us: 0,
            latched: 0,
            held: vec![0; rules],
            back_to: DegradationMode::Normal,
            phase: Phase::Steady,
            relieved_us: None,
            failed_recoveries: 0,
            half_open: false,
            canary_stopped: false,
            canary_failed: false,
        }
    }

    pub fn mode(&self) -> DegradationMode {
        self.mode
    }

    /// The mode whose paused writes apply now to every run of the workflow, whatever it started
    /// in: the mode itself, or during a recovery the mode left (canary runs included: a write
    /// sent before the return is over is the damage the pause is there to stop).
    pub fn pausing_mode(&self) -> DegradationMode {
        match self.mode {
            DegradationMode::Recovery => self.back_to,
            m => m,
        }
    }

    /// A new run's treatment; `u` is its own uniform draw in [0, 1).
    pub fn run_mode(&self, cfg: &Degradation, u: f64) -> RunMode {
        let on = |overrides, canary, probe| RunMode { label: self.mode, overrides, canary, probe };
        let probing = self.half_open && u < cfg.recovery.probe_share;
        match (self.mode, self.phase) {
            (DegradationMode::Normal, _) => on(DegradationMode::Normal, false, false),
            (DegradationMode::Recovery, Phase::Canary { stage, .. })
                if !self.canary_stopped && u < cfg.recovery.canary_stages[stage] =>
            {
                on(DegradationMode::Normal, true, false)
            }
            (DegradationMode::Recovery, Phase::Approval { .. }) => on(DegradationMode::Normal, true, false),
            _ if probing => on(DegradationMode::Normal, false, true),
            (DegradationMode::Recovery, _) => on(self.back_to, false, false),
            (m, _) => on(m, false, false),
        }
    }

    /// A run that started in the current recovery ended: a canary run counts for its stage, the
    /// others are what it is compared with.
    pub fn run_ended(&mut self, canary: bool, verdict: RunVerdict) {
        if let Phase::Canary { tally, .. } | Phase::Approval { tally, .. } = &mut self.phase {
            let late = u32::from(verdict.deadline_exceeded);
            if canary {
                tally.runs += 1;
                tally.good += u32::from(verdict.full_quality && !verdict.deadline_exceeded);
                tally.late += late;
            } else {
                tally.others += 1;
                tally.others_late += late;
            }
        }
    }

    /// Reads the signals, updates the rules' latches and moves the mode if it must.
    pub fn evaluate(&mut self, cfg: &Degradation, sig: &Signals) -> Option<Transition> {
        self.update_latches(cfg, sig);
        let watched = &cfg.watched[self.workflow];
        let watched_states = || {
            sig.breakers
                .iter()
                .filter(|(b, _)| watched.contains(&cfg.breaker_dependencies[*b as usize]))
                .map(|(_, s)| *s)
        };
        // A breaker needs trial calls while half-open, and one without a timer of its own
        // (resilience4j without automatic transition, Polly) needs a call to leave OPEN at all.
        self.half_open = sig.breakers.iter().any(|&(b, s)| {
            watched.contains(&cfg.breaker_dependencies[b as usize])
                && match s {
                    BreakerState::HalfOpen => true,
                    BreakerState::Open => cfg.breaker_half_opens_on_call[b as usize],
                    BreakerState::Closed => false,
                }
        });
        let all_closed = watched_states().all(|s| s == BreakerState::Closed);
        self.canary_stopped =
            cfg.recovery.stop_canary_when_budget.is_some_and(|worst| sig.budgets.iter().any(|&b| b >= worst));
        if let (true, Phase::Canary { since_us, .. }) = (self.canary_stopped, &mut self.phase) {
            *since_us = since_us.saturating_add(cfg.interval_us).min(sig.now);
        }
        let target = self.target(cfg);
        let now = sig.now;
        let to = match self.mode {
            DegradationMode::Normal => target.is_degraded().then_some(target),
            DegradationMode::Recovery => {
                if target.is_degraded() {
                    Some(target)
                } else {
                    self.recover(cfg, now, all_closed)
                }
            }
            current => {
                let dwell = cfg.backed_off_dwell_us(current, self.failed_recoveries);
                let dwelt = now.saturating_sub(self.since_us) >= dwell;
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
                // Prometheus's `for:`: the condition must hold at every evaluation for a while.
                self.held[i] = if rule.enter.holds(cfg, sig) { self.held[i].saturating_add(1) } else { 0 };
                self.held[i] >= rule.for_evaluations
            };
            if now_latched {
                self.held[i] = 0;
            }
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

    /// One evaluation of a recovery with no rule latched: probe, judge the canary stage, wait
    /// for the approval.
    fn recover(&mut self, cfg: &Degradation, now: Micros, all_closed: bool) -> Option<DegradationMode> {
        let plan = &cfg.recovery;
        match self.phase {
            Phase::Steady => unreachable!("a recovery always has a phase (asserted at every transition)"),
            Phase::Probing { clear } => {
                // Every watched breaker closed: a half-open one has not yet shown that the
                // dependency answers again.
                let clear = if all_closed { clear + 1 } else { 0 };
                self.phase = if clear >= plan.probe_evaluations {
                    Phase::Canary { stage: 0, since_us: now, tally: StageTally::default() }
                } else {
                    Phase::Probing { clear }
                };
                None
            }
            Phase::Canary { stage, since_us, tally } => match judge_stage(cfg, now.saturating_sub(since_us), tally) {
                StageVerdict::Pending => None,
                StageVerdict::Failed => {
                    self.failed_recoveries = self.failed_recoveries.saturating_add(1);
                    self.canary_failed = true;
                    Some(self.back_to)
                }
                StageVerdict::Passed if stage + 1 < plan.canary_stages.len() => {
                    self.phase = Phase::Canary { stage: stage + 1, since_us: now, tally: StageTally::default() };
                    None
                }
                StageVerdict::Passed => match plan.promotion {
                    Promotion::Automatic => Some(DegradationMode::Normal),
                    Promotion::Manual => {
                        self.phase = Phase::Approval { at_us: now.saturating_add(plan.approval_us), tally };
                        None
                    }
                },
            },
            Phase::Approval { at_us, tally } => {
                if judge_stage(cfg, 0, tally) == StageVerdict::Failed {
                    self.failed_recoveries = self.failed_recoveries.saturating_add(1);
                    self.canary_failed = true;
                    return Some(self.back_to);
                }
                (now >= at_us).then_some(DegradationMode::Normal)
            }
        }
    }

    fn enter(&mut self, cfg: &Degradation, now: Micros, to: DegradationMode) -> Transition {
        let from = self.mode;
        debug_assert_ne!(from, to, "a transition changes the mode");
        let escalation = to.severity() > from.severity();
        let soon = self.relieved_us.is_some_and(|t| now.saturating_sub(t) < cfg.flap_window_us);
        // A failed canary stage is a flap however long the recovery took.
        let flap = escalation && (soon || self.canary_failed);
        if !escalation {
            self.relieved_us = Some(now);
        }
        match to {
            DegradationMode::Recovery => {
                self.back_to = from;
                self.phase = Phase::Probing { clear: 0 };
            }
            DegradationMode::Normal => {
                self.failed_recoveries = 0;
                self.phase = Phase::Steady;
            }
            DegradationMode::Constrained
            | DegradationMode::Degraded
            | DegradationMode::Handoff
            | DegradationMode::Paused => self.phase = Phase::Steady,
        }
        self.mode = to;
        self.since_us = now;
        self.assert_invariants();
        let failed_canary = std::mem::take(&mut self.canary_failed);
        Transition { from, to, flap, failed_canary }
    }

    fn assert_invariants(&self) {
        let recovering = self.mode == DegradationMode::Recovery;
        assert_eq!(recovering, self.phase != Phase::Steady, "only a recovery has a probing, canary or approval phase");
        assert!(!recovering || self.back_to.is_degraded(), "a recovery returns from a degraded mode");
        assert!(
            self.mode != DegradationMode::Normal || self.failed_recoveries == 0,
            "normal forgets failed recoveries"
        );
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StageVerdict {
    Pending,
    Passed,
    Failed,
}

/// Flagger's analysis: once a stage has its `min_canary_runs`, a check that fails ends it at
/// once (a failure is not waited out); a pass waits for `stage_ms`. A stage still short of its
/// runs at the progress deadline fails: no evidence is no pass.
fn judge_stage(cfg: &Degradation, elapsed_us: Micros, t: StageTally) -> StageVerdict {
    let plan = &cfg.recovery;
    if t.runs < plan.min_canary_runs {
        return if elapsed_us >= plan.progress_deadline_us { StageVerdict::Failed } else { StageVerdict::Pending };
    }
    let success = f64::from(t.good) / f64::from(t.runs);
    let late = f64::from(t.late) / f64::from(t.runs);
    let others_late = if t.others == 0 { 0.0 } else { f64::from(t.others_late) / f64::from(t.others) };
    if success < plan.canary_min_success || late > others_late + plan.canary_max_deadline_miss_increase {
        StageVerdict::Failed
    } else if elapsed_us >= plan.stage_us {
        StageVerdict::Passed
    } else {
        StageVerdict::Pending
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
                canary_min_success: 0.75,
                ..RecoveryPlan::default()
            },
            watched: vec![vec![MODEL]],
            budget_dependencies: Vec::new(),
            breaker_dependencies: vec![MODEL],
            breaker_half_opens_on_call: vec![false],
            warnings: Vec::new(),
        }
    }

    fn breaker_rule() -> Rule {
        let enter =
            Condition { dependency: Some(MODEL), breaker: Some(BreakerCheck::NotClosed), ..Condition::default() };
        Rule {
            mode: DegradationMode::Constrained,
            workflow: None,
            enter,
            exit: None,
            min_dwell_us: 60 * S,
            for_evaluations: 1,
        }
    }

    fn verdict(full_quality: bool) -> RunVerdict {
        RunVerdict { full_quality, deadline_exceeded: false }
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
            let budgets = [self.budget];
            let sig = Signals {
                now: at_s * S,
                breakers: &breakers,
                queue_depths: &depths,
                refused_per_s: &refused,
                budgets: &budgets,
            };
            m.evaluate(cfg, &sig).map(|t| t.to)
        }
    }

    #[test]
    fn a_breaker_moves_the_workflow_to_constrained_and_the_return_goes_through_probes_and_a_canary() {
        let cfg = config(vec![breaker_rule()]);
        let mut m = ModeMachine::new(0, cfg.rules.len());
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
        assert_eq!(m.pausing_mode(), DegradationMode::Constrained, "the mode left still pauses, canary runs too");
        assert_eq!(w.tick(&mut m, &cfg, 110), None, "probe 1 of 2");
        assert_eq!(w.tick(&mut m, &cfg, 115), None, "probe 2 of 2: the canary starts");
        let canary = m.run_mode(&cfg, 0.05);
        assert!(
            canary.canary && canary.overrides == DegradationMode::Normal && canary.label == DegradationMode::Recovery
        );
        assert!(!m.run_mode(&cfg, 0.5).canary, "90 % of runs stay constrained in stage 1");
        for good in [true, true, true, false] {
            m.run_ended(true, verdict(good));
        }
        assert_eq!(w.tick(&mut m, &cfg, 140), None, "25 s: the stage is not over");
        assert_eq!(w.tick(&mut m, &cfg, 145), None, "30 s, 3 of 4 good = 75 %: stage 2");
        assert!(m.run_mode(&cfg, 0.99).canary, "stage 2 sends every new run on the normal policy");
        for _ in 0..4 {
            m.run_ended(true, verdict(true));
        }
        assert_eq!(w.tick(&mut m, &cfg, 175), Some(DegradationMode::Normal));
        assert_eq!(
            m.run_mode(&cfg, 0.0),
            RunMode { label: DegradationMode::Normal, overrides: DegradationMode::Normal, canary: false, probe: false }
        );
    }

    #[test]
    fn the_minimum_dwell_holds_a_mode_after_its_trigger_clears() {
        let cfg = config(vec![breaker_rule()]);
        let mut m = ModeMachine::new(0, cfg.rules.len());
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
        let rule = Rule {
            mode: DegradationMode::Degraded,
            workflow: None,
            enter,
            exit: Some(exit),
            min_dwell_us: 0,
            for_evaluations: 1,
        };
        let cfg = config(vec![rule]);
        let mut m = ModeMachine::new(0, cfg.rules.len());
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
            for_evaluations: 1,
        };
        let cfg = config(vec![breaker_rule(), paused]);
        let mut m = ModeMachine::new(0, cfg.rules.len());
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
            for_evaluations: 1,
        };
        let cfg = config(vec![rule]);
        let mut m = ModeMachine::new(0, cfg.rules.len());
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
        let mut m = ModeMachine::new(0, cfg.rules.len());
        let mut w = World::calm();
        w.breaker = BreakerState::Open;
        w.tick(&mut m, &cfg, 0);
        w.breaker = BreakerState::Closed;
        w.tick(&mut m, &cfg, 60);
        w.tick(&mut m, &cfg, 65);
        w.tick(&mut m, &cfg, 70);
        for good in [true, false, false, true] {
            m.run_ended(true, verdict(good));
        }
        let back = {
            let breakers = [(0u16, BreakerState::Closed)];
            let refused = [0.0; Refusal::COUNT];
            let sig = Signals {
                now: 100 * S,
                breakers: &breakers,
                queue_depths: &[0],
                refused_per_s: &refused,
                budgets: &[BudgetState::Healthy],
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
        let rule = Rule {
            mode: DegradationMode::Constrained,
            workflow: None,
            enter,
            exit: None,
            min_dwell_us: 0,
            for_evaluations: 1,
        };
        let cfg = config(vec![rule]);
        let mut m = ModeMachine::new(0, cfg.rules.len());
        let breakers = [(0u16, BreakerState::Open)];
        let mut refused = [0.0; Refusal::COUNT];
        refused[Refusal::RetryBudget.index()] = 2.0;
        fn sig<'a>(now_s: u64, breakers: &'a [(u16, BreakerState)], refused: &'a [f64; Refusal::COUNT]) -> Signals<'a> {
            Signals {
                now: now_s * S,
                breakers,
                queue_depths: &[0],
                refused_per_s: refused,
                budgets: &[BudgetState::Healthy],
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
