"""The catalog's attic: every saved query and job that was dropped or replaced, kept.

Dropping a query or a job (``drop_query``, ``drop_job``, an import with ``replace=True``, a
rollback) moves it here in the same transaction: the thing as the journal writes it (a
query's params, body and description; a job's definition and effects), who defined it and
at which catalog version, who dropped it, when, at which version, and why. Nothing leaves
the attic but by ``remove`` (for good) or ``restore`` (back into the catalog,
``revival.py``). One name may be in the attic several times (dropped, defined again,
dropped again); an entry is picked by its kind and name, the most recently dropped first,
or by its id.

The attic is in the database, so backups carry it; the catalog file carries it too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, select

from dgxmm.errors import DefinitionError, InvalidInput, NotFound
from dgxmm.store.catalog.bounds import (
    MAX_DEPTH,
    check_instant,
    check_text,
    check_version,
    json_text,
)
from dgxmm.store.catalog.definitions import check_name
from dgxmm.store.catalog.journal import Subject, dump
from dgxmm.store.catalog.records import JobDefinition, SavedQuery, job_json, query_json
from dgxmm.store.schema import catalog_attic

__all__ = [
    "ATTIC_KINDS",
    "DROPPED",
    "REPLACED",
    "AtticEntry",
    "add_entry",
    "attic_kind",
    "delete_entry",
    "find_entry",
    "keep",
    "keep_replaced",
    "read_attic",
]

DROPPED = "dropped"
REPLACED = "replaced"  # defined again with another definition: the old one is kept
_ACTOR_LENGTH = 200  # the columns defined_by and dropped_by
_WHY_MAX = 2000
_WHAT = {Subject.QUERY: "saved query", Subject.JOB: "job"}
ATTIC_KINDS = (Subject.QUERY, Subject.JOB)


@dataclass(frozen=True, slots=True, kw_only=True)
class AtticEntry:
    """One query or job in the attic."""

    id: int
    kind: Subject  # QUERY or JOB
    name: str
    item: dict[str, Any]  # a query's params, body, description; a job's definition, effects
    defined_version: int
    defined_by: str | None
    defined_at: int
    dropped_version: int
    dropped_by: str | None
    dropped_at: int
    why: str

    def to_json(self) -> dict[str, Any]:
        """Return the entry as plain JSON values."""
        return {
            "id": self.id,
            "kind": self.kind.value,
            "name": self.name,
            "item": self.item,
            "defined_version": self.defined_version,
            "defined_by": self.defined_by,
            "defined_at": self.defined_at,
            "dropped_version": self.dropped_version,
            "dropped_by": self.dropped_by,
            "dropped_at": self.dropped_at,
            "why": self.why,
        }


def attic_kind(kind: Subject) -> Subject:
    """Return ``kind`` when the attic holds things of it (query, job); else ``InvalidInput``."""
    if kind not in ATTIC_KINDS:
        raise InvalidInput("kind", f"{kind.value!r} is not a kind of the attic (query or job)")
    return kind


def keep(
    connection: Connection,
    thing: SavedQuery | JobDefinition,
    *,
    version: int,
    actor: str | None,
    at_us: int,
    why: str,
) -> None:
    """Put a query or job that leaves the catalog into the attic (the caller's change)."""
    if isinstance(thing, SavedQuery):
        kind, item = Subject.QUERY, query_json(thing)
    else:
        kind, item = Subject.JOB, job_json(thing)
    connection.execute(
        catalog_attic.insert().values(
            kind=kind.value,
            name=thing.name,
            item=dump(item),
            defined_version=thing.version,
            defined_by=thing.defined_by,
            defined_at=thing.defined_at,
            dropped_version=version,
            dropped_by=actor,
            dropped_at=at_us,
            why=why,
        )
    )


def keep_replaced(
    connection: Connection,
    thing: SavedQuery | JobDefinition,
    *,
    version: int,
    actor: str | None,
    at_us: int,
) -> None:
    """Keep the definition a redefinition replaced (a redefinition by mistake is undone)."""
    keep(connection, thing, version=version, actor=actor, at_us=at_us, why=REPLACED)


def read_attic(connection: Connection) -> list[AtticEntry]:
    """Return the attic, the most recently dropped first."""
    rows = connection.execute(select(catalog_attic).order_by(catalog_attic.c.id.desc()))
    return [_entry(row) for row in rows]


def find_entry(
    connection: Connection, kind: Subject, name: str, entry_id: int | None = None
) -> AtticEntry:
    """Return the attic's latest entry of that kind and name (or the one with ``entry_id``)."""
    query = select(catalog_attic).where(
        catalog_attic.c.kind == kind.value, catalog_attic.c.name == name
    )
    if entry_id is not None:
        query = query.where(catalog_attic.c.id == entry_id)
    row = connection.execute(query.order_by(catalog_attic.c.id.desc()).limit(1)).first()
    if row is None:
        what = f"{kind.value} in the attic" + ("" if entry_id is None else f" (id {entry_id})")
        raise NotFound(what, name)
    return _entry(row)


def delete_entry(connection: Connection, entry: AtticEntry) -> None:
    """Remove an entry from the attic."""
    connection.execute(catalog_attic.delete().where(catalog_attic.c.id == entry.id))


def add_entry(connection: Connection, document: Mapping[str, Any]) -> bool:
    """Add an entry read from a catalog file, unless the attic holds it; tell whether it did.

    ``DefinitionError`` names the first field that is wrong. Every field is held to what the
    attic's readers take (``bounds.py``): an instant past the dates a page can show, or an
    item nested 900 lists deep, would make the attic and the export answer 500 from then on.
    """
    if not isinstance(document, Mapping):
        raise DefinitionError("", "expected an object")
    kind = _field(document, "kind", str)
    if kind not in {k.value for k in ATTIC_KINDS}:
        raise DefinitionError("kind", f"{kind!r} is not a kind of the attic (query or job)")
    subject = Subject(kind)
    values = {
        "kind": subject.value,
        "name": check_name(document.get("name"), kind=_WHAT[subject]),
        "item": json_text(_field(document, "item", dict), "item", depth=MAX_DEPTH + 2),
        "defined_version": check_version(document.get("defined_version"), "defined_version"),
        "defined_by": _actor(document, "defined_by"),
        "defined_at": check_instant(document.get("defined_at"), "defined_at"),
        "dropped_version": check_version(document.get("dropped_version"), "dropped_version"),
        "dropped_by": _actor(document, "dropped_by"),
        "dropped_at": check_instant(document.get("dropped_at"), "dropped_at"),
        "why": check_text(document.get("why"), "why", most=_WHY_MAX),
    }
    same = connection.execute(
        select(catalog_attic.c.id).where(
            *(getattr(catalog_attic.c, key) == value for key, value in values.items())
        )
    ).first()
    if same is not None:
        return False
    connection.execute(catalog_attic.insert().values(**values))
    return True


def _entry(row: Any) -> AtticEntry:
    return AtticEntry(
        id=int(row.id),
        kind=Subject(row.kind),
        name=row.name,
        item=json.loads(row.item),
        defined_version=int(row.defined_version),
        defined_by=row.defined_by,
        defined_at=int(row.defined_at),
        dropped_version=int(row.dropped_version),
        dropped_by=row.dropped_by,
        dropped_at=int(row.dropped_at),
        why=row.why,
    )


def _field(document: Mapping[str, Any], key: str, kind: type) -> Any:
    value = document.get(key)
    # bool is an int in Python; no field here is a boolean.
    if not isinstance(value, kind) or isinstance(value, bool):
        raise DefinitionError(key, f"expected {kind.__name__}, got {value!r}")
    return value


def _actor(document: Mapping[str, Any], key: str) -> str | None:
    value = document.get(key)
    return None if value is None else check_text(value, key, most=_ACTOR_LENGTH)
