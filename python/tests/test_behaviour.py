"""What a Python developer meets: exceptions with the file, line, column and field; Ctrl-C
that keeps a sweep's finished points; the GIL released while simulating; notebook output,
help(), the pytest fixture and the other commands."""

from __future__ import annotations

import os
import pydoc
import signal
import threading
import time
from pathlib import Path

import pytest

import faultline
from conftest import STARTER

# Ten simulated hours a replication (about 25 ms of work each): slow enough to interrupt.
LONG = {"simulation.duration_s": 36000}
# A grid of 12 points, 2 policies each.
SLOW_GRID = {
    "policy.resilient.budget.retry_tokens": [0, 1, 2, 3],
    "workflow.support-answer.arrivals.rate_per_s": [2, 3, 4],
}


def test_a_bad_value_names_its_line_column_and_field() -> None:
    text = STARTER.read_text().replace("servers = 30 ", "servers = -3 ", 1)
    assert text != STARTER.read_text()
    with pytest.raises(faultline.ScenarioError) as caught:
        faultline.validate(text)
    e = caught.value
    line = next(i for i, l in enumerate(text.splitlines(), 1) if "servers = -3" in l)
    assert (e.file, e.line, e.field) == ("<string>", line, "dependency[0].servers")
    assert e.column is not None and e.column > 1
    assert str(e).startswith(f"<string>:{line}:{e.column}")
    assert isinstance(e, ValueError)


def test_a_bad_override_names_its_argument(starter: Path) -> None:
    with pytest.raises(faultline.ScenarioError) as caught:
        faultline.run(starter, overrides={"dependency.model.servers": 0}, progress=False)
    e = caught.value
    assert e.argument == "--set dependency.model.servers=0"
    assert e.file is None and e.field is not None and "servers" in e.field


def test_a_missing_file_and_an_unknown_policy(tmp_path: Path, starter: Path) -> None:
    with pytest.raises(faultline.ScenarioError) as missing:
        faultline.run(tmp_path / "nowhere.toml", progress=False)
    assert missing.value.file == str(tmp_path / "nowhere.toml")
    with pytest.raises(faultline.InputError, match="policy"):
        faultline.run(starter, policies="optimistic", progress=False)
    with pytest.raises(faultline.InputError, match="jobs"):
        faultline.run(starter, jobs=0, progress=False)


def test_validate_returns_what_the_command_prints(starter: Path) -> None:
    assert faultline.validate(starter).startswith(f"{starter}: ok (5 dependencies")


def _rows(table_bytes: bytes) -> list:
    return table_bytes.decode().splitlines()


def test_an_interrupted_sweep_keeps_its_finished_points(starter: Path) -> None:
    full = faultline.sweep(starter, SLOW_GRID, replications=3, jobs=1, progress=False)
    seen = []

    def stop_after_two_points(done: int, total: int) -> None:
        seen.append(done)
        if done >= 2 * 2 * 3:  # two points' simulations
            raise KeyboardInterrupt

    with pytest.raises(faultline.Interrupted) as caught:
        faultline.sweep(starter, SLOW_GRID, replications=3, jobs=1, progress=stop_after_two_points)
    part = caught.value.result
    assert part.interrupted and 2 <= part.finished < part.points == 12
    assert len(part.table) == 2 * part.finished
    # The finished points' rows are the full sweep's rows, byte for byte.
    full_rows = _rows(full.files["sweep.csv"])
    assert all(row in full_rows for row in _rows(part.files["sweep.csv"]))
    assert isinstance(caught.value, KeyboardInterrupt)


@pytest.fixture
def ctrl_c_raises() -> object:
    """Python's own Ctrl-C handler for the test: a process started in the background by a
    shell without job control inherits SIGINT ignored, and Python then never raises
    KeyboardInterrupt (a user's terminal or notebook has the handler)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("ctrl_c_raises")
def test_ctrl_c_stops_a_sweep(starter: Path) -> None:
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(faultline.Interrupted) as caught:
            faultline.sweep(starter, SLOW_GRID, replications=4, overrides=LONG, jobs=1, progress=False)
    finally:
        timer.cancel()
    assert caught.value.result.finished < 12
    assert time.monotonic() - started < 30


@pytest.mark.usefixtures("ctrl_c_raises")
def test_ctrl_c_stops_a_run(starter: Path) -> None:
    timer = threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            faultline.run(starter, replications=20, overrides=LONG, jobs=1, progress=False)
    finally:
        timer.cancel()


@pytest.mark.usefixtures("ctrl_c_raises")
def test_ctrl_c_stops_one_long_simulation_at_a_window(starter: Path) -> None:
    # One replication of 1 000 simulated hours: about 15 s of work a policy if it ran to its
    # end; its hourly windows are each about 15 ms, and Ctrl-C stops it at the next one.
    very_long = {"simulation.duration_s": 3_600_000, "simulation.timeseries_window_s": 3600}
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            faultline.run(starter, replications=1, overrides=very_long, jobs=1, progress=False)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 5


def test_the_gil_is_released_while_simulating(starter: Path) -> None:
    finished = threading.Event()

    def work() -> None:
        faultline.run(starter, replications=4, overrides=LONG, jobs=1, progress=False)
        finished.set()

    worker = threading.Thread(target=work)
    spins = 0
    started = time.monotonic()
    worker.start()
    while not finished.is_set():
        spins += 1  # Python bytecode on this thread, while the other simulates
        time.sleep(0.001)
    worker.join()
    elapsed = time.monotonic() - started
    # Held for the whole run, the GIL would allow a handful of spins (one per 50 ms check).
    assert elapsed > 0.2
    assert spins > elapsed / 0.01, (spins, elapsed)


def test_progress_reaches_the_total(starter: Path) -> None:
    calls = []
    faultline.run(starter, replications=3, jobs=1, progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (6, 6)
    assert all(d <= t for d, t in calls)


def test_notebook_output_and_help(starter: Path) -> None:
    result = faultline.run(starter, replications=2, progress=False)
    page = result._repr_html_()
    assert "<table" in page and "auto_completion_ratio" in page and "iframe" in page
    gate = faultline.gate(starter, "resilient", "naive", replications=2, progress=False)
    assert "PASS" in gate._repr_html_() or "FAIL" in gate._repr_html_()
    text = pydoc.render_doc(faultline.run)
    for option in ("overrides", "replications", "jobs", "out", "progress"):
        assert option in text
    assert (Path(faultline.__file__).parent / "py.typed").exists()


def test_assert_gate_fails_with_the_gate_s_table(starter: Path) -> None:
    with pytest.raises(faultline.GateFailed) as caught:
        faultline.assert_gate(starter, "naive", thresholds_only=True, replications=2, progress=False)
    message = str(caught.value)
    assert "FAIL" in message and "duplicate_effect_total" in message
    assert message == caught.value.result.table
    assert faultline.assert_gate(starter, "resilient", "naive", replications=2, progress=False).passed


def test_the_pytest_fixture_fails_a_test_with_the_table(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        f"""
        def test_naive_keeps_the_slos(faultline_gate):
            faultline_gate({str(STARTER)!r}, "naive", thresholds_only=True, replications=2)

        def test_resilient_keeps_the_slos(faultline_gate):
            assert faultline_gate({str(STARTER)!r}, "resilient", "naive", replications=2).passed
        """
    )
    outcome = pytester.runpytest()  # the entry point loads the fixture
    outcome.assert_outcomes(passed=1, failed=1)
    outcome.stdout.fnmatch_lines(["*faultline gate failed: candidate `naive`*", "*FAIL*duplicate_effect_total*"])


def test_tune_explore_and_calibrate(starter: Path, tmp_path: Path) -> None:
    tuned = faultline.tune(
        starter, "resilient", {"policy.resilient.budget.retry_tokens": "0..2"},
        ["max:auto_completion_ratio", "min:cost_per_success"], replications=4, progress=False,
    )
    assert len(tuned.front) >= 1 and "front.json" in tuned.files
    assert any(name.startswith("front-") and name.endswith(".toml") for name in tuned.files)
    explored = faultline.explore(starter, "resilient", schedules=3, replications=2, progress=False)
    assert isinstance(explored.violated, bool) and "schedule" in explored.text
    traced = faultline.run(starter, replications=2, traces=50, policies="resilient", progress=False)
    traces = tmp_path / "traces.otlp.jsonl"
    traces.write_bytes(traced.files["resilient/traces.otlp.jsonl"])
    made = faultline.calibrate(traces)
    assert "[[dependency]]" in made.scenario
    assert not (Path.cwd() / "calibrated.toml").exists() or False
    written = faultline.calibrate(traces, out=tmp_path / "cal" / "calibrated.toml")
    assert (tmp_path / "cal" / "calibrated.toml").read_bytes() == written.files["calibrated.toml"]
    assert faultline.validate(tmp_path / "cal" / "calibrated.toml").endswith("\n")
