"""One action at a time per deployment: two concurrent actions are serialized by its lock."""

from __future__ import annotations

import threading

import httpx
from fleet.deploy.deploykit import standin
from support import wait_for

from dgxmm.errors import DgxmmError
from dgxmm.fleet import DeploymentState, EventAction, EventOutcome, Fleet
from dgxmm.fleet.deployments.recorder import ActionResult

S = DeploymentState


def test_it_gives_each_deployment_one_reentrant_lock(fleet: Fleet) -> None:
    first = fleet.deployments.create(actor="user:a", **standin("first"))
    second = fleet.deployments.create(actor="user:a", **standin("second"))
    assert fleet.deployer.lock(first.id) is fleet.deployer.lock(first.id)
    assert fleet.deployer.lock(first.id) is not fleet.deployer.lock(second.id)
    with fleet.deployer.lock(first.id):  # a caller holds it around an action
        result = fleet.deployer.start(first.id, actor="schedule:1")
    assert result.deployment.state is S.RUNNING


def test_a_stop_asked_during_a_sleep_waits_for_the_sleep_to_finish(fleet: Fleet) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("llama", "--latency", "3000"))
    fleet.deployer.start(created.id, actor="user:a")
    client = httpx.Client(base_url=created.url, timeout=60, trust_env=False)
    body = {"messages": [{"role": "user", "content": "hi"}]}
    answers: list[int] = []
    results: dict[str, ActionResult | DgxmmError] = {}

    def in_flight() -> None:
        answers.append(client.post("/v1/chat/completions", json=body).status_code)

    def act(name: str, action: str) -> None:
        try:
            results[name] = getattr(fleet.deployer, action)(created.id, actor=f"user:{name}")
        except DgxmmError as error:
            results[name] = error

    request = threading.Thread(target=in_flight)
    request.start()
    wait_for(
        lambda: fleet.metrics.sample_now(created.id).requests_running == 1, "the request to run"
    )
    sleeper = threading.Thread(target=act, args=("sleeper", "sleep"))
    sleeper.start()
    # The sleep waits for the request in flight (mode=wait): while it drains, the server
    # refuses new requests, so the sleeper is inside its action, holding the lock.
    wait_for(
        lambda: client.post("/v1/chat/completions", json=body).status_code == 503,
        "the server to drain for the sleep",
    )
    stopper = threading.Thread(target=act, args=("stopper", "stop"))
    stopper.start()
    for thread in (request, sleeper, stopper):
        thread.join(timeout=120)

    # Had the stop not waited, it would have killed the server under the draining sleep:
    # the request in flight and the sleep would both have failed.
    assert answers == [200]
    sleep_result, stop_result = results["sleeper"], results["stopper"]
    assert isinstance(sleep_result, ActionResult), sleep_result
    assert isinstance(stop_result, ActionResult), stop_result
    assert sleep_result.outcome is EventOutcome.DONE
    assert stop_result.outcome is EventOutcome.DONE
    events = [(e.action, e.actor) for e in fleet.events.list(created.id)[:2]]
    assert events == [(EventAction.STOP, "user:stopper"), (EventAction.SLEEP, "user:sleeper")]
    assert sleep_result.event.id < stop_result.event.id
    assert fleet.deployments.get(created.id).state is S.STOPPED
    client.close()
