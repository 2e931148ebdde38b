"""The per-minute rollup of a deployment's metrics, and the arithmetic of building one.

A rollup is one row per deployment and minute (``metric_rollups``): the requests completed in
the minute, the mean of the running and waiting gauges over its samples, the mean latency of
the requests completed, and how many samples it holds. ``Metrics`` (``metrics.py``) writes
them; the decider reads them through ``Metrics.rollups``, or in bulk, a month of a hundred
deployments at a time, as columns (``read_rollup_columns``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import BigInteger, ColumnElement, Connection, Text, cast, func, literal, select

from dgxmm.fleet.deployments.tables import metric_rollups
from dgxmm.time_units import DAY_US, MINUTE_US, SECOND_US

__all__ = [
    "DEFAULT_RETENTION_DAYS",
    "RETENTION_SETTING",
    "Latency",
    "Rollup",
    "RollupColumns",
    "mean_of",
    "read_rollup_columns",
]

Ints = npt.NDArray[np.int64]

DEFAULT_RETENTION_DAYS = 35
RETENTION_SETTING = "fleet.rollup_retention_days"


@dataclass(frozen=True, slots=True, kw_only=True)
class Rollup:
    """One deployment's minute."""

    deployment_id: int
    minute_us: int  # the minute's start (UTC)
    requests: int  # completed in the minute
    mean_running: float
    mean_waiting: float
    mean_latency_s: float | None  # None when no request completed
    samples: int

    def to_json(self) -> dict[str, Any]:
        """Return the rollup as JSON values."""
        return {
            "minute_us": self.minute_us,
            "requests": self.requests,
            "mean_running": self.mean_running,
            "mean_waiting": self.mean_waiting,
            "mean_latency_s": self.mean_latency_s,
            "samples": self.samples,
        }


@dataclass(slots=True)
class Latency:
    """The latency sum and count of the minute being rolled up, for an exact mean."""

    minute_us: int
    sum_s: float
    count: int


def mean_of(row: Any, column: str, value: float, samples: int) -> float:
    """Return the mean of a column over ``samples`` samples, the newest being ``value``."""
    before = float(getattr(row, column)) if row is not None else 0.0
    return before + (value - before) / samples


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class RollupColumns:
    """Some rollup rows as columns in one order (row ``i`` of each is one minute's row)."""

    deployment_id: Ints
    minute: Ints  # minutes since the epoch: ``minute_us // MINUTE_US``
    requests: Ints
    in_flight_micro: Ints  # mean running plus mean waiting, in millionths
    latency_micro: Ints  # mean latency in microseconds; 0 when nothing completed


def read_rollup_columns(
    connection: Connection, deployment_ids: Sequence[int], since_us: int, until_us: int
) -> Iterator[RollupColumns]:
    """Yield the rollups with samples of some deployments in ``[since_us, until_us)``, as columns.

    The rows come back as comma-separated lists of integers (floats scaled to millionths),
    one list per column, which numpy reads in C: a month is 43,200 rows per deployment, and
    a Python object per value would cost most of a profile rebuild. The aggregates of one
    query see the rows in one order, so the lists line up. One deployment is read through
    its primary key, in one piece; several are read in one pass over the window, a day at a
    time through the minute index, one piece a day, every deployment's rows in it (the
    caller keeps those of ``deployment_ids``): the rollup job writes every deployment's
    minute together, so each deployment's rows are spread over the whole table, and reading
    them one deployment after the other would visit every page of it once per deployment.
    Consume it inside the transaction.
    """
    if not deployment_ids:
        return
    r = metric_rollups.c
    if len(deployment_ids) == 1:
        where = [r.deployment_id == deployment_ids[0], r.minute_us >= since_us]
        chunks = [[*where, r.minute_us < until_us, r.samples > 0]]
    else:
        # One range per query: given two, SQLite would search the index by the wider one.
        chunks = [
            [r.minute_us >= day, r.minute_us < min(day + DAY_US, until_us), r.samples > 0]
            for day in range(since_us, until_us, DAY_US)
        ]
    for where in chunks:
        ids, minutes, requests, in_flight, latency = _columns(connection, where)
        yield RollupColumns(
            deployment_id=ids,
            minute=minutes,
            requests=requests,
            in_flight_micro=in_flight,
            latency_micro=latency,
        )


def _columns(connection: Connection, where: list[ColumnElement[bool]]) -> list[Ints]:
    """Return deployment, minute, requests, micro-in-flight and micro-latency of some rows."""
    r = metric_rollups.c
    postgres = connection.dialect.name == "postgresql"

    def joined(value: ColumnElement[Any]) -> ColumnElement[Any]:
        integer = cast(value, BigInteger)
        if postgres:
            return func.string_agg(cast(integer, Text), literal(","))
        return func.group_concat(integer)

    def micro(value: ColumnElement[Any]) -> ColumnElement[Any]:
        # Rounds half up (the values are never negative), without a function call per row.
        return value * SECOND_US + 0.5

    query = select(
        joined(r.deployment_id),
        joined(r.minute_us / MINUTE_US),
        joined(r.requests),
        joined(micro(r.mean_running + r.mean_waiting)),
        joined(micro(func.coalesce(r.mean_latency_s, 0.0))),  # 0: nothing completed
    ).where(*where)
    return [_integers(text) for text in connection.execute(query).one()]


def _integers(text: str | None) -> Ints:
    """Read a comma-separated list of integers (None: no rows)."""
    if not text:
        return np.zeros(0, dtype=np.int64)
    values: Ints = np.fromstring(text, dtype=np.int64, sep=",")
    return values
