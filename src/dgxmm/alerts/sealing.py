"""Sealing: a channel's URL and secret kept in the database as ciphertext, never in clear.

A webhook's secret must be read back to sign each message (a hash, as ``api_tokens`` keeps,
would not do), and a Slack or Teams webhook URL is itself a credential. Both are sealed with
a key that lives outside the database (``keys.py``): a backup, a restore elsewhere, or a
saved query reading the table sees only ciphertext.

The cipher is ``cryptography``'s AES-256-GCM (authenticated: a sealed text that was altered,
or sealed under another key, does not open, ``Unsealable``), under a key derived from the
sealing key with HKDF-SHA256 and a fresh 96-bit random nonce per value: ``s2:`` and the
base64 of nonce, ciphertext and tag.

Values sealed before (``s1:``, a construction of dgxmm's own from HMAC-SHA256) still open,
so that an upgrade loses no channel; ``Channels.reseal`` seals them again as ``s2`` when the
alerts start. Nothing seals ``s1`` any more.
"""

from __future__ import annotations

import base64
import hmac
import secrets
import threading
from collections.abc import Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from dgxmm.errors import DgxmmError

__all__ = ["MIN_KEY_BYTES", "Sealer", "Unsealable"]

MIN_KEY_BYTES = 32
_VERSION = "s2"
_NONCE = 12  # GCM's own nonce size
_CONTEXT = b"dgxmm alerts: channel URL and secret (s2)"  # bound to every value (AAD)


class Unsealable(DgxmmError):
    """A sealed value that does not open with this key (altered, or another instance's key)."""


class Sealer:
    """Seals under one key; opens under it or an older one (a rotation under way)."""

    def __init__(self, key: bytes, older: Sequence[bytes] = ()) -> None:
        for each in (key, *older):
            if len(each) < MIN_KEY_BYTES:
                raise ValueError(f"a sealing key has at least {MIN_KEY_BYTES} bytes")
        self._lock = threading.Lock()
        self._keys = [_Key(key), *(_Key(k) for k in older)]

    def seal(self, text: str) -> str:
        """Return ``text`` sealed under the current key, as ASCII."""
        with self._lock:
            current = self._keys[0]
        nonce = secrets.token_bytes(_NONCE)
        sealed = current.aead.encrypt(nonce, text.encode(), _CONTEXT)
        return f"{_VERSION}:" + base64.urlsafe_b64encode(nonce + sealed).decode()

    def open(self, sealed: str) -> str:
        """Return the text ``sealed`` holds (``Unsealable`` when no key of ours opens it)."""
        return self._open(sealed)[0]

    def is_current(self, sealed: str) -> bool:
        """Tell whether ``sealed`` is of this scheme and under the current key."""
        return sealed.startswith(f"{_VERSION}:") and self._open(sealed)[1] == 0

    def rotate(self, key: bytes) -> None:
        """Seal under ``key`` from now on; the keys before it still open what they sealed."""
        if len(key) < MIN_KEY_BYTES:
            raise ValueError(f"a sealing key has at least {MIN_KEY_BYTES} bytes")
        with self._lock:
            self._keys = [_Key(key), *self._keys]

    def forget_older(self) -> None:
        """Open with the current key alone (every value was sealed again under it)."""
        with self._lock:
            self._keys = self._keys[:1]

    def _open(self, sealed: str) -> tuple[str, int]:
        version, _, body = sealed.partition(":")
        if version not in (_VERSION, "s1"):
            raise Unsealable("a sealed value of an unknown kind")
        try:
            raw = base64.urlsafe_b64decode(body.encode())
        except ValueError:
            raise Unsealable("a sealed value that is not base64") from None
        with self._lock:
            keys = list(self._keys)
        for index, key in enumerate(keys):
            opened = key.open(raw) if version == _VERSION else key.open_legacy(raw)
            if opened is not None:
                return opened, index
        raise Unsealable("a sealed value that does not open with this instance's key")


class _Key:
    """One sealing key: its AES-GCM key, and what opens the values sealed before ``s2``."""

    def __init__(self, key: bytes) -> None:
        derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_CONTEXT).derive(key)
        self.aead = AESGCM(derived)
        self._legacy_encrypt = hmac.digest(key, b"dgxmm alerts: encrypt", "sha256")
        self._legacy_sign = hmac.digest(key, b"dgxmm alerts: authenticate", "sha256")

    def open(self, raw: bytes) -> str | None:
        """Open an ``s2`` value; None when it is not this key's (or was altered)."""
        if len(raw) <= _NONCE:
            return None
        try:
            return self.aead.decrypt(raw[:_NONCE], raw[_NONCE:], _CONTEXT).decode()
        except InvalidTag:
            return None

    def open_legacy(self, raw: bytes) -> str | None:
        """Open an ``s1`` value (only to seal it again); None when it is not this key's."""
        if len(raw) < 16 + 32:
            return None
        nonce, cipher, tag = raw[:16], raw[16:-32], raw[-32:]
        expected = hmac.digest(self._legacy_sign, b"s1" + nonce + cipher, "sha256")
        if not hmac.compare_digest(tag, expected):
            return None
        stream = b"".join(
            hmac.digest(self._legacy_encrypt, nonce + n.to_bytes(8, "big"), "sha256")
            for n in range((len(cipher) + 31) // 32)
        )
        return bytes(a ^ b for a, b in zip(cipher, stream, strict=False)).decode()
