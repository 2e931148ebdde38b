"""The connection limits of dgxmm's two ports, the proxy's and the API's: a connection that
has not sent its whole request head within the header timeout is closed, and so is one whose
body stops coming for the body timeout; past the connection limit a new connection is
answered 503 and closed, so half-sent requests cannot hold the process's file descriptors. A
request that is held (its head and body complete) is not cut."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from proxy.proxykit import ProxyKit, chat_body, one_reply
from support import PATIENCE_S, free_port, start_serve, wait_for

from dgxmm.proxy import API_LIMITS, PROXY_LIMITS, ConnectionLimits, ProxyServer

CHAT = "/v1/chat/completions"
HALF_A_HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty"
# A whole head, then the first byte of its body and nothing more.
STALLED_BODY = (
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
)


class Served:
    """A kit whose proxy is served by ``ProxyServer`` with the limits given."""

    def __init__(self, tmp_path: Path, limits: ConnectionLimits) -> None:
        self.kit = ProxyKit(tmp_path)
        self.server = ProxyServer(self.kit.proxy, port=free_port(), limits=limits)
        self.server.start()
        self.url = f"http://127.0.0.1:{self.server.port}"

    def connect(self, first: bytes = HALF_A_HEAD) -> socket.socket:
        """Open a connection and send ``first`` on it."""
        sock = socket.create_connection(("127.0.0.1", self.server.port), timeout=PATIENCE_S)
        if first:
            sock.sendall(first)
        return sock

    def close(self) -> None:
        self.server.stop()
        self.kit.close()


@pytest.fixture
def quick(tmp_path: Path) -> Iterator[Served]:
    made = Served(
        tmp_path, ConnectionLimits(header_timeout_s=0.5, body_timeout_s=0.5, max_connections=64)
    )
    yield made
    made.close()


@pytest.fixture
def few(tmp_path: Path) -> Iterator[Served]:
    made = Served(
        tmp_path,
        ConnectionLimits(
            header_timeout_s=2 * PATIENCE_S, body_timeout_s=2 * PATIENCE_S, max_connections=4
        ),
    )
    yield made
    made.close()


def closed_by_the_server(sock: socket.socket) -> bytes:
    """Read until the server closes; return what it sent (the socket's timeout fails it)."""
    received = b""
    with sock:
        while chunk := sock.recv(65536):
            received += chunk
    return received


def test_the_limits_are_set_on_both_ports() -> None:
    for limits in (API_LIMITS, PROXY_LIMITS):
        assert 0 < limits.header_timeout_s <= 60
        assert 0 < limits.body_timeout_s <= 60
        assert 0 < limits.max_connections <= 4096


def test_a_half_sent_head_is_closed_after_the_header_timeout(quick: Served) -> None:
    assert closed_by_the_server(quick.connect()) == b""
    assert closed_by_the_server(quick.connect(b"")) == b""  # one that sends nothing at all
    # On a kept-alive connection, the next request's head is timed from its first byte.
    kept = quick.connect(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert one_reply(kept).startswith(b"HTTP/1.1 200 ")
    kept.sendall(HALF_A_HEAD)
    assert closed_by_the_server(kept) == b""


def test_a_stalled_body_is_closed_after_the_body_timeout(quick: Served) -> None:
    assert closed_by_the_server(quick.connect(STALLED_BODY)) == b""
    # Chunked the same: the head is in, the body stops.
    chunked = STALLED_BODY.replace(b"Content-Length: 1000", b"Transfer-Encoding: chunked")
    assert closed_by_the_server(quick.connect(chunked[:-1] + b"5\r\nhel")) == b""


def test_a_body_that_keeps_coming_is_not_cut(quick: Served) -> None:
    kit = quick.kit
    deployment = kit.deployment("slowbody", "--latency", "0")
    body = json.dumps(chat_body(kit.model(deployment))).encode()
    sock = quick.connect(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
    )
    with sock:
        for part in (body[:10], body[10:20], body[20:30], body[30:]):
            time.sleep(0.3)  # each under the body timeout, together well past it
            sock.sendall(part)
        assert one_reply(sock).startswith(b"HTTP/1.1 200 ")


def test_a_held_request_outlasts_the_header_timeout(quick: Served) -> None:
    kit = quick.kit
    deployment = kit.deployment("held", "--latency", "0")
    kit.fleet.deployer.sleep(deployment, actor="user:a")
    with kit.fleet.deployer.lock(deployment):
        thread, answers = kit.in_background(
            lambda: httpx.post(
                f"{quick.url}{CHAT}",
                json=chat_body(kit.model(deployment)),
                timeout=PATIENCE_S,
                trust_env=False,
            )
        )
        wait_for(lambda: kit.proxy.stats.held_now("held") == 1, "the request to be held")
        # Opened after the held request's body was complete: once they are closed, the held
        # request has waited longer than the header timeout and the body timeout.
        assert closed_by_the_server(quick.connect()) == b""
        assert closed_by_the_server(quick.connect(STALLED_BODY)) == b""
        assert kit.proxy.stats.held_now("held") == 1
    thread.join(PATIENCE_S)
    assert answers[0].status_code == 200


def test_past_the_connection_limit_a_connection_is_answered_503_and_closed(few: Served) -> None:
    waiting = [few.connect() for _ in range(4)]
    try:
        refused = closed_by_the_server(few.connect())  # it had begun to send its request
        assert refused.startswith(b"HTTP/1.1 503 ")
        assert b"too many connections" in refused
        waiting.pop().close()  # one place is free again

        def answered() -> bool:
            try:
                return httpx.get(f"{few.url}/v1/models", timeout=PATIENCE_S).status_code == 200
            except httpx.TransportError:
                return False

        wait_for(answered, "a request in the freed place")
    finally:
        for sock in waiting:
            sock.close()


def test_dgxmm_serve_closes_half_sent_heads_and_stalled_bodies_on_both_ports(
    tmp_path: Path,
) -> None:
    process, (api, proxy) = start_serve(
        lambda ports: ["serve", "--data", str(tmp_path / "data"), "--port", str(ports[0]),
                       "--proxy-port", str(ports[1]), "--time-zone", "Europe/Berlin"],
        ports=2,
    )  # fmt: skip
    try:
        api_body = STALLED_BODY.replace(b"/v1/chat/completions", b"/api/jobs/define")
        firsts = {api: (HALF_A_HEAD, api_body), proxy: (HALF_A_HEAD, STALLED_BODY)}
        sent = {(port, first): socket.create_connection(("127.0.0.1", port), timeout=PATIENCE_S)
                for port, both in firsts.items() for first in both}  # fmt: skip
        for (_, first), sock in sent.items():
            sock.sendall(first)
        for (port, first), sock in sent.items():
            assert closed_by_the_server(sock) == b"", f"port {port}: {first[:40]!r}"
    finally:
        process.terminate()
        process.communicate(timeout=PATIENCE_S)
