"""The rows of many job writes in one change, written together: a catalog import's.

One ``INSERT`` statement for the new jobs, one ``UPDATE`` for the replaced and one for their
journal rows, each run once with every row as its parameters, and the jobs already there read
in one query: per job, an import then costs its checks, not three round trips through
SQLAlchemy (10,000 jobs in a few seconds, issue 28).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, bindparam, select

from dgxmm.store.catalog.journal import INSERT_ENTRY
from dgxmm.store.schema import catalog_jobs

if TYPE_CHECKING:
    from dgxmm.store.catalog.records import JobDefinition

__all__ = ["FIND_JOB", "INSERT_JOB", "UPDATE_JOB", "JobWrites"]

INSERT_JOB = catalog_jobs.insert()
UPDATE_JOB = catalog_jobs.update().where(catalog_jobs.c.name == bindparam("wanted"))
FIND_JOB = select(catalog_jobs).where(catalog_jobs.c.name == bindparam("wanted"))


@dataclass(slots=True)
class JobWrites:
    """Rows waiting for ``flush``; mutable, since it gathers them as the import goes.

    ``found`` holds the jobs already written (``JobDefinition`` by name), read once by the
    caller: a name written twice in one import is a replacement the second time.
    """

    found: dict[str, JobDefinition]
    inserts: list[dict[str, Any]] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)
    entries: list[dict[str, Any]] = field(default_factory=list)

    def before(self, _connection: Connection, name: str) -> JobDefinition | None:
        """Return the job of this name as this change has it so far, or None."""
        return self.found.get(name)

    def add(
        self, job: JobDefinition, values: dict[str, Any], entry: dict[str, Any], *, new: bool
    ) -> None:
        """Keep one job's row and its journal row."""
        if new:
            self.inserts.append({"name": job.name, **values})
        else:
            self.updates.append({"wanted": job.name, **values})
        self.entries.append(entry)
        self.found[job.name] = job

    def flush(self, connection: Connection) -> None:
        """Write the rows kept, in the caller's change; keep none."""
        if self.inserts:
            connection.execute(INSERT_JOB, self.inserts)
        if self.updates:
            connection.execute(UPDATE_JOB, self.updates)
        if self.entries:
            connection.execute(INSERT_ENTRY, self.entries)
        self.inserts, self.updates, self.entries = [], [], []
