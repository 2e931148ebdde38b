"""What the proxy refuses before it routes anything, in OpenAI's error shape: a web page of
another origin (a browser sends ``Origin``), a body that is not ``application/json`` (a
cross-site ``text/plain`` POST needs no CORS preflight), and JSON nested too deep to read.
None of them wakes a sleeping deployment; clients that send no ``Origin`` (curl, the openai
SDK) pass as before."""

from __future__ import annotations

import json

import pytest
from proxy.proxykit import JSON, ProxyKit, chat_body
from proxy.proxykit import proxied as proxied  # noqa: PLC0414  (the fixture, by its own name)

CHAT = "/v1/chat/completions"


@pytest.fixture
def asleep(proxied: ProxyKit) -> int:
    deployment = proxied.deployment("asleep", "--latency", "0")
    proxied.fleet.deployer.sleep(deployment, actor="user:a")
    return deployment


def body_of(proxied: ProxyKit, deployment: int) -> bytes:
    return json.dumps(chat_body(proxied.model(deployment))).encode()


@pytest.mark.parametrize(
    "origin",
    [
        pytest.param("https://evil.example", id="another-site"),
        pytest.param("http://127.0.0.1:1", id="another-port"),
        pytest.param("null", id="opaque"),
    ],
)
def test_a_request_from_another_origin_is_refused_and_wakes_nothing(
    proxied: ProxyKit, asleep: int, origin: str
) -> None:
    answer = proxied.send(CHAT, body_of(proxied, asleep), {**JSON, "Origin": origin})
    assert answer.status_code == 403
    error = answer.json()["error"]
    assert (error["type"], error["code"]) == ("invalid_request_error", "cross_origin_request")
    assert error["param"] is None
    assert "Origin" in error["message"]
    assert proxied.state(asleep) == "sleeping"
    assert proxied.fleet.activity.last_request_at(asleep) is None  # not even activity


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({"Content-Type": "text/plain"}, id="text-plain"),
        pytest.param({"Content-Type": "application/x-www-form-urlencoded"}, id="form"),
        pytest.param({"Content-Type": "multipart/form-data; boundary=x"}, id="multipart"),
        pytest.param({"Content-Type": "text/plain; a=application/json"}, id="json-in-a-param"),
        # A browser's fetch of a Blob with no type sends no Content-Type, and an Origin.
        pytest.param({"Origin": "ORIGIN"}, id="none-from-a-browser"),
    ],
)
def test_a_body_that_is_not_json_is_refused_and_wakes_nothing(
    proxied: ProxyKit, asleep: int, headers: dict[str, str]
) -> None:
    if headers.get("Origin") == "ORIGIN":
        headers = {"Origin": proxied.proxy_url}
    answer = proxied.send(CHAT, body_of(proxied, asleep), headers)
    assert answer.status_code == 415
    error = answer.json()["error"]
    assert (error["type"], error["code"]) == ("invalid_request_error", "unsupported_media_type")
    assert "application/json" in error["message"]
    assert proxied.state(asleep) == "sleeping"


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param(JSON, id="no-origin"),
        pytest.param({"Content-Type": "application/json; charset=utf-8"}, id="charset"),
        pytest.param({"Content-Type": "Application/JSON"}, id="any-case"),
        pytest.param({**JSON, "Origin": "ORIGIN"}, id="its-own-origin"),
        pytest.param({}, id="no-type-no-origin"),  # as vLLM takes it: not from a browser
    ],
)
def test_a_json_request_from_no_other_origin_wakes_the_deployment(
    proxied: ProxyKit, asleep: int, headers: dict[str, str]
) -> None:
    if headers.get("Origin") == "ORIGIN":
        headers = {**headers, "Origin": proxied.proxy_url}
    answer = proxied.send(CHAT, body_of(proxied, asleep), headers)
    assert answer.status_code == 200, answer.text
    assert proxied.state(asleep) == "running"


@pytest.mark.parametrize("depth", [pytest.param(100_000, id="100k"), pytest.param(2_000, id="2k")])
def test_json_nested_too_deep_answers_400_in_openais_shape(
    proxied: ProxyKit, asleep: int, depth: int
) -> None:
    answer = proxied.send(CHAT, b"[" * depth + b"]" * depth, JSON)
    assert answer.status_code == 400
    assert answer.headers["content-type"] == "application/json"
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert "nested" in error["message"]
    nested = b'{"model": "asleep-model", "x": ' + b"[" * depth + b"]" * depth + b"}"
    assert proxied.send(CHAT, nested, JSON).status_code == 400
    # The proxy goes on serving.
    assert proxied.send(CHAT, body_of(proxied, asleep), JSON).status_code == 200
