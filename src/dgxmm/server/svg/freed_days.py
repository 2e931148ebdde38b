"""The Savings page's fleet chart: GiB-hours freed per local day, by who put memory down.

One stacked bar a day (the fleet's deployments summed by their local date), a band per actor:
idle, schedule, person, request, system (``decider/savings.py``'s ``Actor``; a group it does not
know yet is drawn too, after those). Drawn for a phone first: 320 units wide, scaled up to
480 px on a wide screen, never below 320 px (its box scrolls instead), so its 11-unit text is
at least 11 px tall. Colours are the theme's variables (``dgxmm.css``): dark mode follows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from html import escape

from dgxmm.decider.savings import Actor

__all__ = ["ACTOR_ORDER", "freed_days_chart"]

ACTOR_ORDER = (Actor.IDLE, Actor.SCHEDULE, Actor.PERSON, Actor.REQUEST, Actor.SYSTEM)
_WIDTH, _HEIGHT, _LEFT, _RIGHT, _TOP, _BOTTOM = 320, 210, 44, 6, 22, 58


def freed_days_chart(days: Sequence[tuple[date, Mapping[str, float]]]) -> str:
    """Return an SVG of each day's freed GiB-hours, stacked by actor (oldest day first)."""
    known = [a.value for a in ACTOR_ORDER]
    others = sorted({k for _, by in days for k in by} - set(known))
    actors = [a for a in [*known, *others] if any(by.get(a, 0) > 0 for _, by in days)]
    peak = max((sum(by.values()) for _, by in days), default=0.0) or 1.0
    baseline = _HEIGHT - _BOTTOM
    plot_w, plot_h = _WIDTH - _LEFT - _RIGHT, baseline - _TOP
    step = plot_w / max(len(days), 1)
    parts = [
        '<svg xmlns="http://www.w3.org/2000/svg" class="chart savings-chart freed-days" '
        f'role="img" viewBox="0 0 {_WIDTH} {_HEIGHT}" preserveAspectRatio="xMinYMin meet">',
        "<title>GiB-hours freed per day, by who put the memory down</title>",
        f'<line x1="{_LEFT}" y1="{baseline}" x2="{_WIDTH - _RIGHT}" y2="{baseline}" class="axis"/>',
        f'<text x="{_LEFT - 4}" y="{_TOP + 4}" class="label" text-anchor="end">{_gib(peak)}</text>',
        f'<text x="{_LEFT - 4}" y="{baseline}" class="label" text-anchor="end">0</text>',
        '<text x="4" y="12" class="label">GiB-h freed</text>',
    ]
    for index, (day, by) in enumerate(days):
        x = _LEFT + index * step
        top = float(baseline)
        tip = ", ".join(f"{_gib(by[a])} by {a}" for a in actors if by.get(a, 0) > 0) or "none"
        parts.append(
            f'<g class="bar" data-day="{day.isoformat()}" data-total="{sum(by.values()):.3f}" '
            f'data-tip="{day.isoformat()}: {escape(tip)}"><title>{day.isoformat()}: '
            f"{escape(tip)}</title>"
        )
        for actor in actors:
            value = by.get(actor, 0.0)
            if value <= 0:
                continue
            height = plot_h * value / peak
            top -= height
            parts.append(
                f'<rect class="actor-{escape(actor)}" data-actor="{escape(actor)}" '
                f'data-gib-h="{value:.3f}" x="{x:.1f}" y="{top:.1f}" '
                f'width="{max(step - 1, 0.5):.1f}" height="{height:.1f}"/>'
            )
        parts.append("</g>")
    if days:  # the first and last day under the axis
        first, last = days[0][0].isoformat(), days[-1][0].isoformat()
        parts.append(f'<text x="{_LEFT}" y="{baseline + 14}" class="label">{first}</text>')
        if len(days) > 1:
            parts.append(
                f'<text x="{_WIDTH - _RIGHT}" y="{baseline + 14}" class="label" '
                f'text-anchor="end">{last}</text>'
            )
    for index, actor in enumerate(actors):  # the legend, two rows
        x = _LEFT + (index % 3) * 92
        y = baseline + 32 + (index // 3) * 16
        parts.append(
            f'<g class="legend"><rect class="actor-{escape(actor)}" x="{x}" y="{y - 9}" '
            f'width="10" height="10"/><text x="{x + 14}" y="{y}" class="label">'
            f"{escape(actor)}</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _gib(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"
