"""Reconciliation by the metrics pass: dgxmm's state corrected to what the server says."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from fleet.deploy.deploykit import standin
from sqlalchemy import select
from support import wait_for

from dgxmm.errors import BackendError
from dgxmm.fleet import Fleet, HttpTimeouts
from dgxmm.fleet.tables import deployment_events
from dgxmm.store import reading


def test_it_marks_sleeping_a_sleep_that_finished_after_its_timeout(
    make_fleet: Callable[..., Fleet],
) -> None:
    # The sleep's answer comes after 3 s; dgxmm waits 1 s for it.
    fleet = make_fleet(http_timeouts=HttpTimeouts(connect_s=2.0, probe_s=5.0, action_s=1.0))
    created = fleet.deployments.create(actor="user:a", **standin("late", "--hang-sleep", "3"))
    fleet.deployer.start(created.id, actor="user:a")
    with pytest.raises(BackendError):
        fleet.deployer.sleep(created.id, actor="user:a")
    assert fleet.deployments.get(created.id).state.value == "running"
    url = fleet.backends.of(fleet.deployments.get(created.id)).base_url

    def asleep() -> bool:
        return bool(httpx.get(f"{url}/is_sleeping", timeout=30).json()["is_sleeping"])

    wait_for(asleep, "the late sleep to finish on the server")
    fleet.metrics.rollup_all()
    assert fleet.deployments.get(created.id).state.value == "sleeping"
    with reading(fleet.store.engine) as connection:
        last = connection.execute(
            select(deployment_events.c.action, deployment_events.c.actor,
                   deployment_events.c.outcome, deployment_events.c.detail)
            .where(deployment_events.c.deployment_id == created.id)
            .order_by(deployment_events.c.id.desc())
        ).first()  # fmt: skip
    assert last is not None
    assert (last.action, last.actor, last.outcome) == ("sleep", "system", "done")
    assert "sleep_state=weights_offloaded" in last.detail
    lock = fleet.deployer.lock(created.id)
    assert lock.acquire(blocking=False)
    lock.release()
    fleet.metrics.rollup_all()  # nothing more to correct
    assert fleet.deployments.get(created.id).state.value == "sleeping"
