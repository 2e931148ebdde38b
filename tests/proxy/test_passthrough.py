"""The proxy in front of awake stand-ins: OpenAI's routes pass through (streams chunk by
chunk, status and headers kept, hop-by-hop ones dropped), an unknown model is 404 in OpenAI's
shape, and the proxy is the exact source of request activity for the runner's quiet check,
down to a request that arrives during a scheduled sleep's re-check."""

from __future__ import annotations

import json
import threading

import httpx
from decider.schedulekit import START
from proxy.proxykit import ProxyKit, chat_body
from proxy.proxykit import proxied as proxied  # noqa: PLC0414  (the fixture, by its own name)
from support import PATIENCE_S, at, wait_for

from dgxmm.decider.days import ALL_DAYS
from dgxmm.decider.schedules import ScheduleAction
from dgxmm.decider.schedules.service import ResultKind

CHAT = "/v1/chat/completions"


def test_completions_embeddings_and_chats_pass_through(proxied: ProxyKit) -> None:
    deployment = proxied.deployment("plain", "--latency", "10")
    model = proxied.model(deployment)
    chat = proxied.post(CHAT, chat_body(model))
    assert chat.status_code == 200
    assert chat.json()["model"] == model
    assert "dgxmm-standin" in chat.headers["server"]  # the server's own headers are kept
    assert chat.headers["content-length"] == str(len(chat.content))
    completion = proxied.post("/v1/completions", {"model": model, "prompt": "once upon"})
    assert completion.json()["object"] == "text_completion"
    embedding = proxied.post("/v1/embeddings", {"model": model, "input": ["a", "b"]})
    assert [item["index"] for item in embedding.json()["data"]] == [0, 1]
    # The server's own errors come back as it sent them.
    bad = proxied.post(CHAT, {"model": model, "messages": []})
    assert bad.status_code == 400
    assert bad.json()["error"]["message"].startswith("messages:")
    assert proxied.proxy.stats.snapshot().forwarded == {"plain": 4}


def test_a_stream_passes_through_chunk_by_chunk(proxied: ProxyKit) -> None:
    deployment = proxied.deployment("streamer", "--latency", "3000")
    model = proxied.model(deployment)
    with (
        httpx.Client(timeout=PATIENCE_S, trust_env=False) as client,
        client.stream(
            "POST", f"{proxied.proxy_url}{CHAT}", json=chat_body(model, stream=True)
        ) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert "transfer-encoding" not in response.headers or (
            response.headers["transfer-encoding"] == "chunked"  # uvicorn's own, not passed on
        )
        lines = response.iter_lines()
        first = next(line for line in lines if line)
        # The first chunk is here while the server still generates: nothing was gathered up.
        assert proxied.fleet.metrics.sample_now(deployment).requests_running == 1
        assert proxied.fleet.activity.in_flight(deployment) == 1
        rest = [line for line in lines if line]
    assert json.loads(first.removeprefix("data: "))["choices"][0]["delta"]["role"] == "assistant"
    assert rest[-1] == "data: [DONE]"
    assert len(rest) >= 10  # one event per word
    wait_for(lambda: proxied.fleet.activity.in_flight(deployment) == 0, "the stream to end")


def test_an_unknown_model_answers_404_in_openais_shape(proxied: ProxyKit) -> None:
    proxied.deployment("known", start=False)
    answer = proxied.post(CHAT, chat_body("no-such-model"))
    assert answer.status_code == 404
    error = answer.json()["error"]
    assert error["code"] == "model_not_found"
    assert error["type"] == "invalid_request_error"
    assert error["param"] == "model"
    assert "`no-such-model` does not exist" in error["message"]
    missing = proxied.post(CHAT, {"messages": []})
    assert missing.status_code == 400
    assert missing.json()["error"]["param"] == "model"


def test_models_lists_every_deployments_model_and_wakes_nothing(proxied: ProxyKit) -> None:
    awake = proxied.deployment("one")
    asleep = proxied.deployment("two")
    proxied.fleet.deployer.sleep(asleep, actor="user:a")
    answer = httpx.get(f"{proxied.proxy_url}/v1/models", timeout=PATIENCE_S, trust_env=False)
    listed = answer.json()
    assert listed["object"] == "list"
    assert [card["id"] for card in listed["data"]] == [
        proxied.model(awake),
        proxied.model(asleep),
    ]
    assert proxied.state(asleep) == "sleeping"


def test_the_proxys_requests_keep_a_deployment_from_its_scheduled_sleep(
    proxied: ProxyKit,
) -> None:
    deployment = proxied.deployment("used")
    proxied.schedules.create(
        deployment, action=ScheduleAction.SLEEP, days=ALL_DAYS, time="12:05", actor="user:a"
    )
    proxied.clock.set(at("2026-06-03T12:04:00+02:00"))
    proxied.chat(deployment)  # through the proxy: its last request is now, exactly
    assert proxied.fleet.activity.last_request_at(deployment) == at("2026-06-03T12:04:00+02:00")
    (run,) = proxied.schedules.run_pass(at("2026-06-03T12:05:00+02:00"))
    assert run.kind is ResultKind.DEFERRED
    assert "quiet needs 10 minutes" in (run.reason or "")
    assert START < "2026-06-03T12:05"


def test_a_request_during_a_sleeps_recheck_defers_the_sleep(proxied: ProxyKit) -> None:
    deployment = proxied.deployment("caught")
    schedule = proxied.schedules.create(
        deployment, action=ScheduleAction.SLEEP, days=ALL_DAYS, time="12:05", actor="user:a"
    )
    proxied.clock.set(at("2026-06-03T12:05:00+02:00"))
    faults = f"{proxied.url(deployment)}/dgxmm/faults"
    # /metrics answers nothing until told: the runner's re-check waits inside its sample.
    httpx.post(faults, json={"metrics_silent": True}, timeout=PATIENCE_S)
    runs: list[object] = []
    runner = threading.Thread(
        target=lambda: runs.extend(proxied.schedules.run_pass(proxied.clock.now_us()))
    )
    runner.start()
    activity = proxied.fleet.activity
    wait_for(lambda: activity.is_closed(deployment), "the re-check to shut the door")
    request, answers = proxied.post_in_background(CHAT, chat_body(proxied.model(deployment)))
    wait_for(lambda: activity.in_flight(deployment) == 1, "the request to arrive")
    httpx.post(faults, json={"metrics_silent": False}, timeout=PATIENCE_S)
    runner.join(PATIENCE_S)
    request.join(PATIENCE_S)
    (run,) = runs
    assert run.kind is ResultKind.DEFERRED  # type: ignore[attr-defined]
    assert "through the proxy" in (run.reason or "")  # type: ignore[attr-defined]
    assert answers[0].status_code == 200  # held until the check was over, then answered
    assert proxied.state(deployment) == "running"
    assert proxied.schedules.get(schedule.id).deferred_since is not None
    # Nothing woke it: it never slept.
    assert [e for e in proxied.events(deployment) if e[0] == "wake"] == []
