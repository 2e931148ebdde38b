"""The console's SVG: the week grid in one display zone, and the charts' time axis."""

from __future__ import annotations

import re
from zoneinfo import ZoneInfo

from support import at

from dgxmm.decider.schedules.rows import Schedule, ScheduleAction
from dgxmm.fleet import Rollup
from dgxmm.server.svg.time_axis import time_axis
from dgxmm.server.svg.traffic_charts import traffic_chart
from dgxmm.server.svg.week_strip import week_strip

UTC, BERLIN = ZoneInfo("UTC"), ZoneInfo("Europe/Berlin")
NOW = at("2026-12-01T10:00:00+00:00")  # a Tuesday, winter: Berlin is UTC+1


def schedule(action: ScheduleAction, time: str, zone: str, ident: int) -> Schedule:
    return Schedule(
        id=ident,
        deployment_id=1,
        action=action,
        days=2,  # Tuesday
        time=time,
        time_zone=zone,
        enabled=True,
        creator="user:a",
        created_at=0,
        updated_at=0,
        last_run_at=None,
        last_run_day=None,
        last_result=None,
        paused_reason=None,
        deferred_since=None,
    )


def slots(svg: str) -> list[tuple[str, str, str]]:
    return re.findall(r'class="slot (\w+)" data-day="(\d)" data-minute="(\d+)"', svg)


def test_the_week_grid_draws_every_schedule_in_the_display_zone() -> None:
    rows = [
        schedule(ScheduleAction.SLEEP, "12:00", "UTC", 1),
        schedule(ScheduleAction.WAKE, "13:02", "Europe/Berlin", 2),
    ]
    # Two minutes apart, as they are (each in its own zone they read an hour apart).
    assert slots(week_strip(rows, zone=UTC, now_us=NOW)) == [
        ("sleep", "1", "720"),
        ("wake", "1", "722"),
    ]
    assert slots(week_strip(rows, zone=BERLIN, now_us=NOW)) == [
        ("sleep", "1", "780"),
        ("wake", "1", "782"),
    ]
    svg = week_strip(rows, zone=UTC, now_us=NOW)
    assert 'data-day="1" data-from="720" data-to="722"' in svg  # down for those two minutes


def test_a_schedule_whose_day_starts_in_another_zone_lands_on_the_display_day() -> None:
    late = schedule(ScheduleAction.SLEEP, "00:30", "Europe/Berlin", 1)  # Tuesday 00:30 Berlin
    assert slots(week_strip([late], zone=UTC, now_us=NOW)) == [("sleep", "0", "1410")]


def test_the_time_axis_labels_hours_and_days_in_the_zone() -> None:
    first, end = at("2026-12-01T00:00:00+00:00"), at("2026-12-02T00:00:00+00:00")
    parts = "".join(time_axis(first, end, BERLIN, x_of=lambda _: 0.0, baseline=100, top=0))
    hours = re.findall(r">(\d\d:\d\d)</text>", parts)
    days = re.findall(r'class="day-label"[^>]*>([^<]+)<', parts)
    assert hours == ["03:00", "06:00", "09:00", "12:00", "15:00", "18:00", "21:00", "00:00"]
    assert days == ["Tue 1 Dec", "Wed 2 Dec"]


def test_a_bar_names_its_time_and_value_on_hover() -> None:
    minute = at("2026-12-01T09:30:00+00:00")
    rollup = Rollup(
        deployment_id=1,
        minute_us=minute,
        requests=7,
        mean_running=0.1,
        mean_waiting=0.0,
        mean_latency_s=0.25,
        samples=2,
    )
    svg = traffic_chart([rollup], window="hour", measure="requests", now_us=NOW, zone=BERLIN)
    assert 'data-tip="Tue 01 Dec 10:30: 7 requests"' in svg
    assert 'width="' not in svg.split(">", 1)[0]  # as wide as its card
