"""A failed run's error as a viewer reads it never carries a value the query read."""

from __future__ import annotations

from store.storekit import make_items

from dgxmm.jobs import Outcome
from dgxmm.store import Store


def _leaking_body(store: Store) -> str:
    """A query whose failure the database describes by quoting what it read."""
    if store.dialect == "sqlite":
        return "SELECT json_extract('{}', (SELECT group_concat(label) FROM items))"
    return "SELECT CAST((SELECT string_agg(label, ',') FROM items) AS integer)"


def test_a_viewer_sees_the_kind_and_the_statement_not_the_values(store: Store) -> None:
    make_items(store)
    with store.engine.begin() as connection:
        connection.exec_driver_sql("INSERT INTO items (label) VALUES ('hunter2')")
    store.define_query("leak", None, "SELECT 1; " + _leaking_body(store))
    store.define_job(name="leak", schedule="0 3 * * *", action="query", query="leak")
    scheduler = store.scheduler("UTC")
    run = scheduler.start_now("leak", 1_800_000_000_000_000)
    result = run.run()
    scheduler.finish(result)
    last = store.workload_stats.last_run("leak")
    assert last is not None
    assert last.outcome is Outcome.FAILED
    assert last.error is not None
    assert "hunter2" in last.error
    assert last.public_error == "StoreError: job leak: statement 2 failed"


def test_public_errors_survive_the_sidecar(store: Store) -> None:
    store.define_query(
        "boom",
        None,
        "SELECT 1/0" if store.dialect == "postgresql" else "SELECT abs(-9223372036854775808)",
    )
    store.define_job(name="boom", schedule="0 3 * * *", action="query", query="boom")
    scheduler = store.scheduler("UTC")
    run = scheduler.start_now("boom", 1_800_000_000_000_000)
    scheduler.finish(run.run())
    again = type(store.workload_stats).from_json(store.workload_stats.to_json())
    last = again.last_run("boom")
    assert last is not None
    assert last.public_error == "StoreError: job boom: statement 1 failed"
