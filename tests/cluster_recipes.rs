//! The cluster recipes under examples/ (docs/cluster.md): each task runs the command the docs
//! name, and running every task of a recipe here, then its merge, gives the bytes of the same
//! sweep run on one machine. The grid and replications are shrunk by substitution so the test
//! stays short; everything else runs as written.

mod common;

use common::read_all;
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

#[test]
fn slurm_array_tasks_and_merge_reproduce_the_single_machine_sweep() {
    let script = read("examples/slurm/sweep.sbatch");
    let start = script.find("exec \"$FAULTLINE\" sweep").expect("the task's command");
    let command = one_line(&script[start..]);
    let command = command
        .replace("exec \"$FAULTLINE\" sweep \"$SCENARIO\"", "faultline sweep scenarios/metastability.toml")
        .replace(" \"${extra[@]}\"", "");
    docs_name(&command);
    let tasks: usize = script
        .lines()
        .find_map(|l| l.strip_prefix("#SBATCH --array=0-"))
        .and_then(|n| n.trim().parse::<usize>().ok())
        .expect("#SBATCH --array=0-N")
        + 1;

    let dir = workspace("slurm");
    std::fs::write(dir.join("sweep.sbatch"), shrink(&script)).unwrap();
    let faultline = dir.join("bin/faultline").display().to_string();
    for task in 0..tasks {
        let env = [
            ("FAULTLINE", faultline.clone()),
            ("OUT", "shards".to_string()),
            ("EXTRA_ARGS", SHORTER.to_string()),
            ("SLURM_ARRAY_TASK_ID", task.to_string()),
            ("SLURM_ARRAY_TASK_COUNT", tasks.to_string()),
            ("SLURM_CPUS_PER_TASK", "1".to_string()),
        ];
        shell("bash", &["sweep.sbatch"], &dir, &env);
    }
    let merge = Path::new(ROOT).join("examples/slurm/merge.sbatch").display().to_string();
    let env = [
        ("FAULTLINE", faultline),
        ("OUT", "shards".to_string()),
        ("SHARDS", tasks.to_string()),
        ("MERGED", "merged".to_string()),
    ];
    shell("bash", &[&merge], &dir, &env);
    let reference = single_machine(&dir);
    assert!(read_all(&dir.join("merged")) == read_all(&reference), "Slurm shards merged differ from one machine");
    std::fs::remove_dir_all(&dir).unwrap();
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
