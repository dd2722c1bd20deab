//! The committed reference output (reference/meeting-analysis-incident) is what the current
//! binary writes, byte for byte: a change to any figure must come with regenerated files.

mod common;

use common::read_all;
use std::process::Command;

#[test]
fn the_incident_reproduces_the_committed_reference_byte_for_byte() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = std::env::temp_dir().join(format!("faultline-reference-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let o = Command::new(env!("CARGO_BIN_EXE_faultline"))
        .args(["run", &format!("{root}/scenarios/meeting-analysis-incident.toml"), "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (fresh, committed) =
        (read_all(&out), read_all(std::path::Path::new(&format!("{root}/reference/meeting-analysis-incident"))));
    assert_eq!(fresh.keys().collect::<Vec<_>>(), committed.keys().collect::<Vec<_>>());
    for (path, bytes) in &fresh {
        assert!(
            bytes == &committed[path],
            "{} differs from the reference; regenerate reference/ if the change is meant",
            path.display()
        );
    }
    std::fs::remove_dir_all(&out).unwrap();
}
