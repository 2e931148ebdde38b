"""Change versions: a counter per live topic, bumped in the transaction of each change.

A page polls ``GET /api/changes`` every couple of seconds; answering it must cost next to
nothing however many jobs or deployments there are. So nothing is rendered or hashed there:
each topic has a row in ``change_versions``, and every ``INSERT``, ``UPDATE`` or ``DELETE``
on a table watched for a topic bumps that row in the same transaction (an engine event, so no
writer can forget it). A rolled-back change bumps nothing; on PostgreSQL every instance sees
the same counters, read with one query by primary key.

Each layer says which of its tables a topic watches (``watch``); statements written as raw
SQL text are not seen, and none of the watched tables is written that way.

A change may also say which rows it touched (``note``: a job's name, in the same
transaction), in ``change_keys`` under the version it made. ``keys_since`` answers the rows
that moved between two versions when every version in between named its rows, and None when
one did not (a define may add a row or move the order: the page is fetched whole) or the
versions are older than the window kept. A page then fetches the rows alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, delete, event, func, select, update
from sqlalchemy.sql.dml import UpdateBase

from dgxmm.store.database import Dialect, reading
from dgxmm.store.schema import change_keys, change_versions

__all__ = ["ChangeVersions", "Topic"]

_BUMPED = "dgxmm_bumped_topics"  # connection.info: each topic bumped now, its new version
# Built once: a statement built at every change cost more than running it (issue 28).
_BUMP = (
    update(change_versions)
    .where(change_versions.c.topic == bindparam("b_topic"))
    .values(version=change_versions.c.version + 1)
    .returning(change_versions.c.version)
)

# The newest versions of a topic whose keys are kept; a page further behind fetches whole.
KEPT_VERSIONS = 2_000
# More rows than this moved: fetching them one by one saves nothing over the whole page.
MOST_KEYS = 100


class Topic(StrEnum):
    """What a live page shows, as ``GET /api/changes?topics=`` names it."""

    JOBS = "jobs"
    DEPLOYMENTS = "deployments"
    INSIGHTS = "insights"
    ALERTS = "alerts"
    SCHEDULES = "schedules"  # the deployments' schedules (migration 0024)
    TRAFFIC = "traffic"  # traffic profiles and schedule proposals (the traffic page)
    AUDIT = "audit"  # the audit trail


class ChangeVersions:
    """The topics' counters on one engine: watched tables bump them, ``read`` reads them."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._tables: dict[str, Topic] = {}
        event.listen(engine, "after_execute", self._after_execute)
        for name in ("commit", "rollback", "rollback_savepoint"):
            event.listen(engine, name, _forget)

    def watch(self, tables: Mapping[str, Topic]) -> None:
        """Bump a topic at every write to each of these tables (by table name)."""
        self._tables.update(tables)

    def read(self, topics: Iterable[Topic]) -> dict[Topic, int]:
        """Return each topic's counter (one query)."""
        wanted = list(topics)
        query = select(change_versions.c.topic, change_versions.c.version).where(
            change_versions.c.topic.in_([topic.value for topic in wanted])
        )
        with reading(self._engine) as connection:
            found = {Topic(row.topic): int(row.version) for row in connection.execute(query)}
        return {topic: found.get(topic, 0) for topic in wanted}

    def note(self, connection: Connection, topic: Topic, key: str) -> None:
        """Say that this transaction's change of ``topic`` touched the row named ``key``."""
        version = self._bump(connection, topic)
        connection.execute(
            Dialect(connection.dialect.name)
            .insert(change_keys)
            .values(topic=topic.value, version=version, key=key[:200])
            .on_conflict_do_nothing()
        )
        if version % KEPT_VERSIONS == 0:  # now and then, forget what no page can ask for
            connection.execute(
                delete(change_keys).where(
                    change_keys.c.topic == topic.value,
                    change_keys.c.version <= version - KEPT_VERSIONS,
                )
            )

    def keys_since(self, topic: Topic, since: int, now: int) -> frozenset[str] | None:
        """Return the keys of the rows ``topic``'s versions after ``since`` up to ``now``
        touched; None when a version in between named none, or too many moved to be worth it.
        """
        if now <= since:
            return frozenset()
        if now - since > KEPT_VERSIONS:
            return None
        c = change_keys.c
        within = (c.topic == topic.value, c.version > since, c.version <= now)
        with reading(self._engine) as connection:
            named = connection.execute(
                select(func.count(func.distinct(c.version))).where(*within)
            ).scalar_one()
            if named != now - since:
                return None
            keys = connection.execute(
                select(c.key).where(*within).distinct().limit(MOST_KEYS + 1)
            ).scalars()
            found = frozenset(keys)
        return None if len(found) > MOST_KEYS else found

    def _after_execute(
        self, connection: Connection, statement: Any, *_args: Any, **_kwargs: Any
    ) -> None:
        if not isinstance(statement, UpdateBase):
            return
        table = getattr(statement, "table", None)
        topic = self._tables.get(getattr(table, "name", ""))
        if topic is None:
            return
        self._bump(connection, topic)

    def _bump(self, connection: Connection, topic: Topic) -> int:
        """Move ``topic``'s counter once in this transaction; return the version it made."""
        bumped: dict[Topic, int] = connection.info.setdefault(_BUMPED, {})
        if topic not in bumped:  # once per transaction is enough: the counter only has to move
            found = connection.execute(_BUMP, {"b_topic": topic.value}).scalar_one()
            bumped[topic] = int(found)
        return bumped[topic]


def _forget(connection: Connection, *_args: Any) -> None:
    connection.info.pop(_BUMPED, None)
