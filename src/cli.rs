//! Command-line interface: parse arguments, call a command, map the result to an exit code
//! (0 success, 1 runtime failure, 2 invalid input, 99 failed gate).

use crate::experiment::batch::workers::{MAX_JOBS, default_jobs};
use crate::experiment::calibrate::choose::FitChoice;
use crate::experiment::calibrate::{CalibrateOptions, calibrate};
use crate::experiment::check::{CheckOptions, check};
use crate::experiment::compare::{CompareFormat, CompareOptions, compare};
use crate::experiment::docs::docs;
use crate::experiment::explore::{ExploreOptions, explore};
use crate::experiment::export::{ExportFormat, ExportOptions, export};
use crate::experiment::gate::{GateOptions, gate};
use crate::experiment::import::{ImportFormat, ImportOptions, import};
use crate::experiment::init::{InitOptions, init};
use crate::experiment::replay::{FirstRun, ReplayOptions, RunSelector, replay};
use crate::experiment::run::{RunOptions, run, validate};
use crate::experiment::sweep::files::SweepView;
use crate::experiment::sweep::shard::{MergeOptions, Shard, merge};
use crate::experiment::sweep::{SweepOptions, sweep};
use crate::experiment::tune::shards::RoundMode;
use crate::experiment::tune::{TuneOptions, tune};
use crate::experiment::{CommandError, OutputFormat};
use crate::vocab::Refusal;
use clap::builder::TypedValueParser;
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILURE: i32 = 1;
pub const EXIT_INVALID_INPUT: i32 = 2;
/// As k6 does when a threshold fails.
pub const EXIT_GATE_FAILED: i32 = 99;
pub const EXIT_INTERRUPTED: i32 = 130;

#[derive(Parser, Debug)]
#[command(
    name = "faultline",
    version,
    about = "Deterministic simulator and chaos-test harness for AI-agent runtimes",
    after_help = "Exit codes: 0 success, 1 an I/O failure or a failed check, 2 invalid input, 99 a failed gate or --check-slo.\n\n\
                  Start here:\n  faultline init                     # writes scenario.toml, a commented starter\n  \
                  faultline run scenario.toml\n  \
                  faultline gate scenario.toml --candidate resilient --baseline naive"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Copy, Clone, Debug, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

impl Format {
    fn output(self) -> OutputFormat {
        match self {
            Format::Text => OutputFormat::Text,
            Format::Json => OutputFormat::Json,
        }
    }
}

/// `export`'s formats.
#[derive(Copy, Clone, Debug, ValueEnum)]
pub enum ExportForm {
    /// Prometheus text exposition format 0.0.4, timestamps in milliseconds.
    Prometheus,
    /// OpenMetrics 1.0 text ending in `# EOF`, timestamps in seconds: what
    /// `promtool tsdb create-blocks-from openmetrics` backfills.
    Openmetrics,
    /// An OTLP/JSON ExportMetricsServiceRequest (POST it to an OTLP/HTTP /v1/metrics endpoint).
    OtlpJson,
}

impl ExportForm {
    fn format(self) -> ExportFormat {
        match self {
            ExportForm::Prometheus => ExportFormat::Prometheus,
            ExportForm::Openmetrics => ExportFormat::OpenMetrics,
            ExportForm::OtlpJson => ExportFormat::OtlpJson,
        }
    }
}

/// `compare`'s forms.
#[derive(Copy, Clone, Debug, ValueEnum)]
pub enum CompareForm {
    Table,
    Json,
    Csv,
}

impl CompareForm {
    fn format(self) -> CompareFormat {
        match self {
            CompareForm::Table => CompareFormat::Table,
            CompareForm::Json => CompareFormat::Json,
            CompareForm::Csv => CompareFormat::Csv,
        }
    }
}

/// What a sweep's table and report show.
#[derive(Args, Debug)]
pub struct ViewArgs {
    /// The figures to show in the table and the report, comma-separated metric names (any
    /// column of sweep.csv without its .ci95_* suffix). Default: completion, past deadline,
    /// amplification, p95, cost per success and the recovery figures, those zero at every point
    /// or undefined at every point left out.
    #[arg(long, value_delimiter = ',', value_name = "METRIC,...")]
    metrics: Vec<String>,
    /// Print a two-parameter sweep as a grid per policy: the first --param's values as rows,
    /// the second's as columns, each cell the figures in order.
    #[arg(long)]
    grid: bool,
}

impl From<ViewArgs> for SweepView {
    fn from(v: ViewArgs) -> SweepView {
        SweepView { metrics: v.metrics, grid: v.grid }
    }
}

/// Options every simulating command takes.
#[derive(Args, Debug)]
pub struct SimulationArgs {
    /// Root seed (default: simulation.seed of the scenario).
    #[arg(long)]
    seed: Option<u64>,
    #[command(flatten)]
    batch: BatchArgs,
}

/// Every simulating command's options but the root seed, which `explore` does without (its
/// --seed seeds the schedules).
#[derive(Args, Debug)]
pub struct BatchArgs {
    /// Replications per policy (default: simulation.replications).
    #[arg(long)]
    replications: Option<u32>,
    /// Override a scenario value: path=value (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// Worker threads. Default: every core.
    // Negative numbers are read as numbers, so `--jobs -1` gets the rule it breaks rather than
    // clap's advice to write `-- -1` (which would make it a positional argument).
    #[arg(short = 'j', long, allow_negative_numbers = true)]
    jobs: Option<i64>,
}

const RUN_EXAMPLES: &str = "Examples:
  faultline run scenarios/meeting-analysis-incident.toml
  faultline run scenario.toml -p resilient --replications 16 -o results/resilient --check-slo
  faultline run scenario.toml --metrics run_latency_ms.p99,queue_rejected_total
  faultline run scenario.toml --set dependency.model.servers=20 --format json

Prints the headline first: completion, safe outcomes, deadline misses, amplification, cost per
success, the metrics [slo] names and the recovery figures, during the fault windows
(incident.*) and over the whole run, each with its 95 % interval; then each [slo] threshold's
verdict per policy (exit 99 with --check-slo when one fails). --metrics picks other figures,
--metrics all shows every one.";

const SWEEP_EXAMPLES: &str = "Examples:
  faultline sweep scenario.toml --param policy.resilient.budget.retry_tokens=0,1,2,4 -p resilient
  faultline sweep scenario.toml --param workflow.support-answer.arrivals.rate_per_s=2,5,10 --resume
  faultline sweep scenario.toml --param fault.0.duration_s=60,120 --shard 0/4 -o shards
  faultline sweep scenarios/metastability.toml --param fault.0.servers=20,40 --param fault.0.duration_s=5,10 --grid \
    --metrics recovery_never_total,recovery_time_s

The table shows completion, past deadline, amplification, p95, cost per success and the
recovery figures, leaving out those zero at every point or undefined at every point; --metrics
picks others (any column of sweep.csv without its .ci95_* suffix). Each figure carries its 95 %
interval over the replications, clipped to the metric's range: `150 [0, 315]`.";

const EXPLORE_EXAMPLES: &str = "Examples:
  faultline explore scenario.toml -p resilient --schedules 500
  faultline explore scenario.toml -p resilient --kind latency --kind errors --max-faults 2 --seed 7

Exit 0 when no schedule broke an invariant, 99 when one did (its schedule and the shrunk one are
written as scenario files that `faultline run` reproduces).";

const CALIBRATE_EXAMPLES: &str = "Examples:
  faultline run scenarios/mmc.toml --traces 300 -o results/mmc
  faultline calibrate results/mmc/plain/traces.otlp.jsonl -o calibrated.toml
  faultline calibrate collector-export.jsonl --map gpt-4o-2024-08-06=gpt-4o --sampling-ratio 0.1 -o prod.toml

Reads OTLP/JSON (the OpenTelemetry Collector's file exporter: one document per line, or one
document). A callee is named by gen_ai.request.model, server.address, rpc.service or
peer.service, in that order. docs/calibrate.md walks from a trace file to a gate.";

const REPLAY_EXAMPLES: &str = "Examples:
  faultline replay scenarios/meeting-analysis-incident.toml -p naive --first failed
  faultline replay scenario.toml -p resilient --replication 3 --run 120 -o run-120.otlp.json
  faultline replay scenario.toml -p resilient --replication-seed 1427611187311264851 --first duplicate
  faultline replay scenarios/meeting-analysis-incident.toml -p resilient --first refused --refused-by bulkhead

Root runs are numbered from 1 in the order they start (a user's resubmission is a new run).
--first looks among runs started after the warm-up. The trace loads into the OpenTelemetry
Collector (otlpjsonfile receiver) and from there into Jaeger or any OTLP back end.";

const MERGE_EXAMPLES: &str = "Example:
  faultline merge shards/shard-*-of-4.jsonl -o results/scenario-sweep";

const TUNE_EXAMPLES: &str = "Candidates race on common random numbers: replication k of every candidate runs on the
same seed. A candidate leaves the race when another is better or equal on every objective and
better on one, judged on the 95 % interval of their paired differences, or when an [slo]
threshold fails even on its favourable bound; the others get twice the replications, up to
--replications. Writes front.csv, front.json, candidates.csv and front-<candidate>.toml.

Examples:
  faultline tune scenario.toml -p resilient --space policy.resilient.budget.retry_tokens=0..4 \\
    --objective max:auto_completion_ratio --objective min:cost_per_success
  faultline tune scenario.toml -p resilient --space policy.resilient.timeout_ms=2000..10000:1000 \\
    --space policy.resilient.retry.backoff.base_ms=50.0..500.0 --objective min:run_latency_ms.p95 \\
    --objective max:auto_completion_ratio --budget 2000 --replications 30

On a cluster, every round is split over N processes (docs/cluster.md): the same arguments with
--shard K/N for K = 0..N-1 (at once), then with --merge-shards, repeated until the merge writes
the files:
  faultline tune scenario.toml -p resilient --space ... --objective ... -o tuned --shard 0/4
  faultline tune scenario.toml -p resilient --space ... --objective ... -o tuned --merge-shards";

const GATE_EXAMPLES: &str =
    "The candidate file's seed and replication count (after --seed and --replications) govern both
sides: replication k of the candidate and of the baseline runs on the same derived seed, and
--set applies to both files; --candidate-set and --baseline-set apply to one side only.
[slo] thresholds and [slo.regression] limits come from the candidate file; the baseline
file's [slo] is ignored. Intervals are judged clipped to their metric's range ([0, 1] for a
share, 0 or more otherwise), and the report says which were clipped.

Examples:
  # Thresholds on one policy, regression limits against another policy of the same file.
  faultline gate scenario.toml --candidate resilient --baseline naive
  # One value changed, no copy of the file: 2 retry tokens against the policy as written.
  faultline gate scenario.toml --candidate resilient --baseline resilient \\
    --candidate-set policy.resilient.budget.retry_tokens=2
  # A pull request: the PR's file against main's version of it, for CI.
  git show origin/main:scenario.toml > base.toml
  faultline gate scenario.toml --candidate resilient --baseline-scenario base.toml --junit gate.xml
  # Thresholds only, as a JSON document.
  faultline gate scenario.toml --candidate resilient --thresholds-only --format json";

const COMPARE_EXAMPLES: &str = "Folders of the same seeds and replication count are compared on paired
differences (common random numbers, as gate judges a regression); others with Welch's interval.

Examples:
  faultline run scenario.toml -o results/before
  faultline run scenario.toml --set policy.resilient.budget.retry_tokens=1 -o results/after
  faultline compare results/before results/after
  faultline compare results/before results/after -p resilient --metrics incident.cost_per_success,run_latency_ms.p95
  faultline compare results/before results/after --format csv -o comparison.csv";

const EXPORT_EXAMPLES: &str = "Reads the folder only (no simulation). Virtual time 0 is 2026-01-01T00:00:00Z unless
--start-epoch-ms says otherwise; docs/export.md names every metric and shows how to load them.

Examples:
  faultline run scenarios/meeting-analysis-incident.toml -o results/incident
  faultline export results/incident --format prometheus -o results/incident/metrics.prom
  faultline export results/incident --format openmetrics --start-epoch-ms $(( ($(date +%s) - 7200) * 1000 )) -o results/incident/metrics.om
  promtool tsdb create-blocks-from openmetrics results/incident/metrics.om data/
  faultline export results/incident --format otlp-json -o results/incident/metrics.otlp.json";

const DOCS_EXAMPLES: &str = "Examples:
  faultline docs                      # the topics
  faultline docs scenario | less      # every field of a scenario file
  faultline docs metrics > metrics.md";

const CHECK_EXAMPLES: &str = "Examples:
  faultline check scenarios/meeting-analysis-incident.toml
  faultline check scenario.toml -p resilient --json > check.json
  faultline check scenario.toml --format json -o check.json --replications 4

Exit codes: 0 no rule of severity error fired, 1 one did, 2 invalid input.";

const VALIDATE_EXAMPLES: &str = "Example:
  faultline validate scenarios/meeting-analysis-incident.toml";

const INIT_EXAMPLES: &str = "Examples:
  faultline init                       # writes ./scenario.toml
  faultline init agents/support.toml   # folders are created as needed
  faultline init scenario.toml --force";

const IMPORT_EXAMPLES: &str = "Examples:
  faultline import grpc-service-config service_config.json
  faultline import grpc-service-config service_config.json --method helloworld.Greeter/SayHello -o policy.toml
  faultline import grpc-service-config service_config.json -p grpc --method helloworld.Greeter
  faultline import resilience4j src/main/resources/application.yml
  faultline import resilience4j application.properties --dependency backendA=model-primary -o policy.toml
  faultline import litellm config.yaml --dependency gpt-4o=model-primary -p gateway
  faultline import dotnet-resilience appsettings.json --section Resilience:MyClient -p dotnet
  faultline import envoy envoy.yaml --dependency model_api=model-primary --route chat -p envoy";

const COMPLETIONS_EXAMPLES: &str = "Examples:
  faultline completions bash > ~/.local/share/bash-completion/completions/faultline
  faultline completions zsh > ~/.zfunc/_faultline       # with fpath+=~/.zfunc before compinit
  faultline completions fish > ~/.config/fish/completions/faultline.fish
  faultline completions powershell >> $PROFILE";

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run every policy of a scenario (or those named) on the same seeds and compare them.
    #[command(after_help = RUN_EXAMPLES)]
    Run {
        /// Scenario file (.toml or .json).
        scenario: PathBuf,
        /// A policy to run; repeat for several. Default: all.
        #[arg(short = 'p', long = "policy", value_name = "NAME")]
        policies: Vec<String>,
        #[command(flatten)]
        common: SimulationArgs,
        /// Output folder, replaced as a whole. Default: results/<scenario-stem>/
        #[arg(short = 'o', long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// How to print the comparison on standard output.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Run only replication K (numbered from 0) of each policy; its figures are exactly
        /// those of row K in a full run's replications.csv.
        #[arg(long, value_name = "K")]
        replication: Option<u32>,
        /// Also export K measured runs of each replication, evenly spaced in time, as
        /// OpenTelemetry traces: <policy>/traces.otlp.jsonl (one OTLP/JSON document per line,
        /// what `faultline calibrate` reads).
        #[arg(long, value_name = "K")]
        traces: Option<u32>,
        /// The figures to print instead of the headline, comma-separated metric names
        /// (summary.json's), or `all` for every one. Default: the headline (completion, safe
        /// outcomes, deadline misses, amplification, cost per success, the [slo] metrics and the
        /// recovery figures), those zero or undefined for every policy left out.
        #[arg(long, value_delimiter = ',', value_name = "METRIC,...|all")]
        metrics: Vec<String>,
        /// Exit 99 when an [slo] threshold fails for a policy run, as k6 does (judged as `gate
        /// --thresholds-only` judges). Without it, run prints the verdicts and exits 0.
        #[arg(long)]
        check_slo: bool,
    },
    /// Run the cross product of parameter values, each point x replication in parallel.
    #[command(after_help = SWEEP_EXAMPLES)]
    Sweep {
        /// Scenario file (.toml or .json).
        scenario: PathBuf,
        /// path=v1,v2,... (repeatable; the grid is the cross product).
        #[arg(long = "param", value_name = "PATH=V1,V2,...")]
        params: Vec<String>,
        /// A policy to run at every point; repeat for several. Default: all.
        #[arg(short = 'p', long = "policy", value_name = "NAME")]
        policies: Vec<String>,
        #[command(flatten)]
        common: SimulationArgs,
        /// Output folder, replaced as a whole. Default: results/<scenario>-sweep/ (with --shard:
        /// results/<scenario>-shards/, where every shard writes its own file).
        #[arg(short = 'o', long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Continue a killed sweep from its checkpoint: finished grid points are not computed
        /// again, and the files are byte-identical to an uninterrupted sweep's.
        #[arg(long)]
        resume: bool,
        /// Compute only shard K of N (numbered from 0): the grid points p with p mod N = K.
        /// Writes shard-K-of-N.jsonl into --out; `faultline merge` combines all N.
        #[arg(long, value_name = "K/N")]
        shard: Option<String>,
        #[command(flatten)]
        view: ViewArgs,
    },
    /// Try random fault schedules on a policy, check invariants, shrink the first failure.
    #[command(after_help = EXPLORE_EXAMPLES)]
    Explore {
        /// Scenario file (.toml or .json).
        scenario: PathBuf,
        /// The policy under test.
        #[arg(short = 'p', long)]
        policy: String,
        /// How many random schedules to try.
        #[arg(long, default_value_t = 200)]
        schedules: u32,
        /// Seed of the schedules (schedule k is the same for any --schedules and --jobs).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Faults per schedule at most.
        #[arg(long, default_value_t = 3)]
        max_faults: usize,
        /// Fault kinds to draw from (repeatable). Default: every kind the scenario can take (those
        /// that look like success only when it injects one or validates a step).
        #[arg(long = "kind", value_name = "KIND")]
        kinds: Vec<String>,
        /// Add the schedules to the scenario's own faults instead of replacing them.
        #[arg(long)]
        keep_faults: bool,
        #[command(flatten)]
        batch: BatchArgs,
        /// Folder for the failing and shrunk scenario files. Default: results/<scenario>-explore/
        #[arg(short = 'o', long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Trace one root run of one replication: the section-25 tree in the terminal and an
    /// OpenTelemetry trace (OTLP/JSON) on disk.
    #[command(after_help = REPLAY_EXAMPLES)]
    #[command(group(clap::ArgGroup::new("which_run").required(true).args(["run", "first"])))]
    Replay {
        /// Scenario file (.toml or .json).
        scenario: PathBuf,
        /// The policy to replay.
        #[arg(short = 'p', long, value_name = "NAME")]
        policy: String,
        /// Replication K of the root seed (numbered from 0, as in replications.csv). Default: 0.
        #[arg(long, value_name = "K", conflicts_with = "replication_seed")]
        replication: Option<u32>,
        /// A replication's own seed (the `seed` column of replications.csv), instead of --replication.
        #[arg(long, value_name = "SEED")]
        replication_seed: Option<u64>,
        /// The N-th root run to start (from 1).
        #[arg(long, value_name = "N")]
        run: Option<u64>,
        /// The first run after the warm-up that ended this way.
        #[arg(long, value_parser = first_run_parser(), value_name = "WHAT")]
        first: Option<FirstRun>,
        /// With --first refused: the first run a guard refused an attempt of for this reason
        /// (the names of refused_total.<reason>).
        #[arg(long, value_parser = refusal_parser(), value_name = "REASON", requires = "first")]
        refused_by: Option<Refusal>,
        /// Root seed (default: simulation.seed of the scenario).
        #[arg(long)]
        seed: Option<u64>,
        /// Override a scenario value: path=value (repeatable).
        #[arg(long = "set", value_name = "PATH=VALUE")]
        sets: Vec<String>,
        /// Where to write the OTLP/JSON trace. Default: results/<scenario>-replay/<policy>-run-<N>.otlp.json
        #[arg(short = 'o', long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Build a runnable scenario from OpenTelemetry traces: dependencies with fitted
    /// latencies and error mixes, workflows with their steps, a policy from what the callers did.
    #[command(after_help = CALIBRATE_EXAMPLES)]
    Calibrate {
        /// OTLP/JSON trace files.
        #[arg(required = true)]
        traces: Vec<PathBuf>,
        /// The scenario to write (.toml); samples files go in <stem>-data/ beside it.
        #[arg(short = 'o', long, value_name = "FILE", default_value = "calibrated.toml")]
        out: PathBuf,
        /// CALLEE=DEPENDENCY: count callee CALLEE as dependency DEPENDENCY (repeatable; merges
        /// or renames callees).
        #[arg(long = "map", value_name = "CALLEE=DEPENDENCY")]
        renames: Vec<String>,
        /// How latencies become distributions: auto (the best of lognormal, gamma, Weibull if
        /// it passes the KS test at 5 %, else the observed values), or one of them.
        #[arg(long, value_parser = fit_parser(), default_value = "auto", value_name = "HOW")]
        fit: FitChoice,
        /// The share of root runs the traces hold (head sampling), if the traces do not say it.
        #[arg(long, value_name = "SHARE")]
        sampling_ratio: Option<f64>,
        /// A Prometheus text-format file (repeatable): each `X_bucket{le=...}` latency
        /// histogram whose callee label names a traced dependency becomes its latency.
        #[arg(long, value_name = "FILE")]
        prometheus: Vec<PathBuf>,
    },
    /// Find the Pareto front of a policy's parameters: candidates race on common random
    /// numbers, and those already beaten on every objective get no more replications.
    #[command(after_help = TUNE_EXAMPLES)]
    Tune {
        /// Scenario file (.toml or .json).
        scenario: PathBuf,
        /// The policy whose parameters are searched.
        #[arg(short = 'p', long = "policy", value_name = "NAME")]
        policy: String,
        /// PATH=RANGE (repeatable): a,b,c (these values), lo..hi or lo..hi:step (whole
        /// numbers), 0.5..2.0 (any decimal in the interval).
        #[arg(long = "space", value_name = "PATH=RANGE", required = true)]
        space: Vec<String>,
        /// max:METRIC or min:METRIC (repeatable): any metric of summary.json. The scenario's
        /// [slo] thresholds are constraints.
        #[arg(long = "objective", value_name = "max:METRIC|min:METRIC", required = true)]
        objectives: Vec<String>,
        /// At most this many simulations; the race stops before a round it cannot pay for.
        #[arg(long, value_name = "SIMULATIONS")]
        budget: Option<usize>,
        /// Candidates for a space larger than that (a Latin hypercube); a smaller discrete
        /// space is searched whole.
        #[arg(long, value_name = "N", default_value_t = 64)]
        candidates: usize,
        /// Replications of the first round; each later round doubles them, up to
        /// --replications (default: the scenario's).
        #[arg(long, value_name = "N", default_value_t = 3)]
        initial_replications: u32,
        #[command(flatten)]
        common: SimulationArgs,
        /// Output folder, replaced as a whole. Default: results/<scenario>-tune/
        #[arg(short = 'o', long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Continue a killed tune from its last finished round; the files are the
        /// uninterrupted tune's, byte for byte.
        #[arg(long)]
        resume: bool,
        /// After the first race, this many generations of new candidates near the front
        /// (steps in intervals that halve each generation, neighbouring values elsewhere),
        /// each raced like the first.
        #[arg(long, value_name = "N", default_value_t = 0)]
        generations: u32,
        /// Compute only shard K of N (numbered from 0) of the next round the merged rounds
        /// lead to, and write it beside the output folder; --merge-shards combines the N.
        #[arg(long, value_name = "K/N", conflicts_with = "merge_shards")]
        shard: Option<String>,
        /// Put the shard files of the next round into the race, race, and either write the
        /// tune's files or name the round whose shards come next.
        #[arg(long)]
        merge_shards: bool,
    },
    /// Combine the N shard files of a `sweep --shard K/N` into the sweep's files.
    #[command(after_help = MERGE_EXAMPLES)]
    Merge {
        /// Every shard file of one sweep (shard-K-of-N.jsonl), in any order.
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        /// Output folder, replaced as a whole. Default: results/<scenario>-sweep/
        #[arg(short = 'o', long, value_name = "DIR")]
        out: Option<PathBuf>,
        #[command(flatten)]
        view: ViewArgs,
    },
    /// Check the scenario's [slo] on a candidate policy, and [slo.regression] against a
    /// baseline policy of the same file or of another file; exit 99 if any check fails.
    #[command(after_help = GATE_EXAMPLES)]
    Gate {
        /// Candidate scenario file (.toml or .json); its [slo] section is judged.
        scenario: PathBuf,
        /// The policy under test, from the candidate file.
        #[arg(long, value_name = "NAME")]
        candidate: String,
        /// Baseline policy for [slo.regression] limits on paired differences: a policy of the
        /// candidate file, or with --baseline-scenario of that file (default there: the
        /// candidate's name).
        #[arg(long, value_name = "NAME")]
        baseline: Option<String>,
        /// Take the baseline policy from this file (such as main's version of the scenario).
        /// It runs on the candidate file's seed and replication count.
        #[arg(long, value_name = "FILE")]
        baseline_scenario: Option<PathBuf>,
        /// Judge [slo] thresholds alone; [slo.regression] limits are listed as SKIP. Without
        /// it, a scenario with [slo.regression] needs --baseline or --baseline-scenario.
        #[arg(long, conflicts_with_all = ["baseline", "baseline_scenario"])]
        thresholds_only: bool,
        /// Override a value on the candidate's side only: path=value (repeatable, after --set).
        /// With it, the baseline may be the candidate's own policy of the same file.
        #[arg(long = "candidate-set", value_name = "PATH=VALUE")]
        candidate_sets: Vec<String>,
        /// Override a value on the baseline's side only: path=value (repeatable, after --set).
        #[arg(long = "baseline-set", value_name = "PATH=VALUE")]
        baseline_sets: Vec<String>,
        #[command(flatten)]
        common: SimulationArgs,
        /// How to print the report: an aligned table, or a JSON document with every check.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Also write the checks as a JUnit XML report (one test case per check) to FILE.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// A `faultline tune` front.json: the candidate must stay within --front-tolerance of
        /// one of its points on every objective (judged on its unfavourable 95 % bounds).
        #[arg(long, value_name = "FILE")]
        front: Option<PathBuf>,
        /// How far off the front the candidate may be, in percent of a front point's value.
        #[arg(long, value_name = "PERCENT", default_value_t = 5.0)]
        front_tolerance: f64,
    },
    /// Compare two result folders that `faultline run` wrote, without simulating: per policy
    /// and metric, A, B, B - A with its 95 % interval (paired where the seeds match) and a
    /// verdict.
    #[command(after_help = COMPARE_EXAMPLES)]
    Compare {
        /// The first result folder (A, the baseline).
        a: PathBuf,
        /// The second result folder (B); differences are B - A.
        b: PathBuf,
        /// A policy to compare; repeat for several. Default: every policy both folders hold.
        #[arg(short = 'p', long = "policy", value_name = "NAME")]
        policies: Vec<String>,
        /// The figures to compare, comma-separated metric names (summary.json's). Default:
        /// completion, safe outcomes, deadline misses, amplification, cost per success, the
        /// latency percentiles, the recovery and incident figures, those 0 or undefined on both
        /// sides left out.
        #[arg(long, value_delimiter = ',', value_name = "METRIC,...")]
        metrics: Vec<String>,
        /// An aligned table, or one row per policy and metric as JSON or CSV.
        #[arg(long, value_enum, default_value = "table")]
        format: CompareForm,
        /// Write the comparison to FILE (through a temporary name) instead of standard output.
        #[arg(short = 'o', long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Write a result folder that `faultline run` wrote as metrics for Prometheus or an
    /// OpenTelemetry collector, without simulating: the time series per window and the
    /// whole-run figures (mean and each replication), with timestamps.
    #[command(after_help = EXPORT_EXAMPLES)]
    Export {
        /// The result folder (`faultline run SCENARIO --out DIR`).
        result: PathBuf,
        /// Prometheus text 0.0.4, OpenMetrics (for backfilling with promtool) or OTLP/JSON.
        #[arg(long, value_enum, default_value = "prometheus")]
        format: ExportForm,
        /// Write to FILE (through a temporary name) instead of standard output.
        #[arg(short = 'o', long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// The instant virtual time 0 is mapped to, in milliseconds since the Unix epoch.
        /// Default: 1767225600000 (2026-01-01T00:00:00Z).
        #[arg(long, value_name = "MS", allow_negative_numbers = true)]
        start_epoch_ms: Option<i64>,
    },
    /// Print the documentation built into this binary: a topic (scenario, metrics, trace,
    /// tune, calibrate, cluster, references, essay), or the list of topics.
    #[command(after_help = DOCS_EXAMPLES)]
    Docs {
        /// The document to print; without it, the list.
        topic: Option<String>,
    },
    /// Answer the essay's checklist (section 29) and verification questions (section 26) for
    /// each policy, with evidence, and lint the file; exit 1 if a rule of severity error fires.
    #[command(after_help = CHECK_EXAMPLES)]
    Check {
        /// Scenario file (.toml or .json).
        scenario: PathBuf,
        /// A policy to check; repeat for several. Default: all.
        #[arg(short = 'p', long = "policy", value_name = "NAME")]
        policies: Vec<String>,
        /// Replications of the short simulation per policy (at most the scenario's).
        #[arg(long, default_value_t = crate::experiment::check::DEFAULT_REPLICATIONS)]
        replications: u32,
        /// Root seed (default: simulation.seed of the scenario).
        #[arg(long)]
        seed: Option<u64>,
        /// Override a scenario value: path=value (repeatable).
        #[arg(long = "set", value_name = "PATH=VALUE")]
        sets: Vec<String>,
        /// Worker threads. Default: every core.
        #[arg(short = 'j', long, allow_negative_numbers = true)]
        jobs: Option<i64>,
        /// How to print the answers: aligned tables, or JSON records (one per row).
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Short for --format json.
        #[arg(long, conflicts_with = "format")]
        json: bool,
        /// Write the report to FILE (whole or not at all) instead of standard output.
        #[arg(short = 'o', long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Load and check a scenario without running it.
    #[command(after_help = VALIDATE_EXAMPLES)]
    Validate {
        /// Scenario file (.toml or .json).
        scenario: PathBuf,
    },
    /// Write a commented starter scenario to begin from.
    #[command(after_help = INIT_EXAMPLES)]
    Init {
        /// Where to write it (a .toml file, or a folder to put scenario.toml in).
        #[arg(default_value = "scenario.toml")]
        path: PathBuf,
        /// Overwrite the file if it exists.
        #[arg(long)]
        force: bool,
    },
    /// Read a resilience configuration you already have (a gRPC service config, resilience4j's
    /// Spring Boot application.yml or .properties, a LiteLLM proxy config.yaml) and write it as
    /// a commented [policy.NAME] fragment, with the keys it could not map and why.
    #[command(after_help = IMPORT_EXAMPLES)]
    Import {
        /// The configuration's format.
        #[arg(value_enum)]
        format: ImportFormatArg,
        /// The file to read.
        file: PathBuf,
        /// The call whose settings to import, `service/method` or `service` (gRPC: the most
        /// specific methodConfig name wins). Default: the only methodConfig, else the default one.
        #[arg(long, value_name = "SERVICE/METHOD")]
        method: Option<String>,
        /// The policy name of the fragment.
        #[arg(short = 'p', long = "policy", value_name = "NAME", default_value = "imported")]
        policy: String,
        /// resilience4j: the faultline dependency an instance guards; litellm: the dependency a
        /// model group stands for (repeatable). Default: the dependency with its own name.
        #[arg(long = "dependency", value_name = "INSTANCE=DEPENDENCY")]
        dependency: Vec<String>,
        /// resilience4j: a Spring profile to activate, as `--spring.profiles.active` would
        /// (repeatable, or `a,b`). Default: the file's own spring.profiles.active, else Spring's default
        /// profile; documents for other profiles are listed under NOT MAPPED.
        #[arg(long = "profile", value_name = "NAME")]
        profile: Vec<String>,
        /// dotnet-resilience: the configuration section bound to the standard handler, as .NET
        /// writes it (`MyClient` or `Resilience:MyClient`). Default: the file's root if it has
        /// the handler's keys, else the only object that has them.
        #[arg(long, value_name = "A:B")]
        section: Option<String>,
        /// envoy: the route (its `name`) whose timeout, retry_policy and hedge_policy to import.
        /// Default: the first route in the file.
        #[arg(long, value_name = "NAME")]
        route: Option<String>,
        /// Write the fragment to FILE (whole or not at all) instead of standard output.
        #[arg(short = 'o', long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Print a shell completion script to standard output.
    #[command(after_help = COMPLETIONS_EXAMPLES)]
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// `import`'s formats, as the command line spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportFormatArg {
    /// gRPC service config JSON (methodConfig, retryPolicy, hedgingPolicy, retryThrottling).
    GrpcServiceConfig,
    /// resilience4j's Spring Boot configuration, application.yml/.yaml or .properties
    /// (circuitbreaker, retry, bulkhead, ratelimiter, timelimiter).
    Resilience4j,
    /// A LiteLLM proxy config.yaml (model_list, router_settings, litellm_settings) or a YAML of
    /// Router keyword arguments (num_retries, timeout, retry_after, fallbacks, rpm).
    Litellm,
    /// .NET's standard HTTP resilience handler (HttpStandardResilienceOptions) in appsettings.json.
    DotnetResilience,
    /// An Envoy v3 bootstrap, Cluster, RouteConfiguration or Route, YAML or JSON
    /// (circuit_breakers, retry_budget, outlier_detection, retry_policy, timeout).
    Envoy,
}

impl From<ImportFormatArg> for ImportFormat {
    fn from(f: ImportFormatArg) -> Self {
        match f {
            ImportFormatArg::GrpcServiceConfig => ImportFormat::GrpcServiceConfig,
            ImportFormatArg::Resilience4j => ImportFormat::Resilience4j,
            ImportFormatArg::Litellm => ImportFormat::Litellm,
            ImportFormatArg::DotnetResilience => ImportFormat::DotnetResilience,
            ImportFormatArg::Envoy => ImportFormat::Envoy,
        }
    }
}

/// `--first`'s words: `FirstRun`'s own names, so clap lists them and the two never drift.
fn first_run_parser() -> impl TypedValueParser<Value = FirstRun> {
    clap::builder::PossibleValuesParser::new(FirstRun::ALL.map(FirstRun::name))
        .map(|word| FirstRun::parse(&word).expect("clap accepts only FirstRun's names"))
}

fn refusal_parser() -> impl TypedValueParser<Value = Refusal> {
    clap::builder::PossibleValuesParser::new(Refusal::ALL.map(Refusal::name))
        .map(|word| Refusal::parse(&word).expect("clap accepts only Refusal's names"))
}

fn fit_parser() -> impl TypedValueParser<Value = FitChoice> {
    clap::builder::PossibleValuesParser::new(FitChoice::ALL.map(FitChoice::name))
        .map(|word| FitChoice::parse(&word).expect("clap accepts only FitChoice's names"))
}

/// `--jobs`: the worker threads asked for, checked, or one per core.
pub fn worker_count(j: Option<i64>) -> Result<usize, CommandError> {
    match j {
        Some(n) if n < 1 => Err(CommandError::Input(format!(
            "argument `--jobs {n}`: the number of worker threads is 1 or more (leave --jobs out for one per core)"
        ))),
        Some(n) if n as u64 > MAX_JOBS as u64 => {
            Err(CommandError::Input(format!("argument `--jobs {n}`: at most {MAX_JOBS} workers")))
        }
        Some(n) => Ok(n as usize),
        None => Ok(default_jobs()),
    }
}

/// Runs the parsed command and returns the process exit code.
pub fn execute(cli: Cli) -> i32 {
    deliver(dispatch(cli.command))
}

/// Runs one command: what it prints and its exit code, or why it could not finish.
fn dispatch(command: Command) -> Result<(String, i32), CommandError> {
    match command {
        Command::Run { scenario, policies, common, out, format, replication, traces, metrics, check_slo } => {
            let SimulationArgs { seed, batch: BatchArgs { replications, sets, jobs } } = common;
            let (jobs, format) = (worker_count(jobs)?, format.output());
            let opts = RunOptions {
                scenario: scenario.into(),
                policies,
                seed,
                replications,
                sets,
                out,
                format,
                jobs,
                replication,
                traces,
                metrics,
                check_slo,
            };
            let report = run(&opts)?;
            Ok((report.text, if report.passed { EXIT_OK } else { EXIT_GATE_FAILED }))
        }
        Command::Sweep { scenario, params, policies, common, out, resume, shard, view } => {
            let SimulationArgs { seed, batch: BatchArgs { replications, sets, jobs } } = common;
            let jobs = worker_count(jobs)?;
            let shard = shard.as_deref().map(Shard::parse).transpose()?;
            let view = view.into();
            let opts = SweepOptions {
                scenario: scenario.into(),
                params,
                policies,
                seed,
                replications,
                sets,
                jobs,
                out,
                resume,
                shard,
                view,
            };
            Ok((sweep(&opts)?, EXIT_OK))
        }
        Command::Tune {
            scenario,
            policy,
            space,
            objectives,
            budget,
            candidates,
            initial_replications,
            common,
            out,
            resume,
            generations,
            shard,
            merge_shards,
        } => {
            let SimulationArgs { seed, batch: BatchArgs { replications, sets, jobs } } = common;
            let jobs = worker_count(jobs)?;
            let rounds = match (shard.as_deref().map(Shard::parse).transpose()?, merge_shards) {
                (Some(shard), _) => RoundMode::Shard(shard),
                (None, true) => RoundMode::Merge,
                (None, false) => RoundMode::Local,
            };
            let opts = TuneOptions {
                scenario: scenario.into(),
                policy,
                space,
                objectives,
                budget,
                candidates,
                initial_replications,
                seed,
                replications,
                sets,
                jobs,
                out,
                resume,
                generations,
                rounds,
            };
            Ok((tune(&opts)?, EXIT_OK))
        }
        Command::Explore { scenario, policy, schedules, seed, max_faults, kinds, keep_faults, batch, out } => {
            let BatchArgs { replications, sets, jobs } = batch;
            let jobs = worker_count(jobs)?;
            let opts = ExploreOptions {
                scenario: scenario.into(),
                policy,
                schedules,
                seed,
                max_faults,
                kinds,
                keep_faults,
                sets,
                replications,
                jobs,
                out,
            };
            let report = explore(&opts)?;
            Ok((report.text, if report.violated { EXIT_GATE_FAILED } else { EXIT_OK }))
        }
        Command::Replay {
            scenario,
            policy,
            replication,
            replication_seed,
            run,
            first,
            refused_by,
            seed,
            sets,
            out,
        } => {
            let select = match (run, first, refused_by) {
                (Some(n), _, _) => RunSelector::Number(n),
                (None, Some(FirstRun::Refused), Some(reason)) => RunSelector::FirstRefusedBy(reason),
                (None, Some(f), Some(reason)) => {
                    return Err(CommandError::Input(format!(
                        "argument `--refused-by {}`: it narrows --first refused, and this is --first {}",
                        reason.name(),
                        f.name()
                    )));
                }
                (None, Some(f), None) => RunSelector::First(f),
                (None, None, _) => return Err(CommandError::Input("give --run N or --first WHAT".into())),
            };
            let opts = ReplayOptions {
                scenario: scenario.into(),
                policy,
                seed,
                sets,
                replication,
                replication_seed,
                select,
                out,
            };
            Ok((replay(&opts)?, EXIT_OK))
        }
        Command::Merge { shards, out, view } => Ok((merge(&MergeOptions { shards, out, view: view.into() })?, EXIT_OK)),
        Command::Calibrate { traces, out, renames, fit, sampling_ratio, prometheus } => {
            Ok((calibrate(&CalibrateOptions { traces, out, renames, fit, sampling_ratio, prometheus })?, EXIT_OK))
        }
        Command::Gate {
            scenario,
            candidate,
            baseline,
            baseline_scenario,
            thresholds_only,
            candidate_sets,
            baseline_sets,
            common,
            format,
            junit,
            front,
            front_tolerance,
        } => {
            let SimulationArgs { seed, batch: BatchArgs { replications, sets, jobs } } = common;
            let (jobs, format) = (worker_count(jobs)?, format.output());
            let report = gate(&GateOptions {
                scenario: scenario.into(),
                candidate,
                baseline,
                baseline_scenario,
                thresholds_only,
                seed,
                replications,
                sets,
                candidate_sets,
                baseline_sets,
                jobs,
                format,
                junit,
                front,
                front_tolerance_percent: front_tolerance,
            })?;
            Ok((report.text, if report.passed { EXIT_OK } else { EXIT_GATE_FAILED }))
        }
        Command::Compare { a, b, policies, metrics, format, out } => {
            let format = format.format();
            let to_file = out.is_some();
            let report = compare(&CompareOptions { a, b, policies, metrics, format, out })?;
            // A table carries its warnings; data and files do not, so they go to stderr.
            let data = match format {
                CompareFormat::Table => to_file,
                CompareFormat::Json | CompareFormat::Csv => true,
            };
            if data {
                for w in &report.warnings {
                    let _ = writeln!(std::io::stderr(), "warning: {w}");
                }
            }
            Ok((report.text, EXIT_OK))
        }
        Command::Export { result, format, out, start_epoch_ms } => {
            let report = export(&ExportOptions { folder: result, format: format.format(), out, start_epoch_ms })?;
            Ok((report.text, EXIT_OK))
        }
        Command::Check { scenario, policies, replications, seed, sets, jobs, format, json, out } => {
            let format = if json { OutputFormat::Json } else { format.output() };
            let jobs = worker_count(jobs)?;
            let opts = CheckOptions {
                scenario: scenario.into(),
                policies,
                replications: Some(replications),
                sets,
                seed,
                jobs,
                format,
                out,
            };
            let report = check(&opts)?;
            Ok((report.text, if report.failed { EXIT_FAILURE } else { EXIT_OK }))
        }
        Command::Validate { scenario } => Ok((validate(&scenario.into())?, EXIT_OK)),
        Command::Docs { topic } => Ok((docs(topic.as_deref())?, EXIT_OK)),
        Command::Init { path, force } => Ok((init(&InitOptions { path: Some(path), force })?, EXIT_OK)),
        Command::Import { format, file, method, policy, dependency, profile, section, route, out } => {
            let opts = ImportOptions {
                format: format.into(),
                file,
                method,
                policy,
                dependencies: dependency,
                profiles: profile,
                section,
                route,
                out,
            };
            Ok((import(&opts)?, EXIT_OK))
        }
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "faultline", &mut script);
            Ok((String::from_utf8_lossy(&script).into_owned(), EXIT_OK))
        }
    }
}

/// Prints a command's output, or its error on standard error, and returns the exit code.
fn deliver(result: Result<(String, i32), CommandError>) -> i32 {
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
                CommandError::Input(_) | CommandError::Scenario(_) => EXIT_INVALID_INPUT,
                CommandError::Io(_) => EXIT_FAILURE,
                // As a shell reports a process ended by SIGINT.
                CommandError::Interrupted => EXIT_INTERRUPTED,
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
    match Cli::try_parse() {
        Ok(cli) => execute(cli),
        // Help and version are output like any other: a closed or full standard output is a
        // failure (exit 1), not a silent success.
        Err(e) if matches!(e.kind(), clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion) => {
            deliver(Ok((e.to_string(), EXIT_OK)))
        }
        Err(e) => {
            let _ = e.print();
            e.exit_code()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_has_help_and_every_command_an_example() {
        let cli = Cli::command();
        cli.clone().debug_assert();
        let mut commands = 0;
        for sub in cli.get_subcommands() {
            commands += 1;
            let name = sub.get_name();
            let examples = sub.get_after_help().map(|h| h.to_string()).unwrap_or_default();
            assert!(examples.contains(&format!("faultline {name} ")), "`{name}` shows no example:\n{examples}");
            assert!(sub.get_about().is_some(), "`{name}` has no description");
            for arg in sub.get_arguments() {
                assert!(arg.get_help().is_some(), "`faultline {name}`: `{}` has no help text", arg.get_id());
            }
        }
        assert_eq!(
            commands, 16,
            "run, sweep, tune, merge, explore, replay, calibrate, gate, compare, export, check, validate, docs, init, import, completions"
        );
        let short = |command: &str, long: &str| {
            let sub = cli.find_subcommand(command).unwrap();
            sub.get_arguments().find(|a| a.get_long() == Some(long)).and_then(|a| a.get_short())
        };
        for command in ["run", "sweep", "explore"] {
            assert_eq!(short(command, "policy"), Some('p'));
            assert_eq!(short(command, "out"), Some('o'));
            assert_eq!(short(command, "jobs"), Some('j'));
        }
        assert_eq!((short("replay", "policy"), short("replay", "out")), (Some('p'), Some('o')));
        assert_eq!(short("merge", "out"), Some('o'));
        assert_eq!(short("gate", "jobs"), Some('j'));
        assert_eq!((short("compare", "policy"), short("compare", "out")), (Some('p'), Some('o')));
    }
}
