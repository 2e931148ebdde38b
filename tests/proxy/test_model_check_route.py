"""The console's model check through the real proxy never wakes anything (issue 44, point 9).

Sent while a person's sleep was under way, a check went through the proxy, which held it and
then woke the deployment with actor ``request``: the sleep was undone and counted as a
client's cold request. A check carries the proxy's check key; the proxy answers 409 with the
state instead of holding it, and never counts it as a client's request.
"""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest
from proxy.proxykit import ProxyKit, chat_body
from proxy.proxykit import proxied as proxied  # noqa: PLC0414  (the fixture, by its own name)
from support import PATIENCE_S, wait_for

from dgxmm.errors import Conflict
from dgxmm.fleet import Deployment
from dgxmm.proxy import CHECK_KEY_HEADER
from dgxmm.server.model_check import CheckKind, CheckResult, CheckRoute, ModelCheck, run_check

ASKED = ModelCheck(kind=CheckKind.CHAT, prompt="hi", max_tokens=4)


def check(proxied: ProxyKit, deployment: Deployment) -> CheckResult:
    """Send the console's check through the proxy, with its key, as the API route does."""
    return asyncio.run(
        run_check(deployment, ASKED, proxy_url=proxied.proxy_url, check_key=proxied.proxy.check_key)
    )


def test_a_check_during_a_persons_sleep_is_refused_and_wakes_nothing(proxied: ProxyKit) -> None:
    deployment_id = proxied.deployment("napping", "--hang-sleep", "3600")
    seen_running = proxied.fleet.deployments.get(deployment_id)  # the check read it so
    url = proxied.url(deployment_id)
    sleeper = threading.Thread(
        target=proxied.fleet.deployer.sleep, args=(deployment_id,), kwargs={"actor": "user:bob"}
    )
    sleeper.start()
    wait_for(lambda: proxied.fleet.activity.is_closed(deployment_id), "the sleep's shut door")
    proxied.fleet.activity.take_minutes()  # what came before
    with pytest.raises(Conflict, match="never wakes") as refused:
        check(proxied, seen_running)
    assert "being put to sleep or stopped" in str(refused.value)
    httpx.post(f"{url}/dgxmm/faults", json={"sleep_hang_s": 0}, timeout=PATIENCE_S)
    sleeper.join(timeout=PATIENCE_S)
    assert proxied.state(deployment_id) == "sleeping"
    # Asleep now: a check is refused with that state, and still wakes nothing.
    with pytest.raises(Conflict, match="is sleeping"):
        check(proxied, seen_running)
    assert proxied.state(deployment_id) == "sleeping"
    assert [e for e in proxied.events(deployment_id) if e[0] == "wake"] == []
    # Not a client's request: nothing in the savings' record, nothing held or woken.
    assert proxied.fleet.activity.take_minutes() == {}
    assert proxied.fleet.activity.last_request_at(deployment_id) is None
    assert proxied.proxy.stats.snapshot().wakes == {}


def test_a_check_to_an_awake_deployment_answers_and_is_not_counted(proxied: ProxyKit) -> None:
    deployment_id = proxied.deployment("awake", "--echo-header", CHECK_KEY_HEADER)
    deployment = proxied.fleet.deployments.get(deployment_id)
    result = asyncio.run(
        run_check(deployment, ASKED, proxy_url=proxied.proxy_url, check_key=proxied.proxy.check_key)
    )
    assert result.route is CheckRoute.PROXY
    assert result.answer != ""
    assert proxied.fleet.activity.last_request_at(deployment_id) is None
    assert proxied.proxy.stats.snapshot().forwarded.get("awake", 0) == 0
    # A client that sends a wrong key is a client: counted, and the header never goes up.
    answer = proxied.post(
        "/v1/chat/completions",
        chat_body(deployment.model),
        headers={CHECK_KEY_HEADER: "guessed"},
    )
    assert answer.status_code == 200
    assert answer.headers["x-standin-headers"] == f'{{"{CHECK_KEY_HEADER}": []}}'
    assert proxied.fleet.activity.last_request_at(deployment_id) is not None
