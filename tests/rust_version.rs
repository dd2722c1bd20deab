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
