"""A wake or start schedule's lead through the API and on the schedules page (issue 25): how
early it begins and where the figure came from; a sleep or stop has none."""

from __future__ import annotations

import html
from collections.abc import Iterator

import pytest
from decider.schedulekit import Kit
from decider.schedulekit import kit as kit  # noqa: PLC0414  (the fixture)
from fastapi.testclient import TestClient

from dgxmm.fleet import EventAction, EventOutcome
from dgxmm.server import FLEET_ROUTES, SCHEDULE_ROUTES, Host, Role, Services, Tokens, create_app
from dgxmm.time_units import SECOND_US


@pytest.fixture
def admin(kit: Kit) -> Iterator[TestClient]:
    host = Host(kit.store, time_zone="Europe/Berlin", clock=kit.clock)
    tokens = Tokens(kit.store.engine, kit.clock)
    services = Services(host=host, tokens=tokens, fleet=kit.fleet, schedules=kit.schedules)
    with TestClient(create_app(services, [FLEET_ROUTES, SCHEDULE_ROUTES])) as client:
        client.headers["Authorization"] = f"Bearer {tokens.create(Role.ADMIN, 'alice')}"
        yield client
    host.stop()


def leads(admin: TestClient, deployment: int) -> dict[str, object]:
    """Each schedule's lead by its action."""
    listed = admin.get(f"/api/deployments/{deployment}/schedules").json()["schedules"]
    return {s["action"]: s["lead"] for s in listed}


def test_a_measured_lead_says_its_p95_and_how_many_it_was_taken_of(
    kit: Kit, admin: TestClient
) -> None:
    deployment = kit.deployment("lead", start=False)  # stopped: its next is a start
    base = f"/api/deployments/{deployment}/schedules"
    kit.fleet.deployments.update(deployment, "user:alice", wake_lead="measured")
    created = admin.post(base, json={"action": "start", "days": 31, "time": "07:00"}).json()
    admin.post(base, json={"action": "stop", "days": 31, "time": "22:00"})
    assert created["lead"] == {
        "seconds": 120.0,
        "says": "begins 120 s early: no starts measured yet: the default for them",
    }
    for seconds in (40, 50, 45):
        kit.fleet.events.record(
            deployment, EventAction.START, actor="user:alice", outcome=EventOutcome.DONE,
            took=(seconds * SECOND_US, 0),
        )  # fmt: skip
    says = "begins 50 s early: p95 of the last 3 starts"
    assert leads(admin, deployment) == {"start": {"seconds": 50.0, "says": says}, "stop": None}
    page = html.unescape(admin.get(f"/deployments/{deployment}/schedules").text)
    assert says in page
    assert page.count("begins ") == 1  # the stop has no lead


def test_a_lead_in_seconds_and_an_off_lead_say_so(kit: Kit, admin: TestClient) -> None:
    deployment = kit.deployment("set", start=False)
    base = f"/api/deployments/{deployment}/schedules"
    admin.post(base, json={"action": "wake", "days": 31, "time": "07:00"})
    admin.post(base, json={"action": "sleep", "days": 31, "time": "22:00"})
    assert leads(admin, deployment)["wake"] == {
        "seconds": 0.0,
        "says": "begins at its minute (wake lead off)",
    }
    admin.patch(f"/api/deployments/{deployment}", json={"wake_lead": 30})
    assert leads(admin, deployment) == {
        "wake": {"seconds": 30.0, "says": "begins 30 s early: set: 30 s"},
        "sleep": None,
    }
    assert admin.get("/api/deployments/999/schedules").status_code == 404
