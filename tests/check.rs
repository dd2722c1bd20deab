//! `faultline check` from outside (docs/check.md): small scenarios where each rule fires and
//! where it does not, the shipped scenarios' real answers, the exit codes, the JSON records'
//! shape, and the same bytes on every run.

use faultline::experiment::OutputFormat;
use faultline::experiment::check::{Answer, CheckOptions, Row, Severity, check_rows};
use faultline::scenario::{Format, ScenarioInput, Source};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// One read step at `db` (constant 100 ms) and whatever `extra` adds; `policy` is the body of
/// `[policy.p]` and `after` any tables after it.
fn scenario(deadline_ms: u32, extra: &str, policy: &str, after: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 60
warmup_s = 0
seed = 5
replications = 2

[[dependency]]
name = "db"
servers = 50
queue_capacity = 50
service_time = {{ dist = "constant", value_ms = 100 }}
errors = {{ transient_transport = 0.2 }}
{extra}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 5 }}
deadline_ms = {deadline_ms}

  [[workflow.step]]
  id = "read"
  dependency = "db"

[policy.p]
{policy}
{after}
"#
    )
}

fn rows(toml: &str) -> Vec<Row> {
    rows_with(toml, &[])
}

fn rows_with(toml: &str, sets: &[&str]) -> Vec<Row> {
    let options = CheckOptions {
        scenario: ScenarioInput::Text(Source::from_text("t.toml", toml, Format::Toml)),
        policies: Vec::new(),
        replications: Some(2),
        sets: sets.iter().map(|s| s.to_string()).collect(),
        seed: None,
        jobs: 1,
        format: OutputFormat::Text,
        out: None,
    };
    check_rows(&options).unwrap_or_else(|e| panic!("{e}")).0
}

/// The rows of one question or rule for one policy.
fn find<'a>(rows: &'a [Row], policy: &str, id: &str) -> Vec<&'a Row> {
    let found: Vec<&Row> = rows.iter().filter(|r| r.policy == policy && r.id == id).collect();
    assert!(!found.is_empty(), "no row {id} for {policy}");
    found
}

fn one<'a>(rows: &'a [Row], policy: &str, id: &str) -> &'a Row {
    let found = find(rows, policy, id);
    assert_eq!(found.len(), 1, "{found:?}");
    found[0]
}

/// The line of `needle` in `text` (1-based), where a located row must point.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap_or_else(|| panic!("no `{needle}`")) + 1
}

#[test]
fn attempt_timeout_over_the_deadline_is_an_error_without_propagation_and_a_warning_with_it() {
    let id = "rule.attempt_timeout_over_deadline";
    let bad = scenario(2000, "", "deadline_propagation = false\ntimeout_ms = 5000", "");
    let r = rows(&bad);
    let row = one(&r, "p", id);
    assert_eq!((row.answer, row.severity), (Answer::No, Severity::Error), "{row:?}");
    assert_eq!(row.location.line, Some(line_of(&bad, "timeout_ms = 5000")));
    assert_eq!(row.location.field, "policy.p.timeout_ms");
    assert!(row.evidence.contains("attempt timeout 5000 ms > deadline_ms 2000"), "{}", row.evidence);

    let clipped = rows(&scenario(2000, "", "deadline_propagation = true\ntimeout_ms = 5000", ""));
    assert_eq!(one(&clipped, "p", id).severity, Severity::Warning);

    let fits = rows(&scenario(2000, "", "deadline_propagation = false\ntimeout_ms = 2000", ""));
    assert_eq!((one(&fits, "p", id).answer, one(&fits, "p", id).severity), (Answer::Yes, Severity::None));
}

#[test]
fn breaker_window_must_be_twice_the_attempt_timeout_as_dotnet_validates() {
    let id = "rule.breaker_window_under_twice_attempt_timeout";
    let polly = |ms: u32| {
        let breaker = format!(
            "[[policy.p.circuit_breaker]]\nkind = \"polly\"\ndependency = \"db\"\nsampling_duration_ms = {ms}\n"
        );
        scenario(10_000, "", "timeout_ms = 1000", &breaker)
    };
    let short = polly(1999);
    let r = rows(&short);
    let row = one(&r, "p", id);
    assert_eq!((row.answer, row.severity), (Answer::No, Severity::Error), "{row:?}");
    assert_eq!(row.location.line, Some(line_of(&short, "sampling_duration_ms = 1999")));
    assert_eq!(row.location.field, "policy.p.circuit_breaker[0].sampling_duration_ms");
    // .NET's rule is SamplingDuration < 2 x AttemptTimeout: exactly twice passes.
    assert_eq!(one(&rows(&polly(2000)), "p", id).answer, Answer::Yes);

    let r4j = |seconds: u32| {
        let breaker = format!(
            "[[policy.p.circuit_breaker]]\nsliding_window_type = \"time_based\"\nsliding_window_size = {seconds}\n"
        );
        scenario(10_000, "", "timeout_ms = 3000", &breaker)
    };
    let r = rows(&r4j(5));
    let row = one(&r, "p", id);
    assert_eq!(row.severity, Severity::Error);
    // The field as written, in seconds, then converted.
    assert!(row.evidence.contains("sliding_window_size = 5 (s) = 5000 ms of sampling"), "{}", row.evidence);
    assert_eq!(one(&rows(&r4j(6)), "p", id).answer, Answer::Yes);
    // A count-based window counts calls, not time.
    let counted = scenario(10_000, "", "timeout_ms = 3000", "[[policy.p.circuit_breaker]]\nsliding_window_size = 5\n");
    assert_eq!(one(&rows(&counted), "p", id).answer, Answer::NotApplicable);
}

#[test]
fn retry_delays_that_cannot_fit_the_deadline() {
    let id = "rule.retry_delays_exceed_deadline";
    // 5 attempts of 100 ms and 4 sleeps of 1000 ms: 4500 ms.
    let policy = "deadline_propagation = false\nretry = { max_attempts = 5, backoff = { kind = \"constant\", base_ms = 1000, jitter = \"none\" } }";
    let late = scenario(4500, "", policy, "");
    let r = rows(&late);
    let row = one(&r, "p", id);
    assert_eq!((row.answer, row.severity), (Answer::No, Severity::Error), "{row:?}");
    assert!(row.evidence.contains("= 4500..4500 ms >= deadline_ms 4500"), "{}", row.evidence);
    assert_eq!(row.location.line, Some(line_of(&late, "max_attempts = 5")));
    assert_eq!(one(&rows(&scenario(4501, "", policy, "")), "p", id).answer, Answer::Yes);
    // Full jitter may draw shorter sleeps: only the caps do not fit, a warning.
    let jittered = policy.replace("\"none\"", "\"full\"");
    assert_eq!(one(&rows(&scenario(4500, "", &jittered, "")), "p", id).severity, Severity::Warning);
}

/// A scenario whose step is a write at `db` with the given step fields.
fn write_scenario(step: &str, policy: &str, after: &str) -> String {
    scenario(5000, "", policy, after)
        .replace("  dependency = \"db\"\n", &format!("  dependency = \"db\"\n  effect = \"write\"\n{step}\n"))
}

#[test]
fn a_write_sent_again_needs_a_key_the_dependency_deduplicates() {
    let id = "rule.write_retried_without_idempotency_key";
    let bare = write_scenario("", "on_effect_unknown = \"retry\"", "");
    let r = rows(&bare);
    let row = one(&r, "p", id);
    assert_eq!((row.answer, row.severity), (Answer::No, Severity::Error), "{row:?}");
    assert_eq!(row.location.field, "workflow[0].step[0].idempotency");

    let per_attempt = write_scenario(
        "  idempotency = \"key\"",
        "on_effect_unknown = \"retry\"\nidempotency_key = \"per_attempt\"",
        "",
    );
    let r = rows(&per_attempt);
    let row = one(&r, "p", id);
    assert_eq!((row.severity, row.location.field.as_str()), (Severity::Error, "policy.p.idempotency_key"));
    assert_eq!(row.location.line, Some(line_of(&per_attempt, "idempotency_key = \"per_attempt\"")));

    let keyed = write_scenario("  idempotency = \"key\"", "on_effect_unknown = \"retry\"", "");
    assert_eq!(one(&rows(&keyed), "p", id).answer, Answer::Yes);
    // `--set` takes the step by its id or its position: either way the row is at the argument,
    // not at the file's line that says "key".
    for set in ["workflow.w.step.read.idempotency=none", "workflow.0.step.0.idempotency=none"] {
        let r = rows_with(&keyed, &[set]);
        let row = one(&r, "p", id);
        assert_eq!(row.severity, Severity::Error, "{set}");
        assert_eq!((row.location.file.as_str(), row.location.line), (format!("argument `--set {set}`").as_str(), None));
    }
    // Reconciling first never re-sends blindly.
    assert_eq!(one(&rows(&write_scenario("", "on_effect_unknown = \"handoff\"", "")), "p", id).answer, Answer::Yes);

    // An SDK that retries its own timeout re-sends the write inside the attempt.
    let sdk = write_scenario(
        "",
        "on_effect_unknown = \"handoff\"\ntimeout_ms = 3000",
        "[policy.p.sdk_client.db]\ntimeout_ms = 500\n",
    );
    let r = rows(&sdk);
    let row = one(&r, "p", id);
    assert_eq!((row.severity, row.location.field.as_str()), (Severity::Error, "policy.p.sdk_client.db"), "{row:?}");
    let slow_sdk = sdk.replace("timeout_ms = 500", "timeout_ms = 4000");
    assert_eq!(one(&rows(&slow_sdk), "p", id).answer, Answer::Yes, "the runtime's 3 s ends the call first");
}

#[test]
fn hedges_go_to_reads_only() {
    let id = "rule.hedge_on_write";
    let hedged = write_scenario("  idempotency = \"key\"", "hedging = { delay_ms = 50 }", "");
    let row = one(&rows(&hedged), "p", id).clone();
    assert_eq!(row.answer, Answer::Yes);
    assert!(row.evidence.contains("1 write step(s) never hedged"), "{}", row.evidence);
    assert_eq!(one(&rows(&write_scenario("", "", "")), "p", id).answer, Answer::NotApplicable);
}

#[test]
fn sdk_retries_outside_the_root_budget_are_reported_with_their_hidden_amplification() {
    let uncharged = scenario(5000, "", "budget = { retry_tokens = 2 }", "[policy.p.sdk_client.db]\n");
    let r = rows(&uncharged);
    let rule = one(&r, "p", "rule.sdk_retries_not_charged");
    assert_eq!((rule.answer, rule.severity), (Answer::No, Severity::Warning));
    assert_eq!(rule.location.line, Some(line_of(&uncharged, "[policy.p.sdk_client.db]")));
    let question = one(&r, "p", "s29.sdk_retries_in_root_budget");
    assert_eq!(question.answer, Answer::No);
    // 20 % of attempts fail and the SDK retries them twice: 1 + 0.2 + 0.04 = 1.24 attempts a call.
    let amplification: f64 = question.evidence.rsplit(' ').next().unwrap().parse().unwrap();
    assert!((1.15..1.33).contains(&amplification), "{}", question.evidence);
    assert_eq!(one(&r, "p", "s26.retries_within_budget").answer, Answer::No, "hidden attempts outside the tokens");

    let charged =
        uncharged.replace("[policy.p.sdk_client.db]\n", "[policy.p.sdk_client.db]\ncharged_to_root_budget = true\n");
    let r = rows(&charged);
    assert_eq!(one(&r, "p", "rule.sdk_retries_not_charged").answer, Answer::Yes);
    assert_eq!(one(&r, "p", "s29.sdk_retries_in_root_budget").answer, Answer::Yes);
    assert_eq!(
        one(&rows(&scenario(5000, "", "", "")), "p", "s29.sdk_retries_in_root_budget").answer,
        Answer::NotApplicable
    );
}

#[test]
fn a_fallback_in_its_primary_failure_domain_is_flagged() {
    let id = "rule.shared_failure_domain";
    let other = |domain: &str| {
        format!(
            "failure_domain = \"provider-a\"\n\n[[dependency]]\nname = \"db2\"\nservers = 5\nqueue_capacity = 5\nservice_time = {{ dist = \"constant\", value_ms = 50 }}\nfailure_domain = \"{domain}\"\n"
        )
    };
    let same = scenario(5000, &other("provider-a"), "steps.read = { fallback = \"db2\" }", "");
    let r = rows(&same);
    let row = one(&r, "p", id);
    assert_eq!((row.answer, row.severity), (Answer::No, Severity::Warning));
    assert_eq!(row.location.field, "policy.p.steps.read.fallback");
    let distinct = scenario(5000, &other("provider-b"), "steps.read = { fallback = \"db2\" }", "");
    assert_eq!(one(&rows(&distinct), "p", id).answer, Answer::Yes);
}

#[test]
fn stale_cache_entries_kept_from_forbidden_classes_and_marked() {
    let cache = |provenance: bool, task_class: &str| {
        let contract = format!(
            "\n  [dependency.cache]\n  fresh_ttl_s = 1\n  stale_if_error_s = 600\n  provenance_required = {provenance}\n  forbidden_for = [\"permission_decision\"]\n  keys = 10\n"
        );
        scenario(5000, &contract, "", "[policy.p.cache.db]\n")
            .replace("  dependency = \"db\"\n", &format!("  dependency = \"db\"\n{task_class}\n"))
    };
    let unclassified = cache(true, "");
    let r = rows(&unclassified);
    let row = one(&r, "p", "rule.stale_cache_unclassified_step");
    assert_eq!((row.answer, row.severity), (Answer::No, Severity::Warning));
    assert_eq!(row.location.field, "workflow[0].step[0]");
    assert_eq!(one(&r, "p", "rule.stale_cache_unmarked").answer, Answer::Yes);
    let classified = rows(&cache(true, "  task_class = \"summary\""));
    assert_eq!(one(&classified, "p", "rule.stale_cache_unclassified_step").answer, Answer::Yes);

    // A step that reaches the cache only through its fallback is a lookup there too.
    let db2 = "\n[[dependency]]\nname = \"db2\"\nservers = 5\nqueue_capacity = 5\nservice_time = { dist = \"constant\", value_ms = 50 }\n";
    let by_fallback = unclassified
        .replacen("\n[[workflow]]", &format!("{db2}\n[[workflow]]"), 1)
        .replace("  dependency = \"db\"\n", "  dependency = \"db2\"\n  fallback = \"db\"\n");
    let r = rows(&by_fallback);
    let row = one(&r, "p", "rule.stale_cache_unclassified_step");
    assert_eq!((row.answer, row.severity), (Answer::No, Severity::Warning), "{by_fallback}");
    // A contract that forbids no class has nothing to keep from an unclassified step.
    let forbids_nothing = unclassified.replace("  forbidden_for = [\"permission_decision\"]\n", "");
    let row = one(&rows(&forbids_nothing), "p", "rule.stale_cache_unclassified_step").clone();
    assert_eq!(row.answer, Answer::NotApplicable, "{}", row.evidence);

    let unmarked = cache(false, "  task_class = \"summary\"");
    let r = rows(&unmarked);
    let row = one(&r, "p", "rule.stale_cache_unmarked");
    assert_eq!((row.answer, row.severity), (Answer::No, Severity::Error));
    assert_eq!(row.location.line, Some(line_of(&unmarked, "provenance_required = false")));
    assert_eq!(one(&r, "p", "s29.lower_quality_shown").answer, Answer::No);
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn faultline(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_faultline")).args(args).current_dir(repo()).output().expect("start faultline")
}

fn answer(rows: &[serde_json::Value], policy: &str, id: &str) -> (String, String) {
    let r =
        rows.iter().find(|r| r["policy"] == policy && r["id"] == id).unwrap_or_else(|| panic!("no {id} for {policy}"));
    (r["answer"].as_str().unwrap().to_string(), r["evidence"].as_str().unwrap().to_string())
}

fn records(o: &Output) -> Vec<serde_json::Value> {
    serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("JSON").as_array().expect("an array").clone()
}

#[test]
fn the_incident_answers_as_the_essay_tells_it() {
    let o = faultline(&["check", "scenarios/meeting-analysis-incident.toml", "--json"]);
    assert_eq!(o.status.code(), Some(1), "naive re-sends its write with fresh keys: an error");
    let rows = records(&o);
    let (a, e) = answer(&rows, "naive", "s26.deadline_bounded_every_branch");
    assert_eq!(a, "no");
    assert!(e.contains("deadline_propagation = false"), "{e}");
    assert_eq!(answer(&rows, "resilient", "s26.deadline_bounded_every_branch").0, "yes");
    assert_eq!(answer(&rows, "naive", "s29.root_budgets_shared").0, "no");
    assert_eq!(answer(&rows, "resilient", "s29.root_budgets_shared").0, "yes");
    assert_eq!(answer(&rows, "naive", "s26.write_timeout_reconciled").0, "no");
    assert_eq!(answer(&rows, "resilient", "s26.write_timeout_reconciled").0, "yes");
    assert_eq!(answer(&rows, "naive", "s29.write_timeout_not_failure").0, "no");
    assert_eq!(answer(&rows, "naive", "s29.reconciliation_path").0, "no");
    assert_eq!(answer(&rows, "naive", "rule.write_retried_without_idempotency_key").0, "no");
    assert_eq!(answer(&rows, "resilient", "rule.write_retried_without_idempotency_key").0, "yes");
    assert_eq!(answer(&rows, "naive", "s29.cancel_not_rollback").0, "no");
    assert_eq!(answer(&rows, "resilient", "s29.cancel_not_rollback").0, "yes");
    let errors: Vec<&serde_json::Value> = rows.iter().filter(|r| r["severity"] == "error").collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["field"], "policy.naive.idempotency_key");

    let o = faultline(&["check", "scenarios/meeting-analysis-incident.toml", "-p", "resilient"]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.starts_with("policy resilient: "), "{text}");
    assert!(text.contains("Root deadline actually bounded every branch?"), "{text}");
}

#[test]
fn the_sdk_incident_names_the_hidden_retries() {
    let o = faultline(&["check", "scenarios/meeting-analysis-incident-sdk.toml", "--format", "json"]);
    let rows = records(&o);
    let (a, e) = answer(&rows, "naive", "s29.sdk_retries_in_root_budget");
    assert_eq!(a, "no");
    assert!(
        e.starts_with("dependency model-primary uses an sdk_client with 2 hidden retries; hidden amplification 1."),
        "{e}"
    );
    let (a, e) = answer(&rows, "resilient", "s29.sdk_retries_in_root_budget");
    assert_eq!(a, "yes", "{e}");
}

#[test]
fn exit_codes_and_bad_input() {
    assert_eq!(faultline(&["check", "scenarios/noisy-tenant.toml"]).status.code(), Some(0));
    let missing = faultline(&["check", "scenarios/no-such-file.toml"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(missing.stdout.is_empty(), "no partial output");
    let dir = std::env::temp_dir().join(format!("faultline-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, scenario(5000, "", "timeout_ms = -1", "")).unwrap();
    let o = faultline(&["check", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.toml:") && err.contains("policy.p.timeout_ms"), "{err}");
    assert!(o.stdout.is_empty());
    let o = faultline(&["check", "scenarios/mmc.toml", "-p", "nobody"]);
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn json_records_are_flat_and_the_same_bytes_every_time() {
    let args = ["check", "scenarios/meeting-analysis-incident-cache.toml", "--json"];
    let first = faultline(&args);
    let again = faultline(&[&args[..], &["-j", "1"]].concat());
    assert_eq!(first.stdout, again.stdout, "same bytes whatever the threads");
    let rows = records(&first);
    let keys: Vec<&str> = vec![
        "scenario", "policy", "kind", "id", "source", "question", "answer", "severity", "evidence", "file", "line",
        "column", "field",
    ];
    for r in &rows {
        let o = r.as_object().unwrap();
        assert_eq!(o.keys().map(String::as_str).collect::<Vec<_>>().len(), keys.len());
        for k in &keys {
            assert!(o.contains_key(*k), "{k} missing in {r}");
        }
        assert!(["yes", "no", "not applicable", "not shown"].contains(&r["answer"].as_str().unwrap()));
        assert!(["none", "warning", "error"].contains(&r["severity"].as_str().unwrap()));
        assert!(["verification", "checklist", "rule"].contains(&r["kind"].as_str().unwrap()));
    }
    // 7 questions of section 26, 26 of section 29, at least one row per rule, for both policies.
    let per_policy = |p: &str, kind: &str| rows.iter().filter(|r| r["policy"] == p && r["kind"] == kind).count();
    for p in ["naive", "resilient"] {
        assert_eq!((per_policy(p, "verification"), per_policy(p, "checklist")), (7, 26));
        assert!(per_policy(p, "rule") >= 9);
    }
}

#[test]
fn out_writes_the_whole_report_or_nothing() {
    let dir = std::env::temp_dir().join(format!("faultline-check-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file: PathBuf = dir.join("check.json");
    let o = faultline(&["check", "scenarios/approval-change-request.toml", "--json", "-o", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let direct = faultline(&["check", "scenarios/approval-change-request.toml", "--json"]);
    assert_eq!(std::fs::read(&file).unwrap(), direct.stdout);
    let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The review's tk.toml: a write whose attempts time out at 1 s while the service often takes
/// longer, so late commits happen; `step` adds fields to the write step, `policy` to the policy.
fn late_commit_scenario(step: &str, policy: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 120
warmup_s = 0
seed = 1
replications = 2

[[dependency]]
name = "api"
servers = 20
service_time = {{ p50_ms = 700, p95_ms = 3000 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 5 }}
deadline_ms = 20000

  [[workflow.step]]
  id = "put"
  dependency = "api"
  effect = "write"
  status_lookup = true
{step}

[policy.p]
timeout_ms = 1000
on_effect_unknown = "reconcile_first"
retry = {{ max_attempts = 4 }}
{policy}
"#
    )
}

/// The figure a row's evidence cites after `name `.
fn cited(evidence: &str, name: &str) -> f64 {
    let at = evidence.find(&format!("{name} ")).unwrap_or_else(|| panic!("no {name} in {evidence}"));
    let rest = &evidence[at + name.len() + 1..];
    rest.split([',', ';', ' ', ')']).next().unwrap().parse().unwrap_or_else(|_| panic!("{evidence}"))
}

#[test]
fn a_write_re_sent_after_a_status_lookup_needs_a_key_one_call_shares() {
    let id = "rule.write_retried_without_idempotency_key";
    // reconcile_first with a lookup re-sends a write found not committed (yet): without a key,
    // a late commit of the earlier attempt plus the re-send is a duplicate (scenario.md 8.6).
    let bare = late_commit_scenario("", "");
    let r = rows(&bare);
    let row = one(&r, "p", id);
    assert_eq!((row.answer, row.severity), (Answer::No, Severity::Error), "{row:?}");
    assert_eq!(row.location.field, "workflow[0].step[0].idempotency");
    assert!(row.evidence.contains("status lookup finds it not committed"), "{}", row.evidence);
    let duplicates = cited(&one(&r, "p", "s26.write_timeout_reconciled").evidence, "duplicate_effect_total");
    assert!(duplicates > 0.0, "the figures show the duplicates the rule predicts");
    assert_eq!(cited(&row.evidence, "duplicate_effect_total"), duplicates);
    assert_eq!(one(&r, "p", "s29.reconciliation_path").answer, Answer::No, "a lookup alone lets the duplicate through");

    // A key per attempt does not deduplicate the re-send either.
    let per_attempt = late_commit_scenario("  idempotency = \"key\"", "idempotency_key = \"per_attempt\"");
    let r = rows(&per_attempt);
    let row = one(&r, "p", id);
    assert_eq!((row.severity, row.location.field.as_str()), (Severity::Error, "policy.p.idempotency_key"));
    assert_eq!(one(&r, "p", "s29.reconciliation_path").answer, Answer::No);

    // One key per call: the re-send is deduplicated, and the figures agree.
    let r = rows(&late_commit_scenario("  idempotency = \"key\"", ""));
    assert_eq!(one(&r, "p", id).answer, Answer::Yes);
    assert_eq!(one(&r, "p", "s29.reconciliation_path").answer, Answer::Yes);
    let reconciled = one(&r, "p", "s26.write_timeout_reconciled");
    assert_eq!((reconciled.answer, cited(&reconciled.evidence, "duplicate_effect_total")), (Answer::Yes, 0.0));

    // One attempt: a lookup that finds nothing hands off, nothing is sent again.
    let once = late_commit_scenario("", "").replace("max_attempts = 4", "max_attempts = 1");
    let r = rows(&once);
    assert_eq!(one(&r, "p", id).answer, Answer::Yes);
    assert_eq!(one(&r, "p", "s29.reconciliation_path").answer, Answer::Yes);
}

/// The review's tm.toml: a hard step with a 1 s timeout, a soft one with 8 s, and a mode that
/// omits the soft one when `db`'s queue is deeper than `depth`.
fn soft_mode_scenario(depth: u32) -> String {
    format!(
        r#"
[simulation]
duration_s = 60
warmup_s = 0
seed = 1
replications = 2

[[dependency]]
name = "db"
servers = 4
service_time = {{ p50_ms = 500, p95_ms = 4000 }}

[[dependency]]
name = "extra"
servers = 2
service_time = {{ p50_ms = 1500, p95_ms = 6000 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 5 }}
deadline_ms = 10000

  [[workflow.step]]
  id = "main"
  dependency = "db"

  [[workflow.step]]
  id = "nice"
  dependency = "extra"
  criticality = "soft"

[policy.p]
steps = {{ main = {{ timeout_ms = 1000 }}, nice = {{ timeout_ms = 8000 }} }}

[[policy.p.runtime_policy]]
mode = "constrained"
when = {{ queue_depth_above = {depth}, dependency = "db" }}
actions = {{ omit_steps = ["nice"] }}
"#
    )
}

#[test]
fn soft_before_hard_and_restoration_are_answered_from_what_the_modes_did() {
    // The mode never engages: the soft step outlives the hard one by 7 s and nothing stops it.
    let r = rows(&soft_mode_scenario(1_000_000));
    let soft = one(&r, "p", "s26.soft_stopped_before_hard");
    assert_eq!(soft.answer, Answer::No, "{}", soft.evidence);
    assert_eq!(cited(&soft.evidence, "omitted_by_mode_total"), 0.0);
    let restoration = one(&r, "p", "s26.restoration_without_oscillation");
    assert_eq!(restoration.answer, Answer::NotShown, "no restoration happened: {}", restoration.evidence);
    assert_eq!(cited(&restoration.evidence, "degradation_transition_total"), 0.0);

    // The mode engages: it omits the soft step, so the soft branch is stopped first.
    let r = rows(&soft_mode_scenario(2));
    let soft = one(&r, "p", "s26.soft_stopped_before_hard");
    assert_eq!(soft.answer, Answer::Yes, "{}", soft.evidence);
    assert!(cited(&soft.evidence, "omitted_by_mode_total") > 0.0);
    // It never lets go (the queue stays deep): still no restoration to judge.
    let restoration = one(&r, "p", "s26.restoration_without_oscillation");
    assert_eq!(restoration.answer, Answer::NotShown, "{}", restoration.evidence);
    assert!(cited(&restoration.evidence, "degradation_transition_total") > 0.0);

    // The incident's resilient policy restores, and flaps: judged from the figures.
    let o = faultline(&["check", "scenarios/meeting-analysis-incident.toml", "-p", "resilient", "--json"]);
    let (a, e) = answer(&records(&o), "resilient", "s26.restoration_without_oscillation");
    assert_eq!(a, "no", "{e}");
    assert!(cited(&e, "degradation_flaps_per_hour") > 0.0, "{e}");
}

#[test]
fn an_advisory_step_gives_up_when_its_window_closes() {
    // approval-change-request: `cost_estimate` is advisory with advisory_wait_ms = 800; the
    // hard steps time out at 30 s.
    let o = faultline(&["check", "scenarios/approval-change-request.toml", "--json"]);
    let rows = records(&o);
    for policy in ["naive", "resilient"] {
        let (a, e) = answer(&rows, policy, "s26.soft_stopped_before_hard");
        assert_eq!(a, "yes", "{policy}: {e}");
        assert!(e.contains(" 800 ms vs hard steps' shortest attempt timeout 30000 ms"), "{e}");
    }
}

/// The review's tq.toml: a 2-of-3 quorum over `ma` (bounded queue), `mb` and `mc` (unbounded),
/// a breaker on `mb` whose window is `window_ms`.
fn quorum_scenario(window_ms: u32) -> String {
    format!(
        r#"
[simulation]
duration_s = 60
warmup_s = 0
seed = 1
replications = 2

[[dependency]]
name = "ma"
servers = 10
service_time = {{ p50_ms = 300, p95_ms = 900 }}
queue_policy = {{ max_wait_ms = 200 }}

[[dependency]]
name = "mb"
servers = 1
service_time = {{ p50_ms = 300, p95_ms = 900 }}

[[dependency]]
name = "mc"
servers = 1
service_time = {{ p50_ms = 300, p95_ms = 900 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 2 }}
deadline_ms = 1500

  [[workflow.step]]
  id = "vote"
  dependency = "ma"
  quorum = {{ k = 2, dependencies = ["ma", "mb", "mc"] }}

[policy.p]
deadline_propagation = false
timeout_ms = 1000
retry = {{ max_attempts = 3, backoff = {{ kind = "constant", base_ms = 300, jitter = "none" }} }}
circuit_breaker = [{{ kind = "polly", dependency = "mb", sampling_duration_ms = {window_ms} }}]
"#
    )
}

#[test]
fn a_quorum_step_is_judged_by_its_branches_and_never_retried() {
    let text = quorum_scenario(500);
    let r = rows(&text);
    // scenario.md 6.2: a branch is never retried, so no retry delay can miss the deadline.
    assert_eq!(one(&r, "p", "rule.retry_delays_exceed_deadline").answer, Answer::Yes);
    // The breaker on `mb` judges the branch at `mb`: 500 ms < 2 x 1000 ms.
    let row = one(&r, "p", "rule.breaker_window_under_twice_attempt_timeout");
    assert_eq!((row.answer, row.severity), (Answer::No, Severity::Error), "{row:?}");
    assert!(row.evidence.contains("of step `vote`"), "{}", row.evidence);
    assert_eq!(row.location.line, Some(line_of(&text, "sampling_duration_ms = 500")));
    assert_eq!(one(&rows(&quorum_scenario(2000)), "p", row.id).answer, Answer::Yes);
    // `mb` and `mc` queue without a longest wait.
    let queues = one(&r, "p", "s29.queue_depth_and_wait_bounded");
    assert_eq!(queues.answer, Answer::No);
    assert!(queues.evidence.starts_with("dependency `mb`"), "{}", queues.evidence);
}

/// The review's ta.toml (`machine` false) and tb.toml (`machine` true): an approval step with no
/// attempt timeout under a 15-minute deadline, without propagation; tb adds a machine step and a
/// Polly breaker over every dependency.
fn approval_scenario(machine: bool) -> String {
    let (plan, after, policy) = if machine {
        (
            "  [[workflow.step]]\n  id = \"plan\"\n  dependency = \"api\"\n",
            "  after = [\"plan\"]\n",
            "timeout_ms = 1000\nsteps = { approve = { timeout_ms = 0 } }\ncircuit_breaker = [{ kind = \"polly\", sampling_duration_ms = 5000 }]",
        )
    } else {
        ("", "", "timeout_ms = 0")
    };
    format!(
        r#"
[simulation]
duration_s = 600
warmup_s = 0
seed = 1
replications = 2

[[dependency]]
name = "api"
servers = 10
service_time = {{ p50_ms = 100, p95_ms = 300 }}

[[dependency]]
name = "board"
approval = {{ decision_time = {{ p50_ms = 60000, p95_ms = 300000 }}, approvers = 3, approved_share = 0.9, expires_after_s = 3600 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 0.05 }}
deadline_ms = 900000

{plan}
  [[workflow.step]]
  id = "approve"
{after}  dependency = "board"

[policy.p]
deadline_propagation = false
{policy}
"#
    )
}

#[test]
fn an_approval_step_is_no_attempt_for_the_timing_rules() {
    // scenario.md 4.7: an approval waits for the verdict, its expiry or the root deadline.
    let r = rows(&approval_scenario(false));
    assert_eq!(one(&r, "p", "s26.deadline_bounded_every_branch").answer, Answer::Yes);
    let row = one(&r, "p", "rule.attempt_timeout_over_deadline");
    assert_eq!((row.answer, row.severity), (Answer::NotApplicable, Severity::None), "{row:?}");
    assert!(!r.iter().any(|r| r.severity == Severity::Error), "no error: {r:?}");

    let r = rows(&approval_scenario(true));
    assert_eq!(one(&r, "p", "rule.attempt_timeout_over_deadline").answer, Answer::Yes);
    // The breaker judges the machine step's 1000 ms attempts only: 5000 >= 2 x 1000.
    assert_eq!(one(&r, "p", "rule.breaker_window_under_twice_attempt_timeout").answer, Answer::Yes);
    assert!(!r.iter().any(|r| r.severity == Severity::Error), "no error: {r:?}");
}

/// The review's t1.toml: a write under a 2 s deadline, with an SDK client whose own timeout is
/// 5 s and that retries it.
fn sdk_write_scenario(propagation: bool) -> String {
    format!(
        r#"
[simulation]
duration_s = 60
warmup_s = 0
seed = 1
replications = 2

[[dependency]]
name = "api"
servers = 10
service_time = {{ p50_ms = 100, p95_ms = 300 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 5 }}
deadline_ms = 2000

  [[workflow.step]]
  id = "put"
  dependency = "api"
  effect = "write"

[policy.p]
deadline_propagation = {propagation}
on_effect_unknown = "handoff"

[policy.p.sdk_client.api]
timeout_ms = 5000
charged_to_root_budget = true
"#
    )
}

#[test]
fn an_sdk_timeout_the_deadline_always_beats_never_re_sends_a_write() {
    let id = "rule.write_retried_without_idempotency_key";
    // Propagation clips every attempt to the 2 s deadline: the SDK's 5 s timeout never fires.
    assert_eq!(one(&rows(&sdk_write_scenario(true)), "p", id).answer, Answer::Yes);
    // Without it the runtime's default 30 s attempt lets the SDK time out and re-send.
    let r = rows(&sdk_write_scenario(false));
    let row = one(&r, "p", id);
    assert_eq!((row.severity, row.location.field.as_str()), (Severity::Error, "policy.p.sdk_client.api"));
}

/// The review's t10.toml: a read with a fallback to an unbounded queue, a write with a status
/// lookup, and a breaker keeping one circuit for `api`.
fn control_path_scenario(on_effect_unknown: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 60
warmup_s = 0
seed = 1
replications = 2

[[dependency]]
name = "api"
servers = 10
service_time = {{ p50_ms = 100, p95_ms = 300 }}
queue_policy = {{ max_wait_ms = 500 }}

[[dependency]]
name = "slowq"
servers = 1
service_time = {{ p50_ms = 100, p95_ms = 300 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 5 }}
deadline_ms = 2000

  [[workflow.step]]
  id = "read"
  dependency = "api"
  fallback = "slowq"

  [[workflow.step]]
  id = "put"
  after = ["read"]
  dependency = "api"
  effect = "write"
  status_lookup = true

[policy.p]
on_effect_unknown = "{on_effect_unknown}"
circuit_breaker = [{{ kind = "polly", dependency = "api" }}]
"#
    )
}

#[test]
fn the_control_path_questions_count_only_lookups_the_policy_sends() {
    // Under handoff no status lookup is ever sent: nothing of the control path meets the breaker.
    let r = rows(&control_path_scenario("handoff"));
    assert_eq!(one(&r, "p", "s26.control_path_capacity").answer, Answer::NotApplicable);
    assert_eq!(one(&r, "p", "s29.circuit_spares_control_path").answer, Answer::Yes);
    // L2: the read's fallback `slowq` has no longest wait.
    let queues = one(&r, "p", "s29.queue_depth_and_wait_bounded");
    assert_eq!(queues.answer, Answer::No);
    assert!(queues.evidence.starts_with("dependency `slowq`"), "{}", queues.evidence);

    // Under reconcile_first the lookups share `api`'s one circuit.
    let r = rows(&control_path_scenario("reconcile_first"));
    assert_eq!(one(&r, "p", "s26.control_path_capacity").answer, Answer::No);
    assert_eq!(one(&r, "p", "s29.circuit_spares_control_path").answer, Answer::No);
}

#[test]
fn retries_within_budget_reads_shared_budgets_and_what_they_refused() {
    let id = "s26.retries_within_budget";
    // 20 % of attempts fail: a token per run runs out in the runs that fail twice.
    let tight = scenario(5000, "", "budget = { retry_tokens = 1 }\nretry = { max_attempts = 5 }", "");
    let row = one(&rows(&tight), "p", id).clone();
    assert_eq!(row.answer, Answer::Yes, "{}", row.evidence);
    assert!(cited(&row.evidence, "budget_exhausted_total.retry") > 0.0);
    // 1000 tokens a run are never reached: the run shows nothing held back.
    let loose = tight.replace("retry_tokens = 1 ", "retry_tokens = 1000 ");
    let row = one(&rows(&loose), "p", id).clone();
    assert_eq!(row.answer, Answer::NotShown, "{}", row.evidence);
    assert_eq!(cited(&row.evidence, "budget_exhausted_total.retry"), 0.0);

    // metastability: the shared budgets bound the retries of the three budget policies.
    let o = faultline(&["check", "scenarios/metastability.toml", "--json"]);
    let rows = records(&o);
    for policy in ["retry_budget", "finagle_budget", "adaptive_throttling"] {
        let (a, e) = answer(&rows, policy, id);
        assert_eq!(a, "yes", "{policy}: {e}");
    }
    assert!(cited(&answer(&rows, "retry_budget", id).1, "refused_total.retry_budget") > 0.0);
    assert_eq!(answer(&rows, "naive", id).0, "no");
}

#[test]
fn a_run_that_never_ends_is_reported_not_taken_for_bad_input() {
    // The review's t15.toml: 20 s calls, no attempt timeout, a 1 s drain limit.
    let text = r#"
[simulation]
duration_s = 30
warmup_s = 0
seed = 1
replications = 2
drain_limit_s = 1

[[dependency]]
name = "db"
servers = 1
service_time = { p50_ms = 20000, p95_ms = 40000 }

[[workflow]]
name = "w"
arrivals = { rate_per_s = 2 }
deadline_ms = 1000

  [[workflow.step]]
  id = "a"
  dependency = "db"

[policy.p]
deadline_propagation = false
timeout_ms = 0
retry = { max_attempts = 1 }
"#;
    let dir = std::env::temp_dir().join(format!("faultline-check-drain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("t15.toml");
    std::fs::write(&file, text).unwrap();
    let o = faultline(&["check", file.to_str().unwrap(), "--json"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = records(&o);
    let (a, e) = answer(&rows, "p", "s26.deadline_bounded_every_branch");
    assert_eq!(a, "no");
    assert!(e.contains("root runs were still in flight 1 s after the arrival window closed"), "{e}");
    let deadline = rows.iter().find(|r| r["id"] == "s26.deadline_bounded_every_branch").unwrap();
    assert_eq!(deadline["severity"], "error");
    assert_eq!(answer(&rows, "p", "s26.write_timeout_reconciled").0, "not shown");
    // The file's own rules are answered too.
    assert_eq!(answer(&rows, "p", "rule.attempt_timeout_over_deadline").0, "no");
}

#[test]
fn a_task_client_that_retries_in_lockstep_is_no_backoff_with_jitter() {
    // The storm scenarios differ in task_client.jitter alone.
    for scenario in ["scenarios/a2a-subscribe-storm.toml", "scenarios/a2a-poll-storm.toml"] {
        let rows = records(&faultline(&["check", scenario, "--json", "-p", "synchronised", "-p", "jittered"]));
        let (a, e) = answer(&rows, "synchronised", "s29.backoff_within_budget");
        assert_eq!(a, "no", "{scenario}: {e}");
        assert!(e.ends_with("task_client.jitter = none"), "{e}");
        let (a, e) = answer(&rows, "jittered", "s29.backoff_within_budget");
        assert_eq!(a, "yes", "{scenario}: {e}");
        let field = rows
            .iter()
            .find(|r| r["policy"] == "synchronised" && r["id"] == "s29.backoff_within_budget")
            .map(|r| r["field"].clone())
            .unwrap();
        assert_eq!(field, "policy.synchronised.task_client.jitter");
    }
}

#[test]
fn a_value_set_by_an_argument_is_located_at_the_argument() {
    let text = scenario(2000, "", "deadline_propagation = false\ntimeout_ms = 1000", "");
    let options = CheckOptions {
        scenario: ScenarioInput::Text(Source::from_text("t.toml", &text, Format::Toml)),
        policies: Vec::new(),
        replications: Some(1),
        sets: vec!["policy.p.timeout_ms=9000".into()],
        seed: None,
        jobs: 1,
        format: OutputFormat::Text,
        out: None,
    };
    let r = check_rows(&options).unwrap_or_else(|e| panic!("{e}")).0;
    let row = one(&r, "p", "rule.attempt_timeout_over_deadline");
    assert_eq!(row.severity, Severity::Error);
    assert_eq!(row.location.file, "argument `--set policy.p.timeout_ms=9000`");
    assert_eq!((row.location.line, row.location.field.as_str()), (None, "policy.p.timeout_ms"));
    // Without the argument the file's own value is located in the file.
    let fits = rows(&text);
    assert_eq!(one(&fits, "p", "rule.attempt_timeout_over_deadline").answer, Answer::Yes);
}

#[test]
fn the_implied_policy_is_named_as_set_names_it() {
    // A file without [policy] runs one implied `default`: its fields are no root fields.
    let text = scenario(5000, "", "", "").replace("[policy.p]\n", "");
    let r = rows(&text);
    let policy_rows: Vec<&Row> = r.iter().filter(|r| r.location.field.starts_with("policy")).collect();
    assert!(!policy_rows.is_empty());
    for row in &policy_rows {
        assert!(row.location.field.starts_with("policy.default"), "{row:?}");
        assert_eq!(row.location.line, None, "{row:?}");
    }
    let retry = one(&r, "default", "rule.retry_delays_exceed_deadline");
    assert_eq!(retry.location.field, "policy.default.retry");
}

#[test]
fn orphans_without_an_owner_answer_no_even_with_cancel_on_abandon() {
    let o = faultline(&["check", "scenarios/meeting-analysis-incident.toml", "-p", "resilient", "--json"]);
    let (a, e) = answer(&records(&o), "resilient", "s29.late_result_and_orphan_owner");
    assert!(e.starts_with("cancel_on_abandon = true"), "{e}");
    assert!(cited(&e, "orphan_task_total") > cited(&e, "orphan_tracked_total"), "{e}");
    assert_eq!(a, "no", "{e}");
}

#[test]
fn section_26_says_not_shown_when_the_run_never_exercised_the_path() {
    // approval-change-request: no write's effect is ever unknown and no run degrades in 2
    // replications; the review found both answered "yes".
    let rows = records(&faultline(&["check", "scenarios/approval-change-request.toml", "--json"]));
    for policy in ["naive", "resilient"] {
        let (a, e) = answer(&rows, policy, "s26.write_timeout_reconciled");
        assert_eq!((a.as_str(), cited(&e, "effect_unknown_total")), ("not shown", 0.0), "{e}");
        let (a, e) = answer(&rows, policy, "s26.degraded_evidence_marked");
        assert_eq!((a.as_str(), cited(&e, "outcome_total.degraded")), ("not shown", 0.0), "{e}");
    }
    // Where the incident's writes time out, the answer is read from the figures.
    let rows = records(&faultline(&["check", "scenarios/meeting-analysis-incident.toml", "--json", "-p", "resilient"]));
    let (a, e) = answer(&rows, "resilient", "s26.write_timeout_reconciled");
    assert_eq!(a, "yes", "{e}");
    assert!(cited(&e, "effect_unknown_total") > 0.0);
}
