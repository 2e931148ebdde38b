"""The headers a model server receives through the proxy: the client's, less the hop-by-hop
ones, plus ``X-Forwarded-For`` (the client's address appended to the chain it sent) and
``X-Forwarded-Proto``, as reverse proxies add them; never an ``Accept-Encoding`` (or any
other header of httpx's own) that the client did not send. The stand-in tells what it got
(``--echo-header``)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from proxy.proxykit import ProxyKit, chat_body, one_reply
from proxy.proxykit import proxied as proxied  # noqa: PLC0414  (the fixture, by its own name)
from support import PATIENCE_S, free_port

from dgxmm.proxy import ProxyServer

CHAT = "/v1/chat/completions"
TOLD = ("X-Forwarded-For", "X-Forwarded-Proto", "Accept-Encoding", "Accept", "User-Agent")
ECHO = [arg for name in TOLD for arg in ("--echo-header", name)]


def received(port: int, model: str, *headers: tuple[str, str]) -> dict[str, list[str]]:
    """Send a chat with exactly these headers (a raw socket adds none); return what the
    stand-in received under ``TOLD``'s names."""
    body = json.dumps(chat_body(model)).encode()
    head = [
        f"POST {CHAT} HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
        *(f"{name}: {value}" for name, value in headers),
    ]
    with socket.create_connection(("127.0.0.1", port), timeout=PATIENCE_S) as sock:
        sock.sendall("\r\n".join(head).encode() + b"\r\n\r\n" + body)
        answer = one_reply(sock)
    status, _, rest = answer.partition(b"\r\n")
    assert b" 200 " in status, answer
    told = next(
        line.split(b":", 1)[1]
        for line in rest.split(b"\r\n")
        if line.lower().startswith(b"x-standin-headers:")
    )
    result: dict[str, list[str]] = json.loads(told)
    return result


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def test_it_adds_forwarded_for_and_proto_and_no_header_of_its_own(proxied: ProxyKit) -> None:
    deployment = proxied.deployment("plain", "--latency", "0", *ECHO)
    got = received(port_of(proxied.proxy_url), proxied.model(deployment))
    assert got == {
        "x-forwarded-for": ["127.0.0.1"],
        "x-forwarded-proto": ["http"],
        # httpx's defaults (gzip, */*, python-httpx) would be here if the proxy let them in.
        "accept-encoding": [],
        "accept": [],
        "user-agent": [],
    }


def test_it_appends_the_client_to_the_chain_it_sent_and_keeps_its_proto(
    proxied: ProxyKit,
) -> None:
    deployment = proxied.deployment("chained", "--latency", "0", *ECHO)
    got = received(
        port_of(proxied.proxy_url),
        proxied.model(deployment),
        ("X-Forwarded-For", "203.0.113.7"),
        ("X-Forwarded-For", "198.51.100.2, 10.0.0.1"),  # two headers are one list (RFC 9110)
        ("X-Forwarded-Proto", "https"),  # a TLS terminator in front said so
        ("Accept-Encoding", "identity"),
        ("User-Agent", "OpenAI/Python 1.0"),
    )
    assert got == {
        "x-forwarded-for": ["203.0.113.7, 198.51.100.2, 10.0.0.1, 127.0.0.1"],
        "x-forwarded-proto": ["https"],
        "accept-encoding": ["identity"],
        "accept": [],
        "user-agent": ["OpenAI/Python 1.0"],
    }


def test_a_held_request_goes_up_with_the_same_headers(proxied: ProxyKit) -> None:
    deployment = proxied.deployment("sleepy", "--latency", "0", *ECHO)
    proxied.fleet.deployer.sleep(deployment, actor="user:alice")
    got = received(
        port_of(proxied.proxy_url), proxied.model(deployment), ("X-Forwarded-For", "192.0.2.1")
    )
    assert proxied.state(deployment) == "running"  # it was woken for the request
    assert got["x-forwarded-for"] == ["192.0.2.1, 127.0.0.1"]
    assert got["x-forwarded-proto"] == ["http"]
    assert got["accept-encoding"] == []


def test_dgxmm_serves_the_proxy_believing_no_forwarded_header(tmp_path: Path) -> None:
    # uvicorn would take a loopback client's X-Forwarded-For as its address, and the chain
    # would lose the client; ProxyServer reads the socket's.
    kit = ProxyKit(tmp_path)
    server = ProxyServer(kit.proxy, port=free_port())
    server.start()
    try:
        deployment = kit.deployment("served", "--latency", "0", *ECHO)
        got = received(
            server.port,
            kit.model(deployment),
            ("X-Forwarded-For", "203.0.113.7"),
            ("X-Forwarded-Proto", "https"),
        )
        assert got["x-forwarded-for"] == ["203.0.113.7, 127.0.0.1"]
        assert got["x-forwarded-proto"] == ["https"]
    finally:
        server.stop()
        kit.close()
