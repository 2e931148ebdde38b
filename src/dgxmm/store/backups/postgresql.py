"""Backups of a PostgreSQL store, with PostgreSQL's own means (no page access there).

A run opens one ``REPEATABLE READ`` snapshot and exports it, then:

- the schema: ``pg_dump --schema-only --snapshot=<it>`` writes ``schema.sql`` (tables,
  indexes, constraints, triggers, functions, sequences) as of that snapshot;
- the data: every table of every schema but PostgreSQL's own (``pg_catalog``,
  ``information_schema``, ``pg_toast``, temporary schemas), those of extensions included
  (a restore empties what ``CREATE EXTENSION`` put in them), is read with ``COPY
  (SELECT ... ORDER BY <primary key>) TO STDOUT`` (text format, session settings fixed so
  the text is stable) and hashed (SHA-256), as ``pg_tables.py`` does it. Tables are named
  as ``regclass`` prints them: ``items`` in the default schema, ``app.items`` in another. A
  table whose hash equals the chain's is not stored again: the manifest points at the run
  that holds it. So an increment stores only the tables that changed, but it still reads
  every table: on PostgreSQL an increment saves bytes, not time;
- sequences (of the same schemas): their values, set again on restore.

``restore_postgresql`` needs a new, empty, ordinary database: it refuses, naming
``target``, the cluster's templates and its maintenance database ``postgres``, the live
database, and a database holding any table, view or sequence outside PostgreSQL's own
schemas (an extension's own objects aside); a database it cannot reach is an
``InvalidInput`` naming ``target``. It loads ``schema.sql`` with ``psql`` (one
transaction), copies every table in with its user triggers disabled (in foreign-key order),
sets the sequences, then reads every table back and compares its hash with the manifest's
before it commits.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy import Engine, text
from sqlalchemy.engine import URL

from dgxmm.errors import BackupError, Conflict, InvalidInput, StoreError
from dgxmm.store.backups.directory import (
    BackupDir,
    BackupResult,
    Progress,
    RestoreResult,
    manifest_head,
    no_progress,
    read_marker,
    read_runs,
    write_manifest,
)
from dgxmm.store.backups.pg_tables import (
    SESSION,
    checked_file,
    copy_in,
    copy_out,
    file_for,
    identifier,
    load_order,
    quoted,
    relations,
    sequence_values,
)
from dgxmm.store.database import Target
from dgxmm.store.schema import settings

__all__ = ["backup_postgresql", "restore_postgresql"]

SCHEMA = "schema.sql"
_FORMAT = 2  # 2: tables keyed as regclass prints them, in every schema; 1: current_schema()
# The cluster's own databases: a template is copied into every new database, and postgres
# is where tools and people connect to administer the cluster.
_CLUSTER_DATABASES = {
    "template0": "a template database",
    "template1": "the template every new database of the cluster is made from",
    "postgres": "the cluster's maintenance database",
}
Check = Callable[[], None]


def backup_postgresql(
    engine: Engine,
    directory: Path,
    *,
    store_id: str,
    now_us: int,
    check: Check,
    progress: Progress = no_progress,
) -> BackupResult:
    """Back the database up into ``directory``; ``check`` raises when time is up."""
    target = BackupDir(directory, kind="postgresql", store_id=store_id)
    runs = target.open_for_backup()
    previous = runs[-1].manifest["tables"] if runs else {}
    sequence = len(runs) + 1
    check()
    with _connect(engine.url) as connection, target.new_run(sequence) as temp:
        connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        for statement in SESSION:
            connection.execute(statement)
        snapshot = connection.execute("SELECT pg_export_snapshot()").fetchone()
        assert snapshot is not None
        _dump_schema(engine.url, str(snapshot[0]), temp / SCHEMA)
        written = (temp / SCHEMA).stat().st_size
        tables: dict[str, Any] = {}
        stored = 0
        names = relations(connection, "r")
        for done, name in enumerate(names, start=1):
            check()
            file = file_for(name)
            entry = copy_out(connection, name, temp / file)
            progress(done, len(names))
            earlier = previous.get(name)
            if earlier is not None and earlier["sha256"] == entry["sha256"]:
                (temp / file).unlink()
                entry["run"] = earlier["run"]
                entry["file"] = earlier.get("file", f"{name}.copy")
            else:
                entry["run"] = sequence
                entry["file"] = file
                written += entry["bytes"]
                stored += 1
            tables[name] = entry
        sequences = sequence_values(connection)
        revision = connection.execute("SELECT version_num FROM alembic_version").fetchone()
        connection.execute("COMMIT")
        check()
        write_manifest(
            temp,
            {
                **manifest_head(
                    kind="postgresql",
                    format=_FORMAT,
                    runs=runs,
                    method="full" if not runs else "tables",
                    now_us=now_us,
                ),
                "revision": None if revision is None else revision[0],
                "tables": tables,
                "sequences": sequences,
            },
        )
    return BackupResult(
        directory=directory,
        sequence=sequence,
        method="full" if not runs else "tables",
        items=stored,
        bytes_written=written,
    )


def restore_postgresql(
    directory: Path,
    target: Target,
    progress: Progress = no_progress,
    *,
    live: Engine | None = None,
    drop_settings: tuple[str, ...] = (),
) -> RestoreResult:
    """Rebuild the backup in the new, empty database ``target``; verified table by table.

    ``live`` is the engine of the store the restore runs in, so that its database is known
    when given as the target. The settings whose keys start with one of ``drop_settings``
    (the instance's, not the data's) are deleted after the verification, before the commit.
    """
    marker = read_marker(directory)
    if marker.get("kind") != "postgresql":
        raise BackupError(f"{directory} holds a {marker.get('kind')} backup, not a PostgreSQL one")
    runs = read_runs(directory)
    if not runs:
        raise BackupError(f"{directory} holds no finished backup run")
    last = runs[-1]
    manifest = last.manifest
    by_number = {run.sequence: run.path for run in runs}
    with _connect_target(target) as connection:
        _refuse_unless_new(connection, target, live)
    _load_schema(target.url, last.path / SCHEMA)
    tables: dict[str, Any] = manifest["tables"]
    # Format 1 named tables of current_schema() by their bare names; regclass needs them quoted.
    lookup = {name: name if manifest.get("format", 1) >= 2 else quoted(name) for name in tables}
    try:
        with _connect_target(target) as connection:
            connection.execute("BEGIN")
            for statement in SESSION:
                connection.execute(statement)
            ordered = load_order(connection, lookup)
            # schema.sql made every table empty but those of extensions, which CREATE
            # EXTENSION filled; they are backed up like the others, so they start empty too.
            if ordered:
                everything = [identifier(connection, lookup[name]) for name in ordered]
                connection.execute(sql.SQL("TRUNCATE {}").format(sql.SQL(", ").join(everything)))
            for done, name in enumerate(ordered, start=1):
                entry = tables[name]
                source = by_number[int(entry["run"])] / checked_file(entry, name)
                copy_in(connection, lookup[name], entry, source)
                progress(done, len(ordered))
            for name, (value, called) in manifest.get("sequences", {}).items():
                sequence = name if manifest.get("format", 1) >= 2 else quoted(name)
                connection.execute("SELECT setval(%s::regclass, %s, %s)", (sequence, value, called))
            for name in tables:
                found = copy_out(connection, lookup[name], None)
                if found["sha256"] != tables[name]["sha256"]:
                    raise BackupError(f"restored table {name} does not match its checksum")
            if drop_settings and settings.name in lookup:
                # The same rule as SQLite's, whose pages cannot leave rows out: the backup
                # is an exact copy, the restore leaves out what belongs to the instance.
                table = identifier(connection, lookup[settings.name])
                for prefix in drop_settings:
                    connection.execute(
                        sql.SQL("DELETE FROM {} WHERE substr(key, 1, %s) = %s").format(table),
                        (len(prefix), prefix),
                    )
            connection.execute("COMMIT")
    except psycopg.Error as error:
        raise StoreError(f"restore: the target database failed: {error}") from error
    return RestoreResult(target=_shown(target.url), sequence=last.sequence, items=len(tables))


def _refuse_unless_new(
    connection: psycopg.Connection[Any], target: Target, live: Engine | None
) -> None:
    """Refuse, naming ``target``, a database that is not new, empty and ordinary."""
    name = str(target.url.database)
    row = connection.execute(
        "SELECT datistemplate FROM pg_database WHERE datname = current_database()"
    ).fetchone()
    if row is not None and row[0]:
        raise Conflict(f"{name} is a template database; give a new, empty one", field="target")
    if live is not None and _is_live(connection, live):
        raise Conflict(f"{name} is this store's live database", field="target")
    found = relations(connection, "r", "p", "v", "m", "f", "S", extensions=False)
    if found:
        shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        raise Conflict(
            f"{name} is not empty (it holds {shown}); give a new, empty database",
            field="target",
        )


def _is_live(connection: psycopg.Connection[Any], live: Engine) -> bool:
    """Tell whether ``connection`` reached the live store's database (same cluster, same one).

    The live store's own session sees this connection in its cluster's ``pg_stat_activity``,
    in its own database, only when both are one: a process id and start time are unique.
    """
    row = connection.execute(
        "SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()"
    ).fetchone()
    if row is None:
        return False
    with live.connect() as other:
        seen = other.execute(
            text(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = :pid "
                "AND backend_start = :started AND datname = current_database()"
            ),
            {"pid": row[0], "started": row[1]},
        ).scalar_one()
    return bool(seen)


def _connect(url: URL) -> psycopg.Connection[Any]:
    return psycopg.connect(_conninfo(url), autocommit=True)


def _connect_target(target: Target) -> psycopg.Connection[Any]:
    """Connect to a restore's target; a database refused by name or unreachable names it."""
    name = str(target.url.database)
    if name in _CLUSTER_DATABASES:
        raise Conflict(
            f"{name} is {_CLUSTER_DATABASES[name]}; give a new, empty database", field="target"
        )
    try:
        return _connect(target.url)
    except psycopg.OperationalError as error:
        reason = " ".join(str(error).split())
        raise InvalidInput("target", f"cannot connect to {_shown(target.url)}: {reason}") from error


def _shown(url: URL) -> str:
    return url.render_as_string(hide_password=True)


def _conninfo(url: URL) -> str:
    parts = {
        "host": url.query.get("host") or url.host,
        "port": url.port,
        "user": url.username,
        "password": url.password,
        "dbname": url.database,
    }
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in parts.items() if v})


def _dump_schema(url: URL, snapshot: str, out: Path) -> None:
    pg_dump = _tool("pg_dump")
    result = subprocess.run(
        [
            str(pg_dump),
            "--schema-only",
            "--no-owner",
            "--no-privileges",
            f"--snapshot={snapshot}",
            f"--file={out}",
            f"--dbname={_conninfo(url)}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise StoreError(f"backup: pg_dump failed: {result.stderr.strip()}")


def _load_schema(url: URL, schema: Path) -> None:
    psql = _tool("psql")
    result = subprocess.run(
        [
            str(psql),
            "-X",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "--single-transaction",
            f"--file={schema}",
            f"--dbname={_conninfo(url)}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise BackupError(f"restore: loading the schema failed: {result.stderr.strip()}")


def _tool(name: str) -> Path:
    """Find a PostgreSQL client program: the newest under /usr/lib/postgresql, else PATH."""
    for directory in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True, key=_major):
        candidate = Path(directory, name)
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(name)
    if found is None:
        raise StoreError(f"{name} is needed to back up or restore PostgreSQL, and it is missing")
    return Path(found)


def _major(directory: str) -> int:
    part = Path(directory).parent.name
    return int(part) if part.isdigit() else 0
