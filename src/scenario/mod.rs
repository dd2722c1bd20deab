//! Scenario files: serde types, loading TOML or JSON with file:line:column errors, `--set`
//! overrides, and locating a field path in the source for later validation errors.

pub mod error;
pub mod input_file;
pub mod load;
pub mod loaded_samples;
pub mod locate;
pub mod overrides;
pub mod raw_table;
pub mod samples;
pub mod table;
pub mod types;

pub use error::{FieldPath, ScenarioError, closest, name_hint, quote, tame_message, unknown_name};
pub use input_file::{InputKind, InputRefusal, open_input, read_input};
pub use load::{Format, ScenarioInput, Source, load_file};
pub use loaded_samples::LoadedSamples;
pub use locate::{duration_ms, error_at_path, parse_named};
pub use overrides::{Override, apply_overrides, canonical_path, parse_override, value_at};
pub use raw_table::RawTable;
pub use samples::{parse_source, parse_source_with, resolve_samples, sample_files};
pub use table::read_table;
pub use types::*;
