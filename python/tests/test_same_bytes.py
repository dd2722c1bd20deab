"""The package and the binary give the same bytes for the same scenario, seed and options,
whatever the number of threads: the package calls the library the command line calls."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import faultline
from conftest import STARTER, folder_bytes, run_binary


@pytest.mark.parametrize("jobs", [1, 2])
def test_run_gives_the_binary_s_files(binary: Path, starter: Path, tmp_path: Path, jobs: int) -> None:
    out = tmp_path / "cli"
    done = run_binary(binary, "run", str(starter), "--seed", "5", "--replications", "3", "--out", str(out), "-j", "2")
    assert done.returncode == 0, done.stderr
    expected = folder_bytes(out)
    result = faultline.run(starter, seed=5, replications=3, jobs=jobs, progress=False)
    assert sorted(result.files) == sorted(expected)
    for name, data in expected.items():
        assert result.files[name] == data, f"{name} differs from the binary's"
    # The figures read from those bytes are the binary's: a table of one policy's rows.
    assert list(result.replications["policy"].unique()) == ["naive", "resilient"]
    assert len(result.replications) == 2 * 3
    assert result.summary["resilient"]["seed"] == 5


def test_run_prints_what_the_binary_prints_but_the_files(binary: Path, starter: Path, tmp_path: Path) -> None:
    out = tmp_path / "cli"
    done = run_binary(binary, "run", str(starter), "--replications", "2", "--out", str(out))
    result = faultline.run(starter, replications=2, progress=False)
    cli_lines = done.stdout.splitlines()
    assert cli_lines[-1].startswith("wrote ")
    assert result.text.splitlines() == cli_lines[:-1]


def test_run_with_an_output_folder_writes_the_binary_s_set(binary: Path, starter: Path, tmp_path: Path) -> None:
    run_binary(binary, "run", str(starter), "--replications", "2", "--out", str(tmp_path / "cli"))
    result = faultline.run(starter, replications=2, out=tmp_path / "py", progress=False)
    assert folder_bytes(tmp_path / "py") == folder_bytes(tmp_path / "cli")
    assert (tmp_path / "py" / "manifest.json").exists()
    assert result.written and all(Path(p).exists() for p in result.written)


def test_nothing_is_written_without_an_output_folder(starter: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    faultline.run(starter, replications=2, progress=False)
    faultline.sweep(starter, {"policy.resilient.budget.retry_tokens": [0, 1]}, replications=2, progress=False)
    assert list(work.iterdir()) == []


@pytest.mark.parametrize("jobs", [1, 2])
def test_sweep_gives_the_binary_s_files(binary: Path, starter: Path, tmp_path: Path, jobs: int) -> None:
    out = tmp_path / "cli"
    done = run_binary(
        binary, "sweep", str(starter),
        "--param", "policy.resilient.budget.retry_tokens=0,1,2",
        "--param", "workflow.support-answer.arrivals.rate_per_s=2,4",
        "--replications", "2", "--seed", "9", "--out", str(out),
    )
    assert done.returncode == 0, done.stderr
    result = faultline.sweep(
        starter,
        {"policy.resilient.budget.retry_tokens": [0, 1, 2], "workflow.support-answer.arrivals.rate_per_s": [2, 4]},
        replications=2, seed=9, jobs=jobs, progress=False,
    )
    assert result.files == folder_bytes(out)
    assert len(result.table) == 3 * 2 * 2  # points x policies
    assert result.text.splitlines() == done.stdout.splitlines()[:-1]


def test_sweep_with_an_output_folder_is_the_command_line_s(binary: Path, starter: Path, tmp_path: Path) -> None:
    params = ["--param", "policy.resilient.budget.retry_tokens=0,2"]
    run_binary(binary, "sweep", str(starter), *params, "--replications", "2", "--out", str(tmp_path / "cli"))
    result = faultline.sweep(starter, ["policy.resilient.budget.retry_tokens=0,2"], replications=2,
                             out=tmp_path / "py", progress=False)
    assert folder_bytes(tmp_path / "py") == folder_bytes(tmp_path / "cli")
    assert len(result.table) == 2 * 2


def test_a_scenario_as_text_or_dict_gives_the_file_s_figures(starter: Path) -> None:
    from_file = faultline.run(starter, replications=2, progress=False)
    from_text = faultline.run(STARTER.read_text(), replications=2, progress=False)

    def same_figures(other: faultline.RunResult, name: str) -> None:
        for path, data in from_file.files.items():
            if path.endswith(".csv"):
                assert other.files[path] == data, path
        for policy, summary in from_file.summary.items():
            # A text or a dict has no file name to name the scenario by.
            assert other.summary[policy] == {**summary, "scenario": name}

    same_figures(from_text, "<string>")
    tomllib = pytest.importorskip("tomllib")
    same_figures(faultline.run(tomllib.loads(STARTER.read_text()), replications=2, progress=False), "<dict>")


def test_gate_judges_as_the_binary(binary: Path, starter: Path) -> None:
    done = run_binary(binary, "gate", str(starter), "--candidate", "resilient", "--baseline", "naive")
    result = faultline.gate(starter, "resilient", "naive", progress=False)
    assert result.table == done.stdout
    assert result.passed == (done.returncode == 0)
    json_done = run_binary(binary, "gate", str(starter), "--candidate", "resilient", "--baseline", "naive", "--format", "json")
    import json

    assert result.document == json.loads(json_done.stdout)
    assert len(result.checks) == len(result.document["checks"])


def test_replay_gives_the_binary_s_trace(binary: Path, starter: Path, tmp_path: Path) -> None:
    out = tmp_path / "trace.json"
    done = run_binary(binary, "replay", str(starter), "-p", "naive", "--run", "3", "-o", str(out))
    assert done.returncode == 0, done.stderr
    result = faultline.replay(starter, "naive", run=3)
    assert result.otlp_bytes == out.read_bytes()
    assert result.run == 3
    assert result.text.splitlines()[:-1] == done.stdout.splitlines()[:-1]


def test_the_incident_from_python_is_the_binary_s(binary: Path, tmp_path: Path) -> None:
    from conftest import INCIDENT

    out = tmp_path / "cli"
    done = run_binary(binary, "run", str(INCIDENT), "--replications", "2", "-p", "resilient", "--out", str(out))
    assert done.returncode == 0, done.stderr
    result = faultline.run(INCIDENT, replications=2, policies="resilient", progress=False, jobs=os.cpu_count())
    assert result.files == folder_bytes(out)
