"""Bearer tokens with two roles: ``admin`` (everything) and ``viewer`` (reads only).

A token is 32 random bytes shown once, when it is created; the database keeps only its
SHA-256. A token may expire (``expires_at``): from then on it opens nothing, as if revoked.
The server's first start writes an admin token to ``<data dir>/admin-token`` (mode 0600) so
that the person who started it, and nobody else on the machine, can read it.
Browsers send the same token in an HttpOnly, SameSite=Strict cookie set by the login page.

A token found live is remembered for ``RECHECK_S`` (``Tokens.known``), so that a request that
asks nothing else of the database (``GET /api/changes``, polled by every open page) runs
without a hop to a worker thread. What that costs: a token revoked by another process (the
CLI on the database, another instance) still opens this instance for up to ``RECHECK_S``; one
revoked through this instance, or past its ``expires_at``, opens nothing from that moment.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from dataclasses import dataclass
from enum import Enum, StrEnum
from pathlib import Path

from sqlalchemy import Engine, bindparam, func, insert, or_, select, update

from dgxmm.clock import Clock
from dgxmm.errors import InvalidInput
from dgxmm.places import ADMIN_TOKEN_FILE
from dgxmm.server.access.tables import api_tokens
from dgxmm.store import reading, writing
from dgxmm.store.files import make_private_dir, write_atomic

__all__ = [
    "ADMIN_TOKEN_FILE",
    "RECHECK_S",
    "Identity",
    "Role",
    "TokenRecord",
    "TokenState",
    "Tokens",
]

RECHECK_S = 1.0  # a live token is asked of the database again after this

_PREFIX = "dgxmm_"
# The rows that open something at ``now_us``: not revoked, not expired.
_LIVE = api_tokens.c.revoked_at.is_(None) & or_(
    api_tokens.c.expires_at.is_(None), api_tokens.c.expires_at > bindparam("now_us")
)
# Every request asks it: one statement, built once, its values bound at each call (building
# the statement cost more than the query it runs, issue 28).
_IDENTIFY = select(api_tokens.c.name, api_tokens.c.role, api_tokens.c.expires_at).where(
    api_tokens.c.token_hash == bindparam("token_hash"), _LIVE
)


class Role(StrEnum):
    """What a token may do."""

    ADMIN = "admin"
    VIEWER = "viewer"

    @classmethod
    def named(cls, text: str) -> Role:
        """Return the role a command line names (``InvalidInput`` for another)."""
        try:
            return cls(text)
        except ValueError:
            raise InvalidInput("role", f"{text!r} is not a role (admin or viewer)") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class Identity:
    """Who is asking: the token's name and role."""

    name: str
    role: Role

    @property
    def actor(self) -> str:
        """The actor recorded in journals and audit rows."""
        return f"user:{self.name}"

    @property
    def is_admin(self) -> bool:
        """Tell whether this identity may write."""
        return self.role is Role.ADMIN


class TokenState(Enum):
    """Whether a token opens anything now."""

    LIVE = "live"
    EXPIRED = "expired"
    REVOKED = "revoked"


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenRecord:
    """A token as the database has it: never the token itself, which only its maker saw."""

    id: int
    name: str
    role: Role
    created_at: int
    expires_at: int | None  # None: never
    revoked_at: int | None

    def state(self, now_us: int) -> TokenState:
        """Return whether it opens anything at ``now_us``."""
        if self.revoked_at is not None:
            return TokenState.REVOKED
        if self.expires_at is not None and self.expires_at <= now_us:
            return TokenState.EXPIRED
        return TokenState.LIVE


class Tokens:
    """Creates, checks, lists and revokes API tokens."""

    def __init__(self, engine: Engine, clock: Clock) -> None:
        self._engine = engine
        self._clock = clock
        # Live tokens by hash: who, until when (None: never), when last found (monotonic).
        self._known: dict[str, tuple[Identity, int | None, float]] = {}
        self._known_lock = threading.Lock()
        self._forgotten = 0  # moves at each revocation: a check begun before it remembers nothing

    def create(self, role: Role, name: str, *, expires_at: int | None = None) -> str:
        """Create a token and return it; it is never shown again.

        ``expires_at``: the instant it stops opening anything (None: never).
        """
        if not is_token_name(name):
            raise InvalidInput("name", NAME_RULE)
        token = _PREFIX + secrets.token_urlsafe(32)
        with writing(self._engine) as connection:
            connection.execute(
                insert(api_tokens).values(
                    name=name,
                    role=role.value,
                    token_hash=_hash(token),
                    created_at=self._clock.now_us(),
                    expires_at=expires_at,
                )
            )
        return token

    def list(self) -> list[TokenRecord]:
        """Return every token ever made, newest first (revoked and expired ones too)."""
        c = api_tokens.c
        query = select(c.id, c.name, c.role, c.created_at, c.expires_at, c.revoked_at).order_by(
            c.id.desc()
        )
        with reading(self._engine) as connection:
            return [
                TokenRecord(
                    id=int(row.id),
                    name=row.name,
                    role=Role(row.role),
                    created_at=int(row.created_at),
                    expires_at=None if row.expires_at is None else int(row.expires_at),
                    revoked_at=None if row.revoked_at is None else int(row.revoked_at),
                )
                for row in connection.execute(query)
            ]

    def revoke_id(self, token_id: int) -> bool:
        """Revoke a token by its id (the list's, never the secret); tell whether it was live."""
        now = self._clock.now_us()
        with writing(self._engine) as connection:
            result = connection.execute(
                update(api_tokens).where(api_tokens.c.id == token_id, _LIVE).values(revoked_at=now),
                {"now_us": now},
            )
        self._forget_known()  # by id: which hash it was is not known here, so every one
        return bool(result.rowcount)

    def identify(self, token: str) -> Identity | None:
        """Return who a token belongs to, or None for an unknown or revoked one."""
        digest = _digest(token)
        if digest is None:
            return None
        with self._known_lock:
            generation = self._forgotten
        with reading(self._engine) as connection:
            row = connection.execute(
                _IDENTIFY, {"token_hash": digest, "now_us": self._clock.now_us()}
            ).first()
        if row is None:
            with self._known_lock:
                self._known.pop(digest, None)
            return None
        identity = Identity(name=row.name, role=Role(row.role))
        expires_at = None if row.expires_at is None else int(row.expires_at)
        with self._known_lock:
            # A revocation that landed after the read: the answer stands for this request,
            # which began before it, but is not remembered for the next.
            if self._forgotten == generation:
                self._known[digest] = (identity, expires_at, time.monotonic())
        return identity

    def known(self, token: str) -> Identity | None:
        """Return who a token belongs to if it was found live within ``RECHECK_S`` and has not
        expired since, asking the database nothing; None: ask ``identify``."""
        digest = _digest(token)
        if digest is None:
            return None
        with self._known_lock:
            found = self._known.get(digest)
        if found is None:
            return None
        identity, expires_at, at = found
        if time.monotonic() - at > RECHECK_S:
            return None
        if expires_at is not None and expires_at <= self._clock.now_us():
            return None
        return identity

    def _forget_known(self) -> None:
        with self._known_lock:
            self._known.clear()
            self._forgotten += 1

    def revoke(self, token: str) -> bool:
        """Revoke a token; tell whether it was live."""
        now = self._clock.now_us()
        with writing(self._engine) as connection:
            result = connection.execute(
                update(api_tokens)
                .where(api_tokens.c.token_hash == _hash(token), _LIVE)
                .values(revoked_at=now),
                {"now_us": now},
            )
        self._forget_known()
        return bool(result.rowcount)

    def count(self, role: Role) -> int:
        """Count the live tokens of a role."""
        with reading(self._engine) as connection:
            return int(
                connection.execute(
                    select(func.count())
                    .select_from(api_tokens)
                    .where(api_tokens.c.role == role.value, _LIVE),
                    {"now_us": self._clock.now_us()},
                ).scalar_one()
            )

    def ensure_admin_token(self, data_dir: Path) -> Path | None:
        """On first start, create an admin token in ``data_dir`` (mode 0600); return its path.

        Returns None when the file already holds a live admin token, or when admin tokens
        exist already (someone made them on purpose; the server does not add another).
        """
        path = data_dir / ADMIN_TOKEN_FILE
        if path.exists():
            identity = self.identify(path.read_text().strip())
            if identity is not None and identity.is_admin:
                return None
        elif self.count(Role.ADMIN) > 0:
            return None
        token = self.create(Role.ADMIN, "admin")
        make_private_dir(path.parent)
        write_atomic(path, (token + "\n").encode())  # 0600: only its owner may read it
        return path


NAME_RULE = "a token needs a printable name of 1-200 characters"


def is_token_name(name: object) -> bool:
    """Tell whether ``name`` may name a token (it is shown in audit rows as ``user:<name>``)."""
    return isinstance(name, str) and 1 <= len(name) <= 200 and name.isprintable()


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _digest(token: str) -> str | None:
    """Return the hash a presented token is looked up by; None for one that cannot be ours."""
    return _hash(token) if token.startswith(_PREFIX) and len(token) <= 200 else None
