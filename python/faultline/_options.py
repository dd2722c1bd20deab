"""Keyword arguments to the JSON options the native module reads, and its errors to exceptions.

Nothing here computes a figure: scenarios, overrides and sweep parameters are spelled as the
command line spells them (``path=value``), and the library checks them.
"""

from __future__ import annotations

import json
import math
import numbers
import operator
import os
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Sequence, Union

from . import _native
from ._errors import (
    FaultlineError,
    InputError,
    InternalError,
    OutputError,
    ScenarioError,
    ScenarioFileNotFound,
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
        if not scenario.endswith((".toml", ".json")) and not os.path.exists(scenario):
            # One line of TOML (`"[simulation]"`) or a mistyped name: say both readings.
            raise ScenarioError(
                f"{scenario}: neither a scenario file (its name ends in .toml or .json) nor TOML "
                "text (a string is read as TOML text when it holds a newline)",
                file=scenario,
            )
        return {"kind": "file", "value": scenario}
    raise TypeError(
        f"scenario: a path, TOML text or a dict, not {type(scenario).__name__}"
    )


def plain(value: Any) -> Any:
    """A NumPy scalar as the Python number it holds (``np.float64``, ``np.int64``,
    ``np.bool_``); anything else as it is. NumPy is never imported: its scalars are known by
    their module and their ``item()``."""
    if type(value).__module__ == "numpy" and callable(getattr(value, "item", None)):
        try:
            return value.item()
        except (TypeError, ValueError):
            return value
    return value


def toml_string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    escaped = []
    for c in text:
        if c in '"\\':
            escaped.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            escaped.append(f"\\u{ord(c):04x}")
        else:
            escaped.append(c)
    return '"' + "".join(escaped) + '"'


def value_text(value: Any) -> str:
    """A Python value as the command line writes it after ``path=``. A string is the string
    it holds: written as it is where the command line reads it back unchanged (``naive``),
    quoted as TOML where it would read as something else (``"123"``, ``"true"``, ``" x"``)."""
    value = plain(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(operator.index(value))
    if isinstance(value, numbers.Real):
        number = float(value)
        if math.isnan(number):
            return "nan"
        if math.isinf(number):
            return "inf" if number > 0 else "-inf"
        # float's own repr: a float subclass (np.float64 under NumPy 2) spells itself
        # `np.float64(50.0)`.
        return float.__repr__(number)
    if isinstance(value, str):
        return value if _native.reads_as_text(value) else toml_string(value)
    raise TypeError(
        f"an override's value is a bool, int, float or str, not {type(value).__name__}"
    )


#: The largest value of the native module's integer options, by their Rust type.
U32 = 2**32 - 1
U64 = 2**64 - 1
I64 = 2**63 - 1


def integer(name: str, value: Any, *, maximum: int, minimum: int = 0) -> Optional[int]:
    """An integer keyword checked here, so its error names the keyword (None stays None)."""
    if value is None:
        return None
    value = plain(value)
    if isinstance(value, bool):
        raise TypeError(f"{name}: an int, not bool")
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{name}: an int, not {type(value).__name__}") from None
    if not minimum <= number <= maximum:
        raise InputError(f"{name}={number}: must be between {minimum} and {maximum}")
    return number


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
            texts = []
            for v in vs:
                if isinstance(plain(v), str) and "," in v:
                    raise InputError(
                        f"params[{path!r}]: the value {v!r} holds a comma, which separates the "
                        "values of the command line's --param; a swept string cannot hold one"
                    )
                texts.append(value_text(v))
            out.append(f"{path}={','.join(texts)}")
        return out
    if isinstance(values, str):
        raise TypeError("params: a dict of path to a list of values")
    return [str(p) for p in values]


def names(value: Union[str, Sequence[str], None], name: str = "policies") -> list:
    """One name or several as a list: a single string is a one-item list, never its
    characters."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, Iterable):
        raise TypeError(f"{name}: a name or a list of names, not {type(value).__name__}")
    return [str(v) for v in value]


def metric_names(value: Union[str, Sequence[str], None], name: str = "metrics") -> list:
    """Metric names as the command line's ``--metrics a,b`` takes them: a list, one string,
    or a comma-separated string."""
    return [part.strip() for v in names(value, name) for part in v.split(",")]


def number(name: str, value: Any) -> Optional[float]:
    """A float keyword checked here, so its error names the keyword (None stays None)."""
    if value is None:
        return None
    value = plain(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}: a number, not {type(value).__name__}")
    return float(value)


def flag(name: str, value: Any) -> bool:
    """A yes/no keyword: a bool (NumPy's too), never a truthy string."""
    value = plain(value)
    if not isinstance(value, bool):
        raise TypeError(f"{name}: True or False, not {type(value).__name__}")
    return value


def path(value: Union[str, "os.PathLike[str]", None]) -> Optional[str]:
    return None if value is None else os.fspath(value)


def progress_callback(progress: Progress, label: str) -> Any:
    """A callable (done, total) -> None, and how to close it; tqdm when it is installed."""
    if progress is None or progress is False:
        return None, lambda: None
    if callable(progress):
        return progress, lambda: None
    if progress is not True:
        raise TypeError(
            f"progress: True (a bar), False (none) or a callable taking (done, total), not "
            f"{type(progress).__name__}"
        )
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
    if kind == "scenario" and file is not None and line is None and "cannot read the file" in message \
            and not os.path.lexists(file):
        # A missing scenario file is also a FileNotFoundError (an OSError), as Python's own
        # open() raises; it stays a ScenarioError (the command line's exit 2).
        return ScenarioFileNotFound(message, file=file, line=line, column=column, argument=argument, field=field)
    if kind == "scenario" and file == "<dict>" and line is not None:
        # A dict has no lines: the position is in the package's own json.dumps text.
        prefix = f"<dict>:{line}:{column}: " if column is not None else f"<dict>:{line}: "
        if message.startswith(prefix):
            message = "<dict>: " + message[len(prefix):]
        line = column = None
    if kind == "scenario":
        return ScenarioError(message, file=file, line=line, column=column, argument=argument, field=field)
    if kind == "io":
        return OutputError(message)
    if kind == "input":
        return InputError(message)
    return InternalError(message)
