"""User jobs for the scheduler: groups by action, reasons for the ones not scheduled."""

from __future__ import annotations

import json
from datetime import timedelta

from sqlalchemy import update
from store.storekit import make_items, rows
from support import at

from dgxmm.clock import ManualClock
from dgxmm.jobs import JobKind, Outcome
from dgxmm.store import NotScheduled, Store
from dgxmm.store.schema import catalog_jobs


def test_it_puts_jobs_of_one_action_in_one_group(store: Store) -> None:
    store.define_query("q", None, "SELECT 1")
    store.define_job(name="q1", schedule="* * * * *", action="query", query="q")
    store.define_job(name="q2", schedule="*/5 * * * *", action="query", query="q", timeout_ms=500)
    store.define_job(name="cp", schedule="0 * * * *", action="checkpoint", enabled=False)
    store.define_job(name="bk", schedule="0 4 * * *", action="backup", path="bk")
    found = store.user_jobs()
    assert found.not_scheduled == []
    assert [(j.name, j.kind, j.group, j.enabled, str(j.schedule)) for j in found.jobs] == [
        ("bk", JobKind.USER, "backup", True, "0 4 * * *"),
        ("cp", JobKind.USER, "checkpoint", False, "0 * * * *"),
        ("q1", JobKind.USER, "query", True, "* * * * *"),
        ("q2", JobKind.USER, "query", True, "*/5 * * * *"),
    ]
    assert found.jobs[3].limits.timeout == timedelta(milliseconds=500)


def test_it_lists_every_job_it_does_not_schedule_with_its_reason(store: Store) -> None:
    store.define_job(name="ok", schedule="* * * * *", action="checkpoint")
    store.define_job(name="rep", schedule="* * * * *", action="checkpoint", run_on="replica")
    store.import_catalog(
        {
            "format": 1,
            "kind": "dgxmm-catalog",
            "jobs": [
                {"name": "newer", "schedule": "* * * * *", "action": "vacuum_graph"},
                {"name": "where", "schedule": "* * * * *", "action": "checkpoint", "run_on": "gpu"},
            ],
        }
    )
    # A schedule this version cannot read, as a newer version might have stored it.
    with store.engine.begin() as connection:
        definition = {"name": "ok", "schedule": "*/5 * * * * *", "action": "checkpoint"}
        connection.execute(
            update(catalog_jobs)
            .where(catalog_jobs.c.name == "ok")
            .values(definition=json.dumps(definition))
        )
    store.reserve_job_names(["schedule_runner"])
    store.import_catalog(
        {
            "format": 1,
            "kind": "dgxmm-catalog",
            "jobs": [{"name": "cp", "schedule": "* * * * *", "action": "checkpoint"}],
        }
    )
    found = store.user_jobs()
    assert [j.name for j in found.jobs] == ["cp"]
    reasons = {skipped.name: skipped.reason for skipped in found.not_scheduled}
    assert set(reasons) == {"newer", "ok", "rep", "where"}
    assert "vacuum_graph" in reasons["newer"]
    assert reasons["newer"].startswith("action:")
    assert reasons["ok"].startswith("schedule:")
    assert "replica" in reasons["rep"]
    assert reasons["rep"].endswith("single instance (there is no replica)")
    assert "gpu" in reasons["where"]
    listed = {job.name: (job.served, job.reason) for job in store.jobs()}
    assert {name: reason for name, (_, reason) in listed.items() if reason} == reasons
    assert NotScheduled(name="x", reason="y").to_json() == {"name": "x", "reason": "y"}


def test_it_refuses_a_name_a_host_reserved_for_its_own_system_job(store: Store) -> None:
    store.define_job(name="schedule_runner", schedule="* * * * *", action="checkpoint")
    store.reserve_job_names(["schedule_runner"])
    (skipped,) = store.user_jobs().not_scheduled
    assert (skipped.name, skipped.reason) == (
        "schedule_runner",
        "name: schedule_runner is a system job's name",
    )


def test_it_runs_user_jobs_on_a_scheduler_the_host_ticks(store: Store, clock: ManualClock) -> None:
    make_items(store)
    store.define_query("add", {"label": "string"}, "INSERT INTO items (label) VALUES (:label)")
    store.define_job(
        name="adder", schedule="*/5 * * * *", action="query", query="add", args={"label": "t"}
    )
    scheduler = store.scheduler("Europe/Berlin")
    assert [j.name for j in scheduler.jobs()] == ["stats_flush", "compact", "runs_purge", "adder"]
    scheduler.tick(at("2026-03-02T10:01:00+00:00"))  # the first tick only plans
    results = scheduler.tick(at("2026-03-02T10:05:00+00:00"))
    by_name = {r.name: r for r in results}
    assert by_name["adder"].outcome is Outcome.SUCCEEDED
    assert rows(store, "SELECT label FROM items") == [("t",)]
    assert [c.job for c in store.changes()] == ["adder"]
    last = store.workload_stats.last_run("adder")
    assert last is not None
    assert last.outcome is Outcome.SUCCEEDED
    # A dropped job leaves the scheduler at the next sync; a new one joins it.
    store.drop_job("adder")
    store.define_job(name="cp", schedule="0 * * * *", action="checkpoint")
    store.sync(scheduler)
    assert [j.name for j in scheduler.jobs()] == ["stats_flush", "compact", "runs_purge", "cp"]
