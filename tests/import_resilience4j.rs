//! `faultline import resilience4j` from outside: the binary reads Spring Boot files in
//! tests/data/import; what it writes is checked line by line, appended to a small scenario that
//! `validate` and `run` accept, and run, where the figures follow the imported values. Files
//! resilience4j itself refuses are refused at their key (file:line:col, exit 2, nothing written).

mod common;

use common::import::*;
use common::*;
use std::path::PathBuf;

fn import(args: &[&str]) -> String {
    import_fragment("resilience4j", args)
}

fn scratch(tag: &str) -> PathBuf {
    scratch_dir("r4j", tag)
}

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/import");

fn data(name: &str) -> String {
    format!("{DATA}/{name}")
}

#[test]
fn yaml_and_properties_give_the_same_policy_with_every_field_cited() {
    let yaml = import(&[&data("r4j_application.yml")]);
    let props = import(&[&data("r4j_application.properties")]);
    let strip = |t: &str| {
        t.lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split(" #").next().unwrap().trim_end().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&yaml), strip(&props), "the two syntaxes of one configuration");
    for want in [
        "timeout_ms = 2000                       # timelimiter model: from resilience4j.timelimiter.instances.model.timeout-duration (r4j_application.yml:45) = 2s; the instance",
        "max_attempts = 4                        # from resilience4j.retry.configs.default.max-attempts (r4j_application.yml:23) = 4; configs.default",
        "base_ms = 100                           # from resilience4j.retry.configs.shared.wait-duration (r4j_application.yml:25) = 100ms; baseConfig shared",
        "multiplier = 1.5                        # from resilience4j.retry.configs.shared.exponential-backoff-multiplier (r4j_application.yml:27) = 1.5; baseConfig shared",
        "slow_call_duration_threshold_ms = 2000  # from resilience4j.circuitbreaker.instances.model.slow-call-duration-threshold (r4j_application.yml:17) = PT2S; the instance",
        "slow_call_rate_threshold = 100          # resilience4j's default slowCallRateThreshold = 100 (CircuitBreakerConfig.DEFAULT_SLOW_CALL_RATE_THRESHOLD)",
        "max_wait_ms = 20                        # from resilience4j.bulkhead.instances.model.max-wait-duration (r4j_application.yml:35) = 20ms; the instance",
        "limit_refresh_period_ms = 1000          # from resilience4j.ratelimiter.instances.model.limit-refresh-period (r4j_application.yml:40) = 1s; the instance",
    ] {
        assert!(yaml.lines().any(|l| l == want), "missing line:\n{want}\nin:\n{yaml}");
    }
    assert!(props.contains("(r4j_application.properties:15) = 1.5; baseConfig shared"), "continuation line: {props}");
    for not_mapped in [
        "record-exceptions[0]",
        "register-health-indicator",
        "cancel-running-future",
        "thread-pool-bulkhead",
        "on-profile = prod",
    ] {
        let after = yaml.split("# NOT MAPPED:").nth(1).unwrap();
        assert!(after.contains(not_mapped), "{not_mapped} not listed:\n{after}");
    }
    // The profile document's max-attempts 9 is not read.
    assert_eq!(value(&yaml, "max_attempts"), "max_attempts = 4");
}

#[test]
fn each_level_of_inheritance_sets_what_the_ones_above_it_leave_out() {
    let t = import(&[&data("r4j_inheritance.yml"), "--dependency", "other=model"]);
    // Retry: instance > baseConfig > configs.default > resilience4j's defaults.
    assert!(line(&t, "max_attempts").ends_with("= 5; the instance"), "{t}");
    assert!(line(&t, "base_ms").ends_with("= 200ms; baseConfig shared"), "{t}");
    assert!(
        line(&t, "kind").contains("enable-exponential-backoff (r4j_inheritance.yml:9) = true; configs.default"),
        "{t}"
    );
    assert!(line(&t, "multiplier").contains("resilience4j's default exponentialBackoffMultiplier = 1.5"), "{t}");
    assert_eq!(value(&t, "max_ms"), "max_ms = 675", "200 x 1.5^3, the largest of 4 attempts' sleeps");
    // CircuitBreaker: a baseConfig replaces configs.default (createBaseConfig builds the base
    // from the library's defaults), so `model` has 50, not configs.default's 30; `other` has 30.
    let breakers: Vec<&str> = t.split("[[policy.imported.circuit_breaker]]").skip(1).collect();
    assert_eq!(breakers.len(), 2);
    assert!(
        breakers[0].contains("failure_rate_threshold = 50 ") && breakers[0].contains("sliding_window_size = 7 "),
        "{}",
        breakers[0]
    );
    assert!(breakers[0].contains("minimum_number_of_calls = 3 "));
    assert!(
        breakers[1].contains("failure_rate_threshold = 30 ") && breakers[1].contains("sliding_window_size = 100 "),
        "{}",
        breakers[1]
    );
    assert!(
        breakers[1]
            .contains("dependency = \"model\"                    # instance other, mapped by --dependency other=model"),
        "{}",
        breakers[1]
    );
}

/// Each fragment appended to the scenario is a policy `validate` accepts and `run` runs.
#[test]
fn the_fragments_validate_and_run() {
    let dir = scratch("runs");
    for args in [
        vec![data("r4j_application.yml")],
        vec![data("r4j_application.properties")],
        vec![data("r4j_inheritance.yml"), "--dependency".into(), "other=model".into()],
        vec![data("r4j_retry.yml")],
        vec![data("r4j_breaker.properties")],
    ] {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let fragment = import(&a);
        let s = dir.join("s.toml");
        std::fs::write(&s, format!("{}{fragment}", model_scenario("overloaded = 0.2", 20))).unwrap();
        let v = faultline(&["validate", s.to_str().unwrap()]);
        assert!(v.status.success(), "{args:?}: {}\n{fragment}", String::from_utf8_lossy(&v.stderr));
        let out = dir.join("out");
        let r = faultline(&["run", s.to_str().unwrap(), "--out", out.to_str().unwrap()]);
        assert!(r.status.success(), "{args:?}: {}", String::from_utf8_lossy(&r.stderr));
        assert!(out.join("imported").is_dir());
        std::fs::remove_dir_all(&out).unwrap();
    }
}

#[test]
fn the_imported_retry_sleeps_its_multiplier_without_jitter() {
    // Every attempt fails in 1 ms; 4 attempts sleep 100 + 150 + 225 ms: every run takes 479 ms.
    // resilience4j's default multiplier 2 would not apply (its default is 1.5), doubling would
    // give 704 ms, and any jitter would spread the runs.
    let fragment = import(&[&data("r4j_retry.yml")]);
    let reps = replicate(&model(&format!("{}{fragment}", model_scenario("overloaded = 1.0", 200))), 0);
    for m in &reps {
        assert_eq!((m["run_latency_ms.mean"], m["run_latency_ms.max"]), (479.0, 479.0), "{m:?}\n{fragment}");
    }
}

#[test]
fn the_imported_breaker_stays_open_for_its_imported_wait() {
    // A dependency that always fails: 5 calls open the breaker; it refuses for the imported 10 s
    // (resilience4j's default would be 60 s), then the first call after the wait probes and 5
    // failed probes open it again. So each open spell lasts 10 s plus the wait for the next
    // call (arrivals 5/s: 0.2 s on average).
    let fragment = import(&[&data("r4j_breaker.properties")]);
    let reps = replicate(&model(&format!("{}{fragment}", model_scenario("overloaded = 1.0", 200))), 0);
    for m in &reps {
        let opens = m["breaker.model.transition_total.open"];
        let open_s = m["breaker.model.time_in_state_s.open"];
        assert!((15.0..=20.0).contains(&opens), "about 200 s / 11 s: {m:?}");
        // Every spell but the last (which the end of the simulation may cut) lasts 10 to 10.6 s.
        assert!(open_s >= (opens - 1.0) * 10.0 && open_s <= opens * 10.6, "{open_s} s open in {opens} spells");
        println!("imported PT10S: {opens} opens, {open_s} s open");
    }
    // Without the key, resilience4j's default 60 s: far fewer spells.
    let dir = scratch("breaker-default");
    let file = dir.join("application.properties");
    let text = std::fs::read_to_string(data("r4j_breaker.properties")).unwrap();
    std::fs::write(
        &file,
        text.lines().filter(|l| !l.contains("waitDurationInOpenState")).collect::<Vec<_>>().join("\n"),
    )
    .unwrap();
    let fragment = import(&[file.to_str().unwrap()]);
    assert!(fragment.contains("wait_duration_in_open_state_ms = 60000 "), "{fragment}");
    let reps = replicate(&model(&format!("{}{fragment}", model_scenario("overloaded = 1.0", 200))), 0);
    for m in &reps {
        let opens = m["breaker.model.transition_total.open"];
        println!("default 60 s: {opens} opens");
        assert!(opens <= 4.0, "{m:?}");
    }
}

/// What resilience4j refuses is refused here, at the key, with exit 2 and no output file.
#[test]
fn refusals_are_located_with_exit_2_and_nothing_written() {
    let dir = scratch("refusals");
    let cases: [(&str, &str, &str); 8] = [
        (
            "a.yml",
            "resilience4j:\n  circuitbreaker:\n    instances:\n      a:\n        wait-duration-in-open-state: 1s\n        enable-exponential-backoff: true\n        enable-randomized-wait: true\n",
            "a.yml:7:33: resilience4j.circuitbreaker.instances.a.enable-randomized-wait: you can not enable Exponential backoff policy and randomized delay at the same time",
        ),
        (
            "b.yml",
            "resilience4j:\n  retry:\n    instances:\n      a:\n        max-attempts: 0\n",
            "b.yml:5:23: resilience4j.retry.instances.a.max-attempts: maxAttempts must be greater than or equal to 1.",
        ),
        (
            "c.yml",
            "resilience4j:\n  bulkhead:\n    instances:\n      a:\n        base-config: nope\n",
            "c.yml:5:22: resilience4j.bulkhead.instances.a.base-config: Configuration with name 'nope' does not exist",
        ),
        (
            "d.yml",
            "resilience4j:\n  circuitbreaker:\n    configs:\n      a:\n        sliding-window-size: 5\n    instances:\n      a:\n        baseConfig: a\n",
            "d.yml:8:21: resilience4j.circuitbreaker.instances.a.baseConfig: Circular reference detected in instance config: a",
        ),
        (
            "e.properties",
            "resilience4j.ratelimiter.instances.a.timeoutDuration=10 seconds\n",
            "e.properties:1:54: resilience4j.ratelimiter.instances.a.timeoutDuration: `10 seconds` is not a duration",
        ),
        (
            "f.yml",
            "resilience4j:\n  retry:\n    instances:\n      a:\n        max-attempts: 2\n        max-attempts: 3\n",
            "f.yml:6:9: resilience4j.retry.instances.a.max-attempts: duplicate key",
        ),
        (
            // resilience4j builds every config at start-up: one no instance uses fails it too.
            "g.yml",
            "resilience4j:\n  circuitbreaker:\n    configs:\n      unused:\n        failureRateThreshold: 200\n    instances:\n      a:\n        failureRateThreshold: 50\n",
            "g.yml:5:31: resilience4j.circuitbreaker.configs.unused.failureRateThreshold: must be above 0 and at most 100, found 200 (resilience4j refuses it)",
        ),
        (
            // resilience4j takes 0 permits (every call refused); faultline's bulkhead cannot.
            "h.yml",
            "resilience4j:\n  bulkhead:\n    instances:\n      a:\n        maxConcurrentCalls: 0\n",
            "h.yml:5:29: resilience4j.bulkhead.instances.a.maxConcurrentCalls: 0: resilience4j accepts it (a bulkhead that refuses every call), faultline's bulkhead needs at least 1 permit",
        ),
    ];
    assert_refused("resilience4j", &dir, &cases);
}

/// ConfigUtils.mergePropertiesIfAny copies a Retry base's flags down to the instance but not its
/// randomizedWaitFactor: an instance that sets its own waitDuration over a base with factor 0.2
/// gets randomized waits with resilience4j's default factor 0.5.
#[test]
fn a_retry_instance_inherits_the_randomized_flag_but_not_the_factor() {
    let dir = scratch("factor");
    let file = dir.join("application.yml");
    std::fs::write(
        &file,
        "resilience4j.retry:\n  configs:\n    shared: {waitDuration: 1s, enableRandomizedWait: true, randomizedWaitFactor: 0.2}\n  instances:\n    model: {baseConfig: shared, waitDuration: 2s}\n",
    )
    .unwrap();
    let t = import(&[file.to_str().unwrap()]);
    assert_eq!(value(&t, "base_ms"), "base_ms = 2000");
    assert!(line(&t, "jitter").contains("enableRandomizedWait (application.yml:3) = true; baseConfig shared"), "{t}");
    assert!(line(&t, "randomization_factor").starts_with("randomization_factor = 0.5 "), "{t}");
    // --dependency must name an instance of the file.
    let out = faultline(&["import", "resilience4j", file.to_str().unwrap(), "--dependency", "nope=model"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no resilience4j instance named `nope` (instances: model)"));
}

/// The retry's wait function as CommonRetryConfigurationProperties picks it: a maximum or a
/// factor that resilience4j does not pass to the IntervalFunction it builds is not written.
#[test]
fn a_wait_setting_resilience4j_ignores_is_not_imported() {
    let dir = scratch("ignored");
    let import_retry = |name: &str, retry: &str| {
        let file = dir.join(format!("{name}.yml"));
        std::fs::write(
            &file,
            format!("resilience4j.retry:\n  instances:\n    model: {{maxAttempts: 5, waitDuration: 100ms, {retry}}}\n"),
        )
        .unwrap();
        import(&[file.to_str().unwrap()])
    };
    // Exponential, a maximum, no multiplier: ofExponentialBackoff(wait), multiplier 1.5, no cap.
    let t = import_retry("max_without_multiplier", "enableExponentialBackoff: true, exponentialMaxWaitDuration: 200ms");
    assert_eq!(value(&t, "multiplier"), "multiplier = 1.5");
    assert_eq!(value(&t, "max_ms"), "max_ms = 337.5", "100 x 1.5^3, the last retry's wait: {t}");
    assert!(line(&t, "max_ms").contains("is ignored"), "{t}");
    // Exponential and randomized, no multiplier: ofExponentialRandomBackoff(wait), factor 0.5.
    let t = import_retry(
        "factor_without_multiplier",
        "enableExponentialBackoff: true, enableRandomizedWait: true, randomizedWaitFactor: 0.2",
    );
    assert_eq!(value(&t, "randomization_factor"), "randomization_factor = 0.5", "{t}");
    // A multiplier and a maximum but no factor: ofExponentialRandomBackoff(wait, mult), no cap.
    let t = import_retry(
        "max_without_factor",
        "enableExponentialBackoff: true, enableRandomizedWait: true, exponentialBackoffMultiplier: 2, exponentialMaxWaitDuration: 300ms",
    );
    assert_eq!(value(&t, "max_ms"), "max_ms = 800", "{t}");
    // With all three, the maximum and the factor are used.
    let t = import_retry(
        "all_three",
        "enableExponentialBackoff: true, enableRandomizedWait: true, exponentialBackoffMultiplier: 2, exponentialMaxWaitDuration: 300ms, randomizedWaitFactor: 0.2",
    );
    assert_eq!(
        (value(&t, "max_ms"), value(&t, "randomization_factor")),
        ("max_ms = 300", "randomization_factor = 0.2")
    );
    // A shrinking multiplier: the waits are 100, 50, 25 ms, so the first is the largest.
    let t = import_retry("shrinking", "enableExponentialBackoff: true, exponentialBackoffMultiplier: 0.5");
    assert_eq!(
        (value(&t, "kind"), value(&t, "max_ms"), value(&t, "multiplier")),
        ("kind = \"exponential\"", "max_ms = 100", "multiplier = 0.5"),
        "{t}"
    );
    // The setter refuses a factor of 1 ("not in range [0..1)").
    let file = dir.join("factor_one.yml");
    std::fs::write(&file, "resilience4j.retry:\n  instances:\n    model: {waitDuration: 100ms, enableRandomizedWait: true, randomizedWaitFactor: 1}\n").unwrap();
    let out = faultline(&["import", "resilience4j", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn a_zero_time_limit_times_every_call_out_not_none() {
    let dir = scratch("zero");
    let file = dir.join("application.yml");
    std::fs::write(&file, "resilience4j.timelimiter:\n  instances:\n    model:\n      timeout-duration: 0s\n").unwrap();
    let t = import(&[file.to_str().unwrap()]);
    assert_eq!(value(&t, "timeout_ms"), "timeout_ms = 0.001", "{t}");
}

/// Spring Boot's profile rules: with no profile named the default profile is active (so
/// `on-profile: default` and `!prod` documents apply), a list applies when any item matches,
/// `--profile` replaces the default, the file's own spring.profiles.active counts, a cloud
/// platform's document never applies here, and what Spring refuses is refused at its key.
#[test]
fn documents_apply_to_the_active_profiles_as_spring_boot_decides() {
    let dir = scratch("profiles");
    let yaml = "resilience4j:\n  retry:\n    instances:\n      a:\n        maxAttempts: 2\n---\nspring.config.activate.on-profile: default\nresilience4j.retry.instances.a.maxAttempts: 3\n---\nspring:\n  config:\n    activate:\n      on-profile: \"!prod\"\nresilience4j.retry.instances.a.waitDuration: 2s\n---\nspring:\n  config:\n    activate:\n      on-profile: [prod, staging]\nresilience4j.retry.instances.a.maxAttempts: 5\n---\nspring.config.activate.on-cloud-platform: kubernetes\nresilience4j.retry.instances.a.maxAttempts: 7\n";
    let file = dir.join("profiles.yml");
    std::fs::write(&file, yaml).unwrap();
    let path = file.to_str().unwrap();
    let plain = import(&[path]);
    assert_eq!(
        (value(&plain, "max_attempts"), value(&plain, "base_ms")),
        ("max_attempts = 3", "base_ms = 2000"),
        "{plain}"
    );
    assert!(plain.contains("# profiles active: default (no profile named: Spring's default profile)"), "{plain}");
    assert!(plain.contains("line 19: spring.config.activate.on-profile = prod, staging: no active profile matches"));
    assert!(plain.contains(
        "line 22: spring.config.activate.on-cloud-platform = kubernetes: applies on that cloud platform only"
    ));
    let staging = import(&[path, "--profile", "staging"]);
    assert_eq!(
        (value(&staging, "max_attempts"), value(&staging, "base_ms")),
        ("max_attempts = 5", "base_ms = 2000"),
        "{staging}"
    );
    let prod = import(&[path, "--profile", "prod"]);
    assert_eq!(value(&prod, "max_attempts"), "max_attempts = 5", "{prod}");
    assert!(!prod.contains("base_ms = 2000"), "the !prod document does not apply under prod: {prod}");

    let props = dir.join("active.properties");
    std::fs::write(&props, "spring.profiles.active=prod\nresilience4j.retry.instances.a.maxAttempts=2\n#---\nspring.config.activate.on-profile=prod & (eu | us)\nresilience4j.retry.instances.a.maxAttempts=4\n#---\nspring.config.activate.on-profile=prod\nresilience4j.retry.instances.a.maxAttempts=6\n").unwrap();
    let own = import(&[props.to_str().unwrap()]);
    assert_eq!(value(&own, "max_attempts"), "max_attempts = 6", "{own}");
    let eu = import(&[props.to_str().unwrap(), "--profile", "prod", "--profile", "eu"]);
    assert_eq!(value(&eu, "max_attempts"), "max_attempts = 6", "both later documents apply; the last wins: {eu}");

    assert_refused(
        "resilience4j",
        &dir,
        &[
            (
                "bad-active.properties",
                "a=1\n#---\nspring.config.activate.on-profile=prod\nspring.profiles.active=x\n",
                "bad-active.properties:4:24: spring.profiles.active: Spring refuses it in a document that applies to a profile",
            ),
            (
                "bad-expr.properties",
                "a=1\n#---\nspring.config.activate.on-profile=prod & eu | dev\n",
                "bad-expr.properties:3:35: spring.config.activate.on-profile: malformed profile expression [prod & eu | dev]",
            ),
        ],
    );
}

/// What the stop-44 review found Spring doing otherwise (each assertion failed before):
/// profile groups expand (`Profiles.expandProfiles`), every document's
/// `spring.profiles.include` counts and makes the default profile inactive (`getAccepted`),
/// `--profile a,b` is two profiles, a byte-order mark is skipped (SnakeYAML's UnicodeReader),
/// and `.properties` documents split where `OriginTrackedPropertiesLoader.isNewDocument` says.
#[test]
fn profiles_groups_includes_and_separators_as_spring_reads_them() {
    let dir = scratch("review");
    let write = |name: &str, text: &str| {
        let f = dir.join(name);
        std::fs::write(&f, text).unwrap();
        f.to_str().unwrap().to_string()
    };
    let retry = |n: u32| format!("resilience4j.retry.instances.a.maxAttempts: {n}\n");
    // A group: prod brings proddb, whose document applies.
    let g = write(
        "g.yml",
        &format!(
            "spring.profiles.active: prod\nspring.profiles.group.prod: proddb\n{}---\nspring.config.activate.on-profile: proddb\n{}",
            retry(2),
            retry(4)
        ),
    );
    let t = import(&[&g]);
    assert_eq!(value(&t, "max_attempts"), "max_attempts = 4", "{t}");
    assert!(
        t.contains("# profiles active: prod, proddb (spring.profiles.active (line 1), with spring.profiles.group)"),
        "{t}"
    );
    // An include with nothing active: the included profile is active, the default one is not.
    let inc = write(
        "inc.yml",
        &format!(
            "spring.profiles.include: extra\n{}---\nspring.config.activate.on-profile: default\n{}",
            retry(2),
            retry(4)
        ),
    );
    assert_eq!(value(&import(&[&inc]), "max_attempts"), "max_attempts = 2");
    // Includes from every document, not the last one's only.
    let inc2 = write(
        "inc2.yml",
        &format!(
            "spring.profiles.include: a\n---\nspring.profiles.include: b\n{}---\nspring.config.activate.on-profile: a\n{}",
            retry(3),
            retry(5)
        ),
    );
    assert_eq!(value(&import(&[&inc2]), "max_attempts"), "max_attempts = 5");
    // `--profile a,b` is two profiles, as --spring.profiles.active=a,b.
    let ab = write("ab.yml", &format!("{}---\nspring.config.activate.on-profile: b\n{}", retry(2), retry(6)));
    assert_eq!(value(&import(&[&ab, "--profile", "a,b"]), "max_attempts"), "max_attempts = 6");
    // A byte-order mark before the first key.
    let bom = write("bom.yml", &format!("\u{feff}{}", retry(5)));
    assert_eq!(value(&import(&[&bom]), "max_attempts"), "max_attempts = 5");
    // A file with no resilience4j key at all imports nothing: refused, not an empty policy.
    let none = write("none.yml", "server.port: 8080\n");
    let out = faultline(&["import", "resilience4j", &none]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no resilience4j.* key (1 other keys)"));

    let props = |sep: &str| {
        format!(
            "resilience4j.retry.instances.a.maxAttempts=3\n{sep}\nspring.config.activate.on-profile=prod\nresilience4j.retry.instances.a.maxAttempts=7\n"
        )
    };
    // `#--- ` with trailing blanks separates: the prod document is set aside, 3 stays.
    let trailing = write("t.properties", &props("#--- "));
    let t = import(&[&trailing]);
    assert_eq!(value(&t, "max_attempts"), "max_attempts = 3", "{t}");
    assert!(
        t.contains("the document at line 3: spring.config.activate.on-profile = prod: no active profile matches"),
        "{t}"
    );
    // Indented, or right after a `#` comment line: a comment, so the file is one prod-only
    // document (set aside under the default profile, cited from its first line).
    for (name, sep) in [("indented.properties", "  #---"), ("after-comment.properties", "# prod below\n#---")] {
        let t = import(&[&write(name, &props(sep))]);
        assert_eq!(value(&t, "max_attempts"), "max_attempts = 1", "{name}: {t}");
        assert!(t.contains("the document at line 1 (spring.config.activate.on-profile = prod at line"), "{name}: {t}");
    }
    // After a `!` comment the `#---` still separates (another comment character).
    let bang = import(&[&write("bang.properties", &props("! prod below\n#---"))]);
    assert_eq!(value(&bang, "max_attempts"), "max_attempts = 3", "{bang}");
    // A comment before a document's first property joins it to the document before: no split.
    let joined = import(&[&write("joined.properties", &props("#---\n# prod"))]);
    assert_eq!(value(&joined, "max_attempts"), "max_attempts = 1", "{joined}");
}
