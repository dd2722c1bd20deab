//! Command-line interface: parse arguments, call a command, map the result to an exit code
//! (0 success, 1 runtime failure, 2 invalid input, 99 failed gate).

use crate::experiment::CommandError;
use crate::experiment::batch::{MAX_JOBS, default_jobs};
use crate::experiment::gate::{GateOptions, gate};
use crate::experiment::run::{OutputFormat, RunOptions, run, validate};
use crate::experiment::shard::{MergeOptions, merge};
use crate::experiment::sweep::{Shard, SweepOptions, sweep};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILURE: i32 = 1;
pub const EXIT_INVALID_INPUT: i32 = 2;
/// As k6 does when a threshold fails.
pub const EXIT_GATE_FAILED: i32 = 99;

#[derive(Parser, Debug)]
#[command(name = "faultline", version, about = "Deterministic simulator and chaos-test harness for AI-agent runtimes")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Copy, Clone, Debug, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// Options every simulating command takes.
#[derive(Args, Debug)]
pub struct SimulationArgs {
    /// Root seed (default: simulation.seed of the scenario).
    #[arg(long)]
    seed: Option<u64>,
    /// Replications per policy (default: simulation.replications).
    #[arg(long)]
    replications: Option<u32>,
    /// Override a scenario value: path=value (repeatable).
    #[arg(long = "set")]
    sets: Vec<String>,
    /// Worker threads. Default: every core.
    #[arg(long)]
    jobs: Option<usize>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run every policy of a scenario (or those named) on the same seeds and compare them.
    Run {
        /// Scenario file (.toml or .json).
        scenario: PathBuf,
        /// A policy to run; repeat for several. Default: all.
        #[arg(long = "policy")]
        policies: Vec<String>,
        #[command(flatten)]
        common: SimulationArgs,
        /// Output folder. Default: results/<scenario-stem>/
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Run only replication K (numbered from 0) of each policy; its figures are exactly
        /// those of row K in a full run's replications.csv.
        #[arg(long, value_name = "K")]
        replication: Option<u32>,
    },
    /// Run the cross product of parameter values, each point x replication in parallel.
    Sweep {
        /// Scenario file (.toml or .json).
        scenario: PathBuf,
        /// path=v1,v2,... (repeatable; the grid is the cross product).
        #[arg(long = "param")]
        params: Vec<String>,
        #[arg(long = "policy")]
        policies: Vec<String>,
        #[command(flatten)]
        common: SimulationArgs,
        /// Output folder, replaced as a whole. Default: results/<scenario>-sweep/ (with --shard:
        /// results/<scenario>-shards/, where every shard writes its own file).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Continue a killed sweep from its checkpoint: finished grid points are not computed
        /// again, and the files are byte-identical to an uninterrupted sweep's.
        #[arg(long)]
        resume: bool,
        /// Compute only shard K of N (numbered from 0): the grid points p with p mod N = K.
        /// Writes shard-K-of-N.jsonl into --out; `faultline merge` combines all N.
        #[arg(long, value_name = "K/N")]
        shard: Option<String>,
    },
    /// Combine the N shard files of a `sweep --shard K/N` into the sweep's files.
    Merge {
        /// Every shard file of one sweep (shard-K-of-N.jsonl), in any order.
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        /// Output folder, replaced as a whole. Default: results/<scenario>-sweep/
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check the scenario's [slo] on a candidate policy; exit 99 if any check fails.
    Gate {
        /// Scenario file (.toml or .json).
        scenario: PathBuf,
        #[arg(long)]
        candidate: String,
        /// Baseline policy for [slo.regression] limits on paired differences.
        #[arg(long)]
        baseline: Option<String>,
        #[command(flatten)]
        common: SimulationArgs,
    },
    /// Load and check a scenario without running it.
    Validate {
        /// Scenario file (.toml or .json).
        scenario: PathBuf,
    },
}

fn jobs(j: Option<usize>) -> Result<usize, CommandError> {
    match j {
        Some(0) => Err(CommandError::Input("argument `--jobs 0`: at least one worker is needed".into())),
        Some(n) if n > MAX_JOBS => {
            Err(CommandError::Input(format!("argument `--jobs {n}`: at most {MAX_JOBS} workers")))
        }
        Some(n) => Ok(n),
        None => Ok(default_jobs()),
    }
}

/// Runs the parsed command and returns the process exit code.
pub fn execute(cli: Cli) -> i32 {
    let result: Result<(String, i32), CommandError> = (|| match cli.command {
        Command::Run { scenario, policies, common: c, out, format, replication } => {
            let format = match format {
                Format::Text => OutputFormat::Text,
                Format::Json => OutputFormat::Json,
            };
            let jobs = jobs(c.jobs)?;
            let (seed, replications, sets) = (c.seed, c.replications, c.sets);
            let opts = RunOptions { scenario, policies, seed, replications, sets, out, format, jobs, replication };
            Ok((run(&opts)?, EXIT_OK))
        }
        Command::Sweep { scenario, params, policies, common: c, out, resume, shard } => {
            let jobs = jobs(c.jobs)?;
            let shard = shard.as_deref().map(Shard::parse).transpose()?;
            let (seed, replications, sets) = (c.seed, c.replications, c.sets);
            let opts = SweepOptions { scenario, params, policies, seed, replications, sets, jobs, out, resume, shard };
            Ok((sweep(&opts)?, EXIT_OK))
        }
        Command::Merge { shards, out } => Ok((merge(&MergeOptions { shards, out })?, EXIT_OK)),
        Command::Gate { scenario, candidate, baseline, common: c } => {
            let jobs = jobs(c.jobs)?;
            let (seed, replications, sets) = (c.seed, c.replications, c.sets);
            let report = gate(&GateOptions { scenario, candidate, baseline, seed, replications, sets, jobs })?;
            Ok((report.text, if report.passed { EXIT_OK } else { EXIT_GATE_FAILED }))
        }
        Command::Validate { scenario } => Ok((validate(&scenario)?, EXIT_OK)),
    })();
    match result {
        Ok((text, code)) => {
            // Output that cannot be delivered is a failure, whatever the command decided.
            match write_stdout(text.as_bytes()) {
                Ok(()) => code,
                Err(e) => {
                    let _ = writeln!(std::io::stderr(), "error: cannot write to standard output: {e}");
                    EXIT_FAILURE
                }
            }
        }
        Err(e) => {
            // Never panic over a closed or full stderr.
            let _ = writeln!(std::io::stderr(), "error: {e}");
            match e {
                CommandError::Input(_) => EXIT_INVALID_INPUT,
                CommandError::Io(_) => EXIT_FAILURE,
            }
        }
    }
}

/// Set by the binary when descriptor 1 was closed at process start (before Rust's runtime put
/// /dev/null there).
pub static STDOUT_CLOSED_AT_START: AtomicBool = AtomicBool::new(false);

/// Writes to standard output and reports every failure, a closed descriptor included.
fn write_stdout(bytes: &[u8]) -> std::io::Result<()> {
    if STDOUT_CLOSED_AT_START.load(Ordering::Relaxed) {
        return Err(std::io::Error::from_raw_os_error(libc::EBADF));
    }
    let mut out = std::io::stdout().lock();
    out.write_all(bytes).and_then(|_| out.flush())
}

pub fn main() -> i32 {
    execute(Cli::parse())
}
