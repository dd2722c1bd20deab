//! A workflow's error budget over a rolling SLO period, with the SRE workbook's multiwindow,
//! multi-burn-rate alerts ("Alerting on SLOs", table 5-8: page when 2 % of a 30-day budget
//! burns in 1 h (rate 14.4, checked over 5 min too), page when 5 % burns in 6 h (rate 6, and
//! 30 min), ticket when 10 % burns in 3 days (rate 1, and 6 h)), plus the essay's integrity
//! incident (section 24). Counts live in a ring of evaluation intervals; each window and the
//! period keep a running sum, so an evaluation costs a few additions per window.

use crate::vocab::BudgetState;

crate::named_enum! {
    /// What a burn-rate rule does when it fires.
    pub enum Severity {
        /// The budget is at risk: rules on `at_risk` act.
        Page => "page",
        /// Reported (`error_budget_ticket_time_s`), no rule acts on it.
        Ticket => "ticket",
    }
}

/// One burn-rate rule, its windows counted in evaluation intervals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BurnRule {
    pub long_intervals: usize,
    pub short_intervals: usize,
    pub burn_rate: f64,
    pub severity: Severity,
}

crate::named_enum! {
    /// Which root runs count as good.
    pub enum Sli {
        /// Succeeded or degraded: the user got an automatic answer.
        AutoCompletion => "auto_completion",
        /// Succeeded with nothing left out and no fallback.
        FullQuality => "full_quality",
        /// An automatic answer within the deadline.
        OnTime => "on_time",
        /// An answer, an honest hand-off or an up-front refusal, with no duplicate effect.
        SafeOutcome => "safe_outcome",
    }
}

crate::named_enum! {
    /// How a run refused before it started (`rejected`) counts against the budget.
    pub enum RefusedRuns {
        /// Not an event of the SLI: a refusal the policy chose is neither good nor bad.
        Excluded => "excluded",
        Bad => "bad",
        Good => "good",
    }
}

/// What an error budget is measured against.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorBudget {
    /// The share of good runs promised, in (0, 1).
    pub objective: f64,
    pub sli: Sli,
    /// The rolling period, in evaluation intervals.
    pub period_intervals: usize,
    /// Runs a window or the period needs before it is judged.
    pub min_runs: u32,
    pub refused: RefusedRuns,
    pub rules: Vec<BurnRule>,
}

/// How a run ended, as the SLIs read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunEnd {
    pub outcome: crate::vocab::Outcome,
    pub deadline_exceeded: bool,
    /// Nothing left out, no fallback.
    pub full_quality: bool,
    /// All it lacks is what its mode chose (omitted steps, fallbacks first).
    pub degraded_by_mode_only: bool,
    /// Cancelled in flight as its workflow entered a mode with `cancel_in_flight`: counted as
    /// a refused run (the mode's choice, as `refuse_new_runs` is), not as a failure.
    pub cancelled_by_mode: bool,
    /// Handed off because its mode paused its write: the mode's choice too, counted as a
    /// refused run when the SLI would have judged it good up to the write.
    pub write_paused_by_mode: bool,
    /// Counted when its last attempt left its station (the safe-outcome SLI).
    pub duplicate_effect: bool,
}

impl ErrorBudget {
    /// Whether the run is bad under the SLI; None when it is no event of it.
    pub fn is_bad(&self, run: RunEnd) -> Option<bool> {
        use crate::vocab::Outcome;
        // A run the mode cancelled is the mode's own refusal, made later: counted as refused
        // runs are, so a PAUSED rule on this budget does not see a burst of its own
        // cancellations at entry (with `refused_runs = "bad"`, the SLO owner's choice, it does).
        // A run handed off because its mode paused its write: the user gets a human's answer
        // because the mode chose so. Held against the budget, a HANDOFF rule on it could only
        // worsen it and never let go (every run it starts is handed off), as refusals once did.
        // What went wrong before the write still counts; the safe-outcome SLI counts a handoff
        // as good anyway.
        let paused_only = run.write_paused_by_mode
            && match self.sli {
                Sli::AutoCompletion => true,
                Sli::FullQuality => run.full_quality || run.degraded_by_mode_only,
                Sli::OnTime => !run.deadline_exceeded,
                Sli::SafeOutcome => false,
            };
        if run.outcome == Outcome::Rejected || run.cancelled_by_mode || paused_only {
            return match self.refused {
                RefusedRuns::Excluded => None,
                RefusedRuns::Bad => Some(true),
                RefusedRuns::Good => Some(false),
            };
        }
        if self.sli == Sli::FullQuality && run.outcome == Outcome::Degraded && run.degraded_by_mode_only {
            // The mode's own choice is no event of the SLI: counted bad, a mode that omits a
            // step would hold its own rule latched (every run it starts is degraded).
            return None;
        }
        let good = match self.sli {
            Sli::AutoCompletion => run.outcome.is_success(),
            Sli::FullQuality => run.outcome == Outcome::Succeeded && run.full_quality,
            Sli::OnTime => run.outcome.is_success() && !run.deadline_exceeded,
            Sli::SafeOutcome => run.outcome.is_safe() && !run.duplicate_effect,
        };
        Some(!good)
    }

    /// The SLI that waits for a run's last attempt to leave its station.
    pub fn counts_at_finalize(&self) -> bool {
        self.sli == Sli::SafeOutcome
    }

    /// The longest span the ring must keep, in intervals.
    pub fn longest_intervals(&self) -> usize {
        let windows = self.rules.iter().map(|r| r.long_intervals.max(r.short_intervals)).max().unwrap_or(1);
        windows.max(self.period_intervals).max(1)
    }

    /// The workbook's three rules for a 30-day period, scaled to `period_intervals` (each window
    /// keeps its share of the period, rounded up to whole intervals; the rates keep their
    /// meaning: the share of the period's budget a window burns).
    pub fn workbook_rules(period_intervals: usize) -> Vec<BurnRule> {
        let scaled = |share_of_30_days: f64| ((period_intervals as f64 * share_of_30_days).ceil() as usize).max(1);
        let hours = |h: f64| h / (30.0 * 24.0);
        vec![
            BurnRule {
                long_intervals: scaled(hours(1.0)),
                short_intervals: scaled(hours(5.0 / 60.0)),
                burn_rate: 14.4,
                severity: Severity::Page,
            },
            BurnRule {
                long_intervals: scaled(hours(6.0)),
                short_intervals: scaled(hours(0.5)),
                burn_rate: 6.0,
                severity: Severity::Page,
            },
            BurnRule {
                long_intervals: scaled(hours(72.0)),
                short_intervals: scaled(hours(6.0)),
                burn_rate: 1.0,
                severity: Severity::Ticket,
            },
        ]
    }
}

/// One evaluation interval's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct IntervalCounts {
    pub runs: u32,
    pub bad: u32,
    /// Duplicate effects and writes left unknown.
    pub integrity: u32,
}

impl IntervalCounts {
    fn add(&mut self, o: IntervalCounts) {
        self.runs += o.runs;
        self.bad += o.bad;
        self.integrity += o.integrity;
    }

    fn sub(&mut self, o: IntervalCounts) {
        debug_assert!(self.runs >= o.runs && self.bad >= o.bad && self.integrity >= o.integrity);
        self.runs -= o.runs;
        self.bad -= o.bad;
        self.integrity -= o.integrity;
    }

    /// Bad share over the budget's share; 0 with fewer runs than the budget judges.
    fn burn(&self, budget: &ErrorBudget) -> f64 {
        if self.runs == 0 || self.runs < budget.min_runs {
            0.0
        } else {
            (f64::from(self.bad) / f64::from(self.runs)) / (1.0 - budget.objective)
        }
    }
}

/// What an evaluation found, for the metrics and the time series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetReading {
    pub state: BudgetState,
    /// A ticket rule fires.
    pub ticket: bool,
    /// The share of the period's budget spent so far (the period's runs extrapolated to a
    /// whole period while it is not yet full).
    pub spent: f64,
    /// The burn rates of the first rule's long and short windows.
    pub long_burn: f64,
    pub short_burn: f64,
}

/// The ring of the last intervals with the running sums of each window and of the period.
#[derive(Debug, Clone)]
pub struct BudgetWindows {
    ring: Vec<IntervalCounts>,
    /// Index of the interval being filled.
    head: usize,
    /// Intervals closed so far.
    closed: usize,
    /// Window lengths in intervals: the period, then each rule's long and short windows.
    lengths: Vec<usize>,
    sums: Vec<IntervalCounts>,
}

impl BudgetWindows {
    pub fn new(budget: &ErrorBudget) -> Self {
        let mut lengths = vec![budget.period_intervals.max(1)];
        for r in &budget.rules {
            lengths.push(r.long_intervals);
            lengths.push(r.short_intervals);
        }
        BudgetWindows {
            // One slot more than the longest span: the interval that leaves a window is still
            // in the ring when it is subtracted.
            ring: vec![IntervalCounts::default(); budget.longest_intervals() + 1],
            head: 0,
            closed: 0,
            sums: vec![IntervalCounts::default(); lengths.len()],
            lengths,
        }
    }

    pub fn count_run(&mut self, bad: bool) {
        let c = &mut self.ring[self.head];
        c.runs += 1;
        c.bad += u32::from(bad);
    }

    pub fn count_integrity(&mut self) {
        self.ring[self.head].integrity += 1;
    }

    /// Closes the interval being filled, reads the budget, and starts a new interval.
    pub fn close_interval(&mut self, budget: &ErrorBudget) -> BudgetReading {
        let len = self.ring.len();
        let current = self.ring[self.head];
        self.closed += 1;
        for (k, &length) in self.lengths.iter().enumerate() {
            self.sums[k].add(current);
            if self.closed > length {
                self.sums[k].sub(self.ring[(self.head + len - length) % len]);
            }
        }
        let reading = self.read(budget);
        self.head = (self.head + 1) % len;
        self.ring[self.head] = IntervalCounts::default();
        reading
    }

    /// Every rule's long and short burn rates as the last closed interval left them, in rule
    /// order (the time series' columns).
    pub fn burns(&self, budget: &ErrorBudget, out: &mut Vec<f64>) {
        for r in 0..budget.rules.len() {
            out.push(self.sums[1 + 2 * r].burn(budget));
            out.push(self.sums[2 + 2 * r].burn(budget));
        }
    }

    fn read(&self, budget: &ErrorBudget) -> BudgetReading {
        let period = self.sums[0];
        let elapsed = self.closed.min(self.lengths[0]).max(1);
        let expected_runs = f64::from(period.runs) * self.lengths[0] as f64 / elapsed as f64;
        let allowed = (1.0 - budget.objective) * expected_runs;
        let spent = if allowed > 0.0 { f64::from(period.bad) / allowed } else { 0.0 };
        let windows = |r: usize| (self.sums[1 + 2 * r].burn(budget), self.sums[2 + 2 * r].burn(budget));
        let fires = |r: usize| {
            let (long, short) = windows(r);
            long >= budget.rules[r].burn_rate && short >= budget.rules[r].burn_rate
        };
        let rules = 0..budget.rules.len();
        let page = rules.clone().any(|r| budget.rules[r].severity == Severity::Page && fires(r));
        let ticket = rules.clone().any(|r| budget.rules[r].severity == Severity::Ticket && fires(r));
        let shortest = rules.clone().min_by_key(|&r| budget.rules[r].short_intervals);
        let integrity = shortest.is_some_and(|r| self.sums[2 + 2 * r].integrity > 0);
        let state = if integrity {
            BudgetState::IntegrityIncident
        } else if period.runs >= budget.min_runs && period.bad > 0 && spent >= 1.0 - 1e-9 {
            BudgetState::Exhausted
        } else if page {
            BudgetState::AtRisk
        } else {
            BudgetState::Healthy
        };
        let (long_burn, short_burn) = if budget.rules.is_empty() { (0.0, 0.0) } else { windows(0) };
        BudgetReading { state, ticket, spent, long_burn, short_burn }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::Outcome;

    /// A period of 100 intervals, one rule 12 intervals long and 1 short at 14.4 (the workbook's
    /// 1 h / 5 min pair), judged from 10 runs.
    fn budget() -> ErrorBudget {
        ErrorBudget {
            objective: 0.99,
            sli: Sli::AutoCompletion,
            period_intervals: 100,
            min_runs: 10,
            refused: RefusedRuns::Excluded,
            rules: vec![BurnRule { long_intervals: 12, short_intervals: 1, burn_rate: 14.4, severity: Severity::Page }],
        }
    }

    fn interval(w: &mut BudgetWindows, runs: u32, bad: u32) {
        for i in 0..runs {
            w.count_run(i < bad);
        }
    }

    #[test]
    fn a_burst_early_in_the_period_is_at_risk_not_exhausted() {
        // 25 bad runs of 100 in the first interval: 25 % burns 25 in both windows; the period's
        // budget is 1 % of 100 runs x 100 intervals = 100 bad runs, a quarter spent.
        let b = budget();
        let mut w = BudgetWindows::new(&b);
        interval(&mut w, 100, 25);
        let r = w.close_interval(&b);
        assert_eq!(r.state, BudgetState::AtRisk);
        assert!((r.spent - 0.25).abs() < 1e-12, "{}", r.spent);
        assert!((r.long_burn - 25.0).abs() < 1e-9 && (r.short_burn - 25.0).abs() < 1e-9, "{r:?}");
    }

    #[test]
    fn the_period_budget_is_spent_once_its_bad_runs_reach_its_share() {
        let b = budget();
        let mut w = BudgetWindows::new(&b);
        // 100 intervals of 100 runs, 1 % bad: the period is full and exactly spent.
        for k in 1..=100 {
            interval(&mut w, 100, 1);
            let r = w.close_interval(&b);
            assert!((r.spent - f64::from(k) / 100.0).abs() < 1e-9, "k bad runs of the period's 100: {}", r.spent);
            let expected = if k == 100 { BudgetState::Exhausted } else { BudgetState::Healthy };
            assert_eq!(r.state, expected, "interval {k}");
        }
        // The period rolls: 100 good intervals later the bad ones have left it.
        for _ in 0..100 {
            interval(&mut w, 100, 0);
            w.close_interval(&b);
        }
        interval(&mut w, 100, 0);
        let r = w.close_interval(&b);
        assert_eq!((r.state, r.spent), (BudgetState::Healthy, 0.0));
    }

    #[test]
    fn too_few_runs_are_not_judged() {
        let b = ErrorBudget { period_intervals: 10_000, ..budget() };
        let mut w = BudgetWindows::new(&b);
        interval(&mut w, 9, 9);
        assert_eq!(w.close_interval(&b).state, BudgetState::Healthy, "9 runs < min_runs 10");
        interval(&mut w, 1, 1);
        assert_eq!(w.close_interval(&b).state, BudgetState::Healthy, "the long window has 10 runs, the short 1");
        interval(&mut w, 10, 9);
        assert_eq!(w.close_interval(&b).state, BudgetState::AtRisk, "both windows have 10 runs or more");
    }

    #[test]
    fn at_risk_needs_the_long_window_too_and_clears_with_the_short_one() {
        // Allowed 10 % bad; the rule fires at burn 2 (20 % bad) in 4 intervals and in 1.
        let b = ErrorBudget {
            objective: 0.9,
            sli: Sli::AutoCompletion,
            period_intervals: 10_000,
            min_runs: 1,
            refused: RefusedRuns::Excluded,
            rules: vec![BurnRule { long_intervals: 4, short_intervals: 1, burn_rate: 2.0, severity: Severity::Page }],
        };
        let mut w = BudgetWindows::new(&b);
        for _ in 0..20 {
            interval(&mut w, 1000, 0);
            w.close_interval(&b);
        }
        // A short burst after good intervals: short burn 10, long 100 / 3100 = 3.2 % (burn 0.32).
        interval(&mut w, 100, 100);
        assert_eq!(
            w.close_interval(&b).state,
            BudgetState::Healthy,
            "the long window keeps one bad interval from firing"
        );
        for _ in 0..2 {
            interval(&mut w, 100, 10);
            w.close_interval(&b);
        }
        // Long (100 + 20 + 100) / 400 = 55 % (burn 5.5), short 100 % (burn 10): fires.
        interval(&mut w, 100, 100);
        assert_eq!(w.close_interval(&b).state, BudgetState::AtRisk);
        // The long window still burns, the short one no longer: the alert clears.
        interval(&mut w, 100, 0);
        assert_eq!(w.close_interval(&b).state, BudgetState::Healthy);
    }

    #[test]
    fn a_ticket_rule_is_reported_and_does_not_put_the_budget_at_risk() {
        let mut b = budget();
        b.rules[0].severity = Severity::Ticket;
        let mut w = BudgetWindows::new(&b);
        interval(&mut w, 100, 50);
        let r = w.close_interval(&b);
        assert_eq!((r.state, r.ticket), (BudgetState::Healthy, true));
    }

    #[test]
    fn a_duplicate_in_the_short_window_is_an_integrity_incident_until_it_leaves_it() {
        let b = budget();
        let mut w = BudgetWindows::new(&b);
        interval(&mut w, 100, 0);
        w.count_integrity();
        assert_eq!(w.close_interval(&b).state, BudgetState::IntegrityIncident);
        interval(&mut w, 100, 0);
        assert_eq!(w.close_interval(&b).state, BudgetState::Healthy, "the short window is one interval");
    }

    #[test]
    fn the_workbook_rules_keep_their_share_of_the_period() {
        // A 30-day period of 5-minute intervals is the workbook's own table.
        let rules = ErrorBudget::workbook_rules(30 * 24 * 12);
        let spans: Vec<_> =
            rules.iter().map(|r| (r.long_intervals, r.short_intervals, r.burn_rate, r.severity)).collect();
        assert_eq!(
            spans,
            [(12, 1, 14.4, Severity::Page), (72, 6, 6.0, Severity::Page), (864, 72, 1.0, Severity::Ticket)]
        );
        // One day of 5 s intervals: 1 h / 30 d of a day is 120 s = 24 intervals, 5 min is 10 s = 2.
        let day = ErrorBudget::workbook_rules(86_400 / 5);
        assert_eq!((day[0].long_intervals, day[0].short_intervals), (24, 2));
        assert_eq!((day[2].long_intervals, day[2].short_intervals), (1728, 144));
    }

    #[test]
    fn refused_runs_count_as_the_slo_owner_chooses() {
        let mut b = budget();
        let refused = RunEnd {
            outcome: Outcome::Rejected,
            deadline_exceeded: false,
            full_quality: false,
            degraded_by_mode_only: false,
            cancelled_by_mode: false,
            write_paused_by_mode: false,
            duplicate_effect: false,
        };
        assert_eq!(b.is_bad(refused), None);
        b.refused = RefusedRuns::Bad;
        assert_eq!(b.is_bad(refused), Some(true));
        b.refused = RefusedRuns::Good;
        assert_eq!(b.is_bad(refused), Some(false));
        let late = RunEnd {
            outcome: Outcome::Succeeded,
            deadline_exceeded: true,
            full_quality: true,
            degraded_by_mode_only: false,
            cancelled_by_mode: false,
            write_paused_by_mode: false,
            duplicate_effect: false,
        };
        let fallback = RunEnd {
            outcome: Outcome::Degraded,
            deadline_exceeded: false,
            full_quality: false,
            degraded_by_mode_only: false,
            cancelled_by_mode: false,
            write_paused_by_mode: false,
            duplicate_effect: false,
        };
        let bad = |sli| ErrorBudget { sli, ..budget() };
        assert_eq!(bad(Sli::AutoCompletion).is_bad(late), Some(false));
        assert_eq!(bad(Sli::OnTime).is_bad(late), Some(true));
        assert_eq!(bad(Sli::AutoCompletion).is_bad(fallback), Some(false));
        assert_eq!(bad(Sli::FullQuality).is_bad(fallback), Some(true));
        let by_mode = RunEnd { degraded_by_mode_only: true, ..fallback };
        assert_eq!(bad(Sli::FullQuality).is_bad(by_mode), None, "the mode's own omission is no event");
        assert_eq!(bad(Sli::AutoCompletion).is_bad(by_mode), Some(false));
        // Handed off because the mode paused the write: counted as refused runs are, unless
        // something went wrong before the write.
        let paused = RunEnd { outcome: Outcome::Handoff, full_quality: true, write_paused_by_mode: true, ..fallback };
        assert_eq!(bad(Sli::FullQuality).is_bad(paused), None);
        assert_eq!(bad(Sli::OnTime).is_bad(paused), None);
        assert_eq!(bad(Sli::SafeOutcome).is_bad(paused), Some(false), "a handoff is a safe outcome");
        assert_eq!(ErrorBudget { refused: RefusedRuns::Bad, ..bad(Sli::FullQuality) }.is_bad(paused), Some(true));
        let fell_back_first = RunEnd { full_quality: false, ..paused };
        assert_eq!(bad(Sli::FullQuality).is_bad(fell_back_first), Some(true));
        assert_eq!(bad(Sli::AutoCompletion).is_bad(fell_back_first), None);
        let late_first = RunEnd { deadline_exceeded: true, ..paused };
        assert_eq!(bad(Sli::OnTime).is_bad(late_first), Some(true));
    }
}
