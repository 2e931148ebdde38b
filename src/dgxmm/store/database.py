"""The database under the store: where it is, its engine, its migrations, its transactions.

SQLite (the default) is a file in WAL mode; every connection gets ``foreign_keys=ON``, a busy
timeout, and no automatic checkpoints (the store does every checkpoint itself, to know which
pages changed: see ``backups/wal.py``). SQLAlchemy emits our own ``BEGIN`` (``BEGIN
IMMEDIATE`` for a write, so a transaction never has to upgrade its lock half way). PostgreSQL
is reached by a ``postgresql://`` or ``postgresql+psycopg://`` URL through psycopg 3.

Migrations are Alembic revisions in ``migrations/versions``, applied on open with a ``Config``
built in code (no ``alembic.ini``), under a lock so that two processes opening one database
at once do not both apply them.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.util.exc import CommandError
from sqlalchemy import Connection, Engine, Table, create_engine, event
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from dgxmm.errors import Busy, InvalidInput, StoreError
from dgxmm.store.files import FILE_MODE, make_private_dir

__all__ = [
    "BUSY_MESSAGE",
    "BUSY_TIMEOUT_MS",
    "CHANGE_BUSY_MS",
    "MIGRATIONS",
    "Dialect",
    "Target",
    "create_store_engine",
    "is_busy_error",
    "migrate",
    "parse_target",
    "reading",
    "transaction_options",
    "writing",
]

BUSY_TIMEOUT_MS = 5000
# A catalog change or a setting asked for over HTTP waits this long for a writing job, then
# answers Busy (409): a request should not hang for a job's whole run.
CHANGE_BUSY_MS = 2000
MIGRATIONS = Path(__file__).with_name("migrations")
# Arbitrary, fixed: the PostgreSQL advisory lock that serializes migrations across processes.
_MIGRATION_LOCK = 0x64677878_6D6D0001 & 0x7FFFFFFFFFFFFFFF
_WRITE_OPTION = "dgxmm_write"
_BUSY_OPTION = "dgxmm_busy_ms"
# SQLite's words for a write lock it could not get, and PostgreSQL's lock_not_available.
_SQLITE_BUSY = ("database is locked", "database is busy", "database table is locked")
_PG_LOCK_NOT_AVAILABLE = "55P03"
BUSY_MESSAGE = "busy: a job is writing; try again"
_IN_MEMORY = "an in-memory SQLite database cannot hold a store; give a file"


class Dialect(StrEnum):
    """The two databases the store runs on (equal to their names: ``"sqlite"``...)."""

    SQLITE = "sqlite"
    POSTGRESQL = "postgresql"

    @property
    def sqlglot(self) -> str:
        """The dialect's name in sqlglot."""
        return "sqlite" if self is Dialect.SQLITE else "postgres"

    def insert(self, table: Table) -> postgresql.Insert | sqlite.Insert:
        """The dialect's INSERT into ``table``, the one that takes ``on_conflict_do_nothing``."""
        return postgresql.insert(table) if self is Dialect.POSTGRESQL else sqlite.insert(table)


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """Where a store lives: its URL, its dialect, and for SQLite the database file."""

    url: URL
    dialect: Dialect
    path: Path | None


def parse_target(target: str | Path, *, base: Path | None = None) -> Target:
    """Read a file path, a ``sqlite:///`` URL or a PostgreSQL URL; refuse anything else.

    A relative SQLite path is under ``base`` (default: the working directory).
    """
    text = str(target)
    if isinstance(target, Path) or "://" not in text:
        return _sqlite_target(text, base)
    try:
        url = make_url(text)
    except (ArgumentError, ValueError) as error:  # ValueError: a port that is no number
        raise InvalidInput("target", f"{_shown(text)!r} is not a database URL") from error
    # The scheme read by hand: SQLAlchemy's own reading loads the dialect, and there is no
    # "postgres" dialect, although libpq and many hosts write URLs that way.
    backend, _, driver = url.drivername.partition("+")
    if backend == "sqlite":
        if not url.database or url.database == ":memory:" or url.database.startswith("file:"):
            raise InvalidInput("target", _IN_MEMORY)
        return _sqlite_target(url.database, base)
    if backend in ("postgresql", "postgres"):
        if driver not in ("psycopg", ""):
            raise InvalidInput("target", f"PostgreSQL is reached through psycopg 3, not {driver!r}")
        if not url.database:
            shown = url.render_as_string(hide_password=True)
            raise InvalidInput("target", f"{shown!r} names no database; add /<database>")
        url = url.set(drivername="postgresql+psycopg")
        return Target(url=url, dialect=Dialect.POSTGRESQL, path=None)
    raise InvalidInput("target", f"{backend!r} is not supported: use SQLite or PostgreSQL")


def _sqlite_target(text: str, base: Path | None) -> Target:
    if text == ":memory:":
        raise InvalidInput("target", _IN_MEMORY)
    try:
        path = Path(text).expanduser()  # ~nobody-known raises RuntimeError
        if "\x00" in text:  # is_dir() would say False, and resolving it raise ValueError
            raise ValueError("it holds a NUL character")
        path = path if path.is_absolute() else (base or Path.cwd()) / path
        is_dir = path.is_dir()  # a long name raises OSError
    except OSError as error:
        raise InvalidInput("target", f"cannot use {text}: {error.strerror or error}") from error
    except (RuntimeError, ValueError) as error:
        raise InvalidInput("target", f"{text!r} is not a usable path ({error})") from error
    if is_dir:
        raise InvalidInput("target", f"{path} is a directory; give the database file")
    url = URL.create("sqlite+pysqlite", database=str(path))
    return Target(url=url, dialect=Dialect.SQLITE, path=path)


def _shown(text: str) -> str:
    """Return a URL's text with its password, if any, left out."""
    scheme, sep, rest = text.partition("://")
    credentials, at, host = rest.rpartition("@")
    if not at or ":" not in credentials:
        return text
    return f"{scheme}{sep}{credentials.split(':', 1)[0]}:***@{host}"


def create_store_engine(target: Target) -> Engine:
    """Create the engine, with the per-connection settings of the store."""
    if target.dialect is Dialect.POSTGRESQL:
        return create_engine(target.url, pool_pre_ping=True)
    assert target.path is not None
    make_private_dir(target.path.parent)
    # SQLite gives the -wal and -shm files the database file's mode, so this covers all three.
    with contextlib.suppress(FileExistsError):
        os.close(os.open(target.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    engine = create_engine(
        target.url, connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000}
    )
    event.listen(engine, "connect", _configure_sqlite)
    event.listen(engine, "begin", _begin_sqlite)
    return engine


def configure_sqlite_connection(connection: sqlite3.Connection) -> None:
    """Apply the store's settings to one SQLite connection (pooled or raw)."""
    connection.isolation_level = None  # we emit BEGIN ourselves (see _begin_sqlite)
    mode = connection.execute("PRAGMA journal_mode=WAL").fetchone()
    if mode is None or str(mode[0]).lower() != "wal":
        raise StoreError(f"the database could not be put in WAL mode (it is in {mode} mode)")
    connection.execute("PRAGMA foreign_keys=ON")
    connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    # Every checkpoint goes through the store's tracked checkpoint (wal.py).
    connection.execute("PRAGMA wal_autocheckpoint=0")
    # After a restart the WAL file is cut back to this size at the next commit, so its size
    # tells how much was written since the last complete checkpoint.
    connection.execute("PRAGMA journal_size_limit=1048576")


def _configure_sqlite(dbapi_connection: Any, _record: Any) -> None:
    configure_sqlite_connection(dbapi_connection)


def _begin_sqlite(connection: Connection) -> None:
    options = connection.get_execution_options()
    if options.get(_WRITE_OPTION, False):
        # Every write sets its wait, as a pooled connection keeps the last one it was given.
        busy_ms = int(options.get(_BUSY_OPTION) or BUSY_TIMEOUT_MS)
        connection.exec_driver_sql(f"PRAGMA busy_timeout={busy_ms}")
        connection.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        connection.exec_driver_sql("BEGIN")


def transaction_options(*, write: bool, busy_ms: int | None = None) -> dict[str, object]:
    """Return the execution options that make a connection's next BEGIN a write (or a read).

    A write's BEGIN takes SQLite's write lock (``BEGIN IMMEDIATE``), waiting at most
    ``busy_ms`` (``BUSY_TIMEOUT_MS`` when None) for another transaction to let it go.
    """
    return {_WRITE_OPTION: write, _BUSY_OPTION: busy_ms}


@contextmanager
def writing(engine: Engine, *, busy_ms: int | None = None) -> Iterator[Connection]:
    """Yield a connection in a write transaction, committed when the block ends.

    ``busy_ms`` bounds the wait for a lock another transaction holds (SQLite's write lock,
    PostgreSQL's row and table locks) before ``Busy``; the default is ``BUSY_TIMEOUT_MS``.
    """
    with guarded(), engine.connect() as connection:
        connection.execution_options(**transaction_options(write=True, busy_ms=busy_ms))
        with connection.begin():
            if busy_ms is not None and Dialect(engine.dialect.name) is Dialect.POSTGRESQL:
                connection.exec_driver_sql(f"SET LOCAL lock_timeout = {int(busy_ms)}")
            yield connection


@contextmanager
def reading(engine: Engine) -> Iterator[Connection]:
    """Yield a connection in a read transaction (one snapshot for the whole block)."""
    with guarded(), engine.connect() as connection, connection.begin():
        yield connection


@contextmanager
def guarded() -> Iterator[None]:
    """Turn the driver's errors into ``StoreError``, keeping the original on ``__cause__``."""
    try:
        yield
    except DBAPIError as error:
        if is_busy_error(error):
            raise Busy(BUSY_MESSAGE) from error
        raise StoreError(f"the database failed: {describe_db_error(error)}") from error


def is_busy_error(error: DBAPIError) -> bool:
    """Tell whether the database gave up waiting for a lock another transaction holds."""
    original = error.orig
    if isinstance(original, sqlite3.OperationalError):
        return str(original).startswith(_SQLITE_BUSY)
    return getattr(original, "sqlstate", None) == _PG_LOCK_NOT_AVAILABLE


def describe_db_error(error: DBAPIError) -> str:
    """Return the driver's own message, without SQLAlchemy's statement dump."""
    original = error.orig
    text = str(original).strip() if original is not None else str(error)
    return text.splitlines()[0] if text else type(original).__name__


def migrate(engine: Engine, dialect: Dialect) -> None:
    """Bring the schema to the newest revision; refuse a database of a newer dgxmm."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    try:
        with writing(engine) as connection:
            if dialect is Dialect.POSTGRESQL:
                connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})")
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except CommandError as error:
        raise StoreError(
            f"the database's schema is of a newer dgxmm or unknown ({error}); "
            "open it with the dgxmm that wrote it"
        ) from error
