//! The cluster recipes under examples/ (docs/cluster.md): each task runs the command the docs
//! name, and running every task of a recipe here, then its merge, gives the bytes of the same
//! sweep run on one machine. The grid and replications are shrunk by substitution so the test
//! stays short; everything else runs as written.

mod common;

use common::read_all;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The documented grid, and the small one the test runs instead.
const SHRINK: [(&str, &str); 3] = [
    ("fault.0.servers=20,30,40,50,60,70", "fault.0.servers=40,60"),
    ("fault.0.duration_s=5,10,20,40", "fault.0.duration_s=3,10"),
    ("--replications 16", "--replications 1"),
];
const SHORTER: &str = "--set simulation.duration_s=250";

fn shrink(text: &str) -> String {
    let mut text = text.to_string();
    for (from, to) in SHRINK {
        assert!(text.contains(from), "the recipe no longer contains `{from}`: update the test and docs together");
        text = text.replace(from, to);
    }
    text
}

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn one_line(text: &str) -> String {
    text.replace("\\\n", " ").split_whitespace().collect::<Vec<_>>().join(" ")
}

fn docs_name(command: &str) {
    let docs = read("docs/cluster.md");
    assert!(docs.lines().any(|l| l.trim() == command), "docs/cluster.md does not show the command\n{command}");
}

/// A folder laid out like a checkout: bin/faultline (this build) and scenarios/.
fn workspace(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("faultline-recipe-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_faultline"), dir.join("bin/faultline")).unwrap();
    std::os::unix::fs::symlink(Path::new(ROOT).join("scenarios"), dir.join("scenarios")).unwrap();
    dir
}

/// Runs `program args...` in `dir` with bin/ first on PATH.
fn shell(program: &str, args: &[&str], dir: &Path, env: &[(&str, String)]) {
    let path = format!("{}:{}", dir.join("bin").display(), std::env::var("PATH").unwrap_or_default());
    let script_or_file = args.last().copied().unwrap_or_default();
    let o = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("PATH", path)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap();
    assert!(o.status.success(), "{script_or_file}\n{}", String::from_utf8_lossy(&o.stderr));
}

/// The same sweep on one machine, as the reference.
fn single_machine(dir: &Path) -> PathBuf {
    let out = dir.join("single");
    let command = shrink(
        "faultline sweep scenarios/metastability.toml --policy naive --policy retry_budget \
         --param fault.0.servers=20,30,40,50,60,70 --param fault.0.duration_s=5,10,20,40 --replications 16",
    );
    shell("sh", &["-c", &format!("{command} {SHORTER} --jobs 2 --out single")], dir, &[]);
    out
}

/// Runs examples/slurm/sweep.sbatch in `dir` as array task `task`, with `env` on top.
fn slurm_task(dir: &Path, task: usize, count: usize, env: &[(&str, String)]) -> std::process::Output {
    let script = Path::new(ROOT).join("examples/slurm/sweep.sbatch");
    let path = format!("{}:{}", dir.join("bin").display(), std::env::var("PATH").unwrap_or_default());
    Command::new("bash")
        .arg(script)
        .current_dir(dir)
        .env("PATH", path)
        .env("SLURM_ARRAY_TASK_ID", task.to_string())
        .env("SLURM_ARRAY_TASK_COUNT", count.to_string())
        .env_remove("SHARDS")
        .env_remove("EXTRA_ARGS")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap()
}

/// The arguments a task of the recipe passes to faultline, recorded by a stand-in binary.
fn slurm_arguments(dir: &Path, task: usize, count: usize, env: &[(&str, String)]) -> Vec<String> {
    let record = dir.join("bin/record");
    std::fs::write(&record, "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$RECORDED\"\n").unwrap();
    std::fs::set_permissions(&record, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let recorded = dir.join("recorded");
    let mut env: Vec<(&str, String)> = env.to_vec();
    env.push(("FAULTLINE", "record".into()));
    env.push(("RECORDED", recorded.display().to_string()));
    let o = slurm_task(dir, task, count, &env);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(&recorded).unwrap().lines().map(str::to_string).collect()
}

#[test]
fn slurm_tasks_run_the_documented_command_and_pass_extra_arguments_whole() {
    let dir = workspace("slurm-arguments");
    // With the recipe's defaults, task 0 of the 8 of `#SBATCH --array=0-7` runs what the docs show.
    let script = read("examples/slurm/sweep.sbatch");
    assert!(script.lines().any(|l| l == "#SBATCH --array=0-7"), "the array is 0-7");
    assert!(!script.contains("--cpus-per-task"), "CPUs per task are the submitter's choice");
    let documented = "faultline sweep scenarios/metastability.toml --policy naive --policy retry_budget --param fault.0.servers=20,30,40,50,60,70 --param fault.0.duration_s=5,10,20,40 --replications 16 --shard \"$SLURM_ARRAY_TASK_ID/$SHARDS\" --resume --jobs \"${SLURM_CPUS_PER_TASK:-1}\" --out \"$OUT\"";
    docs_name(documented);
    let expected: Vec<String> = documented
        .replace("\"$SLURM_ARRAY_TASK_ID/$SHARDS\"", "0/8")
        .replace("\"${SLURM_CPUS_PER_TASK:-1}\"", "1")
        .replace("\"$OUT\"", "results/metastability-shards")
        .split_whitespace()
        .skip(1)
        .map(str::to_string)
        .collect();
    assert_eq!(slurm_arguments(&dir, 0, 8, &[]), expected);
    // A rerun of shard 3 alone (`SHARDS=8 sbatch --array=3`): Slurm counts one task.
    let rerun = slurm_arguments(&dir, 3, 1, &[("SHARDS", "8".into())]);
    assert!(rerun.windows(2).any(|w| w == ["--shard", "3/8"]), "{rerun:?}");
    // EXTRA_ARGS is split as a shell would split it, and never run: the scenario file's own example.
    let codel = "dependency.backend.queue_policy.codel={ target_ms = 5, interval_ms = 100 }";
    let extra = format!("--set '{codel}' --set \"simulation.seed=7\" --set simulation.replications=$(false)");
    let args = slurm_arguments(&dir, 0, 8, &[("EXTRA_ARGS", extra)]);
    assert!(args.windows(2).any(|w| w == ["--set", codel]), "{args:?}");
    assert!(args.windows(2).any(|w| w == ["--set", "simulation.seed=7"]), "{args:?}");
    assert!(args.windows(2).any(|w| w == ["--set", "simulation.replications=$(false)"]), "{args:?}");
    // An unbalanced quote stops the task (exit 2) rather than cutting the arguments short.
    let env = [("FAULTLINE", "record".to_string()), ("EXTRA_ARGS", "--set 'a = 1' --x 'unterminated".to_string())];
    let o = slurm_task(&dir, 0, 8, &env);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("EXTRA_ARGS does not split"));
    // No policies, no parameters and no extra arguments: an empty list under `set -u`.
    let bare = slurm_arguments(&dir, 0, 8, &[("POLICIES", String::new()), ("PARAMS", String::new())]);
    assert_eq!(bare[..2], ["sweep", "scenarios/metastability.toml"]);
    assert_eq!(bare[2], "--replications");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn slurm_array_tasks_a_rerun_shard_and_merge_reproduce_the_single_machine_sweep() {
    let dir = workspace("slurm");
    let faultline = dir.join("bin/faultline").display().to_string();
    // The small grid of `single_machine`, through the recipe's variables.
    let small = [
        ("FAULTLINE", faultline.clone()),
        ("OUT", "shards".to_string()),
        ("PARAMS", "fault.0.servers=40,60 fault.0.duration_s=3,10".to_string()),
        ("REPLICATIONS", "1".to_string()),
        ("EXTRA_ARGS", SHORTER.to_string()),
        ("SLURM_CPUS_PER_TASK", "1".to_string()),
    ];
    for task in 0..4 {
        let o = slurm_task(&dir, task, 4, &small);
        assert!(o.status.success(), "task {task}: {}", String::from_utf8_lossy(&o.stderr));
    }
    // Shard 2 again, alone, as `SHARDS=4 sbatch --array=2` runs it: it resumes its own file's sweep.
    let mut rerun = small.to_vec();
    rerun.push(("SHARDS", "4".into()));
    let o = slurm_task(&dir, 2, 1, &rerun);
    assert!(o.status.success(), "rerun: {}", String::from_utf8_lossy(&o.stderr));
    let merge = Path::new(ROOT).join("examples/slurm/merge.sbatch").display().to_string();
    let env = [
        ("FAULTLINE", faultline),
        ("OUT", "shards".to_string()),
        ("SHARDS", "4".to_string()),
        ("MERGED", "merged".to_string()),
    ];
    shell("bash", &[&merge], &dir, &env);
    let reference = single_machine(&dir);
    assert!(read_all(&dir.join("merged")) == read_all(&reference), "Slurm shards merged differ from one machine");
    // A missing shard: merge names it.
    std::fs::remove_file(dir.join("shards/shard-1-of-4.jsonl")).unwrap();
    let o = Command::new("bash")
        .arg(&merge)
        .current_dir(&dir)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env("MERGED", "again")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the set is incomplete: shard(s) 1 of 4"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A stand-in `sbatch --wait --array=0-(N-1) [--cpus-per-task=C] [options] SCRIPT ARGS...`:
/// runs every array task of SCRIPT in turn with Slurm's variables, fails if one fails.
const FAKE_SBATCH: &str = r#"#!/usr/bin/env bash
set -euo pipefail
array= cpus=1
while [[ $1 == -* ]]; do
  case $1 in
    --array=*) array=${1#--array=} ;;
    --cpus-per-task=*) cpus=${1#--cpus-per-task=} ;;
  esac
  shift
done
script=$1; shift
last=${array#0-}
for ((k = 0; k <= last; k++)); do
  SLURM_ARRAY_TASK_ID=$k SLURM_ARRAY_TASK_COUNT=$((last + 1)) SLURM_CPUS_PER_TASK=$cpus bash "$script" "$@"     >> "sbatch-$k.log" 2>&1
done
"#;

/// The tune recipe (examples/slurm/tune.sh) with a stand-in sbatch: round after round of
/// array tasks and merges, it writes the files of the same tune on one machine, byte for byte.
#[test]
fn slurm_tune_rounds_of_array_tasks_reproduce_the_single_machine_tune() {
    let dir = workspace("slurm-tune");
    let sbatch = dir.join("bin/sbatch");
    std::fs::write(&sbatch, FAKE_SBATCH).unwrap();
    std::fs::set_permissions(&sbatch, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let tune = "scenarios/metastability.toml -p backoff --space policy.backoff.timeout_ms=500..3000:500 \
                --objective max:auto_completion_ratio --objective min:run_latency_ms.p95 --replications 6 \
                --set simulation.duration_s=180";
    let recipe = Path::new(ROOT).join("examples/slurm/tune.sh").display().to_string();
    let env = [("SHARDS", "3".to_string()), ("CPUS_PER_TASK", "2".to_string())];
    shell("sh", &["-c", &format!("{recipe} {tune} -o sharded > recipe.log")], &dir, &env);
    shell("sh", &["-c", &format!("faultline tune {tune} -o single > /dev/null")], &dir, &[]);
    assert!(
        read_all(&dir.join("sharded")) == read_all(&dir.join("single")),
        "the Slurm tune differs from one machine's"
    );
    let log = std::fs::read_to_string(dir.join("recipe.log")).unwrap();
    assert!(log.contains("needs its shards") && log.contains("wrote "), "{log}");
    let task_log = std::fs::read_to_string(dir.join("sbatch-2.log")).unwrap();
    assert!(task_log.contains("shard 2 of 3"), "{task_log}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The recipe as docs/cluster.md tells a user to run it, on a real single-node Slurm:
/// tests/slurm/real-slurm.sh. Skipped, loudly, where Slurm is not installed, unless
/// FAULTLINE_REQUIRE_SLURM=1 (set by .ci/run when it installed the packages).
#[test]
fn the_slurm_recipe_runs_on_a_real_slurm() {
    let o = Command::new("bash")
        .arg(Path::new(ROOT).join("tests/slurm/real-slurm.sh"))
        .arg(env!("CARGO_BIN_EXE_faultline"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let required = std::env::var("FAULTLINE_REQUIRE_SLURM").is_ok_and(|v| v == "1");
    if o.status.code() == Some(77) && !required {
        // Straight to the process's stderr, which the harness does not capture.
        let _ = writeln!(std::io::stderr(), "\n*** NOT RUN: the real-Slurm recipe test. {} ***\n", stdout.trim());
        return;
    }
    assert!(o.status.success(), "real Slurm:\n{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    eprintln!("real Slurm:\n{stdout}");
    assert!(stdout.contains("rerun of shard 2 merged = one machine"), "{stdout}");
    assert!(stdout.contains("tune on Slurm = one machine"), "{stdout}");
}

fn yaml(path: &str) -> serde_yaml::Value {
    serde_yaml::from_str(&read(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The container's `sh -c` script and environment.
fn container(job: &serde_yaml::Value) -> (String, Vec<(String, String)>) {
    let c = &job["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["command"], serde_yaml::from_str::<serde_yaml::Value>("[sh, -c]").unwrap());
    let script = c["args"][0].as_str().expect("one script").to_string();
    let env = c["env"]
        .as_sequence()
        .map(|s| {
            s.iter()
                .map(|e| (e["name"].as_str().unwrap().to_string(), e["value"].as_str().unwrap().to_string()))
                .collect()
        })
        .unwrap_or_default();
    (script, env)
}

#[test]
fn kubernetes_indexed_job_and_merge_job_reproduce_the_single_machine_sweep() {
    let job = yaml("examples/kubernetes/sweep-job.yaml");
    assert_eq!(job["spec"]["completionMode"].as_str(), Some("Indexed"));
    let completions = job["spec"]["completions"].as_u64().expect("completions") as usize;
    let (script, env) = container(&job);
    docs_name(&one_line(&script));
    assert!(env.contains(&("SHARDS".to_string(), completions.to_string())), "SHARDS must equal completions");

    let dir = workspace("kubernetes");
    std::fs::create_dir_all(dir.join("results")).unwrap();
    let local = |s: &str| {
        s.replace("/scenarios/", &format!("{}/scenarios/", dir.display()))
            .replace("/results/", &format!("{}/results/", dir.display()))
    };
    for index in 0..completions {
        let mut vars: Vec<(&str, String)> = env.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        vars.push(("JOB_COMPLETION_INDEX", index.to_string()));
        shell("sh", &["-c", &format!("{} {SHORTER}", local(&shrink(&script)))], &dir, &vars);
    }
    let (merge, merge_env) = container(&yaml("examples/kubernetes/merge-job.yaml"));
    let vars: Vec<(&str, String)> = merge_env.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
    shell("sh", &["-c", &local(&merge)], &dir, &vars);
    let reference = single_machine(&dir);
    let merged = dir.join("results/metastability-sweep");
    assert!(read_all(&merged) == read_all(&reference), "Kubernetes shards merged differ from one machine");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The `run` text of the step with this name in this job.
fn step(workflow: &serde_yaml::Value, job: &str, name: &str) -> String {
    workflow["jobs"][job]["steps"]
        .as_sequence()
        .and_then(|steps| steps.iter().find(|s| s["name"].as_str() == Some(name)))
        .and_then(|s| s["run"].as_str())
        .unwrap_or_else(|| panic!("job {job} has no step `{name}` with a run"))
        .to_string()
}

#[test]
fn github_actions_matrix_and_merge_reproduce_the_single_machine_sweep() {
    let workflow = yaml("examples/github-actions/sweep.yml");
    let shards: Vec<u64> = workflow["jobs"]["shard"]["strategy"]["matrix"]["shard"]
        .as_sequence()
        .expect("matrix.shard")
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(shards, (0..shards.len() as u64).collect::<Vec<_>>(), "the matrix numbers shards from 0");
    let sweep = step(&workflow, "shard", "sweep one shard");
    assert!(sweep.contains(&format!("--shard ${{{{ matrix.shard }}}}/{}", shards.len())), "{sweep}");
    let merge = step(&workflow, "merge", "merge the shards");
    let docs = read("docs/cluster.md");
    assert!(docs.contains(&merge.replace("bin/faultline", "faultline")), "docs/cluster.md does not show {merge}");

    let dir = workspace("github-actions");
    for shard in &shards {
        let command = shrink(&sweep).replace("${{ matrix.shard }}", &shard.to_string());
        shell("bash", &["-c", &format!("{command} {SHORTER}")], &dir, &[]);
    }
    shell("bash", &["-c", &merge], &dir, &[]);
    let reference = single_machine(&dir);
    let merged = dir.join("metastability-sweep");
    assert!(read_all(&merged) == read_all(&reference), "GitHub Actions shards merged differ from one machine");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A recipe, the validator of its schema, and a field renamed in a copy the validator must refuse.
struct SchemaCheck {
    program: &'static str,
    args: &'static [&'static str],
    recipe: &'static str,
    rename: (&'static str, &'static str),
}

/// Runs a schema validator; None when it is not installed.
fn validate(program: &str, args: &[&str], file: &Path) -> Option<std::process::Output> {
    Command::new(program).args(args).arg(file).output().ok()
}

/// The Kubernetes manifests against the Kubernetes API's schema (kubernetes-validate --strict,
/// which rejects unknown fields) and the GitHub Actions workflows against theirs
/// (check-jsonschema's vendored github-workflows schema), each shown to refuse a broken copy.
/// Both come from PyPI; skipped, loudly, where they are not installed, unless
/// FAULTLINE_REQUIRE_VALIDATORS=1 (set by .ci/run when it installed them).
#[test]
fn the_kubernetes_and_github_actions_recipes_validate_against_their_schemas() {
    const KUBERNETES: &[&str] = &["--strict"];
    const WORKFLOWS: &[&str] = &["--builtin-schema", "vendor.github-workflows"];
    let checks = [
        SchemaCheck {
            program: "kubernetes-validate",
            args: KUBERNETES,
            recipe: "examples/kubernetes/sweep-job.yaml",
            rename: ("completionMode:", "completionMod:"),
        },
        SchemaCheck {
            program: "kubernetes-validate",
            args: KUBERNETES,
            recipe: "examples/kubernetes/merge-job.yaml",
            rename: ("restartPolicy:", "restartPolicey:"),
        },
        SchemaCheck {
            program: "check-jsonschema",
            args: WORKFLOWS,
            recipe: "examples/github-actions/sweep.yml",
            rename: ("runs-on:", "runs_on:"),
        },
        SchemaCheck {
            program: "check-jsonschema",
            args: WORKFLOWS,
            recipe: "examples/github-actions/gate.yml",
            rename: ("runs-on:", "runs_on:"),
        },
    ];
    let required = std::env::var("FAULTLINE_REQUIRE_VALIDATORS").is_ok_and(|v| v == "1");
    let dir = std::env::temp_dir().join(format!("faultline-schemas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for SchemaCheck { program, args, recipe, rename: (from, to) } in checks {
        let extension = Path::new(recipe).extension().unwrap().to_str().unwrap();
        let Some(o) = validate(program, args, &Path::new(ROOT).join(recipe)) else {
            assert!(!required, "{program} is not installed");
            let _ = writeln!(
                std::io::stderr(),
                "\n*** NOT RUN: {recipe} against its schema: {program} is not installed (pip install {program}) ***\n"
            );
            continue;
        };
        assert!(
            o.status.success(),
            "{recipe}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        let text = read(recipe);
        assert!(text.contains(from), "{recipe} has no `{from}`");
        let broken = dir.join(format!("broken.{extension}"));
        std::fs::write(&broken, text.replacen(from, to, 1)).unwrap();
        let o = validate(program, args, &broken).unwrap();
        assert!(!o.status.success(), "{program} accepted {recipe} with `{from}` renamed `{to}`");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
