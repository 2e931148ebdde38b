"""The traffic charts of a deployment's page: requests and latency over its last day and week.

Traffic comes from the per-minute rollups: over the last day in 10-minute buckets, over the
last week in hours. A bucket's requests are the sum of its minutes; its latency is the mean
over the requests completed in it (each minute's mean weighted by its requests).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from zoneinfo import ZoneInfo

from dgxmm.clock import from_us
from dgxmm.fleet import Rollup
from dgxmm.time_units import MINUTE_US

__all__ = ["WINDOWS", "traffic_chart"]

# name: (bucket width, buckets, label format)
WINDOWS = {
    "day": (10 * MINUTE_US, 144, "%H:%M"),
    "week": (60 * MINUTE_US, 168, "%a %H:00"),
}
_WIDTH, _HEIGHT, _PAD = 720, 120, 44


@dataclass(frozen=True, slots=True, kw_only=True)
class _Bucket:
    start_us: int
    requests: int
    latency_s: float | None


def _buckets(rollups: Sequence[Rollup], window: str, now_us: int) -> list[_Bucket]:
    width, count, _ = WINDOWS[window]
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
    plot_w, plot_h = _WIDTH - 2 * _PAD, _HEIGHT - 2 * _PAD
    step = plot_w / len(buckets)
    label = WINDOWS[window][2]
    unit = "requests" if measure == "requests" else "s mean latency"
    peak_text = f"{peak:g}" if measure == "requests" else _seconds(peak)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart traffic" role="img" '
        f'data-window="{window}" data-measure="{measure}" viewBox="0 0 {_WIDTH} {_HEIGHT}" '
        f'width="{_WIDTH}" height="{_HEIGHT}">',
        f"<title>{escape(unit.capitalize())} over the last {window}</title>",
        f'<line x1="{_PAD}" y1="{_HEIGHT - _PAD}" x2="{_WIDTH - _PAD}" y2="{_HEIGHT - _PAD}" '
        'class="axis"/>',
        f'<text x="{_PAD - 4}" y="{_PAD + 4}" class="label" text-anchor="end">{peak_text}</text>',
        f'<text x="{_PAD - 4}" y="{_HEIGHT - _PAD}" class="label" text-anchor="end">0</text>',
    ]
    for index, (bucket, value) in enumerate(zip(buckets, values, strict=True)):
        if value <= 0:
            continue
        height = plot_h * value / peak
        when = from_us(bucket.start_us, zone).strftime(label)
        shown = f"{bucket.requests} request(s)" if measure == "requests" else _seconds(value)
        parts.append(
            f'<g class="bar" data-start="{bucket.start_us}" data-value="{value:g}">'
            f"<title>{when}: {shown}</title>"
            f'<rect class="{measure}" x="{_PAD + index * step:.1f}" '
            f'y="{_HEIGHT - _PAD - height:.1f}" width="{max(step - 1, 1):.1f}" '
            f'height="{height:.1f}"/></g>'
        )
    first = from_us(buckets[0].start_us, zone).strftime(label)
    last = from_us(buckets[-1].start_us, zone).strftime(label)
    parts.append(f'<text x="{_PAD}" y="{_HEIGHT - 8}" class="label">{first}</text>')
    parts.append(
        f'<text x="{_WIDTH - _PAD}" y="{_HEIGHT - 8}" class="label" text-anchor="end">'
        f"{last}</text></svg>"
    )
    return "".join(parts)


def _seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.3g} s"
