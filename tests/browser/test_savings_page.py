"""The Savings page's pictures in real Chromium, at 390 and 1280 px, light and dark: the
fleet's freed GiB-hours per day by who put memory down (issue 45 point 8), and each
deployment's trade of freed GiB-hours against mean added wait (issue 42 point 5), with the
priced policy's sweep and its wait budget's point; and the deployment's page saying what
its wait budget chose and why (issue 42 point 4)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from browser.browserkit import log_in
from decider.traffickit import add_deployment, add_minutes, working_hours_requests
from support import at, serving

from dgxmm.clock import ManualClock
from dgxmm.decider.idle import WaitBudgets
from dgxmm.decider.schedules.service import ScheduleService
from dgxmm.fleet import (
    DeploymentState,
    EventAction,
    EventOutcome,
    Fleet,
    Gpu,
    GpuInventory,
    InventorySource,
)
from dgxmm.lab.trade import LADDER_STEPS_S, PRICED_PRICES, budget_traffic
from dgxmm.server import FLEET_ROUTES, SCHEDULE_ROUTES, Host, Role, Services, Tokens, create_app
from dgxmm.store import Store
from dgxmm.time_units import DAY_US, HOUR_US, MINUTE_US

ZONE = "Europe/Berlin"
NOW = "2026-06-29T12:00:00+02:00"  # a Monday


@dataclass
class Saved:
    base: str
    token: str
    office: int
    price: float  # the one its wait budget found


# The anchors, the ladder's and the priced policy's sweeps, the budget's point, the oracles.
POINTS = 3 + len(LADDER_STEPS_S) + len(PRICED_PRICES) + 1 + 2


@pytest.fixture
def saved(fresh_db: Path) -> Iterator[Saved]:
    clock = ManualClock(at(NOW))
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
    token = tokens.create(Role.ADMIN, "alice")
    now = clock.now_us()
    office = add_deployment(store, "office", zone=ZONE, awake=40.0, asleep=4.0)
    add_minutes(
        store, office, working_hours_requests(ZONE, now - 35 * DAY_US, now, every_us=10 * MINUTE_US)
    )
    # Three days of sleeps and stops by the idle ladder, a schedule and a person.
    first = at("2026-06-26T00:00:00+02:00")
    for day, (down, actor) in enumerate(
        ((EventAction.SLEEP, "idle"), (EventAction.STOP, "schedule:1"),
         (EventAction.SLEEP, "user:alice"))
    ):  # fmt: skip
        midnight = first + day * DAY_US
        for offset, action, who, state in (
            (8 * HOUR_US, EventAction.START, "user:alice", DeploymentState.RUNNING),
            (18 * HOUR_US, down, actor,
             DeploymentState.SLEEPING if down is EventAction.SLEEP else DeploymentState.STOPPED),
        ):  # fmt: skip
            fleet.events.record(office, action, actor=who, outcome=EventOutcome.DONE,
                                state=state.value, at_us=midnight + offset)  # fmt: skip
    fleet.deployments.update(office, "user:alice", idle_policy="priced",
                             idle_wait_budget={"mean_ms": 100})  # fmt: skip
    budgets = WaitBudgets(
        store, fleet, replay=lambda d, now_us: budget_traffic(fleet, schedules, d, now_us),
        clock=clock,
    )  # fmt: skip
    [choice] = budgets.refresh()
    app = create_app(
        Services(host=host, tokens=tokens, fleet=fleet, schedules=schedules, budgets=budgets),
        [FLEET_ROUTES, SCHEDULE_ROUTES],
    )
    with serving(app) as base:
        yield Saved(base=base, token=token, office=office, price=choice.price)
    host.stop()
    fleet.close()
    store.close()


# The rendered size of a chart's label, in CSS pixels: its font size times the SVG's scale.
LABEL_PX = """(selector) => {
  const svg = document.querySelector(selector);
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  return parseFloat(getComputedStyle(svg.querySelector('text.label')).fontSize) * scale;
}"""
FILL = "(selector) => getComputedStyle(document.querySelector(selector)).fill"


def test_the_savings_pictures_on_a_phone_and_wide_light_and_dark(
    browser: Any, saved: Saved
) -> None:
    context = browser.new_context(base_url=saved.base)
    page = context.new_page()
    page.set_default_timeout(60_000)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, saved.token, "/deployments")
    fills = {}
    for width, scheme in ((390, "dark"), (1280, "light")):
        page.set_viewport_size({"width": width, "height": 900})
        page.emulate_media(color_scheme=scheme)
        page.goto("/savings?from=2026-06-26&to=2026-06-28")
        days = page.locator("#freed-days svg.freed-days")
        assert days.is_visible()
        bars = days.locator("g.bar")
        assert bars.count() == 3
        # Each day's freed memory goes to who put it down: the night before, then the
        # evening's (stopped as created before the first start: the system's).
        actors = [
            set(bars.nth(n).locator("rect").evaluate_all("(r) => r.map((e) => e.dataset.actor)"))
            for n in range(3)
        ]
        assert actors == [{"system", "idle"}, {"idle", "schedule"}, {"schedule", "person"}]
        assert set(days.locator("g.legend text").all_text_contents()) >= {
            "idle", "schedule", "person",
        }  # fmt: skip
        trade = page.locator("details[data-trade=office] svg.trade")
        assert trade.is_visible()
        assert trade.locator("g.point").count() == POINTS
        assert trade.locator("g.legend text").all_text_contents() == [
            "anchors", "ladder", "priced", "budget", "oracles",
        ]  # fmt: skip
        budget = trade.locator('g.point[data-series="budget"]')
        assert budget.get_attribute("data-label") == f"budget at {saved.price:g}"
        assert trade.locator("polyline.sweep").count() == 2  # the ladder's and priced's
        rows = page.locator("details[data-trade=office] table.trade tbody tr")
        assert rows.count() == POINTS
        # Labels legible: 11 px or more at either width; nothing scrolls sideways.
        for chart in ("svg.freed-days", "svg.trade"):
            assert page.evaluate(LABEL_PX, chart) >= 11
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        fills[scheme] = page.evaluate(FILL, "svg.freed-days rect.actor-idle")
        assert page.locator("#savings-freed-by").inner_text().startswith("Freed by who")
    assert fills["dark"] != fills["light"]  # the theme's accent, in each
    context.close()
    assert errors == []


def test_the_deployments_page_says_what_its_budget_chose_on_a_phone_and_wide(
    browser: Any, saved: Saved
) -> None:
    context = browser.new_context(base_url=saved.base)
    page = context.new_page()
    page.set_default_timeout(60_000)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, saved.token, "/deployments")
    for width in (390, 1280):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"/deployments/{saved.office}")
        shown = page.locator("#wait-budget")
        assert shown.is_visible()
        assert shown.get_attribute("data-state") == "met"
        text = shown.inner_text()
        assert text.startswith("100 ms mean added wait: on the last 28 days: ")
        assert f"within the budget of 100 ms mean added wait, at a price of {saved.price:g}" in (
            text
        )
        assert "(computed " in text
        policy = page.locator("#idle-policy").inner_text()
        assert f"price of waiting of {saved.price:g} GiB-hours" in policy
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        # The form takes it in its two boxes, as set.
        page.goto(f"/deployments/{saved.office}/edit")
        assert page.locator('input[name="idle_wait_budget_mean_ms"]').input_value() == "100"
        assert page.locator('input[name="idle_wait_budget_p99_s"]').input_value() == ""
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    context.close()
    assert errors == []
