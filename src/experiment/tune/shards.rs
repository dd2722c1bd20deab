//! A tune on a cluster: each round of the race split over N processes. `tune --shard K/N`
//! computes the simulations k, k + N, ... of the next round the checkpoint has not seen and
//! writes them as a shard file beside the checkpoint; `tune --merge-shards` puts the N files of
//! that round into the checkpoint, races, and either writes the tune's files (the race is over)
//! or says which round needs its shards next. Every round is the unsharded tune's round, so the
//! files are the unsharded tune's bytes.

use super::checkpoint::TuneKey;
use crate::experiment::command::CommandError;
use crate::experiment::output::folder::write_internal;
use crate::experiment::sweep::checkpoint::fnv_hex;
use crate::experiment::sweep::shard::Shard;
use crate::scenario::{InputKind, read_input, tame_message};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// How a tune's rounds are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundMode {
    /// Every simulation here, every round.
    Local,
    /// One share of the next round here, then stop.
    Shard(Shard),
    /// The next rounds from their shard files, until a round has none.
    Merge,
}

/// One simulation of a round: the candidate and its replication.
pub type RoundTask = (usize, u32);

/// What one process computed of one round.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShardFile {
    format: String,
    /// The tune's key: a shard of another tune (scenario, arguments, build) is refused.
    key: TuneKey,
    round: usize,
    shard: usize,
    shards: usize,
    tasks: Vec<RoundTask>,
    /// Per task, the metrics' values as f64 bits (exact, NaN included).
    values: Vec<Vec<u64>>,
    /// [`TuneKey::digest`] of the tune that made it (empty until sealed).
    #[serde(default)]
    tune: String,
    /// FNV-1a of the file serialized with an empty checksum (empty until sealed).
    #[serde(default)]
    checksum: String,
}

impl ShardFile {
    fn content_checksum(&self) -> String {
        let unsealed = ShardFile { checksum: String::new(), ..self.clone() };
        fnv_hex(&serde_json::to_vec(&unsealed).expect("a shard always serializes"))
    }

    fn sealed(mut self) -> ShardFile {
        self.tune = self.key.digest();
        self.checksum = self.content_checksum();
        self
    }
}

/// Tune shard files under the reading rule: one round's values of one process.
pub const SHARD_FILES: InputKind = InputKind { plural: "tune shard files", max_bytes: 1 << 30, advice: "" };

const FORMAT: &str = "faultline-tune-shard";

fn file_name(round: usize, shard: Shard) -> String {
    format!("round-{round}-shard-{}-of-{}.json", shard.index, shard.count)
}

/// The tasks of `all` that shard `shard` computes.
pub fn share(all: &[RoundTask], shard: Shard) -> Vec<RoundTask> {
    all.iter().enumerate().filter(|(i, _)| shard.owns(*i)).map(|(_, t)| *t).collect()
}

/// Writes shard `shard`'s values of round `round` into `dir`; returns the file's path.
pub fn write(
    dir: &Path,
    key: &TuneKey,
    round: usize,
    shard: Shard,
    tasks: &[RoundTask],
    values: &[Vec<f64>],
) -> Result<PathBuf, CommandError> {
    std::fs::create_dir_all(dir).map_err(|e| CommandError::Io(format!("cannot create {}: {e}", dir.display())))?;
    let path = dir.join(file_name(round, shard));
    write_internal(&path, &shard_bytes(key, round, shard, tasks, values), true)?;
    Ok(path)
}

/// A shard file's bytes read back as a shard of round `round` of the tune of `key`, or why not.
fn read_shard(bytes: &[u8], key: &TuneKey, round: usize) -> Result<ShardFile, String> {
    let file: ShardFile =
        serde_json::from_slice(bytes).map_err(|e| tame_message(&format!("not a tune shard file ({e})")))?;
    if file.checksum != file.content_checksum() {
        return Err("its content does not match its checksum (it was changed or damaged)".into());
    }
    if file.format != FORMAT || file.round != round {
        return Err(format!("not a shard of round {round}"));
    }
    if file.tune != key.digest() || file.key != *key {
        return Err(
            "made by another tune (another scenario, other arguments or another build); every shard and the merge take the same arguments".into(),
        );
    }
    Ok(file)
}

/// What merge takes of one shard file: which shard of how many, its simulations and their
/// values.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardValues {
    pub shard: Shard,
    pub tasks: Vec<RoundTask>,
    pub values: Vec<Vec<f64>>,
}

/// A shard file's bytes as merge takes them (the fuzzer's entry): Ok when they are a sealed
/// shard of round `round` of the tune of `key`.
pub fn read_shard_values(bytes: &[u8], key: &TuneKey, round: usize) -> Result<ShardValues, String> {
    let file = read_shard(bytes, key, round)?;
    let values = file.values.iter().map(|v| v.iter().map(|x| f64::from_bits(*x)).collect()).collect();
    Ok(ShardValues { shard: Shard { index: file.shard, count: file.shards }, tasks: file.tasks, values })
}

/// A sealed shard file's bytes, as `write` writes them (for the fuzzer's seeds and checks).
pub fn shard_bytes(key: &TuneKey, round: usize, shard: Shard, tasks: &[RoundTask], values: &[Vec<f64>]) -> Vec<u8> {
    let file = ShardFile {
        format: FORMAT.into(),
        key: key.clone(),
        round,
        shard: shard.index,
        shards: shard.count,
        tasks: tasks.to_vec(),
        values: values.iter().map(|v| v.iter().map(|x| x.to_bits()).collect()).collect(),
        tune: String::new(),
        checksum: String::new(),
    }
    .sealed();
    serde_json::to_vec(&file).expect("a shard always serializes")
}

/// The values of round `round` (one row per task of `all`, in order) from its shard files in
/// `dir`; None when the round has no shard file yet. A set that is incomplete, mixed or of
/// another tune is an input error that names the files.
pub fn gather(
    dir: &Path,
    key: &TuneKey,
    round: usize,
    all: &[RoundTask],
) -> Result<Option<Vec<Vec<f64>>>, CommandError> {
    let prefix = format!("round-{round}-shard-");
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&prefix)))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect(),
        Err(_) => return Ok(None),
    };
    if paths.is_empty() {
        return Ok(None);
    }
    paths.sort();
    let mut files = Vec::with_capacity(paths.len());
    let mut refused = Vec::new();
    for path in &paths {
        match read_input(path, SHARD_FILES) {
            Err(refusal) => refused.push(format!("{}: {refusal}", path.display())),
            Ok(bytes) => match read_shard(&bytes, key, round) {
                Ok(file) => files.push((path, file)),
                Err(why) => refused.push(format!("{}: {why}", path.display())),
            },
        }
    }
    if !refused.is_empty() {
        return Err(CommandError::Input(format!(
            "{} of the {} shard files of round {round} are refused, nothing is merged: {}; remove them and run their shards again",
            refused.len(),
            paths.len(),
            refused.join("; ")
        )));
    }
    let bad = |path: &Path, why: String| CommandError::Input(format!("{}: {why}", path.display()));
    let shards = files[0].1.shards;
    if let Some((path, f)) = files.iter().find(|(_, f)| f.shards != shards) {
        return Err(bad(
            path,
            format!(
                "a shard of {} where {} is a shard of {shards}: the files of two runs with different --shard counts share the folder; remove the files of one and run its missing shards again",
                f.shards,
                paths[0].display()
            ),
        ));
    }
    let mut rows: Vec<Option<Vec<f64>>> = vec![None; all.len()];
    let mut seen = vec![false; shards];
    for (path, f) in &files {
        let shard = Shard { index: f.shard, count: shards };
        let named = path.file_name().is_some_and(|n| n.to_string_lossy() == file_name(round, shard));
        if !named {
            return Err(bad(
                path,
                format!(
                    "it holds shard {} of {shards}, which its name does not say (copied or renamed?); remove it and run its shard again",
                    f.shard
                ),
            ));
        }
        if f.shard >= shards || f.tasks != share(all, shard) || f.values.len() != f.tasks.len() {
            return Err(bad(
                path,
                "its simulations are not this round's share; remove it and run its shard again".into(),
            ));
        }
        seen[f.shard] = true;
        for ((i, _), v) in all.iter().enumerate().filter(|(i, _)| shard.owns(*i)).zip(&f.values) {
            rows[i] = Some(v.iter().map(|x| f64::from_bits(*x)).collect());
        }
    }
    let missing: Vec<String> = (0..shards).filter(|&k| !seen[k]).map(|k| k.to_string()).collect();
    if !missing.is_empty() {
        return Err(CommandError::Input(format!(
            "round {round} is incomplete: shard(s) {} of {shards} (numbered from 0) are missing in {}",
            missing.join(", "),
            dir.display()
        )));
    }
    Ok(Some(rows.into_iter().map(|r| r.expect("every task belongs to one shard")).collect()))
}

#[cfg(test)]
mod tests {
    use super::super::checkpoint::test_key as key;
    use super::*;

    fn shard(key: TuneKey, round: usize) -> ShardFile {
        ShardFile {
            format: FORMAT.into(),
            key,
            round,
            shard: 0,
            shards: 1,
            tasks: vec![(0, 0)],
            values: vec![vec![1.5f64.to_bits()]],
            tune: String::new(),
            checksum: String::new(),
        }
    }

    fn read(file: &ShardFile, key: &TuneKey, round: usize) -> Result<ShardFile, String> {
        read_shard(&serde_json::to_vec(file).unwrap(), key, round)
    }

    #[test]
    fn a_sealed_shard_is_read_only_for_its_round_and_its_tune() {
        let sealed = shard(key(1), 1).sealed();
        assert!(read(&sealed, &key(1), 1).is_ok());
        // Sealed and of the right format, but of round 1: not round 2's.
        assert_eq!(read(&sealed, &key(1), 2).unwrap_err(), "not a shard of round 2");
        assert!(read(&sealed, &key(2), 1).unwrap_err().contains("made by another tune"));
        // Another tune's key with this tune's digest (forged, resealed): refused all the same.
        let mut forged = shard(key(2), 1);
        forged.tune = key(1).digest();
        forged.checksum = forged.content_checksum();
        assert!(read(&forged, &key(1), 1).unwrap_err().contains("made by another tune"));
        // Another format's file of the right round.
        let mut other = shard(key(1), 1);
        other.format = "something-else".into();
        let other = other.sealed();
        assert_eq!(read(&other, &key(1), 1).unwrap_err(), "not a shard of round 1");
    }
}
