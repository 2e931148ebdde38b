"""A series of buckets: runs counted per minute, hour and day, each tier kept for its time.

A job's runs and a channel's saved queries are counted alike: per tier, a bucket start maps to
``[count, failures, total_us, longest_us]``, the dict kept oldest first so that pruning the
buckets past a tier's time reads from its front. Minutes are kept 2 days, hours 90 days and
days 3 years. The JSON form is the same for both: per tier label, ``[start, count, failures,
total_us, longest_us]`` rows, oldest first.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeAlias

from dgxmm.time_units import DAY_US, HOUR_US, MINUTE_US

__all__ = [
    "Bucket",
    "Series",
    "Tier",
    "add_bucket",
    "buckets_of",
    "count_run",
    "count_since",
    "new_series",
    "series_from_json",
    "series_to_json",
]


class Tier(Enum):
    """A series of buckets: its width and how long it is kept."""

    MINUTES = ("minutes", MINUTE_US, 2 * DAY_US)
    HOURS = ("hours", HOUR_US, 90 * DAY_US)
    DAYS = ("days", DAY_US, 3 * 366 * DAY_US)

    def __init__(self, label: str, width_us: int, keep_us: int) -> None:
        self.label = label
        self.width_us = width_us
        self.keep_us = keep_us

    @classmethod
    def named(cls, label: str) -> Tier:
        """Return the tier called ``label`` ('minutes', 'hours' or 'days')."""
        for tier in cls:
            if tier.label == label:
                return tier
        raise ValueError(f"tier: {label!r} is not one of minutes, hours, days")


@dataclass(frozen=True, slots=True, kw_only=True)
class Bucket:
    """The runs of one job (or a channel's queries) that started in one minute, hour or day."""

    start_us: int
    count: int
    failures: int
    total_us: int
    longest_us: int


# Per tier: bucket start -> [count, failures, total_us, longest_us], oldest first.
Series: TypeAlias = dict[Tier, dict[int, list[int]]]


def new_series() -> Series:
    """Return a series with no bucket in any tier."""
    return {tier: {} for tier in Tier}


def count_run(
    buckets: dict[int, list[int]], tier: Tier, start: int, duration_us: int, failed: bool
) -> None:
    """Count one run in the bucket at ``start``, pruning the tier when it opens a new one."""
    bucket = buckets.get(start)
    if bucket is None:
        buckets[start] = [1, int(failed), duration_us, duration_us]
        _prune(buckets, start - tier.keep_us)
    else:
        bucket[0] += 1
        bucket[1] += failed
        bucket[2] += duration_us
        bucket[3] = max(bucket[3], duration_us)


def add_bucket(buckets: dict[int, list[int]], tier: Tier, start: int, values: list[int]) -> None:
    """Add one bucket's count, failures and time to ``buckets`` (the longest: the larger)."""
    bucket = buckets.get(start)
    if bucket is None:
        in_order = not buckets or start > next(reversed(buckets))
        buckets[start] = list(values)
        if not in_order:  # merged in from another process: keep the dict oldest first
            ordered = sorted(buckets.items())
            buckets.clear()
            buckets.update(ordered)
        _prune(buckets, next(reversed(buckets)) - tier.keep_us)
        return
    bucket[0] += values[0]
    bucket[1] += values[1]
    bucket[2] += values[2]
    bucket[3] = max(bucket[3], values[3])


def count_since(buckets: dict[int, list[int]], since_us: int, now_us: int) -> int:
    """Return the runs of the buckets that started after ``since_us``, up to ``now_us``."""
    return sum(values[0] for start, values in buckets.items() if since_us < start <= now_us)


def buckets_of(rows: list[tuple[int, list[int]]]) -> list[Bucket]:
    """Return ``(start, values)`` rows as buckets, in their order."""
    return [
        Bucket(start_us=start, count=c, failures=f, total_us=t, longest_us=lg)
        for start, (c, f, t, lg) in rows
    ]


def series_to_json(series: Series) -> dict[str, Any]:
    """Return a series as its JSON rows, per tier label, oldest first."""
    return {
        tier.label: [[start, *values] for start, values in sorted(series[tier].items())]
        for tier in Tier
    }


def series_from_json(entry: dict[str, Any]) -> Series:
    """Rebuild a series from ``series_to_json``'s rows (a tier left out: no bucket)."""
    return {
        tier: {int(row[0]): [int(v) for v in row[1:5]] for row in entry.get(tier.label, [])}
        for tier in Tier
    }


def _prune(buckets: dict[int, list[int]], cutoff: int) -> None:
    """Drop buckets that started before ``cutoff`` (the dict is oldest first)."""
    while buckets:
        oldest = next(iter(buckets))
        if oldest >= cutoff:
            return
        del buckets[oldest]
