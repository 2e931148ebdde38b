"""Durable file writes: a temporary file, fsync, rename, fsync of the directory.

Files the store writes for itself are created 0600 and directories 0700: they hold the
database's contents or statistics about it, which no other user of the machine should read.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

__all__ = ["DIR_MODE", "FILE_MODE", "fsync_dir", "make_private_dir", "write_atomic"]

FILE_MODE = 0o600
DIR_MODE = 0o700


def make_private_dir(path: Path) -> None:
    """Create ``path`` (and missing parents) if missing; the directory itself only for us."""
    if not path.is_dir():
        path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)


def write_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves either the old or the new file.

    ``durable=False`` skips the fsyncs: the rename is still atomic for other processes, but
    after a power loss the file may be the old one, or (on some file systems) empty. The
    file is created 0600.
    """
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        with open(descriptor, "wb") as out:
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
