"""The oracle: the most memory any policy could free on a trace without a cold request.

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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from dgxmm.lab.ledger import RESTING, Footprint, Phase, Timeline
from dgxmm.lab.traces.trace import Ints

__all__ = ["RoundTrip", "oracle_timeline"]

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
