"""Opening a store: the target, the migrations, the settings of each connection."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from store.storekit import Place

from dgxmm.clock import ManualClock
from dgxmm.errors import InvalidInput, StoreError
from dgxmm.store import Store, metadata
from dgxmm.store.database import MIGRATIONS


def test_it_creates_the_schema_by_migration_on_open(store: Store) -> None:
    with store.engine.connect() as connection:
        version = connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
        names = set(connection.dialect.get_table_names(connection))
    script = ScriptDirectory(str(MIGRATIONS))
    assert version == script.get_current_head()
    assert {"catalog_queries", "catalog_jobs", "catalog_journal", "settings", "change_log"} <= names


def test_it_keeps_the_migrated_schema_equal_to_the_metadata(store: Store) -> None:
    # Tables of later packages are defined on the same metadata by their own modules; compare
    # the tables this process has defined (the store's at least).
    def known(_object: object, name: str | None, kind: str, *_: object) -> bool:
        return kind != "table" or name in metadata.tables

    with store.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"include_object": known})
        differences = compare_metadata(context, metadata)
    assert differences == []


def test_it_opens_an_existing_store_with_its_catalog(
    open_store: Callable[..., Store],
) -> None:
    first = open_store()
    first.define_query("one", None, "SELECT 1")
    store_id = first.store_id
    first.close()
    again = open_store()
    assert [q.name for q in again.queries()] == ["one"]
    assert again.store_id == store_id
    assert again.catalog_version() == 1


def test_it_tells_its_engine_dialect_clock_and_data_dir(
    store: Store, place: Place, clock: ManualClock
) -> None:
    assert store.dialect == place.dialect
    assert store.clock is clock
    assert store.data_dir == place.data_dir
    with store.engine.connect() as connection:
        assert connection.exec_driver_sql("SELECT 1").scalar() == 1


def test_it_refuses_a_database_written_by_a_newer_dgxmm(
    open_store: Callable[..., Store],
) -> None:
    store = open_store()
    with store.engine.begin() as connection:
        connection.exec_driver_sql("UPDATE alembic_version SET version_num = '9999'")
    store.close()
    with pytest.raises(StoreError, match="newer dgxmm"):
        open_store()


def test_it_puts_a_sqlite_store_in_wal_mode_without_automatic_checkpoints(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s.db")
    try:
        with store.engine.connect() as connection:
            pragmas = {
                name: connection.exec_driver_sql(f"PRAGMA {name}").scalar()
                for name in ("journal_mode", "foreign_keys", "wal_autocheckpoint", "busy_timeout")
            }
    finally:
        store.close()
    assert pragmas == {
        "journal_mode": "wal",
        "foreign_keys": 1,
        "wal_autocheckpoint": 0,
        "busy_timeout": 5000,
    }
    # Another program sees a valid database in WAL mode.
    raw = sqlite3.connect(tmp_path / "s.db")
    try:
        assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        raw.close()


@pytest.mark.parametrize(
    "target",
    [
        pytest.param(":memory:", id="memory-path"),
        pytest.param("sqlite:///:memory:", id="memory-url"),
        pytest.param("mysql://u@h/db", id="mysql"),
        pytest.param("postgresql+psycopg2://u@h/db", id="other-driver"),
    ],
)
def test_it_refuses_a_target_that_cannot_hold_a_store(target: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        Store.open(target)
    assert refused.value.field == "target"


def test_it_refuses_a_directory_as_the_database_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="directory"):
        Store.open(tmp_path)


def test_it_needs_a_data_directory_for_postgresql() -> None:
    with pytest.raises(InvalidInput) as refused:
        Store.open("postgresql://nobody@/nothing?host=/nonexistent")
    assert refused.value.field == "data_dir"


def test_it_refuses_to_be_used_once_closed(open_store: Callable[..., Store]) -> None:
    store = open_store()
    store.close()
    store.close()  # closing twice is fine
    with pytest.raises(StoreError, match="closed"):
        store.queries()
    with pytest.raises(StoreError, match="closed"):
        store.checkpoint()
