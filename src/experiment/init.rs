//! `faultline init`: writes a commented starter scenario that `validate` accepts and `run`
//! runs in seconds.

use crate::experiment::command::CommandError;
use crate::experiment::output::folder::write_atomically;
use std::path::{Path, PathBuf};

/// The starter scenario (a support agent with a model provider, a retrieval step, two MCP
/// tools, a fault window, `naive` and `resilient` policies, and SLOs).
pub const STARTER: &str = include_str!("starter.toml");

/// The file `init` writes when no path is given, or inside a folder that is given.
pub const DEFAULT_FILE: &str = "scenario.toml";

pub struct InitOptions {
    pub path: Option<PathBuf>,
    pub force: bool,
}

pub fn init(opts: &InitOptions) -> Result<String, CommandError> {
    let path = match &opts.path {
        None => PathBuf::from(DEFAULT_FILE),
        Some(p) if p.is_dir() => p.join(DEFAULT_FILE),
        Some(p) => p.clone(),
    };
    let argument = || opts.path.as_ref().map(|p| format!("argument `{}`", p.display())).unwrap_or_default();
    if path.extension().and_then(|e| e.to_str()) != Some("toml") {
        return Err(CommandError::Input(format!(
            "{}: the starter scenario is TOML, so its file name must end in .toml (scenarios are read by extension)",
            argument()
        )));
    }
    if path.exists() && !opts.force {
        return Err(CommandError::Input(format!(
            "{} already exists; pass --force to overwrite it, or name another file",
            path.display()
        )));
    }
    if path.is_dir() {
        return Err(CommandError::Input(format!("{} is a folder", path.display())));
    }
    write_atomically(&path, STARTER.as_bytes())?;
    Ok(next_steps(&path))
}

fn next_steps(path: &Path) -> String {
    let p = path.display();
    format!(
        "wrote {p}: a support agent (model provider, retrieval, two MCP tools), a fault window, policies naive and resilient, and SLOs\n\
         \n\
         next:\n  \
         faultline validate {p}\n  \
         faultline run {p}\n  \
         faultline gate {p} --candidate resilient --baseline naive\n"
    )
}
