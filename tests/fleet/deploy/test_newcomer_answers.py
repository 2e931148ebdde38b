"""What issue 45 added, as the server answers it: a wrong filter or cursor is a 400 naming its
field, never a 500; the runs without the system jobs' through the API too; a login lands
where ``/`` leads."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from dgxmm.fleet import EventAction, EventOutcome, Fleet
from dgxmm.server import Host


def _external(fleet: Fleet) -> int:
    made = fleet.deployments.create(
        actor="user:a", name="chat", model="org/chat", backend="external",
        base_url="http://127.0.0.1:9", gpus=[0], memory_gib_awake=10.0,
    )  # fmt: skip
    return made.id


@pytest.mark.parametrize(
    ("path", "query", "field"),
    [
        pytest.param("/runs", {"hide_system": "maybe"}, "hide_system", id="runs-page"),
        pytest.param("/api/runs", {"hide_system": "maybe"}, "hide_system", id="runs-api"),
        pytest.param(None, {"cursor": "garbage"}, "cursor", id="events-cursor"),
        pytest.param(
            None,
            {"cursor": "eyJsIjoiZGVwbG95bWVudC1ldmVudHMiLCJrIjoieCJ9"},
            "cursor",
            id="events-cursor-of-a-wrong-key",
        ),
    ],
)
def test_a_wrong_filter_or_cursor_is_a_400_naming_it(
    client: TestClient, fleet: Fleet, path: str | None, query: dict[str, str], field: str
) -> None:
    target = path or f"/deployments/{_external(fleet)}"
    answer = client.get(target, params=query, headers={"Accept": "application/json"})
    assert answer.status_code == 400
    assert field in answer.text


def test_the_runs_without_the_system_jobs(client: TestClient, fleet: Fleet, host: Host) -> None:
    host.store.define_job(name="mine", schedule="0 3 * * *", action="checkpoint")
    host.sync()
    host.run_now("mine")
    host.run_now("stats_flush")
    deployment = _external(fleet)
    fleet.events.record(deployment, EventAction.SLEEP, actor="idle", outcome=EventOutcome.DONE)
    every = client.get("/api/runs").json()["runs"]
    assert {"mine", "stats_flush", "chat"} <= {r["name"] for r in every}
    mine = client.get("/api/runs", params={"hide_system": "true"}).json()["runs"]
    assert {r["name"] for r in mine} == {"mine", "chat"}
    assert next(r for r in mine if r["name"] == "chat")["deployment_id"] == deployment


def test_a_login_without_a_page_asked_for_lands_where_home_leads(
    client: TestClient, host: Host
) -> None:
    token = client.headers["Authorization"].removeprefix("Bearer ")
    answer = client.post("/login", data={"token": token}, follow_redirects=False)
    assert (answer.status_code, answer.headers["location"]) == (303, "/")
    assert client.get("/", follow_redirects=False).headers["location"] == "/deployments"
    assert 'name="next" value="/"' in client.get("/login").text
