"""Fleets on a SQLite store in a temp dir, with a manual clock and two configured GPUs.

Stand-in servers are real processes; every process deployment a test started is stopped
after it, and any process left over is killed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from fleet.fleetkit import TEST_TIMEOUTS, ensure_gone
from support import at

from dgxmm.clock import ManualClock
from dgxmm.errors import Busy
from dgxmm.fleet import BackendKind, Fleet, Gpu, GpuInventory, InventorySource
from dgxmm.fleet.backends.pidfile import read_pid_file
from dgxmm.server import FLEET_ROUTES, Host, Role, Services, Tokens, create_app
from dgxmm.store import Store

START = "2026-06-01T10:00:30+00:00"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(at(START))


@pytest.fixture
def inventory() -> GpuInventory:
    return GpuInventory(
        gpus=(
            Gpu(index=0, name="H100", memory_gib=80.0),
            Gpu(index=1, name="H100", memory_gib=80.0),
        ),
        source=InventorySource.CONFIGURATION,
        note="configured for the tests",
    )


@pytest.fixture
def store(fresh_db: Path, clock: ManualClock) -> Iterator[Store]:
    opened = Store.open(fresh_db, clock=clock)
    yield opened
    try:
        opened.close()
    except Busy:
        opened.flush_stats()


@pytest.fixture
def make_fleet(
    store: Store, inventory: GpuInventory, clock: ManualClock
) -> Iterator[Callable[..., Fleet]]:
    """Build fleets on the test's store (a second one is a dgxmm restart)."""
    made: list[Fleet] = []

    def make(**options: Any) -> Fleet:
        options.setdefault("inventory", inventory)
        options.setdefault("clock", clock)
        options.setdefault("http_timeouts", TEST_TIMEOUTS)
        options.setdefault("stop_grace_s", 5.0)
        fleet = Fleet(store, **options)
        made.append(fleet)
        return fleet

    yield make
    if made:
        last = made[-1]
        for deployment in last.deployments.list():
            if deployment.backend is not BackendKind.PROCESS:
                continue
            record = read_pid_file(last.backends.run_dir(deployment.id) / "server.pid")
            last.backends.of(deployment).stop(grace_s=2.0)
            if record is not None:
                ensure_gone(record.pid)
    for fleet in made:
        fleet.close()
        fleet.backends.reap()  # the servers it started and another fleet stopped


@pytest.fixture
def fleet(make_fleet: Callable[..., Fleet]) -> Fleet:
    return make_fleet()


@pytest.fixture
def host(store: Store, clock: ManualClock, fleet: Fleet) -> Iterator[Host]:
    made = Host(store, time_zone="Europe/Berlin", clock=clock, system_jobs=fleet.system_jobs())
    made.tick()  # the first tick only plans
    yield made
    made.stop()


@pytest.fixture
def tokens(store: Store) -> Tokens:
    return Tokens(store.engine, store.clock)


def _client(host: Host, tokens: Tokens, fleet: Fleet, role: Role, name: str) -> TestClient:
    app = create_app(Services(host=host, tokens=tokens, fleet=fleet), [FLEET_ROUTES])
    client = TestClient(app)
    client.headers["Authorization"] = f"Bearer {tokens.create(role, name)}"
    return client


@pytest.fixture
def client(host: Host, tokens: Tokens, fleet: Fleet) -> Iterator[TestClient]:
    """An admin's API client (alice)."""
    with _client(host, tokens, fleet, Role.ADMIN, "alice") as made:
        yield made


@pytest.fixture
def viewer(host: Host, tokens: Tokens, fleet: Fleet) -> Iterator[TestClient]:
    """A viewer's API client (victor)."""
    with _client(host, tokens, fleet, Role.VIEWER, "victor") as made:
        yield made
