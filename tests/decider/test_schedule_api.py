"""/api/deployments/{id}/schedules and /api/schedules/paused-all: viewers read, admins write,
bad input answers 400 naming the field, and every change is audited."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from decider.schedulekit import Kit
from decider.schedulekit import kit as kit  # noqa: PLC0414  (the fixture)
from fastapi.testclient import TestClient
from sqlalchemy import select

from dgxmm.fleet import EventAction, EventOutcome
from dgxmm.fleet.deployments.tables import audit_log
from dgxmm.server import FLEET_ROUTES, SCHEDULE_ROUTES, Host, Role, Services, Tokens, create_app
from dgxmm.store import reading


@pytest.fixture
def clients(kit: Kit) -> Iterator[tuple[TestClient, TestClient, int]]:
    host = Host(kit.store, time_zone="Europe/Berlin", clock=kit.clock)
    tokens = Tokens(kit.store.engine, kit.clock)
    services = Services(host=host, tokens=tokens, fleet=kit.fleet, schedules=kit.schedules)
    app = create_app(services, [FLEET_ROUTES, SCHEDULE_ROUTES])
    deployment = kit.deployment("api", start=False)
    with TestClient(app) as admin, TestClient(app) as viewer:
        admin.headers["Authorization"] = f"Bearer {tokens.create(Role.ADMIN, 'alice')}"
        viewer.headers["Authorization"] = f"Bearer {tokens.create(Role.VIEWER, 'victor')}"
        yield admin, viewer, deployment
    host.stop()


def test_it_creates_lists_changes_and_deletes_a_schedule(
    clients: tuple[TestClient, TestClient, int],
) -> None:
    admin, viewer, deployment = clients
    base = f"/api/deployments/{deployment}/schedules"
    created = admin.post(base, json={"action": "sleep", "days": 31, "time": "22:00"})
    assert created.status_code == 201, created.text
    body = created.json()
    assert (body["action"], body["days"], body["time"], body["time_zone"]) == (
        "sleep",
        31,
        "22:00",
        "Europe/Berlin",
    )
    assert (body["creator"], body["enabled"]) == ("user:alice", True)
    listed = viewer.get(base).json()
    assert listed["paused_all"] is False
    assert [s["id"] for s in listed["schedules"]] == [body["id"]]
    changed = admin.patch(f"{base}/{body['id']}", json={"time": "23:30", "enabled": False}).json()
    assert (changed["time"], changed["enabled"]) == ("23:30", False)
    assert admin.delete(f"{base}/{body['id']}").status_code == 200
    assert viewer.get(base).json()["schedules"] == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"action": "sleep", "days": 0, "time": "22:00"}, "days"),
        ({"action": "sleep", "days": 128, "time": "22:00"}, "days"),
        ({"action": "sleep", "days": 31, "time": "24:00"}, "time"),
        ({"action": "sleep", "days": 31, "time": "7:5"}, "time"),
        (
            {"action": "sleep", "days": 31, "time": "22:00", "time_zone": "Mars/Olympus"},
            "time_zone",
        ),
        ({"action": "nap", "days": 31, "time": "22:00"}, "action"),
    ],
    ids=["days-0", "days-128", "24:00", "7:5", "zone", "action"],
)
def test_it_refuses_bad_input_with_400_naming_the_field(
    clients: tuple[TestClient, TestClient, int], body: dict[str, object], field: str
) -> None:
    admin, _, deployment = clients
    response = admin.post(f"/api/deployments/{deployment}/schedules", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["field"] == field
    assert admin.get(f"/api/deployments/{deployment}/schedules").json()["schedules"] == []


def test_it_lists_every_wrong_field_of_a_schedule(
    clients: tuple[TestClient, TestClient, int],
) -> None:
    admin, _, deployment = clients
    path = f"/api/deployments/{deployment}/schedules"
    body = {"action": "sleep", "days": 0, "time": "24:00", "time_zone": "Mars/Olympus"}
    refused = admin.post(path, json=body)
    assert refused.status_code == 400
    assert [e["field"] for e in refused.json()["errors"]] == ["days", "time", "time_zone"]
    made = admin.post(path, json={"action": "sleep", "days": 31, "time": "22:00"}).json()
    changed = admin.patch(f"{path}/{made['id']}", json={"days": 200, "time": "7:5"})
    assert [e["field"] for e in changed.json()["errors"]] == ["days", "time"]


def test_it_answers_422_for_wrong_types_and_404_for_strangers(
    clients: tuple[TestClient, TestClient, int],
) -> None:
    admin, _, deployment = clients
    wrong = admin.post(
        f"/api/deployments/{deployment}/schedules",
        json={"action": "sleep", "days": "31", "time": "22:00"},
    )
    assert (wrong.status_code, wrong.json()["field"]) == (422, "days")
    assert (
        admin.post(
            "/api/deployments/999/schedules", json={"action": "sleep", "days": 31, "time": "22:00"}
        ).status_code
        == 404
    )
    created = admin.post(
        f"/api/deployments/{deployment}/schedules",
        json={"action": "wake", "days": 1, "time": "07:00"},
    ).json()
    other = admin.post(
        "/api/deployments",
        json={
            "name": "other",
            "model": "m",
            "backend": "external",
            "base_url": "http://127.0.0.1:9",
            "gpus": [0],
            "memory_gib_awake": 1.0,
        },
    ).json()
    assert (
        admin.delete(f"/api/deployments/{other['id']}/schedules/{created['id']}").status_code == 404
    )


def test_it_lets_viewers_read_but_not_change(clients: tuple[TestClient, TestClient, int]) -> None:
    _, viewer, deployment = clients
    assert viewer.get(f"/api/deployments/{deployment}/schedules").status_code == 200
    assert (
        viewer.post(
            f"/api/deployments/{deployment}/schedules",
            json={"action": "sleep", "days": 31, "time": "22:00"},
        ).status_code
        == 403
    )
    assert viewer.put("/api/schedules/paused-all", json={"paused_all": True}).status_code == 403


def test_it_pauses_every_schedule_and_audits_each_change(
    kit: Kit, clients: tuple[TestClient, TestClient, int]
) -> None:
    admin, viewer, deployment = clients
    created = admin.post(
        f"/api/deployments/{deployment}/schedules",
        json={"action": "start", "days": 127, "time": "12:00"},
    ).json()
    assert admin.put("/api/schedules/paused-all", json={"paused_all": True}).json() == {
        "paused_all": True
    }
    assert viewer.get("/api/schedules/paused-all").json() == {"paused_all": True}
    admin.patch(f"/api/deployments/{deployment}/schedules/{created['id']}", json={"days": 1})
    admin.delete(f"/api/deployments/{deployment}/schedules/{created['id']}")
    with reading(kit.store.engine) as connection:
        actions = [
            row.action
            for row in connection.execute(
                select(audit_log.c.action)
                .where(audit_log.c.actor == "user:alice")
                .order_by(audit_log.c.id)
            )
        ]
    assert [a for a in actions if a.startswith("schedule")] == [
        "schedule.create",
        "schedules.pause_all",
        "schedule.update",
        "schedule.delete",
    ]


def test_it_refuses_an_id_no_row_can_have(clients: tuple[TestClient, TestClient, int]) -> None:
    # Found by schemathesis: a 20-digit id reached the database and came back as a 500.
    admin, _, _ = clients
    huge = 2**64
    response = admin.get(f"/api/deployments/{huge}/schedules")
    assert (response.status_code, response.json()["field"]) == (422, "deployment_id")
    response = admin.patch(f"/api/deployments/1/schedules/{huge}", json={"enabled": True})
    assert (response.status_code, response.json()["field"]) == (422, "schedule_id")
    response = admin.get("/api/insights", params={"deployment_id": huge})
    assert (response.status_code, response.json()["field"]) == (422, "deployment_id")


def test_openapi_lists_the_schedule_actions(clients: tuple[TestClient, TestClient, int]) -> None:
    admin, _, _ = clients
    schemas = admin.get("/openapi.json").json()["components"]["schemas"]
    assert schemas["ScheduleAction"]["enum"] == ["sleep", "wake", "stop", "start"]


def test_a_deployments_events_link_the_schedule_that_acted(
    clients: tuple[TestClient, TestClient, int], kit: Kit
) -> None:
    admin, _, deployment = clients
    made = admin.post(
        f"/api/deployments/{deployment}/schedules",
        json={"action": "sleep", "days": 31, "time": "22:00"},
    ).json()
    kit.fleet.events.record(
        deployment,
        EventAction.SLEEP,
        actor=f"schedule:{made['id']}",
        outcome=EventOutcome.DONE,
    )
    page = admin.get(f"/deployments/{deployment}").text
    link = f'<a href="/deployments/{deployment}/schedules#schedule-{made["id"]}">'
    assert f"{link}schedule:{made['id']}</a>" in page
    schedules = admin.get(f"/deployments/{deployment}/schedules").text
    assert f'id="schedule-{made["id"]}"' in schedules


def test_forecast_only_is_an_admins_switch_audited_and_said_on_every_page(
    kit: Kit, clients: tuple[TestClient, TestClient, int]
) -> None:
    admin, viewer, _ = clients
    assert viewer.get("/api/schedules/forecast-only").json() == {"forecast_only": False}
    assert 'id="forecast-only"' not in admin.get("/deployments").text
    refused = viewer.put("/api/schedules/forecast-only", json={"forecast_only": True})
    assert refused.status_code == 403
    assert (
        admin.put("/api/schedules/forecast-only", json={"forecast_only": "yes"}).status_code == 422
    )
    answer = admin.put("/api/schedules/forecast-only", json={"forecast_only": True})
    assert answer.json() == {"forecast_only": True}
    assert kit.schedules.forecast_only()
    for page in ("/deployments", "/jobs", "/savings"):
        assert 'id="forecast-only"' in viewer.get(page).text, page
    with reading(kit.store.engine) as connection:
        audited = connection.execute(
            select(audit_log.c.action).where(audit_log.c.action == "decider.forecast_only")
        ).all()
    assert len(audited) == 1
