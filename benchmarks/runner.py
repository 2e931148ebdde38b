"""One pass of the schedule runner over 10,000 schedules: with nothing due, and with 1,000 due.

The schedules live in a real SQLite store and go through the real ``ScheduleService`` (slot
computation, the deferral rules, one committed record per slot run). The fleet behind it is
an in-memory double: every deployment is running and idle, and the deployer's sleep / stop /
wake / start return at once, so the figures are the runner's own cost, not a model server's.
Targets of issue 6: under 1 s with nothing due, under 10 s with 1,000 due.

    .venv/bin/python benchmarks/runner.py [--schedules 10000] [--due 1000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from sqlalchemy import insert  # noqa: E402

from dgxmm.clock import ManualClock  # noqa: E402
from dgxmm.decider.schedules.service import ScheduleService  # noqa: E402
from dgxmm.decider.tables import deployment_schedules  # noqa: E402
from dgxmm.fleet import DeploymentState  # noqa: E402
from dgxmm.fleet.tables import deployments  # noqa: E402
from dgxmm.store import Store, writing  # noqa: E402


@dataclass
class _Deployment:
    id: int
    name: str
    state: DeploymentState = DeploymentState.RUNNING


@dataclass
class _Sample:
    requests_running: int = 0
    requests_waiting: int = 0
    is_idle: bool = True


@dataclass
class MemoryFleet:
    """The parts of ``Fleet`` the runner uses, in memory, acting at once."""

    rows: dict[int, _Deployment]
    actions: list[tuple[str, int, str]] = field(default_factory=list)
    locks: dict[int, threading.RLock] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.deployments = self
        self.deployer = self
        self.metrics = self
        self.events = self
        self.audit = self
        self.insights = self

    def add_removal_hook(self, hook: Any) -> None:
        pass

    def get(self, deployment_id: int) -> _Deployment:
        return self.rows[deployment_id]

    def lock(self, deployment_id: int) -> threading.RLock:
        return self.locks.setdefault(deployment_id, threading.RLock())

    def sample_now(self, deployment_id: int) -> _Sample:
        return _Sample()

    def last_request_at(self, deployment_id: int) -> None:
        return None

    def _act(self, name: str, deployment_id: int, actor: str, state: DeploymentState) -> None:
        self.actions.append((name, deployment_id, actor))
        self.rows[deployment_id].state = state

    def sleep(self, deployment_id: int, *, actor: str) -> None:
        self._act("sleep", deployment_id, actor, DeploymentState.SLEEPING)

    def stop(self, deployment_id: int, *, actor: str) -> None:
        self._act("stop", deployment_id, actor, DeploymentState.STOPPED)

    def wake(self, deployment_id: int, *, actor: str, plans: bool = True) -> None:
        self._act("wake", deployment_id, actor, DeploymentState.RUNNING)

    def start(self, deployment_id: int, *, actor: str, plans: bool = True) -> None:
        self._act("start", deployment_id, actor, DeploymentState.RUNNING)

    def record(self, *args: Any, **keys: Any) -> None:  # events.record and audit.record
        pass

    def raise_insight(self, *args: Any, **keys: Any) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--schedules", type=int, default=10_000)
    parser.add_argument("--due", type=int, default=1_000)
    options = parser.parse_args()
    now = 1_780_480_800_000_000  # 2026-06-03T10:00:00Z, a Wednesday (12:00 in Berlin)
    with tempfile.TemporaryDirectory(prefix="dgxmm-runner-") as temporary:
        store = Store.open(Path(temporary) / "dgxmm.db", clock=ManualClock(now))
        deployment_count = max(1, options.schedules // 10)
        with writing(store.engine) as connection:
            connection.execute(
                insert(deployments),
                [
                    {"id": i, "name": f"d{i}", "model": "m", "backend": "external",
                     "base_url": "http://127.0.0.1:9", "gpus": "[0]", "memory_gib_awake": 1.0,
                     "memory_gib_asleep": 0.0, "priority": 50, "time_zone": "Europe/Berlin",
                     "startup_timeout_s": 60.0, "state": "running", "state_since": 0,
                     "created_at": 0, "updated_at": 0}
                    for i in range(1, deployment_count + 1)
                ],
            )  # fmt: skip
            rows = []
            for i in range(options.schedules):
                due = i < options.due
                rows.append({
                    "deployment_id": 1 + i % deployment_count,
                    "action": ("sleep", "stop", "wake", "start")[i % 4],
                    "days": 127,
                    # Due at 12:00 in Berlin; the others between 01:00 and 08:59.
                    "at_time": "12:00" if due else f"{1 + i % 8:02d}:{i % 60:02d}",
                    "time_zone": "Europe/Berlin", "enabled": True, "creator": "bench",
                    "created_at": 0, "updated_at": 0,
                })  # fmt: skip
            connection.execute(insert(deployment_schedules), rows)
        fleet = MemoryFleet({i: _Deployment(i, f"d{i}") for i in range(1, deployment_count + 1)})
        service = ScheduleService(store, fleet, clock=store.clock)  # type: ignore[arg-type]
        started = time.perf_counter()
        idle = service.run_pass(now - 3600 * 1_000_000)  # 11:00 in Berlin: nothing due
        idle_s = time.perf_counter() - started
        started = time.perf_counter()
        busy = service.run_pass(now + 30 * 1_000_000)  # 12:00:30 in Berlin
        busy_s = time.perf_counter() - started
        store.close()
    kinds: dict[str, int] = {}
    for run in busy:
        kinds[run.kind.value] = kinds.get(run.kind.value, 0) + 1
    print(f"one pass over {options.schedules} schedules ({deployment_count} deployments, SQLite "
          f"store, in-memory fleet)")  # fmt: skip
    print(f"  nothing due:   {idle_s:8.3f} s ({len(idle)} slot runs)      target < 1 s: "
          f"{'ok' if idle_s < 1 else 'MISSED'}")  # fmt: skip
    print(f"  {options.due} due:      {busy_s:8.3f} s ({len(busy)} slot runs: {kinds})  "
          f"target < 10 s: {'ok' if busy_s < 10 else 'MISSED'}")  # fmt: skip
    print(
        f"  per due slot:  {busy_s / max(1, len(busy)) * 1000:8.2f} ms (one committed record each)"
    )


if __name__ == "__main__":
    main()
