"""A backup directory: a marker, then one sub-directory per run, each with its manifest.

::

    <directory>/
      dgxmm-backup.json      which database this directory backs up (store id, kind)
      000001/                the first run: a full copy
        manifest.json
        ...data files...
      000002/                later runs: only what changed, based on the run before
        manifest.json
        ...

A run is written into a hidden temporary directory, every file fsynced, then renamed into
place and the parent fsynced: a run is there whole or not at all, and a crash leaves only a
temporary directory, which the next run removes. Each manifest names the SHA-256 of the one
before it, so that runs of different chains cannot be mixed.

A SQLite restore builds its file in a scratch directory beside the target
(``restoring_beside``), which holds a marker locked while the restore runs: a later restore
removes a scratch directory only when that marker proves it is ours and its restore is gone.

This module knows nothing of pages or tables: ``sqlite.py`` (SQLite) and ``postgresql.py``
(PostgreSQL) write the runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dgxmm.errors import BackupError, Conflict
from dgxmm.store.files import fsync_dir, write_atomic

__all__ = [
    "MARKER",
    "SCRATCH_PREFIX",
    "BackupDir",
    "BackupResult",
    "Progress",
    "RestoreResult",
    "Run",
    "manifest_head",
    "no_progress",
    "read_marker",
    "read_runs",
    "restoring_beside",
    "write_manifest",
]

MARKER = "dgxmm-backup.json"
MANIFEST = "manifest.json"
_FORMAT = 1
_RUN = re.compile(r"\d{6}")
SCRATCH_PREFIX = ".dgxmm-restore-"
_SCRATCH_MARKER = "restore-under-way"
_SCRATCH_TEXT = b"dgxmm: a restore builds its file here; a later restore removes what it left\n"


Progress = Callable[[int, int], None]  # (done, total) pages or tables: for a progress bar


def no_progress(done: int, total: int) -> None:
    """Report nothing (the default of every backup and restore)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BackupResult:
    """What one backup run wrote."""

    directory: Path
    sequence: int
    method: str  # full, tracked (dirty pages), compared (checksums), tables (PostgreSQL)
    items: int  # pages or tables written
    bytes_written: int
    reason: str | None = None  # why a later run compared checksums or copied everything

    @property
    def method_text(self) -> str:
        """The method, with its reason when it has one: ``compared (the log was lost)``."""
        return self.method if self.reason is None else f"{self.method} ({self.reason})"


@dataclass(frozen=True, slots=True, kw_only=True)
class RestoreResult:
    """What a restore rebuilt."""

    target: str
    sequence: int  # the last run it applied
    items: int  # pages or tables written


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    """One committed run of a backup directory."""

    path: Path
    manifest: dict[str, Any]
    digest: str  # SHA-256 of its manifest file

    @property
    def sequence(self) -> int:
        """The run's number, 1 for the full copy."""
        return int(self.manifest["sequence"])


class BackupDir:
    """A backup directory of one database (``kind``: sqlite or postgresql)."""

    def __init__(self, path: Path, *, kind: str, store_id: str) -> None:
        self.path = path
        self.kind = kind
        self.store_id = store_id

    def open_for_backup(self) -> list[Run]:
        """Check the directory is ours (or new), clear leftovers, return its runs."""
        if self.path.exists() and not self.path.is_dir():
            raise Conflict(f"backup: {self.path} is a file, not a directory")
        self.path.mkdir(parents=True, exist_ok=True)
        marker = self.path / MARKER
        if marker.exists():
            self._check_marker(read_marker(self.path))
        else:
            strangers = [p.name for p in self.path.iterdir() if not p.name.startswith(".tmp-")]
            if strangers:
                raise Conflict(
                    f"backup: {self.path} is not empty and holds no dgxmm backup "
                    f"({', '.join(sorted(strangers)[:3])}...)"
                )
            write_atomic(
                marker,
                json.dumps(
                    {"format": _FORMAT, "kind": self.kind, "store_id": self.store_id}
                ).encode(),
            )
        for leftover in self.path.glob(".tmp-*"):
            shutil.rmtree(leftover, ignore_errors=True)
        return read_runs(self.path)

    @contextmanager
    def new_run(self, sequence: int) -> Iterator[Path]:
        """Yield a temporary directory to fill; on success it becomes run ``sequence``."""
        temp = self.path / f".tmp-{sequence:06d}-{secrets.token_hex(4)}"
        temp.mkdir()
        try:
            yield temp
            for item in temp.iterdir():
                with open(item, "rb") as handle:
                    os.fsync(handle.fileno())
            fsync_dir(temp)
            os.rename(temp, self.path / f"{sequence:06d}")
            fsync_dir(self.path)
        except BaseException:
            shutil.rmtree(temp, ignore_errors=True)
            raise

    def _check_marker(self, marker: dict[str, Any]) -> None:
        if marker.get("kind") != self.kind:
            raise Conflict(
                f"backup: {self.path} holds backups of a {marker.get('kind')} database, "
                f"and this store is {self.kind}"
            )
        if marker.get("store_id") != self.store_id:
            raise Conflict(f"backup: {self.path} holds backups of another database")


def read_marker(path: Path) -> dict[str, Any]:
    """Return the marker of a backup directory; ``BackupError`` when it has none."""
    try:
        marker = json.loads((path / MARKER).read_text())
    except (FileNotFoundError, NotADirectoryError):
        raise BackupError(f"{path} holds no dgxmm backup ({MARKER} is missing)") from None
    except ValueError as error:
        raise BackupError(f"{path / MARKER} is damaged: {error}") from None
    if not isinstance(marker, dict) or marker.get("format") != _FORMAT:
        raise BackupError(f"{path / MARKER} is not a backup marker this version reads")
    return marker


def read_runs(path: Path) -> list[Run]:
    """Return the committed runs, oldest first, checking that they form one chain."""
    runs: list[Run] = []
    for entry in sorted(path.iterdir()):
        if not entry.is_dir() or not _RUN.fullmatch(entry.name):
            continue
        try:
            text = (entry / MANIFEST).read_bytes()
            manifest = json.loads(text)
        except (OSError, ValueError) as error:
            raise BackupError(f"backup run {entry} has no readable manifest: {error}") from None
        run = Run(path=entry, manifest=manifest, digest=hashlib.sha256(text).hexdigest())
        expected = len(runs) + 1
        if run.sequence != expected or int(entry.name) != expected:
            raise BackupError(f"backup run {entry} is number {run.sequence}, expected {expected}")
        previous = runs[-1].digest if runs else None
        if manifest.get("previous") != previous:
            raise BackupError(f"backup run {entry} does not follow the run before it")
        runs.append(run)
    return runs


def manifest_head(
    *, kind: str, format: int, runs: list[Run], method: str, now_us: int
) -> dict[str, Any]:
    """Return the keys every run's manifest starts with, whichever database it backs up.

    A run's number follows the last finished one; ``base`` and ``previous`` (that run's
    manifest digest) chain it to the run before, so a restore can tell a chain was cut.
    """
    sequence = len(runs) + 1
    return {
        "format": format,
        "kind": kind,
        "sequence": sequence,
        "base": sequence - 1 if runs else None,
        "previous": runs[-1].digest if runs else None,
        "method": method,
        "created_at_us": now_us,
    }


def write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    """Write a run's manifest (fsynced with the run when it commits)."""
    (directory / MANIFEST).write_text(json.dumps(manifest, separators=(",", ":")))


@contextmanager
def restoring_beside(target: Path) -> Iterator[Path]:
    """Yield a new scratch directory beside ``target``, making its missing parents first.

    The scratch directory is removed when the block ends; the parents this made are removed
    again when it fails. Scratch directories that earlier restores left (killed half way)
    are removed first, each only when its marker is there and no longer locked.
    """
    made = _make_parents(target.parent)
    try:
        _remove_dead_scratch(target.parent)
        scratch = target.parent / f"{SCRATCH_PREFIX}{secrets.token_hex(8)}"
        scratch.mkdir()
        marker = os.open(scratch / _SCRATCH_MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            # Locked before it says what it is: a marker with its text and no lock is dead.
            fcntl.flock(marker, fcntl.LOCK_EX)
            os.write(marker, _SCRATCH_TEXT)
            try:
                yield scratch
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
        finally:
            os.close(marker)
    except BaseException:
        for directory in reversed(made):
            with contextlib.suppress(OSError):
                directory.rmdir()
        raise


def _make_parents(directory: Path) -> list[Path]:
    """Create ``directory`` and its missing parents; return those it made, outermost first."""
    missing = [p for p in (directory, *directory.parents) if not p.exists()]
    made: list[Path] = []
    try:
        for path in reversed(missing):
            try:
                path.mkdir()
            except FileExistsError:
                continue  # made meanwhile by someone else: theirs
            made.append(path)
    except BaseException:
        for path in reversed(made):
            with contextlib.suppress(OSError):
                path.rmdir()
        raise
    return made


def _remove_dead_scratch(parent: Path) -> None:
    """Remove the scratch directories of restores that died here; nothing else."""
    for entry in parent.glob(f"{SCRATCH_PREFIX}*"):
        if entry.is_symlink() or not entry.is_dir():
            continue
        try:
            marker = os.open(entry / _SCRATCH_MARKER, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue  # no marker: not proven ours
        try:
            try:
                fcntl.flock(marker, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # locked: a restore under way
            if os.read(marker, len(_SCRATCH_TEXT) + 1) == _SCRATCH_TEXT:
                shutil.rmtree(entry, ignore_errors=True)
        finally:
            os.close(marker)
