"""Sending never holds a tick up: the host's pulse only wakes the alerts' own thread.

A real host ticks and pulses every 50 ms on the machine's clock while the alerts' thread is
stuck in a send to a receiver that stalls; the pulses keep their pace, each call to
``Alerts.pulse`` returns at once, and the stalled delivery is retried and sent.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from alerts.alertkit import KEY, LOOPBACK_ALLOWED, Receiver, Scripted
from support import wait_for

from dgxmm.alerts import Alerts, SendPolicy
from dgxmm.errors import Busy
from dgxmm.fleet import Fleet, GpuInventory, InventorySource
from dgxmm.server import Host
from dgxmm.store import Store


@pytest.fixture
def live_store(fresh_db: Path) -> Iterator[Store]:
    opened = Store.open(fresh_db)
    yield opened
    try:
        opened.close()
    except Busy:
        opened.flush_stats()


def test_a_stalled_receiver_never_delays_a_tick(live_store: Store) -> None:
    fleet = Fleet(live_store, inventory=GpuInventory(gpus=(), source=InventorySource.CONFIGURATION))
    finder = Scripted()
    policy = SendPolicy(timeout_s=1.0, first_retry_s=0.2, max_retry_s=1.0)
    alerts = Alerts(live_store, fleet, key=KEY, policy=policy, conditions=finder,
                    poll_seconds=0.05, destinations=LOOPBACK_ALLOWED)  # fmt: skip
    pulses: list[float] = []
    pulse_costs: list[float] = []

    def timed_pulse(now: int) -> None:
        began = time.monotonic()
        alerts.pulse(now)
        pulse_costs.append(time.monotonic() - began)
        pulses.append(began)

    host = Host(live_store, time_zone="UTC", tick_seconds=0.05, pulses=[timed_pulse],
                pulse_seconds=0.05)  # fmt: skip
    with Receiver(stall_once_s=3.0) as receiver:
        _, receiver.secret = alerts.channels.create(
            {"name": "ops", "url": receiver.url}, actor="user:alice"
        )
        alerts.rules.create(
            {"name": "watch", "condition": "job_failed", "channels": ["ops"]}, actor="user:alice"
        )
        finder.now = {"job:backup": "1"}
        host.start()
        alerts.start()
        try:
            wait_for(receiver.requests, "the first (stalled) request", timeout_s=30)
            stalled_at = time.monotonic()
            time.sleep(0.8)  # the alerts' thread is waiting for the stalled receiver now
            during = [t for t in pulses if t >= stalled_at]
            wait_for(
                lambda: [r for r in receiver.requests() if r.status == 200],
                "the retried request",
                timeout_s=30,
            )
        finally:
            alerts.stop()
            host.stop()
            fleet.close()
    # The pulses kept their 50 ms pace while the send was stuck for a whole second (slack for
    # a busy machine: a pulse that waited for the send would leave a gap of a second).
    assert len(during) >= 5
    assert max(b - a for a, b in itertools.pairwise(during)) < 0.6
    assert max(pulse_costs) < 0.1
    [entry] = alerts.deliveries.log()
    assert [(a.outcome.value, a.status_code) for a in entry.attempts] == [
        ("retried", None),
        ("sent", 200),
    ]
    assert [r.status for r in receiver.requests()] == [0, 200]
