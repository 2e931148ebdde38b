"""The tables saved queries may read but never write, as the database itself records them.

Which tables are protected is a property of the database, not of the process that happens to
define or run a job: each Alembic revision that creates a table of dgxmm's records it in
``protected_tables`` (name, owner, why), and every store reads that list when it opens. A
library program that imports only ``dgxmm.store`` therefore refuses the same writes as the
server with every package loaded (the found defect: a job defined through the library wrote
``api_tokens`` and minted an admin token, because the library's metadata did not hold the
server's tables).

Two kinds of owner, one rule: the store's own tables (catalog, journal, settings, change log)
and the server's tokens belong to dgxmm itself; the fleet's and the decider's tables
(deployments, events, audit, insights, rollups, schedules, profiles, proposals) are changed
only through their services, which write an audit row or an event for every change; so are
the alerts' (channels, rules, deliveries), whose secrets are stored sealed. Saved queries may
read all of them, and write none.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import Connection, select

from dgxmm.store.database import Dialect
from dgxmm.store.schema import protected_tables

__all__ = [
    "ProtectedTable",
    "TableOwner",
    "read_protected",
    "uncarried_reason",
    "write_refusal",
]


class TableOwner(StrEnum):
    """Who changes a protected table (and so why a saved query may not)."""

    STORE = "store"
    SERVER = "server"
    FLEET = "fleet"
    DECIDER = "decider"
    ALERTS = "alerts"


@dataclass(frozen=True, slots=True, kw_only=True)
class ProtectedTable:
    """One table no saved query may write, with its owner and the reason given to users."""

    name: str
    owner: TableOwner
    why: str

    def refusal(self) -> str:
        """Say why a write into this table is refused."""
        return f"{self.name}, {self.why}: saved queries may read it, never write it"


def read_protected(connection: Connection) -> Mapping[str, ProtectedTable]:
    """Return the protected tables the database records, by name (lower case)."""
    rows = connection.execute(select(protected_tables))
    found: dict[str, ProtectedTable] = {}
    for row in rows:
        try:
            owner = TableOwner(row.owner)
        except ValueError:
            owner = TableOwner.STORE  # written by a newer dgxmm: still protected
        found[str(row.name).lower()] = ProtectedTable(name=row.name, owner=owner, why=row.why)
    return found


# Schemas whose tables no backup carries: a job may not write them, or a restore would lose
# what it wrote without a word (backups carry the main database on SQLite and every schema
# but these on PostgreSQL).
_SQLITE_UNCARRIED = ("temp.",)
_POSTGRESQL_UNCARRIED = ("pg_catalog.", "information_schema.", "pg_toast", "pg_temp")


def uncarried_reason(table: str, dialect: Dialect) -> str | None:
    """Return why a job may not write ``table`` because backups do not carry it, or None."""
    key = table.lower()
    prefixes = _SQLITE_UNCARRIED if dialect is Dialect.SQLITE else _POSTGRESQL_UNCARRIED
    if key.startswith(prefixes):
        return f"{table}, in a schema that backups do not carry"
    return None


def write_refusal(
    tables: Collection[str], protected: Mapping[str, ProtectedTable], dialect: Dialect
) -> str | None:
    """Say why writing ``tables`` is refused (the first refused, by name), or None."""
    for table in sorted(tables):
        found = protected.get(table.lower())
        if found is not None:
            return found.refusal()
        reason = uncarried_reason(table, dialect)
        if reason is not None:
            return reason
    return None
