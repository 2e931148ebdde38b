"""A live server for the command line: the whole app, its host ticking, on a loopback port."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli.clikit import Live
from support import copy_migrated, serving

from dgxmm.alerts import Alerts, Destinations, KeyFile, SendPolicy
from dgxmm.decider.proposals.service import ProposalService
from dgxmm.decider.schedules.service import ScheduleService
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


@pytest.fixture
def live(tmp_path: Path, migrated_template: Path) -> Iterator[Live]:
    data = tmp_path / "data"
    data.mkdir()
    store = Store.open(copy_migrated(migrated_template, data / "dgxmm.db"), data_dir=data)
    with store.engine.begin() as connection:
        connection.exec_driver_sql("CREATE TABLE notes (id INTEGER PRIMARY KEY, label TEXT)")
    inventory = GpuInventory(
        gpus=(Gpu(index=0, name="H100", memory_gib=80.0),), source=InventorySource.CONFIGURATION
    )
    fleet = Fleet(store, inventory=inventory)
    schedules = ScheduleService(store, fleet)
    proposals = ProposalService(store, fleet, schedules)
    tokens = Tokens(store.engine, store.clock)
    token_file = tmp_path / "token"
    token_file.write_text(tokens.create(Role.ADMIN, "alice") + "\n")
    host = Host(store, time_zone="Europe/Berlin", tick_seconds=0.2, stop_grace_seconds=5)
    alerts = Alerts(
        store,
        fleet,
        key=KeyFile(data, environ={}),  # alerts.key in the data directory, as serve keeps it
        schedules=schedules,
        policy=SendPolicy(timeout_s=1.0),
        poll_seconds=0.1,
        destinations=Destinations(allow_private=True),  # the tests' receivers: 127.0.0.1
    )
    services = Services(
        host=host,
        tokens=tokens,
        fleet=fleet,
        schedules=schedules,
        proposals=proposals,
        alerts=alerts,
    )
    app = create_app(services, [FLEET_ROUTES, SCHEDULE_ROUTES, PROPOSAL_ROUTES, ALERT_ROUTES])
    host.start()
    alerts.start()
    try:
        with serving(app) as url:
            yield Live(url, token_file, data, store, host, fleet, schedules, proposals, alerts)
    finally:
        alerts.stop()
        host.stop()
        schedules.close()
        fleet.close()
        store.close()
