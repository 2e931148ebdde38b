"""The stand-in model server, over real HTTP on loopback, one endpoint at a time.

Each test starts its own `python -m dgxmm.standin` process. No test asserts how long
anything took: where order matters (a sleep that waits for a request in flight), the test
reads what the server counted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import httpx
import pytest
from support import PATIENCE_S, StandinProcess, wait_for

from dgxmm.fleet import parse_exposition

Start = Callable[..., StandinProcess]
CHAT = {"messages": [{"role": "user", "content": "say something nice"}]}


def chat_in_background(server: StandinProcess) -> tuple[threading.Thread, list[httpx.Response]]:
    """Send one chat completion on another thread; its response lands in the list."""
    answers: list[httpx.Response] = []

    def send() -> None:
        with httpx.Client(base_url=server.base_url, timeout=PATIENCE_S, trust_env=False) as c:
            answers.append(c.post("/v1/chat/completions", json=CHAT))

    thread = threading.Thread(target=send)
    thread.start()
    return thread, answers


def test_it_prints_where_it_listens_and_answers_health(standin: Start) -> None:
    server = standin()
    assert server.first_line.startswith("dgxmm stand-in for vLLM: model 'standin-model'")
    response = server.client.get("/health")
    assert response.status_code == 200
    assert response.content == b""  # vLLM's /health has an empty body


def test_it_answers_503_while_starting(standin: Start) -> None:
    server = standin("--startup-delay", "600")
    assert server.client.get("/health").status_code == 503
    models = server.client.get("/v1/models")
    assert models.status_code == 503
    assert models.json()["error"]["message"] == "the model is still loading"
    assert server.client.post("/v1/chat/completions", json=CHAT).status_code == 503


def test_it_lists_its_model(standin: Start) -> None:
    server = standin(model="org/Some-Model-7B")
    body = server.client.get("/v1/models").json()
    assert body["object"] == "list"
    assert [card["id"] for card in body["data"]] == ["org/Some-Model-7B"]
    assert body["data"][0]["object"] == "model"


def test_it_answers_a_chat_completion_in_openai_shape(standin: Start) -> None:
    server = standin("--latency", "10", model="tiny")
    response = server.client.post("/v1/chat/completions", json={**CHAT, "model": "tiny"})
    assert response.status_code == 200
    body = response.json()
    assert body["object"] == "chat.completion"
    assert body["model"] == "tiny"
    assert body["id"].startswith("chatcmpl-")
    (choice,) = body["choices"]
    assert choice["message"]["role"] == "assistant"
    assert "stand-in" in choice["message"]["content"]
    assert choice["finish_reason"] == "stop"
    usage = body["usage"]
    assert usage["prompt_tokens"] == 3
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_it_holds_a_request_for_its_latency(standin: Start) -> None:
    # While the latency runs the request counts as running; afterwards as finished.
    server = standin("--latency", "3000")
    thread, answers = chat_in_background(server)
    wait_for(lambda: server.metrics()["vllm:num_requests_running"] == 1, "a running request")
    assert server.metrics()["vllm:request_success_total"] == 0
    thread.join(PATIENCE_S)
    assert answers[0].status_code == 200
    after = server.metrics()
    assert after["vllm:num_requests_running"] == 0
    assert after["vllm:request_success_total{finished_reason=stop}"] == 1
    assert after["vllm:e2e_request_latency_seconds_count"] == 1
    # Served after at least its 3 s latency: every bucket below 5 s stays empty.
    page = parse_exposition(server.client.get("/metrics").text)
    under_3s = [
        s.value
        for s in page.named("vllm:e2e_request_latency_seconds_bucket")
        if s.label("le") not in ("+Inf",) and float(s.label("le") or 0) < 3.0
    ]
    assert under_3s
    assert all(value == 0 for value in under_3s)


def test_it_serves_requests_concurrently(standin: Start) -> None:
    server = standin("--latency", "4000")
    started = [chat_in_background(server) for _ in range(6)]
    wait_for(lambda: server.metrics()["vllm:num_requests_running"] == 6, "six at once")
    for thread, answers in started:
        thread.join(PATIENCE_S)
        assert answers[0].status_code == 200
    assert server.metrics()["vllm:request_success_total"] == 6


def test_requests_beyond_max_num_seqs_wait(standin: Start) -> None:
    server = standin("--latency", "3000", "--max-num-seqs", "1")
    started = [chat_in_background(server) for _ in range(2)]
    wait_for(
        lambda: (
            (m := server.metrics())["vllm:num_requests_running"] == 1
            and m["vllm:num_requests_waiting"] == 1
        ),
        "one running and one waiting",
    )
    for thread, answers in started:
        thread.join(PATIENCE_S)
        assert answers[0].status_code == 200


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        pytest.param(b"{not json", 400, "malformed JSON", id="malformed-json"),
        pytest.param(b"[1, 2]", 400, "must be a JSON object", id="not-an-object"),
        pytest.param(b'{"messages": []}', 400, "messages", id="no-messages"),
        pytest.param(b'{"messages": [{"content": "x"}]}', 400, "messages[0]", id="no-role"),
        pytest.param(
            b'{"model": "other", "messages": [{"role": "user", "content": "x"}]}',
            404,
            "The model `other` does not exist.",
            id="wrong-model",
        ),
        pytest.param(
            b'{"max_tokens": 0, "messages": [{"role": "user", "content": "x"}]}',
            400,
            "max_tokens",
            id="max-tokens",
        ),
    ],
)
def test_it_refuses_bad_chat_requests(
    standin: Start, body: bytes, status: int, message: str
) -> None:
    server = standin()
    response = server.client.post(
        "/v1/chat/completions", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == status
    error = response.json()["error"]
    assert message in error["message"]
    assert error["code"] == status


def test_unknown_paths_and_methods(standin: Start) -> None:
    server = standin()
    assert server.client.get("/v1/nothing").status_code == 404
    assert server.client.get("/sleep").status_code == 405


def test_metrics_have_vllm_names_types_and_labels(standin: Start) -> None:
    model = 'org/quote"back\\slash'  # label values must come back escaped and intact
    server = standin(model=model)
    page = parse_exposition(server.client.get("/metrics").text)
    assert page.types["vllm:num_requests_running"] == "gauge"
    assert page.types["vllm:num_requests_waiting"] == "gauge"
    assert page.types["vllm:request_success_total"] == "counter"
    assert page.types["vllm:e2e_request_latency_seconds"] == "histogram"
    assert page.types["vllm:engine_sleep_state"] == "gauge"
    for name in (
        "vllm:num_requests_running",
        "vllm:request_success_total",
        "vllm:e2e_request_latency_seconds_sum",
    ):
        for series in page.named(name):
            assert series.label("model_name") == model
            assert series.label("engine") == "0"
    reasons = {s.label("finished_reason") for s in page.named("vllm:request_success_total")}
    assert {"stop", "length", "abort"} <= reasons
    bounds = [s.label("le") for s in page.named("vllm:e2e_request_latency_seconds_bucket")]
    assert bounds[0] == "0.3"
    assert bounds[-1] == "+Inf"
    states = {s.label("sleep_state"): s.value for s in page.named("vllm:engine_sleep_state")}
    assert states == {"awake": 1.0, "weights_offloaded": 0.0, "discard_all": 0.0}


def test_sleep_in_wait_mode_lets_the_request_in_flight_finish(standin: Start) -> None:
    server = standin("--latency", "3000")
    thread, answers = chat_in_background(server)
    wait_for(lambda: server.metrics()["vllm:num_requests_running"] == 1, "a running request")
    response = server.client.post("/sleep", params={"level": "1", "mode": "wait"})
    assert response.status_code == 200
    # By the time the sleep answered, the request had finished normally, not aborted.
    metrics = server.metrics()
    assert metrics["vllm:request_success_total{finished_reason=stop}"] == 1
    assert metrics["vllm:request_success_total{finished_reason=abort}"] == 0
    assert metrics["vllm:num_requests_running"] == 0
    thread.join(PATIENCE_S)
    assert answers[0].status_code == 200
    assert server.client.get("/is_sleeping").json() == {"is_sleeping": True}


def test_sleep_in_abort_mode_ends_the_request_in_flight(standin: Start) -> None:
    server = standin("--latency", "600000")
    thread, answers = chat_in_background(server)
    wait_for(lambda: server.metrics()["vllm:num_requests_running"] == 1, "a running request")
    assert server.client.post("/sleep", params={"level": "1"}).status_code == 200  # mode=abort
    thread.join(PATIENCE_S)
    assert answers[0].status_code == 503
    assert "aborted" in answers[0].json()["error"]["message"]
    assert server.metrics()["vllm:request_success_total{finished_reason=abort}"] == 1


def test_a_sleeping_server_answers_503_until_woken(standin: Start) -> None:
    server = standin("--latency", "10", "--memory-gib", "24")
    assert server.client.post("/sleep?level=1&mode=wait").status_code == 200
    assert server.client.get("/is_sleeping").json() == {"is_sleeping": True}
    refused = server.client.post("/v1/chat/completions", json=CHAT)
    assert refused.status_code == 503
    assert "sleeping" in refused.json()["error"]["message"]
    # As on vLLM, what needs no weights still answers.
    assert server.client.get("/health").status_code == 200
    assert server.client.get("/v1/models").status_code == 200
    asleep = server.metrics()
    assert asleep["vllm:engine_sleep_state{sleep_state=awake}"] == 0
    assert asleep["vllm:engine_sleep_state{sleep_state=weights_offloaded}"] == 1
    assert asleep["dgxmm_standin_gpu_memory_gib"] == 0

    assert server.client.post("/wake_up").status_code == 200
    assert server.client.get("/is_sleeping").json() == {"is_sleeping": False}
    assert server.client.post("/v1/chat/completions", json=CHAT).status_code == 200
    awake = server.metrics()
    assert awake["vllm:engine_sleep_state{sleep_state=awake}"] == 1
    assert awake["dgxmm_standin_gpu_memory_gib"] == 24


def test_sleep_level_2_shows_discard_all(standin: Start) -> None:
    server = standin()
    assert server.client.post("/sleep?level=2&mode=wait").status_code == 200
    assert server.metrics()["vllm:engine_sleep_state{sleep_state=discard_all}"] == 1


def test_a_level_2_wake_needs_the_weights_reloaded_before_it_serves(standin: Start) -> None:
    server = standin("--latency", "10")
    post = server.client.post
    assert post("/sleep?level=2&mode=wait").status_code == 200
    assert post("/collective_rpc", json={"method": "reload_weights"}).status_code == 500
    assert post("/wake_up?tags=weights").status_code == 200
    assert server.client.get("/is_sleeping").json() == {"is_sleeping": True}  # KV cache asleep
    assert post("/wake_up?tags=kv_cache").status_code == 200
    assert server.client.get("/is_sleeping").json() == {"is_sleeping": False}
    refused = post("/v1/chat/completions", json=CHAT)  # awake, but its weights are gone
    assert refused.status_code == 500
    assert "reload_weights" in refused.json()["error"]["message"]
    reloaded = post("/collective_rpc", json={"method": "reload_weights"})
    assert (reloaded.status_code, reloaded.json()) == (200, {"results": [None]})
    assert post("/reset_prefix_cache").status_code == 200
    assert post("/v1/chat/completions", json=CHAT).status_code == 200
    assert server.metrics()["vllm:engine_sleep_state{sleep_state=awake}"] == 1


def test_a_level_1_sleeper_serves_after_a_plain_wake(standin: Start) -> None:
    server = standin("--latency", "10")
    assert server.client.post("/sleep?level=1&mode=wait").status_code == 200
    assert server.client.post("/wake_up?tags=weights&tags=kv_cache").status_code == 200
    assert server.client.post("/v1/chat/completions", json=CHAT).status_code == 200


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        pytest.param("/wake_up?tags=everything", None, "tags: 'everything'", id="unknown-tag"),
        pytest.param("/collective_rpc", {}, "Missing 'method'", id="no-method"),
        pytest.param("/collective_rpc", {"method": "x"}, "'x' is not", id="other-method"),
    ],
)
def test_it_refuses_a_wake_step_it_cannot_do(
    standin: Start, path: str, body: object, message: str
) -> None:
    server = standin()
    response = server.client.post(path, json=body)
    assert response.status_code == 400
    assert message in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "query",
    [
        pytest.param("level=3", id="level-3"),
        pytest.param("level=one", id="level-not-a-number"),
        pytest.param("level=1&mode=keep", id="mode-keep"),
    ],
)
def test_it_refuses_a_sleep_it_cannot_do(standin: Start, query: str) -> None:
    server = standin()
    response = server.client.post(f"/sleep?{query}")
    assert response.status_code == 400
    assert server.client.get("/is_sleeping").json() == {"is_sleeping": False}


def test_it_exits_cleanly_on_sigterm(standin: Start) -> None:
    server = standin()
    assert server.client.get("/health").status_code == 200
    assert server.terminate() == 0
    assert server.process.stdout is not None
    assert "shutting down" in server.process.stdout.read().decode()
