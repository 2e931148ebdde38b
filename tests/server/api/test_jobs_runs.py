"""GET /api/jobs/runs: every run's row, newest first, by job, a page at a time."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from server.apikit import define
from support import at

from dgxmm.clock import ManualClock
from dgxmm.server import Host
from dgxmm.store import Store


def test_it_pages_through_the_runs_newest_first(
    client: TestClient, host: Host, clock: ManualClock
) -> None:
    define(client, name="cp", schedule="* * * * *", action="checkpoint")
    for minute in ("10:01", "10:02", "10:03"):
        clock.set(at(f"2026-06-01T{minute}:00+02:00"))
        host.tick()
        host.wait_idle()
    client.post("/api/jobs/run", json={"name": "cp"})
    first = client.get("/api/jobs/runs", params={"name": "cp", "limit": 2}).json()
    assert [(r["trigger"], r["scheduled_at"]) for r in first["runs"]] == [
        ("manual", "2026-06-01T10:03:00+02:00"),
        ("schedule", "2026-06-01T10:03:00+02:00"),
    ]
    rest = client.get(
        "/api/jobs/runs", params={"name": "cp", "before": first["next_before"]}
    ).json()
    assert [r["scheduled_at"] for r in rest["runs"]] == [
        "2026-06-01T10:02:00+02:00",
        "2026-06-01T10:01:00+02:00",
    ]
    row = rest["runs"][0]
    assert (row["job"], row["kind"], row["outcome"], row["instance"]) == (
        "cp",
        "user",
        "succeeded",
        host.store.instance,
    )
    assert row["finished_at"] is not None
    assert row["duration_ms"] >= 0
    everything = client.get("/api/jobs/runs").json()["runs"]
    assert {r["job"] for r in everything} >= {"cp", "stats_flush"}


def test_a_viewer_reads_the_public_error_only(
    client: TestClient, viewer: TestClient, store: Store
) -> None:
    client.post(
        "/api/queries/define",
        json={"name": "boom", "params": {}, "body": "INSERT INTO notes (label) VALUES (NULL)"},
    )
    define(client, name="boom", schedule="0 3 * * *", action="query", query="boom")
    client.post("/api/jobs/run", json={"name": "boom"})
    (admin_row,) = client.get("/api/jobs/runs", params={"name": "boom"}).json()["runs"]
    (viewer_row,) = viewer.get("/api/jobs/runs", params={"name": "boom"}).json()["runs"]
    assert "NOT NULL" in admin_row["error"]
    assert viewer_row["error"] != admin_row["error"]
    assert "NOT NULL" not in viewer_row["error"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "1001"}, "limit"),
        ({"limit": "ten"}, "limit"),
        ({"before": "-3"}, "before"),
        ({"before": "0"}, "before"),
        ({"name": ""}, "name"),
        ({"name": "x" * 201}, "name"),
    ],
    ids=[
        "limit-zero",
        "limit-big",
        "limit-text",
        "before-negative",
        "before-zero",
        "name-empty",
        "name-long",
    ],
)
def test_it_refuses_bad_parameters_naming_them(
    client: TestClient, params: dict[str, str], field: str
) -> None:
    response = client.get("/api/jobs/runs", params=params)
    assert response.status_code == 400
    assert response.json()["field"] == field


def test_it_answers_an_empty_page_for_a_job_without_runs(client: TestClient) -> None:
    assert client.get("/api/jobs/runs", params={"name": "ghost"}).json() == {
        "runs": [],
        "next_before": None,
        "next_cursor": None,
    }
