//! End-to-end tests of the `faultline` binary: exit codes, error messages (file:line:column:
//! field, or the argument), output files, determinism and the TOML/JSON equivalence.
//!
//! Every test works in its own temporary directory and passes `--out` inside it, so nothing is
//! written under the repository's `results/`.

use serde_json::Value;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A fresh directory per test, removed when the test ends (pass or fail).
struct Sandbox {
    dir: PathBuf,
}

impl Sandbox {
    fn new(test: &str) -> Sandbox {
        let dir = std::env::temp_dir().join(format!("faultline-cli-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the sandbox");
        Sandbox { dir }
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.join(name);
        std::fs::write(&path, text).expect("write a scenario file");
        path
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The default --out folder of a test.
    fn out(&self) -> PathBuf {
        self.dir.join("out")
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs the binary in `cwd` with the given arguments.
fn faultline_in<I, S>(cwd: &Path, args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("start the faultline binary")
}

/// Runs the binary from inside the sandbox, so that even a missing --out cannot touch the repo.
fn faultline<I, S>(sb: &Sandbox, args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    faultline_in(&sb.dir, args)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

/// 1-based line and column of the first occurrence of `needle` in `text`.
fn at(text: &str, needle: &str) -> (usize, usize) {
    at_nth(text, needle, 0)
}

/// 1-based line and column of occurrence `n` (0-based) of `needle` in `text`.
fn at_nth(text: &str, needle: &str, n: usize) -> (usize, usize) {
    let (offset, _) =
        text.match_indices(needle).nth(n).unwrap_or_else(|| panic!("`{needle}` is not {n} times in the scenario text"));
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    (line, before[line_start..].chars().count() + 1)
}

/// `text` with `from` replaced by `to`; panics if `from` is absent (the edit must take effect).
fn edit(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "`{from}` is not in the scenario text");
    text.replacen(from, to, 1)
}

/// Asserts the invalid-input contract: exit 2, exactly one `error: ` line on stderr that
/// contains every fragment, no panic, nothing on stdout, and no output folder. Returns the
/// error line.
fn assert_input_error(o: &Output, out_dir: &Path, fragments: &[&str]) -> String {
    let err = stderr(o);
    assert!(!err.contains("panicked"), "the binary panicked:\n{err}");
    assert_eq!(o.status.code(), Some(2), "expected exit 2 (invalid input); stderr:\n{err}\nstdout:\n{}", stdout(o));
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected exactly one line on stderr, got:\n{err}");
    let line = lines[0];
    assert!(line.starts_with("error: "), "stderr line does not start with `error: `: {line}");
    for f in fragments {
        assert!(line.contains(f), "stderr does not contain `{f}`:\n{line}");
    }
    assert!(o.stdout.is_empty(), "nothing should be printed on stdout on an input error, got:\n{}", stdout(o));
    assert!(!out_dir.exists(), "an input error must not create the output folder {}", out_dir.display());
    line.to_string()
}

/// The `path:line:column: field: ` prefix an error about `needle` must start with.
fn located(path: &Path, text: &str, needle: &str, field: &str) -> String {
    let (line, column) = at(text, needle);
    format!("error: {}:{line}:{column}: {field}: ", s(path))
}

fn assert_starts_with(line: &str, prefix: &str) {
    assert!(line.starts_with(prefix), "expected the error to start with\n  {prefix}\ngot\n  {line}");
}

fn assert_success(o: &Output) {
    let err = stderr(o);
    assert!(!err.contains("panicked"), "the binary panicked:\n{err}");
    assert_eq!(o.status.code(), Some(0), "expected exit 0; stderr:\n{err}\nstdout:\n{}", stdout(o));
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not valid JSON: {e}\n{text}", path.display()))
}

fn metric(summary: &Value, name: &str) -> f64 {
    summary["metrics"][name].as_f64().unwrap_or_else(|| panic!("metric `{name}` missing or not a number in {summary}"))
}

/// A small, fast scenario: 50 s at 5 runs/s, two policies, two replications.
const BASE: &str = r#"# A small scenario for the CLI tests.
[simulation]
duration_s = 50
seed = 3
replications = 2
timeseries_window_s = 10

[[dependency]]
name = "db"
servers = 4
queue_capacity = 50
service_time = { p50_ms = 20, p95_ms = 60 }
errors = { transient_transport = 0.01 }
hang_probability = 0.0
cost_units = 1

[[dependency]]
name = "backup"
servers = 2
service_time = { p50_ms = 10, p95_ms = 30 }

[[workflow]]
name = "wf"
arrivals = { rate_per_s = 5 }
deadline_ms = 2000

  [[workflow.step]]
  id = "lookup"
  dependency = "db"
  fallback = "backup"

  [[workflow.step]]
  id = "save"
  after = ["lookup"]
  dependency = "db"
  effect = "write"
  idempotency = "key"

[policy.careful]
timeout_ms = 500
retry = { max_attempts = 2 }

[policy.hasty]
timeout_ms = 200
retry = { max_attempts = 1 }
"#;

/// The same scenario as [`BASE`], written in JSON.
const BASE_JSON: &str = r#"{
  "simulation": { "duration_s": 50, "seed": 3, "replications": 2, "timeseries_window_s": 10 },
  "dependency": [
    {
      "name": "db",
      "servers": 4,
      "queue_capacity": 50,
      "service_time": { "p50_ms": 20, "p95_ms": 60 },
      "errors": { "transient_transport": 0.01 },
      "hang_probability": 0.0,
      "cost_units": 1
    },
    { "name": "backup", "servers": 2, "service_time": { "p50_ms": 10, "p95_ms": 30 } }
  ],
  "workflow": [
    {
      "name": "wf",
      "arrivals": { "rate_per_s": 5 },
      "deadline_ms": 2000,
      "step": [
        { "id": "lookup", "dependency": "db", "fallback": "backup" },
        { "id": "save", "after": ["lookup"], "dependency": "db", "effect": "write", "idempotency": "key" }
      ]
    }
  ],
  "policy": {
    "careful": { "timeout_ms": 500, "retry": { "max_attempts": 2 } },
    "hasty": { "timeout_ms": 200, "retry": { "max_attempts": 1 } }
  }
}
"#;

const POLICIES: [&str; 2] = ["careful", "hasty"];

/// `faultline run <file> --out <out> --jobs 1 <extra...>`.
fn run(sb: &Sandbox, scenario: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args: Vec<String> = vec!["run".into(), s(scenario), "--out".into(), s(out), "--jobs".into(), "1".into()];
    args.extend(extra.iter().map(|a| a.to_string()));
    faultline(sb, &args)
}

/// Runs a scenario text that must be rejected, and returns the error line.
fn run_bad(test: &str, text: &str, fragments: &[&str]) -> (Sandbox, PathBuf, String) {
    let sb = Sandbox::new(test);
    let path = sb.write("bad.toml", text);
    let o = run(&sb, &path, &sb.out(), &[]);
    let line = assert_input_error(&o, &sb.out(), fragments);
    (sb, path, line)
}

fn fault(kind: &str, extra: &str) -> String {
    format!("{BASE}\n[[fault]]\nkind = \"{kind}\"\ntarget = \"db\"\nstart_s = 10\nduration_s = 5\n{extra}")
}

// ---------------------------------------------------------------------------------------------
// The base scenario itself is valid (otherwise every error test below proves nothing).
// ---------------------------------------------------------------------------------------------

#[test]
fn base_scenarios_validate() {
    let sb = Sandbox::new("base_scenarios_validate");
    for (name, text) in [("small.toml", BASE), ("small.json", BASE_JSON)] {
        let path = sb.write(name, text);
        let o = faultline(&sb, ["validate".to_string(), s(&path)]);
        assert_success(&o);
        let out = stdout(&o);
        assert!(out.starts_with(&format!("{}: ok", s(&path))), "{out}");
        assert!(out.contains("policies: careful, hasty"), "{out}");
    }
    // The fault helper produces a valid scenario when the fault itself is fine.
    let path = sb.write("fault.toml", &fault("timeout", "toxicity = 0.5\n"));
    assert_success(&faultline(&sb, ["validate".to_string(), s(&path)]));
}

// ---------------------------------------------------------------------------------------------
// Bad input: exit 2, one `error:` line naming file:line:column and field (or the argument).
// ---------------------------------------------------------------------------------------------

#[test]
fn unknown_field_is_rejected_with_its_position() {
    let text = edit(BASE, "servers = 4\n", "servers = 4\nsevrers = 5\n");
    let (_sb, path, line) = run_bad("unknown_field", &text, &["unknown field `sevrers`"]);
    assert_starts_with(&line, &located(&path, &text, "sevrers = 5", "dependency[0].sevrers"));
}

#[test]
fn unknown_top_level_field_is_rejected() {
    let text = edit(BASE, "[simulation]\n", "[simulaton]\nduration_s = 1\n\n[simulation]\n");
    let (_sb, path, line) = run_bad("unknown_top_field", &text, &["unknown field `simulaton`"]);
    assert!(line.starts_with(&format!("error: {}:", s(&path))), "{line}");
}

#[test]
fn wrong_type_is_rejected_with_its_position() {
    let text = edit(BASE, "servers = 4\n", "servers = \"many\"\n");
    let (_sb, path, line) = run_bad("wrong_type", &text, &["invalid type", "\"many\""]);
    assert_starts_with(&line, &located(&path, &text, "\"many\"", "dependency[0].servers"));
}

#[test]
fn p95_below_p50_is_rejected() {
    let text = edit(BASE, "p50_ms = 20, p95_ms = 60", "p50_ms = 20, p95_ms = 10");
    let (_sb, path, line) = run_bad("p95_below_p50", &text, &["p95_ms (10) must be at least p50_ms (20)"]);
    assert_starts_with(&line, &located(&path, &text, "p95_ms = 10", "dependency[0].service_time.p95_ms"));
}

#[test]
fn error_probability_above_one_is_rejected() {
    let text = edit(BASE, "transient_transport = 0.01", "transient_transport = 1.5");
    let (_sb, path, line) = run_bad("error_probability", &text, &["a probability must be in [0, 1], got 1.5"]);
    assert_starts_with(
        &line,
        &located(&path, &text, "transient_transport = 1.5", "dependency[0].errors.transient_transport"),
    );
}

#[test]
fn error_probabilities_adding_up_past_one_are_rejected() {
    let text = edit(BASE, "transient_transport = 0.01", "transient_transport = 0.6, overloaded = 0.6");
    let (_sb, path, line) = run_bad("error_probability_sum", &text, &["more than 1"]);
    assert_starts_with(&line, &located(&path, &text, "errors = {", "dependency[0].errors"));
}

#[test]
fn negative_hang_probability_is_rejected() {
    let text = edit(BASE, "hang_probability = 0.0", "hang_probability = -0.1");
    let (_sb, path, line) = run_bad("hang_probability", &text, &["a probability must be in [0, 1], got -0.1"]);
    assert_starts_with(&line, &located(&path, &text, "hang_probability = -0.1", "dependency[0].hang_probability"));
}

#[test]
fn fault_toxicity_above_one_is_rejected() {
    let text = fault("timeout", "toxicity = 1.5\n");
    let (_sb, path, line) = run_bad("fault_toxicity", &text, &["a probability must be in [0, 1], got 1.5"]);
    assert_starts_with(&line, &located(&path, &text, "toxicity = 1.5", "fault[0].toxicity"));
}

#[test]
fn workflow_cycle_is_rejected() {
    let text = edit(BASE, "  id = \"lookup\"\n", "  id = \"lookup\"\n  after = [\"save\"]\n");
    let (_sb, path, line) = run_bad("workflow_cycle", &text, &["the steps form a cycle", "lookup", "save"]);
    assert!(line.starts_with(&format!("error: {}:", s(&path))), "{line}");
    assert!(line.contains(": workflow[0].step: "), "{line}");
    // The position is the first step of the workflow.
    let (l, _) = at(&text, "[[workflow.step]]");
    assert!(line.starts_with(&format!("error: {}:{l}:", s(&path))), "expected line {l}: {line}");
}

#[test]
fn step_after_itself_is_rejected() {
    let text = edit(BASE, "  id = \"lookup\"\n", "  id = \"lookup\"\n  after = [\"lookup\"]\n");
    let (_sb, path, line) = run_bad("step_after_itself", &text, &["cannot come after itself"]);
    assert_starts_with(&line, &located(&path, &text, "\"lookup\"]", "workflow[0].step[0].after[0]"));
}

#[test]
fn step_after_unknown_step_is_rejected() {
    let text = edit(BASE, "after = [\"lookup\"]", "after = [\"lokup\"]");
    let (_sb, path, line) = run_bad("after_unknown_step", &text, &["unknown step `lokup`"]);
    assert_starts_with(&line, &located(&path, &text, "\"lokup\"", "workflow[0].step[1].after[0]"));
}

#[test]
fn step_with_unknown_dependency_is_rejected() {
    let text = edit(BASE, "dependency = \"db\"\n  fallback", "dependency = \"dbx\"\n  fallback");
    let (_sb, path, line) = run_bad("unknown_dependency", &text, &["unknown dependency `dbx`"]);
    assert_starts_with(&line, &located(&path, &text, "dependency = \"dbx\"", "workflow[0].step[0].dependency"));
}

#[test]
fn unknown_policy_is_rejected() {
    let sb = Sandbox::new("unknown_policy");
    let path = sb.write("small.toml", BASE);
    let o = run(&sb, &path, &sb.out(), &["--policy", "nope"]);
    assert_input_error(
        &o,
        &sb.out(),
        &["argument `--policy nope`", "unknown policy `nope` (known: `careful`, `hasty`)"],
    );
}

#[test]
fn unknown_gate_candidate_is_rejected() {
    let sb = Sandbox::new("unknown_candidate");
    let path = sb.write("small.toml", &format!("{BASE}\n[slo]\nlogical_run_total = [\"> 0\"]\n"));
    let o = faultline(&sb, ["gate".to_string(), s(&path), "--candidate".into(), "nope".into()]);
    assert_input_error(&o, &sb.out(), &["unknown policy `nope` (known: `careful`, `hasty`)"]);
    let o = faultline(
        &sb,
        ["gate".to_string(), s(&path), "--candidate".into(), "careful".into(), "--baseline".into(), "nope".into()],
    );
    assert_input_error(&o, &sb.out(), &["unknown policy `nope`"]);
}

#[test]

fn unknown_gate_candidate_names_the_candidate_argument() {
    let sb = Sandbox::new("unknown_candidate_arg");
    let path = sb.write("small.toml", &format!("{BASE}\n[slo]\nlogical_run_total = [\"> 0\"]\n"));
    let o = faultline(&sb, ["gate".to_string(), s(&path), "--candidate".into(), "nope".into()]);
    assert_input_error(&o, &sb.out(), &["argument `--candidate nope`", "unknown policy `nope`"]);
    let o = faultline(
        &sb,
        ["gate".to_string(), s(&path), "--candidate".into(), "careful".into(), "--baseline".into(), "nope".into()],
    );
    assert_input_error(&o, &sb.out(), &["argument `--baseline nope`", "unknown policy `nope`"]);
}

#[test]
fn set_without_equals_is_rejected() {
    let sb = Sandbox::new("set_no_equals");
    let path = sb.write("small.toml", BASE);
    let o = run(&sb, &path, &sb.out(), &["--set", "simulation.seed"]);
    let line = assert_input_error(&o, &sb.out(), &["expected path=value"]);
    assert_starts_with(&line, "error: argument `--set simulation.seed`: ");
}

#[test]
fn set_with_empty_segment_is_rejected() {
    let sb = Sandbox::new("set_empty_segment");
    let path = sb.write("small.toml", BASE);
    let o = run(&sb, &path, &sb.out(), &["--set", "dependency..servers=3"]);
    let line = assert_input_error(&o, &sb.out(), &["empty segment"]);
    assert_starts_with(&line, "error: argument `--set dependency..servers=3`: ");
}

#[test]
fn set_with_empty_value_is_rejected() {
    let sb = Sandbox::new("set_empty_value");
    let path = sb.write("small.toml", BASE);
    let o = run(&sb, &path, &sb.out(), &["--set", "simulation.seed="]);
    let line = assert_input_error(&o, &sb.out(), &["the value is empty"]);
    assert_starts_with(&line, "error: argument `--set simulation.seed=`: simulation.seed: ");
}

#[test]
fn set_to_unknown_dependency_is_rejected() {
    let sb = Sandbox::new("set_unknown_dependency");
    let path = sb.write("small.toml", BASE);
    let o = run(&sb, &path, &sb.out(), &["--set", "dependency.nope.servers=3"]);
    let line = assert_input_error(&o, &sb.out(), &["no element named or numbered `nope`"]);
    assert_starts_with(&line, "error: argument `--set dependency.nope.servers=3`: dependency.nope.servers: ");
}

#[test]
fn set_with_wrong_type_names_the_argument() {
    let sb = Sandbox::new("set_wrong_type");
    let path = sb.write("small.toml", BASE);
    let o = run(&sb, &path, &sb.out(), &["--set", "dependency.db.servers=lots"]);
    let line = assert_input_error(&o, &sb.out(), &["invalid type"]);
    assert_starts_with(&line, "error: argument `--set dependency.db.servers=lots`: ");
    assert!(line.contains("servers"), "{line}");
}

#[test]
fn set_unknown_field_names_the_argument() {
    let sb = Sandbox::new("set_unknown_field");
    let path = sb.write("small.toml", BASE);
    let o = run(&sb, &path, &sb.out(), &["--set", "simulation.sed=4"]);
    let line = assert_input_error(&o, &sb.out(), &["unknown field `sed`", "did you mean `seed`?"]);
    assert_starts_with(&line, "error: argument `--set simulation.sed=4`: ");
}

#[test]
fn set_with_wrong_type_says_it_in_plain_words() {
    let sb = Sandbox::new("set_plain_type");
    let path = sb.write("small.toml", BASE);
    let o = run(&sb, &path, &sb.out(), &["--set", "simulation.duration_s=abc"]);
    let line = assert_input_error(&o, &sb.out(), &["expected a number"]);
    assert!(!line.contains("f64"), "{line}");
    assert_starts_with(&line, "error: argument `--set simulation.duration_s=abc`: ");
}

#[test]
fn set_with_out_of_range_value_names_the_argument() {
    let sb = Sandbox::new("set_out_of_range");
    let path = sb.write("small.toml", BASE);
    let o = run(&sb, &path, &sb.out(), &["--set", "dependency.db.hang_probability=2"]);
    let line = assert_input_error(&o, &sb.out(), &["a probability must be in [0, 1], got 2"]);
    assert_starts_with(&line, "error: argument `--set dependency.db.hang_probability=2`: ");
}

#[test]
fn param_without_equals_is_rejected() {
    let sb = Sandbox::new("param_no_equals");
    let path = sb.write("small.toml", BASE);
    let o = faultline(
        &sb,
        ["sweep".to_string(), s(&path), "--param".into(), "simulation.seed".into(), "--out".into(), s(&sb.out())],
    );
    let line = assert_input_error(&o, &sb.out(), &["expected path=v1,v2,..."]);
    assert_starts_with(&line, "error: argument `--param simulation.seed`: ");
}

#[test]
fn param_with_empty_value_is_rejected() {
    let sb = Sandbox::new("param_empty_value");
    let path = sb.write("small.toml", BASE);
    for arg in ["simulation.seed=1,,2", "simulation.seed="] {
        let o =
            faultline(&sb, ["sweep".to_string(), s(&path), "--param".into(), arg.into(), "--out".into(), s(&sb.out())]);
        let line = assert_input_error(&o, &sb.out(), &["a value is empty"]);
        assert_starts_with(&line, &format!("error: argument `--param {arg}`: "));
    }
}

#[test]
fn param_with_empty_path_segment_is_rejected() {
    let sb = Sandbox::new("param_empty_segment");
    let path = sb.write("small.toml", BASE);
    let o = faultline(
        &sb,
        ["sweep".to_string(), s(&path), "--param".into(), "simulation..seed=1,2".into(), "--out".into(), s(&sb.out())],
    );
    let line = assert_input_error(&o, &sb.out(), &["empty segment"]);
    assert_starts_with(&line, "error: argument `--param simulation..seed=1,2`: ");
}

#[test]
fn param_to_unknown_dependency_is_rejected() {
    let sb = Sandbox::new("param_unknown_dependency");
    let path = sb.write("small.toml", BASE);
    let o = faultline(
        &sb,
        [
            "sweep".to_string(),
            s(&path),
            "--param".into(),
            "dependency.nope.servers=1,2".into(),
            "--out".into(),
            s(&sb.out()),
        ],
    );
    let line = assert_input_error(&o, &sb.out(), &["no element named or numbered `nope`"]);
    assert_starts_with(&line, "error: argument `--param dependency.nope.servers=1,2`: ");
}

#[test]
fn sweep_without_param_is_rejected() {
    let sb = Sandbox::new("empty_grid");
    let path = sb.write("small.toml", BASE);
    let o = faultline(&sb, ["sweep".to_string(), s(&path), "--out".into(), s(&sb.out())]);
    assert_input_error(&o, &sb.out(), &["sweep needs at least one --param"]);
}

#[test]
fn grid_past_the_limit_is_rejected() {
    let sb = Sandbox::new("grid_limit");
    let path = sb.write("small.toml", BASE);
    let ten = "1,2,3,4,5,6,7,8,9,10";
    let mut args = vec!["sweep".to_string(), s(&path), "--out".into(), s(&sb.out())];
    for p in [
        "simulation.seed",
        "dependency.db.servers",
        "dependency.backup.servers",
        "dependency.db.queue_capacity",
        "dependency.backup.queue_capacity",
    ] {
        args.push("--param".into());
        args.push(format!("{p}={ten}"));
    }
    let o = faultline(&sb, &args);
    let line = assert_input_error(&o, &sb.out(), &["the grid has 100000 points", "the limit is 10000"]);
    assert_starts_with(&line, "error: ");
}

#[test]
fn grid_at_a_huge_product_does_not_overflow() {
    // 20 params of 10 values: 10^20 points, more than usize::MAX on 64 bits.
    let sb = Sandbox::new("grid_overflow");
    let path = sb.write("small.toml", BASE);
    let mut args = vec!["sweep".to_string(), s(&path), "--out".into(), s(&sb.out())];
    for i in 0..20 {
        args.push("--param".into());
        args.push(format!("policy.careful.steps.step{i}.max_attempts=1,2,3,4,5,6,7,8,9,10"));
    }
    let o = faultline(&sb, &args);
    assert_input_error(&o, &sb.out(), &["the limit is 10000"]);
}

#[test]

fn grid_past_the_limit_names_the_param_argument() {
    // The grid size is checked before any point is compiled, so values need not be valid.
    let sb = Sandbox::new("grid_limit_named");
    let path = sb.write("small.toml", BASE);
    let mut args = vec!["sweep".to_string(), s(&path), "--out".into(), s(&sb.out())];
    for p in [
        "simulation.seed",
        "dependency.db.servers",
        "dependency.backup.servers",
        "simulation.warmup_s",
        "simulation.drain_limit_s",
    ] {
        args.push("--param".into());
        args.push(format!("{p}=1,2,3,4,5,6,7,8,9,10"));
    }
    let o = faultline(&sb, &args);
    assert_input_error(&o, &sb.out(), &["--param", "the limit is 10000"]);
}

#[test]
fn replications_past_the_limit_in_the_file_are_rejected() {
    let text = edit(BASE, "replications = 2", "replications = 10001");
    let (_sb, path, line) = run_bad("replications_file", &text, &["must be between 1 and 10000, got 10001"]);
    assert_starts_with(&line, &located(&path, &text, "replications = 10001", "simulation.replications"));
}

#[test]
fn replications_past_the_limit_on_the_command_line_are_rejected() {
    let sb = Sandbox::new("replications_arg");
    let path = sb.write("small.toml", BASE);
    let o = run(&sb, &path, &sb.out(), &["--replications", "10001"]);
    let line =
        assert_input_error(&o, &sb.out(), &["simulation.replications", "must be between 1 and 10000, got 10001"]);
    assert_starts_with(&line, "error: ");
}

#[test]

fn replications_past_the_limit_on_the_command_line_name_the_argument() {
    let sb = Sandbox::new("replications_arg_named");
    let path = sb.write("small.toml", BASE);
    let o = run(&sb, &path, &sb.out(), &["--replications", "10001"]);
    let line = assert_input_error(&o, &sb.out(), &["must be between 1 and 10000, got 10001"]);
    assert!(line.contains("argument `"), "the error should name the argument, not the file: {line}");
    assert!(
        !line.contains(&s(&path)),
        "the error points at the file although the value came from the command line: {line}"
    );
}

#[test]
fn zero_jobs_is_rejected() {
    let sb = Sandbox::new("zero_jobs");
    let path = sb.write("small.toml", BASE);
    let o = faultline(&sb, ["run".to_string(), s(&path), "--out".into(), s(&sb.out()), "--jobs".into(), "0".into()]);
    assert_input_error(&o, &sb.out(), &["argument `--jobs 0`"]);
    // A negative count gets the rule it breaks, not clap's advice to write `-- -1`.
    let o = faultline(&sb, ["run".to_string(), s(&path), "--out".into(), s(&sb.out()), "--jobs".into(), "-1".into()]);
    let line = assert_input_error(&o, &sb.out(), &["argument `--jobs -1`", "1 or more"]);
    assert!(!line.contains("-- -1"), "{line}");
}

#[test]
fn fallback_on_a_write_step_is_rejected() {
    let text = edit(BASE, "  effect = \"write\"\n", "  effect = \"write\"\n  fallback = \"backup\"\n");
    let (_sb, path, line) = run_bad("write_fallback", &text, &["a write cannot fall back"]);
    // The second `fallback = "backup"` is the one on the write step.
    let (l, c) = at_nth(&text, "fallback = \"backup\"", 1);
    assert_starts_with(&line, &format!("error: {}:{l}:{c}: workflow[0].step[1].fallback: ", s(&path)));
}

#[test]
fn policy_fallback_on_a_write_step_is_rejected() {
    let text = format!("{BASE}\n[policy.careful.steps]\nsave = {{ fallback = \"backup\" }}\n");
    let (_sb, path, line) = run_bad("policy_write_fallback", &text, &["a write cannot fall back"]);
    assert_starts_with(&line, &located(&path, &text, "fallback = \"backup\" }", "policy.careful.steps.save.fallback"));
}

#[test]
fn unknown_fault_kind_is_rejected() {
    let text = fault("meteor", "");
    let (_sb, path, line) = run_bad("fault_kind", &text, &["unknown fault kind `meteor`", "latency"]);
    assert_starts_with(&line, &located(&path, &text, "kind = \"meteor\"", "fault[0].kind"));
}

#[test]
fn fault_on_unknown_target_is_rejected() {
    let text = edit(&fault("down", ""), "target = \"db\"", "target = \"dbx\"");
    let (_sb, path, line) = run_bad("fault_target", &text, &["unknown dependency `dbx`"]);
    assert_starts_with(&line, &located(&path, &text, "target = \"dbx\"", "fault[0].target"));
}

#[test]
fn unknown_slo_metric_is_rejected() {
    let text = format!("{BASE}\n[slo]\nnot_a_metric = [\"< 1\"]\n");
    let (_sb, path, line) = run_bad("slo_metric", &text, &["unknown metric `not_a_metric`"]);
    assert_starts_with(&line, &located(&path, &text, "not_a_metric =", "slo.not_a_metric"));
}

#[test]
fn unknown_slo_regression_metric_is_rejected() {
    let text = format!("{BASE}\n[slo.regression]\ncost_per_sucess = [\"<= 10%\"]\n");
    let (_sb, path, line) = run_bad("slo_regression_metric", &text, &["unknown metric `cost_per_sucess`"]);
    assert_starts_with(&line, &located(&path, &text, "cost_per_sucess =", "slo.regression.cost_per_sucess"));
}

#[test]
fn malformed_slo_expression_is_rejected() {
    let text = format!("{BASE}\n[slo]\ndeadline_exceeded_ratio = [\"< 0.1\", \"about 3\"]\n");
    let (_sb, path, line) = run_bad("slo_expression", &text, &["cannot read `about 3`"]);
    assert_starts_with(&line, &located(&path, &text, "\"about 3\"", "slo.deadline_exceeded_ratio[1]"));
}

#[test]
fn malformed_slo_expression_is_rejected_by_gate_and_validate() {
    let sb = Sandbox::new("slo_expression_gate");
    let text = format!("{BASE}\n[slo]\ndeadline_exceeded_ratio = [\"<\"]\n");
    let path = sb.write("bad.toml", &text);
    let prefix = located(&path, &text, "\"<\"", "slo.deadline_exceeded_ratio[0]");
    let o = faultline(&sb, ["gate".to_string(), s(&path), "--candidate".into(), "careful".into()]);
    assert_starts_with(&assert_input_error(&o, &sb.out(), &["cannot read `<`"]), &prefix);
    let o = faultline(&sb, ["validate".to_string(), s(&path)]);
    assert_starts_with(&assert_input_error(&o, &sb.out(), &["cannot read `<`"]), &prefix);
}

#[test]
fn relative_threshold_outside_regression_is_rejected() {
    let text = format!("{BASE}\n[slo]\ncost_per_success = [\"<= 10%\"]\n");
    let (_sb, path, line) = run_bad("slo_relative", &text, &["applies only under [slo.regression]"]);
    assert_starts_with(&line, &located(&path, &text, "\"<= 10%\"", "slo.cost_per_success[0]"));
}

#[test]
fn file_that_is_not_toml_or_json_is_rejected() {
    let sb = Sandbox::new("bad_extension");
    let path = sb.write("small.yaml", BASE);
    let o = run(&sb, &path, &sb.out(), &[]);
    let line = assert_input_error(&o, &sb.out(), &["must end in .toml or .json"]);
    assert_starts_with(&line, &format!("error: {}: ", s(&path)));
}

#[test]
fn missing_file_is_rejected() {
    let sb = Sandbox::new("missing_file");
    let path = sb.path("absent.toml");
    let o = run(&sb, &path, &sb.out(), &[]);
    let line = assert_input_error(&o, &sb.out(), &["cannot read the file"]);
    assert_starts_with(&line, &format!("error: {}: ", s(&path)));
    let o = faultline(&sb, ["validate".to_string(), s(&path)]);
    assert_input_error(&o, &sb.out(), &["cannot read the file"]);
}

#[test]
fn json_syntax_error_is_rejected_with_its_position() {
    let sb = Sandbox::new("json_syntax");
    let text = "{\n  \"simulation\": {\n    \"duration_s\": 50,\n  }\n}\n";
    let path = sb.write("bad.json", text);
    let o = run(&sb, &path, &sb.out(), &[]);
    let line = assert_input_error(&o, &sb.out(), &["trailing comma"]);
    assert_starts_with(&line, &format!("error: {}:4:", s(&path)));
    // The message should not repeat the position serde_json appends.
    assert!(!line.contains(" at line "), "{line}");
}

#[test]
fn json_wrong_type_names_the_field() {
    let sb = Sandbox::new("json_wrong_type");
    let text = edit(BASE_JSON, "\"servers\": 4", "\"servers\": \"many\"");
    let path = sb.write("bad.json", &text);
    let o = run(&sb, &path, &sb.out(), &[]);
    let line = assert_input_error(&o, &sb.out(), &["invalid type"]);
    let (l, _) = at(&text, "\"servers\": \"many\"");
    assert_starts_with(&line, &format!("error: {}:{l}:", s(&path)));
    assert!(line.contains(": dependency[0].servers: "), "{line}");
}

#[test]

fn error_on_a_defaulted_field_still_has_a_line() {
    // `dist` is not written; the error should point at the `service_time` that lacks it.
    let text = edit(BASE, "service_time = { p50_ms = 10, p95_ms = 30 }", "service_time = { }");
    let (_sb, path, line) = run_bad("defaulted_field", &text, &["give p50_ms and p95_ms"]);
    let (l, _) = at(&text, "service_time = { }");
    assert_starts_with(&line, &format!("error: {}:{l}:", s(&path)));
    assert!(line.contains(": dependency[1].service_time.dist: "), "{line}");
}

#[test]

fn json_error_in_a_later_array_element_points_at_that_element() {
    let sb = Sandbox::new("json_second_element");
    let text = edit(BASE_JSON, "\"p50_ms\": 10, \"p95_ms\": 30", "\"p50_ms\": 10, \"p95_ms\": 5");
    let path = sb.write("bad.json", &text);
    let o = run(&sb, &path, &sb.out(), &[]);
    let line = assert_input_error(&o, &sb.out(), &["p95_ms (5) must be at least p50_ms (10)"]);
    assert_starts_with(&line, &located(&path, &text, "\"p95_ms\": 5", "dependency[1].service_time.p95_ms"));
}

#[test]

fn seed_above_i64_max_is_accepted() {
    let sb = Sandbox::new("seed_u64");
    let path = sb.write("small.toml", BASE);
    let o = run(&sb, &path, &sb.out(), &["--seed", "18446744073709551615", "--policy", "careful"]);
    assert_success(&o);
    let summary = read_json(&sb.out().join("careful").join("summary.json"));
    assert_eq!(summary["seed"].as_u64(), Some(u64::MAX));
}

#[test]
fn json_semantic_error_is_located() {
    let sb = Sandbox::new("json_semantic");
    let text = edit(BASE_JSON, "\"p95_ms\": 60", "\"p95_ms\": 10");
    let path = sb.write("bad.json", &text);
    let o = run(&sb, &path, &sb.out(), &[]);
    let line = assert_input_error(&o, &sb.out(), &["must be at least p50_ms"]);
    assert_starts_with(&line, &located(&path, &text, "\"p95_ms\": 10", "dependency[0].service_time.p95_ms"));
}

#[test]
fn toml_syntax_error_is_rejected_with_its_position() {
    let text = edit(BASE, "[simulation]\n", "[simulation\n");
    let (_sb, path, line) = run_bad("toml_syntax", &text, &[]);
    let (l, _) = at(&text, "[simulation\n");
    assert_starts_with(&line, &format!("error: {}:{l}:", s(&path)));
}

#[test]
fn gate_without_slo_is_rejected() {
    let sb = Sandbox::new("gate_no_slo");
    let path = sb.write("small.toml", BASE);
    let o = faultline(&sb, ["gate".to_string(), s(&path), "--candidate".into(), "careful".into()]);
    assert_input_error(&o, &sb.out(), &["no [slo] checks"]);
}

// ---------------------------------------------------------------------------------------------
// validate and gate
// ---------------------------------------------------------------------------------------------

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn shipped_scenarios_validate() {
    let mut found = 0;
    for entry in std::fs::read_dir(repo().join("scenarios")).expect("list scenarios/") {
        let path = entry.expect("read scenarios/").path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        found += 1;
        let o = faultline_in(repo(), ["validate".as_ref(), path.as_os_str()]);
        assert_success(&o);
        assert!(stdout(&o).contains(": ok ("), "{}: {}", path.display(), stdout(&o));
    }
    assert_eq!(found, 12, "expected the twelve shipped scenarios");
    let o = faultline_in(repo(), ["validate", "scenarios/meeting-analysis-incident.toml"]);
    assert_success(&o);
    let out = stdout(&o);
    assert!(
        out.contains(
            "8 dependencies, 1 workflows, 4 faults, policies: naive, resilient, 4 SLO checks, 2 regression checks"
        ),
        "{out}"
    );
}

#[test]
fn gate_passes_with_exit_0() {
    let sb = Sandbox::new("gate_pass");
    let path = sb.write(
        "small.toml",
        &format!("{BASE}\n[slo]\nlogical_run_total = [\"> 0\"]\nduplicate_effect_total = [\"== 0\"]\n"),
    );
    let o = faultline(
        &sb,
        ["gate".to_string(), s(&path), "--candidate".into(), "careful".into(), "--jobs".into(), "1".into()],
    );
    assert_success(&o);
    let out = stdout(&o);
    assert!(out.contains("PASS"), "{out}");
    assert!(!out.contains("FAIL"), "{out}");
    assert!(out.trim_end().ends_with("2 passed, 0 failed: PASS"), "{out}");
    assert!(!sb.out().exists() && !sb.path("results").exists(), "gate writes no files");
}

#[test]
fn gate_fails_with_exit_99() {
    let sb = Sandbox::new("gate_fail");
    let path = sb.write(
        "small.toml",
        &format!("{BASE}\n[slo]\nlogical_run_total = [\"< 1\"]\nduplicate_effect_total = [\"== 0\"]\n"),
    );
    let o = faultline(
        &sb,
        ["gate".to_string(), s(&path), "--candidate".into(), "careful".into(), "--jobs".into(), "1".into()],
    );
    let err = stderr(&o);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(o.status.code(), Some(99), "stderr:\n{err}\nstdout:\n{}", stdout(&o));
    let out = stdout(&o);
    assert!(out.contains("FAIL"), "{out}");
    assert!(out.trim_end().ends_with("1 passed, 1 failed: FAIL"), "{out}");
}

#[test]
fn gate_regression_against_baseline() {
    let sb = Sandbox::new("gate_regression");
    // Same arrivals under both policies: the paired difference of runs is exactly 0. The
    // careful policy retries and the hasty one does not, so careful makes more attempts.
    let slo = "\n[slo.regression]\nlogical_run_total = [\"== 0\"]\ndependency_attempt_total = [\"<= 0\"]\n";
    let path = sb.write("small.toml", &format!("{BASE}{slo}"));
    // 30 % transport errors make the careful policy's retries plain to see on 4 replications.
    let flaky = ["--set", "dependency.db.errors.transient_transport=0.3", "--replications", "4", "--jobs", "1"];
    let o = faultline(
        &sb,
        [&["gate", &s(&path), "--candidate", "hasty", "--baseline", "careful"][..], &flaky[..]].concat(),
    );
    assert_success(&o);
    assert!(stdout(&o).contains("2 passed, 0 failed: PASS"), "{}", stdout(&o));
    let o = faultline(
        &sb,
        [&["gate", &s(&path), "--candidate", "careful", "--baseline", "hasty"][..], &flaky[..]].concat(),
    );
    assert_eq!(o.status.code(), Some(99), "{}", stdout(&o));
    assert!(stdout(&o).contains("1 passed, 1 failed: FAIL"), "{}", stdout(&o));
    // A baseline equal to the candidate would pass every regression check trivially.
    let o = faultline(&sb, ["gate", &s(&path), "--candidate", "careful", "--baseline", "careful"]);
    assert_input_error(&o, &sb.out(), &["argument `--baseline careful`", "must differ"]);
    // Without a baseline, regression limits are an error that says how to give one ...
    let o = faultline(&sb, ["gate", &s(&path), "--candidate", "careful", "--jobs", "1"]);
    let text = format!("{BASE}{slo}");
    let line = assert_input_error(
        &o,
        &sb.out(),
        &["[slo.regression] has 2 check(s)", "--baseline POLICY", "--baseline-scenario FILE", "--thresholds-only"],
    );
    assert_starts_with(&line, &located(&path, &text, "regression]", "slo.regression"));
    // ... unless the gate is asked for thresholds only: then they are listed as skipped.
    let o = faultline(&sb, ["gate", &s(&path), "--candidate", "careful", "--thresholds-only", "--jobs", "1"]);
    assert_input_error(&o, &sb.out(), &["--thresholds-only", "no [slo] thresholds"]);
    let both = sb.write("both.toml", &format!("{BASE}\n[slo]\nlogical_run_total = [\"> 0\"]\n{slo}"));
    let o = faultline(&sb, ["gate", &s(&both), "--candidate", "careful", "--thresholds-only", "--jobs", "1"]);
    assert_success(&o);
    let out = stdout(&o);
    assert_eq!(out.matches("SKIP").count(), 2, "{out}");
    assert!(out.trim_end().ends_with("1 passed, 0 failed, 2 skipped: PASS"), "{out}");
    // --thresholds-only and a baseline contradict each other.
    let o = faultline(&sb, ["gate", &s(&both), "--candidate", "careful", "--thresholds-only", "--baseline", "hasty"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
    // One replication has no interval to judge on.
    let o = faultline(&sb, ["gate", &s(&path), "--candidate", "careful", "--replications", "1"]);
    assert_input_error(&o, &sb.out(), &["at least 2 replications"]);
}

#[test]
fn gate_on_the_incident_resilient_passes() {
    let o = faultline_in(
        repo(),
        [
            "gate",
            "scenarios/meeting-analysis-incident.toml",
            "--candidate",
            "resilient",
            "--baseline",
            "naive",
            "--replications",
            "3",
        ],
    );
    assert_success(&o);
    let out = stdout(&o);
    assert!(out.contains("baseline `naive`"), "{out}");
    assert!(out.trim_end().ends_with("failed: PASS"), "{out}");
    assert!(!out.contains("FAIL"), "{out}");
}

#[test]
fn gate_on_the_incident_naive_fails() {
    let o = faultline_in(
        repo(),
        [
            "gate",
            "scenarios/meeting-analysis-incident.toml",
            "--candidate",
            "naive",
            "--thresholds-only",
            "--replications",
            "3",
        ],
    );
    let err = stderr(&o);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(o.status.code(), Some(99), "stderr:\n{err}\nstdout:\n{}", stdout(&o));
    let out = stdout(&o);
    assert!(out.contains("FAIL"), "{out}");
    assert!(out.trim_end().ends_with("0 passed, 4 failed, 2 skipped: FAIL"), "{out}");
}

// ---------------------------------------------------------------------------------------------
// run: output files, JSON on stdout, overrides, seeds, determinism, JSON scenarios
// ---------------------------------------------------------------------------------------------

fn check_summary(summary: &Value, policy: &str, seed: u64) {
    for key in ["scenario", "policy", "seed", "replications", "version", "metrics", "ci95"] {
        assert!(summary.get(key).is_some(), "summary has no `{key}`: {summary}");
    }
    assert_eq!(summary["scenario"], "small");
    assert_eq!(summary["policy"], policy);
    assert_eq!(summary["seed"].as_u64(), Some(seed));
    assert_eq!(summary["replications"].as_u64(), Some(2));
    assert_eq!(summary["version"], env!("CARGO_PKG_VERSION"));
    assert!(metric(summary, "logical_run_total") > 0.0, "{summary}");
    let ci = &summary["ci95"]["logical_run_total"];
    assert_eq!(ci.as_array().map(|a| a.len()), Some(2), "{ci}");
    // Every metric has an interval.
    let metrics = summary["metrics"].as_object().unwrap();
    let ci95 = summary["ci95"].as_object().unwrap();
    assert_eq!(metrics.keys().collect::<Vec<_>>(), ci95.keys().collect::<Vec<_>>());
}

#[test]
fn run_writes_summary_and_timeseries_for_each_policy() {
    let sb = Sandbox::new("run_outputs");
    let path = sb.write("small.toml", BASE);
    let o = run(&sb, &path, &sb.out(), &[]);
    assert_success(&o);
    let text = stdout(&o);
    // The headline: completion first (docs/metrics.md 6.5), then the rest only on request.
    assert!(text.contains("\nauto_completion_ratio "), "{text}");
    assert!(!text.contains("logical_run_total"), "{text}");
    assert!(text.contains("careful") && text.contains("hasty"), "{text}");
    assert!(text.contains("wrote "), "{text}");
    for policy in POLICIES {
        let dir = sb.out().join(policy);
        let summary = read_json(&dir.join("summary.json"));
        check_summary(&summary, policy, 3);
        assert_eq!(summary["overrides"], Value::Array(vec![]));
        let csv = std::fs::read_to_string(dir.join("timeseries.csv")).expect("timeseries.csv");
        let mut lines = csv.lines();
        let header = lines.next().expect("a header");
        assert!(header.starts_with("window_start_s,window_end_s"), "{header}");
        assert!(header.contains("dependency.db.attempt_total"), "{header}");
        let width = header.split(',').count();
        let rows: Vec<&str> = lines.collect();
        // 50 s in windows of 10 s (runs may drain a little past the end).
        assert!(rows.len() >= 5, "expected at least 5 windows, got {}", rows.len());
        assert!(rows[0].starts_with("0,10,"), "{}", rows[0]);
        assert!(rows.iter().all(|r| r.split(',').count() == width), "ragged CSV:\n{csv}");
        // No temporary files are left behind.
        for entry in std::fs::read_dir(&dir).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            assert!(
                ["summary.json", "timeseries.csv", "replications.csv"].contains(&name.as_str()),
                "unexpected file {name}"
            );
        }
    }
    assert!(!sb.path("results").exists(), "--out was given: nothing under results/");
}

#[test]
fn run_one_policy_writes_only_that_policy() {
    let sb = Sandbox::new("run_one_policy");
    let path = sb.write("small.toml", BASE);
    let o = run(&sb, &path, &sb.out(), &["--policy", "hasty"]);
    assert_success(&o);
    assert!(sb.out().join("hasty").join("summary.json").exists());
    assert!(!sb.out().join("careful").exists());
}

#[test]
fn run_format_json_prints_valid_json() {
    let sb = Sandbox::new("run_json");
    let path = sb.write("small.toml", BASE);
    let o = run(&sb, &path, &sb.out(), &["--format", "json"]);
    assert_success(&o);
    let text = stdout(&o);
    let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("stdout is not JSON: {e}\n{text}"));
    let obj = doc.as_object().expect("an object keyed by policy");
    assert_eq!(obj.keys().map(String::as_str).collect::<Vec<_>>(), POLICIES.to_vec());
    for policy in POLICIES {
        check_summary(&doc[policy], policy, 3);
        // Same content as the file written.
        let file = read_json(&sb.out().join(policy).join("summary.json"));
        assert_eq!(doc[policy], file, "stdout and summary.json differ for {policy}");
    }
}

fn logical_runs(sb: &Sandbox, out: &str, extra: &[&str]) -> (f64, Value) {
    let path = sb.path("small.toml");
    let o = run(sb, &path, &sb.path(out), extra);
    assert_success(&o);
    let summary = read_json(&sb.path(out).join("careful").join("summary.json"));
    (metric(&summary, "logical_run_total"), summary)
}

#[test]
fn set_changes_the_result() {
    let sb = Sandbox::new("set_changes");
    sb.write("small.toml", BASE);
    let (base, _) = logical_runs(&sb, "base", &[]);
    let (faster, summary) = logical_runs(&sb, "faster", &["--set", "workflow.wf.arrivals.rate_per_s=20"]);
    assert_ne!(base, faster);
    // 4x the rate: clearly more runs (about 250 vs 1000).
    assert!(faster > 2.5 * base, "rate 5 -> 20 gave {base} -> {faster} runs");
    assert_eq!(summary["overrides"], serde_json::json!(["workflow.wf.arrivals.rate_per_s=20"]));
    // Addressing by position works too and gives the same result.
    let (by_index, _) = logical_runs(&sb, "by_index", &["--set", "workflow.0.arrivals.rate_per_s=20"]);
    assert_eq!(faster, by_index);
}

#[test]
fn seed_changes_the_result() {
    let sb = Sandbox::new("seed_changes");
    sb.write("small.toml", BASE);
    let (a, sa) = logical_runs(&sb, "a", &[]);
    let (b, sb_) = logical_runs(&sb, "b", &["--seed", "4"]);
    assert_eq!(sb_["seed"].as_u64(), Some(4));
    assert_eq!(sb_["overrides"], serde_json::json!(["--seed 4"]));
    assert_ne!(sa["metrics"], sb_["metrics"], "a different seed gave identical metrics");
    assert_ne!(a, b, "a different seed gave the same logical_run_total");
    // --seed equals --set simulation.seed.
    let (c, sc) = logical_runs(&sb, "c", &["--set", "simulation.seed=4"]);
    assert_eq!(b, c);
    assert_eq!(sb_["metrics"], sc["metrics"]);
}

#[test]
fn same_seed_gives_byte_identical_outputs() {
    let sb = Sandbox::new("same_seed");
    let path = sb.write("small.toml", BASE);
    assert_success(&run(&sb, &path, &sb.path("one"), &["--seed", "9"]));
    assert_success(&run(&sb, &path, &sb.path("two"), &["--seed", "9"]));
    for policy in POLICIES {
        for file in ["summary.json", "timeseries.csv"] {
            let one = std::fs::read(sb.path("one").join(policy).join(file)).unwrap();
            let two = std::fs::read(sb.path("two").join(policy).join(file)).unwrap();
            assert!(one == two, "{policy}/{file} differs between two runs with the same seed");
        }
    }
}

#[test]
fn outputs_do_not_depend_on_the_thread_count() {
    let sb = Sandbox::new("thread_count");
    let path = sb.write("small.toml", BASE);
    assert_success(&run(&sb, &path, &sb.path("one"), &[]));
    let o =
        faultline(&sb, ["run".to_string(), s(&path), "--out".into(), s(&sb.path("two")), "--jobs".into(), "2".into()]);
    assert_success(&o);
    for policy in POLICIES {
        for file in ["summary.json", "timeseries.csv"] {
            let one = std::fs::read(sb.path("one").join(policy).join(file)).unwrap();
            let two = std::fs::read(sb.path("two").join(policy).join(file)).unwrap();
            assert!(one == two, "{policy}/{file} differs between --jobs 1 and --jobs 2");
        }
    }
}

#[test]
fn json_scenario_matches_toml_scenario() {
    let sb = Sandbox::new("json_equivalent");
    let toml = sb.write("small.toml", BASE);
    let json = sb.write("small.json", BASE_JSON);
    assert_success(&run(&sb, &toml, &sb.path("toml"), &[]));
    assert_success(&run(&sb, &json, &sb.path("json"), &[]));
    for policy in POLICIES {
        let t = read_json(&sb.path("toml").join(policy).join("summary.json"));
        let j = read_json(&sb.path("json").join(policy).join("summary.json"));
        check_summary(&j, policy, 3);
        assert_eq!(t["metrics"], j["metrics"], "metrics differ for {policy}");
        assert_eq!(t["ci95"], j["ci95"], "intervals differ for {policy}");
        // Same stem, same everything: the files are byte-identical.
        for file in ["summary.json", "timeseries.csv"] {
            let a = std::fs::read(sb.path("toml").join(policy).join(file)).unwrap();
            let b = std::fs::read(sb.path("json").join(policy).join(file)).unwrap();
            assert!(a == b, "{policy}/{file} differs between the TOML and JSON scenarios");
        }
    }
}

#[test]
fn json_scenario_with_overrides_matches_toml() {
    let sb = Sandbox::new("json_overrides");
    let toml = sb.write("small.toml", BASE);
    let json = sb.write("small.json", BASE_JSON);
    let extra = ["--seed", "5", "--set", "dependency.db.servers=2", "--policy", "careful"];
    assert_success(&run(&sb, &toml, &sb.path("toml"), &extra));
    assert_success(&run(&sb, &json, &sb.path("json"), &extra));
    let a = std::fs::read(sb.path("toml").join("careful").join("summary.json")).unwrap();
    let b = std::fs::read(sb.path("json").join("careful").join("summary.json")).unwrap();
    assert!(a == b, "summary.json differs between TOML and JSON with the same overrides");
}

#[test]
fn sweep_writes_one_row_per_point_and_policy() {
    let sb = Sandbox::new("sweep_ok");
    let path = sb.write("small.toml", BASE);
    let o = faultline(
        &sb,
        ["sweep", &s(&path), "--param", "workflow.wf.arrivals.rate_per_s=2,4", "--out", &s(&sb.out()), "--jobs", "1"],
    );
    assert_success(&o);
    assert!(stdout(&o).contains("2 grid point(s) x 2 policies x 2 replication(s) = 8 simulations"), "{}", stdout(&o));
    let csv = std::fs::read_to_string(sb.out().join("sweep.csv")).expect("sweep.csv");
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("workflow.wf.arrivals.rate_per_s,policy,replications,"), "{}", lines[0]);
    assert_eq!(lines.len(), 1 + 4, "{csv}");
    assert!(lines[1].starts_with("2,careful,2,") && lines[2].starts_with("2,hasty,2,"), "{csv}");
    assert!(lines[3].starts_with("4,careful,2,") && lines[4].starts_with("4,hasty,2,"), "{csv}");
    let json = read_json(&sb.out().join("sweep.json"));
    let rows = json["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0]["params"]["workflow.wf.arrivals.rate_per_s"], serde_json::json!(2));
    assert_eq!(rows[3]["policy"], "hasty");
    // The parameter takes effect: twice the rate, about twice the runs (200 vs 400 expected).
    let runs = |row: &serde_json::Value| row["metrics"]["logical_run_total"].as_f64().expect("runs");
    let (slow, fast) = (runs(&rows[0]), runs(&rows[2]));
    assert!(fast > 1.5 * slow && fast < 2.5 * slow, "rate 2 -> 4 gave {slow} -> {fast} runs");
    // The CSV agrees with the JSON.
    let header: Vec<&str> = lines[0].split(',').collect();
    let column = header.iter().position(|h| *h == "logical_run_total").expect("column");
    let cell: f64 = lines[3].split(',').nth(column).expect("cell").parse().expect("number");
    assert_eq!(cell, fast);
}

#[test]
fn a_path_swept_twice_and_a_policy_named_twice_are_rejected() {
    let sb = Sandbox::new("twice");
    let path = sb.write("small.toml", BASE);
    let args =
        ["sweep", &s(&path), "--param", "simulation.seed=1,2", "--param", "simulation.seed=3", "--out", &s(&sb.out())];
    let o = faultline(&sb, args.iter().map(|a| a.to_string()));
    assert_input_error(&o, &sb.out(), &["argument `--param simulation.seed=3`", "swept twice"]);
    let o = run(&sb, &path, &sb.out(), &["--policy", "careful", "--policy", "careful"]);
    assert_input_error(&o, &sb.out(), &["argument `--policy careful`", "named twice"]);
}

#[test]
fn a_set_to_a_misspelt_policy_is_rejected() {
    let sb = Sandbox::new("policy_typo");
    let path = sb.write("small.toml", BASE);
    let o = run(&sb, &path, &sb.out(), &["--set", "policy.carefull.timeout_ms=5"]);
    assert_input_error(
        &o,
        &sb.out(),
        &["argument `--set policy.carefull.timeout_ms=5`", "unknown policy `carefull`; did you mean `careful`?"],
    );
    let o = run(&sb, &path, &sb.out(), &["--set", "policy.new={ timeout_ms = 5 }"]);
    assert_input_error(&o, &sb.out(), &["unknown policy `new`"]);
}

#[test]
fn an_slo_from_the_command_line_is_checked_and_named() {
    let sb = Sandbox::new("slo_set");
    let path = sb.write("small.toml", &format!("{BASE}\n[slo]\nlogical_run_total = [\"> 0\"]\n"));
    let o = faultline(
        &sb,
        [
            "gate".to_string(),
            s(&path),
            "--candidate".into(),
            "careful".into(),
            "--set".into(),
            "slo.logical_run_total=[\"< 0\"]".into(),
        ],
    );
    assert_eq!(o.status.code(), Some(99), "the overridden SLO is the one judged");
    let o = faultline(
        &sb,
        [
            "gate".to_string(),
            s(&path),
            "--candidate".into(),
            "careful".into(),
            "--set".into(),
            "slo.no_such_metric=[\"< 0\"]".into(),
        ],
    );
    assert_input_error(&o, &sb.out(), &["argument `--set slo.no_such_metric=[\"< 0\"]`", "unknown metric"]);
}

// ---------------------------------------------------------------------------------------------
// gate across files (--baseline-scenario), --format json, --junit
// ---------------------------------------------------------------------------------------------

/// Regression limits that pass only if candidate and baseline are paired replication by
/// replication: the same arrivals give a difference of exactly 0 in runs.
const PAIRED_SLO: &str = "\n[slo]\nlogical_run_total = [\"> 0\"]\n\n[slo.regression]\nlogical_run_total = [\"== 0\"]\ndependency_attempt_total = [\"<= 0\"]\n";

/// 30 % transport errors make retries plain to see on 4 replications.
const FLAKY: [&str; 6] =
    ["--set", "dependency.db.errors.transient_transport=0.3", "--replications", "4", "--jobs", "1"];

fn gate_json(sb: &Sandbox, args: &[&str]) -> (Output, Value) {
    let o = faultline(sb, [args, &["--format", "json"][..], &FLAKY[..]].concat());
    let err = stderr(&o);
    assert!(!err.contains("panicked"), "{err}");
    let doc: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("gate --format json is not JSON: {e}\n{}\n{err}", stdout(&o)));
    (o, doc)
}

/// What a JUnit report says: per test case, its name and its failure message (if it failed)
/// or `skipped`; panics unless the document is well-formed XML with one <testsuite>.
fn junit_cases(xml: &str) -> Vec<(String, Option<String>)> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(xml);
    reader.config_mut().check_end_names = true;
    let attr = |e: &quick_xml::events::BytesStart, key: &str| -> Option<String> {
        e.attributes()
            .map(|a| a.expect("a well-formed attribute"))
            .find(|a| a.key.as_ref() == key)
            .map(|a| a.normalized_value(quick_xml::XmlVersion::Implicit1_0).expect("known entities").into_owned())
    };
    let (mut cases, mut suites) = (Vec::new(), 0);
    loop {
        match reader.read_event().unwrap_or_else(|e| panic!("the JUnit report is not well-formed XML: {e}\n{xml}")) {
            Event::Eof => break,
            Event::Start(e) | Event::Empty(e) => match e.name().as_ref() {
                "testsuite" => suites += 1,
                "testcase" => cases.push((attr(&e, "name").expect("a test case has a name"), None)),
                "failure" => {
                    let message = attr(&e, "message").expect("a failure has a message");
                    cases.last_mut().expect("a failure inside a test case").1 = Some(message);
                }
                "skipped" => cases.last_mut().expect("inside a test case").1 = Some("skipped".into()),
                _ => {}
            },
            _ => {}
        }
    }
    assert_eq!(suites, 1, "one test suite:\n{xml}");
    cases
}

#[test]
fn gate_across_files_pairs_replications_on_the_candidates_seeds() {
    let sb = Sandbox::new("gate_files_paired");
    let candidate = sb.write("small.toml", &format!("{BASE}{PAIRED_SLO}"));
    // main's version: the same world and policies, but another seed and replication count,
    // which the candidate's replace.
    let base_text =
        edit(&edit(&format!("{BASE}{PAIRED_SLO}"), "seed = 3", "seed = 99"), "replications = 2", "replications = 7");
    let base = sb.write("base.toml", &base_text);
    let (o, doc) =
        gate_json(&sb, &["gate", &s(&candidate), "--candidate", "careful", "--baseline-scenario", &s(&base)]);
    assert_success(&o);
    assert_eq!(doc["baseline"]["scenario"], s(&base));
    assert_eq!(doc["baseline"]["policy"], "careful", "the baseline policy defaults to the candidate's name");
    assert_eq!(doc["seed"], 3);
    assert_eq!(doc["replications"], 4);
    // Same policy, same world, same seeds: every paired difference is exactly 0.
    for check in doc["checks"].as_array().unwrap().iter().filter(|c| c["kind"] == "regression") {
        assert_eq!(
            (check["mean"].as_f64(), check["ci95_low"].as_f64(), check["ci95_high"].as_f64()),
            (Some(0.0), Some(0.0), Some(0.0)),
            "{check}"
        );
    }
    // The text says whose seed and replications were used.
    let o =
        faultline(&sb, ["gate", &s(&candidate), "--candidate", "careful", "--baseline-scenario", &s(&base), "-j", "1"]);
    assert_success(&o);
    let out = stdout(&o);
    assert!(out.contains(&format!("baseline `careful` of {}", s(&base))), "{out}");
    assert!(
        out.contains("says seed 99 and 7 replication(s); the candidate's seed 3 and 2 replication(s) govern both"),
        "{out}"
    );

    // --baseline Q from the other file gives exactly what --baseline Q from the same file gives.
    let (o, across) = gate_json(
        &sb,
        &["gate", &s(&candidate), "--candidate", "careful", "--baseline-scenario", &s(&base), "--baseline", "hasty"],
    );
    assert_eq!(o.status.code(), Some(99), "careful retries, so it makes more attempts than hasty");
    let (o, same) = gate_json(&sb, &["gate", &s(&candidate), "--candidate", "careful", "--baseline", "hasty"]);
    assert_eq!(o.status.code(), Some(99));
    assert_eq!(across["checks"], same["checks"], "pairing across files is the pairing within one file");
    assert_eq!(across["summary"], same["summary"]);
}

#[test]
fn gate_across_files_judges_the_change_in_the_candidate_file() {
    let sb = Sandbox::new("gate_files_change");
    let base = sb.write("base.toml", &format!("{BASE}{PAIRED_SLO}"));
    // The pull request lowers careful's attempts from 2 to 1: fewer attempts, same runs.
    let fewer = sb.write(
        "fewer.toml",
        &edit(&format!("{BASE}{PAIRED_SLO}"), "retry = { max_attempts = 2 }", "retry = { max_attempts = 1 }"),
    );
    let (o, doc) = gate_json(&sb, &["gate", &s(&fewer), "--candidate", "careful", "--baseline-scenario", &s(&base)]);
    assert_success(&o);
    let attempts = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["metric"] == "dependency_attempt_total" && c["kind"] == "regression")
        .unwrap();
    assert!(attempts["mean"].as_f64().unwrap() < 0.0, "{attempts}");
    assert_eq!(doc["result"], "pass");
    assert_eq!(doc["summary"], serde_json::json!({"total": 3, "passed": 3, "failed": 0, "skipped": 0}));
    // Raising them to 3 makes more attempts: the regression limit fails, the JUnit report says so.
    let more = sb.write(
        "more.toml",
        &edit(&format!("{BASE}{PAIRED_SLO}"), "retry = { max_attempts = 2 }", "retry = { max_attempts = 3 }"),
    );
    let junit = sb.path("reports/gate.xml");
    let o = faultline(
        &sb,
        [
            &["gate", &s(&more), "--candidate", "careful", "--baseline-scenario", &s(&base), "--junit", &s(&junit)][..],
            &FLAKY[..],
        ]
        .concat(),
    );
    assert_eq!(o.status.code(), Some(99), "{}\n{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.trim_end().ends_with("2 passed, 1 failed: FAIL"), "{out}");
    assert!(out.contains(&format!("JUnit report: {}", s(&junit))), "{out}");
    let xml = std::fs::read_to_string(&junit).expect("the JUnit report is written when the gate fails");
    let cases = junit_cases(&xml);
    let names: Vec<&str> = cases.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "logical_run_total > 0",
            "dependency_attempt_total (candidate - baseline) <= 0",
            "logical_run_total (candidate - baseline) == 0",
        ]
    );
    assert_eq!(cases.iter().filter(|(_, f)| f.is_some()).count(), 1, "{xml}");
    let failure = cases[1].1.as_deref().expect("the attempts check failed");
    assert!(
        failure.starts_with("dependency_attempt_total (candidate - baseline) <= 0: the upper 95 % bound "),
        "{failure}"
    );
    assert!(failure.contains("does not meet <= 0"), "{failure}");
    assert!(
        xml.contains(
            r#"<testsuite name="faultline gate more (careful)" tests="3" failures="1" errors="0" skipped="0""#
        ),
        "{xml}"
    );
    let leftovers: Vec<_> = std::fs::read_dir(sb.path("reports")).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(leftovers, vec![std::ffi::OsString::from("gate.xml")], "written through a temporary name");
}

#[test]
fn gate_across_files_rejects_what_cannot_be_paired() {
    let sb = Sandbox::new("gate_files_errors");
    let candidate = sb.write("small.toml", &format!("{BASE}{PAIRED_SLO}"));
    let junit = sb.path("gate.xml");
    let gate = |extra: &[&str]| {
        let (candidate, junit) = (s(&candidate), s(&junit));
        let args =
            [&["gate", candidate.as_str(), "--candidate", "careful", "--junit", junit.as_str()][..], extra].concat();
        faultline(&sb, args)
    };
    // The baseline file has no policy of the candidate's name.
    let renamed =
        sb.write("renamed.toml", &edit(&format!("{BASE}{PAIRED_SLO}"), "[policy.careful]", "[policy.cautious]"));
    let o = gate(&["--baseline-scenario", &s(&renamed)]);
    assert_input_error(
        &o,
        &sb.out(),
        &[
            &format!("argument `--baseline-scenario {}`", s(&renamed)),
            "no policy named `careful` (it has cautious, hasty)",
            "--baseline POLICY",
        ],
    );
    let o = gate(&["--baseline-scenario", &s(&renamed), "--baseline", "nope"]);
    assert_input_error(&o, &sb.out(), &["argument `--baseline nope`", "no policy named `nope`"]);
    assert_success(&gate(&["--baseline-scenario", &s(&renamed), "--baseline", "cautious", "--jobs", "1"]));
    std::fs::remove_file(&junit).unwrap();
    // A regression metric the baseline file does not have (a dependency renamed) is named.
    let slo = "\n[slo.regression]\n\"dependency.backup.attempt_total\" = [\"<= 0\"]\n";
    let text = format!("{BASE}{slo}");
    let cand = sb.write("cand.toml", &text);
    let moved = sb.write(
        "moved.toml",
        &edit(&edit(BASE, "name = \"backup\"", "name = \"spare\""), "fallback = \"backup\"", "fallback = \"spare\""),
    );
    let o = faultline(
        &sb,
        ["gate", &s(&cand), "--candidate", "careful", "--baseline-scenario", &s(&moved), "--junit", &s(&junit)],
    );
    let line = assert_input_error(
        &o,
        &sb.out(),
        &[&format!("the baseline scenario {} has no metric `dependency.backup.attempt_total`", s(&moved))],
    );
    assert_starts_with(
        &line,
        &located(&cand, &text, "\"dependency.backup.attempt_total\"", "slo.regression.dependency.backup.attempt_total"),
    );
    // The candidate's own file with the candidate's own policy would compare it with itself.
    let o = gate(&["--baseline-scenario", &s(&candidate)]);
    assert_input_error(&o, &sb.out(), &["it is the candidate's file"]);
    // A broken baseline file is named by its own position; a --set it cannot take says which file.
    let broken = sb.write("broken.toml", &edit(BASE, "servers = 4", "servers = 0"));
    let o = gate(&["--baseline-scenario", &s(&broken)]);
    assert_input_error(&o, &sb.out(), &[&format!("{}:", s(&broken)), "servers"]);
    let o = gate(&[
        "--baseline-scenario",
        &s(&renamed),
        "--baseline",
        "cautious",
        "--set",
        "policy.careful.timeout_ms=100",
    ]);
    assert_input_error(
        &o,
        &sb.out(),
        &["argument `--set policy.careful.timeout_ms=100`", &format!("(in the baseline scenario {})", s(&renamed))],
    );
    let o = gate(&["--baseline-scenario", &s(&sb.path("absent.toml"))]);
    assert_input_error(&o, &sb.out(), &["absent.toml", "cannot read the file"]);
    assert!(!junit.exists(), "no report is written for invalid input");
}

#[test]
fn gate_json_lists_every_check_and_skips_as_null() {
    let sb = Sandbox::new("gate_json");
    let path = sb.write("small.toml", &format!("{BASE}\n[slo]\nlogical_run_total = [\"< 1\"]\nduplicate_effect_total = [\"==0\"]\n\n[slo.regression]\ncost_per_success = [\"<= 10%\"]\n"));
    let (o, doc) = gate_json(&sb, &["gate", &s(&path), "--candidate", "careful", "--thresholds-only"]);
    assert_eq!(o.status.code(), Some(99));
    assert!(o.stdout.ends_with(b"}\n"), "one document and a newline");
    assert_eq!(doc["scenario"], "small");
    assert_eq!(doc["candidate"], serde_json::json!({"scenario": s(&path), "policy": "careful", "sets": []}));
    assert_eq!(doc["baseline"], Value::Null);
    assert_eq!(doc["result"], "fail");
    assert_eq!(doc["summary"], serde_json::json!({"total": 3, "passed": 1, "failed": 1, "skipped": 1}));
    let checks = doc["checks"].as_array().unwrap();
    let keys: Vec<&str> = checks[0].as_object().unwrap().keys().map(|k| k.as_str()).collect();
    for key in [
        "kind",
        "metric",
        "expression",
        "status",
        "pass",
        "judged",
        "judged_on",
        "limit",
        "mean",
        "ci95_low",
        "ci95_high",
        "undefined_replications",
    ] {
        assert!(keys.contains(&key), "a check has no `{key}`: {}", checks[0]);
    }
    // Thresholds first, then regression limits, each in metric order.
    let runs = &checks[1];
    assert_eq!(
        (runs["kind"].as_str(), runs["status"].as_str(), runs["pass"].as_bool()),
        (Some("threshold"), Some("fail"), Some(false))
    );
    assert_eq!(runs["judged_on"], "upper");
    assert_eq!(runs["judged"], runs["ci95_high"], "`<` is judged on the upper bound");
    assert!(runs["ci95_low"].as_f64().unwrap() <= runs["mean"].as_f64().unwrap());
    assert_eq!(runs["metric"], "logical_run_total");
    assert_eq!(checks[0]["expression"], "==0");
    assert_eq!(checks[0]["pass"], true);
    let skipped = &checks[2];
    assert_eq!((skipped["kind"].as_str(), skipped["status"].as_str()), (Some("regression"), Some("skip")));
    for key in ["pass", "judged", "mean", "ci95_low", "ci95_high", "limit"] {
        assert_eq!(skipped[key], Value::Null, "{key} of a skipped check");
    }
}

/// The regression checks of a JSON gate report, without the fields that name the sides.
fn regression_checks(doc: &Value) -> Vec<Value> {
    doc["checks"].as_array().unwrap().iter().filter(|c| c["kind"] == "regression").cloned().collect()
}

#[test]
fn gate_candidate_and_baseline_sets_change_one_side_each() {
    let sb = Sandbox::new("gate_side_sets");
    let path = sb.write("small.toml", &format!("{BASE}{PAIRED_SLO}"));
    let one_attempt = "policy.careful.retry.max_attempts=1";
    let gate = |extra: &[&str]| {
        let path = s(&path);
        gate_json(
            &sb,
            &[&["gate", path.as_str(), "--candidate", "careful", "--baseline", "careful"][..], extra].concat(),
        )
    };
    // The candidate without its retry makes fewer attempts than the baseline, in the same runs:
    // the sets reached the candidate alone (on both sides every difference would be 0, on the
    // baseline alone the attempts would grow).
    let (o, fewer) = gate(&["--candidate-set", one_attempt]);
    assert_success(&o);
    let checks = regression_checks(&fewer);
    let attempts = checks.iter().find(|c| c["metric"] == "dependency_attempt_total").unwrap();
    assert!(attempts["ci95_high"].as_f64().unwrap() < 0.0, "{attempts}");
    let runs = checks.iter().find(|c| c["metric"] == "logical_run_total").unwrap();
    assert_eq!((runs["mean"].as_f64(), runs["status"].as_str()), (Some(0.0), Some("pass")), "{runs}");
    assert_eq!(
        fewer["candidate"],
        serde_json::json!({"scenario": s(&path), "policy": "careful", "sets": [one_attempt]})
    );
    assert_eq!(fewer["baseline"], serde_json::json!({"scenario": s(&path), "policy": "careful", "sets": []}));
    // The same change on the baseline's side is a regression: more attempts than the baseline.
    let (o, more) = gate(&["--baseline-set", one_attempt]);
    assert_eq!(o.status.code(), Some(99), "{}", stderr(&o));
    let attempts = regression_checks(&more).into_iter().find(|c| c["metric"] == "dependency_attempt_total").unwrap();
    assert!(attempts["ci95_low"].as_f64().unwrap() > 0.0, "{attempts}");
    assert_eq!(attempts["status"], "fail");
    // One value changed with a set is the same gate as a file with that value changed, gated
    // against the file as it was.
    let edited = sb.write(
        "fewer.toml",
        &edit(&format!("{BASE}{PAIRED_SLO}"), "retry = { max_attempts = 2 }", "retry = { max_attempts = 1 }"),
    );
    let (o, across) =
        gate_json(&sb, &["gate", &s(&edited), "--candidate", "careful", "--baseline-scenario", &s(&path)]);
    assert_success(&o);
    assert_eq!(regression_checks(&across), regression_checks(&fewer));
    // With another file, each side's sets reach its own file: the candidate's brings it back to
    // 2 attempts, so both sides are the same policy and every difference is 0.
    let (o, back) = gate_json(
        &sb,
        &[
            "gate",
            &s(&edited),
            "--candidate",
            "careful",
            "--baseline-scenario",
            &s(&path),
            "--candidate-set",
            "policy.careful.retry.max_attempts=2",
        ],
    );
    assert_success(&o);
    for check in regression_checks(&back) {
        assert_eq!((check["ci95_low"].as_f64(), check["ci95_high"].as_f64()), (Some(0.0), Some(0.0)), "{check}");
    }
    // The text names each side's sets.
    let o = faultline(
        &sb,
        [
            &["gate", &s(&path), "--candidate", "careful", "--baseline", "careful", "--baseline-set", one_attempt][..],
            &FLAKY[..],
        ]
        .concat(),
    );
    assert_eq!(o.status.code(), Some(99));
    assert!(
        stdout(&o).starts_with(&format!(
            "gate small: candidate `careful`, baseline `careful` with --baseline-set {one_attempt}, 4 replication(s) on shared seeds\n"
        )),
        "{}",
        stdout(&o)
    );
}

#[test]
fn gate_side_sets_refuse_what_would_change_nothing_or_both() {
    let sb = Sandbox::new("gate_side_sets_errors");
    let path = sb.write("small.toml", &format!("{BASE}{PAIRED_SLO}"));
    let gate = |extra: &[&str]| {
        let path = s(&path);
        faultline(&sb, [&["gate", path.as_str(), "--candidate", "careful"][..], extra].concat())
    };
    // The same policy of the same file with the same values on both sides: every difference 0.
    let o = gate(&[
        "--baseline",
        "careful",
        "--candidate-set",
        "policy.careful.timeout_ms=300",
        "--baseline-set",
        "policy.careful.timeout_ms=300",
    ]);
    assert_input_error(
        &o,
        &sb.out(),
        &[
            "arguments `--baseline careful`, `--candidate-set policy.careful.timeout_ms=300`, `--baseline-set policy.careful.timeout_ms=300`",
            "the two sides are the same",
        ],
    );
    // A set to the value the file has changes nothing either, also with the file as its own baseline file.
    let o = gate(&["--baseline-scenario", &s(&path), "--candidate-set", "policy.careful.timeout_ms=500"]);
    assert_input_error(&o, &sb.out(), &["the two sides are the same"]);
    let o = gate(&["--baseline", "careful"]);
    assert_input_error(&o, &sb.out(), &["argument `--baseline careful`", "must differ", "--candidate-set PATH=VALUE"]);
    // Errors name the side's flag, in the words --set errors use.
    let o = gate(&["--baseline", "hasty", "--candidate-set", "dependency.db.servrs=3"]);
    assert_input_error(
        &o,
        &sb.out(),
        &["argument `--candidate-set dependency.db.servrs=3`", "did you mean `servers`?"],
    );
    let o = gate(&["--baseline", "hasty", "--baseline-set", "dependency.db.servers=lots"]);
    let line = assert_input_error(
        &o,
        &sb.out(),
        &["argument `--baseline-set dependency.db.servers=lots`", "expected a whole number from 0 to 4294967295"],
    );
    assert!(!line.contains("baseline's side"), "the flag says which side: {line}");
    let o = gate(&[
        "--baseline",
        "hasty",
        "--set",
        "dependency.db.servers=0",
        "--candidate-set",
        "dependency.db.servers=2",
    ]);
    assert_input_error(&o, &sb.out(), &["argument `--set dependency.db.servers=0`", "(on the baseline's side)"]);
    let o = gate(&["--baseline", "hasty", "--candidate-set", "servers"]);
    assert_input_error(&o, &sb.out(), &["argument `--candidate-set servers`", "expected path=value"]);
    // A side's own set that would change nothing on that side, or both sides.
    let o = gate(&["--baseline", "hasty", "--candidate-set", "policy.hasty.timeout_ms=5"]);
    assert_input_error(
        &o,
        &sb.out(),
        &[
            "argument `--candidate-set policy.hasty.timeout_ms=5`",
            "policy `hasty` is not the candidate's policy `careful`",
        ],
    );
    let o = gate(&["--thresholds-only", "--baseline-set", "policy.careful.timeout_ms=5"]);
    assert_input_error(&o, &sb.out(), &["argument `--baseline-set policy.careful.timeout_ms=5`", "no baseline"]);
    let o = gate(&["--baseline", "hasty", "--candidate-set", "simulation.seed=4"]);
    assert_input_error(&o, &sb.out(), &["argument `--candidate-set simulation.seed=4`", "--seed N"]);
    let o = gate(&["--baseline", "hasty", "--baseline-set", "slo.logical_run_total=[\"> 1\"]"]);
    assert_input_error(
        &o,
        &sb.out(),
        &["argument `--baseline-set slo.logical_run_total=[\"> 1\"]`", "the checks are the candidate's"],
    );
}

// ---------------------------------------------------------------------------------------------
// init, completions, short flags
// ---------------------------------------------------------------------------------------------

#[test]
fn init_writes_a_starter_that_validates_runs_and_gates() {
    let sb = Sandbox::new("init");
    let o = faultline(&sb, ["init"]);
    assert_success(&o);
    let path = sb.path("scenario.toml");
    assert!(stdout(&o).starts_with("wrote scenario.toml: "), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("faultline gate scenario.toml --candidate resilient --baseline naive"),
        "{}",
        stdout(&o)
    );
    let text = std::fs::read_to_string(&path).unwrap();
    for part in ["[slo]", "[slo.regression]", "[[fault]]", "[policy.naive]", "[policy.resilient]", "effect = \"write\""]
    {
        assert!(text.contains(part), "the starter has no `{part}`");
    }
    let o = faultline(&sb, ["validate", "scenario.toml"]);
    assert_success(&o);
    assert!(stdout(&o).contains("policies: naive, resilient, 4 SLO checks, 1 regression checks"), "{}", stdout(&o));
    let started = std::time::Instant::now();
    let o = run(&sb, &path, &sb.path("results"), &["--format", "json"]);
    assert_success(&o);
    assert!(started.elapsed().as_secs() < 60, "the starter runs quickly");
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        doc["naive"]["metrics"]["deadline_exceeded_ratio"].as_f64().unwrap() > 0.1,
        "the fault hurts the naive policy"
    );
    // Propagation stops runs at their deadline: none ends past it, a few end without a result.
    assert_eq!(doc["resilient"]["metrics"]["run_past_deadline_ratio"], 0.0);
    assert!(doc["resilient"]["metrics"]["deadline_exceeded_ratio"].as_f64().unwrap() < 0.05);
    // The gate the starter suggests passes, and the naive policy fails it.
    let o = faultline(&sb, ["gate", "scenario.toml", "--candidate", "resilient", "--baseline", "naive", "-j", "1"]);
    assert_success(&o);
    let o = faultline(&sb, ["gate", "scenario.toml", "--candidate", "naive", "--thresholds-only", "-j", "1"]);
    assert_eq!(o.status.code(), Some(99), "{}", stdout(&o));
    // An existing file is never overwritten without --force.
    std::fs::write(&path, "# mine\n").unwrap();
    let o = faultline(&sb, ["init"]);
    assert_input_error(&o, &sb.out(), &["scenario.toml already exists", "--force"]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "# mine\n");
    assert_success(&faultline(&sb, ["init", "--force"]));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    // Another name, a folder, and a name the loader would not read.
    assert_success(&faultline(&sb, ["init", "agents/support.toml"]));
    assert_eq!(std::fs::read_to_string(sb.path("agents/support.toml")).unwrap(), text);
    std::fs::create_dir(sb.path("dir")).unwrap();
    assert_success(&faultline(&sb, ["init", "dir"]));
    assert!(sb.path("dir/scenario.toml").exists());
    let o = faultline(&sb, ["init", "starter.txt"]);
    assert_input_error(&o, &sb.out(), &["argument `starter.txt`", "must end in .toml"]);
    assert!(!sb.path("starter.txt").exists());
}

#[test]
fn completions_print_a_script_for_every_shell() {
    let sb = Sandbox::new("completions");
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef faultline"),
        ("fish", "complete -c faultline"),
        ("powershell", "Register-ArgumentCompleter"),
        ("elvish", "edit:completion:arg-completer[faultline]"),
    ] {
        let o = faultline(&sb, ["completions", shell]);
        assert_success(&o);
        let script = stdout(&o);
        assert!(script.contains(marker), "{shell}: no `{marker}` in\n{script}");
        assert!(
            script.contains("baseline-scenario") && script.contains("thresholds-only"),
            "{shell} completes gate's options"
        );
    }
    let o = faultline(&sb, ["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("invalid value 'tcsh'"), "{}", stderr(&o));
}

#[test]
fn short_flags_mean_the_long_ones() {
    let sb = Sandbox::new("short_flags");
    let path = sb.write("small.toml", BASE);
    assert_success(&faultline(&sb, ["run", &s(&path), "-p", "careful", "-o", &s(&sb.path("short")), "-j", "1"]));
    assert_success(&faultline(
        &sb,
        ["run", &s(&path), "--policy", "careful", "--out", &s(&sb.path("long")), "--jobs", "1"],
    ));
    let a = std::fs::read(sb.path("short/careful/summary.json")).unwrap();
    let b = std::fs::read(sb.path("long/careful/summary.json")).unwrap();
    assert!(a == b);
    assert!(!sb.path("short/hasty").exists(), "-p selects the policy");
    let o = faultline(&sb, ["run", &s(&path), "-j", "0", "-o", &s(&sb.out())]);
    assert_input_error(&o, &sb.out(), &["argument `--jobs 0`"]);
}

#[test]
fn replay_without_a_selector_names_both_selectors() {
    let o = faultline_in(repo(), ["replay", "scenarios/meeting-analysis-incident.toml", "-p", "naive"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("--run <N>") && err.contains("--first <WHAT>"), "{err}");
    let o = faultline_in(
        repo(),
        ["replay", "scenarios/meeting-analysis-incident.toml", "-p", "naive", "--run", "3", "--first", "failed"],
    );
    assert_eq!(o.status.code(), Some(2), "one selector at a time");
}

/// `faultline docs TOPIC` prints the documentation the binary was built with, byte for byte,
/// so the starter file's pointers work without a checkout; a near miss gets a suggestion.
#[test]
fn docs_prints_the_built_in_documentation() {
    for (topic, file) in [("scenario", "docs/scenario.md"), ("metrics", "docs/metrics.md"), ("tune", "docs/tune.md")] {
        let o = Command::new(env!("CARGO_BIN_EXE_faultline")).args(["docs", topic]).output().unwrap();
        assert!(o.status.success());
        let want = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
        assert!(String::from_utf8(o.stdout).unwrap() == want, "`docs {topic}` is not {file}");
    }
    let list = Command::new(env!("CARGO_BIN_EXE_faultline")).arg("docs").output().unwrap();
    assert!(String::from_utf8_lossy(&list.stdout).contains("scenario    every field of a scenario file"));
    let o = Command::new(env!("CARGO_BIN_EXE_faultline")).args(["docs", "metric"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("did you mean `metrics`?"));
}

/// A --junit path that cannot be written stops the gate before its simulations (here hours of
/// them: the gate would otherwise run for as long), names the path, and leaves nothing.
#[test]
fn gate_refuses_an_unwritable_junit_path_before_simulating() {
    let sb = Sandbox::new("gate-junit-early");
    std::fs::write(sb.path("not-a-folder"), "a file").unwrap();
    let junit = sb.path("not-a-folder").join("gate.xml");
    let mut child = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["gate", concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/meeting-analysis-incident.toml")])
        .args(["--candidate", "resilient", "--baseline", "naive", "--set", "simulation.duration_s=1000000"])
        .arg("--junit")
        .arg(&junit)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(120) {
            let _ = child.kill();
            panic!("the gate simulated before it found that --junit cannot be written");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains(&format!("cannot write {}", junit.display())), "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
    let left: Vec<_> = std::fs::read_dir(&sb.dir).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left.len(), 1, "{left:?}");
}
