//! `faultline import grpc-service-config` from outside: the binary reads the files in
//! tests/data/import, and what it writes is checked line by line (golden lines), appended to a
//! small scenario that `validate` and `run` accept, and refused whole (file:line:col, exit 2, no
//! output file) when the file is wrong.

mod common;

use common::import::*;
use std::path::{Path, PathBuf};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/import");

fn data(name: &str) -> String {
    format!("{DATA}/{name}")
}

fn import(args: &[&str]) -> String {
    import_fragment("grpc-service-config", args)
}

fn scratch(tag: &str) -> PathBuf {
    scratch_dir("grpc", tag)
}

/// A scenario with one step and no policy of its own: the imported fragment is its policy.
const SCENARIO: &str = r#"[simulation]
duration_s = 20
seed = 5
replications = 1

[[dependency]]
name = "greeter"
servers = 4
service_time = { p50_ms = 20, p95_ms = 60 }
errors = { overloaded = 0.05 }

[[workflow]]
name = "hello"
arrivals = { rate_per_s = 5 }
deadline_ms = 5000

  [[workflow.step]]
  id = "say_hello"
  dependency = "greeter"

"#;

/// Every line in `want` is a line of `got`, in order.
fn assert_lines(got: &str, want: &[&str]) {
    let lines: Vec<&str> = got.lines().collect();
    let mut from = 0;
    for w in want {
        match lines[from..].iter().position(|l| l == w) {
            Some(i) => from += i + 1,
            None => panic!("missing (or out of order) line:\n{w}\nin:\n{got}"),
        }
    }
}

#[test]
fn the_service_method_gets_its_service_config_with_every_field_cited() {
    let text = import(&[&data("grpc_service_config.json"), "--method", "helloworld.Greeter/SayHello", "-p", "grpc"]);
    assert_lines(
        &text,
        &[
            "# call: /helloworld.Greeter/SayHello -> methodConfig[0] (service name)",
            "[policy.grpc]",
            "timeout_ms = 2000                       # from methodConfig[0].timeout (grpc_service_config.json:6) = \"2s\"; per attempt here, per call in gRPC (NOT MAPPED)",
            "[policy.grpc.retry]",
            "max_attempts = 4                        # from methodConfig[0].retryPolicy.maxAttempts (grpc_service_config.json:9) = 4",
            "[policy.grpc.retry.backoff]",
            "kind = \"exponential\"                    # from methodConfig[0].retryPolicy.backoffMultiplier (grpc_service_config.json:12) = 2",
            "base_ms = 100                           # from methodConfig[0].retryPolicy.initialBackoff (grpc_service_config.json:10) = \"0.1s\"",
            "max_ms = 1000                           # from methodConfig[0].retryPolicy.maxBackoff (grpc_service_config.json:11) = \"1s\"",
            "[[policy.grpc.retry_budget]]",
            "kind = \"grpc\"                           # from retryThrottling (gRFC A6 retry throttling)",
            "max_tokens = 10                         # from retryThrottling.maxTokens (grpc_service_config.json:33) = 10",
            "token_ratio = 0.123                     # from retryThrottling.tokenRatio (grpc_service_config.json:34) = 0.1239; truncated to 3 decimals as grpc-core parses it",
            "# NOT MAPPED:",
        ],
    );
    // Every written field carries the key it came from (or says why it has the value it has).
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.starts_with('[') && !l.is_empty()) {
        assert!(line.contains(" # "), "a field without its comment: {line}");
    }
    assert!(text.contains("loadBalancingConfig (grpc_service_config.json:2)"), "{text}");
    assert!(text.contains("waitForReady (grpc_service_config.json:7)"), "{text}");
}

#[test]
fn the_exact_method_wins_over_its_service_and_max_attempts_is_clamped_to_five() {
    let text = import(&[&data("grpc_service_config.json"), "--method", "helloworld.Greeter/SayHelloSlowly"]);
    assert_lines(
        &text,
        &[
            "# call: /helloworld.Greeter/SayHelloSlowly -> methodConfig[1] (exact method name)",
            "timeout_ms = 10500                      # from methodConfig[1].timeout (grpc_service_config.json:18) = \"10.5s\"; per attempt here, per call in gRPC (NOT MAPPED)",
            "max_attempts = 5                        # from methodConfig[1].retryPolicy.maxAttempts (grpc_service_config.json:20) = 7; clamped to 5 as grpc-core does (MAX_MAX_RETRY_ATTEMPTS)",
            "retry_on = [\"RATE_LIMITED\", \"OVERLOADED\", \"TRANSIENT_TRANSPORT\"] # from methodConfig[1].retryPolicy.retryableStatusCodes (grpc_service_config.json:24) = [\"UNAVAILABLE\", \"RESOURCE_EXHAUSTED\", \"DEADLINE_EXCEEDED\", \"INTERNAL\"]; UNAVAILABLE -> OVERLOADED + TRANSIENT_TRANSPORT, RESOURCE_EXHAUSTED -> RATE_LIMITED, DEADLINE_EXCEEDED -> TRANSIENT_TRANSPORT",
        ],
    );
    // INTERNAL cannot be retried by the runtime (said); the 1.5 multiplier and grpc-core's
    // jitter are written as they are.
    assert!(text.contains("(INTERNAL): PERMANENT_PROVIDER, which faultline never retries"), "{text}");
    assert_lines(
        &text,
        &[
            "multiplier = 1.5                        # from methodConfig[1].retryPolicy.backoffMultiplier (grpc_service_config.json:23) = 1.5",
            "jitter = \"randomized\"                   # grpc-core multiplies each capped sleep by U[0.8, 1.2) (backoff.cc, jitter 0.2)",
            "randomization_factor = 0.2              # grpc-core's BackoffJitter (retry_filter.h)",
        ],
    );
    assert!(!text.contains("multiplies by 2"), "{text}");
    // A method of another service falls to the default `{}` methodConfig: a deadline, no retries.
    let other = import(&[&data("grpc_service_config.json"), "--method", "other.Service/Call"]);
    assert_lines(
        &other,
        &[
            "# call: /other.Service/Call -> methodConfig[2] (the default, name {})",
            "timeout_ms = 30000                      # from methodConfig[2].timeout (grpc_service_config.json:29) = \"30s\"; per attempt here, per call in gRPC (NOT MAPPED)",
            "max_attempts = 1                        # methodConfig[2] has no retryPolicy: grpc-core does not retry",
        ],
    );
}

#[test]
fn a_hedging_policy_is_ignored_as_grpc_core_ignores_it() {
    let text = import(&[&data("grpc_hedging.json")]);
    assert_lines(
        &text,
        &[
            "max_attempts = 1                        # methodConfig[0] has no retryPolicy: grpc-core does not retry",
            "# NOT MAPPED:",
        ],
    );
    assert!(!text.contains("[policy.imported.hedging]"), "{text}");
    assert!(
        text.contains("hedgingPolicy (grpc_hedging.json:6) = {...}: grpc-core does not implement hedging"),
        "{text}"
    );
}

/// The fragment appended to a scenario is a policy `validate` accepts and `run` runs.
#[test]
fn the_fragment_appended_to_a_scenario_validates_and_runs() {
    let dir = scratch("runs");
    for (file, method) in [
        ("grpc_service_config.json", "helloworld.Greeter/SayHello"),
        ("grpc_service_config.json", "helloworld.Greeter/SayHelloSlowly"),
        ("grpc_service_config.json", "other.Service/Call"),
        ("grpc_hedging.json", "search.Index/Lookup"),
    ] {
        let fragment = import(&[&data(file), "--method", method]);
        let scenario = dir.join("s.toml");
        std::fs::write(&scenario, format!("{SCENARIO}{fragment}")).unwrap();
        let s = scenario.to_str().unwrap();
        let v = faultline(&["validate", s]);
        assert!(v.status.success(), "{file} {method}: {}\n{fragment}", String::from_utf8_lossy(&v.stderr));
        let out = dir.join("out");
        let r = faultline(&["run", s, "--out", out.to_str().unwrap()]);
        assert!(r.status.success(), "{file} {method}: {}", String::from_utf8_lossy(&r.stderr));
        assert!(out.join("imported").is_dir(), "run wrote no folder for policy imported");
        std::fs::remove_dir_all(&out).unwrap();
    }
}

/// Each bad file is refused at its line and column, with the field, exit 2, and nothing written.
#[test]
fn bad_files_are_refused_at_the_key_with_exit_2_and_no_output() {
    let dir = scratch("refusals");
    let cases: [(&str, &str, &str); 8] = [
        (
            "max_attempts.json",
            "{\n  \"methodConfig\": [\n    {\"name\": [{\"service\": \"a.B\"}],\n     \"retryPolicy\": {\"maxAttempts\": 1, \"initialBackoff\": \"0.1s\", \"maxBackoff\": \"1s\", \"backoffMultiplier\": 2, \"retryableStatusCodes\": [\"UNAVAILABLE\"]}}\n  ]\n}\n",
            "max_attempts.json:4:37: methodConfig[0].retryPolicy.maxAttempts: must be at least 2",
        ),
        (
            "initial.json",
            "{\"methodConfig\": [{\"name\": [{\"service\": \"a.B\"}], \"retryPolicy\": {\"maxAttempts\": 3, \"initialBackoff\": \"0s\", \"maxBackoff\": \"1s\", \"backoffMultiplier\": 2, \"retryableStatusCodes\": [\"UNAVAILABLE\"]}}]}",
            "initial.json:1:102: methodConfig[0].retryPolicy.initialBackoff: must be greater than 0",
        ),
        (
            "multiplier.json",
            "{\"methodConfig\": [{\"name\": [{\"service\": \"a.B\"}], \"retryPolicy\": {\"maxAttempts\": 3, \"initialBackoff\": \"1s\", \"maxBackoff\": \"1s\", \"backoffMultiplier\": 0, \"retryableStatusCodes\": [\"UNAVAILABLE\"]}}]}",
            "multiplier.json:1:149: methodConfig[0].retryPolicy.backoffMultiplier: must be greater than 0",
        ),
        (
            "codes.json",
            "{\"methodConfig\": [{\"name\": [{\"service\": \"a.B\"}], \"retryPolicy\": {\"maxAttempts\": 3, \"initialBackoff\": \"1s\", \"maxBackoff\": \"1s\", \"backoffMultiplier\": 2, \"retryableStatusCodes\": []}}]}",
            "codes.json:1:176: methodConfig[0].retryPolicy.retryableStatusCodes: must not be empty",
        ),
        (
            "number.json",
            "{\"methodConfig\": [{\"name\": [{\"service\": \"a.B\"}], \"retryPolicy\": {\"maxAttempts\": 3, \"initialBackoff\": \"1s\", \"maxBackoff\": \"1s\", \"backoffMultiplier\": 2, \"retryableStatusCodes\": [14]}}]}",
            "number.json:1:177: methodConfig[0].retryPolicy.retryableStatusCodes[0]: 14: grpc-core reads status codes as names",
        ),
        (
            "tokens.json",
            "{\"retryThrottling\": {\"maxTokens\": 0, \"tokenRatio\": 0.1}}",
            "tokens.json:1:35: retryThrottling.maxTokens: must be greater than 0",
        ),
        (
            "ratio.json",
            "{\"retryThrottling\": {\"maxTokens\": 10, \"tokenRatio\": 0.0004}}",
            "ratio.json:1:53: retryThrottling.tokenRatio: 0.0004 is 0 once truncated to 3 decimals",
        ),
        (
            "duplicate.json",
            "{\"methodConfig\": [{\"name\": [{}]}, {\"name\": [{}]}]}",
            "duplicate.json:1:45: methodConfig[1].name: duplicate default method config (also in methodConfig[0])",
        ),
    ];
    assert_refused("grpc-service-config", &dir, &cases);
    // Bad JSON is located too.
    let file = dir.join("broken.json");
    std::fs::write(&file, "{\n  \"methodConfig\": [,]\n}\n").unwrap();
    let out = faultline(&["import", "grpc-service-config", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains(&format!("{}:2:20: (JSON): expected a JSON value", file.display()))
    );
}

/// `-o` writes the whole fragment or nothing: the file holds exactly what standard output would,
/// a failed import leaves an earlier file as it was, and no temporary file is left behind.
#[test]
fn dash_o_writes_the_fragment_atomically() {
    let dir = scratch("out");
    let target = dir.join("policy.toml");
    let input = data("grpc_service_config.json");
    let printed = import(&[&input, "--method", "helloworld.Greeter"]);
    let said = import(&[&input, "--method", "helloworld.Greeter", "-o", target.to_str().unwrap()]);
    assert!(said.starts_with(&format!("wrote {}: [policy.imported], ", target.display())), "{said}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), printed);
    // A refused import does not touch the file that is there.
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"retryThrottling\": {\"maxTokens\": 0, \"tokenRatio\": 1}}").unwrap();
    let out = faultline(&["import", "grpc-service-config", bad.to_str().unwrap(), "-o", target.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), printed);
    let left: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    let names: Vec<&Path> = left.iter().map(|p| p.as_path()).collect();
    assert_eq!(names.len(), 2, "only bad.json and policy.toml: {names:?}");
}

/// A UTF-8 byte-order mark: grpc-core's JSON reader refuses it (grpcio 1.85.1: "JSON parse
/// error at index 0"), so the importer does, at 1:1; .NET's configuration reader skips it.
#[test]
fn a_byte_order_mark_is_refused_as_grpc_core_refuses_it_and_skipped_for_dotnet() {
    let dir = scratch("bom");
    let grpc = dir.join("service_config.json");
    std::fs::write(&grpc, "\u{feff}{\"methodConfig\": [{\"name\": [{}], \"timeout\": \"1s\"}]}").unwrap();
    let out = faultline(&["import", "grpc-service-config", grpc.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("service_config.json:1:1: a UTF-8 byte-order mark"), "{err}");
    let dotnet = dir.join("appsettings.json");
    std::fs::write(&dotnet, "\u{feff}{\"Retry\": {\"MaxRetryAttempts\": 5}}").unwrap();
    let dotnet = import_fragment("dotnet-resilience", &[dotnet.to_str().unwrap()]);
    assert!(dotnet.contains("max_attempts = 6"), "{dotnet}");
}
