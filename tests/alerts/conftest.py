"""An ``Alerts`` over a SQLite store and a fleet, on a manual clock; its thread not started.

Tests drive it by hand (``alerts.step()``, ``alerts.sender.send_due()``) and move the clock,
so retries and quiet periods are exact; the thread's own tests start it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alerts.alertkit import KEY, LOOPBACK_ALLOWED, POLICY
from support import at

from dgxmm.alerts import Alerts
from dgxmm.clock import ManualClock
from dgxmm.errors import Busy
from dgxmm.fleet import Fleet, Gpu, GpuInventory, InventorySource
from dgxmm.store import Store

START = "2026-06-01T10:00:00+00:00"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(at(START))


@pytest.fixture
def store(fresh_db: Path, clock: ManualClock) -> Iterator[Store]:
    opened = Store.open(fresh_db, clock=clock)
    yield opened
    try:
        opened.close()
    except Busy:
        opened.flush_stats()


@pytest.fixture
def fleet(store: Store, clock: ManualClock) -> Iterator[Fleet]:
    inventory = GpuInventory(
        gpus=(Gpu(index=0, name="H100", memory_gib=80.0),),
        source=InventorySource.CONFIGURATION,
        note="configured for the tests",
    )
    made = Fleet(store, inventory=inventory, clock=clock, stop_grace_s=2.0)
    yield made
    made.close()


@pytest.fixture
def alerts(store: Store, fleet: Fleet, clock: ManualClock) -> Iterator[Alerts]:
    made = Alerts(store, fleet, key=KEY, clock=clock, policy=POLICY, destinations=LOOPBACK_ALLOWED)
    yield made
    made.stop()
