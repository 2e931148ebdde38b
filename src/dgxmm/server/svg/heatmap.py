"""A deployment's week as a 7 x 24 heat map, drawn as SVG on the server.

Rows are the days (Monday first), columns the local hours. A cell's shade is the hour's
requests per minute at p95 (square-root scale, so that light traffic still shows beside the
busiest hour); an hour never observed is grey and hatched. Over the cells: the hours the
existing schedules leave the deployment asleep or stopped (a dark band), and each open
proposal's sleep windows (a dashed outline, with the proposal's id).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from dgxmm.decider.days import DAY_NAMES, days_in
from dgxmm.decider.profiles import HourProfile
from dgxmm.decider.proposals.rows import Proposal
from dgxmm.words import counted

__all__ = ["Interval", "proposal_intervals", "traffic_heatmap"]

_CELL_W, _CELL_H, _LEFT, _TOP = 30, 24, 44, 20
_WEEK = 7 * 1440
# A cell is the busiest hour's blue at an opacity by its traffic, over the card behind the
# chart: an hour with none is the card's own colour, light or dark (a fixed light shade was
# near-white on the dark page).
_HIGH = "rgb(8,81,156)"
_LEAST_OPACITY = 0.04

Interval = tuple[int, int]  # minutes of the week, end exclusive


@dataclass(frozen=True, slots=True, kw_only=True)
class _Box:
    day: int
    start: int  # minute of the day
    end: int  # minute of the day, exclusive


def _minutes(text: str) -> int:
    hour, minute = text.split(":")
    return int(hour) * 60 + int(minute)


def proposal_intervals(proposal: Proposal) -> list[Interval]:
    """Return the minutes of the week a proposal would leave the deployment asleep."""
    sleeps = [day * 1440 + _minutes(proposal.sleep_time) for day in days_in(proposal.sleep_days)]
    wakes = sorted(day * 1440 + _minutes(proposal.wake_time) for day in days_in(proposal.wake_days))
    intervals = []
    for start in sleeps:
        later = [wake for wake in wakes if wake > start]
        # The first wake after the sleep; past Sunday, the first of next week.
        end = later[0] if later else wakes[0] + _WEEK
        intervals.append((start, end))
    return intervals


def _boxes(intervals: Sequence[Interval]) -> list[_Box]:
    """Split intervals at midnights (each day is a row) and at the week's end."""
    boxes = []
    for start, end in intervals:
        at = start
        while at < end:
            day, minute = divmod(at % _WEEK, 1440)
            until = min(end, at - minute + 1440)
            boxes.append(_Box(day=day, start=minute, end=minute + (until - at)))
            at = until
    return boxes


def _opacity(value: float, peak: float) -> float:
    share = math.sqrt(value / peak) if peak > 0 else 0.0
    return round(_LEAST_OPACITY + (1 - _LEAST_OPACITY) * share, 3)


def _x(minute_of_day: float) -> float:
    return _LEFT + minute_of_day / 60 * _CELL_W


def _y(day: int) -> int:
    return _TOP + day * _CELL_H


def traffic_heatmap(
    hours: Sequence[HourProfile],
    *,
    asleep: Sequence[Interval] = (),
    proposed: Sequence[tuple[int, Sequence[Interval]]] = (),
) -> str:
    """Return the SVG: p95 requests per minute per local hour, with sleep windows over it."""
    width, height = _LEFT + 24 * _CELL_W + 4, _TOP + 7 * _CELL_H + 4
    by_hour = {hour.hour_of_week: hour for hour in hours}
    peak = max((hour.rpm_p95 for hour in hours), default=0.0)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="heatmap" role="img" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'data-peak="{peak:g}">',
        "<title>Requests per minute (p95) by local hour of the week</title>",
        '<defs><pattern id="unobserved" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="6" height="6" fill="#eee"/>'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#ccc" stroke-width="2"/></pattern></defs>',
    ]
    for hour in range(0, 24, 3):
        parts.append(
            f'<text x="{_x(hour * 60) + 2:.0f}" y="{_TOP - 6}" font-size="11" '
            f'fill="#666">{hour:02d}</text>'
        )
    for day, name in enumerate(DAY_NAMES):
        parts.append(
            f'<text x="{_LEFT - 6}" y="{_y(day) + _CELL_H / 2 + 4:.0f}" font-size="11" '
            f'fill="#666" text-anchor="end">{name[:3]}</text>'
        )
        for hour in range(24):
            cell = by_hour.get(day * 24 + hour)
            observed = cell is not None and cell.observed_minutes > 0
            paint = (
                f'fill="{_HIGH}" fill-opacity="{_opacity(cell.rpm_p95, peak):g}"'
                if cell is not None and observed
                else 'fill="url(#unobserved)"'
            )
            tip = (
                f"{name} {hour:02d}:00: p95 {cell.rpm_p95:.3g}/min, p50 {cell.rpm_p50:.3g}/min, "
                f"active {cell.active_share:.0%} of {cell.observed_minutes} min; idle in "
                f"{cell.idle_weeks} of {counted(cell.observed_weeks, 'week')}"
                if cell is not None and observed
                else f"{name} {hour:02d}:00: no data"
            )
            parts.append(
                f'<rect class="cell" data-hour="{day * 24 + hour}" '
                f'data-rpm-p95="{cell.rpm_p95 if cell else 0:g}" x="{_x(hour * 60):.0f}" '
                f'y="{_y(day)}" width="{_CELL_W - 1}" height="{_CELL_H - 1}" {paint}>'
                f"<title>{escape(tip)}</title></rect>"
            )
    for box in _boxes(asleep):
        parts.append(
            f'<rect class="asleep" data-day="{box.day}" data-from="{box.start}" '
            f'data-to="{box.end}" x="{_x(box.start):.1f}" y="{_y(box.day) + _CELL_H * 0.3:.1f}" '
            f'width="{(box.end - box.start) / 60 * _CELL_W:.1f}" height="{_CELL_H * 0.4:.1f}" '
            'fill="#1f2937" fill-opacity="0.55"><title>asleep or stopped by a schedule</title>'
            "</rect>"
        )
    for proposal_id, intervals in proposed:
        for box in _boxes(intervals):
            parts.append(
                f'<rect class="proposed" data-proposal="{proposal_id}" data-day="{box.day}" '
                f'data-from="{box.start}" data-to="{box.end}" x="{_x(box.start):.1f}" '
                f'y="{_y(box.day) + 1}" width="{(box.end - box.start) / 60 * _CELL_W:.1f}" '
                f'height="{_CELL_H - 3}" fill="none" stroke="#d97706" stroke-width="2" '
                f'stroke-dasharray="5 3"><title>proposal {proposal_id}: asleep</title></rect>'
            )
    parts.append("</svg>")
    return "".join(parts)
