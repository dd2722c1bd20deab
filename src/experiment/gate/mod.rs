//! `faultline gate`: the scenario's SLO thresholds on the candidate policy, and regression
//! limits on paired differences against a baseline policy run on the same seeds. The baseline
//! is another policy of the same file (`--baseline`) or a policy of another file
//! (`--baseline-scenario`, such as main's version of the scenario in a pull request); either
//! way replication k of both runs on `replication_seed(seed, k)` with the candidate file's
//! seed and replication count. `--candidate-set` and `--baseline-set` change one side only, so
//! the baseline may be the candidate's own policy of the same file with one value changed.
//! Intervals are judged and shown clipped to the range of their metric (`batch/slo.rs`), and
//! the report says which were.

pub mod front;
pub mod junit;

use crate::engine::Model;
use crate::experiment::batch::load::{Loaded, apply_seed, collect_flagged_overrides, load_model, select_policies};
use crate::experiment::batch::slo::{
    Check, SloChecks, compile_slo_with, judge_regression, judge_threshold, regression_limit,
};
use crate::experiment::batch::workers::{Task, Workers, check_batch_size, replication_seed};
use crate::experiment::command::{CommandError, OutputFormat};
use crate::experiment::output::folder::AtomicFile;
use crate::experiment::report::table::{human, render};
use crate::metrics::MetricMap;
use crate::metrics::range::Range;
use crate::metrics::stats::Estimate;
use crate::scenario::{
    FieldPath, Override, Scenario, ScenarioError, ScenarioInput, Source, error_at_path, parse_override, quote,
};
use junit::{Case, CaseResult};
use serde::Serialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct GateOptions {
    pub scenario: ScenarioInput,
    pub candidate: String,
    /// The baseline policy; with `baseline_scenario` unset it comes from `scenario`.
    pub baseline: Option<String>,
    /// The file the baseline policy comes from (default policy name: the candidate's).
    pub baseline_scenario: Option<PathBuf>,
    /// Gate on `[slo]` alone and list `[slo.regression]` checks as skipped.
    pub thresholds_only: bool,
    pub seed: Option<u64>,
    pub replications: Option<u32>,
    /// `--set`: both sides.
    pub sets: Vec<String>,
    /// `--candidate-set`: the candidate's side only, after `sets`.
    pub candidate_sets: Vec<String>,
    /// `--baseline-set`: the baseline's side only, after `sets`.
    pub baseline_sets: Vec<String>,
    pub jobs: usize,
    pub format: OutputFormat,
    /// Also write a JUnit XML report here.
    pub junit: Option<PathBuf>,
    /// A tune's front.json: the candidate must stay within `front_tolerance_percent` of it.
    pub front: Option<PathBuf>,
    pub front_tolerance_percent: f64,
}

pub struct GateReport {
    /// What the command prints: `table` or `document`, as `--format` asks.
    pub text: String,
    /// The text report (the table and its notes).
    pub table: String,
    /// The JSON report.
    pub document: String,
    pub passed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Threshold,
    Regression,
    /// Within a tolerance of a tuned front (`--front`).
    Front,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Status {
    Pass,
    Fail,
    Skip,
}

impl Status {
    fn word(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Skip => "SKIP",
        }
    }
}

/// One judged (or skipped) check, as every output form shows it.
#[derive(Debug, Clone, Serialize)]
struct Outcome {
    kind: Kind,
    metric: String,
    expression: String,
    status: Status,
    /// `null` when skipped.
    pass: Option<bool>,
    /// The value compared with `limit`: a bound of the 95 % interval (`judged_on`).
    judged: Option<f64>,
    judged_on: &'static str,
    /// How a failure message names the judged value (`Comparison::judged_bound`).
    #[serde(skip)]
    judged_bound: &'static str,
    /// The threshold in the metric's unit (a `%` regression limit scaled by the baseline mean).
    limit: Option<f64>,
    mean: Option<f64>,
    /// The 95 % interval, clipped to the range of the judged quantity.
    ci95_low: Option<f64>,
    ci95_high: Option<f64>,
    /// The range `[low, high]` (null: no bound) the Student-t interval left and was clipped
    /// to; null when it lay inside.
    clipped_to: Option<[Option<f64>; 2]>,
    #[serde(skip)]
    clipping: Option<Clipping>,
    /// Replications where the metric (or the difference) is undefined; any makes the check fail.
    undefined_replications: usize,
    #[serde(skip)]
    replications: usize,
    #[serde(skip)]
    operator: &'static str,
}

/// A Student-t interval that left the range of its quantity, as the report's note tells it.
#[derive(Debug, Clone, Copy)]
struct Clipping {
    range: Range,
    low: f64,
    high: f64,
}

fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

impl Outcome {
    /// `e` is the Student-t estimate; the outcome shows it clipped to the check's range, as it
    /// was judged.
    fn judged(kind: Kind, check: &Check, pass: bool, judged: f64, limit: f64, e: &Estimate, n: usize) -> Outcome {
        let clipping = e.leaves(check.range).then_some(Clipping { range: check.range, low: e.low, high: e.high });
        let e = e.within(check.range);
        Outcome {
            kind,
            metric: check.metric.clone(),
            expression: check.expression.clone(),
            status: if pass { Status::Pass } else { Status::Fail },
            pass: Some(pass),
            judged: finite(judged),
            judged_on: check.comparison.judged_on(),
            judged_bound: check.comparison.judged_bound(),
            limit: finite(limit),
            mean: finite(e.mean),
            ci95_low: finite(e.low),
            ci95_high: finite(e.high),
            clipped_to: clipping.map(|c| [finite(c.range.low), finite(c.range.high)]),
            clipping,
            undefined_replications: n - e.n.min(n),
            replications: n,
            operator: check.comparison.symbol(),
        }
    }

    fn skipped(check: &Check, n: usize) -> Outcome {
        Outcome {
            kind: Kind::Regression,
            metric: check.metric.clone(),
            expression: check.expression.clone(),
            status: Status::Skip,
            pass: None,
            judged: None,
            judged_on: check.comparison.judged_on(),
            judged_bound: check.comparison.judged_bound(),
            limit: None,
            mean: None,
            ci95_low: None,
            ci95_high: None,
            clipped_to: None,
            clipping: None,
            undefined_replications: 0,
            replications: n,
            operator: check.comparison.symbol(),
        }
    }

    /// The check as the table and the JUnit test case name it.
    fn label(&self) -> String {
        format!("{} {}", self.subject(), self.expression)
    }

    /// What the check judges: the metric, or its paired difference.
    fn subject(&self) -> String {
        match self.kind {
            Kind::Threshold | Kind::Front => self.metric.clone(),
            Kind::Regression => format!("{} (candidate - baseline)", self.metric),
        }
    }

    /// How the report's note tells a clipped interval:
    /// `recovery_time_s >= 0 (Student-t: [-20.634, 125.6])`.
    fn clip_note(&self) -> Option<String> {
        self.clipping.map(|c| {
            // `x in [0, 1]` but `x >= 0`.
            let bounded = c.range.low.is_finite() && c.range.high.is_finite();
            let range = if bounded { format!("in {}", c.range) } else { c.range.to_string() };
            format!("{} {range} (Student-t: [{}, {}])", self.subject(), human(c.low), human(c.high))
        })
    }

    fn undefined_note(&self) -> String {
        match self.undefined_replications {
            0 => String::new(),
            k => format!(" (undefined in {k} of {} replications)", self.replications),
        }
    }

    /// The interval as judged: clipped to the range, which the table marks with `*`.
    fn interval(&self) -> String {
        match (self.ci95_low, self.ci95_high) {
            (Some(low), Some(high)) => format!("[{}, {}]", human(low), human(high)),
            _ => "n/a".into(),
        }
    }

    /// Why a failed check failed, in one sentence.
    fn failure_message(&self) -> String {
        let show = |v: Option<f64>| v.map(human).unwrap_or_else(|| "n/a".into());
        let bound = self.judged_bound;
        let mut m = format!(
            "{}: {bound} {} does not meet {} {}; mean {}, 95% CI {}",
            self.label(),
            show(self.judged),
            self.operator,
            show(self.limit),
            show(self.mean),
            self.interval_said()
        );
        m.push_str(&self.undefined_note());
        m
    }

    /// The interval, and what it was clipped to, in a sentence.
    fn interval_said(&self) -> String {
        match self.clip_note() {
            Some(note) => format!("{}, clipped to {note}", self.interval()),
            None => self.interval(),
        }
    }
}

/// Where the baseline comes from, once checked.
struct Baseline {
    policy: String,
    /// The other file, and what it said about the seed and replications before the
    /// candidate's replaced them.
    file: Option<(String, u64, u32)>,
}

pub fn gate(opts: &GateOptions) -> Result<GateReport, CommandError> {
    let overrides = Side::Candidate.overrides(opts)?;
    let baseline_overrides = Side::Baseline.overrides(opts)?;
    check_side_sets(opts)?;
    let Loaded { mut model, scenario, source } = load_model(&opts.scenario, &overrides)?;
    apply_seed(&mut model, opts.seed, &overrides);
    let checks: SloChecks = compile_slo_with(scenario.slo.as_ref(), &model, &source, &overrides)?;
    let front = opts.front.as_deref().map(front::read_front).transpose()?;
    check_request(opts, &checks, &model, &source, front.is_some())?;
    if let Some(f) = &front {
        check_front_metrics(f, &model, opts)?;
    }
    let Sides { models, sides, baseline } =
        choose_sides(opts, model, &scenario, &checks, &source, &baseline_overrides)?;
    // Opened before the simulations, so a --junit path that cannot be written stops the gate
    // at once; dropped unwritten (an error below), it leaves nothing.
    let junit = opts.junit.as_deref().map(AtomicFile::create).transpose()?;
    let runs = simulate_sides(&models, &sides, opts)?;
    let mut outcomes = judge_checks(&checks, &runs);
    if let Some(f) = &front {
        outcomes.push(front_outcome(f, opts, &runs[0]));
    }
    let model = &models[0];
    let passed = !outcomes.iter().any(|o| o.status == Status::Fail);
    let text = text_report(model, opts, baseline.as_ref(), &outcomes);
    if let Some(file) = junit {
        file.write_whole(junit_report(model, opts, baseline.as_ref(), &outcomes, &text).as_bytes())?;
    }
    let document = json_report(model, opts, baseline.as_ref(), &outcomes)?;
    let shown = match opts.format {
        OutputFormat::Text => text.clone(),
        OutputFormat::Json => document.clone(),
    };
    Ok(GateReport { text: shown, table: text, document, passed })
}

/// The `--front` check as one row: the nearest front point and the candidate's worst shortfall
/// against it in percent, judged on its unfavourable bounds.
fn front_outcome(f: &front::Front, opts: &GateOptions, runs: &[MetricMap]) -> Outcome {
    let d = front::distance(f, runs);
    let path = opts.front.as_deref().map(|p| p.display().to_string()).unwrap_or_default();
    let pass = d.judged <= opts.front_tolerance_percent / 100.0;
    let n = runs.len();
    Outcome {
        kind: Kind::Front,
        metric: format!("off the front of {path} (nearest: candidate {})", d.point),
        expression: format!("<= {}%", opts.front_tolerance_percent),
        status: if pass { Status::Pass } else { Status::Fail },
        pass: Some(pass),
        judged: finite(100.0 * d.judged),
        judged_on: "unfavourable",
        judged_bound: "the worst shortfall on the unfavourable 95 % bounds, in %,",
        limit: finite(opts.front_tolerance_percent),
        mean: finite(100.0 * d.at_means),
        ci95_low: None,
        ci95_high: None,
        clipped_to: None,
        clipping: None,
        undefined_replications: 0,
        replications: n,
        operator: "<=",
    }
}

/// Every objective of the front is a metric of the candidate's scenario.
fn check_front_metrics(f: &front::Front, model: &Model, opts: &GateOptions) -> Result<(), CommandError> {
    let names = model.metric_names();
    match f.objectives.iter().find(|(m, _)| !names.contains(m)) {
        Some((m, _)) => Err(CommandError::Input(format!(
            "argument `--front {}`: its objective `{m}` is not a metric of this scenario",
            opts.front.as_deref().map(|p| p.display().to_string()).unwrap_or_default()
        ))),
        None if !(opts.front_tolerance_percent >= 0.0 && opts.front_tolerance_percent.is_finite()) => {
            Err(CommandError::Input(format!(
                "argument `--front-tolerance {}`: give a percentage of 0 or more",
                opts.front_tolerance_percent
            )))
        }
        None => Ok(()),
    }
}

/// Refuses a gate that could judge nothing, or would silently skip what the scenario asks for.
fn check_request(
    opts: &GateOptions,
    checks: &SloChecks,
    model: &Model,
    source: &Source,
    has_front: bool,
) -> Result<(), CommandError> {
    if checks.thresholds.is_empty() && checks.regressions.is_empty() && !has_front {
        return Err(CommandError::Input(format!("{}: the scenario has no [slo] checks to gate on", source.path)));
    }
    if model.world.replications < 2 {
        return Err(CommandError::Input(format!(
            "simulation.replications = {}: a gate judges confidence bounds and needs at least 2 replications (try --replications 8)",
            model.world.replications
        )));
    }
    let has_baseline = opts.baseline.is_some() || opts.baseline_scenario.is_some();
    if opts.thresholds_only && has_baseline {
        let flag = if opts.baseline_scenario.is_some() { "--baseline-scenario" } else { "--baseline" };
        return Err(CommandError::Input(format!(
            "argument `--thresholds-only`: cannot be used with `{flag}`, which asks for the regression checks"
        )));
    }
    if opts.thresholds_only && checks.thresholds.is_empty() && !has_front {
        return Err(CommandError::Input(format!(
            "argument `--thresholds-only`: {} has no [slo] thresholds, only [slo.regression] limits, so nothing would be judged",
            source.path
        )));
    }
    if !checks.regressions.is_empty() && !has_baseline && !opts.thresholds_only {
        let e = error_at_path(
            source,
            &FieldPath::root().key("slo").key("regression"),
            format!(
                "[slo.regression] has {} check(s) on paired differences but no baseline was given; \
                 pass --baseline POLICY (a policy of this file), --baseline-scenario FILE (such as main's version of this file), \
                 or --thresholds-only to skip them",
                checks.regressions.len()
            ),
        );
        return Err(e.into());
    }
    Ok(())
}

/// What a gate simulates: the models (the candidate's file first), the sides as (model,
/// policy), the candidate first, and where the baseline comes from.
struct Sides {
    models: Vec<Model>,
    sides: Vec<(usize, usize)>,
    baseline: Option<Baseline>,
}

/// The candidate and the baseline, once checked. The baseline gets a model of its own when it
/// comes from another file, or from this one with the sides' own sets.
fn choose_sides(
    opts: &GateOptions,
    model: Model,
    scenario: &Scenario,
    checks: &SloChecks,
    source: &Source,
    baseline_overrides: &[Override],
) -> Result<Sides, CommandError> {
    let candidate = select_policies(&model, std::slice::from_ref(&opts.candidate), "--candidate")?[0];
    let mut models = vec![model];
    let mut sides = vec![(0, candidate)];
    let (policy, other_file) = match (&opts.baseline_scenario, &opts.baseline) {
        (None, None) => return Ok(Sides { models, sides, baseline: None }),
        (None, Some(name)) => (name.clone(), None),
        (Some(path), name) => (name.clone().unwrap_or_else(|| opts.candidate.clone()), Some(path)),
    };
    let one_sided = !opts.candidate_sets.is_empty() || !opts.baseline_sets.is_empty();
    let itself = policy == opts.candidate
        && other_file.is_none_or(|p| opts.scenario.file().is_some_and(|own| same_file(p, own)));
    if itself && !one_sided {
        let how = "add --candidate-set PATH=VALUE or --baseline-set PATH=VALUE to change one side";
        return Err(CommandError::Input(match other_file {
            None => format!("argument `--baseline {policy}`: the baseline must differ from the candidate; {how}"),
            Some(path) => format!(
                "argument `--baseline-scenario {}`: it is the candidate's file and the baseline policy is the candidate, \
                 so every difference would be 0; pass main's version of the file or --baseline POLICY, or {how}",
                path.display()
            ),
        }));
    }
    let (base, base_scenario, file) = match other_file {
        // Two policies of one model.
        None if !one_sided => {
            sides.push((0, select_policies(&models[0], std::slice::from_ref(&policy), "--baseline")?[0]));
            return Ok(Sides { models, sides, baseline: Some(Baseline { policy, file: None }) });
        }
        None => {
            let own: Vec<String> = opts.baseline_sets.iter().map(|s| format!("--baseline-set {s}")).collect();
            let (Loaded { model: base, scenario: base_scenario, .. }, _) =
                load_side(&opts.scenario, baseline_overrides, &own, &models[0], "on the baseline's side")?;
            select_policies(&base, std::slice::from_ref(&policy), "--baseline")?;
            check_baseline_metrics(checks, &base, source, "the baseline's side")?;
            (base, base_scenario, None)
        }
        Some(path) => {
            let (base, base_scenario, said) =
                load_baseline(path, &policy, opts.baseline.is_some(), baseline_overrides, &models[0])?;
            check_baseline_metrics(checks, &base, source, &format!("the baseline scenario {}", path.display()))?;
            (base, base_scenario, Some((path.display().to_string(), said.0, said.1)))
        }
    };
    if itself && same_side(scenario, &base_scenario) {
        let mut arguments = vec![match other_file {
            None => format!("`--baseline {policy}`"),
            Some(path) => format!("`--baseline-scenario {}`", path.display()),
        }];
        arguments.extend(opts.candidate_sets.iter().map(|s| quote(&format!("--candidate-set {s}"))));
        arguments.extend(opts.baseline_sets.iter().map(|s| quote(&format!("--baseline-set {s}"))));
        return Err(CommandError::Input(format!(
            "arguments {}: the two sides are the same, policy `{policy}` of {} with the same values, so every \
             difference would be 0; change a value on one side only",
            arguments.join(", "),
            opts.scenario.display()
        )));
    }
    let index = base.policy_index(&policy).expect("the baseline policy was checked");
    models.push(base);
    sides.push((1, index));
    Ok(Sides { models, sides, baseline: Some(Baseline { policy, file }) })
}

/// Whether the baseline's side would simulate what the candidate's does: the same file with
/// the same values, set aside what the gate takes from the candidate alone (its seed and
/// replication count run both sides, its [slo] is the one judged).
fn same_side(candidate: &Scenario, baseline: &Scenario) -> bool {
    let key = |s: &Scenario| {
        let mut s = s.clone();
        s.simulation.seed = 0;
        s.simulation.replications = 0;
        s.slo = None;
        toml::to_string(&s).ok()
    };
    matches!((key(candidate), key(baseline)), (Some(a), Some(b)) if a == b)
}

/// Which side a `--candidate-set` or `--baseline-set` changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Candidate,
    Baseline,
}

impl Side {
    fn flag(self) -> &'static str {
        match self {
            Side::Candidate => "--candidate-set",
            Side::Baseline => "--baseline-set",
        }
    }

    fn sets(self, opts: &GateOptions) -> &[String] {
        match self {
            Side::Candidate => &opts.candidate_sets,
            Side::Baseline => &opts.baseline_sets,
        }
    }

    /// The side's overrides: `--set`, then its own sets, then `--replications`.
    fn overrides(self, opts: &GateOptions) -> Result<Vec<Override>, ScenarioError> {
        collect_flagged_overrides(&[("--set", &opts.sets), (self.flag(), self.sets(opts))], opts.replications)
    }
}

/// A side's own sets change that side alone: its policy or the world it runs in. Refused, so
/// that no set is silently without effect or reaches the other side: a set of a policy that
/// side does not run, of the seed or the replication count (the candidate's run both sides,
/// which keeps them paired), of the baseline's [slo] (the candidate's is judged), and any
/// `--baseline-set` without a baseline.
fn check_side_sets(opts: &GateOptions) -> Result<(), CommandError> {
    let baseline_policy = match (&opts.baseline, &opts.baseline_scenario) {
        (Some(name), _) => Some(name.as_str()),
        (None, Some(_)) => Some(opts.candidate.as_str()),
        (None, None) => None,
    };
    for side in [Side::Candidate, Side::Baseline] {
        let (policy, whose) = match side {
            Side::Candidate => (Some(opts.candidate.as_str()), "the candidate's"),
            Side::Baseline => (baseline_policy, "the baseline's"),
        };
        for set in side.sets(opts) {
            let o = parse_override(set)
                .map_err(|e| ScenarioError::in_argument(&format!("{} {set}", side.flag()), &e.field, e.message))?;
            let refuse = |why: String| {
                Err(CommandError::Input(format!("argument {}: {why}", quote(&format!("{} {set}", side.flag())))))
            };
            let Some(policy) = policy else {
                return refuse(
                    "there is no baseline to change; name one with --baseline POLICY or --baseline-scenario FILE"
                        .into(),
                );
            };
            let path: Vec<&str> = o.path.iter().map(String::as_str).collect();
            let sets_key = |key: &str| o.value.as_table().is_some_and(|t| t.contains_key(key));
            let shared = match path.as_slice() {
                ["simulation", field, ..] => *field == "seed" || *field == "replications",
                ["simulation"] => sets_key("seed") || sets_key("replications"),
                _ => false,
            };
            if shared {
                return refuse(
                    "the seed and the replication count are both sides' (the candidate's run both, so that replication k \
                     of each runs on the same seed); use --seed N or --replications N"
                        .into(),
                );
            }
            if side == Side::Baseline && path.first() == Some(&"slo") {
                return refuse(
                    "the checks are the candidate's [slo], the baseline's is ignored; use --set or --candidate-set"
                        .into(),
                );
            }
            if let ["policy", name, ..] = path.as_slice()
                && *name != policy
            {
                return refuse(format!(
                    "policy `{name}` is not {whose} policy `{policy}`; a side's own sets change its policy or the world \
                     (--set changes both sides)"
                ));
            }
        }
    }
    Ok(())
}

/// Judges every threshold on the candidate's replications and every regression limit on the
/// paired differences (skipped without a baseline side).
fn judge_checks(checks: &SloChecks, runs: &[Vec<MetricMap>]) -> Vec<Outcome> {
    let n = runs[0].len();
    let values = |runs: &[MetricMap], metric: &str| -> Vec<f64> {
        runs.iter().map(|r| r.get(metric).copied().unwrap_or(f64::NAN)).collect()
    };
    let mut outcomes = Vec::new();
    for check in &checks.thresholds {
        let (v, e) = judge_threshold(check, &values(&runs[0], &check.metric));
        outcomes.push(Outcome::judged(Kind::Threshold, check, v.pass, v.judged, check.threshold, &e, n));
    }
    for check in &checks.regressions {
        outcomes.push(match runs.get(1) {
            Some(base) => {
                let (c, b) = (values(&runs[0], &check.metric), values(base, &check.metric));
                let (v, e) = judge_regression(check, &c, &b);
                Outcome::judged(Kind::Regression, check, v.pass, v.judged, regression_limit(check, &b), &e, n)
            }
            None => Outcome::skipped(check, n),
        });
    }
    outcomes
}

/// Whether two paths name one file (as far as the file system can tell).
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Loads a side's scenario with its overrides and gives it the candidate's seed and replication
/// count. An error an argument caused says where (`place`: which file or side), since the
/// candidate's side took that argument, unless the argument is one of `own` (the side's own
/// sets name their side). Returns what the file itself said (seed, replications).
fn load_side(
    input: &ScenarioInput,
    overrides: &[Override],
    own: &[String],
    candidate: &Model,
    place: &str,
) -> Result<(Loaded, (u64, u32)), CommandError> {
    let mut loaded = load_model(input, overrides).map_err(|e: ScenarioError| match &e.origin {
        crate::scenario::error::Origin::Argument(a) if own.contains(a) => e.into(),
        crate::scenario::error::Origin::Argument(_) => CommandError::Input(format!("{e} ({place})")),
        // A file error already names its file.
        crate::scenario::error::Origin::File { .. } => e.into(),
    })?;
    let world = &mut loaded.model.world;
    let said = (world.seed, world.replications);
    world.seed = candidate.world.seed;
    world.replications = candidate.world.replications;
    Ok((loaded, said))
}

/// Loads the baseline file with the baseline's overrides and checks that it has the baseline
/// policy. Returns the model, the overridden scenario and what the file itself said (seed,
/// replications).
fn load_baseline(
    path: &Path,
    policy: &str,
    named: bool,
    overrides: &[Override],
    candidate: &Model,
) -> Result<(Model, Scenario, (u64, u32)), CommandError> {
    let place = format!("in the baseline scenario {}", path.display());
    let (Loaded { model: base, scenario, .. }, said) =
        load_side(&path.to_path_buf().into(), overrides, &[], candidate, &place)?;
    if base.policy_index(policy).is_none() {
        let known: Vec<&str> = base.policies.iter().map(|p| p.name.as_str()).collect();
        let how = if named {
            format!("argument `--baseline {policy}`")
        } else {
            format!("argument `--baseline-scenario {}`", path.display())
        };
        let hint = if named { "" } else { "; name the baseline policy with --baseline POLICY" };
        return Err(CommandError::Input(format!(
            "{how}: the baseline scenario {} has no policy named `{policy}` (it has {}){hint}",
            path.display(),
            known.join(", ")
        )));
    }
    Ok((base, scenario, said))
}

/// Every regression metric must exist on the baseline's side too (`whose`: its file, or this
/// file with `--baseline-set`), or there is nothing to pair.
fn check_baseline_metrics(checks: &SloChecks, base: &Model, source: &Source, whose: &str) -> Result<(), CommandError> {
    let names = base.metric_names();
    for check in &checks.regressions {
        if !names.contains(&check.metric) {
            let field = FieldPath::root().key("slo").key("regression").key(&check.metric);
            return Err(error_at_path(
                source,
                &field,
                format!(
                    "{whose} has no metric `{}` to compare with (a dependency, step or workflow renamed?)",
                    check.metric
                ),
            )
            .into());
        }
    }
    Ok(())
}

/// Runs every replication of each side (model, policy) on the candidate's replication seeds,
/// in parallel, and returns each side's metrics in replication order.
fn simulate_sides(
    models: &[Model],
    sides: &[(usize, usize)],
    opts: &GateOptions,
) -> Result<Vec<Vec<MetricMap>>, CommandError> {
    let world = &models[0].world;
    let tasks: Vec<Task> = sides
        .iter()
        .flat_map(|&(model, policy)| {
            (0..world.replications).map(move |r| Task {
                model,
                policy,
                replication: r,
                seed: replication_seed(world.seed, r),
            })
        })
        .collect();
    check_batch_size(Some(tasks.len()))?;
    let mut workers = Workers::start(opts.jobs, tasks.len() as u64, &models[0].name)?;
    workers.fit_guard_windows(models.iter().map(Model::guard_window_bytes).max().unwrap_or(0))?;
    let describe = |t: &Task| match (t.model, &opts.baseline_scenario) {
        (0, _) => String::new(),
        (_, Some(path)) => format!("baseline scenario {}: ", path.display()),
        (_, None) => "the baseline's side: ".into(),
    };
    let metrics = workers.simulate(models, &tasks, &describe, &|_, r| r.metrics);
    workers.finish();
    let mut metrics = metrics?.into_iter();
    Ok(sides.iter().map(|_| metrics.by_ref().take(world.replications as usize).collect()).collect())
}

fn counts(outcomes: &[Outcome]) -> (usize, usize, usize) {
    let count = |s: Status| outcomes.iter().filter(|o| o.status == s).count();
    (count(Status::Pass), count(Status::Fail), count(Status::Skip))
}

fn text_report(model: &Model, opts: &GateOptions, baseline: Option<&Baseline>, outcomes: &[Outcome]) -> String {
    let world = &model.world;
    let with = |side: Side| {
        let sets: Vec<String> = side.sets(opts).iter().map(|s| format!("{} {s}", side.flag())).collect();
        if sets.is_empty() { String::new() } else { format!(" with {}", sets.join(" ")) }
    };
    let mut text = format!("gate {}: candidate `{}`", model.name, opts.candidate);
    match baseline {
        Some(Baseline { policy, file: None }) => {
            text.push_str(&format!("{}, baseline `{policy}`{}", with(Side::Candidate), with(Side::Baseline)))
        }
        Some(Baseline { policy, file: Some((path, ..)) }) => text.push_str(&format!(
            " of {}{}, baseline `{policy}` of {path}{}",
            opts.scenario.display(),
            with(Side::Candidate),
            with(Side::Baseline)
        )),
        None => text.push_str(&with(Side::Candidate)),
    }
    text.push_str(&format!(", {} replication(s) on shared seeds\n", world.replications));
    if let Some(Baseline { file: Some((path, seed, replications)), .. }) = baseline
        && (*seed != world.seed || *replications != world.replications)
    {
        text.push_str(&format!(
            "note: {path} says seed {seed} and {replications} replication(s); the candidate's seed {} and {} replication(s) govern both\n",
            world.seed, world.replications
        ));
    }
    if let Some(path) = &opts.junit {
        text.push_str(&format!("JUnit report: {}\n", path.display()));
    }
    text.push('\n');
    let header: Vec<String> =
        ["result", "check", "judged", "limit", "mean", "95% CI"].iter().map(|s| s.to_string()).collect();
    let rows: Vec<Vec<String>> = outcomes
        .iter()
        .map(|o| match o.status {
            Status::Skip => vec![
                "SKIP".into(),
                format!("{}: skipped (--thresholds-only)", o.label()),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ],
            // The limit in the metric's unit: a `%` regression limit is shown as what it became.
            Status::Pass | Status::Fail => vec![
                o.status.word().into(),
                format!("{}{}", o.label(), o.undefined_note()),
                o.judged.map(human).unwrap_or_else(|| "n/a".into()),
                o.limit.map(|l| format!("{} {}", o.operator, human(l))).unwrap_or_else(|| "n/a".into()),
                o.mean.map(human).unwrap_or_else(|| "n/a".into()),
                match o.clipping {
                    Some(_) => format!("*{}", o.interval()),
                    None => o.interval(),
                },
            ],
        })
        .collect();
    text.push_str(&render(&header, &rows));
    text.push_str("\n`<`/`<=` are judged on the upper 95 % bound, `>`/`>=` on the lower, `==` on both.\n");
    let mut clipped: Vec<String> = Vec::new();
    for note in outcomes.iter().filter_map(Outcome::clip_note) {
        if !clipped.contains(&note) {
            clipped.push(note);
        }
    }
    if !clipped.is_empty() {
        // Judging the clipped bound changes only checks the range decides alone (batch/slo.rs).
        text.push_str(&format!("* clipped to the range the value can take: {}.\n", clipped.join("; ")));
    }
    if outcomes.iter().any(|o| o.kind == Kind::Front) {
        text.push_str("`off the front`: the candidate's worst shortfall against the nearest front point over the tune's objectives, in % of that point's value, on the candidate's unfavourable 95 % bounds (`mean`: on its means).\n");
    }
    let (passed, failed, skipped) = counts(outcomes);
    let skipped = if skipped > 0 { format!(", {skipped} skipped") } else { String::new() };
    let verdict = if failed == 0 { "PASS" } else { "FAIL" };
    text.push_str(&format!("{passed} passed, {failed} failed{skipped}: {verdict}\n"));
    text
}

#[derive(Serialize)]
struct JsonSide<'a> {
    scenario: String,
    policy: &'a str,
    /// The side's own `--candidate-set` or `--baseline-set` values, as given.
    sets: &'a [String],
}

#[derive(Serialize)]
struct JsonSummary {
    total: usize,
    passed: usize,
    failed: usize,
    skipped: usize,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    scenario: &'a str,
    candidate: JsonSide<'a>,
    baseline: Option<JsonSide<'a>>,
    seed: u64,
    replications: u32,
    checks: &'a [Outcome],
    summary: JsonSummary,
    result: Status,
}

fn json_report(
    model: &Model,
    opts: &GateOptions,
    baseline: Option<&Baseline>,
    outcomes: &[Outcome],
) -> Result<String, CommandError> {
    let (passed, failed, skipped) = counts(outcomes);
    let candidate_file = opts.scenario.display().to_string();
    let report = JsonReport {
        scenario: &model.name,
        candidate: JsonSide { scenario: candidate_file.clone(), policy: &opts.candidate, sets: &opts.candidate_sets },
        baseline: baseline.map(|b| JsonSide {
            scenario: b.file.as_ref().map(|f| f.0.clone()).unwrap_or_else(|| candidate_file.clone()),
            policy: &b.policy,
            sets: &opts.baseline_sets,
        }),
        seed: model.world.seed,
        replications: model.world.replications,
        checks: outcomes,
        summary: JsonSummary { total: outcomes.len(), passed, failed, skipped },
        result: if failed == 0 { Status::Pass } else { Status::Fail },
    };
    let mut text = serde_json::to_string_pretty(&report)
        .map_err(|e| CommandError::Io(format!("cannot write the gate report as JSON: {e}")))?;
    text.push('\n');
    Ok(text)
}

fn junit_report(
    model: &Model,
    opts: &GateOptions,
    baseline: Option<&Baseline>,
    outcomes: &[Outcome],
    text: &str,
) -> String {
    let candidate_file = opts.scenario.display().to_string();
    let mut properties = vec![
        ("scenario", candidate_file.clone()),
        ("candidate", opts.candidate.clone()),
        ("seed", model.world.seed.to_string()),
        ("replications", model.world.replications.to_string()),
    ];
    properties.extend(opts.candidate_sets.iter().map(|s| ("candidate_set", s.clone())));
    if let Some(b) = baseline {
        properties.push(("baseline", b.policy.clone()));
        properties.push(("baseline_scenario", b.file.as_ref().map(|f| f.0.clone()).unwrap_or(candidate_file)));
        properties.extend(opts.baseline_sets.iter().map(|s| ("baseline_set", s.clone())));
    }
    let cases: Vec<Case> = outcomes
        .iter()
        .map(|o| {
            let kind = match o.kind {
                Kind::Threshold => "threshold",
                Kind::Regression => "regression",
                Kind::Front => "front",
            };
            let result = match o.status {
                Status::Pass => CaseResult::Passed,
                Status::Fail => CaseResult::Failed {
                    kind: kind.into(),
                    message: o.failure_message(),
                    detail: format!(
                        "judged {} on {} bound(s) against {}; mean {}, 95% CI {}{}",
                        o.judged.map(human).unwrap_or_else(|| "n/a".into()),
                        o.judged_on,
                        o.limit.map(human).unwrap_or_else(|| "n/a".into()),
                        o.mean.map(human).unwrap_or_else(|| "n/a".into()),
                        o.interval_said(),
                        o.undefined_note()
                    ),
                },
                Status::Skip => {
                    CaseResult::Skipped { message: "--thresholds-only: no baseline to compare with".into() }
                }
            };
            Case { classname: format!("faultline.gate.{}.{kind}", model.name), name: o.label(), result }
        })
        .collect();
    let suite = format!("faultline gate {} ({})", model.name, opts.candidate);
    junit::document(&suite, &properties, &cases, text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::batch::slo::Comparison;

    fn model() -> Model {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/mmc.toml");
        load_model(&path.into(), &[]).unwrap().model
    }

    fn opts() -> GateOptions {
        GateOptions {
            scenario: PathBuf::from("scenarios/mmc.toml").into(),
            candidate: "p".into(),
            baseline: Some("q".into()),
            baseline_scenario: None,
            thresholds_only: false,
            seed: None,
            replications: None,
            sets: Vec::new(),
            candidate_sets: Vec::new(),
            baseline_sets: Vec::new(),
            jobs: 1,
            format: OutputFormat::Text,
            junit: None,
            front: None,
            front_tolerance_percent: 5.0,
        }
    }

    fn check(metric: &str, comparison: Comparison, threshold: f64, expression: &str, regression: bool) -> Check {
        let range = Range::of_metric(metric);
        Check {
            metric: metric.into(),
            comparison,
            threshold,
            relative: expression.ends_with('%'),
            expression: expression.into(),
            range: if regression { range.difference() } else { range },
        }
    }

    fn threshold(metric: &str, comparison: Comparison, limit: f64, expression: &str, values: &[f64]) -> Outcome {
        let c = check(metric, comparison, limit, expression, false);
        let (v, e) = judge_threshold(&c, values);
        Outcome::judged(Kind::Threshold, &c, v.pass, v.judged, c.threshold, &e, values.len())
    }

    /// The table's lines under its header, split into the header and the row naming `what`.
    fn row<'a>(text: &'a str, what: &str) -> (&'a str, &'a str) {
        let header = text.lines().find(|l| l.starts_with("result")).expect("a header");
        (header, text.lines().find(|l| l.contains(what)).unwrap_or_else(|| panic!("no row `{what}`:\n{text}")))
    }

    /// A `%` regression limit is printed as the absolute figure it became, in the limit column,
    /// right-aligned under its header, and JSON and JUnit carry that same figure.
    #[test]
    fn a_relative_limit_is_shown_as_the_absolute_figure_it_became() {
        let c = check("cost_per_success", Comparison::LessOrEqual, 10.0, "<= 10%", true);
        // Baseline mean 37.13: 10 % of it is 3.713; the candidate costs 4 to 4.2 more.
        let baseline = [37.0, 37.26];
        let candidate = [41.0, 41.46];
        let (v, e) = judge_regression(&c, &candidate, &baseline);
        let limit = regression_limit(&c, &baseline);
        assert!((limit - 3.713).abs() < 1e-12, "{limit}");
        let o = Outcome::judged(Kind::Regression, &c, v.pass, v.judged, limit, &e, 2);
        let passing = threshold("safe_outcome_ratio", Comparison::Greater, 0.9, "> 0.9", &[0.95, 0.96, 0.955, 0.958]);
        let baseline_side = Baseline { policy: "q".into(), file: None };
        let text = text_report(&model(), &opts(), Some(&baseline_side), &[passing, o.clone()]);
        let (header, line) = row(&text, "cost_per_success");
        assert!(line.starts_with("FAIL") && line.contains("cost_per_success (candidate - baseline) <= 10%"), "{text}");
        let end = |s: &str, what: &str| s.find(what).unwrap_or_else(|| panic!("`{what}` not in\n{s}")) + what.len();
        assert_eq!(end(line, "<= 3.713"), end(header, "limit"), "the limit column is aligned:\n{text}");
        let (_, other) = row(&text, "safe_outcome_ratio > 0.9");
        assert_eq!(end(other, "> 0.900"), end(header, "limit"), "{text}");
        assert!(!text.contains("clipped"), "nothing left its range:\n{text}");
        let json = serde_json::to_value(&o).unwrap();
        assert_eq!(json["limit"].as_f64(), Some(limit));
        assert_eq!(json["expression"], "<= 10%");
        assert!(o.failure_message().contains("does not meet <= 3.713"), "{}", o.failure_message());
    }

    /// An interval past its metric's range is judged and shown clipped, marked with `*`, and a
    /// note gives the range and the Student-t interval; JSON says what it was clipped to.
    #[test]
    fn clipped_intervals_are_marked_and_said() {
        let recovery = threshold("recovery_time_s", Comparison::Less, 150.0, "< 150", &[0.0, 0.0, 0.0, 30.0]);
        let share = threshold("safe_outcome_ratio", Comparison::Greater, 0.99, "> 0.99", &[1.0, 0.998, 1.0, 0.999]);
        let inside = threshold("run_latency_ms.p95", Comparison::Less, 100.0, "< 100", &[50.0, 51.0]);
        let text = text_report(&model(), &opts(), None, &[recovery.clone(), share.clone(), inside.clone()]);
        let (_, line) = row(&text, "recovery_time_s < 150");
        assert!(line.ends_with("*[0, 31.365]"), "{text}");
        let (_, clipped) = row(&text, "safe_outcome_ratio > 0.99");
        assert!(clipped.ends_with(", 1]") && clipped.contains(" *["), "{text}");
        let (_, line) = row(&text, "run_latency_ms.p95");
        assert!(line.ends_with("[44.147, 56.853]"), "{text}");
        // The mark sits before the interval, so every interval ends in one column.
        assert_eq!(line.len(), clipped.len(), "{text}");
        assert!(
            text.contains(
                "* clipped to the range the value can take: recovery_time_s >= 0 (Student-t: [-16.365, 31.365]); \
                 safe_outcome_ratio in [0, 1] (Student-t: [0.998, 1.001]).\n"
            ),
            "{text}"
        );
        assert_eq!((recovery.judged, recovery.ci95_low), (recovery.ci95_high, Some(0.0)));
        let json = |o: &Outcome| serde_json::to_value(o).unwrap();
        assert_eq!(json(&recovery)["clipped_to"], serde_json::json!([0.0, null]));
        assert_eq!(json(&share)["clipped_to"], serde_json::json!([0.0, 1.0]));
        assert_eq!(json(&share)["ci95_high"], 1.0);
        assert_eq!(json(&inside)["clipped_to"], serde_json::Value::Null);
        // A failure message tells the clipped interval and where it came from.
        let short = threshold("recovery_time_s", Comparison::Less, 10.0, "< 10", &[0.0, 0.0, 0.0, 30.0]);
        assert_eq!(short.status, Status::Fail);
        assert!(
            short
                .failure_message()
                .ends_with("95% CI [0, 31.365], clipped to recovery_time_s >= 0 (Student-t: [-16.365, 31.365])"),
            "{}",
            short.failure_message()
        );
    }
}
