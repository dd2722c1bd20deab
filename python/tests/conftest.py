"""Shared ground of the package's tests: the repository, the starter scenario, the binary.

The binary is the reference: the tests compare the package's bytes with what
``faultline`` writes. It is FAULTLINE_BIN, or target/{debug,release}/faultline under
CARGO_TARGET_DIR or the repository; scripts/python-tests.sh builds it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]
STARTER = REPO / "src" / "experiment" / "starter.toml"
INCIDENT = REPO / "scenarios" / "meeting-analysis-incident.toml"


def find_binary() -> Path | None:
    given = os.environ.get("FAULTLINE_BIN")
    if given:
        return Path(given)
    targets = [Path(os.environ["CARGO_TARGET_DIR"])] if os.environ.get("CARGO_TARGET_DIR") else []
    targets.append(REPO / "target")
    for target in targets:
        for profile in ("release", "debug"):
            candidate = target / profile / "faultline"
            if candidate.exists():
                return candidate
    found = shutil.which("faultline")
    return Path(found) if found else None


@pytest.fixture(scope="session")
def binary() -> Path:
    found = find_binary()
    if found is None:
        pytest.fail("no faultline binary: set FAULTLINE_BIN or run `cargo build` first")
    return found


@pytest.fixture
def starter(tmp_path: Path) -> Path:
    """The starter scenario (what `faultline init` writes) as a file of the test's own."""
    path = tmp_path / "starter.toml"
    path.write_bytes(STARTER.read_bytes())
    return path


def run_binary(binary: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), *args], cwd=cwd, capture_output=True, text=True)


def folder_bytes(folder: Path) -> dict:
    """Every file of an output folder but its manifest, path -> bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "manifest.json"
    }
