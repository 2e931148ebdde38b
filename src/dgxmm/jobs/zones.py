"""Local wall-clock time in IANA zones, and the one daylight-saving rule.

A *wall time* here is an integer count of seconds since 1970-01-01 00:00 read on a local
clock, as if that clock were UTC. Converting an instant to a wall time is a lookup of the
zone's offset; converting back follows dgxmm's rule for every schedule:

- a wall time that does not exist (clocks jumped forward over it) maps to the first instant
  after the gap, so several gap times land on one instant;
- a wall time that happens twice (clocks went back) maps to its first occurrence.

``ZoneClock`` keeps, per zone, the offset transitions of the years it has been asked about,
found once through ``zoneinfo`` and kept as sorted integer lists, so that conversions are a
``bisect`` rather than a ``datetime`` round trip.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dgxmm.errors import ZoneError

__all__ = ["ZoneClock", "resolve_zone", "zone_clock"]

# No zone's offset has ever been this far from UTC (the largest are about +-15 h), so an
# instant of a wall time w always lies in [w - _SPAN, w + _SPAN].
_SPAN = 16 * 3600
# Offsets are sampled this often when a year's transitions are first looked for; two
# transitions closer than this that return to the same offset would be missed (none in tzdb).
_SAMPLE = 6 * 3600
_YEAR = 366 * 86400
# datetime's own range, in seconds, kept clear of its ends.
_MIN_S = -62_000_000_000
_MAX_S = 253_000_000_000


def resolve_zone(zone: ZoneInfo | str, field: str = "zone") -> ZoneInfo:
    """Return the ``ZoneInfo`` for an IANA name (or the zone itself); refuse unknown names."""
    if isinstance(zone, ZoneInfo):
        return zone
    if not isinstance(zone, str) or not zone.strip() or zone != zone.strip():
        raise ZoneError(zone, field)
    try:
        return ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError, OSError) as error:
        raise ZoneError(zone, field) from error


class ZoneClock:
    """Offsets and wall-time conversions for one zone; safe to share between threads."""

    __slots__ = ("_hi", "_lock", "_lo", "_offsets", "_transitions", "zone")

    def __init__(self, zone: ZoneInfo) -> None:
        self.zone = zone
        self._lock = threading.Lock()
        self._lo = 0
        self._hi = 0  # [lo, hi) in UTC seconds is covered; empty at first
        self._transitions: list[int] = []  # instants where the offset changes
        self._offsets: list[int] = []  # offsets[i] holds before transitions[i]; one more

    def offset_at(self, t: int) -> int:
        """Return the UTC offset in seconds in force at instant ``t`` (UTC seconds)."""
        if not self._lo <= t < self._hi:
            self._cover(t - _SPAN, t + _SPAN)
        return self._offsets[bisect_right(self._transitions, t)]

    def wall(self, t: int) -> int:
        """Return the wall time shown at instant ``t``."""
        return t + self.offset_at(t)

    def instant(self, w: int) -> tuple[int, bool]:
        """Return the instant of wall time ``w`` by the DST rule, and whether a gap moved it."""
        lo, hi = w - _SPAN, w + _SPAN
        if not (self._lo <= lo and hi < self._hi):
            self._cover(lo, hi)
        transitions, offsets = self._transitions, self._offsets
        first = bisect_right(transitions, lo)
        last = bisect_right(transitions, hi)
        if first == last:  # no transition near: the wall time exists exactly once
            return w - offsets[first], False
        # Periods first..last can hold the instant; the earliest that does is the first
        # occurrence of a repeated wall time.
        for k in range(first, last + 1):
            t = w - offsets[k]
            if (k == 0 or transitions[k - 1] <= t) and (
                k == len(transitions) or t < transitions[k]
            ):
                return t, False
        # No period holds it: w lies in the gap of a transition that moved clocks forward.
        for k in range(first, last):
            change = transitions[k]
            if change + offsets[k] <= w < change + offsets[k + 1]:
                return change, True
        raise AssertionError(f"wall time {w} fits no period of {self.zone}")  # pragma: no cover

    def _cover(self, lo: int, hi: int) -> None:
        """Find the transitions of whole years around [lo, hi) that are not known yet."""
        lo, hi = max(lo, _MIN_S), min(hi, _MAX_S)
        with self._lock:
            if self._hi > self._lo and self._lo <= lo and hi < self._hi:
                return
            start = lo - _YEAR if self._hi <= self._lo else min(lo - _YEAR, self._lo)
            end = hi + _YEAR if self._hi <= self._lo else max(hi + _YEAR, self._hi)
            start = max(start - start % 86400, _MIN_S)
            end = min(end - end % 86400 + 86400, _MAX_S)
            transitions, offsets = self._scan(start, end)
            # Swap in whole lists: readers on other threads see the old or the new, never half.
            self._transitions, self._offsets = transitions, offsets
            self._lo, self._hi = start, end

    def _scan(self, start: int, end: int) -> tuple[list[int], list[int]]:
        offset = self._probe
        transitions: list[int] = []
        offsets = [offset(start)]
        a, off_a = start, offsets[0]
        while a < end:
            b = min(a + _SAMPLE, end)
            off_b = offset(b)
            while off_a != off_b:  # at least one change in (a, b]: find the first
                low, high = a, b  # offset(low) == off_a, offset(high) != off_a
                while high - low > 1:
                    mid = (low + high) // 2
                    if offset(mid) == off_a:
                        low = mid
                    else:
                        high = mid
                off_a = offset(high)
                transitions.append(high)
                offsets.append(off_a)
                a = high
            a, off_a = b, off_b
        return transitions, offsets

    def _probe(self, t: int) -> int:
        delta = datetime.fromtimestamp(t, UTC).astimezone(self.zone).utcoffset()
        assert delta is not None
        return int(delta.total_seconds())


_clocks: dict[ZoneInfo, ZoneClock] = {}
_clocks_lock = threading.Lock()


def zone_clock(zone: ZoneInfo | str) -> ZoneClock:
    """Return the shared ``ZoneClock`` of a zone (or an IANA name)."""
    info = zone if isinstance(zone, ZoneInfo) else resolve_zone(zone)
    clock = _clocks.get(info)
    if clock is None:
        with _clocks_lock:
            clock = _clocks.setdefault(info, ZoneClock(info))
    return clock
