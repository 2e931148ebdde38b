"""Fixtures of the schedule runner's tests: a store, a fleet of real stand-in servers, the
schedule service, all on a manual clock. Import the fixtures into a test module with
``from decider.schedulekit import ...`` (tests/ is on pytest's pythonpath)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support import at, standin_keys

from dgxmm.clock import ManualClock
from dgxmm.decider.schedules.service import ScheduleService
from dgxmm.errors import Busy
from dgxmm.fleet import BackendKind, Fleet, Gpu, GpuInventory, HttpTimeouts, InventorySource
from dgxmm.store import Store

__all__ = ["Kit", "kit", "standin_keys"]

TIMEOUTS = HttpTimeouts(connect_s=5.0, probe_s=10.0, metrics_s=20.0, action_s=120.0)
# A Wednesday; Berlin is at +02:00 in June.
START = "2026-06-03T12:00:00+02:00"


class Kit:
    """One test's store, fleet and schedule service, and helpers to drive them."""

    def __init__(self, tmp_path: Path, db: Path | None = None) -> None:
        """Open the store at ``db`` (the ``fresh_db`` fixture's), else a new file in tmp_path."""
        self.tmp_path = tmp_path
        self.clock = ManualClock(at(START))
        self.store = Store.open(db or tmp_path / "dgxmm.db", clock=self.clock)
        self.inventory = GpuInventory(
            gpus=(Gpu(index=0, name="H100", memory_gib=80.0),),
            source=InventorySource.CONFIGURATION,
        )
        self.fleets: list[Fleet] = []
        self.services: list[ScheduleService] = []
        self.fleet, self.schedules = self.restart()

    def restart(self) -> tuple[Fleet, ScheduleService]:
        """Build a fleet and a schedule service on the store, as a restarted dgxmm would."""
        fleet = Fleet(self.store, inventory=self.inventory, clock=self.clock,
                      http_timeouts=TIMEOUTS, stop_grace_s=5.0)  # fmt: skip
        self.fleets.append(fleet)
        self.fleet, self.schedules = fleet, ScheduleService(self.store, fleet, clock=self.clock)
        self.services.append(self.schedules)
        return self.fleet, self.schedules

    def deployment(self, name: str, *args: str, start: bool = True, **keys: Any) -> int:
        """Create a stand-in deployment (started unless told otherwise); return its id."""
        keys = standin_keys(name, *args, time_zone="Europe/Berlin", **keys)
        created = self.fleet.deployments.create(**keys, actor="user:alice")
        if start:
            self.fleet.deployer.start(created.id, actor="user:alice")
        return created.id

    def state(self, deployment_id: int) -> str:
        return self.fleet.deployments.get(deployment_id).state.value

    def url(self, deployment_id: int) -> str:
        return self.fleet.backends.of(self.fleet.deployments.get(deployment_id)).base_url

    def chat(self, deployment_id: int) -> None:
        """Send one chat completion and wait for its answer."""
        deployment = self.fleet.deployments.get(deployment_id)
        response = httpx.post(
            f"{self.url(deployment_id)}/v1/chat/completions",
            json={"model": deployment.model, "messages": [{"role": "user", "content": "hi"}]},
            timeout=60,
        )
        assert response.status_code == 200, response.text

    def chat_in_background(self, deployment_id: int) -> threading.Thread:
        """Start a chat completion on another thread (the stand-in holds it for its latency)."""
        thread = threading.Thread(target=self.chat, args=(deployment_id,), daemon=True)
        thread.start()
        return thread

    def is_sleeping(self, deployment_id: int) -> bool:
        answer = httpx.get(f"{self.url(deployment_id)}/is_sleeping", timeout=30).json()
        return bool(answer["is_sleeping"])

    def close(self) -> None:
        last = self.fleets[-1]
        for deployment in last.deployments.list():
            if deployment.backend is BackendKind.PROCESS:
                last.backends.of(deployment).stop(grace_s=2.0)
        for schedules in self.services:  # actions under way meet their stopped servers
            assert schedules.drain(timeout_s=60), "a schedule's action outlived its server"
            schedules.close()
        for fleet in self.fleets:
            fleet.close()
        try:
            self.store.close()
        except Busy:
            self.store.flush_stats()


@pytest.fixture
def kit(tmp_path: Path, fresh_db: Path) -> Iterator[Kit]:
    made = Kit(tmp_path, fresh_db)
    yield made
    made.close()
