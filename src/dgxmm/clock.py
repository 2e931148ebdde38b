"""The wall clock, injected: services read ``clock.now_us()``, tests move a ``ManualClock``.

Like ``errors.py`` this module sits outside the layers; it imports only ``time_units``. The jobs
engine never reads any clock; everything above it gets one of these.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol

from dgxmm.time_units import DAY_US, SECOND_US

__all__ = ["Clock", "ManualClock", "SystemClock", "from_us", "to_us"]


class Clock(Protocol):
    """Where a service reads the current instant."""

    def now_us(self) -> int:
        """Return the current instant in microseconds since the Unix epoch."""
        ...


class SystemClock:
    """The machine's clock."""

    def now_us(self) -> int:
        """Return the current instant in microseconds since the Unix epoch."""
        return time.time_ns() // 1000


class ManualClock:
    """A clock that moves only when told to; safe to share between threads."""

    def __init__(self, start: int | datetime) -> None:
        self._now = start if isinstance(start, int) else to_us(start)
        self._lock = threading.Lock()

    def now_us(self) -> int:
        """Return the instant the clock was set to."""
        with self._lock:
            return self._now

    def set(self, at: int | datetime) -> None:
        """Move the clock to ``at``."""
        with self._lock:
            self._now = at if isinstance(at, int) else to_us(at)

    def advance(self, delta: timedelta | int) -> int:
        """Move the clock forward by ``delta`` (timedelta or microseconds); return the new time."""
        step = delta if isinstance(delta, int) else round(delta.total_seconds() * SECOND_US)
        with self._lock:
            self._now += step
            return self._now


def to_us(at: datetime) -> int:
    """Return an aware datetime as microseconds since the epoch; refuse naive ones."""
    if at.tzinfo is None or at.utcoffset() is None:
        raise ValueError(f"naive datetime {at.isoformat()}: give it a time zone")
    delta = at - datetime(1970, 1, 1, tzinfo=UTC)
    return delta.days * DAY_US + delta.seconds * SECOND_US + delta.microseconds


def from_us(at_us: int, zone: object = UTC) -> datetime:
    """Return microseconds since the epoch as an aware datetime (UTC unless a zone is given)."""
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=at_us)
    return moment.astimezone(zone) if zone is not UTC else moment  # type: ignore[arg-type]
