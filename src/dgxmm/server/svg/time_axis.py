"""The time axis the charts share: hour ticks and day labels in the page's display zone.

A chart over ``[first_us, end_us)`` gets a tick at each whole step of local time (a quarter
hour for an hour's chart, up to a day for a month's) labelled with the local time, and at
each local midnight (or on the first tick) the day's name and date on a second line, so a
reader sees which day a bar is on without hovering. Steps are local wall times: on a day the
clocks change, ticks stay on the hour.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from dgxmm.clock import from_us, to_us
from dgxmm.time_units import MINUTE_US

__all__ = ["time_axis"]

# Steps in minutes, from the finest; a chart takes the finest that gives at most 12 ticks.
_STEPS = (15, 30, 60, 180, 360, 720, 1440, 2880, 10080)


def _step_minutes(span_us: int) -> int:
    for step in _STEPS:
        if span_us / (step * MINUTE_US) <= 12:
            return step
    return _STEPS[-1]


def _first_tick(start: datetime, step: int) -> datetime:
    """The first local time at or after ``start`` on a whole step (a day's, for a day or more)."""
    midnight = start.replace(hour=0, minute=0, second=0, microsecond=0)
    if step >= 1440:
        return midnight if midnight >= start else midnight + timedelta(days=1)
    minutes = start.hour * 60 + start.minute + (1 if start.second or start.microsecond else 0)
    whole = -(-minutes // step) * step
    return midnight + timedelta(minutes=whole)


def time_axis(
    first_us: int,
    end_us: int,
    zone: ZoneInfo,
    *,
    x_of: Callable[[int], float],
    baseline: float,
    top: float,
) -> list[str]:
    """Return the SVG of the ticks, grid lines and labels for ``[first_us, end_us)``."""
    step = _step_minutes(end_us - first_us)
    parts: list[str] = []
    local = _first_tick(from_us(first_us, zone), step)
    shown_day = None
    while True:
        # Wall-clock steps in the zone: the instant is resolved again after each step.
        at = to_us(local.replace(tzinfo=zone))
        if at >= end_us:
            break
        x = x_of(at)
        day = local.date()
        parts.append(
            f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{baseline + 4}"/>'
        )
        if step < 1440:
            parts.append(
                f'<text class="label" x="{x:.1f}" y="{baseline + 14}" text-anchor="middle">'
                f"{local:%H:%M}</text>"
            )
        if day != shown_day:
            label = f"{local:%a} {local.day} {local:%b}"
            parts.append(
                f'<text class="day-label" x="{x:.1f}" y="{baseline + 27}" text-anchor="middle">'
                f"{label}</text>"
            )
            shown_day = day
        local = (local.replace(tzinfo=None) + timedelta(minutes=step)).replace(tzinfo=zone)
    return parts
