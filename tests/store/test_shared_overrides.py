"""Two instances on one database: a system job's switch and schedule, and
``schedules.paused_all``, set through one are in force in the other at its next sync or pass.

Each "instance" is a ``Store`` of its own with its own data directory (another machine's
sidecar), on the one database of the contract suite (SQLite and PostgreSQL).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url
from store.storekit import Place, ctx

from dgxmm.clock import ManualClock
from dgxmm.decider.schedules.service import ScheduleService
from dgxmm.errors import InvalidInput
from dgxmm.fleet import Fleet, Gpu, GpuInventory, InventorySource
from dgxmm.jobs import CronSchedule, Scheduler, WorkloadStats
from dgxmm.server import Host
from dgxmm.store import Store


def two(open_store: Callable[..., Store], tmp_path: Path) -> tuple[Store, Store]:
    """The holder and a standby, each with a data directory of its own."""
    return open_store(), open_store(data_dir=tmp_path / "elsewhere")


def test_a_system_job_switched_off_through_one_instance_is_off_in_the_other_at_its_sync(
    open_store: Callable[..., Store], tmp_path: Path
) -> None:
    holder, standby = two(open_store, tmp_path)
    ticking, asked = holder.scheduler(), standby.scheduler()
    asked.set_enabled("stats_flush", False)
    asked.set_enabled("compact", True)
    holder.sync(ticking)
    assert (ticking.get("stats_flush").enabled, ticking.get("compact").enabled) == (False, True)
    asked.set_enabled("stats_flush", True)  # the built-in switch again
    holder.sync(ticking)
    assert ticking.get("stats_flush").enabled is True


def test_a_schedule_override_set_through_one_instance_is_in_force_in_the_other_at_its_sync(
    open_store: Callable[..., Store], tmp_path: Path
) -> None:
    holder, standby = two(open_store, tmp_path)
    ticking, asked = holder.scheduler(), standby.scheduler()
    version = holder.catalog_version()
    asked.set_schedule("compact", CronSchedule.parse("30 2 * * *"))
    assert holder.catalog_version() > version  # what tells a host to sync
    holder.sync(ticking)
    assert str(ticking.get("compact").schedule) == "30 2 * * *"
    asked.set_schedule("compact", None)
    holder.sync(ticking)
    assert str(ticking.get("compact").schedule) == "0 3 * * *"
    # A restarted instance (a new scheduler) has them from the database too.
    asked.set_schedule("runs_purge", CronSchedule.parse("0 5 * * *"))
    assert str(holder.scheduler().get("runs_purge").schedule) == "0 5 * * *"


def test_an_override_left_in_a_sidecar_by_an_older_version_moves_to_the_database_on_open(
    open_store: Callable[..., Store], place: Place, tmp_path: Path
) -> None:
    old = WorkloadStats()
    old.set_job_override("compact", schedule="15 1 * * *", enabled=True)
    sidecar = place.data_dir / "store.db.workload.json"
    if place.dialect == "postgresql":
        sidecar = place.data_dir / f"{make_url(place.target).database}.workload.json"
    sidecar.parent.mkdir(parents=True, exist_ok=True)
    sidecar.write_text(json.dumps(old.to_json()))
    upgraded = open_store()
    assert upgraded.workload_stats.job_overrides() == {}  # the stats hold none of their own
    other = open_store(data_dir=tmp_path / "elsewhere").scheduler()
    assert (str(other.get("compact").schedule), other.get("compact").enabled) == (
        "15 1 * * *",
        True,
    )
    upgraded.close()
    assert "15 1 * * *" not in sidecar.read_text()


def test_schedules_paused_all_set_on_a_standby_stops_the_holders_runner_at_its_next_pass(
    open_store: Callable[..., Store], clock: ManualClock, tmp_path: Path
) -> None:
    inventory = GpuInventory(
        gpus=(Gpu(index=0, name="H100", memory_gib=80.0),), source=InventorySource.CONFIGURATION
    )

    def service(store: Store) -> ScheduleService:
        return ScheduleService(store, Fleet(store, inventory=inventory, clock=clock), clock=clock)

    holder, standby = two(open_store, tmp_path)
    (runner,) = service(holder).system_jobs()
    assert runner.action(ctx("schedule_runner")) == "nothing due"
    service(standby).set_paused_all(True, actor="user:alice")
    assert runner.action(ctx("schedule_runner")) == "paused"


def test_a_hosts_next_tick_applies_what_another_instance_switched_and_scheduled(
    open_store: Callable[..., Store], clock: ManualClock, tmp_path: Path
) -> None:
    holder, standby = two(open_store, tmp_path)
    host = Host(holder, time_zone="UTC", clock=clock)
    host.tick()  # the first tick only plans
    asked = standby.scheduler()
    asked.set_enabled("stats_flush", False)
    asked.set_schedule("runs_purge", CronSchedule.parse("5 10 * * *"))
    clock.advance(timedelta(minutes=1))
    try:
        assert [run.name for run in host.tick()] == []  # stats_flush is off now
        assert str(host.scheduler.get("runs_purge").schedule) == "5 10 * * *"
        assert holder.workload_stats.last_skip("stats_flush") is not None
    finally:
        host.stop()


def test_workload_stats_set_job_override_reaches_the_hosts_scheduler_at_its_next_tick(
    open_store: Callable[..., Store], clock: ManualClock, tmp_path: Path
) -> None:
    # The spec's way "in your own program": store.workload_stats.set_job_override(...).
    holder, standby = two(open_store, tmp_path)
    host = Host(holder, time_zone="UTC", clock=clock)
    host.tick()
    holder.workload_stats.set_job_override("compact", schedule="*/5 * * * *", enabled=True)
    clock.advance(timedelta(minutes=1))
    try:
        host.tick()
        compact = host.scheduler.get("compact")
        assert (str(compact.schedule), compact.enabled) == ("*/5 * * * *", True)
    finally:
        host.stop()
    # One place of truth: the database's, which every instance reads.
    other = standby.scheduler().get("compact")
    assert (str(other.schedule), other.enabled) == ("*/5 * * * *", True)
    assert standby.workload_stats.job_override("compact") == holder.job_overrides.job_override(
        "compact"
    )
    holder.workload_stats.set_job_override("compact", schedule=None, enabled=None)
    assert str(standby.scheduler().get("compact").schedule) == "0 3 * * *"


def test_a_scheduler_given_only_the_stores_stats_keeps_its_overrides_in_the_database(
    open_store: Callable[..., Store], tmp_path: Path
) -> None:
    # The spec's whole program: Scheduler(zone, stats=store.workload_stats), system jobs added.
    mine, other = two(open_store, tmp_path)
    scheduler = Scheduler("UTC", stats=mine.workload_stats)
    for job in mine.system_jobs():
        scheduler.add(job)
    scheduler.set_enabled("compact", True)
    scheduler.set_schedule("runs_purge", CronSchedule.parse("0 6 * * *"))
    theirs = other.scheduler()
    assert (theirs.get("compact").enabled, str(theirs.get("runs_purge").schedule)) == (
        True,
        "0 6 * * *",
    )
    # And what another instance changes is what this scheduler applies at its refresh.
    theirs.set_enabled("stats_flush", False)
    mine.job_overrides.load()
    scheduler.refresh_overrides()
    assert scheduler.get("stats_flush").enabled is False


@pytest.mark.parametrize(
    ("change", "field"),
    [
        pytest.param({"schedule": "every morning"}, "schedule", id="not-cron"),
        pytest.param({"schedule": 5}, "schedule", id="not-text"),
        pytest.param({"enabled": "yes"}, "enabled", id="enabled-not-a-bool"),
    ],
)
def test_set_job_override_refuses_what_the_scheduler_could_not_use_and_writes_nothing(
    open_store: Callable[..., Store], tmp_path: Path, change: dict[str, object], field: str
) -> None:
    # Accepted silently, it was written to the database and the built-in schedule stayed.
    store = open_store()
    version = store.catalog_version()
    with pytest.raises(InvalidInput) as refused:
        store.workload_stats.set_job_override("compact", **change)  # type: ignore[arg-type]
    assert refused.value.field == field
    assert store.catalog_version() == version
    assert store.job_overrides.job_override("compact") is None
