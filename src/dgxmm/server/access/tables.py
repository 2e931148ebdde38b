"""The server's own tables, on the store's ``metadata`` (migrations 0002, 0023)."""

from __future__ import annotations

from sqlalchemy import BigInteger, CheckConstraint, Column, Integer, String, Table

from dgxmm.store import metadata

__all__ = ["api_tokens"]

_Id = BigInteger().with_variant(Integer(), "sqlite")

api_tokens = Table(
    "api_tokens",
    metadata,
    Column("id", _Id, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False),
    Column("role", String(20), nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("created_at", BigInteger, nullable=False),
    Column("revoked_at", BigInteger),
    Column("expires_at", BigInteger),  # NULL: never (migration 0023)
    CheckConstraint("role in ('admin', 'viewer')", name="role"),
)
