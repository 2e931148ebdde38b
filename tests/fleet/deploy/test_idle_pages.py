"""A deployment's idle settings as its form and its page show them (issue 25): the idle ladder,
the idle policy, a pause of it and why, the wake lead, and the measured wake times."""

from __future__ import annotations

import html

from fastapi.testclient import TestClient
from fleet.deploy.deploykit import standin

from dgxmm.fleet import EventAction, EventOutcome, Fleet
from dgxmm.store import Store, writing
from dgxmm.time_units import SECOND_US


def test_the_new_form_has_the_idle_fields_off_by_default(client: TestClient) -> None:
    page = client.get("/deployments/new").text
    for step in ("sleep", "deepen", "stop"):
        field = f"idle_{step}_after_s"
        assert f'name="{field}" id="f-{field}" inputmode="decimal" value=""' in page
    assert '<option value="ladder" selected>ladder</option>' in page
    assert '<option value="histogram" >histogram</option>' in page
    assert 'data-field="wake_lead" data-kind="lead"' in page
    assert '<option value="off" selected>off</option>' in page
    assert 'id="f-wake_lead_seconds" inputmode="decimal" size="6"' in page


def test_the_edit_form_shows_the_idle_settings(client: TestClient, fleet: Fleet) -> None:
    created = fleet.deployments.create(
        actor="user:a", **standin("chat"), idle_sleep_after_s=300, idle_stop_after_s=5400.5,
        idle_policy="histogram", wake_lead=30,
    )  # fmt: skip
    page = client.get(f"/deployments/{created.id}/edit").text
    assert (
        'name="idle_sleep_after_s" id="f-idle_sleep_after_s" inputmode="decimal" value="300"'
        in (page)
    )
    assert 'id="f-idle_deepen_after_s" inputmode="decimal" value=""' in page
    assert 'id="f-idle_stop_after_s" inputmode="decimal" value="5400.5"' in page
    assert '<option value="histogram" selected>histogram</option>' in page
    assert '<option value="seconds" selected>seconds</option>' in page
    assert 'aria-label="Wake lead in seconds" value="30"' in page


def test_the_page_shows_an_idle_ladder_its_policy_and_its_wake_lead(
    client: TestClient, fleet: Fleet
) -> None:
    created = fleet.deployments.create(
        actor="user:a", **standin("chat"), idle_sleep_after_s=300, idle_stop_after_s=5400,
        wake_lead=42,
    )  # fmt: skip
    page = html.unescape(client.get(f"/deployments/{created.id}").text)
    assert '<span class="idle-step" data-step="sleep">sleep at level 1: after 5 min idle' in page
    assert 'data-step="deepen">deepen to level 2: off</span>' in page
    assert 'data-step="stop">stop: after 1 h 30 min idle</span>' in page
    assert 'data-policy="ladder">ladder: the ladder as given' in page
    assert 'data-lead="seconds">42 s: scheduled wakes and starts begin that early' in page
    assert 'id="idle-paused"' not in page


def test_a_deployment_without_a_ladder_says_it_is_off(client: TestClient, fleet: Fleet) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("chat"))
    page = client.get(f"/deployments/{created.id}").text
    assert '<dd id="idle-ladder">off: it sleeps only by a schedule, a proposal or by hand' in page
    assert "off: scheduled wakes and starts begin at their minute" in page
    for level in (1, 2, 0):
        assert f'data-level="{level}" data-count="0"' in page
    assert page.count(": none measured yet</span>") == 6  # 3 ways up, 3 ways down


def test_the_page_shows_the_measured_wake_times_and_how_many(
    client: TestClient, fleet: Fleet
) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("chat"), wake_lead="measured")
    for ready_s, level in ((5.0, 1), (7.25, 1), (6.0, 1), (65.0, 0)):
        fleet.events.record(
            created.id, EventAction.WAKE if level else EventAction.START, actor="user:a",
            outcome=EventOutcome.DONE, took=(round(ready_s * SECOND_US), level),
        )  # fmt: skip
    page = client.get(f"/deployments/{created.id}").text
    assert 'data-level="1" data-count="3">level-1 wakes: 7.2 s (p95 of the last 3)' in page
    assert 'data-level="2" data-count="0">level-2 wakes: none measured yet' in page
    assert 'data-level="0" data-count="1">starts: 65 s (p95 of the last 1)' in page
    assert 'data-lead="measured">measured: scheduled wakes and starts begin early' in page


def test_the_page_shows_the_measured_sleep_and_stop_times_beside_the_wake_times(
    client: TestClient, fleet: Fleet
) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("chat"))
    # A sleep of 2.5 s and one that timed out at its 30 s bound (failed), a level-2 one of
    # 0.04 s, and a stop of 4 s; a sleep that failed otherwise measures nothing.
    for action, outcome, took in (
        (EventAction.SLEEP, EventOutcome.DONE, (2_500_000, 1)),
        (EventAction.SLEEP, EventOutcome.FAILED, (30 * SECOND_US, 1)),
        (EventAction.SLEEP, EventOutcome.FAILED, None),
        (EventAction.SLEEP, EventOutcome.DONE, (40_000, 2)),
        (EventAction.STOP, EventOutcome.DONE, (4 * SECOND_US, 0)),
    ):
        fleet.events.record(created.id, action, actor="idle", outcome=outcome, took=took)
    page = client.get(f"/deployments/{created.id}").text
    assert "<dt>Measured sleep and stop time</dt>" in page
    assert 'class="down-time" data-level="1" data-count="2">level-1 sleeps: 16.2 s (mean of' in page
    assert 'data-level="2" data-count="1">level-2 sleeps: 40 ms (mean of the last 1)' in page
    assert 'data-level="0" data-count="1">stops: 4 s (mean of the last 1)' in page
    # The wake times read only the ways up: none of these.
    assert page.count("wakes: none measured yet") == 2
    assert "starts: none measured yet" in page


def test_a_paused_idle_policy_says_why_until_its_settings_change(
    client: TestClient, fleet: Fleet, store: Store
) -> None:
    created = fleet.deployments.create(
        actor="user:a", **standin("chat"), idle_sleep_after_s=60, idle_policy="histogram"
    )
    with writing(store.engine) as connection:
        fleet.deployments.set_idle_paused(connection, created.id, "the idle sleep failed: boom")
    page = client.get(f"/deployments/{created.id}").text
    assert (
        '<dd class="why" id="idle-paused">the idle sleep failed: boom. Its idle policy waits '
        "until its idle settings are changed.</dd>"
    ) in page
    assert 'data-policy="histogram">histogram: awake and asleep windows learned' in page
    fleet.deployments.update(created.id, "user:a", idle_sleep_after_s=120)
    assert 'id="idle-paused"' not in client.get(f"/deployments/{created.id}").text


def test_a_priced_deployments_page_says_the_price_it_decides_at(
    client: TestClient, fleet: Fleet
) -> None:
    created = fleet.deployments.create(actor="user:a", **standin("chat"), idle_policy="priced")
    page = html.unescape(client.get(f"/deployments/{created.id}").text)
    assert 'data-policy="priced">priced: its own steps, from its measured sleep and wake' in page
    assert "price of waiting of 0.1 GiB-hours a request-second (the standard price" in page
    form = client.get(f"/deployments/{created.id}/edit").text
    assert '<option value="priced" selected>priced</option>' in form
