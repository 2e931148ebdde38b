"""POST /api/jobs/drop, /enable and /schedule."""

from __future__ import annotations

from fastapi.testclient import TestClient
from server.apikit import define

from dgxmm.server import Host
from dgxmm.store import Store


def test_it_drops_a_user_job(client: TestClient, host: Host, store: Store) -> None:
    define(client, name="cp", schedule="0 3 * * *", action="checkpoint")
    response = client.post("/api/jobs/drop", json={"name": "cp"})
    assert response.status_code == 200
    assert store.jobs() == []
    assert "cp" not in [job.name for job in host.scheduler.jobs()]


def test_it_refuses_to_drop_a_system_job_or_an_unknown_one(client: TestClient) -> None:
    response = client.post("/api/jobs/drop", json={"name": "stats_flush"})
    assert (response.status_code, response.json()["field"]) == (400, "name")
    assert client.post("/api/jobs/drop", json={"name": "ghost"}).status_code == 404


def test_it_switches_a_user_job_off_and_on_keeping_its_effects(
    client: TestClient, store: Store
) -> None:
    client.post(
        "/api/queries/define",
        json={"name": "add", "params": {}, "body": "INSERT INTO notes (label) VALUES ('x')"},
    )
    define(client, name="q", schedule="0 3 * * *", action="query", query="add")
    off = client.post("/api/jobs/enable", json={"name": "q", "enabled": False}).json()
    assert (off["enabled"], off["why_not"], off["next_at"]) == (False, "switched off", None)
    assert store.job("q").effects == store.job("q").effects
    on = client.post("/api/jobs/enable", json={"name": "q", "enabled": True}).json()
    assert on["enabled"] is True
    assert on["effects"] == ["Execute(add)", "Write(notes)"]


def test_it_switches_a_system_job_and_keeps_it_in_the_database(
    client: TestClient, store: Store
) -> None:
    row = client.post("/api/jobs/enable", json={"name": "compact", "enabled": True}).json()
    assert row["enabled"] is True
    assert row["next_at"] == "2026-06-02T03:00:00+02:00"
    store.job_overrides.load()  # as the database has it, for every instance on it
    override = store.job_overrides.job_override("compact")
    assert override is not None
    assert override.enabled is True


def test_it_changes_a_system_jobs_schedule_and_null_brings_the_built_in_back(
    client: TestClient, store: Store
) -> None:
    client.post("/api/jobs/enable", json={"name": "compact", "enabled": True})
    row = client.post(
        "/api/jobs/schedule", json={"name": "compact", "schedule": "30 4 * * *"}
    ).json()
    assert (row["schedule"], row["builtin_schedule"]) == ("30 4 * * *", "0 3 * * *")
    assert row["next_at"] == "2026-06-02T04:30:00+02:00"
    row = client.post("/api/jobs/schedule", json={"name": "compact", "schedule": None}).json()
    assert row["schedule"] == "0 3 * * *"
    store.job_overrides.load()  # as the database has it, for every instance on it
    override = store.job_overrides.job_override("compact")
    assert override is not None
    assert override.schedule is None


def test_it_refuses_a_bad_schedule_and_a_user_job(client: TestClient) -> None:
    response = client.post("/api/jobs/schedule", json={"name": "compact", "schedule": "0 25 * * *"})
    assert (response.status_code, response.json()["field"]) == (400, "schedule")
    assert "hour: 25 is out of range 0-23" in response.json()["message"]
    define(client, name="cp", schedule="0 3 * * *", action="checkpoint")
    response = client.post("/api/jobs/schedule", json={"name": "cp", "schedule": "0 4 * * *"})
    assert response.status_code == 400
    assert "define it again" in response.json()["message"]
    assert (
        client.post("/api/jobs/schedule", json={"name": "ghost", "schedule": None}).status_code
        == 404
    )
    assert (
        client.post("/api/jobs/enable", json={"name": "ghost", "enabled": True}).status_code == 404
    )


def test_it_pauses_a_job_with_a_note_shown_in_the_list_and_on_its_pages(
    client: TestClient, store: Store
) -> None:
    define(client, name="cp", schedule="0 3 * * *", action="checkpoint")
    off = client.post(
        "/api/jobs/enable", json={"name": "cp", "enabled": False, "note": "disk swap <Tue>"}
    ).json()
    assert (off["enabled"], off["pause_note"]) == (False, "disk swap <Tue>")
    system = client.post(
        "/api/jobs/enable", json={"name": "stats_flush", "enabled": False, "note": "by hand"}
    ).json()
    assert system["pause_note"] == "by hand"
    listed = {row["name"]: row for row in client.get("/api/jobs").json()["jobs"]}
    assert (listed["cp"]["pause_note"], listed["stats_flush"]["pause_note"]) == (
        "disk swap <Tue>",
        "by hand",
    )
    html = {"Accept": "text/html"}
    page = client.get("/jobs", headers=html).text
    assert "“disk swap &lt;Tue&gt;”" in page  # escaped
    assert "“by hand”" in page
    assert "“disk swap &lt;Tue&gt;”" in client.get("/jobs/cp", headers=html).text
    on = client.post("/api/jobs/enable", json={"name": "cp", "enabled": True}).json()
    assert on["pause_note"] is None
    assert "disk swap" not in client.get("/jobs/cp", headers=html).text


def test_it_refuses_a_note_with_a_job_switched_on_naming_it_and_changes_nothing(
    client: TestClient, store: Store, host: Host
) -> None:
    define(client, name="cp", schedule="0 3 * * *", action="checkpoint")
    version = store.catalog_version()
    for name in ("cp", "stats_flush"):
        response = client.post(
            "/api/jobs/enable", json={"name": name, "enabled": True, "note": "x"}
        )
        assert (response.status_code, response.json()["field"]) == (400, "note"), response.text
    response = client.post(
        "/api/jobs/enable", json={"name": "cp", "enabled": False, "note": "x" * 501}
    )
    assert (response.status_code, response.json()["field"]) == (400, "note")
    assert "at most 500" in response.json()["message"]
    assert store.catalog_version() == version
    assert store.job("cp").enabled
    assert host.scheduler.get("stats_flush").enabled
