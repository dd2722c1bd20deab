//! A policy's degradation modes, compiled: the rules that move a workflow between modes, what
//! each mode changes in a run, the error budget and the staged return (docs/essay.md sections
//! 16, 24 and 28; docs/scenario.md section 8.16).

use super::error_budget::ErrorBudget;
use crate::runtime::budget::BudgetLimits;
use crate::runtime::fan_out::FanOutLimits;
use crate::sim::Micros;
use crate::vocab::{BreakerState, BudgetState, DegradationMode, Refusal};

/// What a rule's breaker condition asks of the breakers on its dependency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerCheck {
    /// Some breaker on the dependency is open.
    Open,
    /// Some breaker is open or half-open.
    NotClosed,
    /// Every breaker is closed.
    Closed,
}

crate::named_enum! {
    /// Which fallback a step takes in a mode.
    pub enum FallbackMode {
        /// The dependency first, then the step's fallback.
        Normal => "normal",
        /// Straight to the step's fallback (the evaluated cheaper model, the snapshot).
        FallbackFirst => "fallback_first",
        /// No fallback: the step's own attempts only.
        NoFallback => "no_fallback",
    }
}

/// Every condition set must hold (an empty condition never holds).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Condition {
    pub dependency: Option<usize>,
    pub breaker: Option<BreakerCheck>,
    /// Which of the workflow's budgets the budget conditions read: 0 the workflow's own, k + 1
    /// the one attributed to `Degradation::budget_dependencies[k]`.
    pub budget_slot: usize,
    pub budget_at_least: Option<BudgetState>,
    /// In an exit condition: the budget is back to this state or better.
    pub budget_at_most: Option<BudgetState>,
    pub queue_depth_above: Option<u32>,
    pub queue_depth_below: Option<u32>,
    pub refusal: Option<Refusal>,
    pub refused_per_s_above: Option<f64>,
    pub refused_per_s_below: Option<f64>,
}

/// One `runtime_policy` rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub mode: DegradationMode,
    /// The workflow it watches, or every workflow.
    pub workflow: Option<usize>,
    pub enter: Condition,
    /// None: leave when `enter` no longer holds.
    pub exit: Option<Condition>,
    pub min_dwell_us: Micros,
    /// Evaluations in a row `enter` must hold before the rule latches (1: at once).
    pub for_evaluations: u32,
}

/// What a mode changes in the runs that start in it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModeOverrides {
    pub budget: BudgetLimits,
    pub fan_out: FanOutLimits,
    pub hedging: bool,
    /// `omit[w][s]`: soft step s of workflow w is not started.
    pub omit: Vec<Vec<bool>>,
    pub fallback: FallbackMode,
    /// `fallback_first[w][s]`: step s of workflow w goes straight to its fallback.
    pub fallback_first: Vec<Vec<bool>>,
    pub pause_writes: bool,
    /// `pause_writes_to[d]`: writes to dependency d are paused (empty when none is).
    pub pause_writes_to: Vec<bool>,
    pub refuse_new_runs: bool,
    /// Entering this mode (PAUSED only) cancels the workflow's runs in flight.
    pub cancel_in_flight: bool,
    /// Some step is omitted or sent to its fallback first (the per-step tables are read).
    pub per_step: bool,
}

/// The scalar part of a mode's overrides, copied into a run as it starts, so the run's hot
/// paths read no table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Treatment {
    pub fan_out: FanOutLimits,
    pub hedging: bool,
    pub fallback: FallbackMode,
    pub per_step: bool,
}

impl Treatment {
    /// A policy without modes, before a run starts.
    pub const PLAIN: Treatment =
        Treatment { fan_out: FanOutLimits::NONE, hedging: true, fallback: FallbackMode::Normal, per_step: false };
}

/// Which writes a mode stops now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WritePause<'a> {
    #[default]
    None,
    All,
    /// Writes to the dependencies marked true.
    To(&'a [bool]),
}

impl WritePause<'_> {
    /// Whether a write to `dependency` is paused.
    #[inline]
    pub fn covers(self, dependency: usize) -> bool {
        match self {
            WritePause::None => false,
            WritePause::All => true,
            WritePause::To(paused) => paused.get(dependency).copied().unwrap_or(false),
        }
    }
}

impl ModeOverrides {
    /// The writes this mode pauses.
    pub fn write_pause(&self) -> WritePause<'_> {
        if self.pause_writes {
            WritePause::All
        } else if self.pause_writes_to.is_empty() {
            WritePause::None
        } else {
            WritePause::To(&self.pause_writes_to)
        }
    }

    pub fn treatment(&self) -> Treatment {
        Treatment { fan_out: self.fan_out, hedging: self.hedging, fallback: self.fallback, per_step: self.per_step }
    }
}

crate::named_enum! {
    /// Who lets a workflow back to normal after the canary's last stage.
    pub enum Promotion {
        /// The last stage passing is enough.
        Automatic => "automatic",
        /// A human approves it, `approval_ms` after the last stage passed.
        Manual => "manual",
    }
}

/// The staged return to normal operation.
#[derive(Debug, Clone, PartialEq)]
pub struct RecoveryPlan {
    pub probe_evaluations: u32,
    /// Share of new runs sent on the normal policy while a watched breaker is half-open.
    pub probe_share: f64,
    /// Shares of new runs on the normal policy; the last is 1.
    pub canary_stages: Vec<f64>,
    pub stage_us: Micros,
    /// At least 1: a stage with no canary run never passes.
    pub min_canary_runs: u32,
    /// The least share of a stage's canary runs answered at full quality, in time.
    pub canary_min_success: f64,
    /// How much more often than the other runs of the stage a canary run may miss its deadline.
    pub canary_max_deadline_miss_increase: f64,
    /// A stage short of `min_canary_runs` this long after it began fails.
    pub progress_deadline_us: Micros,
    /// The dwell after k failed recoveries in a row is `min_dwell x backoff_multiplier^k`.
    pub backoff_multiplier: f64,
    pub max_dwell_us: Micros,
    /// While the budget is at least this bad, the canary takes no new run.
    pub stop_canary_when_budget: Option<BudgetState>,
    pub promotion: Promotion,
    pub approval_us: Micros,
}

impl Default for RecoveryPlan {
    fn default() -> Self {
        RecoveryPlan {
            probe_evaluations: 3,
            probe_share: 0.05,
            canary_stages: vec![0.05, 0.25, 1.0],
            stage_us: 60_000_000,
            min_canary_runs: 20,
            canary_min_success: 0.95,
            canary_max_deadline_miss_increase: 0.05,
            progress_deadline_us: 600_000_000,
            backoff_multiplier: 2.0,
            max_dwell_us: 1_800_000_000,
            stop_canary_when_budget: None,
            promotion: Promotion::Automatic,
            approval_us: 300_000_000,
        }
    }
}

/// A policy's degradation: its rules, the error budget and the return (the overrides of each
/// mode live in the policy, `PolicyModel::modes`).
#[derive(Debug, Clone, PartialEq)]
pub struct Degradation {
    pub interval_us: Micros,
    pub flap_window_us: Micros,
    /// The most flaps per hour `explore` accepts.
    pub max_flaps_per_hour: f64,
    pub rules: Vec<Rule>,
    pub error_budget: Option<ErrorBudget>,
    pub recovery: RecoveryPlan,
    /// Per workflow: the dependencies its rules watch (the breakers probed before a return).
    pub watched: Vec<Vec<usize>>,
    /// The dependencies a budget rule names: each has a budget of its own per workflow.
    pub budget_dependencies: Vec<usize>,
    /// The dependency each breaker guards, by breaker label index.
    pub breaker_dependencies: Vec<usize>,
    /// Whether each breaker leaves OPEN only on a call after its wait, by label index.
    pub breaker_half_opens_on_call: Vec<bool>,
    /// What `validate` warns of: rules that compile but may not do what they seem to.
    pub warnings: Vec<crate::scenario::ScenarioError>,
}

impl Degradation {
    /// Error budgets per workflow: its own and one per budget dependency (0 without a budget).
    pub fn budget_groups_per_workflow(&self) -> usize {
        if self.error_budget.is_some() { 1 + self.budget_dependencies.len() } else { 0 }
    }

    /// Time-series columns per error budget: state, spent share, two burn rates per rule.
    pub fn budget_width(&self) -> usize {
        self.error_budget.as_ref().map_or(0, |b| 2 + 2 * b.rules.len())
    }

    /// The least time a workflow stays in `mode` before it may leave it.
    pub fn min_dwell_us(&self, mode: DegradationMode) -> Micros {
        self.rules.iter().filter(|r| r.mode == mode).map(|r| r.min_dwell_us).max().unwrap_or(0)
    }

    /// The dwell after `failed_recoveries` failed canaries in a row: backed off, capped (never
    /// below the mode's own dwell).
    pub fn backed_off_dwell_us(&self, mode: DegradationMode, failed_recoveries: u32) -> Micros {
        let base = self.min_dwell_us(mode);
        let factor = self.recovery.backoff_multiplier.powi(failed_recoveries.min(64) as i32);
        let backed = (base as f64 * factor).min(self.recovery.max_dwell_us as f64) as Micros;
        backed.max(base)
    }
}

/// The one default a policy with no modes has: nothing changes.
pub fn normal_overrides(budget: BudgetLimits, fan_out: FanOutLimits, hedging: bool, steps: &[usize]) -> ModeOverrides {
    ModeOverrides {
        budget,
        fan_out,
        hedging,
        omit: steps.iter().map(|&n| vec![false; n]).collect(),
        fallback: FallbackMode::Normal,
        fallback_first: steps.iter().map(|&n| vec![false; n]).collect(),
        pause_writes: false,
        pause_writes_to: Vec::new(),
        refuse_new_runs: false,
        cancel_in_flight: false,
        per_step: false,
    }
}

/// Breaker states as the conditions read them.
pub fn breaker_matches(check: BreakerCheck, states: impl Iterator<Item = BreakerState>) -> bool {
    let mut any_open = false;
    let mut any_not_closed = false;
    for s in states {
        any_open |= s == BreakerState::Open;
        any_not_closed |= s != BreakerState::Closed;
    }
    match check {
        BreakerCheck::Open => any_open,
        BreakerCheck::NotClosed => any_not_closed,
        BreakerCheck::Closed => !any_not_closed,
    }
}
