"""The operator's pages in real Chromium: Instances and API tokens, each at 390 px in the
dark and with the keyboard."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser.browserkit import Live, log_in
from support import serving

from dgxmm.server import Host, Role, Services, Tokens, create_app
from dgxmm.store import Store


@pytest.fixture
def leased(fresh_db: Path) -> Iterator[Live]:
    """A server as ``dgxmm serve`` runs one: its host takes the store's ticker lease."""
    store = Store.open(fresh_db)
    tokens = Tokens(store.engine, store.clock)
    token = tokens.create(Role.ADMIN, "alice")
    host = Host(store, time_zone="Europe/Berlin", tick_seconds=0.2, lease=True)
    host.start()
    with serving(create_app(Services(host=host, tokens=tokens))) as base:
        yield Live(base=base, token=token, host=host, store=store)
    host.stop()
    store.close()


@pytest.fixture
def leased_page(browser: Any, leased: Live) -> Iterator[Any]:
    context = browser.new_context(base_url=leased.base)
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    log_in(opened, leased.token)
    yield opened
    context.close()


def _fits_a_phone_in_the_dark(page: Any, path: str) -> None:
    page.set_viewport_size({"width": 390, "height": 800})
    page.emulate_media(color_scheme="dark")
    page.goto(path)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background != "rgb(255, 255, 255)"


def test_the_instances_page_names_the_lease_holder_and_every_instance(
    leased_page: Any, leased: Live
) -> None:
    page, live = leased_page, leased
    other = Store.open(live.store.engine.url.database or "")
    try:
        other.presence.register()  # a CLI's process on the same store
        page.goto("/jobs")
        page.locator("header nav a[href='/instances']").focus()
        page.keyboard.press("Enter")
        page.wait_for_url("**/instances")
        assert live.store.instance in page.locator("#instances-lease").inner_text()
        holder = page.locator(f"#instances tr[data-instance='{live.store.instance}']")
        assert "holds the lease" in holder.inner_text()
        assert "0.1.0" in holder.inner_text()
        process = page.locator(f"#instances tr[data-instance='{other.instance}']")
        assert process.get_attribute("data-alive") == "true"
        assert "a process (CLI)" in process.inner_text()
        _fits_a_phone_in_the_dark(page, "/instances")
    finally:
        other.close()


def test_the_tokens_page_makes_a_token_shown_once_and_revokes_it(page: Any, live: Live) -> None:
    page.goto("/tokens")
    # With the keyboard: the role, the name, the expiry, then Enter on the button.
    page.locator("#token-role").focus()
    page.keyboard.press("Tab")
    page.keyboard.type("grafana")
    page.keyboard.press("Tab")
    page.locator("#token-expires").select_option("7")
    page.locator("#token-create").focus()
    page.keyboard.press("Enter")
    page.locator("#token-once:not([hidden])").wait_for()
    token = page.locator("#token-value").inner_text()
    assert token.startswith("dgxmm_")
    row = page.locator("#tokens tr[data-name=grafana]")
    assert row.get_attribute("data-state") == "live"
    assert "viewer" in row.inner_text()
    page.reload()
    assert token not in page.content()  # shown once: the page never holds it
    page.locator("#tokens tr[data-name=grafana] button[data-revoke]").click()
    page.locator("#confirm [data-confirm=yes]").click()
    page.locator("#tokens tr[data-name=grafana][data-state=revoked]").wait_for()
    _fits_a_phone_in_the_dark(page, "/tokens")


def test_the_tokens_form_names_every_wrong_field(page: Any) -> None:
    page.goto("/tokens")
    page.fill("#token-name", "tab\there")
    page.evaluate(
        "document.querySelector('#token-role').add(new Option('boss', 'boss', true, true))"
    )
    page.click("#token-create")
    page.locator("[data-error-for=role]").get_by_text("not a role").wait_for()
    assert "printable" in page.locator("[data-error-for=name]").inner_text()
    assert page.evaluate("document.activeElement.id") == "token-role"
