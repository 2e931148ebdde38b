"""The Runs page in real Chromium: job runs and deployment actions in one list, filtered with
the keyboard, a run's page with the rows its query returned, at 390 px in the dark."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from browser.browserkit import log_in
from support import serving, standin_keys

from dgxmm.fleet import EventAction, EventOutcome, Fleet, Gpu, GpuInventory, InventorySource
from dgxmm.server import FLEET_ROUTES, Host, Role, Services, Tokens, create_app
from dgxmm.store import Store


@dataclass
class Served:
    base: str
    token: str
    host: Host
    fleet: Fleet


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    data = tmp_path_factory.mktemp("runs")
    store = Store.open(data / "dgxmm.db", data_dir=data)
    inventory = GpuInventory(
        gpus=(Gpu(index=0, name="H100", memory_gib=80.0),), source=InventorySource.CONFIGURATION
    )
    fleet = Fleet(store, inventory=inventory, stop_grace_s=5.0)
    tokens = Tokens(store.engine, store.clock)
    token = tokens.create(Role.ADMIN, "alice")
    host = Host(store, time_zone="Europe/Berlin", tick_seconds=0.2)
    host.start()
    app = create_app(Services(host=host, tokens=tokens, fleet=fleet), [FLEET_ROUTES])
    with serving(app) as base:
        yield Served(base=base, token=token, host=host, fleet=fleet)
    host.stop()
    fleet.close()
    store.close()


@pytest.fixture
def page(browser: Any, served: Served) -> Iterator[Any]:
    context = browser.new_context(base_url=served.base)
    opened = context.new_page()
    opened.set_default_timeout(30_000)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    log_in(opened, served.token, "/runs")
    yield opened
    context.close()
    assert errors == []


def test_the_runs_page_lists_both_kinds_filters_by_keyboard_and_opens_a_run(
    page: Any, served: Served
) -> None:
    store = served.host.store
    store.define_query("listing", None, "SELECT 1 AS one, 'two' AS two UNION ALL SELECT 3, 'four'")
    store.define_job(name="listing", schedule="0 3 * * *", action="query", query="listing")
    served.host.sync()
    served.host.run_now("listing")
    made = served.fleet.deployments.create(actor="user:a", **standin_keys("chat"))
    served.fleet.events.record(
        made.id, EventAction.SLEEP, actor="idle", outcome=EventOutcome.FAILED, detail="refused"
    )
    page.goto("/runs")
    assert page.locator("#runs tr[data-status=failed]").count() == 1
    assert page.locator("#runs tr[data-run^=job-]").count() >= 1
    # The filter with the keyboard only: the status menu, then Enter submits the form.
    page.locator("#runs-filter select[name=status]").focus()
    page.keyboard.press("Tab")  # and back, as a person tabbing through the form would
    page.keyboard.press("Shift+Tab")
    page.locator("#runs-filter select[name=status]").select_option("failed")
    page.locator("#runs-filter button[type=submit]").focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**/runs?status=failed**")
    assert page.locator("#runs tbody tr[data-run]").count() == 1
    page.locator("#runs tbody tr[data-run] a").first.click()
    page.wait_for_url("**/runs/actions/*")
    assert page.locator("#action-status").inner_text() == "failed"
    assert page.locator("#action-actor").inner_text() == "idle"
    page.goto("/runs?job=listing")
    page.locator("#runs tbody tr[data-run] a").first.focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**/runs/*")
    assert page.locator("#run-status").inner_text() == "succeeded"
    assert page.locator("#run-trigger").inner_text().startswith("manual")
    assert page.locator("#run-rows thead th").all_inner_texts() == ["one", "two"]
    assert page.locator("#run-rows tbody tr").count() == 2
    assert "2 rows, all kept" in page.locator("#run-rows-note").inner_text()


def test_the_newest_page_shows_a_new_run_without_a_reload(page: Any, served: Served) -> None:
    store = served.host.store
    store.define_job(name="fresh", schedule="0 3 * * *", action="checkpoint")
    served.host.sync()
    page.goto("/runs?job=fresh")
    assert page.locator("#runs tbody tr[data-run]").count() == 0
    served.host.run_now("fresh")
    page.locator("#runs tbody tr[data-run]").first.wait_for()


def test_the_runs_pages_fit_a_phone_in_the_dark(page: Any, served: Served) -> None:
    store = served.host.store
    store.define_query("wide", None, "SELECT 'a rather long value to see wrap' AS a, 2 AS b")
    store.define_job(name="wide", schedule="0 3 * * *", action="query", query="wide")
    served.host.sync()
    served.host.run_now("wide")
    page.set_viewport_size({"width": 390, "height": 800})
    page.emulate_media(color_scheme="dark")
    page.goto("/runs?job=wide")
    href = page.locator("#runs tbody tr[data-run] a").first.get_attribute("href")
    wide = {}
    for path in ("/runs", href):
        page.goto(path)
        if page.evaluate("document.documentElement.scrollWidth") > 390:
            wide[path] = page.evaluate("document.documentElement.scrollWidth")
    assert wide == {}
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background != "rgb(255, 255, 255)"


def test_a_wrong_filter_is_named(page: Any) -> None:
    answer = page.goto("/runs?since=yesterday")
    assert answer.status == 400
    assert "From: " in page.locator("#runs-wrong [data-error-for=since]").inner_text()


def open_runs_of(page: Any, served: Served, name: str) -> None:
    """Define a checkpoint job, run it once, and open the runs page filtered to it."""
    served.host.store.define_job(name=name, schedule="0 3 * * *", action="checkpoint")
    served.host.sync()
    served.host.run_now(name)
    page.goto(f"/runs?job={name}")


def test_a_poll_that_finds_nothing_new_leaves_the_table_alone(page: Any, served: Served) -> None:
    # The relative times write data-ago into the table, so the served copy and the one on the
    # page differ by those words alone: that is no change, and the table must not be swapped
    # (a swap would drop whatever a person was pointing at or tabbing through).
    open_runs_of(page, served, "still")
    page.evaluate("document.getElementById('runs').kept = true")  # on this element alone
    page.evaluate("live.refresh()")
    assert page.evaluate("document.getElementById('runs').kept") is True


def test_a_swap_keeps_the_keyboards_place(page: Any, served: Served) -> None:
    open_runs_of(page, served, "focused")
    first = page.locator("#runs tbody tr[data-run] a").first
    href = first.get_attribute("href")
    first.focus()
    served.host.run_now("focused")  # a new row on top: the table really changes
    page.evaluate("live.refresh()")
    assert page.locator("#runs tbody tr[data-run]").count() == 2
    assert page.evaluate("document.activeElement.getAttribute('href')") == href
    page.keyboard.press("Enter")
    page.wait_for_url(f"**{href}")
