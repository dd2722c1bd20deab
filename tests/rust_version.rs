//! Cargo.toml's `rust-version` is stated once and kept: README names the same toolchain, and
//! .ci/run builds with exactly it (reading the version from Cargo.toml, so the two cannot drift).
//! The toolchain running this test is at least that version, or cargo would have refused to
//! build it.

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{ROOT}/{path}")).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn rust_version_is_set_stated_in_readme_and_built_with_in_ci() {
    let version = env!("CARGO_PKG_RUST_VERSION");
    assert!(!version.is_empty(), "Cargo.toml states no rust-version");
    let cargo: toml::Value = toml::from_str(&read("Cargo.toml")).unwrap();
    assert_eq!(cargo["package"]["rust-version"].as_str(), Some(version));
    // Edition 2024 and the let-chains the code uses need 1.88 at least.
    let (major, minor) = version.split_once('.').unwrap();
    let minor: u32 = minor.split('.').next().unwrap().parse().unwrap();
    assert!(major == "1" && minor >= 88, "rust-version {version} is older than the language the code uses");
    let readme = read("README.md");
    assert!(
        readme.contains(&format!("It needs Rust {version} or later (Cargo.toml's `rust-version`")),
        "README.md does not state rust-version {version}"
    );
    let ci = read(".ci/run");
    assert!(ci.contains(r#"msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml)"#), "{ci}");
    assert!(ci.contains(r#"cargo +"$msrv" check --all-targets --locked"#), "{ci}");
    // The sed in .ci/run finds exactly Cargo.toml's line.
    let manifest = read("Cargo.toml");
    let lines: Vec<&str> = manifest.lines().filter(|l| l.starts_with("rust-version = ")).collect();
    assert_eq!(lines, [format!("rust-version = \"{version}\"")]);
}

/// A test that cannot run here prints `*** NOT RUN ***` and passes, which `cargo test`'s summary
/// line does not count (libtest decides `ignored` at compile time only). What keeps such a skip
/// from hiding in CI: each one reads a `FAULTLINE_REQUIRE_<X>` variable that `.ci/run` exports
/// once it has installed what the test needs, and then the test fails instead of skipping (the
/// real-Slurm test's rule, made every skip's). The one exception is a skip that depends on timing
/// (a sweep that ended before a second one started), which no installation can make run: it is
/// named here. README's "Run the tests" lists the variables.
#[test]
fn every_not_run_skip_is_required_by_ci() {
    let ci = read(".ci/run");
    let readme = read("README.md");
    let timing_only = ["the contention half of the output-lock test"];
    let mut skips = 0;
    for entry in std::fs::read_dir(format!("{ROOT}/tests")).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "rs") || path.file_name().is_some_and(|n| n == "rust_version.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (k, line) in lines.iter().enumerate() {
            if !line.contains("NOT RUN:") || timing_only.iter().any(|t| line.contains(t)) {
                continue;
            }
            skips += 1;
            // The variable is read within the 30 lines before the message.
            let before = lines[k.saturating_sub(30)..k].join("\n");
            let variable = before
                .match_indices("FAULTLINE_REQUIRE_")
                .map(|(at, _)| {
                    let rest = &before[at..];
                    &rest[..rest.find(|c: char| !(c.is_ascii_uppercase() || c == '_')).unwrap_or(rest.len())]
                })
                .last()
                .unwrap_or_else(|| {
                    panic!(
                        "{}:{}: a NOT RUN skip that no FAULTLINE_REQUIRE_* variable turns into a failure",
                        path.display(),
                        k + 1
                    )
                });
            assert!(
                ci.contains(&format!("export {variable}=1")),
                "{}:{}: .ci/run never exports {variable}=1",
                path.display(),
                k + 1
            );
            assert!(readme.contains(variable), "README's \"Run the tests\" does not name {variable}");
        }
    }
    assert!(skips >= 6, "{skips} NOT RUN skips found");
}
