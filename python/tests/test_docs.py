"""docs/python.md's and README's Python examples run as written (from a folder of their own that sees the
repository's scenarios), so the documentation cannot drift from the package."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from conftest import REPO
from faultline import pytest_plugin

DOCS = [REPO / "docs" / "python.md", REPO / "README.md"]


def python_blocks() -> list:
    """(document, number, code) of every ```python block."""
    return [
        (doc, i + 1, code)
        for doc in DOCS
        for i, code in enumerate(re.findall(r"```python\n(.*?)```", doc.read_text(), flags=re.S))
    ]


def test_the_guide_and_readme_have_examples() -> None:
    counts = {doc.name: sum(1 for d, _, _ in python_blocks() if d == doc) for doc in DOCS}
    assert counts["python.md"] >= 5 and counts["README.md"] >= 1, counts


@pytest.mark.parametrize("doc,number,code", python_blocks(), ids=lambda v: v.name if isinstance(v, Path) else None)
def test_an_example_runs(doc: Path, number: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "scenarios").symlink_to(REPO / "scenarios")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(code, f"{doc}: example {number}", "exec"), namespace)
    # A pytest example is a test function taking the fixture: run it as pytest would.
    for name, value in namespace.items():
        if name.startswith("test_") and callable(value):
            arguments = inspect.signature(value).parameters
            value(**{a: pytest_plugin._gate for a in arguments if a == "faultline_gate"})
