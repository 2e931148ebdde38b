"""Bringing definitions back: restoring from the attic, removing from it, and what both share.

A query or job that comes back (``restore`` here, or a rollback, ``rollback.py``) is defined
anew by whoever brings it back: a query goes through every check ``define_query`` makes; a
job's effects are asked again of that actor's authorizer. A job that can no longer be
granted, or whose saved query is gone (or no longer fits its arguments), still comes back,
switched off (``enabled: false``) with no effects, and the reason is returned and written to
its journal row (``switched_off``): nothing dropped is lost, and nothing runs with rights it
was not given. Each is one catalog change: a new version and a journal row (``restore``,
``remove``), which is how the store audits them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine

from dgxmm.errors import Conflict, DefinitionError, Forbidden
from dgxmm.store.catalog.attic import AtticEntry, delete_entry, find_entry
from dgxmm.store.catalog.catalog import Catalog
from dgxmm.store.catalog.effects import Authorizer
from dgxmm.store.catalog.journal import Change, Subject, next_version, write_entry
from dgxmm.store.catalog.records import JobDefinition
from dgxmm.store.database import CHANGE_BUSY_MS, writing

__all__ = ["Restored", "bring_back_job", "bring_back_query", "remove_entry", "restore_entry"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Restored:
    """What a restore from the attic did."""

    kind: Subject
    name: str
    version: int  # the new catalog version
    switched_off: str | None  # why a job came back switched off; None when it did not

    def to_json(self) -> dict[str, Any]:
        """Return the result as plain JSON values."""
        return {
            "kind": self.kind.value,
            "name": self.name,
            "version": self.version,
            "switched_off": self.switched_off,
        }


def restore_entry(
    catalog: Catalog,
    engine: Engine,
    kind: Subject,
    name: str,
    *,
    entry_id: int | None,
    actor: str | None,
    authorizer: Authorizer | None,
) -> Restored:
    """Bring an attic entry back into the catalog; ``Conflict`` while its name is taken."""
    with writing(engine, busy_ms=CHANGE_BUSY_MS) as connection:
        entry = find_entry(connection, kind, name, entry_id)
        live = (
            catalog.find_query(connection, name)
            if kind is Subject.QUERY
            else catalog.find_job(connection, name)
        )
        if live is not None:
            raise Conflict(
                f"a {kind.value} named {name} is in the catalog: drop or rename it first",
                field="name",
            )
        version = next_version(connection)
        reason = None
        if kind is Subject.QUERY:
            bring_back_query(catalog, connection, version, entry.item, name, actor=actor)
        else:
            _, reason = bring_back_job(
                catalog, connection, version, entry.item, name, actor=actor, authorizer=authorizer
            )
        delete_entry(connection, entry)
        return Restored(kind=kind, name=name, version=version, switched_off=reason)


def remove_entry(
    engine: Engine,
    kind: Subject,
    name: str,
    *,
    entry_id: int | None,
    actor: str | None,
    at_us: int,
) -> AtticEntry:
    """Delete an attic entry for good (one catalog change, journaled); return it."""
    with writing(engine, busy_ms=CHANGE_BUSY_MS) as connection:
        entry = find_entry(connection, kind, name, entry_id)
        version = next_version(connection)
        delete_entry(connection, entry)
        write_entry(
            connection,
            version=version,
            at_us=at_us,
            actor=actor,
            subject=kind,
            name=name,
            change=Change.REMOVE,
            before=entry.to_json(),
            after=None,
        )
        return entry


def bring_back_query(
    catalog: Catalog,
    connection: Connection,
    version: int,
    item: dict[str, Any],
    name: str,
    *,
    actor: str | None,
    change: Change = Change.RESTORE,
) -> None:
    """Define a saved query again from its journal form, with every check of a definition."""
    catalog.put_query(
        connection,
        version,
        name=name,
        params=item.get("params"),
        body=item.get("body"),  # type: ignore[arg-type]
        description=item.get("description"),
        actor=actor,
        change=change,
    )


def bring_back_job(
    catalog: Catalog,
    connection: Connection,
    version: int,
    item: dict[str, Any],
    name: str,
    *,
    actor: str | None,
    authorizer: Authorizer | None,
    change: Change = Change.RESTORE,
) -> tuple[JobDefinition, str | None]:
    """Define a job again under ``name``, its effects asked anew.

    A definition that names another job is refused: a restore of ``other`` must never replace
    the live ``live1``; so is a system job's name, and one the catalog would not keep as
    written. One refused only for the world it meets now (its query gone, rights not granted)
    comes back switched off, with the reason.
    """
    definition = item.get("definition")
    if not isinstance(definition, dict):
        raise DefinitionError("definition", f"job {name}: the stored definition is not an object")
    written = definition.get("name")
    if written != name:
        raise DefinitionError(
            "name", f"the entry {name}'s definition names {written!r}: it would define another job"
        )
    catalog.refuse_reserved(name)  # never "switched off": it would list two jobs of one name
    try:
        job = catalog.put_job(
            connection,
            version,
            definition,
            actor=actor,
            authorizer=authorizer,
            lenient=True,
            change=change,
        )
    except (DefinitionError, Forbidden) as refused:
        reason = f"switched off: {refused}"
    else:
        return job, None
    catalog.check_written(definition)
    switched_off = {**definition, "enabled": False}
    job = catalog.write_job(
        connection, version, name, switched_off, (), actor=actor, change=change, note=reason
    )
    return job, reason
