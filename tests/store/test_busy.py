"""While a user job runs, the operations on the store's files answer Busy and change nothing."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from store.storekit import ctx, make_items, rows
from support import wait_for

from dgxmm.errors import Busy, TimeoutExceeded
from dgxmm.store import Store, Subject


@contextmanager
def items_locked(store: Store) -> Iterator[None]:
    """Hold a lock that makes a job writing ``items`` wait until the block ends."""
    if store.path is not None:
        holder = sqlite3.connect(store.path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            holder.execute("ROLLBACK")
            holder.close()
    else:
        url = store.engine.url
        with psycopg.connect(
            host=str(url.query["host"]), user=url.username, dbname=url.database
        ) as locker:
            locker.execute("LOCK TABLE items IN ACCESS EXCLUSIVE MODE")
            yield
            locker.rollback()


def test_it_refuses_file_operations_while_a_user_job_runs(store: Store, tmp_path: Path) -> None:
    make_items(store)
    store.define_query("add", None, "INSERT INTO items (label) VALUES ('x')")
    store.define_job(name="adder", schedule="* * * * *", action="query", query="add")
    store.define_job(name="gone", schedule="0 3 * * *", action="checkpoint")
    store.drop_job("gone")
    version = store.catalog_version()
    outcome: list[str] = []
    with items_locked(store):
        runner = threading.Thread(target=lambda: outcome.append(store.run_job("adder", ctx("a"))))
        runner.start()
        wait_for(lambda: store.running_jobs() == ["adder"], "the job to start")
        time.sleep(0.05)  # let the run reach its wait on the lock
        operations: dict[str, Callable[[], object]] = {
            "checkpoint": store.checkpoint,
            "backup": lambda: store.backup(tmp_path / "bk"),
            "restore": lambda: store.restore(tmp_path / "bk", tmp_path / "restored.db"),
            "compact": store.compact,
            "rollback": lambda: store.rollback(1),
            "attic restore": lambda: store.restore_from_attic(Subject.JOB, "gone"),
            "attic remove": lambda: store.remove_from_attic(Subject.JOB, "gone"),
            "close": store.close,
        }
        for name, operation in operations.items():
            with pytest.raises(Busy, match=f"{name}: job adder is running"):
                operation()
        assert not (tmp_path / "bk").exists()
        assert not (tmp_path / "restored.db").exists()
        assert [q.name for q in store.queries()] == ["add"]  # still open and answering
        assert store.catalog_version() == version
        assert [j.name for j in store.jobs()] == ["adder"]
        assert [e.name for e in store.attic()] == ["gone"]
    runner.join(timeout=30)
    assert outcome == ["1 statement; 1 row changed; 0 rows returned"]
    assert store.running_jobs() == []
    assert rows(store, "SELECT count(*) FROM items") == [(1,)]
    assert store.backup(tmp_path / "bk").sequence == 1
    store.checkpoint()


def test_it_backs_up_from_a_backup_job_although_that_job_is_running(
    store: Store, tmp_path: Path
) -> None:
    store.define_job(name="bk", schedule="0 4 * * *", action="backup", path=str(tmp_path / "bk"))
    detail = store.run_job("bk", ctx("bk"))
    assert detail.startswith("run 1 (full)")
    assert (tmp_path / "bk" / "000001" / "manifest.json").exists()


def test_a_jobs_timeout_bounds_its_wait_for_the_write_lock(store: Store) -> None:
    # SQLite's busy wait (5 s by default) and PostgreSQL's lock wait both end at the run's
    # deadline: the reason is the timeout, never "database is locked".
    make_items(store)
    store.define_query("add", None, "INSERT INTO items (label) VALUES ('x')")
    store.define_job(name="adder", schedule="* * * * *", action="query", query="add")
    with items_locked(store), pytest.raises(TimeoutExceeded) as raised:
        store.run_job("adder", ctx("adder", timeout_s=0.2))
    # Under load the deadline can pass before the statement is sent ("timeout of 0.2 s passed
    # after ..."), or while it waits ("passed the run's timeout of 0.2 s"): both are the timeout.
    assert "timeout of 0.2 s" in str(raised.value)
    assert "locked" not in str(raised.value)
    assert rows(store, "SELECT count(*) FROM items") == [(0,)]
