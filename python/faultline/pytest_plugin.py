"""The pytest side of faultline: the ``faultline_gate`` fixture (registered by the package's
``pytest11`` entry point, so any test suite with faultline installed has it).

.. code-block:: python

    def test_one_retry_token_keeps_the_slos(faultline_gate):
        faultline_gate(
            "scenarios/meeting-analysis-incident.toml",
            candidate="resilient",
            baseline="resilient",
            candidate_overrides={"policy.resilient.budget.retry_tokens": 1},
            replications=4,
        )

A failed gate fails the test with the gate's table as its message (no traceback into
faultline); the fixture returns the :class:`faultline.GateResult` when it passes.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import pytest

import faultline


def _gate(scenario: Any, candidate: str, baseline: Optional[str] = None, **options: Any) -> faultline.GateResult:
    options.setdefault("progress", False)
    result = faultline.gate(scenario, candidate, baseline, **options)
    if not result.passed:
        pytest.fail(f"faultline gate failed: candidate `{candidate}`\n\n{result.table}", pytrace=False)
    return result


@pytest.fixture
def faultline_gate() -> Callable[..., faultline.GateResult]:
    """Gate a policy change on the scenario's SLOs: call it as :func:`faultline.gate`; the test
    fails with the gate's table when a check fails."""
    return _gate
