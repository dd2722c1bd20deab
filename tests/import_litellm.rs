//! `faultline import litellm` from outside: the binary reads examples/litellm/config.yaml (a
//! LiteLLM proxy config) and Router keyword-argument files; what it writes is checked line by
//! line, appended to a small scenario that `validate` and `run` accept, and run, where the
//! figures follow the imported values (the router's retries are the sdk_client's hidden
//! attempts, its fallback the step's). Files it cannot read are refused at their key
//! (file:line:col, exit 2, nothing written).

mod common;

use common::import::*;
use common::*;
use std::path::PathBuf;

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/litellm/config.yaml");

fn import(args: &[&str]) -> String {
    import_fragment("litellm", args)
}

fn scratch(tag: &str) -> PathBuf {
    scratch_dir("litellm", tag)
}

/// A scenario with the two dependencies the example's groups map to and a step named like the
/// first (the fragment writes its fallbacks for that step).
fn scenario(primary_errors: &str) -> String {
    format!(
        r#"[simulation]
duration_s = 20
warmup_s = 0
seed = 7
replications = 2

[[dependency]]
name = "model-primary"
servers = 100000
queue_capacity = 0
service_time = {{ dist = "constant", value_ms = 1 }}
errors = {{ {primary_errors} }}

[[dependency]]
name = "model-fallback"
servers = 100000
queue_capacity = 0
service_time = {{ dist = "constant", value_ms = 1 }}

[[workflow]]
name = "w"
arrivals = {{ rate_per_s = 5 }}
deadline_ms = 600000

  [[workflow.step]]
  id = "model-primary"
  dependency = "model-primary"

"#
    )
}

const NAMED: [&str; 4] = ["--dependency", "gpt-4o=model-primary", "--dependency", "claude-sonnet=model-fallback"];

#[test]
fn the_example_maps_every_setting_with_the_key_it_came_from() {
    let mut args = vec![EXAMPLE];
    args.extend(NAMED);
    let out = import(&args);
    for want in [
        "# model group gpt-4o -> dependency model-primary (2 deployments)",
        "[policy.imported.sdk_client.model-primary]",
        "preset = \"litellm-router\"",
        "max_retries = 3                         # from router_settings.num_retries (config.yaml:27) = 3",
        "min_delay_ms = 1000                     # from router_settings.retry_after (config.yaml:28) = 1",
        "timeout_ms = 30000                      # from router_settings.timeout (config.yaml:29) = 30",
        "timeout_ms = 45000                      # from model_list[2].litellm_params.timeout (config.yaml:23) = 45",
        "[[policy.imported.steps.model-primary.fallbacks]]",
        "dependency = \"model-fallback\"           # from router_settings.fallbacks[0].gpt-4o[0] (config.yaml:32) = claude-sonnet",
        "limit_for_period = 1000                 # the sum of the group's rpm (config.yaml:11, config.yaml:18)",
        "limit_refresh_period_ms = 60000",
        "[[policy.imported.circuit_breaker]]",
        "kind = \"litellm_cooldown\"",
        "dependency = \"model-fallback\"",
        "cooldown_time_ms = 30000                # from router_settings.cooldown_time (config.yaml:31) = 30",
        "allowed_fails = 2                       # from router_settings.allowed_fails (config.yaml:30) = 2; the legacy mode",
        "# - router_settings.allowed_fails (config.yaml:30) = 2: mapped onto the litellm_cooldown guard of each group of one deployment only",
        "# - router_settings.context_window_fallbacks[0].gpt-4o[0] (config.yaml:33) = claude-sonnet: taken only on a ContextWindowExceededError",
        "# - litellm_settings.request_timeout (config.yaml:39) = 600: the router's timeout is set and wins",
        "# - model_list[0].litellm_params.tpm (config.yaml:12) = 200000: tokens per minute",
    ] {
        assert!(out.lines().any(|l| l.starts_with(want)), "no line starting {want:?} in\n{out}");
    }
    // Every field line cites where it came from.
    for l in out.lines().filter(|l| !l.starts_with('#') && !l.starts_with('[')) {
        assert!(l.contains(" # "), "uncommented: {l}");
    }
}

#[test]
fn the_fragment_validates_and_runs_its_retries_inside_the_call_and_its_fallback_after() {
    let dir = scratch("runs");
    let mut args = vec![EXAMPLE];
    args.extend(NAMED);
    let fragment = import(&args);
    let s = dir.join("s.toml");
    std::fs::write(&s, format!("{}{fragment}", scenario("overloaded = 1.0"))).unwrap();
    let v = faultline(&["validate", s.to_str().unwrap()]);
    assert!(v.status.success(), "{}\n{fragment}", String::from_utf8_lossy(&v.stderr));
    let out = dir.join("out");
    let r = faultline(&["run", s.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    // The primary always fails: each call is 4 attempts there (num_retries 3: 3 hidden), then
    // the fallback answers; every run completes. Sleeps are 1 + 1 + 2 s (retry_after 1 s as a
    // floor) plus up to 0.75 s each, so a run takes at most 6.25 s and 5.125 s on average
    // (without the floor, 0.5 + 1 + 2 s: 4.625 s), plus 5 ms of service.
    let reps = replicate(&model(&format!("{}{fragment}", scenario("overloaded = 1.0"))), 0);
    for m in &reps {
        let calls = m["logical_run_total"];
        assert!(calls > 50.0, "{m:?}");
        assert_eq!(m["hidden_attempt_total"], 3.0 * m["dependency.model-primary.attempt_total"] / 4.0, "{m:?}");
        assert_eq!(m["auto_completion_ratio"], 1.0, "{m:?}");
        assert!(m["run_latency_ms.max"] <= 6255.0, "{m:?}");
        // The sum of 3 uniform jitters has sd 0.375 s; over 100 runs 4 standard errors is 0.15 s.
        assert!((m["run_latency_ms.mean"] - 5130.0).abs() < 150.0, "{m:?}");
    }
}

/// Router keyword arguments with a group of one deployment that always fails and a fallback
/// group, in LiteLLM's legacy mode (`allowed_fails: 1`, `cooldown_time: 5`).
const COOLING: &str = "model_list:
  - model_name: primary
    litellm_params:
      model: openai/m
  - model_name: fallback
    litellm_params:
      model: openai/m
fallbacks: [{\"primary\": [\"fallback\"]}]
allowed_fails: 1
cooldown_time: 5
";

#[test]
fn a_cooled_deployment_gets_no_calls_for_cooldown_time() {
    let dir = scratch("cooling");
    let names = ["--dependency", "primary=model-primary", "--dependency", "fallback=model-fallback"];
    let mut figures = Vec::new();
    for (name, yaml) in [("on", COOLING.to_string()), ("off", format!("{COOLING}disable_cooldowns: true\n"))] {
        let file = dir.join(format!("{name}.yaml"));
        std::fs::write(&file, yaml).unwrap();
        let mut args = vec![file.to_str().unwrap()];
        args.extend(names);
        let fragment = import(&args);
        assert!(fragment.contains("group_has_fallbacks = true"), "{fragment}");
        figures.push(replicate(&model(&format!("{}{fragment}", scenario("overloaded = 1.0"))), 0));
    }
    for (on, off) in figures[0].iter().zip(&figures[1]) {
        let runs = on["logical_run_total"];
        assert!(runs > 50.0, "{on:?}");
        // Cooled on the 2nd failure within 5 s (2 > allowed_fails 1), for 5 s: at most 4 cycles
        // of 20 s, 2 requests each (the second call's first request cools it while the first
        // call sleeps; its retry then finds the deployment cooled). Without cooldowns every
        // call is 3 requests (num_retries 2).
        assert_eq!(on["dependency.model-primary.attempt_total"], 8.0, "{on:?}");
        assert_eq!(on["breaker.model-primary.transition_total.open"], 4.0, "{on:?}");
        assert_eq!(on["refused_total.circuit_open"], runs - 8.0, "{on:?}");
        assert_eq!(on["auto_completion_ratio"], 1.0, "{on:?}");
        assert_eq!(off["dependency.model-primary.attempt_total"], 3.0 * off["logical_run_total"], "{off:?}");
        assert_eq!(off["refused_total.circuit_open"], 0.0, "{off:?}");
    }
}

#[test]
fn retry_policy_counts_by_the_first_failure_s_kind() {
    let mut args = vec![EXAMPLE];
    args.extend(NAMED);
    let fragment = import(&args);
    assert!(fragment.contains("max_retries_by_kind = { rate_limited = 5, invalid_input = 0 }"), "{fragment}");
    // The primary always answers 429: RateLimitErrorRetries 5 makes each call 6 attempts (5
    // hidden) where num_retries 3 gives a 503 4 (the test above).
    for m in &replicate(&model(&format!("{}{fragment}", scenario("rate_limited = 1.0"))), 0) {
        assert!(m["logical_run_total"] > 50.0, "{m:?}");
        assert_eq!(m["hidden_attempt_total"], 5.0 * m["dependency.model-primary.attempt_total"] / 6.0, "{m:?}");
        assert_eq!(m["auto_completion_ratio"], 1.0, "{m:?}");
    }
}

#[test]
fn router_keyword_arguments_read_as_the_proxy_settings_do() {
    let dir = scratch("kwargs");
    let file = dir.join("router.yaml");
    std::fs::write(
        &file,
        "model_list:\n  - model_name: a\n    litellm_params: {model: openai/a, timeout: 2.5}\n  - model_name: b\n    litellm_params: {model: openai/b}\nnum_retries: 0\ndefault_fallbacks: [b]\ncooldown_time: 1\n",
    )
    .unwrap();
    let out = import(&[file.to_str().unwrap(), "-p", "kw"]);
    for want in [
        "# file: router.yaml (Router keyword arguments)",
        "[policy.kw.sdk_client.a]",
        "max_retries = 0                         # from num_retries (router.yaml:6) = 0",
        "timeout_ms = 2500                       # from model_list[0].litellm_params.timeout (router.yaml:3) = 2.5",
        "[[policy.kw.steps.a.fallbacks]]",
        "dependency = \"b\"                        # from default_fallbacks[0] (router.yaml:7) = b; default_fallbacks: the group sets none of its own",
        "cooldown_time_ms = 1000                 # from cooldown_time (router.yaml:8) = 1",
    ] {
        assert!(out.lines().any(|l| l.starts_with(want)), "no line starting {want:?} in\n{out}");
    }
    // default_fallbacks leave a group of one a lone deployment (`_has_fallback_group` reads
    // `fallbacks` only).
    assert!(!out.contains("group_has_fallbacks"), "{out}");
    // b's default fallback is b itself: none written.
    assert!(!out.contains("steps.b.fallbacks"), "{out}");
    // Without num_retries the preset's 2, said so.
    let file = dir.join("plain.yaml");
    std::fs::write(&file, "model_list:\n  - model_name: a\n    litellm_params: {model: openai/a}\n").unwrap();
    let out = import(&[file.to_str().unwrap()]);
    assert!(out.contains("max_retries = 2                         # no num_retries"), "{out}");
    // A retry_after above the 8 s cap makes every sleep 8 s (before the jitter).
    let file = dir.join("floor.yaml");
    std::fs::write(&file, "model_list:\n  - model_name: a\n    litellm_params: {model: openai/a}\nretry_after: 20\n")
        .unwrap();
    let out = import(&[file.to_str().unwrap()]);
    assert!(out.contains("min_delay_ms = 8000                     # from retry_after (floor.yaml:4) = 20; a floor above MAX_RETRY_DELAY"), "{out}");
}

#[test]
fn refusals_are_located_with_exit_2_and_nothing_written() {
    let dir = scratch("refusals");
    let cases: [(&str, &str, &str); 6] = [
        (
            "a.yaml",
            "model_list:\n  - model_name: a\n    litellm_params: {model: openai/a}\nrouter_settings:\n  num_retries: -1\n",
            "a.yaml:5:16: router_settings.num_retries: expected a whole number >= 0, found `-1`",
        ),
        (
            "b.yaml",
            "model_list:\n  - litellm_params:\n      model: openai/a\n",
            "b.yaml:3:14: model_list[0].litellm_params.model: model_list[0] has no model_name",
        ),
        (
            "c.yaml",
            "model_list:\n  - model_name: a\n    litellm_params: {model: openai/a}\nrouter_settings:\n  timeout: soon\n",
            "c.yaml:5:12: router_settings.timeout: expected a number of seconds >= 0, found `soon`",
        ),
        (
            "d.yaml",
            "model_list:\n  - model_name: a\n    litellm_params: {api_base: x}\n",
            "d.yaml:2:17: model_list[0].model_name: model_list[0] has no litellm_params.model",
        ),
        ("e.yaml", "model_list:\n  - model_name: a\n  model_name: b\n", "e.yaml:3:"),
        (
            "f.yaml",
            "model_list:\n  - model_name: a\n    litellm_params: {model: openai/a}\nrouter_settings:\n  num_retries: 3\n  num_retries: 4\n",
            "f.yaml:6:3: router_settings.num_retries: duplicate key",
        ),
    ];
    assert_refused("litellm", &dir, &cases);
    // A group --dependency does not know, and a file that is not YAML by name.
    let out = faultline(&["import", "litellm", EXAMPLE, "--dependency", "nope=x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("has no model group named `nope` (groups: gpt-4o, claude-sonnet)")
    );
    let json = dir.join("config.json");
    std::fs::write(&json, "{}").unwrap();
    let out = faultline(&["import", "litellm", json.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
}

/// What the stop-44 review measured the Router doing otherwise (each assertion failed before):
/// a deployment's own num_retries (8 requests for `num_retries: 4` against a router's 1),
/// `{"*": [...]}` as every group's fallback, the fallback shapes the Router refuses when it is
/// made, rpm from the deployment or its model_info, the group's timeouts compared from the
/// first one set, numbers PyYAML reads otherwise than LiteLLM, and a router timeout of 0.
#[test]
fn the_routers_own_rules_for_deployments_fallbacks_and_numbers() {
    let dir = scratch("review");
    let write = |name: &str, text: &str| {
        let f = dir.join(name);
        std::fs::write(&f, text).unwrap();
        f.to_str().unwrap().to_string()
    };
    let two = "model_list:\n  - model_name: a\n    litellm_params:\n      model: openai/x\n  - model_name: b\n    litellm_params:\n      model: openai/y\n";
    // A deployment's num_retries wins over the router's.
    let dnr = write(
        "dnr.yaml",
        "model_list:\n  - model_name: a\n    litellm_params:\n      model: openai/x\n      num_retries: 4\nrouter_settings:\n  num_retries: 1\n",
    );
    assert_eq!(value(&import(&[&dnr]), "max_retries"), "max_retries = 4");
    // `"*"`: every group falls back to b.
    let star = import(&[&write("star.yaml", &format!("{two}router_settings:\n  fallbacks:\n    - \"*\": [b]\n"))]);
    assert!(star.contains("[[policy.imported.steps.a.fallbacks]]\ndependency = \"b\""), "{star}");
    // Shapes the Router refuses when it is made.
    for (name, settings, want) in [
        ("f1.yaml", "  fallbacks:\n    - a: b\n", "must be a list of model groups (the Router raises TypeError)"),
        ("f2.yaml", "  fallbacks:\n    - a: [b]\n      b: [a]\n", "exactly one key"),
        ("f4.yaml", "  default_fallbacks: b\n", "default_fallbacks must be a list"),
    ] {
        let out = faultline(&["import", "litellm", &write(name, &format!("{two}router_settings:\n{settings}"))]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{name}: {err}");
    }
    // rpm beside litellm_params and in model_info, read as usage-based routing reads them.
    let rpm = import(&[&write(
        "rpm.yaml",
        "model_list:\n  - model_name: a\n    rpm: 100\n    litellm_params:\n      model: openai/x\n  - model_name: b\n    litellm_params:\n      model: openai/y\n    model_info:\n      rpm: 50\nrouter_settings:\n  routing_strategy: usage-based-routing-v2\n",
    )]);
    assert_eq!(rpm.matches("[[policy.imported.rate_limiter]]").count(), 2, "{rpm}");
    assert!(rpm.contains("limit_for_period = 100") && rpm.contains("limit_for_period = 50"), "{rpm}");
    // The first deployment sets no timeout, the second 45 s: listed, not dropped.
    let mixed = import(&[&write(
        "mixed.yaml",
        "model_list:\n  - model_name: a\n    litellm_params:\n      model: openai/x\n  - model_name: a\n    litellm_params:\n      model: openai/y\n      timeout: 45\n      cooldown_time: 30\n",
    )]);
    assert!(mixed.contains("have different timeouts (or some none)"), "{mixed}");
    assert!(mixed.contains("a deployment's own cooldown_time"), "{mixed}");
    // 010 is 8 to PyYAML unquoted and 10 to LiteLLM quoted: refused, not guessed.
    let out = faultline(&[
        "import",
        "litellm",
        &write("octal.yaml", &format!("{two}router_settings:\n  num_retries: 010\n")),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("YAML 1.1 number"));
    // 3.0 is 3 (`_lenient_int`); a null is the Router's default; a timeout of 0 is unset.
    let t = import(&[&write("lenient.yaml", &format!("{two}router_settings:\n  num_retries: 3.0\n  timeout: 0\n"))]);
    assert_eq!(value(&t, "max_retries"), "max_retries = 3", "{t}");
    assert!(t.contains("0 is unset for the Router"), "{t}");
    let t = import(&[&write("null.yaml", &format!("{two}router_settings:\n  num_retries: ~\n"))]);
    assert_eq!(value(&t, "max_retries"), "max_retries = 2", "{t}");
}
