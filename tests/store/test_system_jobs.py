"""System jobs, their overrides (in the database) across a restart, and the workload sidecar
flushed on close."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from store.storekit import Place, ctx
from support import at

from dgxmm.errors import Conflict
from dgxmm.jobs import CronSchedule, JobKind, Outcome, RunResult
from dgxmm.store import Store


def sidecar(store: Store, place: Place) -> Path:
    if store.path is not None:
        return store.path.with_name(store.path.name + ".workload.json")
    return place.data_dir / f"{store.engine.url.database}.workload.json"


def test_it_brings_stats_flush_on_every_minute_and_compact_off_at_three(store: Store) -> None:
    jobs = store.system_jobs()
    assert [(j.name, j.kind, str(j.schedule), j.enabled) for j in jobs] == [
        ("stats_flush", JobKind.SYSTEM, "* * * * *", True),
        ("compact", JobKind.SYSTEM, "0 3 * * *", False),
        ("runs_purge", JobKind.SYSTEM, "10 4 * * *", True),
    ]


def test_it_flushes_the_statistics_to_the_sidecar_when_they_changed(
    store: Store, place: Place
) -> None:
    path = sidecar(store, place)
    flush = store.system_jobs()[0].action
    store.workload_stats.record_run(
        RunResult(
            name="x",
            token=1,
            scheduled_at=at("2026-03-02T10:00:00+00:00"),
            started_at=at("2026-03-02T10:00:00+00:00"),
            duration_us=1500,
            outcome=Outcome.SUCCEEDED,
        )
    )
    assert str(flush(ctx("stats_flush"))).startswith("wrote ")
    assert json.loads(path.read_text()) == store.workload_stats.to_json()
    assert flush(ctx("stats_flush")) == "unchanged"
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_it_keeps_system_job_overrides_in_the_database_across_a_restart(
    open_store: Callable[..., Store],
) -> None:
    store = open_store()
    scheduler = store.scheduler()
    scheduler.set_schedule("stats_flush", CronSchedule.parse("*/5 * * * *"))
    scheduler.set_enabled("compact", True)
    with pytest.raises(Conflict):
        scheduler.remove("compact")
    store.close()
    again = open_store().scheduler()
    assert [(str(j.schedule), j.enabled) for j in again.jobs()[:2]] == [
        ("*/5 * * * *", True),
        ("0 3 * * *", True),
    ]
    again.set_schedule("stats_flush", None)  # the built-in schedule again
    assert str(again.get("stats_flush").schedule) == "* * * * *"


def test_it_writes_the_statistics_when_closed_without_a_scheduler(
    open_store: Callable[..., Store],
) -> None:
    store = open_store()
    result = RunResult(
        name="nightly",
        token=1,
        scheduled_at=at("2026-03-02T03:00:00+00:00"),
        started_at=at("2026-03-02T03:00:00+00:00"),
        duration_us=2_000_000,
        outcome=Outcome.FAILED,
        error="boom",
    )
    store.workload_stats.record_run(result)
    store.close()
    last = open_store().workload_stats.last_run("nightly")
    assert last is not None
    assert (last.outcome, last.error) == (Outcome.FAILED, "boom")


def test_it_does_not_carry_the_sidecar_in_a_backup(store: Store, tmp_path: Path) -> None:
    store.workload_stats.record_run(
        RunResult(
            name="x",
            token=1,
            scheduled_at=at("2026-03-02T10:00:00+00:00"),
            started_at=at("2026-03-02T10:00:00+00:00"),
            duration_us=1500,
            outcome=Outcome.SUCCEEDED,
        )
    )
    assert store.flush_stats()
    store.backup(tmp_path / "bk")
    names = {p.name for p in (tmp_path / "bk").rglob("*")}
    assert not any("workload" in name for name in names)


def test_it_sets_a_damaged_sidecar_aside_and_starts_afresh(
    open_store: Callable[..., Store], place: Place
) -> None:
    store = open_store()
    path = sidecar(store, place)
    store.close()
    path.write_text("{not json")
    again = open_store()
    assert again.workload_stats.names() == []
    assert [p.name for p in path.parent.iterdir() if ".damaged-" in p.name]
