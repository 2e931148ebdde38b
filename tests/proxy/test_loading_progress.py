"""Loading progress for a held stream (issue 27, point 9): a chat completion streamed to a
sleeping deployment with ``loading_progress`` on gets OpenAI chunks saying it wakes, then
the server's own stream, all read by OpenAI's own client; a wake that fails ends the stream
with an error event the client raises. Off (the default), a held stream waits silently."""

from __future__ import annotations

import openai
import pytest
from proxy.proxykit import ProxyKit
from proxy.proxykit import proxied as proxied  # noqa: PLC0414  (the fixture, by its own name)
from support import PATIENCE_S

REPLY = "This is the dgxmm stand-in for {model}; no model runs here."


def client(proxied: ProxyKit) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{proxied.proxy_url}/v1", api_key="unused",
                         timeout=PATIENCE_S, max_retries=0)  # fmt: skip


def stream(proxied: ProxyKit, model: str) -> list[openai.types.chat.ChatCompletionChunk]:
    chunks = client(proxied).chat.completions.create(
        model=model, messages=[{"role": "user", "content": "hello"}], stream=True
    )
    return list(chunks)


def test_a_held_stream_is_told_it_wakes_then_gets_the_servers_answer(proxied: ProxyKit) -> None:
    deployment = proxied.deployment("chatty", "--latency", "0", loading_progress=True)
    model = proxied.model(deployment)
    proxied.fleet.deployer.sleep(deployment, actor="user:a")
    chunks = stream(proxied, model)
    said = "".join((chunk.choices[0].delta.model_extra or {}).get("reasoning_content", "")
                   for chunk in chunks)  # fmt: skip
    assert said.startswith("waking chatty")
    assert "ready after" in said
    # The answer's content is the server's alone.
    content = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
    assert content.strip() == REPLY.format(model=model)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert proxied.state(deployment) == "running"


def test_without_loading_progress_a_held_stream_gets_only_the_servers_chunks(
    proxied: ProxyKit,
) -> None:
    deployment = proxied.deployment("quiet", "--latency", "0")
    model = proxied.model(deployment)
    proxied.fleet.deployer.sleep(deployment, actor="user:a")
    chunks = stream(proxied, model)
    assert all("reasoning_content" not in (chunk.choices[0].delta.model_extra or {})
               for chunk in chunks if chunk.choices)  # fmt: skip
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices).strip() == (
        REPLY.format(model=model)
    )


def test_a_wake_that_fails_ends_the_stream_with_an_error_the_client_raises(
    proxied: ProxyKit,
) -> None:
    deployment = proxied.deployment("fragile", "--latency", "0", "--die-on-wake",
                                    loading_progress=True)  # fmt: skip
    model = proxied.model(deployment)
    proxied.fleet.deployer.sleep(deployment, actor="user:a")
    with pytest.raises(openai.APIError) as failed:
        stream(proxied, model)
    assert "fragile" in str(failed.value.message)
    assert proxied.proxy.stats.snapshot().refused == {"wake_failed": 1}
