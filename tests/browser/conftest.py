"""Real Chromium (Debian's, found on PATH) driven by Playwright, against a real server."""

from __future__ import annotations

import shutil
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn
from support import need

from dgxmm.server import Host, Tokens, create_app
from dgxmm.store import Store

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@dataclass
class Live:
    base: str
    token: str
    host: Host
    store: Store


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


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    store = Store.open(tmp_path / "dgxmm.db")
    tokens = Tokens(store.engine, store.clock)
    token = tokens.create("admin", "alice")
    host = Host(store, time_zone="Europe/Berlin", tick_seconds=0.2)
    host.start()
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(host, tokens), port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    yield Live(base=f"http://127.0.0.1:{port}", token=token, host=host, store=store)
    server.should_exit = True
    thread.join(timeout=30)
    host.stop()
    store.close()


@pytest.fixture
def page(browser: object, live: Live) -> Iterator[object]:
    context = browser.new_context(base_url=live.base)  # type: ignore[attr-defined]
    opened = context.new_page()
    opened.set_default_timeout(15_000)
    opened.goto("/login")
    opened.fill("#token", live.token)
    opened.click("button[type=submit]")
    opened.wait_for_url("**/jobs")
    yield opened
    context.close()
