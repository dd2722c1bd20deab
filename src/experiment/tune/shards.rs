//! A tune on a cluster: each round of the race split over N processes. `tune --shard K/N`
//! computes the simulations k, k + N, ... of the next round the checkpoint has not seen and
//! writes them as a shard file beside the checkpoint; `tune --merge-shards` puts the N files of
//! that round into the checkpoint, races, and either writes the tune's files (the race is over)
//! or says which round needs its shards next. Every round is the unsharded tune's round, so the
//! files are the unsharded tune's bytes.

use super::checkpoint::TuneKey;
use crate::experiment::command::CommandError;
use crate::experiment::output::folder::write_atomically;
use crate::experiment::sweep::shard::Shard;
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
#[derive(Debug, Serialize, Deserialize)]
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
}

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
    let file = ShardFile {
        format: FORMAT.into(),
        key: key.clone(),
        round,
        shard: shard.index,
        shards: shard.count,
        tasks: tasks.to_vec(),
        values: values.iter().map(|v| v.iter().map(|x| x.to_bits()).collect()).collect(),
    };
    std::fs::create_dir_all(dir).map_err(|e| CommandError::Io(format!("cannot create {}: {e}", dir.display())))?;
    let path = dir.join(file_name(round, shard));
    write_atomically(&path, &serde_json::to_vec(&file).expect("a shard always serializes"))?;
    Ok(path)
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
    let bad = |path: &Path, why: String| CommandError::Input(format!("{}: {why}", path.display()));
    let mut files = Vec::with_capacity(paths.len());
    for path in &paths {
        let bytes =
            std::fs::read(path).map_err(|e| CommandError::Io(format!("cannot read {}: {e}", path.display())))?;
        let file: ShardFile = serde_json::from_slice(&bytes)
            .map_err(|e| bad(path, format!("not a tune shard file ({e}); remove it and run its shard again")))?;
        if file.format != FORMAT || file.round != round {
            return Err(bad(path, "not a shard of this round; remove it and run its shard again".into()));
        }
        if file.key != *key {
            return Err(bad(
                path,
                "made by another tune (another scenario, other arguments or another build); every shard and the merge take the same arguments".into(),
            ));
        }
        files.push((path, file));
    }
    let shards = files[0].1.shards;
    if let Some((path, f)) = files.iter().find(|(_, f)| f.shards != shards) {
        return Err(bad(path, format!("a shard of {} where {} is a shard of {shards}", f.shards, paths[0].display())));
    }
    let mut rows: Vec<Option<Vec<f64>>> = vec![None; all.len()];
    let mut seen = vec![false; shards];
    for (path, f) in &files {
        let shard = Shard { index: f.shard, count: shards };
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
