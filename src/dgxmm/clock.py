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

__all__ = [
    "EARLIEST_US",
    "LATEST_US",
    "Clock",
    "FastClock",
    "ManualClock",
    "SystemClock",
    "from_us",
    "to_us",
]


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


class FastClock:
    """The machine's clock running ``rate`` times faster from the instant ``anchor_us``.

    A test and demo facility (``dgxmm serve`` with ``DGXMM_FAST_CLOCK``): at 10x a cron
    minute passes in 6 real seconds. Every process given the same rate and anchor reads the
    same instant, so several servers on one database agree on what is due. Only the clock is
    fast: the host's tick interval, the lease's tries and the requests' timeouts stay real.
    """

    def __init__(self, rate: float, anchor_us: int) -> None:
        if not rate >= 1:  # also refuses NaN
            raise ValueError(f"rate {rate}: give a number of at least 1")
        self.rate = rate
        self.anchor_us = anchor_us

    @classmethod
    def parse(cls, spec: str) -> FastClock:
        """Read ``RATE@ANCHOR``: ``10@2026-12-01T14:00:00+00:00`` (an ISO instant with a zone)."""
        rate_text, at, anchor_text = spec.partition("@")
        if not at:
            raise ValueError(f"{spec!r}: give RATE@ANCHOR, e.g. 10@2026-12-01T14:00:00+00:00")
        try:
            rate = float(rate_text)
        except ValueError:
            raise ValueError(f"rate {rate_text!r}: not a number") from None
        try:
            anchor = datetime.fromisoformat(anchor_text)
        except ValueError:
            raise ValueError(f"anchor {anchor_text!r}: not an ISO-8601 instant") from None
        return cls(rate, to_us(anchor))

    def now_us(self) -> int:
        """Return the anchor plus the real time since it, ``rate`` times over."""
        real = time.time_ns() // 1000
        return self.anchor_us + round((real - self.anchor_us) * self.rate)


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


# The instants dgxmm takes from outside (imported files, query parameters): a day inside each
# end of the dates a datetime holds, so that ``from_us`` in any zone (no offset reaches a day)
# still gives a date a page can show.
EARLIEST_US = to_us(datetime.min.replace(tzinfo=UTC) + timedelta(days=1))
LATEST_US = to_us(datetime.max.replace(tzinfo=UTC) - timedelta(days=1))
