"""GET /api/jobs: system jobs first, then user jobs, with everything a person needs."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from server.apikit import define
from support import at

from dgxmm.clock import ManualClock
from dgxmm.server import Host
from dgxmm.server.lists.jobs import job_rows
from dgxmm.store import Store


def test_it_lists_system_jobs_first_then_user_jobs_by_name(client: TestClient) -> None:
    client.post(
        "/api/queries/define",
        json={
            "name": "add",
            "params": {"label": "string"},
            "body": "INSERT INTO notes (label) VALUES (:label)",
        },
    )
    define(client, name="zeta", schedule="0 3 * * *", action="checkpoint")
    define(
        client,
        name="alpha",
        schedule="*/5 * * * *",
        action="query",
        query="add",
        args={"label": "x"},
        timeout_ms=5000,
    )
    body = client.get("/api/jobs").json()
    assert body["time_zone"] == "Europe/Berlin"
    names = [(job["name"], job["kind"]) for job in body["jobs"]]
    assert names == [
        ("stats_flush", "system"),
        ("compact", "system"),
        ("runs_purge", "system"),
        ("alpha", "user"),
        ("zeta", "user"),
    ]
    alpha = body["jobs"][3]
    assert alpha["schedule"] == "*/5 * * * *"
    assert alpha["schedule_description"] == "every 5 minutes"
    assert alpha["next_at"] == "2026-06-01T10:05:00+02:00"
    assert (alpha["action"], alpha["query"], alpha["args"]) == ("query", "add", {"label": "x"})
    assert alpha["effects"] == ["Execute(add)", "Write(notes)"]
    assert alpha["timeout_ms"] == 5000
    assert (alpha["running"], alpha["enabled"], alpha["runs_here"], alpha["why_not"]) == (
        False,
        True,
        True,
        None,
    )
    compact = body["jobs"][1]
    assert (compact["enabled"], compact["next_at"], compact["why_not"]) == (
        False,
        None,
        "switched off",
    )
    assert compact["builtin_schedule"] == "0 3 * * *"


def test_it_shows_last_run_counts_and_a_run_under_way(
    client: TestClient, host: Host, clock: ManualClock
) -> None:
    define(client, name="cp", schedule="* * * * *", action="checkpoint")
    host.tick()  # picks the new job up and plans it
    clock.set(at("2026-06-01T10:01:00+02:00"))
    assert "cp" in [run.name for run in host.tick()]
    host.wait_idle()
    row = next(job for job in client.get("/api/jobs").json()["jobs"] if job["name"] == "cp")
    assert row["last_run"]["outcome"] == "succeeded"
    assert row["last_run"]["started_at"] == "2026-06-01T10:01:00+02:00"
    assert row["runs"] == {"last_hour": 1, "last_two_days": 1, "last_90_days": 1}
    assert row["next_at"] == "2026-06-01T10:02:00+02:00"


def test_it_lists_a_job_it_does_not_run_with_the_reason(client: TestClient, host: Host) -> None:
    define(client, name="mirror", schedule="0 3 * * *", action="checkpoint", run_on="replica")
    row = next(job for job in client.get("/api/jobs").json()["jobs"] if job["name"] == "mirror")
    assert row["served"] is False
    assert row["runs_here"] is False
    assert row["why_not"].startswith("not scheduled: ")
    assert "replica" in row["why_not"]
    assert row["next_at"] is None


def test_it_lets_a_viewer_read(viewer: TestClient) -> None:
    assert viewer.get("/api/jobs").status_code == 200


def test_two_stores_in_one_process_each_list_their_own_schedules(
    tmp_path: Path, clock: ManualClock
) -> None:
    """The job list's rows are kept per store: a job named alike elsewhere is another job."""
    rows = {}
    for place, schedule in (("one", "0 1 * * *"), ("two", "30 5 * * 1")):
        store = Store.open(tmp_path / f"{place}.db", clock=clock)
        host = Host(store, time_zone="Europe/Berlin", clock=clock)
        try:
            store.define_job(name="nightly", schedule=schedule, action="checkpoint")
            assert store.job("nightly").version == 1  # the same name and version in both
            rows[place] = {row["name"]: row for row in job_rows(host, full_errors=True)}["nightly"]
        finally:
            host.stop()
            store.close()
    assert rows["one"]["schedule"] == "0 1 * * *"
    assert rows["two"]["schedule"] == "30 5 * * 1"
    assert rows["two"]["schedule_description"] == "at 05:30, on Monday"
