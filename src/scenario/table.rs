//! Reading a mechanism's raw table as the mechanism's own table type, with located errors.

use super::error::{FieldPath, ScenarioError};
use super::load::{Source, first_line, with_suggestion};
use super::locate::error_at_path;
use super::raw_table::RawTable;
use serde::de::DeserializeOwned;
use toml::Value;

/// Reads a raw table as the mechanism's own table type `T`; an error names the field inside it
/// (`policy.p.circuit_breaker[0].failure_ratio`) at its line and column.
pub fn read_table<T: DeserializeOwned>(
    source: &Source,
    path: &FieldPath,
    table: &RawTable,
) -> Result<T, ScenarioError> {
    serde_path_to_error::deserialize(Value::Table(table.0.clone())).map_err(|e| {
        let mut at = path.clone();
        for segment in e.path().iter() {
            at = match segment {
                serde_path_to_error::Segment::Map { key } => at.key(key),
                serde_path_to_error::Segment::Seq { index } => at.index(*index),
                serde_path_to_error::Segment::Enum { .. } | serde_path_to_error::Segment::Unknown => at,
            };
        }
        let message = with_suggestion(first_line(&e.inner().to_string()));
        error_at_path(source, &at, message)
    })
}
