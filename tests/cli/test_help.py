"""Every command's ``--help`` reads as plain words: no Python types, no RST quotes."""

from __future__ import annotations

from collections.abc import Iterator

import typer
from typer.testing import CliRunner

from dgxmm.cli import app


def commands(group: object, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Yield the path of every command under ``group``."""
    for name, sub in getattr(group, "commands", {}).items():
        if getattr(sub, "commands", None):
            yield from commands(sub, (*path, name))
        else:
            yield (*path, name)


def test_it_marks_no_python_type_and_quotes_no_rst_in_any_help() -> None:
    runner = CliRunner()
    found = list(commands(typer.main.get_command(app)))
    assert ("jobs", "enable") in found
    wrong = {}
    for path in found:
        said = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"}).output
        marks = [mark for mark in ("``", "<bool>", "<str>", "<int>", "<float>") if mark in said]
        if marks:
            wrong[" ".join(path)] = marks
    assert wrong == {}


def test_a_help_names_an_argument_and_its_choices() -> None:
    said = CliRunner().invoke(app, ["jobs", "enable", "--help"], env={"COLUMNS": "200"}).output
    assert "dgxmm jobs enable NAME on|off [--note TEXT]." in said
    assert "{NAME} {SWITCH}" in said
