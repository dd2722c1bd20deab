//! `faultline tune` from outside: its front is the exhaustive grid's at a fraction of the
//! simulations, the same bytes for any thread count, runnable scenario files, and clear
//! refusals.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn faultline(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_faultline")).args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("faultline-tune-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn ok(args: &[&str]) -> String {
    let o = faultline(args);
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The front as (candidate, status) from front.csv.
fn front(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("front.csv")).unwrap();
    text.lines().skip(1).map(|l| l.split(',').next().unwrap().to_string()).collect()
}

fn front_json(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("front.json")).unwrap()).unwrap()
}

fn simulations(dir: &Path) -> u64 {
    front_json(dir)["simulations"].as_u64().unwrap()
}

/// A timeout against completion and latency, with retries that overload the backend: 48
/// candidates (a single attempt makes the backoff irrelevant, so 6 of those are twins) and the
/// file's own values (5 attempts), 49 in all.
const SPACE: [&str; 17] = [
    "tune",
    "scenarios/metastability.toml",
    "-p",
    "backoff",
    "--space",
    "policy.backoff.timeout_ms=500..3000:500",
    "--space",
    "policy.backoff.retry.max_attempts=1..4",
    "--space",
    "policy.backoff.retry.backoff.base_ms=100,1000",
    "--objective",
    "max:auto_completion_ratio",
    "--objective",
    "min:run_latency_ms.p95",
    "--replications",
    "30",
    "--set",
];

#[test]
fn racing_finds_the_exhaustive_grids_front_for_a_quarter_of_its_simulations() {
    let (raced, grid) = (scratch("raced"), scratch("grid"));
    let short = "simulation.duration_s=180";
    ok(&[&SPACE[..], &[short, "-o", raced.to_str().unwrap()]].concat());
    // Every candidate at 30 replications from the start: the exhaustive grid, judged by the
    // same paired rule.
    ok(&[&SPACE[..], &[short, "--initial-replications", "30", "-o", grid.to_str().unwrap()]].concat());
    assert_eq!(front_json(&grid)["candidates"], 49);
    assert_eq!(simulations(&grid), 49 * 30);
    let spent = simulations(&raced);
    assert!(spent * 4 <= 49 * 30, "racing spent {spent} of the grid's {}", 49 * 30);
    assert_eq!(front(&raced), front(&grid));
    assert!(front(&grid).len() >= 3, "a real trade-off: {:?}", front(&grid));
    // The file's own policy (timeout 3 s, 5 attempts) is beaten: the tune says by whom.
    let current = &front_json(&raced)["current"];
    assert_eq!(current["candidate"], 48);
    assert_eq!(current["status"], "beaten", "{current}");
    std::fs::remove_dir_all(&raced).unwrap();
    std::fs::remove_dir_all(&grid).unwrap();
}

#[test]
fn a_tune_is_the_same_bytes_for_any_thread_count_and_its_front_files_run() {
    let base = [
        "tune",
        "scenarios/metastability.toml",
        "-p",
        "backoff",
        "--space",
        "policy.backoff.timeout_ms=1000..3000:1000",
        "--space",
        "policy.backoff.retry.backoff.base_ms=50.0..2000.0",
        "--candidates",
        "6",
        "--objective",
        "max:auto_completion_ratio",
        "--objective",
        "min:run_latency_ms.p95",
        "--replications",
        "6",
        "--set",
        "simulation.duration_s=200",
    ];
    let (one, two) = (scratch("jobs-1"), scratch("jobs-2"));
    let a = ok(&[&base[..], &["--jobs", "1", "-o", one.to_str().unwrap()]].concat());
    let b = ok(&[&base[..], &["--jobs", "2", "-o", two.to_str().unwrap()]].concat());
    let strip = |s: &str, d: &Path| s.replace(d.to_str().unwrap(), "OUT");
    assert_eq!(strip(&a, &one), strip(&b, &two));
    for name in ["candidates.csv", "front.csv", "front.json"] {
        assert_eq!(std::fs::read(one.join(name)).unwrap(), std::fs::read(two.join(name)).unwrap(), "{name}");
    }
    // A continuous dimension gives decimals from a Latin hypercube: 6 distinct candidates, and
    // the file's own values (base_ms 500) as a seventh.
    let candidates = std::fs::read_to_string(one.join("candidates.csv")).unwrap();
    assert_eq!(candidates.lines().count(), 1 + 7);
    assert!(candidates.lines().last().unwrap().starts_with("6,true,0,3000,500,"), "{candidates}");
    check_report(&one);
    // Each front point is a runnable scenario with the candidate's values.
    let first = front(&one)[0].clone();
    let file = one.join(format!("front-{first}.toml"));
    let copy =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(format!("tune-front-{}.toml", std::process::id()));
    std::fs::copy(&file, &copy).unwrap();
    let out = scratch("front-run");
    let run = faultline(&[
        "run",
        copy.to_str().unwrap(),
        "-p",
        "backoff",
        "--replications",
        "2",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    // gate --front: the front point itself is on the front; a 500 ms timeout, far below the
    // searched range's completion, is not (exit 99), and the JUnit report has the check.
    let front_file = one.join("front.json");
    let gate = |scenario: &str, extra: &[&str]| {
        let args = [
            &["gate", scenario, "--candidate", "backoff", "--front", front_file.to_str().unwrap()][..],
            &["--replications", "6", "--set", "simulation.duration_s=200"],
            extra,
        ]
        .concat();
        faultline(&args)
    };
    let on = gate(copy.to_str().unwrap(), &["--front-tolerance", "10"]);
    std::fs::remove_file(&copy).unwrap();
    assert_eq!(on.status.code(), Some(0), "{}", String::from_utf8_lossy(&on.stdout));
    let junit = out.join("gate.xml");
    let off = gate(
        "scenarios/metastability.toml",
        &["--set", "policy.backoff.timeout_ms=500", "--front-tolerance", "1", "--junit", junit.to_str().unwrap()],
    );
    let text = String::from_utf8_lossy(&off.stdout);
    assert_eq!(off.status.code(), Some(99), "{text}");
    assert!(text.contains("FAIL") && text.contains("off the front of"), "{text}");
    assert!(std::fs::read_to_string(&junit).unwrap().contains("off the front of"));
    for d in [one, two, out] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

/// report.html parses as XML and draws what the files say: one chart for two objectives, a
/// coloured point per front candidate (the current one ringed instead), a grey dot per
/// candidate that left the race, each kind once more in the legend.
fn check_report(dir: &Path) {
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let mut reader = quick_xml::Reader::from_str(&html);
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!("report.html is not well-formed at byte {}: {e}", reader.buffer_position()),
        }
    }
    assert_eq!(html.matches("<svg class=\"chart\"").count(), 1);
    let doc = front_json(dir);
    let current = doc["current"]["candidate"].as_u64().unwrap();
    let front: Vec<u64> = doc["front"].as_array().unwrap().iter().map(|f| f["candidate"].as_u64().unwrap()).collect();
    let all = doc["candidates"].as_u64().unwrap() as usize;
    let front_dots = front.iter().filter(|&&c| c != current).count();
    let left = all - front.len() - usize::from(!front.contains(&current));
    assert_eq!(html.matches(r#"r="4" fill"#).count(), front_dots + 1, "front points and the legend's");
    assert_eq!(html.matches(r#"r="7" fill="none""#).count(), 2, "the current values and the legend's");
    // What left the race far from the front is an arrow at the chart's edge, not a dot.
    let dots = html.matches(r##"r="2.5" fill="#bbb""##).count() + html.matches(r#"class="off""#).count();
    assert_eq!(dots, left + 1, "left the race, and the legend's");
}

#[test]
fn bad_arguments_are_refused_with_the_argument_named() {
    let refused = |extra: &[&str], want: &str| {
        let args = [&["tune", "scenarios/metastability.toml", "-p", "backoff"][..], extra].concat();
        let o = faultline(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    };
    let space = ["--space", "policy.backoff.timeout_ms=1000..3000:1000"];
    refused(&[&space[..], &["--objective", "max:completion"]].concat(), "no metric `completion`");
    refused(&[&space[..], &["--objective", "best:auto_completion_ratio"]].concat(), "write max:METRIC or min:METRIC");
    refused(
        &["--space", "policy.backoff.timeout_ms=3000..1000", "--objective", "max:auto_completion_ratio"],
        "from a low value",
    );
    refused(
        &["--space", "policy.backoff.nonsense=1,2", "--objective", "max:auto_completion_ratio"],
        "--space policy.backoff.nonsense=1,2",
    );
    refused(
        &[&space[..], &["--objective", "max:auto_completion_ratio", "--initial-replications", "1"]].concat(),
        "at least 2",
    );
    let o = faultline(&[
        "tune",
        "scenarios/metastability.toml",
        "-p",
        "nobody",
        "--space",
        "policy.backoff.timeout_ms=1,2",
        "--objective",
        "max:auto_completion_ratio",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

fn files_of(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect();
    out.sort();
    out
}

/// Killed once a round is in the checkpoint, a tune resumes from there and writes the
/// uninterrupted tune's files, byte for byte.
#[test]
fn a_killed_tune_resumes_to_the_uninterrupted_bytes() {
    let dir = scratch("resume");
    let args = |out: &Path| -> Vec<String> {
        [
            "tune",
            "scenarios/metastability.toml",
            "-p",
            "backoff",
            "--space",
            "policy.backoff.timeout_ms=500..3000:500",
            "--space",
            "policy.backoff.retry.max_attempts=1..4",
            "--objective",
            "max:auto_completion_ratio",
            "--objective",
            "min:run_latency_ms.p95",
            "--replications",
            "12",
            "--set",
            "simulation.duration_s=180",
            "--jobs",
            "1",
            "-o",
            out.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let reference = dir.join("reference");
    let a: Vec<String> = args(&reference);
    ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let out = dir.join("out");
    let checkpoint = dir.join(".out.faultline-checkpoint").join("tune.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(args(&out))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !checkpoint.exists() && started.elapsed() < std::time::Duration::from_secs(120) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let finished = child.try_wait().unwrap().is_some();
    let _ = child.kill();
    child.wait().unwrap();
    assert!(!finished && checkpoint.exists(), "the tune finished before a round was checkpointed");
    let mut resume = args(&out);
    resume.push("--resume".into());
    let text = ok(&resume.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(text.starts_with("resumed from the checkpoint at "), "{text}");
    assert_eq!(files_of(&out), files_of(&reference));
    assert!(!checkpoint.exists(), "the checkpoint is removed once the files are in place");
    // Nothing left to resume: the race starts again and says so.
    let again = ok(&resume.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(again.starts_with("nothing to resume"), "{again}");
    assert_eq!(files_of(&out), files_of(&reference));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--generations`: children of the front join the race with their generation, stay inside
/// the interval, and come out the same for any thread count.
#[test]
fn generations_add_children_near_the_front() {
    let base = [
        "tune",
        "scenarios/metastability.toml",
        "-p",
        "backoff",
        "--space",
        "policy.backoff.timeout_ms=500.0..4000.0",
        "--candidates",
        "6",
        "--generations",
        "2",
        "--objective",
        "max:auto_completion_ratio",
        "--objective",
        "min:run_latency_ms.p95",
        "--replications",
        "6",
        "--set",
        "simulation.duration_s=180",
    ];
    let (one, two) = (scratch("gen-1"), scratch("gen-2"));
    ok(&[&base[..], &["--jobs", "1", "-o", one.to_str().unwrap()]].concat());
    ok(&[&base[..], &["--jobs", "2", "-o", two.to_str().unwrap()]].concat());
    assert_eq!(files_of(&one), files_of(&two));
    let csv = std::fs::read_to_string(one.join("candidates.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    for g in ["1", "2"] {
        let children: Vec<&Vec<&str>> = rows.iter().filter(|r| r[2] == g).collect();
        assert!(!children.is_empty(), "generation {g}: {csv}");
        for c in children {
            let timeout: f64 = c[3].parse().unwrap();
            assert!((500.0..=4000.0).contains(&timeout), "{c:?}");
        }
    }
    std::fs::remove_dir_all(&one).unwrap();
    std::fs::remove_dir_all(&two).unwrap();
}

/// A tune on a cluster: every round split over 3 processes (`--shard K/3`, in any order, any
/// thread count), merged (`--merge-shards`) until the merge writes the files: the unsharded
/// tune's files, byte for byte, generations included. A missing shard and a shard of other
/// arguments are refused by name.
#[test]
fn a_sharded_tune_merged_round_by_round_is_the_unsharded_tune() {
    let base = [
        "tune",
        "scenarios/metastability.toml",
        "-p",
        "backoff",
        "--space",
        "policy.backoff.timeout_ms=500.0..4000.0",
        "--candidates",
        "6",
        "--generations",
        "1",
        "--objective",
        "max:auto_completion_ratio",
        "--objective",
        "min:run_latency_ms.p95",
        "--replications",
        "6",
        "--set",
        "simulation.duration_s=180",
    ];
    let dir = scratch("shards");
    let (whole, sharded) = (dir.join("whole"), dir.join("sharded"));
    ok(&[&base[..], &["-o", whole.to_str().unwrap()]].concat());
    let out = sharded.to_str().unwrap();
    let shards_dir = dir.join(".sharded.faultline-checkpoint");
    let mut rounds = 0;
    loop {
        rounds += 1;
        assert!(rounds < 20, "the merge never wrote the files");
        for (k, jobs) in [(2, "1"), (0, "2"), (1, "1")] {
            let text = ok(&[&base[..], &["-o", out, "--jobs", jobs, "--shard", &format!("{k}/3")]].concat());
            assert!(text.contains(&format!("shard {k} of 3")) || text.starts_with("the race needs no more"), "{text}");
        }
        if rounds == 1 {
            // A shard of other arguments (another seed: its first round too) is another tune's.
            let kept = std::fs::read(shards_dir.join("round-1-shard-1-of-3.json")).unwrap();
            ok(&[&base[..], &["-o", out, "--seed", "99", "--shard", "1/3"]].concat());
            let o = faultline(&[&base[..], &["-o", out, "--merge-shards"]].concat());
            assert_eq!(o.status.code(), Some(2));
            assert!(String::from_utf8_lossy(&o.stderr).contains("made by another tune"), "{o:?}");
            std::fs::write(shards_dir.join("round-1-shard-1-of-3.json"), kept).unwrap();
        }
        if rounds == 2 {
            // One shard lost: the merge names it and changes nothing.
            let lost = shards_dir.join("round-2-shard-1-of-3.json");
            let kept = std::fs::read(&lost).unwrap();
            std::fs::remove_file(&lost).unwrap();
            let o = faultline(&[&base[..], &["-o", out, "--merge-shards"]].concat());
            assert_eq!(o.status.code(), Some(2));
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains("round 2 is incomplete: shard(s) 1 of 3 (numbered from 0) are missing"), "{err}");
            std::fs::write(&lost, kept).unwrap();
        }
        let text = ok(&[&base[..], &["-o", out, "--merge-shards"]].concat());
        if text.contains("wrote ") {
            break;
        }
        assert!(text.contains("needs its shards"), "{text}");
    }
    assert!(rounds >= 3, "a tune of 2 generations races more than {rounds} round(s)");
    assert_eq!(files_of(&sharded), files_of(&whole));
    assert!(!shards_dir.exists(), "the shard files go with the checkpoint once the files are in place");
    std::fs::remove_dir_all(&dir).unwrap();
}
