"""A week strip: days across, hours down, the hours a deployment's schedules leave it down shaded."""

from __future__ import annotations

from html import escape

from dgxmm.decider.days import DAY_NAMES
from dgxmm.decider.schedule_rows import Schedule
from dgxmm.decider.week import down_intervals

__all__ = ["week_strip"]

_COLUMN, _HOUR, _TOP, _LEFT = 96, 14, 22, 40


def week_strip(schedules: list[Schedule]) -> str:
    """Return an SVG of the week with the down (asleep or stopped) hours shaded."""
    width = _LEFT + 7 * _COLUMN + 4
    height = _TOP + 24 * _HOUR + 4
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="week-strip" role="img" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}">',
        "<title>The week: shaded hours are asleep or stopped by the schedules</title>",
    ]
    for day, name in enumerate(DAY_NAMES):
        x = _LEFT + day * _COLUMN
        parts.append(
            f'<text x="{x + _COLUMN / 2}" y="14" class="label" text-anchor="middle">{name[:3]}</text>'
            f'<rect class="day" x="{x}" y="{_TOP}" width="{_COLUMN - 2}" height="{24 * _HOUR}"/>'
        )
    for hour in range(0, 24, 3):
        y = _TOP + hour * _HOUR
        parts.append(f'<text x="{_LEFT - 4}" y="{y + 10}" class="label" text-anchor="end">{hour:02d}</text>')
    for start, end in down_intervals(schedules):
        # Split at midnights: each day is its own column.
        at = start
        while at < end:
            day, minute = divmod(at, 1440)
            stop = min(end, (day + 1) * 1440)
            y = _TOP + minute / 60 * _HOUR
            h = (stop - at) / 60 * _HOUR
            parts.append(
                f'<rect class="down" data-day="{day}" data-from="{minute}" data-to="{minute + stop - at}" '
                f'x="{_LEFT + day * _COLUMN}" y="{y:.1f}" width="{_COLUMN - 2}" height="{h:.1f}"/>'
            )
            at = stop
    for schedule in schedules:
        hour, minute = int(schedule.time[:2]), int(schedule.time[3:])
        for day in range(7):
            if schedule.days & (1 << day):
                y = _TOP + (hour + minute / 60) * _HOUR
                kind = escape(schedule.action.value)
                off = "" if schedule.enabled else " off"
                parts.append(
                    f'<line class="slot {kind}{off}" x1="{_LEFT + day * _COLUMN}" x2="{_LEFT + (day + 1) * _COLUMN - 2}" '
                    f'y1="{y:.1f}" y2="{y:.1f}"><title>{kind} at {schedule.time}</title></line>'
                )
    parts.append("</svg>")
    return "".join(parts)
