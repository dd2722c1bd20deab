//! A tune's checkpoint: after every round, the state of the race (every candidate's values per
//! replication, bit for bit, and its status) beside the output folder, so `--resume` after a
//! kill continues from the last finished round and writes the uninterrupted tune's bytes.

use super::outcome::Round;
use super::race::{Samples, Status};
use crate::experiment::command::CommandError;
use crate::experiment::output::folder::write_internal;
use crate::experiment::sweep::checkpoint::fnv_hex;
use crate::scenario::{InputKind, InputRefusal, read_input, tame_message};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Everything a tune's results depend on; a checkpoint of another key is not resumed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuneKey {
    pub version: String,
    /// A hash of the running executable (the same bytes only from the same binary).
    pub build: String,
    /// The scenario as parsed, serialized canonically.
    pub scenario: String,
    pub policy: String,
    pub space: Vec<String>,
    pub objectives: Vec<String>,
    pub sets: Vec<String>,
    pub seed: Option<u64>,
    pub replications: Option<u32>,
    pub candidates: usize,
    pub initial_replications: u32,
    pub budget: Option<usize>,
    pub generations: u32,
    /// Samples files the scenario reads, as `path digest`.
    pub files: Vec<String>,
}

/// One candidate's part of the race: values as f64 bits (exact, NaN included) and status.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CandidateState {
    /// Its values and generation, so a child of a later generation can be made again.
    values: Vec<String>,
    generation: u32,
    objectives: Vec<Vec<u64>>,
    constraints: Vec<Vec<u64>>,
    status: Status,
}

/// The race after its last finished round, sealed like a sweep's points: the digest of the
/// tune that made it and a checksum of its content, so a checkpoint of another tune or one
/// changed by a single digit is never resumed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RaceState {
    key: TuneKey,
    pub generation: u32,
    pub done: u32,
    pub simulations: usize,
    pub rounds: Vec<Round>,
    candidates: Vec<CandidateState>,
    /// [`TuneKey::digest`] of the tune that made it (empty until sealed).
    #[serde(default)]
    tune: String,
    /// FNV-1a of the state serialized with an empty checksum (empty until sealed).
    #[serde(default)]
    checksum: String,
}

impl TuneKey {
    /// The tune's identity in 16 hex digits: its checkpoint and every shard carry it.
    pub fn digest(&self) -> String {
        fnv_hex(&serde_json::to_vec(self).expect("a key always serializes"))
    }
}

/// What `--resume` found beside the output.
#[derive(Debug)]
pub enum Loaded {
    /// This tune's state, verified.
    State(Box<RaceState>),
    /// No checkpoint.
    Nothing,
    /// A checkpoint of another tune (another scenario, other arguments, another build).
    OtherTune,
    /// A checkpoint that cannot be trusted: why, and the simulations it claimed, when it said.
    Damaged { why: String, simulations: Option<usize> },
}

/// Tune checkpoints under the reading rule: the values of every candidate and replication, a
/// few MiB for thousands of candidates.
pub const CHECKPOINT_FILES: InputKind = InputKind { plural: "tune checkpoints", max_bytes: 1 << 30, advice: "" };

fn bits(v: &[Vec<f64>]) -> Vec<Vec<u64>> {
    v.iter().map(|r| r.iter().map(|x| x.to_bits()).collect()).collect()
}

fn floats(v: &[Vec<u64>]) -> Vec<Vec<f64>> {
    v.iter().map(|r| r.iter().map(|x| f64::from_bits(*x)).collect()).collect()
}

impl RaceState {
    /// `at` is (generation, replications done in it, simulations so far); `values` each
    /// candidate's values and generation.
    pub fn new(
        key: &TuneKey,
        at: (u32, u32, usize),
        rounds: &[Round],
        values: &[(Vec<String>, u32)],
        samples: &[&Samples],
        status: &[Status],
    ) -> Self {
        RaceState {
            key: key.clone(),
            generation: at.0,
            done: at.1,
            simulations: at.2,
            rounds: rounds.to_vec(),
            candidates: samples
                .iter()
                .zip(status)
                .zip(values)
                .map(|((s, st), (v, g))| CandidateState {
                    values: v.clone(),
                    generation: *g,
                    objectives: bits(&s.objectives),
                    constraints: bits(&s.constraints),
                    status: st.clone(),
                })
                .collect(),
            tune: String::new(),
            checksum: String::new(),
        }
    }

    fn content_checksum(&self) -> String {
        let unsealed = RaceState { checksum: String::new(), ..self.clone() };
        fnv_hex(&serde_json::to_vec(&unsealed).expect("a race state always serializes"))
    }

    /// The state sealed for the tune whose key is `key`.
    pub fn sealed(&self, key: &TuneKey) -> RaceState {
        let mut state = RaceState { tune: key.digest(), checksum: String::new(), ..self.clone() };
        state.checksum = state.content_checksum();
        state
    }

    /// A checkpoint's bytes read back for the tune of `key` whose first candidates are `first`
    /// (children of later generations follow them).
    pub fn read(bytes: &[u8], key: &TuneKey, first: &[Vec<String>]) -> Loaded {
        let state: RaceState = match serde_json::from_slice(bytes) {
            Ok(state) => state,
            Err(e) => {
                let why = tame_message(&format!("it is not a tune checkpoint ({e})"));
                return Loaded::Damaged { why, simulations: None };
            }
        };
        if state.checksum != state.content_checksum() {
            let why = "its content does not match its checksum (it was changed or damaged)".to_string();
            return Loaded::Damaged { why, simulations: Some(state.simulations) };
        }
        let same_start = state.candidates.len() >= first.len()
            && state.candidates.iter().zip(first).all(|(c, v)| c.values == *v && c.generation == 0);
        if state.tune != key.digest() || state.key != *key || !same_start {
            return Loaded::OtherTune;
        }
        if !state.fits(key) {
            let why =
                "its candidates' figures do not fit together (a sealed file written by something else)".to_string();
            return Loaded::Damaged { why, simulations: Some(state.simulations) };
        }
        Loaded::State(Box::new(state))
    }

    /// Every candidate has a row per objective of the key and the same number of constraint
    /// rows, each row of a candidate as long as its others, and every candidate a status names
    /// exists: what the race indexes without checking.
    fn fits(&self, key: &TuneKey) -> bool {
        let n = self.candidates.len();
        let constraints = self.candidates.first().map_or(0, |c| c.constraints.len());
        self.candidates.iter().all(|c| {
            let reps = c.objectives.first().map_or(0, Vec::len);
            c.objectives.len() == key.objectives.len()
                && c.constraints.len() == constraints
                && c.objectives.iter().chain(&c.constraints).all(|row| row.len() == reps)
                && match &c.status {
                    Status::Racing | Status::Infeasible { .. } => true,
                    Status::Dominated { by: other, .. } | Status::Twin { of: other, .. } => *other < n,
                }
        })
    }

    pub fn samples(&self) -> Vec<Samples> {
        self.candidates
            .iter()
            .map(|c| Samples { objectives: floats(&c.objectives), constraints: floats(&c.constraints) })
            .collect()
    }

    pub fn values(&self) -> Vec<Vec<String>> {
        self.candidates.iter().map(|c| c.values.clone()).collect()
    }

    pub fn generations(&self) -> Vec<u32> {
        self.candidates.iter().map(|c| c.generation).collect()
    }

    pub fn status(&self) -> Vec<Status> {
        self.candidates.iter().map(|c| c.status.clone()).collect()
    }
}

/// The checkpoint file of a tune writing to `folder`.
pub struct Checkpoint {
    dir: PathBuf,
}

impl Checkpoint {
    pub fn at(dir: &Path) -> Checkpoint {
        Checkpoint { dir: dir.to_path_buf() }
    }

    /// The folder of the checkpoint (and of a sharded tune's shard files).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn file(&self) -> PathBuf {
        self.dir.join("tune.json")
    }

    /// The state to resume: a checkpoint of this key whose first candidates are `first`
    /// (children of later generations follow them), or what was found instead.
    pub fn load(&self, key: &TuneKey, first: &[Vec<String>]) -> Loaded {
        match read_input(&self.file(), CHECKPOINT_FILES) {
            Ok(bytes) => RaceState::read(&bytes, key, first),
            Err(InputRefusal::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Loaded::Nothing,
            Err(refusal) => Loaded::Damaged { why: refusal.to_string(), simulations: None },
        }
    }

    /// The checkpoint file's path.
    pub fn path(&self) -> PathBuf {
        self.file()
    }

    pub fn save(&self, state: &RaceState) -> Result<(), CommandError> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| CommandError::Io(format!("cannot create {}: {e}", self.dir.display())))?;
        let text = serde_json::to_vec(&state.sealed(&state.key)).expect("a race state always serializes");
        // A folder where the checkpoint goes was read as a damaged checkpoint and is computed
        // again; it sits in the tune's own checkpoint folder, which the tune removes whole at its
        // end anyway, so it is replaced as a damaged file would be.
        if std::fs::symlink_metadata(self.file()).is_ok_and(|m| m.is_dir()) {
            std::fs::remove_dir_all(self.file()).map_err(|e| {
                CommandError::Io(format!(
                    "cannot replace the folder {} with the checkpoint: {e}",
                    self.file().display()
                ))
            })?;
        }
        write_internal(&self.file(), &text, true)
    }

    /// Removes the checkpoint once the tune's files are in place.
    pub fn remove(self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A small key for unit tests of checkpoints and shards: tunes told apart by their seed.
#[cfg(test)]
pub(super) fn test_key(seed: u64) -> TuneKey {
    TuneKey {
        version: "v".into(),
        build: "b".into(),
        scenario: "s".into(),
        policy: "p".into(),
        space: vec![],
        objectives: vec![],
        sets: vec![],
        seed: Some(seed),
        replications: None,
        candidates: 2,
        initial_replications: 1,
        budget: None,
        generations: 1,
        files: vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::test_key as key;

    #[test]
    fn a_tunes_digest_is_16_hex_digits_that_tell_two_tunes_apart() {
        let digest = key(1).digest();
        assert_eq!(digest.len(), 16, "{digest}");
        assert!(digest.chars().all(|c| c.is_ascii_hexdigit()), "{digest}");
        assert_eq!(digest, key(1).digest(), "the same key, the same digest");
        assert_ne!(digest, key(2).digest(), "another seed, another tune");
    }
}
