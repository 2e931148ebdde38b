"""Wake on request, through the proxy, against real stand-in servers: one wake for any number
of held requests, the deployer's normal path (actor ``request``, no eviction), what a request
may not bring up, the hold's bounds, and a client that goes away."""

from __future__ import annotations

import json
import socket

import pytest
from proxy.proxykit import ProxyKit, chat_body
from proxy.proxykit import proxied as proxied  # noqa: PLC0414  (the fixture, by its own name)
from support import wait_for

from dgxmm.decider.days import ALL_DAYS
from dgxmm.decider.schedules import ScheduleAction
from dgxmm.fleet import parse_exposition
from dgxmm.proxy import MAX_HELD_SETTING, MAX_HOLD_SETTING
from dgxmm.server import ServerMetrics

CHAT = "/v1/chat/completions"


def test_a_hundred_requests_to_a_sleeping_deployment_wake_it_once(proxied: ProxyKit) -> None:
    deployment = proxied.deployment("sleepy", "--latency", "10")
    proxied.fleet.deployer.sleep(deployment, actor="user:alice")
    answers = proxied.many(100, CHAT, chat_body(proxied.model(deployment)))
    assert [a.status_code for a in answers] == [200] * 100
    assert all(a.json()["object"] == "chat.completion" for a in answers)
    wakes = [e for e in proxied.events(deployment) if e[0] == "wake"]
    assert len(wakes) == 1
    _, actor, outcome, detail = wakes[0]
    assert (actor, outcome) == ("request", "done")
    assert "(time to ready: until its first completion answered)" in (detail or "")
    assert proxied.state(deployment) == "running"
    stats = proxied.proxy.stats.snapshot()
    assert stats.wakes == {"sleepy": 1}
    assert stats.held == {"sleepy": 0}
    assert stats.hold_count == stats.held_total["sleepy"] >= 1
    # dgxmm's /metrics has them: held now, held in all, the hold time, the one wake.
    page = parse_exposition(ServerMetrics().exposition(proxied.fleet, proxied.proxy.stats).decode())
    served = {(s.name, s.label("deployment")): s.value for s in page.series}
    assert served["dgxmm_proxy_held_requests", "sleepy"] == 0
    assert served["dgxmm_proxy_held_requests_total", "sleepy"] == stats.held_total["sleepy"]
    assert served["dgxmm_proxy_wakes_total", "sleepy"] == 1
    assert served["dgxmm_proxy_hold_seconds_count", None] == stats.hold_count
    assert served["dgxmm_proxy_hold_seconds_sum", None] > 0
    # Every request forwarded, by its added wait (issue 42): the held ones waited the wake.
    assert served["dgxmm_proxy_added_wait_seconds_count", "sleepy"] == 100
    waited = served["dgxmm_proxy_added_wait_seconds_sum", "sleepy"]
    assert waited > 0
    added = stats.added_waits["sleepy"]
    assert added.count == 100
    assert added.sum_s == pytest.approx(waited)
    # Those that found it up waited 0; as many as were held waited more.
    assert added.buckets[0] == 100 - stats.held_total["sleepy"]
    # Each request stops counting just after its last byte went out.
    wait_for(lambda: proxied.fleet.activity.in_flight(deployment) == 0, "no request in flight")


def test_a_wake_that_does_not_fit_answers_503_at_once_and_evicts_nothing(
    proxied: ProxyKit,
) -> None:
    big = proxied.deployment("big", awake=60.0, asleep=10.0, priority=90)
    proxied.fleet.deployer.sleep(big, actor="user:a")
    blocker = proxied.deployment("blocker", awake=60.0, priority=10)  # 70 of 80 GiB held
    answer = proxied.post(CHAT, chat_body(proxied.model(big)))
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == "60"
    error = answer.json()["error"]
    assert error["code"] == "does_not_fit"
    assert "GPU 0" in error["message"]
    assert proxied.state(big) == "sleeping"
    assert proxied.state(blocker) == "running"  # a request never evicts, whatever the priority
    assert ("wake", "request", "skipped") in [e[:3] for e in proxied.events(big)]


def test_a_deployment_stopped_by_a_person_is_not_started(proxied: ProxyKit) -> None:
    deployment = proxied.deployment("parked")
    proxied.fleet.deployer.stop(deployment, actor="user:alice")
    answer = proxied.post(CHAT, chat_body(proxied.model(deployment)))
    assert answer.status_code == 503
    assert "retry-after" in answer.headers
    error = answer.json()["error"]
    assert error["code"] == "stopped_by_a_person"
    assert "stopped by user:alice" in error["message"]
    assert proxied.state(deployment) == "stopped"
    assert [e for e in proxied.events(deployment) if e[1] == "request"] == []


def test_a_deployment_a_schedule_stopped_is_started_by_a_request(proxied: ProxyKit) -> None:
    deployment = proxied.deployment("nightly")
    schedule = proxied.schedules.create(
        deployment, action=ScheduleAction.STOP, days=ALL_DAYS, time="12:05", actor="user:a"
    )
    proxied.clock.set(proxied.clock.now_us() + 6 * 60_000_000)
    (run,) = proxied.schedules.run_pass(proxied.clock.now_us())
    assert run.result == "done", run.result
    assert proxied.state(deployment) == "stopped"
    answer = proxied.post(CHAT, chat_body(proxied.model(deployment)))
    assert answer.status_code == 200, answer.text
    assert proxied.state(deployment) == "running"
    assert ("start", "request", "done") in [e[:3] for e in proxied.events(deployment)]
    assert schedule.id > 0


def test_an_opted_out_deployment_answers_503_and_stays_asleep(proxied: ProxyKit) -> None:
    deployment = proxied.deployment("private", wake_on_request=False)
    proxied.fleet.deployer.sleep(deployment, actor="user:a")
    answer = proxied.post(CHAT, chat_body(proxied.model(deployment)))
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "wake_on_request_off"
    assert "wake_on_request is off" in answer.json()["error"]["message"]
    assert proxied.state(deployment) == "sleeping"


def test_a_client_that_goes_away_leaves_the_hold(proxied: ProxyKit) -> None:
    deployment = proxied.deployment("slowwake")
    proxied.fleet.deployer.sleep(deployment, actor="user:a")
    stats = proxied.proxy.stats
    body = json.dumps(chat_body(proxied.model(deployment))).encode()
    host, port = proxied.proxy_url.removeprefix("http://").split(":")
    with proxied.fleet.deployer.lock(deployment):  # an action under way: the wake waits
        client = socket.create_connection((host, int(port)))
        client.sendall(
            f"POST {CHAT} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        wait_for(lambda: stats.held_now("slowwake") == 1, "the request to be held")
        assert proxied.fleet.activity.in_flight(deployment) == 1
        client.close()
        wait_for(lambda: stats.held_now("slowwake") == 0, "the gone client to leave the hold")
        wait_for(
            lambda: proxied.fleet.activity.in_flight(deployment) == 0,
            "the gone client's request to stop counting as in flight",
        )
    # The wake it asked for goes on once the lock is free.
    wait_for(lambda: proxied.state(deployment) == "running", "the wake to finish")
    assert ("wake", "request", "done") in [e[:3] for e in proxied.events(deployment)]


def test_past_max_held_a_request_answers_503_at_once(proxied: ProxyKit) -> None:
    proxied.store.set_setting(MAX_HELD_SETTING, 2)
    deployment = proxied.deployment("crowded")
    proxied.fleet.deployer.sleep(deployment, actor="user:a")
    body = chat_body(proxied.model(deployment))
    with proxied.fleet.deployer.lock(deployment):
        waiting = [proxied.post_in_background(CHAT, body) for _ in range(2)]
        wait_for(lambda: proxied.proxy.stats.held_now("crowded") == 2, "two requests held")
        third = proxied.post(CHAT, body)
        assert third.status_code == 503
        assert third.json()["error"]["code"] == "hold_full"
        assert "proxy.max_held" in third.json()["error"]["message"]
        assert third.headers["retry-after"] == "5"
    for thread, answers in waiting:
        thread.join(60)
        assert answers[0].status_code == 200


def test_past_max_hold_time_a_request_answers_503(proxied: ProxyKit) -> None:
    proxied.store.set_setting(MAX_HOLD_SETTING, 0.2)
    deployment = proxied.deployment("patient")
    proxied.fleet.deployer.sleep(deployment, actor="user:a")
    with proxied.fleet.deployer.lock(deployment):
        answer = proxied.post(CHAT, chat_body(proxied.model(deployment)))
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "hold_timeout"
    assert "its wake goes on" in answer.json()["error"]["message"]
    wait_for(lambda: proxied.state(deployment) == "running", "the wake to go on")
