"""Bearer tokens with two roles: ``admin`` (everything) and ``viewer`` (reads only).

A token is 32 random bytes shown once, when it is created; the database keeps only its
SHA-256. The server's first start writes an admin token to ``<data dir>/admin-token`` (mode
0600) so that the person who started it, and nobody else on the machine, can read it.
Browsers send the same token in an HttpOnly, SameSite=Strict cookie set by the login page.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from sqlalchemy import Engine, func, insert, select, update

from dgxmm.clock import Clock
from dgxmm.errors import InvalidInput
from dgxmm.places import ADMIN_TOKEN_FILE
from dgxmm.server.tables import api_tokens
from dgxmm.store import reading, writing
from dgxmm.store.files import make_private_dir, write_atomic

__all__ = ["ADMIN_TOKEN_FILE", "Identity", "Role", "Tokens"]

_PREFIX = "dgxmm_"


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


class Tokens:
    """Creates, checks and revokes API tokens."""

    def __init__(self, engine: Engine, clock: Clock) -> None:
        self._engine = engine
        self._clock = clock

    def create(self, role: Role, name: str) -> str:
        """Create a token and return it; it is never shown again."""
        if not name or len(name) > 200 or not name.isprintable():
            raise InvalidInput("name", "a token needs a printable name of 1-200 characters")
        token = _PREFIX + secrets.token_urlsafe(32)
        with writing(self._engine) as connection:
            connection.execute(
                insert(api_tokens).values(
                    name=name,
                    role=role.value,
                    token_hash=_hash(token),
                    created_at=self._clock.now_us(),
                )
            )
        return token

    def identify(self, token: str) -> Identity | None:
        """Return who a token belongs to, or None for an unknown or revoked one."""
        if not token.startswith(_PREFIX) or len(token) > 200:
            return None
        with reading(self._engine) as connection:
            row = connection.execute(
                select(api_tokens.c.name, api_tokens.c.role).where(
                    api_tokens.c.token_hash == _hash(token), api_tokens.c.revoked_at.is_(None)
                )
            ).first()
        return None if row is None else Identity(name=row.name, role=Role(row.role))

    def revoke(self, token: str) -> bool:
        """Revoke a token; tell whether it was live."""
        with writing(self._engine) as connection:
            result = connection.execute(
                update(api_tokens)
                .where(api_tokens.c.token_hash == _hash(token), api_tokens.c.revoked_at.is_(None))
                .values(revoked_at=self._clock.now_us())
            )
        return bool(result.rowcount)

    def count(self, role: Role) -> int:
        """Count the live tokens of a role."""
        with reading(self._engine) as connection:
            return int(
                connection.execute(
                    select(func.count())
                    .select_from(api_tokens)
                    .where(api_tokens.c.role == role.value, api_tokens.c.revoked_at.is_(None))
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


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
