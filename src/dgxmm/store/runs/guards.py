"""The database's own guards on a query job's run: what it may write, and when it must stop.

Writes are enforced by the database, not only by the parse: on SQLite an authorizer on the
run's connection denies INSERT, UPDATE and DELETE on any table outside the effects (a
trigger's writes included) and every statement besides reads and those writes; on PostgreSQL
a job without write effects runs in a READ ONLY transaction, and a writing run reads
``pg_stat_xact_user_tables`` when it starts and again before it commits: the tables whose
counts grew are those the transaction changed (triggers and functions included), and each
must be among the effects.

The deadline and a cancel reach a statement under way from a thread of the run's own: on
SQLite an interrupt of the run's connection, on PostgreSQL a cancel request.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection

from dgxmm.errors import NotAllowed
from dgxmm.jobs import RunContext
from dgxmm.store.catalog.analysis import table_key
from dgxmm.store.database import Dialect

__all__ = ["check_pg_writes", "pg_tuple_counts", "pg_watch", "sqlite_guard"]

_WATCH_S = 0.1
_ALLOWED_SQLITE_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)
_WRITE_ACTIONS = {
    sqlite3.SQLITE_INSERT: "insert into",
    sqlite3.SQLITE_UPDATE: "update",
    sqlite3.SQLITE_DELETE: "delete from",
}


@contextmanager
def sqlite_guard(
    connection: Connection, allowed: frozenset[str], ctx: RunContext, denied: list[str]
) -> Iterator[None]:
    """Install the authorizer and the deadline on the run's SQLite connection, then remove them."""
    raw = connection.connection.driver_connection
    assert isinstance(raw, sqlite3.Connection)

    def authorize(
        action: int, arg1: str | None, _arg2: str | None, db: str | None, _trigger: str | None
    ) -> int:
        if action in _ALLOWED_SQLITE_ACTIONS:
            return sqlite3.SQLITE_OK
        verb = _WRITE_ACTIONS.get(action)
        if verb is not None and arg1 is not None:
            key = table_key(arg1, db, quoted=False, dialect=Dialect.SQLITE)
            if key in allowed:
                return sqlite3.SQLITE_OK
            denied.append(f"{verb} {key}")
        else:
            denied.append(f"action {action} ({arg1})")
        return sqlite3.SQLITE_DENY

    stop = threading.Event()

    def watch() -> None:
        # From its own thread, so that the statement runs with the GIL released from start to
        # end: a progress handler is Python called every few thousand steps, and each call
        # took the GIL back, which held every request of the server ~5 ms per hand-off while
        # a long query job ran (issue 28). Past the deadline it interrupts again at each wake:
        # SQLite forgets an interrupt that found no statement running.
        while True:
            remaining = ctx.remaining()
            if remaining is not None and remaining <= 0:
                raw.interrupt()
                remaining = None
            if stop.wait(_WATCH_S if remaining is None else min(_WATCH_S, remaining)):
                return

    raw.set_authorizer(authorize)
    watcher = threading.Thread(target=watch, name=f"dgxmm-watch-{ctx.name}", daemon=True)
    watcher.start()
    ctx.add_interrupt(raw.interrupt)  # a cancel stops the statement at once, a lock wait too
    try:
        yield
    finally:
        ctx.remove_interrupt(raw.interrupt)
        stop.set()
        watcher.join()
        raw.set_authorizer(None)


@contextmanager
def pg_watch(connection: Connection, ctx: RunContext) -> Iterator[None]:
    """Cancel the running statement when the host abandons the run.

    The timeout reaches PostgreSQL as ``statement_timeout``; an abandoned run has no time left
    from one moment to the next, which only a cancel request tells the server.
    """
    raw = connection.connection.driver_connection
    stop = threading.Event()
    backend = int(connection.exec_driver_sql("SELECT pg_backend_pid()").scalar_one())

    def cancel() -> None:
        # From another session: this one is busy with the statement being cancelled.
        with connection.engine.connect() as other:
            other.exec_driver_sql("SELECT pg_cancel_backend(%(pid)s)", {"pid": backend})

    def watch() -> None:
        while not stop.wait(_WATCH_S):
            if ctx.abandoned is not None:
                raw.cancel_safe()  # type: ignore[union-attr]
                return

    watcher = threading.Thread(target=watch, name=f"dgxmm-watch-{ctx.name}", daemon=True)
    watcher.start()
    ctx.add_interrupt(cancel)
    try:
        yield
    finally:
        ctx.remove_interrupt(cancel)
        stop.set()
        watcher.join()


def pg_tuple_counts(connection: Connection) -> dict[str, int]:
    """Return the rows inserted, updated and deleted per table, as this session counts them.

    The counts hold the current transaction and earlier ones not yet flushed to the
    statistics; nothing is flushed inside a transaction, so the difference between two
    readings in one transaction is what that transaction did.
    """
    rows = connection.exec_driver_sql(
        "SELECT schemaname, relname, n_tup_ins + n_tup_upd + n_tup_del "
        "FROM pg_stat_xact_user_tables"
    ).all()
    return {
        table_key(relname, schema, quoted=True, dialect=Dialect.POSTGRESQL): int(count)
        for schema, relname, count in rows
    }


def check_pg_writes(
    connection: Connection, allowed: frozenset[str], before: dict[str, int], name: str
) -> None:
    after = pg_tuple_counts(connection)
    written = {table for table, count in after.items() if count > before.get(table, 0)}
    outside = sorted(written - allowed)
    if outside:
        raise NotAllowed(
            f"job {name}: wrote {', '.join(outside)} outside its effects (a trigger or a "
            "function, perhaps); nothing was changed"
        )
