//! `faultline import FORMAT FILE`: reads a resilience configuration the user already has and
//! writes a `[policy.<name>]` fragment that a scenario accepts as it is, every field followed by
//! a comment naming the key it came from, then a `# NOT MAPPED` list of what could not be
//! expressed and why (docs/import.md). One file per format; the fragment writer is shared.
//! Formats so far: gRPC service config (`grpc`), resilience4j's Spring Boot properties
//! (`resilience4j`, read by `spring`), LiteLLM's router configuration (`litellm`, read by
//! `spring`'s YAML reader), .NET's standard resilience handler (`dotnet`) and Envoy's clusters and
//! routes (`envoy`, YAML read by `yaml_tree`; durations read by `proto_duration`, as `grpc`'s
//! are). Bad input is refused whole (file, line, column,
//! field; exit 2) and nothing is written.

pub mod dotnet;
pub mod envoy;
pub mod fragment;
pub mod grpc;
pub mod json;
pub mod litellm;
pub mod proto_duration;
pub mod resilience4j;
pub mod spring;
pub mod spring_profiles;
pub mod spring_values;
pub mod yaml_tree;

pub use fragment::{Field, Fragment, Table, toml_number};

use crate::experiment::command::CommandError;
use crate::experiment::output::folder::write_atomically;
use crate::scenario::input_file::{InputKind, read_input};
use std::path::{Path, PathBuf};

/// The formats `import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportFormat {
    /// gRPC service config JSON, as grpc-core (under grpcio) reads it.
    GrpcServiceConfig,
    /// resilience4j's Spring Boot configuration: application.yml/.yaml or .properties.
    Resilience4j,
    /// A LiteLLM proxy config.yaml or a YAML of Router keyword arguments (litellm 1.110.2).
    Litellm,
    /// .NET's standard HTTP resilience handler (HttpStandardResilienceOptions) in appsettings.json.
    DotnetResilience,
    /// An Envoy v3 bootstrap, Cluster, RouteConfiguration or Route (YAML or JSON).
    Envoy,
}

pub struct ImportOptions {
    pub format: ImportFormat,
    pub file: PathBuf,
    /// `service/method` (or `service`) whose methodConfig to import.
    pub method: Option<String>,
    /// The policy name of the fragment.
    pub policy: String,
    /// resilience4j: `INSTANCE=DEPENDENCY` pairs, litellm: `GROUP=DEPENDENCY`; one not named
    /// maps to the dependency of its own name.
    pub dependencies: Vec<String>,
    /// resilience4j: the Spring profiles to activate (Spring's `--spring.profiles.active`);
    /// empty: the file's own `spring.profiles.active`, else the default profile.
    pub profiles: Vec<String>,
    /// dotnet-resilience: the configuration section (`A:B`) bound to HttpStandardResilienceOptions.
    pub section: Option<String>,
    /// envoy: the route (its `name`) whose timeout, retry_policy and hedge_policy to import.
    pub route: Option<String>,
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
    // A UTF-8 byte-order mark: SnakeYAML's UnicodeReader (Spring), PyYAML (LiteLLM) and
    // System.Text.Json (.NET) skip it; grpc-core's JSON reader refuses it ("JSON parse error at
    // index 0", measured with grpcio 1.85.1).
    let text = match text.strip_prefix('\u{feff}') {
        Some(_) if opts.format == ImportFormat::GrpcServiceConfig => {
            return Err(CommandError::Input(format!(
                "{shown}:1:1: a UTF-8 byte-order mark, which grpc-core's JSON reader refuses (JSON parse error at index 0): save the file without one"
            )));
        }
        Some(rest) => rest.to_string(),
        None => text,
    };
    let name = file_name(&opts.file);
    if let Some(s) = &opts.section
        && opts.format != ImportFormat::DotnetResilience
    {
        return Err(CommandError::Input(format!(
            "argument `--section {s}`: only dotnet-resilience reads a configuration section"
        )));
    }
    if let Some(r) = &opts.route
        && opts.format != ImportFormat::Envoy
    {
        return Err(CommandError::Input(format!("argument `--route {r}`: only envoy reads routes")));
    }
    let fragment = match opts.format {
        ImportFormat::GrpcServiceConfig => {
            if let Some(d) = opts.dependencies.first() {
                return Err(CommandError::Input(format!(
                    "argument `--dependency {d}`: a gRPC service config names no instances (use --method)"
                )));
            }
            if let Some(p) = opts.profiles.first() {
                return Err(CommandError::Input(format!(
                    "argument `--profile {p}`: a gRPC service config has no Spring profiles"
                )));
            }
            grpc::import(&text, &shown, &name, opts.method.as_deref(), &opts.policy).map_err(CommandError::Input)?
        }
        ImportFormat::Resilience4j => import_resilience4j(opts, &text, &shown, &name)?,
        ImportFormat::Litellm => import_litellm(opts, &text, &shown, &name)?,
        ImportFormat::DotnetResilience => import_dotnet(opts, &text, &shown, &name)?,
        ImportFormat::Envoy => import_envoy(opts, &text, &shown, &name)?,
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

fn import_litellm(opts: &ImportOptions, text: &str, shown: &str, name: &str) -> Result<Fragment, CommandError> {
    if let Some(m) = &opts.method {
        return Err(CommandError::Input(format!(
            "argument `--method {m}`: a LiteLLM config has model groups, not methods (use --dependency GROUP=DEPENDENCY)"
        )));
    }
    if let Some(p) = opts.profiles.first() {
        return Err(CommandError::Input(format!("argument `--profile {p}`: a LiteLLM config has no Spring profiles")));
    }
    let pairs = pairs(&opts.dependencies, "GROUP=DEPENDENCY")?;
    let lower = name.to_ascii_lowercase();
    if !(lower.ends_with(".yml") || lower.ends_with(".yaml")) {
        return Err(CommandError::Input(format!("{shown}: a LiteLLM config is YAML and ends in .yml or .yaml")));
    }
    let o = litellm::LitellmOptions { shown, name, policy: &opts.policy, dependencies: &pairs };
    litellm::import(text, &o).map_err(CommandError::Input)
}

fn import_envoy(opts: &ImportOptions, text: &str, shown: &str, name: &str) -> Result<Fragment, CommandError> {
    let other = if let Some(m) = &opts.method {
        Some(format!("--method {m}"))
    } else {
        opts.profiles.first().map(|p| format!("--profile {p}"))
    };
    if let Some(o) = other {
        return Err(CommandError::Input(format!(
            "argument `{o}`: an Envoy configuration has clusters and routes (use --dependency CLUSTER=DEPENDENCY, --route NAME)"
        )));
    }
    let pairs = pairs(&opts.dependencies, "CLUSTER=DEPENDENCY")?;
    let o =
        envoy::EnvoyOptions { shown, name, policy: &opts.policy, dependencies: &pairs, route: opts.route.as_deref() };
    envoy::import(text, &o).map_err(CommandError::Input)
}

/// `NAME=DEPENDENCY` arguments.
fn pairs(args: &[String], shape: &str) -> Result<Vec<(String, String)>, CommandError> {
    let mut pairs = Vec::new();
    for d in args {
        match d.split_once('=') {
            Some((i, dep)) if !i.is_empty() && !dep.is_empty() => pairs.push((i.to_string(), dep.to_string())),
            _ => return Err(CommandError::Input(format!("argument `--dependency {d}`: expected {shape}"))),
        }
    }
    Ok(pairs)
}

fn import_resilience4j(opts: &ImportOptions, text: &str, shown: &str, name: &str) -> Result<Fragment, CommandError> {
    if let Some(m) = &opts.method {
        return Err(CommandError::Input(format!(
            "argument `--method {m}`: resilience4j has instances, not methods (use --dependency INSTANCE=DEPENDENCY)"
        )));
    }
    // Spring splits `--spring.profiles.active` at commas (Profiles.get); an empty name is no profile.
    if let Some(p) = opts.profiles.iter().find(|p| p.split(',').any(|n| n.trim().is_empty())) {
        return Err(CommandError::Input(format!("argument `--profile {p}`: an empty profile name")));
    }
    let mut pairs = Vec::new();
    for d in &opts.dependencies {
        match d.split_once('=') {
            Some((i, dep)) if !i.is_empty() && !dep.is_empty() => pairs.push((i.to_string(), dep.to_string())),
            _ => {
                return Err(CommandError::Input(format!("argument `--dependency {d}`: expected INSTANCE=DEPENDENCY")));
            }
        }
    }
    let lower = name.to_ascii_lowercase();
    let read = if lower.ends_with(".properties") {
        spring::read_properties(text)
    } else if lower.ends_with(".yml") || lower.ends_with(".yaml") {
        spring::read_yaml(text)
    } else {
        return Err(CommandError::Input(format!(
            "{shown}: a Spring configuration file ends in .yml, .yaml or .properties"
        )));
    };
    let located =
        |(line, col, why): (usize, usize, String)| CommandError::Input(format!("{shown}:{line}:{col}: {why}"));
    let file = spring_profiles::activate(&read.map_err(located)?.documents, &opts.profiles).map_err(located)?;
    let o = resilience4j::R4jOptions { shown, name, policy: &opts.policy, dependencies: &pairs };
    resilience4j::import(&file, &o).map_err(CommandError::Input)
}

fn import_dotnet(opts: &ImportOptions, text: &str, shown: &str, name: &str) -> Result<Fragment, CommandError> {
    let other = if let Some(m) = &opts.method {
        Some(format!("--method {m}"))
    } else if let Some(d) = opts.dependencies.first() {
        Some(format!("--dependency {d}"))
    } else {
        opts.profiles.first().map(|p| format!("--profile {p}"))
    };
    if let Some(o) = other {
        return Err(CommandError::Input(format!(
            "argument `{o}`: dotnet-resilience reads one configuration section (use --section NAME)"
        )));
    }
    dotnet::import(text, shown, name, opts.section.as_deref(), &opts.policy).map_err(CommandError::Input)
}

/// The file's own name: comments cite it, so the fragment does not depend on the folder the
/// command ran in.
fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string())
}
