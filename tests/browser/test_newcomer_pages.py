"""What a newcomer could not find (issue 45), in real Chromium at 390 and 1280 px: the proxy's
address with a copy button and an example request, what to do without a proxy, the landing
page after a login, a deployment's events paged newest first, the Runs page's filter that
hides system jobs and its deployment links, and the smaller things (the node filter's
placeholder, the zone said once, refusals and MiB on the Proxy page, the glossary)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import pytest
from browser.browserkit import log_in
from support import serving

from dgxmm.fleet import EventAction, EventOutcome, Fleet, Gpu, GpuInventory, InventorySource
from dgxmm.proxy import ProxyStats, Refusal
from dgxmm.server import FLEET_ROUTES, Host, Role, Services, Tokens, create_app
from dgxmm.store import Store
from dgxmm.time_units import MINUTE_US

PROXY_URL = "http://127.0.0.1:8001"  # shown on the pages only: nothing is sent to it
WIDTHS = [pytest.param(390, id="390px"), pytest.param(1280, id="1280px")]


@dataclass
class Served:
    base: str  # with a proxy
    bare: str  # the same store and fleet, served without a proxy
    token: str
    host: Host
    fleet: Fleet
    chat: int  # a deployment with 60 events


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    data = tmp_path_factory.mktemp("newcomer")
    store = Store.open(data / "dgxmm.db", data_dir=data)
    inventory = GpuInventory(
        gpus=(Gpu(index=0, name="H100", memory_gib=80.0),), source=InventorySource.CONFIGURATION
    )
    fleet = Fleet(store, inventory=inventory, stop_grace_s=5.0)
    tokens = Tokens(store.engine, store.clock)
    token = tokens.create(Role.ADMIN, "alice")
    host = Host(store, time_zone="Europe/Berlin", tick_seconds=0.2)
    host.start()
    chat = fleet.deployments.create(
        actor="user:a", name="chat", model="org/chat-8b", backend="external",
        base_url="http://127.0.0.1:9", gpus=[0], memory_gib_awake=40.0,
    )  # fmt: skip
    now = store.clock.now_us()
    for minutes_ago in range(60, 0, -1):  # oldest first; ids do not follow time below
        fleet.events.record(
            chat.id, EventAction.SLEEP, actor="idle", outcome=EventOutcome.DONE,
            detail=f"sleep {minutes_ago} min ago", at_us=now - minutes_ago * MINUTE_US,
        )  # fmt: skip
    stats = ProxyStats(store.clock)
    stats.refused(Refusal.HOLD_FULL)
    with ExitStack() as stack:
        base = stack.enter_context(
            serving(
                create_app(
                    Services(
                        host=host, tokens=tokens, fleet=fleet, proxy=stats, proxy_url=PROXY_URL
                    ),
                    [FLEET_ROUTES],
                )
            )
        )
        bare = stack.enter_context(
            serving(create_app(Services(host=host, tokens=tokens, fleet=fleet), [FLEET_ROUTES]))
        )
        yield Served(base=base, bare=bare, token=token, host=host, fleet=fleet, chat=chat.id)
    host.stop()
    fleet.close()
    store.close()


@pytest.fixture
def browse(browser: Any) -> Iterator[Any]:
    """Open a logged-in page on a base URL at a width; no script error on any of them."""
    contexts: list[Any] = []
    errors: list[str] = []

    def open_page(base: str, token: str, width: int, then: str | None = "/deployments") -> Any:
        context = browser.new_context(
            base_url=base,
            viewport={"width": width, "height": 900},
            permissions=["clipboard-read", "clipboard-write"],
        )
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.on("pageerror", lambda error: errors.append(str(error)))
        log_in(page, token, then)
        return page

    yield open_page
    for context in contexts:
        context.close()
    assert errors == []


def _fits(page: Any, width: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize("width", WIDTHS)
def test_the_proxys_address_is_first_with_a_copy_button_and_an_example(
    browse: Any, served: Served, width: int
) -> None:
    page = browse(served.base, served.token, width)
    for path in ("/proxy", "/deployments", f"/deployments/{served.chat}"):
        page.goto(path)
        assert page.locator("#proxy-base").inner_text() == f"{PROXY_URL}/v1"
        _fits(page, width)
    # The deployment's page: the example names its own model, and copies whole.
    if not page.locator("#proxy-example").get_attribute("open"):
        page.locator("#proxy-example summary").click()
    example = page.locator("#proxy-example-code").inner_text()
    assert 'model="org/chat-8b"' in example
    assert f'base_url="{PROXY_URL}/v1"' in example
    page.locator("#proxy-example-copy").click()
    page.locator("#flash").get_by_text("copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == example
    page.locator("#proxy-base-copy").click()
    page.wait_for_function(
        f"async () => (await navigator.clipboard.readText()) === '{PROXY_URL}/v1'"
    )
    _fits(page, width)


@pytest.mark.parametrize("width", WIDTHS)
def test_without_a_proxy_the_pages_say_how_to_start_one(
    browse: Any, served: Served, width: int
) -> None:
    page = browse(served.bare, served.token, width)
    for path in ("/deployments", f"/deployments/{served.chat}"):
        page.goto(path)
        assert page.locator("#proxy-base").count() == 0
        assert "--proxy-port" in page.locator("#proxy-address-off").inner_text()
        _fits(page, width)


@pytest.mark.parametrize("width", WIDTHS)
def test_a_login_lands_where_home_leads(browse: Any, served: Served, width: int) -> None:
    page = browse(served.base, served.token, width, then=None)
    assert page.url.endswith("/deployments")  # not Scheduled jobs: "/" leads here with a fleet


@pytest.mark.parametrize("width", WIDTHS)
def test_a_deployments_events_are_paged_newest_first(
    browse: Any, served: Served, width: int
) -> None:
    page = browse(served.base, served.token, width)
    page.goto(f"/deployments/{served.chat}")
    rows = page.locator("#events tbody tr")
    assert rows.count() == 50
    # The newest first: its create (just now), then the sleeps of 1, 2, ... minutes ago.
    assert rows.first.get_attribute("data-action") == "create"
    details = page.locator("#events tbody tr td.detail").all_inner_texts()
    assert details[1:3] == ["sleep 1 min ago", "sleep 2 min ago"]
    assert page.locator("#events-newest").count() == 0
    page.locator("#events-older").click()
    page.wait_for_url("**cursor=**")
    older = page.locator("#events tbody tr td.detail").all_inner_texts()
    assert older == [f"sleep {m} min ago" for m in range(50, 61)]  # the rest, oldest last
    assert page.locator("#events-older").count() == 0
    _fits(page, width)
    page.locator("#events-newest").click()
    page.wait_for_function("!location.search.includes('cursor')")
    assert page.locator("#events tbody tr td.detail").nth(1).inner_text() == "sleep 1 min ago"
    assert page.evaluate("document.documentElement.scrollHeight") < 9000


@pytest.mark.parametrize("width", WIDTHS)
def test_the_runs_page_hides_system_jobs_and_links_deployments(
    browse: Any, served: Served, width: int
) -> None:
    host = served.host
    host.store.define_job(name="mine", schedule="0 3 * * *", action="checkpoint")
    host.sync()
    host.run_now("mine")
    host.run_now("stats_flush")
    page = browse(served.base, served.token, width, then="/runs")
    page.goto("/runs")
    assert page.locator("#runs tr[data-run^=job-] a[href='/jobs/stats_flush']").count() >= 1
    link = page.locator("#runs a.deployment-link").first
    assert link.get_attribute("href") == f"/deployments/{served.chat}"
    page.locator("#hide-system").check()
    page.locator("#runs-filter button[type=submit]").click()
    page.wait_for_url("**hide_system=true**")
    assert page.locator("#runs a[href='/jobs/stats_flush']").count() == 0
    assert page.locator("#runs a[href='/jobs/mine']").count() >= 1
    assert page.locator("#runs a.deployment-link").count() >= 1
    page.reload()  # kept in the URL
    assert page.locator("#hide-system").is_checked()
    _fits(page, width)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_smaller_things_a_newcomer_met(browse: Any, served: Served, width: int) -> None:
    page = browse(served.base, served.token, width)
    page.goto("/deployments")
    # The node filter's placeholder fits in its box.
    fits = page.evaluate(
        """() => {
            const input = document.querySelector('#deployment-filter input[name=node]');
            const style = getComputedStyle(input);
            const canvas = document.createElement('canvas').getContext('2d');
            canvas.font = style.font;
            const room = input.clientWidth - parseFloat(style.paddingLeft)
                - parseFloat(style.paddingRight);
            return canvas.measureText(input.placeholder).width <= room;
        }"""
    )
    assert fits
    # The footer names the zone once.
    assert page.locator("footer").inner_text().count("Europe/Berlin") == 1
    # The glossary: "held" explained where it is shown.
    assert "weights" not in (page.locator("abbr.gloss").first.get_attribute("title") or "x")
    assert "GPU memory" in (page.locator("abbr.gloss").first.get_attribute("title") or "")
    page.goto("/jobs/stats_flush")  # a system job's description: "... to the sidecar"
    assert "dgxmm.db.workload.json" in (
        page.locator("abbr.gloss").first.get_attribute("title") or ""
    )
    page.goto(f"/deployments/{served.chat}")
    assert "in all; one bar per 10 minutes" in page.locator("#traffic-total").inner_text()
    assert "level 2" in (page.locator("#wake-times").get_attribute("title") or "")
    page.goto("/proxy")
    # One refusal happened: its reason alone, not nine rows of 0.
    assert page.locator("#proxy-refusals tbody tr").count() == 1
    assert page.locator("#proxy-refusals tr[data-reason=hold_full]").count() == 1
    assert page.locator("#proxy-max_held_bytes").input_value() == "128"
    assert "MiB" in page.locator("label", has=page.locator("#proxy-max_held_bytes")).inner_text()
    _fits(page, width)
