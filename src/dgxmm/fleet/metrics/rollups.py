"""The per-minute rollup of a deployment's metrics, and the arithmetic of building one.

A rollup is one row per deployment and minute (``metric_rollups``): the requests completed in
the minute, the mean of the running and waiting gauges over its samples, the mean latency of
the requests completed, and how many samples it holds. ``Metrics`` (``metrics.py``) writes
them; the decider reads them through ``Metrics.rollups``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_RETENTION_DAYS", "RETENTION_SETTING", "Latency", "Rollup", "mean_of"]

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
