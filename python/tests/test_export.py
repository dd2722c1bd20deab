"""`faultline export` read by the Prometheus project's own Python parsers (prometheus_client):
the 0.0.4 text and the OpenMetrics text hold the same families and samples, every counter's
name ends in _total, and the OpenMetrics timestamps are the 0.0.4 ones in seconds."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import INCIDENT
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families


def test_both_texts_parse_to_the_same_samples(binary: Path, tmp_path: Path) -> None:
    folder = tmp_path / "incident"
    subprocess.run([str(binary), "run", str(INCIDENT), "--replications", "2", "-o", str(folder)], check=True, capture_output=True)

    def export(fmt: str) -> str:
        return subprocess.run([str(binary), "export", str(folder), "--format", fmt], check=True, capture_output=True, text=True).stdout

    prom = list(text_string_to_metric_families(export("prometheus")))
    om = list(openmetrics_families(export("openmetrics")))
    assert len(prom) == len(om) > 100
    prom_samples = [(s.name, tuple(sorted(s.labels.items())), s.value, s.timestamp) for f in prom for s in f.samples]
    om_samples = [(s.name, tuple(sorted(s.labels.items())), s.value, float(s.timestamp)) for f in om for s in f.samples]
    assert len(prom_samples) == len(om_samples)
    # prometheus_client reads a 0.0.4 timestamp (ms) as seconds too.
    assert sorted(prom_samples) == sorted(om_samples)
    for family in om:
        assert family.type in ("counter", "gauge"), family.name
        if family.type == "counter":
            assert all(s.name == family.name + "_total" for s in family.samples), family.name
    on_time = [s for f in om for s in f.samples if s.name == "faultline_on_time_goodput_total" and s.labels["policy"] == "naive"]
    assert on_time[0].value == 0 and on_time[-1].value > 10_000
