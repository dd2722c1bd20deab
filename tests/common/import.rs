//! What the `faultline import` tests share: the binary, a scratch directory per test, the
//! fragment a successful import prints, and one field of it.

use std::path::PathBuf;
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
