"""Restoring a backup directory, and the errors of paths a user gave.

``restore`` reads the target, checks it, then picks the database's own way (pages for
SQLite, tables for PostgreSQL). A restore writes only a place that is new: a SQLite target
is resolved first (symlinks, ``..``, missing parents: the path the rename would reach), and
refused, naming ``target``, when it is or is inside a file a live store or its host keeps
(``LiveStore.files``, whether or not they exist yet), when anything exists there, when it is
a companion of another database (``x.db-wal``), or when it lies in a file or in the backup
directory. Nothing is created before every check has passed.

``path_errors`` turns a file system's refusal of a path (too long, not there, not allowed)
into an ``InvalidInput`` naming the field, so the API and the CLI say which path and why.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from sqlalchemy import Engine

from dgxmm.errors import BackupError, Conflict, InvalidInput
from dgxmm.store.backups import postgresql as backup_pg
from dgxmm.store.backups import sqlite as sqlite_backup
from dgxmm.store.backups.directory import (
    SCRATCH_PREFIX,
    Progress,
    RestoreResult,
    no_progress,
    read_marker,
)
from dgxmm.store.database import Dialect, Target, parse_target

__all__ = [
    "COMPANIONS",
    "LiveStore",
    "check_file_target",
    "path_errors",
    "restore",
    "store_files",
    "user_path",
]

# The files SQLite and dgxmm keep beside a database file, named after it.
COMPANIONS = {
    "-wal": "write-ahead log",
    "-shm": "shared-memory index",
    "-journal": "rollback journal",
    ".dirty-pages": "dirty-page log",
    ".workload.json": "workload sidecar",
}
_KIND_NAMES = {Dialect.SQLITE: "SQLite", Dialect.POSTGRESQL: "PostgreSQL"}
_SQLITE_HEADER = b"SQLite format 3\x00"


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveStore:
    """The open store a restore runs in: what it must leave alone, how it reads a target."""

    dialect: Dialect  # a bare path is a file only on a SQLite store
    data_dir: Path  # the base of relative paths
    files: Mapping[Path, str]  # every file the store and its host keep -> what it is
    engine: Engine | None  # the live PostgreSQL database, to know it when given as target


def store_files(database: Path | None, sidecar: Path) -> dict[Path, str]:
    """Return a store's own files, whether or not they exist now, each with what it is."""
    files = {sidecar: "the store's workload sidecar"}
    if database is not None:
        files[database] = "the store's database"
        for suffix, what in COMPANIONS.items():
            files[database.with_name(database.name + suffix)] = f"the store's {what}"
    return files


def restore(
    directory: str | Path,
    target: str | Path,
    *,
    progress: Progress = no_progress,
    live: LiveStore | None = None,
    drop_settings: tuple[str, ...] = (),
) -> RestoreResult:
    """Rebuild a database from a backup directory: a new SQLite file, or an empty PostgreSQL one.

    Without ``live`` (no open store) a bare path is a SQLite file and a relative one is under
    the working directory; the checks that need no store still apply. The settings whose
    keys start with one of ``drop_settings`` are left out of the restored database (the
    caller knows which belong to the instance; a backup copies, it never reads them).
    """
    source = Path(directory).expanduser().absolute()
    # Both fields are checked before either refusal is told, so a person fixes both at once.
    wrong: list[InvalidInput | Conflict] = []
    place = _gathered(wrong, lambda: _read_target(target, live))
    kind = _gathered(wrong, lambda: _marker_kind(source))
    path: Path | None = None
    if place is not None and place.path is not None:  # a SQLite file
        files = {} if live is None else live.files
        file = place.path
        path = _gathered(wrong, lambda: check_file_target(file, backup=source, protected=files))
    _raise_any(wrong)
    assert place is not None
    if kind in set(Dialect) and kind != place.dialect:
        raise InvalidInput(
            "target",
            f"{source} holds a {_KIND_NAMES[Dialect(kind)]} backup, and "
            f"{_shown(place)} is a {_KIND_NAMES[place.dialect]} target: give a "
            + ("SQLite file (sqlite:///<path>)" if kind == Dialect.SQLITE else "PostgreSQL URL"),
        )
    if place.dialect is Dialect.SQLITE:
        assert path is not None
        with path_errors("directory", path):
            return sqlite_backup.restore_sqlite(source, path, progress, drop_settings=drop_settings)
    with path_errors("directory"):
        return backup_pg.restore_postgresql(
            source,
            place,
            progress,
            live=None if live is None else live.engine,
            drop_settings=drop_settings,
        )


_T = TypeVar("_T")


def _gathered(wrong: list[InvalidInput | Conflict], check: Callable[[], _T]) -> _T | None:
    """Return what ``check`` returns, or None when it refused a field (kept in ``wrong``)."""
    try:
        return check()
    except (InvalidInput, Conflict) as error:
        wrong.append(error)
        return None


def _raise_any(wrong: list[InvalidInput | Conflict]) -> None:
    """Raise the one refusal as it was; several as one ``InvalidInput`` listing each field."""
    if len(wrong) == 1:
        raise wrong[0]
    if wrong:
        raise InvalidInput.every([(error.field or "", error.message) for error in wrong])


def _marker_kind(source: Path) -> str | None:
    """Return the kind a backup directory's marker names; a directory that holds no readable
    backup is the ``directory`` field's error (a person named the wrong place)."""
    with path_errors("directory"):
        try:
            kind = read_marker(source).get("kind")
        except BackupError as error:
            raise InvalidInput("directory", str(error)) from error
    return kind if isinstance(kind, str) else None


def _read_target(target: str | Path, live: LiveStore | None) -> Target:
    """Read the target as the store's kind: on PostgreSQL a file must say ``sqlite:///``."""
    text = str(target)
    if (
        live is not None
        and live.dialect is Dialect.POSTGRESQL
        and not isinstance(target, Path)
        and "://" not in text
    ):
        raise InvalidInput(
            "target",
            f"{text!r} is not a PostgreSQL URL, and this store is PostgreSQL: give an empty "
            f"database's postgresql:// URL, or sqlite:///{text} for a new SQLite file",
        )
    return parse_target(target, base=None if live is None else live.data_dir)


def check_file_target(path: Path, *, backup: Path, protected: Mapping[Path, str]) -> Path:
    """Return the resolved place where a restore may create a SQLite file; refuse a taken one.

    Every refusal is a ``Conflict`` naming ``target``; nothing is created.
    """
    resolved = _resolved(path)
    for kept, what in protected.items():
        own = _resolved(kept)
        if resolved == own:
            raise Conflict(f"{resolved} is {what}", field="target")
        if resolved.is_relative_to(own):
            raise Conflict(f"{resolved} is inside {what} ({own})", field="target")
    if os.path.lexists(path):
        raise Conflict(f"{path} exists; restore into a new place", field="target")
    if os.path.lexists(resolved):
        raise Conflict(f"{resolved} exists; restore into a new place", field="target")
    for suffix, what in COMPANIONS.items():
        companion = resolved.with_name(resolved.name + suffix)
        if os.path.lexists(companion):
            raise Conflict(
                f"{companion} exists: it would be read as the new database's {what}",
                field="target",
            )
        stem = resolved.name.removesuffix(suffix)
        if stem not in ("", resolved.name) and _is_sqlite_file(resolved.with_name(stem)):
            raise Conflict(
                f"{resolved} would be the {what} of the database {resolved.with_name(stem)}",
                field="target",
            )
    ancestor = next(p for p in resolved.parents if os.path.lexists(p))
    if not ancestor.is_dir():
        raise Conflict(f"{resolved} is inside the file {ancestor}", field="target")
    if resolved.is_relative_to(_resolved(backup)):
        raise Conflict(
            f"{resolved} is inside the backup directory {backup}; restore elsewhere",
            field="target",
        )
    return resolved


def _resolved(path: Path) -> Path:
    """Resolve symlinks and ``..``; a missing part is read as the directory mkdir would make."""
    try:
        return path.resolve()
    except (OSError, RuntimeError) as error:  # RuntimeError: a symlink loop (Python 3.11)
        raise InvalidInput("target", f"cannot resolve {path}: {error}") from error


def _is_sqlite_file(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(len(_SQLITE_HEADER)) == _SQLITE_HEADER
    except OSError:
        return False


def _shown(place: Target) -> str:
    return str(place.path) if place.path is not None else place.url.render_as_string()


@contextmanager
def path_errors(field: str, target: Path | None = None) -> Iterator[None]:
    """Turn the file system's refusal of a path the user gave into an error naming it.

    The error names ``target`` when the refused file is the target, a parent being made for
    it, or the scratch directory beside it; otherwise ``field``.
    """
    try:
        yield
    except OSError as error:
        refused = None if error.filename is None else Path(str(error.filename))
        is_target = target is not None and refused is not None and _is_target_side(refused, target)
        where = error.filename if error.filename is not None else "the path"
        raise InvalidInput(
            "target" if is_target else field, f"cannot use {where}: {error.strerror or error}"
        ) from error


def _is_target_side(refused: Path, target: Path) -> bool:
    if refused == target or target.is_relative_to(refused):
        return True
    if not refused.is_relative_to(target.parent) or refused == target.parent:
        return False
    return refused.relative_to(target.parent).parts[0].startswith(SCRATCH_PREFIX)


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
