//! Retry backoff shapes from outside (docs/scenario.md 8.2): a dependency that always fails at
//! once, so a run's latency is exactly the sum of its sleeps. A multiplier other than 2 and the
//! randomized jitter are shown by that sum, which would differ under doubling or full jitter.

mod common;

use common::*;
use faultline::engine::Model;
use faultline::scenario::{Format, Source, parse_source};

/// The model, or the error as `faultline validate` prints it.
fn try_model(toml: &str) -> Result<Model, String> {
    let source = Source::from_text("test.toml", toml, Format::Toml);
    let scenario = parse_source(&source).map_err(|e| e.to_string())?;
    Model::compile(&scenario, &source).map_err(|e| e.to_string())
}

/// Every attempt fails in 1 ms with OVERLOADED (retried); 4 attempts, so 3 sleeps.
fn failing(backoff: &str) -> String {
    format!(
        r#"
[simulation]
duration_s = 2000
warmup_s = 0
seed = 3
replications = 4

[[dependency]]
name = "db"
servers = 100000
queue_capacity = 0
service_time = {{ dist = "constant", value_ms = 1 }}
errors = {{ overloaded = 1.0 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 5 }}
deadline_ms = 600000

  [[workflow.step]]
  id = "s"
  dependency = "db"

[policy.p]
timeout_ms = 0
retry = {{ max_attempts = 4, backoff = {backoff} }}
"#
    )
}

#[test]
fn an_exponential_backoff_grows_by_its_multiplier() {
    // 100 + 150 + 225 ms of sleeps and 4 x 1 ms of service: every run takes 479 ms.
    let reps = replicate(&model(&failing("{ base_ms = 100, max_ms = 1000, multiplier = 1.5, jitter = \"none\" }")), 0);
    for m in &reps {
        assert_eq!((m["run_latency_ms.mean"], m["run_latency_ms.max"]), (479.0, 479.0), "{m:?}");
    }
    // Doubling, the default, would give 100 + 200 + 400 + 4.
    let doubling = replicate(&model(&failing("{ base_ms = 100, max_ms = 1000, jitter = \"none\" }")), 0);
    assert_eq!(doubling[0]["run_latency_ms.max"], 704.0);
}

#[test]
fn a_randomized_sleep_spans_the_factor_either_side_of_its_cap() {
    // Constant 1 s caps, f = 0.5: each sleep uniform in [0.5, 1.5) s, so three of them sum to
    // 3 s on average with variance 3 x 1/12 s^2; runs take 4 ms more. Full jitter would average 1.5 s.
    let reps = replicate(
        &model(&failing(
            "{ kind = \"constant\", base_ms = 1000, jitter = \"randomized\", randomization_factor = 0.5 }",
        )),
        0,
    );
    assert_in_ci("mean run latency", &metric(&reps, "run_latency_ms.mean"), 3004.0, 1);
    for m in &reps {
        // The longest of about 10 000 runs comes near 3 x 1.5 s, never past it.
        assert!((4000.0..4504.0).contains(&m["run_latency_ms.max"]), "{m:?}");
    }
}

#[test]
fn multiplier_and_factor_are_refused_where_they_mean_nothing() {
    for (backoff, field) in [
        ("{ kind = \"constant\", multiplier = 1.5 }", "multiplier"),
        ("{ multiplier = 0 }", "multiplier"),
        ("{ jitter = \"full\", randomization_factor = 0.2 }", "randomization_factor"),
        ("{ jitter = \"randomized\", randomization_factor = 1.5 }", "randomization_factor"),
    ] {
        let text = failing(backoff);
        let err = try_model(&text).err().unwrap_or_else(|| panic!("{backoff} accepted"));
        assert!(err.contains(&format!("policy.p.retry.backoff.{field}")), "{backoff}: {err}");
        let line = text.lines().position(|l| l.starts_with("retry = ")).unwrap() + 1;
        assert!(err.starts_with(&format!("test.toml:{line}:")), "located at the retry line {line}: {err}");
    }
}
