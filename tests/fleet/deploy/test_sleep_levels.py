"""Sleep levels with real stand-ins: a level-2 sleep drops the weights, so its wake is vLLM's
sequence (wake the weights, reload them, wake the KV cache, reset the prefix cache), and the
post-wake check shows the weights came back: the stand-in refuses a completion before the
reload, as a real vLLM would answer garbage."""

from __future__ import annotations

import httpx
from fleet.deploy.deploykit import standin

from dgxmm.fleet import Fleet
from dgxmm.fleet.deployments.deployment import DeploymentState as S
from dgxmm.fleet.deployments.events import EventAction

CHAT = {"messages": [{"role": "user", "content": "hello"}]}


def test_a_level_2_deployment_sleeps_at_level_2_and_wakes_through_the_reload(
    fleet: Fleet,
) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("deep", sleep_level=2))
    fleet.deployer.start(created.id, actor="user:a")
    url = fleet.backends.of(fleet.deployments.get(created.id)).base_url
    slept = fleet.deployer.sleep(created.id, actor="user:a")
    assert slept.detail == "asleep (level 2)"
    page = httpx.get(f"{url}/metrics", timeout=30).text
    assert 'sleep_state="discard_all"} 1' in page
    woken = fleet.deployer.wake(created.id, actor="user:a")
    assert woken.deployment.state is S.RUNNING
    assert (woken.detail or "").startswith("awake and healthy after")
    assert httpx.post(f"{url}/v1/chat/completions", json=CHAT, timeout=30).status_code == 200


def test_a_level_2_sleep_made_outside_dgxmm_is_woken_the_level_2_way(fleet: Fleet) -> None:
    # The deployment says level 1; the server was put to sleep at level 2 by someone else.
    # Its vllm:engine_sleep_state says discard_all, and that decides the wake.
    created = fleet.deployments.create(actor="user:a", **standin("shallow"))
    fleet.deployer.start(created.id, actor="user:a")
    url = fleet.backends.of(fleet.deployments.get(created.id)).base_url
    assert httpx.post(f"{url}/sleep?level=2&mode=wait", timeout=30).status_code == 200
    fleet.metrics.rollup_all()
    found = fleet.events.latest(created.id, EventAction.SLEEP)
    assert found is not None
    assert "sleep_state=discard_all" in (found.detail or "")
    woken = fleet.deployer.wake(created.id, actor="user:a")
    assert woken.deployment.state is S.RUNNING
    assert httpx.post(f"{url}/v1/chat/completions", json=CHAT, timeout=30).status_code == 200
