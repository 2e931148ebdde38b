"""Bar charts of job runs over time, drawn as SVG on the server (no JavaScript needed)."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from zoneinfo import ZoneInfo

from dgxmm.clock import from_us
from dgxmm.jobs import Bucket, Tier

__all__ = ["WINDOWS", "runs_chart"]

# How many buckets each tier draws: three hours of minutes, a week of hours, 90 days.
WINDOWS = {Tier.MINUTES: 180, Tier.HOURS: 168, Tier.DAYS: 90}
_WIDTH, _HEIGHT, _PAD = 720, 140, 28
_FORMATS = {Tier.MINUTES: "%H:%M", Tier.HOURS: "%a %H:00", Tier.DAYS: "%Y-%m-%d"}


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
    plot_w, plot_h = _WIDTH - 2 * _PAD, _HEIGHT - 2 * _PAD
    step = plot_w / slots
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'data-job="{escape(name)}" data-tier="{tier.label}" viewBox="0 0 {_WIDTH} {_HEIGHT}" '
        f'width="{_WIDTH}" height="{_HEIGHT}">',
        f"<title>Runs of {escape(name)} per {tier.label[:-1]}</title>",
        f'<line x1="{_PAD}" y1="{_HEIGHT - _PAD}" x2="{_WIDTH - _PAD}" y2="{_HEIGHT - _PAD}" '
        'class="axis"/>',
        f'<text x="{_PAD - 4}" y="{_PAD + 4}" class="label" text-anchor="end">{peak}</text>',
        f'<text x="{_PAD - 4}" y="{_HEIGHT - _PAD}" class="label" text-anchor="end">0</text>',
    ]
    label = _FORMATS[tier]
    for index, bar in enumerate(bars):
        if bar.count == 0:
            continue
        x = _PAD + index * step
        height = plot_h * bar.count / peak
        failed = plot_h * bar.failures / peak
        when = from_us(bar.start_us, zone).strftime(label)
        parts.append(
            f'<g class="bar" data-start="{bar.start_us}" data-count="{bar.count}" '
            f'data-failures="{bar.failures}"><title>{when}: {bar.count} run(s), '
            f"{bar.failures} failed</title>"
            f'<rect class="runs" x="{x:.1f}" y="{_HEIGHT - _PAD - height:.1f}" '
            f'width="{max(step - 1, 1):.1f}" height="{height:.1f}"/>'
            + (
                f'<rect class="failures" x="{x:.1f}" y="{_HEIGHT - _PAD - failed:.1f}" '
                f'width="{max(step - 1, 1):.1f}" height="{failed:.1f}"/>'
                if bar.failures
                else ""
            )
            + "</g>"
        )
    start_text = from_us(first, zone).strftime(label)
    end_text = from_us(last, zone).strftime(label)
    parts.append(f'<text x="{_PAD}" y="{_HEIGHT - 8}" class="label">{start_text}</text>')
    parts.append(
        f'<text x="{_WIDTH - _PAD}" y="{_HEIGHT - 8}" class="label" text-anchor="end">'
        f"{end_text}</text>"
    )
    parts.append("</svg>")
    return "".join(parts)
