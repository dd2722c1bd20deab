//! Tidy checks on the source tree: things that must never appear in simulation code.

use std::path::Path;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// No wall clock, no OS randomness, no hash containers (whose iteration order is random)
/// anywhere in src/. Progress bars read the clock inside indicatif, outside our code.
#[test]
fn no_wall_clock_os_randomness_or_hash_iteration_in_src() {
    let forbidden = [
        "Instant::now",
        "SystemTime",
        "thread_rng",
        "rand::rng()",
        "from_os_rng",
        "from_entropy",
        "OsRng",
        "SysRng",
        "getrandom",
        "HashMap",
        "HashSet",
        "RandomState",
    ];
    let mut files = Vec::new();
    rust_files(Path::new("src"), &mut files);
    assert!(files.len() > 20, "found only {} files: run from the crate root", files.len());
    let mut hits = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            for word in forbidden {
                if line.contains(word) {
                    hits.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(hits.is_empty(), "forbidden in simulation code:\n{}", hits.join("\n"));
}
