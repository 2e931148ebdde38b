"""The proxy's own numbers: requests held now and in all, the bytes of the bodies held now,
how long they were held, refusals.

Thread-safe counters the proxy moves and ``/metrics`` reads through ``snapshot``; the hold
time is a histogram with Prometheus' cumulative buckets. Refusals are also kept per minute
for the last hour (``recent_refusals``): the console's Proxy page says what was refused
lately, which a count since the process started cannot.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from dgxmm.clock import Clock, SystemClock
from dgxmm.proxy.replies import Refusal
from dgxmm.time_units import MINUTE_US

__all__ = [
    "HOLD_BUCKETS_S",
    "RECENT_MINUTES",
    "WAIT_BUCKETS_S",
    "ProxyStats",
    "StatsSnapshot",
    "WaitHistogram",
]

RECENT_MINUTES = 60  # how far back recent_refusals reaches
HOLD_BUCKETS_S = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
# The added wait of every request forwarded, a warm one's 0 in the first bucket: the p99 over
# every request (histogram_quantile) and the mean (_sum / _count), as the lab gives them.
WAIT_BUCKETS_S = (0.001, *HOLD_BUCKETS_S)


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitHistogram:
    """One deployment's forwarded requests by added wait: cumulative buckets, count, sum."""

    buckets: tuple[int, ...]  # cumulative counts of waits <= WAIT_BUCKETS_S[i]
    count: int
    sum_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class StatsSnapshot:
    """The numbers at one moment; per deployment name where they are per deployment."""

    held: dict[str, int]  # held now
    held_bytes: dict[str, int]  # the bytes of the bodies held now
    held_bytes_total: int  # the same, every deployment's together
    held_total: dict[str, int]  # ever held (answered, refused or gone)
    hold_buckets: tuple[int, ...]  # cumulative counts of hold times <= HOLD_BUCKETS_S[i]
    hold_count: int
    hold_sum_s: float
    wakes: dict[str, int]  # wakes and starts a request asked for
    refused: dict[str, int]  # Refusal value -> count
    forwarded: dict[str, int]
    added_waits: dict[str, WaitHistogram]  # per deployment, every request forwarded


class ProxyStats:
    """Counters of the proxy, moved by its requests; ``snapshot`` for ``/metrics``."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._clock = clock or SystemClock()
        self._lock = threading.Lock()
        self._by_minute: dict[int, dict[str, int]] = {}  # minute -> Refusal value -> count
        self._held: dict[str, int] = {}
        self._held_bytes: dict[str, int] = {}
        self._held_total: dict[str, int] = {}
        self._buckets = [0] * len(HOLD_BUCKETS_S)
        self._count = 0
        self._sum = 0.0
        self._wakes: dict[str, int] = {}
        self._refused: dict[str, int] = {}
        self._forwarded: dict[str, int] = {}
        self._waits: dict[str, list[float]] = {}  # name -> [*buckets, count, sum]

    def hold_began(self, name: str, size: int) -> None:
        """Count a request that began to wait for its deployment, with its body's bytes."""
        with self._lock:
            self._held[name] = self._held.get(name, 0) + 1
            self._held_total[name] = self._held_total.get(name, 0) + 1
            self._held_bytes[name] = self._held_bytes.get(name, 0) + size

    def hold_ended(self, name: str, seconds: float, size: int) -> None:
        """Count a request that stopped waiting, ``seconds`` after it began."""
        with self._lock:
            self._held[name] = max(0, self._held.get(name, 0) - 1)
            self._held_bytes[name] = max(0, self._held_bytes.get(name, 0) - size)
            self._count += 1
            self._sum += seconds
            for i, bound in enumerate(HOLD_BUCKETS_S):
                if seconds <= bound:
                    self._buckets[i] += 1

    def woke(self, name: str) -> None:
        """Count a wake or start a request asked for."""
        with self._lock:
            self._wakes[name] = self._wakes.get(name, 0) + 1

    def refused(self, refusal: Refusal) -> None:
        """Count a request answered with a refusal."""
        minute = self._clock.now_us() // MINUTE_US
        with self._lock:
            self._refused[refusal.value] = self._refused.get(refusal.value, 0) + 1
            counts = self._by_minute.setdefault(minute, {})
            counts[refusal.value] = counts.get(refusal.value, 0) + 1
            for old in [m for m in self._by_minute if m <= minute - RECENT_MINUTES]:
                del self._by_minute[old]

    def recent_refusals(self) -> dict[str, int]:
        """Return the refusals of the last hour (this minute and the 59 before), by reason."""
        since = self._clock.now_us() // MINUTE_US - RECENT_MINUTES
        totals: dict[str, int] = {}
        with self._lock:
            for minute, counts in self._by_minute.items():
                if minute > since:
                    for reason, count in counts.items():
                        totals[reason] = totals.get(reason, 0) + count
        return totals

    def forwarded(self, name: str, waited_s: float = 0.0) -> None:
        """Count a request passed on to its deployment's server, and its added wait (0: it
        found the deployment up; else how long it was held while it was brought up)."""
        with self._lock:
            self._forwarded[name] = self._forwarded.get(name, 0) + 1
            kept = self._waits.setdefault(name, [0.0] * (len(WAIT_BUCKETS_S) + 2))
            for i, bound in enumerate(WAIT_BUCKETS_S):
                if waited_s <= bound:
                    kept[i] += 1
            kept[-2] += 1
            kept[-1] += waited_s

    def held_now(self, name: str) -> int:
        """Return how many requests for the deployment wait now."""
        with self._lock:
            return self._held.get(name, 0)

    def snapshot(self) -> StatsSnapshot:
        """Return the numbers now."""
        with self._lock:
            return StatsSnapshot(
                held=dict(self._held),
                held_bytes=dict(self._held_bytes),
                held_bytes_total=sum(self._held_bytes.values()),
                held_total=dict(self._held_total),
                hold_buckets=tuple(self._buckets),
                hold_count=self._count,
                hold_sum_s=self._sum,
                wakes=dict(self._wakes),
                refused=dict(self._refused),
                forwarded=dict(self._forwarded),
                added_waits={
                    name: WaitHistogram(
                        buckets=tuple(int(n) for n in kept[:-2]),
                        count=int(kept[-2]),
                        sum_s=kept[-1],
                    )
                    for name, kept in self._waits.items()
                },
            )
