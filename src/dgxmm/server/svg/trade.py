"""A deployment's trade picture on the Savings page: freed GiB-hours against mean added wait.

One dot per replay of its last four weeks (``lab/trade.py``), a colour and mark per series
(anchors, the ladder's and the priced policy's sweeps each joined in order, the wait
budget's point, the oracles, and any series ``SWEEPS`` gains; a series keeps its colour and
mark, by its place in ``SWEEPS``, whether or not the series before it has points);
up and to the left is better. The wait axis is linear to 0.1 s, then a decade a step. Each
dot names its policy, figures and cost on hover, and the page lists them in a table beside
it. Drawn for a phone as ``freed_days.py`` is (320 units wide, never below 320 px), in the
theme's colours.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from dgxmm.lab.trade import SWEEPS, TradePoint

__all__ = ["trade_chart"]

_WIDTH, _HEIGHT, _LEFT, _RIGHT, _TOP, _BOTTOM = 320, 250, 48, 12, 24, 76
# The wait axis is linear below 0.1 s and logarithmic above (a symmetric log): a Knative
# start of a minute and a level-1 wake of a second both stay readable on one axis.
_LINEAR_S = 0.1
_TICKS_S = (0.1, 1.0, 10.0, 100.0, 1000.0)
_MARKS = ("circle", "square", "diamond", "triangle")  # by series, in order
_JOINED = ("ladder", "priced")  # sweeps of one policy's setting: drawn joined in order
_PLACES = {sweep.name: place for place, sweep in enumerate(SWEEPS)}


def trade_chart(points: Sequence[TradePoint], *, name: str) -> str:
    """Return an SVG of each point's freed GiB-hours (y) against its mean added wait (x)."""
    series = sorted(dict.fromkeys(p.series for p in points), key=lambda n: _PLACES.get(n, 99))
    x_top = _stretched(max((p.wait_mean_s for p in points), default=0.0) * 1.08 or 1.0)
    y_top = max((p.freed_gib_h for p in points), default=0.0) * 1.08 or 1.0
    baseline, right = _HEIGHT - _BOTTOM, _WIDTH - _RIGHT
    plot_w, plot_h = right - _LEFT, baseline - _TOP

    def x_of(wait_s: float) -> float:
        return _LEFT + plot_w * _stretched(wait_s) / x_top

    def y_of(gib_h: float) -> float:
        return baseline - plot_h * max(gib_h, 0.0) / y_top

    parts = [
        '<svg xmlns="http://www.w3.org/2000/svg" class="chart savings-chart trade" role="img" '
        f'data-deployment="{escape(name)}" viewBox="0 0 {_WIDTH} {_HEIGHT}" '
        'preserveAspectRatio="xMinYMin meet">',
        f"<title>{escape(name)}: GiB-hours freed against mean added wait, last four weeks</title>",
        f'<line x1="{_LEFT}" y1="{baseline}" x2="{right}" y2="{baseline}" class="axis"/>',
        f'<line x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{baseline}" class="axis"/>',
        f'<text x="{_LEFT - 4}" y="{_TOP + 4}" class="label" text-anchor="end">'
        f"{_number(y_top)}</text>",
        f'<text x="{_LEFT - 4}" y="{baseline}" class="label" text-anchor="end">0</text>',
        '<text x="4" y="12" class="label">GiB-h freed</text>',
        f'<text x="{_LEFT}" y="{baseline + 14}" class="label" text-anchor="middle">0</text>',
        f'<text x="{right}" y="{baseline + 28}" class="label" text-anchor="end">'
        "mean added wait, s</text>",
    ]
    for tick in _TICKS_S:
        if _stretched(tick) <= x_top:
            x = x_of(tick)
            parts.append(
                f'<line x1="{x:.1f}" y1="{_TOP}" x2="{x:.1f}" y2="{baseline}" class="grid"/>'
                f'<text x="{x:.1f}" y="{baseline + 14}" class="label" text-anchor="middle">'
                f"{tick:g}</text>"
            )
    for shown, found in enumerate(series):
        index = _PLACES.get(found, len(_PLACES) + shown)
        mine = [p for p in points if p.series == found]
        mark = _MARKS[index % len(_MARKS)]
        if len(mine) > 1 and found in _JOINED:  # a sweep: joined in its order
            joined = " ".join(f"{x_of(p.wait_mean_s):.1f},{y_of(p.freed_gib_h):.1f}" for p in mine)
            parts.append(f'<polyline class="sweep series-{index}" points="{joined}"/>')
        for point in mine:
            tip = (
                f"{point.label}: {point.freed_gib_h:,.0f} GiB-h freed, mean added wait "
                f"{point.wait_mean_s:.3f} s, p99 of all {point.wait_p99_all_s:.2f} s, "
                f"cost {point.cost:,.0f} GiB-h"
            )
            parts.append(
                f'<g class="point series-{index}" data-series="{escape(found)}" '
                f'data-label="{escape(point.label)}" data-freed="{point.freed_gib_h:.3f}" '
                f'data-wait="{point.wait_mean_s:.6f}" data-tip="{escape(tip)}">'
                f"<title>{escape(tip)}</title>"
                f"{_mark(mark, x_of(point.wait_mean_s), y_of(point.freed_gib_h))}</g>"
            )
        x = _LEFT + (shown % 3) * 90
        y = baseline + 46 + (shown // 3) * 16
        parts.append(
            f'<g class="legend series-{index}">{_mark(mark, x + 5, y - 4)}'
            f'<text x="{x + 14}" y="{y}" class="label">{escape(found)}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _stretched(wait_s: float) -> float:
    """Return a wait on the axis' scale: linear to ``_LINEAR_S``, then a decade a step."""
    wait_s = max(wait_s, 0.0)
    if wait_s <= _LINEAR_S:
        return wait_s / _LINEAR_S
    return 1.0 + math.log10(wait_s / _LINEAR_S)


def _mark(kind: str, x: float, y: float) -> str:
    if kind == "square":
        return f'<rect x="{x - 4:.1f}" y="{y - 4:.1f}" width="8" height="8"/>'
    if kind == "diamond":
        return f'<path d="M{x:.1f} {y - 5:.1f}l5 5-5 5-5-5z"/>'
    if kind == "triangle":
        return f'<path d="M{x:.1f} {y - 5:.1f}l5 9h-10z"/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4"/>'


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 else f"{value:.2g}"
