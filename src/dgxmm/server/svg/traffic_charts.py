"""The traffic charts of a deployment's page: requests and latency over its last day and week.

Traffic comes from the per-minute rollups, in buckets by the range the page picked: the last
hour by the minute, the last day by 10 minutes, the last week by the hour, the last month by
six hours. A bucket's requests are the sum of its minutes; its latency is the mean over the
requests completed in it (each minute's mean weighted by its requests). The chart is as wide
as its card (the SVG scales); its axis is ``time_axis``'s, in the page's display zone, and each
bar names its time and value on hover.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from zoneinfo import ZoneInfo

from dgxmm.clock import from_us
from dgxmm.fleet import Rollup
from dgxmm.server.svg.time_axis import time_axis
from dgxmm.time_units import MINUTE_US
from dgxmm.words import counted

__all__ = ["WINDOWS", "traffic_chart"]

# name: (bucket width, buckets, hover label format, what a bucket is called)
WINDOWS = {
    "hour": (MINUTE_US, 60, "%a %d %b %H:%M", "per minute"),
    "day": (10 * MINUTE_US, 144, "%a %d %b %H:%M", "per 10 minutes"),
    "week": (60 * MINUTE_US, 168, "%a %d %b %H:00", "per hour"),
    "month": (360 * MINUTE_US, 120, "%a %d %b %H:00", "per 6 hours"),
}
_WIDTH, _HEIGHT, _LEFT, _TOP, _BOTTOM = 1000, 150, 52, 10, 34


@dataclass(frozen=True, slots=True, kw_only=True)
class _Bucket:
    start_us: int
    requests: int
    latency_s: float | None


def _buckets(rollups: Sequence[Rollup], window: str, now_us: int) -> list[_Bucket]:
    width, count, _, _ = WINDOWS[window]
    last = now_us - now_us % width
    first = last - (count - 1) * width
    requests = dict.fromkeys(range(first, last + 1, width), 0)
    weighted: dict[int, float] = {}
    for rollup in rollups:
        start = rollup.minute_us - rollup.minute_us % width
        if start not in requests:
            continue
        requests[start] += rollup.requests
        if rollup.mean_latency_s is not None and rollup.requests:
            weighted[start] = weighted.get(start, 0.0) + rollup.mean_latency_s * rollup.requests
    return [
        _Bucket(
            start_us=start,
            requests=total,
            latency_s=weighted[start] / total if start in weighted and total else None,
        )
        for start, total in requests.items()
    ]


def traffic_chart(
    rollups: Sequence[Rollup], *, window: str, measure: str, now_us: int, zone: ZoneInfo
) -> str:
    """Return an SVG of requests (per bucket) or mean latency (seconds) over a window."""
    buckets = _buckets(rollups, window, now_us)
    values = [float(b.requests) if measure == "requests" else (b.latency_s or 0.0) for b in buckets]
    peak = max(values, default=0.0) or 1.0
    baseline = _HEIGHT - _BOTTOM
    plot_w, plot_h = _WIDTH - _LEFT - 8, baseline - _TOP
    width = WINDOWS[window][0]
    first, end = buckets[0].start_us, buckets[-1].start_us + width
    step = plot_w / len(buckets)

    def x_of(at_us: int) -> float:
        return _LEFT + plot_w * (at_us - first) / (end - first)

    label = WINDOWS[window][2]
    unit = "requests" if measure == "requests" else "s mean latency"
    peak_text = f"{peak:g}" if measure == "requests" else _seconds(peak)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart traffic" role="img" '
        f'data-window="{window}" data-measure="{measure}" viewBox="0 0 {_WIDTH} {_HEIGHT}" '
        'preserveAspectRatio="xMinYMin meet">',
        f"<title>{escape(unit.capitalize())} over the last {window}</title>",
        *time_axis(first, end, zone, x_of=x_of, baseline=baseline, top=_TOP),
        f'<line x1="{_LEFT}" y1="{baseline}" x2="{_WIDTH - 8}" y2="{baseline}" class="axis"/>',
        f'<text x="{_LEFT - 4}" y="{_TOP + 8}" class="label" text-anchor="end">{peak_text}</text>',
        f'<text x="{_LEFT - 4}" y="{baseline}" class="label" text-anchor="end">0</text>',
    ]
    for index, (bucket, value) in enumerate(zip(buckets, values, strict=True)):
        if value <= 0:
            continue
        height = plot_h * value / peak
        when = from_us(bucket.start_us, zone).strftime(label)
        shown = counted(bucket.requests, "request") if measure == "requests" else _seconds(value)
        parts.append(
            f'<g class="bar" data-start="{bucket.start_us}" data-value="{value:g}" '
            f'data-tip="{escape(when)}: {escape(shown)}">'
            f"<title>{when}: {shown}</title>"
            f'<rect class="{measure}" x="{_LEFT + index * step:.1f}" '
            f'y="{baseline - height:.1f}" width="{max(step - 1, 1):.1f}" '
            f'height="{height:.1f}"/></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.3g} s"
