"""The proxy's refusals on its unauthenticated port name their reason and the deployment,
never what they came from: no model server's log lines or command line (an ``--api-key``),
no data directory, no base URL with its ``user:password@``."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from proxy.proxykit import ProxyKit, chat_body
from proxy.proxykit import proxied as proxied  # noqa: PLC0414  (the fixture, by its own name)
from support import StandinProcess

from dgxmm.errors import DgxmmError

CHAT = "/v1/chat/completions"
SECRET_KEY = "sk-proxytest-0123456789"


def test_a_failed_deployments_503_quotes_none_of_its_error(proxied: ProxyKit) -> None:
    # The stand-in refuses the unknown --api-key and exits: its log says the command line.
    deployment = proxied.deployment("broken", "--api-key", SECRET_KEY, start=False)
    with pytest.raises(DgxmmError):
        proxied.fleet.deployer.start(deployment, actor="user:alice")
    failed = proxied.fleet.deployments.get(deployment)
    assert failed.state.value == "failed"
    assert SECRET_KEY in (failed.last_error or "")  # what a refusal must not repeat
    answer = proxied.post(CHAT, chat_body(proxied.model(deployment)))
    assert answer.status_code == 503
    error = answer.json()["error"]
    assert error["code"] == "deployment_failed"
    assert "'broken' has failed" in error["message"]
    assert SECRET_KEY not in answer.text
    assert str(proxied.tmp_path) not in answer.text
    assert "unrecognized arguments" not in answer.text


def test_an_unreachable_servers_502_quotes_no_url(
    proxied: ProxyKit, standin: Callable[..., StandinProcess]
) -> None:
    server = standin("--latency", "0", model="remote-model")
    base_url = server.base_url.replace("http://", "http://alice:hunter2@")
    created = proxied.fleet.deployments.create(
        name="remote", model="remote-model", backend="external", base_url=base_url, gpus=[0],
        memory_gib_awake=10.0, memory_gib_asleep=1.0, actor="user:alice",
    )  # fmt: skip
    proxied.fleet.deployer.start(created.id, actor="user:alice")
    assert proxied.post(CHAT, chat_body("remote-model")).status_code == 200
    server.kill()  # the proxy still thinks it runs: its request finds nobody
    answer = proxied.post(CHAT, chat_body("remote-model"))
    assert answer.status_code == 502
    error = answer.json()["error"]
    assert error["code"] == "server_unreachable"
    assert "'remote'" in error["message"]
    assert "hunter2" not in answer.text
    assert server.base_url.removeprefix("http://") not in answer.text
