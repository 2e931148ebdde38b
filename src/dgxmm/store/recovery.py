"""Restoring a backup directory, and the errors of paths a user gave.

``restore`` picks the database's own way (pages for SQLite, tables for PostgreSQL);
``path_errors`` turns a file system's refusal of a path (too long, not there, not allowed)
into an ``InvalidInput`` naming the field, so the API and the CLI say which path and why.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dgxmm.errors import InvalidInput
from dgxmm.store import backup as sqlite_backup
from dgxmm.store import backup_pg
from dgxmm.store.backup_dir import Progress, RestoreResult, no_progress
from dgxmm.store.database import Dialect, parse_target

__all__ = ["path_errors", "restore", "user_path"]


def restore(
    directory: str | Path, target: str | Path, *, progress: Progress = no_progress
) -> RestoreResult:
    """Rebuild a database from a backup directory: a SQLite file, or an empty PostgreSQL one."""
    source = Path(directory).expanduser().absolute()
    with path_errors("target"):
        place = parse_target(target)
    with path_errors("directory", place.path):
        if place.dialect is Dialect.SQLITE:
            assert place.path is not None
            return sqlite_backup.restore_sqlite(source, place.path, progress)
        return backup_pg.restore_postgresql(source, place, progress)


@contextmanager
def path_errors(field: str, target: Path | None = None) -> Iterator[None]:
    """Turn the file system's refusal of a path the user gave into an error naming it.

    The error names ``target`` when the refused file is the target (or its temporary
    ``.<name>`` sibling), otherwise ``field``.
    """
    try:
        yield
    except OSError as error:
        refused = None if error.filename is None else Path(str(error.filename)).name
        is_target = (
            target is not None
            and refused is not None
            and refused.startswith((target.name, f".{target.name}"))
        )
        where = error.filename if error.filename is not None else "the path"
        raise InvalidInput(
            "target" if is_target else field, f"cannot use {where}: {error.strerror or error}"
        ) from error


def user_path(place: str | Path, base: Path, field: str) -> Path:
    """Return a path a user gave, a relative one under ``base``; refuse one that names no file."""
    try:
        path = Path(place).expanduser()  # ~nobody-known raises RuntimeError
        if "\x00" in str(path):
            raise ValueError("it holds a NUL character")
        os.fsencode(path)  # lone surrogates cannot be a file name
    except (RuntimeError, ValueError) as error:
        raise InvalidInput(field, f"{str(place)!r} is not a usable path ({error})") from error
    return path if path.is_absolute() else base / path
