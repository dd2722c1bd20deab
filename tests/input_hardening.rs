//! Input hardening found by fuzzing (issue 6): oversized files, huge values echoed in errors,
//! integers past 2^63 - 1, tables written as positional arrays, checks `validate` must share
//! with `run`, and the combined size of the time series. Every rejection follows the
//! invalid-input contract: exit 2, one located `error: ` line, no output written.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct Sandbox {
    dir: PathBuf,
}

impl Sandbox {
    fn new(test: &str) -> Sandbox {
        let dir = std::env::temp_dir().join(format!("faultline-hardening-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the sandbox");
        Sandbox { dir }
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.join(name);
        std::fs::write(&path, text).expect("write a scenario file");
        path
    }

    fn out(&self) -> PathBuf {
        self.dir.join("out")
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn faultline<I, S>(sb: &Sandbox, args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(args)
        .current_dir(&sb.dir)
        .output()
        .expect("start the faultline binary")
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn validate(sb: &Sandbox, path: &Path) -> Output {
    faultline(sb, ["validate".to_string(), s(path)])
}

/// `faultline run <file> --out <out> --jobs 1 <extra...>`.
fn run(sb: &Sandbox, path: &Path, extra: &[&str]) -> Output {
    let mut args: Vec<String> = vec!["run".into(), s(path), "--out".into(), s(&sb.out()), "--jobs".into(), "1".into()];
    args.extend(extra.iter().map(|a| a.to_string()));
    faultline(sb, &args)
}

/// Exit 2, exactly one `error: ` line holding every fragment, nothing on stdout, no output
/// folder. Returns the line.
fn input_error(sb: &Sandbox, o: &Output, fragments: &[&str]) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!err.contains("panicked"), "the binary panicked:\n{err}");
    assert_eq!(o.status.code(), Some(2), "expected exit 2; stderr:\n{err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line on stderr, got:\n{err}");
    for f in fragments {
        assert!(lines[0].contains(f), "stderr does not contain `{f}`:\n{}", lines[0]);
    }
    assert!(o.stdout.is_empty(), "stdout on an input error: {}", String::from_utf8_lossy(&o.stdout));
    assert!(!sb.out().exists(), "an input error must not create the output folder");
    lines[0].to_string()
}

/// Exit 0. Removes the output folder, so that a later rejection can check none is made.
fn success(sb: &Sandbox, o: &Output) -> String {
    let _ = std::fs::remove_dir_all(sb.out());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "the binary panicked:\n{err}");
    assert_eq!(o.status.code(), Some(0), "expected exit 0; stderr:\n{err}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A small, fast scenario.
const BASE: &str = r#"[simulation]
duration_s = 20
seed = 3
replications = 1
timeseries_window_s = 10

[[dependency]]
name = "db"
servers = 4
service_time = { p50_ms = 20, p95_ms = 60 }

[[workflow]]
name = "wf"
arrivals = { rate_per_s = 2 }
deadline_ms = 2000

  [[workflow.step]]
  id = "lookup"
  dependency = "db"

[policy.careful]
timeout_ms = 500
retry = { max_attempts = 2 }
"#;

#[test]
fn the_base_scenario_is_valid() {
    let sb = Sandbox::new("base");
    let path = sb.write("base.toml", BASE);
    success(&sb, &validate(&sb, &path));
}

// ---------------------------------------------------------------------------------------------
// File size
// ---------------------------------------------------------------------------------------------

#[test]
fn a_file_above_16_mib_is_refused_before_parsing() {
    let sb = Sandbox::new("file_size");
    // Valid TOML all the way (a comment), so only the size can refuse it.
    let size = 16 * 1024 * 1024 + 1;
    let mut text = String::from(BASE);
    text.push('#');
    text.push_str(&"x".repeat(size - text.len() - 1));
    text.push('\n');
    assert_eq!(text.len(), size);
    let path = sb.write("huge.toml", &text);
    for o in [validate(&sb, &path), run(&sb, &path, &[])] {
        let line = input_error(&sb, &o, &[&format!("{size} bytes"), "16777216 bytes (16 MiB)"]);
        assert!(line.starts_with(&format!("error: {}: ", s(&path))), "{line}");
    }
    // One byte less is parsed (and valid).
    let path = sb.write("limit.toml", &text[..size - 2]);
    success(&sb, &validate(&sb, &path));
}

#[test]
fn a_million_arrays_are_refused_before_parsing() {
    let sb = Sandbox::new("openers");
    // 16 MiB of `[],` parses into over a gigabyte; refused at the first array past the limit.
    let head = "[simulation]\nduration_s = 10\nx = [";
    let text = format!("{head}{}[]]\n", "[],".repeat(1_000_000));
    let path = sb.write("arrays.toml", &text);
    // `[simulation]` and `x = [` are the first two: element 999 998 is the 1 000 001st, at
    // column 6 + 3 x 999 998 of `x = [[],[],...`.
    let column = 6 + 3 * 999_998;
    input_error(
        &sb,
        &validate(&sb, &path),
        &[&format!("{}:3:{column}: ", s(&path)), "more than 1000000 arrays and tables"],
    );
    let json = format!("{{\"simulation\": {{\"duration_s\": 10}}, \"x\": [{}{{}}]}}", "{},".repeat(1_000_000));
    let path = sb.write("objects.json", &json);
    input_error(&sb, &validate(&sb, &path), &[&format!("{}:1:", s(&path)), "more than 1000000 arrays and tables"]);
}

#[test]
fn a_million_keys_are_refused_before_parsing() {
    let sb = Sandbox::new("separators");
    // 16 MiB of `k=1` lines took about 600 MB to parse; refused at the first key past the limit:
    // `duration_s =` is the first separator, so key k999999 (line 1 000 002) holds the 1 000 001st.
    let keys: String = (0..1_100_000).map(|i| format!("k{i}=1\n")).collect();
    let path = sb.write("keys.toml", &format!("[simulation]\nduration_s = 10\n{keys}"));
    input_error(
        &sb,
        &validate(&sb, &path),
        &[&format!("{}:1000002:8: ", s(&path)), "more than 1000000 keys and elements"],
    );
}

#[test]
fn deep_nesting_is_refused_with_a_position() {
    let sb = Sandbox::new("nesting");
    let depth = 100_000;
    let toml = BASE.replace("duration_s = 20", &format!("duration_s = {}1{}", "[".repeat(depth), "]".repeat(depth)));
    let path = sb.write("deep.toml", &toml);
    input_error(&sb, &validate(&sb, &path), &[&format!("{}:2:", s(&path)), "recursion"]);
    let json = format!("{{\"simulation\": {{\"duration_s\": {}1{}}}}}", "[".repeat(depth), "]".repeat(depth));
    let path = sb.write("deep.json", &json);
    input_error(&sb, &validate(&sb, &path), &[&format!("{}:1:", s(&path))]);
}

#[test]
fn a_file_that_is_not_utf8_is_refused_at_the_bad_byte() {
    let sb = Sandbox::new("utf8");
    let path = sb.dir.join("latin1.toml");
    let mut bytes = BASE.as_bytes().to_vec();
    bytes.extend_from_slice(b"# caf\xe9\n");
    std::fs::write(&path, &bytes).unwrap();
    let lines = BASE.lines().count();
    input_error(&sb, &validate(&sb, &path), &[&format!("{}:{}:6: ", s(&path), lines + 1), "not UTF-8"]);
}

// ---------------------------------------------------------------------------------------------
// Errors quote a short prefix of a huge value
// ---------------------------------------------------------------------------------------------

#[test]
fn a_10_mb_value_is_quoted_by_a_short_prefix_wherever_it_is_echoed() {
    let sb = Sandbox::new("huge_value");
    let huge = "n".repeat(10 * 1024 * 1024);
    let size = format!("({} bytes)", huge.len());
    let cases: Vec<(&str, String)> = vec![
        // Our own checks: a bad name, an unknown reference.
        ("name", BASE.replace("name = \"db\"", &format!("name = \"{huge}\""))),
        ("reference", BASE.replace("dependency = \"db\"", &format!("dependency = \"{huge}\""))),
        // serde's messages: an unknown field, an unknown variant, a string for a number.
        ("field", BASE.replace("seed = 3", &format!("{huge} = 3"))),
        ("variant", BASE.replace("dependency = \"db\"", &format!("dependency = \"db\"\n  effect = \"{huge}\""))),
        ("type", BASE.replace("seed = 3", &format!("seed = \"{huge}\""))),
        // A map key lands in the field path.
        ("key", BASE.replace("[policy.careful]", &format!("[policy.{huge}]"))),
        // The parser's own messages.
        ("syntax", BASE.replace("seed = 3", &format!("seed = 3{huge}"))),
    ];
    for (case, text) in cases {
        let path = sb.write(&format!("{case}.toml"), &text);
        let line = input_error(&sb, &validate(&sb, &path), &[&s(&path)]);
        assert!(line.len() < 500, "{case}: the error is {} bytes: {line}", line.len());
        if case != "syntax" {
            assert!(line.contains(&size) && line.contains("nnnn..."), "{case}: {line}");
        }
    }
    // The same in JSON.
    let json = format!("{{\"simulation\": {{\"duration_s\": 10, \"{huge}\": 1}}}}");
    let path = sb.write("field.json", &json);
    let line = input_error(&sb, &validate(&sb, &path), &[&s(&path), &size]);
    assert!(line.len() < 500, "json: {} bytes: {line}", line.len());
    // And in an argument (the OS caps one argument near 128 kB).
    let path = sb.write("base.toml", BASE);
    let long = "v".repeat(100_000);
    let o = run(&sb, &path, &["--set", &format!("dependency.db.service_time.dist={long}")]);
    let line = input_error(&sb, &o, &["(100000 bytes)", "unknown distribution `vvvv"]);
    assert!(line.len() < 500, "argument: {} bytes: {line}", line.len());
    let o = run(&sb, &path, &["--policy", &long]);
    let line = input_error(&sb, &o, &["unknown policy `vvvv"]);
    assert!(line.len() < 500, "--policy: {} bytes: {line}", line.len());
}

#[test]
fn a_value_with_a_newline_keeps_the_error_on_one_line() {
    let sb = Sandbox::new("newline_value");
    let path = sb.write("nl.toml", &BASE.replace("dependency = \"db\"", "dependency = \"d\\nb\""));
    input_error(&sb, &validate(&sb, &path), &["unknown dependency `d\\nb`"]);
}

// ---------------------------------------------------------------------------------------------
// Integers beyond 2^63 - 1
// ---------------------------------------------------------------------------------------------

/// Refused where they are written, in TOML and JSON, by `validate` and `run` alike; before,
/// `validate` accepted them and every `--set` then failed with "u64 value was too large".
#[test]
fn integers_beyond_64_signed_bits_are_refused_at_their_position() {
    let sb = Sandbox::new("big_integers");
    let cases = [
        ("seed = 3", "seed = 9223372036854775808", "simulation.seed"),
        ("seed = 3", "seed = 18446744073709551615", "simulation.seed"),
        ("duration_s = 20", "duration_s = 9223372036854775808", "simulation.duration_s"),
        ("rate_per_s = 2", "rate_per_s = -9223372036854775809", "workflow[0].arrivals.rate_per_s"),
    ];
    for (i, (from, to, field)) in cases.iter().enumerate() {
        let text = BASE.replace(from, to);
        let path = sb.write(&format!("big{i}.toml"), &text);
        let (line, column) = position(&text, to.split(" = ").nth(1).unwrap());
        let prefix = format!("error: {}:{line}:{column}: {field}: ", s(&path));
        for o in [validate(&sb, &path), run(&sb, &path, &["--set", "simulation.duration_s=5"])] {
            let e = input_error(&sb, &o, &["is out of range", "--seed"]);
            assert!(e.starts_with(&prefix), "expected {prefix}\ngot {e}");
        }
    }
    let json = r#"{"simulation": {"duration_s": 10, "seed": 9223372036854775808}, "workflow": [{"name": "w", "arrivals": {"rate_per_s": 1}, "deadline_ms": 10, "step": [{"id": "s", "dependency": "d"}]}], "dependency": [{"name": "d", "service_time": {"p50_ms": 1, "p95_ms": 2}}]}"#;
    let path = sb.write("big.json", json);
    let (line, column) = position(json, "9223372036854775808");
    let prefix = format!("error: {}:{line}:{column}: simulation.seed: ", s(&path));
    for o in [validate(&sb, &path), run(&sb, &path, &["--replications", "1"])] {
        let e = input_error(&sb, &o, &["is out of range"]);
        assert!(e.starts_with(&prefix), "expected {prefix}\ngot {e}");
    }
    // 2^63 - 1 itself and a float beyond it are fine, and overrides keep working.
    let path = sb.write("max.toml", &BASE.replace("seed = 3", "seed = 9223372036854775807"));
    success(&sb, &validate(&sb, &path));
    let path = sb.write("float.toml", &BASE.replace("duration_s = 20", "duration_s = 1.8e19"));
    let o = run(&sb, &path, &["--set", "simulation.duration_s=5", "--replications", "1"]);
    success(&sb, &o);
    // An argument is held to the same range; --seed takes every u64.
    let path = sb.write("base.toml", BASE);
    let o = run(&sb, &path, &["--set", "simulation.seed=9223372036854775808"]);
    input_error(
        &sb,
        &o,
        &["argument `--set simulation.seed=9223372036854775808`: simulation.seed: ", "is out of range"],
    );
    let o = run(&sb, &path, &["--seed", "18446744073709551615", "--replications", "1"]);
    success(&sb, &o);
}

/// 1-based line and column of the first occurrence of `needle`.
fn position(text: &str, needle: &str) -> (usize, usize) {
    let offset = text.find(needle).unwrap_or_else(|| panic!("`{needle}` is not in the text"));
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    (line, before[line_start..].chars().count() + 1)
}

// ---------------------------------------------------------------------------------------------
// Tables written as positional arrays
// ---------------------------------------------------------------------------------------------

#[test]
fn a_table_written_as_a_positional_array_is_refused_in_toml() {
    let sb = Sandbox::new("positional_toml");
    let cases = [
        (
            "[simulation]\nduration_s = 20\nseed = 3\nreplications = 1\ntimeseries_window_s = 10",
            "simulation = [20, 0.0, 3, 1, 10]",
            "simulation",
            "[20",
        ),
        ("service_time = { p50_ms = 20, p95_ms = 60 }", "service_time = [20, 60]", "dependency[0].service_time", "[20"),
        (
            "  [[workflow.step]]\n  id = \"lookup\"\n  dependency = \"db\"",
            "  step = [[\"lookup\", [], \"db\"]]",
            "workflow[0].step[0]",
            "[\"lookup\"",
        ),
        ("retry = { max_attempts = 2 }", "retry = [2]", "policy.careful.retry", "[2]"),
        ("arrivals = { rate_per_s = 2 }", "arrivals = [2]", "workflow[0].arrivals", "[2]"),
    ];
    for (i, (from, to, field, at)) in cases.iter().enumerate() {
        assert!(BASE.contains(from), "{from}");
        let text = BASE.replace(from, to);
        let path = sb.write(&format!("positional{i}.toml"), &text);
        let (line, column) = position(&text, at);
        let prefix = format!("error: {}:{line}:{column}: {field}: ", s(&path));
        let e = input_error(&sb, &validate(&sb, &path), &["invalid type: sequence", "not a positional array"]);
        assert!(e.starts_with(&prefix), "expected {prefix}\ngot {e}");
    }
}

#[test]
fn a_table_written_as_a_positional_array_is_refused_in_json() {
    let sb = Sandbox::new("positional_json");
    let good = r#"{"simulation": {"duration_s": 10}, "dependency": [{"name": "d", "service_time": {"p50_ms": 1, "p95_ms": 2}}], "workflow": [{"name": "w", "arrivals": {"rate_per_s": 1}, "deadline_ms": 100, "step": [{"id": "s", "dependency": "d"}]}]}"#;
    success(&sb, &validate(&sb, &sb.write("good.json", good)));
    let cases = [
        (r#"{"duration_s": 10}"#, "[10]", "simulation"),
        (r#"{"id": "s", "dependency": "d"}"#, r#"["s", [], "d"]"#, "workflow[0].step[0]"),
        (r#"{"p50_ms": 1, "p95_ms": 2}"#, "[1, 2]", "dependency[0].service_time"),
    ];
    for (i, (from, to, field)) in cases.iter().enumerate() {
        let text = good.replace(from, to);
        let path = sb.write(&format!("positional{i}.json"), &text);
        let e = input_error(&sb, &validate(&sb, &path), &["invalid type: sequence", "not a positional array"]);
        let prefix = format!("error: {}:1:", s(&path));
        assert!(e.starts_with(&prefix) && e.contains(&format!(": {field}: ")), "{field}: {e}");
    }
    // The whole document as an array.
    let path = sb.write("root.json", r#"[{"duration_s": 10}, [], []]"#);
    input_error(&sb, &validate(&sb, &path), &[&format!("{}:1:", s(&path)), "invalid type: sequence"]);
}

// ---------------------------------------------------------------------------------------------
// The time series as a whole
// ---------------------------------------------------------------------------------------------

/// `dependencies` dependencies (the workflow calls the first), `replications`, 1 000 s at a
/// 1 ms window with no drain: 1 000 001 windows.
fn wide_series(dependencies: usize, replications: u32) -> String {
    let mut text = format!(
        "[simulation]\nduration_s = 1000\ndrain_limit_s = 0\ntimeseries_window_s = 0.001\nreplications = {replications}\n\n"
    );
    for k in 0..dependencies {
        text += &format!("[[dependency]]\nname = \"d{k}\"\nservice_time = {{ dist = \"constant\", value_ms = 1 }}\n\n");
    }
    text += "[[workflow]]\nname = \"w\"\narrivals = { rate_per_s = 1 }\ndeadline_ms = 100\n\n  [[workflow.step]]\n  id = \"s\"\n  dependency = \"d0\"\n";
    text
}

#[test]
fn windows_times_columns_times_replications_is_bounded_before_anything_is_allocated() {
    let sb = Sandbox::new("timeseries_cells");
    // 1 000 001 windows x (6 + 3 x 1 000) columns x 1 replication: 3e9 cells (24 GB).
    let text = wide_series(1_000, 1);
    let path = sb.write("wide.toml", &text);
    let (line, column) = position(&text, "timeseries_window_s");
    let e = input_error(
        &sb,
        &validate(&sb, &path),
        &[
            "1000001 windows x 3006 columns (over 1 policy) x 1 replication(s) = 3006003006 cells",
            "the limit is 100000000",
        ],
    );
    assert!(e.starts_with(&format!("error: {}:{line}:{column}: simulation.timeseries_window_s: ", s(&path))), "{e}");
    // 33 columns: 33 000 033 cells for one replication pass, three replications do not; an
    // override is named as the cause.
    let path = sb.write("narrow.toml", &wide_series(9, 1));
    success(&sb, &validate(&sb, &path));
    let o = run(&sb, &path, &["--replications", "4"]);
    input_error(
        &sb,
        &o,
        &["argument `--replications 4`", "x 33 columns (over 1 policy) x 4 replication(s) = 132000132 cells"],
    );
}

// ---------------------------------------------------------------------------------------------
// `validate` knows what `run` knows (found by tests/fuzz_scenarios.rs)
// ---------------------------------------------------------------------------------------------

/// `policies` policies at `replications` replications, two 10 s windows each.
fn many_policies(policies: usize, replications: u32) -> String {
    let mut text = BASE
        .replace("replications = 1", &format!("replications = {replications}\ndrain_limit_s = 0"))
        .replace("duration_s = 20", "duration_s = 10");
    for k in 0..policies {
        text += &format!("\n[policy.p{k}]\n");
    }
    text
}

#[test]
fn policies_times_replications_beyond_the_command_bound_is_refused_by_validate() {
    let sb = Sandbox::new("many_policies");
    // 101 policies (careful and p0..p99) x 10 000 replications: run would refuse 1 010 000
    // simulations, so validate does too, at simulation.replications.
    let text = many_policies(100, 10_000);
    let path = sb.write("many.toml", &text);
    let (line, column) = position(&text, "replications");
    let e = input_error(
        &sb,
        &validate(&sb, &path),
        &["101 policies x 10000 replications = 1010000 simulations; the limit is 1000000"],
    );
    assert!(e.starts_with(&format!("error: {}:{line}:{column}: simulation.replications: ", s(&path))), "{e}");
    // 100 policies x 10 000 is within it (not run here: a million simulations).
    let path = sb.write("enough.toml", &many_policies(99, 10_000));
    success(&sb, &validate(&sb, &path));
}

#[test]
fn json_nulls_accepted_by_validate_are_accepted_by_every_override() {
    let sb = Sandbox::new("json_null");
    let json = r#"{"simulation": {"duration_s": 10, "timeseries_window_s": 5}, "dependency": [{"name": "d", "service_time": {"p50_ms": 1, "p95_ms": 2}, "rate_limit": null, "queue_policy": {"codel": null}}], "workflow": [{"name": "w", "tenant": null, "arrivals": {"rate_per_s": 1, "profile": null}, "deadline_ms": 100, "step": [{"id": "s", "dependency": "d", "fallback": null}]}], "slo": null}"#;
    let path = sb.write("nulls.json", json);
    success(&sb, &validate(&sb, &path));
    // Before, every override failed with "invalid type: null, expected any valid TOML value".
    success(&sb, &run(&sb, &path, &["--replications", "1", "--set", "simulation.duration_s=5"]));
    // A null where a value is required is refused by both, at its position.
    let bad = json.replace(r#""duration_s": 10"#, r#""duration_s": null"#);
    let path = sb.write("null_duration.json", &bad);
    // serde_json places a value's error at its last character.
    let (line, column) = position(&bad, "null,");
    let prefix = format!("error: {}:{line}:{}: simulation.duration_s: ", s(&path), column + 3);
    for o in [validate(&sb, &path), run(&sb, &path, &["--replications", "1"])] {
        let e = input_error(&sb, &o, &["invalid type: null"]);
        assert!(e.starts_with(&prefix), "expected {prefix}\ngot {e}");
    }
}

#[test]
fn empty_files_directories_and_duplicate_keys_each_get_their_own_sentence() {
    let sb = Sandbox::new("own-sentences");
    for (name, text) in [("empty.toml", ""), ("comments.toml", "# nothing yet\n\n"), ("empty.json", "  \n")] {
        let o = validate(&sb, &sb.write(name, text));
        input_error(&sb, &o, &[name, "the file is empty", "faultline init"]);
    }
    let dir = sb.dir.join("folder.toml");
    std::fs::create_dir(&dir).unwrap();
    input_error(&sb, &validate(&sb, &dir), &["folder.toml", "is a directory"]);
    let o = validate(&sb, &sb.write("dup.toml", "[simulation]\nduration_s = 1\nduration_s = 2\n"));
    input_error(&sb, &o, &["dup.toml:3:1", "duplicate key `duration_s`"]);
    let o = validate(&sb, &sb.write("tables.toml", "[simulation]\nduration_s = 1\n[simulation]\nseed = 2\n"));
    input_error(&sb, &o, &["tables.toml:3", "duplicate key `simulation`"]);
}
