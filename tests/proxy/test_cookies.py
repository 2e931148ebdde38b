"""dgxmm's login cookie never crosses the proxy: a browser sends it to the proxy's port too
(cookies are per host, not per port), so it is dropped on the way to the model server; and
a model server cannot set it, so its ``Set-Cookie`` of it is dropped on the way back. Other
cookies pass both ways."""

from __future__ import annotations

import json

import httpx
from proxy.proxykit import ProxyKit, chat_body
from proxy.proxykit import proxied as proxied  # noqa: PLC0414  (the fixture, by its own name)
from support import PATIENCE_S

from dgxmm.proxy import LOGIN_COOKIE
from dgxmm.server.edge.deps import COOKIE

CHAT = "/v1/chat/completions"


def test_the_proxy_knows_the_servers_login_cookie_by_its_name() -> None:
    assert LOGIN_COOKIE == COOKIE  # the proxy sits below the server, so it keeps its own name


def test_the_login_cookie_is_not_sent_to_the_model_server(proxied: ProxyKit) -> None:
    deployment = proxied.deployment("nosy", "--latency", "0", "--echo-cookies")
    body = json.dumps(chat_body(proxied.model(deployment))).encode()
    # Two Cookie headers, as HTTP/1.1 lets a client send: each loses dgxmm's cookie.
    headers = [
        ("Content-Type", "application/json"),
        ("Cookie", f"theme=dark; {COOKIE}=admin-secret-token; lang=de"),
        ("Cookie", f"{COOKIE}=another-secret"),
    ]
    with httpx.Client(timeout=PATIENCE_S, trust_env=False) as client:
        answer = client.post(f"{proxied.proxy_url}{CHAT}", content=body, headers=headers)
    assert answer.status_code == 200, answer.text
    received = json.loads(answer.headers["x-standin-cookies"])
    assert received == ["theme=dark; lang=de"]
    assert "secret" not in answer.headers["x-standin-cookies"]


def test_a_model_server_cannot_set_the_login_cookie(proxied: ProxyKit) -> None:
    deployment = proxied.deployment(
        "setter", "--latency", "0",
        "--set-cookie", f"{COOKIE}=forged; Path=/; HttpOnly",
        "--set-cookie", "session=abc; Path=/",
        "--set-cookie", f" {COOKIE} =forged-too",
    )  # fmt: skip
    model = proxied.model(deployment)
    answer = proxied.post(CHAT, chat_body(model))
    assert answer.status_code == 200
    assert answer.headers.get_list("set-cookie") == ["session=abc; Path=/"]
    # A stream's headers the same.
    with (
        httpx.Client(timeout=PATIENCE_S, trust_env=False) as client,
        client.stream(
            "POST", f"{proxied.proxy_url}{CHAT}", json=chat_body(model, stream=True)
        ) as streamed,
    ):
        assert streamed.headers.get_list("set-cookie") == ["session=abc; Path=/"]
        assert streamed.read().endswith(b"data: [DONE]\n\n")


def test_the_proxy_keeps_no_cookie_a_model_server_sets(proxied: ProxyKit) -> None:
    secret = "sess=userA-session-secret"
    one, two = (
        proxied.deployment(name, "--latency", "0", "--set-cookie", secret, "--echo-cookies")
        for name in ("first", "second")
    )
    # Client A gets the server's cookie; it is A's, and A's browser keeps it.
    first = proxied.post(CHAT, chat_body(proxied.model(one)))
    assert first.status_code == 200
    assert first.headers.get_list("set-cookie") == [secret]
    # Client B, sending no cookie, to the same deployment and to another on the same host:
    # neither server receives A's cookie from the proxy.
    for deployment in (one, two):
        later = proxied.post(CHAT, chat_body(proxied.model(deployment)))
        assert later.status_code == 200
        assert json.loads(later.headers["x-standin-cookies"]) == []
    # A client's own cookie still goes up.
    own = proxied.post(CHAT, chat_body(proxied.model(two)), headers={"Cookie": "theme=dark"})
    assert json.loads(own.headers["x-standin-cookies"]) == ["theme=dark"]
