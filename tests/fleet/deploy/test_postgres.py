"""The fleet on PostgreSQL: the same rows, events, insights, rollups and removal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fleet.deploy.deploykit import standin
from fleet.fleetkit import TEST_TIMEOUTS

from dgxmm.clock import ManualClock
from dgxmm.errors import Conflict
from dgxmm.fleet import DeploymentState, EventAction, Fleet, GpuInventory, InsightKind, Severity
from dgxmm.store import Store

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_fleet(
    pg_url: str, tmp_path: Path, clock: ManualClock, inventory: GpuInventory
) -> Iterator[Fleet]:
    store = Store.open(pg_url, clock=clock, data_dir=tmp_path)
    fleet = Fleet(store, inventory=inventory, http_timeouts=TEST_TIMEOUTS, stop_grace_s=5.0)
    yield fleet
    for deployment in fleet.deployments.list():
        fleet.deployer.stop(deployment.id, actor="system")
    fleet.close()
    store.close()


def test_the_fleet_keeps_its_rows_on_postgresql(pg_fleet: Fleet, clock: ManualClock) -> None:
    fleet = pg_fleet
    created = fleet.deployments.create(actor="user:alice", **standin("llama"))
    with pytest.raises(Conflict):
        fleet.deployments.create(actor="user:alice", **standin("llama"))
    fleet.deployer.start(created.id, actor="user:alice")
    fleet.metrics.rollup_all()
    with httpx.Client(base_url=created.url, trust_env=False, timeout=60) as model:
        model.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]})
    clock.advance(60_000_000)
    fleet.metrics.rollup_all()
    assert [r.requests for r in fleet.metrics.rollups(created.id, 0, 2**62)] == [0, 1]
    assert fleet.metrics.last_request_at(created.id) == clock.now_us()
    fleet.deployer.sleep(created.id, actor="schedule:1")
    assert fleet.deployments.get(created.id).state is DeploymentState.SLEEPING
    latest = fleet.events.latest(created.id, EventAction.SLEEP)
    assert latest is not None
    assert (latest.action, latest.actor) == (EventAction.SLEEP, "schedule:1")

    key = f"note:{created.id}"
    first = fleet.insights.raise_insight(
        InsightKind.METRICS_UNREADABLE,
        deployment_id=created.id,
        severity=Severity.INFO,
        message="m",
        key=key,
    )
    assert first is not None
    again = fleet.insights.raise_insight(
        InsightKind.METRICS_UNREADABLE,
        deployment_id=created.id,
        severity=Severity.INFO,
        message="m",
        key=key,
    )
    assert again is None

    fleet.remove(created.id, actor="user:alice")
    assert fleet.deployments.list() == []
    assert fleet.insights.list() == []
    assert fleet.metrics.rollups(created.id, 0, 2**62) == []
    assert fleet.audit.list(limit=1)[0].action == "deployment.remove"
