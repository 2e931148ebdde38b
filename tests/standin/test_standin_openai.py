"""The stand-in's OpenAI surface beyond a plain chat: streaming, completions, embeddings.

Over real HTTP on loopback, a `python -m dgxmm.standin` process per test. A stream is read
as it comes: the test sees the first chunk while the server still counts the request running,
which a reply sent whole at the end could not show.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest
from support import PATIENCE_S, StandinProcess, wait_for

Start = Callable[..., StandinProcess]
CHAT = {"messages": [{"role": "user", "content": "say something nice"}]}


def _events(lines: list[str]) -> list[dict[str, object] | str]:
    found: list[dict[str, object] | str] = []
    for line in lines:
        if line.startswith("data: "):
            data = line.removeprefix("data: ")
            found.append(data if data == "[DONE]" else json.loads(data))
    return found


def _running(server: StandinProcess) -> float:
    return server.metrics()["vllm:num_requests_running"]


def test_a_chat_streams_chunk_by_chunk(standin: Start) -> None:
    server = standin("--latency", "3000", model="tiny")
    with (
        httpx.Client(base_url=server.base_url, timeout=PATIENCE_S, trust_env=False) as client,
        client.stream(
            "POST", "/v1/chat/completions", json={**CHAT, "model": "tiny", "stream": True}
        ) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = response.iter_lines()
        first = next(line for line in lines if line)
        # The first chunk came while the request still runs: it was not sent whole at the end.
        assert _running(server) == 1
        rest = list(lines)
    events = _events([first, *rest])
    assert events[-1] == "[DONE]"
    chunks = [event for event in events[:-1] if isinstance(event, dict)]
    assert all(chunk["object"] == "chat.completion.chunk" for chunk in chunks)
    deltas = [chunk["choices"][0]["delta"] for chunk in chunks]  # type: ignore[index]
    assert deltas[0]["role"] == "assistant"
    text = "".join(delta["content"] for delta in deltas)
    assert text.startswith("This is the dgxmm stand-in for tiny")
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"  # type: ignore[index]
    assert len(chunks) == len(text.split())  # one chunk per word


def test_a_stream_with_usage_ends_with_a_usage_chunk(standin: Start) -> None:
    server = standin("--latency", "10")
    body = {**CHAT, "stream": True, "stream_options": {"include_usage": True}, "max_tokens": 3}
    response = server.client.post("/v1/chat/completions", json=body)
    events = _events(response.text.splitlines())
    usage = events[-2]
    assert isinstance(usage, dict)
    assert usage["choices"] == []
    assert usage["usage"] == {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}
    last = events[-3]
    assert isinstance(last, dict)
    assert last["choices"][0]["finish_reason"] == "length"  # type: ignore[index]


def test_it_answers_a_completion_whole_and_streamed(standin: Start) -> None:
    server = standin("--latency", "10", model="tiny")
    whole = server.client.post("/v1/completions", json={"model": "tiny", "prompt": "once upon"})
    assert whole.status_code == 200
    body = whole.json()
    assert body["object"] == "text_completion"
    assert body["id"].startswith("cmpl-")
    assert "stand-in" in body["choices"][0]["text"]
    assert body["usage"]["prompt_tokens"] == 2
    streamed = server.client.post("/v1/completions", json={"prompt": "x", "stream": True})
    events = _events(streamed.text.splitlines())
    text = "".join(e["choices"][0]["text"] for e in events if isinstance(e, dict))  # type: ignore[index]
    assert text == body["choices"][0]["text"]


def test_it_embeds_each_input_the_same_way_every_time(standin: Start) -> None:
    server = standin("--latency", "10", model="embedder")
    body = {"model": "embedder", "input": ["one", "two", "one"]}
    answer = server.client.post("/v1/embeddings", json=body).json()
    assert answer["object"] == "list"
    vectors = [item["embedding"] for item in answer["data"]]
    assert [item["index"] for item in answer["data"]] == [0, 1, 2]
    assert vectors[0] == vectors[2] != vectors[1]
    assert len(vectors[0]) == 16


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        pytest.param("/v1/completions", {"prompt": 3}, "prompt", id="completion-prompt"),
        pytest.param("/v1/embeddings", {"input": []}, "input", id="embedding-input"),
        pytest.param("/v1/embeddings", {"input": "x", "stream": True}, "stream", id="stream"),
    ],
)
def test_it_refuses_bad_bodies_naming_the_field(
    standin: Start, path: str, body: dict[str, object], field: str
) -> None:
    server = standin()
    response = server.client.post(path, json=body)
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith(f"{field}:")


def test_a_sleep_part_way_ends_the_stream_with_an_error_event(standin: Start) -> None:
    server = standin("--latency", "20000")
    with (
        httpx.Client(base_url=server.base_url, timeout=PATIENCE_S, trust_env=False) as client,
        client.stream("POST", "/v1/chat/completions", json={**CHAT, "stream": True}) as response,
    ):
        lines = response.iter_lines()
        next(line for line in lines if line)
        assert server.client.post("/sleep?level=1").status_code == 200
        events = _events(list(lines))
    errors = [e for e in events if isinstance(e, dict) and "error" in e]
    assert errors
    assert "put to sleep" in errors[0]["error"]["message"]  # type: ignore[index]
    assert events[-1] == "[DONE]"


def test_a_client_gone_mid_stream_is_counted_aborted(standin: Start) -> None:
    server = standin("--latency", "20000")
    with (
        httpx.Client(base_url=server.base_url, timeout=PATIENCE_S, trust_env=False) as client,
        client.stream("POST", "/v1/chat/completions", json={**CHAT, "stream": True}) as response,
    ):
        next(line for line in response.iter_lines() if line)
    # The next chunk's write fails on the closed socket, and the engine lets the seat go.
    wait_for(lambda: _running(server) == 0, "the abandoned stream to stop running")
    assert server.metrics()["vllm:request_success_total{finished_reason=abort}"] == 1
