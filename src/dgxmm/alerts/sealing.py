"""Sealing: a channel's URL and secret kept in the database as ciphertext, never in clear.

A webhook's secret must be read back to sign each message (a hash, as ``api_tokens`` keeps,
would not do), and a Slack or Teams webhook URL is itself a credential. Both are sealed with
a key that lives outside the database, in the data directory (``alerts.key``, mode 0600, or
``DGXMM_ALERTS_KEY``): a backup, a restore elsewhere, or a saved query reading the table
sees only ciphertext. Instances that share one PostgreSQL database share one key.

The construction uses only the standard library: HMAC-SHA256 in counter mode as the key
stream (a PRF, so a stream cipher under a fresh random nonce), then HMAC-SHA256 over the
version, nonce and ciphertext (encrypt-then-MAC), with separate keys derived for each. A
sealed text that was altered, or sealed under another key, does not open (``Unsealable``).
"""

from __future__ import annotations

import base64
import hmac
import os
import secrets
from pathlib import Path

from dgxmm.errors import DgxmmError, InvalidInput

__all__ = ["KEY_ENV", "KEY_FILE", "Sealer", "Unsealable", "load_or_create_key"]

KEY_FILE = "alerts.key"
KEY_ENV = "DGXMM_ALERTS_KEY"
_VERSION = b"s1"
_NONCE = 16
_TAG = 32


class Unsealable(DgxmmError):
    """A sealed value that does not open with this key (altered, or another instance's key)."""


class Sealer:
    """Seals and opens short texts under one 32-byte key."""

    def __init__(self, key: bytes) -> None:
        if len(key) < 32:
            raise ValueError("a sealing key has at least 32 bytes")
        self._encrypt = hmac.digest(key, b"dgxmm alerts: encrypt", "sha256")
        self._sign = hmac.digest(key, b"dgxmm alerts: authenticate", "sha256")

    def seal(self, text: str) -> str:
        """Return ``text`` sealed, as ASCII."""
        nonce = secrets.token_bytes(_NONCE)
        plain = text.encode()
        cipher = bytes(a ^ b for a, b in zip(plain, self._stream(nonce, len(plain)), strict=True))
        tag = hmac.digest(self._sign, _VERSION + nonce + cipher, "sha256")
        return (_VERSION + b":" + base64.urlsafe_b64encode(nonce + cipher + tag)).decode()

    def open(self, sealed: str) -> str:
        """Return the text ``sealed`` holds (``Unsealable`` when it does not open)."""
        version, _, body = sealed.encode().partition(b":")
        try:
            raw = base64.urlsafe_b64decode(body)
        except ValueError:
            raise Unsealable("a sealed value that is not base64") from None
        if version != _VERSION or len(raw) < _NONCE + _TAG:
            raise Unsealable("a sealed value of an unknown kind")
        nonce, cipher, tag = raw[:_NONCE], raw[_NONCE:-_TAG], raw[-_TAG:]
        expected = hmac.digest(self._sign, _VERSION + nonce + cipher, "sha256")
        if not hmac.compare_digest(tag, expected):
            raise Unsealable("a sealed value that does not open with this instance's key")
        plain = bytes(a ^ b for a, b in zip(cipher, self._stream(nonce, len(cipher)), strict=True))
        return plain.decode()

    def _stream(self, nonce: bytes, size: int) -> bytes:
        blocks = (size + 31) // 32
        return b"".join(
            hmac.digest(self._encrypt, nonce + n.to_bytes(8, "big"), "sha256")
            for n in range(blocks)
        )[:size]


def load_or_create_key(data_dir: Path, environ: dict[str, str] | None = None) -> bytes:
    """Return the sealing key: ``DGXMM_ALERTS_KEY`` (hex), else ``alerts.key``, made if missing."""
    env = os.environ if environ is None else environ
    given = env.get(KEY_ENV)
    if given:
        try:
            key = bytes.fromhex(given.strip())
        except ValueError:
            key = b""
        if len(key) < 32:
            raise InvalidInput(KEY_ENV, "a key of 64 or more hexadecimal digits")
        return key
    path = data_dir / KEY_FILE
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    key = secrets.token_bytes(32)
    # O_EXCL: of two processes making it at once, one writes it and the other reads it.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_key(path)
    with os.fdopen(fd, "w") as out:
        out.write(key.hex() + "\n")
        out.flush()
        os.fsync(out.fileno())
    return key


def _read_key(path: Path) -> bytes:
    try:
        key = bytes.fromhex(path.read_text().strip())
    except ValueError:
        key = b""
    if len(key) < 32:
        raise InvalidInput(str(path), "not a sealing key (64 or more hexadecimal digits)")
    return key
