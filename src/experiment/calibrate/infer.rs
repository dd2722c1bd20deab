//! What a set of traces says about the system that produced them: one dependency per callee
//! (its answered latencies, its errors by failure kind, its timeouts), one workflow per kind of
//! root span (its arrival rate, its steps and which runs after which), and the policy the
//! callers seem to follow (attempts per logical call, timeouts, the pause between attempts).

use super::read::{Attr, ObservedSpan, ObservedTrace};
use crate::runtime::workflow::MAX_STEPS;
use crate::vocab::FailureKind;
use std::collections::{BTreeMap, BTreeSet};

/// The attributes that name a callee, in the order they are tried (OpenTelemetry's names).
pub const CALLEE_ATTRIBUTES: [&str; 4] = ["gen_ai.request.model", "server.address", "rpc.service", "peer.service"];

/// What was observed of one callee.
#[derive(Debug, Clone, Default)]
pub struct DependencyObservations {
    /// Durations of attempts that got an answer (a success or an error response), ms.
    pub answered_ms: Vec<f64>,
    /// Error responses by failure kind.
    pub errors: BTreeMap<FailureKind, usize>,
    /// Attempts the caller gave up on (error.type `timeout`).
    pub timeouts: usize,
    /// Attempts refused before they reached it (a breaker, a bulkhead, a quota of the caller).
    pub refused: usize,
    /// Attempts cancelled by their caller before an answer.
    pub cancelled: usize,
    /// `dependency.kind` when the traces say it, or `model` for a GenAI span.
    pub kind: Option<String>,
    pub input_tokens: Vec<f64>,
    pub output_tokens: Vec<f64>,
    /// Answered attempts that carry both token counts: (latency ms, input, output).
    pub token_answers: Vec<super::tokens::TokenAnswer>,
}

impl DependencyObservations {
    /// Attempts that reached the callee and ended in an answer or a timeout.
    pub fn reached(&self) -> usize {
        self.answered_ms.len() + self.timeouts
    }
}

/// One step of a workflow as observed.
#[derive(Debug, Clone, Default)]
pub struct StepObservations {
    pub dependency: String,
    pub fallback: Option<String>,
    /// Runs in which the step made at least one attempt.
    pub runs: usize,
    /// Attempts at the primary per logical call (refused ones included: the policy made them).
    pub attempts_per_call: Vec<u32>,
    /// Durations of attempts that ended in a timeout (each ends at its timeout), ms.
    pub timed_out_ms: Vec<f64>,
    /// Pauses between one attempt's end and the next attempt's start, ms.
    pub gaps_ms: Vec<f64>,
    /// Start offsets from the run's start, ms (to order the steps).
    pub start_offsets_ms: Vec<f64>,
    /// For every other step seen in the same run: runs in which this step started after that
    /// one had ended, and runs with both.
    pub after_counts: BTreeMap<String, (usize, usize)>,
    /// `step.criticality` as the traces give it (faultline's own traces do).
    pub criticality: Option<String>,
    /// `step.effect = write` in the traces.
    pub write: bool,
    /// Runs that completed although this step got no good answer: the step is soft.
    pub failed_in_completed_runs: usize,
    /// Per run, the token counts of the step's first attempt at its primary that carried them.
    pub input_tokens: Vec<f64>,
    pub output_tokens: Vec<f64>,
}

/// One workflow: the runs whose root span has its name.
#[derive(Debug, Clone, Default)]
pub struct WorkflowObservations {
    pub runs: usize,
    pub run_latency_ms: Vec<f64>,
    /// Runs that ended well (`run.outcome` succeeded or degraded, or a root span without error).
    pub completed: usize,
    pub deadlines_ms: Vec<f64>,
    pub steps: BTreeMap<String, StepObservations>,
    /// Run start times per resource, ns (arrival rates are measured per clock).
    pub starts_by_resource: BTreeMap<String, Vec<u64>>,
    /// The sampling ratio the traces declare (`faultline.sampling_ratio`), if any.
    pub sampling_ratio: Option<f64>,
    /// The declared sampling ratio per resource (each replication of a `run --traces` export
    /// has its own).
    pub ratio_by_resource: BTreeMap<String, f64>,
}

/// The spans left out for a cycle of parents: how many, in how many traces, and the first
/// cycle's spans (trace id, span ids, hex) to name them.
#[derive(Debug, Clone, Default)]
pub struct CyclicSpans {
    pub spans: usize,
    pub traces: usize,
    pub first: Option<(String, Vec<String>)>,
}

/// Everything the traces showed.
#[derive(Debug, Clone, Default)]
pub struct Observations {
    pub dependencies: BTreeMap<String, DependencyObservations>,
    pub workflows: BTreeMap<String, WorkflowObservations>,
    pub spans: usize,
    /// Traces without a root span, skipped.
    pub rootless: usize,
    /// Spans whose chain of parents goes round a cycle (a span its own parent, two spans each
    /// other's) instead of ending at the root, and the spans below them: left out.
    pub cyclic: CyclicSpans,
    /// Status lookups (reconciliation) and calls below another call (a remote agent's own
    /// calls), left out of the callers' steps.
    pub nested_calls: usize,
    /// Per dependency, what SDK clients inside the callers did (faultline's `sdk.attempt`
    /// spans below a runtime attempt): the dependency's figures come from these attempts.
    pub sdk: BTreeMap<String, SdkObservations>,
    /// Names from the traces changed to scenario names (letters, digits, `_`, `-`): the
    /// scenario's name and the traces' spelling.
    pub renamed: BTreeMap<String, String>,
    /// Per dependency, the callee names of the traces (after `--map`) that became it: two
    /// spellings (`a.b` and `a-b`) are one dependency, whose calls are added up.
    pub callee_spellings: BTreeMap<String, BTreeSet<String>>,
    /// Traces holding two spans with one span id that a third names as its parent, left out:
    /// which span is whose parent cannot be told.
    pub duplicate_ids: DuplicateIds,
    /// Spans that end before they start (clock skew between hosts, a broken exporter): read as
    /// lasting 0 ms.
    pub backwards_spans: usize,
}

/// An SDK client's calls at one dependency, as its `sdk.attempt` spans show them.
#[derive(Debug, Clone, Default)]
pub struct SdkObservations {
    /// Runtime attempts made through the SDK (spans with `sdk.attempt` children).
    pub calls: usize,
    /// The SDK's attempts, the first of each call included.
    pub attempts: usize,
    /// Its own retries (`sdk.hidden = true`).
    pub hidden: usize,
    /// The most attempts seen in one call (`sdk.attempt`, from 1).
    pub most_attempts: u32,
}

/// Traces left out because two of their spans share a span id.
#[derive(Debug, Clone, Default)]
pub struct DuplicateIds {
    pub traces: usize,
    pub spans: usize,
    /// The first such trace and the span id it repeats, in hex.
    pub first: Option<(String, String)>,
}

/// A name from the traces as a scenario name: letters, digits, `_` and `-` kept, every other
/// character `-`, at most 100 characters (`world::model::check_name`).
pub fn scenario_name(raw: &str) -> String {
    let name: String = raw
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '-' })
        .take(100)
        .collect();
    if name.is_empty() { "unnamed".into() } else { name }
}

fn named(raw: String, renamed: &mut BTreeMap<String, String>) -> String {
    let name = scenario_name(&raw);
    if name != raw {
        renamed.entry(name.clone()).or_insert(raw);
    }
    name
}

/// Reads what the traces show. `rename` maps a callee's name to the dependency it belongs to.
pub fn observe(traces: &[ObservedTrace], rename: &BTreeMap<String, String>) -> Observations {
    let mut obs = Observations::default();
    for trace in traces {
        obs.spans += trace.spans.len();
        obs.backwards_spans += trace.spans.iter().filter(|s| s.end_ns < s.start_ns).count();
        if let Some(repeated) = ambiguous_parent_id(trace) {
            let ids = &mut obs.duplicate_ids;
            ids.traces += 1;
            ids.spans += trace.spans.len();
            ids.first.get_or_insert_with(|| (hex(&trace.trace_id), hex(repeated)));
            continue;
        }
        let on_cycles = on_cycles(trace);
        if on_cycles.iter().any(|&c| c) {
            let acyclic = leave_out_cycles(trace, &on_cycles, &mut obs.cyclic);
            observe_trace(&acyclic, rename, &mut obs);
        } else {
            observe_trace(trace, rename, &mut obs);
        }
    }
    obs
}

/// An id as OTLP/JSON spells it: lower-case hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A span id two spans of the trace share and another span names as its parent, if any: then
/// whose child that span is cannot be told. (Repeated ids no span points to change nothing.)
fn ambiguous_parent_id(trace: &ObservedTrace) -> Option<&[u8]> {
    let mut ids: Vec<&[u8]> = trace.spans.iter().map(|s| s.span_id.as_slice()).collect();
    ids.sort_unstable();
    let repeated: BTreeSet<&[u8]> = ids.windows(2).filter(|w| w[0] == w[1]).map(|w| w[0]).collect();
    if repeated.is_empty() {
        return None;
    }
    trace.spans.iter().map(|s| s.parent_id.as_slice()).find(|p| repeated.contains(p))
}

/// Per span, whether its chain of parents never reaches a span without a parent in the trace:
/// it is on a cycle or below one. Each span is walked once (linear in the spans).
pub fn on_cycles(trace: &ObservedTrace) -> Vec<bool> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Unseen,
        OnPath,
        Rooted,
        Cyclic,
    }
    let by_id: BTreeMap<&[u8], usize> =
        trace.spans.iter().enumerate().map(|(i, s)| (s.span_id.as_slice(), i)).collect();
    let mut marks = vec![Mark::Unseen; trace.spans.len()];
    let mut path = Vec::new();
    for start in 0..trace.spans.len() {
        let mut at = Some(start);
        let end = loop {
            match at {
                None => break Mark::Rooted,
                Some(i) => match marks[i] {
                    Mark::Unseen => {
                        marks[i] = Mark::OnPath;
                        path.push(i);
                        at = by_id.get(trace.spans[i].parent_id.as_slice()).copied();
                    }
                    Mark::OnPath => break Mark::Cyclic,
                    done @ (Mark::Rooted | Mark::Cyclic) => break done,
                },
            }
        };
        for i in path.drain(..) {
            marks[i] = end;
        }
    }
    marks.into_iter().map(|m| m == Mark::Cyclic).collect()
}

/// The trace without the spans on or below a cycle, which are counted (and the first cycle
/// named) in `cyclic`.
fn leave_out_cycles(trace: &ObservedTrace, on_cycles: &[bool], cyclic: &mut CyclicSpans) -> ObservedTrace {
    let left_out: Vec<&ObservedSpan> = trace.spans.iter().zip(on_cycles).filter(|(_, c)| **c).map(|(s, _)| s).collect();
    cyclic.spans += left_out.len();
    cyclic.traces += 1;
    if cyclic.first.is_none() {
        cyclic.first = Some((hex(&trace.trace_id), left_out.iter().take(4).map(|s| hex(&s.span_id)).collect()));
    }
    ObservedTrace {
        spans: trace.spans.iter().zip(on_cycles).filter(|(_, c)| !**c).map(|(s, _)| s.clone()).collect(),
        ..trace.clone()
    }
}

/// The callee an attempt span calls, after `rename`.
pub fn callee(span: &ObservedSpan, rename: &BTreeMap<String, String>) -> String {
    let raw = CALLEE_ATTRIBUTES
        .iter()
        .find_map(|k| span.attr(k).and_then(Attr::as_str).map(str::to_string))
        .unwrap_or_else(|| span.name.clone());
    rename.get(&raw).cloned().unwrap_or(raw)
}

/// How an attempt ended, from `error.type`, the HTTP status code or the span status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Answered(Option<FailureKind>),
    TimedOut,
    Cancelled,
    Refused,
}

pub fn ending(span: &ObservedSpan) -> Ending {
    // An SDK's attempt (faultline's `sdk.attempt` span) says its kind in `failure.kind` only.
    if span.attr("sdk.attempt").is_some()
        && span.attr("error.type").is_none()
        && let Some(kind) = span.attr("failure.kind").and_then(Attr::as_str).and_then(FailureKind::parse)
    {
        return match kind {
            FailureKind::DeadlineExhausted => Ending::TimedOut,
            FailureKind::Canceled => Ending::Cancelled,
            other => Ending::Answered(Some(other)),
        };
    }
    if span.attr("attempt.refused").is_some() {
        return Ending::Refused;
    }
    if matches!(span.attr("attempt.cancelled"), Some(Attr::Bool(true))) {
        return Ending::Cancelled;
    }
    let error_type = span.attr("error.type").map(Attr::text);
    let status = span
        .attr("http.response.status_code")
        .or(span.attr("http.status_code"))
        .map(Attr::text)
        .filter(|s| s.starts_with('4') || s.starts_with('5'));
    // A faultline failure kind or a timeout says the most; then the HTTP status; then any
    // other error.type (an exception's name) as a transport error.
    let named = error_type.as_deref().and_then(|t| match t {
        "timeout" | "TIMEOUT" | "deadline_exceeded" | "DEADLINE_EXHAUSTED" | "deadline_exhausted" => {
            Some(Ending::TimedOut)
        }
        // A write whose effect is unknown ended at its caller's timeout.
        "effect_unknown" | "EFFECT_UNKNOWN" => Some(Ending::TimedOut),
        "canceled" | "CANCELED" | "cancelled" => Some(Ending::Cancelled),
        other => FailureKind::parse(other).map(|k| Ending::Answered(Some(k))),
    });
    match (named, status, error_type) {
        (Some(ending), _, _) => ending,
        (None, Some(code), _) => Ending::Answered(Some(failure_kind(&code))),
        (None, None, Some(other)) => Ending::Answered(Some(failure_kind(&other))),
        (None, None, None) if span.error => Ending::Answered(Some(FailureKind::TransientTransport)),
        (None, None, None) => Ending::Answered(None),
    }
}

/// A failure kind a dependency can answer with, from an error class: faultline's own names of
/// those kinds, then HTTP status codes.
pub fn failure_kind(text: &str) -> FailureKind {
    if let Some(kind) = FailureKind::parse(text).filter(|k| FailureKind::DRAWN.contains(k)) {
        return kind;
    }
    match text {
        "429" => FailureKind::RateLimited,
        "503" | "529" => FailureKind::Overloaded,
        "401" | "403" => FailureKind::Unauthorized,
        "400" | "404" | "409" | "413" | "422" => FailureKind::InvalidInput,
        "501" => FailureKind::PermanentProvider,
        _ => FailureKind::TransientTransport,
    }
}

/// One attempt in a run: the step it belongs to, whether it went to the step's fallback.
struct AttemptSite {
    step: String,
    fallback: bool,
    /// The step span's start and end, when the traces have one.
    interval: Option<(u64, u64)>,
    /// `step.criticality` and `step.effect` of the step span (faultline's traces).
    criticality: Option<String>,
    write: bool,
}

fn observe_trace(trace: &ObservedTrace, rename: &BTreeMap<String, String>, obs: &mut Observations) {
    let by_id: BTreeMap<&[u8], usize> =
        trace.spans.iter().enumerate().map(|(i, s)| (s.span_id.as_slice(), i)).collect();
    let parent = |i: usize| by_id.get(trace.spans[i].parent_id.as_slice()).copied();
    let roots: Vec<usize> = (0..trace.spans.len()).filter(|&i| parent(i).is_none()).collect();
    let Some(&root) = roots.iter().min_by_key(|&&i| (trace.spans[i].start_ns, i)) else {
        obs.rootless += 1;
        return;
    };
    let root_span = &trace.spans[root];
    let workflow_name = root_span
        .attr("workflow.name")
        .and_then(Attr::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| root_span.name.strip_prefix("agent.run ").unwrap_or(&root_span.name).to_string());
    let workflow_name = named(workflow_name, &mut obs.renamed);
    let workflow = obs.workflows.entry(workflow_name.clone()).or_default();
    workflow.runs += 1;
    workflow.run_latency_ms.push(root_span.duration_ms());
    workflow.starts_by_resource.entry(trace.resource.clone()).or_default().push(root_span.start_ns);
    workflow.sampling_ratio = workflow.sampling_ratio.or(trace.sampling_ratio);
    if let Some(r) = trace.sampling_ratio {
        workflow.ratio_by_resource.insert(trace.resource.clone(), r);
    }
    if let Some(d) = root_span.attr("run.deadline_ms").and_then(Attr::as_f64) {
        workflow.deadlines_ms.push(d);
    }
    let completed = match root_span.attr("run.outcome").and_then(Attr::as_str) {
        Some(outcome) => outcome == "succeeded" || outcome == "degraded",
        None => !root_span.error,
    };
    workflow.completed += usize::from(completed);

    // Attempts: client spans with no client span above them (below one is the callee's own work).
    let is_client = |i: usize| trace.spans[i].kind == 3;
    let client_above = client_above(trace.spans.len(), parent, is_client);
    let mut calls: Calls = BTreeMap::new();
    // A runtime attempt made through an SDK client: its `sdk.attempt` children are what the
    // dependency received, so the dependency is fitted from them, not from the whole call.
    let mut through_sdk = vec![false; trace.spans.len()];
    for (i, span) in trace.spans.iter().enumerate() {
        if span.attr("sdk.attempt").is_some()
            && let Some(p) = parent(i)
        {
            through_sdk[p] = true;
        }
    }
    for (i, &nested) in client_above.iter().enumerate() {
        if !is_client(i) || i == root {
            continue;
        }
        let span = &trace.spans[i];
        if let Some(n) = span.attr("sdk.attempt").and_then(Attr::as_f64) {
            let name = named(callee(span, rename), &mut obs.renamed);
            let sdk = obs.sdk.entry(name.clone()).or_default();
            sdk.attempts += 1;
            sdk.hidden += usize::from(matches!(span.attr("sdk.hidden"), Some(Attr::Bool(true))));
            sdk.most_attempts = sdk.most_attempts.max(n.clamp(1.0, 1000.0) as u32);
            record_attempt(obs.dependencies.entry(name).or_default(), span);
            continue;
        }
        let lookup = matches!(span.attr("attempt.kind").and_then(Attr::as_str), Some("reconciliation"));
        if nested || lookup {
            obs.nested_calls += 1;
            continue;
        }
        let raw = callee(span, rename);
        let name = named(raw.clone(), &mut obs.renamed);
        let spellings = obs.callee_spellings.entry(name.clone()).or_default();
        if !spellings.contains(&raw) {
            spellings.insert(raw);
        }
        if through_sdk[i] {
            obs.sdk.entry(name.clone()).or_default().calls += 1;
        } else {
            record_attempt(obs.dependencies.entry(name.clone()).or_default(), span);
        }
        let site_span = parent(i).unwrap_or(root);
        let mut site = attempt_site(trace, site_span, parent(site_span), &name);
        site.step = named(std::mem::take(&mut site.step), &mut obs.renamed);
        calls.entry((site_span, name)).or_insert_with(|| (site, Vec::new())).1.push(i);
    }
    let workflow = obs.workflows.get_mut(&workflow_name).expect("added above");
    record_steps(trace, root, &calls, completed, workflow);
}

/// Per span, whether a client span sits anywhere above it. Each span's answer is found once
/// and kept, so a deep chain of client spans costs time linear in its spans, not spans x depth
/// (the trace has no cycle of parents: `observe` left those out).
fn client_above(spans: usize, parent: impl Fn(usize) -> Option<usize>, is_client: impl Fn(usize) -> bool) -> Vec<bool> {
    let mut known: Vec<Option<bool>> = vec![None; spans];
    let mut path = Vec::new();
    for start in 0..spans {
        let mut at = start;
        while known[at].is_none() {
            match parent(at) {
                Some(p) => {
                    path.push(at);
                    at = p;
                }
                None => known[at] = Some(false),
            }
        }
        // Down the path from the highest span: each one's answer is its parent's.
        for i in path.drain(..).rev() {
            let p = parent(i).expect("a span on the path has a parent");
            known[i] = Some(is_client(p) || known[p] == Some(true));
        }
    }
    known.into_iter().map(|k| k == Some(true)).collect()
}

/// A run's attempts by the span they sit under and their callee: one logical call each.
type Calls = BTreeMap<(usize, String), (AttemptSite, Vec<usize>)>;

/// The step an attempt belongs to: the `step.id` of the span it sits under (faultline's
/// logical-call span), or of that span's parent when it sits in a fallback group (a span
/// marked FALLBACK without a step of its own); else the callee's name, the attempts' interval
/// standing for the step's.
fn attempt_site(trace: &ObservedTrace, site: usize, site_parent: Option<usize>, callee: &str) -> AttemptSite {
    let s = &trace.spans[site];
    let has_step = |span: &ObservedSpan| span.attr("step.id").and_then(Attr::as_str).is_some();
    let fallback = !has_step(s) && matches!(s.attr("degradation.mode").and_then(Attr::as_str), Some("FALLBACK"));
    let step_index = if fallback { site_parent } else { Some(site) }.filter(|&i| has_step(&trace.spans[i]));
    match step_index {
        Some(i) => {
            let span = &trace.spans[i];
            let text = |key: &str| span.attr(key).and_then(Attr::as_str).map(str::to_string);
            AttemptSite {
                step: text("step.id").unwrap_or_default(),
                fallback,
                interval: Some((span.start_ns, span.end_ns)),
                criticality: text("step.criticality"),
                write: text("step.effect").as_deref() == Some("write"),
            }
        }
        None => AttemptSite { step: callee.to_string(), fallback, interval: None, criticality: None, write: false },
    }
}

fn record_attempt(dep: &mut DependencyObservations, span: &ObservedSpan) {
    if dep.kind.is_none() {
        dep.kind = span
            .attr("dependency.kind")
            .and_then(Attr::as_str)
            .map(str::to_string)
            .or_else(|| span.attr("gen_ai.request.model").map(|_| "model".to_string()));
    }
    match ending(span) {
        Ending::Refused => dep.refused += 1,
        Ending::Cancelled => dep.cancelled += 1,
        Ending::TimedOut => dep.timeouts += 1,
        Ending::Answered(kind) => {
            dep.answered_ms.push(span.duration_ms());
            if let Some(kind) = kind {
                *dep.errors.entry(kind).or_default() += 1;
            }
            if let Some((input, output)) = token_counts(span) {
                dep.token_answers.push((span.duration_ms(), input, output));
            }
        }
    }
    for (key, into) in
        [("gen_ai.usage.input_tokens", &mut dep.input_tokens), ("gen_ai.usage.output_tokens", &mut dep.output_tokens)]
    {
        if let Some(v) = span.attr(key).and_then(Attr::as_f64) {
            into.push(v);
        }
    }
}

/// `gen_ai.usage.input_tokens` and `gen_ai.usage.output_tokens`, when a span has both.
fn token_counts(span: &ObservedSpan) -> Option<(f64, f64)> {
    let count = |key: &str| span.attr(key).and_then(Attr::as_f64);
    Some((count("gen_ai.usage.input_tokens")?, count("gen_ai.usage.output_tokens")?))
}

/// One step's calls in one run.
#[derive(Default)]
struct StepInRun {
    primary: Option<String>,
    fallback: Option<String>,
    attempts: u32,
    timed_out_ms: Vec<f64>,
    gaps_ms: Vec<f64>,
    /// Some attempt (at the primary or the fallback) got a good answer.
    answered_ok: bool,
    criticality: Option<String>,
    write: bool,
    tokens: Option<(f64, f64)>,
}

/// Per step of the run: its attempts, timeouts and pauses, and its order against the others.
fn record_steps(
    trace: &ObservedTrace,
    root: usize,
    calls: &Calls,
    completed: bool,
    workflow: &mut WorkflowObservations,
) {
    let root_span = &trace.spans[root];
    // Each step's interval in this run: from its first attempt's start to its last's end.
    let mut intervals: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut per_step: BTreeMap<String, StepInRun> = BTreeMap::new();
    for ((_, callee), (site, attempts)) in calls {
        let entry = per_step.entry(site.step.clone()).or_default();
        if site.fallback {
            entry.fallback = Some(callee.clone());
        } else {
            entry.primary = Some(callee.clone());
            entry.attempts += attempts.len() as u32;
        }
        let mut ordered: Vec<&ObservedSpan> = attempts.iter().map(|&i| &trace.spans[i]).collect();
        ordered.sort_by_key(|s| (s.start_ns, s.end_ns));
        for s in &ordered {
            if ending(s) == Ending::TimedOut {
                entry.timed_out_ms.push(s.duration_ms());
            }
        }
        if !site.fallback {
            entry.tokens = entry.tokens.or(ordered.iter().find_map(|s| token_counts(s)));
            for w in ordered.windows(2) {
                entry.gaps_ms.push(w[1].start_ns.saturating_sub(w[0].end_ns) as f64 / 1e6);
            }
        }
        entry.answered_ok |= ordered.iter().any(|s| ending(s) == Ending::Answered(None));
        entry.criticality = entry.criticality.take().or(site.criticality.clone());
        entry.write |= site.write;
        let first = ordered.first().map_or(0, |s| s.start_ns);
        let last = ordered.iter().map(|s| s.end_ns).max().unwrap_or(first);
        let (first, last) = site.interval.unwrap_or((first, last));
        let interval = intervals.entry(site.step.clone()).or_insert((first, last));
        interval.0 = interval.0.min(first);
        interval.1 = interval.1.max(last);
    }
    // A workflow past the bound on steps is refused (`check::counts`, with the count); its
    // order is never used, so the pairs of steps, quadratic in them, are not counted.
    let new_steps = per_step.keys().filter(|id| !workflow.steps.contains_key(*id)).count();
    let order_counted = workflow.steps.len() + new_steps <= MAX_STEPS;
    for (step_id, in_run) in per_step {
        let StepInRun { primary, fallback, attempts, timed_out_ms, gaps_ms, answered_ok, criticality, write, tokens } =
            in_run;
        if let Some((input, output)) = tokens {
            let step = workflow.steps.entry(step_id.clone()).or_default();
            step.input_tokens.push(input);
            step.output_tokens.push(output);
        }
        let step = workflow.steps.entry(step_id.clone()).or_default();
        if let Some(p) = primary {
            step.dependency = p;
            step.attempts_per_call.push(attempts);
        } else if step.dependency.is_empty() {
            // Only the fallback was called (a fallback-first mode): the callee stands for the step.
            step.dependency = fallback.clone().unwrap_or_default();
        }
        step.fallback = step.fallback.take().or(fallback);
        step.criticality = step.criticality.take().or(criticality);
        step.write |= write;
        step.runs += 1;
        step.failed_in_completed_runs += usize::from(completed && !answered_ok);
        step.timed_out_ms.extend(timed_out_ms);
        step.gaps_ms.extend(gaps_ms);
        let (start, _) = intervals[&step_id];
        step.start_offsets_ms.push(start.saturating_sub(root_span.start_ns) as f64 / 1e6);
        if !order_counted {
            continue;
        }
        for (other, &(_, other_end)) in &intervals {
            if *other == step_id {
                continue;
            }
            let counts = step.after_counts.entry(other.clone()).or_default();
            counts.1 += 1;
            counts.0 += usize::from(start >= other_end);
        }
    }
}

/// Steps of a workflow in the order they usually start, each with the steps it waits for:
/// B waits for A when B started after A ended in at least 98 % of the runs with both, keeping
/// only the nearest such steps (A is dropped when B waits for C and C for A).
pub fn step_graph(workflow: &WorkflowObservations) -> Vec<(String, Vec<String>)> {
    let mut order: Vec<(f64, &String)> = workflow
        .steps
        .iter()
        .map(|(id, s)| {
            let mut offsets = s.start_offsets_ms.clone();
            offsets.sort_by(f64::total_cmp);
            (offsets.get(offsets.len() / 2).copied().unwrap_or(0.0), id)
        })
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(b.1)));
    let waits = |b: &str, a: &str| {
        workflow.steps[b]
            .after_counts
            .get(a)
            .is_some_and(|&(after, both)| both > 0 && after as f64 >= 0.98 * both as f64)
    };
    let ids: Vec<&String> = order.iter().map(|(_, id)| *id).collect();
    ids.iter()
        .enumerate()
        .map(|(i, b)| {
            let before: BTreeSet<&String> = ids[..i].iter().copied().filter(|a| waits(b, a)).collect();
            let nearest: Vec<String> = before
                .iter()
                .filter(|a| !before.iter().any(|c| c != *a && waits(c, a)))
                .map(|a| (*a).clone())
                .collect();
            ((*b).clone(), nearest)
        })
        .collect()
}

/// Root runs per second of one workflow: per clock (resource), runs divided by that clock's
/// sampling ratio (`given`, else the one it declares, else 1), over the time between the
/// first and the last start scaled by n / (n - 1); summed over clocks.
pub fn arrival_rate_per_s(workflow: &WorkflowObservations, given: Option<f64>) -> Option<f64> {
    let (mut runs, mut span_s) = (0.0, 0.0);
    for (resource, starts) in &workflow.starts_by_resource {
        let (Some(first), Some(last)) = (starts.iter().min(), starts.iter().max()) else { continue };
        if starts.len() < 2 || last == first {
            continue;
        }
        let n = starts.len() as f64;
        let ratio = given.or(workflow.ratio_by_resource.get(resource).copied()).unwrap_or(1.0);
        runs += n / ratio;
        span_s += (last - first) as f64 / 1e9 * n / (n - 1.0);
    }
    (span_s > 0.0).then(|| runs / span_s)
}
