"""The bodies a hold keeps are bounded in bytes, per deployment and in all: past a bound a
request answers 503 ``hold_full`` at once; and a request that leaves the hold (answered,
refused or gone) gives its bytes back, so the accounting returns to zero."""

from __future__ import annotations

import socket
import threading

import httpx
from proxy.proxykit import JSON, ProxyKit, chat_bytes, one_reply
from proxy.proxykit import proxied as proxied  # noqa: PLC0414  (the fixture, by its own name)
from support import PATIENCE_S, serving, wait_for

from dgxmm.proxy import (
    GIVE_BACK_AFTER_BYTES,
    MAX_HELD_BYTES_SETTING,
    MAX_HELD_BYTES_TOTAL_SETTING,
    MAX_HOLD_SETTING,
    ProxyApp,
)
from dgxmm.server import FLEET_ROUTES, Host, Role, Services, Tokens, create_app

CHAT = "/v1/chat/completions"
BIG = 600_000


def held_bytes(proxied: ProxyKit) -> tuple[dict[str, int], int]:
    snapshot = proxied.proxy.stats.snapshot()
    return snapshot.held_bytes, snapshot.held_bytes_total


def test_past_a_deployments_held_bytes_a_request_answers_hold_full(proxied: ProxyKit) -> None:
    proxied.store.set_setting(MAX_HELD_BYTES_SETTING, 1_000_000)
    deployment = proxied.deployment("bulky", "--latency", "0")
    proxied.fleet.deployer.sleep(deployment, actor="user:a")
    model = proxied.model(deployment)
    big, small = chat_bytes(model, BIG), chat_bytes(model, 1_000)
    with proxied.fleet.deployer.lock(deployment):  # an action under way: the wake waits
        first = proxied.in_background(lambda: proxied.send(CHAT, big, JSON))
        wait_for(lambda: held_bytes(proxied) == ({"bulky": BIG}, BIG), "the big body held")
        second = proxied.send(CHAT, big, JSON)
        assert second.status_code == 503
        error = second.json()["error"]
        assert error["code"] == "hold_full"
        assert "proxy.max_held_bytes" in error["message"]
        assert second.headers["retry-after"] == "5"
        third = proxied.in_background(lambda: proxied.send(CHAT, small, JSON))  # it fits
        wait_for(lambda: held_bytes(proxied) == ({"bulky": BIG + 1_000}, BIG + 1_000),
                 "the small body held beside the big one")  # fmt: skip
    for thread, answers in (first, third):
        thread.join(PATIENCE_S)
        assert answers[0].status_code == 200
    assert held_bytes(proxied) == ({"bulky": 0}, 0)
    assert proxied.proxy.stats.snapshot().refused == {"hold_full": 1}


def test_past_the_held_bytes_in_all_a_request_answers_hold_full(proxied: ProxyKit) -> None:
    proxied.store.set_setting(MAX_HELD_BYTES_TOTAL_SETTING, 1_000_000)
    one = proxied.deployment("one", "--latency", "0")
    two = proxied.deployment("two", "--latency", "0")
    for deployment in (one, two):
        proxied.fleet.deployer.sleep(deployment, actor="user:a")
    with proxied.fleet.deployer.lock(one), proxied.fleet.deployer.lock(two):
        first = proxied.in_background(
            lambda: proxied.send(CHAT, chat_bytes("one-model", BIG), JSON)
        )
        wait_for(lambda: held_bytes(proxied)[1] == BIG, "the first body held")
        other = proxied.send(CHAT, chat_bytes("two-model", BIG), JSON)
        assert other.status_code == 503
        assert other.json()["error"]["code"] == "hold_full"
        assert "proxy.max_held_bytes_total" in other.json()["error"]["message"]
    first[0].join(PATIENCE_S)
    assert first[1][0].status_code == 200
    assert held_bytes(proxied)[1] == 0
    assert proxied.state(two) == "sleeping"  # the refused request woke nothing


def test_a_client_that_goes_away_gives_its_bytes_back(proxied: ProxyKit) -> None:
    deployment = proxied.deployment("leaving", "--latency", "0")
    proxied.fleet.deployer.sleep(deployment, actor="user:a")
    body = chat_bytes(proxied.model(deployment), 50_000)
    host, port = proxied.proxy_url.removeprefix("http://").split(":")
    with proxied.fleet.deployer.lock(deployment):
        client = socket.create_connection((host, int(port)))
        client.sendall(
            f"POST {CHAT} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        wait_for(lambda: held_bytes(proxied) == ({"leaving": 50_000}, 50_000), "the body held")
        client.close()
        wait_for(lambda: held_bytes(proxied) == ({"leaving": 0}, 0), "the gone client's bytes")
    wait_for(lambda: proxied.state(deployment) == "running", "the wake to go on")


def test_a_request_that_times_out_in_the_hold_gives_its_bytes_back(proxied: ProxyKit) -> None:
    proxied.store.set_setting(MAX_HOLD_SETTING, 0.2)  # read with the first request
    deployment = proxied.deployment("late", "--latency", "0")
    proxied.fleet.deployer.sleep(deployment, actor="user:a")
    with proxied.fleet.deployer.lock(deployment):
        answer = proxied.send(CHAT, chat_bytes(proxied.model(deployment), 50_000), JSON)
        assert answer.json()["error"]["code"] == "hold_timeout"
        assert held_bytes(proxied) == ({"late": 0}, 0)


def test_the_api_shows_and_sets_the_held_bytes_bounds(proxied: ProxyKit) -> None:
    host = Host(proxied.store, time_zone="Europe/Berlin", clock=proxied.clock)
    tokens = Tokens(proxied.store.engine, proxied.store.clock)
    app = create_app(Services(host=host, tokens=tokens, fleet=proxied.fleet), [FLEET_ROUTES])
    admin = {"Authorization": f"Bearer {tokens.create(Role.ADMIN, 'alice')}"}
    viewer = {"Authorization": f"Bearer {tokens.create(Role.VIEWER, 'victor')}"}
    try:
        with serving(app) as url, httpx.Client(base_url=url, timeout=PATIENCE_S) as api:
            shown = api.get("/api/proxy/settings", headers=viewer).json()["settings"]
            assert shown["max_held_bytes"] == 128 * 2**20
            assert shown["max_held_bytes_total"] == 512 * 2**20
            changed = api.put("/api/proxy/settings", headers=admin,
                              json={"max_held_bytes": 2_000_000})  # fmt: skip
            assert changed.status_code == 200, changed.text
            assert changed.json()["settings"]["max_held_bytes"] == 2_000_000
            assert changed.json()["settings"]["max_held_bytes_total"] == 512 * 2**20
            assert proxied.store.get_setting(MAX_HELD_BYTES_SETTING) == 2_000_000
            refused = api.put("/api/proxy/settings", headers=admin,
                              json={"max_held_bytes_total": -1})  # fmt: skip
            assert refused.status_code == 400
            assert refused.json()["field"] == "max_held_bytes_total"
            assert proxied.store.get_setting(MAX_HELD_BYTES_TOTAL_SETTING) is None
            denied = api.put("/api/proxy/settings", headers=viewer,
                             json={"max_held_bytes": 1})  # fmt: skip
            assert denied.status_code == 403
    finally:
        host.stop()


def open_request(proxied: ProxyKit, head: str, body: bytes = b"") -> socket.socket:
    """Send a request's head (``head``, its lines less the last CRLF) and part of its body."""
    host, port = proxied.proxy_url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=PATIENCE_S)
    sock.sendall(
        f"POST {CHAT} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"{head}\r\n".encode()
        + body
    )
    return sock


def test_a_body_past_the_room_left_is_refused_before_it_is_read(proxied: ProxyKit) -> None:
    proxied.store.set_setting(MAX_HELD_BYTES_TOTAL_SETTING, 1_000_000)
    deployment = proxied.deployment("stalled", "--latency", "0")
    model = proxied.model(deployment)
    proxied.chat(deployment)  # the bounds are read
    # The attack: a large Content-Length, a little of the body, then nothing.
    with open_request(proxied, "Content-Length: 33554422\r\n", b"{") as huge:
        reply = one_reply(huge)
        assert reply.startswith(b"HTTP/1.1 503 ")
        assert b"hold_full" in reply
    # A body being read takes its room while it is read: a second one past the rest waits not.
    body = chat_bytes(model, 600_000)
    with open_request(proxied, f"Content-Length: {len(body)}\r\n", body[:1000]) as first:
        wait_for(lambda: proxied.proxy.reading_bytes() == 600_000, "the first body's room")
        with open_request(proxied, f"Content-Length: {len(body)}\r\n", b"{") as second:
            assert one_reply(second).startswith(b"HTTP/1.1 503 ")
        first.sendall(body[1000:])
        assert one_reply(first).startswith(b"HTTP/1.1 200 ")
    wait_for(lambda: proxied.proxy.reading_bytes() == 0, "the room given back")


def test_a_body_without_a_length_is_refused_once_past_the_room(proxied: ProxyKit) -> None:
    proxied.store.set_setting(MAX_HELD_BYTES_TOTAL_SETTING, 1_000_000)
    deployment = proxied.deployment("chunked", "--latency", "0")
    proxied.chat(deployment)
    chunk = b"x" * 100_000
    with open_request(proxied, "Transfer-Encoding: chunked\r\n") as sock:
        for _ in range(11):  # 1.1 MB, then the sender stalls
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        reply = one_reply(sock)
        assert reply.startswith(b"HTTP/1.1 503 ")
        assert b"hold_full" in reply
    wait_for(lambda: proxied.proxy.reading_bytes() == 0, "the room given back")


def test_memory_is_given_back_once_large_bodies_have_left(proxied: ProxyKit) -> None:
    calls: list[str] = []

    def give_back() -> None:
        calls.append(threading.current_thread().name)

    app = ProxyApp(proxied.fleet, refresh_s=0.2, give_back_memory=give_back)
    deployment = proxied.deployment("large", "--latency", "0")
    proxied.fleet.deployer.sleep(deployment, actor="user:a")
    model = proxied.model(deployment)
    with serving(app) as url:
        small = httpx.post(f"{url}{CHAT}", content=chat_bytes(model, 1_000), headers=JSON,
                           timeout=PATIENCE_S, trust_env=False)  # fmt: skip
        assert small.status_code == 200  # held while it woke, then forwarded
        assert calls == []  # small bodies: nothing worth giving back
        proxied.fleet.deployer.sleep(deployment, actor="user:a")
        large = httpx.post(f"{url}{CHAT}", content=chat_bytes(model, GIVE_BACK_AFTER_BYTES),
                           headers=JSON, timeout=PATIENCE_S, trust_env=False)  # fmt: skip
        assert large.status_code == 200
        wait_for(lambda: len(calls) == 1, "the memory given back")
        assert calls[0] != threading.main_thread().name
        assert app.reading_bytes() == 0
