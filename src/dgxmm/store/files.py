"""Durable file writes: a temporary file, fsync, rename, fsync of the directory."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

__all__ = ["fsync_dir", "write_atomic"]


def write_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves either the old or the new file.

    ``durable=False`` skips the fsyncs: the rename is still atomic for other processes, but
    after a power loss the file may be the old one, or (on some file systems) empty.
    """
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(temp, "wb") as out:
            out.write(data)
            out.flush()
            if durable:
                os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
        raise
    if durable:
        fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    """Make the entries of directory ``path`` (renames, new files) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
