"""Fire times around real daylight-saving transitions, as literal ISO times.

The rule: a wall time in a gap fires at the first instant after the gap (several gap times
fire once); a repeated wall time fires once, at its first occurrence; the answer is always
strictly after the instant asked about.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from support import at

from dgxmm.errors import ZoneError
from dgxmm.jobs import CronSchedule


def fires(expr: str, zone: str, after: str, n: int) -> list[str]:
    """Return the next n fire times after an ISO time, as ISO times in the zone."""
    times = CronSchedule.parse(expr).fire_times(at(after), zone, n)
    return [
        datetime.fromtimestamp(t.at_us / 1e6, ZoneInfo(zone)).isoformat()
        + (" moved" if t.moved else "")
        for t in times
    ]


CASES = [
    pytest.param(
        "30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00+01:00",
        ["2026-03-29T03:00:00+02:00 moved", "2026-03-30T02:30:00+02:00"],
        id="berlin-gap-fires-after-the-gap",
    ),
    pytest.param(
        "*/10 2 * * *", "Europe/Berlin", "2026-03-29T01:55:00+01:00",
        ["2026-03-29T03:00:00+02:00 moved", "2026-03-30T02:00:00+02:00"],
        id="berlin-six-gap-times-fire-once",
    ),
    pytest.param(
        "0,30 2,3 * * *", "Europe/Berlin", "2026-03-29T01:59:00+01:00",
        ["2026-03-29T03:00:00+02:00 moved", "2026-03-29T03:30:00+02:00"],
        id="berlin-gap-times-and-the-real-03-00-fire-once",
    ),
    pytest.param(
        "*/15 * * * *", "Europe/Berlin", "2026-10-25T01:40:00+02:00",
        [
            "2026-10-25T01:45:00+02:00", "2026-10-25T02:00:00+02:00",
            "2026-10-25T02:15:00+02:00", "2026-10-25T02:30:00+02:00",
            "2026-10-25T02:45:00+02:00", "2026-10-25T03:00:00+01:00",
        ],
        id="berlin-no-second-pass-through-the-repeated-hour",
    ),
    pytest.param(
        "30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00+02:00",
        ["2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"],
        id="berlin-repeated-time-fires-at-its-first-occurrence",
    ),
    pytest.param(
        "*/15 * * * *", "Europe/Berlin", "2026-10-25T02:10:00+01:00",
        ["2026-10-25T03:00:00+01:00"],
        id="berlin-asked-from-the-second-pass",
    ),
    pytest.param(
        "30 2 * * *", "America/New_York", "2026-03-07T12:00:00-05:00",
        ["2026-03-08T03:00:00-04:00 moved", "2026-03-09T02:30:00-04:00"],
        id="new-york-gap",
    ),
    pytest.param(
        "*/20 1 * * *", "America/New_York", "2026-11-01T00:50:00-04:00",
        [
            "2026-11-01T01:00:00-04:00", "2026-11-01T01:20:00-04:00",
            "2026-11-01T01:40:00-04:00", "2026-11-02T01:00:00-05:00",
        ],
        id="new-york-repeated-hour-once",
    ),
    pytest.param(
        "*/20 * * * *", "America/New_York", "2026-11-01T01:30:00-05:00",
        ["2026-11-01T02:00:00-05:00"],
        id="new-york-asked-from-the-second-pass",
    ),
    pytest.param(
        "15 2 * * *", "Australia/Lord_Howe", "2026-10-03T12:00:00+10:30",
        ["2026-10-04T02:30:00+11:00 moved", "2026-10-05T02:15:00+11:00"],
        id="lord-howe-half-hour-gap",
    ),
    pytest.param(
        "45 1 * * *", "Australia/Lord_Howe", "2026-04-04T12:00:00+11:00",
        ["2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"],
        id="lord-howe-repeated-half-hour",
    ),
    pytest.param(
        "*/10 1 * * *", "Australia/Lord_Howe", "2026-04-05T01:35:00+10:30",
        ["2026-04-06T01:00:00+10:30"],
        id="lord-howe-asked-from-the-second-pass",
    ),
    pytest.param(
        "0 0 * * *", "Pacific/Apia", "2011-12-29T12:00:00-10:00",
        ["2011-12-31T00:00:00+14:00 moved", "2012-01-01T00:00:00+14:00"],
        id="apia-missing-day-fires-once",
    ),
    pytest.param(
        "0 12 * * *", "Pacific/Apia", "2011-12-29T13:00:00-10:00",
        ["2011-12-31T00:00:00+14:00 moved", "2011-12-31T12:00:00+14:00"],
        id="apia-noon-of-the-missing-day",
    ),
    pytest.param(
        "0 0 * * *", "America/Santiago", "2022-09-10T12:00:00-04:00",
        ["2022-09-11T01:00:00-03:00 moved", "2022-09-12T00:00:00-03:00"],
        id="santiago-midnight-gap",
    ),
    pytest.param(
        "30 23 * * *", "America/Santiago", "2026-04-04T12:00:00-03:00",
        ["2026-04-04T23:30:00-03:00", "2026-04-05T23:30:00-04:00"],
        id="santiago-repeated-hour-before-midnight",
    ),
    pytest.param(
        "30 1 * * *", "Europe/Dublin", "2026-03-28T12:00:00+00:00",
        ["2026-03-29T02:00:00+01:00 moved", "2026-03-30T01:30:00+01:00"],
        id="dublin-gap",
    ),
    pytest.param(
        "30 1 * * *", "Europe/Dublin", "2026-10-24T12:00:00+01:00",
        ["2026-10-25T01:30:00+01:00", "2026-10-26T01:30:00+00:00"],
        id="dublin-repeated-hour",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("expr", "zone", "after", "expected"), CASES)
def test_it_fires_at_these_literal_times(
    expr: str, zone: str, after: str, expected: list[str]
) -> None:
    assert fires(expr, zone, after, len(expected)) == expected


def test_it_never_answers_at_or_before_the_instant_asked_about() -> None:
    schedule = CronSchedule.parse("0 3 * * *")
    fire = at("2026-06-01T03:00:00+02:00")
    assert schedule.next_after(fire - 1, "Europe/Berlin") == fire
    assert schedule.next_after(fire, "Europe/Berlin") == at("2026-06-02T03:00:00+02:00")
    # The transition instant itself is a fire time of the gap; asking from it moves on.
    gap = CronSchedule.parse("0 2 * * *")
    moved = at("2026-03-29T03:00:00+02:00")
    assert gap.next_after(moved - 1, "Europe/Berlin") == moved
    assert gap.next_after(moved, "Europe/Berlin") == at("2026-03-30T02:00:00+02:00")


def test_it_takes_a_zone_object_or_a_name() -> None:
    schedule = CronSchedule.parse("0 3 * * *")
    after = at("2026-06-01T00:00:00+00:00")
    assert schedule.next_after(after, ZoneInfo("Asia/Tokyo")) == schedule.next_after(
        after, "Asia/Tokyo"
    )


@pytest.mark.parametrize(
    "zone", ["Mars/Olympus_Mons", "", " Europe/Berlin", "../etc/passwd", "/etc/localtime"]
)
def test_it_refuses_an_unknown_zone(zone: str) -> None:
    with pytest.raises(ZoneError, match="unknown time zone"):
        CronSchedule.parse("* * * * *").next_after(0, zone)


def test_it_works_far_from_the_present() -> None:
    schedule = CronSchedule.parse("0 12 1 1 *")
    assert schedule.next_after(at("1901-06-01T00:00:00+00:00"), "UTC") == at(
        "1902-01-01T12:00:00+00:00"
    )
    assert schedule.next_after(at("2199-06-01T00:00:00+00:00"), "Europe/Berlin") == at(
        "2200-01-01T12:00:00+01:00"
    )
