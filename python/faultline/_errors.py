"""The package's exceptions: a command's error as the command line prints it, with its parts."""

from __future__ import annotations

from typing import Any, Optional


class FaultlineError(Exception):
    """Any error a faultline command reports; ``str(e)`` is what the command line prints."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ScenarioError(FaultlineError, ValueError):
    """Bad input located in a scenario or an argument.

    ``file``, ``line`` and ``column`` say where in the file (``None`` when the error came
    from an argument, named by ``argument``, such as ``--set dependency.model.servers=0``);
    ``field`` is the field's path, such as ``dependency[2].service_time.p95_ms``.

    >>> import faultline
    >>> try:
    ...     faultline.validate("[simulation]\\nduration_s = -1\\n")
    ... except faultline.ScenarioError as e:
    ...     print(e.line, e.field)
    2 simulation.duration_s
    """

    def __init__(
        self,
        message: str,
        *,
        file: Optional[str] = None,
        line: Optional[int] = None,
        column: Optional[int] = None,
        argument: Optional[str] = None,
        field: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.file = file
        self.line = line
        self.column = column
        self.argument = argument
        self.field = field


class ScenarioFileNotFound(ScenarioError, FileNotFoundError):
    """A scenario file that does not exist: a :class:`ScenarioError` (``file`` names it) and
    a ``FileNotFoundError``, so ``except OSError`` catches it as it catches ``open()``'s."""

    def __init__(self, message: str, **where: Any) -> None:
        super().__init__(message, **where)
        self.errno = 2
        self.filename = where.get("file")
        self.strerror = "No such file or directory"

    def __str__(self) -> str:
        # What the command line prints, not OSError's "[Errno 2] ...".
        return self.message


class InputError(FaultlineError, ValueError):
    """Invalid input that is not located in a file: an option, a policy name, a bad grid."""


class OutputError(FaultlineError, OSError):
    """A file could not be read or written (the command line's exit 1)."""


class InternalError(FaultlineError, RuntimeError):
    """faultline failed inside (a bug: please report it); the command stopped cleanly."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped a sweep: ``result`` holds the grid points it finished.

    >>> try:                                      # doctest: +SKIP
    ...     s = faultline.sweep("scenario.toml", params={"fault.0.duration_s": [60, 120]})
    ... except faultline.Interrupted as e:
    ...     s = e.result                          # the finished points, in grid order
    """

    def __init__(self, message: str, result: Any) -> None:
        super().__init__(message)
        self.result = result


class GateFailed(AssertionError):
    """A gate failed; ``str(e)`` is the gate's table and ``result`` the whole report."""

    def __init__(self, message: str, result: Any) -> None:
        super().__init__(message)
        self.result = result


class SloFailed(AssertionError):
    """``run(..., check_slo=True)`` found an ``[slo]`` threshold failing for a policy: the
    command line's ``run --check-slo`` exit 99. ``str(e)`` says how many verdicts failed, then
    the run's text with the verdicts; ``result`` is the whole :class:`RunResult` (with ``out=``
    its files are written, as the command line writes them before exiting 99)."""

    def __init__(self, message: str, result: Any) -> None:
        super().__init__(message)
        self.result = result
