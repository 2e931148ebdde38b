"""The dirty-page log of a SQLite store: which pages each tracked checkpoint wrote.

A file beside the database (``<db>.dirty-pages``) holds, for every page, the generation of the
last tracked checkpoint that copied it from the WAL into the database file. A backup
directory remembers the generation it saw last; the pages changed since are those with a
greater generation. The log also remembers what it needs to tell whether it can be trusted:

- ``db_signature``: the database file's size, times and inode right after our last checkpoint
  (None while one is under way). In WAL mode only a checkpoint writes the database file, so a
  different signature means someone else checkpointed, and pages may have changed unseen;
- ``wal``: the WAL's salts, how many of its frames were recorded (up to the last commit
  frame) and that frame's checksum. Salts that did not change mean the WAL was not
  restarted, so every frame since is still there to be read: then a checkpoint by someone
  else lost nothing. The checksum tells that the recorded frames were not written over.

When the log cannot vouch for a span, it marks itself untrusted from that generation
(``trusted_since``, with the reason in ``distrust_reason``), and a backup whose last
generation is older compares every page's checksum instead. A log of an older format is
distrusted once: its frame counts could include a killed transaction's frames.

The file is rewritten whole and atomically (4 bytes a page: 200 KB for a 200 MB database).
"""

from __future__ import annotations

import json
import struct
import sys
import uuid
import zlib
from array import array
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dgxmm.store.files import write_atomic

__all__ = ["PageLog"]

_MAGIC = b"DGXMMPG1"
_FORMAT = 2  # 2: ``wal`` counts frames up to the last commit, with that frame's checksum
_OLD_FORMAT = (
    "the dirty-page log was written by an older dgxmm, whose frame counts could include "
    "a killed or rolled-back transaction's frames"
)


class PageLog:
    """Per-page generations of tracked checkpoints, and what says they can be trusted."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tracking_id = uuid.uuid4().hex
        self.generation = 0
        self.trusted_since = 1
        self.db_signature: list[int] | None = None
        self.wal: list[int] | None = None  # [salt1, salt2, frames recorded, checksum1, 2]
        self.distrust_reason: str | None = None  # why the log is untrusted before trusted_since
        self._gens = array("I")

    @classmethod
    def load(cls, path: Path) -> PageLog:
        """Read the log; a missing or damaged one starts afresh (a new tracking id)."""
        log = cls(path)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return log
        try:
            header, gens = _parse(data)
        except ValueError:
            return log
        log.tracking_id = str(header["tracking_id"])
        log.generation = int(header["generation"])
        log.trusted_since = int(header["trusted_since"])
        log.db_signature = header.get("db_signature")
        log.wal = header.get("wal")
        log.distrust_reason = header.get("distrust_reason")
        log._gens = gens
        if header.get("format") != _FORMAT:
            log.wal = None
            log.trusted_since = log.generation + 1
            log.distrust_reason = _OLD_FORMAT
        return log

    def record(
        self, pages: Iterable[int], *, wal: list[int] | None, distrust: str | None = None
    ) -> int:
        """Start a checkpoint: mark ``pages`` with a new generation and save; return it.

        ``distrust``: why pages may have changed unseen before this generation, if they may.
        """
        generation = self.generation + 1
        if distrust is not None:
            self._distrust(generation, distrust)
        gens = self._gens
        for page in pages:
            if page >= len(gens):
                gens.extend([0] * (page + 1 - len(gens)))
            gens[page] = generation
        self.generation = generation
        self.db_signature = None  # a checkpoint is under way until finish() says otherwise
        self.wal = wal
        self.save()
        return generation

    def finish(
        self, signature: list[int], *, wal: list[int] | None, distrust: str | None = None
    ) -> None:
        """End a checkpoint: remember the database file as our checkpoint left it.

        ``wal``: the WAL as checked against SQLite's count; ``distrust``: why this
        checkpoint's own pages may be incomplete, if they may. Fsynced only then: if a crash
        loses this write, the log still says a checkpoint was under way, and the next one
        reads the WAL from frame 1 (or, if it was restarted, distrusts the log).
        """
        self.db_signature = signature
        self.wal = wal
        if distrust is not None:
            self._distrust(self.generation, distrust)
        self.save(durable=distrust is not None)

    def _distrust(self, generation: int, reason: str) -> None:
        self.trusted_since = generation
        self.distrust_reason = reason

    def is_trusted_since(self, tracking_id: str, generation: int) -> bool:
        """Tell whether every page changed after ``generation`` of ``tracking_id`` is marked."""
        return tracking_id == self.tracking_id and generation >= self.trusted_since

    def changed_since(self, generation: int, page_count: int) -> list[int]:
        """Return the pages (1..page_count) marked after ``generation``."""
        gens = self._gens[: page_count + 1]
        return [page for page, mark in enumerate(gens) if mark > generation and page > 0]

    def save(self, *, durable: bool = True) -> None:
        """Write the log atomically (and durably, unless told otherwise)."""
        header = json.dumps(
            {
                "format": _FORMAT,
                "tracking_id": self.tracking_id,
                "generation": self.generation,
                "trusted_since": self.trusted_since,
                "db_signature": self.db_signature,
                "wal": self.wal,
                "distrust_reason": self.distrust_reason,
            }
        ).encode()
        gens = array("I", self._gens)
        if sys.byteorder == "big":
            gens.byteswap()
        body = _MAGIC + struct.pack("<I", len(header)) + header + gens.tobytes()
        write_atomic(self.path, body + struct.pack("<I", zlib.crc32(body)), durable=durable)


def _parse(data: bytes) -> tuple[dict[str, Any], array[int]]:
    if len(data) < len(_MAGIC) + 8 or not data.startswith(_MAGIC):
        raise ValueError("not a dirty-page log")
    body, (crc,) = data[:-4], struct.unpack("<I", data[-4:])
    if zlib.crc32(body) != crc:
        raise ValueError("damaged dirty-page log")
    (length,) = struct.unpack("<I", body[8:12])
    header = json.loads(body[12 : 12 + length])
    gens = array("I")
    gens.frombytes(body[12 + length :])
    if sys.byteorder == "big":
        gens.byteswap()
    return header, gens
