"""The schedule runner: one pass over 10,000 schedules, and two hours of passes with slow actions.

The schedules live in a real SQLite store and go through the real ``ScheduleService`` (slot
computation, the deferral rules, one committed record per slot run). The fleet behind it is
an in-memory double: every deployment is running and idle, and the deployer's sleep / stop /
wake / start return at once, so the figures are the runner's own cost, not a model server's.
Targets of issue 6: under 1 s with nothing due, under 10 s with 1,000 due.

The fault mix (issue 12): a sleep and a wake schedule for each of 1,000 deployments, their
slots spread over two hours; 10 % of the actions take 10 minutes (of the manual clock: a
slow action returns once the clock has moved 10 minutes past its start). A pass every
simulated minute for two hours; printed: the share of due slots whose action began inside
their 15-minute window (target 100 %) and the longest pass (target under 1 s).

    .venv/bin/python benchmarks/runner.py [--schedules 10000] [--due 1000] [--fleet 1000]
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
from dgxmm.fleet import DeploymentState, EventOutcome  # noqa: E402
from dgxmm.fleet.activity import RequestActivity  # noqa: E402
from dgxmm.fleet.deployments.tables import deployments  # noqa: E402
from dgxmm.store import Store, writing  # noqa: E402
from dgxmm.telemetry import NO_TELEMETRY  # noqa: E402


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


@dataclass(frozen=True)
class _Done:
    outcome: EventOutcome = EventOutcome.DONE


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
        self.telemetry = NO_TELEMETRY
        self.activity = RequestActivity(ManualClock(0))  # no proxy: no requests through it

    def add_removal_hook(self, hook: Any) -> None:
        pass

    def add_late_finish_hook(self, hook: Any) -> None:
        pass  # no metrics pass here: nothing is found asleep late

    def get(self, deployment_id: int) -> _Deployment:
        return self.rows[deployment_id]

    def lock(self, deployment_id: int) -> threading.RLock:
        return self.locks.setdefault(deployment_id, threading.RLock())

    def sample_now(self, deployment_id: int) -> _Sample:
        return _Sample()

    def last_request_at(self, deployment_id: int) -> None:
        return None

    def _act(self, name: str, deployment_id: int, actor: str, state: DeploymentState) -> _Done:
        self.actions.append((name, deployment_id, actor))
        self.rows[deployment_id].state = state
        return _Done()

    def sleep(self, deployment_id: int, *, actor: str) -> _Done:
        return self._act("sleep", deployment_id, actor, DeploymentState.SLEEPING)

    def stop(self, deployment_id: int, *, actor: str) -> _Done:
        return self._act("stop", deployment_id, actor, DeploymentState.STOPPED)

    def wake(self, deployment_id: int, *, actor: str, plans: bool = True) -> _Done:
        return self._act("wake", deployment_id, actor, DeploymentState.RUNNING)

    def start(self, deployment_id: int, *, actor: str, plans: bool = True) -> _Done:
        return self._act("start", deployment_id, actor, DeploymentState.RUNNING)

    def record(self, *args: Any, **keys: Any) -> None:  # events.record and audit.record
        pass

    def raise_insight(self, *args: Any, **keys: Any) -> None:
        pass


@dataclass
class SlowFleet(MemoryFleet):
    """A memory fleet whose actions on ``slow`` deployments last 10 minutes of ``clock``."""

    clock: ManualClock = field(default_factory=lambda: ManualClock(0))
    slow: set[int] = field(default_factory=set)
    began: dict[str, int] = field(default_factory=dict)  # actor -> when its action began
    moved: threading.Condition = field(default_factory=threading.Condition)

    def _act(self, name: str, deployment_id: int, actor: str, state: DeploymentState) -> _Done:
        start = self.clock.now_us()
        self.began[actor + ":" + name] = start
        if deployment_id in self.slow:
            with self.moved:
                self.moved.wait_for(lambda: self.clock.now_us() >= start + 10 * MINUTE_US)
        return super()._act(name, deployment_id, actor, state)

    def tick(self, now: int) -> None:
        with self.moved:
            self.clock.set(now)
            self.moved.notify_all()


MINUTE_US = 60_000_000


def fault_mix(count: int) -> None:
    """Two simulated hours of passes, a minute apart, with 10 % of the actions slow."""
    noon = 1_780_480_800_000_000  # 2026-06-03T12:00 in Berlin
    with tempfile.TemporaryDirectory(prefix="dgxmm-runner-") as temporary:
        store = Store.open(Path(temporary) / "dgxmm.db", clock=ManualClock(noon))
        with writing(store.engine) as connection:
            connection.execute(insert(deployments), _deployment_rows(count))
            rows = []
            for i in range(count):
                for action, hour in (("sleep", 12), ("wake", 13)):
                    rows.append({
                        "id": 1 + 2 * i + (action == "wake"), "deployment_id": 1 + i,
                        "action": action, "days": 127, "at_time": f"{hour}:{i % 50:02d}",
                        "time_zone": "Europe/Berlin", "enabled": True, "creator": "bench",
                        "created_at": 0, "updated_at": 0,
                    })  # fmt: skip
            connection.execute(insert(deployment_schedules), rows)
        fleet = SlowFleet(
            {i: _Deployment(i, f"d{i}") for i in range(1, count + 1)},
            clock=ManualClock(noon),
            slow={i for i in range(1, count + 1) if i % 10 == 0},
        )
        service = ScheduleService(store, fleet, clock=fleet.clock)  # type: ignore[arg-type]
        longest = 0.0
        for minute in range(120):
            now = noon + minute * MINUTE_US
            fleet.tick(now)
            started = time.perf_counter()
            pending = service.start_pass(now)
            longest = max(longest, time.perf_counter() - started)
            for run in pending:  # the quick ones finish before the next minute, as they would
                if run.deployment_id not in fleet.slow:
                    run.future.result(timeout=60)
        fleet.tick(noon + 130 * MINUTE_US)
        service.drain(timeout_s=120)
        service.close()
        store.close()
    inside = 0
    for i in range(count):
        for action, hour in (("sleep", 0), ("wake", 1)):
            slot = noon + (hour * 60 + i % 50) * MINUTE_US
            began = fleet.began.get(f"schedule:{1 + 2 * i + hour}:{action}")
            if began is not None and began - slot <= 15 * MINUTE_US:
                inside += 1
    share = inside / (2 * count)
    print(f"fault mix: {2 * count} due slots of {count} deployments over two simulated hours, "
          f"{len(fleet.slow) * 2} actions of 10 minutes")  # fmt: skip
    print(f"  acted on inside their window: {share:8.1%}   target 100 %: "
          f"{'ok' if share == 1 else 'MISSED'}")  # fmt: skip
    print(f"  longest pass:                 {longest:8.3f} s  target < 1 s: "
          f"{'ok' if longest < 1 else 'MISSED'}")  # fmt: skip


def _deployment_rows(count: int) -> list[dict[str, Any]]:
    return [
        {"id": i, "name": f"d{i}", "model": "m", "backend": "external",
         "base_url": "http://127.0.0.1:9", "gpus": "[0]", "memory_gib_awake": 1.0,
         "memory_gib_asleep": 0.0, "priority": 50, "time_zone": "Europe/Berlin",
         "startup_timeout_s": 60.0, "state": "running", "state_since": 0,
         "created_at": 0, "updated_at": 0}
        for i in range(1, count + 1)
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--schedules", type=int, default=10_000)
    parser.add_argument("--due", type=int, default=1_000)
    parser.add_argument("--fleet", type=int, default=1_000, help="deployments of the fault mix")
    options = parser.parse_args()
    fault_mix(options.fleet)
    now = 1_780_480_800_000_000  # 2026-06-03T10:00:00Z, a Wednesday (12:00 in Berlin)
    with tempfile.TemporaryDirectory(prefix="dgxmm-runner-") as temporary:
        store = Store.open(Path(temporary) / "dgxmm.db", clock=ManualClock(now))
        deployment_count = max(1, options.schedules // 10)
        with writing(store.engine) as connection:
            connection.execute(insert(deployments), _deployment_rows(deployment_count))
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
