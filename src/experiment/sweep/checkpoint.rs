//! What a sweep keeps of a finished grid point, and the folder where it keeps them until the
//! sweep's files are written: one file per point, each written atomically, under a key that
//! names the scenario's content, the arguments and the binary, so a resumed sweep never mixes in
//! a point computed from anything else.

use crate::experiment::command::CommandError;
use crate::experiment::output::folder::write_internal;
use crate::metrics::stats::{Aggregate, Estimate};
use crate::scenario::{InputKind, read_input, tame_message};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Everything a sweep's results depend on. Two sweeps with equal keys compute equal points.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepKey {
    /// The crate version.
    pub version: String,
    /// A hash of the running executable's bytes: the same scenario and seed give the same bytes
    /// only on the same binary.
    pub build: String,
    /// The scenario file's content as parsed, serialized canonically (comments, layout and the
    /// file's name do not matter).
    pub scenario: String,
    pub sets: Vec<String>,
    pub params: Vec<String>,
    pub policies: Vec<String>,
    pub seed: Option<u64>,
    pub replications: Option<u32>,
    /// Every samples file a grid point reads, as `path digest`: results computed from a
    /// changed file are another sweep's.
    #[serde(default)]
    pub files: Vec<String>,
}

/// The hash of the running executable, as 16 hex digits ("unknown" if it cannot be read).
pub fn build_id() -> String {
    let bytes = std::env::current_exe().and_then(std::fs::read);
    match bytes {
        Ok(bytes) => {
            let mut h: u64 = 0xCBF2_9CE4_8422_2325;
            for b in bytes {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0000_0100_0000_01B3);
            }
            format!("{h:016x}")
        }
        Err(_) => "unknown".into(),
    }
}

/// One estimate as stored: name, then the bit patterns of mean, low and high (exact, and NaN
/// survives), then the number of defined replications.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredEstimate(pub String, pub u64, pub u64, pub u64, pub usize);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyRecord {
    pub policy: String,
    pub replications: usize,
    pub estimates: Vec<StoredEstimate>,
}

/// A finished grid point: its index, its seed and one aggregate per policy, sealed with the
/// digest of the sweep that made it and a checksum of its own content, so a point copied from
/// another sweep or changed by a single digit is never taken for this sweep's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointRecord {
    pub point: usize,
    pub seed: u64,
    pub rows: Vec<PolicyRecord>,
    /// [`SweepKey::digest`] of the sweep that computed it (empty until sealed).
    #[serde(default)]
    pub sweep: String,
    /// FNV-1a of the record serialized with an empty checksum (empty until sealed).
    #[serde(default)]
    pub checksum: String,
}

/// FNV-1a, 64 bits, as 16 hex digits: a checksum against damage, not against an adversary.
pub fn fnv_hex(bytes: &[u8]) -> String {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    format!("{h:016x}")
}

impl SweepKey {
    /// The sweep's identity in 16 hex digits: every point and shard record carries it.
    pub fn digest(&self) -> String {
        fnv_hex(&serde_json::to_vec(self).expect("a key always serializes"))
    }
}

impl PointRecord {
    pub fn new(point: usize, seed: u64, rows: Vec<PolicyRecord>) -> PointRecord {
        PointRecord { point, seed, rows, sweep: String::new(), checksum: String::new() }
    }

    fn content_checksum(&self) -> String {
        let unsealed = PointRecord { checksum: String::new(), ..self.clone() };
        fnv_hex(&serde_json::to_vec(&unsealed).expect("a point always serializes"))
    }

    /// The record sealed for the sweep whose digest is `sweep`.
    pub fn sealed(&self, sweep: &str) -> PointRecord {
        let mut record = PointRecord { sweep: sweep.to_string(), checksum: String::new(), ..self.clone() };
        record.checksum = record.content_checksum();
        record
    }

    /// A checkpoint file's bytes read back as point `point` of sweep `sweep`, or why they are not.
    pub fn read(bytes: &[u8], point: usize, sweep: &str) -> Result<PointRecord, String> {
        let record: PointRecord =
            serde_json::from_slice(bytes).map_err(|e| tame_message(&format!("a damaged checkpoint file ({e})")))?;
        if record.point != point {
            return Err(format!("holds point {}, not {point}", record.point));
        }
        record.verify(sweep)?;
        Ok(record)
    }

    /// Why the record is not one of sweep `sweep`'s, if it is not.
    pub fn verify(&self, sweep: &str) -> Result<(), String> {
        if self.sweep != sweep {
            return Err(format!(
                "made by another sweep (its sweep digest is {}, this sweep's {sweep}: another seed, scenario, grid or build)",
                if self.sweep.is_empty() { "missing" } else { &self.sweep }
            ));
        }
        if self.checksum != self.content_checksum() {
            return Err("its content does not match its checksum (the record was changed or damaged)".into());
        }
        Ok(())
    }
}

impl PolicyRecord {
    pub fn new(policy: &str, aggregate: &Aggregate) -> PolicyRecord {
        let estimates = aggregate
            .estimates
            .iter()
            .map(|(k, e)| StoredEstimate(k.clone(), e.mean.to_bits(), e.low.to_bits(), e.high.to_bits(), e.n))
            .collect();
        PolicyRecord { policy: policy.to_string(), replications: aggregate.replications, estimates }
    }

    pub fn aggregate(&self) -> Aggregate {
        let estimates = self
            .estimates
            .iter()
            .map(|StoredEstimate(k, mean, low, high, n)| {
                let e = Estimate {
                    mean: f64::from_bits(*mean),
                    low: f64::from_bits(*low),
                    high: f64::from_bits(*high),
                    n: *n,
                };
                (k.clone(), e)
            })
            .collect();
        Aggregate { replications: self.replications, estimates }
    }
}

/// How a checkpoint was opened, for the command's report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resumed {
    /// No --resume: any earlier checkpoint was discarded.
    Fresh,
    /// --resume found no checkpoint.
    NothingToResume,
    /// --resume found a checkpoint for other inputs and discarded it.
    KeyChanged,
    /// --resume kept `kept` finished points and computed again `rejected` whose files did not
    /// read back or did not match (damaged, changed, or another sweep's).
    Kept { kept: usize, rejected: usize },
}

/// The folder of finished points.
pub struct Checkpoint {
    dir: PathBuf,
    /// The digest every point here is sealed with and checked against.
    sweep: String,
}

const KEY_FILE: &str = "key.json";
/// A checkpoint's key and points under the reading rule: a key holds the scenario (at most
/// 16 MiB as a file), a point a few KB per policy.
pub const CHECKPOINT_FILES: InputKind = InputKind { plural: "checkpoint files", max_bytes: 256 << 20, advice: "" };

fn io_error(what: &str, path: &Path, e: std::io::Error) -> CommandError {
    CommandError::Io(format!("cannot {what} {}: {e}", path.display()))
}

impl Checkpoint {
    /// Opens the checkpoint at `dir` for `key`. Without `resume` it starts empty. `wanted`
    /// lists the points this command computes; with `resume`, the points already there are
    /// returned (a file that does not read back is computed again).
    pub fn open(
        dir: &Path,
        key: &SweepKey,
        resume: bool,
        wanted: &[usize],
    ) -> Result<(Checkpoint, Resumed, Vec<bool>), CommandError> {
        let key_path = dir.join(KEY_FILE);
        let stored: Option<SweepKey> =
            read_input(&key_path, CHECKPOINT_FILES).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok());
        let checkpoint = Checkpoint { dir: dir.to_path_buf(), sweep: key.digest() };
        let mut done = vec![false; wanted.len()];
        let resumed = match (resume, &stored) {
            (true, Some(k)) if k == key => {
                let (mut kept, mut rejected) = (0, 0);
                for (i, &point) in wanted.iter().enumerate() {
                    if checkpoint.load(point).is_ok() {
                        done[i] = true;
                        kept += 1;
                    } else if checkpoint.point_path(point).exists() {
                        rejected += 1;
                    }
                }
                Resumed::Kept { kept, rejected }
            }
            (true, Some(_)) => Resumed::KeyChanged,
            (true, None) if dir.exists() => Resumed::KeyChanged,
            (true, None) => Resumed::NothingToResume,
            (false, _) => Resumed::Fresh,
        };
        if !matches!(resumed, Resumed::Kept { .. }) {
            if dir.exists() {
                std::fs::remove_dir_all(dir).map_err(|e| io_error("remove the old checkpoint", dir, e))?;
            }
            let mut text = serde_json::to_string_pretty(key).expect("a key always serializes");
            text.push('\n');
            if let Err(e) = write_internal(&key_path, text.as_bytes(), true) {
                // A full disk must not leave an empty checkpoint folder behind.
                let _ = std::fs::remove_dir_all(dir);
                return Err(e);
            }
        }
        Ok((checkpoint, resumed, done))
    }

    fn point_path(&self, point: usize) -> PathBuf {
        self.dir.join("points").join(format!("{point}.json"))
    }

    pub fn save(&self, record: &PointRecord) -> Result<(), CommandError> {
        let text = serde_json::to_vec(&record.sealed(&self.sweep)).expect("a point always serializes");
        write_internal(&self.point_path(record.point), &text, false)
    }

    pub fn load(&self, point: usize) -> Result<PointRecord, CommandError> {
        let path = self.point_path(point);
        let bytes = read_input(&path, CHECKPOINT_FILES)
            .map_err(|refusal| CommandError::Io(format!("cannot read {}: {refusal}", path.display())))?;
        PointRecord::read(&bytes, point, &self.sweep)
            .map_err(|why| CommandError::Io(format!("{}: {why}", path.display())))
    }

    /// Removes the folder once the sweep's files are in place.
    pub fn remove(self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(scenario: &str) -> SweepKey {
        SweepKey {
            version: "v".into(),
            build: "b".into(),
            scenario: scenario.into(),
            sets: vec![],
            params: vec!["a=1,2".into()],
            policies: vec!["p".into()],
            seed: None,
            replications: None,
            files: vec![],
        }
    }

    fn record(point: usize) -> PointRecord {
        let mut aggregate = Aggregate { replications: 3, ..Default::default() };
        aggregate.estimates.insert("x".into(), Estimate { mean: 0.1 + 0.2, low: f64::NAN, high: -0.0, n: 3 });
        PointRecord::new(point, 7, vec![PolicyRecord::new("p", &aggregate)])
    }

    #[test]
    fn records_round_trip_exactly_nan_and_signed_zero_included() {
        let r = record(4);
        let back: PointRecord = serde_json::from_slice(&serde_json::to_vec(&r).unwrap()).unwrap();
        let e = &back.rows[0].aggregate().estimates["x"];
        assert_eq!(e.mean.to_bits(), (0.1f64 + 0.2).to_bits());
        assert!(e.low.is_nan());
        assert_eq!(e.high.to_bits(), (-0.0f64).to_bits());
    }

    #[test]
    fn resume_keeps_points_only_under_the_same_key() {
        let dir = std::env::temp_dir().join(format!("faultline-checkpoint-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (c, resumed, done) = Checkpoint::open(&dir, &key("s"), true, &[0, 1]).unwrap();
        assert_eq!((resumed, done), (Resumed::NothingToResume, vec![false, false]));
        c.save(&record(1)).unwrap();
        let (_, resumed, done) = Checkpoint::open(&dir, &key("s"), true, &[0, 1]).unwrap();
        assert_eq!((resumed, done), (Resumed::Kept { kept: 1, rejected: 0 }, vec![false, true]));
        let (c, resumed, done) = Checkpoint::open(&dir, &key("changed"), true, &[0, 1]).unwrap();
        assert_eq!((resumed, done), (Resumed::KeyChanged, vec![false, false]));
        assert!(c.load(1).is_err(), "a changed scenario discards every point");
        c.save(&record(0)).unwrap();
        let (_, resumed, _) = Checkpoint::open(&dir, &key("changed"), false, &[0, 1]).unwrap();
        assert_eq!(resumed, Resumed::Fresh);
        let (c, _, done) = Checkpoint::open(&dir, &key("changed"), true, &[0, 1]).unwrap();
        assert_eq!(done, vec![false, false], "a fresh sweep starts from an empty checkpoint");
        c.remove();
        assert!(!dir.exists());
    }

    #[test]
    fn a_changed_digit_or_another_sweeps_point_is_computed_again() {
        let dir = std::env::temp_dir().join(format!("faultline-checkpoint-seal-{}", std::process::id()));
        let other = std::env::temp_dir().join(format!("faultline-checkpoint-other-{}", std::process::id()));
        for d in [&dir, &other] {
            let _ = std::fs::remove_dir_all(d);
        }
        let (c, _, _) = Checkpoint::open(&dir, &key("s"), true, &[0, 1, 2]).unwrap();
        for p in 0..3 {
            c.save(&record(p)).unwrap();
        }
        // Point 1: a digit changed inside, still valid JSON.
        let path = c.point_path(1);
        let text = std::fs::read_to_string(&path).unwrap();
        let changed = text.replacen("\"seed\":7", "\"seed\":8", 1);
        assert_ne!(text, changed);
        std::fs::write(&path, changed).unwrap();
        // Point 2: the same point from a sweep of another key (another seed).
        let foreign = SweepKey { seed: Some(8), ..key("s") };
        let (o, _, _) = Checkpoint::open(&other, &foreign, true, &[2]).unwrap();
        o.save(&record(2)).unwrap();
        std::fs::copy(o.point_path(2), c.point_path(2)).unwrap();
        let (c, resumed, done) = Checkpoint::open(&dir, &key("s"), true, &[0, 1, 2]).unwrap();
        assert_eq!(resumed, Resumed::Kept { kept: 1, rejected: 2 });
        assert_eq!(done, vec![true, false, false]);
        let e = c.load(2).unwrap_err().to_string();
        assert!(e.contains("another sweep"), "{e}");
        let e = c.load(1).unwrap_err().to_string();
        assert!(e.contains("checksum"), "{e}");
        for d in [&dir, &other] {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}
