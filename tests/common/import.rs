//! What the `faultline import` tests share: the binary, a scratch directory per test, the
//! fragment a successful import prints, one field of it, and the check of a located refusal.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn faultline(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_faultline")).args(args).output().expect("faultline starts")
}

/// `faultline import FORMAT ARGS...`'s fragment; fails the test unless the import succeeds.
pub fn import_fragment(format: &str, args: &[&str]) -> String {
    let mut all = vec!["import", format];
    all.extend_from_slice(args);
    let out = faultline(&all);
    assert!(out.status.success(), "exit {:?}: {}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// An empty directory of this test process's own (`format` and `tag` keep tests apart).
pub fn scratch_dir(format: &str, tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("faultline-import-{format}-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The line of `text` that starts with `key = `.
pub fn line<'a>(text: &'a str, key: &str) -> &'a str {
    text.lines().find(|l| l.starts_with(&format!("{key} = "))).unwrap_or_else(|| panic!("no {key} in\n{text}"))
}

/// `key = value` without its comment.
pub fn value<'a>(text: &'a str, key: &str) -> &'a str {
    line(text, key).split(" #").next().unwrap().trim_end()
}

/// A scenario with one dependency, `model`, failing as `errors` says (the inside of a TOML inline
/// table), 5 runs a second of one step, and no policy of its own: an imported fragment is its
/// policy.
pub fn model_scenario(errors: &str, duration_s: u32) -> String {
    format!(
        r#"[simulation]
duration_s = {duration_s}
warmup_s = 0
seed = 7
replications = 2

[[dependency]]
name = "model"
servers = 100000
queue_capacity = 0
service_time = {{ dist = "constant", value_ms = 1 }}
errors = {{ {errors} }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 5 }}
deadline_ms = 600000

  [[workflow.step]]
  id = "s"
  dependency = "model"

"#
    )
}

/// Each case `(file name, file text, want)` is written to `dir` and imported with
/// `faultline import FORMAT FILE -o OUT`: the import exits 2, the first line of its standard
/// error names the file's path and goes on as `want` does after the file name (`want` starts
/// with the name: `a.yaml:4:55: key: message`), it prints nothing, and it writes no `OUT`.
pub fn assert_refused(format: &str, dir: &Path, cases: &[(&str, &str, &str)]) {
    for &(name, text, want) in cases {
        let rest = want.strip_prefix(name).unwrap_or_else(|| panic!("{want:?} does not start with {name:?}"));
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        let out_file = dir.join(format!("{name}.out.toml"));
        let out = faultline(&["import", format, file.to_str().unwrap(), "-o", out_file.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        let first = err.lines().next().unwrap_or("");
        let path = file.display().to_string();
        let at = first.find(&path).unwrap_or_else(|| panic!("{name}: no {path} in {first}"));
        assert!(first[at + path.len()..].starts_with(rest), "{name}:\n got {first}\nwant {want}");
        assert!(!out_file.exists(), "{name}: a refused import wrote {}", out_file.display());
        assert!(out.stdout.is_empty(), "{name}: a refused import printed {:?}", String::from_utf8_lossy(&out.stdout));
    }
}
