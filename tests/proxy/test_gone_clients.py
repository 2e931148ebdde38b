"""Clients that go away mid-stream: the proxy drops their requests to the model server at
once, so the server stops generating for nobody (issue 27, point 5), and the requests of
clients that stay are served on kept-alive connections."""

from __future__ import annotations

import socket

from proxy.proxykit import ProxyKit, chat_body
from proxy.proxykit import proxied as proxied  # noqa: PLC0414  (the fixture, by its own name)
from support import wait_for

CHAT = "/v1/chat/completions"


def _stream_request(url: str, model: str) -> bytes:
    import json

    body = json.dumps(chat_body(model, stream=True)).encode()
    host = url.removeprefix("http://").encode()
    return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: " + host
            + b"\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\n\r\n" + body)  # fmt: skip


def test_streams_whose_clients_left_stop_on_the_server(proxied: ProxyKit) -> None:
    # 4 s of generation, a word every third of a second or so.
    deployment = proxied.deployment("slow", "--latency", "4000")
    model = proxied.model(deployment)
    host, port = proxied.proxy_url.removeprefix("http://").split(":")
    clients = [socket.create_connection((host, int(port)), timeout=10) for _ in range(5)]
    for client in clients:
        client.sendall(_stream_request(proxied.proxy_url, model))
    for client in clients:
        received = b""
        while b"data: " not in received:  # the first chunk: the server is generating
            received += client.recv(65536)
    assert proxied.fleet.metrics.sample_now(deployment).requests_running == 5
    for client in clients:
        client.close()
    # The stand-in notices a gone peer at its next write (a word later); left running, the
    # streams would end on their own about 3.5 s from here.
    wait_for(
        lambda: proxied.fleet.metrics.sample_now(deployment).requests_running == 0,
        "the server to run none of the streams whose clients left",
        timeout_s=2.0,
    )
    wait_for(lambda: proxied.fleet.activity.in_flight(deployment) == 0, "the proxy to let go")
