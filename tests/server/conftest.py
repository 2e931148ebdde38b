"""A store, a host (ticked by hand), tokens and an API client, on SQLite in a temp dir.

``client`` and ``viewer`` serve the jobs engine's and the store's routes; ``full_admin`` and
``full_viewer`` serve every layer's (a fleet with one configured GPU, its schedules and
proposals), for the tests about the whole API.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from support import at

from dgxmm.alerts import Alerts, Destinations
from dgxmm.clock import ManualClock
from dgxmm.decider import ProposalService, ScheduleService
from dgxmm.errors import Busy
from dgxmm.fleet import Fleet, Gpu, GpuInventory, InventorySource
from dgxmm.server import (
    ALERT_ROUTES,
    FLEET_ROUTES,
    PROPOSAL_ROUTES,
    SCHEDULE_ROUTES,
    Host,
    Role,
    Services,
    Tokens,
    create_app,
)
from dgxmm.store import Store

START = "2026-06-01T10:00:30+02:00"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(at(START))


@pytest.fixture
def store(fresh_db: Path, clock: ManualClock) -> Iterator[Store]:
    opened = Store.open(fresh_db, clock=clock)
    with opened.engine.begin() as connection:
        connection.exec_driver_sql(
            "CREATE TABLE notes (id INTEGER PRIMARY KEY, label TEXT NOT NULL)"
        )
    yield opened
    try:
        opened.close()
    except Busy:
        opened.flush_stats()


@pytest.fixture
def host(store: Store, clock: ManualClock) -> Iterator[Host]:
    made = Host(store, time_zone="Europe/Berlin", clock=clock, stop_grace_seconds=5)
    made.tick()  # the first tick only plans
    yield made
    made.stop()


@pytest.fixture
def tokens(store: Store) -> Tokens:
    return Tokens(store.engine, store.clock)


@pytest.fixture
def admin_token(tokens: Tokens) -> str:
    return tokens.create(Role.ADMIN, "alice")


@pytest.fixture
def viewer_token(tokens: Tokens) -> str:
    return tokens.create(Role.VIEWER, "victor")


@pytest.fixture
def client(host: Host, tokens: Tokens, admin_token: str) -> Iterator[TestClient]:
    with TestClient(create_app(Services(host=host, tokens=tokens))) as made:
        made.headers["Authorization"] = f"Bearer {admin_token}"
        yield made


@pytest.fixture
def viewer(host: Host, tokens: Tokens, viewer_token: str) -> Iterator[TestClient]:
    with TestClient(create_app(Services(host=host, tokens=tokens))) as made:
        made.headers["Authorization"] = f"Bearer {viewer_token}"
        yield made


@pytest.fixture
def fleet(store: Store, clock: ManualClock) -> Iterator[Fleet]:
    """A fleet with one configured GPU; what it started is stopped after the test."""
    inventory = GpuInventory(
        gpus=(Gpu(index=0, name="H100", memory_gib=80.0),),
        source=InventorySource.CONFIGURATION,
        note="configured for the tests",
    )
    made = Fleet(store, inventory=inventory, clock=clock, stop_grace_s=2.0)
    yield made
    for deployment in made.deployments.list():
        made.backends.of(deployment).stop(grace_s=2.0)
    made.close()
    made.backends.reap()


@pytest.fixture
def alerts(store: Store, fleet: Fleet, clock: ManualClock) -> Iterator[Alerts]:
    """The alerts service, its thread not started (tests send with ``alerts.step()``)."""
    made = Alerts(
        store,
        fleet,
        key=bytes(range(32)),
        clock=clock,
        destinations=Destinations(allow_private=True),  # the tests' receivers: 127.0.0.1
    )
    yield made
    made.stop()


@pytest.fixture
def full_app(
    host: Host, tokens: Tokens, fleet: Fleet, store: Store, clock: ManualClock, alerts: Alerts
) -> FastAPI:
    """The app with every layer's routes, as ``dgxmm serve`` builds it."""
    schedules = ScheduleService(store, fleet, clock=clock)
    proposals = ProposalService(store, fleet, schedules, clock=clock)
    services = Services(
        host=host,
        tokens=tokens,
        fleet=fleet,
        schedules=schedules,
        proposals=proposals,
        alerts=alerts,
    )
    return create_app(services, [FLEET_ROUTES, SCHEDULE_ROUTES, PROPOSAL_ROUTES, ALERT_ROUTES])


@pytest.fixture
def full_admin(full_app: FastAPI, admin_token: str) -> Iterator[TestClient]:
    with TestClient(full_app) as made:
        made.headers["Authorization"] = f"Bearer {admin_token}"
        yield made


@pytest.fixture
def full_viewer(full_app: FastAPI, viewer_token: str) -> Iterator[TestClient]:
    with TestClient(full_app) as made:
        made.headers["Authorization"] = f"Bearer {viewer_token}"
        yield made
