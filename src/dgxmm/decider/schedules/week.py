"""Where a deployment's schedules leave it down (asleep or stopped) over a week."""

from __future__ import annotations

from collections.abc import Iterable

from dgxmm.decider.days import days_in
from dgxmm.decider.schedules.rows import Schedule
from dgxmm.decider.schedules.slots import parse_time

__all__ = ["WEEK_MINUTES", "down_intervals", "intervals_between"]

WEEK_MINUTES = 7 * 24 * 60


def down_intervals(schedules: Iterable[Schedule]) -> list[tuple[int, int]]:
    """Return the minutes of the week (Monday 00:00 is 0) the switched-on schedules leave it down.

    Each interval is ``(start, end)`` with ``end`` exclusive, within 0..10080; one that runs
    over the end of the week is split in two. The state at Monday 00:00 is the one the last
    slot of the week leaves, as the week repeats.
    """
    changes: list[tuple[int, bool]] = []  # (minute of week, down after it)
    for schedule in schedules:
        if not schedule.enabled:
            continue
        hour, minute = parse_time(schedule.time)
        for weekday in days_in(schedule.days):
            changes.append((weekday * 1440 + hour * 60 + minute, schedule.action.quiets))
    return intervals_between(changes)


def intervals_between(changes: list[tuple[int, bool]]) -> list[tuple[int, int]]:
    """Return the down intervals of a week's changes: (minute of week, down after it).

    The state at Monday 00:00 is the one the week's last change leaves, as the week repeats.
    """
    if not changes:
        return []
    changes.sort()
    down = changes[-1][1]  # what the week's last slot left, at Monday 00:00
    intervals: list[tuple[int, int]] = []
    start = 0 if down else None
    for at, goes_down in changes:
        if goes_down and start is None:
            start = at
        elif not goes_down and start is not None:
            if at > start:
                intervals.append((start, at))
            start = None
    if start is not None and start < WEEK_MINUTES:
        intervals.append((start, WEEK_MINUTES))
    return intervals
