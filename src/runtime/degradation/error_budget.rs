//! A workflow's error budget over sliding windows: the SRE workbook's multiwindow,
//! multi-burn-rate alerts ("Alerting on SLOs": a rule fires when both its long and its short
//! window burn the budget at least at its rate; the workbook pairs 1 h with 5 min at 14.4 and
//! 6 h with 30 min at 6), plus the essay's integrity incident (section 24). Counts live in a
//! ring of evaluation intervals, so a window's sum is a few additions per evaluation.

use crate::vocab::BudgetState;

/// One burn-rate rule, its windows counted in evaluation intervals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BurnRule {
    pub long_intervals: usize,
    pub short_intervals: usize,
    pub burn_rate: f64,
}

/// What an error budget is measured against.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorBudget {
    /// The share of good runs promised, in (0, 1).
    pub objective: f64,
    pub sli: Sli,
    pub rules: Vec<BurnRule>,
}

crate::named_enum! {
    /// Which root runs count as good.
    pub enum Sli {
        /// Succeeded or degraded: the user got an automatic answer.
        AutoCompletion => "auto_completion",
        /// An answer, an honest hand-off or an up-front refusal, with no duplicate effect.
        SafeOutcome => "safe_outcome",
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

/// The ring of the last intervals and the counts since the start (the budget's period).
#[derive(Debug, Clone)]
pub struct BudgetWindows {
    ring: Vec<IntervalCounts>,
    /// Index of the interval being filled.
    head: usize,
    /// Intervals closed so far (windows longer than the run so far cover what there is).
    closed: usize,
    total_runs: u64,
    total_bad: u64,
}

impl BudgetWindows {
    pub fn new(longest_intervals: usize) -> Self {
        BudgetWindows {
            ring: vec![IntervalCounts::default(); longest_intervals.max(1)],
            head: 0,
            closed: 0,
            total_runs: 0,
            total_bad: 0,
        }
    }

    pub fn count_run(&mut self, bad: bool) {
        let c = &mut self.ring[self.head];
        c.runs += 1;
        c.bad += u32::from(bad);
        self.total_runs += 1;
        self.total_bad += u64::from(bad);
    }

    pub fn count_integrity(&mut self) {
        self.ring[self.head].integrity += 1;
    }

    /// Sums of the last `n` intervals, the one being filled included.
    fn last(&self, n: usize) -> IntervalCounts {
        let n = n.min(self.closed + 1).min(self.ring.len());
        let mut sum = IntervalCounts::default();
        for k in 0..n {
            let c = self.ring[(self.head + self.ring.len() - k) % self.ring.len()];
            sum.runs += c.runs;
            sum.bad += c.bad;
            sum.integrity += c.integrity;
        }
        sum
    }

    /// The budget's state at the end of the interval being filled; then a new interval starts.
    pub fn close_interval(&mut self, budget: &ErrorBudget) -> BudgetState {
        let state = self.state(budget);
        self.head = (self.head + 1) % self.ring.len();
        self.ring[self.head] = IntervalCounts::default();
        self.closed += 1;
        state
    }

    pub fn state(&self, budget: &ErrorBudget) -> BudgetState {
        let allowed = 1.0 - budget.objective;
        let shortest = budget.rules.iter().map(|r| r.short_intervals).min().unwrap_or(1);
        if self.last(shortest).integrity > 0 {
            return BudgetState::IntegrityIncident;
        }
        if self.total_runs > 0 && self.total_bad as f64 / self.total_runs as f64 >= allowed {
            return BudgetState::Exhausted;
        }
        let burn = |n: usize| {
            let c = self.last(n);
            if c.runs == 0 { 0.0 } else { (c.bad as f64 / c.runs as f64) / allowed }
        };
        let fires = budget
            .rules
            .iter()
            .any(|r| burn(r.long_intervals) >= r.burn_rate && burn(r.short_intervals) >= r.burn_rate);
        if fires { BudgetState::AtRisk } else { BudgetState::Healthy }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget() -> ErrorBudget {
        // 12 intervals long, 1 short, as the workbook's 1 h / 5 min pair.
        ErrorBudget {
            objective: 0.99,
            sli: Sli::AutoCompletion,
            rules: vec![BurnRule { long_intervals: 12, short_intervals: 1, burn_rate: 14.4 }],
        }
    }

    fn interval(w: &mut BudgetWindows, runs: u32, bad: u32) {
        for i in 0..runs {
            w.count_run(i < bad);
        }
    }

    #[test]
    fn a_rule_fires_only_when_both_windows_burn_at_its_rate() {
        let b = budget();
        let mut w = BudgetWindows::new(12);
        // 11 good intervals of 1000 runs with 0.5 % bad: burn 0.5, healthy, budget not spent.
        for _ in 0..11 {
            interval(&mut w, 1000, 5);
            assert_eq!(w.close_interval(&b), BudgetState::Healthy);
        }
        // One interval at 100 % bad: short burn 100, long burn (55 + 1000) / 12000 / 0.01 = 8.8 < 14.4.
        interval(&mut w, 1000, 1000);
        assert_eq!(w.state(&b), BudgetState::Exhausted, "the period's budget (1 %) is spent: 1055 / 12000");
    }

    #[test]
    fn at_risk_needs_the_long_window_too_and_clears_with_the_short_one() {
        // Allowed 10 % bad; the rule fires at burn 2 (20 % bad) in 4 intervals and in 1.
        let b = ErrorBudget {
            objective: 0.9,
            sli: Sli::AutoCompletion,
            rules: vec![BurnRule { long_intervals: 4, short_intervals: 1, burn_rate: 2.0 }],
        };
        let mut w = BudgetWindows::new(4);
        for _ in 0..20 {
            interval(&mut w, 1000, 0);
            w.close_interval(&b);
        }
        // A short burst after good intervals: short burn 10, long 100 / 3100 = 3.2 % (burn 0.32).
        interval(&mut w, 100, 100);
        assert_eq!(w.close_interval(&b), BudgetState::Healthy, "the long window keeps one bad interval from firing");
        for _ in 0..2 {
            interval(&mut w, 100, 10);
            w.close_interval(&b);
        }
        // Long (100 + 20 + 100) / 400 = 55 % (burn 5.5), short 100 % (burn 10): fires; the
        // period (220 / 20 400) is far from spent.
        interval(&mut w, 100, 100);
        assert_eq!(w.close_interval(&b), BudgetState::AtRisk);
        // The long window still burns, the short one no longer: the alert clears.
        interval(&mut w, 100, 0);
        assert_eq!(w.state(&b), BudgetState::Healthy);
    }

    #[test]
    fn a_duplicate_in_the_short_window_is_an_integrity_incident_until_it_leaves_it() {
        let b = budget();
        let mut w = BudgetWindows::new(12);
        interval(&mut w, 100, 0);
        w.count_integrity();
        assert_eq!(w.close_interval(&b), BudgetState::IntegrityIncident);
        interval(&mut w, 100, 0);
        assert_eq!(w.state(&b), BudgetState::Healthy, "the short window is one interval: the duplicate has left it");
    }
}
