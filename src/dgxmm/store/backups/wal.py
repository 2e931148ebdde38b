"""The tracked checkpoint of a SQLite store, and consistent reads of its pages.

The store turns SQLite's automatic checkpoints off and does every checkpoint itself, so that
it knows which pages each one copies into the database file (``pagelog.py``):

1. one connection takes the write lock (``BEGIN IMMEDIATE``), so no frame can be added;
2. the WAL's frame headers are read (the 32-byte WAL header, then a 24-byte header per frame;
   frames whose salts differ from the header's are left over from before a restart, frames
   after the last commit frame from a transaction that rolled back or was killed), and
   their page numbers are recorded, durably, in the dirty-page log;
3. a second connection runs ``PRAGMA wal_checkpoint(PASSIVE)``, which also tells how many
   frames SQLite counts: the scan's count is checked against it;
4. the database file's signature is recorded; the write lock is released.

Recording before checkpointing over-approximates at worst (a crash between the two marks
pages that were not yet copied), which costs a backup a few pages and never misses one.

A consistent copy of the pages (``snapshot``): a tracked checkpoint that copies every frame
(retried until readers of older snapshots are gone), then, still under the write lock, a
third connection opens a read transaction. With the WAL fully copied, SQLite gives that
reader the slot that reads the database file only, and no checkpoint may write the file
while it reads: the file itself is the snapshot, read with ``os.pread``.

The database file is opened once, by the store, and kept open until it closes: closing any
descriptor of a file drops every POSIX lock the process holds on it, SQLite's included.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from dgxmm.errors import Busy, StoreError
from dgxmm.store.backups.pagelog import PageLog
from dgxmm.store.database import BUSY_TIMEOUT_MS, configure_sqlite_connection

__all__ = ["AUTO_CHECKPOINT_BYTES", "CheckpointResult", "Snapshot", "SqliteFiles", "scan_wal"]

AUTO_CHECKPOINT_BYTES = 4 * 1024 * 1024
_WAL_MAGIC = (0x377F0682, 0x377F0683)
_WAL_HEADER = 32
_FRAME_HEADER = 24
_AUTO_BUSY_MS = 50
_AUTO_INTERVAL_S = 1.0

_OVERWRITTEN = (
    "the WAL's frames the last checkpoint recorded were written over under the same salts"
)
_RESTARTED = (
    "the database was checkpointed by someone else, or a checkpoint was interrupted, and "
    "the WAL was restarted since"
)
_MISSED = "a checkpoint read fewer WAL frames than SQLite holds"

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class WalScan:
    """What the WAL holds up to its last commit: salts, frames, the pages not yet seen."""

    salts: tuple[int, int] | None
    frames: int  # up to and including the last commit frame
    checksum: tuple[int, int]  # the cumulative checksum in that frame's header; (0, 0): none
    pages: frozenset[int]
    broken: bool  # the frames ``known`` recorded were not there as recorded: read from frame 1

    def mark(self) -> list[int] | None:
        """Return what the dirty-page log keeps of this scan: salts, frames, checksum."""
        if self.salts is None:
            return None
        return [*self.salts, self.frames, *self.checksum]


def scan_wal(path: Path, known: list[int] | None = None) -> WalScan:
    """Read the WAL's frame headers after the frames ``known`` (a ``WalScan.mark``) recorded.

    Only frames up to the last commit frame count: those after it belong to a transaction
    that was rolled back or killed, and SQLite writes the next transaction over them under
    the same salts. SQLite never writes over the frames it counts until it restarts the WAL
    with new salts, and the count ``known`` holds was checked against SQLite's when it was
    recorded (``_checked``). Still, ``known`` is believed only while its last frame is there
    with the checksum it had; otherwise the scan reads from frame 1 and says it is
    ``broken``.
    """
    empty = WalScan(salts=None, frames=0, checksum=(0, 0), pages=frozenset(), broken=False)
    try:
        wal = open(path, "rb")  # noqa: SIM115 - read with pread below
    except FileNotFoundError:
        return empty
    with wal:
        fd = wal.fileno()
        header = os.pread(fd, _WAL_HEADER, 0)
        if len(header) < _WAL_HEADER:
            return empty
        magic, _version, page_size, _seq, salt1, salt2 = struct.unpack(">6I", header[:24])
        if magic not in _WAL_MAGIC or page_size < 512:
            return empty
        salts = (salt1, salt2)
        frames_of = _Frames(fd, page_size)
        first, checksum, broken = 0, (0, 0), False
        if known is not None and tuple(known[:2]) == salts and known[2] > 0:
            last = frames_of.header(known[2])
            if last is not None and last[2:] == (*salts, known[3], known[4]):
                first, checksum = known[2], (known[3], known[4])
            else:
                broken = True
        pages: set[int] = set()
        pending: set[int] = set()  # pages of the frames after the last commit frame so far
        frames, number = first, first + 1
        while (found := frames_of.header(number)) is not None:
            page, commit, frame_salt1, frame_salt2, sum1, sum2 = found
            if (frame_salt1, frame_salt2) != salts:
                break  # left over from before the last restart
            pending.add(page)
            if commit:
                pages |= pending
                pending.clear()
                frames, checksum = number, (sum1, sum2)
            number += 1
        return WalScan(
            salts=salts, frames=frames, checksum=checksum, pages=frozenset(pages), broken=broken
        )


class _Frames:
    """The frame headers of an open WAL file."""

    def __init__(self, fd: int, page_size: int) -> None:
        self.fd = fd
        self.size = os.fstat(fd).st_size
        self.frame = page_size + _FRAME_HEADER

    def header(self, number: int) -> tuple[int, int, int, int, int, int] | None:
        """Return page, commit size, salts and checksum of frame ``number`` (1-based)."""
        offset = _WAL_HEADER + (number - 1) * self.frame
        if offset + self.frame > self.size:
            return None  # past the end, or cut short
        page, commit, salt1, salt2, sum1, sum2 = struct.unpack(
            ">6I", os.pread(self.fd, _FRAME_HEADER, offset)
        )
        return page, commit, salt1, salt2, sum1, sum2


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointResult:
    """What a tracked checkpoint did."""

    frames: int  # frames in the WAL
    copied: int  # frames copied into the database file (all of them when complete)
    pages: int  # pages newly recorded as changed
    generation: int
    trusted: bool  # False: pages may have changed unseen; the log is trusted from here

    @property
    def complete(self) -> bool:
        """Tell whether every frame of the WAL is now in the database file."""
        return self.copied >= self.frames


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """A consistent view of the database file, valid inside ``SqliteFiles.snapshot``."""

    page_size: int
    page_count: int
    generation: int
    read_page: Callable[[int], bytes]


class SqliteFiles:
    """The files of a SQLite store: tracked checkpoints, the dirty-page log, page reads."""

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        self.wal_path = db_path.with_name(db_path.name + "-wal")
        self.pagelog = PageLog.load(db_path.with_name(db_path.name + ".dirty-pages"))
        self._lock = threading.Lock()
        self._closed = False
        self._last_auto = 0.0
        self._writer = self._connect()
        self._checkpointer = self._connect()
        self._reader = self._connect()
        self._fd = os.open(db_path, os.O_RDONLY)

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            self.db_path, isolation_level=None, check_same_thread=False, timeout=0
        )
        configure_sqlite_connection(connection)
        return connection

    def checkpoint(self, *, busy_ms: int = BUSY_TIMEOUT_MS) -> CheckpointResult:
        """Do a tracked checkpoint; ``Busy`` when the write lock stays taken."""
        with self._lock:
            return self._checkpoint(busy_ms=busy_ms)

    def maybe_checkpoint(self) -> None:
        """Checkpoint when the WAL has grown past a few MB; never waits, never raises."""
        try:
            size = os.stat(self.wal_path).st_size
        except FileNotFoundError:
            return
        now = time.monotonic()
        if size < AUTO_CHECKPOINT_BYTES or now - self._last_auto < _AUTO_INTERVAL_S:
            return
        if not self._lock.acquire(blocking=False):
            return
        try:
            if self._closed:
                return
            self._last_auto = now
            self._checkpoint(busy_ms=_AUTO_BUSY_MS)
        except Busy:
            pass  # a writer holds the lock; the next commit tries again
        except Exception:
            log.exception("automatic checkpoint of %s failed", self.db_path)
        finally:
            self._lock.release()

    @contextmanager
    def snapshot(self, *, deadline: float) -> Iterator[Snapshot]:
        """Yield a consistent view of the database file (``deadline``: ``time.monotonic``)."""
        with self._lock:
            result = self._checkpoint_to_snapshot(deadline)
            try:
                page_size = int(self._reader.execute("PRAGMA page_size").fetchone()[0])
                page_count = int(self._reader.execute("PRAGMA page_count").fetchone()[0])
                yield Snapshot(
                    page_size=page_size,
                    page_count=page_count,
                    generation=result.generation,
                    read_page=lambda page: self._read_page(page, page_size),
                )
            finally:
                self._reader.execute("ROLLBACK")

    def vacuum(self) -> None:
        """Rebuild the database file compactly (VACUUM), then checkpoint it."""
        with self._lock:
            try:
                self._checkpointer.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
                self._checkpointer.execute("VACUUM")
            except sqlite3.OperationalError as error:
                raise _busy_or_error(error, "compact") from error
            self._checkpoint(busy_ms=BUSY_TIMEOUT_MS)

    def close(self) -> None:
        """Checkpoint a last time and close; the engine's connections must be closed first."""
        with self._lock:
            if self._closed:
                return
            try:
                self._checkpoint(busy_ms=BUSY_TIMEOUT_MS)
            finally:
                self._closed = True
                for connection in (self._reader, self._writer, self._checkpointer):
                    connection.close()
                os.close(self._fd)

    # -- inside -------------------------------------------------------------------------------

    def _checkpoint_to_snapshot(self, deadline: float) -> CheckpointResult:
        """Checkpoint until complete and open the reader under the write lock."""
        opened: list[CheckpointResult] = []

        def open_reader(result: CheckpointResult) -> None:
            if result.complete:
                self._reader.execute("BEGIN")
                self._reader.execute("SELECT count(*) FROM sqlite_schema").fetchone()
                opened.append(result)

        while True:
            self._checkpoint(busy_ms=BUSY_TIMEOUT_MS, while_locked=open_reader)
            if opened:
                return opened[0]
            if time.monotonic() >= deadline:
                raise Busy(
                    "a reader holds an older snapshot of the database, so the WAL cannot be "
                    "copied whole; try again when its work has finished"
                )
            time.sleep(0.05)

    def _checkpoint(
        self,
        *,
        busy_ms: int,
        while_locked: Callable[[CheckpointResult], None] | None = None,
    ) -> CheckpointResult:
        writer = self._writer
        try:
            writer.execute(f"PRAGMA busy_timeout={busy_ms}")
            writer.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            raise _busy_or_error(error, "checkpoint") from error
        try:
            pagelog = self.pagelog
            # After a checkpoint killed half way, the frame count the log holds was never
            # checked against SQLite's: read the WAL from frame 1 (same salts: all is there).
            interrupted = pagelog.db_signature is None
            scan = scan_wal(self.wal_path, None if interrupted else pagelog.wal)
            same_file = self._signature() == pagelog.db_signature
            same_wal = (
                scan.salts is not None
                and pagelog.wal is not None
                and (list(scan.salts) == pagelog.wal[:2])
            )
            distrust = None
            if scan.broken:
                distrust = _OVERWRITTEN
            elif pagelog.generation > 0 and not (same_file or same_wal):
                distrust = _RESTARTED
            generation = pagelog.record(scan.pages, wal=scan.mark(), distrust=distrust)
            try:
                _busy, frames, copied = self._checkpointer.execute(
                    "PRAGMA wal_checkpoint(PASSIVE)"
                ).fetchone()
            except sqlite3.OperationalError as error:
                raise _busy_or_error(error, "checkpoint") from error
            wal, late = _checked(scan, int(frames))
            pagelog.finish(self._signature(), wal=wal, distrust=late)
            result = CheckpointResult(
                frames=max(0, int(frames)),
                copied=max(0, int(copied)),
                pages=len(scan.pages),
                generation=generation,
                trusted=distrust is None and late is None,
            )
            if while_locked is not None:
                while_locked(result)
            return result
        finally:
            writer.execute("ROLLBACK")

    def _signature(self) -> list[int]:
        stat = os.stat(self.db_path)
        return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino]

    def _read_page(self, page: int, page_size: int) -> bytes:
        data = os.pread(self._fd, page_size, (page - 1) * page_size)
        if len(data) != page_size:
            raise StoreError(f"page {page} of {self.db_path} is cut short ({len(data)} bytes)")
        return data


def _checked(scan: WalScan, frames: int) -> tuple[list[int] | None, str | None]:
    """Check the scan against SQLite's own count of the WAL's frames (``frames``).

    Return what the log keeps of the WAL, and why it cannot be trusted if it cannot. Where
    the counts differ (a commit frame whose checksum fails, torn by a kill; a checkpoint
    that could not run), the next scan reads from frame 1; where SQLite counts more frames,
    this scan missed pages.
    """
    late = _MISSED if frames > scan.frames else None
    if scan.salts is None or frames == scan.frames:
        return scan.mark(), late
    return [*scan.salts, 0, 0, 0], late


def _busy_or_error(error: sqlite3.OperationalError, what: str) -> Exception:
    text = str(error)
    if "locked" in text or "busy" in text:
        return Busy(f"{what}: the database is busy ({text}); try again")
    return StoreError(f"{what} failed: {text}")
