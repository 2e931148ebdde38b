"""Two instances on one PostgreSQL database: each message is sent once.

Both instances' alerts threads send at once, and both evaluate the same rule at the same
moments (as two lease holders would for a moment around a takeover): the receiver gets one
firing message, and each of twenty test messages exactly once.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from alerts.alertkit import KEY, LOOPBACK_ALLOWED, Receiver, Scripted
from support import wait_for

from dgxmm.alerts import Alerts, SendPolicy
from dgxmm.fleet import Fleet, GpuInventory, InventorySource
from dgxmm.store import Store

pytestmark = pytest.mark.postgres


def test_each_message_is_sent_once_by_one_of_two_instances(tmp_path: Path, pg_url: str) -> None:
    stores = [Store.open(pg_url, data_dir=tmp_path / name) for name in ("a", "b")]
    empty = GpuInventory(gpus=(), source=InventorySource.CONFIGURATION)
    fleets = [Fleet(store, inventory=empty) for store in stores]
    finders = [Scripted(), Scripted()]
    policy = SendPolicy(timeout_s=2.0, first_retry_s=0.2)
    instances = [
        Alerts(
            store,
            fleet,
            key=KEY,
            policy=policy,
            conditions=finder,
            poll_seconds=0.01,
            destinations=LOOPBACK_ALLOWED,
        )
        for store, fleet, finder in zip(stores, fleets, finders, strict=True)
    ]
    first = instances[0]
    try:
        with Receiver() as receiver:
            channel, receiver.secret = first.channels.create(
                {"name": "ops", "url": receiver.url}, actor="user:alice"
            )
            first.rules.create(
                {"name": "watch", "condition": "deployment_failed", "channels": ["ops"]},
                actor="user:alice",
            )
            for alerts in instances:
                alerts.start()
            for _ in range(20):
                first.test(channel.id, actor="user:alice")
            # Both evaluate at the same instants, the condition holding on both.
            for finder in finders:
                finder.now = {"deployment:llama": "1"}
            go = threading.Barrier(2)

            def evaluate(alerts: Alerts) -> None:
                for _ in range(5):
                    go.wait(timeout=10)
                    alerts.evaluator.evaluate(alerts.clock.now_us())

            racers = [threading.Thread(target=evaluate, args=(a,)) for a in instances]
            for racer in racers:
                racer.start()
            for racer in racers:
                racer.join(timeout=30)
            wait_for(lambda: len(receiver.requests()) >= 21, "21 requests", timeout_s=30)
            time.sleep(0.5)  # a duplicate, if one were sent, would arrive by now
            got = receiver.requests()
            attempts = [a for e in first.deliveries.log() for a in e.attempts]
    finally:
        for alerts in instances:
            alerts.stop()
        for fleet in fleets:
            fleet.close()
        for store in stores:
            store.close()
    kinds = Counter(r.body["kind"] for r in got)
    assert kinds == {"test": 20, "firing": 1}
    assert len({r.body["id"] for r in got}) == 21  # every message once
    assert all(r.signed for r in got)
    # One attempt each, by one instance or the other: the claims kept them apart.
    assert len(attempts) == 21
    assert {a.instance for a in attempts} <= {stores[0].instance, stores[1].instance}
