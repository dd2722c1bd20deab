"""The rest of the review (/work/notes/review34.md): M4 (a calibrated scenario runs as it is),
`run`'s `metrics=` and `check_slo=`, L1, L6, L8, L9; each test fails on the package before
the fix."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import faultline
from conftest import REPO, folder_bytes, run_binary

MMC = REPO / "scenarios" / "mmc.toml"
INCIDENT = REPO / "scenarios" / "meeting-analysis-incident.toml"
SHORT = {"simulation.duration_s": 300, "simulation.warmup_s": 50}


# M4 -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    starter = REPO / "src" / "experiment" / "starter.toml"
    traced = faultline.run(starter, replications=2, traces=50, policies="resilient", progress=False)
    path = tmp_path_factory.mktemp("traces") / "traces.otlp.jsonl"
    path.write_bytes(traced.files["resilient/traces.otlp.jsonl"])
    return path


def test_a_calibrated_scenario_with_samples_runs_without_out(traces: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    made = faultline.calibrate(traces, fit="empirical")
    assert made.samples, "fit='empirical' keeps the observed latencies in samples files"
    assert "samples_file" not in made.scenario and "samples_ms = [" in made.scenario
    # The file the command line would write names its samples files; the scenario does not.
    assert b"samples_file = " in made.files["calibrated.toml"]
    assert set(made.files) == {"calibrated.toml", *made.samples}
    # Nothing was written, so the report says nothing was.
    assert "wrote " not in made.report and "next: faultline run" not in made.report
    # From a folder with nothing in it: the text needs no file beside it.
    work = tmp_path / "elsewhere"
    work.mkdir()
    monkeypatch.chdir(work)
    in_memory = faultline.run(made.scenario, replications=2, seed=3, progress=False)
    assert list(work.iterdir()) == []
    # The same figures as the set the command line writes: replications.csv has no name in it.
    written = faultline.calibrate(traces, fit="empirical", out=tmp_path / "cal" / "calibrated.toml")
    assert "wrote " in written.report
    from_files = faultline.run(tmp_path / "cal" / "calibrated.toml", replications=2, seed=3, progress=False)
    assert in_memory.files["calibrated/replications.csv"] == from_files.files["calibrated/replications.csv"]
    assert in_memory.files["calibrated/timeseries.csv"] == from_files.files["calibrated/timeseries.csv"]
    # files are what was written, byte for byte.
    assert written.files == folder_bytes(tmp_path / "cal")
    # The runnable text is the same with or without out=.
    assert written.scenario == made.scenario


def test_a_calibrated_scenario_without_samples_is_the_written_file(traces: Path, tmp_path: Path) -> None:
    made = faultline.calibrate(traces, fit="lognormal", out=tmp_path / "c.toml")
    assert made.samples == {}
    assert made.scenario.encode() == (tmp_path / "c.toml").read_bytes() == made.files["c.toml"]


# run(metrics=, check_slo=) ----------------------------------------------------------------

def slo_scenario(tmp_path: Path, limit_ms: int) -> Path:
    path = tmp_path / f"mmc-slo-{limit_ms}.toml"
    path.write_text(MMC.read_text() + f'\n[slo]\n"run_latency_ms.p95" = ["< {limit_ms}"]\n')
    return path


def cli_run(binary: Path, scenario: Path, out: Path, *more: str):
    sets = [a for k, v in SHORT.items() for a in ("--set", f"{k}={v}")]
    return run_binary(binary, "run", str(scenario), "--replications", "2", *sets, "--out", str(out), *more)


def test_metrics_picks_the_rows_as_the_command_line_does(binary: Path, tmp_path: Path) -> None:
    done = cli_run(binary, MMC, tmp_path / "cli", "--metrics", "run_latency_ms.p99,queue_rejected_total")
    assert done.returncode == 0, done.stderr
    for metrics in ("run_latency_ms.p99,queue_rejected_total", ["run_latency_ms.p99", "queue_rejected_total"]):
        r = faultline.run(MMC, replications=2, overrides=SHORT, metrics=metrics, progress=False)
        assert r.text.splitlines() == done.stdout.splitlines()[:-1]
        assert "run_latency_ms.p99" in r.text and "auto_completion_ratio" not in r.text
    everything = faultline.run(MMC, replications=2, overrides=SHORT, metrics="all", progress=False)
    assert "auto_completion_ratio" in everything.text and "queue_rejected_total" in everything.text
    with pytest.raises(faultline.InputError, match="no_such_metric"):
        faultline.run(MMC, replications=2, overrides=SHORT, metrics="no_such_metric", progress=False)


def test_check_slo_raises_where_the_command_line_exits_99(binary: Path, tmp_path: Path) -> None:
    failing = slo_scenario(tmp_path, 1)
    done = cli_run(binary, failing, tmp_path / "cli", "--check-slo")
    assert done.returncode == 99, done.stderr
    with pytest.raises(faultline.SloFailed) as raised:
        faultline.run(failing, replications=2, overrides=SHORT, check_slo=True, out=tmp_path / "py",
                      progress=False)
    result = raised.value.result
    assert isinstance(raised.value, AssertionError)
    assert result.failed_thresholds == 1
    assert result.text.splitlines()[:-1] == done.stdout.splitlines()[:-1]
    assert str(raised.value).startswith("check_slo: 1 [slo] threshold verdict(s) failed")
    # As the command line, the files are written before it fails.
    assert folder_bytes(tmp_path / "py") == folder_bytes(tmp_path / "cli")
    # Without check_slo the same run returns, its verdict counted.
    quiet = faultline.run(failing, replications=2, overrides=SHORT, progress=False)
    assert quiet.failed_thresholds == 1 and "--check-slo makes a failed threshold exit 99" in quiet.text


def test_check_slo_returns_when_every_threshold_passes(binary: Path, tmp_path: Path) -> None:
    passing = slo_scenario(tmp_path, 100000)
    done = cli_run(binary, passing, tmp_path / "cli", "--check-slo")
    assert done.returncode == 0, done.stderr
    r = faultline.run(passing, replications=2, overrides=SHORT, check_slo=True, progress=False)
    assert r.failed_thresholds == 0
    assert r.text.splitlines() == done.stdout.splitlines()[:-1]
    assert "--check-slo: every threshold passed" in r.text


def test_check_slo_without_thresholds_is_an_input_error() -> None:
    with pytest.raises(faultline.InputError, match="no \\[slo\\] thresholds"):
        faultline.run(MMC, replications=2, overrides=SHORT, check_slo=True, progress=False)
    with pytest.raises(TypeError, match="check_slo"):
        faultline.run(MMC, check_slo="yes", progress=False)


# L6: --format json, files ---------------------------------------------------------------

def test_the_json_document_is_the_command_line_s_format_json(binary: Path, tmp_path: Path) -> None:
    done = cli_run(binary, MMC, tmp_path / "cli", "--format", "json")
    assert done.returncode == 0, done.stderr
    r = faultline.run(MMC, replications=2, overrides=SHORT, progress=False)
    assert r.json == done.stdout
    assert r.document == json.loads(done.stdout)
    assert r.document["plain"]["metrics"] == r.summary["plain"]["metrics"]
    assert "manifest.json" not in r.files
    written = faultline.run(MMC, replications=2, overrides=SHORT, out=tmp_path / "py", progress=False)
    assert written.written and (tmp_path / "py" / "manifest.json").exists()


# L1: no deleted temporary paths in the text -----------------------------------------------

def test_tune_and_explore_text_name_no_temporary_folder(starter: Path) -> None:
    tuned = faultline.tune(starter, "resilient", {"policy.resilient.budget.retry_tokens": "0..1"},
                           "min:cost_per_success", replications=2, initial_replications=2, progress=False)
    assert "/tmp" not in tuned.text and "faultline-tune-" not in tuned.text
    assert not any(line.startswith("wrote ") for line in tuned.text.splitlines())
    explored = faultline.explore(INCIDENT, "naive", schedules=3, replications=1, progress=False,
                                 overrides={"simulation.duration_s": 600})
    assert "faultline-explore-" not in explored.text
    assert not any(line.startswith("wrote ") for line in explored.text.splitlines())
    if explored.violated:
        # The shrunk schedule the replay line names is one of files' keys.
        names = re.findall(r"files\['([^']+)'\]", explored.text)
        assert names and all(n in explored.files for n in names), explored.text


def test_tune_shards_need_an_output_folder(starter: Path) -> None:
    for keywords, message in (({"shard": "0/2"}, "shard= needs out="),
                              ({"merge_shards": True}, "merge_shards=True needs out="),
                              ({"resume": True}, "resume=True needs out=")):
        with pytest.raises(faultline.InputError, match=re.escape(message)):
            faultline.tune(starter, "resilient", {"policy.resilient.budget.retry_tokens": "0..1"},
                           "min:cost_per_success", progress=False, **keywords)


# L8: smaller input checks ----------------------------------------------------------------

def test_keywords_of_the_wrong_kind_are_named() -> None:
    with pytest.raises(TypeError, match="^progress: "):
        faultline.run(MMC, replications=1, progress="yes")
    with pytest.raises(TypeError, match="^front_tolerance: a number, not str"):
        faultline.gate(INCIDENT, "resilient", "naive", front_tolerance="x", progress=False)
    with pytest.raises(faultline.InputError, match="at least one OTLP/JSON traces file"):
        faultline.calibrate([])
    with pytest.raises(TypeError, match=r"space\['policy.resilient.budget.retry_tokens'\]: a range as a string"):
        faultline.tune(INCIDENT, "resilient", {"policy.resilient.budget.retry_tokens": range(0, 3)},
                       "min:cost_per_success", progress=False)


def test_one_line_of_toml_says_how_text_is_told_from_a_path() -> None:
    for text in ("[simulation]", ""):
        with pytest.raises(faultline.ScenarioError, match="holds a newline"):
            faultline.validate(text)


def test_a_swept_string_holding_a_comma_is_refused() -> None:
    with pytest.raises(faultline.InputError, match="holds a comma"):
        faultline.sweep(MMC, {"policy.plain.retry.max_attempts": ["a,b", "c"]}, progress=False)


def test_a_string_override_is_a_string_even_when_it_looks_like_a_number() -> None:
    # As a number the run would be valid; as the string "300" it is a type error.
    faultline.run(MMC, replications=1, overrides={"simulation.duration_s": 300}, progress=False)
    with pytest.raises(faultline.ScenarioError, match='string "300"'):
        faultline.run(MMC, replications=1, overrides={"simulation.duration_s": "300"}, progress=False)
    with pytest.raises(faultline.ScenarioError, match='string "true"'):
        faultline.run(MMC, replications=1, overrides={"policy.plain.deadline_propagation": "true"},
                      progress=False)
    # A string that reads back as itself is written as the command line would write it.
    r = faultline.run(MMC, replications=1, overrides={**SHORT, "dependency.station.service_time.dist": "exponential"},
                      progress=False)
    assert "dependency.station.service_time.dist=exponential" in r.summary["plain"]["overrides"]


# L9: the notebook table -------------------------------------------------------------------

def test_the_notebook_table_has_no_exponents_and_clips_ratios() -> None:
    r = faultline.run(INCIDENT, replications=2, overrides={"simulation.duration_s": 900}, progress=False)
    page = r._repr_html_()
    table = page[: page.index("<details>")]
    assert not re.search(r"\de[+-]\d", table), table
    for metric in ("auto_completion_ratio", "safe_outcome_ratio", "deadline_exceeded_ratio"):
        row = re.search(rf"<th style='text-align:left'>{metric}</th>(.*?)</tr>", table).group(1)
        for low, high in re.findall(r"\[([-\d.]+), ([-\d.]+)\]", row):
            assert 0 <= float(low) <= float(high) <= 1, (metric, row)
