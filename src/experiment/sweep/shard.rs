//! Shard files and `faultline merge`. `sweep --shard K/N` computes the grid points p with
//! p mod N = K and writes them as JSON lines: a header naming the sweep (its key and layout),
//! then one record per point. `merge` checks that the shards it is given are all N of one sweep
//! and writes the sweep's files, byte-identical to an unsharded sweep's.

use super::checkpoint::{Checkpoint, PointRecord, SweepKey};
use super::files::{SweepView, write_sweep_files};
use crate::experiment::batch::grid::{MAX_GRID_POINTS, SweepLayout};
use crate::experiment::command::CommandError;
use crate::experiment::output::folder::{AtomicFile, OutputFolder};
use crate::scenario::input_file::{InputFile, LineRefusal, next_line};
use crate::scenario::{InputKind, open_input, tame_message};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// Which part of a sweep one process computes: points `index`, `index + count`, ... of the
/// grid (numbered from 0, as Slurm's and Kubernetes' array indices are).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    pub fn parse(argument: &str) -> Result<Shard, CommandError> {
        let bad = |m: &str| CommandError::Input(format!("argument `--shard {argument}`: {m}"));
        let (k, n) = argument.split_once('/').ok_or_else(|| bad("expected K/N, such as 0/4"))?;
        let number = |t: &str| t.trim().parse::<usize>().map_err(|_| bad("K and N are whole numbers, such as 0/4"));
        let (index, count) = (number(k)?, number(n)?);
        if count == 0 || count > MAX_GRID_POINTS {
            return Err(bad(&format!("N is between 1 and {MAX_GRID_POINTS}")));
        }
        if index >= count {
            return Err(bad(&format!("K is between 0 and {} (shards are numbered from 0)", count - 1)));
        }
        Ok(Shard { index, count })
    }

    pub fn owns(&self, point: usize) -> bool {
        point % self.count == self.index
    }

    pub fn file_name(&self) -> String {
        format!("shard-{}-of-{}.jsonl", self.index, self.count)
    }
}

const FORMAT: &str = "faultline-sweep-shard";

/// The first line of a shard file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardHeader {
    pub format: String,
    pub shard: usize,
    pub shards: usize,
    pub key: SweepKey,
    pub layout: SweepLayout,
}

impl ShardHeader {
    pub fn new(key: &SweepKey, layout: &SweepLayout, shard: Shard) -> ShardHeader {
        ShardHeader {
            format: FORMAT.into(),
            shard: shard.index,
            shards: shard.count,
            key: key.clone(),
            layout: layout.clone(),
        }
    }
}

/// Writes the shard file atomically: the header, then each of `points` in order.
pub fn write_shard(
    path: &Path,
    header: &ShardHeader,
    points: &[usize],
    record: &mut dyn FnMut(usize) -> Result<PointRecord, CommandError>,
) -> Result<(), CommandError> {
    let mut file = AtomicFile::create(path)?;
    let io = |e: std::io::Error| CommandError::Io(format!("cannot write {}: {e}", path.display()));
    serde_json::to_writer(&mut *file, header).map_err(|e| io(e.into()))?;
    file.write_all(b"\n").map_err(io)?;
    for &p in points {
        serde_json::to_writer(&mut *file, &record(p)?).map_err(|e| io(e.into()))?;
        file.write_all(b"\n").map_err(io)?;
    }
    file.commit()
}

#[derive(Debug, Clone)]
pub struct MergeOptions {
    pub shards: Vec<PathBuf>,
    pub out: Option<PathBuf>,
    pub view: SweepView,
}

fn bad(path: &Path, line: usize, message: impl std::fmt::Display) -> CommandError {
    CommandError::Input(format!("{}:{line}: {}", path.display(), tame_message(&message.to_string())))
}

/// The longest line a shard file may hold. A point's record is about 8 KB per policy (6 policies of
/// the metastability sweep: 51 KB) whatever the replications, so 64 MiB leaves room for
/// thousands of policies or guards while an endless line is refused after 64 MiB read.
pub const MAX_SHARD_LINE_BYTES: u64 = 64 << 20;

/// Lines of a shard file, each at most [`MAX_SHARD_LINE_BYTES`]: a longer one (or an endless
/// one) is an error as soon as the limit is passed, never a line held whole in memory.
struct BoundedLines<R> {
    reader: R,
}

impl<R: BufRead> Iterator for BoundedLines<R> {
    type Item = std::io::Result<String>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(match next_line(&mut self.reader, MAX_SHARD_LINE_BYTES)? {
            Ok(line) => String::from_utf8(line).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
            Err(LineRefusal::Io(e)) => Err(e),
            Err(too_long @ LineRefusal::TooLong { .. }) => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a line {too_long}: not a faultline shard file"),
            )),
        })
    }
}

/// Sweep shard files under the reading rule (`scenario/input_file.rs`): merge reads a shard
/// to its end, so a device or a pipe (/dev/zero) would never end; a real shard holds one record
/// per point, at most a few GiB for the largest grids.
pub const SHARD_FILES: InputKind = InputKind { plural: "shard files", max_bytes: 16 << 30, advice: "" };

fn open_shard(path: &Path) -> Result<ShardReader<'_, BufReader<InputFile>>, CommandError> {
    let file = open_input(path, SHARD_FILES).map_err(|refusal| {
        CommandError::Input(format!("cannot read {}: {refusal}; merge reads shard files", path.display()))
    })?;
    ShardReader::new(path, BufReader::new(file))
}

/// A shard file read line by line: its header checked when it opens, then its records, each
/// checked against the header's sweep and expected in the header's order.
pub struct ShardReader<'p, R> {
    path: &'p Path,
    pub header: ShardHeader,
    sweep: String,
    lines: BoundedLines<R>,
    line_number: usize,
    next_point: usize,
}

impl<'p, R: BufRead> ShardReader<'p, R> {
    /// Reads and checks the header; `path` only names the file in errors.
    pub fn new(path: &'p Path, reader: R) -> Result<ShardReader<'p, R>, CommandError> {
        let mut lines = BoundedLines { reader };
        let header = read_header(path, &mut lines)?;
        let (next_point, sweep) = (header.shard, header.key.digest());
        Ok(ShardReader { path, header, sweep, lines, line_number: 1, next_point })
    }

    /// The next record, verified: Ok(None) at the end of a complete file.
    pub fn next_record(&mut self) -> Result<Option<PointRecord>, CommandError> {
        let (path, expected) = (self.path, self.next_point);
        let Some(line) = self.lines.next() else {
            if expected < self.header.layout.points {
                return Err(bad(
                    path,
                    self.line_number,
                    format!("the file ends before point {expected}: it is truncated"),
                ));
            }
            return Ok(None);
        };
        self.line_number += 1;
        let at = self.line_number;
        let line = line.map_err(|e| bad(path, at, e))?;
        let record: PointRecord =
            serde_json::from_str(&line).map_err(|e| bad(path, at, format!("a damaged record ({e})")))?;
        record.verify(&self.sweep).map_err(|why| bad(path, at, format!("point {}: {why}", record.point)))?;
        if expected >= self.header.layout.points {
            return Err(bad(path, at, format!("holds point {}, which is not its own", record.point)));
        }
        if record.point != expected {
            return Err(bad(path, at, format!("holds point {} where point {expected} belongs", record.point)));
        }
        self.next_point += self.header.shards;
        Ok(Some(record))
    }
}

fn read_header<R: BufRead>(path: &Path, lines: &mut BoundedLines<R>) -> Result<ShardHeader, CommandError> {
    let first = lines.next().transpose().map_err(|e| bad(path, 1, e))?.unwrap_or_default();
    let header: ShardHeader = serde_json::from_str(&first)
        .map_err(|e| bad(path, 1, format!("not a faultline shard file (its first line does not read: {e})")))?;
    if header.format != FORMAT {
        return Err(bad(
            path,
            1,
            format!("not a faultline shard file (format {:?})", header.format.chars().take(80).collect::<String>()),
        ));
    }
    // A damaged or hand-edited header must give an error, never a huge allocation or a panic.
    let grid: Option<usize> = header.layout.params.iter().try_fold(1usize, |n, p| n.checked_mul(p.values.len()));
    let consistent = (1..=MAX_GRID_POINTS).contains(&header.shards)
        && header.shard < header.shards
        && header.layout.points <= MAX_GRID_POINTS
        && grid == Some(header.layout.points);
    if !consistent {
        return Err(bad(
            path,
            1,
            format!(
                "a damaged shard header (shard {} of {}, {} points for a grid of {:?})",
                header.shard, header.shards, header.layout.points, grid
            ),
        ));
    }
    Ok(header)
}

/// Names the first field in which two shards' headers differ.
fn difference(a: &ShardHeader, b: &ShardHeader) -> Option<&'static str> {
    let (x, y) = (&a.key, &b.key);
    [
        (x.version != y.version, "faultline version"),
        (x.build != y.build, "faultline build (binary)"),
        (x.scenario != y.scenario, "scenario"),
        (x.sets != y.sets, "--set overrides"),
        (x.params != y.params, "--param grid"),
        (x.policies != y.policies, "policies"),
        (x.seed != y.seed, "--seed"),
        (x.replications != y.replications, "--replications"),
        (x.files != y.files, "samples files (a file the scenario reads changed)"),
        (a.shards != b.shards, "shard count N"),
        (a.layout != b.layout, "output layout"),
    ]
    .into_iter()
    .find_map(|(differs, what)| differs.then_some(what))
}

pub fn merge(opts: &MergeOptions) -> Result<String, CommandError> {
    if opts.shards.is_empty() {
        return Err(CommandError::Input("merge needs the shard files a `sweep --shard K/N` wrote".into()));
    }
    let headers: Vec<ShardHeader> =
        opts.shards.iter().map(|p| open_shard(p).map(|r| r.header)).collect::<Result<_, _>>()?;
    let first = &headers[0];
    for (h, path) in headers.iter().zip(&opts.shards).skip(1) {
        if let Some(what) = difference(first, h) {
            return Err(CommandError::Input(format!(
                "{} and {} come from different sweeps: their {what} differ",
                opts.shards[0].display(),
                path.display()
            )));
        }
    }
    let mut seen: Vec<Option<&Path>> = vec![None; first.shards];
    for (h, path) in headers.iter().zip(&opts.shards) {
        if let Some(earlier) = seen[h.shard] {
            return Err(CommandError::Input(format!(
                "shard {} of {} is given twice: {} and {}",
                h.shard,
                h.shards,
                earlier.display(),
                path.display()
            )));
        }
        seen[h.shard] = Some(path);
    }
    let missing: Vec<String> =
        seen.iter().enumerate().filter(|(_, s)| s.is_none()).map(|(i, _)| i.to_string()).collect();
    if !missing.is_empty() {
        return Err(CommandError::Input(format!(
            "the set is incomplete: shard(s) {} of {} (numbered from 0) are missing",
            missing.join(", "),
            first.shards
        )));
    }
    let key = opts.view.key_metrics(&first.layout)?;
    let name = first.layout.scenario.clone();
    let out_dir = opts.out.clone().unwrap_or_else(|| Path::new("results").join(format!("{name}-sweep")));
    let mut folder = OutputFolder::create(&out_dir)?;
    // The records go through a scratch checkpoint so memory holds one point at a time.
    let scratch = folder.target().with_file_name(format!(
        ".{}.faultline-merge-{}",
        folder.target().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        std::process::id()
    ));
    let all: Vec<usize> = (0..first.layout.points).collect();
    let (checkpoint, _, _) = Checkpoint::open(&scratch, &first.key, false, &all)?;
    let result = (|| {
        for path in &opts.shards {
            copy_records(path, &checkpoint)?;
        }
        let digest = write_sweep_files(&mut folder, &first.layout, key, &mut |p| checkpoint.load(p))?;
        folder.commit("sweep", &name).map(|files| (files, digest))
    })();
    checkpoint.remove();
    let (files, digest) = result?;
    let written: Vec<String> = files.iter().map(|f| out_dir.join(f).display().to_string()).collect();
    Ok(format!(
        "{name}: merged {} shard(s), {} grid point(s)\n\n{}\nwrote {}\n",
        first.shards,
        first.layout.points,
        digest.render(opts.view.layout()),
        written.join(", ")
    ))
}

/// Stores a shard's records, checking that it holds exactly its points, in order.
fn copy_records(path: &Path, checkpoint: &Checkpoint) -> Result<(), CommandError> {
    let mut reader = open_shard(path)?;
    while let Some(record) = reader.next_record()? {
        checkpoint.save(&record)?;
    }
    Ok(())
}
