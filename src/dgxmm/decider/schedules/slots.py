"""When a deployment schedule's slot is due: pure functions of the schedule and ``now``.

A schedule names local days (a bitmask) and a local ``HH:MM`` in an IANA zone. Each named
day has one slot, placed by the engine's DST rule: a time in a gap happens at the first
instant after the gap, a repeated time once, at its first occurrence. A day the zone skips
entirely (Pacific/Apia's 2011-12-30) so has its slot at the next day's: one instant, one
slot, serving both days. A slot is due from its instant until 15 minutes later (15 minutes
late runs, 16 does not), once per local day; a slot that was deferred stays due for 60
minutes from its first deferral.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from datetime import date, timedelta
from zoneinfo import ZoneInfo

from dgxmm.decider.days import day_bit
from dgxmm.errors import DefinitionError
from dgxmm.jobs import zone_clock
from dgxmm.jobs.cron.calendar import civil_from_days, days_from_civil
from dgxmm.time_units import MINUTE_US, SECOND_US

__all__ = [
    "DEFER_WINDOW_US",
    "LATE_WINDOW_US",
    "Slot",
    "due_slot",
    "local_today",
    "next_slot",
    "parse_time",
    "slot_on",
]

LATE_WINDOW_US = 15 * MINUTE_US
DEFER_WINDOW_US = 60 * MINUTE_US
_TIME = re.compile(r"(?:[01]\d|2[0-3]):[0-5]\d")


@dataclass(frozen=True, slots=True, kw_only=True)
class Slot:
    """One day's slot of a schedule: its local date and the instant it happens."""

    day: date  # the latest day it serves: the runner records it as the last run's day
    at_us: int
    moved: bool  # the local time did not exist that day: the slot is at the gap's end
    # Every local date whose slot this is: two where a day was skipped (its slot moved onto
    # the next day's instant), one otherwise.
    days: tuple[date, ...]


def parse_time(text: object, field: str = "time") -> tuple[int, int]:
    """Return (hour, minute) of a strict ``HH:MM``; refuse '24:00', '7:5' and the like."""
    if not isinstance(text, str) or not _TIME.fullmatch(text):
        raise DefinitionError(field, f"{text!r} is not a local time HH:MM (00:00 to 23:59)")
    return int(text[:2]), int(text[3:])


@functools.lru_cache(maxsize=8192)
def slot_on(day: date, time: tuple[int, int], zone: ZoneInfo) -> Slot:
    """Return the slot of ``day`` at local ``time`` in ``zone``, by the DST rule."""
    wall = days_from_civil(day.year, day.month, day.day) * 86400 + time[0] * 3600 + time[1] * 60
    at, moved = zone_clock(zone).instant(wall)
    return Slot(day=day, at_us=at * SECOND_US, moved=moved, days=(day,))


def local_today(now_us: int, zone: ZoneInfo) -> date:
    """Return the local date at ``now_us`` in ``zone``."""
    wall = zone_clock(zone).wall(now_us // SECOND_US)
    return date(*civil_from_days(wall // 86400))


def due_slot(
    *,
    days: int,
    time: tuple[int, int],
    zone: ZoneInfo,
    now_us: int,
    last_run_day: str | None,
    deferred_since: int | None = None,
    today: date | None = None,
) -> Slot | None:
    """Return the slot due at ``now_us``, or None.

    Due: its day is in ``days``, it did not run that day yet (``last_run_day``, the local
    date of the last slot run), and it happened at most 15 minutes ago; or it was deferred
    (``deferred_since`` at or after it), in which case it stays due until the runner records
    it: done within 60 minutes of the first deferral, or skipped as busy after them.
    ``today`` is the local date at ``now_us`` when the caller knows it already.
    """
    if today is None:
        today = local_today(now_us, zone)
    # Yesterday too: a slot just before midnight can still be due (late, or deferred).
    slots = [
        slot_on(day, time, zone)
        for day in (today - timedelta(days=1), today)
        if days & day_bit(day.weekday())
    ]
    if len(slots) == 2 and slots[0].at_us == slots[1].at_us:
        # A skipped local day (Pacific/Apia's 2011-12-30): its slot moved to the gap's end,
        # the instant of the next day's slot. One action serves both; a run of either day
        # counts for both, or each run would make the other due again at the next pass.
        served = slots[0].days + slots[1].days
        slots = [replace(slots[1], moved=slots[0].moved or slots[1].moved, days=served)]
    # A run of a day counts for every day before it too: yesterday's slot is not due once
    # today's ran. Where a skipped day's slot lands at the gap's end and the next day's a few
    # minutes later (Apia, 00:05), both lie within the late window, and each run, recording
    # its own day, made the other due again every other minute.
    ran_through = date.fromisoformat(last_run_day) if last_run_day else None
    for slot in reversed(slots):  # today's first
        if (ran_through is not None and max(slot.days) <= ran_through) or slot.at_us > now_us:
            continue
        if now_us - slot.at_us <= LATE_WINDOW_US:
            return slot
        if deferred_since is not None and deferred_since >= slot.at_us:
            return slot
    return None


def next_slot(
    *, days: int, time: tuple[int, int], zone: ZoneInfo, now_us: int, last_run_day: str | None
) -> Slot | None:
    """Return the slot the schedule runs next: one due now that has not run yet, else the
    first to come (within the next eight local days); None when ``days`` names none.

    Shown on the schedules page: "next" is what the runner will act on, by ``due_slot``'s
    rules, so a slot due but not yet run (late by up to 15 minutes) is next, not tomorrow's.
    """
    due = due_slot(days=days, time=time, zone=zone, now_us=now_us, last_run_day=last_run_day)
    if due is not None:
        return due
    today = local_today(now_us, zone)
    for ahead in range(9):
        day = today + timedelta(days=ahead)
        if days & day_bit(day.weekday()):
            slot = slot_on(day, time, zone)
            if slot.at_us > now_us:
                return slot
    return None
