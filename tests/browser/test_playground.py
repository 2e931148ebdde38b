"""The browser playground in real Chromium: the engine runs in the page's Web Worker.

One page is shared by the tests of this module (Pyodide takes seconds to start), in a context
whose zone differs from the server's and which refuses every request that is not to the
loopback server. Each tick takes the page's time (``?clock=page``: Playwright's clock control
does not reach a worker), so the engine's time moves with ``page.clock``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from support import need, serving

import dgxmm
from dgxmm.server import Host, Services, Tokens, create_app
from dgxmm.server.pages.playground import FETCH_COMMAND, PLAYGROUND_FILES, missing_files
from dgxmm.store import Store

BROWSER_ZONE = "America/New_York"  # the server's is Europe/Berlin
START = "2026-06-01T09:58:30-04:00"  # a Monday morning in the browser's zone


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    need(
        not missing_files(PLAYGROUND_FILES),
        f"the playground's files are missing: run {FETCH_COMMAND}",
    )
    (wheel,) = PLAYGROUND_FILES.glob("dgxmm-*.whl")
    newest = max(path.stat().st_mtime for path in Path(dgxmm.__file__).parent.rglob("*.py"))
    need(
        wheel.stat().st_mtime >= newest, f"dgxmm's wheel is older than its source: {FETCH_COMMAND}"
    )
    store = Store.open(tmp_path_factory.mktemp("playground") / "dgxmm.db")
    host = Host(store, time_zone="Europe/Berlin", tick_seconds=0.2)
    with serving(create_app(Services(host=host, tokens=Tokens(store.engine, store.clock)))) as base:
        yield base
    store.close()


@pytest.fixture(scope="module")
def outside() -> list[str]:
    """The requests the context refused because they went to another host."""
    return []


@pytest.fixture(scope="module")
def loaded() -> list[str]:
    """The loopback requests the context let through (the worker's included)."""
    return []


@pytest.fixture(scope="module")
def playground(browser: Any, served: str, outside: list[str], loaded: list[str]) -> Iterator[Any]:
    context = browser.new_context(base_url=served, timezone_id=BROWSER_ZONE)

    def only_loopback(route: Any) -> None:
        if urlsplit(route.request.url).hostname == "127.0.0.1":
            loaded.append(urlsplit(route.request.url).path)
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    context.route("**/*", only_loopback)
    page = context.new_page()
    page.set_default_timeout(60_000)  # Pyodide's start on two shared cores
    page.clock.install(time=START)
    page.goto("/playground?clock=page")
    page.locator("body[data-ready=true]").wait_for()
    yield page
    context.close()


def test_it_shows_the_browsers_zone_and_lists_the_system_jobs_first(playground: Any) -> None:
    assert playground.locator("#zone").inner_text() == BROWSER_ZONE
    names = playground.locator("#jobs tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.job)"
    )
    assert names == ["stats_flush", "compact"]
    assert (
        playground.locator("tr[data-job=compact] input[data-action=enable]").is_checked() is False
    )


def test_it_runs_an_every_minute_job_in_the_worker(
    playground: Any, outside: list[str], loaded: list[str]
) -> None:
    playground.fill("#q-name", "note")
    playground.fill("#q-params", '{"label": "string"}')
    playground.fill(
        "#q-body",
        "CREATE TABLE IF NOT EXISTS notes (label TEXT); INSERT INTO notes VALUES (:label)",
    )
    playground.click("#q-save")
    playground.locator("#queries li[data-query=note]").wait_for()
    playground.click("#new-job")
    playground.fill("#name", "minutely")
    playground.select_option("#query", "note")
    playground.fill("#args", '{"label": "hi"}')
    playground.select_option("#presets", "* * * * *")
    playground.click("#save")
    row = playground.locator("tr[data-job=minutely]")
    row.wait_for()
    assert row.locator(".schedule").inner_text().startswith("* * * * *")
    assert row.locator(".last-run").inner_text() == "—"
    playground.clock.run_for("03:00")  # the page's 5 s ticks, as the worker's timer would
    row.locator(".last-run").get_by_text("succeeded").wait_for()
    assert int(row.locator(".runs").inner_text()) >= 2
    # Its time is the browser's: 2026-06-01 10:0x in New York, not Berlin's 16:0x.
    assert row.locator(".last-run").inner_text().startswith("2026-06-01 10:0")
    job_channel = playground.locator("#channels tr[data-channel=job] .count")
    assert int(job_channel.inner_text()) >= 2
    # The worker's own 5 s timer ticks too (it asks the page for the time in this mode).
    playground.locator("body[data-worker-ticks]").wait_for()
    assert outside == []
    # The worker's own loads went through the same filter: the runtime and both wheels.
    assert "/playground/files/pyodide.asm.wasm" in loaded
    assert sum(path.endswith(".whl") for path in loaded) == 2


def test_it_refuses_a_backup_job_beside_its_field(playground: Any) -> None:
    playground.click("#new-job")
    playground.fill("#name", "nightly_backup")
    playground.check("input[name=action][value=backup]")
    playground.fill("#path", "backups")
    playground.fill("#schedule", "0 3 * * *")
    playground.click("#save")
    slot = playground.locator("[data-error-for=path]")
    slot.get_by_text("the playground has no files").wait_for()
    assert playground.locator("#path").get_attribute("aria-invalid") == "true"
    assert playground.locator("tr[data-job=nightly_backup]").count() == 0


def test_it_defines_a_job_in_its_own_zone_and_refuses_an_unknown_one(playground: Any) -> None:
    playground.click("#new-job")
    playground.fill("#name", "tokyo")
    playground.check("input[name=action][value=checkpoint]")
    playground.fill("#schedule", "0 9 * * *")
    playground.fill("#time_zone", "Mars/Base")
    playground.click("#save")
    playground.locator("[data-error-for=time_zone]").get_by_text("unknown time zone").wait_for()
    assert playground.locator("tr[data-job=tokyo]").count() == 0
    playground.select_option("#zone-presets", "Asia/Tokyo")
    playground.click("#save")
    row = playground.locator("tr[data-job=tokyo]")
    row.locator(".job-zone").get_by_text("in Asia/Tokyo").wait_for()


def test_it_switches_a_job_off_with_a_note_shown_in_its_row(playground: Any) -> None:
    switch = playground.locator("tr[data-job=stats_flush] input[data-action=enable]")
    switch.uncheck()
    playground.fill("#pause-note", "flushed by hand")
    playground.click("#pause [data-pause=yes]")
    row = playground.locator("tr[data-job=stats_flush]")
    row.locator(".pause-note").get_by_text("flushed by hand").wait_for()
    assert not row.locator("input[data-action=enable]").is_checked()


def test_it_defines_retries_with_a_preset(playground: Any) -> None:
    playground.click("#new-job")
    playground.fill("#name", "retried")
    playground.check("input[name=action][value=checkpoint]")
    playground.fill("#schedule", "0 3 * * *")
    playground.fill("#retries", "2")
    playground.click("#save")
    playground.locator("[data-error-for=retry_backoff_s]").get_by_text("first wait").wait_for()
    playground.select_option("#retry-presets", label="3 retries: 30 s, doubling to 5 min")
    playground.click("#save")
    playground.locator("tr[data-job=retried]").wait_for()


def test_it_defines_a_catch_up_and_an_overlap_with_a_preset(playground: Any) -> None:
    playground.click("#new-job")
    playground.fill("#name", "steered")
    playground.check("input[name=action][value=checkpoint]")
    playground.fill("#schedule", "0 3 * * *")
    playground.select_option("#coalesce", "earliest")
    playground.fill("#catchup_window_s", "-1")
    playground.click("#save")
    playground.locator("[data-error-for=catchup_window_s]").get_by_text("positive").wait_for()
    playground.select_option("#catchup-presets", label="the latest time missed within an hour")
    playground.select_option("#overlap", "cancel_other")
    playground.click("#save")
    playground.locator("tr[data-job=steered]").wait_for()


def test_it_leads_back_to_the_console_and_styles_its_tables_as_the_consoles(
    playground: Any,
) -> None:
    # Issue 31, defect 7: the playground was a dead end, with unstyled tables.
    back = playground.get_by_role("link", name="Back to the console")
    assert back.get_attribute("href") == "/"
    for table in ("#jobs", "#channels"):
        style = playground.locator(table).evaluate(
            "t => [getComputedStyle(t).borderCollapse, getComputedStyle(t).width]"
        )
        assert style[0] == "collapse", table
        width = playground.locator(table).evaluate(
            "t => { const p = t.parentElement, s = getComputedStyle(p);"
            " return p.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight); }"
        )
        assert abs(float(style[1].removesuffix("px")) - width) <= 2, (table, style, width)
    # On a phone each value in a card keeps its label (the console's cards do the same).
    labels = playground.locator("#jobs tbody tr").first.evaluate(
        "tr => [...tr.cells].map(c => c.dataset.label || '')"
    )
    assert labels[:6] == ["job", "schedule", "next", "last run", "runs, 2 days", "on"], labels
