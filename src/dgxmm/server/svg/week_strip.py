"""A week strip: days across, hours down, shaded where the schedules leave a deployment down.

Drawn in the page's display zone: each schedule's slots (wall times in its own zone) are
placed at the instant they fire this week, read in the display zone, so a sleep at 12:00 UTC
and a wake at 13:02 Berlin (12:02 UTC in winter) are two minutes apart, as they are.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from html import escape
from zoneinfo import ZoneInfo

from dgxmm.clock import from_us
from dgxmm.decider.days import DAY_NAMES
from dgxmm.decider.schedules.rows import Schedule
from dgxmm.decider.schedules.slots import parse_time
from dgxmm.decider.schedules.week import WEEK_MINUTES, intervals_between

__all__ = ["week_strip"]

_COLUMN, _HOUR, _TOP, _LEFT = 96, 14, 22, 40


def _x(day: int) -> int:
    return _LEFT + day * _COLUMN


def _y(minute_of_day: float) -> float:
    return _TOP + minute_of_day / 60 * _HOUR


def _placed(schedule: Schedule, monday: datetime) -> list[int]:
    """Return the minutes of this week (display zone, from ``monday``) the schedule fires at."""
    own = ZoneInfo(schedule.time_zone)
    hour, minute = parse_time(schedule.time)
    first = monday.astimezone(own).date()
    found = []
    for offset in range(-1, 8):  # its own days can start a day before or after ours
        day = first + timedelta(days=offset)
        if not schedule.days & (1 << day.weekday()):
            continue
        local = datetime(day.year, day.month, day.day, hour, minute, tzinfo=own)
        shown = local.astimezone(monday.tzinfo)
        at = (shown.date() - monday.date()).days * 1440 + shown.hour * 60 + shown.minute
        if 0 <= at < WEEK_MINUTES:
            found.append(at)
    return found


def week_strip(schedules: list[Schedule], *, zone: ZoneInfo, now_us: int) -> str:
    """Return an SVG of this week in ``zone`` with the down (asleep or stopped) hours shaded."""
    today = from_us(now_us, zone)
    monday = (today - timedelta(days=today.weekday())).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    placed = [(schedule, _placed(schedule, monday)) for schedule in schedules]
    width, height = _x(7) + 4, _y(24 * 60) + 4
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="week-strip" role="img" '
        f'viewBox="0 0 {width} {height:.0f}" width="{width}" height="{height:.0f}">',
        "<title>The week: shaded hours are asleep or stopped by the schedules</title>",
    ]
    for day, name in enumerate(DAY_NAMES):
        parts.append(
            f'<text x="{_x(day) + _COLUMN / 2}" y="14" class="label" '
            f'text-anchor="middle">{name[:3]}</text>'
            f'<rect class="day" x="{_x(day)}" y="{_TOP}" width="{_COLUMN - 2}" '
            f'height="{24 * _HOUR}"/>'
        )
    for hour in range(0, 24, 3):
        parts.append(
            f'<text x="{_LEFT - 4}" y="{_y(hour * 60) + 10:.0f}" class="label" '
            f'text-anchor="end">{hour:02d}</text>'
        )
    changes = [
        (at, schedule.action.quiets) for schedule, ats in placed if schedule.enabled for at in ats
    ]
    for start, end in intervals_between(sorted(changes)):
        at = start
        while at < end:  # split at midnights: each day is its own column
            day, minute = divmod(at, 1440)
            until = min(end, (day + 1) * 1440)
            length = until - at
            parts.append(
                f'<rect class="down" data-day="{day}" data-from="{minute}" '
                f'data-to="{minute + length}" x="{_x(day)}" y="{_y(minute):.1f}" '
                f'width="{_COLUMN - 2}" height="{length / 60 * _HOUR:.1f}"/>'
            )
            at = until
    for schedule, ats in placed:
        kind = escape(schedule.action.value) + ("" if schedule.enabled else " off")
        for at in ats:
            day, minute = divmod(at, 1440)
            y = _y(minute)
            shown = f"{minute // 60:02d}:{minute % 60:02d} {zone.key}"
            parts.append(
                f'<line class="slot {kind}" data-day="{day}" data-minute="{minute}" '
                f'x1="{_x(day)}" x2="{_x(day + 1) - 2}" y1="{y:.1f}" y2="{y:.1f}">'
                f"<title>{kind} at {schedule.time} {escape(schedule.time_zone)} "
                f"({shown})</title></line>"
            )
    parts.append("</svg>")
    return "".join(parts)
