"""The two oracles: the limits a policy is measured against, each knowing every arrival.

``oracle_timeline`` is **the oracle**: the most memory any policy could free on a trace
without a cold request. ``lazy_oracle`` is **the lazy oracle**: the least cost at a price of
waiting (``Ledger.cost``) of any policy that wakes only when a request arrives.

The oracle.

Per deployment, knowing every arrival: for each idle gap ``g`` between one request's end (a
microsecond after its arrival where no duration is known) and the next arrival, it picks the
resting phase ``L`` (asleep at level 1, at level 2, or stopped) that frees the most,
``(held_awake - held_L) * (g - down_L - up_L)``, among those whose round trip
``down_L + up_L`` fits in ``g`` (else it stays awake), goes down at once and begins the wake
exactly ``up_L`` before the next arrival. So no request meets a cold model, and no policy
frees more without one: it is the limit (DESIGN.md, "Savings").

Where the issue and the design are silent, and what was chosen:

- The span's edges. Before the first request the deployment is awake at the span's start (as
  always-on is) and the gap from there is treated as any other. After the last request
  nothing arrives, so no wake is needed: ``(held_awake - held_L) * (g - down_L)``.
- Durations are one figure per phase (``RoundTrip``): the oracle knows the future, so it is
  given the durations the replay draws as their median, not a distribution.
- It **ignores schedules and the fit between deployments**: each deployment is alone with its
  own requests. Wherever its figure is shown, say so.

The lazy oracle. It knows every arrival too, but like the anchors (``anchors.py``) it comes up
only when a request arrives, and every request that arrives while it comes up waits. In each
idle gap it either stays awake or goes down at once into a resting phase and rests until the
next arrival; it picks, over the whole trace, the choices whose cost ``GiB-hours held + W x
request-seconds waited`` is least. It is the fair limit of a policy without foresight: the
theory's bounds (going down at the break-even time ``tau_L = d_L + u_L + W x wait / Delta_L``
costs at most 2x it; docs/savings.md) are against it. Where the design is silent:

- The choices are not made gap by gap: a wake's time delays when the deployment is next free,
  so it shortens the next gap, and every request arriving during the wake waits for it. A
  dynamic programme over "free from instant f, next request j" finds the least total cost
  exactly (at most one state per request and way up, ``(1 + levels)`` choices each).
- Going down when a request would arrive before the way down ends is never chosen: staying
  awake holds the same memory and makes nobody wait.
- The durations are the oracle's medians (``RoundTrip``), a request holds its server for a
  microsecond, and the span's edges are the anchors' (awake at the start; after the last
  request a rest needs no wake), so that an anchor replayed with fixed durations is one of its
  options and never costs less (tests/lab/test_lazy_oracle.py).
- It ignores schedules and the fit between deployments, as the oracle does.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import accumulate, pairwise

import numpy as np

from dgxmm.lab.ledger import RESTING, Footprint, Phase, Replayed, Timeline, check_price
from dgxmm.lab.traces.trace import Ints
from dgxmm.time_units import HOUR_US, SECOND_US

__all__ = ["RoundTrip", "lazy_oracle", "oracle_timeline"]

_CODE = {phase: code for code, phase in enumerate(Phase)}


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundTrip:
    """How long going down into a resting phase takes, and coming back up from it."""

    down_us: int  # a sleep at that level, or a stop
    up_us: int  # a wake from that level, or a start (to healthy, post-wake check included)

    def __post_init__(self) -> None:
        if self.down_us < 0 or self.up_us < 0:
            raise ValueError(f"a round trip's durations are >= 0, got {self.down_us}, {self.up_us}")


def oracle_timeline(
    arrivals_us: Ints,
    footprint: Footprint,
    trips: Mapping[Phase, RoundTrip],
    *,
    start_us: int,
    end_us: int,
    ends_us: Ints | None = None,
) -> Timeline:
    """Return the oracle's phases for one deployment's requests over ``[start_us, end_us)``.

    ``trips`` holds the resting phases the deployment may use (a server without sleep mode
    has only ``Phase.STOPPED``); ``ends_us`` each request's end, when known.
    """
    if any(not phase.is_resting for phase in trips):
        raise ValueError(f"the oracle rests only in {[p.value for p in RESTING]}")
    arrivals = np.asarray(arrivals_us, dtype=np.int64)
    if len(arrivals) and (arrivals[0] < start_us or arrivals[-1] >= end_us):
        raise ValueError("every arrival lies in [start_us, end_us)")
    # A request holds its server for at least a microsecond: the rest after it begins after
    # it, so the request itself met an awake server.
    least = arrivals + 1
    ends = least if ends_us is None else np.maximum(np.asarray(ends_us, np.int64), least)
    # Where each idle gap begins and ends: the span's start to the first arrival, each end
    # to the next arrival (a negative gap, when requests overlap, is no gap), and the last
    # end to the span's end, where no wake is needed.
    gap_from = np.concatenate(([start_us], np.maximum.accumulate(ends) if len(ends) else []))
    gap_to = np.concatenate((arrivals, [end_us])).astype(np.int64)
    gap_from = gap_from.astype(np.int64)
    needs_wake = np.ones(len(gap_to), dtype=bool)
    needs_wake[-1] = False
    length = gap_to - gap_from
    resting = [phase for phase in RESTING if phase in trips]
    # What each resting phase would free in each gap, in GiB x microseconds (-1: it does not fit).
    value = np.full((len(resting) + 1, len(length)), 0.0)  # row 0: stay awake, frees 0
    for row, phase in enumerate(resting, start=1):
        trip = trips[phase]
        round_trip = trip.down_us + np.where(needs_wake, trip.up_us, 0)
        rest = length - round_trip
        saved = footprint.awake_gib - footprint.gib(phase)
        value[row] = np.where(rest > 0, saved * rest, -1.0)
    choice = np.argmax(value, axis=0)  # ties: the earlier row, the shallower rest
    phases: list[tuple[int, Phase]] = [(start_us, Phase.AWAKE)]
    for gap in np.flatnonzero(choice):  # the gaps it rests in; it stays awake in the others
        phase = resting[int(choice[gap]) - 1]
        trip = trips[phase]
        begin = int(gap_from[gap])
        phases.append((begin, Phase.GOING_DOWN))
        phases.append((begin + trip.down_us, phase))
        if needs_wake[gap]:
            phases.append((int(gap_to[gap]) - trip.up_us, phase.way_up))
            phases.append((int(gap_to[gap]), Phase.AWAKE))
    return Timeline.joined(start_us, end_us, phases)


def lazy_oracle(
    arrivals_us: Ints,
    footprint: Footprint,
    trips: Mapping[Phase, RoundTrip],
    *,
    price: float,
    start_us: int,
    end_us: int,
) -> Replayed:
    """Return the lazy oracle's phases and waits for one deployment's requests at ``price``.

    ``price`` is W, in GiB-hours per request-second; ``trips`` the resting phases it may use,
    as for ``oracle_timeline``.
    """
    if any(not phase.is_resting for phase in trips):
        raise ValueError(f"the lazy oracle rests only in {[p.value for p in RESTING]}")
    check_price(price)
    at: list[int] = np.asarray(arrivals_us, dtype=np.int64).tolist()
    if at and (at[0] < start_us or at[-1] >= end_us):
        raise ValueError("every arrival lies in [start_us, end_us)")
    if any(later < earlier for earlier, later in pairwise(at)):
        raise ValueError("the arrivals come in order")
    n = len(at)
    awake = footprint.awake_gib
    # A request-microsecond of waiting in GiB-microseconds: the cost's one unit.
    per_wait = price * HOUR_US / SECOND_US
    levels = [(phase, trips[phase]) for phase in RESTING if phase in trips]
    before = [0, *accumulate(at)]  # before[j]: the arrivals before request j, summed

    def held(gib: float, since: int, until: int) -> float:  # the ledger counts to end_us only
        return gib * (min(until, end_us) - min(since, end_us))

    # Each way up from request j: when it is up, the first request it did not hold, and the
    # request-microseconds waited for it (every request arriving before it is up).
    ups: list[list[tuple[int, int, int]]] = []
    for _, trip in levels:
        row = []
        for j, first in enumerate(at):
            up = first + trip.up_us
            held_until = max(bisect_left(at, up, j), j + 1)
            row.append((up, held_until, up * (held_until - j) - (before[held_until] - before[j])))
        ups.append(row)
    # The states, by the next request: free from f (the start; after request j - 1 served at
    # once; after a way up), with request j next. Later requests are decided first.
    free_at: list[set[int]] = [set() for _ in range(n + 1)]
    free_at[0].add(start_us)
    for j in range(1, n + 1):
        free_at[j].add(at[j - 1] + 1)
    for row in ups:
        for up, next_request, _ in row:
            free_at[next_request].add(up)
    cost: dict[tuple[int, int], float] = {}
    chosen: dict[tuple[int, int], int] = {}  # -1: stay awake; else an index into levels
    for j in range(n, -1, -1):
        for free in free_at[j]:
            if j == n:  # after the last request: rest until the end, no wake
                best, pick = held(awake, free, end_us), -1
                for index, (phase, trip) in enumerate(levels):
                    if free + trip.down_us <= end_us:
                        rested = trip.down_us * awake + held(
                            footprint.gib(phase), free + trip.down_us, end_us
                        )
                        if rested < best:
                            best, pick = rested, index
            else:
                first = at[j]
                served = max(free, first + 1)
                best, pick = held(awake, free, served) + cost[(served, j + 1)], -1
                for index, (phase, trip) in enumerate(levels):
                    rested_at = free + trip.down_us
                    if first < rested_at:  # it would still be going down: staying up is cheaper
                        continue
                    up, next_request, waited = ups[index][j]
                    total = (
                        held(awake, free, rested_at)
                        + held(footprint.gib(phase), rested_at, first)
                        + held(awake, first, up)
                        + per_wait * waited
                        + cost[(up, next_request)]
                    )
                    if total < best:  # ties: the shallower, or staying up
                        best, pick = total, index
            cost[(free, j)] = best
            chosen[(free, j)] = pick
    return _lazy_replayed(at, levels, ups, chosen, start_us=start_us, end_us=end_us)


def _lazy_replayed(
    at: list[int],
    levels: list[tuple[Phase, RoundTrip]],
    ups: list[list[tuple[int, int, int]]],
    chosen: Mapping[tuple[int, int], int],
    *,
    start_us: int,
    end_us: int,
) -> Replayed:
    """Follow the lazy oracle's choices from the start: its phases and each request's wait."""
    waits = np.zeros(len(at), dtype=np.int64)
    phases: list[tuple[int, Phase]] = [(start_us, Phase.AWAKE)]
    free, j = start_us, 0
    while True:
        pick = chosen[(free, j)]
        if j == len(at):
            if pick >= 0:
                phase, trip = levels[pick]
                phases.append((free, Phase.GOING_DOWN))
                phases.append((free + trip.down_us, phase))
            break
        if pick < 0:
            free, j = max(free, at[j] + 1), j + 1
            continue
        phase, trip = levels[pick]
        up, next_request, _ = ups[pick][j]
        phases.extend(
            [(free, Phase.GOING_DOWN), (free + trip.down_us, phase), (at[j], phase.way_up),
             (up, Phase.AWAKE)]
        )  # fmt: skip
        for k in range(j, next_request):
            waits[k] = up - at[k]
        free, j = up, next_request
    kept = [(when, phase) for when, phase in phases if when < end_us]
    return Replayed(timeline=Timeline.joined(start_us, end_us, kept), waits_us=waits)
