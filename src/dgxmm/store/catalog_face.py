"""The store's face of its catalog: what ``Store`` answers of saved queries and user jobs.

Each method hands its call to the catalog's room (``catalog/``) in a transaction of its own:
the definitions, the version, the journal and the settings, the catalog file, the attic and
rollback. Those last two change the catalog wholesale, so they raise ``Busy`` while a user
job runs (``upkeep.py``); they are catalog changes, not file operations, and never wait
behind a backup's files lock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from dgxmm.clock import Clock
from dgxmm.errors import InvalidInput
from dgxmm.store.catalog.attic import AtticEntry, attic_kind, read_attic
from dgxmm.store.catalog.catalog import Catalog
from dgxmm.store.catalog.effects import Authorizer
from dgxmm.store.catalog.file import ImportResult, export_catalog, import_catalog
from dgxmm.store.catalog.journal import (
    JournalEntry,
    Subject,
    current_version,
    read_journal,
    read_setting,
    write_setting,
)
from dgxmm.store.catalog.records import JobDefinition, SavedQuery
from dgxmm.store.catalog.revival import Restored, remove_entry, restore_entry
from dgxmm.store.catalog.rollback import RollbackResult, roll_back
from dgxmm.store.database import CHANGE_BUSY_MS, reading, writing
from dgxmm.store.upkeep import Upkeep

__all__ = ["CatalogFace"]


class CatalogFace:
    """``Store``'s methods on its catalog; ``Store`` sets what they use when it opens."""

    catalog: Catalog
    engine: Engine
    clock: Clock
    upkeep: Upkeep
    _reserved: set[str]

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
        """Define or replace a saved query (``DefinitionError`` when refused)."""
        return self.catalog.define_query(name, params, body, description, actor=actor)

    def queries(self) -> list[SavedQuery]:
        """Return every saved query, by name."""
        return self.catalog.queries()

    def query(self, name: str) -> SavedQuery:
        """Return one saved query (``NotFound``)."""
        return self.catalog.query(name)

    def drop_query(self, name: str, *, actor: str | None = None) -> None:
        """Remove a saved query; ``Conflict`` naming the jobs that use it."""
        self.catalog.drop_query(name, actor=actor)

    # -- user jobs ----------------------------------------------------------------------------

    def define_job(
        self, *, actor: str | None = None, authorizer: Authorizer | None = None, **keys: Any
    ) -> JobDefinition:
        """Define or replace a user job from the spec's keys; refused: ``DefinitionError``."""
        return self.catalog.define_job(keys, actor=actor, authorizer=authorizer)

    def jobs(self) -> list[JobDefinition]:
        """Return every user job with its effects and whether it is served."""
        return self.catalog.jobs()

    def job(self, name: str) -> JobDefinition:
        """Return one user job (``NotFound``)."""
        return self.catalog.job(name)

    def drop_job(self, name: str, *, actor: str | None = None) -> None:
        """Remove a user job."""
        self.catalog.drop_job(name, actor=actor)

    def set_job_enabled(
        self, name: str, on: bool, *, note: str | None = None, actor: str | None = None
    ) -> JobDefinition:
        """Switch a user job on or off, off with an optional note of why; it keeps its effects."""
        return self.catalog.set_job_enabled(name, on, note=note, actor=actor)

    def reserve_job_names(self, names: Iterable[str]) -> None:
        """Reserve the names of a host's own system jobs: no user job may take them."""
        self._reserved.update(names)

    # -- versions, journal, settings, the catalog file ----------------------------------------

    def catalog_version(self) -> int:
        """Return the catalog version; it changes with every catalog change."""
        with reading(self.engine) as connection:
            return current_version(connection)

    def journal(self, *, after_version: int = 0, limit: int | None = None) -> list[JournalEntry]:
        """Return the journal rows after ``after_version``, oldest first."""
        with reading(self.engine) as connection:
            return read_journal(connection, after_version=after_version, limit=limit)

    def get_setting(self, key: str, default: Any = None) -> Any:
        """Return a setting's JSON value, or ``default``."""
        with reading(self.engine) as connection:
            found, value = read_setting(connection, key)
        return value if found else default

    def set_setting(self, key: str, value: Any, *, actor: str | None = None) -> int | None:
        """Set a setting (None removes it), journaled; return the new catalog version."""
        if not isinstance(key, str) or not key or len(key) > 200:
            raise InvalidInput("key", f"{key!r} is not a setting key (1-200 characters)")
        with writing(self.engine, busy_ms=CHANGE_BUSY_MS) as connection:
            return write_setting(
                connection, key=key, value=value, actor=actor, at_us=self.clock.now_us()
            )

    def export_catalog(self, path: str | Path | None = None) -> dict[str, Any]:
        """Return the catalog file's document; write it to ``path`` when given."""
        return export_catalog(
            self.catalog,
            self.engine,
            path=None if path is None else Path(path),
            now_us=self.clock.now_us(),
        )

    def import_catalog(
        self,
        source: str | Path | Mapping[str, Any],
        *,
        actor: str | None = None,
        authorizer: Authorizer | None = None,
        replace: bool = False,
    ) -> ImportResult:
        """Import a catalog file or document as one change, all or nothing."""
        return import_catalog(
            self.catalog,
            self.engine,
            source if isinstance(source, Mapping) else Path(source),
            actor=actor,
            authorizer=authorizer,
            replace=replace,
        )

    # -- the attic and rollback (Busy while a user job runs) ------------------------------
    # Catalog changes, not file operations: they do not wait behind a backup's files lock.

    def attic(self) -> list[AtticEntry]:
        """Return the dropped and replaced queries and jobs, the most recently dropped first."""
        with reading(self.engine) as connection:
            return read_attic(connection)

    def restore_from_attic(
        self,
        kind: Subject,
        name: str,
        *,
        entry_id: int | None = None,
        actor: str | None = None,
        authorizer: Authorizer | None = None,
    ) -> Restored:
        """Bring a query or job back from the attic; ``Conflict`` while its name is taken."""
        chosen = attic_kind(kind)
        self.upkeep.refuse_while_user_jobs_run("attic restore")
        return restore_entry(
            self.catalog,
            self.engine,
            chosen,
            name,
            entry_id=entry_id,
            actor=actor,
            authorizer=authorizer,
        )

    def remove_from_attic(
        self, kind: Subject, name: str, *, entry_id: int | None = None, actor: str | None = None
    ) -> AtticEntry:
        """Delete a query or job from the attic for good; return what was removed."""
        chosen = attic_kind(kind)
        self.upkeep.refuse_while_user_jobs_run("attic remove")
        return remove_entry(
            self.engine,
            chosen,
            name,
            entry_id=entry_id,
            actor=actor,
            at_us=self.clock.now_us(),
        )

    def rollback(
        self,
        version: int,
        *,
        actor: str | None = None,
        authorizer: Authorizer | None = None,
        dry_run: bool = False,
    ) -> RollbackResult:
        """Put the catalog's definitions back as they were at ``version``, as one new change.

        ``dry_run`` answers what it would change and changes nothing (also while a job runs).
        """
        if not dry_run:
            self.upkeep.refuse_while_user_jobs_run("rollback")
        return roll_back(
            self.catalog,
            self.engine,
            to_version=version,
            actor=actor,
            authorizer=authorizer,
            at_us=self.clock.now_us(),
            dry_run=dry_run,
        )
