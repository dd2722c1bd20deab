//! What commands write: the output folder that replaces the old one whole (`folder`), and the
//! contents of a run's files with the number format every file shares (`formats`).

pub mod folder;
pub mod formats;
