"""The Deployments page in real Chromium, on a live server with real stand-in deployments:
start and stop buttons, and the plan preview before a start that has to evict."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from browser.browserkit import log_in
from support import free_port, serving

from dgxmm.fleet import Fleet, Gpu, GpuInventory, InventorySource
from dgxmm.server import FLEET_ROUTES, Host, Role, Services, Tokens, create_app
from dgxmm.store import Store

STANDIN = (sys.executable, "-m", "dgxmm.standin")


@dataclass
class LiveFleet:
    base: str
    token: str
    fleet: Fleet


@pytest.fixture
def live_fleet(fresh_db: Path) -> Iterator[LiveFleet]:
    store = Store.open(fresh_db)
    inventory = GpuInventory(
        gpus=(Gpu(index=0, name="H100", memory_gib=80.0),),
        source=InventorySource.CONFIGURATION,
    )
    fleet = Fleet(store, inventory=inventory, stop_grace_s=5.0)
    tokens = Tokens(store.engine, store.clock)
    token = tokens.create(Role.ADMIN, "alice")
    host = Host(store, time_zone="Europe/Berlin", tick_seconds=0.2, system_jobs=fleet.system_jobs())
    host.start()
    app = create_app(Services(host=host, tokens=tokens, fleet=fleet), [FLEET_ROUTES])
    with serving(app) as base:
        yield LiveFleet(base=base, token=token, fleet=fleet)
    host.stop()
    for deployment in fleet.deployments.list():
        fleet.deployer.stop(deployment.id, actor="system")
    fleet.close()
    store.close()


@pytest.fixture
def fleet_page(browser: Any, live_fleet: LiveFleet) -> Iterator[Any]:
    context = browser.new_context(base_url=live_fleet.base)
    opened = context.new_page()
    opened.set_default_timeout(60_000)
    log_in(opened, live_fleet.token, "/deployments")
    yield opened
    context.close()


def add(fleet: Fleet, name: str, *, priority: int, awake: float) -> int:
    created = fleet.deployments.create(
        actor="user:alice",
        name=name,
        model=f"{name}-model",
        backend="process",
        command=[*STANDIN, "--port", "{port}", "--model", f"{name}-model"],
        port=free_port(),
        gpus=[0],
        memory_gib_awake=awake,
        memory_gib_asleep=5.0,
        priority=priority,
        startup_timeout_s=60.0,
    )
    return created.id


def test_it_starts_and_stops_a_deployment_with_its_buttons(
    fleet_page: Any, live_fleet: LiveFleet
) -> None:
    add(live_fleet.fleet, "chat", priority=50, awake=30)
    fleet_page.reload()
    row = "tr[data-deployment=chat]"
    fleet_page.click(f"{row} button[data-deploy-action=start]")
    fleet_page.locator(f"{row}[data-state=running]").wait_for()
    assert "chat: start done" in fleet_page.locator("#flash").inner_text()
    assert live_fleet.fleet.deployments.by_name("chat").state.value == "running"
    assert "30 of 80 GiB held" in fleet_page.locator(".gpu[data-gpu='0']").inner_text()

    fleet_page.click(f"{row} button[data-deploy-action=stop]")
    dialog = fleet_page.locator("#confirm[open]")
    dialog.get_by_text("Stop chat?").wait_for()
    fleet_page.click("#confirm button[data-confirm=no]")  # asked first: a no changes nothing
    assert not dialog.is_visible()
    assert live_fleet.fleet.deployments.by_name("chat").state.value == "running"
    fleet_page.click(f"{row} button[data-deploy-action=stop]")
    fleet_page.click("#confirm button[data-confirm=yes]")
    fleet_page.locator(f"{row}[data-state=stopped]").wait_for()
    assert live_fleet.fleet.deployments.by_name("chat").state.value == "stopped"
    assert fleet_page.locator(f"{row} button[data-deploy-action=start]").is_visible()


def test_it_shows_the_plan_before_a_start_that_evicts(
    fleet_page: Any, live_fleet: LiveFleet
) -> None:
    fleet = live_fleet.fleet
    batch = add(fleet, "batch", priority=10, awake=50)
    add(fleet, "chat", priority=80, awake=50)
    fleet.deployer.start(batch, actor="user:alice")
    fleet_page.reload()

    fleet_page.click("tr[data-deployment=chat] button[data-deploy-action=start]")
    preview = fleet_page.locator("#plan-preview")
    preview.wait_for(state="visible")
    steps = preview.locator("li")
    assert steps.count() == 1
    assert steps.first.get_attribute("data-deployment") == "batch"
    assert steps.first.get_attribute("data-evict") == "sleep"
    assert "chat does not fit" in preview.inner_text()
    # Shown before it runs: nothing has changed yet.
    assert fleet.deployments.by_name("batch").state.value == "running"
    assert fleet.deployments.by_name("chat").state.value == "stopped"

    fleet_page.click("#plan-cancel")
    assert not preview.is_visible()
    assert fleet.deployments.by_name("chat").state.value == "stopped"

    fleet_page.click("tr[data-deployment=chat] button[data-deploy-action=start]")
    preview.wait_for(state="visible")
    fleet_page.click("#plan-confirm")
    fleet_page.locator("tr[data-deployment=chat][data-state=running]").wait_for()
    assert fleet_page.locator("tr[data-deployment=batch]").get_attribute("data-state") == (
        "sleeping"
    )
    assert "batch: sleep done" in fleet_page.locator("#flash").inner_text()


def test_a_start_that_cannot_make_room_says_why(fleet_page: Any, live_fleet: LiveFleet) -> None:
    fleet = live_fleet.fleet
    vip = add(fleet, "vip", priority=90, awake=50)
    add(fleet, "intern", priority=5, awake=50)
    fleet.deployer.start(vip, actor="user:alice")
    fleet_page.reload()
    fleet_page.click("tr[data-deployment=intern] button[data-deploy-action=start]")
    preview = fleet_page.locator("#plan-preview")
    preview.wait_for(state="visible")
    assert "intern cannot start" in preview.inner_text()
    assert "20 GiB short" in preview.inner_text()
    assert not fleet_page.locator("#plan-confirm").is_visible()
    assert fleet.deployments.by_name("intern").state.value == "stopped"


def test_a_deployments_page_shows_its_measured_sleep_and_stop_times_at_390_and_1280_px(
    fleet_page: Any, live_fleet: LiveFleet
) -> None:
    fleet = live_fleet.fleet
    deployment = add(fleet, "timed", priority=50, awake=30)
    fleet.deployer.start(deployment, actor="user:alice")
    fleet.deployer.sleep(deployment, actor="user:alice")
    fleet.deployer.wake(deployment, actor="user:alice")
    fleet.deployer.stop(deployment, actor="user:alice")
    for width in (390, 1280):
        fleet_page.set_viewport_size({"width": width, "height": 800})
        fleet_page.goto(f"/deployments/{deployment}")
        shown = fleet_page.locator("#down-times")
        one, two, stops = shown.locator(".down-time").all_inner_texts()
        assert one.startswith("level-1 sleeps: ")
        assert one.endswith(" (mean of the last 1)")
        assert two == "level-2 sleeps: none measured yet"
        assert stops.startswith("stops: ")
        assert stops.endswith(" (mean of the last 1)")
        # Beside the wake times, in the same column, its lines wrapped within it, none cut;
        # and no fact widens the list past the screen (the server log's path, one long
        # unbroken line, made it 519 px wide at 390 px).
        assert fleet_page.evaluate(
            "(() => { const f = document.querySelector('#facts');"
            " return f.scrollWidth <= f.clientWidth"
            " && f.getBoundingClientRect().right <= innerWidth; })()"
        ), width
        box, wake = shown.bounding_box(), fleet_page.locator("#wake-times").bounding_box()
        assert box is not None
        assert wake is not None
        assert (box["x"], box["width"]) == (wake["x"], wake["width"])
        assert shown.evaluate("e => e.scrollWidth <= e.clientWidth"), width
        assert shown.evaluate(
            "e => [...e.children].every(s => s.getBoundingClientRect().width < 390)"
        )
