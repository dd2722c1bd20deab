//! A step's validator: a check the runtime runs on every answer a step gets, before the step
//! counts as done (`[policy.P.steps.<id>.validator]`, docs/scenario.md 8.4). A schema check
//! parses the answer against its schema, a length check compares it with what was asked, a
//! grounding check compares it with the retrieved evidence. Each takes its time and costs its
//! cost on every answer, good or bad, and detects a stated share of each kind of bad result
//! it can see at all (world/bad_result.rs); what it detects becomes RESULT_INVALID, which the
//! policy handles as it handles any (never a plain retry: the fallback, or one repair with
//! `on_schema_failure`). What it misses flows on as a success, and the run's answer rests on it.
//! A good answer always passes: false alarms are not modelled.

use crate::scenario::{FieldPath, ScenarioError, Source, ValidatorSpec, duration_ms, error_at_path, parse_named};
use crate::sim::Micros;
use crate::world::bad_result::BadResult;

crate::named_enum! {
    /// What a validator checks.
    pub enum ValidatorCheck {
        Schema => "schema",
        Length => "length",
        Grounding => "grounding",
    }
}

impl ValidatorCheck {
    /// Whether this check can see `bad` at all. A truncated or cut answer breaks the JSON a
    /// schema check parses, and is shorter than a length check expects; an empty one fails all
    /// three; only a grounding check, which holds the answer against the evidence, sees
    /// missing or stale hits.
    pub fn sees(self, bad: BadResult) -> bool {
        match self {
            ValidatorCheck::Schema => match bad {
                BadResult::SchemaViolation | BadResult::Empty | BadResult::Truncated | BadResult::StreamCut => true,
                BadResult::PartialResult | BadResult::StaleIndex => false,
            },
            ValidatorCheck::Length => match bad {
                BadResult::Empty | BadResult::Truncated | BadResult::StreamCut => true,
                BadResult::SchemaViolation | BadResult::PartialResult | BadResult::StaleIndex => false,
            },
            ValidatorCheck::Grounding => match bad {
                BadResult::Empty | BadResult::PartialResult | BadResult::StaleIndex => true,
                BadResult::SchemaViolation | BadResult::Truncated | BadResult::StreamCut => false,
            },
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Validator {
    pub check: ValidatorCheck,
    pub latency_us: Micros,
    pub cost_units: f64,
    /// The share of each bad-result kind it detects (by `BadResult::index`); 0 for a kind not given.
    pub detects: [f64; BadResult::COUNT],
}

/// What the validator says of one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A good answer: it passes.
    Good,
    /// A bad answer it caught: RESULT_INVALID.
    Detected(BadResult),
    /// A bad answer it let through: a success the run's answer rests on.
    Missed(BadResult),
}

impl Validator {
    /// The verdict on an answer whose bad result is `bad` (None: a good one), for a uniform draw `u`.
    pub fn judge(&self, bad: Option<BadResult>, u: f64) -> Verdict {
        match bad {
            None => Verdict::Good,
            Some(b) if u < self.detects[b.index()] => Verdict::Detected(b),
            Some(b) => Verdict::Missed(b),
        }
    }
}

/// Purpose tag of a validator's draws below a run's key (then the step's stream id and the
/// step's attempt count): the same draws under every policy that validates the step.
pub const TAG_VALIDATOR: u64 = 0x7661_6c69;

/// An answer waiting for its validator's verdict (the check takes `latency_us`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingValidation {
    pub step: u8,
    /// The step's timer that ends the check.
    pub wake: u32,
    pub bad: Option<BadResult>,
    /// The answer came from a fallback candidate.
    pub via_fallback: bool,
    /// The root deadline comes before the verdict: the timer ends the check unfinished.
    pub cut_by_deadline: bool,
}

/// The longest check a validator may take.
pub const MAX_LATENCY_MS: f64 = 3_600_000.0;

/// A step's `validator` table at `path`: a known check, times and costs >= 0, and shares in
/// [0, 1] of kinds the check can see.
pub fn compile_validator(source: &Source, path: &FieldPath, spec: &ValidatorSpec) -> Result<Validator, ScenarioError> {
    let check = parse_named(source, &path.key("check"), Some(&spec.check), ValidatorCheck::Schema)?;
    let latency_us = duration_ms(source, &path.key("latency_ms"), spec.latency_ms)?;
    // Without deadline propagation nothing ends a check but its own latency: bounded here, a
    // huge one is a located error rather than runs that never end.
    if spec.latency_ms > MAX_LATENCY_MS {
        let message = format!(
            "{} ms is more than {MAX_LATENCY_MS} ms (an hour)",
            crate::scenario::locate::shown(spec.latency_ms)
        );
        return Err(error_at_path(source, &path.key("latency_ms"), message));
    }
    if !(spec.cost_units.is_finite() && (0.0..=crate::world::model::MAX_COST_UNITS).contains(&spec.cost_units)) {
        let message =
            format!("must be a finite number in [0, {}], got {}", crate::world::model::MAX_COST_UNITS, spec.cost_units);
        return Err(error_at_path(source, &path.key("cost_units"), message));
    }
    let dp = path.key("detects");
    if spec.detects.is_empty() {
        return Err(error_at_path(
            source,
            &dp,
            "name at least one bad-result kind and the share of it the check detects",
        ));
    }
    let mut detects = [0.0; BadResult::COUNT];
    for (name, &share) in &spec.detects {
        let field = dp.key(name);
        // The metric label (`truncated`) or the fault kind that makes it (`truncated_result`).
        let by_fault = || crate::world::fault_kind::FaultKind::parse(name).and_then(BadResult::of_fault);
        let Some(kind) = BadResult::parse(name).or_else(by_fault) else {
            let message =
                crate::scenario::unknown_name("bad-result kind", name, BadResult::ALL.iter().map(|k| k.name()));
            return Err(error_at_path(source, &field, message));
        };
        if !check.sees(kind) {
            let seen: Vec<&str> = BadResult::ALL.iter().filter(|k| check.sees(**k)).map(|k| k.name()).collect();
            let message =
                format!("a {} check cannot see a {} result; it sees {}", check.name(), kind.name(), seen.join(", "));
            return Err(error_at_path(source, &field, message));
        }
        if !(0.0..=1.0).contains(&share) {
            return Err(error_at_path(source, &field, format!("a share must be in [0, 1], got {share}")));
        }
        detects[kind.index()] = share;
    }
    Ok(Validator { check, latency_us, cost_units: spec.cost_units, detects })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validator(shares: &[(BadResult, f64)]) -> Validator {
        let mut detects = [0.0; BadResult::COUNT];
        for &(k, s) in shares {
            detects[k.index()] = s;
        }
        Validator { check: ValidatorCheck::Schema, latency_us: 0, cost_units: 0.0, detects }
    }

    #[test]
    fn a_good_answer_always_passes_and_a_bad_one_is_caught_below_its_share() {
        let v = validator(&[(BadResult::SchemaViolation, 0.9)]);
        assert_eq!(v.judge(None, 0.0), Verdict::Good);
        assert_eq!(v.judge(Some(BadResult::SchemaViolation), 0.899), Verdict::Detected(BadResult::SchemaViolation));
        assert_eq!(v.judge(Some(BadResult::SchemaViolation), 0.9), Verdict::Missed(BadResult::SchemaViolation));
        // A kind it was not given a share of is never caught.
        assert_eq!(v.judge(Some(BadResult::Empty), 0.0), Verdict::Missed(BadResult::Empty));
    }

    #[test]
    fn the_detected_share_of_many_draws_is_the_stated_share() {
        let v = validator(&[(BadResult::Truncated, 0.3)]);
        let n = 10_000;
        let caught = (0..n)
            .filter(|i| {
                matches!(
                    v.judge(Some(BadResult::Truncated), (f64::from(*i) + 0.5) / f64::from(n)),
                    Verdict::Detected(_)
                )
            })
            .count();
        assert_eq!(caught, 3_000);
    }

    #[test]
    fn each_check_sees_what_its_input_shows() {
        use BadResult::*;
        let seen = |c: ValidatorCheck| BadResult::ALL.into_iter().filter(|b| c.sees(*b)).collect::<Vec<_>>();
        assert_eq!(seen(ValidatorCheck::Schema), vec![Truncated, Empty, SchemaViolation, StreamCut]);
        assert_eq!(seen(ValidatorCheck::Length), vec![Truncated, Empty, StreamCut]);
        assert_eq!(seen(ValidatorCheck::Grounding), vec![Empty, PartialResult, StaleIndex]);
    }
}
