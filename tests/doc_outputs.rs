//! Every command output quoted in README.md and docs/*.md is what the binary prints today: a
//! ```text block whose first line is `$ faultline ...` runs that command (in a folder laid out
//! like a checkout, as tests/doc_examples.rs does) and must print the rest of the block, line
//! for line. A line `...` ends the comparison there, for outputs quoted in part.

use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

struct Quoted {
    file: String,
    line: usize,
    command: String,
    expected: Vec<String>,
}

fn quoted_outputs(file: &str) -> Vec<Quoted> {
    let text = std::fs::read_to_string(Path::new(ROOT).join(file)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i] == "```text" && i + 1 < lines.len() && lines[i + 1].starts_with("$ faultline ") {
            let end = (i + 2..lines.len()).find(|&j| lines[j] == "```").expect("a closed block");
            out.push(Quoted {
                file: file.to_string(),
                line: i + 2,
                command: lines[i + 1][2..].to_string(),
                expected: lines[i + 2..end].iter().map(|l| l.to_string()).collect(),
            });
            i = end;
        }
        i += 1;
    }
    out
}

fn workspace(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("faultline-doc-outputs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_faultline"), dir.join("bin/faultline")).unwrap();
    for shared in ["scenarios", "examples", "tests"] {
        std::os::unix::fs::symlink(Path::new(ROOT).join(shared), dir.join(shared)).unwrap();
    }
    dir
}

fn check(q: &Quoted, dir: &Path) {
    let path = format!("{}:{}", dir.join("bin").display(), std::env::var("PATH").unwrap_or_default());
    let o = Command::new("sh").arg("-c").arg(&q.command).current_dir(dir).env("PATH", &path).output().unwrap();
    assert!(
        matches!(o.status.code(), Some(0) | Some(99)),
        "{}:{}: `{}` exited {:?}\n{}",
        q.file,
        q.line,
        q.command,
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    let printed = String::from_utf8(o.stdout).unwrap();
    let printed: Vec<&str> = printed.lines().collect();
    for (k, want) in q.expected.iter().enumerate() {
        if want == "..." {
            return;
        }
        let got = printed.get(k).copied().unwrap_or("<no line>");
        assert!(
            got == want,
            "{}:{}: `{}` printed, at its line {}:\n  {got}\nwhere the document quotes:\n  {want}\n(the whole output:\n{})",
            q.file,
            q.line + 1 + k,
            q.command,
            k + 1,
            printed.join("\n")
        );
    }
    assert_eq!(
        printed.len(),
        q.expected.len(),
        "{}:{}: `{}` printed {} lines, the document quotes {} (end the quote with `...` to quote a part)",
        q.file,
        q.line,
        q.command,
        printed.len(),
        q.expected.len()
    );
}

#[test]
fn quoted_command_outputs_are_what_the_binary_prints() {
    let mut files = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    files.extend(docs);
    let quoted: Vec<Quoted> = files.iter().flat_map(|f| quoted_outputs(f)).collect();
    assert!(quoted.len() >= 3, "the documents quote {} command outputs", quoted.len());
    let dir = workspace("all");
    for q in &quoted {
        check(q, &dir);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
