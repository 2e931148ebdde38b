"""The proposals' HTTP API and page, through the app with admin and viewer tokens (SQLite)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from decider.traffickit import add_deployment, add_minutes, office_hours, weekly_traffic
from fastapi.testclient import TestClient
from support import Answer, at

from dgxmm.clock import ManualClock
from dgxmm.decider.proposals.service import ProposalService
from dgxmm.decider.schedules.service import ScheduleService
from dgxmm.fleet import Fleet, Gpu, GpuInventory, InventorySource
from dgxmm.server import FLEET_ROUTES, PROPOSAL_ROUTES, Host, Role, Services, Tokens, create_app
from dgxmm.store import Store
from dgxmm.time_units import DAY_US

ZONE = "Europe/Berlin"


@dataclass
class Env:
    store: Store
    clock: ManualClock
    proposals: ProposalService
    schedules: ScheduleService
    admin: TestClient
    viewer: TestClient
    deployment: int


@pytest.fixture
def env(fresh_db: Path) -> Iterator[Env]:
    clock = ManualClock(at("2026-06-01T00:00:00+00:00"))
    store = Store.open(fresh_db, clock=clock)
    fleet = Fleet(
        store,
        inventory=GpuInventory(
            gpus=(Gpu(index=0, name="H100", memory_gib=80.0),),
            source=InventorySource.CONFIGURATION,
            note="configured for the tests",
        ),
        clock=clock,
    )
    schedules = ScheduleService(store, fleet, clock=clock)
    proposals = ProposalService(store, fleet, schedules, clock=clock)
    host = Host(store, time_zone=ZONE, clock=clock)
    tokens = Tokens(store.engine, clock)
    app = create_app(
        Services(host=host, tokens=tokens, fleet=fleet, schedules=schedules, proposals=proposals),
        [FLEET_ROUTES, PROPOSAL_ROUTES],
    )
    deployment = add_deployment(store, "llama", zone=ZONE)
    now = clock.now_us()
    add_minutes(store, deployment, weekly_traffic(ZONE, now - 30 * DAY_US, now, busy=office_hours))
    with TestClient(app) as admin, TestClient(app) as viewer:
        admin.headers["Authorization"] = f"Bearer {tokens.create(Role.ADMIN, 'alice')}"
        viewer.headers["Authorization"] = f"Bearer {tokens.create(Role.VIEWER, 'victor')}"
        yield Env(store, clock, proposals, schedules, admin, viewer, deployment)
    host.stop()
    fleet.close()
    store.close()


def _ok(response: Answer) -> Any:
    """The JSON body of a 200 answer (its shape is what the test asserts)."""
    assert response.status_code == 200, response.text
    return response.json()


def test_it_rebuilds_and_reads_a_profile(env: Env) -> None:
    before = _ok(env.viewer.get(f"/api/deployments/{env.deployment}/traffic"))
    assert (before["built_at_us"], before["hours"]) == (None, [])
    assert _ok(env.admin.post("/api/traffic/rebuild", json={})) == {"rebuilt": [env.deployment]}
    profile = _ok(env.viewer.get(f"/api/deployments/{env.deployment}/traffic"))
    hours = profile["hours"]
    assert isinstance(hours, list)
    assert len(hours) == 168
    assert profile["built_at_us"] == env.clock.now_us()
    assert profile["time_zone"] == ZONE
    monday_10 = hours[10]
    assert monday_10["rpm_p95"] == pytest.approx(40.0)  # 1 in flight over 1.5 s
    assert monday_10["idle_weeks"] == 0


def test_it_answers_errors_in_the_projects_shape(env: Env) -> None:
    missing = env.viewer.get("/api/deployments/999/traffic")
    assert missing.status_code == 404
    assert missing.json() == {
        "error": "not_found",
        "field": None,
        "message": "no deployment named 999",
    }
    assert env.admin.post("/api/traffic/rebuild", json={"deployment_id": 999}).status_code == 404
    forbidden = env.viewer.post("/api/traffic/rebuild", json={})
    assert forbidden.status_code == 403
    assert forbidden.json()["error"] == "forbidden"
    wrong_type = env.admin.post("/api/traffic/rebuild", json={"deployment_id": "1"})
    assert wrong_type.status_code == 422
    assert wrong_type.json()["field"] == "deployment_id"
    assert (
        env.viewer.get(f"/api/deployments/{env.deployment}/proposals?status=maybe").status_code
        == 400  # a text outside an enum, in the query as in a body (issue 28)
    )
    assert env.viewer.get("/api/deployments/999/proposals").status_code == 404
    # The price of waiting a backtest's cost is given at (issue 42): a number >= 0.
    for price in ("-1", "nan", "inf", "cheap", ""):
        for path in (f"/api/deployments/{env.deployment}/proposals", "/api/proposals/1"):
            wrong = env.viewer.get(f"{path}?price={price}")
            assert wrong.status_code == 400, (path, price, wrong.text)
            assert wrong.json()["field"] == "price"
    assert env.viewer.get(f"/api/deployments/{env.deployment}/proposals?price=0").status_code == 200
    assert env.admin.post("/api/proposals/999/accept").status_code == 404
    assert env.admin.post("/api/proposals/999/dismiss").status_code == 404


def test_an_admin_accepts_a_proposal_over_http(env: Env) -> None:
    answer = _ok(env.admin.post("/api/traffic/rebuild", json={"propose": True}))
    (run,) = answer["proposals"]["deployments"]
    assert len(run["open"]) == 2
    listed = _ok(env.viewer.get(f"/api/deployments/{env.deployment}/proposals?status=open"))
    weeknights = next(p for p in listed["proposals"] if p["sleep"]["days"] == 15)
    assert (
        weeknights["description"]
        == "sleep Monday to Thursday at 22:00, wake Tuesday to Friday at 06:45"
    )
    assert weeknights["evidence"]["weeks_idle"] == weeknights["evidence"]["weeks_observed"]
    assert env.viewer.post(f"/api/proposals/{weeknights['id']}/accept").status_code == 403

    accepted = _ok(env.admin.post(f"/api/proposals/{weeknights['id']}/accept"))
    assert accepted["proposal"]["status"] == "accepted"
    assert [(s["action"], s["days"], s["time"], s["creator"]) for s in accepted["schedules"]] == [
        ("sleep", 15, "22:00", "user:alice"),
        ("wake", 30, "06:45", "user:alice"),
    ]
    again = env.admin.post(f"/api/proposals/{weeknights['id']}/accept")
    assert again.status_code == 409
    assert again.json() == {
        "error": "conflict",
        "field": None,
        "message": f"proposal {weeknights['id']} is accepted, not open",
    }
    assert len(env.schedules.list(env.deployment)) == 2
    one = _ok(env.viewer.get(f"/api/proposals/{weeknights['id']}"))
    assert one["decided_by"] == "user:alice"


def test_an_admin_dismisses_a_proposal_over_http(env: Env) -> None:
    env.admin.post("/api/traffic/rebuild", json={"propose": True})
    (first, *_) = _ok(env.viewer.get(f"/api/deployments/{env.deployment}/proposals"))["proposals"]
    dismissed = _ok(env.admin.post(f"/api/proposals/{first['id']}/dismiss"))
    assert dismissed["proposal"]["status"] == "dismissed"
    assert env.admin.post(f"/api/proposals/{first['id']}/dismiss").status_code == 409
    assert env.schedules.list(env.deployment) == []


def test_the_model_settings_over_http(env: Env) -> None:
    shown = _ok(env.viewer.get("/api/proposals/model"))
    assert shown["settings"] == {
        "enabled": True,
        "model": "feedback",
        "threshold": 0.7,
        "endpoint": None,
    }
    assert shown["ready"] is False
    assert "20 accepted and 20 dismissed" in shown["reason"]

    put = {
        "model": "openai",
        "threshold": 0.6,
        "endpoint": {"deployment": "llama", "timeout_s": 20},
    }
    assert env.viewer.put("/api/proposals/model", json=put).status_code == 403
    stored = _ok(env.admin.put("/api/proposals/model", json=put))
    assert stored["settings"] == {
        "enabled": True,
        "model": "openai",
        "threshold": 0.6,
        "endpoint": {"base_url": None, "deployment": "llama", "model": None, "timeout_s": 20.0},
    }
    shown = _ok(env.viewer.get("/api/proposals/model"))
    assert shown["ready"] is False
    assert shown["reason"] == "the chat endpoint's deployment 'llama' is stopped"

    refused = env.admin.put("/api/proposals/model", json={"threshold": 2})
    assert refused.status_code == 400
    assert refused.json()["field"] == "threshold"
    assert env.admin.put("/api/proposals/model", json={"threshold": "high"}).status_code == 422
    assert env.admin.put("/api/proposals/model", json={"colour": "blue"}).status_code == 422
    assert _ok(env.viewer.get("/api/proposals/model"))["settings"]["model"] == "openai"


def test_the_page_draws_the_week_and_the_proposals(env: Env) -> None:
    env.admin.post("/api/traffic/rebuild", json={"propose": True})
    page = env.admin.get(f"/deployments/{env.deployment}/traffic")
    assert page.status_code == 200
    html = page.text
    assert html.count('class="cell"') == 168
    assert 'class="proposed"' in html
    assert html.count('data-proposal-action="accept"') == 2
    # Monday 22:00-24:00 of the weeknights proposal, outlined on Monday's row.
    assert 'data-day="0" data-from="1320" data-to="1440"' in html
    viewer_page = env.viewer.get(f"/deployments/{env.deployment}/traffic")
    assert "data-proposal-action" not in viewer_page.text

    env.proposals.accept(env.proposals.list(env.deployment)[0].id, actor="user:alice")
    html = env.admin.get(f"/deployments/{env.deployment}/traffic").text
    assert 'class="asleep"' in html
    assert html.count('data-proposal-action="accept"') == 1
    deployment_page = env.admin.get(f"/deployments/{env.deployment}").text
    assert f'href="/deployments/{env.deployment}/traffic"' in deployment_page
    assert "1 open proposal<" in deployment_page
