"""The catalog's rows, read and written inside the caller's transaction.

Each write checks what it is given, then writes the row and its journal row (``journal.py``)
under the version the caller took; a drop moves the row to the attic. ``Catalog`` makes one
change of each; an import (``file.py``), a revival from the attic and a rollback make many
inside one change.

A job definition is stored exactly as written (JSON, keys in their order), with the effects
its definer was granted. One this version cannot read (``UnknownToThisVersion``) only comes in
through a catalog file or a database shared with a newer dgxmm; it is kept, listed with
``served: false`` and its reason, and never run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, select

from dgxmm.clock import Clock
from dgxmm.errors import Conflict, DefinitionError, NotFound
from dgxmm.store.catalog.analysis import analyze
from dgxmm.store.catalog.attic import DROPPED, keep
from dgxmm.store.catalog.bounds import MAX_BYTES, MAX_DEPTH, check_text, json_text
from dgxmm.store.catalog.definitions import RunOn, UnknownToThisVersion, check_job, check_name
from dgxmm.store.catalog.effects import (
    Authorizer,
    Request,
    effects_from_json,
    effects_to_json,
    grant,
)
from dgxmm.store.catalog.job_writes import FIND_JOB, INSERT_JOB, UPDATE_JOB, JobWrites
from dgxmm.store.catalog.journal import INSERT_ENTRY, Change, Subject, dump, entry_row, write_entry
from dgxmm.store.catalog.params import ParamType, check_params
from dgxmm.store.catalog.protection import ProtectedTable, write_refusal
from dgxmm.store.catalog.records import (
    JobDefinition,
    SavedQuery,
    definition_text,
    job_json,
    query_from_row,
    query_json,
)
from dgxmm.store.database import Dialect
from dgxmm.store.schema import catalog_jobs, catalog_queries

__all__ = ["CatalogRows"]

_DESCRIPTION_MAX = 2000
_NAMES_PER_QUERY = 500  # under SQLite's and PostgreSQL's limits on bound parameters
_ITEM_DEPTH = MAX_DEPTH + 2  # an attic item: {"definition": {key: value}, "effects": [...]}
_JOBS_NAMED = select(catalog_jobs).where(
    catalog_jobs.c.name.in_(bindparam("names", expanding=True))
)


class CatalogRows:
    """Saved queries and user jobs of one store, inside the caller's transaction."""

    def __init__(
        self,
        *,
        engine: Engine,
        dialect: Dialect,
        clock: Clock,
        authorizer: Authorizer,
        base_dir: Path,
        reserved: Callable[[], Collection[str]],
        protected: Mapping[str, ProtectedTable],
    ) -> None:
        self._engine = engine
        self._dialect = dialect
        self._clock = clock
        self.authorizer = authorizer
        self._base_dir = base_dir
        self._reserved = reserved
        self._protected = protected

    # -- saved queries ------------------------------------------------------------------------

    def put_query(
        self,
        connection: Connection,
        version: int,
        *,
        name: str,
        params: Mapping[str, str] | None,
        body: str,
        description: str | None,
        actor: str | None,
        change: Change | None = None,
    ) -> SavedQuery:
        """Check and write a saved query inside the caller's change (version taken)."""
        check_name(name, kind="saved query")
        checked = check_params(params)
        if description is not None:
            check_text(description, "description", most=_DESCRIPTION_MAX)
        analysis = analyze(body, self._dialect)
        check_text(body, "body", most=MAX_BYTES)
        undeclared = sorted(analysis.params - set(checked))
        if undeclared:
            raise DefinitionError(
                "params", f"the body uses :{', :'.join(undeclared)}, which params does not declare"
            )
        unused = sorted(set(checked) - analysis.params)
        if unused:
            raise DefinitionError(
                "params", f"{', '.join(unused)} declared but the body does not use it"
            )
        refusal = write_refusal(analysis.writes, self._protected, self._dialect)
        if refusal is not None:
            raise DefinitionError("body", f"writes {refusal}")
        before = self.find_query(connection, name)
        query = SavedQuery(
            name=name,
            params=checked,
            body=body,
            description=description,
            version=version,
            defined_by=actor,
            defined_at=self._clock.now_us(),
        )
        # As the attic would keep it, so that a dropped query's entry imports again.
        json_text(query_json(query), "body")
        values = {
            "params": dump({k: v.value for k, v in checked.items()}),
            "body": body,
            "description": description,
            "version": version,
            "defined_by": actor,
            "defined_at": query.defined_at,
        }
        if before is None:
            connection.execute(catalog_queries.insert().values(name=name, **values))
        else:
            connection.execute(
                catalog_queries.update().where(catalog_queries.c.name == name).values(**values)
            )
        write_entry(
            connection,
            version=version,
            at_us=query.defined_at,
            actor=actor,
            subject=Subject.QUERY,
            name=name,
            change=change or (Change.DEFINE if before is None else Change.REPLACE),
            before=None if before is None else query_json(before),
            after=query_json(query),
        )
        return query

    def queries_in(self, connection: Connection) -> list[str]:
        """Return the names of the saved queries, inside the caller's transaction."""
        rows = connection.execute(select(catalog_queries.c.name).order_by(catalog_queries.c.name))
        return list(rows.scalars())

    def remove_query(
        self,
        connection: Connection,
        version: int,
        name: str,
        actor: str | None,
        *,
        why: str = DROPPED,
    ) -> None:
        """Move a saved query to the attic inside the caller's change."""
        before = self.find_query(connection, name)
        if before is None:
            raise NotFound("saved query", name)
        users = connection.execute(
            select(catalog_jobs.c.name)
            .where(catalog_jobs.c.query_name == name)
            .order_by(catalog_jobs.c.name)
        ).scalars()
        names = list(users)
        if names:
            raise Conflict(
                f"saved query {name} is used by {'job' if len(names) == 1 else 'jobs'} "
                f"{', '.join(names)}: drop or redefine "
                "them first"
            )
        self._take_out(connection, version, before, actor=actor, why=why)

    # -- user jobs ----------------------------------------------------------------------------

    def put_job(
        self,
        connection: Connection,
        version: int,
        keys: Mapping[str, Any],
        *,
        actor: str | None,
        authorizer: Authorizer | None,
        lenient: bool,
        change: Change | None = None,
        writes: JobWrites | None = None,
    ) -> JobDefinition:
        """Check and write a job inside the caller's change; ``lenient`` keeps unknown ones.

        With ``writes``, the rows wait in it until its ``flush`` (an import's thousands).
        """
        if not isinstance(keys, Mapping):
            raise DefinitionError("definition", "expected an object of job keys")
        definition = dict(keys)
        definition_text(definition)  # a value JSON cannot hold is refused first, naming its key
        effects: tuple[Request, ...] = ()
        try:
            spec = check_job(
                definition,
                params_of=lambda query: self._params_of(connection, query),
                base_dir=self._base_dir,
                reserved=self._reserved(),
            )
        except UnknownToThisVersion:
            if not lenient:
                raise
        else:
            saved = self.find_query(connection, spec.query) if spec.query is not None else None
            effects = grant(
                spec,
                body=None if saved is None else saved.body,
                actor=actor,
                authorizer=authorizer or self.authorizer,
                dialect=self._dialect,
                protected=self._protected,
            )
        name = check_name(definition.get("name"))
        return self.write_job(
            connection, version, name, definition, effects, actor=actor, change=change,
            writes=writes,
        )  # fmt: skip

    def write_job(
        self,
        connection: Connection,
        version: int,
        name: str,
        definition: dict[str, Any],
        effects: tuple[Request, ...],
        *,
        actor: str | None,
        change: Change | None = None,
        note: str | None = None,
        writes: JobWrites | None = None,
    ) -> JobDefinition:
        """Write a checked job inside the caller's change; ``note`` goes to its journal row.

        With ``writes``, the rows wait in it until its ``flush``.
        """
        text = definition_text(definition)
        granted = effects_to_json(effects)
        # As the attic would keep it, so that a dropped job's entry imports again.
        json_text({"definition": definition, "effects": granted}, "definition", depth=_ITEM_DEPTH)
        before = (
            self.find_job(connection, name) if writes is None else writes.before(connection, name)
        )
        values = {
            "definition": text,
            "effects": dump(granted),
            "query_name": _query_name(definition),
            "version": version,
            "defined_by": actor,
            "defined_at": self._clock.now_us(),
        }
        # One statement each, its values as parameters: building a statement per call cost
        # more than running it (an import of 10,000 jobs, issue 28).
        job = self._job_from_values(name, definition, effects, values)
        entry = entry_row(
            version=version,
            at_us=job.defined_at,
            actor=actor,
            subject=Subject.JOB,
            name=name,
            change=change or (Change.DEFINE if before is None else Change.REPLACE),
            before=None if before is None else job_json(before),
            after=job_json(job) | ({} if note is None else {"switched_off": note}),
        )
        if writes is not None:
            writes.add(job, values, entry, new=before is None)
        elif before is None:
            connection.execute(INSERT_JOB, {"name": name, **values})
            connection.execute(INSERT_ENTRY, entry)
        else:
            connection.execute(UPDATE_JOB, {"wanted": name, **values})
            connection.execute(INSERT_ENTRY, entry)
        return job

    def found_jobs(self, connection: Connection, names: Iterable[str]) -> dict[str, JobDefinition]:
        """Return the user jobs of these names that exist, by name, inside the caller's change."""
        wanted = sorted(names)
        found: dict[str, JobDefinition] = {}
        for start in range(0, len(wanted), _NAMES_PER_QUERY):
            rows = connection.execute(
                _JOBS_NAMED, {"names": wanted[start : start + _NAMES_PER_QUERY]}
            )
            found.update((row.name, self._job_from_row(row)) for row in rows)
        return found

    def jobs_in(self, connection: Connection) -> list[str]:
        """Return the names of the user jobs, inside the caller's transaction."""
        return list(
            connection.execute(select(catalog_jobs.c.name).order_by(catalog_jobs.c.name)).scalars()
        )

    def remove_job(
        self,
        connection: Connection,
        version: int,
        name: str,
        actor: str | None,
        *,
        why: str = DROPPED,
    ) -> None:
        """Move a user job to the attic inside the caller's change."""
        before = self.find_job(connection, name)
        if before is None:
            raise NotFound("job", name)
        self._take_out(connection, version, before, actor=actor, why=why)

    def unserved_reason(self, definition: Mapping[str, Any]) -> str | None:
        """Return why this instance does not run a stored job, or None when it does."""
        try:
            spec = check_job(
                definition, params_of=None, base_dir=self._base_dir, reserved=self._reserved()
            )
        except DefinitionError as error:
            return str(error)
        if spec.run_on is RunOn.REPLICA:
            return "run_on: 'replica', and this is a single instance (there is no replica)"
        return None

    def load(self, connection: Connection, name: str) -> tuple[JobDefinition, SavedQuery | None]:
        """Return a job and (for a query job) its saved query as they are now."""
        job = self.find_job(connection, name)
        if job is None:
            raise NotFound("job", name)
        query = job.definition.get("query")
        saved = self.find_query(connection, query) if isinstance(query, str) else None
        return job, saved

    # -- inside -------------------------------------------------------------------------------

    def _take_out(
        self,
        connection: Connection,
        version: int,
        thing: SavedQuery | JobDefinition,
        *,
        actor: str | None,
        why: str,
    ) -> None:
        """Delete a query's or job's row, keep it in the attic and journal the drop."""
        if isinstance(thing, SavedQuery):
            table, subject, before = catalog_queries, Subject.QUERY, query_json(thing)
        else:
            table, subject, before = catalog_jobs, Subject.JOB, job_json(thing)
        connection.execute(table.delete().where(table.c.name == thing.name))
        at_us = self._clock.now_us()
        keep(connection, thing, version=version, actor=actor, at_us=at_us, why=why)
        write_entry(
            connection,
            version=version,
            at_us=at_us,
            actor=actor,
            subject=subject,
            name=thing.name,
            change=Change.DROP,
            before=before,
            after=None,
        )

    def _params_of(self, connection: Connection, name: str) -> dict[str, ParamType] | None:
        found = self.find_query(connection, name)
        return None if found is None else found.params

    def find_query(self, connection: Connection, name: str) -> SavedQuery | None:
        """Return a saved query inside the caller's transaction, or None."""
        row = connection.execute(
            select(catalog_queries).where(catalog_queries.c.name == name)
        ).first()
        return None if row is None else query_from_row(row)

    def find_job(self, connection: Connection, name: str) -> JobDefinition | None:
        """Return a user job inside the caller's transaction, or None."""
        row = connection.execute(FIND_JOB, {"wanted": name}).first()
        return None if row is None else self._job_from_row(row)

    def _job_from_row(self, row: Any) -> JobDefinition:
        definition = json.loads(row.definition)
        effects = effects_from_json(json.loads(row.effects))
        return self._job_from_values(
            row.name,
            definition,
            effects,
            {"version": row.version, "defined_by": row.defined_by, "defined_at": row.defined_at},
        )

    def _job_from_values(
        self,
        name: str,
        definition: dict[str, Any],
        effects: tuple[Request, ...],
        values: Mapping[str, Any],
    ) -> JobDefinition:
        return JobDefinition(
            name=name,
            definition=definition,
            effects=effects,
            version=values["version"],
            defined_by=values["defined_by"],
            defined_at=values["defined_at"],
            reason=self.unserved_reason(definition),
        )


def _query_name(definition: Mapping[str, Any]) -> str | None:
    """Return the saved query a definition names, when it is a name a query can have.

    A job this version cannot read is kept as written, and its ``query`` may be anything: only
    a query's name goes into the column (a hundred characters) that ``drop_query`` looks up.
    """
    query = definition.get("query")
    try:
        return check_name(query, field="query", kind="saved query")
    except DefinitionError:
        return None
