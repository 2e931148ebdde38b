"""Real Chromium (Debian's, found on PATH) driven by Playwright, against a real server."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser.browserkit import Live, log_in
from support import need, serving

from dgxmm.server import Host, Role, Services, Tokens, create_app
from dgxmm.store import Store

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    executable = shutil.which("chromium")
    need(executable is not None, "Debian's chromium is not on PATH (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover
        need(False, "playwright for Python is not installed")
        raise
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def live(fresh_db: Path) -> Iterator[Live]:
    store = Store.open(fresh_db)
    tokens = Tokens(store.engine, store.clock)
    token = tokens.create(Role.ADMIN, "alice")
    host = Host(store, time_zone="Europe/Berlin", tick_seconds=0.2)
    host.start()
    with serving(create_app(Services(host=host, tokens=tokens))) as base:
        yield Live(base=base, token=token, host=host, store=store)
    host.stop()
    store.close()


@pytest.fixture
def page(browser: object, live: Live) -> Iterator[object]:
    context = browser.new_context(base_url=live.base)  # type: ignore[attr-defined]
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    log_in(opened, live.token)
    yield opened
    context.close()
