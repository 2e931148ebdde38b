"""Fixtures of the decider's profile and proposal tests (named for them: ``profile_*``).

``profile_store`` is a store on SQLite or PostgreSQL (each test that takes it runs on both);
``profile_fleet``, ``profile_schedules`` and ``proposals`` are the services on it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support import at, copy_migrated

from dgxmm.clock import ManualClock
from dgxmm.decider.profiles import ProfileService
from dgxmm.decider.proposals.service import ProposalService
from dgxmm.decider.schedules.service import ScheduleService
from dgxmm.errors import Busy
from dgxmm.fleet import Fleet, Gpu, GpuInventory, InventorySource
from dgxmm.store import Store

PROFILE_NOW = "2026-06-01T00:00:00+00:00"  # a Monday


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    ]
)
def profile_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the test's store lives: a new SQLite file, or a fresh PostgreSQL database.

    Either is migrated already: a copy of the session's template (``tests/conftest.py``)."""
    if request.param == "sqlite":
        template: Path = request.getfixturevalue("migrated_template")
        return str(copy_migrated(template, tmp_path / "data" / "store.db"))
    url: str = request.getfixturevalue("pg_store_url")
    return url


@pytest.fixture
def profile_clock() -> ManualClock:
    """The services' clock."""
    return ManualClock(at(PROFILE_NOW))


@pytest.fixture
def profile_store(
    profile_target: str, profile_clock: ManualClock, tmp_path: Path
) -> Iterator[Store]:
    """An open store on the test's database."""
    store = Store.open(profile_target, clock=profile_clock, data_dir=tmp_path / "data")
    yield store
    try:
        store.close()
    except Busy:
        store.flush_stats()


@pytest.fixture
def profile_service(
    profile_store: Store, profile_fleet: Fleet, profile_clock: ManualClock
) -> ProfileService:
    """Traffic profiles on the test's store."""
    return ProfileService(profile_store, profile_fleet.deployments, clock=profile_clock)


@pytest.fixture
def profile_fleet(profile_store: Store, profile_clock: ManualClock) -> Iterator[Fleet]:
    """A fleet with one configured GPU (it drives nothing: the deployments are stopped)."""
    inventory = GpuInventory(
        gpus=(Gpu(index=0, name="H100", memory_gib=80.0),),
        source=InventorySource.CONFIGURATION,
        note="configured for the tests",
    )
    fleet = Fleet(profile_store, inventory=inventory, clock=profile_clock)
    yield fleet
    fleet.close()


@pytest.fixture
def profile_schedules(
    profile_store: Store, profile_fleet: Fleet, profile_clock: ManualClock
) -> ScheduleService:
    """Deployment schedules on the test's store."""
    return ScheduleService(profile_store, profile_fleet, clock=profile_clock)


@pytest.fixture
def proposals(
    profile_store: Store,
    profile_service: ProfileService,
    profile_fleet: Fleet,
    profile_schedules: ScheduleService,
    profile_clock: ManualClock,
) -> ProposalService:
    """Schedule proposals on the test's store."""
    return ProposalService(
        profile_store,
        profile_fleet,
        profile_schedules,
        profiles=profile_service,
        clock=profile_clock,
    )
