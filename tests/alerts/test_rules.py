"""Rules: findings grouped into one message per rule and subject, a summary, a resolve.

The receiver on 127.0.0.1 gets what each channel is sent; the clock is moved by hand, so
the quiet period is exact.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from alerts.alertkit import KEY, LOOPBACK_ALLOWED, POLICY, Receiver, Scripted

from dgxmm.alerts import Alerts
from dgxmm.clock import ManualClock
from dgxmm.fleet import DeploymentState, Fleet, InsightKind, Severity
from dgxmm.fleet.activity import Minute
from dgxmm.jobs import SkipReason, SkipRecord
from dgxmm.store import Store, writing
from dgxmm.time_units import MINUTE_US


@pytest.fixture
def scripted(store: Store, fleet: Fleet, clock: ManualClock) -> Iterator[tuple[Alerts, Scripted]]:
    finder = Scripted()
    made = Alerts(
        store, fleet, key=KEY, clock=clock, policy=POLICY, conditions=finder,
        destinations=LOOPBACK_ALLOWED,
    )  # fmt: skip
    yield made, finder
    made.stop()


def _setup(alerts: Alerts, receiver: Receiver, condition: str, **numbers: Any) -> None:
    _, receiver.secret = alerts.channels.create(
        {"name": "ops", "url": receiver.url, "format": "generic"}, actor="user:alice"
    )
    alerts.rules.create(
        {"name": "watch", "condition": condition, "channels": ["ops"], "quiet_minutes": 10,
         **numbers},
        actor="user:alice",
    )  # fmt: skip


def _pass(alerts: Alerts, clock: ManualClock) -> None:
    alerts.pulse(clock.now_us())
    alerts.step()


def test_it_groups_repeats_then_summarizes_then_resolves(
    scripted: tuple[Alerts, Scripted], clock: ManualClock
) -> None:
    alerts, finder = scripted
    with Receiver() as receiver:
        _setup(alerts, receiver, "job_failed")
        finder.now = {"job:backup": "run-1"}
        _pass(alerts, clock)
        for token in ("run-2", "run-3", "run-3"):
            clock.advance(timedelta(minutes=1))
            finder.now = {"job:backup": token}
            _pass(alerts, clock)
        assert [r.body["kind"] for r in receiver.requests()] == ["firing"]
        clock.advance(timedelta(minutes=7))  # 10 minutes since the first message
        _pass(alerts, clock)
        clock.advance(timedelta(minutes=1))
        finder.now = {}
        _pass(alerts, clock)
        _pass(alerts, clock)  # nothing more to say
    got = receiver.requests()
    assert [(r.body["kind"], r.body["subject"], r.body["occurrences"]) for r in got] == [
        ("firing", "job:backup", 1),
        ("summary", "job:backup", 3),
        ("resolved", "job:backup", 3),
    ]
    assert "happened 2 more times" in got[1].body["text"]
    assert got[2].body["text"].startswith("watch: resolved")
    assert all(r.signed for r in got)
    log = alerts.deliveries.log()
    assert [(e.message.kind.value, e.delivery.state.value) for e in log] == [
        ("resolved", "sent"),
        ("summary", "sent"),
        ("firing", "sent"),
    ]


def test_a_resolve_tells_the_repeats_not_yet_told(
    scripted: tuple[Alerts, Scripted], clock: ManualClock
) -> None:
    alerts, finder = scripted
    with Receiver() as receiver:
        _setup(alerts, receiver, "job_failed")
        finder.now = {"job:a": "1", "job:b": "1"}
        _pass(alerts, clock)
        clock.advance(timedelta(minutes=1))
        finder.now = {"job:a": "2", "job:b": "1"}
        _pass(alerts, clock)
        clock.advance(timedelta(minutes=1))
        finder.now = {"job:b": "1"}
        _pass(alerts, clock)
    got = [(r.body["kind"], r.body["subject"]) for r in receiver.requests()]
    assert got == [("firing", "job:a"), ("firing", "job:b"), ("resolved", "job:a")]
    assert "1 repeat since the last message" in receiver.requests()[2].body["text"]


def test_a_rule_switched_off_says_nothing(
    scripted: tuple[Alerts, Scripted], clock: ManualClock
) -> None:
    alerts, finder = scripted
    with Receiver() as receiver:
        _, receiver.secret = alerts.channels.create(
            {"name": "ops", "url": receiver.url}, actor="user:alice"
        )
        alerts.rules.create(
            {"name": "off", "condition": "job_failed", "channels": ["ops"], "enabled": False},
            actor="user:alice",
        )
        finder.now = {"job:a": "1"}
        _pass(alerts, clock)
    assert receiver.requests() == []


# -- the conditions, from what the layers recorded -------------------------------------------


def _deployment(fleet: Fleet) -> int:
    return fleet.deployments.create(
        actor="user:alice",
        name="llama",
        model="llama-model",
        backend="external",
        base_url="http://127.0.0.1:9",
        gpus=[0],
        memory_gib_awake=10.0,
        memory_gib_asleep=1.0,
    ).id


def test_a_critical_insight_fires_and_resolves_when_dismissed(
    alerts: Alerts, fleet: Fleet, clock: ManualClock
) -> None:
    with Receiver() as receiver:
        _setup(alerts, receiver, "critical_insight")
        for severity, message in (
            (Severity.WARNING, "a warning"),
            (Severity.CRITICAL, "GPU 0 gone"),
        ):
            raised = fleet.insights.raise_insight(
                InsightKind.INVENTORY, deployment_id=None, severity=severity, message=message
            )
        assert raised is not None
        _pass(alerts, clock)
        fleet.insights.dismiss(raised.id, "user:alice")
        clock.advance(timedelta(minutes=1))
        _pass(alerts, clock)
    got = [(r.body["kind"], r.body["title"]) for r in receiver.requests()]
    assert got == [("firing", "GPU 0 gone"), ("resolved", "GPU 0 gone")]


def test_a_failed_deployment_fires_and_resolves_when_it_runs(
    alerts: Alerts, fleet: Fleet, clock: ManualClock
) -> None:
    key = _deployment(fleet)
    with Receiver() as receiver:
        _setup(alerts, receiver, "deployment_failed")
        _pass(alerts, clock)
        with writing(fleet.store.engine) as connection:
            fleet.deployments.set_state(connection, key, DeploymentState.FAILED, error="gone")
        _pass(alerts, clock)
        clock.advance(timedelta(minutes=1))
        with writing(fleet.store.engine) as connection:
            fleet.deployments.set_state(connection, key, DeploymentState.STOPPED, error=None)
        _pass(alerts, clock)
    got = [(r.body["kind"], r.body["subject"]) for r in receiver.requests()]
    assert got == [("firing", "deployment:llama"), ("resolved", "deployment:llama")]
    assert receiver.requests()[0].body["title"] == "deployment llama failed: gone"


def test_proxy_refusals_over_n_in_m_minutes_fire(
    alerts: Alerts, fleet: Fleet, clock: ManualClock
) -> None:
    key = _deployment(fleet)
    minute = clock.now_us() // MINUTE_US * MINUTE_US
    with Receiver() as receiver:
        _setup(alerts, receiver, "proxy_refused", threshold=5, window_minutes=3)
        fleet.request_minutes.add({(key, minute): Minute(requests=5, refused={"fit": 5})})
        _pass(alerts, clock)  # 5 is not more than 5
        fleet.request_minutes.add({(key, minute): Minute(requests=1, refused={"hold": 1})})
        _pass(alerts, clock)
        clock.advance(timedelta(minutes=4))  # the refusals fell out of the window
        _pass(alerts, clock)
    got = [(r.body["kind"], r.body["title"]) for r in receiver.requests()]
    assert got == [
        ("firing", "the proxy refused 6 requests of llama in 3 min (more than 5)"),
        ("resolved", "the proxy refused 6 requests of llama in 3 min (more than 5)"),
    ]


def test_a_job_skipped_n_times_in_a_row_fires(
    alerts: Alerts, store: Store, clock: ManualClock
) -> None:
    def skip() -> None:
        store.workload_stats.record_skip(
            SkipRecord(name="backup", at_us=clock.now_us(), reason=SkipReason.OVERLAP)
        )

    with Receiver() as receiver:
        _setup(alerts, receiver, "job_skipped", threshold=3)
        skip()  # seen before the first pass: not part of the streak the evaluator counts
        _pass(alerts, clock)
        skip()
        skip()
        _pass(alerts, clock)
        assert receiver.requests() == []
        skip()
        _pass(alerts, clock)
    got = [(r.body["kind"], r.body["title"]) for r in receiver.requests()]
    assert got == [("firing", "job backup was skipped 3 times in a row")]


def test_a_rule_switched_off_closes_its_incidents_without_a_word(
    scripted: tuple[Alerts, Scripted], clock: ManualClock
) -> None:
    alerts, finder = scripted
    with Receiver() as receiver:
        _setup(alerts, receiver, "job_failed")
        [rule] = alerts.rules.list()
        finder.now = {"job:a": "1"}
        _pass(alerts, clock)
        alerts.rules.switch(rule.id, False, actor="user:alice")
        clock.advance(timedelta(minutes=1))
        _pass(alerts, clock)
        alerts.rules.switch(rule.id, True, actor="user:alice")
        _pass(alerts, clock)  # still holds: news again
    assert [r.body["kind"] for r in receiver.requests()] == ["firing", "firing"]
