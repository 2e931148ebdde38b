"""GET /api/jobs/history and GET /api/jobs/preview."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from server.apikit import define
from support import at

from dgxmm.clock import ManualClock


def test_it_answers_the_buckets_of_a_job(client: TestClient, clock: ManualClock) -> None:
    define(client, name="cp", schedule="0 3 * * *", action="checkpoint")
    client.post("/api/jobs/run", json={"name": "cp"})
    clock.set(at("2026-06-01T11:20:00+02:00"))
    client.post("/api/jobs/run", json={"name": "cp"})
    client.post("/api/jobs/run", json={"name": "cp"})
    hours = client.get("/api/jobs/history", params={"name": "cp", "tier": "hours"}).json()
    assert [(b["start"], b["count"], b["failures"]) for b in hours["buckets"]] == [
        ("2026-06-01T10:00:00+02:00", 1, 0),
        ("2026-06-01T11:00:00+02:00", 2, 0),
    ]
    assert all(b["longest_ms"] <= b["total_ms"] for b in hours["buckets"])
    minutes = client.get("/api/jobs/history", params={"name": "cp", "tier": "minutes"}).json()
    assert [b["count"] for b in minutes["buckets"]] == [1, 2]
    days = client.get("/api/jobs/history", params={"name": "cp", "tier": "days"}).json()
    assert [(b["start"], b["count"]) for b in days["buckets"]] == [("2026-06-01T00:00:00+02:00", 3)]


def test_it_answers_an_empty_history_for_a_job_that_never_ran(client: TestClient) -> None:
    assert client.get("/api/jobs/history", params={"name": "compact"}).json()["buckets"] == []


@pytest.mark.parametrize(
    ("params", "status", "field"),
    [
        ({"name": "ghost"}, 404, None),
        ({"name": "compact", "tier": "weeks"}, 422, "tier"),
        ({}, 422, "name"),
    ],
    ids=["unknown-job", "bad-tier", "no-name"],
)
def test_it_refuses_bad_history_questions(
    client: TestClient, params: dict[str, str], status: int, field: str | None
) -> None:
    response = client.get("/api/jobs/history", params=params)
    assert response.status_code == status
    assert response.json()["field"] == field


def test_it_previews_fire_times_with_gap_moves_marked(
    client: TestClient, clock: ManualClock
) -> None:
    clock.set(at("2026-03-28T12:00:00+01:00"))
    body = client.get(
        "/api/jobs/preview", params={"schedule": "30 2 * * *", "zone": "Europe/Berlin", "n": 2}
    ).json()
    assert body["description"] == "at 02:30"
    assert [(t["at"], t["moved"]) for t in body["times"]] == [
        ("2026-03-29T03:00:00+02:00", True),
        ("2026-03-30T02:30:00+02:00", False),
    ]


def test_it_previews_in_the_hosts_zone_by_default(client: TestClient) -> None:
    body = client.get("/api/jobs/preview", params={"schedule": "0 3 * * 1-5"}).json()
    assert body["zone"] == "Europe/Berlin"
    assert body["description"] == "at 03:00, Monday to Friday"
    assert len(body["times"]) == 5
    assert body["times"][0]["at"] == "2026-06-02T03:00:00+02:00"


@pytest.mark.parametrize(
    ("params", "status", "field"),
    [
        ({"schedule": "* * *"}, 400, "schedule"),
        ({"schedule": "* * * * *", "zone": "Mars/Base"}, 400, "zone"),
        ({"schedule": "* * * * *", "n": 0}, 422, "n"),
        ({"schedule": "* * * * *", "n": 101}, 422, "n"),
        ({"schedule": "* * * * *", "n": "many"}, 422, "n"),
    ],
    ids=["bad-cron", "bad-zone", "n-zero", "n-big", "n-text"],
)
def test_it_refuses_a_bad_preview(
    client: TestClient, params: dict[str, str | int], status: int, field: str
) -> None:
    response = client.get("/api/jobs/preview", params=params)
    assert response.status_code == status
    assert response.json()["field"] == field
