"""Backups of a PostgreSQL store, with PostgreSQL's own means (no page access there).

A run opens one ``REPEATABLE READ`` snapshot and exports it, then:

- the schema: ``pg_dump --schema-only --snapshot=<it>`` writes ``schema.sql`` (tables,
  indexes, constraints, triggers, functions, sequences) as of that snapshot;
- the data: every table of the schema is read with ``COPY (SELECT ... ORDER BY <primary
  key>) TO STDOUT`` (text format, session settings fixed so the text is stable) and hashed
  (SHA-256). A table whose hash equals the chain's is not stored again: the manifest points
  at the run that holds it. So an increment stores only the tables that changed, but it
  still reads every table: on PostgreSQL an increment saves bytes, not time;
- sequences: their values, set again on restore.

``restore_postgresql`` needs an empty database: it loads ``schema.sql`` with ``psql``
(one transaction), copies every table in with its user triggers disabled (in foreign-key
order), sets the sequences, then reads every table back and compares its hash with the
manifest's before it reports success.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy import Engine
from sqlalchemy.engine import URL

from dgxmm.errors import BackupError, Conflict, StoreError
from dgxmm.store.backup_dir import (
    BackupDir,
    BackupResult,
    Progress,
    RestoreResult,
    no_progress,
    read_marker,
    read_runs,
    write_manifest,
)
from dgxmm.store.database import Target

__all__ = ["backup_postgresql", "restore_postgresql"]

SCHEMA = "schema.sql"
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
        names = _tables(connection)
        for done, name in enumerate(names, start=1):
            check()
            entry = _copy_out(connection, name, temp / f"{name}.copy")
            progress(done, len(names))
            earlier = previous.get(name)
            if earlier is not None and earlier["sha256"] == entry["sha256"]:
                (temp / f"{name}.copy").unlink()
                entry["run"] = earlier["run"]
            else:
                entry["run"] = sequence
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
                "format": 1,
                "kind": "postgresql",
                "sequence": sequence,
                "base": sequence - 1 if runs else None,
                "previous": runs[-1].digest if runs else None,
                "method": "full" if not runs else "tables",
                "created_at_us": now_us,
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
    directory: Path, target: Target, progress: Progress = no_progress
) -> RestoreResult:
    """Rebuild the backup in the empty database ``target``; verified table by table."""
    marker = read_marker(directory)
    if marker.get("kind") != "postgresql":
        raise BackupError(f"{directory} holds a {marker.get('kind')} backup, not a PostgreSQL one")
    runs = read_runs(directory)
    if not runs:
        raise BackupError(f"{directory} holds no finished backup run")
    last = runs[-1]
    manifest = last.manifest
    by_number = {run.sequence: run.path for run in runs}
    with _connect(target.url) as connection:
        if _tables(connection):
            raise Conflict("restore: the target database is not empty; give an empty one")
    _load_schema(target.url, last.path / SCHEMA)
    tables: dict[str, Any] = manifest["tables"]
    with _connect(target.url) as connection:
        connection.execute("BEGIN")
        for statement in _SESSION:
            connection.execute(statement)
        ordered = _load_order(connection, list(tables))
        for done, name in enumerate(ordered, start=1):
            entry = tables[name]
            source = by_number[int(entry["run"])] / f"{name}.copy"
            _copy_in(connection, name, entry, source)
            progress(done, len(ordered))
        for name, (value, called) in manifest.get("sequences", {}).items():
            connection.execute(
                "SELECT setval(%s::regclass, %s, %s)", (_quoted(name), value, called)
            )
        for name in tables:
            found = _copy_out(connection, name, None)
            if found["sha256"] != tables[name]["sha256"]:
                raise BackupError(f"restored table {name} does not match its checksum")
        connection.execute("COMMIT")
    return RestoreResult(target=str(target.url), sequence=last.sequence, items=len(tables))


def _connect(url: URL) -> psycopg.Connection[Any]:
    return psycopg.connect(_conninfo(url), autocommit=True)


def _conninfo(url: URL) -> str:
    parts = {
        "host": url.query.get("host") or url.host,
        "port": url.port,
        "user": url.username,
        "password": url.password,
        "dbname": url.database,
    }
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in parts.items() if v})


def _tables(connection: psycopg.Connection[Any]) -> list[str]:
    rows = connection.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relkind = 'r' ORDER BY c.relname"
    ).fetchall()
    return [str(row[0]) for row in rows]


def _columns(connection: psycopg.Connection[Any], name: str) -> tuple[list[str], list[str]]:
    """Return a table's columns (in order) and its primary key's columns."""
    columns = connection.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
        "AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
        (_quoted(name),),
    ).fetchall()
    key = connection.execute(
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
        "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::regclass AND i.indisprimary "
        "ORDER BY array_position(i.indkey, a.attnum)",
        (_quoted(name),),
    ).fetchall()
    return [str(c[0]) for c in columns], [str(k[0]) for k in key]


def _copy_out(connection: psycopg.Connection[Any], name: str, path: Path | None) -> dict[str, Any]:
    """Copy a table out (to ``path``, or only hashed); return its manifest entry."""
    columns, key = _columns(connection, name)
    table = sql.Identifier(name)
    order = (
        sql.SQL(", ").join(sql.Identifier(k) for k in key)
        if key
        else sql.SQL("{}::text").format(table)
    )
    query = sql.SQL("COPY (SELECT {} FROM {} ORDER BY {}) TO STDOUT").format(
        sql.SQL(", ").join(sql.Identifier(c) for c in columns), table, order
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
    table = sql.Identifier(name)
    columns = sql.SQL(", ").join(sql.Identifier(c) for c in entry["columns"])
    connection.execute(sql.SQL("ALTER TABLE {} DISABLE TRIGGER USER").format(table))
    with (
        open(source, "rb") as handle,
        connection.cursor().copy(sql.SQL("COPY {} ({}) FROM STDIN").format(table, columns)) as copy,
    ):
        while chunk := handle.read(1 << 20):
            copy.write(chunk)
    connection.execute(sql.SQL("ALTER TABLE {} ENABLE TRIGGER USER").format(table))


def _load_order(connection: psycopg.Connection[Any], names: list[str]) -> list[str]:
    """Order tables so that a referenced table is loaded before the tables that refer to it."""
    edges = connection.execute(
        "SELECT c.conrelid::regclass::text, c.confrelid::regclass::text FROM pg_constraint c "
        "WHERE c.contype = 'f'"
    ).fetchall()
    needs: dict[str, set[str]] = {name: set() for name in names}
    for child_text, parent_text in edges:
        child, parent = _unquoted(child_text), _unquoted(parent_text)
        if child in needs and parent in needs and child != parent:
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
    names = connection.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relkind = 'S' ORDER BY c.relname"
    ).fetchall()
    found: dict[str, list[Any]] = {}
    for (name,) in names:
        row = connection.execute(
            sql.SQL("SELECT last_value, is_called FROM {}").format(sql.Identifier(name))
        ).fetchone()
        assert row is not None
        found[str(name)] = [int(row[0]), bool(row[1])]
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


def _unquoted(name: str) -> str:
    if name.startswith('"') and name.endswith('"'):
        return name[1:-1].replace('""', '"')
    return name
