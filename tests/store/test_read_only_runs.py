"""A read-only query job holds nothing between its statements: each sees the data of its moment.

The probe runs between two statements of the job (at the first ``RunContext.check`` after
``release``: a statement releases as it ends, the next checks before it starts). Another
connection commits a row there; on PostgreSQL it also takes the table's strongest lock without
waiting, on SQLite it checkpoints the whole write-ahead log, which a reader holding an older
snapshot prevents.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from store.storekit import ctx, make_items, rows

from dgxmm.jobs import RunContext
from dgxmm.store import Store


class _Between(RunContext):
    """A run context that calls ``probe`` once, before the second statement starts."""

    def __init__(self, probe: Callable[[], None]) -> None:
        base = ctx("reader")
        super().__init__(
            name=base.name,
            scheduled_at=base.scheduled_at,
            started_at=base.started_at,
            limits=base.limits,
            timer=base._timer,
        )
        self.probe: Callable[[], None] | None = probe
        self.ended = False

    def release(self, n: int) -> None:
        super().release(n)
        self.ended = True

    def check(self) -> None:
        if self.ended and self.probe is not None:
            probe, self.probe = self.probe, None
            probe()
        super().check()


@pytest.fixture
def items(store: Store) -> Store:
    make_items(store)
    with store.engine.begin() as connection:
        connection.exec_driver_sql("INSERT INTO items (label) VALUES ('before')")
    store.define_query("twice", None, "SELECT label FROM items; SELECT label FROM items")
    store.define_job(name="reader", schedule="* * * * *", action="query", query="twice")
    return store


def test_it_shows_each_statement_a_row_committed_before_it(items: Store) -> None:
    def commit_a_row() -> None:
        with items.engine.begin() as connection:
            connection.exec_driver_sql("INSERT INTO items (label) VALUES ('between')")

    detail = items.run_job("reader", _Between(commit_a_row))
    # The first statement saw one row, the second two: the one committed between them.
    assert detail == "2 statements; 0 rows changed; 3 rows returned"
    assert rows(items, "SELECT count(*) FROM items") == [(2,)]


def test_it_holds_no_lock_between_statements(items: Store) -> None:
    held: list[object] = []

    def probe_the_lock() -> None:
        with items.engine.connect() as connection:
            if items.dialect == "postgresql":
                with connection.begin():
                    connection.exec_driver_sql("SET LOCAL lock_timeout = 1")
                    try:
                        connection.exec_driver_sql("LOCK TABLE items IN ACCESS EXCLUSIVE MODE")
                    except Exception as error:  # lock_timeout: the run still holds the table
                        held.append(error)
            else:
                connection.exec_driver_sql("INSERT INTO items (label) VALUES ('between')")
                connection.commit()
                connection.exec_driver_sql("PRAGMA busy_timeout = 0")
                busy, _log, _done = connection.exec_driver_sql(
                    "PRAGMA wal_checkpoint(TRUNCATE)"
                ).one()
                if busy:  # a reader still holds a snapshot older than the log's end
                    held.append(busy)

    items.run_job("reader", _Between(probe_the_lock))
    assert held == []
