"""Backups: a full copy, then increments of what changed; restore rebuilt and verified."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from pg_cluster import PgCluster
from store.storekit import FakeTimer, Place, ctx, make_items, table_contents

from dgxmm.errors import BackupError, Conflict, TimeoutExceeded
from dgxmm.jobs import CronSchedule, JobRun, Outcome
from dgxmm.store import Store, Subject, restore


def snapshot_tables(target: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every table of every schema, its rows ordered, read from the database at ``target``."""
    engine = sa.create_engine(target if "://" in target else f"sqlite:///{target}")
    try:
        return table_contents(engine)
    finally:
        engine.dispose()


def make_second_schema(store: Store) -> str:
    """Create a table in a schema besides the default one (PostgreSQL: ``app.items``)."""
    if store.dialect == "sqlite":
        return "items"  # SQLite has one schema per file: main
    with store.engine.begin() as connection:
        connection.exec_driver_sql("CREATE SCHEMA app")
        connection.exec_driver_sql(
            "CREATE TABLE app.items (id integer PRIMARY KEY, label text NOT NULL)"
        )
        connection.exec_driver_sql(
            "INSERT INTO app.items SELECT i, 'row ' || i FROM generate_series(1, 100) AS i"
        )
    return "app.items"


def write_rows(store: Store, first: int, count: int) -> None:
    with store.engine.begin() as connection:
        connection.execute(
            sa.text("INSERT INTO items (label, n) VALUES (:label, :n)"),
            [{"label": f"row {i} " + "x" * 200, "n": i} for i in range(first, first + count)],
        )


def test_it_backs_up_writes_backs_up_again_and_restores_every_table(
    store: Store, place: Place, tmp_path: Path, restore_target: str
) -> None:
    make_items(store)
    other = make_second_schema(store)
    store.define_query("add", {"label": "string"}, "INSERT INTO items (label) VALUES (:label)")
    store.define_query(
        "add_other", {"n": "int"}, f"INSERT INTO {other} (id, label) VALUES (:n, 'job')"
    )
    store.define_job(
        name="adder", schedule="0 3 * * *", action="query", query="add", args={"label": "j"}
    )
    store.define_job(
        name="other_adder", schedule="0 3 * * *", action="query", query="add_other", args={"n": 999}
    )
    assert f"Write({other})" in [str(e) for e in store.job("other_adder").effects]
    write_rows(store, 0, 500)
    first = store.backup(tmp_path / "bk")
    write_rows(store, 500, 20)
    with store.engine.begin() as connection:
        connection.exec_driver_sql("UPDATE items SET n = n + 1000 WHERE n < 5")
        connection.exec_driver_sql("DELETE FROM items WHERE n = 7")
    store.run_job("adder", ctx("adder"))
    store.run_job("other_adder", ctx("other_adder"))
    second = store.backup(tmp_path / "bk")
    assert (first.sequence, second.sequence) == (1, 2)
    assert first.method == "full"
    assert second.items < first.items  # pages (SQLite) or tables (PostgreSQL) that changed
    result = restore(tmp_path / "bk", restore_target)
    assert result.sequence == 2
    source = snapshot_tables(place.target)
    assert snapshot_tables(restore_target) == source
    if other == "app.items":
        assert (len(source["public.items"]), len(source["app.items"])) == (520, 101)
    else:
        assert len(source["main.items"]) == 521
    restored = Store.open(restore_target, data_dir=tmp_path / "restored-data")
    try:
        assert [j.name for j in restored.jobs()] == ["adder", "other_adder"]
        assert restored.catalog_version() == store.catalog_version()
    finally:
        restored.close()


def test_it_refuses_to_restore_over_an_existing_database(
    store: Store, tmp_path: Path, restore_target: str
) -> None:
    store.backup(tmp_path / "bk")
    restore(tmp_path / "bk", restore_target)
    with pytest.raises(Conflict):
        restore(tmp_path / "bk", restore_target)


def test_it_refuses_a_directory_that_is_not_its_own(store: Store, tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(Conflict, match="not empty"):
        store.backup(tmp_path / "other")
    store.backup(tmp_path / "bk")
    marker = tmp_path / "bk" / "dgxmm-backup.json"
    marker.write_text(json.dumps(json.loads(marker.read_text()) | {"store_id": "someone"}))
    with pytest.raises(Conflict, match="another database"):
        store.backup(tmp_path / "bk")


def test_it_removes_what_a_crashed_run_left_and_continues_the_chain(
    store: Store, tmp_path: Path
) -> None:
    store.backup(tmp_path / "bk")
    leftover = tmp_path / "bk" / ".tmp-000002-dead"
    leftover.mkdir()
    (leftover / "manifest.json").write_text("{")
    assert store.backup(tmp_path / "bk").sequence == 2
    assert not leftover.exists()


def test_it_stops_a_backup_job_at_its_timeout_and_commits_nothing(
    store: Store, tmp_path: Path
) -> None:
    make_items(store)
    write_rows(store, 0, 300)
    store.define_job(
        name="bk", schedule="0 4 * * *", action="backup", path=str(tmp_path / "bk"), timeout_ms=1000
    )
    with pytest.raises(TimeoutExceeded):
        store.run_job("bk", ctx("bk", timeout_s=1.0, timer=FakeTimer(step=0.4)))
    assert [p.name for p in (tmp_path / "bk").iterdir()] == ["dgxmm-backup.json"]


def test_it_records_a_backup_that_finished_past_its_timeout_as_over_time(
    store: Store, tmp_path: Path
) -> None:
    store.define_job(
        name="bk", schedule="0 4 * * *", action="backup", path=str(tmp_path / "bk"), timeout_ms=1000
    )
    (job,) = store.user_jobs().jobs
    timer = FakeTimer()

    def slow(context: Any) -> object:
        done = job.action(context)
        timer.now += 5.0  # the last step ended late
        return done

    result = JobRun(
        dataclasses.replace(job, action=slow), scheduled_at=0, started_at=0, timer=timer
    ).run()
    assert result.outcome is Outcome.OVER_TIME
    assert (tmp_path / "bk" / "000001" / "manifest.json").exists()


# -- SQLite: pages --------------------------------------------------------------------------


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    store = Store.open(tmp_path / "data" / "store.db")
    make_items(store)
    write_rows(store, 0, 2000)
    try:
        yield store
    finally:
        store.close()


def manifest(directory: Path, sequence: int) -> dict[str, Any]:
    read: dict[str, Any] = json.loads((directory / f"{sequence:06d}" / "manifest.json").read_text())
    return read


def page_list(directory: Path, sequence: int) -> list[list[Any]]:
    read: list[list[Any]] = json.loads((directory / f"{sequence:06d}" / "pages.json").read_text())
    return read


def test_it_stores_only_the_pages_that_changed_since_the_last_run(
    sqlite_store: Store, tmp_path: Path
) -> None:
    bk = tmp_path / "bk"
    full = sqlite_store.backup(bk)
    first = manifest(bk, 1)
    assert (first["sequence"], first["base"], first["method"]) == (1, None, "full")
    assert first["page_size"] == 4096
    assert len(page_list(bk, 1)) == first["stored"] == first["page_count"] == full.items
    with sqlite_store.engine.begin() as connection:
        connection.exec_driver_sql("UPDATE items SET n = -1 WHERE n = 1000")
    increment = sqlite_store.backup(bk)
    second = manifest(bk, 2)
    assert (second["sequence"], second["base"], second["method"]) == (2, 1, "tracked")
    stored = [page for page, _ in page_list(bk, 2)]
    assert 1 in stored
    assert 2 <= len(stored) < full.items // 10
    assert increment.bytes_written == len(stored) * 4096
    unchanged = sqlite_store.backup(bk)
    assert unchanged.items <= 2  # page 1, and at most the page its own checkpoint wrote


def test_it_compares_checksums_when_someone_else_checkpointed(
    sqlite_store: Store, tmp_path: Path
) -> None:
    bk = tmp_path / "bk"
    sqlite_store.backup(bk)
    assert sqlite_store.path is not None
    other = sqlite3.connect(sqlite_store.path, isolation_level=None)
    try:
        other.execute("UPDATE items SET label = 'changed elsewhere' WHERE n = 10")
        other.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # untracked
    finally:
        other.close()
    result = sqlite_store.backup(bk)
    assert result.method == "compared"
    assert 1 <= result.items < 20
    assert sqlite_store.backup(bk).method == "tracked"  # trusted again from here
    restored = tmp_path / "restored.db"
    restore(bk, restored)
    assert snapshot_tables(str(restored)) == snapshot_tables(str(sqlite_store.path))


def test_it_compares_checksums_when_the_dirty_page_log_was_lost(tmp_path: Path) -> None:
    path = tmp_path / "data" / "store.db"
    store = Store.open(path)
    make_items(store)
    store.backup(tmp_path / "bk")
    store.close()
    path.with_name("store.db.dirty-pages").unlink()
    store = Store.open(path)
    try:
        write_rows(store, 0, 10)
        assert store.backup(tmp_path / "bk").method == "compared"
    finally:
        store.close()
    restore(tmp_path / "bk", tmp_path / "restored.db")
    assert snapshot_tables(str(tmp_path / "restored.db")) == snapshot_tables(str(path))


def test_it_keeps_tracking_across_a_clean_restart(tmp_path: Path) -> None:
    path = tmp_path / "data" / "store.db"
    store = Store.open(path)
    make_items(store)
    store.backup(tmp_path / "bk")
    store.close()
    store = Store.open(path)
    try:
        write_rows(store, 0, 10)
        assert store.backup(tmp_path / "bk").method == "tracked"
    finally:
        store.close()


def test_it_refuses_to_restore_a_backup_with_a_damaged_page(
    sqlite_store: Store, tmp_path: Path
) -> None:
    bk = tmp_path / "bk"
    sqlite_store.backup(bk)
    data = bk / "000001" / "pages.bin"
    damaged = bytearray(data.read_bytes())
    damaged[5000] ^= 0xFF
    data.write_bytes(bytes(damaged))
    with pytest.raises(BackupError, match="checksum"):
        restore(bk, tmp_path / "restored.db")
    assert not (tmp_path / "restored.db").exists()


def test_it_refuses_a_backup_whose_page_list_was_changed(
    sqlite_store: Store, tmp_path: Path
) -> None:
    bk = tmp_path / "bk"
    sqlite_store.backup(bk)
    listing = bk / "000001" / "pages.json"
    entries = json.loads(listing.read_text())
    entries[3][1] = entries[4][1]
    listing.write_text(json.dumps(entries))
    with pytest.raises(BackupError, match="does not match its manifest"):
        restore(bk, tmp_path / "restored.db")


def test_it_refuses_a_chain_whose_runs_do_not_follow_each_other(
    sqlite_store: Store, tmp_path: Path
) -> None:
    bk = tmp_path / "bk"
    sqlite_store.backup(bk)
    sqlite_store.backup(bk)
    shutil.rmtree(bk / "000001")
    with pytest.raises(BackupError):
        restore(bk, tmp_path / "restored.db")


# -- PostgreSQL: tables ---------------------------------------------------------------------


@pytest.mark.postgres
def test_it_stores_only_the_tables_that_changed_on_postgresql(
    pg_url: str, tmp_path: Path, pg_cluster: PgCluster
) -> None:
    store = Store.open(pg_url, data_dir=tmp_path / "data")
    try:
        make_items(store)
        write_rows(store, 0, 50)
        store.backup(tmp_path / "bk")
        write_rows(store, 50, 1)
        result = store.backup(tmp_path / "bk")
    finally:
        store.close()
    assert (result.method, result.items) == ("tables", 1)
    tables = manifest(tmp_path / "bk", 2)["tables"]
    assert tables["items"]["run"] == 2
    assert tables["audit"]["run"] == 1
    (tmp_path / "bk" / "000002" / "items.copy").write_bytes(b"1\tforged\t1\n")
    name = pg_cluster.create_database()
    try:
        with pytest.raises(BackupError, match="checksum"):
            restore(tmp_path / "bk", pg_cluster.url(name))
    finally:
        pg_cluster.drop_database(name)


def test_the_attic_is_carried_by_a_backup(
    store: Store, tmp_path: Path, restore_target: str
) -> None:
    store.define_job(name="cp", schedule="*/10 * * * *", action="checkpoint", actor="al")
    definition = store.job("cp").definition
    store.drop_job("cp", actor="bob")
    store.backup(tmp_path / "bk")
    restore(tmp_path / "bk", restore_target)
    restored = Store.open(restore_target, data_dir=tmp_path / "restored-data")
    try:
        assert restored.attic() == store.attic()
        assert restored.attic()[0].dropped_by == "bob"
        restored.restore_from_attic(Subject.JOB, "cp")
        assert restored.job("cp").definition == definition
    finally:
        restored.close()


def test_a_restore_leaves_out_the_system_jobs_overrides_and_nothing_else(
    store: Store, place: Place, tmp_path: Path, restore_target: str
) -> None:
    # The spec: an override "survives a restart but is not carried by a backup or a fork".
    make_items(store)
    write_rows(store, 0, 50)
    scheduler = store.scheduler()
    scheduler.set_enabled("compact", True)
    scheduler.set_schedule("stats_flush", CronSchedule.parse("*/5 * * * *"))
    store.set_setting("jobs.runs_keep_days", 30)  # a setting of the data: carried
    store.backup(tmp_path / "bk")
    write_rows(store, 50, 5)
    store.workload_stats.set_job_override("runs_purge", enabled=False)  # in an increment
    store.backup(tmp_path / "bk")
    restore(tmp_path / "bk", restore_target)
    restored = Store.open(restore_target, data_dir=tmp_path / "restored-data")
    try:
        jobs = {job.name: job for job in restored.scheduler().jobs()}
        assert [(str(jobs[n].schedule), jobs[n].enabled) for n in sorted(jobs)] == [
            ("0 3 * * *", False),  # compact
            ("10 4 * * *", True),  # runs_purge
            ("* * * * *", True),  # stats_flush
        ]
        assert restored.get_setting("jobs.runs_keep_days") == 30
    finally:
        restored.close()
    # Exactly what was live otherwise: every table, every row, but those settings.
    live, back = snapshot_tables(place.target), snapshot_tables(restore_target)
    settings = next(name for name in live if name.endswith(".settings"))
    kept = [row for row in live[settings] if not str(row[0]).startswith("jobs.override.")]
    assert len(kept) == len(live[settings]) - 3
    assert back == {**live, settings: kept}
    # The live store keeps its own.
    assert store.scheduler().get("compact").enabled is True
