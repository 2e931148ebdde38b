"""Query-job runs: one transaction with its change-log row; limits and effects enforced."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from types import FrameType

import pytest
from store.storekit import FakeTimer, add_audit_trigger, ctx, make_items, rows

from dgxmm.errors import (
    Abandoned,
    DefinitionError,
    MemoryLimitExceeded,
    NotAllowed,
    StoreError,
    TimeoutExceeded,
)
from dgxmm.jobs import JobRun, Outcome
from dgxmm.store import Execute, Store, Write

# A statement that would run for a very long time: the limits have to stop it.
ENDLESS = {
    "sqlite": "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) "
    "SELECT count(*) FROM c",
    "postgresql": "SELECT pg_sleep(60)",
}


@pytest.fixture
def items(store: Store) -> Store:
    make_items(store)
    return store


def test_it_runs_a_query_job_in_one_transaction_with_its_change_log_row(
    items: Store,
) -> None:
    items.define_query(
        "add2",
        {"label": "string"},
        "INSERT INTO items (label, n) VALUES (:label, 1); "
        "INSERT INTO items (label, n) VALUES (:label, 2)",
    )
    items.define_job(
        name="adder",
        schedule="* * * * *",
        action="query",
        query="add2",
        args={"label": "a"},
        actor="ann",
    )
    detail = items.run_job("adder", ctx("adder"))
    assert detail == "2 statements; 2 rows changed; 0 rows returned"
    assert rows(items, "SELECT label, n FROM items ORDER BY n") == [("a", 1), ("a", 2)]
    (change,) = items.changes()
    assert (change.job, change.actor, change.at_us) == ("adder", "ann", items.clock.now_us())
    assert "add2" in change.summary
    assert items.changes(job="adder") == [change]


def test_it_rolls_back_every_statement_when_a_later_one_fails(items: Store) -> None:
    items.define_query(
        "half",
        None,
        "INSERT INTO items (label) VALUES ('first'); INSERT INTO items (label) VALUES (NULL)",
    )
    items.define_job(name="half", schedule="* * * * *", action="query", query="half")
    with pytest.raises(StoreError, match="statement 2"):
        items.run_job("half", ctx("half"))
    assert rows(items, "SELECT count(*) FROM items") == [(0,)]
    assert items.changes() == []


def test_it_records_a_failed_run_with_its_reason_through_the_scheduler(items: Store) -> None:
    items.define_query("bad", None, "INSERT INTO items (label) VALUES (NULL)")
    items.define_job(name="bad", schedule="* * * * *", action="query", query="bad")
    (job,) = items.user_jobs().jobs
    result = JobRun(job, scheduled_at=0, started_at=0, timer=FakeTimer()).run()
    assert result.outcome is Outcome.FAILED
    assert result.error is not None
    assert result.error.startswith("StoreError: job bad: statement 1")


def test_it_binds_arguments_of_every_type(items: Store) -> None:
    items.define_query(
        "typed",
        {"label": "string", "n": "int", "f": "float", "b": "bool", "t": "timestamp"},
        "SELECT :label, :n, :f, :b, :t",
    )
    args = {"label": "it's", "n": 7, "f": 2, "b": False, "t": "2026-03-29T02:30:00+01:00"}
    items.define_job(name="typed", schedule="* * * * *", action="query", query="typed", args=args)
    assert items.run_job("typed", ctx("typed")).endswith("1 row returned")


def test_it_refuses_a_run_whose_arguments_no_longer_match_the_query(items: Store) -> None:
    items.define_query("q", {"label": "string"}, "SELECT count(*) FROM items WHERE label = :label")
    items.define_job(name="q", schedule="* * * * *", action="query", query="q", args={"label": "x"})
    items.define_query("q", {"n": "int"}, "SELECT count(*) FROM items WHERE n = :n")
    with pytest.raises(DefinitionError, match="define the job again"):
        items.run_job("q", ctx("q"))


def test_it_stops_a_statement_at_the_runs_deadline_and_changes_nothing(items: Store) -> None:
    body = "INSERT INTO items (label) VALUES ('before'); " + ENDLESS[items.dialect]
    items.define_query("slow", None, body)
    items.define_job(
        name="slow", schedule="* * * * *", action="query", query="slow", timeout_ms=300
    )
    with pytest.raises(TimeoutExceeded, match="statement 2"):
        items.run_job("slow", ctx("slow", timeout_s=0.3))
    assert rows(items, "SELECT count(*) FROM items") == [(0,)]
    assert items.changes() == []


def test_it_checks_the_deadline_between_statements(items: Store) -> None:
    items.define_query("two", None, "INSERT INTO items (label) VALUES ('a'); SELECT 1")
    items.define_job(name="two", schedule="* * * * *", action="query", query="two", timeout_ms=1000)
    timer = FakeTimer(step=0.6)  # every reading of the clock moves it on
    with pytest.raises(TimeoutExceeded):
        items.run_job("two", ctx("two", timeout_s=1.0, timer=timer))
    assert rows(items, "SELECT count(*) FROM items") == [(0,)]


def test_it_fails_a_run_whose_statement_holds_more_result_bytes_than_its_memory_limit(
    items: Store,
) -> None:
    with items.engine.begin() as connection:
        for i in range(50):
            connection.exec_driver_sql(f"INSERT INTO items (label) VALUES ('{'x' * 100}{i:02d}')")
    items.define_query(
        "read_all", None, "INSERT INTO audit (note) VALUES ('ran'); SELECT label FROM items"
    )
    items.define_job(
        name="read_all", schedule="* * * * *", action="query", query="read_all", memory_limit=4000
    )
    with pytest.raises(MemoryLimitExceeded, match="4000 bytes"):
        items.run_job("read_all", ctx("read_all", memory=4000))
    assert rows(items, "SELECT count(*) FROM audit") == [(0,)]
    # The same rows fit a limit that holds them all: 50 rows of 102 bytes.
    items.define_job(
        name="read_all", schedule="* * * * *", action="query", query="read_all", memory_limit=5100
    )
    run = ctx("read_all", memory=5100)
    assert items.run_job("read_all", run).endswith("50 rows returned")
    assert run.live_bytes == 0  # given back when the statement ended


def test_it_refuses_a_write_outside_the_effects_that_only_a_trigger_makes(items: Store) -> None:
    add_audit_trigger(items)
    items.define_query("add", None, "INSERT INTO items (label) VALUES ('x')")
    job = items.define_job(name="add", schedule="* * * * *", action="query", query="add")
    assert job.effects == (Execute(query="add"), Write(table="items"))  # audit is not asked
    with pytest.raises(NotAllowed, match="audit"):
        items.run_job("add", ctx("add"))
    assert rows(items, "SELECT count(*) FROM items") == [(0,)]
    assert rows(items, "SELECT count(*) FROM audit") == [(0,)]
    assert items.changes() == []


def test_it_lets_a_read_only_job_read_and_leaves_no_change_log_row(items: Store) -> None:
    with items.engine.begin() as connection:
        connection.exec_driver_sql("INSERT INTO items (label) VALUES ('x'), ('y')")
    items.define_query("count", None, "SELECT count(*) FROM items")
    items.define_job(name="count", schedule="* * * * *", action="query", query="count")
    assert items.run_job("count", ctx("count")) == ("1 statement; 0 rows changed; 1 row returned")
    assert items.changes() == []


def test_it_stops_a_running_statement_when_the_host_abandons_the_run(items: Store) -> None:
    items.define_query(
        "slow", None, "INSERT INTO items (label) VALUES ('x'); " + ENDLESS[items.dialect]
    )
    items.define_job(name="slow", schedule="* * * * *", action="query", query="slow")
    run = ctx("slow")
    failure: list[BaseException] = []

    def work() -> None:
        try:
            items.run_job("slow", run)
        except Exception as error:
            failure.append(error)

    worker = threading.Thread(target=work)
    worker.start()
    deadline = time.monotonic() + 10
    while items.running_jobs() != ["slow"]:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.2)  # into the endless statement
    run.abandon("the server is stopping")
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert [type(error) for error in failure] == [Abandoned]
    assert "the server is stopping" in str(failure[0])
    assert rows(items, "SELECT count(*) FROM items") == [(0,)]


def test_a_long_statement_on_sqlite_calls_no_python_while_it_runs(tmp_path: Path) -> None:
    """A statement with a deadline runs with the GIL released from its first step to its last.

    Python called from inside the statement (SQLite's progress handler, every few thousand
    steps) took the GIL back each time: while a long query job ran, every request of the
    server waited ~5 ms at each hand-off of the GIL (issue 28). Counted, not timed: the
    Python calls made on the job's thread while SQLite's C code runs the statement.
    """
    store = Store.open(tmp_path / "store.db", data_dir=tmp_path)
    try:
        store.define_query(
            "count_up",
            {"n": "int"},
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < :n) "
            "SELECT count(*) FROM c",
        )
        store.define_job(
            name="count", schedule="* * * * *", action="query", query="count_up",
            args={"n": 300_000}, timeout_ms=60_000,
        )  # fmt: skip
        inside: list[str] = []
        depth = 0

        def profile(frame: FrameType, event: str, arg: object) -> None:
            nonlocal depth
            if event == "c_call" and getattr(arg, "__qualname__", "") == "Cursor.execute":
                depth += 1
            elif (
                event in ("c_return", "c_exception")
                and depth
                and (getattr(arg, "__qualname__", "") == "Cursor.execute")
            ):
                depth -= 1
            elif event == "call" and depth:
                inside.append(frame.f_code.co_name)

        sys.setprofile(profile)
        try:
            detail = store.run_job("count", ctx("count", timeout_s=60.0))
        finally:
            sys.setprofile(None)
        assert detail == "1 statement; 0 rows changed; 1 row returned"
        # The authorizer is asked while the statement is prepared, a few times; a progress
        # handler was called thousands of times over 300,000 recursions.
        assert len(inside) < 50, f"{len(inside)} Python calls inside the statement: {inside[:5]}"
    finally:
        store.close()
