//! `faultline import FORMAT FILE`: reads a resilience configuration the user already has and
//! writes a `[policy.<name>]` fragment that a scenario accepts as it is, every field followed by
//! a comment naming the key it came from, then a `# NOT MAPPED` list of what could not be
//! expressed and why (docs/import.md). One file per format; the fragment writer is shared.
//! Formats so far: gRPC service config (`grpc`). Bad input is refused whole (file, line, column,
//! field; exit 2) and nothing is written.

pub mod fragment;
pub mod grpc;
pub mod json;

pub use fragment::{Field, Fragment, Table, toml_number};

use crate::experiment::command::CommandError;
use crate::experiment::output::folder::write_atomically;
use crate::scenario::input_file::{InputKind, read_input};
use std::path::{Path, PathBuf};

/// The formats `import` reads. resilience4j, Envoy, LiteLLM and .NET come next (issue 32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportFormat {
    /// gRPC service config JSON, as grpc-core (under grpcio) reads it.
    GrpcServiceConfig,
}

pub struct ImportOptions {
    pub format: ImportFormat,
    pub file: PathBuf,
    /// `service/method` (or `service`) whose methodConfig to import.
    pub method: Option<String>,
    /// The policy name of the fragment.
    pub policy: String,
    /// Where to write the fragment (whole or not at all); standard output when absent.
    pub out: Option<PathBuf>,
}

pub const CONFIG_FILES: InputKind =
    InputKind { plural: "configuration files to import", max_bytes: 16 << 20, advice: "" };

/// A policy name as section 1 of docs/scenario.md allows: letters, digits, `_` and `-`.
fn check_policy_name(name: &str) -> Result<(), CommandError> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err(CommandError::Input(format!(
            "argument `--policy {name}`: a policy name is letters, digits, `_` and `-`"
        )));
    }
    Ok(())
}

pub fn import(opts: &ImportOptions) -> Result<String, CommandError> {
    check_policy_name(&opts.policy)?;
    let shown = opts.file.display().to_string();
    let bytes = read_input(&opts.file, CONFIG_FILES).map_err(|r| CommandError::Input(format!("{shown}: {r}")))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        CommandError::Input(format!(
            "{shown}: not UTF-8 text (byte {} is not valid UTF-8)",
            e.utf8_error().valid_up_to()
        ))
    })?;
    let name = file_name(&opts.file);
    let fragment = match opts.format {
        ImportFormat::GrpcServiceConfig => {
            grpc::import(&text, &shown, &name, opts.method.as_deref(), &opts.policy).map_err(CommandError::Input)?
        }
    };
    let toml = fragment.to_toml();
    match &opts.out {
        None => Ok(toml),
        Some(path) => {
            write_atomically(path, toml.as_bytes())?;
            Ok(format!(
                "wrote {}: [policy.{}], {} fields mapped, {} keys not mapped\n",
                path.display(),
                opts.policy,
                fragment.field_count(),
                fragment.not_mapped.len()
            ))
        }
    }
}

/// The file's own name: comments cite it, so the fragment does not depend on the folder the
/// command ran in.
fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string())
}
