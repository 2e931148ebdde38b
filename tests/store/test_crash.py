"""A process killed in the middle of a writing job leaves nothing of that run behind, and the
next increment after it is exact."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import sqlalchemy as sa
from store.storekit import Place, make_items, rows

from dgxmm.store import Store, restore

FLOOD = {
    "sqlite": "INSERT INTO items (label, n) WITH RECURSIVE c(i) AS "
    "(SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 50000000) SELECT 'flood', i FROM c",
    # generate_series in the select list streams its rows (in FROM it would gather them all
    # before the first insert).
    "postgresql": "INSERT INTO items (label, n) SELECT 'flood', generate_series(1, 500000000)",
}

CHILD = textwrap.dedent(
    """
    import sys, time
    from datetime import timedelta
    from dgxmm.jobs import JobLimits, RunContext
    from dgxmm.store import Store, restore

    store = Store.open(sys.argv[1], data_dir=sys.argv[2])
    context = RunContext(name="flood", scheduled_at=0, started_at=0, limits=JobLimits(),
                         timer=time.monotonic)
    print("running", flush=True)
    store.run_job("flood", context)
    print("finished", flush=True)
    """
)


def is_writing(store: Store, place: Place) -> bool:
    """Tell whether the killed-to-be run has written a good part of its rows (uncommitted)."""
    if store.path is not None:
        wal = store.path.with_name(store.path.name + "-wal")
        return wal.exists() and wal.stat().st_size > 8 * 1024 * 1024
    with store.engine.connect() as connection:
        size = connection.exec_driver_sql("SELECT pg_relation_size('items')").scalar()
    return int(size or 0) > 8 * 1024 * 1024


def test_it_leaves_nothing_of_a_run_killed_mid_write_and_opens_clean(
    place: Place, tmp_path: Path
) -> None:
    store = Store.open(place.target, data_dir=place.data_dir)
    make_items(store)
    with store.engine.begin() as connection:
        connection.exec_driver_sql("INSERT INTO items (label, n) VALUES ('kept', 1)")
    store.define_query("flood", None, FLOOD[place.dialect])
    store.define_query("count", None, "SELECT count(*) FROM items")
    store.define_job(name="flood", schedule="0 3 * * *", action="query", query="flood")
    store.define_job(name="cp", schedule="*/10 * * * *", action="checkpoint", enabled=False)
    catalog = (store.export_catalog()["queries"], [j.to_json() for j in store.jobs()])
    version = store.catalog_version()
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, place.target, str(place.data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as child:
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "running"
            deadline = time.monotonic() + 120
            while not is_writing(store, place):
                assert child.poll() is None, child.stderr.read() if child.stderr else ""
                assert time.monotonic() < deadline, "the job never got to write"
                time.sleep(0.05)
            os.kill(child.pid, signal.SIGKILL)
        finally:
            if child.poll() is None:
                child.kill()
            child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    store.engine.dispose()
    store.close()

    reopened = Store.open(place.target, data_dir=place.data_dir)
    try:
        assert rows(reopened, "SELECT label, n FROM items") == [("kept", 1)]
        assert reopened.changes() == []
        assert reopened.catalog_version() == version
        after = (reopened.export_catalog()["queries"], [j.to_json() for j in reopened.jobs()])
        assert after == catalog
        if place.dialect == "sqlite":
            assert rows(reopened, "PRAGMA integrity_check") == [("ok",)]
            reopened.checkpoint()
        backup = reopened.backup(tmp_path / "bk")
        assert backup.sequence == 1
    finally:
        reopened.close()
    if place.dialect == "sqlite":
        restored = tmp_path / "restored.db"
        restore(tmp_path / "bk", restored)
        engine = sa.create_engine(f"sqlite:///{restored}")
        with engine.connect() as connection:
            assert connection.exec_driver_sql("SELECT label FROM items").all() == [("kept",)]
        engine.dispose()


KILLED_WRITER = textwrap.dedent(
    """
    import sys, time
    from dgxmm.store import Store

    store = Store.open(sys.argv[1])
    with store.engine.begin() as connection:
        connection.exec_driver_sql("INSERT INTO items (label, n) VALUES ('committed', 0)")
    # A complete checkpoint: the next write restarts the WAL, so its frames start at frame 1.
    store.checkpoint()
    with store.engine.begin() as connection:
        # Far more than the page cache holds: SQLite spills these frames into the WAL.
        connection.exec_driver_sql(
            "INSERT INTO items (label, n) WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL "
            "SELECT i + 1 FROM c WHERE i < 100000) SELECT hex(randomblob(50)), i FROM c"
        )
        print("written", flush=True)
        time.sleep(120)
    """
)


def test_it_backs_up_exactly_what_a_commit_after_a_killed_write_changed(tmp_path: Path) -> None:
    path = tmp_path / "data" / "store.db"
    store = Store.open(path)
    make_items(store)
    with store.engine.begin() as connection:
        connection.exec_driver_sql(
            "INSERT INTO items (label, n) WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL "
            "SELECT i + 1 FROM c WHERE i < 3000) SELECT 'row ' || i, i FROM c"
        )
    store.backup(tmp_path / "bk")
    store.close()
    with subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(path)], stdout=subprocess.PIPE, text=True
    ) as child:
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "written"
            os.kill(child.pid, signal.SIGKILL)
        finally:
            if child.poll() is None:
                child.kill()
            child.wait(timeout=30)
    # The killed transaction's frames are still in the WAL, under its current salts; the
    # commit below writes over them from frame 1, under the same salts.
    store = Store.open(path)
    try:
        with store.engine.begin() as connection:
            connection.exec_driver_sql("UPDATE items SET label = 'changed' WHERE n % 50 = 0")
            connection.exec_driver_sql("INSERT INTO items (label, n) VALUES ('after', -1)")
        store.backup(tmp_path / "bk")
        live = rows(store, "SELECT id, label, n FROM items ORDER BY id")
        assert ("after", -1) in [(label, n) for _id, label, n in live]
    finally:
        store.close()
    restored = tmp_path / "restored.db"
    restore(tmp_path / "bk", restored)  # checks every page, then PRAGMA integrity_check
    engine = sa.create_engine(f"sqlite:///{restored}")
    try:
        with engine.connect() as connection:
            found = connection.exec_driver_sql("SELECT id, label, n FROM items ORDER BY id").all()
    finally:
        engine.dispose()
    assert [tuple(row) for row in found] == live
