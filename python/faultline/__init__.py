"""faultline from Python: the deterministic simulator and chaos-test harness for AI-agent
runtimes, calling the same library as the ``faultline`` command line (no subprocess).

Every command of the command line that simulates is a function here, with the command's
options as keyword arguments, and returns an object with the figures: ``run`` (summary dicts,
replications and time series as pandas DataFrames), ``sweep`` (the grid as a DataFrame),
``gate`` (the verdict and its checks), ``tune`` (the front), ``explore``, ``replay``,
``calibrate`` and ``validate``. The same scenario, seed and options give the same bytes as the
command line, whatever ``jobs`` is. Files are written only when an output folder is given.

A scenario is a path to a .toml or .json file, TOML text (a string holding a newline), or a
dict with the file's structure. Overrides (the command line's ``--set``) are a dict of field
path to value: ``{"dependency.model-primary.servers": 20}``.

>>> import faultline
>>> r = faultline.run("scenarios/mmc.toml", replications=2, seed=7)
>>> r.summary["plain"]["metrics"]["run_latency_ms.p95"]
437.631
>>> r.replications[["policy", "replication", "auto_completion_ratio"]]
  policy  replication  auto_completion_ratio
0  plain            0                      1
1  plain            1                      1

Errors are exceptions: ``ScenarioError`` (with ``file``, ``line``, ``column``, ``field``),
``InputError``, ``OutputError``; Ctrl-C stops a command (a sweep keeps its finished points:
``Interrupted.result``). The GIL is released while simulating. docs/python.md has more.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from typing import Any, Dict, Mapping, Optional, Sequence, Union

from . import _native
from . import _options as o
from ._errors import (
    FaultlineError,
    GateFailed,
    InputError,
    InternalError,
    Interrupted,
    OutputError,
    ScenarioError,
    ScenarioFileNotFound,
    SloFailed,
)
from ._options import Overrides, Progress, Scenario
from ._results import (
    CalibrateResult,
    ExploreResult,
    GateResult,
    ReplayResult,
    RunResult,
    SweepResult,
    TuneResult,
)

__version__: str = _native.version()

__all__ = [
    "run",
    "sweep",
    "gate",
    "assert_gate",
    "tune",
    "explore",
    "replay",
    "calibrate",
    "validate",
    "RunResult",
    "SweepResult",
    "GateResult",
    "TuneResult",
    "ExploreResult",
    "ReplayResult",
    "CalibrateResult",
    "FaultlineError",
    "ScenarioError",
    "ScenarioFileNotFound",
    "InputError",
    "OutputError",
    "InternalError",
    "Interrupted",
    "GateFailed",
    "SloFailed",
]

# Tracebacks and pytest's summary name them as users import them: faultline.ScenarioError.
for _exception in (FaultlineError, ScenarioError, ScenarioFileNotFound, InputError, OutputError, InternalError,
                   Interrupted, GateFailed, SloFailed):
    _exception.__module__ = "faultline"
del _exception

PathLike = Union[str, "os.PathLike[str]"]


def run(
    scenario: Scenario,
    *,
    policies: Union[str, Sequence[str], None] = None,
    seed: Optional[int] = None,
    replications: Optional[int] = None,
    overrides: Overrides = None,
    jobs: Optional[int] = None,
    replication: Optional[int] = None,
    traces: Optional[int] = None,
    metrics: Union[str, Sequence[str], None] = None,
    check_slo: bool = False,
    out: Optional[PathLike] = None,
    progress: Progress = True,
) -> RunResult:
    """Run every policy of a scenario (or those named) on the same seeds: ``faultline run``.

    Args:
        scenario: a .toml or .json file, TOML text, or a dict.
        policies: a policy name or a list of them (default: every policy).
        seed: the root seed (default: the scenario's ``simulation.seed``).
        replications: replications per policy (default: ``simulation.replications``).
        overrides: ``--set``: a dict of field path to value, applied in order.
        jobs: worker threads (default: one per core); the figures are the same for any.
        replication: run only replication K (from 0): exactly row K of a full run.
        traces: also export K sampled runs of each replication as OTLP/JSON
            (``<policy>/traces.otlp.jsonl`` in ``files``).
        metrics: ``--metrics``: the figures ``text`` shows instead of the headline (metric
            names, a list or a comma-separated string), or ``"all"``.
        check_slo: ``--check-slo``: raise :class:`SloFailed` when an ``[slo]`` threshold
            fails for a policy (the command line exits 99); a scenario without thresholds is
            an :class:`InputError`. Without it the verdicts are in ``text`` and
            ``failed_thresholds``, and nothing is raised.
        out: write the output set there (replaced as a whole); nothing is written without it.
        progress: True for a tqdm bar where tqdm is installed, False for none, or a callable
            taking (done, total).

    Returns:
        A :class:`RunResult`: ``summary`` (dict per policy), ``replications`` and
        ``timeseries`` (DataFrames with a ``policy`` column), ``metrics``, ``report_html``,
        ``files`` (the output set's bytes), ``text``, ``document`` (``--format json``) and
        ``failed_thresholds``.

    Raises:
        SloFailed: with ``check_slo=True``, a threshold failed; ``.result`` is the RunResult.

    >>> import faultline
    >>> r = faultline.run("scenarios/meeting-analysis-incident.toml",
    ...                   policies=["naive", "resilient"], replications=2,
    ...                   overrides={"dependency.model-primary.servers": 20})
    >>> r.metrics.loc["incident.retry_amplification_ratio"].round(2)
    naive        4.67
    resilient    1.01
    Name: incident.retry_amplification_ratio, dtype: float64
    """
    options = {
        "scenario": o.scenario_arg(scenario),
        "policies": o.names(policies, "policies"),
        "seed": o.integer("seed", seed, maximum=o.U64),
        "replications": o.integer("replications", replications, maximum=o.U32),
        "sets": o.sets(overrides),
        "jobs": o.integer("jobs", jobs, minimum=-o.I64 - 1, maximum=o.I64),
        "replication": o.integer("replication", replication, maximum=o.U32),
        "traces": o.integer("traces", traces, maximum=o.U32),
        "metrics": o.metric_names(metrics),
        "check_slo": o.flag("check_slo", check_slo),
        "out": o.path(out),
    }
    native = o.call(_native.run, options, progress, "run")
    result = RunResult(native)
    if not native["passed"]:
        raise SloFailed(
            f"check_slo: {result.failed_thresholds} [slo] threshold verdict(s) failed\n\n{result.text}", result
        )
    return result


def sweep(
    scenario: Scenario,
    params: Union[Mapping[str, Sequence[Any]], Sequence[str]],
    *,
    policies: Union[str, Sequence[str], None] = None,
    seed: Optional[int] = None,
    replications: Optional[int] = None,
    overrides: Overrides = None,
    jobs: Optional[int] = None,
    metrics: Union[str, Sequence[str], None] = None,
    grid: bool = False,
    out: Optional[PathLike] = None,
    resume: bool = False,
    shard: Optional[str] = None,
    progress: Progress = True,
) -> SweepResult:
    """Run the cross product of parameter values: ``faultline sweep``.

    Args:
        scenario: a .toml or .json file, TOML text, or a dict.
        params: ``--param``: a dict of field path to the values to sweep, such as
            ``{"policy.resilient.budget.retry_tokens": [0, 1, 2, 4]}``; the grid is their
            cross product, in the order given.
        policies, seed, replications, overrides, jobs: as :func:`run`.
        metrics: the figures ``text`` and the report show (any column of sweep.csv without
            its ``.ci95_*`` suffix).
        grid: show a two-parameter sweep as rows x columns per policy in ``text``.
        out: write sweep.csv, sweep.json and report.html there (with a checkpoint while it
            runs, as the command line does); nothing is written without it.
        resume: continue a killed sweep of ``out`` from its checkpoint.
        shard: ``"K/N"``: compute one shard into ``out`` (docs/cluster.md).
        progress: as :func:`run`.

    Returns:
        A :class:`SweepResult`: ``table`` (sweep.csv as a DataFrame), ``document``
        (sweep.json), ``report_html``, ``files`` and ``text``.

    Raises:
        Interrupted: Ctrl-C; its ``result`` holds the grid points that finished (without an
            output folder; with one, the checkpoint keeps them for ``resume=True``).

    >>> import faultline
    >>> s = faultline.sweep("scenarios/meeting-analysis-incident.toml",
    ...     {"policy.resilient.budget.retry_tokens": [0, 1, 2, 4]}, policies="resilient",
    ...     replications=2)
    >>> s.table[["policy.resilient.budget.retry_tokens", "cost_per_success"]].round(2)
       policy.resilient.budget.retry_tokens  cost_per_success
    0                                     0              5.18
    1                                     1              7.29
    2                                     2              7.30
    3                                     4              7.31
    >>> s.table.plot(x="policy.resilient.budget.retry_tokens", y="cost_per_success")  # doctest: +ELLIPSIS
    <Axes: ...>
    """
    # Without an output folder nothing is written (the command line's default folder would be
    # ./results): a resumed sweep or a shard exists only as files.
    if resume and out is None:
        raise InputError("resume=True needs out=, the folder of the killed sweep to continue")
    if shard is not None and out is None:
        raise InputError("shard= needs out=, the folder the shard's file is written into")
    options = {
        "scenario": o.scenario_arg(scenario),
        "params": o.params(params),
        "policies": o.names(policies, "policies"),
        "seed": o.integer("seed", seed, maximum=o.U64),
        "replications": o.integer("replications", replications, maximum=o.U32),
        "sets": o.sets(overrides),
        "jobs": o.integer("jobs", jobs, minimum=-o.I64 - 1, maximum=o.I64),
        "out": o.path(out),
        "resume": o.flag("resume", resume),
        "shard": shard,
        "metrics": o.metric_names(metrics),
        "grid": o.flag("grid", grid),
    }
    result = SweepResult(o.call(_native.sweep_points, options, progress, "sweep"), o.path(out))
    if result.interrupted:
        raise Interrupted(
            f"sweep interrupted: {result.finished} of {result.points} grid point(s) finished "
            "(in the exception's .result)",
            result,
        )
    return result


def gate(
    scenario: Scenario,
    candidate: str,
    baseline: Optional[str] = None,
    *,
    baseline_scenario: Optional[PathLike] = None,
    thresholds_only: bool = False,
    seed: Optional[int] = None,
    replications: Optional[int] = None,
    overrides: Overrides = None,
    candidate_overrides: Overrides = None,
    baseline_overrides: Overrides = None,
    jobs: Optional[int] = None,
    junit: Optional[PathLike] = None,
    front: Optional[PathLike] = None,
    front_tolerance: float = 5.0,
    progress: Progress = True,
) -> GateResult:
    """Check a candidate policy against the scenario's ``[slo]``: ``faultline gate``.

    Thresholds are judged on the unfavourable 95 % bound; ``[slo.regression]`` limits on
    paired differences against the baseline policy (of the same file, or of
    ``baseline_scenario``), replication k of both sides on the same seed.

    Args:
        scenario: a .toml or .json file, TOML text, or a dict (the candidate's side).
        candidate: the policy under test.
        baseline: the policy to compare with (default with ``baseline_scenario``: the
            candidate's name).
        baseline_scenario: the baseline's file, such as main's version of the scenario.
        thresholds_only: judge ``[slo]`` alone and skip ``[slo.regression]``.
        seed, replications, jobs: as :func:`run` (the candidate's govern both sides).
        overrides: ``--set``, both sides.
        candidate_overrides: ``--candidate-set``, the candidate's side only.
        baseline_overrides: ``--baseline-set``, the baseline's side only.
        junit: also write a JUnit XML report there.
        front: a tune's front.json the candidate must stay near, within ``front_tolerance``
            percent.
        progress: as :func:`run`.

    Returns:
        A :class:`GateResult` (``passed``, ``verdict``, ``checks`` as a DataFrame, ``table``,
        ``document``); it does not raise when the gate fails: :func:`assert_gate` does.

    >>> import faultline
    >>> g = faultline.gate("scenarios/meeting-analysis-incident.toml", "resilient", "naive",
    ...                    replications=2)
    >>> g.passed, g.verdict
    (True, 'PASS')
    """
    options = {
        "scenario": o.scenario_arg(scenario),
        "candidate": candidate,
        "baseline": baseline,
        "baseline_scenario": o.path(baseline_scenario),
        "thresholds_only": o.flag("thresholds_only", thresholds_only),
        "seed": o.integer("seed", seed, maximum=o.U64),
        "replications": o.integer("replications", replications, maximum=o.U32),
        "sets": o.sets(overrides),
        "candidate_sets": o.sets(candidate_overrides, "candidate_overrides"),
        "baseline_sets": o.sets(baseline_overrides, "baseline_overrides"),
        "jobs": o.integer("jobs", jobs, minimum=-o.I64 - 1, maximum=o.I64),
        "junit": o.path(junit),
        "front": o.path(front),
        "front_tolerance": 5.0 if front_tolerance is None else o.number("front_tolerance", front_tolerance),
    }
    return GateResult(o.call(_native.gate_policy, options, progress, "gate"))


def assert_gate(scenario: Scenario, candidate: str, baseline: Optional[str] = None, **options: Any) -> GateResult:
    """:func:`gate`, raising :class:`GateFailed` (an ``AssertionError``) with the gate's table
    as its message when a check fails: a policy change gated in any test suite.

    >>> import faultline
    >>> def test_retry_tokens_keep_the_slos():
    ...     faultline.assert_gate("scenarios/meeting-analysis-incident.toml", "resilient",
    ...                           "resilient", replications=2,
    ...                           candidate_overrides={"policy.resilient.budget.retry_tokens": 1})
    >>> test_retry_tokens_keep_the_slos()
    """
    result = gate(scenario, candidate, baseline, **options)
    if not result.passed:
        raise GateFailed(result.table, result)
    return result


def _without_folder(text: str, folder: str) -> str:
    """A command's text when its output folder was a temporary one, removed before the
    result is returned: its `wrote` line goes, and its files are named as keys of ``files``
    (``files['front.csv']``), not by paths that no longer exist."""
    lines = [line for line in text.splitlines(keepends=True) if not line.startswith("wrote ")]
    prefix = re.escape(os.path.join(folder, ""))
    return re.sub(prefix + r"(\S+)", lambda m: f"files[{m.group(1)!r}]", "".join(lines))


def _folder_files(folder: str) -> Dict[str, bytes]:
    files: Dict[str, bytes] = {}
    for root, _, names in os.walk(folder):
        for name in sorted(names):
            full = os.path.join(root, name)
            with open(full, "rb") as f:
                files[os.path.relpath(full, folder)] = f.read()
    return dict(sorted(files.items()))


def tune(
    scenario: Scenario,
    policy: str,
    space: Union[Mapping[str, str], Sequence[str]],
    objectives: Sequence[str],
    *,
    budget: Optional[int] = None,
    candidates: int = 64,
    initial_replications: int = 3,
    generations: int = 0,
    seed: Optional[int] = None,
    replications: Optional[int] = None,
    overrides: Overrides = None,
    jobs: Optional[int] = None,
    out: Optional[PathLike] = None,
    resume: bool = False,
    shard: Optional[str] = None,
    merge_shards: bool = False,
    progress: Progress = True,
) -> TuneResult:
    """Search a policy's parameters for the Pareto front of the objectives: ``faultline tune``.

    Args:
        scenario: a .toml or .json file, TOML text, or a dict.
        policy: the policy to tune.
        space: ``--space``: a dict of field path to range, such as
            ``{"policy.resilient.budget.retry_tokens": "0..4"}`` (docs/tune.md).
        objectives: ``"max:METRIC"`` or ``"min:METRIC"`` each.
        budget: at most this many simulations in all.
        candidates: how many candidates fill a space too large for its whole grid.
        initial_replications: the replications every candidate starts with.
        generations: rounds of children of the front after the first race.
        seed, replications, overrides, jobs, progress: as :func:`run` (``replications``:
            the most a candidate gets).
        out: the output folder (front.csv, front.json, candidates.csv, report.html,
            front-<k>.toml, and the checkpoint while it runs); without it, a temporary folder
            removed before this returns.
        resume: continue a killed tune of ``out``.
        shard: ``"K/N"``: compute one shard of each round into ``out`` (docs/cluster.md).
        merge_shards: merge the round's shard files in ``out`` and run on from them.

    Returns:
        A :class:`TuneResult`: ``front`` and ``candidates`` (DataFrames), ``document``
        (front.json), ``scenario(k)``, ``files`` and ``text``.
    """
    if isinstance(space, Mapping):
        for k, v in space.items():
            if not isinstance(v, str):
                raise TypeError(
                    f"space[{k!r}]: a range as a string, \"lo..hi\" (\"0..4\", \"50.0..500.0\"), or "
                    f"values \"a,b,c\" (docs/tune.md), not {type(v).__name__}"
                )
        space_args = [f"{k}={v}" for k, v in space.items()]
    elif isinstance(space, str):
        space_args = [space]
    else:
        space_args = [str(v) for v in space]
    # The shards of a tune exist only as files, as a sweep's do.
    if resume and out is None:
        raise InputError("resume=True needs out=, the folder of the killed tune to continue")
    if shard is not None and out is None:
        raise InputError("shard= needs out=, the folder the shard's file is written into")
    if merge_shards and out is None:
        raise InputError("merge_shards=True needs out=, the folder holding the shards' files")

    def go(folder: str) -> TuneResult:
        options = {
            "scenario": o.scenario_arg(scenario),
            "policy": policy,
            "space": space_args,
            "objectives": o.names(objectives, "objectives"),
            "budget": o.integer("budget", budget, maximum=o.U64),
            "candidates": o.integer("candidates", candidates, maximum=o.U64),
            "initial_replications": o.integer("initial_replications", initial_replications, maximum=o.U32),
            "seed": o.integer("seed", seed, maximum=o.U64),
            "replications": o.integer("replications", replications, maximum=o.U32),
            "sets": o.sets(overrides),
            "jobs": o.integer("jobs", jobs, minimum=-o.I64 - 1, maximum=o.I64),
            "out": folder,
            "resume": o.flag("resume", resume),
            "generations": o.integer("generations", generations, maximum=o.U32),
            "shard": shard,
            "merge_shards": o.flag("merge_shards", merge_shards),
        }
        text = o.call(_native.tune_policy, options, progress, "tune")
        if out is None:
            text = _without_folder(text, folder)
        return TuneResult(text, _folder_files(folder), o.path(out))

    if out is not None:
        return go(os.fspath(out))
    with tempfile.TemporaryDirectory(prefix="faultline-tune-") as tmp:
        return go(os.path.join(tmp, "tune"))


def explore(
    scenario: Scenario,
    policy: str,
    *,
    schedules: int = 200,
    seed: int = 1,
    max_faults: int = 3,
    kinds: Optional[Sequence[str]] = None,
    keep_faults: bool = False,
    replications: Optional[int] = None,
    overrides: Overrides = None,
    jobs: Optional[int] = None,
    out: Optional[PathLike] = None,
    progress: Progress = True,
) -> ExploreResult:
    """Try random fault schedules on a policy and shrink the first that breaks an invariant:
    ``faultline explore``.

    Args:
        scenario: a .toml or .json file, TOML text, or a dict.
        policy: the policy under test.
        schedules: how many random schedules to try.
        seed: the schedules' seed (schedule k is the same for any ``schedules`` and ``jobs``).
        max_faults: faults per schedule at most.
        kinds: fault kinds to draw from (default: all).
        keep_faults: add the schedules to the scenario's own faults instead of replacing them.
        replications, overrides, jobs, progress: as :func:`run`.
        out: where the failing schedules are written as scenario files; without it, a
            temporary folder removed before this returns (their text stays in ``files``).

    Returns:
        An :class:`ExploreResult` (``violated``, ``text``, ``files``); ``bool(result)`` is
        True when no invariant broke.
    """

    def go(folder: str) -> ExploreResult:
        options = {
            "scenario": o.scenario_arg(scenario),
            "policy": policy,
            "schedules": o.integer("schedules", schedules, maximum=o.U32),
            "seed": o.integer("seed", seed, maximum=o.U64),
            "max_faults": o.integer("max_faults", max_faults, maximum=o.U64),
            "kinds": o.names(kinds, "kinds"),
            "keep_faults": o.flag("keep_faults", keep_faults),
            "sets": o.sets(overrides),
            "replications": o.integer("replications", replications, maximum=o.U32),
            "jobs": o.integer("jobs", jobs, minimum=-o.I64 - 1, maximum=o.I64),
            "out": folder,
        }
        native = o.call(_native.explore_schedules, options, progress, "explore")
        files = _folder_files(folder) if os.path.isdir(folder) else {}
        if out is None:
            native = dict(native, text=_without_folder(native["text"], folder))
        return ExploreResult(native, files, o.path(out))

    if out is not None:
        return go(os.fspath(out))
    with tempfile.TemporaryDirectory(prefix="faultline-explore-") as tmp:
        return go(os.path.join(tmp, "explore"))


def replay(
    scenario: Scenario,
    policy: str,
    *,
    run: Optional[int] = None,
    first: Optional[str] = None,
    refused_by: Optional[str] = None,
    replication: Optional[int] = None,
    replication_seed: Optional[int] = None,
    seed: Optional[int] = None,
    overrides: Overrides = None,
    out: Optional[PathLike] = None,
) -> ReplayResult:
    """Trace one root run of one replication: ``faultline replay``.

    Args:
        scenario: a .toml or .json file, TOML text, or a dict.
        policy: the policy to replay.
        run: the run's number (from 1, in the order runs start); or
        first: the first run after the warm-up that ``"failed"``, ``"handoff"``,
            ``"duplicate"``, ``"deadline-missed"``, ``"refused"``, ...
        refused_by: narrows ``first="refused"`` to one reason (``"circuit_open"``, ...).
        replication: replication K (default 0), or
        replication_seed: a replication's own seed (the ``seed`` column of replications).
        seed, overrides: as :func:`run`.
        out: also write the OTLP/JSON trace there.

    Returns:
        A :class:`ReplayResult`: ``text`` (the tree), ``otlp`` (the trace as a dict), ``run``.

    >>> import faultline
    >>> t = faultline.replay("scenarios/meeting-analysis-incident.toml", "naive", first="failed")
    >>> print(t.text.splitlines()[0])  # doctest: +NORMALIZE_WHITESPACE
    meeting-analysis-incident: policy naive, replication 0 (seed 15437704243103735727): run 7803
    of 40361, the first run after the warm-up that failed, started at t = 525.871 s
    """
    options = {
        "scenario": o.scenario_arg(scenario),
        "policy": policy,
        "replication": o.integer("replication", replication, maximum=o.U32),
        "replication_seed": o.integer("replication_seed", replication_seed, maximum=o.U64),
        "run": o.integer("run", run, maximum=o.U64),
        "first": first,
        "refused_by": refused_by,
        "seed": o.integer("seed", seed, maximum=o.U64),
        "sets": o.sets(overrides),
        "out": o.path(out),
    }
    return ReplayResult(o.call(_native.replay_run, options, False, "replay"))


def calibrate(
    traces: Union[PathLike, Sequence[PathLike]],
    *,
    out: Optional[PathLike] = None,
    map: Optional[Mapping[str, str]] = None,
    fit: str = "auto",
    sampling_ratio: Optional[float] = None,
    prometheus: Union[PathLike, Sequence[PathLike], None] = None,
) -> CalibrateResult:
    """Make a scenario from OpenTelemetry traces: ``faultline calibrate`` (docs/calibrate.md).

    Args:
        traces: OTLP/JSON files (one document per line, or one document).
        out: write the scenario (a .toml file) and its samples files (in ``<stem>-data/``
            beside it) there, as the command line does; nothing is written without it.
        map: ``--map``: callee -> dependency (merge or rename callees).
        fit: ``"auto"``, ``"empirical"``, or a family (as ``--fit``).
        sampling_ratio: the share of root runs the traces hold, when they do not say it.
        prometheus: Prometheus text-format files whose latency histograms replace the traces'.

    Returns:
        A :class:`CalibrateResult`: ``scenario`` (its TOML, which :func:`run` takes as it
        is, with or without ``out=``: the observed latencies are inline, ``samples_ms``),
        ``files`` (what the command line writes: the .toml, which names its samples files,
        and those files), ``samples`` and ``report``.

    >>> import faultline
    >>> c = faultline.calibrate("tests/data/otel-python-traces.jsonl")
    >>> list(faultline.run(c.scenario, replications=2).summary)
    ['calibrated']
    """
    as_list = lambda v: [] if v is None else [os.fspath(v)] if isinstance(v, (str, os.PathLike)) else [os.fspath(x) for x in v]  # noqa: E731
    options = {
        "traces": as_list(traces),
        "out": o.path(out),
        "renames": [f"{k}={v}" for k, v in (map or {}).items()],
        "fit": fit,
        "sampling_ratio": o.number("sampling_ratio", sampling_ratio),
        "prometheus": as_list(prometheus),
    }
    if not options["traces"]:
        raise InputError("traces: give at least one OTLP/JSON traces file")
    return CalibrateResult(o.call(_native.calibrate_traces, options, False, "calibrate"), o.path(out))


def validate(scenario: Scenario) -> str:
    """Load and check a scenario without running it: ``faultline validate``.

    Returns what the command prints (``...: ok (3 dependencies, ...)``, warnings first);
    raises :class:`ScenarioError` naming the file, line, column and field otherwise.

    >>> import faultline
    >>> faultline.validate("scenarios/mmc.toml")
    'scenarios/mmc.toml: ok (1 dependencies, 1 workflows, 0 faults, policies: plain, 0 SLO checks, 0 regression checks)\\n'
    """
    try:
        return _native.validate_scenario(json.dumps({"scenario": o.scenario_arg(scenario)}))
    except _native.NativeError as e:
        raise o.error(e) from None
