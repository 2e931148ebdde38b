"""POST /api/jobs/define: defines or replaces; a refused job answers 400 naming the field."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from server.apikit import define
from support import at

from dgxmm.clock import ManualClock
from dgxmm.server import Host
from dgxmm.store import Store


@pytest.fixture(autouse=True)
def saved_query(client: TestClient) -> None:
    response = client.post(
        "/api/queries/define",
        json={
            "name": "add",
            "params": {"label": "string"},
            "body": "INSERT INTO notes (label) VALUES (:label)",
        },
    )
    assert response.status_code == 200, response.text


def test_it_defines_a_job_that_the_scheduler_picks_up(client: TestClient, host: Host) -> None:
    row = define(
        client,
        name="nightly",
        schedule="0 3 * * *",
        action="query",
        query="add",
        args={"label": "n"},
        description="adds a note",
    )
    assert row["name"] == "nightly"
    assert row["description"] == "adds a note"
    assert host.scheduler.get("nightly").group == "query"


def test_it_replaces_a_job_and_records_who(client: TestClient, store: Store) -> None:
    define(client, name="j", schedule="0 3 * * *", action="checkpoint")
    row = define(client, name="j", schedule="0 4 * * *", action="checkpoint")
    assert row["schedule"] == "0 4 * * *"
    assert store.job("j").defined_by == "user:alice"
    assert [entry.change.value for entry in store.journal() if entry.name == "j"] == [
        "define",
        "replace",
    ]


@pytest.mark.parametrize(
    ("keys", "field", "message"),
    [
        (
            {"schedule": "61 * * * *", "action": "checkpoint"},
            "schedule",
            "minute: 61 is out of range 0-59",
        ),
        ({"schedule": "@Daily", "action": "checkpoint"}, "schedule", "lower case"),
        ({"schedule": "0 3 * * *", "action": "reboot"}, "action", "reboot"),
        ({"schedule": "0 3 * * *", "action": "query", "query": "nope"}, "query", "nope"),
        ({"schedule": "0 3 * * *", "action": "query", "query": "add"}, "args", "label"),
        (
            {"schedule": "0 3 * * *", "action": "query", "query": "add", "args": {"label": 5}},
            "args",
            "label",
        ),
        (
            {
                "schedule": "0 3 * * *",
                "action": "query",
                "query": "add",
                "args": {"label": "x", "extra": 1},
            },
            "args",
            "extra",
        ),
        ({"schedule": "0 3 * * *", "action": "backup"}, "path", "directory to back up into"),
        (
            {"schedule": "0 3 * * *", "action": "checkpoint", "timeout_ms": 0},
            "timeout_ms",
            "positive",
        ),
        (
            {"schedule": "0 3 * * *", "action": "checkpoint", "memory_limit": -1},
            "memory_limit",
            "positive",
        ),
        ({"schedule": "0 3 * * *", "action": "checkpoint", "run_on": "mars"}, "run_on", "mars"),
        (
            {"schedule": "0 3 * * *", "action": "checkpoint", "time_zone": "Mars/Olympus"},
            "time_zone",
            "unknown time zone 'Mars/Olympus'",
        ),
        (
            {"schedule": "0 3 * * *", "action": "checkpoint", "retries": 3},
            "retry_backoff_s",
            "3 retries need a first wait",
        ),
        (
            {"schedule": "0 3 * * *", "action": "checkpoint", "retries": -1},
            "retries",
            "expected a whole number from 0 to 20, got -1",
        ),
        (
            {"schedule": "0 3 * * *", "action": "checkpoint", "retries": 1, "retry_backoff_s": -5},
            "retry_backoff_s",
            "expected a positive number of seconds",
        ),
        (
            {
                "schedule": "0 3 * * *",
                "action": "checkpoint",
                "retries": 1,
                "retry_backoff_s": 1e-9,
            },
            "retry_backoff_s",
            "expected a positive number of seconds (a microsecond at least)",
        ),
        (
            {"schedule": "0 3 * * *", "action": "checkpoint", "catchup_window_s": -60},
            "catchup_window_s",
            "(a microsecond at least) of at most 604800, got -60",
        ),
        (
            # Found by schemathesis (issue 44): positive, but no microsecond, was a 500.
            {"schedule": "0 3 * * *", "action": "checkpoint", "catchup_window_s": 3.5e-153},
            "catchup_window_s",
            "expected a positive number of seconds (a microsecond at least) of at most 604800",
        ),
        (
            {"schedule": "0 3 * * *", "action": "checkpoint", "coalesce": "newest"},
            "coalesce",
            "'newest' is not one of latest, earliest, all",
        ),
        (
            {"schedule": "0 3 * * *", "action": "checkpoint", "overlap": "allow_all"},
            "overlap",
            "'allow_all' is not one of skip, buffer_one, cancel_other",
        ),
    ],
    ids=[
        "minute",
        "nickname",
        "action",
        "query",
        "args-missing",
        "args-type",
        "args-extra",
        "backup-path",
        "timeout",
        "memory",
        "run-on",
        "time-zone",
        "retries-no-backoff",
        "retries-negative",
        "backoff-negative",
        "backoff-under-a-microsecond",
        "window-negative",
        "window-under-a-microsecond",
        "coalesce-unknown",
        "overlap-unknown",
    ],
)
def test_it_refuses_a_bad_definition_naming_the_field_and_changes_nothing(
    client: TestClient, store: Store, keys: dict[str, object], field: str, message: str
) -> None:
    before = store.catalog_version()
    response = client.post("/api/jobs/define", json={"name": "bad", **keys})
    assert response.status_code == 400, response.text
    body = response.json()
    assert (body["error"], body["field"]) == ("invalid", field)
    assert message in body["message"]
    assert store.catalog_version() == before
    assert [job.name for job in store.jobs()] == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "x", "schedule": "0 3 * * *", "action": 5}, "action"),
        (
            {"name": "x", "schedule": "0 3 * * *", "action": "checkpoint", "timeout_ms": "5"},
            "timeout_ms",
        ),
        (
            {"name": "x", "schedule": "0 3 * * *", "action": "checkpoint", "enabled": "yes"},
            "enabled",
        ),
        ({"name": "x", "schedule": "0 3 * * *", "action": "checkpoint", "colour": "red"}, "colour"),
        ({"schedule": "0 3 * * *", "action": "checkpoint"}, "name"),
        ({"name": "x", "schedule": "0 3 * * *", "action": "query", "args": [1, 2]}, "args"),
    ],
    ids=["action-type", "timeout-type", "enabled-type", "unknown-key", "missing-name", "args-list"],
)
def test_it_answers_422_for_wrong_types_naming_the_field(
    client: TestClient, store: Store, body: dict[str, object], field: str
) -> None:
    response = client.post("/api/jobs/define", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
    assert store.jobs() == []


def test_it_refuses_a_name_taken_by_a_system_job(client: TestClient) -> None:
    response = client.post(
        "/api/jobs/define",
        json={"name": "stats_flush", "schedule": "* * * * *", "action": "checkpoint"},
    )
    assert response.status_code == 400
    assert response.json()["field"] == "name"


def test_it_needs_an_admin(viewer: TestClient, store: Store) -> None:
    response = viewer.post(
        "/api/jobs/define", json={"name": "x", "schedule": "0 3 * * *", "action": "checkpoint"}
    )
    assert response.status_code == 403
    assert response.json()["error"] == "forbidden"
    assert store.jobs() == []


def test_it_answers_every_wrong_field_of_a_refused_job(client: TestClient, store: Store) -> None:
    before = store.catalog_version()
    response = client.post(
        "/api/jobs/define",
        json={
            "name": "bad",
            "schedule": "61 * * * *",
            "action": "query",
            "query": "nope",
            "timeout_ms": 0,
            "memory_limit": -1,
        },
    )
    assert response.status_code == 400, response.text
    body = response.json()
    assert (body["field"], body["message"]) == ("schedule", "minute: 61 is out of range 0-59")
    assert [(e["field"], e["message"]) for e in body["errors"]] == [
        ("schedule", "minute: 61 is out of range 0-59"),
        ("timeout_ms", "expected a positive whole number, got 0"),
        ("memory_limit", "expected a positive whole number, got -1"),
        ("query", "no saved query named 'nope'"),
    ]
    assert store.catalog_version() == before
    assert store.jobs() == []


def test_it_answers_one_wrong_field_in_the_list_too(client: TestClient) -> None:
    response = client.post(
        "/api/jobs/define", json={"name": "bad", "schedule": "@Daily", "action": "checkpoint"}
    )
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["errors"] == [{"field": "schedule", "message": body["message"]}]


def test_it_answers_every_wrong_type_of_a_body(client: TestClient, store: Store) -> None:
    response = client.post(
        "/api/jobs/define",
        json={"name": "x", "schedule": 5, "action": "checkpoint", "enabled": "yes"},
    )
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["field"] == "schedule"
    assert [e["field"] for e in body["errors"]] == ["schedule", "enabled"]
    assert store.jobs() == []


def test_it_defines_a_job_in_its_own_zone(client: TestClient, clock: ManualClock) -> None:
    clock.set(at("2026-03-07T12:00:00-05:00"))
    row = define(
        client, name="ny", schedule="30 2 * * *", action="checkpoint", time_zone="America/New_York"
    )
    assert row["time_zone"] == "America/New_York"
    # Read in New York, shown with New York's offset: 02:30 does not exist on 2026-03-08.
    assert row["next_at"] == "2026-03-08T03:00:00-04:00"
    other = define(client, name="here", schedule="30 2 * * *", action="checkpoint")
    assert other["time_zone"] == "Europe/Berlin"  # the server's
    assert other["next_at"] == "2026-03-08T02:30:00+01:00"


def test_it_lists_every_wrong_policy_field_and_changes_nothing(
    client: TestClient, store: Store
) -> None:
    before = store.catalog_version()
    response = client.post(
        "/api/jobs/define",
        json={
            "name": "bad",
            "schedule": "0 3 * * *",
            "action": "checkpoint",
            "catchup_window_s": 0,
            "coalesce": "middle",
            "overlap": "queue",
        },
    )
    assert response.status_code == 400, response.text
    fields = [e["field"] for e in response.json()["errors"]]
    assert fields == ["catchup_window_s", "coalesce", "overlap"]
    assert store.catalog_version() == before
    assert store.jobs() == []


def test_it_keeps_the_policies_and_the_scheduler_reads_them(client: TestClient, host: Host) -> None:
    row = define(
        client, name="p", schedule="0 3 * * *", action="checkpoint",
        catchup_window_s=3600, coalesce="all", overlap="buffer_one",
    )  # fmt: skip
    assert (row["catchup_window_s"], row["coalesce"], row["overlap"]) == (3600, "all", "buffer_one")
    host.sync(force=True)
    job = host.scheduler.get("p")
    assert job.catch_up is not None
    assert (job.catch_up.window.total_seconds(), job.catch_up.coalesce.value) == (3600, "all")
    assert job.overlap.value == "buffer_one"
    plain = define(client, name="q", schedule="0 3 * * *", action="checkpoint")
    assert (plain["catchup_window_s"], plain["coalesce"], plain["overlap"]) == (None, None, "skip")
    host.sync(force=True)
    assert host.scheduler.get("q").catch_up is None  # the spec's rule
