//! What a command makes of its scenario file and arguments: the file with `--set` and
//! `--replications` applied and compiled (an error blamed on the input that caused it), the
//! root seed from `--seed`, the policies named, the replication asked for.

use crate::engine::Model;
use crate::experiment::command::CommandError;
use crate::scenario::{
    Override, Scenario, ScenarioError, ScenarioInput, Source, apply_overrides, parse_override, parse_source, quote,
};

/// A scenario as the command sees it: the file with every override applied, and its model.
pub struct Loaded {
    pub model: Model,
    pub scenario: Scenario,
    pub source: Source,
}

pub fn load_model(input: &ScenarioInput, overrides: &[Override]) -> Result<Loaded, ScenarioError> {
    let source = input.load()?;
    let (model, scenario) = compile_scenario(&source, overrides)?;
    Ok(Loaded { model, scenario, source })
}

pub fn compile_with(source: &Source, overrides: &[Override]) -> Result<Model, ScenarioError> {
    compile_scenario(source, overrides).map(|(model, _)| model)
}

/// Compiles the file with `overrides` applied; returns the model and the overridden scenario.
pub fn compile_scenario(source: &Source, overrides: &[Override]) -> Result<(Model, Scenario), ScenarioError> {
    // Parse the file on its own first so that its errors carry line and column.
    let original = parse_source(source)?;
    let with = |k: usize| -> Result<(Model, Scenario), ScenarioError> {
        let scenario = if k == 0 { original.clone() } else { apply_overrides(source, &overrides[..k])? };
        Model::compile(&scenario, source).map(|m| (m, scenario))
    };
    with(overrides.len()).map_err(|e| blame(&e, overrides, &with))
}

/// Names the input that caused `e`: the file if it fails the same way without overrides,
/// otherwise the first override after which it does (a bad value must never be reported at a
/// line of the file that holds another value).
fn blame<T>(
    e: &ScenarioError,
    overrides: &[Override],
    with: &dyn Fn(usize) -> Result<T, ScenarioError>,
) -> ScenarioError {
    for k in 0..overrides.len() {
        if let Err(earlier) = with(k)
            && earlier.field == e.field
            && earlier.message == e.message
        {
            return match k {
                0 => earlier,
                _ => ScenarioError::in_argument(&overrides[k - 1].argument, &e.field, e.message.clone()),
            };
        }
    }
    match overrides.last() {
        Some(o) => ScenarioError::in_argument(&o.argument, &e.field, e.message.clone()),
        None => e.clone(),
    }
}

/// `--replications` becomes an override, so it gets the same checks as the file. `--seed` is
/// applied after compilation (see [`apply_seed`]): TOML integers stop at 2^63 - 1, seeds do not.
pub fn collect_overrides(sets: &[String], replications: Option<u32>) -> Result<Vec<Override>, ScenarioError> {
    collect_flagged_overrides(&[("--set", sets)], replications)
}

/// As [`collect_overrides`] for `path=value` arguments under several flags (`gate`'s `--set`
/// and `--candidate-set`), applied in the order given, then `--replications`.
pub fn collect_flagged_overrides(
    groups: &[(&str, &[String])],
    replications: Option<u32>,
) -> Result<Vec<Override>, ScenarioError> {
    // Errors name the flag the value came from: `--set path=value`, as typed.
    let mut overrides: Vec<Override> = groups
        .iter()
        .flat_map(|&(flag, sets)| sets.iter().map(move |s| (flag, s)))
        .map(|(flag, s)| {
            let argument = format!("{flag} {s}");
            let mut o = parse_override(s).map_err(|e| ScenarioError::in_argument(&argument, &e.field, e.message))?;
            o.argument = argument;
            Ok(o)
        })
        .collect::<Result<_, ScenarioError>>()?;
    if let Some(n) = replications {
        let mut o = parse_override(&format!("simulation.replications={n}"))?;
        o.argument = format!("--replications {n}");
        overrides.push(o);
    }
    Ok(overrides)
}

/// Sets the root seed from `--seed`; returns the arguments to record as provenance.
pub fn apply_seed(model: &mut Model, seed: Option<u64>, overrides: &[Override]) -> Vec<String> {
    // Provenance keeps the `--set` values as typed, without the flag.
    let mut applied: Vec<String> =
        overrides.iter().map(|o| o.argument.strip_prefix("--set ").unwrap_or(&o.argument).to_string()).collect();
    if let Some(seed) = seed {
        model.world.seed = seed;
        applied.push(format!("--seed {seed}"));
    }
    applied
}

/// Resolves policy names (all of the scenario's when none are given).
/// `flag` names the option the names came from, for error messages.
pub fn select_policies(model: &Model, names: &[String], flag: &str) -> Result<Vec<usize>, CommandError> {
    if names.is_empty() {
        return Ok((0..model.policies.len()).collect());
    }
    if let Some((_, n)) = names.iter().enumerate().find(|(i, n)| names[..*i].contains(n)) {
        return Err(CommandError::Input(format!(
            "argument {}: the policy is named twice",
            quote(&format!("{flag} {n}"))
        )));
    }
    names
        .iter()
        .map(|n| {
            model.policy_index(n).ok_or_else(|| {
                let known = model.policies.iter().map(|p| p.name.as_str());
                CommandError::Input(format!(
                    "argument {}: {}",
                    quote(&format!("{flag} {n}")),
                    crate::scenario::unknown_name("policy", n, known)
                ))
            })
        })
        .collect()
}

/// `--replication K` names one of the scenario's replications.
pub fn check_replication(model: &Model, k: u32) -> Result<(), CommandError> {
    if k < model.world.replications {
        return Ok(());
    }
    Err(CommandError::Input(format!(
        "argument `--replication {k}`: the scenario runs {} replication(s), numbered from 0 to {}",
        model.world.replications,
        model.world.replications - 1
    )))
}
