"""An exception the caller raises while a sweep works in memory (its progress function's, or
a signal handler's such as a timeout's) propagates as it was raised: never turned into
``faultline.Interrupted`` (a KeyboardInterrupt, which would end a pytest session), never
dropped when the sweep finishes in the same tick (the review's H1)."""

from __future__ import annotations

import signal

import pytest

import faultline
from conftest import INCIDENT, REPO

MMC = REPO / "scenarios" / "mmc.toml"
GRID = {"policy.resilient.budget.retry_tokens": [0, 1, 2]}


class CallbackBug(RuntimeError):
    pass


def test_a_progress_callback_s_exception_propagates_from_a_sweep() -> None:
    def bad(done: int, total: int) -> None:
        raise CallbackBug("bug in my callback")

    with pytest.raises(CallbackBug, match="bug in my callback") as caught:
        faultline.sweep(INCIDENT, GRID, replications=2, jobs=1, progress=bad)
    assert not isinstance(caught.value, KeyboardInterrupt)


def test_a_callback_s_exception_is_not_dropped_when_the_sweep_finishes_in_the_same_tick() -> None:
    # Two one-replication points of M/M/c finish well within the first 50 ms tick; the
    # callback raises on its first call, after the sweep has finished.
    def bad(done: int, total: int) -> None:
        raise CallbackBug("late")

    with pytest.raises(CallbackBug, match="late"):
        faultline.sweep(MMC, {"dependency.station.servers": [10, 11]}, replications=1, progress=bad)


def test_a_signal_handler_s_exception_propagates_from_a_sweep() -> None:
    class Timeout(Exception):
        pass

    def handler(signum: int, frame: object) -> None:
        raise Timeout("too long")

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 0.2)
    try:
        with pytest.raises(Timeout, match="too long"):
            faultline.sweep(INCIDENT, {"policy.resilient.budget.retry_tokens": [0, 1, 2, 3]},
                            replications=4, jobs=1, progress=False,
                            overrides={"simulation.duration_s": 36000})
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


