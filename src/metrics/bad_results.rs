//! Answers that looked like success and were not (docs/metrics.md section 2.19): bad results a
//! step received by kind, those its validator detected, what the validators cost, and the runs
//! whose answer rests on a bad result nobody caught. Present when a scenario injects such
//! faults or a policy validates a step.

use super::MetricMap;
use crate::world::bad_result::BadResult;

/// One thing about a bad result or a validator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BadResultObservation {
    /// A step's attempt came back as a success with a bad result.
    Received { kind: BadResult },
    /// A validator checked an answer (good or bad), at this cost.
    Validated { cost_units: f64 },
    /// The validator caught a bad result: it became RESULT_INVALID.
    Detected { kind: BadResult },
    /// A run ended with an answer (succeeded or degraded) that rests on a bad result no
    /// validator caught.
    AnswerRestsOnBadResult,
}

#[derive(Debug, Clone, Default)]
pub struct BadResultStats {
    received: [u64; BadResult::COUNT],
    detected: [u64; BadResult::COUNT],
    validations: u64,
    validator_cost_units: f64,
    runs_on_bad_result: u64,
}

impl BadResultStats {
    pub fn observe(&mut self, o: BadResultObservation) {
        match o {
            BadResultObservation::Received { kind } => self.received[kind.index()] += 1,
            BadResultObservation::Detected { kind } => self.detected[kind.index()] += 1,
            BadResultObservation::Validated { cost_units } => {
                self.validations += 1;
                self.validator_cost_units += cost_units;
            }
            BadResultObservation::AnswerRestsOnBadResult => self.runs_on_bad_result += 1,
        }
    }

    /// `answered`: the measured runs that ended with an answer (succeeded or degraded).
    pub fn put(&self, answered: f64, m: &mut MetricMap) {
        for k in BadResult::ALL {
            m.insert(format!("bad_result_total.{}", k.name()), self.received[k.index()] as f64);
            m.insert(format!("bad_result_detected_total.{}", k.name()), self.detected[k.index()] as f64);
        }
        m.insert("validation_total".into(), self.validations as f64);
        m.insert("validator_cost_units_total".into(), self.validator_cost_units);
        m.insert("run_on_undetected_bad_result_total".into(), self.runs_on_bad_result as f64);
        let share = if answered > 0.0 { self.runs_on_bad_result as f64 / answered } else { f64::NAN };
        m.insert("run_on_undetected_bad_result_ratio".into(), share);
    }
}
