"""The Alerts page in real Chromium: add a channel (its secret shown once), send a test and
watch the log, and a rule refused field by field."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from alerts.alertkit import KEY, LOOPBACK_ALLOWED, Receiver
from browser.browserkit import log_in
from support import serving, wait_for

from dgxmm.alerts import Alerts, SendPolicy
from dgxmm.fleet import Fleet, GpuInventory, InventorySource
from dgxmm.server import ALERT_ROUTES, FLEET_ROUTES, Host, Role, Services, Tokens, create_app
from dgxmm.store import Store


@dataclass
class LiveAlerts:
    base: str
    token: str
    alerts: Alerts


@pytest.fixture
def live_alerts(fresh_db: Path) -> Iterator[LiveAlerts]:
    store = Store.open(fresh_db)
    fleet = Fleet(store, inventory=GpuInventory(gpus=(), source=InventorySource.CONFIGURATION))
    alerts = Alerts(
        store,
        fleet,
        key=KEY,
        policy=SendPolicy(timeout_s=2.0),
        poll_seconds=0.05,
        destinations=LOOPBACK_ALLOWED,
    )
    tokens = Tokens(store.engine, store.clock)
    token = tokens.create(Role.ADMIN, "alice")
    host = Host(store, time_zone="UTC")
    app = create_app(
        Services(host=host, tokens=tokens, fleet=fleet, alerts=alerts), [FLEET_ROUTES, ALERT_ROUTES]
    )
    alerts.start()
    try:
        with serving(app) as base:
            yield LiveAlerts(base=base, token=token, alerts=alerts)
    finally:
        alerts.stop()
        host.stop()
        fleet.close()
        store.close()


@pytest.fixture
def alerts_page(browser: Any, live_alerts: LiveAlerts) -> Iterator[Any]:
    context = browser.new_context(base_url=live_alerts.base)
    opened = context.new_page()
    opened.set_default_timeout(30_000)
    log_in(opened, live_alerts.token, "/alerts")
    yield opened
    context.close()


def test_it_adds_a_channel_tests_it_and_shows_the_log(alerts_page: Any) -> None:
    page = alerts_page
    with Receiver() as receiver:
        form = page.locator("#new-channel")
        form.locator("[name=name]").fill("ops")
        form.locator("[name=url]").fill(receiver.url)
        form.locator("[name=format]").select_option("slack")
        form.locator("button[type=submit]").click()
        secret = page.locator("#secret-once .secret-value")
        secret.wait_for()
        receiver.secret = secret.inner_text()
        assert receiver.secret.startswith("whsec_")
        row = page.locator("#channels tr[data-name=ops]")
        row.wait_for()
        assert "s3cr3t-path" not in row.inner_text()
        row.locator("button[data-test]").click()
        wait_for(receiver.requests, "the test message", timeout_s=30)
        page.locator("#deliveries tr[data-state=sent]").wait_for()
    [got] = receiver.requests()
    assert got.signed
    assert got.body["text"].startswith("[dgxmm] TEST")
    attempt = page.locator("#deliveries tr[data-state=sent] li[data-outcome=sent]")
    assert attempt.inner_text().startswith("sent 200")
    page.reload()
    assert receiver.secret not in page.content()


def test_a_refused_rule_names_its_fields(alerts_page: Any, live_alerts: LiveAlerts) -> None:
    page = alerts_page
    form = page.locator("#new-rule")
    form.locator("[name=name]").fill("bad")
    form.locator("[name=condition]").select_option("job_failed")
    form.locator("[name=threshold]").fill("3")
    form.locator("[name=channels]").fill("nobody")
    form.locator("button[type=submit]").click()
    threshold = form.locator("[data-error-for=threshold]")
    threshold.wait_for()
    page.wait_for_function("document.querySelector('[data-error-for=channels]').textContent")
    assert "takes no threshold" in threshold.inner_text()
    assert "no channel named 'nobody'" in form.locator("[data-error-for=channels]").inner_text()
    assert live_alerts.alerts.rules.list() == []
