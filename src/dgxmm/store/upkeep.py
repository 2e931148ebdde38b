"""The store's file operations, with the lock they share and the spec's refusal.

``Upkeep`` does checkpoint, backup, restore, compact and close for a ``Store``. Each holds the
files lock (one at a time, and never beside a close) and first refuses, with ``Busy``, while
a user job runs: in this process (``RunningJobs``) or, read from the store's run rows, in any
other process on the same database (a CLI beside the server, another server). A user job's
own checkpoint or backup goes through ``run_checkpoint`` and ``run_backup``, which skip that
refusal: the job is the one running.

A restore leaves out the settings that belong to the instances on a database rather than to
its data (``INSTANCE_SETTINGS``: the system jobs' overrides, which the spec says are "not
carried by a backup or a fork"). A backup stays an exact copy (SQLite's pages cannot leave
rows out); the restore deletes them from the database it built, so backups taken before
this rule are restored by it too. ``restore`` here is also the store's module function.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from sqlalchemy import Engine

from dgxmm.errors import Busy, StoreError
from dgxmm.jobs import JobKind
from dgxmm.store.backups import maintenance
from dgxmm.store.backups.directory import BackupResult, Progress, RestoreResult, no_progress
from dgxmm.store.backups.restore import LiveStore, path_errors, user_path
from dgxmm.store.backups.restore import restore as restore_backup
from dgxmm.store.backups.wal import SqliteFiles
from dgxmm.store.runs.job_runs import JobRuns
from dgxmm.store.runs.overrides import OVERRIDE_PREFIX
from dgxmm.store.runs.running import RunningJobs

__all__ = ["INSTANCE_SETTINGS", "Upkeep", "restore"]

# The key prefixes of the settings a restore leaves out: the instances', not the data's.
INSTANCE_SETTINGS = (OVERRIDE_PREFIX,)


def restore(
    directory: str | Path,
    target: str | Path,
    *,
    progress: Progress = no_progress,
    live: LiveStore | None = None,
) -> RestoreResult:
    """Rebuild a database from a backup directory, without the instances' settings.

    A new SQLite file, or an empty PostgreSQL database (see ``backups/restore.py``); without
    ``live`` (no open store) a bare path is a SQLite file under the working directory.
    """
    return restore_backup(
        directory, target, progress=progress, live=live, drop_settings=INSTANCE_SETTINGS
    )


class Upkeep:
    """Checkpoint, backup, restore and compact of one store, one at a time."""

    def __init__(
        self,
        *,
        engine: Engine,
        files: SqliteFiles | None,
        data_dir: Path,
        store_id: str,
        now_us: Callable[[], int],
        running: RunningJobs,
        runs: JobRuns,
        live: LiveStore,
    ) -> None:
        self._engine = engine
        self._files = files
        self._data_dir = data_dir
        self._store_id = store_id
        self._now_us = now_us
        self._running = running
        self._runs = runs
        self._live = live  # what a restore must leave alone, and how it reads paths
        self._lock = threading.RLock()
        self.closed = False

    def checkpoint(self) -> str:
        """Checkpoint the database (SQLite: the tracked WAL checkpoint; PostgreSQL: CHECKPOINT)."""
        with self._lock:
            self.refuse_while_user_jobs_run("checkpoint")
            return self.run_checkpoint()

    def backup(self, directory: str | Path, *, progress: Progress = no_progress) -> BackupResult:
        """Back up into ``directory`` (relative: under the data directory)."""
        path = user_path(directory, self._data_dir, "directory")
        with self._lock:
            self.refuse_while_user_jobs_run("backup")
            with path_errors("directory"):
                return self.run_backup(path, lambda: None, progress)

    def restore(
        self, directory: str | Path, target: str | Path, *, progress: Progress = no_progress
    ) -> RestoreResult:
        """Rebuild a database at ``target`` from the backup directory ``directory``."""
        source = user_path(directory, self._data_dir, "directory")
        with self._lock:
            self.refuse_while_user_jobs_run("restore")
            return restore(source, target, progress=progress, live=self._live)

    def protect_paths(self, paths: Iterable[Path], *, what: str) -> None:
        """Keep restores away from a host's own files (and from what is inside them)."""
        files = {**self._live.files, **{Path(p).absolute(): what for p in paths}}
        self._live = dataclasses.replace(self._live, files=files)

    def compact(self) -> str:
        """Rebuild the database compactly (VACUUM on both databases)."""
        with self._lock:
            self.refuse_while_user_jobs_run("compact")
            started = time.monotonic()
            maintenance.compact(self._files, self._engine)
            return f"compacted in {time.monotonic() - started:.3f} s"

    def close(self, before: Callable[[], None]) -> bool:
        """Mark the store closed after ``before`` (its last flushes); False if it already was.

        ``Busy`` while a user job of this process runs: closing lets go of this process's
        handles only, so another process's jobs do not hold it off.
        """
        with self._lock:
            if self.closed:
                return False
            self.refuse_while_user_jobs_run("close", here_only=True)
            before()
            self.closed = True
            return True

    # -- what a user job's own run calls (the job is the one running) --------------------

    def run_checkpoint(self) -> str:
        """Checkpoint without the refusal (a checkpoint job's run)."""
        return maintenance.checkpoint(self._files, self._engine)

    def run_backup(
        self, directory: Path, check: Callable[[], None], progress: Progress = no_progress
    ) -> BackupResult:
        """Back up without the refusal (a backup job's run); ``check`` raises when time is up."""
        return maintenance.back_up(
            self._files,
            self._engine,
            directory,
            store_id=self._store_id,
            now_us=self._now_us(),
            check=check,
            progress=progress,
        )

    def refuse_while_user_jobs_run(self, what: str, *, here_only: bool = False) -> None:
        """Raise ``Busy`` while a user job runs (here, or in any process on this database)."""
        if self.closed:
            raise StoreError(f"{what}: the store is closed")
        self._running.refuse(what)
        if here_only:
            return
        # "Running" is what the store says: a user job of another process (a CLI beside the
        # server, another server) holds these operations off too.
        elsewhere = self._runs.running_elsewhere(JobKind.USER)
        if elsewhere:
            names = ", ".join(sorted({f"{r.job} (instance {r.instance})" for r in elsewhere}))
            raise Busy(f"{what}: job {names} is running; try again when it has finished")
