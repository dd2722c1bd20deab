//! `faultline replay`: the OTLP/JSON it writes is read back by the official OpenTelemetry types
//! (opentelemetry-proto with serde), a run's trace does not depend on which runs are followed,
//! following never changes a replication's figures, and the selectors pick what they say.

mod common;

use common::metric_bits;
use faultline::engine::{Model, simulate, simulate_following};
use faultline::experiment::batch::{compile_with, replication_seed};
use faultline::experiment::replay::spans::Value;
use faultline::experiment::replay::{FirstRun, RunSelector, trace_run};
use faultline::runtime::RunTracer;
use faultline::scenario::{Override, load_file, parse_override};
use faultline::vocab::Refusal;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::Span;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const INCIDENT: &str = "scenarios/meeting-analysis-incident.toml";
/// 2025-01-01T00:00:00Z in nanoseconds: virtual time zero.
const EPOCH_UNIX_NANO: u64 = 1_735_689_600_000_000_000;

fn faultline(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_faultline")).args(args).output().expect("faultline runs")
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("faultline-replay-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn incident(sets: &[&str]) -> Model {
    let source = load_file(Path::new(INCIDENT)).unwrap();
    let overrides: Vec<Override> = sets.iter().map(|s| parse_override(s).unwrap()).collect();
    compile_with(&source, &overrides).unwrap()
}

fn attribute<'a>(span: &'a Span, key: &str) -> Option<&'a any_value::Value> {
    span.attributes.iter().find(|kv| kv.key == key).and_then(|kv| kv.value.as_ref()).and_then(|v| v.value.as_ref())
}

fn string(span: &Span, key: &str) -> Option<String> {
    match attribute(span, key) {
        Some(any_value::Value::StringValue(s)) => Some(s.clone()),
        _ => None,
    }
}

/// Every key and value we wrote survives a read and a write by the official types: a field we
/// misspelled would be dropped (OTLP/JSON readers ignore unknown fields) and show up here.
fn assert_contained(ours: &serde_json::Value, theirs: &serde_json::Value, path: &str) {
    match (ours, theirs) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in a {
                let w = b.get(k).unwrap_or_else(|| panic!("{path}.{k}: dropped by opentelemetry-proto"));
                assert_contained(v, w, &format!("{path}.{k}"));
            }
        }
        (serde_json::Value::Array(a), serde_json::Value::Array(b)) => {
            assert_eq!(a.len(), b.len(), "{path}: lengths");
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                assert_contained(v, w, &format!("{path}[{i}]"));
            }
        }
        // IDs: hex either way, any case.
        (serde_json::Value::String(a), serde_json::Value::String(b)) => {
            assert_eq!(a.to_lowercase(), b.to_lowercase(), "{path}")
        }
        (a, b) => assert_eq!(a, b, "{path}"),
    }
}

#[test]
fn the_otlp_trace_reads_back_with_the_official_types() {
    let dir = temp("otlp");
    let file = dir.join("handoff.otlp.json");
    // Hard steps that cannot finish fail instead of handing off, and no hedge is sent (its delay
    // is past every step's timeout: a hedged specialist can hold a run until its write has no
    // time left to reconcile), so the first handoff is a write whose effect stayed unknown.
    let fail = |step: &str| format!("policy.resilient.steps.{step}.on_give_up=fail");
    let (plan, rag, synthesis) = (fail("plan"), fail("policy_rag"), fail("synthesis"));
    let no_hedge = "policy.resilient.hedging={ delay_ms = 5000 }".to_string();
    let mut args = vec!["replay", INCIDENT, "-p", "resilient", "--first", "handoff", "-o", file.to_str().unwrap()];
    for set in [&plan, &rag, &synthesis, &no_hedge] {
        args.extend(["--set", set.as_str()]);
    }
    let out = faultline(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bytes = std::fs::read(&file).unwrap();
    let request: ExportTraceServiceRequest = serde_json::from_slice(&bytes).expect("OTLP/JSON");
    let ours: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let theirs = serde_json::to_value(&request).unwrap();
    assert_contained(&ours, &theirs, "");

    assert_eq!(request.resource_spans.len(), 1);
    let resource = request.resource_spans[0].resource.as_ref().expect("a resource");
    assert!(resource.attributes.iter().any(|kv| kv.key == "service.name"));
    assert_eq!(request.resource_spans[0].scope_spans.len(), 1);
    let scope = &request.resource_spans[0].scope_spans[0];
    assert_eq!(scope.scope.as_ref().unwrap().name, "faultline");
    let spans = &scope.spans;
    assert!(spans.len() >= 8, "{} spans", spans.len());

    let trace_id = &spans[0].trace_id;
    assert_eq!(trace_id.len(), 16);
    assert!(trace_id.iter().any(|&b| b != 0), "an all-zero trace id is invalid");
    let ids: BTreeSet<&Vec<u8>> = spans.iter().map(|s| &s.span_id).collect();
    assert_eq!(ids.len(), spans.len(), "span ids are unique");
    let roots: Vec<&Span> = spans.iter().filter(|s| s.parent_span_id.is_empty()).collect();
    assert_eq!(roots.len(), 1, "one root span");
    let root = roots[0];
    assert!(root.name.starts_with("agent.run"), "{}", root.name);
    assert_eq!(string(root, "run.outcome").as_deref(), Some("handoff"));
    assert!(string(root, "run.id").is_some_and(|id| id.starts_with("run-")));
    assert_eq!(root.status.as_ref().map(|s| s.code), Some(2), "a handoff is an error status");
    for s in spans {
        assert_eq!(&s.trace_id, trace_id, "one trace");
        assert_eq!(s.span_id.len(), 8);
        assert!(s.parent_span_id.is_empty() || ids.contains(&s.parent_span_id), "{}: dangling parent", s.name);
        assert!(s.start_time_unix_nano >= EPOCH_UNIX_NANO, "{}: before the epoch", s.name);
        assert!(s.end_time_unix_nano >= s.start_time_unix_nano, "{}: ends before it starts", s.name);
    }
    let named = |prefix: &str| spans.iter().filter(|s| s.name.starts_with(prefix)).collect::<Vec<_>>();
    assert!(!named("dependency.logical_call").is_empty());
    // It started 6.7 s into the fault, before the model's error budget moved the workflow to
    // CONSTRAINED (about 10 s in).
    assert_eq!(string(root, "degradation.mode").as_deref(), Some("NORMAL"));
    assert!(!named("dependency.reconciliation").is_empty(), "a handoff after an unknown write effect reconciles");
    let attempts = named("dependency.attempt");
    assert!(attempts.len() >= 5);
    for a in &attempts {
        assert_eq!(a.kind, 3, "{}: attempts are CLIENT spans", a.name);
        assert!(string(a, "dependency.name").is_some());
        assert!(string(a, "dependency.kind").is_some());
        assert!(matches!(attribute(a, "attempt.number"), Some(any_value::Value::IntValue(n)) if *n >= 1));
    }
    let operation = |dependency: &str| {
        attempts
            .iter()
            .find(|a| string(a, "dependency.name").as_deref() == Some(dependency))
            .map(|a| (string(a, "dependency.kind").unwrap(), string(a, "gen_ai.operation.name")))
    };
    assert_eq!(operation("model-primary"), Some(("model".into(), Some("chat".into()))));
    assert_eq!(operation("ticket-api"), Some(("mcp_tool".into(), Some("execute_tool".into()))));
    assert_eq!(operation("specialist-agent"), Some(("a2a_agent".into(), Some("invoke_agent".into()))));
    // The specialist is an A2A task: its protocol requests and its work hang under the attempt
    // that created it, and the agent's own model call under the work.
    let agent = attempts.iter().find(|a| string(a, "dependency.name").as_deref() == Some("specialist-agent")).unwrap();
    let under_agent =
        |key: &str| spans.iter().filter(|s| s.parent_span_id == agent.span_id && attribute(s, key).is_some()).count();
    assert!(under_agent("task.call") >= 2, "SendMessage and at least one GetTask or CancelTask");
    let work = spans.iter().find(|s| s.parent_span_id == agent.span_id && attribute(s, "task.work").is_some());
    let work = work.expect("the task's work under the attempt");
    assert!(spans.iter().any(|s| s.parent_span_id == work.span_id && attribute(s, "remote.call").is_some()));
    // The write that timed out carries the essay's decision attributes.
    assert!(attempts.iter().any(|a| {
        string(a, "failure.kind").as_deref() == Some("EFFECT_UNKNOWN")
            && string(a, "retry.decision").as_deref() == Some("RECONCILE_FIRST")
    }));
    let text = String::from_utf8(out.stdout).unwrap();
    for line in ["agent.run run-", "├─ dependency.logical_call plan", "dependency.reconciliation", "HANDOFF"] {
        assert!(text.contains(line), "the tree lacks {line:?}:\n{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_is_traced_the_same_alone_or_among_all_runs_and_tracing_changes_no_figure() {
    let model = incident(&["simulation.duration_s=200", "simulation.warmup_s=20"]);
    let seed = replication_seed(model.world.seed, 1);
    for policy in 0..model.policies.len() {
        let plain = simulate(&model, policy, seed).unwrap();
        let (all_figures, all) = simulate_following(&model, policy, seed, RunTracer::for_all_runs()).unwrap();
        assert_eq!(
            metric_bits(&plain.metrics),
            metric_bits(&all_figures.metrics),
            "following every run changed the figures"
        );
        assert!(all.runs.len() > 1000, "{} runs", all.runs.len());
        for number in [1, 2, 500, all.runs.len() as u64] {
            let (figures, one) = simulate_following(&model, policy, seed, RunTracer::for_runs(&[number])).unwrap();
            assert_eq!(metric_bits(&plain.metrics), metric_bits(&figures.metrics));
            let alone = one.events_of(number);
            assert!(alone.len() >= 3, "run {number}: {} events", alone.len());
            assert_eq!(alone, all.events_of(number), "run {number} of policy {policy}");
            assert_eq!(one.runs, all.runs, "every run's summary is kept either way");
        }
    }
}

#[test]
fn selectors_pick_the_first_matching_run_after_the_warm_up() {
    let model = incident(&["simulation.duration_s=900"]);
    let naive = model.policy_index("naive").unwrap();
    let seed = replication_seed(model.world.seed, 0);
    let (_, catalogue) = simulate_following(&model, naive, seed, RunTracer::for_runs(&[])).unwrap();
    for which in [FirstRun::Failed, FirstRun::Duplicate, FirstRun::NotSucceeded] {
        let expected = catalogue.runs.iter().find(|r| r.measured && which.matches(r)).expect("the incident has one");
        let traced = trace_run(&model, naive, seed, RunSelector::First(which)).unwrap();
        assert_eq!(traced.summary, *expected, "{}", which.name());
        let root = &traced.spans.spans[0];
        assert_eq!(root.attribute("run.id"), Some(&Value::Str(format!("run-{}", expected.number))));
        let outcome = expected.outcome.unwrap().name().to_string();
        assert_eq!(root.attribute("run.outcome"), Some(&Value::Str(outcome)));
        let earlier = catalogue.runs.iter().take_while(|r| r.number < expected.number);
        assert!(earlier.filter(|r| r.measured).all(|r| !which.matches(r)), "not the first");
    }
    // A run refused by a guard: the resilient policy's bulkhead at the model is full in the
    // first seconds of the fault.
    let resilient = model.policy_index("resilient").unwrap();
    let (_, catalogue) = simulate_following(&model, resilient, seed, RunTracer::for_runs(&[])).unwrap();
    let expected =
        catalogue.runs.iter().find(|r| r.measured && r.refused(None)).expect("the bulkhead refuses attempts");
    let traced = trace_run(&model, resilient, seed, RunSelector::First(FirstRun::Refused)).unwrap();
    assert_eq!(traced.summary.number, expected.number);
    assert!(
        traced.spans.spans.iter().any(|s| s.name.contains("REFUSED") || s.summary.contains("REFUSED")),
        "the refused attempt is in the tree"
    );
    // By reason: the first run refused for each reason some run was refused for, with that
    // refusal in its trace; a reason no run met is an error that names those that were.
    let measured: Vec<_> = catalogue.runs.iter().filter(|r| r.measured).collect();
    let met: Vec<Refusal> = Refusal::ALL.into_iter().filter(|x| measured.iter().any(|r| r.refused(Some(*x)))).collect();
    assert!(met.contains(&Refusal::Bulkhead), "{met:?}");
    for reason in &met {
        let expected = measured.iter().find(|r| r.refused(Some(*reason))).unwrap();
        let traced = trace_run(&model, resilient, seed, RunSelector::FirstRefusedBy(*reason)).unwrap();
        assert_eq!(traced.summary.number, expected.number, "{}", reason.name());
        let said = Value::Str(reason.name().into());
        assert!(traced.spans.spans.iter().any(|s| s.attribute("attempt.refused") == Some(&said)), "{}", reason.name());
    }
    let unmet = Refusal::ALL.into_iter().find(|x| !met.contains(x)).expect("some reason is not met");
    let Err(e) = trace_run(&model, resilient, seed, RunSelector::FirstRefusedBy(unmet)) else {
        panic!("no run matches")
    };
    assert!(e.to_string().contains("guards refused for bulkhead"), "{e}");
    let duplicate = trace_run(&model, naive, seed, RunSelector::First(FirstRun::Duplicate)).unwrap();
    assert_eq!(duplicate.spans.spans[0].attribute("run.duplicate_effect"), Some(&Value::Bool(true)));
    assert!(
        duplicate.spans.spans.iter().any(|s| s.attribute("effect.duplicate") == Some(&Value::Bool(true))),
        "the attempt whose write committed twice is marked"
    );
}

#[test]
fn replay_is_byte_identical_and_a_replication_seed_names_the_same_replication() {
    let dir = temp("seeds");
    let sets = ["--set", "simulation.duration_s=400", "--set", "simulation.warmup_s=60"];
    let replay = |name: &str, extra: &[&str]| {
        let file = dir.join(name);
        let mut args = vec!["replay", INCIDENT, "-p", "naive", "--run", "700", "-o", file.to_str().unwrap()];
        args.extend_from_slice(&sets);
        args.extend_from_slice(extra);
        let out = faultline(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        // The last line names the file, which differs between calls.
        let text = String::from_utf8(out.stdout).unwrap();
        let tree = text.lines().filter(|l| !l.starts_with("trace (OTLP/JSON")).collect::<Vec<_>>().join("\n");
        (std::fs::read(&file).unwrap(), json["resourceSpans"][0]["scopeSpans"].clone(), tree)
    };
    let (first, spans_k, stdout) = replay("a.json", &["--replication", "1"]);
    let (again, _, stdout_again) = replay("b.json", &["--replication", "1"]);
    assert_eq!(first, again, "same command, same bytes");
    assert_eq!(stdout, stdout_again);

    let run_dir = dir.join("run");
    let mut args = vec!["run", INCIDENT, "-p", "naive", "--replications", "2", "-o", run_dir.to_str().unwrap()];
    args.extend_from_slice(&sets);
    assert!(faultline(&args).status.success());
    let csv = std::fs::read_to_string(run_dir.join("naive").join("replications.csv")).unwrap();
    let row = csv.lines().find(|l| l.starts_with("1,")).expect("row of replication 1");
    let seed = row.split(',').nth(1).unwrap().to_string();
    let (_, spans_seed, _) = replay("c.json", &["--replication-seed", &seed]);
    assert_eq!(spans_k, spans_seed, "--replication-seed from replications.csv is replication 1");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_selections_are_input_errors() {
    let dir = temp("errors");
    let out_file = dir.join("x.json");
    let out = out_file.to_str().unwrap();
    let short = ["--set", "simulation.duration_s=30", "--set", "simulation.warmup_s=0"];
    let cases: [(&[&str], &str); 4] = [
        (&["--run", "99999999"], "root run(s), numbered from 1"),
        (&["--run", "1", "--replication", "99"], "numbered from 0 to"),
        (&["--first", "duplicate", "-p", "resilient"], "none of the"),
        (&["--run", "1", "-p", "nope"], "unknown policy"),
    ];
    for (extra, message) in cases {
        let mut args = vec!["replay", INCIDENT, "-o", out];
        if !extra.contains(&"-p") {
            args.extend_from_slice(&["-p", "naive"]);
        }
        args.extend_from_slice(&short);
        args.extend_from_slice(extra);
        let result = faultline(&args);
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert_eq!(result.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(message), "{extra:?}: {stderr}");
        assert!(!out_file.exists(), "{extra:?}: no output on an error");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hedges_and_guard_refusals_show_as_attempts_of_their_call() {
    let source = load_file(Path::new("benches/mechanisms.toml")).unwrap();
    let model = compile_with(&source, &[]).unwrap();
    let guarded = model.policy_index("guarded").unwrap();
    let seed = replication_seed(model.world.seed, 0);
    let traced = trace_run(&model, guarded, seed, RunSelector::First(FirstRun::Degraded)).unwrap();
    let spans = &traced.spans.spans;
    let kind = |s: &faultline::experiment::replay::spans::Span| match s.attribute("attempt.kind") {
        Some(Value::Str(k)) => k.clone(),
        _ => String::new(),
    };
    let hedge = spans.iter().find(|s| kind(s) == "hedge").expect("the guarded policy hedges slow reads");
    let call = &spans[hedge.parent.unwrap()];
    assert!(call.name.starts_with("dependency.logical_call"), "a hedge hangs under its call: {}", call.name);
    let refused = spans.iter().find(|s| s.attribute("attempt.refused").is_some()).expect("a refusal");
    assert_eq!(refused.start_us, refused.end_us.unwrap(), "a refused attempt takes no time");
    assert!(matches!(refused.attribute("attempt.refused"), Some(Value::Str(r)) if r == "retry_budget"));
    assert!(spans.iter().any(|s| s.name.starts_with("dependency.fallback")), "the call then fell back");
}
