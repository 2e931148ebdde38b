"""Backups of a SQLite store: page by page, the first a full copy, the next only what changed.

A run reads a consistent snapshot of the database file (``SqliteFiles.snapshot``) and writes
``pages.bin`` (the pages it stores, one after another), ``pages.json`` (``[page, checksum]``
of each, BLAKE2b of 16 bytes) and a manifest: sequence, base, page size, page count, the
dirty-page log's id and generation it saw, and the SHA-256 of ``pages.json``. The manifest
stays small, so that a run reads only the manifests of the runs before it.

Which pages a later run stores:

- ``tracked``: the pages the dirty-page log marked since the run before, plus page 1 and any
  page past the old end. It reads no other page: the cost follows what changed;
- ``compared``: when the log cannot vouch for that span (someone else checkpointed the
  database, the log was lost, the directory's last run is older than the log's trust), every
  page is read and its checksum compared with the chain's; only the pages that differ are
  stored. Slower, and it still writes only what changed;
- ``full``: the first run, or when the page size changed.

``restore`` rebuilds the database from the full copy and every later run, checks every page
against its checksum, runs ``PRAGMA integrity_check`` on the result, and only then moves it to
its place.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dgxmm.errors import BackupError, Conflict
from dgxmm.store.backups.directory import (
    BackupDir,
    BackupResult,
    Progress,
    RestoreResult,
    Run,
    manifest_head,
    no_progress,
    read_marker,
    read_runs,
    restoring_beside,
    write_manifest,
)
from dgxmm.store.backups.wal import Snapshot, SqliteFiles
from dgxmm.store.files import fsync_dir
from dgxmm.store.schema import settings

__all__ = ["backup_sqlite", "restore_sqlite"]

PAGES = "pages.bin"
PAGE_LIST = "pages.json"  # [[page, checksum], ...] in the order of pages.bin
_CHUNK_PAGES = 256
_SNAPSHOT_WAIT_S = 30.0

Check = Callable[[], None]


def checksum(page: bytes) -> str:
    """Return a page's checksum as hex."""
    return hashlib.blake2b(page, digest_size=16).hexdigest()


def backup_sqlite(
    files: SqliteFiles,
    directory: Path,
    *,
    store_id: str,
    now_us: int,
    check: Check,
    progress: Progress = no_progress,
) -> BackupResult:
    """Back the database up into ``directory``; ``check`` raises when time is up."""
    target = BackupDir(directory, kind="sqlite", store_id=store_id)
    runs = target.open_for_backup()
    check()
    with files.snapshot(deadline=time.monotonic() + _SNAPSHOT_WAIT_S) as snapshot:
        check()
        sequence = len(runs) + 1
        last = runs[-1].manifest if runs else None
        method, pages, reason = _choose(files, snapshot, runs, last)
        with target.new_run(sequence) as temp:
            stored, written = _write_pages(
                temp / PAGES,
                snapshot,
                method=method,
                pages=pages,
                runs=runs,
                check=check,
                progress=progress,
            )
            check()
            listing = json.dumps(stored, separators=(",", ":")).encode()
            (temp / PAGE_LIST).write_bytes(listing)
            manifest: dict[str, Any] = {
                **manifest_head(kind="sqlite", format=1, runs=runs, method=method, now_us=now_us),
                "page_size": snapshot.page_size,
                "page_count": snapshot.page_count,
                "tracking": {"id": files.pagelog.tracking_id, "generation": snapshot.generation},
                "stored": len(stored),
                "page_list_sha256": hashlib.sha256(listing).hexdigest(),
            }
            write_manifest(temp, manifest)
    return BackupResult(
        directory=directory,
        sequence=sequence,
        method=method,
        items=len(stored),
        bytes_written=written,
        reason=reason,
    )


def _choose(
    files: SqliteFiles, snapshot: Snapshot, runs: list[Run], last: dict[str, Any] | None
) -> tuple[str, list[int], str | None]:
    """Pick how this run finds what changed, which pages (for ``tracked``), and why."""
    everything = list(range(1, snapshot.page_count + 1))
    if last is None:
        return "full", everything, None
    if last["page_size"] != snapshot.page_size:
        reason = f"the page size changed from {last['page_size']} to {snapshot.page_size}"
        return "full", everything, reason
    tracking = last.get("tracking") or {}
    pagelog = files.pagelog
    if pagelog.is_trusted_since(str(tracking.get("id")), int(tracking.get("generation", -1))):
        changed = set(pagelog.changed_since(int(tracking["generation"]), snapshot.page_count))
        changed.add(1)
        changed.update(range(int(last["page_count"]) + 1, snapshot.page_count + 1))
        return "tracked", sorted(changed), None
    if tracking.get("id") != pagelog.tracking_id:
        reason = "the dirty-page log is not the one the last run saw (lost, damaged or new)"
    else:
        reason = pagelog.distrust_reason or "the dirty-page log cannot vouch for the span"
    return "compared", everything, reason


def _write_pages(
    path: Path,
    snapshot: Snapshot,
    *,
    method: str,
    pages: list[int],
    runs: list[Run],
    check: Check,
    progress: Progress,
) -> tuple[list[list[Any]], int]:
    """Write the pages this run stores; return their ``[page, checksum]`` and the bytes."""
    known = _chain_checksums(runs) if method == "compared" else {}
    stored: list[list[Any]] = []
    written = 0
    with open(path, "wb") as out:
        for start in range(0, len(pages), _CHUNK_PAGES):
            check()
            for page in pages[start : start + _CHUNK_PAGES]:
                data = snapshot.read_page(page)
                digest = checksum(data)
                if method == "compared" and known.get(page) == digest:
                    continue
                out.write(data)
                written += len(data)
                stored.append([page, digest])
            progress(min(start + _CHUNK_PAGES, len(pages)), len(pages))
    return stored, written  # fsynced with the rest of the run when it commits


def _chain_checksums(runs: list[Run]) -> dict[int, str]:
    """Return every page's checksum as of the chain's last run."""
    table: dict[int, str] = {}
    for run in runs:
        if run.manifest["method"] == "full":
            table.clear()
        table.update((int(page), str(digest)) for page, digest in page_list(run))
    count = int(runs[-1].manifest["page_count"])
    return {page: digest for page, digest in table.items() if page <= count}


def page_list(run: Run) -> list[list[Any]]:
    """Return the ``[page, checksum]`` list of a run, checked against its manifest."""
    try:
        listing = (run.path / PAGE_LIST).read_bytes()
    except FileNotFoundError:
        raise BackupError(f"{run.path / PAGE_LIST} is missing") from None
    if hashlib.sha256(listing).hexdigest() != run.manifest.get("page_list_sha256"):
        raise BackupError(f"{run.path / PAGE_LIST} does not match its manifest")
    entries: list[list[Any]] = json.loads(listing)
    return entries


def restore_sqlite(
    directory: Path,
    target: Path,
    progress: Progress = no_progress,
    *,
    drop_settings: tuple[str, ...] = (),
) -> RestoreResult:
    """Rebuild a database file at ``target`` from ``directory``; verified, then linked in place.

    ``target`` is a resolved path the caller checked (``recovery.check_file_target``). The
    file is built in a scratch directory beside it and hard-linked into place, so a file
    that appeared there meanwhile is refused, never replaced. The settings whose keys start
    with one of ``drop_settings`` (the instance's, not the data's) are deleted from it first.
    """
    marker = read_marker(directory)
    if marker.get("kind") != "sqlite":
        raise BackupError(f"{directory} holds a {marker.get('kind')} backup, not a SQLite one")
    runs = read_runs(directory)
    if not runs:
        raise BackupError(f"{directory} holds no finished backup run")
    last = runs[-1].manifest
    page_size, page_count = int(last["page_size"]), int(last["page_count"])
    where = _locate(runs, page_size)
    with restoring_beside(target) as scratch:
        built = scratch / "restoring.db"
        _assemble(built, where, page_size, page_count, progress)
        _drop_settings(built, drop_settings)
        _verify(built)
        _link_new(built, target)
    fsync_dir(target.parent)
    return RestoreResult(target=str(target), sequence=runs[-1].sequence, items=page_count)


def _link_new(built: Path, target: Path) -> None:
    """Give ``built`` the name ``target``, refusing a name that exists (never replacing it)."""
    appeared = Conflict(f"{target} appeared while restoring; it was left alone", field="target")
    try:
        os.link(built, target)
    except FileExistsError:
        raise appeared from None
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
        # A file system without hard links: a rename, which would replace, after a check.
        if os.path.lexists(target):
            raise appeared from None
        os.rename(built, target)


def _locate(runs: list[Run], page_size: int) -> dict[int, tuple[Path, int, str]]:
    """Map each page to the run file, offset and checksum of its latest copy."""
    where: dict[int, tuple[Path, int, str]] = {}
    for run in runs:
        manifest = run.manifest
        if manifest["method"] == "full":
            where.clear()
        elif int(manifest["page_size"]) != page_size:
            raise BackupError(f"backup run {run.path} changes the page size without a full copy")
        data = run.path / PAGES
        entries = page_list(run)
        size = data.stat().st_size if data.exists() else -1
        if size != len(entries) * int(manifest["page_size"]):
            raise BackupError(f"{data} holds {size} bytes, not {len(entries)} pages")
        for index, (page, digest) in enumerate(entries):
            where[int(page)] = (data, index * int(manifest["page_size"]), str(digest))
    return where


def _assemble(
    temp: Path,
    where: dict[int, tuple[Path, int, str]],
    page_size: int,
    page_count: int,
    progress: Progress,
) -> None:
    handles: dict[Path, Any] = {}
    try:
        with open(temp, "wb") as out:
            for page in range(1, page_count + 1):
                found = where.get(page)
                if found is None:
                    raise BackupError(f"page {page} is in no backup run")
                path, offset, digest = found
                handle = handles.get(path)
                if handle is None:
                    handle = handles[path] = open(path, "rb")  # noqa: SIM115 - closed below
                data = os.pread(handle.fileno(), page_size, offset)
                if len(data) != page_size or checksum(data) != digest:
                    raise BackupError(f"page {page} in {path} does not match its checksum")
                out.write(data)
                if page % _CHUNK_PAGES == 0 or page == page_count:
                    progress(page, page_count)
            out.flush()
            os.fsync(out.fileno())
    finally:
        for handle in handles.values():
            handle.close()


def _drop_settings(path: Path, prefixes: tuple[str, ...]) -> None:
    """Delete the settings under ``prefixes`` from the assembled file (pages checked already).

    The pages are an exact copy, so this is the only place to leave them out: the file is
    otherwise what was live. Its last connection's close checkpoints and removes the WAL
    it made, so only the database file is linked into place.
    """
    if not prefixes:
        return
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        there = connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (settings.name,)
        ).fetchone()
        if there is not None:
            connection.execute("BEGIN IMMEDIATE")
            for prefix in prefixes:
                connection.execute(
                    f"DELETE FROM {settings.name} WHERE substr(key, 1, ?) = ?",
                    (len(prefix), prefix),
                )
            connection.execute("COMMIT")
    except sqlite3.DatabaseError as error:
        raise BackupError(f"the restored database does not open: {error}") from error
    finally:
        connection.close()
    left = [p for p in (path.with_name(path.name + s) for s in ("-wal", "-shm")) if p.exists()]
    if any(p.name.endswith("-wal") and p.stat().st_size > 0 for p in left):
        raise BackupError(f"the restored database kept a write-ahead log: {left[0]}")
    for companion in left:
        companion.unlink()


def _verify(path: Path) -> None:
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        rows = [str(row[0]) for row in connection.execute("PRAGMA integrity_check")]
    except sqlite3.DatabaseError as error:
        raise BackupError(f"the restored database does not open: {error}") from error
    finally:
        connection.close()
    if rows != ["ok"]:
        raise BackupError(f"the restored database fails its integrity check: {rows[:3]}")
