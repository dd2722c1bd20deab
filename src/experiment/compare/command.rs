//! `faultline compare A B`: two saved result folders side by side, without simulating: every
//! policy both hold (or those named), every headline metric (or those named), each side's mean,
//! B - A with its 95 % interval (paired where the seeds match) and a verdict.

use super::difference::{Difference, Pairing};
use super::render::{Block, CompareFormat, Comparison, arguments};
use super::saved::{SavedPolicy, SavedRun};
use super::selection::{metrics, policies};
use crate::experiment::command::CommandError;
use crate::experiment::output::folder::AtomicFile;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct CompareOptions {
    pub a: PathBuf,
    pub b: PathBuf,
    /// Empty: every policy both folders hold.
    pub policies: Vec<String>,
    /// Empty: the headline metrics (`selection::DEFAULT_METRICS`).
    pub metrics: Vec<String>,
    pub format: CompareFormat,
    /// Write the comparison here (atomically) instead of to standard output.
    pub out: Option<PathBuf>,
}

/// What `compare` prints, and the warnings that belong on standard error when the output is
/// data (JSON, CSV) or goes to a file.
pub struct CompareReport {
    pub text: String,
    pub warnings: Vec<String>,
}

pub fn compare(opts: &CompareOptions) -> Result<CompareReport, CommandError> {
    let a = SavedRun::open(&opts.a)?;
    let b = SavedRun::open(&opts.b)?;
    let chosen = policies(&a, &b, &opts.policies)?;
    // Opened once the inputs are known good; dropped unwritten (an error below), it leaves
    // nothing.
    let out = opts.out.as_deref().map(AtomicFile::create).transpose()?;
    let mut blocks = Vec::new();
    for policy in &chosen.compared {
        let (pa, pb) = (a.policy(policy)?, b.policy(policy)?);
        let pairing = Pairing::of(&pa, &pb);
        let mut rows = Vec::new();
        for m in metrics(&pa, &pb, &opts.metrics)? {
            rows.push(Difference::of(&m, pa.values(&m)?, pb.values(&m)?, &pairing));
        }
        blocks.push(Block { policy: policy.clone(), a: pa, b: pb, pairing, rows });
    }
    let warnings = warnings(&a, &b, &blocks);
    let comparison = Comparison { a, b, blocks, only_a: chosen.only_a, only_b: chosen.only_b, warnings };
    let text = comparison.render(opts.format)?;
    let warnings = comparison.warnings;
    match (out, &opts.out) {
        (Some(file), Some(path)) => {
            file.write_whole(text.as_bytes())?;
            Ok(CompareReport { text: format!("wrote {}\n", path.display()), warnings })
        }
        (Some(_), None) | (None, _) => Ok(CompareReport { text, warnings }),
    }
}

/// Differences between the sides other than the one being compared: another scenario, another
/// binary.
fn warnings(a: &SavedRun, b: &SavedRun, blocks: &[Block]) -> Vec<String> {
    let mut w = Vec::new();
    match (&a.digest, &b.digest) {
        (Some(da), Some(db)) if da != db => {
            let sets = |p: Option<&SavedPolicy>| match p.map(|p| arguments(&p.overrides)) {
                Some(s) if !s.is_empty() => s,
                Some(_) | None => "none".to_string(),
            };
            w.push(format!(
                "the scenarios differ (A: {} digest {da}, arguments {}; B: {} digest {db}, arguments {}): each \
                 difference is the effect of everything that differs between them, not of one change alone",
                a.scenario,
                sets(blocks.first().map(|b| &b.a)),
                b.scenario,
                sets(blocks.first().map(|b| &b.b))
            ))
        }
        (Some(_), Some(_)) => {}
        (None, _) | (_, None) => {
            let old: Vec<&str> = [(&a.digest, "A"), (&b.digest, "B")]
                .iter()
                .filter(|(d, _)| d.is_none())
                .map(|(_, side)| *side)
                .collect();
            w.push(format!(
                "{}'s manifest.json names no scenario digest (written by an older faultline), so whether both ran one \
                 scenario cannot be told{}",
                old.join(" and "),
                if a.scenario != b.scenario {
                    format!("; their scenarios are named {} and {}", a.scenario, b.scenario)
                } else {
                    String::new()
                }
            ));
        }
    }
    if a.version != b.version {
        w.push(format!(
            "A was written by faultline {} and B by {}: a difference may come from the binary alone",
            a.version, b.version
        ));
    }
    w
}
