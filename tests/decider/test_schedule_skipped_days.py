"""Local days the zone database skips: one instant gets at most one action.

When a zone jumps forward by a whole day (Pacific/Apia went from UTC-10 to UTC+14 at the end
of 2011-12-29), the skipped day's slot falls in the gap, so it happens at the gap's end: the
very instant of the next day's slot at the same local time. Both are due there; the runner
must act once and record both days, or each run (setting ``last_run_day`` to one of them)
makes the other due again at the next pass.

The transitions are not listed by hand: ``day_skipping_transitions`` reads every zone of the
tzdata package (its TZif files) for forward jumps of 24 hours or more between 1970 and 2037.
"""

from __future__ import annotations

import importlib.resources
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from support import at

from dgxmm.decider.days import ALL_DAYS, day_bit
from dgxmm.decider.schedules.slots import due_slot, local_today, parse_time
from dgxmm.time_units import MINUTE_US, SECOND_US

FIRST_YEAR, LAST_YEAR = 1970, 2037
DAY_S = 86_400


@dataclass(frozen=True, slots=True, kw_only=True)
class Jump:
    """A forward transition of a day or more: its zone, instant and offsets (seconds)."""

    zone: str
    at_s: int
    before_s: int
    after_s: int

    @property
    def id(self) -> str:
        return f"{self.zone}-{datetime.fromtimestamp(self.at_s, UTC):%Y-%m-%d}"


def _tzif_transitions(name: str) -> Iterator[tuple[int, int, int]]:
    """Yield (instant, offset before, offset after) of each transition in a TZif file."""
    data = importlib.resources.files("tzdata").joinpath("zoneinfo", *name.split("/")).read_bytes()

    def counts(start: int) -> tuple[int, ...]:
        assert data[start : start + 4] == b"TZif", f"{name} is not a TZif file"
        return struct.unpack(">6l", data[start + 20 : start + 44])  # isut isstd leap time type char

    isut, isstd, leap, times, types, chars = counts(0)
    start, width, code = 44, 4, "l"
    if data[4:5] >= b"2":  # version 2+: skip the 32-bit block, read the 64-bit one
        start += times * 5 + types * 6 + chars + leap * 8 + isstd + isut
        isut, isstd, leap, times, types, chars = counts(start)
        start, width, code = start + 44, 8, "q"
    instants = struct.unpack(f">{times}{code}", data[start : start + times * width])
    start += times * width
    indices = data[start : start + times]
    start += times
    offsets = [
        struct.unpack(">l", data[start + 6 * i : start + 6 * i + 4])[0] for i in range(types)
    ]
    before = offsets[0]
    for instant, index in zip(instants, indices, strict=True):
        yield instant, before, offsets[index]
        before = offsets[index]


def day_skipping_transitions() -> list[Jump]:
    """Every forward jump of 24 hours or more in the tzdata package's zones, 1970-2037."""
    zones = importlib.resources.files("tzdata").joinpath("zones").read_text().split()
    found = []
    for zone in zones:
        for instant, before, after in _tzif_transitions(zone):
            year = datetime.fromtimestamp(instant, UTC).year
            if FIRST_YEAR <= year <= LAST_YEAR and after - before >= DAY_S:
                found.append(Jump(zone=zone, at_s=instant, before_s=before, after_s=after))
    return found


JUMPS = day_skipping_transitions()


def passes(
    zone: ZoneInfo, time: str, first_us: int, minutes: int, days: int = ALL_DAYS
) -> list[tuple[int, tuple[date, ...]]]:
    """Run a pass every minute from ``first_us`` as the runner does; return each action.

    Each action records its slot's day as ``last_run_day``, as the runner's record does.
    """
    last_run_day: str | None = None
    acted = []
    for minute in range(minutes):
        now = first_us + minute * MINUTE_US
        slot = due_slot(
            days=days, time=parse_time(time), zone=zone, now_us=now, last_run_day=last_run_day
        )
        if slot is not None:
            acted.append((now, slot.days))
            last_run_day = slot.day.isoformat()
    return acted


def test_the_scan_finds_the_known_skipped_days() -> None:
    assert {"Pacific/Apia-2011-12-30", "Pacific/Kwajalein-1993-08-21"} <= {j.id for j in JUMPS}


@pytest.mark.parametrize("jump", JUMPS, ids=[jump.id for jump in JUMPS])
def test_it_acts_once_where_a_skipped_days_slot_meets_the_next_days(jump: Jump) -> None:
    zone = ZoneInfo(jump.zone)
    at_us = jump.at_s * SECOND_US
    before = local_today(at_us - SECOND_US, zone)
    after = local_today(at_us, zone)
    skipped = tuple(before + timedelta(days=n) for n in range(1, (after - before).days))
    assert skipped, f"{jump.id}: no local date is skipped"
    wall = datetime.fromtimestamp(jump.at_s + jump.after_s, UTC)
    time = f"{wall:%H:%M}"  # the local time at the gap's end: the next day's slot is there
    acted = passes(zone, time, at_us - 30 * MINUTE_US, 60)
    assert acted == [(at_us, (*skipped, after))]


def test_a_schedule_for_the_skipped_weekday_alone_acts_at_the_gaps_end() -> None:
    apia = ZoneInfo("Pacific/Apia")
    friday = date(2011, 12, 30)  # the skipped day
    acted = passes(
        apia, "00:00", at("2011-12-29T23:00:00-10:00"), 120, days=day_bit(friday.weekday())
    )
    assert acted == [(at("2011-12-31T00:00:00+14:00"), (friday,))]


@pytest.mark.parametrize(
    ("zone", "time", "first", "expected"),
    [
        # Apia, 00:00: the 30th's slot moves onto the 31st's. One action, both days.
        ("Pacific/Apia", "00:00", "2011-12-29T23:00:00-10:00",
         [("2011-12-31T00:00:00+14:00", ("2011-12-30", "2011-12-31"))]),
        # Apia, 23:50: the 29th's slot, then the 30th's at the gap's end (another instant,
        # as the jobs engine fires), then the 31st's a day later.
        ("Pacific/Apia", "23:50", "2011-12-29T23:00:00-10:00",
         [("2011-12-29T23:50:00-10:00", ("2011-12-29",)),
          ("2011-12-31T00:00:00+14:00", ("2011-12-30",))]),
        # Apia, 00:05: the 30th's slot is in the gap, so at its end (00:00 on the 31st); the
        # 31st's is five minutes later. Each day acts once: the 30th's did not come back every
        # other minute within its 15 late minutes (it alternated with the 31st's, found by a
        # review after the midnight fix).
        ("Pacific/Apia", "00:05", "2011-12-29T23:00:00-10:00",
         [("2011-12-31T00:00:00+14:00", ("2011-12-30",)),
          ("2011-12-31T00:05:00+14:00", ("2011-12-31",))]),
        # Kwajalein skipped 1993-08-21 (UTC-12 to UTC+12).
        ("Pacific/Kwajalein", "00:00", "1993-08-20T23:00:00-12:00",
         [("1993-08-22T00:00:00+12:00", ("1993-08-21", "1993-08-22"))]),
        # Kiritimati skipped 1994-12-31 (UTC-10 to UTC+14).
        ("Pacific/Kiritimati", "00:00", "1994-12-30T23:00:00-10:00",
         [("1995-01-01T00:00:00+14:00", ("1994-12-31", "1995-01-01"))]),
        # An ordinary spring-forward day still acts once, at the gap's end.
        ("Europe/Berlin", "02:30", "2026-03-29T01:00:00+01:00",
         [("2026-03-29T03:00:00+02:00", ("2026-03-29",))]),
    ],
    ids=["apia-midnight", "apia-23-50", "apia-00-05", "kwajalein-midnight", "kiritimati-midnight",
         "berlin-spring-forward"],
)  # fmt: skip
def test_it_acts_at_these_instants(
    zone: str, time: str, first: str, expected: list[tuple[str, tuple[str, ...]]]
) -> None:
    acted = passes(ZoneInfo(zone), time, at(first), 180)
    assert acted == [
        (at(when), tuple(date.fromisoformat(d) for d in days)) for when, days in expected
    ]
