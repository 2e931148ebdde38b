"""Change versions: a counter per live topic, bumped in the transaction of each change.

A page polls ``GET /api/changes`` every couple of seconds; answering it must cost next to
nothing however many jobs or deployments there are. So nothing is rendered or hashed there:
each topic has a row in ``change_versions``, and every ``INSERT``, ``UPDATE`` or ``DELETE``
on a table watched for a topic bumps that row in the same transaction (an engine event, so no
writer can forget it). A rolled-back change bumps nothing; on PostgreSQL every instance sees
the same counters, read with one query by primary key.

Each layer says which of its tables a topic watches (``watch``); statements written as raw
SQL text are not seen, and none of the watched tables is written that way.

The counters are also kept in memory (``latest``), so that the poll asks the database
nothing: a thread of the process (the keeper) reads them every ``KEEP_S`` once someone asked,
and at once after each commit of this process that bumped one. Kept counters are only ever
the keeper's last read, never ahead of the database; ``latest`` says None (read them) while
this process's own commit is not yet among them, so a change is seen by the next poll on
this instance, and another instance's (or the CLI's) within ``KEEP_S``.

A change may also say which rows it touched (``note``: a job's name, in the same
transaction), in ``change_keys`` under the version it made. ``keys_since`` answers the rows
that moved between two versions when every version in between named its rows, and None when
one did not (a define may add a row or move the order: the page is fetched whole) or the
versions are older than the window kept. A page then fetches the rows alone.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, delete, event, func, select, update
from sqlalchemy.sql.dml import UpdateBase

from dgxmm.store.database import Dialect, reading
from dgxmm.store.schema import change_keys, change_versions

__all__ = ["KEEP_S", "ChangeVersions", "Topic"]

log = logging.getLogger(__name__)

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
# Another process's change reaches the kept counters within this (a page polls every 2 s).
KEEP_S = 0.5
_STALE_S = 4 * KEEP_S  # kept counters older than this are not trusted (the keeper is stuck)
# While a commit of ours is not yet among the kept counters, the keeper reads at most this
# often (a burst of commits costs it at most 100 reads a second; a poll meanwhile reads).
_CAUGHT_UP_S = 0.01
_GIVE_UP_S = 2.0  # a commit of ours not seen by then failed: stop waiting for it


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
        event.listen(engine, "commit", self._committing)
        for name in ("rollback", "rollback_savepoint"):
            event.listen(engine, name, _forget)
        # Kept in memory (``latest``): the counters as last read, the read's time, and this
        # process's commits not yet seen among them (topic: (version, when committed)).
        self._lock = threading.Lock()
        self._kept: dict[Topic, int] = {}
        self._kept_at = float("-inf")
        self._expected: dict[Topic, tuple[int, float]] = {}
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._keeper: threading.Thread | None = None

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

    def latest(self, topics: Iterable[Topic]) -> dict[Topic, int] | None:
        """Return each topic's counter as kept in memory, asking the database nothing; None
        when they may be behind (a commit of this process not yet among them, or no fresh
        read): then ``read``. The first call starts the thread that keeps them."""
        wanted = list(topics)
        with self._lock:
            if self._keeper is None and not self._stopping.is_set():
                self._keeper = threading.Thread(
                    target=self._keep_reading, name="dgxmm-versions", daemon=True
                )
                self._keeper.start()
            if time.monotonic() - self._kept_at > _STALE_S:
                return None
            kept = self._kept
            for topic in wanted:
                expected = self._expected.get(topic)
                if expected is not None and expected[0] > kept.get(topic, 0):
                    return None
            return {topic: kept.get(topic, 0) for topic in wanted}

    def close(self) -> None:
        """Stop the thread that keeps the counters (``latest`` then answers None)."""
        self._stopping.set()  # before the lock: the keeper checks it under the lock
        self._wake.set()
        with self._lock:
            keeper, self._keeper = self._keeper, None
            self._kept_at = float("-inf")
        if keeper is not None and keeper is not threading.current_thread():
            keeper.join(timeout=10)  # it marks nothing fresh once it saw stopping set

    def _keep(self, counters: Mapping[Topic, int]) -> None:
        """Take the keeper's counters, just read; forget the commits of ours they include.

        Only the keeper's reads are kept, one after the other, each taken as read: so an
        expectation once met stays met, and a database restored from a backup, whose counters
        move back, tells a page its version changed (the larger of two would not).
        """
        with self._lock:
            self._kept = dict(counters)  # a new dict: readers hold the old one
            for topic, version in counters.items():
                expected = self._expected.get(topic)
                if expected is not None and expected[0] <= version:
                    del self._expected[topic]

    def _keep_reading(self) -> None:
        failing = False
        while not self._stopping.is_set():
            started = time.monotonic()
            try:
                self._keep(self.read(Topic))
                with self._lock:
                    if not self._stopping.is_set():  # close() may have begun meanwhile
                        self._kept_at = started
                if failing:
                    log.warning("dgxmm versions: reading the change versions again")
                    failing = False
            except Exception:  # the database is away: latest() says None until it is back
                if not failing:  # once, not at every try
                    log.warning("dgxmm versions: cannot read the change versions", exc_info=True)
                    failing = True
            with self._lock:
                now = time.monotonic()
                for topic, (_, at) in list(self._expected.items()):
                    if now - at > _GIVE_UP_S:  # its commit failed: nothing will show it
                        del self._expected[topic]
                waiting = bool(self._expected)
            if waiting:
                self._stopping.wait(_CAUGHT_UP_S)  # not sooner, however many commits wake it
            else:
                self._wake.wait(KEEP_S)
            self._wake.clear()

    def _committing(self, connection: Connection) -> None:
        """A transaction that bumped topics commits: the keeper reads them once it landed."""
        bumped: dict[Topic, int] | None = connection.info.pop(_BUMPED, None)
        if not bumped:
            return
        now = time.monotonic()
        with self._lock:
            for topic, version in bumped.items():
                expected = self._expected.get(topic)
                if expected is None or expected[0] < version:
                    self._expected[topic] = (version, now)
        self._wake.set()

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
