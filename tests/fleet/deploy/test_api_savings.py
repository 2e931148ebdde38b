"""``GET /api/savings`` and the Savings page: the report over HTTP, and refusals naming the
parameter (issue 26, point 1)."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import at

from dgxmm.clock import ManualClock
from dgxmm.fleet import DeploymentState, EventAction, EventOutcome, Fleet
from dgxmm.fleet.activity import Minute
from dgxmm.time_units import HOUR_US


def history(fleet: Fleet, clock: ManualClock) -> int:
    """A deployment created 2026-06-03 00:00 Berlin, asleep from 06:00 to 18:00."""
    clock.set(at("2026-06-03T00:00:00+02:00"))
    made = fleet.deployments.create(
        actor="user:alice", name="chat", model="m", backend="external",
        base_url="http://127.0.0.1:9", gpus=[0], memory_gib_awake=40.0, memory_gib_asleep=4.0,
        time_zone="Europe/Berlin",
    ).id  # fmt: skip
    for iso, action, actor, state in (
        ("2026-06-03T00:00:00+02:00", EventAction.START, "user:alice", DeploymentState.RUNNING),
        ("2026-06-03T06:00:00+02:00", EventAction.SLEEP, "idle", DeploymentState.SLEEPING),
        ("2026-06-03T18:00:00+02:00", EventAction.WAKE, "schedule:1", DeploymentState.RUNNING),
    ):
        clock.set(at(iso))
        fleet.events.record(made, action, actor=actor, outcome=EventOutcome.DONE,
                            state=state.value)  # fmt: skip
    fleet.request_minutes.add(
        {(made, at("2026-06-03T17:59:00+02:00")): Minute(requests=2, held=1, waits_ms=[1500])}
    )
    clock.set(at("2026-06-05T12:00:00+02:00"))
    return made


def test_it_answers_the_days_of_one_deployment_or_all(
    viewer: TestClient, fleet: Fleet, clock: ManualClock
) -> None:
    made = history(fleet, clock)
    answer = viewer.get("/api/savings?from=2026-06-03&to=2026-06-03&deployment=chat")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["from"], body["to"]) == ("2026-06-03", "2026-06-03")
    ((shown),) = body["deployments"]
    assert (shown["id"], shown["name"], shown["time_zone"]) == (made, "chat", "Europe/Berlin")
    ((day),) = shown["days"]
    assert day["freed_gib_h"] == pytest.approx(12 * 36.0)
    assert day["held_asleep_gib_h"] == pytest.approx(12 * 4.0)
    assert (day["requests"], day["held"], day["cold"], day["wait_p50_s"]) == (2, 1, 1, 1.5)
    assert (day["wakes"], day["starts"]) == ({"schedule": 1}, {"person": 1})
    assert body["totals"]["freed_gib_h"] == pytest.approx(day["freed_gib_h"])
    # The waits over every request and the cost at the default price (issue 42).
    assert body["price"] == 0.1
    assert (day["wait_total_s"], day["wait_mean_s"], day["wait_p99_all_s"]) == (1.5, 0.75, 1.5)
    held = day["held_awake_gib_h"] + day["held_asleep_gib_h"]
    assert day["cost"] == pytest.approx(held + 0.15)
    assert body["totals"]["cost"] == pytest.approx(day["cost"])
    priced = viewer.get("/api/savings?from=2026-06-03&to=2026-06-03&price=10").json()
    assert priced["deployments"][0]["days"][0]["cost"] == pytest.approx(held + 15.0)
    # Who put it down, and what each freed (issue 45).
    assert (day["sleeps"], day["stops"]) == ({"idle": 1}, {})
    assert day["freed_by"] == {"idle": pytest.approx(12 * 36.0)}
    by_id = viewer.get(f"/api/savings?from=2026-06-03&to=2026-06-03&deployment={made}").json()
    assert by_id["deployments"] == body["deployments"]
    # By default: the last 7 local days, up to today (the 5th, half over).
    default = viewer.get("/api/savings").json()
    assert (default["from"], default["to"]) == ("2026-05-30", "2026-06-05")
    assert [d["day"] for d in default["deployments"][0]["days"]][-3:] == [
        "2026-06-03", "2026-06-04", "2026-06-05",
    ]  # fmt: skip
    assert default["deployments"][0]["days"][-1]["hours"] == pytest.approx(12.0)
    assert clock.now_us() - at("2026-06-05T00:00:00+02:00") == 12 * HOUR_US


@pytest.mark.parametrize(
    ("query", "field"),
    [
        pytest.param("from=yesterday", "from", id="from-words"),
        pytest.param("from=2026-02-30", "from", id="from-no-such-day"),
        pytest.param("to=2026-6-3", "to", id="to-short"),
        pytest.param("from=2026-06-03&to=2026-06-01", "to", id="backwards"),
        pytest.param("from=2020-01-01&to=2026-06-01", "to", id="past-a-year"),
        pytest.param("deployment=nobody", "deployment", id="unknown-name"),
        pytest.param("deployment=99999999999999999999999", "deployment", id="huge-id"),
        pytest.param("from=" + "9" * 5000, "from", id="long"),
        pytest.param("price=-1", "price", id="price-negative"),
        pytest.param("price=nan", "price", id="price-nan"),
        pytest.param("price=inf", "price", id="price-inf"),
        pytest.param("price=free", "price", id="price-words"),
        pytest.param("price=1e308", "price", id="price-past-any-cost"),
        # Issue 44 point 10: a span touching year 1 or 9999 was a 500 (a local midnight
        # before year 1, or the day after 9999-12-31, is past what a date holds).
        pytest.param("from=0001-01-01", "from", id="year-1"),
        pytest.param("from=0001-01-01&to=0001-01-02", "from", id="year-1-span"),
        pytest.param("from=9999-12-31", "from", id="year-9999"),
        pytest.param("from=2026-06-01&to=9999-12-31", "to", id="year-9999-to"),
        pytest.param("to=0001-01-01", "to", id="to-year-1"),
    ],
)
def test_a_wrong_parameter_is_a_400_naming_it(
    viewer: TestClient, fleet: Fleet, clock: ManualClock, query: str, field: str
) -> None:
    history(fleet, clock)
    answer = viewer.get(f"/api/savings?{query}")
    assert answer.status_code == 400, answer.text
    assert answer.json()["field"] == field


def test_the_page_draws_the_days_and_says_what_it_refused(
    client: TestClient, fleet: Fleet, clock: ManualClock
) -> None:
    history(fleet, clock)
    page = client.get("/savings?from=2026-06-03&to=2026-06-04")
    assert page.status_code == 200
    html = page.text
    assert 'data-savings="chat"' in html
    assert 'data-day="2026-06-03"' in html
    assert 'data-day="2026-06-04"' in html
    assert "432.0" in html  # 12 h asleep at 36 GiB freed
    assert "1.50 s / 1.50 s" in html
    refused = client.get("/savings?from=someday").text
    assert 'id="savings-refused"' in refused
    assert "from: " in refused
    # The fleet's freed GiB-hours per day, by who put it down, drawn (issue 45 point 8).
    assert '<g class="bar" data-day="2026-06-03"' in html
    assert 'data-actor="idle" data-gib-h="432.000"' in html
    assert 'class="freed-by">432.0 GiB-h by idle' in html
    assert 'class="sleeps">1 by idle' in html
    priced = client.get("/savings?from=2026-06-03&to=2026-06-03&price=abc").text
    assert "price: " in priced
    assert 'name="price" size="6" value="abc"' in priced


@pytest.mark.parametrize(
    ("query", "field"),
    [
        pytest.param("from=0001-01-01", "from", id="year-1"),
        pytest.param("from=9999-12-31", "from", id="year-9999"),
        pytest.param("from=2026-06-01&to=9999-12-31", "to", id="to-year-9999"),
    ],
)
def test_the_page_refuses_a_day_at_the_calendars_ends(
    client: TestClient, fleet: Fleet, clock: ManualClock, query: str, field: str
) -> None:
    history(fleet, clock)
    page = client.get(f"/savings?{query}")
    assert page.status_code == 200, page.text
    assert 'id="savings-refused"' in page.text
    assert f"{field}: " in page.text


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(first=st.dates(), days=st.integers(min_value=-3, max_value=10))
def test_any_span_of_days_is_answered_or_refused_never_a_500(
    viewer: TestClient, first: date, days: int
) -> None:
    """Any pair of real dates, the calendar's ends included: a report, or a 400 naming one."""
    try:
        last = first + timedelta(days=days)
    except OverflowError:
        last = first
    answer = viewer.get(f"/api/savings?from={first.isoformat()}&to={last.isoformat()}")
    assert answer.status_code in (200, 400), answer.text
    if answer.status_code == 400:
        assert answer.json()["field"] in ("from", "to")
    else:
        assert len(answer.json()["totals"]) > 0
