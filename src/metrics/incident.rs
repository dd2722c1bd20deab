//! The figures of the incident itself: root runs that started while a fault was active (from
//! the earliest fault's start to the latest fault's end), and the attempts and logical calls
//! made in that span, so a table can set "during the incident" beside the whole run
//! (docs/metrics.md section 2.8).

use super::MetricMap;
use crate::sim::Micros;
use crate::vocab::Outcome;

pub struct IncidentStats {
    /// [start, end) of the fault span.
    span: (Micros, Micros),
    pub runs: u64,
    pub outcomes: [u64; Outcome::COUNT],
    pub deadline_exceeded: u64,
    pub safe_runs: u64,
    pub duplicate_effect_runs: u64,
    pub logical_calls: u64,
    pub attempts: u64,
    /// Of them, SDK clients' own retries (runtime::sdk_client).
    pub hidden_attempts: u64,
    pub cost_units: f64,
}

impl IncidentStats {
    pub fn new(span: (Micros, Micros)) -> Self {
        IncidentStats {
            span,
            runs: 0,
            outcomes: [0; Outcome::COUNT],
            deadline_exceeded: 0,
            safe_runs: 0,
            duplicate_effect_runs: 0,
            logical_calls: 0,
            attempts: 0,
            hidden_attempts: 0,
            cost_units: 0.0,
        }
    }

    #[inline]
    pub fn covers(&self, t: Micros) -> bool {
        (self.span.0..self.span.1).contains(&t)
    }

    pub fn run_ended(&mut self, start_us: Micros, outcome: Outcome, deadline_exceeded: bool) {
        if self.covers(start_us) {
            self.runs += 1;
            self.outcomes[outcome.index()] += 1;
            self.deadline_exceeded += u64::from(deadline_exceeded);
        }
    }

    pub fn run_finalized(&mut self, start_us: Micros, outcome: Outcome, duplicate_effect: bool) {
        if self.covers(start_us) {
            self.safe_runs += u64::from(outcome.is_safe() && !duplicate_effect);
            self.duplicate_effect_runs += u64::from(duplicate_effect);
        }
    }

    /// `sdk_clients`: the scenario has SDK clients, so the hidden-attempt figures exist.
    pub fn put(&self, m: &mut MetricMap, sdk_clients: bool) {
        let runs = self.runs as f64;
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
        let successes: u64 = Outcome::ALL.iter().filter(|o| o.is_success()).map(|o| self.outcomes[o.index()]).sum();
        m.insert("incident.logical_run_total".into(), runs);
        for o in Outcome::ALL {
            m.insert(format!("incident.outcome_total.{}", o.name()), self.outcomes[o.index()] as f64);
        }
        m.insert("incident.auto_completion_ratio".into(), ratio(successes as f64, runs));
        let full = self.outcomes[Outcome::Succeeded.index()] as f64;
        m.insert("incident.full_quality_completion_ratio".into(), ratio(full, runs));
        m.insert("incident.safe_outcome_ratio".into(), ratio(self.safe_runs as f64, runs));
        m.insert("incident.duplicate_effect_run_total".into(), self.duplicate_effect_runs as f64);
        m.insert("incident.deadline_exceeded_ratio".into(), ratio(self.deadline_exceeded as f64, runs));
        m.insert("incident.logical_call_total".into(), self.logical_calls as f64);
        m.insert("incident.dependency_attempt_total".into(), self.attempts as f64);
        m.insert("incident.retry_amplification_ratio".into(), ratio(self.attempts as f64, self.logical_calls as f64));
        if sdk_clients {
            m.insert("incident.hidden_attempt_total".into(), self.hidden_attempts as f64);
            let seen = self.attempts.saturating_sub(self.hidden_attempts) as f64;
            m.insert("incident.runtime_retry_amplification_ratio".into(), ratio(seen, self.logical_calls as f64));
        }
        m.insert("incident.cost_per_success".into(), ratio(self.cost_units, successes as f64));
        m.insert("incident.cost_per_full_quality_success".into(), ratio(self.cost_units, full));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_runs_started_in_the_span_count() {
        let mut s = IncidentStats::new((100, 200));
        s.run_ended(99, Outcome::Failed, true);
        s.run_ended(100, Outcome::Succeeded, false);
        s.run_ended(199, Outcome::Handoff, true);
        s.run_ended(200, Outcome::Failed, true);
        s.run_finalized(150, Outcome::Handoff, false);
        s.run_finalized(250, Outcome::Failed, false);
        let mut m = MetricMap::new();
        s.put(&mut m, false);
        assert_eq!(m["incident.logical_run_total"], 2.0);
        assert_eq!(m["incident.deadline_exceeded_ratio"], 0.5);
        assert_eq!(m["incident.auto_completion_ratio"], 0.5);
        assert_eq!(m["incident.safe_outcome_ratio"], 0.5);
        assert!(m["incident.retry_amplification_ratio"].is_nan(), "no logical call in the span");
    }
}
