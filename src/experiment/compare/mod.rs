//! `faultline compare A B`: two result folders that `run` wrote, compared without simulating.
//! `saved` reads a folder back (manifest, summary.json, replications.csv) and refuses a damaged
//! one, naming the file; `selection` picks the policies and metrics; `difference` draws B - A's
//! interval, paired on common random numbers as `gate` judges a regression, Welch's otherwise,
//! and says which side is better; `render` prints the table, JSON or CSV; `command` is the
//! command.

pub mod command;
pub mod difference;
pub mod render;
pub mod saved;
pub mod selection;

pub use command::{CompareOptions, CompareReport, compare};
pub use render::CompareFormat;
