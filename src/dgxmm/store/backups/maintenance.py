"""The store's file operations on either database: checkpoint, backup, compact.

Each picks the database's own way: SQLite works through its ``SqliteFiles`` (the tracked
WAL checkpoint, page-level backups, VACUUM through the WAL); PostgreSQL through SQL
(``CHECKPOINT``, per-table backups, plain ``VACUUM``). ``Store`` adds what surrounds them:
the files lock and the refusal while a user job runs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Engine

from dgxmm.errors import StoreError
from dgxmm.store.backups import postgresql as backup_pg
from dgxmm.store.backups import sqlite as sqlite_backup
from dgxmm.store.backups.directory import BackupResult, Progress, no_progress
from dgxmm.store.backups.wal import SqliteFiles
from dgxmm.words import counted

__all__ = ["back_up", "checkpoint", "compact"]


def checkpoint(files: SqliteFiles | None, engine: Engine) -> str:
    """Checkpoint the database; return what it did."""
    if files is not None:
        result = files.checkpoint()
        return (
            f"copied {result.copied} of {counted(result.frames, 'WAL frame')}; "
            f"{counted(result.pages, 'page')} changed"
        )
    with engine.connect() as connection:
        connection.execution_options(isolation_level="AUTOCOMMIT")
        try:
            connection.exec_driver_sql("CHECKPOINT")
        except Exception as error:
            raise StoreError(f"checkpoint: PostgreSQL refused CHECKPOINT ({error})") from error
    return "CHECKPOINT done"


def back_up(
    files: SqliteFiles | None,
    engine: Engine,
    directory: Path,
    *,
    store_id: str,
    now_us: int,
    check: Callable[[], None],
    progress: Progress = no_progress,
) -> BackupResult:
    """Back the database up into ``directory`` (``check`` raises when time is up)."""
    if files is not None:
        return sqlite_backup.backup_sqlite(
            files, directory, store_id=store_id, now_us=now_us, check=check, progress=progress
        )
    return backup_pg.backup_postgresql(
        engine, directory, store_id=store_id, now_us=now_us, check=check, progress=progress
    )


def compact(files: SqliteFiles | None, engine: Engine) -> None:
    """Rebuild the database compactly (VACUUM)."""
    if files is not None:
        files.vacuum()
        return
    with engine.connect() as connection:
        connection.execution_options(isolation_level="AUTOCOMMIT")
        connection.exec_driver_sql("VACUUM")
