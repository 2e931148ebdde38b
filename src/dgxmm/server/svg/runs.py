"""Bar charts of job runs over time, drawn as SVG on the server (no JavaScript needed).

As wide as their card; the axis is ``time_axis``'s (hours and days in the display zone).
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from zoneinfo import ZoneInfo

from dgxmm.clock import from_us
from dgxmm.jobs import Bucket, Tier
from dgxmm.server.svg.time_axis import time_axis
from dgxmm.words import counted

__all__ = ["WINDOWS", "runs_chart"]

# How many buckets each tier draws: three hours of minutes, a week of hours, 90 days.
WINDOWS = {Tier.MINUTES: 180, Tier.HOURS: 168, Tier.DAYS: 90}
_WIDTH, _HEIGHT, _LEFT, _TOP, _BOTTOM = 1000, 150, 40, 10, 34
_FORMATS = {Tier.MINUTES: "%a %d %b %H:%M", Tier.HOURS: "%a %d %b %H:00", Tier.DAYS: "%a %Y-%m-%d"}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Bar:
    start_us: int
    count: int
    failures: int


def runs_chart(name: str, buckets: list[Bucket], tier: Tier, now_us: int, zone: ZoneInfo) -> str:
    """Return an SVG of the runs (grey) and failures (red) per bucket, ending at ``now_us``."""
    width = tier.width_us
    last = now_us - now_us % width
    slots = WINDOWS[tier]
    first = last - (slots - 1) * width
    by_start = {b.start_us: b for b in buckets if first <= b.start_us <= last}
    bars = [
        _Bar(
            start_us=start,
            count=by_start[start].count if start in by_start else 0,
            failures=by_start[start].failures if start in by_start else 0,
        )
        for start in range(first, last + 1, width)
    ]
    peak = max((bar.count for bar in bars), default=0) or 1
    baseline = _HEIGHT - _BOTTOM
    plot_w, plot_h = _WIDTH - _LEFT - 8, baseline - _TOP
    step = plot_w / slots
    end = last + width

    def x_of(at_us: int) -> float:
        return _LEFT + plot_w * (at_us - first) / (end - first)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'data-job="{escape(name)}" data-tier="{tier.label}" viewBox="0 0 {_WIDTH} {_HEIGHT}" '
        'preserveAspectRatio="xMinYMin meet">',
        f"<title>Runs of {escape(name)} per {tier.label[:-1]}</title>",
        *time_axis(first, end, zone, x_of=x_of, baseline=baseline, top=_TOP),
        f'<line x1="{_LEFT}" y1="{baseline}" x2="{_WIDTH - 8}" y2="{baseline}" class="axis"/>',
        f'<text x="{_LEFT - 4}" y="{_TOP + 8}" class="label" text-anchor="end">{peak}</text>',
        f'<text x="{_LEFT - 4}" y="{baseline}" class="label" text-anchor="end">0</text>',
    ]
    label = _FORMATS[tier]
    for index, bar in enumerate(bars):
        if bar.count == 0:
            continue
        x = _LEFT + index * step
        height = plot_h * bar.count / peak
        failed = plot_h * bar.failures / peak
        when = from_us(bar.start_us, zone).strftime(label)
        tip = f"{when}: {counted(bar.count, 'run')}, {bar.failures} failed"
        parts.append(
            f'<g class="bar" data-start="{bar.start_us}" data-count="{bar.count}" '
            f'data-failures="{bar.failures}" data-tip="{escape(tip)}"><title>{tip}</title>'
            f'<rect class="runs" x="{x:.1f}" y="{baseline - height:.1f}" '
            f'width="{max(step - 1, 1):.1f}" height="{height:.1f}"/>'
            + (
                f'<rect class="failures" x="{x:.1f}" y="{baseline - failed:.1f}" '
                f'width="{max(step - 1, 1):.1f}" height="{failed:.1f}"/>'
                if bar.failures
                else ""
            )
            + "</g>"
        )
    parts.append("</svg>")
    return "".join(parts)
