"""The catalog: saved queries and user jobs, versioned and journaled.

Every change runs in one write transaction: it takes the next catalog version, changes the
rows and writes a journal row per thing changed (``rows.py``, ``journal.py``). A refused
definition raises before anything is written, so it changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from typing import Any

from sqlalchemy import select

from dgxmm.errors import DefinitionError, NotFound
from dgxmm.jobs.keys import check_pause_note
from dgxmm.store.catalog.attic import keep_replaced
from dgxmm.store.catalog.definitions import JobSpec, UnknownToThisVersion, check_job
from dgxmm.store.catalog.effects import Authorizer
from dgxmm.store.catalog.journal import (
    Change,
    Subject,
    changed_jobs,
    current_version,
    dump,
    next_version,
    write_entry,
)
from dgxmm.store.catalog.records import (
    JobChanges,
    JobDefinition,
    SavedQuery,
    job_json,
    query_from_row,
    query_json,
)
from dgxmm.store.catalog.rows import CatalogRows
from dgxmm.store.database import CHANGE_BUSY_MS, reading, writing
from dgxmm.store.schema import catalog_jobs, catalog_queries

__all__ = ["Catalog"]


class Catalog(CatalogRows):
    """Saved queries and user jobs of one store, each change a write transaction of its own."""

    # -- saved queries ------------------------------------------------------------------------

    def define_query(
        self,
        name: str,
        params: Mapping[str, str] | None,
        body: str,
        description: str | None = None,
        *,
        actor: str | None = None,
    ) -> SavedQuery:
        """Define or replace a saved query; ``DefinitionError`` when refused.

        A description left out keeps the one it had ("" clears it); the definition it
        replaces goes to the attic, as the Store page says.
        """
        with writing(self._engine, busy_ms=CHANGE_BUSY_MS) as connection:
            version = next_version(connection)
            before = self.find_query(connection, name) if isinstance(name, str) else None
            if description is None and before is not None:
                description = before.description
            query = self.put_query(
                connection,
                version,
                name=name,
                params=params,
                body=body,
                description=description or None,
                actor=actor,
            )
            if before is not None and query_json(before) != query_json(query):
                keep_replaced(
                    connection, before, version=version, actor=actor, at_us=query.defined_at
                )
            return query

    def queries(self) -> list[SavedQuery]:
        """Return every saved query, by name."""
        with reading(self._engine) as connection:
            rows = connection.execute(select(catalog_queries).order_by(catalog_queries.c.name))
            return [query_from_row(row) for row in rows]

    def query(self, name: str) -> SavedQuery:
        """Return one saved query; ``NotFound``."""
        with reading(self._engine) as connection:
            found = self.find_query(connection, name)
        if found is None:
            raise NotFound("saved query", name)
        return found

    def drop_query(self, name: str, *, actor: str | None = None) -> None:
        """Remove a saved query; ``Conflict`` naming the jobs while any job uses it."""
        with writing(self._engine, busy_ms=CHANGE_BUSY_MS) as connection:
            version = next_version(connection)
            self.remove_query(connection, version, name, actor)

    # -- user jobs ----------------------------------------------------------------------------

    def define_job(
        self, keys: Mapping[str, Any], *, actor: str | None, authorizer: Authorizer | None
    ) -> JobDefinition:
        """Define or replace a user job; ``DefinitionError`` or ``Forbidden`` when refused."""
        with writing(self._engine, busy_ms=CHANGE_BUSY_MS) as connection:
            version = next_version(connection)
            name = keys.get("name") if isinstance(keys, Mapping) else None
            before = self.find_job(connection, name) if isinstance(name, str) else None
            job = self.put_job(
                connection, version, keys, actor=actor, authorizer=authorizer, lenient=False
            )
            if before is not None and before.definition != job.definition:
                keep_replaced(
                    connection, before, version=version, actor=actor, at_us=job.defined_at
                )
            return job

    def jobs(self) -> list[JobDefinition]:
        """Return every user job, by name, each with whether it is served and why not."""
        with reading(self._engine) as connection:
            rows = connection.execute(select(catalog_jobs).order_by(catalog_jobs.c.name))
            return [self._job_from_row(row) for row in rows]

    def job_changes(self, after: int) -> JobChanges:
        """Return the user jobs changed since version ``after``, in one read transaction.

        One snapshot for the version, the journal and the jobs: a host that follows the
        catalog after each define reads it once, not once for each (issue 28).
        """
        with reading(self._engine) as connection:
            version = current_version(connection)
            names = changed_jobs(connection, after, version)
            found = self.found_jobs(connection, names) if names else {}
        return JobChanges(version=version, names=names, jobs=[found[n] for n in sorted(found)])

    def job(self, name: str) -> JobDefinition:
        """Return one user job; ``NotFound``."""
        with reading(self._engine) as connection:
            found = self.find_job(connection, name)
        if found is None:
            raise NotFound("job", name)
        return found

    def drop_job(self, name: str, *, actor: str | None = None) -> None:
        """Remove a user job."""
        with writing(self._engine, busy_ms=CHANGE_BUSY_MS) as connection:
            version = next_version(connection)
            self.remove_job(connection, version, name, actor)

    def set_job_enabled(
        self, name: str, on: bool, *, note: str | None = None, actor: str | None = None
    ) -> JobDefinition:
        """Switch a job on or off, off with an optional note; its definition keeps its effects.

        The note is the definition's ``pause_note``: switching off again changes only it,
        switching on drops it. A note with ``on`` is refused naming ``note``.
        """
        if not isinstance(on, bool):
            raise DefinitionError("enabled", f"expected true or false, got {on!r}")
        note = check_pause_note(note, field="note", enabled=on)
        with writing(self._engine, busy_ms=CHANGE_BUSY_MS) as connection:
            before = self.find_job(connection, name)
            if before is None:
                raise NotFound("job", name)
            if before.enabled == on and before.definition.get("pause_note") == note:
                return before
            version = next_version(connection)
            definition = {**before.definition, "enabled": on}
            definition.pop("pause_note", None)
            if note is not None:
                definition["pause_note"] = note
            values = {"definition": dump(definition), "version": version}
            connection.execute(
                catalog_jobs.update().where(catalog_jobs.c.name == name).values(**values)
            )
            after = self._job_from_values(
                name,
                definition,
                before.effects,
                {**values, "defined_by": before.defined_by, "defined_at": before.defined_at},
            )
            write_entry(
                connection,
                version=version,
                at_us=self._clock.now_us(),
                actor=actor,
                subject=Subject.JOB,
                name=name,
                change=Change.ENABLE if on else Change.DISABLE,
                before=job_json(before),
                after=job_json(after),
            )
            return after

    def refuse_reserved(self, name: str) -> None:
        """Refuse a name a system job holds: a job brought back under it would be listed twice."""
        if name in self._reserved():
            raise DefinitionError("name", f"{name} is a system job's name")

    def check_written(self, definition: Mapping[str, Any]) -> None:
        """Refuse a definition the catalog would not keep even switched off.

        Only the world's refusals pass: its saved query gone or no longer fitting its
        arguments, its name reserved since. A job of a newer version passes, kept as written.
        """
        with suppress(UnknownToThisVersion):
            check_job(definition, params_of=None, base_dir=self._base_dir, reserved=())

    def spec(self, job: JobDefinition) -> JobSpec:
        """Read a served job's definition; ``DefinitionError`` when it cannot run here."""
        return check_job(
            job.definition, params_of=None, base_dir=self._base_dir, reserved=self._reserved()
        )
