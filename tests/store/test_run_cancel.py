"""Cancelling a run under way, on SQLite and PostgreSQL: a query job's statement interrupted
and rolled back, a backup's partial run removed with its chain kept, the run recorded
``cancelled`` with who cancelled it, and a cancel asked on another instance."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from store.storekit import make_items, rows
from support import at

from dgxmm.clock import ManualClock
from dgxmm.errors import Cancelled, Conflict, NotFound
from dgxmm.jobs import JobLimits, Outcome, RunContext
from dgxmm.server import Host
from dgxmm.server.host.run_cancels import cancel_run
from dgxmm.store import RunRecord, Store, restore

# A statement that would run for a very long time: only the cancel stops it.
ENDLESS = {
    "sqlite": "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) "
    "SELECT count(*) FROM c",
    "postgresql": "SELECT pg_sleep(60)",
}


def start_slow_job(store: Store, host: Host, clock: ManualClock) -> int:
    """Define a query job that writes, then runs forever; start it; return its run's id."""
    make_items(store)
    body = "INSERT INTO items (label) VALUES ('before'); " + ENDLESS[store.dialect]
    store.define_query("slow", None, body)
    store.define_job(name="slow", schedule="* * * * *", action="query", query="slow")
    host.tick()  # plans
    clock.set(at("2026-03-02T10:01:00+00:00"))
    (run,) = [run for run in host.tick() if run.name == "slow"]
    (record,) = store.runs.page(job="slow")
    assert record.under_way
    time.sleep(0.5)  # the second statement is under way
    assert run.cancelled_by is None
    return record.id


def ended(host: Host, store: Store, run_id: int) -> RunRecord:
    host.wait_idle(15)
    record = store.runs.get(run_id)
    assert record is not None
    return record


def test_a_cancel_interrupts_a_query_jobs_statement_and_rolls_it_back(
    store: Store, clock: ManualClock
) -> None:
    host = Host(store, time_zone="UTC", clock=clock)
    try:
        run_id = start_slow_job(store, host, clock)
        asked = time.monotonic()
        record = cancel_run(host.store, host.runs_here(), run_id, by="user:alice")
        # Cancelled here at once: the answer is the request, or the run already ended by it.
        assert "user:alice" in (record.cancel_requested_by, record.cancelled_by)
        done = ended(host, store, run_id)
        assert time.monotonic() - asked < 10  # interrupted, not run for its minute
        assert (done.outcome, done.cancelled_by) == (Outcome.CANCELLED, "user:alice")
        assert done.error == "cancelled by user:alice"
        assert rows(store, "SELECT count(*) FROM items") == [(0,)]  # rolled back
        assert store.changes() == []
        with pytest.raises(Conflict, match="has ended: cancelled"):
            cancel_run(host.store, host.runs_here(), run_id, by="user:alice")
        with pytest.raises(NotFound):
            cancel_run(host.store, host.runs_here(), run_id + 1000, by="user:alice")
    finally:
        host.stop()


@pytest.mark.postgres
def test_a_cancel_asked_on_another_instance_reaches_the_run(
    pg_url: str, clock: ManualClock, tmp_path: Path
) -> None:
    # PostgreSQL only: SQLite serves one instance (a second server is refused), and its
    # writing run holds the one write lock that a request from elsewhere would need.
    store = Store.open(pg_url, clock=clock, data_dir=tmp_path / "here")
    other = Store.open(pg_url, clock=clock, data_dir=tmp_path / "elsewhere")
    runner = Host(store, time_zone="UTC", clock=clock, tick_seconds=0.2)
    asker = Host(other, time_zone="UTC", clock=clock)
    try:
        run_id = start_slow_job(store, runner, clock)
        runner.start()  # its ticker looks for cancels at every pass
        record = cancel_run(asker.store, asker.runs_here(), run_id, by="user:bob")
        assert (record.instance, record.cancel_requested_by) == (store.instance, "user:bob")
        deadline = time.monotonic() + 15
        while (done := store.runs.get(run_id)) is not None and done.under_way:
            assert time.monotonic() < deadline, "the run was not cancelled"
            time.sleep(0.05)
        assert done is not None
        assert (done.outcome, done.cancelled_by, done.instance) == (
            Outcome.CANCELLED,
            "user:bob",
            store.instance,
        )
        assert rows(store, "SELECT count(*) FROM items") == [(0,)]
    finally:
        runner.stop()
        asker.stop()
        other.close()
        store.close()


class CancelledAt(RunContext):
    """A run context cancelled by an admin at its ``n``-th check (in the middle of the work)."""

    def __init__(self, name: str, n: int) -> None:
        super().__init__(
            name=name, scheduled_at=0, started_at=0, limits=JobLimits(), timer=time.monotonic
        )
        self.calls = 0
        self.n = n

    def check(self) -> None:
        self.calls += 1
        if self.calls == self.n:
            self.cancel("user:alice")
        super().check()


def labels(target: str) -> list[str]:
    engine = sa.create_engine(target if "://" in target else f"sqlite:///{target}")
    try:
        with engine.connect() as connection:
            return [r[0] for r in connection.exec_driver_sql("SELECT label FROM items ORDER BY n")]
    finally:
        engine.dispose()


def test_a_cancelled_backup_leaves_no_partial_files_and_its_chain_stays_valid(
    store: Store, tmp_path: Path, restore_target: str
) -> None:
    make_items(store)
    target = tmp_path / "bk"
    store.define_job(name="bk", schedule="0 3 * * *", action="backup", path=str(target))
    with store.engine.begin() as connection:
        connection.exec_driver_sql("INSERT INTO items (label, n) VALUES ('a', 1)")
    store.run_job("bk", CancelledAt("bk", 10**9))  # the first run, full
    with store.engine.begin() as connection:
        connection.exec_driver_sql("INSERT INTO items (label, n) VALUES ('b', 2)")
    cancelled = CancelledAt("bk", 3)  # inside the new run's temporary directory
    with pytest.raises(Cancelled):
        store.run_job("bk", cancelled)
    assert cancelled.calls == 3
    assert sorted(p.name for p in target.iterdir() if p.name.startswith(".tmp-")) == []
    assert sorted(p.name for p in target.iterdir() if p.name[0].isdigit()) == ["000001"]
    store.run_job("bk", CancelledAt("bk", 10**9))  # the chain goes on
    assert sorted(p.name for p in target.iterdir() if p.name[0].isdigit()) == ["000001", "000002"]
    result = restore(target, restore_target)
    assert result.sequence == 2
    assert labels(restore_target) == ["a", "b"]


def test_a_cancel_other_jobs_next_time_cancels_its_run_and_starts_at_once(
    store: Store, clock: ManualClock
) -> None:
    make_items(store)
    store.define_query("slow", None, ENDLESS[store.dialect])
    store.define_job(name="slow", schedule="* * * * *", action="query", query="slow",
                     overlap="cancel_other")  # fmt: skip
    host = Host(store, time_zone="UTC", clock=clock)
    try:
        host.tick()  # plans
        clock.set(at("2026-03-02T10:01:00+00:00"))
        host.tick()
        time.sleep(0.3)
        clock.set(at("2026-03-02T10:02:00+00:00"))
        host.tick()  # 10:02 comes while 10:01's run goes on: that run is cancelled
        deadline = time.monotonic() + 15
        while not host.scheduler.has_released():
            assert time.monotonic() < deadline, "the cancelled run did not end"
            host.collect()
            time.sleep(0.05)
        host.tick()  # the ticker does this at once when a waiting time's run ended
        first, second = sorted(store.runs.page(job="slow"), key=lambda r: r.id)
        assert (first.outcome, first.cancelled_by) == (Outcome.CANCELLED, "overlap: cancel_other")
        assert (second.scheduled_at, second.outcome) == (at("2026-03-02T10:02:00+00:00"), None)
        cancel_run(host.store, host.runs_here(), second.id, by="user:alice")
        assert ended(host, store, second.id).cancelled_by == "user:alice"
    finally:
        host.stop()
