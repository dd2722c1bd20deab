//! The pull-request gate recipe, examples/github-actions/gate.yml: its gate command is the one
//! README.md and docs/scenario.md show, and its steps, run here with bash in a git checkout
//! whose `origin` has a `main`, gate the pull request's scenario against main's version and
//! leave the JUnit report the publishing step reads.

use serde_yaml::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const RECIPE: &str = "examples/github-actions/gate.yml";

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn recipe() -> Value {
    serde_yaml::from_str(&read(RECIPE)).unwrap_or_else(|e| panic!("{RECIPE} is not YAML: {e}"))
}

fn env(recipe: &Value, name: &str) -> String {
    recipe["env"][name].as_str().unwrap_or_else(|| panic!("{RECIPE} sets no env.{name}")).to_string()
}

fn step<'a>(recipe: &'a Value, name: &str) -> &'a Value {
    let steps = recipe["jobs"]["gate"]["steps"].as_sequence().expect("jobs.gate.steps");
    steps.iter().find(|s| s["name"].as_str() == Some(name)).unwrap_or_else(|| panic!("{RECIPE} has no step `{name}`"))
}

fn run_script<'a>(recipe: &'a Value, name: &str) -> &'a str {
    step(recipe, name)["run"].as_str().unwrap_or_else(|| panic!("step `{name}` has no run script"))
}

/// The faultline command lines of a script, with the workflow's variables filled in and the
/// binary named as the docs name it.
fn faultline_lines(recipe: &Value, script: &str) -> Vec<String> {
    script
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("faultline "))
        .map(|l| {
            l.replace("\"$SCENARIO\"", &env(recipe, "SCENARIO"))
                .replace("\"$POLICY\"", &env(recipe, "POLICY"))
                .replace("target/release/faultline", "faultline")
        })
        .collect()
}

#[test]
fn the_recipe_runs_the_gate_the_docs_name() {
    let recipe = recipe();
    let lines = faultline_lines(&recipe, run_script(&recipe, "gate"));
    let gate = "faultline gate scenarios/meeting-analysis-incident.toml --candidate resilient --baseline-scenario base.toml --junit gate.xml";
    let new_file = "faultline gate scenarios/meeting-analysis-incident.toml --candidate resilient --thresholds-only --junit gate.xml";
    assert_eq!(lines, [gate, new_file], "the gate step's commands");
    for doc in ["README.md", "docs/scenario.md"] {
        let text = read(doc);
        assert!(text.lines().any(|l| l.trim() == gate), "{doc} does not show the recipe's command\n{gate}");
        assert!(text.contains(RECIPE), "{doc} does not point to {RECIPE}");
    }
    // main's version is what the gate compares with, and the report it writes is published.
    let fetch = run_script(&recipe, "main's version of the scenario");
    assert!(fetch.contains("git fetch --no-tags --depth=1 origin main"), "{fetch}");
    assert!(fetch.contains("git show \"origin/main:$SCENARIO\" > base.toml"), "{fetch}");
    let publish = step(&recipe, "publish the report");
    assert!(publish["uses"].as_str().unwrap().starts_with("mikepenz/action-junit-report@"), "{publish:?}");
    assert_eq!(publish["with"]["report_paths"].as_str(), Some("gate.xml"));
    assert!(publish["if"].as_str().unwrap().contains("!cancelled()"), "the report is published when the gate fails");
    // The binary the gate step runs is the one the build step builds.
    assert!(run_script(&recipe, "build faultline").contains("cargo build --release --locked"));
}

/// Runs `program args` in `dir`; `git` gets an identity and no user configuration.
fn sh(dir: &Path, program: &str, args: &[&str], env: &[(&str, String)]) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap_or_else(|e| panic!("start {program}: {e}"))
}

fn ok(o: Output, what: &str) -> Output {
    assert!(
        o.status.success(),
        "{what}\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// A repository whose `main` holds the shipped scenario, and a checkout of it (the pull
/// request's working tree) with target/release/faultline linked to this build.
fn checkout(name: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("faultline-gate-recipe-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let origin = dir.join("origin");
    std::fs::create_dir_all(origin.join("scenarios")).unwrap();
    let incident = "scenarios/meeting-analysis-incident.toml";
    std::fs::copy(Path::new(ROOT).join(incident), origin.join(incident)).unwrap();
    ok(sh(&origin, "git", &["init", "-q", "-b", "main"], &[]), "git init");
    ok(sh(&origin, "git", &["add", "."], &[]), "git add");
    ok(sh(&origin, "git", &["commit", "-q", "-m", "main"], &[]), "git commit");
    let url = format!("file://{}", origin.display());
    ok(sh(&dir, "git", &["clone", "-q", &url, "pr"], &[]), "git clone");
    let pr = dir.join("pr");
    std::fs::create_dir_all(pr.join("target/release")).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_faultline"), pr.join("target/release/faultline")).unwrap();
    (dir, pr)
}

/// Runs the recipe's two steps in the checkout, as GitHub Actions does (bash -e).
fn run_steps(pr: &Path, scenario: &str) -> Output {
    let recipe = recipe();
    let vars = [("SCENARIO", scenario.to_string()), ("POLICY", env(&recipe, "POLICY"))];
    let _ = std::fs::remove_file(pr.join("gate.xml"));
    let fetch = run_script(&recipe, "main's version of the scenario");
    ok(sh(pr, "bash", &["-e", "-c", fetch], &vars), fetch);
    sh(pr, "bash", &["-e", "-c", run_script(&recipe, "gate")], &vars)
}

#[test]
fn the_recipe_gates_a_pull_request_against_mains_scenario() {
    let (dir, pr) = checkout("pr");
    let scenario = env(&recipe(), "SCENARIO");
    // An unchanged scenario passes: every paired difference with main is 0.
    let o = ok(run_steps(&pr, &scenario), "gate on an unchanged scenario");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("baseline `resilient` of base.toml"), "{out}");
    assert!(out.trim_end().ends_with("6 passed, 0 failed: PASS"), "{out}");
    assert_eq!(std::fs::read_to_string(pr.join("base.toml")).unwrap(), read(&scenario), "base.toml is main's version");
    let xml = std::fs::read_to_string(pr.join("gate.xml")).expect("the report the publishing step reads");
    assert!(xml.contains(r#"tests="6" failures="0""#), "{xml}");

    // The pull request makes every primary model call a third dearer: cost per success
    // regresses by more than 10 % against main, the step fails with 99 and the report says why.
    let path = pr.join(&scenario);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("cost_units = 3\n"));
    std::fs::write(&path, text.replacen("cost_units = 3\n", "cost_units = 4\n", 1)).unwrap();
    let o = run_steps(&pr, &scenario);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(99), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    let failed = |check: &str| out.lines().any(|l| l.starts_with("FAIL ") && l.contains(check));
    assert!(failed("cost_per_success (candidate - baseline) <= 10%"), "{out}");
    let xml = std::fs::read_to_string(pr.join("gate.xml")).unwrap();
    assert!(xml.contains(r#"tests="6" failures="1""#), "{xml}");
    assert!(xml.contains(r#"<failure message="cost_per_success (candidate - baseline) &lt;= 10%: "#), "{xml}");

    // A scenario that main does not have yet is gated on its thresholds alone.
    std::fs::copy(Path::new(ROOT).join(&scenario), pr.join("scenarios/new.toml")).unwrap();
    let o = ok(run_steps(&pr, "scenarios/new.toml"), "gate on a new scenario");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.trim_end().ends_with("4 passed, 0 failed, 2 skipped: PASS"), "{out}");
    assert!(!pr.join("base.toml").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The incident's `incident.*` regression check needs a fault window: with the faults removed
/// the file still runs (README's no-fault column) and the check is left out, while a misspelt
/// incident name is still refused.
#[test]
fn an_incident_check_is_left_out_where_no_fault_makes_an_incident_window() {
    let bin = env!("CARGO_BIN_EXE_faultline");
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/meeting-analysis-incident.toml");
    let validated = std::process::Command::new(bin).arg("validate").arg(file).output().unwrap();
    assert!(String::from_utf8_lossy(&validated.stdout).contains("2 regression checks"), "{validated:?}");
    let dir = std::env::temp_dir().join(format!("faultline-no-incident-window-{}", std::process::id()));
    let run = |sets: &[&str]| {
        let _ = std::fs::remove_dir_all(&dir);
        let mut c = std::process::Command::new(bin);
        c.arg("run").arg(file).args(["--policy", "resilient", "--replications", "1", "--out"]).arg(&dir);
        for s in sets {
            c.args(["--set", s]);
        }
        let o = c.output().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        o
    };
    let no_fault = run(&["fault=[]"]);
    assert_eq!(no_fault.status.code(), Some(0), "{}", String::from_utf8_lossy(&no_fault.stderr));
    let misspelt = run(&["fault=[]", r#"slo.regression={ "incident.retry_amplification" = ["<= 1%"] }"#]);
    assert_eq!(misspelt.status.code(), Some(2), "{misspelt:?}");
    assert!(String::from_utf8_lossy(&misspelt.stderr).contains("incident.retry_amplification"), "{misspelt:?}");
}
