"""Every option of every command of the command line is a keyword of its Python function, and
every keyword is an option (or said here why not): read from the binary's own help, so a new
option cannot be added to one side only."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import faultline
from conftest import run_binary

#: The commands with a Python function of the same name.
COMMANDS = ["run", "sweep", "gate", "tune", "explore", "replay", "calibrate", "validate"]
#: The commands that have none: they combine or show files or print text for a shell (export converts a saved folder: run the command on `out=`).
#: `check` (the essay's checklist, issue 31) has none yet: its `--json` loads with pandas.
#: `import` (issue 32) writes a TOML fragment from a user's own configuration file: it is text
#: for a scenario, not results, so there is nothing for a DataFrame to hold.
NO_FUNCTION = {"merge", "compare", "export", "init", "docs", "completions", "help", "check", "import"}
#: Options whose keyword is named otherwise: Python's plural for a repeatable option, the
#: package's word for `--set` (a dict of overrides).
RENAMED = {
    "set": "overrides",
    "candidate-set": "candidate_overrides",
    "baseline-set": "baseline_overrides",
    "param": "params",
    "objective": "objectives",
    "kind": "kinds",
}
#: `--policy` picks several policies in run and sweep, one elsewhere.
POLICIES = {"run": "policies", "sweep": "policies"}
#: Options that are an attribute of the result, not a keyword: what `--format json` prints.
AS_ATTRIBUTE = {
    ("run", "format"): ("RunResult", ["json", "document"]),
    ("gate", "format"): ("GateResult", ["document"]),
}
#: Command line arguments that are not options: the scenario, calibrate's trace files.
POSITIONAL = {"calibrate": {"traces"}}
#: Keywords of the package alone: a progress bar or callback.
PYTHON_ONLY = {"progress"}


def options(binary: Path, command: str) -> list:
    """The long options of `faultline COMMAND -h`, in order, but --help."""
    done = run_binary(binary, command, "-h")
    assert done.returncode == 0, done.stderr
    section = done.stdout.split("\nOptions:\n", 1)[1]
    found = []
    for line in section.splitlines():
        if line and not line.startswith(" "):
            break
        m = re.match(r"^ {2}(?:-\w, )?--([a-z][a-z0-9-]*)|^ {6}--([a-z][a-z0-9-]*)", line)
        if m:
            found.append(m.group(1) or m.group(2))
    return [o for o in found if o != "help"]


def test_every_command_of_the_command_line_is_a_function_or_said_why_not(binary: Path) -> None:
    done = run_binary(binary, "--help")
    section = done.stdout.split("\nCommands:\n", 1)[1].split("\n\n", 1)[0]
    commands = {line.split()[0] for line in section.splitlines() if line.startswith("  ") and line.split()}
    assert commands == set(COMMANDS) | NO_FUNCTION, commands
    for command in COMMANDS:
        assert command in faultline.__all__ and callable(getattr(faultline, command))


@pytest.mark.parametrize("command", COMMANDS)
def test_the_options_of_a_command_are_its_function_s_keywords(binary: Path, command: str) -> None:
    cli = options(binary, command)
    expected = set()
    for option in cli:
        if (command, option) in AS_ATTRIBUTE:
            cls, attributes = AS_ATTRIBUTE[(command, option)]
            for attribute in attributes:
                result = getattr(faultline, cls)
                # A property, or an attribute its constructor sets.
                assert hasattr(result, attribute) or f"self.{attribute}:" in inspect.getsource(result.__init__), (
                    cls,
                    attribute,
                )
            continue
        if option == "policy":
            expected.add(POLICIES.get(command, "policy"))
            continue
        expected.add(RENAMED.get(option, option.replace("-", "_")))
    keywords = set(inspect.signature(getattr(faultline, command)).parameters)
    keywords -= POSITIONAL.get(command, {"scenario"}) | PYTHON_ONLY
    assert keywords == expected, (
        f"faultline {command}: options without a keyword {sorted(expected - keywords)}, "
        f"keywords without an option {sorted(keywords - expected)}"
    )
