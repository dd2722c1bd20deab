//! `faultline check`: the essay's operating checklist (section 29) and verification questions
//! (section 26) answered for each policy of a scenario, beside lint rules on the file. Questions
//! about the file alone are answered from it; questions about behaviour from a short
//! simulation (a few replications on the scenario's seeds, through the library's run code).
//! Every answer names the field or the metric that decides it; a rule of severity `error` that
//! fires makes the command exit 1, as a gate does.
//!
//! - `row`: an answered row, its answer, severity and location;
//! - `figures`: the short simulation and its means;
//! - `view`: one policy as the checker reads it (file table, compiled policy, figures);
//! - `rule_rows`: how a rule that fires (or not) becomes rows;
//! - `rules_timing`, `rules_effects`: the lint rules;
//! - `verification`: section 26; `checklist_design`, `checklist_operations`: section 29;
//! - `render`: the aligned table and the JSON records;
//! - `command`: the command itself, from options to the report.

pub mod checklist_design;
pub mod checklist_operations;
pub mod command;
pub mod figures;
pub mod render;
pub mod row;
pub mod rule_rows;
pub mod rules_effects;
pub mod rules_timing;
pub mod verification;
pub mod view;

pub use command::{CheckOptions, CheckReport, check, check_rows};
pub use figures::DEFAULT_REPLICATIONS;
pub use row::{Answer, Row, Severity};
