//! `faultline check` as a command: the scenario loaded and compiled as `run` does it, the short
//! simulation, every row in a fixed order, and the report printed or written whole.

use super::figures::DEFAULT_REPLICATIONS;
use super::row::{Row, Severity};
use super::{checklist_design, checklist_operations, figures, render, rules_effects, rules_timing, verification, view};
use crate::experiment::batch::load::{Loaded, apply_seed, collect_overrides, load_model, select_policies};
use crate::experiment::output::folder::write_atomically;
use crate::experiment::{CommandError, OutputFormat};
use crate::scenario::{FieldPath, Override, Policy, ScenarioInput};
use std::path::PathBuf;

pub struct CheckOptions {
    pub scenario: ScenarioInput,
    pub policies: Vec<String>,
    /// Replications simulated per policy (at most the scenario's); default 2.
    pub replications: Option<u32>,
    pub sets: Vec<String>,
    pub seed: Option<u64>,
    pub jobs: usize,
    pub format: OutputFormat,
    /// Write the report here (whole or not at all) instead of standard output.
    pub out: Option<PathBuf>,
}

pub struct CheckReport {
    /// What the command prints.
    pub text: String,
    pub rows: Vec<Row>,
    /// Some rule of severity `error` fired.
    pub failed: bool,
}

/// Every row for every selected policy, in policy order, then section 26, section 29 and the
/// rules, each in a fixed order.
pub fn check_rows(options: &CheckOptions) -> Result<(Vec<Row>, u32, String), CommandError> {
    let overrides = collect_overrides(&options.sets, None)?;
    let Loaded { mut model, scenario, source } = load_model(&options.scenario, &overrides)?;
    apply_seed(&mut model, options.seed, &overrides);
    let selected = select_policies(&model, &options.policies, "--policy")?;
    let replications = options.replications.unwrap_or(DEFAULT_REPLICATIONS);
    if replications == 0 {
        return Err(CommandError::Input("argument `--replications 0`: check simulates at least one".into()));
    }
    let figures = figures::simulate(&model, &selected, replications, options.jobs)?;
    // Rows name fields by position (`workflow[0].step[0]`); a `--set` may name the same
    // element by its name or id, so its path is compared in the positional spelling.
    let located: Vec<Override> = overrides
        .iter()
        .map(|o| Override {
            path: crate::scenario::canonical_path(&source, &o.path).split('.').map(String::from).collect(),
            ..o.clone()
        })
        .collect();
    let domains = crate::runtime::failure_domain::failure_domain_warnings(&scenario, &source);
    let implied = Policy::default();
    let mut rows = Vec::new();
    for (k, &p) in selected.iter().enumerate() {
        let policy = &model.policies[p];
        let (spec, path) = match scenario.policies.get(&policy.name) {
            Some(spec) => (spec, FieldPath::root().key("policy").key(&policy.name)),
            // The implied policy has no table: its fields are named as `--set` names them
            // (policy.default.<field>), never as root fields of the scenario.
            None => (&implied, FieldPath::root().key("policy").key("default")),
        };
        let view = view::PolicyView {
            name: &policy.name,
            model: &model,
            policy,
            spec,
            path,
            scenario: &scenario,
            source: &source,
            figures: &figures[k],
            overrides: &located,
        };
        rows.extend(verification::answers(&view));
        rows.extend(checklist_design::answers(&view));
        rows.extend(checklist_operations::answers(&view));
        rows.extend(rules_timing::attempt_timeout_over_deadline(&view));
        rows.extend(rules_timing::breaker_window(&view));
        rows.extend(rules_timing::retry_delays(&view));
        rows.extend(rules_effects::write_without_key(&view));
        rows.extend(rules_effects::hedge_on_write(&view));
        rows.extend(rules_effects::sdk_uncharged(&view));
        rows.extend(rules_effects::shared_domain(&view, &domains));
        rows.extend(rules_effects::stale_cache(&view));
    }
    let simulated = figures.first().map_or(0, |f| f.replications);
    Ok((rows, simulated, source.path.clone()))
}

pub fn check(options: &CheckOptions) -> Result<CheckReport, CommandError> {
    let (rows, simulated, scenario) = check_rows(options)?;
    let failed = rows.iter().any(|r| r.severity == Severity::Error);
    let body = match options.format {
        OutputFormat::Text => render::text(&scenario, &rows, simulated),
        OutputFormat::Json => render::json(&scenario, &rows),
    };
    let text = match &options.out {
        Some(path) => {
            write_atomically(path, body.as_bytes())?;
            let errors = rows.iter().filter(|r| r.severity == Severity::Error).count();
            format!("wrote {} ({} rows, {errors} error(s))\n", path.display(), rows.len())
        }
        None => body,
    };
    Ok(CheckReport { text, rows, failed })
}
