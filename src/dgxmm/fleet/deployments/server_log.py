"""A process deployment's server log, read a bounded piece at a time.

The process backend appends the model server's output to ``server.log`` in its run
directory (and moves it to ``server.log.1`` past 64 MiB). The console follows it by asking
for what came after the last offset it saw; a file shorter than that offset was rotated, so
reading starts again from its beginning. No read returns more than ``MAX_CHUNK`` bytes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from dgxmm.errors import InvalidInput

__all__ = ["DEFAULT_TAIL", "MAX_CHUNK", "LogChunk", "read_log"]

DEFAULT_TAIL = 16 * 1024
MAX_CHUNK = 256 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class LogChunk:
    """Bytes ``start`` to ``end`` of a log of ``size`` bytes, as text."""

    text: str
    start: int
    end: int
    size: int
    rotated: bool  # the log is shorter than the offset asked for: read from its start

    def to_json(self) -> dict[str, object]:
        """Return the chunk as plain JSON values."""
        return {
            "text": self.text,
            "start": self.start,
            "end": self.end,
            "size": self.size,
            "rotated": self.rotated,
        }


def read_log(path: Path, *, offset: int | None = None, limit: int = DEFAULT_TAIL) -> LogChunk:
    """Return what follows ``offset`` (None: the last ``limit`` bytes), at most ``limit``."""
    if not 1 <= limit <= MAX_CHUNK:
        raise InvalidInput("limit", f"{limit} is out of range 1-{MAX_CHUNK}")
    if offset is not None and offset < 0:
        raise InvalidInput("offset", f"{offset} must be 0 or more")
    try:
        log = path.open("rb")
    except FileNotFoundError:
        return LogChunk(text="", start=0, end=0, size=0, rotated=bool(offset))
    with log:
        size = log.seek(0, os.SEEK_END)
        rotated = offset is not None and offset > size
        start = max(0, size - limit) if offset is None else 0 if rotated else offset
        log.seek(start)
        data = log.read(min(limit, size - start))
    if offset is None and start > 0:
        # A tail starts at a line: the first, cut, line is dropped.
        cut = data.find(b"\n")
        if 0 <= cut < len(data) - 1:
            start += cut + 1
            data = data[cut + 1 :]
    return LogChunk(
        text=data.decode(errors="replace"),
        start=start,
        end=start + len(data),
        size=size,
        rotated=rotated,
    )
