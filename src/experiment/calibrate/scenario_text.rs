//! The calibrated scenario as TOML text, each figure with a comment saying where it came
//! from, and the report's tables.

use super::choose::{DependencyChoice, Latency};
use super::fit::{Family, ks_critical, observed_quantile};
use super::infer::{Observations, StepObservations, WorkflowObservations, arrival_rate_per_s, step_graph};
use super::tokens::{MIN_TOKEN_SAMPLES, TokenShape, count_spec};
use crate::experiment::report::table::render;
use crate::world::model::MAX_SIMULATED_S;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The name of the one policy a calibration writes.
pub const POLICY: &str = "calibrated";
/// Servers of a calibrated dependency: traces show latency at the observed load, not capacity.
pub const UNCONSTRAINED_SERVERS: u32 = 10_000;

pub struct Calibrated<'a> {
    pub observations: &'a Observations,
    pub choices: &'a [DependencyChoice],
    /// Dependency -> samples file, relative to the scenario.
    pub samples_files: &'a BTreeMap<String, String>,
    pub sources: &'a [String],
    pub sampling_ratio: Option<f64>,
    pub stem: String,
}

/// The step's `step.criticality` when it is one a scenario knows ("hard" or "soft").
fn given_criticality(s: &StepObservations) -> Option<&str> {
    s.criticality.as_deref().filter(|c| matches!(*c, "hard" | "soft"))
}

fn quote_text(s: &str) -> String {
    crate::scenario::quote(s)
}

/// A TOML basic string (JSON's escapes are TOML's).
pub fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// A float as TOML, with enough digits to be read back as the same figure within 1e-9.
fn num(x: f64) -> String {
    let text = format!("{x:.6}");
    let text = text.trim_end_matches('0').trim_end_matches('.').to_string();
    if text.is_empty() || text == "-0" { "0".into() } else { text }
}

/// A rate with at least six significant digits (`num` keeps six decimals, which turns a rate of
/// a few runs a week into 0.000002, or a run a decade into 0).
fn rate_text(x: f64) -> String {
    let magnitude = if x > 0.0 { x.log10().floor() as i32 } else { 0 };
    let decimals = (5 - magnitude).clamp(6, 20) as usize;
    let text = format!("{x:.decimals$}");
    let text = text.trim_end_matches('0').trim_end_matches('.').to_string();
    if text.is_empty() || text == "-0" { "0".into() } else { text }
}

fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// The longest stretch of run starts one clock (one resource) covered, in s.
pub fn covered_s(observations: &Observations) -> f64 {
    observations
        .workflows
        .values()
        .flat_map(|w| w.starts_by_resource.values())
        .filter_map(|starts| Some((starts.iter().max()? - starts.iter().min()?) as f64 / 1e9))
        .fold(0.0, f64::max)
}

impl Calibrated<'_> {
    /// The scenario's text; `more_notes` join the notes at its end.
    pub fn render(&self, more_notes: &[String]) -> String {
        let mut t = String::new();
        let runs: usize = self.observations.workflows.values().map(|w| w.runs).sum();
        let _ = writeln!(
            t,
            "# Calibrated by `faultline calibrate` from {} run(s) ({} spans) in:",
            runs, self.observations.spans
        );
        for s in self.sources {
            let _ = writeln!(t, "#   {s}");
        }
        t.push_str("# Every figure says where it came from. Traces show latency at the load they saw, not\n");
        t.push_str("# capacity: dependencies get many servers and no queue; set servers, queue_capacity and\n");
        t.push_str("# rate limits from what you know. Read the notes at the end.\n\n");
        self.simulation(&mut t);
        for c in self.choices {
            self.dependency(&mut t, c);
        }
        for (name, w) in &self.observations.workflows {
            self.workflow(&mut t, name, w);
        }
        self.policy(&mut t);
        let mut notes = self.notes();
        notes.extend(more_notes.iter().cloned());
        if !notes.is_empty() {
            t.push_str("\n# Notes: what the traces could not show.\n");
            for n in notes {
                let _ = writeln!(t, "# - {n}");
            }
        }
        t
    }

    /// The longest stretch of run starts one clock (one resource) covered, in s.
    pub fn covered_s(&self) -> f64 {
        covered_s(self.observations)
    }

    /// What the scenario simulates: as long as the traces cover, at least a minute.
    pub fn duration_s(&self) -> f64 {
        self.covered_s().round().max(60.0)
    }

    /// A workflow's arrival rate as written.
    pub fn rate_per_s(&self, w: &WorkflowObservations) -> f64 {
        arrival_rate_per_s(w, self.sampling_ratio).unwrap_or(1.0)
    }

    /// The time-series window: 60 s, or wider when the period over 60 s windows would pass the
    /// bound on windows or on the time series' cells (one policy, three columns a dependency,
    /// ten replications).
    fn window_s(&self, duration_s: f64) -> f64 {
        let columns = (crate::metrics::timeseries::FIXED_COLUMNS.len() + 3 * self.choices.len()) as f64;
        let by_cells = crate::world::model::MAX_TIMESERIES_CELLS as f64 / (columns * 10.0);
        let windows = crate::world::model::MAX_WINDOWS.min(by_cells) - 1.0;
        ((duration_s + 3_600.0) / windows).ceil().max(60.0)
    }

    fn simulation(&self, t: &mut String) {
        let (span_s, duration_s) = (self.covered_s(), self.duration_s());
        let _ = writeln!(t, "[simulation]");
        let _ = writeln!(t, "duration_s = {}   # the traces cover {span_s:.0} s on one clock", num(duration_s));
        let _ = writeln!(t, "warmup_s = 0");
        let _ = writeln!(t, "seed = 1");
        // The default 60 s windows over the default 3600 s drain, within both bounds on windows:
        // a period of weeks or years needs wider ones.
        let window_s = self.window_s(duration_s);
        if window_s > 60.0 {
            let _ =
                writeln!(t, "timeseries_window_s = {window_s}   # wider than 60 s: so long a period in fewer windows");
        }
        let _ = writeln!(t, "replications = 10\n");
    }

    fn dependency(&self, t: &mut String, c: &DependencyChoice) {
        let obs = &self.observations.dependencies[&c.name];
        let _ = writeln!(t, "[[dependency]]");
        let _ = writeln!(t, "name = {}", toml_string(&c.name));
        if let Some(kind) = &obs.kind
            && ["model", "retrieval", "mcp_tool", "a2a_agent", "api"].contains(&kind.as_str())
        {
            let _ = writeln!(t, "kind = {}", toml_string(kind));
        }
        let _ = writeln!(t, "servers = {UNCONSTRAINED_SERVERS}   # not observed: no queueing");
        match &c.tokens {
            // The token table gives every call's service time; the plain fit stays in the report.
            Some(_) => {
                let _ = writeln!(t, "# no service_time: [dependency.tokens] below gives every call's");
            }
            None => {
                let _ = writeln!(t, "{}", self.service_time(c));
            }
        }
        if !c.error_mix.is_empty() {
            let fields: Vec<String> =
                c.error_mix.iter().map(|(k, p, _)| format!("{} = {}", k.metric_name(), num(*p))).collect();
            let counts: Vec<String> = c.error_mix.iter().map(|(k, _, n)| format!("{n} {}", k.metric_name())).collect();
            let _ =
                writeln!(t, "errors = {{ {} }}   # {} of {} attempts", fields.join(", "), counts.join(", "), c.reached);
        }
        if c.hang_probability > 0.0 {
            let _ = writeln!(
                t,
                "hang_probability = {}   # {} of {} attempts timed out (their true duration is unknown)",
                num(c.hang_probability),
                obs.timeouts,
                c.reached
            );
        }
        if let Some(shape) = &c.tokens {
            token_table(t, shape);
        }
        t.push('\n');
    }

    fn service_time(&self, c: &DependencyChoice) -> String {
        let n = c.sorted_ms.len();
        let others = |chosen: &str| -> String {
            c.candidates
                .iter()
                .filter(|f| f.family.name() != chosen)
                .map(|f| format!("{} {:.4}", f.family.name(), f.ks))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match &c.latency {
            Latency::Fitted(f) => {
                let spec = distribution_ms(&f.family);
                format!(
                    "service_time = {spec}\n# {} fit (maximum likelihood) of {n} answered attempts: KS distance {:.4} (5 % critical {:.4}; {})",
                    f.family.name(),
                    f.ks,
                    ks_critical(n),
                    others(f.family.name())
                )
            }
            Latency::Empirical { best, .. } => {
                let file = self.samples_files.get(&c.name).cloned().unwrap_or_default();
                let why = match best {
                    Some(b) if n >= super::choose::MIN_FIT_SAMPLES && b.ks <= ks_critical(n) => format!(
                        "kept as observed (--fit empirical); {} would pass at KS {:.4} (5 % critical {:.4})",
                        b.family.name(),
                        b.ks,
                        ks_critical(n)
                    ),
                    Some(b) if n >= super::choose::MIN_FIT_SAMPLES => format!(
                        "no family fits: the closest, {}, is at KS {:.4} (5 % critical {:.4})",
                        b.family.name(),
                        b.ks,
                        ks_critical(n)
                    ),
                    _ => "as observed".into(),
                };
                format!(
                    "service_time = {{ dist = \"empirical\", samples_file = {} }}\n# {n} answered attempts, p50 {:.1} ms, p99 {:.1} ms; {why}",
                    toml_string(&file),
                    observed_quantile(&c.sorted_ms, 0.5),
                    observed_quantile(&c.sorted_ms, 0.99)
                )
            }
            Latency::Unknown => "service_time = { dist = \"constant\", value_ms = 1 }   # never answered".into(),
            Latency::Histogram(h) => {
                let (le, counts) = h.as_scenario_buckets();
                // Every digit: rounded bounds could meet, or fall to 0.
                let list = |v: &[f64]| v.iter().map(|x| format!("{x:?}")).collect::<Vec<_>>().join(", ");
                format!(
                    "service_time = {{ dist = \"histogram\", le_ms = [{}], cumulative_counts = [{}] }}\n# the Prometheus histogram {}{{{}}} ({} observations); the traces' {n} answers are in the report",
                    list(&le),
                    list(&counts),
                    h.metric,
                    h.labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect::<Vec<_>>().join(","),
                    h.total()
                )
            }
        }
    }

    fn workflow(&self, t: &mut String, name: &str, w: &WorkflowObservations) {
        let ratio = self.sampling_ratio.or(w.sampling_ratio).unwrap_or(1.0);
        let rate = self.rate_per_s(w);
        let mut latencies = w.run_latency_ms.clone();
        latencies.sort_by(f64::total_cmp);
        // A deadline the scenario takes: at least a microsecond, at most a simulation's 10 years.
        let usable = |d: &f64| d.is_finite() && (0.001..=MAX_SIMULATED_S * 1e3).contains(d);
        let (deadline, deadline_why) = match median(&w.deadlines_ms).filter(usable) {
            Some(d) => (d, "the runs' run.deadline_ms".to_string()),
            None => {
                let p99 = observed_quantile(&latencies, 0.99);
                (
                    (10.0 * p99).ceil().max(1.0),
                    format!("not in the traces (or not a usable one): 10 x the observed p99 run latency ({p99:.1} ms)"),
                )
            }
        };
        let _ = writeln!(t, "[[workflow]]");
        let _ = writeln!(t, "name = {}", toml_string(name));
        let _ = writeln!(
            t,
            "arrivals = {{ rate_per_s = {} }}   # {} runs{}",
            rate_text(rate),
            w.runs,
            if ratio < 1.0 { format!(", sampled at {ratio:.6} of all runs") } else { String::new() }
        );
        let _ = writeln!(t, "deadline_ms = {}   # {deadline_why}", num(deadline));
        let _ = writeln!(
            t,
            "# observed: {:.1} % of runs completed; run latency p50 {:.1} ms, p95 {:.1} ms, p99 {:.1} ms",
            100.0 * w.completed as f64 / w.runs.max(1) as f64,
            observed_quantile(&latencies, 0.5),
            observed_quantile(&latencies, 0.95),
            observed_quantile(&latencies, 0.99)
        );
        for (id, after) in step_graph(w) {
            let s = &w.steps[&id];
            t.push('\n');
            let _ = writeln!(t, "  [[workflow.step]]");
            let _ = writeln!(t, "  id = {}", toml_string(&id));
            let _ = writeln!(
                t,
                "  dependency = {}   # called in {} of {} runs",
                toml_string(&s.dependency),
                s.runs,
                w.runs
            );
            if !after.is_empty() {
                let list: Vec<String> = after.iter().map(|a| toml_string(a)).collect();
                let _ = writeln!(t, "  after = [{}]   # started after these ended in >= 98 % of runs", list.join(", "));
            }
            if let Some(f) = &s.fallback
                && *f != s.dependency
            {
                let _ = writeln!(t, "  fallback = {}", toml_string(f));
            }
            // A value the scenario does not know is ignored (with a note), as if the traces
            // said nothing: writing it would give a scenario that does not load.
            match (given_criticality(s), s.failed_in_completed_runs) {
                (Some("soft"), _) => {
                    let _ = writeln!(t, "  criticality = \"soft\"   # the traces' step.criticality");
                }
                (None, n) if n > 0 => {
                    let _ = writeln!(t, "  criticality = \"soft\"   # {n} run(s) completed without its answer");
                }
                _ => {}
            }
            if s.write {
                let _ = writeln!(t, "  effect = \"write\"   # the traces' step.effect");
            }
            self.step_tokens(t, s);
        }
        t.push('\n');
    }

    /// A step at a token-shaped model gets its own counts when its runs showed enough of them.
    fn step_tokens(&self, t: &mut String, s: &StepObservations) {
        let token_shaped = self.choices.iter().any(|c| c.name == s.dependency && c.tokens.is_some());
        if !token_shaped || s.input_tokens.len() < MIN_TOKEN_SAMPLES {
            return;
        }
        for (key, counts) in [("input_tokens", &s.input_tokens), ("output_tokens", &s.output_tokens)] {
            let mut sorted: Vec<f64> = counts.iter().map(|c| c.max(1.0)).collect();
            sorted.sort_by(f64::total_cmp);
            if let Some(f) = super::fit::fit_all(&sorted).into_iter().min_by(|a, b| a.ks.total_cmp(&b.ks)) {
                let _ = writeln!(
                    t,
                    "  {key} = {}   # {} fit of its first attempt's gen_ai.usage in {} runs",
                    count_spec(&f),
                    f.family.name(),
                    counts.len()
                );
            }
        }
    }

    fn policy(&self, t: &mut String) {
        let steps: Vec<(&String, &StepObservations)> =
            self.observations.workflows.values().flat_map(|w| w.steps.iter()).collect();
        let max_attempts =
            steps.iter().flat_map(|(_, s)| s.attempts_per_call.iter().copied()).max().unwrap_or(1).clamp(1, 20);
        let gaps: Vec<f64> = steps.iter().flat_map(|(_, s)| s.gaps_ms.iter().copied()).collect();
        let _ = writeln!(t, "[policy.{POLICY}]");
        let _ = writeln!(t, "# What the callers did: the most attempts seen in one logical call, the usual pause");
        let _ = writeln!(t, "# between attempts; per step below, the timeouts seen.");
        match median(&gaps) {
            Some(gap) => {
                let _ = writeln!(
                    t,
                    "retry = {{ max_attempts = {max_attempts}, backoff = {{ kind = \"constant\", base_ms = {}, jitter = \"none\" }} }}   # median pause of {} retries",
                    num(gap.max(0.0)),
                    gaps.len()
                );
            }
            None => {
                let _ = writeln!(t, "retry = {{ max_attempts = {max_attempts} }}   # no retry seen");
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for (id, s) in steps {
            if !seen.insert(id.clone()) {
                continue;
            }
            let most = s.attempts_per_call.iter().copied().max().unwrap_or(1).clamp(1, 20);
            let timeout = median(&s.timed_out_ms);
            if most == max_attempts && timeout.is_none() {
                continue;
            }
            let _ = writeln!(t, "\n[policy.{POLICY}.steps.{}]", toml_string(id));
            if most != max_attempts {
                let _ = writeln!(t, "max_attempts = {most}");
            }
            if let Some(ms) = timeout {
                let _ = writeln!(
                    t,
                    "timeout_ms = {}   # median length of {} timed-out attempts",
                    num(ms.round()),
                    s.timed_out_ms.len()
                );
            }
        }
        self.sdk_clients(t);
    }

    /// An `sdk_client` for each dependency the callers reached through an SDK client (the
    /// traces' `sdk.attempt` spans): the most retries seen in one call, the rest the defaults.
    fn sdk_clients(&self, t: &mut String) {
        for (dep, sdk) in &self.observations.sdk {
            if sdk.calls == 0 {
                continue;
            }
            let retries = sdk.most_attempts.saturating_sub(1).min(crate::runtime::sdk_client::MAX_RETRIES);
            let _ = writeln!(t, "\n[policy.{POLICY}.sdk_client.{}]", toml_string(dep));
            let _ = writeln!(
                t,
                "# {} call(s) through an SDK client: {} attempt(s) at the dependency, {} of them its own retries; sleeps and the other fields are openai-python's defaults",
                sdk.calls, sdk.attempts, sdk.hidden
            );
            let _ = writeln!(t, "max_retries = {retries}   # the most retries seen in one call");
        }
    }

    /// What the traces could not show, for the scenario's last comment and the report.
    pub fn notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = self.choices.iter().flat_map(|c| c.notes.iter().cloned()).collect();
        let o = self.observations;
        if o.rootless > 0 {
            notes.push(format!("{} trace(s) had no root span and were left out", o.rootless));
        }
        if let Some((trace, spans)) = &o.cyclic.first {
            notes.push(format!(
                "{} span(s) in {} trace(s) sit on or below a cycle of parents (a span its own parent, or spans each other's) and were left out; the first: trace {trace}, span(s) {}",
                o.cyclic.spans,
                o.cyclic.traces,
                spans.join(", ")
            ));
        }
        if o.backwards_spans > 0 {
            notes.push(format!(
                "{} span(s) end before they start (clocks of two hosts apart, or a broken exporter) and are read as lasting 0 ms",
                o.backwards_spans
            ));
        }
        if let Some((trace, id)) = &o.duplicate_ids.first {
            notes.push(format!(
                "{} trace(s) ({} spans) were left out: two of their spans share a span id that another span names as its parent, so whose child it is cannot be told; the first: trace {trace}, span id {id}",
                o.duplicate_ids.traces, o.duplicate_ids.spans
            ));
        }
        for (name, spellings) in o.callee_spellings.iter().filter(|(_, s)| s.len() > 1) {
            let first = spellings.iter().next().expect("two spellings or more");
            notes.push(format!(
                "the callees {} are one dependency, {name}, here (scenario names use letters, digits, `_` and `-`): their calls are added up; keep them apart with --map {}=ANOTHER_NAME",
                spellings.iter().map(|s| quote_text(s)).collect::<Vec<_>>().join(" and "),
                first
            ));
        }
        for (name, raw) in &o.renamed {
            notes.push(format!(
                "{} is named {name} here (scenario names use letters, digits, `_` and `-`)",
                quote_text(raw)
            ));
        }
        for (name, w) in &o.workflows {
            for (id, s) in &w.steps {
                if let Some(c) = s.criticality.as_deref().filter(|_| given_criticality(s).is_none()) {
                    notes.push(format!(
                        "{name}: step {id}: step.criticality {} is neither \"hard\" nor \"soft\" and was ignored",
                        quote_text(c)
                    ));
                }
            }
        }
        for (dep, sdk) in &o.sdk {
            notes.push(format!(
                "{dep}: {} attempt(s) an SDK client made inside the caller (sdk.attempt spans, {} of them its own retries) fitted the dependency; the {} runtime attempt(s) around them are the policy's",
                sdk.attempts, sdk.hidden, sdk.calls
            ));
        }
        if o.nested_calls > 0 {
            notes.push(format!(
                "{} call(s) below another call (a remote agent's own calls) or status lookups are part of their caller's latency, not steps",
                o.nested_calls
            ));
        }
        for (name, w) in &o.workflows {
            for (id, s) in &w.steps {
                if (s.runs as f64) < 0.98 * w.runs as f64 {
                    notes.push(format!(
                        "{name}: step {id} was called in {} of {} runs (the runtime skipped it in the others: a degradation mode, a cut branch or an earlier failure); the calibrated workflow calls it in every run",
                        s.runs, w.runs
                    ));
                }
            }
            if self.sampling_ratio.or(w.sampling_ratio).is_none() {
                notes.push(format!(
                    "{name}: the arrival rate assumes the traces hold every run; with head sampling, give --sampling-ratio"
                ));
            }
        }
        notes.push(
            "capacity, queues, rate limits, breakers and retry budgets are not visible in traces; faults are folded into the latency and error figures of the whole period".into(),
        );
        notes
    }
}

/// One row per dependency: what was seen and what the scenario uses.
fn token_table(t: &mut String, shape: &TokenShape) {
    let _ = writeln!(t, "[dependency.tokens]");
    let how = match shape.tpot {
        Some(_) => "by the moments of the latencies less prefill and output",
        None => "fit of each latency less its prefill and output",
    };
    let _ = writeln!(
        t,
        "time_to_first_token = {}   # {} {how} (KS {:.4} from those)",
        distribution_ms(&shape.ttft.family),
        shape.ttft.family.name(),
        shape.ttft.ks
    );
    let _ = writeln!(
        t,
        "ttft_ms_per_1k_input_tokens = {}   # least squares of latency on the tokens, {} answers",
        num(shape.prefill_ms_per_1k_input_tokens),
        shape.samples
    );
    let tpot = match shape.tpot {
        Some(family) => distribution_ms(&family),
        None => format!("{{ dist = \"constant\", value_ms = {} }}", num(shape.tpot_ms)),
    };
    let _ = writeln!(
        t,
        "time_per_output_token = {tpot}   # mean {} ms by the same fit ({:.0} % of the variance); its spread from the residuals' growth with output²",
        num(shape.tpot_ms),
        100.0 * shape.explained
    );
    for (key, fitted) in [("input_tokens", &shape.input_tokens), ("output_tokens", &shape.output_tokens)] {
        if let Some(f) = fitted {
            let _ = writeln!(
                t,
                "{key} = {}   # callers without their own: {} fit of every attempt's",
                count_spec(f),
                f.family.name()
            );
        }
    }
}

/// A latency family in a scenario's words.
fn distribution_ms(family: &Family) -> String {
    match *family {
        Family::LogNormal { mu, sigma } => {
            format!("{{ p50_ms = {}, p95_ms = {} }}", num(mu.exp()), num((mu + sigma * crate::world::dist::Z95).exp()))
        }
        Family::Gamma { shape, scale } => {
            format!("{{ dist = \"gamma\", shape = {}, scale_ms = {} }}", num(shape), num(scale))
        }
        Family::Weibull { shape, scale } => {
            format!("{{ dist = \"weibull\", shape = {}, scale_ms = {} }}", num(shape), num(scale))
        }
    }
}

pub fn dependency_table(choices: &[DependencyChoice]) -> String {
    let header: Vec<String> =
        ["dependency", "answered", "timeouts", "p50 ms", "p95 ms", "p99 ms", "latency", "KS", "errors"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    let rows: Vec<Vec<String>> = choices
        .iter()
        .map(|c| {
            let q = |p: f64| {
                if c.sorted_ms.is_empty() { "-".into() } else { format!("{:.1}", observed_quantile(&c.sorted_ms, p)) }
            };
            let (latency, ks) = match &c.latency {
                Latency::Fitted(f) => (f.family.name().to_string(), format!("{:.4}", f.ks)),
                Latency::Empirical { best: Some(b), .. } => {
                    ("empirical".into(), format!("{} {:.4}", b.family.name(), b.ks))
                }
                Latency::Empirical { best: None, .. } => ("empirical".into(), "-".into()),
                Latency::Unknown => ("unknown".into(), "-".into()),
                Latency::Histogram(_) => ("histogram".into(), "-".into()),
            };
            let errors: Vec<String> =
                c.error_mix.iter().map(|(k, p, _)| format!("{} {:.2}%", k.metric_name(), 100.0 * p)).collect();
            vec![
                c.name.clone(),
                c.sorted_ms.len().to_string(),
                (c.reached - c.sorted_ms.len()).to_string(),
                q(0.5),
                q(0.95),
                q(0.99),
                latency,
                ks,
                if errors.is_empty() { "none seen".into() } else { errors.join(", ") },
            ]
        })
        .collect();
    render(&header, &rows)
}

/// Observed against modelled latency at a few quantiles, per dependency.
pub fn qq_tables(choices: &[DependencyChoice]) -> String {
    let mut header = vec!["dependency".to_string(), "".to_string()];
    header.extend(super::choose::QQ_QUANTILES.iter().map(|p| format!("p{}", 100.0 * p)));
    let mut rows = Vec::new();
    for c in choices {
        let qq = c.qq();
        if qq.is_empty() {
            continue;
        }
        let mut observed = vec![c.name.clone(), "observed ms".into()];
        observed.extend(qq.iter().map(|(_, o, _)| format!("{o:.1}")));
        let mut modelled = vec![String::new(), "modelled ms".into()];
        modelled.extend(qq.iter().map(|(_, _, m)| format!("{m:.1}")));
        rows.push(observed);
        rows.push(modelled);
    }
    format!("quantile-quantile:\n{}", render(&header, &rows))
}
