"""The Runs list reads its newest rows through an index, whatever the number of runs.

``job_runs`` grows by every run of every job, ``deployment_events`` by every action; the Runs
page asks each for its newest rows by (time, id). Without an index in that order SQLite reads
every row and sorts them (``SCAN`` and ``USE TEMP B-TREE FOR ORDER BY`` in its plan) on every
page and every live poll's refetch. Each query is caught as it is sent, and its plan asked.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from dgxmm.fleet import EventOutcome, Fleet, GpuInventory, InventorySource
from dgxmm.jobs import Outcome
from dgxmm.store import Store


@pytest.fixture
def store(tmp_path: Path, fresh_db: Path) -> Iterator[Store]:
    opened = Store.open(fresh_db, data_dir=tmp_path)
    yield opened
    opened.close()


def _plan_of(store: Store, read: Any, table: str) -> str:
    """Run ``read``, catch its statement on ``table`` and return SQLite's plan of it."""
    sent: list[tuple[str, Any]] = []

    def catch(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if f"FROM {table}" in statement:
            sent.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", catch)
    try:
        read()
    finally:
        event.remove(store.engine, "before_cursor_execute", catch)
    assert len(sent) == 1, sent
    statement, parameters = sent[0]
    with store.engine.connect() as connection:
        rows = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
        return "\n".join(str(row[-1]) for row in rows)


@pytest.mark.parametrize("job", [None, "backup"], ids=["every-job", "one-job"])
@pytest.mark.parametrize("after", [False, True], ids=["first-page", "next-page"])
def test_the_newest_job_runs_are_read_by_index(store: Store, job: str | None, after: bool) -> None:
    plan = _plan_of(
        store,
        lambda: store.runs.newest(
            limit=50,
            job=job,
            outcomes=frozenset({Outcome.FAILED, None}),
            before=(1_000, 5) if after else None,
        ),
        "job_runs",
    )
    assert "TEMP B-TREE" not in plan, plan
    assert "USING INDEX ix_job_runs_" in plan, plan


@pytest.mark.parametrize("deployment", [None, 1], ids=["every-deployment", "one-deployment"])
def test_the_newest_actions_are_read_by_index(store: Store, deployment: int | None) -> None:
    fleet = Fleet(store, inventory=GpuInventory(gpus=(), source=InventorySource.CONFIGURATION))
    try:
        plan = _plan_of(
            store,
            lambda: fleet.events.newest(
                limit=50,
                deployment_id=deployment,
                outcomes=frozenset({EventOutcome.FAILED}),
                before=(1_000, 5),
            ),
            "deployment_events",
        )
    finally:
        fleet.close()
    assert "TEMP B-TREE" not in plan, plan
    assert "USING INDEX ix_deployment_events_" in plan, plan
