//! What a sweep keeps of a finished grid point, and the folder where it keeps them until the
//! sweep's files are written: one file per point, each written atomically, under a key that
//! names the scenario's content, the arguments and the binary, so a resumed sweep never mixes in
//! a point computed from anything else.

use crate::experiment::command::CommandError;
use crate::experiment::output::folder::{write_atomically, write_atomically_unsynced};
use crate::metrics::stats::{Aggregate, Estimate};
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

/// A finished grid point: its index, its seed and one aggregate per policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointRecord {
    pub point: usize,
    pub seed: u64,
    pub rows: Vec<PolicyRecord>,
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
    /// --resume kept this many finished points.
    Kept(usize),
}

/// The folder of finished points.
pub struct Checkpoint {
    dir: PathBuf,
}

const KEY_FILE: &str = "key.json";

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
            std::fs::read(&key_path).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok());
        let checkpoint = Checkpoint { dir: dir.to_path_buf() };
        let mut done = vec![false; wanted.len()];
        let resumed = match (resume, &stored) {
            (true, Some(k)) if k == key => {
                let mut kept = 0;
                for (i, &point) in wanted.iter().enumerate() {
                    if checkpoint.load(point).is_ok() {
                        done[i] = true;
                        kept += 1;
                    }
                }
                Resumed::Kept(kept)
            }
            (true, Some(_)) => Resumed::KeyChanged,
            (true, None) if dir.exists() => Resumed::KeyChanged,
            (true, None) => Resumed::NothingToResume,
            (false, _) => Resumed::Fresh,
        };
        if !matches!(resumed, Resumed::Kept(_)) {
            if dir.exists() {
                std::fs::remove_dir_all(dir).map_err(|e| io_error("remove the old checkpoint", dir, e))?;
            }
            let mut text = serde_json::to_string_pretty(key).expect("a key always serializes");
            text.push('\n');
            write_atomically(&key_path, text.as_bytes())?;
        }
        Ok((checkpoint, resumed, done))
    }

    fn point_path(&self, point: usize) -> PathBuf {
        self.dir.join("points").join(format!("{point}.json"))
    }

    pub fn save(&self, record: &PointRecord) -> Result<(), CommandError> {
        let text = serde_json::to_vec(record).expect("a point always serializes");
        write_atomically_unsynced(&self.point_path(record.point), &text)
    }

    pub fn load(&self, point: usize) -> Result<PointRecord, CommandError> {
        let path = self.point_path(point);
        let bytes = std::fs::read(&path).map_err(|e| io_error("read", &path, e))?;
        let record: PointRecord = serde_json::from_slice(&bytes)
            .map_err(|e| CommandError::Io(format!("{}: a damaged checkpoint file ({e})", path.display())))?;
        if record.point != point {
            return Err(CommandError::Io(format!("{}: holds point {}, not {point}", path.display(), record.point)));
        }
        Ok(record)
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
        }
    }

    fn record(point: usize) -> PointRecord {
        let mut aggregate = Aggregate { replications: 3, ..Default::default() };
        aggregate.estimates.insert("x".into(), Estimate { mean: 0.1 + 0.2, low: f64::NAN, high: -0.0, n: 3 });
        PointRecord { point, seed: 7, rows: vec![PolicyRecord::new("p", &aggregate)] }
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
        assert_eq!((resumed, done), (Resumed::Kept(1), vec![false, true]));
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
}
