"""The findings of the adversarial review of the package (issue 34), each as a test that
failed before its fix (H1, a caller's exception inside a sweep, is test_sweep_exceptions.py):
NumPy numbers and arrays are numbers and lists (H2); a wrong number keyword names the keyword
(M1); a sweep's resume and shard need ``out=`` (M2); a single string for a list keyword is a
one-item list (L3); a missing scenario file is a FileNotFoundError (L4)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import faultline
from conftest import INCIDENT, REPO

MMC = REPO / "scenarios" / "mmc.toml"
GRID = {"policy.resilient.budget.retry_tokens": [0, 1, 2]}


def test_numpy_values_are_numbers_and_lists() -> None:
    np = pytest.importorskip("numpy")
    plain = faultline.sweep(MMC, {"simulation.warmup_s": [50.0, 100.0]}, replications=1, seed=3, progress=False)
    spaced = faultline.sweep(MMC, {"simulation.warmup_s": np.linspace(50, 100, 2)}, replications=1,
                             seed=np.int64(3), progress=False)
    assert spaced.files["sweep.csv"] == plain.files["sweep.csv"]
    ints = faultline.sweep(MMC, {"dependency.station.servers": [10, 11]}, replications=1, progress=False)
    ranged = faultline.sweep(MMC, {"dependency.station.servers": np.arange(10, 12)}, replications=1,
                             progress=False)
    assert ranged.files["sweep.csv"] == ints.files["sweep.csv"]
    a = faultline.run(MMC, overrides={"dependency.station.servers": 11, "simulation.warmup_s": 60.5},
                      seed=3, replications=1, jobs=1, progress=False)
    b = faultline.run(MMC, overrides={"dependency.station.servers": np.int64(11),
                                      "simulation.warmup_s": np.float64(60.5)},
                      seed=np.uint64(3), replications=np.int32(1), jobs=np.int64(1), progress=False)
    assert a.files == b.files


@pytest.mark.parametrize(
    "keywords, error, words",
    [
        ({"seed": -1}, ValueError, "seed"),
        ({"seed": 7.0}, TypeError, "seed"),
        ({"seed": "7"}, TypeError, "seed"),
        ({"seed": 2**70}, ValueError, "seed"),
        ({"replications": -1}, ValueError, "replications"),
        ({"replications": 1.5}, TypeError, "replications"),
        ({"traces": -1}, ValueError, "traces"),
        ({"jobs": 2.0}, TypeError, "jobs"),
        ({"seed": True}, TypeError, "seed"),
    ],
)
def test_a_wrong_number_keyword_names_the_keyword(keywords: dict, error: type, words: str) -> None:
    with pytest.raises(error) as caught:
        faultline.run(MMC, progress=False, **keywords)
    message = str(caught.value)
    assert message.startswith(words) and "line 1 column" not in message and "_native" not in message


def test_explore_s_max_faults_is_checked_by_name() -> None:
    with pytest.raises(ValueError, match="^max_faults"):
        faultline.explore(INCIDENT, "naive", max_faults=-1, progress=False)


@pytest.mark.parametrize("keywords", [{"resume": True}, {"shard": "0/2"}])
def test_resume_and_shard_need_an_output_folder(tmp_path: Path, keywords: dict) -> None:
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        with pytest.raises(faultline.InputError, match="out="):
            faultline.sweep(MMC, {"dependency.station.servers": [10, 11]}, replications=1,
                            progress=False, **keywords)
    finally:
        os.chdir(here)
    assert list(tmp_path.iterdir()) == []


def test_a_single_string_is_a_one_item_list() -> None:
    one = faultline.sweep(MMC, {"dependency.station.servers": [10, 11]}, replications=1,
                          metrics="run_latency_ms.p95", progress=False)
    listed = faultline.sweep(MMC, {"dependency.station.servers": [10, 11]}, replications=1,
                             metrics=["run_latency_ms.p95"], progress=False)
    assert one.text == listed.text
    ex = faultline.explore(INCIDENT, "naive", schedules=2, kinds="latency", replications=1, progress=False)
    listed_ex = faultline.explore(INCIDENT, "naive", schedules=2, kinds=["latency"], replications=1,
                                  progress=False)
    assert ex.violated == listed_ex.violated


def test_a_missing_scenario_file_is_a_file_not_found_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as caught:
        faultline.run(tmp_path / "nope.toml", progress=False)
    assert isinstance(caught.value, faultline.ScenarioError)
    assert caught.value.file == str(tmp_path / "nope.toml")
    with pytest.raises(FileNotFoundError):
        faultline.validate(str(tmp_path / "nope.toml"))


def test_a_dict_scenario_s_error_has_no_line_or_column() -> None:
    with pytest.raises(faultline.ScenarioError) as caught:
        faultline.validate({"simulation": {"duration_s": "x"}})
    e = caught.value
    assert (e.file, e.line, e.column, e.field) == ("<dict>", None, None, "simulation.duration_s")
    assert str(e).startswith("<dict>: simulation.duration_s: invalid type")


def test_exceptions_are_named_from_the_package() -> None:
    for name in ("ScenarioError", "InputError", "OutputError", "InternalError", "Interrupted", "GateFailed",
                 "FaultlineError", "ScenarioFileNotFound"):
        assert getattr(faultline, name).__module__ == "faultline"


def test_a_written_sweep_counts_grid_points_not_rows(tmp_path: Path) -> None:
    grid = {"policy.resilient.budget.retry_tokens": [0, 1, 2]}
    memory = faultline.sweep(INCIDENT, grid, replications=1, progress=False)
    written = faultline.sweep(INCIDENT, grid, replications=1, out=tmp_path / "o", progress=False)
    assert len(written.table) == 6  # 3 points x 2 policies
    assert (written.finished, written.points) == (memory.finished, memory.points) == (3, 3)
