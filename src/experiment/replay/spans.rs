//! A traced root run as a tree of spans (docs/essay.md section 25): agent.run ->
//! dependency.logical_call -> dependency.attempt, with fallback and reconciliation groups under
//! a logical call and a remote agent's own attempts under the attempt that reached it. Built
//! from the run's [`TraceEvent`]s; written as OTLP JSON by `otlp.rs` and drawn in the terminal
//! by [`render_tree`].

use crate::engine::Model;
use crate::runtime::decision::{Decision, GiveUp};
use crate::runtime::{AttemptResult, Purpose, StationExit, StepEnd, TraceCaller, TraceEvent};
use crate::sim::{Micros, us_to_ms};
use crate::vocab::AttemptKind;
use crate::vocab::{DegradationMode, FailureKind, Outcome, Refusal};
use crate::world::task::TaskState;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// An attribute value, as OTLP's AnyValue holds it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    /// An array of strings (OTLP arrayValue), such as `gen_ai.response.finish_reasons`.
    StrList(Vec<String>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    /// Work inside the agent runtime (the run, a logical call, a group of attempts).
    Internal,
    /// A call to a dependency.
    Client,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Unset,
    Ok,
    Error(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct SpanEvent {
    pub at_us: Micros,
    pub name: &'static str,
    pub attributes: Vec<(&'static str, Value)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub parent: Option<usize>,
    pub name: String,
    pub kind: SpanKind,
    pub start_us: Micros,
    /// None while open; every span is closed by the time the tree is built.
    pub end_us: Option<Micros>,
    pub attributes: Vec<(&'static str, Value)>,
    pub events: Vec<SpanEvent>,
    pub status: Status,
    /// One line of the terminal tree, after the name.
    pub summary: String,
}

impl Span {
    fn new(parent: Option<usize>, name: String, kind: SpanKind, start_us: Micros) -> Span {
        Span {
            parent,
            name,
            kind,
            start_us,
            end_us: None,
            attributes: Vec::new(),
            events: Vec::new(),
            status: Status::Unset,
            summary: String::new(),
        }
    }

    fn set(&mut self, key: &'static str, value: Value) {
        match self.attributes.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.attributes.push((key, value)),
        }
    }

    pub fn attribute(&self, key: &str) -> Option<&Value> {
        self.attributes.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    fn event(&mut self, at_us: Micros, name: &'static str, attributes: Vec<(&'static str, Value)>) {
        self.events.push(SpanEvent { at_us, name, attributes });
    }
}

/// The spans of one root run; `spans[0]` is the run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpans {
    pub spans: Vec<Span>,
    pub run_number: u64,
}

/// Per step of the run: its logical-call span and its groups.
#[derive(Debug, Clone, Copy, Default)]
struct StepSpans {
    call: Option<usize>,
    fallback: Option<usize>,
    reconciliation: Option<usize>,
    ended: bool,
    /// The attempt span that ended last (a decision is about it).
    last_attempt: Option<usize>,
}

struct Builder<'m> {
    model: &'m Model,
    policy: usize,
    workflow: usize,
    run_start_us: Micros,
    spans: Vec<Span>,
    steps: Vec<StepSpans>,
    /// (step, serial) -> attempt span.
    attempts: BTreeMap<(u8, u32), usize>,
    /// Station job -> attempt span (jobs are reused, so an arrival replaces the entry).
    jobs: BTreeMap<u32, usize>,
    /// Station jobs whose exit was recorded (the first one counts).
    exited: BTreeMap<u32, Micros>,
    /// Remote task -> the attempt span that created it.
    tasks: BTreeMap<u32, usize>,
    /// The latest task client request's span of each attempt (step, serial).
    client_calls: BTreeMap<(u8, u32), usize>,
    /// Task client request spans answered with a protocol error: (code, name).
    refusals: BTreeMap<usize, (i32, &'static str)>,
    last_us: Micros,
}

/// Builds the spans of a traced run from its events (as [`crate::runtime::RunTracer`] kept them).
pub fn build(model: &Model, policy: usize, events: &[(Micros, TraceEvent)]) -> Option<RunSpans> {
    let &(start_us, TraceEvent::RunStarted { start }) = events.first()? else { return None };
    let number = start.number;
    let workflow = start.workflow as usize;
    let wf = &model.workflows[workflow];
    let mut run = Span::new(None, format!("agent.run {}", wf.name), SpanKind::Internal, start_us);
    run.set("run.id", Value::Str(format!("run-{number}")));
    run.set("workflow.name", Value::Str(wf.name.clone()));
    run.set("run.arrival", Value::Int(i64::from(start.arrival)));
    run.set("run.resubmission", Value::Int(i64::from(start.resubmission)));
    run.set("run.deadline_ms", Value::Float(us_to_ms(start.deadline_at_us - start_us)));
    run.set("faultline.policy", Value::Str(model.policies[policy].name.clone()));
    run.summary = format!("run-{number} {}", wf.name);
    let mut b = Builder {
        model,
        policy,
        workflow,
        run_start_us: start_us,
        spans: vec![run],
        steps: vec![StepSpans::default(); wf.steps.len()],
        attempts: BTreeMap::new(),
        jobs: BTreeMap::new(),
        exited: BTreeMap::new(),
        tasks: BTreeMap::new(),
        client_calls: BTreeMap::new(),
        refusals: BTreeMap::new(),
        last_us: start_us,
    };
    for &(at_us, event) in &events[1..] {
        b.last_us = b.last_us.max(at_us);
        b.apply(at_us, event);
    }
    b.close_open();
    Some(RunSpans { spans: b.spans, run_number: number })
}

impl Builder<'_> {
    /// Adds a span; returns its index, which children name as their parent.
    fn push(&mut self, span: Span) -> usize {
        self.spans.push(span);
        self.spans.len() - 1
    }

    fn apply(&mut self, at: Micros, event: TraceEvent) {
        match event {
            TraceEvent::RunStarted { .. } => {}
            TraceEvent::TaskChanged { step, serial, task, dependency, state, work_failed } => {
                self.task_changed(at, (step, serial), task, dependency, (state, work_failed))
            }
            TraceEvent::TaskCallRefused { step, serial, dependency, error } => {
                self.task_call_refused((step, serial), dependency, error)
            }
            TraceEvent::StepStarted { step } => self.step_started(at, step),
            TraceEvent::FallbackStarted { step, candidate } => self.fallback_started(at, step, candidate),
            TraceEvent::AttemptWaiting { step, serial, dependency, kind, purpose } => {
                let span = self.attempt_span(at, step, serial, dependency, Some(kind), purpose);
                self.spans[span].event(at, "bulkhead.wait", Vec::new());
            }
            TraceEvent::AttemptSent { step, serial, dependency, kind, purpose } => {
                match self.attempts.get(&(step, serial)).copied() {
                    Some(span) => {
                        self.spans[span].event(at, "bulkhead.permit", Vec::new());
                        self.spans[span].set("attempt.kind", Value::Str(attempt_kind(kind, purpose).into()));
                    }
                    None => {
                        self.attempt_span(at, step, serial, dependency, Some(kind), purpose);
                    }
                }
            }
            TraceEvent::AttemptRefused { step, dependency, reason, purpose, kind, parked } => {
                self.attempt_refused(at, step, dependency, reason, (purpose, kind), parked)
            }
            TraceEvent::AttemptEnded { step, serial, result, kind } => {
                self.attempt_ended(at, step, serial, result, kind)
            }
            TraceEvent::AttemptCancelled { step, serial } => {
                if let Some(span) = self.attempts.remove(&(step, serial)) {
                    let s = &mut self.spans[span];
                    s.set("attempt.cancelled", Value::Bool(true));
                    s.summary = format!("{} CANCELLED", s.summary);
                    s.end_us = Some(at);
                }
            }
            TraceEvent::Decided { step, decision, retry_tokens_left } => {
                self.decided(step, decision, retry_tokens_left)
            }
            TraceEvent::BudgetExhausted { step, kind } => {
                let call = self.call_span(at, step);
                self.spans[call].event(at, "budget.exhausted", vec![("budget.kind", Value::Str(kind.name().into()))]);
            }
            TraceEvent::StepEnded { step, end } => self.step_ended(at, step, end),
            TraceEvent::RunEnded { outcome, deadline_exceeded, past_deadline, mode } => {
                self.run_ended(at, outcome, (deadline_exceeded, past_deadline), mode)
            }
            TraceEvent::RunFinalized { duplicate_effect } => {
                let run = &mut self.spans[0];
                run.set("run.duplicate_effect", Value::Bool(duplicate_effect));
                let after = at - run.end_us.unwrap_or(at);
                run.set("run.finalized_after_ms", Value::Float(us_to_ms(after)));
            }
            TraceEvent::StationArrived { job, caller, dependency } => self.station_arrived(at, job, caller, dependency),
            TraceEvent::ServiceStarted { job } => {
                if let Some(&span) = self.jobs.get(&job) {
                    let wait_ms = us_to_ms(at - self.spans[span].start_us);
                    let s = &mut self.spans[span];
                    s.set("station.queue_wait_ms", Value::Float(wait_ms));
                    s.event(at, "service.started", Vec::new());
                }
            }
            TraceEvent::TokensDrawn { job, input, output, truncated } => {
                if let Some(&span) = self.jobs.get(&job) {
                    // The OpenTelemetry GenAI client span attributes of a model call.
                    let s = &mut self.spans[span];
                    if let Some(Value::Str(model)) = s.attribute("dependency.name").cloned() {
                        s.set("gen_ai.request.model", Value::Str(model));
                    }
                    s.set("gen_ai.usage.input_tokens", Value::Int(i64::from(input)));
                    s.set("gen_ai.usage.output_tokens", Value::Int(i64::from(output)));
                    let reason = if truncated { "length" } else { "stop" };
                    s.set("gen_ai.response.finish_reasons", Value::StrList(vec![reason.into()]));
                }
            }
            TraceEvent::StationLeft { job, exit, .. } => self.station_left(at, job, exit),
            TraceEvent::CallerTimedOut { job } => {
                if let Some(&span) = self.jobs.get(&job) {
                    self.spans[span].event(at, "caller.timeout", Vec::new());
                    if self.spans[span].end_us.is_none() && self.is_remote(span) {
                        self.end_attempt(span, at, Some(FailureKind::TransientTransport), "TIMEOUT");
                    }
                }
            }
            TraceEvent::CacheStaleAnswer { step, serial, marked } => {
                if let Some(&span) = self.attempts.get(&(step, serial)) {
                    let s = &mut self.spans[span];
                    s.set("cache.stale", Value::Bool(true));
                    s.set("cache.provenance", Value::Bool(marked));
                    s.event(at, "cache.stale_answer", vec![("cache.provenance", Value::Bool(marked))]);
                }
            }
            TraceEvent::QuorumDecided { step, verdict, cancelled, left_running } => {
                let call = self.call_span(at, step);
                let s = &mut self.spans[call];
                s.set("quorum.verdict", Value::Str(verdict.name().into()));
                let attrs = vec![
                    ("quorum.verdict", Value::Str(verdict.name().into())),
                    ("quorum.branches_cancelled", Value::Int(i64::from(cancelled))),
                    ("quorum.trial_calls_left_running", Value::Int(i64::from(left_running))),
                ];
                s.event(at, "quorum.decided", attrs);
                s.summary = format!("{} (quorum {})", s.summary, verdict.name());
            }
            TraceEvent::EffectCommitted { job, duplicate } => {
                if let Some(&span) = self.jobs.get(&job) {
                    let attrs = vec![("effect.duplicate", Value::Bool(duplicate))];
                    self.spans[span].event(at, "effect.committed", attrs);
                    if duplicate {
                        self.spans[span].set("effect.duplicate", Value::Bool(true));
                    }
                }
            }
        }
    }

    /// The logical call's span, opened on first use (a step stopped before it started, by a
    /// fan-out limit, still shows up).
    fn call_span(&mut self, at: Micros, step: u8) -> usize {
        if let Some(span) = self.steps[step as usize].call {
            return span;
        }
        self.step_started(at, step);
        self.steps[step as usize].call.expect("just opened")
    }

    fn step_started(&mut self, at: Micros, step: u8) {
        let wf = &self.model.workflows[self.workflow];
        let sm = &wf.steps[step as usize];
        let mut span = Span::new(Some(0), format!("dependency.logical_call {}", sm.id), SpanKind::Internal, at);
        span.set("step.id", Value::Str(sm.id.clone()));
        self.dependency_attributes(&mut span, sm.dependency as u16);
        span.set("step.effect", Value::Str(format!("{:?}", sm.effect).to_lowercase()));
        span.set("step.criticality", Value::Str(format!("{:?}", sm.criticality).to_lowercase()));
        span.summary = sm.id.clone();
        self.steps[step as usize].call = Some(self.push(span));
    }

    fn fallback_started(&mut self, at: Micros, step: u8, candidate: u8) {
        let call = self.call_span(at, step);
        let sp = &self.model.policies[self.policy].steps[self.workflow][step as usize];
        let Some(dependency) = sp.candidate(candidate).map(|c| c.dependency) else { return };
        let name = self.model.dependency_names[dependency].clone();
        let mut span = Span::new(Some(call), format!("dependency.fallback {name}"), SpanKind::Internal, at);
        self.dependency_attributes(&mut span, dependency as u16);
        span.set("degradation.mode", Value::Str("FALLBACK".into()));
        span.summary = name;
        self.steps[step as usize].fallback = Some(self.push(span));
    }

    /// Where an attempt of `step` hangs: its reconciliation group, its fallback group, or the call.
    fn attempt_parent(&mut self, at: Micros, step: u8, purpose: Purpose) -> usize {
        let call = self.call_span(at, step);
        let st = self.steps[step as usize];
        match (purpose, st.fallback) {
            (Purpose::Lookup, _) => match st.reconciliation {
                Some(span) => span,
                None => {
                    let mut span = Span::new(Some(call), "dependency.reconciliation".into(), SpanKind::Internal, at);
                    span.summary = "status lookups of the write's key".into();
                    let id = self.push(span);
                    self.steps[step as usize].reconciliation = Some(id);
                    id
                }
            },
            (Purpose::Call | Purpose::Write { .. }, Some(fallback)) => fallback,
            (Purpose::Call | Purpose::Write { .. }, None) => call,
        }
    }

    fn attempt_span(
        &mut self,
        at: Micros,
        step: u8,
        serial: u32,
        dependency: u16,
        kind: Option<AttemptKind>,
        purpose: Purpose,
    ) -> usize {
        let parent = self.attempt_parent(at, step, purpose);
        let name = self.model.dependency_names[dependency as usize].clone();
        let mut span = Span::new(Some(parent), format!("dependency.attempt {name}"), SpanKind::Client, at);
        span.set("attempt.number", Value::Int(i64::from(serial) + 1));
        if let Some(kind) = kind {
            span.set("attempt.kind", Value::Str(attempt_kind(kind, purpose).into()));
        }
        self.dependency_attributes(&mut span, dependency);
        if let Purpose::Write { deduplicated } = purpose {
            span.set("attempt.idempotency_key", Value::Bool(deduplicated));
        }
        span.summary = match kind {
            Some(AttemptKind::Hedge) => format!("{} {name} (hedge)", serial + 1),
            Some(AttemptKind::First | AttemptKind::Retry) | None => format!("{} {name}", serial + 1),
        };
        let id = self.push(span);
        self.attempts.insert((step, serial), id);
        id
    }

    /// A refused attempt: a parked one ends refused, any other is a span of no duration.
    fn attempt_refused(
        &mut self,
        at: Micros,
        step: u8,
        dependency: u16,
        reason: Refusal,
        (purpose, kind): (Purpose, AttemptKind),
        parked: Option<u32>,
    ) {
        let span = match parked.and_then(|serial| self.attempts.remove(&(step, serial))) {
            Some(span) => span,
            None => {
                let parent = self.attempt_parent(at, step, purpose);
                let name = self.model.dependency_names[dependency as usize].clone();
                let mut span = Span::new(Some(parent), format!("dependency.attempt {name}"), SpanKind::Client, at);
                self.dependency_attributes(&mut span, dependency);
                span.set("attempt.kind", Value::Str(attempt_kind(kind, purpose).into()));
                span.summary = match (purpose, kind) {
                    (Purpose::Lookup, _) => format!("{name} (lookup)"),
                    (_, AttemptKind::Hedge) => format!("{name} (hedge)"),
                    (_, AttemptKind::Retry) => format!("{name} (retry)"),
                    (_, AttemptKind::First) => name,
                };
                self.push(span)
            }
        };
        let s = &mut self.spans[span];
        s.set("attempt.refused", Value::Str(reason.name().into()));
        s.status = Status::Error(format!("refused: {}", reason.name()));
        s.summary = format!("{} REFUSED ({})", s.summary, reason.name());
        s.end_us = Some(at);
    }

    fn dependency_attributes(&self, span: &mut Span, dependency: u16) {
        let dep = &self.model.world.dependencies[dependency as usize];
        span.set("dependency.name", Value::Str(dep.name.clone()));
        // OpenTelemetry's name for the callee, which `calibrate` (and trace backends) group by.
        span.set("peer.service", Value::Str(dep.name.clone()));
        span.set("dependency.kind", Value::Str(dep.kind.name().into()));
        if let Some(op) = dep.kind.gen_ai_operation() {
            span.set("gen_ai.operation.name", Value::Str(op.into()));
        }
    }

    fn attempt_ended(&mut self, at: Micros, step: u8, serial: u32, result: AttemptResult, kind: Option<FailureKind>) {
        let Some(span) = self.attempts.remove(&(step, serial)) else { return };
        let word = match (result, kind) {
            (AttemptResult::Ok, _) if self.is_lookup(span) => "FOUND",
            (AttemptResult::NotFound, _) => "NOT_FOUND",
            // The dependency failed; a stale cache entry answered (stale-if-error).
            (AttemptResult::Ok, _) if self.spans[span].attribute("cache.stale").is_some() => "STALE_CACHE_ENTRY",
            (AttemptResult::Ok, _) => "SUCCESS",
            (AttemptResult::TimedOut, Some(FailureKind::EffectUnknown)) => "TIMEOUT EFFECT_UNKNOWN",
            (AttemptResult::TimedOut, _) => "TIMEOUT",
            (AttemptResult::Failed { kind, .. }, _) => kind.name(),
        };
        self.end_attempt(span, at, kind, word);
        if let AttemptResult::Failed { retry_after_us: Some(after), .. } = result {
            self.spans[span].set("attempt.retry_after_ms", Value::Float(us_to_ms(after)));
        }
        // OpenTelemetry's error class: the failure kind, or `timeout` when the caller gave up.
        let error_type = match (result, kind) {
            (AttemptResult::TimedOut, _) => Some("timeout"),
            (AttemptResult::Failed { kind, .. }, _) => Some(kind.metric_name()),
            (AttemptResult::Ok | AttemptResult::NotFound, _) => None,
        };
        if let Some(error_type) = error_type {
            self.spans[span].set("error.type", Value::Str(error_type.into()));
        }
        self.steps[step as usize].last_attempt = Some(span);
    }

    fn is_lookup(&self, span: usize) -> bool {
        matches!(self.spans[span].attribute("attempt.kind"), Some(Value::Str(k)) if k == "reconciliation")
    }

    /// A span of work below an attempt (an agent's call, a task client's request, a task's
    /// work): it ends at its station, not at a result of the run's machine.
    fn is_remote(&self, span: usize) -> bool {
        let s = &self.spans[span];
        s.attribute("remote.call").is_some()
            || s.attribute("task.call").is_some()
            || s.attribute("task.work").is_some()
            || s.attribute("sdk.attempt").is_some()
    }

    fn end_attempt(&mut self, span: usize, at: Micros, kind: Option<FailureKind>, word: &str) {
        let s = &mut self.spans[span];
        s.end_us = Some(at);
        s.set("attempt.result", Value::Str(word.into()));
        if let Some(k) = kind {
            s.set("failure.kind", Value::Str(k.name().into()));
            s.status = Status::Error(k.name().into());
        } else {
            s.status = Status::Ok;
        }
        s.summary = format!("{} {word}", s.summary);
    }

    fn decided(&mut self, step: u8, decision: Decision, retry_tokens_left: u32) {
        let Some(span) = self.steps[step as usize].last_attempt else { return };
        let s = &mut self.spans[span];
        let (word, detail) = match decision {
            Decision::Retry { sleep_us } => {
                s.set("retry.backoff_ms", Value::Float(us_to_ms(sleep_us)));
                let when =
                    if sleep_us == 0 { "at once".to_string() } else { format!("after {:.0} ms", us_to_ms(sleep_us)) };
                ("RETRY", format!("retry {when}"))
            }
            Decision::Reconcile => ("RECONCILE_FIRST", "reconcile first".to_string()),
            Decision::Handoff => ("HANDOFF", "hand off".to_string()),
            Decision::GiveUp(reason) => {
                let why = match reason {
                    GiveUp::NotRetryable => "not_retryable".to_string(),
                    GiveUp::AttemptsExhausted => "attempts_exhausted".to_string(),
                    GiveUp::Budget(b) => format!("{}_budget_exhausted", b.name()),
                };
                s.set("retry.give_up_reason", Value::Str(why.clone()));
                ("GIVE_UP", format!("give up: {why}"))
            }
        };
        s.set("retry.decision", Value::Str(word.into()));
        // An unlimited budget has nothing to report.
        if retry_tokens_left != u32::MAX {
            s.set("budget.retry.remaining", Value::Int(i64::from(retry_tokens_left)));
        }
        s.summary = format!("{} -> {detail}", s.summary);
    }

    fn step_ended(&mut self, at: Micros, step: u8, end: StepEnd) {
        if self.steps[step as usize].ended {
            return; // a failed step is also abandoned when the run ends: the first end counts
        }
        let call = self.call_span(at, step);
        let st = &mut self.steps[step as usize];
        st.ended = true;
        let groups = [st.fallback, st.reconciliation];
        let (word, mode, status) = match end {
            StepEnd::Succeeded { via_fallback: false } => ("succeeded", None, Status::Ok),
            StepEnd::Succeeded { via_fallback: true } => ("fallback", Some("FALLBACK"), Status::Ok),
            StepEnd::Reconciled => ("reconciled", None, Status::Ok),
            StepEnd::Omitted => ("omitted", Some("OMITTED"), Status::Unset),
            StepEnd::Failed => ("failed", None, Status::Error("the logical call failed".into())),
            StepEnd::Handoff => ("handoff", None, Status::Error("the write's effect is unknown".into())),
            StepEnd::Abandoned => ("abandoned", None, Status::Unset),
        };
        for g in groups.into_iter().flatten() {
            self.spans[g].end_us.get_or_insert(at);
        }
        let s = &mut self.spans[call];
        s.end_us = Some(at);
        s.set("logical_call.outcome", Value::Str(word.into()));
        if let Some(mode) = mode {
            s.set("degradation.mode", Value::Str(mode.into()));
        }
        s.status = status;
        s.summary = format!("{} {}", s.summary, word.to_uppercase());
    }

    fn run_ended(
        &mut self,
        at: Micros,
        outcome: Outcome,
        (deadline_exceeded, past_deadline): (bool, bool),
        mode: DegradationMode,
    ) {
        let run = &mut self.spans[0];
        run.end_us = Some(at);
        run.set("run.outcome", Value::Str(outcome.name().into()));
        run.set("run.deadline_exceeded", Value::Bool(deadline_exceeded));
        // The essay's section-25 attribute: the workflow's mode as the run started.
        run.set("degradation.mode", Value::Str(mode.name().to_uppercase()));
        run.status = match outcome {
            Outcome::Failed => Status::Error("the run failed".into()),
            Outcome::Handoff => Status::Error("handed off to a human".into()),
            Outcome::Rejected => Status::Error("refused before it started (admission, or a paused mode)".into()),
            Outcome::ApprovalRefused => Status::Error("a human refused its approval".into()),
            Outcome::ApprovalExpired => Status::Error("its approval lapsed at the business expiry".into()),
            Outcome::AwaitingApproval => {
                Status::Error("handed to an asynchronous task at its deadline, awaiting approval".into())
            }
            Outcome::Succeeded | Outcome::Degraded => Status::Ok,
        };
        let late = match (deadline_exceeded, past_deadline) {
            (_, true) => ", past its deadline",
            (true, false) => ", out of time at its deadline",
            (false, false) => "",
        };
        let took_s = (at - self.run_start_us) as f64 / 1e6;
        run.summary = format!("{} {} after {took_s:.3} s{late}", run.summary, outcome.name().to_uppercase());
    }

    /// A task's state, under the attempt that created it: the protocol's own name and the
    /// normalised one (essay section 20).
    fn task_changed(
        &mut self,
        at: Micros,
        attempt: (u8, u32),
        task: u32,
        dependency: u16,
        (state, work_failed): (TaskState, bool),
    ) {
        let span = match self.tasks.get(&task) {
            Some(&span) => span,
            None => {
                let Some(&span) = self.attempts.get(&attempt) else { return };
                self.tasks.insert(task, span);
                span
            }
        };
        let protocol = self.model.world.dependencies[dependency as usize].task.as_ref().map(|t| t.protocol);
        let Some(protocol) = protocol else { return };
        let name = protocol.end_name(state, work_failed);
        let attrs = vec![
            ("task.state", Value::Str(name.into())),
            ("task.normalized_state", Value::Str(state.name().to_uppercase())),
        ];
        self.spans[span].event(at, "task.state", attrs);
        if self.spans[span].end_us.is_none() {
            self.spans[span].set("task.state", Value::Str(name.into()));
        }
    }

    /// A task client's request was answered with the protocol's error: its span carries the
    /// JSON-RPC code and the specification's name (OpenTelemetry's `rpc.jsonrpc.error_code`,
    /// `rpc.jsonrpc.error_message`) and is an error, though the station served it.
    fn task_call_refused(&mut self, attempt: (u8, u32), dependency: u16, error: crate::world::task::ProtocolError) {
        let Some(&span) = self.client_calls.get(&attempt) else { return };
        let Some(task) = &self.model.world.dependencies[dependency as usize].task else { return };
        let (code, name) = task.protocol.error(error);
        self.refusals.insert(span, (code, name));
        self.mark_refused(span);
    }

    /// Marks a refused request's span as its protocol error (again after its station's exit,
    /// whichever of the two events came first).
    fn mark_refused(&mut self, span: usize) {
        let Some(&(code, name)) = self.refusals.get(&span) else { return };
        let s = &mut self.spans[span];
        s.set("rpc.jsonrpc.error_code", Value::Int(i64::from(code)));
        s.set("rpc.jsonrpc.error_message", Value::Str(name.into()));
        s.set("error.type", Value::Str(name.into()));
        s.set("attempt.result", Value::Str(name.into()));
        s.status = Status::Error(format!("{code} {name}"));
        // The result word is appended when the span ends (end_attempt); until then, nothing.
        if s.end_us.is_some()
            && let Some(head) = s.summary.strip_suffix(" SUCCESS")
        {
            s.summary = format!("{head} {name} ({code})");
        }
    }

    fn station_arrived(&mut self, at: Micros, job: u32, caller: TraceCaller, dependency: u16) {
        match caller {
            TraceCaller::TaskClient { step, serial, call } => {
                // The attempt's span; for a request the client makes after the attempt ended
                // (the get that reads a task whose cancel was refused), the parent of its
                // earlier requests. Without one, the job's old entry must not take this
                // request's events.
                let parent = self
                    .attempts
                    .get(&(step, serial))
                    .copied()
                    .or_else(|| self.client_calls.get(&(step, serial)).and_then(|&c| self.spans[c].parent));
                let Some(parent) = parent else {
                    self.jobs.remove(&job);
                    return;
                };
                let dep = &self.model.world.dependencies[dependency as usize];
                let Some(task) = &dep.task else { return };
                let method = task.protocol.call_name(call);
                let mut span = Span::new(Some(parent), format!("{method} {}", dep.name), SpanKind::Client, at);
                span.set("task.call", Value::Str(method.into()));
                span.set("task.protocol", Value::Str(task.protocol.name().into()));
                self.dependency_attributes(&mut span, dependency);
                span.summary = dep.name.clone();
                let id = self.push(span);
                self.jobs.insert(job, id);
                self.exited.remove(&job);
                self.client_calls.insert((step, serial), id);
            }
            TraceCaller::TaskWork { task } => {
                let Some(&parent) = self.tasks.get(&task) else { return };
                let name = self.model.dependency_names[dependency as usize].clone();
                let mut span = Span::new(Some(parent), format!("task.work {name}"), SpanKind::Internal, at);
                span.set("task.work", Value::Bool(true));
                self.dependency_attributes(&mut span, dependency);
                span.summary = format!("{name} (the task's work)");
                let id = self.push(span);
                self.jobs.insert(job, id);
                self.exited.remove(&job);
            }
            TraceCaller::Step { step, serial } => {
                if let Some(&span) = self.attempts.get(&(step, serial)) {
                    self.jobs.insert(job, span);
                    self.exited.remove(&job);
                }
            }
            TraceCaller::Sdk { step, serial, retry } => {
                let Some(&parent) = self.attempts.get(&(step, serial)) else { return };
                let name = self.model.dependency_names[dependency as usize].clone();
                let mut span = Span::new(Some(parent), format!("sdk.attempt {name}"), SpanKind::Client, at);
                span.set("sdk.attempt", Value::Int(i64::from(retry) + 1));
                span.set("sdk.hidden", Value::Bool(retry > 0));
                self.dependency_attributes(&mut span, dependency);
                let hidden = if retry > 0 { ", hidden retry" } else { "" };
                span.summary = format!("{} {name} (the SDK's attempt {}{hidden})", retry + 1, retry + 1);
                let id = self.push(span);
                self.jobs.insert(job, id);
                self.exited.remove(&job);
            }
            TraceCaller::Remote { parent, call, repeat, sub_attempt } => {
                let Some(&parent_span) = self.jobs.get(&parent) else { return };
                let name = self.model.dependency_names[dependency as usize].clone();
                let mut span = Span::new(Some(parent_span), format!("dependency.attempt {name}"), SpanKind::Client, at);
                span.set("attempt.number", Value::Int(i64::from(sub_attempt) + 1));
                span.set("remote.call", Value::Int(i64::from(call)));
                span.set("remote.repeat", Value::Int(i64::from(repeat)));
                self.dependency_attributes(&mut span, dependency);
                span.summary = format!("{} {name} (the agent's call {}, #{})", sub_attempt + 1, call + 1, repeat + 1);
                let id = self.push(span);
                self.jobs.insert(job, id);
                self.exited.remove(&job);
            }
        }
    }

    fn station_left(&mut self, at: Micros, job: u32, exit: StationExit) {
        let Some(&span) = self.jobs.get(&job) else { return };
        if self.exited.insert(job, at).is_some() {
            return;
        }
        let (word, kind) = match exit {
            StationExit::Served { error: None, reply_lost: false } => ("served", None),
            StationExit::Served { error: Some(k), .. } => ("served_error", Some(k)),
            StationExit::Served { error: None, reply_lost: true } => ("served_reply_lost", None),
            StationExit::Rejected { kind } => ("rejected", Some(kind)),
            StationExit::Expired => ("expired", Some(FailureKind::Overloaded)),
            StationExit::Cancelled => ("cancelled", None),
        };
        self.spans[span].set("station.exit", Value::Str(word.into()));
        let mut attrs = vec![("station.exit", Value::Str(word.into()))];
        if let Some(k) = kind {
            attrs.push(("failure.kind", Value::Str(k.name().into())));
        }
        let s = &mut self.spans[span];
        match s.end_us {
            // The caller had stopped waiting: the station kept working for nobody.
            Some(end) if at > end => s.set("station.left_after_caller_ms", Value::Float(us_to_ms(at - end))),
            Some(_) | None => s.event(at, "station.left", attrs),
        }
        if self.is_remote(span) && self.spans[span].end_us.is_none() {
            let word = match (exit, kind) {
                (StationExit::Served { reply_lost: true, .. }, _) => "REPLY_LOST",
                (StationExit::Cancelled, _) => "CANCELLED",
                (_, Some(k)) => k.name(),
                (_, None) => "SUCCESS",
            };
            // A lost reply ends at the agent's timeout, not here.
            if !matches!(exit, StationExit::Served { reply_lost: true, .. }) {
                self.end_attempt(span, at, kind, word);
                self.mark_refused(span);
            }
        }
    }

    /// Spans still open when the events end (the run was cut by the end of the simulation).
    fn close_open(&mut self) {
        let last = self.last_us;
        for s in &mut self.spans {
            if s.end_us.is_none() {
                s.end_us = Some(last);
                s.set("span.unfinished", Value::Bool(true));
                s.summary = format!("{} (unfinished)", s.summary);
            }
        }
    }
}

fn attempt_kind(kind: AttemptKind, purpose: Purpose) -> &'static str {
    match (purpose, kind) {
        (Purpose::Lookup, _) => "reconciliation",
        (Purpose::Call | Purpose::Write { .. }, AttemptKind::First) => "first",
        (Purpose::Call | Purpose::Write { .. }, AttemptKind::Retry) => "retry",
        (Purpose::Call | Purpose::Write { .. }, AttemptKind::Hedge) => "hedge",
    }
}

/// The essay's section-25 tree: one line per span, children in start order, times relative
/// to the run's start.
pub fn render_tree(run: &RunSpans) -> String {
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); run.spans.len()];
    for (i, s) in run.spans.iter().enumerate() {
        if let Some(p) = s.parent {
            children[p].push(i);
        }
    }
    for c in &mut children {
        c.sort_by_key(|&i| (run.spans[i].start_us, i));
    }
    let mut out = String::new();
    line(&mut out, run, 0, "");
    walk(&mut out, run, &children, 0, "");
    out
}

fn walk(out: &mut String, run: &RunSpans, children: &[Vec<usize>], node: usize, prefix: &str) {
    let kids = &children[node];
    for (k, &child) in kids.iter().enumerate() {
        let last = k + 1 == kids.len();
        let branch = if last { "└─ " } else { "├─ " };
        line(out, run, child, &format!("{prefix}{branch}"));
        let deeper = format!("{prefix}{}", if last { "   " } else { "│  " });
        walk(out, run, children, child, &deeper);
    }
}

/// One span: its kind, its summary, what the caller could not see (queueing, work that went on
/// for nobody), and its time span from the run's start.
fn line(out: &mut String, run: &RunSpans, i: usize, lead: &str) {
    let span = &run.spans[i];
    let origin = run.spans[0].start_us;
    let kind = span.name.split(' ').next().unwrap_or("");
    let mut notes = Vec::new();
    if let Some(Value::Float(wait)) = span.attribute("station.queue_wait_ms")
        && *wait >= 1.0
    {
        notes.push(format!("queued {:.3} s", wait / 1e3));
    }
    if let Some(parent) = span.parent.map(|p| &run.spans[p])
        && span.kind == SpanKind::Client
        && parent.kind == SpanKind::Client
        && parent.end_us.is_some_and(|end| span.start_us > end)
    {
        notes.push("sent after its caller gave up".to_string());
    }
    match span.attribute("station.exit") {
        Some(Value::Str(exit)) if exit == "rejected" => notes.push("refused at the station's door".to_string()),
        Some(Value::Str(exit)) if exit == "expired" => notes.push("dropped from the station's queue".to_string()),
        Some(Value::Str(exit)) if exit == "served_reply_lost" => notes.push("its reply was lost".to_string()),
        _ => {}
    }
    if let Some(commit) = span.events.iter().find(|e| e.name == "effect.committed") {
        notes.push(format!("the write committed at {:.3} s", (commit.at_us - origin) as f64 / 1e6));
    }
    if let Some(Value::Float(after)) = span.attribute("station.left_after_caller_ms") {
        notes.push(format!("the dependency worked on {:.3} s after the caller left", after / 1e3));
    }
    if let Some(Value::Bool(true)) = span.attribute("effect.duplicate") {
        notes.push("DUPLICATE EFFECT".to_string());
    }
    let notes = if notes.is_empty() { String::new() } else { format!(" ({})", notes.join("; ")) };
    let start = (span.start_us - origin) as f64 / 1e6;
    let end = (span.end_us.unwrap_or(span.start_us) - origin) as f64 / 1e6;
    let _ = writeln!(out, "{lead}{kind} {}{notes}  [{start:.3} s .. {end:.3} s]", span.summary);
}
