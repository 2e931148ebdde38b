"""Action timeouts and reconciliation: a hung sleep gives the lock back at its sleep timeout,
and the metrics pass corrects dgxmm's state to what the server says afterwards.

A hang is the stand-in's ``sleep_hang_s`` fault, held until the test switches it off, so no
test depends on how long anything took.
"""

from __future__ import annotations

import threading

import httpx
import pytest
from fleet.deploy.deploykit import standin
from support import PATIENCE_S, wait_for

from dgxmm.errors import BackendError
from dgxmm.fleet import Fleet
from dgxmm.fleet.deployments.events import EventAction, EventOutcome


def url_of(fleet: Fleet, deployment_id: int) -> str:
    return fleet.backends.of(fleet.deployments.get(deployment_id)).base_url


def is_sleeping(url: str) -> bool:
    return bool(httpx.get(f"{url}/is_sleeping", timeout=PATIENCE_S).json()["is_sleeping"])


def test_a_hung_sleep_fails_at_its_sleep_timeout_and_the_lock_goes_to_a_manual_action(
    fleet: Fleet,
) -> None:
    keys = standin("hung", "--hang-sleep", "3600", sleep_timeout_s=1.0)
    created = fleet.deployments.create(actor="user:a", **keys)
    fleet.deployer.start(created.id, actor="user:a")
    url = url_of(fleet, created.id)
    failed: list[BaseException] = []

    def scheduled_sleep() -> None:
        try:
            fleet.deployer.sleep(created.id, actor="schedule:1")
        except BaseException as error:
            failed.append(error)

    sleeper = threading.Thread(target=scheduled_sleep)
    sleeper.start()
    lock = fleet.deployer.lock(created.id)

    def held() -> bool:
        if lock.acquire(blocking=False):
            lock.release()
            return False
        return True

    wait_for(held, "the sleep to take the deployment's lock")
    # A manual action waits for the lock: it gets it at the sleep's timeout, not the hang's.
    manual = fleet.deployer.start(created.id, actor="user:bob", plans=False)
    assert (manual.outcome, manual.detail) == (EventOutcome.SKIPPED, "it is already running")
    sleeper.join(timeout=PATIENCE_S)
    assert not is_sleeping(url)  # the server's sleep still hangs
    [error] = failed
    assert isinstance(error, BackendError)
    assert "no answer within 1 s" in str(error)
    assert fleet.deployments.get(created.id).state.value == "running"
    sleep_event = fleet.events.latest(created.id, EventAction.SLEEP, outcome=None)
    assert sleep_event is not None
    assert (sleep_event.actor, sleep_event.outcome) == ("schedule:1", EventOutcome.FAILED)

    # The hang ends; the server sleeps; the next metrics pass says so, as the system.
    httpx.post(f"{url}/dgxmm/faults", json={"sleep_hang_s": 0}, timeout=PATIENCE_S)
    wait_for(lambda: is_sleeping(url), "the late sleep to finish on the server")
    fleet.metrics.rollup_all()
    assert fleet.deployments.get(created.id).state.value == "sleeping"
    last = fleet.events.list(created.id)[0]
    assert (last.action, last.actor, last.outcome) == (
        EventAction.SLEEP,
        "system",
        EventOutcome.DONE,
    )
    assert "sleep_state=weights_offloaded" in (last.detail or "")
    assert not held()
    fleet.metrics.rollup_all()  # nothing more to correct
    assert fleet.deployments.get(created.id).state.value == "sleeping"
    assert fleet.events.list(created.id)[0] == last


def test_a_hung_wake_fails_at_the_start_up_timeout(fleet: Fleet) -> None:
    keys = standin("slow_wake", "--hang-wake", "3600", timeout=1.0)
    created = fleet.deployments.create(actor="user:a", **keys)
    fleet.deployer.start(created.id, actor="user:a")
    fleet.deployer.sleep(created.id, actor="user:a")
    with pytest.raises(BackendError, match="no answer within 1 s"):
        fleet.deployer.wake(created.id, actor="user:a")
    # A wake that did not finish leaves a server in an unknown state: failed, and stopped.
    assert fleet.deployments.get(created.id).state.value == "failed"
    lock = fleet.deployer.lock(created.id)
    assert lock.acquire(blocking=False)
    lock.release()


def test_a_sleeping_deployment_whose_server_woke_is_found_running(fleet: Fleet) -> None:
    # Issue 44: a wake under way when dgxmm was killed finished on the server, and 90 s later
    # dgxmm still said sleeping. Each metrics pass now asks a sleeping server /is_sleeping.
    created = fleet.deployments.create(actor="user:a", **standin("woke_around"))
    fleet.deployer.start(created.id, actor="user:a")
    fleet.deployer.sleep(created.id, actor="user:a")
    url = url_of(fleet, created.id)
    httpx.post(f"{url}/wake_up", timeout=PATIENCE_S)  # woken around dgxmm
    fleet.metrics.rollup_all()
    deployment = fleet.deployments.get(created.id)
    assert deployment.state.value == "running"
    last = fleet.events.list(created.id)[0]
    assert (last.action, last.actor, last.outcome) == (
        EventAction.WAKE,
        "system",
        EventOutcome.DONE,
    )
    assert "found awake" in (last.detail or "")
    assert "GET /is_sleeping" in (last.detail or "")
    fleet.metrics.rollup_all()  # nothing more to correct
    assert fleet.events.list(created.id)[0] == last
