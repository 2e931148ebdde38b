"""Change versions: a counter per live topic, bumped in the transaction of each change.

A page polls ``GET /api/changes`` every couple of seconds; answering it must cost next to
nothing however many jobs or deployments there are. So nothing is rendered or hashed there:
each topic has a row in ``change_versions``, and every ``INSERT``, ``UPDATE`` or ``DELETE``
on a table watched for a topic bumps that row in the same transaction (an engine event, so no
writer can forget it). A rolled-back change bumps nothing; on PostgreSQL every instance sees
the same counters, read with one query by primary key.

Each layer says which of its tables a topic watches (``watch``); statements written as raw
SQL text are not seen, and none of the watched tables is written that way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, event, select, update
from sqlalchemy.sql.dml import UpdateBase

from dgxmm.store.database import reading
from dgxmm.store.schema import change_versions

__all__ = ["ChangeVersions", "Topic"]

_BUMPED = "dgxmm_bumped_topics"  # connection.info: the topics bumped in this transaction
# Built once: a statement built at every change cost more than running it (issue 28).
_BUMP = (
    update(change_versions)
    .where(change_versions.c.topic == bindparam("b_topic"))
    .values(version=change_versions.c.version + 1)
)


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

    def _after_execute(
        self, connection: Connection, statement: Any, *_args: Any, **_kwargs: Any
    ) -> None:
        if not isinstance(statement, UpdateBase):
            return
        table = getattr(statement, "table", None)
        topic = self._tables.get(getattr(table, "name", ""))
        if topic is None:
            return
        bumped: set[Topic] = connection.info.setdefault(_BUMPED, set())
        if topic in bumped:
            return  # once per transaction is enough: the counter only has to move
        bumped.add(topic)
        connection.execute(_BUMP, {"b_topic": topic.value})


def _forget(connection: Connection, *_args: Any) -> None:
    connection.info.pop(_BUMPED, None)
