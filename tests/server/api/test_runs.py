"""GET /api/runs (job runs and deployment actions in one list) and GET /api/jobs/runs/{id}."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from server.apikit import define
from support import at, standin_keys

from dgxmm.clock import ManualClock
from dgxmm.fleet import EventAction, EventOutcome, Fleet
from dgxmm.server import Host


def _tick(host: Host, clock: ManualClock, when: str) -> None:
    clock.set(at(when))
    host.tick()
    host.wait_idle()


def test_it_lists_job_runs_and_deployment_actions_newest_first_a_page_at_a_time(
    full_admin: TestClient, host: Host, fleet: Fleet, clock: ManualClock
) -> None:
    define(full_admin, name="cp", schedule="* * * * *", action="checkpoint")
    made = fleet.deployments.create(actor="user:a", **standin_keys("chat"))
    _tick(host, clock, "2026-06-01T10:01:00+02:00")
    fleet.events.record(made.id, EventAction.WAKE, actor="request", outcome=EventOutcome.DONE)
    _tick(host, clock, "2026-06-01T10:02:00+02:00")
    fleet.events.record(
        made.id,
        EventAction.SLEEP,
        actor="idle",
        outcome=EventOutcome.FAILED,
        detail="sleep refused by the server",
    )
    seen: list[tuple[str, str, str]] = []
    cursor = None
    for _ in range(10):
        params = {"limit": "1"} | ({} if cursor is None else {"cursor": cursor})
        page = full_admin.get("/api/runs", params=params).json()
        seen += [
            (r["source"], r["name"], r["what"]) for r in page["runs"] if r["name"] != "stats_flush"
        ]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [
        ("job", "cp", "user job"),
        ("deployment", "chat", "sleep"),
        ("job", "cp", "user job"),
        ("deployment", "chat", "wake"),
    ]


def test_it_filters_by_status_job_deployment_and_time(
    full_admin: TestClient, host: Host, fleet: Fleet, clock: ManualClock
) -> None:
    define(full_admin, name="cp", schedule="* * * * *", action="checkpoint")
    made = fleet.deployments.create(actor="user:a", **standin_keys("chat"))
    _tick(host, clock, "2026-06-01T10:01:00+02:00")
    fleet.events.record(made.id, EventAction.SLEEP, actor="idle", outcome=EventOutcome.FAILED)
    _tick(host, clock, "2026-06-01T10:02:00+02:00")

    def names(**params: str) -> list[tuple[str, str]]:
        answer = full_admin.get("/api/runs", params=params)
        assert answer.status_code == 200, answer.text
        return [(r["name"], r["status"]) for r in answer.json()["runs"]]

    assert names(status="failed") == [("chat", "failed")]
    assert names(deployment=str(made.id)) == [("chat", "failed")]
    assert names(job="cp") == [("cp", "succeeded"), ("cp", "succeeded")]
    assert names(job="cp", since="2026-06-01T10:02:00+02:00") == [("cp", "succeeded")]
    assert names(job="cp", until="2026-06-01T10:02:00+02:00") == [("cp", "succeeded")]
    assert names(status="running") == []


def test_it_names_every_wrong_filter_with_400(full_admin: TestClient) -> None:
    answer = full_admin.get(
        "/api/runs", params={"deployment": "x", "since": "yesterday", "until": "soon"}
    )
    assert answer.status_code == 400
    assert [e["field"] for e in answer.json()["errors"]] == ["deployment", "since", "until"]
    for params, field in [
        ({"status": "lost"}, "status"),
        ({"limit": "0"}, "limit"),
        ({"cursor": "abc"}, "cursor"),
        ({"job": "cp", "deployment": "1"}, "deployment"),
        ({"since": "2026-06-01T10:00:00Z", "until": "2026-06-01T09:00:00Z"}, "until"),
    ]:
        answer = full_admin.get("/api/runs", params=params)
        assert answer.status_code in (400, 422), answer.text
        assert answer.json()["field"] == field, answer.text


def test_a_run_keeps_the_rows_its_query_returned(client: TestClient, viewer: TestClient) -> None:
    client.post(
        "/api/queries/define",
        json={"name": "count", "params": {}, "body": "SELECT 1 AS one, 'two' AS two"},
    )
    define(client, name="count", schedule="0 3 * * *", action="query", query="count")
    client.post("/api/jobs/run", json={"name": "count"})
    (row,) = client.get("/api/jobs/runs", params={"name": "count"}).json()["runs"]
    answer = viewer.get(f"/api/jobs/runs/{row['id']}")
    assert answer.status_code == 200
    run = answer.json()
    assert (run["job"], run["outcome"], run["trigger"]) == ("count", "succeeded", "manual")
    assert run["rows"]["columns"] == ["one", "two"]
    assert run["rows"]["rows"] == [[1, "two"]]
    assert (run["rows"]["returned"], run["rows"]["cut"]) == (1, False)
    assert run["late_ms"] >= 0


@pytest.mark.parametrize(("run_id", "status"), [("999", 404), ("x", 400), ("-1", 400)])
def test_an_unknown_or_wrong_run_id_is_named(client: TestClient, run_id: str, status: int) -> None:
    answer = client.get(f"/api/jobs/runs/{run_id}")
    assert answer.status_code == status
    assert answer.json()["field" if status == 400 else "error"] in ("id", "not_found")


def test_a_viewer_reads_the_public_error_of_a_run(client: TestClient, viewer: TestClient) -> None:
    client.post(
        "/api/queries/define",
        json={"name": "boom", "params": {}, "body": "INSERT INTO notes (label) VALUES (NULL)"},
    )
    define(client, name="boom", schedule="0 3 * * *", action="query", query="boom")
    client.post("/api/jobs/run", json={"name": "boom"})
    (row,) = client.get("/api/jobs/runs", params={"name": "boom"}).json()["runs"]
    assert "NOT NULL" in client.get(f"/api/jobs/runs/{row['id']}").json()["error"]
    assert "NOT NULL" not in viewer.get(f"/api/jobs/runs/{row['id']}").json()["error"]
    assert "NOT NULL" not in str(viewer.get("/api/runs", params={"job": "boom"}).json())


def test_an_app_without_the_fleet_lists_job_runs_and_its_page_polls_known_topics(
    client: TestClient, host: Host
) -> None:
    define(client, name="cp", schedule="0 3 * * *", action="checkpoint")
    client.post("/api/jobs/run", json={"name": "cp"})
    rows = client.get("/api/runs", params={"job": "cp"}).json()["runs"]
    assert [(r["source"], r["name"]) for r in rows] == [("job", "cp")]
    page = client.get("/runs", headers={"Accept": "text/html"})
    assert page.status_code == 200
    assert 'data-live="jobs,deployments"' in page.text
    assert client.get("/api/changes", params={"topics": "jobs,deployments"}).status_code == 200
