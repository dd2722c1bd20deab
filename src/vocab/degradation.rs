//! The degradation modes of a workflow (docs/essay.md section 16) and the states of an SLO's
//! error budget (section 24); the names are as in `degradation_mode_time_s.<name>`.

crate::named_enum! {
    #[derive(PartialOrd, Ord)]
    pub enum DegradationMode {
        Normal => "normal",
        /// Less retry, fan-out and hedging.
        Constrained => "constrained",
        /// Soft dependencies skipped, snapshots and cheaper models.
        Degraded => "degraded",
        /// Automatic writes stopped: the evidence goes to a human.
        Handoff => "handoff",
        /// Only status, cancel and reconciliation; new runs refused.
        Paused => "paused",
        /// Probes, then a canary share of runs on the normal policy in stages.
        Recovery => "recovery",
    }
}

impl DegradationMode {
    /// How far from normal operation a mode is: a rule's mode outranks another's when it is
    /// more severe. Recovery sits between normal and every degraded mode.
    pub fn severity(self) -> u8 {
        match self {
            DegradationMode::Normal => 0,
            DegradationMode::Recovery => 1,
            DegradationMode::Constrained => 2,
            DegradationMode::Degraded => 3,
            DegradationMode::Handoff => 4,
            DegradationMode::Paused => 5,
        }
    }

    /// One of the modes a rule may move a workflow to.
    pub fn is_degraded(self) -> bool {
        match self {
            DegradationMode::Constrained
            | DegradationMode::Degraded
            | DegradationMode::Handoff
            | DegradationMode::Paused => true,
            DegradationMode::Normal | DegradationMode::Recovery => false,
        }
    }
}

crate::named_enum! {
    /// The state of a workflow's error budget (the SRE workbook's multiwindow, multi-burn-rate
    /// alerts, and the essay's integrity incident).
    #[derive(PartialOrd, Ord)]
    pub enum BudgetState {
        Healthy => "healthy",
        /// A burn-rate rule fires: both its windows burn the budget at least at its rate.
        AtRisk => "at_risk",
        /// The budget of the period so far is spent.
        Exhausted => "exhausted",
        /// A duplicate or unknown write effect in the last short window.
        IntegrityIncident => "integrity_incident",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severity_orders_recovery_between_normal_and_the_degraded_modes() {
        let mut by_severity = DegradationMode::ALL;
        by_severity.sort_by_key(|m| m.severity());
        let names: Vec<&str> = by_severity.iter().map(|m| m.name()).collect();
        assert_eq!(names, ["normal", "recovery", "constrained", "degraded", "handoff", "paused"]);
        assert_eq!(DegradationMode::ALL.iter().filter(|m| m.is_degraded()).count(), 4);
    }

    #[test]
    fn budget_states_are_ordered_by_how_bad_they_are() {
        assert!(BudgetState::Healthy < BudgetState::AtRisk);
        assert!(BudgetState::Exhausted < BudgetState::IntegrityIncident);
    }
}
