"""A week strip: days across, hours down, shaded where the schedules leave a deployment down."""

from __future__ import annotations

from html import escape

from dgxmm.decider.days import DAY_NAMES
from dgxmm.decider.schedules.rows import Schedule
from dgxmm.decider.schedules.slots import parse_time
from dgxmm.decider.schedules.week import down_intervals

__all__ = ["week_strip"]

_COLUMN, _HOUR, _TOP, _LEFT = 96, 14, 22, 40


def _x(day: int) -> int:
    return _LEFT + day * _COLUMN


def _y(minute_of_day: float) -> float:
    return _TOP + minute_of_day / 60 * _HOUR


def week_strip(schedules: list[Schedule]) -> str:
    """Return an SVG of the week with the down (asleep or stopped) hours shaded."""
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
    for start, end in down_intervals(schedules):
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
    for schedule in schedules:
        hour, minute = parse_time(schedule.time)
        kind = escape(schedule.action.value) + ("" if schedule.enabled else " off")
        y = _y(hour * 60 + minute)
        for day in range(7):
            if schedule.days & (1 << day):
                parts.append(
                    f'<line class="slot {kind}" x1="{_x(day)}" x2="{_x(day + 1) - 2}" '
                    f'y1="{y:.1f}" y2="{y:.1f}"><title>{kind} at {schedule.time}</title></line>'
                )
    parts.append("</svg>")
    return "".join(parts)
