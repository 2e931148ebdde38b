"""The Savings page's trade picture (issue 42, point 5), through the app: each deployment's
own four weeks of rollups replayed once a day and price, drawn, listed, and kept."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from decider.traffickit import add_deployment, add_minutes, working_hours_requests
from fastapi.testclient import TestClient
from support import at

from dgxmm.clock import ManualClock
from dgxmm.decider.idle import WaitBudgets
from dgxmm.decider.schedules.service import ScheduleService
from dgxmm.fleet import Fleet, Gpu, GpuInventory, InventorySource
from dgxmm.lab.trade import LADDER_STEPS_S, PRICED_PRICES, budget_traffic
from dgxmm.server import FLEET_ROUTES, SCHEDULE_ROUTES, Host, Role, Services, Tokens, create_app
from dgxmm.store import Store
from dgxmm.time_units import DAY_US, MINUTE_US

ZONE = "Europe/Berlin"
# The anchors, the ladder's sweep, the priced policy's sweep, the two oracles (no budget).
POINTS = 3 + len(LADDER_STEPS_S) + len(PRICED_PRICES) + 2


@dataclass
class Env:
    client: TestClient
    services: Services
    deployment: int


@pytest.fixture
def env(fresh_db: Path) -> Iterator[Env]:
    clock = ManualClock(at("2026-06-29T12:00:00+02:00"))  # a Monday
    store = Store.open(fresh_db, clock=clock)
    fleet = Fleet(
        store,
        inventory=GpuInventory(
            gpus=(Gpu(index=0, name="H100", memory_gib=80.0),),
            source=InventorySource.CONFIGURATION,
        ),
        clock=clock,
    )
    schedules = ScheduleService(store, fleet, clock=clock)
    host = Host(store, time_zone=ZONE, clock=clock)
    tokens = Tokens(store.engine, clock)
    services = Services(host=host, tokens=tokens, fleet=fleet, schedules=schedules)
    app = create_app(services, [FLEET_ROUTES, SCHEDULE_ROUTES])
    deployment = add_deployment(store, "office", zone=ZONE, awake=40.0, asleep=4.0)
    now = clock.now_us()
    add_minutes(
        store,
        deployment,
        working_hours_requests(ZONE, now - 35 * DAY_US, now, every_us=10 * MINUTE_US),
    )
    add_deployment(store, "quiet", zone=ZONE)  # nothing on record
    with TestClient(app) as client:
        client.headers["Authorization"] = f"Bearer {tokens.create(Role.VIEWER, 'victor')}"
        yield Env(client=client, services=services, deployment=deployment)
    host.stop()
    fleet.close()
    store.close()


def test_the_page_draws_each_deployments_trade_and_keeps_it_for_the_day(env: Env) -> None:
    page = env.client.get("/savings?from=2026-06-29&to=2026-06-29")
    assert page.status_code == 200, page.text
    html = page.text
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="chart savings-chart trade"' in html
    assert html.count('<g class="point series-') == POINTS
    labels = ("ollama-keep-alive-5m", "first step 30 s", "at 0.03", "oracle", "lazy oracle at 0.1")
    for label in labels:
        assert f'data-label="{label}"' in html
        assert f'<tr data-point="{label}">' in html
    # Its own last 28 whole local days: 20 weekdays of 48 requests.
    assert "Its 960 recorded requests of" in html
    assert "the priced policy at a sweep of prices of waiting, and both oracles" in html
    assert "No request on record in its last four weeks" in html  # the quiet one
    fleet = env.services.fleet
    assert fleet is not None
    assert env.services.schedules is not None
    office = fleet.deployments.get(env.deployment)
    now = env.services.host.clock.now_us()
    kept = env.services.trades.cached(env.services.schedules, office, now_us=now, price=0.1)
    assert kept is not None
    assert len(kept.points) == POINTS
    assert kept.start_us == at("2026-06-01T00:00:00+02:00")
    assert kept.end_us == at("2026-06-29T00:00:00+02:00")
    # Another price is another picture: the lazy oracle and the costs at it.
    dear = env.client.get("/savings?price=1").text
    assert 'data-label="lazy oracle at 1"' in dear
    assert env.services.trades.cached(env.services.schedules, office, now_us=now, price=1.0)


def test_a_busy_deployments_picture_replays_its_latest_requests_and_says_so(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("dgxmm.lab.trade.MAX_REQUESTS", 100)
    html = env.client.get("/savings?deployment=office").text
    assert "(its latest only: the page replays at most" in html
    assert "Its 100 recorded requests of" in html  # one a minute at most: exactly the latest
    assert html.count('<g class="point series-') == POINTS


def test_a_budgeted_deployments_picture_has_the_point_of_the_price_its_budget_found(
    env: Env,
) -> None:
    fleet, schedules = env.services.fleet, env.services.schedules
    assert fleet is not None
    assert schedules is not None
    fleet.deployments.update(env.deployment, "user:alice", idle_wait_budget={"mean_ms": 100})
    budgets = WaitBudgets(
        fleet.store,
        fleet,
        replay=lambda d, now: budget_traffic(fleet, schedules, d, now),
        clock=env.services.host.clock,
    )
    [choice] = budgets.refresh(env.deployment)
    assert choice.chosen is not None
    services = replace(env.services, budgets=budgets)
    env.client.app.state.services = services  # type: ignore[attr-defined]
    html = env.client.get("/savings?deployment=office").text
    label = f"budget at {choice.price:g}"
    assert html.count('<g class="point series-') == POINTS + 1
    assert "the priced policy at a sweep of prices of waiting and at the price its wait" in html
    assert f'data-series="budget" data-label="{label}"' in html
    # The point is the search's own: the same weeks replayed at the same price.
    found = f'data-freed="{choice.chosen.freed_gib_h:.3f}"'
    assert f'data-label="{label}" {found}' in html
