"""``GET /v1/models`` through OpenAI's own Python client: every model a deployment serves,
each with its deployment's state in an extra ``state`` field that the client keeps and
ignores; listing wakes nothing."""

from __future__ import annotations

from openai import OpenAI
from proxy.proxykit import ProxyKit
from proxy.proxykit import proxied as proxied  # noqa: PLC0414  (the fixture, by its own name)
from support import PATIENCE_S

from dgxmm.fleet import DeploymentState
from dgxmm.proxy import ModelState, model_state


def client(proxied: ProxyKit) -> OpenAI:
    return OpenAI(base_url=f"{proxied.proxy_url}/v1", api_key="unused", timeout=PATIENCE_S)


def test_it_lists_each_model_with_its_state_and_wakes_nothing(proxied: ProxyKit) -> None:
    awake = proxied.deployment("one", "--latency", "0")
    asleep = proxied.deployment("two", "--latency", "0")
    proxied.fleet.deployer.sleep(asleep, actor="user:a")
    stopped = proxied.deployment("three", start=False)
    listed = {model.id: model for model in client(proxied).models.list()}
    assert {name: model.model_extra for name, model in listed.items()} == {
        proxied.model(awake): {"state": "awake"},
        proxied.model(asleep): {"state": "asleep"},
        proxied.model(stopped): {"state": "stopped"},
    }
    # OpenAI's own fields, as the client reads them.
    one = listed[proxied.model(awake)]
    assert (one.object, one.owned_by) == ("model", "dgxmm")
    assert one.created == proxied.fleet.deployments.get(awake).created_at // 1_000_000
    assert (proxied.state(asleep), proxied.state(stopped)) == ("sleeping", "stopped")


def test_a_model_two_deployments_serve_shows_the_state_a_request_finds(
    proxied: ProxyKit,
) -> None:
    asleep = proxied.deployment("first", "--latency", "0", model="shared-model")
    proxied.fleet.deployer.sleep(asleep, actor="user:a")
    proxied.deployment("second", "--latency", "0", model="shared-model")
    listed = list(client(proxied).models.list())
    # A request goes to the awake one, so the model is awake.
    assert [(m.id, m.model_extra) for m in listed] == [("shared-model", {"state": "awake"})]


def test_every_deployment_state_has_a_state_a_client_reads() -> None:
    states = {state: model_state(state) for state in DeploymentState}
    assert states[DeploymentState.RUNNING] is ModelState.AWAKE
    assert states[DeploymentState.SLEEPING] is ModelState.ASLEEP
    assert set(states.values()) == set(ModelState)  # one word for each, none unused


def test_a_deployment_answers_to_its_aliases_and_lists_them(proxied: ProxyKit) -> None:
    deployment = proxied.deployment("llama", "--latency", "0", aliases=["chat", "llama-fast"])
    proxied.deployment("other", "--latency", "0", start=False)
    openai = client(proxied)
    listed = [(m.id, m.model_extra) for m in openai.models.list()]
    assert listed == [
        ("chat", {"state": "awake"}),
        ("llama-fast", {"state": "awake"}),
        ("llama-model", {"state": "awake"}),
        ("other-model", {"state": "stopped"}),
    ]
    # The stand-in, like vLLM, knows its model by one name (404 for another): the proxy
    # renames an alias on the way up, streamed or not.
    reply = openai.chat.completions.create(
        model="chat", messages=[{"role": "user", "content": "hi"}]
    )
    assert reply.model == proxied.model(deployment) == "llama-model"
    streamed = openai.chat.completions.create(
        model="llama-fast", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    assert {chunk.model for chunk in streamed} == {"llama-model"}


def test_an_alias_wakes_its_sleeping_deployment(proxied: ProxyKit) -> None:
    deployment = proxied.deployment("sleepy", "--latency", "0", aliases=["nap"])
    proxied.fleet.deployer.sleep(deployment, actor="user:a")
    listed = {m.id: m.model_extra for m in client(proxied).models.list()}
    assert listed["nap"] == {"state": "asleep"}
    reply = client(proxied).embeddings.create(model="nap", input="hello")
    assert reply.model == "sleepy-model"
    assert proxied.state(deployment) == "running"
