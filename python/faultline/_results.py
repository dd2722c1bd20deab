"""What the commands return: their files' bytes, exactly as the command line writes them,
read into dicts and pandas DataFrames on first use."""

from __future__ import annotations

import html
import io
import json
from functools import cached_property
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

if TYPE_CHECKING:  # pandas is imported on first use, not with the package
    import pandas as pd

from . import _native

__all__ = [
    "RunResult",
    "SweepResult",
    "GateResult",
    "TuneResult",
    "ExploreResult",
    "ReplayResult",
    "CalibrateResult",
]

#: The figures a run's notebook table shows, as `faultline run` does first.
HEADLINE = [
    "auto_completion_ratio",
    "safe_outcome_ratio",
    "deadline_exceeded_ratio",
    "run_latency_ms.p95",
    "retry_amplification_ratio",
    "cost_per_success",
    "duplicate_effect_total",
]


def _pandas() -> Any:
    import pandas

    return pandas


def _csv(data: bytes) -> "pd.DataFrame":
    # The files' text is kept as written: empty cells (undefined figures) read as NaN.
    return _pandas().read_csv(io.BytesIO(data))


def _iframe(page: str, height: int = 600) -> str:
    """A whole HTML page shown inside a notebook without its styles leaking out."""
    return (
        f'<iframe srcdoc="{html.escape(page, quote=True)}" '
        f'style="width:100%;height:{height}px;border:1px solid #ddd" sandbox></iframe>'
    )


def _number(value: Any) -> str:
    """A figure for the eye: four significant digits, never an exponent between 1e-4 and
    1e15 (a p95 of 53 400 ms is ``53400``, not ``5.34e+04``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return html.escape(str(value))
    value = float(value)
    if value != value:
        return "n/a"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    magnitude = abs(value)
    if 1e-4 <= magnitude < 1e15 or magnitude == 0:
        text = f"{value:.4g}"
        # .4g turns to an exponent from 1e4 (and at 9999.5, rounded up): whole units then.
        return f"{value:.0f}" if "e" in text else text
    return f"{value:.3e}"


def _interval(metric: str, low: float, high: float) -> Tuple[float, float]:
    """A 95 % interval clipped to the values the metric can take (a ratio of runs to [0, 1]),
    as the gate and the reports clip it (docs/metrics.md)."""
    floor, ceiling = _native.metric_range(metric)
    return max(low, floor), min(high, ceiling)


class RunResult:
    """What ``faultline.run`` computed: every policy on the same seeds.

    Attributes:
        text: what ``faultline run`` prints (the policies side by side).
        json: what ``faultline run --format json`` prints (``document`` as a dict).
        files: the output set's figures, path -> bytes, exactly as the command line writes
            them (``<policy>/summary.json``, ``timeseries.csv``, ``replications.csv``,
            ``traces.otlp.jsonl`` with ``traces=``, ``report.html``); not its
            ``manifest.json``, which records a write and exists only with ``out=``.
        written: the paths written, when an output folder was given (manifest.json is
            written beside them).
        failed_thresholds: how many ``[slo]`` threshold verdicts failed, over every policy
            (0 when the scenario has no ``[slo]``); ``run(check_slo=True)`` raises when not 0.

    >>> import faultline
    >>> r = faultline.run("scenarios/mmc.toml", replications=2)
    >>> r.summary["plain"]["metrics"]["auto_completion_ratio"]
    1.0
    >>> r.replications.groupby("policy")["run_latency_ms.p95"].mean()
    policy
    plain    444.287
    Name: run_latency_ms.p95, dtype: float64
    """

    def __init__(self, native: Dict[str, Any]) -> None:
        self.text: str = native["text"]
        self.files: Dict[str, bytes] = dict(native["files"])
        self.written: List[str] = list(native["written"])
        self.json: str = native["json"]
        self.failed_thresholds: int = native["failed_thresholds"]

    @cached_property
    def document(self) -> Dict[str, Any]:
        """``faultline run --format json`` as a dict: every policy's summary.json by name."""
        return json.loads(self.json)

    @property
    def policies(self) -> List[str]:
        """The policies run, in the order of the output."""
        return [p[: -len("/summary.json")] for p in self.files if p.endswith("/summary.json")]

    @cached_property
    def summary(self) -> Dict[str, Dict[str, Any]]:
        """Per policy, its summary.json as a dict (``metrics``: means, ``ci95``: intervals)."""
        return {p: json.loads(self.files[f"{p}/summary.json"]) for p in self.policies}

    def _per_policy(self, name: str) -> "pd.DataFrame":
        pd = _pandas()
        frames = []
        for p in self.policies:
            frame = _csv(self.files[f"{p}/{name}"])
            # One concatenation, not an insert: a frame of hundreds of columns stays whole.
            frames.append(pd.concat([pd.DataFrame({"policy": [p] * len(frame)}), frame], axis=1))
        return pd.concat(frames, ignore_index=True)

    @cached_property
    def replications(self) -> "pd.DataFrame":
        """replications.csv of every policy as one DataFrame: a ``policy`` column, then the
        replication, its seed and every metric."""
        return self._per_policy("replications.csv")

    @cached_property
    def timeseries(self) -> "pd.DataFrame":
        """timeseries.csv of every policy as one DataFrame, with a ``policy`` column."""
        return self._per_policy("timeseries.csv")

    @property
    def metrics(self) -> "pd.DataFrame":
        """Every metric's mean, one column per policy (a DataFrame indexed by metric)."""
        pd = _pandas()
        return pd.DataFrame({p: s["metrics"] for p, s in self.summary.items()})

    @property
    def report_html(self) -> str:
        """report.html: the charts of every policy."""
        return self.files["report.html"].decode()

    def _repr_html_(self) -> str:
        rows = []
        for m in HEADLINE:
            cells = []
            for p, s in self.summary.items():
                mean = s["metrics"].get(m)
                low, high = s["ci95"].get(m, [None, None])
                if low is None or low != low or high is None:
                    ci = ""
                else:
                    low, high = _interval(m, low, high)
                    ci = f" [{_number(low)}, {_number(high)}]"
                cells.append(f"<td>{_number(mean) if mean is not None else 'n/a'}{ci}</td>")
            rows.append(f"<tr><th style='text-align:left'>{html.escape(m)}</th>{''.join(cells)}</tr>")
        head = "".join(f"<th>{html.escape(p)}</th>" for p in self.summary)
        return (
            f"<table><thead><tr><th>metric (mean [95% CI])</th>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
            f"<details><summary>report</summary>{_iframe(self.report_html)}</details>"
        )

    def __repr__(self) -> str:
        return self.text


class SweepResult:
    """What ``faultline.sweep`` computed: one row per grid point and policy.

    Attributes:
        text: what ``faultline sweep`` prints (the key figures per point).
        files: sweep.csv, sweep.json and report.html, path -> bytes, as the command line
            writes them (empty when the sweep wrote to an output folder: see ``written``).
        finished, points: grid points finished, of all (fewer only when interrupted).
        interrupted: Ctrl-C stopped it; the tables hold the finished points, in grid order.

    >>> import faultline
    >>> s = faultline.sweep("scenarios/mmc.toml", params={"dependency.station.servers": [10, 12]},
    ...                     replications=2)
    >>> s.table[["dependency.station.servers", "run_latency_ms.p95"]]
       dependency.station.servers  run_latency_ms.p95
    0                          10             444.287
    1                          12             311.807
    >>> s.table.plot(x="dependency.station.servers", y="run_latency_ms.p95")  # doctest: +ELLIPSIS
    <Axes: ...>
    """

    def __init__(self, native: Dict[str, Any], out: Optional[str] = None) -> None:
        self.text: str = native["text"]
        self.interrupted: bool = native["interrupted"]
        self.out = out
        if "files" in native:
            self.files: Dict[str, bytes] = dict(native["files"])
            self.finished: int = native["finished"]
            self.points: int = native["points"]
        else:
            self.files = {}
            if out is not None:
                import os

                for name in ("sweep.csv", "sweep.json", "report.html"):
                    full = os.path.join(out, name)
                    if os.path.exists(full):
                        with open(full, "rb") as f:
                            self.files[name] = f.read()
            # Grid points, not rows: a row per point and policy.
            self.points = self.finished = (
                len({json.dumps(row["params"], sort_keys=True) for row in self.document["rows"]})
                if "sweep.json" in self.files
                else 0
            )

    @cached_property
    def table(self) -> "pd.DataFrame":
        """sweep.csv as a DataFrame: the parameters, the policy, the replications, then each
        metric's mean and its ``.ci95_low`` and ``.ci95_high``."""
        return _csv(self.files["sweep.csv"])

    @cached_property
    def document(self) -> Dict[str, Any]:
        """sweep.json as a dict."""
        return json.loads(self.files["sweep.json"])

    @property
    def report_html(self) -> str:
        """report.html (empty when interrupted)."""
        return self.files.get("report.html", b"").decode()

    def _repr_html_(self) -> str:
        note = (
            f"<p><b>interrupted</b>: {self.finished} of {self.points} point(s) finished</p>"
            if self.interrupted
            else ""
        )
        report = f"<details><summary>report</summary>{_iframe(self.report_html)}</details>" if self.report_html else ""
        return note + self.table.to_html(max_rows=60, max_cols=30) + report

    def __repr__(self) -> str:
        return self.text


class GateResult:
    """What ``faultline.gate`` judged: ``passed``, the ``checks`` and the ``table``.

    ``bool(result)`` is ``passed``; ``table`` is the text ``faultline gate`` prints;
    ``document`` its ``--format json`` report.

    >>> import faultline
    >>> g = faultline.gate("scenarios/meeting-analysis-incident.toml",
    ...                    candidate="resilient", baseline="naive", replications=2)
    >>> g.passed, g.verdict
    (True, 'PASS')
    """

    def __init__(self, native: Dict[str, Any]) -> None:
        self.table: str = native["table"]
        self.passed: bool = native["passed"]
        self.document: Dict[str, Any] = json.loads(native["document"])

    @property
    def verdict(self) -> str:
        """``PASS`` or ``FAIL``."""
        return "PASS" if self.passed else "FAIL"

    @cached_property
    def checks(self) -> "pd.DataFrame":
        """One row per check: kind, metric, expression, status, judged, limit, mean, ci95."""
        return _pandas().DataFrame(self.document["checks"])

    def __bool__(self) -> bool:
        return self.passed

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.passed else "#cf222e"
        return f"<p style='color:{colour}'><b>{self.verdict}</b></p><pre>{html.escape(self.table)}</pre>"

    def __repr__(self) -> str:
        return self.table


class TuneResult:
    """What ``faultline.tune`` found: the ``front`` (a DataFrame), every candidate, the files.

    Attributes:
        text: what ``faultline tune`` prints.
        files: every file of the output folder, path -> bytes (front.csv, front.json,
            candidates.csv, report.html, front-<k>.toml).
    """

    def __init__(self, text: str, files: Dict[str, bytes], out: Optional[str]) -> None:
        self.text = text
        self.files = files
        self.out = out

    @cached_property
    def front(self) -> "pd.DataFrame":
        """front.csv: the Pareto front, one row per candidate on it."""
        return _csv(self.files["front.csv"])

    @cached_property
    def candidates(self) -> "pd.DataFrame":
        """candidates.csv: every candidate and why it left the race."""
        return _csv(self.files["candidates.csv"])

    @cached_property
    def document(self) -> Dict[str, Any]:
        """front.json as a dict."""
        return json.loads(self.files["front.json"])

    def scenario(self, candidate: Any) -> str:
        """The runnable scenario of a front point (front-<candidate>.toml)."""
        return self.files[f"front-{candidate}.toml"].decode()

    def _repr_html_(self) -> str:
        return self.front.to_html(max_rows=60)

    def __repr__(self) -> str:
        return self.text


class ExploreResult:
    """What ``faultline.explore`` found: ``violated`` and the schedules written (``files``)."""

    def __init__(self, native: Dict[str, Any], files: Dict[str, bytes], out: Optional[str]) -> None:
        self.text: str = native["text"]
        self.violated: bool = native["violated"]
        self.files = files
        self.out = out

    def __bool__(self) -> bool:
        return not self.violated

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(self.text)}</pre>"

    def __repr__(self) -> str:
        return self.text


class ReplayResult:
    """One traced run: ``text`` the tree ``faultline replay`` prints, ``otlp`` the trace."""

    def __init__(self, native: Dict[str, Any]) -> None:
        self.text: str = native["text"]
        self.run: int = native["run"]
        self.otlp_bytes: bytes = native["otlp"]

    @cached_property
    def otlp(self) -> Dict[str, Any]:
        """The OTLP/JSON document as a dict."""
        return json.loads(self.otlp_bytes)

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(self.text)}</pre>"

    def __repr__(self) -> str:
        return self.text


class CalibrateResult:
    """A scenario made from traces.

    Attributes:
        scenario: the scenario's TOML, runnable as it is (``faultline.run(c.scenario)``, with
            or without ``out=``, from any folder): a dependency kept as observed has its
            latencies inline (``samples_ms = [...]``). The same values, in the same order, as
            the samples files the command line writes, so it simulates exactly as the written
            set; equal to the written .toml when no samples file was made.
        files: what ``faultline calibrate`` writes, path relative to the scenario's folder ->
            bytes: the .toml (which names its samples files, ``samples_file = ...``) and the
            samples files in ``<stem>-data/``.
        samples: the samples files alone.
        report: what the command prints (with ``out=``, what it wrote).
        out: the scenario file written, or None.
    """

    def __init__(self, native: Dict[str, Any], out: Optional[str] = None) -> None:
        import os

        self.scenario: str = native["scenario"]
        self.report: str = native["report"]
        self.samples: Dict[str, bytes] = dict(native["samples"])
        self.out = out
        name = os.path.basename(out) if out is not None else "calibrated.toml"
        self.files: Dict[str, bytes] = {name: native["text"].encode(), **self.samples}

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(self.report)}</pre>"

    def __repr__(self) -> str:
        return self.report
