//! The world compiler's checks: a value out of range is an error at its field's line and column.

use super::dist::Distribution;
use super::failure::ErrorTable;
use crate::scenario::types::TokenCount;
use crate::scenario::{ErrorMix, FieldPath, ScenarioError, ServiceTime, Source, error_at_path, parse_named};
use crate::vocab::Named;

/// Checks the file's values with located errors while the world is compiled.
pub(super) struct Checker<'a> {
    pub(super) source: &'a Source,
}

impl Checker<'_> {
    /// The value a field spells, or `default` when it is absent.
    pub(super) fn named<T: Named>(
        &self,
        path: &FieldPath,
        value: Option<&str>,
        default: T,
    ) -> Result<T, ScenarioError> {
        parse_named(self.source, path, value, default)
    }

    pub(super) fn err(&self, path: &FieldPath, message: impl Into<String>) -> ScenarioError {
        error_at_path(self.source, path, message)
    }

    pub(super) fn probability(&self, path: &FieldPath, value: f64) -> Result<f64, ScenarioError> {
        if (0.0..=1.0).contains(&value) {
            Ok(value)
        } else {
            Err(self.err(path, format!("a probability must be in [0, 1], got {value}")))
        }
    }

    pub(super) fn non_negative(&self, path: &FieldPath, value: f64) -> Result<f64, ScenarioError> {
        if value.is_finite() && value >= 0.0 {
            Ok(value)
        } else {
            Err(self.err(path, format!("must be a finite number >= 0, got {value}")))
        }
    }

    /// `value`, already checked finite, if it is at most `max` (a bound that keeps runs finite).
    pub(super) fn at_most(&self, path: &FieldPath, value: f64, max: f64) -> Result<f64, ScenarioError> {
        if value <= max {
            Ok(value)
        } else {
            Err(self.err(path, format!("must be at most {max}, got {}", crate::scenario::locate::shown(value))))
        }
    }

    pub(super) fn positive(&self, path: &FieldPath, value: f64) -> Result<f64, ScenarioError> {
        if value.is_finite() && value > 0.0 {
            Ok(value)
        } else {
            Err(self.err(path, format!("must be a finite number > 0, got {}", crate::scenario::locate::shown(value))))
        }
    }

    pub(super) fn in_range(&self, path: &FieldPath, value: u32, low: u32, high: u32) -> Result<u32, ScenarioError> {
        if (low..=high).contains(&value) {
            Ok(value)
        } else {
            Err(self.err(path, format!("must be between {low} and {high}, got {value}")))
        }
    }

    pub(super) fn distribution(&self, path: &FieldPath, spec: &ServiceTime) -> Result<Distribution, ScenarioError> {
        Distribution::from_spec(spec).map_err(|(field, message)| self.err(&path.key(field), message))
    }

    /// A distribution of counts (tokens): a ServiceTime's fields without `_ms`.
    pub(super) fn count_distribution(
        &self,
        path: &FieldPath,
        spec: &TokenCount,
    ) -> Result<Distribution, ScenarioError> {
        Distribution::from_spec(&spec.as_service_time()).map_err(|(field, message)| {
            let field = field.strip_suffix("_ms").unwrap_or(field);
            self.err(&path.key(field), message.replace("_ms", ""))
        })
    }

    pub(super) fn errors(&self, path: &FieldPath, mix: &ErrorMix) -> Result<ErrorTable, ScenarioError> {
        let table = ErrorTable::from_mix(mix);
        for (field, p) in ErrorTable::FIELDS.iter().zip(table.probabilities) {
            self.probability(&path.key(field), p)?;
        }
        if table.total() > 1.0 + 1e-12 {
            return Err(self.err(path, format!("error probabilities add up to {} (more than 1)", table.total())));
        }
        Ok(table)
    }
}
