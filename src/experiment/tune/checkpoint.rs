//! A tune's checkpoint: after every round, the state of the race (every candidate's values per
//! replication, bit for bit, and its status) beside the output folder, so `--resume` after a
//! kill continues from the last finished round and writes the uninterrupted tune's bytes.

use super::outcome::Round;
use super::race::{Samples, Status};
use crate::experiment::command::CommandError;
use crate::experiment::output::folder::write_atomically;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Everything a tune's results depend on; a checkpoint of another key is not resumed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
struct CandidateState {
    /// Its values and generation, so a child of a later generation can be made again.
    values: Vec<String>,
    generation: u32,
    objectives: Vec<Vec<u64>>,
    constraints: Vec<Vec<u64>>,
    status: Status,
}

/// The race after its last finished round.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RaceState {
    key: TuneKey,
    pub generation: u32,
    pub done: u32,
    pub simulations: usize,
    pub rounds: Vec<Round>,
    candidates: Vec<CandidateState>,
}

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
        }
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
    /// (children of later generations follow them). Anything else (none, another key, a
    /// damaged file) is no state.
    pub fn load(&self, key: &TuneKey, first: &[Vec<String>]) -> Option<RaceState> {
        let bytes = std::fs::read(self.file()).ok()?;
        let state: RaceState = serde_json::from_slice(&bytes).ok()?;
        let same_start = state.candidates.len() >= first.len()
            && state.candidates.iter().zip(first).all(|(c, v)| c.values == *v && c.generation == 0);
        (state.key == *key && same_start).then_some(state)
    }

    pub fn save(&self, state: &RaceState) -> Result<(), CommandError> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| CommandError::Io(format!("cannot create {}: {e}", self.dir.display())))?;
        let text = serde_json::to_vec(state).expect("a race state always serializes");
        write_atomically(&self.file(), &text)
    }

    /// Removes the checkpoint once the tune's files are in place.
    pub fn remove(self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
