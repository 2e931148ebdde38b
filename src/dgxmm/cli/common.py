"""What every store command shares: where the store is, and how answers are printed."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec, TypeVar

import typer

from dgxmm.errors import DgxmmError, InvalidInput

if TYPE_CHECKING:
    from dgxmm.store import Store

__all__ = ["DataOption", "DbOption", "JsonOption", "fail", "handles_errors", "open_store", "out"]

P = ParamSpec("P")
R = TypeVar("R")

DataOption = Annotated[
    Path, typer.Option("--data", help="The data directory.", envvar="DGXMM_DATA")
]
DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="A PostgreSQL URL or a SQLite path (default: <data>/dgxmm.db).",
        envvar="DGXMM_DB",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]


@contextmanager
def open_store(data: Path, db: str | None) -> Iterator[Store]:
    """Open the store for one command and close it after (its statistics are written)."""
    # Here, not above: `dgxmm cron next` needs no database. Which tables no saved query may
    # write is read from the database itself (store/protection.py), so nothing else is needed.
    from dgxmm.store import Store

    data_dir = data.expanduser().absolute()
    store = Store.open(db or data_dir / "dgxmm.db", data_dir=data_dir)
    try:
        yield store
    finally:
        store.close()


def out(value: Any, as_json: bool, text: str | None = None) -> None:
    """Print a result: JSON when asked, otherwise the given text."""
    if as_json or text is None:
        typer.echo(json.dumps(value, indent=2, default=str))
    else:
        typer.echo(text)


def fail(error: DgxmmError) -> typer.Exit:
    """Print an error the way the API shapes it, and return the exit to raise."""
    field = f"{error.field}: " if isinstance(error, InvalidInput) and error.field else ""
    message = error.message if isinstance(error, InvalidInput) else str(error)
    typer.echo(f"error: {field}{message}", err=True)
    return typer.Exit(1 if not isinstance(error, InvalidInput) else 2)


def handles_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turn dgxmm's errors into one line on stderr and a non-zero exit."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except DgxmmError as error:
            raise fail(error) from None

    return wrapper
