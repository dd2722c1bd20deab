//! Every `faultline` command in README.md and docs/*.md runs as written: each shell block's
//! commands run in order, in a folder laid out like a checkout (scenarios/ and examples/), with
//! the built binary first on PATH. Exit 0, or 99 for a verdict (a failed gate, a broken
//! invariant), passes; 1 or 2 fails the test. Only commands meant for a scheduler's task (they
//! read $SLURM_* or $JOB_COMPLETION_INDEX, tested by tests/cluster_recipes.rs) are left out.

use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The `faultline` commands of a Markdown file's sh blocks, continuation lines joined.
fn commands(file: &str) -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(ROOT).join(file)).unwrap();
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(start) = rest.find("```sh\n") {
        let block = &rest[start + 6..];
        let end = block.find("```").expect("a closed block");
        for line in block[..end].replace("\\\n", " ").lines() {
            let line = line.split("  #").next().unwrap().trim();
            if line.starts_with("faultline ") || line == "faultline" {
                out.push(line.to_string());
            }
        }
        rest = &block[end + 3..];
    }
    out
}

fn workspace(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("faultline-docs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_faultline"), dir.join("bin/faultline")).unwrap();
    for shared in ["scenarios", "examples"] {
        std::os::unix::fs::symlink(Path::new(ROOT).join(shared), dir.join(shared)).unwrap();
    }
    // `--baseline-scenario base.toml` stands for main's version of the file in a pull request.
    std::fs::copy(Path::new(ROOT).join("scenarios/meeting-analysis-incident.toml"), dir.join("base.toml")).unwrap();
    dir
}

/// Where a command writes its folder: its `-o`/`--out`, else its default (`results/<scenario>`
/// for run, with `-sweep`, `-explore` or `-tune` for the others), keyed by the command's name.
fn output_folder(command: &str) -> Option<String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let verb = *words.get(1)?;
    if !["run", "sweep", "explore", "tune"].contains(&verb) {
        return None;
    }
    if let Some(k) = words.iter().position(|w| *w == "-o" || *w == "--out") {
        return words.get(k + 1).map(|o| o.trim_end_matches('/').to_string());
    }
    let stem = Path::new(words.get(2)?).file_stem()?.to_string_lossy().into_owned();
    Some(if verb == "run" { format!("results/{stem}") } else { format!("results/{stem}-{verb}") })
}

/// README's tour: no command replaces the folder an earlier one wrote, and none writes into the
/// folder it runs in (the repository's root, for a user following it) but under results/. The
/// CI-only gate snippet's base.toml and gate.xml are the exception it states.
fn check_the_tour(list: &[String], dir: &Path) {
    let mut folders: Vec<(String, &str)> = Vec::new();
    for command in list {
        if let Some(folder) = output_folder(command) {
            if let Some((_, earlier)) = folders.iter().find(|(f, _)| *f == folder) {
                panic!(
                    "README.md: `{command}` replaces {folder}, which `{earlier}` wrote: give it its own -o results/..."
                );
            }
            folders.push((folder, command.as_str()));
        }
    }
    let allowed = ["bin", "scenarios", "examples", "results", "base.toml", "gate.xml"];
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(allowed.contains(&name.as_str()), "README.md's commands left {name} in the folder they ran in");
    }
}

fn run_all(file: &str) {
    let list = commands(file);
    assert!(!list.is_empty(), "{file} shows no faultline command");
    let dir = workspace(&file.replace(['/', '.'], "-"));
    let path = format!("{}:{}", dir.join("bin").display(), std::env::var("PATH").unwrap_or_default());
    for command in list.iter().filter(|c| !c.contains("$SLURM") && !c.contains("$JOB_COMPLETION_INDEX")) {
        let o = Command::new("sh").arg("-c").arg(command).current_dir(&dir).env("PATH", &path).output().unwrap();
        let code = o.status.code();
        assert!(
            matches!(code, Some(0) | Some(99)),
            "{file}: `{command}` exited {code:?}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    if file == "README.md" {
        check_the_tour(&list, &dir);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn readme_commands_run_as_written() {
    run_all("README.md");
}

#[test]
fn cluster_doc_commands_run_as_written() {
    run_all("docs/cluster.md");
}

#[test]
fn scenario_doc_commands_run_as_written() {
    run_all("docs/scenario.md");
}

#[test]
fn trace_doc_commands_run_as_written() {
    run_all("docs/trace.md");
}

#[test]
fn export_doc_commands_run_as_written() {
    run_all("docs/export.md");
}

#[test]
fn import_doc_commands_run_as_written() {
    run_all("docs/import.md");
}

#[test]
fn tune_doc_commands_run_as_written() {
    run_all("docs/tune.md");
}
