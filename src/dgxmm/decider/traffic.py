"""A deployment's minutes of traffic, read from its rollups, on its local calendar.

Each row of ``metric_rollups`` is one observed minute. Requests per minute come from
Little's law, ``L = λ W``: the mean number of requests in flight ``L`` over the mean time a
request spends in the server ``W`` gives the arrival rate ``λ``. vLLM's e2e latency runs
from arrival to the last token, queueing included, so *in flight* is running plus waiting
(``mean_running + mean_waiting``). Per minute, in requests per minute:

- requests in flight and a latency: ``60 * L / W`` (``W`` in seconds);
- requests in flight but none completed in the minute (no latency to divide by): ``W`` is
  the deployment's typical latency, the mean of its minutes' latencies weighted by their
  completed requests over the window, or 60 s when nothing completed in the whole window
  (requests in flight the whole of a minute without finishing took at least that long);
- nothing in flight but requests completed (requests shorter than the gap between two
  samples, which the gauges never saw): the completed count, since Little's 0 is known wrong;
- neither: 0.

A minute is *active* when requests were in flight or completed in it. Local time comes from
the deployment's zone: a minute belongs to the local hour its start reads on the wall clock,
so the hour repeated when clocks go back gets both passes' minutes and the hour skipped when
they go forward gets none.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from zoneinfo import ZoneInfo

import numpy as np
import numpy.typing as npt
from sqlalchemy import Connection

from dgxmm.fleet import read_rollup_columns
from dgxmm.jobs import zone_clock
from dgxmm.time_units import MINUTE_US, SECOND_US

__all__ = [
    "FALLBACK_LATENCY_S",
    "MIN_DAY_MINUTES",
    "WEEK_HOURS",
    "MinuteSeries",
    "days_of_data",
    "hour_of_week",
    "local_seconds",
    "read_minutes",
    "requests_per_minute",
]

WEEK_HOURS = 168
FALLBACK_LATENCY_S = 60.0
MIN_DAY_MINUTES = 12 * 60  # a local day with at least this many observed minutes has data
# 1970-01-01, day 0 of wall time, was a Thursday: hour 72 of a week that starts on Monday.
_EPOCH_HOUR_OF_WEEK = 72

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class MinuteSeries:
    """A deployment's observed minutes, in time order, as parallel arrays."""

    minute_us: Ints  # the minute's start, UTC
    wall_s: Ints  # the same instant read on the local wall clock, as seconds since 1970
    requests: Ints  # requests completed in the minute
    in_flight: Floats  # mean requests running plus waiting
    rpm: Floats  # requests per minute by Little's law (see the module's docstring)

    @property
    def active(self) -> Bools:
        """Which minutes had requests in flight or completed."""
        result: Bools = (self.in_flight > 0) | (self.requests > 0)
        return result

    @property
    def hour_of_week(self) -> Ints:
        """Each minute's local hour of the week (0: Monday 00:00-00:59)."""
        return hour_of_week(self.wall_s // 3600)

    def __len__(self) -> int:
        return len(self.minute_us)


def hour_of_week(wall_hours: Ints) -> Ints:
    """Return the hour of the week (Monday 00:00 is 0) of wall-clock hours since 1970."""
    result: Ints = (wall_hours + _EPOCH_HOUR_OF_WEEK) % WEEK_HOURS
    return result


def days_of_data(series: MinuteSeries) -> int:
    """Count the local calendar days with at least 12 hours of observed minutes."""
    if len(series) == 0:
        return 0
    _, minutes = np.unique(series.wall_s // 86400, return_counts=True)
    return int((minutes >= MIN_DAY_MINUTES).sum())


def requests_per_minute(requests: Ints, in_flight: Floats, latency_s: Floats) -> Floats:
    """Return requests per minute by Little's law; a latency <= 0 means none completed."""
    known = (latency_s > 0) & (requests > 0)
    weight = requests[known].sum()
    typical = (
        float((latency_s[known] * requests[known]).sum() / weight)
        if weight > 0
        else FALLBACK_LATENCY_S
    )
    latency = np.where(latency_s > 0, latency_s, typical)
    little = 60.0 * in_flight / latency
    result: Floats = np.where(in_flight > 0, little, requests.astype(np.float64))
    return result


def local_seconds(instants_s: Ints, zone: ZoneInfo) -> Ints:
    """Return UTC instants (seconds, ascending) as seconds on the zone's wall clock."""
    if len(instants_s) == 0:
        return instants_s.copy()
    clock = zone_clock(zone)
    first, last = int(instants_s[0]), int(instants_s[-1])
    # The offset is probed at every hour and, where two probes differ, bisected to the
    # second of the change: an offset lasts far longer than an hour in every zone.
    at = first - first % 3600
    offset = clock.offset_at(at)
    changes: list[int] = []
    offsets = [offset]
    while at < last:
        following = at + 3600
        next_offset = clock.offset_at(following)
        if next_offset != offset:
            low, high = at, following
            while high - low > 1:
                middle = (low + high) // 2
                if clock.offset_at(middle) == offset:
                    low = middle
                else:
                    high = middle
            changes.append(high)
            offsets.append(next_offset)
        at, offset = following, next_offset
    index = np.searchsorted(np.asarray(changes, dtype=np.int64), instants_s, side="right")
    result: Ints = instants_s + np.asarray(offsets, dtype=np.int64)[index]
    return result


def read_minutes(
    connection: Connection, zones: Mapping[int, ZoneInfo], since_us: int, until_us: int
) -> Iterator[tuple[int, MinuteSeries]]:
    """Yield some deployments' rollups in ``[since_us, until_us)``, each in its zone.

    The fleet reads them as columns (``read_rollup_columns``: one piece for one deployment,
    a day's piece of every deployment for several); each piece is split by deployment here,
    and a deployment's pieces joined in minute order. Consume it inside the transaction.
    """
    if not zones:
        return
    wanted = np.asarray(sorted(zones), dtype=np.int64)
    pieces: dict[int, list[tuple[Ints, Ints, Ints, Ints]]] = {int(d): [] for d in wanted}
    for columns in read_rollup_columns(connection, wanted.tolist(), since_us, until_us):
        order = np.argsort(columns.deployment_id, kind="stable")
        by_deployment = columns.deployment_id[order]
        firsts = np.searchsorted(by_deployment, wanted, side="left")
        lasts = np.searchsorted(by_deployment, wanted, side="right")
        for deployment_id, first, last in zip(wanted.tolist(), firsts, lasts, strict=True):
            if last > first:
                rows = order[first:last]  # a compact copy per deployment: the piece can go
                pieces[deployment_id].append(
                    (
                        columns.minute[rows],
                        columns.requests[rows],
                        columns.in_flight_micro[rows],
                        columns.latency_micro[rows],
                    )
                )
    for deployment_id, zone in zones.items():
        parts = pieces.pop(deployment_id)
        if parts:
            minutes, requests, in_flight, latency = (
                np.concatenate(column) for column in zip(*parts, strict=True)
            )
        else:
            minutes = requests = in_flight = latency = np.zeros(0, dtype=np.int64)
        order = np.argsort(minutes, kind="stable")
        minute_us = minutes[order] * MINUTE_US
        counts = requests[order]
        flight = in_flight[order] / SECOND_US
        yield (
            deployment_id,
            MinuteSeries(
                minute_us=minute_us,
                wall_s=local_seconds(minute_us // SECOND_US, zone),
                requests=counts,
                in_flight=flight,
                rpm=requests_per_minute(counts, flight, latency[order] / SECOND_US),
            ),
        )
