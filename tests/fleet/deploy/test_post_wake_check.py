"""The post-wake check: a start or wake is done only once one tiny completion answered."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from fleet.deploy.deploykit import standin
from sqlalchemy import select
from support import StandinProcess, wait_for

from dgxmm.errors import BackendError
from dgxmm.fleet import Fleet
from dgxmm.fleet.deployments.tables import deployment_events
from dgxmm.store import reading


def last_event(fleet: Fleet, deployment_id: int) -> tuple[str, str, str]:
    with reading(fleet.store.engine) as connection:
        row = connection.execute(
            select(deployment_events.c.action, deployment_events.c.outcome,
                   deployment_events.c.detail)
            .where(deployment_events.c.deployment_id == deployment_id)
            .order_by(deployment_events.c.id.desc())
        ).first()  # fmt: skip
    assert row is not None
    return (row.action, row.outcome, row.detail)


def test_it_fails_a_start_whose_first_completion_fails(fleet: Fleet) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("broken", "--fail-completion"))
    with pytest.raises(BackendError, match="post-wake check"):
        fleet.deployer.start(created.id, actor="user:a")
    assert fleet.deployments.get(created.id).state.value == "failed"
    action, outcome, detail = last_event(fleet, created.id)
    assert (action, outcome) == ("start", "failed")
    assert "answered 500" in detail


def test_it_fails_a_wake_whose_engine_woke_broken(fleet: Fleet) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("woke_broken"))
    fleet.deployer.start(created.id, actor="user:a")
    fleet.deployer.sleep(created.id, actor="user:a")
    url = fleet.backends.of(fleet.deployments.get(created.id)).base_url
    httpx.post(f"{url}/dgxmm/faults", json={"completion_error": True}, timeout=30)
    with pytest.raises(BackendError, match="post-wake check"):
        fleet.deployer.wake(created.id, actor="user:a")
    assert fleet.deployments.get(created.id).state.value == "failed"
    assert last_event(fleet, created.id)[:2] == ("wake", "failed")
    lock = fleet.deployer.lock(created.id)
    assert lock.acquire(blocking=False)
    lock.release()


def test_it_counts_a_start_done_once_the_check_answered(fleet: Fleet) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("fine"))
    fleet.deployer.start(created.id, actor="user:a")
    assert fleet.deployments.get(created.id).state.value == "running"


def test_the_check_is_not_request_activity(fleet: Fleet) -> None:
    # Found with the proxy: the check's completion showed in the next sample as a finished
    # request, so a deployment nobody used looked busy for ten minutes after every wake.
    created = fleet.deployments.create(actor="user:a", **standin("untouched"))
    fleet.deployer.start(created.id, actor="user:a")
    fleet.metrics.sample_now(created.id)  # the baseline, before the sleep
    fleet.deployer.sleep(created.id, actor="user:a")
    fleet.deployer.wake(created.id, actor="user:a")
    sample = fleet.metrics.sample_now(created.id)
    assert sample.is_idle
    assert fleet.metrics.last_request_at(created.id) is None
    url = fleet.backends.of(fleet.deployments.get(created.id)).base_url
    model = fleet.deployments.get(created.id).model
    chat = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    assert httpx.post(f"{url}/v1/chat/completions", json=chat, timeout=30).status_code == 200
    fleet.metrics.sample_now(created.id)  # a user's request still counts
    assert fleet.metrics.last_request_at(created.id) is not None


def test_a_check_answered_with_500_and_a_huge_body_is_read_only_to_the_bound(
    fleet: Fleet, standin: Callable[..., StandinProcess]
) -> None:
    # Issue 44: an external server that answered a wake's check with 500 and 256 MiB grew
    # dgxmm by 715 MiB. dgxmm now hangs up after a few KiB: the stand-in could send no more
    # than the sockets' buffers hold (a few MiB on the loopback), never the whole body.
    huge = 256 * 1024 * 1024
    server = standin()
    created = fleet.deployments.create(
        actor="user:a", name="huge_error", model=server.model, backend="external",
        base_url=server.base_url, gpus=[0], memory_gib_awake=40.0, memory_gib_asleep=4.0,
    )  # fmt: skip
    fleet.deployer.start(created.id, actor="user:a")
    fleet.deployer.sleep(created.id, actor="user:a")
    server.client.post("/dgxmm/faults", json={"error_bytes": huge})
    with pytest.raises(BackendError, match=r"post-wake check.*answered 500"):
        fleet.deployer.wake(created.id, actor="user:a")
    [sent] = wait_for(lambda: server.client.get("/dgxmm/seen").json()["sent"], "the answer's end")
    assert sent < huge // 4
    deployment = fleet.deployments.get(created.id)
    assert deployment.state.value == "failed"
    assert deployment.last_error is not None
    assert len(deployment.last_error) < 2000
