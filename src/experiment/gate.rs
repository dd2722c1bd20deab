//! `faultline gate`: the scenario's SLO thresholds on the candidate policy, and regression
//! limits on paired differences against a baseline policy run on the same seeds.

use super::CommandError;
use super::batch::{Loaded, load_model};
use super::run::{apply_seed, collect_overrides, run_policies, select_policies};
use super::slo::{SloChecks, compile_slo_with, judge_regression, judge_threshold};
use super::table::{human, render};
use crate::scenario::quote;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct GateOptions {
    pub scenario: PathBuf,
    pub candidate: String,
    pub baseline: Option<String>,
    pub seed: Option<u64>,
    pub replications: Option<u32>,
    pub sets: Vec<String>,
    pub jobs: usize,
}

pub struct GateReport {
    pub text: String,
    pub passed: bool,
}

pub fn gate(opts: &GateOptions) -> Result<GateReport, CommandError> {
    let overrides = collect_overrides(&opts.sets, opts.replications)?;
    let Loaded { mut model, scenario, source } = load_model(&opts.scenario, &overrides)?;
    apply_seed(&mut model, opts.seed, &overrides);
    let checks: SloChecks = compile_slo_with(scenario.slo.as_ref(), &model, &source, &overrides)?;
    if checks.thresholds.is_empty() && checks.regressions.is_empty() {
        return Err(CommandError::Input(format!("{}: the scenario has no [slo] checks to gate on", source.path)));
    }
    if model.world.replications < 2 {
        return Err(CommandError::Input(format!(
            "simulation.replications = {}: a gate judges confidence bounds and needs at least 2 replications (try --replications 8)",
            model.world.replications
        )));
    }
    if opts.baseline.as_ref() == Some(&opts.candidate) {
        return Err(CommandError::Input(format!(
            "argument {}: the baseline must differ from the candidate",
            quote(&format!("--baseline {}", opts.candidate))
        )));
    }
    let mut policies = select_policies(&model, std::slice::from_ref(&opts.candidate), "--candidate")?;
    if let Some(baseline) = &opts.baseline {
        policies.extend(select_policies(&model, std::slice::from_ref(baseline), "--baseline")?);
    }
    let results = run_policies(&model, &policies, opts.jobs)?;

    let header: Vec<String> = ["result", "check", "judged", "mean", "95% CI"].iter().map(|s| s.to_string()).collect();
    let mut rows = Vec::new();
    let mut failed = 0;
    let mut passed = 0;
    let mut row = |status: &str, label: String, judged: f64, mean: f64, low: f64, high: f64| {
        let ci = if low.is_nan() { "n/a".to_string() } else { format!("[{}, {}]", human(low), human(high)) };
        rows.push(vec![status.to_string(), label, human(judged), human(mean), ci]);
    };
    let results: Vec<&[crate::metrics::MetricMap]> = results.iter().map(|r| r.metrics.as_slice()).collect();
    let values = |runs: &[crate::metrics::MetricMap], metric: &str| -> Vec<f64> {
        runs.iter().map(|r| r.get(metric).copied().unwrap_or(f64::NAN)).collect()
    };
    for check in &checks.thresholds {
        let (v, e) = judge_threshold(check, &values(results[0], &check.metric));
        if v.pass {
            passed += 1
        } else {
            failed += 1
        }
        let label = format!("{} {}{}", check.metric, check.expression, undefined_note(&e, results[0].len()));
        row(if v.pass { "PASS" } else { "FAIL" }, label, v.judged, e.mean, e.low, e.high);
    }
    match results.get(1) {
        Some(baseline_runs) => {
            for check in &checks.regressions {
                let (v, e) =
                    judge_regression(check, &values(results[0], &check.metric), &values(baseline_runs, &check.metric));
                if v.pass {
                    passed += 1
                } else {
                    failed += 1
                }
                let label = format!(
                    "{} (candidate - baseline) {}{}",
                    check.metric,
                    check.expression,
                    undefined_note(&e, results[0].len())
                );
                row(if v.pass { "PASS" } else { "FAIL" }, label, v.judged, e.mean, e.low, e.high);
            }
        }
        None => {
            for check in &checks.regressions {
                rows.push(vec![
                    "SKIP".into(),
                    format!("{} (candidate - baseline) {}: needs --baseline", check.metric, check.expression),
                    String::new(),
                    String::new(),
                    String::new(),
                ]);
            }
        }
    }
    let mut text = format!(
        "gate {}: candidate `{}`{}, {} replication(s) on shared seeds\n\n",
        model.name,
        opts.candidate,
        opts.baseline.as_ref().map(|b| format!(", baseline `{b}`")).unwrap_or_default(),
        model.world.replications
    );
    text.push_str(&render(&header, &rows));
    text.push_str("\n`<`/`<=` are judged on the upper 95 % bound, `>`/`>=` on the lower, `==` on both.\n");
    text.push_str(&format!("{} passed, {} failed: {}\n", passed, failed, if failed == 0 { "PASS" } else { "FAIL" }));
    Ok(GateReport { text, passed: failed == 0 })
}

fn undefined_note(e: &crate::metrics::stats::Estimate, replications: usize) -> String {
    if e.n < replications {
        format!(" (undefined in {} of {replications} replications)", replications - e.n)
    } else {
        String::new()
    }
}
