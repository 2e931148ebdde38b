"""Runs of query jobs: within the job's effects and limits, a write all or nothing.

Before a run, the store reads the saved query as it is now and finds again what it may write;
a query that now writes more than the job's effects is refused (``NotAllowed``) until the job
is defined again. A run that writes is one transaction: every statement of the body, then the
run's row in the change log (``job: <name>``), then the commit. A breach of a limit, a write
outside the effects or an error rolls all of it back, and the run is failed with the reason.
A run that only reads is one transaction per statement: it holds no lock between statements,
and each statement sees the data as it is when that statement starts.

Limits reach every statement:

- the timeout as the statement's deadline: on SQLite a watching thread interrupts the
  statement when the run's time is up (``guards.py``); PostgreSQL gets
  ``SET LOCAL statement_timeout`` with the time left before each statement; and as the
  longest wait for SQLite's write lock (the busy timeout of a writing run's BEGIN IMMEDIATE);
- a cancel (``RunContext.cancel``: an admin's, or a newer time of a ``cancel_other`` job) as
  an interrupt of the statement under way: ``sqlite3.Connection.interrupt`` on SQLite,
  ``pg_cancel_backend`` of the run's backend (from another connection) on PostgreSQL; the
  transaction rolls back as on any error, and the run is recorded cancelled;
- the memory limit as the bytes of result rows a statement holds at once: rows are fetched
  in chunks of ``CHUNK_ROWS`` and charged to the run as they arrive (``row_bytes``), and given
  back when the statement ends.

Writes are enforced by the database, not only by the parse: an authorizer on SQLite; on
PostgreSQL a READ ONLY transaction, or the tables a writing one changed (``guards.py``).
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError

from dgxmm import words
from dgxmm.clock import Clock
from dgxmm.errors import (
    Abandoned,
    Cancelled,
    DefinitionError,
    InvalidInput,
    NotAllowed,
    NotFound,
    StoreError,
    TimeoutExceeded,
)
from dgxmm.jobs import Channel, RunContext, WorkloadStats
from dgxmm.store.catalog.analysis import Statement, analyze
from dgxmm.store.catalog.effects import Execute, Write
from dgxmm.store.catalog.params import bind_args, check_args
from dgxmm.store.catalog.protection import ProtectedTable, write_refusal
from dgxmm.store.catalog.records import JobDefinition, SavedQuery
from dgxmm.store.database import (
    BUSY_TIMEOUT_MS,
    Dialect,
    describe_db_error,
    is_busy_error,
    transaction_options,
)
from dgxmm.store.runs.changes import record_change
from dgxmm.store.runs.guards import check_pg_writes, pg_tuple_counts, pg_watch, sqlite_guard
from dgxmm.store.runs.kept_rows import RowKeeper
from dgxmm.time_units import SECOND_US

__all__ = ["CHUNK_ROWS", "counted", "row_bytes", "run_query_job", "run_saved_query"]

CHUNK_ROWS = 500
_PG_TIMEOUT_MAX_MS = 2**31 - 1


def row_bytes(row: Any) -> int:
    """Return the bytes one result row counts for: text and blobs their length, else 8."""
    total = 0
    for value in row:
        if value is None:
            continue
        if isinstance(value, str | bytes | bytearray | memoryview):
            total += len(value)
        else:
            total += 8
    return total


@dataclass(slots=True)
class _Tally:
    statements: int = 0
    changed: int = 0
    returned: int = 0
    denied: list[str] = field(default_factory=list)
    keeper: RowKeeper = field(default_factory=RowKeeper)  # the first rows, for the run's page

    def detail(self) -> str:
        return (
            f"{words.counted(self.statements, 'statement')}; "
            f"{words.counted(self.changed, 'row')} changed; "
            f"{words.counted(self.returned, 'row')} returned"
        )


def run_query_job(
    *,
    engine: Engine,
    dialect: Dialect,
    clock: Clock,
    job: JobDefinition,
    args: dict[str, object],
    query: SavedQuery,
    ctx: RunContext,
    protected: Mapping[str, ProtectedTable],
) -> str:
    """Run a query job once; return its detail, or raise why it failed (nothing changed)."""
    allowed = _check_effects(job, query, dialect, protected)
    try:
        checked = check_args(args, query.params)
    except DefinitionError as error:
        raise DefinitionError(
            "args",
            f"job {job.name}: {error.message} (saved query {query.name} changed since the job "
            "was defined: define the job again)",
        ) from None
    bound = bind_args(checked, query.params, dialect)
    statements = analyze(query.body, dialect).statements
    tally = _Tally()
    lock_wait_ms = _lock_wait_ms(ctx)
    with engine.connect() as connection:
        connection.execution_options(
            **transaction_options(write=bool(allowed), busy_ms=lock_wait_ms)
        )
        run = _Run(connection, dialect, bound, ctx, tally, allowed, job.name)
        try:
            if allowed:
                with connection.begin():
                    run.execute(statements)
                    ctx.check()  # a statement that ended past the deadline commits nothing
                    record_change(
                        connection,
                        at_us=clock.now_us(),
                        job=job.name,
                        actor=job.defined_by,
                        summary=f"query {query.name}: {tally.detail()}",
                    )
            else:
                # A run that only reads ends its transaction after each statement: it holds
                # no lock and no snapshot between them (SQLite keeps a transaction's snapshot
                # from its first read to its end, PostgreSQL the locks on what it read), so
                # writes go on beside it and each statement sees the data of its moment.
                for statement in statements:
                    with connection.begin():
                        run.execute((statement,))
                ctx.check()
        except DBAPIError as error:
            cut = lock_wait_ms is not None and lock_wait_ms < BUSY_TIMEOUT_MS
            raise _run_error(error, job.name, ctx, tally, lock_wait_cut=cut) from error
    tally.keeper.keep_in(ctx)
    return tally.detail()


def run_saved_query(
    *,
    engine: Engine,
    dialect: Dialect,
    clock: Clock,
    query: SavedQuery,
    args: Mapping[str, object],
    actor: str | None,
    ctx: RunContext,
    protected: Mapping[str, ProtectedTable],
) -> str:
    """Run a saved query that only reads, now (from the API or the CLI); return its detail.

    It runs as a query job without write effects would: a statement at a time, under the
    same authorizer and limits. A query that writes is refused: a write runs as a job, whose
    effects were granted when it was defined.
    """
    writes = sorted(analyze(query.body, dialect).writes)
    if writes:
        raise InvalidInput(
            "name",
            f"saved query {query.name} writes {', '.join(writes)}: define a job to run it",
        )
    checked = check_args(args, query.params)
    reader = JobDefinition(
        name=query.name,
        definition={},
        effects=(Execute(query=query.name),),
        version=0,
        defined_by=actor,
        defined_at=clock.now_us(),
        reason=None,
    )
    return run_query_job(
        engine=engine,
        dialect=dialect,
        clock=clock,
        job=reader,
        args=checked,
        query=query,
        ctx=ctx,
        protected=protected,
    )


@contextmanager
def counted(
    stats: WorkloadStats, clock: Clock, channel: Channel, ctx: RunContext
) -> Iterator[None]:
    """Count a saved query's run under its channel; one refused before it ran is no run."""
    started_at = clock.now_us()
    failed: bool | None = True
    try:
        yield
        failed = False
    except (InvalidInput, NotAllowed, NotFound):
        failed = None
        raise
    finally:
        if failed is not None:
            stats.record_query(
                channel,
                started_at=started_at,
                duration_us=round(ctx.elapsed() * SECOND_US),
                failed=failed,
            )


@dataclass(frozen=True, slots=True)
class _Run:
    """One run's connection and state: runs statements inside the caller's transaction."""

    connection: Connection
    dialect: Dialect
    bound: dict[str, object]
    ctx: RunContext
    tally: _Tally
    allowed: frozenset[str]
    name: str

    def execute(self, statements: tuple[Statement, ...]) -> None:
        """Run the statements under the dialect's guards (the authorizer, the watch)."""
        connection, allowed = self.connection, self.allowed
        if self.dialect is Dialect.SQLITE:
            with sqlite_guard(connection, allowed, self.ctx, self.tally.denied):
                self._execute_all(statements)
            return
        if not allowed:
            connection.exec_driver_sql("SET TRANSACTION READ ONLY")
        with pg_watch(connection, self.ctx):
            before = pg_tuple_counts(connection) if allowed else {}
            self._execute_all(statements)
            if allowed:
                check_pg_writes(connection, allowed, before, self.name)

    def _execute_all(self, statements: tuple[Statement, ...]) -> None:
        _execute_all(
            self.connection,
            dialect=self.dialect,
            statements=statements,
            bound=self.bound,
            ctx=self.ctx,
            tally=self.tally,
        )


def _lock_wait_ms(ctx: RunContext) -> int | None:
    """Return how long the run may wait for SQLite's write lock: no longer than its deadline."""
    remaining = ctx.remaining()
    if remaining is None:
        return None
    return min(BUSY_TIMEOUT_MS, max(1, math.ceil(remaining * 1000)))


def _check_effects(
    job: JobDefinition,
    query: SavedQuery,
    dialect: Dialect,
    protected: Mapping[str, ProtectedTable],
) -> frozenset[str]:
    """Return the tables the run may write; refuse when the query now writes more.

    The database's protected tables are refused whatever the effects say: a job defined by a
    process that did not know them (an older dgxmm, a row written by hand) never writes them.
    """
    if Execute(query=query.name) not in job.effects:
        raise NotAllowed(f"job {job.name}: its effects do not allow Execute({query.name})")
    allowed = frozenset(e.table for e in job.effects if isinstance(e, Write))
    writes = analyze(query.body, dialect).writes
    refusal = write_refusal(allowed | writes, protected, dialect)
    if refusal is not None:
        raise NotAllowed(f"job {job.name}: its saved query {query.name} writes {refusal}")
    extra = sorted(writes - allowed)
    if extra:
        raise NotAllowed(
            f"job {job.name}: saved query {query.name} now writes {', '.join(extra)}, which "
            "the job's effects do not allow; define the job again"
        )
    return allowed


def _execute_all(
    connection: Connection,
    *,
    dialect: Dialect,
    statements: tuple[Statement, ...],
    bound: dict[str, object],
    ctx: RunContext,
    tally: _Tally,
) -> None:
    for statement in statements:
        ctx.check()
        tally.statements += 1
        params = {name: bound[name] for name in set(statement.params)}
        options: dict[str, object] = {}
        if dialect is Dialect.POSTGRESQL:
            remaining = ctx.remaining()
            if remaining is not None:
                # statement_timeout holds at most INT_MAX milliseconds (24.8 days).
                deadline_ms = min(_PG_TIMEOUT_MAX_MS, max(1, math.ceil(remaining * 1000)))
                connection.exec_driver_sql(f"SET LOCAL statement_timeout = {deadline_ms}")
            if statement.is_read_only:
                # A server-side cursor, so that rows arrive a chunk at a time.
                options = {"stream_results": True, "max_row_buffer": CHUNK_ROWS}
        result = connection.exec_driver_sql(
            statement.driver_text(dialect), params, execution_options=options
        )
        held = 0
        try:
            if result.returns_rows:
                tally.keeper.start(result.keys())
                while rows := result.fetchmany(CHUNK_ROWS):
                    tally.keeper.add(rows)
                    size = sum(row_bytes(row) for row in rows)
                    held += size
                    ctx.charge(size)
                    tally.returned += len(rows)
                    ctx.check()
            if not statement.is_read_only and result.rowcount >= 0:
                tally.changed += result.rowcount
        finally:
            result.close()
            ctx.release(held)


def _run_error(
    error: DBAPIError, name: str, ctx: RunContext, tally: _Tally, *, lock_wait_cut: bool
) -> Exception:
    original = error.orig
    message = describe_db_error(error)
    where = f"job {name}: statement {tally.statements}"
    if lock_wait_cut and is_busy_error(error):
        # The wait for the write lock was cut to the run's deadline: that is why it ended.
        return _timeout(f"job {name}: the wait for the database's write lock", ctx)
    if tally.denied:
        return NotAllowed(
            f"{where} would {tally.denied[0]}, outside the job's effects; nothing was changed"
        )
    if isinstance(original, sqlite3.OperationalError) and message == "interrupted":
        return _timeout(where, ctx)
    sqlstate = getattr(original, "sqlstate", None)
    if sqlstate == "57014":  # query_canceled: statement_timeout
        return _timeout(where, ctx)
    if sqlstate == "25006":  # read_only_sql_transaction
        return NotAllowed(f"{where} writes, and the job's effects allow no write")
    # The database's words can quote a value the query read (a failed cast, a JSON path):
    # only the statement's number is for everyone.
    return StoreError(f"{where} failed: {message}", public=f"{where} failed")


def _timeout(where: str, ctx: RunContext) -> TimeoutExceeded | Abandoned | Cancelled:
    if ctx.cancelled_by is not None:
        return Cancelled(
            f"{where} was interrupted: cancelled by {ctx.cancelled_by}; nothing was changed"
        )
    if ctx.abandoned is not None:
        return Abandoned(f"{where} was stopped: the run was abandoned ({ctx.abandoned})")
    timeout = ctx.limits.timeout
    limit = "" if timeout is None else f" of {timeout.total_seconds():g} s"
    return TimeoutExceeded(
        f"{where} passed the run's timeout{limit} after {ctx.elapsed():.3f} s; nothing was changed"
    )
