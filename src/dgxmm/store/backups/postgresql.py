"""Backups of a PostgreSQL store, with PostgreSQL's own means (no page access there).

A run opens one ``REPEATABLE READ`` snapshot and exports it, then:

- the schema: ``pg_dump --schema-only --snapshot=<it>`` writes ``schema.sql`` (tables,
  indexes, constraints, triggers, functions, sequences) as of that snapshot;
- the data: every table of every schema but PostgreSQL's own (``pg_catalog``,
  ``information_schema``, ``pg_toast``, temporary schemas), those of extensions included
  (a restore empties what ``CREATE EXTENSION`` put in them), is read with ``COPY
  (SELECT ... ORDER BY <primary key>) TO STDOUT`` (text format, session settings fixed so
  the text is stable) and hashed (SHA-256). Tables are named as ``regclass`` prints them:
  ``items`` in the default schema, ``app.items`` in another. A table whose hash equals the
  chain's is not stored again: the manifest points at the run that holds it. So an
  increment stores only the tables that changed, but it still reads every table: on
  PostgreSQL an increment saves bytes, not time;
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
import hashlib
import os
import re
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
from dgxmm.store.database import Target
from dgxmm.store.schema import settings

__all__ = ["backup_postgresql", "restore_postgresql"]

SCHEMA = "schema.sql"
_FORMAT = 2  # 2: tables keyed as regclass prints them, in every schema; 1: current_schema()
# Schemas of PostgreSQL itself: pg_catalog, pg_toast, pg_temp_N... (no user schema may start
# with pg_), and information_schema. Every other schema is backed up.
_RELATIONS = (
    "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE c.relkind = ANY(%s) AND n.nspname <> 'information_schema' "
    "AND left(n.nspname, 3) <> 'pg_' AND (%s OR NOT EXISTS (SELECT 1 FROM pg_depend d "
    "WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')) "
    "ORDER BY 1"
)
# The cluster's own databases: a template is copied into every new database, and postgres
# is where tools and people connect to administer the cluster.
_CLUSTER_DATABASES = {
    "template0": "a template database",
    "template1": "the template every new database of the cluster is made from",
    "postgres": "the cluster's maintenance database",
}
_PLAIN_NAME = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?")
_SESSION = (
    "SET TimeZone = 'UTC'",
    "SET DateStyle = 'ISO, YMD'",
    "SET IntervalStyle = 'postgres'",
    "SET extra_float_digits = 1",
    "SET bytea_output = 'hex'",
)

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
        for statement in _SESSION:
            connection.execute(statement)
        snapshot = connection.execute("SELECT pg_export_snapshot()").fetchone()
        assert snapshot is not None
        _dump_schema(engine.url, str(snapshot[0]), temp / SCHEMA)
        written = (temp / SCHEMA).stat().st_size
        tables: dict[str, Any] = {}
        stored = 0
        names = _relations(connection, "r")
        for done, name in enumerate(names, start=1):
            check()
            file = _file_for(name)
            entry = _copy_out(connection, name, temp / file)
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
        sequences = _sequences(connection)
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
    lookup = {name: name if manifest.get("format", 1) >= 2 else _quoted(name) for name in tables}
    try:
        with _connect_target(target) as connection:
            connection.execute("BEGIN")
            for statement in _SESSION:
                connection.execute(statement)
            ordered = _load_order(connection, lookup)
            # schema.sql made every table empty but those of extensions, which CREATE
            # EXTENSION filled; they are backed up like the others, so they start empty too.
            if ordered:
                everything = [_identifier(connection, lookup[name]) for name in ordered]
                connection.execute(sql.SQL("TRUNCATE {}").format(sql.SQL(", ").join(everything)))
            for done, name in enumerate(ordered, start=1):
                entry = tables[name]
                source = by_number[int(entry["run"])] / _checked_file(entry, name)
                _copy_in(connection, lookup[name], entry, source)
                progress(done, len(ordered))
            for name, (value, called) in manifest.get("sequences", {}).items():
                sequence = name if manifest.get("format", 1) >= 2 else _quoted(name)
                connection.execute("SELECT setval(%s::regclass, %s, %s)", (sequence, value, called))
            for name in tables:
                found = _copy_out(connection, lookup[name], None)
                if found["sha256"] != tables[name]["sha256"]:
                    raise BackupError(f"restored table {name} does not match its checksum")
            if drop_settings and settings.name in lookup:
                # The same rule as SQLite's, whose pages cannot leave rows out: the backup
                # is an exact copy, the restore leaves out what belongs to the instance.
                table = _identifier(connection, lookup[settings.name])
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
    found = _relations(connection, "r", "p", "v", "m", "f", "S", extensions=False)
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


def _relations(
    connection: psycopg.Connection[Any], *kinds: str, extensions: bool = True
) -> list[str]:
    """Name the relations of these ``relkind``s in the users' schemas, as regclass prints them.

    ``extensions=False`` leaves out the objects of extensions (``CREATE EXTENSION`` made them).
    """
    rows = connection.execute(_RELATIONS, (list(kinds), extensions)).fetchall()
    return [str(row[0]) for row in rows]


def _identifier(connection: psycopg.Connection[Any], name: str) -> sql.Identifier:
    """Return the schema-qualified identifier of a relation named as regclass reads it."""
    row = connection.execute(
        "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE c.oid = %s::regclass",
        (name,),
    ).fetchone()
    assert row is not None  # regclass raised already for a name that names nothing
    return sql.Identifier(str(row[0]), str(row[1]))


def _file_for(name: str) -> str:
    """Return the file of a table's data: its name when plain, else a digest of it."""
    if _PLAIN_NAME.fullmatch(name):
        return f"{name}.copy"
    return f"table-{hashlib.sha256(name.encode()).hexdigest()[:24]}.copy"


def _checked_file(entry: dict[str, Any], name: str) -> str:
    file = str(entry.get("file", f"{name}.copy"))
    if Path(file).name != file or file.startswith("."):
        raise BackupError(f"the manifest names {file!r} for table {name}, which is no file name")
    return file


def _columns(connection: psycopg.Connection[Any], name: str) -> tuple[list[str], list[str]]:
    """Return a table's columns (in order) and its primary key's columns."""
    columns = connection.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
        "AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
        (name,),
    ).fetchall()
    key = connection.execute(
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
        "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::regclass AND i.indisprimary "
        "ORDER BY array_position(i.indkey, a.attnum)",
        (name,),
    ).fetchall()
    return [str(c[0]) for c in columns], [str(k[0]) for k in key]


def _copy_out(connection: psycopg.Connection[Any], name: str, path: Path | None) -> dict[str, Any]:
    """Copy a table out (to ``path``, or only hashed); return its manifest entry."""
    columns, key = _columns(connection, name)
    # Without a primary key, rows are ordered by their whole text (ROW(...), as a column of
    # the table's own name would hide the table's row value).
    order = (
        sql.SQL(", ").join(sql.Identifier(k) for k in key)
        if key
        else sql.SQL("ROW(dgxmm_row.*)::text")
    )
    query = sql.SQL("COPY (SELECT {} FROM {} AS dgxmm_row ORDER BY {}) TO STDOUT").format(
        sql.SQL(", ").join(sql.Identifier(c) for c in columns),
        _identifier(connection, name),
        order,
    )
    digest = hashlib.sha256()
    size = rows = 0
    out = open(path, "wb") if path is not None else None  # noqa: SIM115 - closed below
    try:
        with connection.cursor().copy(query) as copy:
            for chunk in copy:
                data = bytes(chunk)
                digest.update(data)
                size += len(data)
                rows += data.count(b"\n")
                if out is not None:
                    out.write(data)
    finally:
        if out is not None:
            out.close()
    return {"sha256": digest.hexdigest(), "rows": rows, "bytes": size, "columns": columns}


def _copy_in(
    connection: psycopg.Connection[Any], name: str, entry: dict[str, Any], source: Path
) -> None:
    if not source.exists():
        raise BackupError(f"{source} is missing")
    with open(source, "rb") as handle:
        if hashlib.sha256(handle.read()).hexdigest() != entry["sha256"]:
            raise BackupError(f"{source} does not match its checksum")
    table = _identifier(connection, name)
    columns = sql.SQL(", ").join(sql.Identifier(c) for c in entry["columns"])
    connection.execute(sql.SQL("ALTER TABLE {} DISABLE TRIGGER USER").format(table))
    with (
        open(source, "rb") as handle,
        connection.cursor().copy(sql.SQL("COPY {} ({}) FROM STDIN").format(table, columns)) as copy,
    ):
        while chunk := handle.read(1 << 20):
            copy.write(chunk)
    connection.execute(sql.SQL("ALTER TABLE {} ENABLE TRIGGER USER").format(table))


def _load_order(connection: psycopg.Connection[Any], lookup: dict[str, str]) -> list[str]:
    """Order tables so that a referenced table is loaded before the tables that refer to it.

    ``lookup`` maps each manifest name to the name regclass reads; tables are matched by oid.
    """
    oids: dict[int, str] = {}
    for name, regclass in lookup.items():
        row = connection.execute("SELECT %s::regclass::oid", (regclass,)).fetchone()
        assert row is not None
        oids[int(row[0])] = name
    edges = connection.execute(
        "SELECT c.conrelid::oid, c.confrelid::oid FROM pg_constraint c WHERE c.contype = 'f'"
    ).fetchall()
    needs: dict[str, set[str]] = {name: set() for name in lookup}
    for child_oid, parent_oid in edges:
        child, parent = oids.get(int(child_oid)), oids.get(int(parent_oid))
        if child is not None and parent is not None and child != parent:
            needs[child].add(parent)
    ordered: list[str] = []
    while needs:
        ready = sorted(name for name, parents in needs.items() if not parents - set(ordered))
        if not ready:
            ready = sorted(needs)[:1]  # a cycle: load one anyway (its checks are immediate)
        for name in ready:
            ordered.append(name)
            del needs[name]
    return ordered


def _sequences(connection: psycopg.Connection[Any]) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for name in _relations(connection, "S"):
        row = connection.execute(
            sql.SQL("SELECT last_value, is_called FROM {}").format(_identifier(connection, name))
        ).fetchone()
        assert row is not None
        found[name] = [int(row[0]), bool(row[1])]
    return found


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


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
