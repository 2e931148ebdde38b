"""How the client reports servers that answer wrongly: each failure names action, server, cause.

Real servers are covered by the backend tests; these answers (a vLLM without dev mode, a
sleep that did not take, a page that is not Prometheus) are hard to get from a real
server, so an httpx mock transport plays the server.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from dgxmm.clock import ManualClock
from dgxmm.errors import BackendError, ServerGone
from dgxmm.fleet import Health, HttpTimeouts
from dgxmm.fleet.backends.client import ModelServerClient

Answer = Callable[[httpx.Request], httpx.Response]


@pytest.fixture
def client() -> Iterator[Callable[[Answer], ModelServerClient]]:
    """Make clients whose server is the given function; closed after the test."""
    made: list[ModelServerClient] = []

    def make(answer: Answer) -> ModelServerClient:
        made.append(
            ModelServerClient(
                "http://gpu-box:8000",
                server="deployment 'llama'",
                timeouts=HttpTimeouts(),
                transport=httpx.MockTransport(answer),
            )
        )
        return made[-1]

    yield make
    for made_client in made:
        made_client.close()


Client = Callable[[Answer], ModelServerClient]


def test_sleep_sends_level_and_wait_mode_then_confirms(client: Client) -> None:
    seen: list[str] = []
    asleep = False

    def answer(request: httpx.Request) -> httpx.Response:
        nonlocal asleep
        seen.append(f"{request.method} {request.url.path}?{request.url.query.decode()}")
        if request.url.path == "/sleep":
            asleep = True
            return httpx.Response(200)
        return httpx.Response(200, json={"is_sleeping": asleep})

    client(answer).sleep(1)
    assert seen == ["POST /sleep?level=1&mode=wait", "GET /is_sleeping?"]


def test_a_server_without_dev_mode_says_how_to_fix_it(client: Client) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"detail": "Not Found"})

    with pytest.raises(BackendError) as failure:
        client(answer).sleep(1)
    message = str(failure.value)
    assert message.startswith(
        "sleep (POST /sleep?level=1&mode=wait) on deployment 'llama': answered 404 Not Found"
    )
    assert "VLLM_SERVER_DEV_MODE=1" in message


def test_a_sleep_that_did_not_take_is_an_error(client: Client) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/sleep":
            return httpx.Response(200)
        return httpx.Response(200, json={"is_sleeping": False})

    with pytest.raises(BackendError, match="GET /is_sleeping says it is awake"):
        client(answer).sleep(1)


def test_a_wake_that_did_not_take_is_an_error(client: Client) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/wake_up":
            return httpx.Response(200)
        return httpx.Response(200, json={"is_sleeping": True})

    with pytest.raises(BackendError, match="GET /is_sleeping says it sleeps"):
        client(answer).wake()


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"yes", id="not-json"),
        pytest.param(b'{"is_sleeping": "no"}', id="not-a-bool"),
        pytest.param(b"[]", id="not-an-object"),
    ],
)
def test_an_unreadable_sleep_answer_is_an_error(client: Client, body: bytes) -> None:
    with pytest.raises(BackendError, match=r'expected \{"is_sleeping": true\|false\}'):
        client(lambda request: httpx.Response(200, content=body)).is_sleeping()


def test_a_server_error_names_the_status_and_body(client: Client) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, text="CUDA error: out of memory")

    with pytest.raises(BackendError) as failure:
        client(answer).wake()
    assert not isinstance(failure.value, ServerGone)
    assert "answered 500 Internal Server Error: 'CUDA error: out of memory'" in str(failure.value)


def test_a_server_that_does_not_answer_in_time_is_an_error(client: Client) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with pytest.raises(BackendError, match="no answer within 600 s"):
        client(answer).sleep(1)
    health = client(answer).check_health()
    assert health.health is Health.UNREACHABLE
    assert health.detail == "no answer within 5 s"


def test_a_refused_connection_is_gone(client: Client) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    with pytest.raises(ServerGone, match="connection refused; the server is gone"):
        client(answer).fetch_metrics()


def test_a_metrics_page_that_is_not_prometheus_is_an_error(client: Client) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="vllm:num_requests_running{oops} 1\n")

    with pytest.raises(BackendError) as failure:
        client(answer).sample(ManualClock(0))
    assert "metrics (GET /metrics) on deployment 'llama': metrics line 1:" in str(failure.value)


def test_a_metrics_page_without_vllm_names_is_an_error(client: Client) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="process_open_fds 12\n")

    with pytest.raises(BackendError, match="vllm:num_requests_running: is missing"):
        client(answer).sample(ManualClock(0))


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b'{"data": [{"name": "x"}]}', id="no-id"),
        pytest.param(b'{"data": "x"}', id="not-a-list"),
        pytest.param(b"<html>", id="not-json"),
    ],
)
def test_a_model_list_that_is_not_openai_shaped_is_an_error(client: Client, body: bytes) -> None:
    with pytest.raises(BackendError, match="expected an OpenAI model list"):
        client(lambda request: httpx.Response(200, content=body)).served_models()


def test_a_sleep_level_other_than_1_or_2_is_refused_before_asking(client: Client) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        raise AssertionError("nothing should be sent")

    with pytest.raises(BackendError, match="level 3 is not 1 or 2"):
        client(answer).sleep(3)


def recording(seen: list[str], metrics: str | None) -> Answer:
    """A server that records each request and sleeps until every part is awake again."""
    asleep = {"weights", "kv_cache"}

    def answer(request: httpx.Request) -> httpx.Response:
        query = request.url.query.decode()
        body = request.content.decode()
        seen.append(f"{request.method} {request.url.path}{'?' + query if query else ''}{body}")
        if request.url.path == "/metrics":
            return httpx.Response(200, text=metrics) if metrics else httpx.Response(404)
        if request.url.path == "/wake_up":
            tags = request.url.params.get_list("tags")
            asleep.difference_update(tags or ("weights", "kv_cache"))
        if request.url.path == "/is_sleeping":
            return httpx.Response(200, json={"is_sleeping": bool(asleep)})
        return httpx.Response(200)

    return answer


_LEVEL_2 = [
    "POST /wake_up?tags=weights",
    'POST /collective_rpc{"method":"reload_weights"}',
    "POST /wake_up?tags=kv_cache",
    "POST /reset_prefix_cache",
    "GET /is_sleeping",
]


def test_a_level_2_wake_is_vllms_sequence(client: Client) -> None:
    seen: list[str] = []
    client(recording(seen, metrics=None)).wake(2)
    assert seen == ["GET /metrics", *_LEVEL_2]


def test_the_servers_sleep_gauge_picks_the_wake(client: Client) -> None:
    gauge = (
        "# TYPE vllm:engine_sleep_state gauge\n"
        'vllm:engine_sleep_state{engine="0",model_name="m",sleep_state="awake"} 0\n'
        'vllm:engine_sleep_state{engine="0",model_name="m",sleep_state="weights_offloaded"} 0\n'
        'vllm:engine_sleep_state{engine="0",model_name="m",sleep_state="discard_all"} 1\n'
        "vllm:num_requests_running 0\nvllm:num_requests_waiting 0\n"
        "vllm:request_success_total 0\nvllm:e2e_request_latency_seconds_sum 0\n"
        "vllm:e2e_request_latency_seconds_count 0\n"
    )
    seen: list[str] = []
    client(recording(seen, metrics=gauge)).wake(1)  # asked for level 1; it says level 2
    assert seen == ["GET /metrics", *_LEVEL_2]
    level_1 = gauge.replace('"discard_all"} 1', '"discard_all"} 0').replace(
        '"weights_offloaded"} 0', '"weights_offloaded"} 1'
    )
    seen.clear()
    client(recording(seen, metrics=level_1)).wake(2)
    assert seen == ["GET /metrics", "POST /wake_up", "GET /is_sleeping"]


def test_a_level_2_wake_names_the_step_that_failed(client: Client) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/collective_rpc":
            return httpx.Response(500, text="CUDA error: out of memory")
        return recording([], metrics=None)(request)

    with pytest.raises(BackendError) as failure:
        client(answer).wake(2)
    assert str(failure.value).startswith(
        "level-2 wake: POST /collective_rpc reload_weights on deployment 'llama': answered 500"
    )


def test_clients_share_one_tls_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fleet's clients read the CA bundle once, not once each (20 to 90 ms a time)."""
    made: list[ssl.SSLContext] = []
    create = ssl.create_default_context

    def counting(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        made.append(create(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(ssl, "create_default_context", counting)
    clients = [
        ModelServerClient(f"http://gpu-box:{8000 + n}", server=f"s{n}", timeouts=HttpTimeouts())
        for n in range(20)
    ]
    for made_client in clients:
        made_client.close()
    assert len(made) <= 1  # none when an earlier test built the shared one
