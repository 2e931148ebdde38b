"""When a slot is due: 15 minutes late runs and 16 does not, once per local day, DST days."""

from __future__ import annotations

from datetime import date
from zoneinfo import ZoneInfo

import pytest
from support import at

from dgxmm.clock import from_us
from dgxmm.decider.days import ALL_DAYS, mask_of
from dgxmm.decider.schedules.rows import Schedule, ScheduleAction
from dgxmm.decider.schedules.slots import due_slot, next_slot, parse_time, slot_on
from dgxmm.decider.schedules.week import WEEK_MINUTES, down_intervals
from dgxmm.errors import DefinitionError

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def due(time: str, now: str, zone: ZoneInfo = BERLIN, **keys: object) -> str | None:
    slot = due_slot(
        days=keys.pop("days", ALL_DAYS),  # type: ignore[arg-type]
        time=parse_time(time),
        zone=zone,
        now_us=at(now),
        last_run_day=keys.pop("last_run_day", None),  # type: ignore[arg-type]
        deferred_since=keys.pop("deferred_since", None),  # type: ignore[arg-type]
    )
    return None if slot is None else slot.day.isoformat()


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        ("2026-06-03T21:59:59+02:00", None),  # not yet
        ("2026-06-03T22:00:00+02:00", "2026-06-03"),
        ("2026-06-03T22:15:00+02:00", "2026-06-03"),  # 15 minutes late runs
        ("2026-06-03T22:16:00+02:00", None),  # 16 does not
    ],
)
def test_it_is_due_for_fifteen_minutes(now: str, expected: str | None) -> None:
    assert due("22:00", now) == expected


def test_it_runs_once_per_local_day() -> None:
    assert due("22:00", "2026-06-03T22:05:00+02:00", last_run_day="2026-06-03") is None
    assert due("22:00", "2026-06-04T22:05:00+02:00", last_run_day="2026-06-03") == "2026-06-04"


def test_it_only_fires_on_its_days() -> None:
    weekdays = mask_of(range(5))
    assert due("09:00", "2026-06-05T09:01:00+02:00", days=weekdays) == "2026-06-05"  # a Friday
    assert due("09:00", "2026-06-06T09:01:00+02:00", days=weekdays) is None  # a Saturday


def test_it_catches_yesterdays_slot_just_before_midnight() -> None:
    assert due("23:55", "2026-06-04T00:05:00+02:00", days=mask_of([2])) == "2026-06-03"


def test_it_keeps_a_deferred_slot_due_past_fifteen_minutes() -> None:
    deferred = at("2026-06-03T22:01:00+02:00")
    assert due("22:00", "2026-06-03T22:40:00+02:00", deferred_since=deferred) == "2026-06-03"
    # Yesterday's deferred slot stays due until the runner records it (as skipped, busy,
    # once its 60 minutes have passed); today's slot is not due before its time.
    assert due("22:00", "2026-06-04T21:00:00+02:00", deferred_since=deferred) == "2026-06-03"
    assert (
        due(
            "22:00", "2026-06-04T21:00:00+02:00", deferred_since=deferred, last_run_day="2026-06-03"
        )
        is None
    )


@pytest.mark.parametrize(
    ("time", "now", "zone", "expected"),
    [
        # Berlin springs forward at 02:00 on 2026-03-29: 02:30 happens at 03:00.
        ("02:30", "2026-03-29T02:59:00+01:00", BERLIN, None),
        ("02:30", "2026-03-29T03:00:00+02:00", BERLIN, "2026-03-29"),
        ("02:30", "2026-03-29T03:15:00+02:00", BERLIN, "2026-03-29"),
        ("02:30", "2026-03-29T03:16:00+02:00", BERLIN, None),
        # Berlin falls back at 03:00 on 2026-10-25: 02:30 happens twice; the first counts.
        ("02:30", "2026-10-25T02:40:00+02:00", BERLIN, "2026-10-25"),
        ("02:30", "2026-10-25T02:40:00+01:00", BERLIN, None),  # the second pass: 70 min late
        # New York: 02:30 missing on 2026-03-08, 01:30 twice on 2026-11-01.
        ("02:30", "2026-03-08T03:05:00-04:00", NEW_YORK, "2026-03-08"),
        ("01:30", "2026-11-01T01:35:00-04:00", NEW_YORK, "2026-11-01"),
        ("01:30", "2026-11-01T01:35:00-05:00", NEW_YORK, None),
    ],
    ids=[
        "berlin-gap-before", "berlin-gap-at-end", "berlin-gap-15", "berlin-gap-16",
        "berlin-fold-first", "berlin-fold-second", "ny-gap", "ny-fold-first", "ny-fold-second",
    ],
)  # fmt: skip
def test_it_follows_the_dst_rule(time: str, now: str, zone: ZoneInfo, expected: str | None) -> None:
    assert due(time, now, zone) == expected


def test_it_places_slots_by_the_engines_rule() -> None:
    gap = slot_on(date(2026, 3, 29), (2, 30), BERLIN)
    assert (gap.at_us, gap.moved) == (at("2026-03-29T03:00:00+02:00"), True)
    fold = slot_on(date(2026, 10, 25), (2, 30), BERLIN)
    assert (fold.at_us, fold.moved) == (at("2026-10-25T02:30:00+02:00"), False)


@pytest.mark.parametrize("text", ["24:00", "7:5", "07:60", "7:05", "0705", "", "ab:cd", "12:00:00"])
def test_it_refuses_a_time_that_is_not_hh_mm(text: str) -> None:
    with pytest.raises(DefinitionError) as refused:
        parse_time(text)
    assert refused.value.field == "time"


def schedule(action: str, days: int, time: str, enabled: bool = True) -> Schedule:
    return Schedule(
        id=1, deployment_id=1, action=ScheduleAction(action), days=days, time=time,
        time_zone="UTC", enabled=enabled, creator="user:a", created_at=0, updated_at=0,
        last_run_at=None, last_run_day=None, last_result=None, paused_reason=None,
        deferred_since=None,
    )  # fmt: skip


def test_it_shades_the_hours_a_week_of_schedules_leaves_down() -> None:
    weekdays = mask_of(range(5))
    nights = [schedule("sleep", weekdays, "22:00"), schedule("wake", mask_of(range(1, 6)), "07:00")]
    intervals = down_intervals(nights)
    assert intervals[0] == (22 * 60, 1440 + 7 * 60)  # Monday 22:00 to Tuesday 07:00
    assert intervals[-1] == (4 * 1440 + 22 * 60, 5 * 1440 + 7 * 60)  # Friday night
    assert len(intervals) == 5
    assert (
        down_intervals([*nights, schedule("stop", mask_of([6]), "12:00", enabled=False)])
        == intervals
    )


def test_it_wraps_a_sunday_night_into_monday_morning() -> None:
    intervals = down_intervals(
        [schedule("sleep", mask_of([6]), "20:00"), schedule("wake", mask_of([0]), "06:00")]
    )
    assert intervals == [(0, 6 * 60), (6 * 1440 + 20 * 60, WEEK_MINUTES)]


WEEKDAYS = mask_of(range(5))


def upcoming(time: str, now: str, days: int = ALL_DAYS, last: str | None = None) -> str | None:
    slot = next_slot(
        days=days, time=parse_time(time), zone=BERLIN, now_us=at(now), last_run_day=last
    )
    return None if slot is None else from_us(slot.at_us, BERLIN).isoformat()


@pytest.mark.parametrize(
    ("time", "now", "days", "last", "expected"),
    [
        # Later today, then tomorrow once today's has passed its late window.
        ("22:00", "2026-06-03T21:00:00+02:00", ALL_DAYS, None, "2026-06-03T22:00:00+02:00"),
        ("22:00", "2026-06-03T22:30:00+02:00", ALL_DAYS, None, "2026-06-04T22:00:00+02:00"),
        # Due but not run yet (5 minutes late): next is now's, not tomorrow's; once run, tomorrow.
        ("22:00", "2026-06-03T22:05:00+02:00", ALL_DAYS, None, "2026-06-03T22:00:00+02:00"),
        ("22:00", "2026-06-03T22:05:00+02:00", ALL_DAYS, "2026-06-03", "2026-06-04T22:00:00+02:00"),
        # Weekdays only, on a Friday night (2026-06-05): Monday's.
        ("08:00", "2026-06-05T23:00:00+02:00", WEEKDAYS, None, "2026-06-08T08:00:00+02:00"),
        # Spring forward in Berlin (2026-03-29): 02:30 does not exist, so the gap's end.
        ("02:30", "2026-03-29T01:00:00+01:00", ALL_DAYS, None, "2026-03-29T03:00:00+02:00"),
        # A week ahead: Sundays only, seen just after this Sunday's window.
        ("10:00", "2026-06-07T10:20:00+02:00", mask_of([6]), None, "2026-06-14T10:00:00+02:00"),
        ("10:00", "2026-06-07T10:20:00+02:00", 0, None, None),
    ],
    ids=["later", "tomorrow", "due", "ran", "monday", "gap", "a-week", "no-days"],
)  # fmt: skip
def test_the_next_slot_is_the_one_the_runner_acts_on_next(
    time: str, now: str, days: int, last: str | None, expected: str | None
) -> None:
    assert upcoming(time, now, days, last) == expected
