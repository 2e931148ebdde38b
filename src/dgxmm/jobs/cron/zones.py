"""Local wall-clock time in IANA zones, and the one daylight-saving rule.

A *wall time* here is an integer count of seconds since 1970-01-01 00:00 read on a local
clock, as if that clock were UTC. Converting an instant to a wall time is a lookup of the
zone's offset; converting back follows dgxmm's rule for every schedule:

- a wall time that does not exist (clocks jumped forward over it) maps to the first instant
  after the gap, so several gap times land on one instant;
- a wall time that happens twice (clocks went back) maps to its first occurrence.

``ZoneClock`` keeps, per zone, the offset transitions of the weeks it has been asked about,
found once through ``zoneinfo`` and kept as small sorted tuples, so that conversions are a
``bisect`` rather than a ``datetime`` round trip.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dgxmm.errors import ZoneError

__all__ = ["ZoneClock", "resolve_zone", "zone_clock"]

# No zone's offset has ever been this far from UTC (the largest are about +-15 h), so an
# instant of a wall time w always lies in [w - _SPAN, w + _SPAN].
_SPAN = 16 * 3600
# Offsets are known per week, found on first use by sampling every _SAMPLE seconds and
# bisecting where the offset changed. Two transitions closer than _SAMPLE that return to the
# same offset would be missed; the closest such pair in tzdb is almost 4 days apart
# (Africa/Freetown, 1939), twice the sampling step.
_WEEK = 7 * 86400
_SAMPLE = 2 * 86400
_SAMPLES = (0, _SAMPLE, 2 * _SAMPLE, 3 * _SAMPLE, _WEEK)
# Weeks kept per zone before the cache starts over (each is a few small tuples).
_MAX_WEEKS = 8192
# datetime's own range, in seconds, kept clear of its ends.
_MIN_S = -62_000_000_000
_MAX_S = 253_000_000_000

_Week = tuple[tuple[int, ...], tuple[int, ...]]  # transitions, offsets (one more)


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

    __slots__ = ("_weeks", "zone")

    def __init__(self, zone: ZoneInfo) -> None:
        self.zone = zone
        self._weeks: dict[int, _Week] = {}

    def offset_at(self, t: int) -> int:
        """Return the UTC offset in seconds in force at instant ``t`` (UTC seconds)."""
        week = self._weeks.get(t // _WEEK) or self._week(t // _WEEK)
        return week[1][bisect_right(week[0], t)]

    def wall(self, t: int) -> int:
        """Return the wall time shown at instant ``t``."""
        return t + self.offset_at(t)

    def instant(self, w: int) -> tuple[int, bool]:
        """Return the instant of wall time ``w`` by the DST rule, and whether a gap moved it."""
        lo, hi = w - _SPAN, w + _SPAN
        first_week, last_week = lo // _WEEK, hi // _WEEK
        transitions, offsets = self._weeks.get(first_week) or self._week(first_week)
        if last_week != first_week:
            more, more_offsets = self._weeks.get(last_week) or self._week(last_week)
            if more:
                transitions, offsets = transitions + more, offsets + more_offsets[1:]
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

    def _week(self, index: int) -> _Week:
        """Find the transitions of week ``index``: the instants in (start, start + a week]."""
        start = index * _WEEK
        if not _MIN_S <= start <= _MAX_S:
            raise ValueError(f"instant {start} is outside the years zone data can describe")
        offset = self._probe
        transitions: list[int] = []
        offsets = [offset(start)]
        a, off_a = start, offsets[0]
        for step in _SAMPLES[1:]:
            b = start + step
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
        # offsets[-1] is the offset at the next week's start, which is that week's offsets[0]:
        # joining two weeks drops one of the two.
        week = (tuple(transitions), tuple(offsets))
        if len(self._weeks) >= _MAX_WEEKS:
            self._weeks.clear()
        self._weeks[index] = week
        return week

    def _probe(self, t: int) -> int:
        delta = datetime.fromtimestamp(t, self.zone).utcoffset()
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
