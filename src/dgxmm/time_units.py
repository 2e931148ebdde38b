"""Units of time in microseconds, the unit of every instant dgxmm stores and passes."""

from __future__ import annotations

__all__ = ["DAY_US", "HOUR_US", "MINUTE_US", "SECOND_US", "WEEK_US"]

SECOND_US = 1_000_000
MINUTE_US = 60 * SECOND_US
HOUR_US = 60 * MINUTE_US
DAY_US = 24 * HOUR_US
WEEK_US = 7 * DAY_US
