"""The sealing key: kept outside the database, in the data directory, and rotated there.

``alerts.key`` (mode 0600, made at the first start; a restore may not write it) holds the
key in hexadecimal, unless ``DGXMM_ALERTS_KEY`` gives it (64 or more hexadecimal digits).
Instances on one PostgreSQL database share it.

A rotation (``Alerts.rotate_key``) writes the new key to ``alerts.key.next`` first, seals
every value again under it in one transaction, then puts it in place of ``alerts.key`` (a
rename). Cut short between the two, the next start finds ``alerts.key.next``: it opens with
either key, seals everything under the next one, and finishes the rename. So no moment
leaves a value sealed under a key that is nowhere on disk.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from dgxmm.alerts.sealing import MIN_KEY_BYTES
from dgxmm.errors import Conflict, InvalidInput
from dgxmm.store.files import write_atomic

__all__ = ["KEY_ENV", "KEY_FILE", "KeyFile", "Keys", "load_or_create_key"]

KEY_FILE = "alerts.key"
KEY_ENV = "DGXMM_ALERTS_KEY"
_NEXT = ".next"


@dataclass(frozen=True, slots=True, kw_only=True)
class Keys:
    """The key to seal with, and the keys that may still open values (a rotation cut short)."""

    current: bytes
    older: tuple[bytes, ...] = ()


class KeyFile:
    """The sealing key of one data directory (or of ``DGXMM_ALERTS_KEY``)."""

    def __init__(self, data_dir: Path, environ: Mapping[str, str] | None = None) -> None:
        self.path = data_dir / KEY_FILE
        self._next = data_dir / (KEY_FILE + _NEXT)
        self._environ = os.environ if environ is None else environ

    @property
    def from_environment(self) -> bool:
        """Tell whether ``DGXMM_ALERTS_KEY`` gives the key (then it is not rotated here)."""
        return bool(self._environ.get(KEY_ENV))

    def load(self) -> Keys:
        """Return the keys: the environment's, else the file's (made if missing)."""
        given = self._environ.get(KEY_ENV)
        if given:
            return Keys(current=_parse(given, KEY_ENV))
        current = load_or_create_key(self.path.parent, environ={})
        if self._next.exists():  # a rotation cut short: its key is the one to finish with
            return Keys(current=_read(self._next), older=(current,))
        return Keys(current=current)

    def begin(self, key: bytes) -> None:
        """Write the rotation's new key beside the current one (durably, 0600)."""
        if self.from_environment:
            raise Conflict(
                f"the sealing key comes from {KEY_ENV}, which dgxmm cannot change: "
                "rotate-key rotates a key kept in alerts.key (docs/alerts.md)"
            )
        write_atomic(self._next, (key.hex() + "\n").encode())

    def pending(self) -> bool:
        """Tell whether a rotation's new key waits to be put in place."""
        return not self.from_environment and self._next.exists()

    def commit(self) -> None:
        """Put the rotation's new key in place of the current one."""
        os.replace(self._next, self.path)
        _sync_dir(self.path.parent)

    def abort(self) -> None:
        """Drop the rotation's new key (nothing was sealed under it)."""
        self._next.unlink(missing_ok=True)


def load_or_create_key(data_dir: Path, environ: Mapping[str, str] | None = None) -> bytes:
    """Return the sealing key: ``DGXMM_ALERTS_KEY`` (hex), else ``alerts.key``, made if missing."""
    env = os.environ if environ is None else environ
    given = env.get(KEY_ENV)
    if given:
        return _parse(given, KEY_ENV)
    path = data_dir / KEY_FILE
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    key = secrets.token_bytes(32)
    # O_EXCL: of two processes making it at once, one writes it and the other reads it.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read(path)
    with os.fdopen(fd, "w") as out:
        out.write(key.hex() + "\n")
        out.flush()
        os.fsync(out.fileno())
    return key


def _parse(text: str, field: str) -> bytes:
    try:
        key = bytes.fromhex(text.strip())
    except ValueError:
        key = b""
    if len(key) < MIN_KEY_BYTES:
        raise InvalidInput(field, "a key of 64 or more hexadecimal digits")
    return key


def _read(path: Path) -> bytes:
    text = path.read_text()
    try:
        return _parse(text, str(path))
    except InvalidInput:
        raise InvalidInput(str(path), "not a sealing key (64 or more hexadecimal digits)") from None


def _sync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
