"""Keyword arguments to the JSON options the native module reads, and its errors to exceptions.

Nothing here computes a figure: scenarios, overrides and sweep parameters are spelled as the
command line spells them (``path=value``), and the library checks them.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Sequence, Union

from . import _native
from ._errors import (
    FaultlineError,
    InputError,
    InternalError,
    OutputError,
    ScenarioError,
)

#: A scenario: a path to a .toml or .json file, TOML text (a string with a newline), or a dict
#: with the file's structure.
Scenario = Union[str, "os.PathLike[str]", Mapping[str, Any]]
#: Overrides (``--set``): a dict of path to value, or ``path=value`` strings.
Overrides = Union[Mapping[str, Any], Sequence[str], None]
#: Progress: True (tqdm where installed), False, or a callable taking (done, total).
Progress = Union[bool, Callable[[int, int], Any], None]


def scenario_arg(scenario: Scenario) -> Dict[str, Any]:
    """The scenario as the native module takes it: a file, TOML text or JSON text."""
    if isinstance(scenario, Mapping):
        # JSON is a scenario format of its own; a dict is its structure.
        return {"kind": "json", "value": json.dumps(scenario), "name": "<dict>"}
    if isinstance(scenario, os.PathLike):
        return {"kind": "file", "value": os.fspath(scenario)}
    if isinstance(scenario, str):
        if "\n" in scenario and not os.path.exists(scenario):
            return {"kind": "toml", "value": scenario, "name": "<string>"}
        return {"kind": "file", "value": scenario}
    raise TypeError(
        f"scenario: a path, TOML text or a dict, not {type(scenario).__name__}"
    )


def value_text(value: Any) -> str:
    """A Python value as the command line writes it after ``path=``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (int, str)):
        return str(value)
    raise TypeError(
        f"an override's value is a bool, int, float or str, not {type(value).__name__}"
    )


def sets(overrides: Overrides, name: str = "overrides") -> list:
    """``--set`` arguments from a dict of path to value (or ``path=value`` strings)."""
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        return [f"{path}={value_text(v)}" for path, v in overrides.items()]
    if isinstance(overrides, str):
        raise TypeError(f"{name}: a dict of path to value, or a list of 'path=value' strings")
    return [str(s) for s in overrides]


def params(values: Union[Mapping[str, Iterable[Any]], Sequence[str]]) -> list:
    """``--param`` arguments from a dict of path to the values to sweep."""
    if isinstance(values, Mapping):
        out = []
        for path, vs in values.items():
            if isinstance(vs, (str, bytes)) or not isinstance(vs, Iterable):
                raise TypeError(f"params[{path!r}]: a list of values to sweep")
            out.append(f"{path}={','.join(value_text(v) for v in vs)}")
        return out
    if isinstance(values, str):
        raise TypeError("params: a dict of path to a list of values")
    return [str(p) for p in values]


def names(value: Union[str, Sequence[str], None]) -> list:
    """One name or several as a list."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


def path(value: Union[str, "os.PathLike[str]", None]) -> Optional[str]:
    return None if value is None else os.fspath(value)


def progress_callback(progress: Progress, label: str) -> Any:
    """A callable (done, total) -> None, and how to close it; tqdm when it is installed."""
    if progress is None or progress is False:
        return None, lambda: None
    if callable(progress) and progress is not True:
        return progress, lambda: None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None, lambda: None
    bar: Dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        if total <= 0:
            return
        if "bar" not in bar or bar["bar"].total != total:
            if "bar" in bar:
                bar["bar"].close()
            bar["bar"] = tqdm(total=total, desc=label, unit="sim", leave=False)
        b = bar["bar"]
        b.update(done - b.n)

    def close() -> None:
        if "bar" in bar:
            bar["bar"].close()

    return update, close


def call(function: Callable[..., Any], options: Dict[str, Any], progress: Progress, label: str) -> Any:
    """Calls a native command with its options, raising the package's exceptions."""
    update, close = progress_callback(progress, label)
    try:
        return function(json.dumps(options), update)
    except _native.NativeError as e:
        raise error(e) from None
    finally:
        close()


def error(e: BaseException) -> FaultlineError:
    details = e.args[0] if len(e.args) == 1 else e.args
    kind, message, file, line, column, argument, field = details
    if kind == "scenario":
        return ScenarioError(message, file=file, line=line, column=column, argument=argument, field=field)
    if kind == "io":
        return OutputError(message)
    if kind == "input":
        return InputError(message)
    return InternalError(message)
