"""PostgreSQL's tables as a backup copies them: named, copied out and in, hashed, ordered.

Tables are named as ``regclass`` prints them (``items`` in the default schema, ``app.items``
in another) and read with ``COPY (SELECT ... ORDER BY <primary key>) TO STDOUT`` under fixed
session settings, so that a table's text, and so its SHA-256, changes only with its rows: a
backup stores again only the tables whose hash moved, and a restore compares every table it
loaded with the manifest. A restore loads them in foreign-key order; sequences are read as
their values, set again on restore.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from dgxmm.errors import BackupError

__all__ = [
    "SESSION",
    "checked_file",
    "copy_in",
    "copy_out",
    "file_for",
    "identifier",
    "load_order",
    "quoted",
    "relations",
    "sequence_values",
]

# Schemas of PostgreSQL itself: pg_catalog, pg_toast, pg_temp_N... (no user schema may start
# with pg_), and information_schema. Every other schema is backed up.
_RELATIONS = (
    "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE c.relkind = ANY(%s) AND n.nspname <> 'information_schema' "
    "AND left(n.nspname, 3) <> 'pg_' AND (%s OR NOT EXISTS (SELECT 1 FROM pg_depend d "
    "WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')) "
    "ORDER BY 1"
)
_PLAIN_NAME = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?")

# Fixed, so that COPY's text of a value is the same at the backup and at the restore.
SESSION = (
    "SET TimeZone = 'UTC'",
    "SET DateStyle = 'ISO, YMD'",
    "SET IntervalStyle = 'postgres'",
    "SET extra_float_digits = 1",
    "SET bytea_output = 'hex'",
)


def relations(
    connection: psycopg.Connection[Any], *kinds: str, extensions: bool = True
) -> list[str]:
    """Name the relations of these ``relkind``s in the users' schemas, as regclass prints them.

    ``extensions=False`` leaves out the objects of extensions (``CREATE EXTENSION`` made them).
    """
    rows = connection.execute(_RELATIONS, (list(kinds), extensions)).fetchall()
    return [str(row[0]) for row in rows]


def identifier(connection: psycopg.Connection[Any], name: str) -> sql.Identifier:
    """Return the schema-qualified identifier of a relation named as regclass reads it."""
    row = connection.execute(
        "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE c.oid = %s::regclass",
        (name,),
    ).fetchone()
    assert row is not None  # regclass raised already for a name that names nothing
    return sql.Identifier(str(row[0]), str(row[1]))


def file_for(name: str) -> str:
    """Return the file of a table's data: its name when plain, else a digest of it."""
    if _PLAIN_NAME.fullmatch(name):
        return f"{name}.copy"
    return f"table-{hashlib.sha256(name.encode()).hexdigest()[:24]}.copy"


def checked_file(entry: dict[str, Any], name: str) -> str:
    """Return the file a manifest names for a table; ``BackupError`` for no plain file name."""
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


def copy_out(connection: psycopg.Connection[Any], name: str, path: Path | None) -> dict[str, Any]:
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
        identifier(connection, name),
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


def copy_in(
    connection: psycopg.Connection[Any], name: str, entry: dict[str, Any], source: Path
) -> None:
    """Copy a table's file in, its checksum checked first and its user triggers off meanwhile."""
    if not source.exists():
        raise BackupError(f"{source} is missing")
    with open(source, "rb") as handle:
        if hashlib.sha256(handle.read()).hexdigest() != entry["sha256"]:
            raise BackupError(f"{source} does not match its checksum")
    table = identifier(connection, name)
    columns = sql.SQL(", ").join(sql.Identifier(c) for c in entry["columns"])
    connection.execute(sql.SQL("ALTER TABLE {} DISABLE TRIGGER USER").format(table))
    with (
        open(source, "rb") as handle,
        connection.cursor().copy(sql.SQL("COPY {} ({}) FROM STDIN").format(table, columns)) as copy,
    ):
        while chunk := handle.read(1 << 20):
            copy.write(chunk)
    connection.execute(sql.SQL("ALTER TABLE {} ENABLE TRIGGER USER").format(table))


def load_order(connection: psycopg.Connection[Any], lookup: dict[str, str]) -> list[str]:
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


def sequence_values(connection: psycopg.Connection[Any]) -> dict[str, list[Any]]:
    """Return each sequence's last value and whether it was called, by name."""
    found: dict[str, list[Any]] = {}
    for name in relations(connection, "S"):
        row = connection.execute(
            sql.SQL("SELECT last_value, is_called FROM {}").format(identifier(connection, name))
        ).fetchone()
        assert row is not None
        found[name] = [int(row[0]), bool(row[1])]
    return found


def quoted(name: str) -> str:
    """Return a bare table name quoted, as regclass reads it (a format 1 manifest's names)."""
    return '"' + name.replace('"', '""') + '"'
