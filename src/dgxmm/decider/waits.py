"""Added waits over every request, from the proxy's record (issue 42, point 1).

The proxy records, per deployment and minute of arrival (``request_minutes``), the requests it
took, those it held while the deployment was brought up, and the first ``MAX_WAITS`` of their
added waits in milliseconds; a refused request is counted apart, by reason. ``Waits`` reads
those into the lab's figures (``lab/ledger.py``), in the same words:

- **wait-seconds**: the added waits summed, in request-seconds;
- **the mean added wait** over every request served (a warm one waits 0; a refused one has no
  wait and is left out, as in the lab);
- **the p99 over every request served**, nearest rank, warm ones as 0;
- **the cost** at a price ``W``: ``GiB-hours held + W x request-seconds waited``.

Where a minute held more requests than it kept waits (past ``MAX_WAITS``), its kept waits stand
for all of it: their sum is scaled by held / kept, and a rank among the held reads the kept
wait at the same share. Below that bound the figures are exact.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Waits"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Waits:
    """The added waits of a span's requests: how many were served, held, and the kept waits."""

    served: int  # requests through the proxy, the refused left out
    held: int  # of them, held while the deployment was brought up
    total_ms: float  # every held request's added wait summed (scaled past the kept ones)
    kept_ms: tuple[int, ...] = ()  # the kept waits, sorted

    @classmethod
    def of_minutes(cls, minutes: Iterable[tuple[int, int, int, Sequence[int]]]) -> Waits:
        """Read ``(requests, refused, held, waits_ms)`` per minute."""
        served = held = 0
        total = 0.0
        kept: list[int] = []
        for requests, refused, minute_held, waits in minutes:
            served += max(requests - refused, minute_held)
            held += minute_held
            if waits:
                total += sum(waits) * max(minute_held, len(waits)) / len(waits)
            kept.extend(waits)
        return cls(served=served, held=held, total_ms=total, kept_ms=tuple(sorted(kept)))

    @classmethod
    def merged(cls, parts: Iterable[Waits]) -> Waits:
        """Return the waits of several spans together (days into a total)."""
        found = list(parts)
        return cls(
            served=sum(p.served for p in found),
            held=sum(p.held for p in found),
            total_ms=sum(p.total_ms for p in found),
            kept_ms=tuple(sorted(w for p in found for w in p.kept_ms)),
        )

    @property
    def total_s(self) -> float:
        """Return the added waits summed, in request-seconds."""
        return self.total_ms / 1000

    @property
    def mean_s(self) -> float:
        """Return the mean added wait over every request served, a warm one as 0."""
        return self.total_s / self.served if self.served else 0.0

    def held_rank_s(self, share: float) -> float | None:
        """Return the nearest-rank percentile of the held requests' waits (None: none held)."""
        if not self.kept_ms:
            return None
        return self.kept_ms[max(0, math.ceil(share * len(self.kept_ms)) - 1)] / 1000

    def all_rank_s(self, share: float) -> float:
        """Return the nearest-rank percentile over every request served, a warm one as 0."""
        if not self.served or not self.kept_ms:
            return 0.0
        rank = max(0, math.ceil(share * self.served) - 1)
        warm = self.served - self.held
        if rank < warm:
            return 0.0
        # The same share of the kept ones, in integers (a float share rounds 31 of 47 down).
        among = (rank - warm) * len(self.kept_ms) // max(self.held, len(self.kept_ms))
        return self.kept_ms[min(len(self.kept_ms) - 1, among)] / 1000

    def cost(self, held_gib_h: float, price: float) -> float:
        """Return ``held_gib_h + price x request-seconds waited`` (a price checked at the edge)."""
        return held_gib_h + price * self.total_s
