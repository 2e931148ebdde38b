"""The catalog's version and journal, and the instance settings kept beside them.

Every catalog change runs in one write transaction that takes the next catalog version
(``UPDATE store_state SET catalog_version = catalog_version + 1``, which also serializes
concurrent changes on PostgreSQL) and writes one journal row per thing it changed: who, when,
what, and the thing before and after, as JSON. An import changes many things under one
version. Settings (small JSON values such as ``schedules.paused_all``) are changed the same
way, so the journal tells who changed them too.

The journal is also the store's audit of its attic and its rollbacks: restoring from the
attic, removing from it for good and rolling back are catalog changes with their actor, in
the same transaction as what they change (``attic.py``, ``rollback.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Any

from sqlalchemy import Connection, bindparam, select, update

from dgxmm.store.schema import catalog_journal, settings, store_state

__all__ = [
    "INSERT_ENTRY",
    "MOST_CHANGED_JOBS",
    "Change",
    "JournalEntry",
    "Subject",
    "changed_jobs",
    "current_version",
    "dump",
    "entry_row",
    "next_version",
    "read_history",
    "read_journal",
    "read_setting",
    "write_entry",
    "write_setting",
]

# One statement, each row its parameters: building a statement per row cost more than
# running it (an import of 10,000 jobs, issue 28). The version's statements are built once
# too: every change and every host's look at the catalog run them.
INSERT_ENTRY = catalog_journal.insert()
_CURRENT_VERSION = select(store_state.c.catalog_version)
_NEXT_VERSION = update(store_state).values(catalog_version=store_state.c.catalog_version + 1)
# Past this many changed jobs a host reads the whole catalog again rather than job by job.
MOST_CHANGED_JOBS = 500
_CHANGED = (
    select(catalog_journal.c.version, catalog_journal.c.subject, catalog_journal.c.name)
    .where(
        catalog_journal.c.version > bindparam("after"),
        catalog_journal.c.version <= bindparam("upto"),
    )
    .limit(MOST_CHANGED_JOBS + 1)
)


class Subject(Enum):
    """What a journal row is about."""

    QUERY = "query"
    JOB = "job"
    SETTING = "setting"
    CATALOG = "catalog"  # the catalog as a whole: a rollback


class Change(Enum):
    """What happened to it."""

    DEFINE = "define"  # it did not exist
    REPLACE = "replace"  # it existed and was defined again
    DROP = "drop"
    ENABLE = "enable"
    DISABLE = "disable"
    SET = "set"  # a setting's value
    RESTORE = "restore"  # brought back from the attic
    REMOVE = "remove"  # removed from the attic for good (the live catalog is unchanged)
    ROLLBACK = "rollback"  # the catalog put back as it was at a version (subject catalog)


@dataclass(frozen=True, slots=True, kw_only=True)
class JournalEntry:
    """One change of the catalog."""

    version: int
    at_us: int
    actor: str | None
    subject: Subject
    name: str
    change: Change
    before: Any
    after: Any

    def to_json(self) -> dict[str, Any]:
        """Return the entry as plain JSON values."""
        return {
            "version": self.version,
            "at_us": self.at_us,
            "actor": self.actor,
            "subject": self.subject.value,
            "name": self.name,
            "change": self.change.value,
            "before": self.before,
            "after": self.after,
        }


def dump(value: Any) -> str:
    """Return JSON text the same way everywhere (key order kept, as written)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def current_version(connection: Connection) -> int:
    """Return the catalog version."""
    return int(connection.execute(_CURRENT_VERSION).scalar_one())


def changed_jobs(connection: Connection, after: int, upto: int) -> set[str] | None:
    """Return the user jobs changed after version ``after`` up to ``upto``, by name.

    None when something else changed (a query, a setting: a job's reason may follow from
    it), when a version between has no journal row, or past ``MOST_CHANGED_JOBS``: the
    caller then reads every job. One query on the journal's version index.
    """
    if upto <= after:
        return set()
    rows = connection.execute(_CHANGED, {"after": after, "upto": upto}).all()
    if len(rows) > MOST_CHANGED_JOBS or {row.version for row in rows} != set(
        range(after + 1, upto + 1)
    ):
        return None
    if any(row.subject != Subject.JOB.value for row in rows):
        return None
    return {row.name for row in rows}


def next_version(connection: Connection) -> int:
    """Take the next catalog version inside the caller's write transaction."""
    connection.execute(_NEXT_VERSION)
    return current_version(connection)


def write_entry(
    connection: Connection,
    *,
    version: int,
    at_us: int,
    actor: str | None,
    subject: Subject,
    name: str,
    change: Change,
    before: Any,
    after: Any,
) -> None:
    """Write one journal row."""
    row = entry_row(
        version=version, at_us=at_us, actor=actor, subject=subject, name=name, change=change,
        before=before, after=after,
    )  # fmt: skip
    connection.execute(INSERT_ENTRY, row)


def entry_row(
    *,
    version: int,
    at_us: int,
    actor: str | None,
    subject: Subject,
    name: str,
    change: Change,
    before: Any,
    after: Any,
) -> dict[str, Any]:
    """Return one journal row's values, for ``INSERT_ENTRY``."""
    return {
        "version": version,
        "at_us": at_us,
        "actor": actor,
        "subject": subject.value,
        "name": name,
        "change": change.value,
        "before": None if before is None else dump(before),
        "after": None if after is None else dump(after),
    }


def read_history(connection: Connection, subject: Subject, name: str) -> list[JournalEntry]:
    """Return the journal rows about one thing (a job, a setting), oldest first."""
    query = (
        select(catalog_journal)
        .where(catalog_journal.c.subject == subject.value, catalog_journal.c.name == name)
        .order_by(catalog_journal.c.id)
    )
    return [_entry(row) for row in connection.execute(query)]


def _entry(row: Any) -> JournalEntry:
    return JournalEntry(
        version=row.version,
        at_us=row.at_us,
        actor=row.actor,
        subject=Subject(row.subject),
        name=row.name,
        change=Change(row.change),
        before=None if row.before is None else json.loads(row.before),
        after=None if row.after is None else json.loads(row.after),
    )


def read_journal(
    connection: Connection, *, after_version: int = 0, limit: int | None = None
) -> list[JournalEntry]:
    """Return the journal rows of versions after ``after_version``, oldest first."""
    query = (
        select(catalog_journal)
        .where(catalog_journal.c.version > after_version)
        .order_by(catalog_journal.c.id)
    )
    if limit is not None:
        query = query.limit(limit)
    return [_entry(row) for row in connection.execute(query)]


def read_setting(connection: Connection, key: str) -> tuple[bool, Any]:
    """Return (found, value) of a setting."""
    text = connection.execute(select(settings.c.value).where(settings.c.key == key)).scalar()
    return (False, None) if text is None else (True, json.loads(text))


def write_setting(
    connection: Connection, *, key: str, value: Any, actor: str | None, at_us: int
) -> int | None:
    """Set a setting (None removes it); return the new catalog version, None if unchanged."""
    found, before = read_setting(connection, key)
    if (found and before == value and value is not None) or (not found and value is None):
        return None
    version = next_version(connection)
    if not found:
        connection.execute(
            settings.insert().values(
                key=key, value=dump(value), version=version, updated_by=actor, updated_at=at_us
            )
        )
    elif value is None:
        connection.execute(settings.delete().where(settings.c.key == key))
    else:
        connection.execute(
            settings.update()
            .where(settings.c.key == key)
            .values(value=dump(value), version=version, updated_by=actor, updated_at=at_us)
        )
    write_entry(
        connection,
        version=version,
        at_us=at_us,
        actor=actor,
        subject=Subject.SETTING,
        name=key,
        change=Change.DROP if value is None else Change.SET,
        before=before,
        after=value,
    )
    return version
