"""One slow receiver never holds another channel's delivery up: each channel has its lane.

A trickling receiver answers its head a byte at a time: no single read is slow, the whole
answer is. Beside it a healthy receiver, both real sockets on 127.0.0.1. An attempt has one
deadline for all of it; the healthy channel's message goes out while the slow one's attempt
is still under way; removing the slow channel stops its attempt.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from alerts.alertkit import KEY, LOOPBACK_ALLOWED, Receiver, Trickler
from support import wait_for

from dgxmm.alerts import Alerts, AttemptOutcome, DeliveryState, SendPolicy
from dgxmm.clock import ManualClock
from dgxmm.fleet import Fleet
from dgxmm.store import Store


def test_it_gives_an_attempt_one_deadline_for_all_of_it(alerts: Alerts) -> None:
    # 40 bytes at 0.1 s each: a 4 s answer whose every read is quick, against a 0.5 s deadline.
    with Trickler(every_s=0.1, head_bytes=40) as slow:
        channel, _ = alerts.channels.create({"name": "slow", "url": slow.url}, actor="user:a")
        delivery = alerts.test(channel.id, actor="user:alice")
        alerts.sender.send_due()
        wait_for(lambda: slow.hung_up, "the sender to hang up on the trickle", timeout_s=10)
        assert slow.completed == 0
    [attempt] = alerts.deliveries.get(delivery).attempts
    assert (attempt.outcome, attempt.status_code) == (AttemptOutcome.RETRIED, None)
    assert attempt.error == "no answer within 0.5 s"


@pytest.fixture
def patient(store: Store, fleet: Fleet, clock: ManualClock) -> Iterator[Alerts]:
    """Alerts on their own thread with a long deadline: only a lane can keep a channel free."""
    policy = SendPolicy(timeout_s=30.0)
    made = Alerts(
        store, fleet, key=KEY, clock=clock, policy=policy, poll_seconds=0.05,
        destinations=LOOPBACK_ALLOWED,
    )  # fmt: skip
    made.start()
    yield made
    made.stop()


def test_a_trickling_receiver_never_delays_another_channel(patient: Alerts) -> None:
    alerts = patient
    with Trickler(every_s=0.2, head_bytes=400) as slow, Receiver() as healthy:
        stuck, _ = alerts.channels.create({"name": "slow", "url": slow.url}, actor="user:a")
        ops, healthy.secret = alerts.channels.create(
            {"name": "ops", "url": healthy.url}, actor="user:a"
        )
        alerts.test(stuck.id, actor="user:alice")
        wait_for(slow.under_way, "the slow channel's attempt to be under way", timeout_s=10)
        first = alerts.test(ops.id, actor="user:alice")
        wait_for(healthy.requests, "the healthy channel's message", timeout_s=10)
        assert slow.under_way() == 1  # the slow attempt is still going on beside it
        second = alerts.test(ops.id, actor="user:alice")
        wait_for(lambda: len(healthy.requests()) == 2, "its second message", timeout_s=10)

        def both_sent() -> bool:
            states = {alerts.deliveries.get(d).delivery.state for d in (first, second)}
            return states == {DeliveryState.SENT}

        wait_for(both_sent, "the healthy deliveries recorded as sent", timeout_s=10)
        # Removed, the slow channel's attempt stops now, not at its 30 s deadline.
        alerts.channels.remove(stuck.id, actor="user:alice")
        wait_for(lambda: slow.hung_up, "the removed channel's attempt to stop", timeout_s=10)
        assert slow.completed == 0
        wait_for(lambda: stuck.id not in alerts.lanes.busy(), "its lane to end", timeout_s=10)
    assert all(r.signed for r in healthy.requests())
