"""A model server that dies part way through its answer (issue 44, point 8): the proxy never
passes the cut answer on as a whole one. A stream cut between two events ends with an error
event in OpenAI's shape, which OpenAI's own client raises; any other cut answer ends the
client's connection with no end (no chunked terminator), so an HTTP client sees a body it
cannot finish. The stand-in dies for real (``die_mid_answer``: the process exits)."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import httpx
import openai
import pytest
from proxy.proxykit import ProxyKit, chat_body
from proxy.proxykit import proxied as proxied  # noqa: PLC0414  (the fixture, by its own name)
from support import PATIENCE_S

CHAT = "/v1/chat/completions"


def dying(proxied: ProxyKit, name: str) -> str:
    """Start a stand-in deployment, then make it die mid-answer; return its model."""
    deployment = proxied.deployment(name, "--latency", "0")
    # Switched on after the start: the start's own check is a completion too.
    faults = httpx.post(
        f"{proxied.url(deployment)}/dgxmm/faults",
        json={"die_mid_answer": True}, timeout=PATIENCE_S, trust_env=False,
    )  # fmt: skip
    assert faults.json()["die_mid_answer"] is True
    return proxied.model(deployment)


def client(proxied: ProxyKit) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{proxied.proxy_url}/v1", api_key="unused",
                         timeout=PATIENCE_S, max_retries=0)  # fmt: skip


def test_a_stream_cut_mid_way_raises_in_openais_client(proxied: ProxyKit) -> None:
    model = dying(proxied, "cutstream")
    chunks = client(proxied).chat.completions.create(
        model=model, messages=[{"role": "user", "content": "hello"}], stream=True
    )
    received: list[openai.types.chat.ChatCompletionChunk] = []
    with pytest.raises(openai.APIError) as failed:
        received.extend(chunks)
    # The server's first event came through before the cut, then the proxy's error.
    assert [chunk.choices[0].delta.content for chunk in received] == ["This"]
    assert "cutstream" in str(failed.value.message)
    assert "broke off" in str(failed.value.message)


def test_a_stream_cut_mid_way_ends_with_an_error_event_then_done(proxied: ProxyKit) -> None:
    model = dying(proxied, "cutevents")
    with (
        httpx.Client(timeout=PATIENCE_S, trust_env=False) as http,
        http.stream(
            "POST", f"{proxied.proxy_url}{CHAT}", json=chat_body(model, stream=True)
        ) as response,  # fmt: skip
    ):
        lines = [line for line in response.iter_lines() if line]
    assert lines[-2].startswith('data: {"error": ')
    assert '"code": "server_broke_off"' in lines[-2]
    assert lines[-1] == "data: [DONE]"


def test_openais_client_raises_for_a_whole_answer_cut_mid_way(proxied: ProxyKit) -> None:
    model = dying(proxied, "cutwhole")
    with pytest.raises(openai.APIConnectionError):
        client(proxied).chat.completions.create(
            model=model, messages=[{"role": "user", "content": "hello"}]
        )


def test_a_whole_answer_cut_mid_way_has_no_chunked_end(proxied: ProxyKit) -> None:
    model = dying(proxied, "cutraw")
    with pytest.raises(httpx.RemoteProtocolError, match="incomplete chunked read"):
        proxied.post(CHAT, chat_body(model))
    # On the wire: the head and the half that came, then the connection closes, with no
    # chunked terminator (a clean end would be "0\r\n\r\n").
    model = dying(proxied, "cutwire")
    address = urlsplit(proxied.proxy_url)
    body = httpx.Request("POST", "http://x", json=chat_body(model)).content
    with socket.create_connection((address.hostname, address.port), timeout=PATIENCE_S) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n"
                     b"content-type: application/json\r\n"
                     b"content-length: %d\r\n\r\n%s" % (len(body), body))  # fmt: skip
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, rest = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert b'"choices"' in rest  # the half that came
    assert not rest.endswith(b"0\r\n\r\n")
