"""A deployment's concurrency limit (issue 27, point 8): so many requests at once through the
proxy, a bounded queue behind them, then 429 in OpenAI's shape with ``Retry-After``, read by
OpenAI's own client as its ``RateLimitError``. A client that leaves the queue frees its
place, and a busy deployment's 429 is no cold request for the savings report."""

from __future__ import annotations

import time

import httpx
import openai
import pytest
from proxy.proxykit import ProxyKit, chat_body
from proxy.proxykit import proxied as proxied  # noqa: PLC0414  (the fixture, by its own name)
from support import PATIENCE_S, wait_for

CHAT = "/v1/chat/completions"


def test_past_the_limit_requests_wait_in_turn_then_get_429(proxied: ProxyKit) -> None:
    deployment = proxied.deployment(
        "limited", "--latency", "1500", max_concurrent_requests=2, max_queued_requests=1
    )
    model = proxied.model(deployment)
    began = time.monotonic()
    answers = proxied.many(4, CHAT, chat_body(model))
    took = time.monotonic() - began
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [200, 200, 200, 429]
    busy = next(answer for answer in answers if answer.status_code == 429)
    assert busy.headers["retry-after"] == "1"
    error = busy.json()["error"]
    assert (error["type"], error["code"]) == ("requests", "rate_limit_exceeded")
    assert "2 requests at once and 1 wait already" in error["message"]
    # Two at once: the third waited for a slot, so the whole took two answers' time at least.
    assert took >= 3.0
    assert proxied.proxy.stats.snapshot().refused == {"rate_limit_exceeded": 1}
    # A busy deployment is awake: its 429 is no request that met a cold model.
    minutes = proxied.fleet.activity.take_minutes()
    assert all(not minute.refused for minute in minutes.values())
    assert (proxied.proxy.slots.busy(deployment), proxied.proxy.slots.waiting(deployment)) == (0, 0)


def test_openais_client_reads_the_429_as_a_rate_limit(proxied: ProxyKit) -> None:
    deployment = proxied.deployment(
        "single", "--latency", "2000", max_concurrent_requests=1, max_queued_requests=0
    )
    model = proxied.model(deployment)
    thread, answers = proxied.post_in_background(CHAT, chat_body(model))
    wait_for(lambda: proxied.proxy.slots.busy(deployment) == 1, "the first request to run")
    client = openai.OpenAI(base_url=f"{proxied.proxy_url}/v1", api_key="unused",
                           timeout=PATIENCE_S, max_retries=0)  # fmt: skip
    with pytest.raises(openai.RateLimitError) as refused:
        client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
    assert refused.value.status_code == 429
    assert refused.value.code == "rate_limit_exceeded"
    thread.join(PATIENCE_S)
    assert answers[0].status_code == 200


def test_a_client_that_leaves_the_queue_frees_its_place(proxied: ProxyKit) -> None:
    deployment = proxied.deployment(
        "queued", "--latency", "3000", max_concurrent_requests=1, max_queued_requests=1
    )
    model = proxied.model(deployment)
    first, answers = proxied.post_in_background(CHAT, chat_body(model))
    wait_for(lambda: proxied.proxy.slots.busy(deployment) == 1, "the first request to run")

    def leave_soon() -> None:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{proxied.proxy_url}{CHAT}", json=chat_body(model), timeout=0.5,
                       trust_env=False)  # fmt: skip

    leaver, _ = proxied.in_background(leave_soon)  # type: ignore[arg-type]
    wait_for(lambda: proxied.proxy.slots.waiting(deployment) == 1, "a request to wait")
    leaver.join(PATIENCE_S)
    wait_for(lambda: proxied.proxy.slots.waiting(deployment) == 0, "the leaver to leave")
    # Its place is free again: the next request waits instead of a 429, and is answered.
    assert proxied.post(CHAT, chat_body(model)).status_code == 200
    first.join(PATIENCE_S)
    assert answers[0].status_code == 200
    # The stand-in never ran two at once: the limit held for every request it saw.
    assert proxied.fleet.metrics.sample_now(deployment).requests_running == 0
