"""Kept rows: a query job's run keeps its first rows with its record, bounded, on both stores."""

from __future__ import annotations

from pathlib import Path

import pytest
from store.storekit import FakeTimer, make_items
from support import at

from dgxmm.clock import ManualClock
from dgxmm.jobs import JobRun, Outcome
from dgxmm.store import KEPT_BYTES, KEPT_ROWS, Store, Trigger, restore
from dgxmm.store.runs.kept_rows import RowKeeper
from dgxmm.time_units import DAY_US


def _run_job(store: Store, name: str) -> int:
    """Claim, run and finish the job's run as the host does; return its id."""
    job = next(j for j in store.user_jobs().jobs if j.name == name)
    run = JobRun(
        job, scheduled_at=store.clock.now_us(), started_at=store.clock.now_us(), timer=FakeTimer()
    )
    run_id = store.runs.claim(run, Trigger.MANUAL)
    assert run_id is not None
    result = run.run()
    assert result.outcome is Outcome.SUCCEEDED, result.error
    assert store.runs.finish(run_id, result)
    return run_id


@pytest.fixture
def items(store: Store) -> Store:
    make_items(store)
    with store.engine.begin() as connection:
        for n in range(150):
            connection.exec_driver_sql(f"INSERT INTO items (label, n) VALUES ('item {n}', {n})")
    return store


def test_it_keeps_the_first_100_rows_of_the_last_statement_and_says_it_cut(items: Store) -> None:
    items.define_query(
        "listing",
        None,
        "SELECT count(*) AS total FROM items; SELECT label, n FROM items ORDER BY n",
    )
    items.define_job(name="listing", schedule="* * * * *", action="query", query="listing")
    kept = items.runs.kept_rows(_run_job(items, "listing"))
    assert kept is not None
    assert kept.columns == ("label", "n")
    assert len(kept.rows) == KEPT_ROWS == 100
    assert kept.rows[0] == ("item 0", 0)
    assert kept.returned == 150
    assert kept.cut


def test_it_keeps_every_row_of_a_small_answer_uncut(items: Store) -> None:
    items.define_query("few", None, "SELECT label FROM items WHERE n < 3 ORDER BY n")
    items.define_job(name="few", schedule="* * * * *", action="query", query="few")
    kept = items.runs.kept_rows(_run_job(items, "few"))
    assert kept is not None
    assert kept.rows == (("item 0",), ("item 1",), ("item 2",))
    assert (kept.returned, kept.cut) == (3, False)


def test_a_run_that_returns_no_rows_keeps_nothing(items: Store) -> None:
    items.define_query("bump", None, "UPDATE items SET n = n + 1 WHERE n = 0")
    items.define_job(name="bump", schedule="* * * * *", action="query", query="bump")
    assert items.runs.kept_rows(_run_job(items, "bump")) is None


def test_it_bounds_the_kept_rows_in_bytes() -> None:
    keeper = RowKeeper()
    keeper.start(["blob"])
    keeper.add([("x" * 10_000,)] * 20)
    kept = keeper.kept()
    assert kept is not None
    assert len(kept.dumps()) <= KEPT_BYTES
    assert 1 <= len(kept.rows) < 20
    assert (kept.returned, kept.cut) == (20, True)


def test_values_json_cannot_hold_are_kept_as_text() -> None:
    keeper = RowKeeper()
    keeper.start(["b", "big", "nan"])
    keeper.add([(b"\x00\x01", 2**70, float("nan"))])
    kept = keeper.kept()
    assert kept is not None
    assert kept.rows == (("base64:AAE=", str(2**70), "nan"),)


def test_the_purge_deletes_the_kept_rows_with_their_run(items: Store, clock: ManualClock) -> None:
    items.define_query("few", None, "SELECT label FROM items WHERE n < 3")
    items.define_job(name="few", schedule="* * * * *", action="query", query="few")
    run_id = _run_job(items, "few")
    clock.set(at("2026-03-02T10:00:00+00:00") + 91 * DAY_US)
    assert items.runs.purge(keep_days=90) == 1
    assert items.runs.kept_rows(run_id) is None


def test_a_backup_carries_the_kept_rows_to_the_restored_store(
    items: Store, tmp_path: Path, restore_target: str
) -> None:
    items.define_query("few", None, "SELECT label FROM items WHERE n < 2 ORDER BY n")
    items.define_job(name="few", schedule="* * * * *", action="query", query="few")
    run_id = _run_job(items, "few")
    items.backup(tmp_path / "bk")
    restore(tmp_path / "bk", restore_target)
    restored = Store.open(restore_target, data_dir=tmp_path / "restored-data")
    try:
        kept = restored.runs.kept_rows(run_id)
        assert kept is not None
        assert kept.rows == (("item 0",), ("item 1",))
    finally:
        restored.close()


def test_newest_reads_runs_by_start_with_the_runs_pages_filters(
    items: Store, clock: ManualClock
) -> None:
    items.define_query("few", None, "SELECT label FROM items WHERE n < 2")
    items.define_job(name="few", schedule="* * * * *", action="query", query="few")
    items.define_job(name="cp", schedule="* * * * *", action="checkpoint")
    first = _run_job(items, "few")
    clock.advance(60_000_000)
    second = _run_job(items, "cp")
    third = _run_job(items, "few")  # the same start as the one before: the id orders them
    assert [r.id for r in items.runs.newest(limit=10)] == [third, second, first]
    assert [r.id for r in items.runs.newest(limit=10, job="few")] == [third, first]
    after = items.runs.get(second)
    assert after is not None
    page = items.runs.newest(limit=10, before=(after.started_at, after.id))
    assert [r.id for r in page] == [first]
    since = items.runs.newest(limit=10, since_us=after.started_at)
    assert [r.id for r in since] == [third, second]
    assert items.runs.newest(limit=10, outcomes=frozenset({None})) == []
    done = items.runs.newest(limit=10, outcomes=frozenset({Outcome.SUCCEEDED}))
    assert len(done) == 3
