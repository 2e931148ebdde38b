"""The priced idle policy in a replay: what the product measures and profiles, from the trace.

``PricedPlan`` gives ``IdleSteps`` (``idle.py``) what the product's runner reads for the
priced policy (``dgxmm.decider.idle.priced``):

- **the measured durations**: the deployment's ``ServerTimes`` medians, per level (the
  product's measured times stand in the same way, with these as the fallback);
- **the price**: the comparison's (``dgxmm lab replay --price``);
- **the hour's profile**: built as the product's daily ``traffic_profiles`` job builds it,
  from the 28 local days before the replayed day, of the deployment's own requests, in its
  zone: per hour of the week the mean requests and the share of weeks with one. Before a
  whole week is behind the replay there is none (the product has no profile either): the
  rungs are unscaled and nothing wakes ahead.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

import numpy as np

from dgxmm.decider.idle import IdleLadder, IdleStep
from dgxmm.decider.idle.priced import (
    WEEK_HOURS,
    HourExpectation,
    Level,
    PricedCosts,
    hour_of_week_at,
    next_local_hour,
    pre_wake_at,
    priced_ladder,
)
from dgxmm.decider.traffic import hour_of_week, local_seconds
from dgxmm.lab.fleetfile import LabDeployment
from dgxmm.lab.ledger import Phase
from dgxmm.lab.traces.trace import Ints
from dgxmm.time_units import DAY_US, SECOND_US

__all__ = ["PricedPlan"]

PROFILE_DAYS = 28  # the product's profile reads 30 days; four whole weeks here
_LEAST_DAYS = 7  # before a week is behind the replay, no profile
_STEP = {Phase.ASLEEP_1: IdleStep.SLEEP, Phase.ASLEEP_2: IdleStep.DEEPEN,
         Phase.STOPPED: IdleStep.STOP}  # fmt: skip


class PricedPlan:
    """One replayed deployment's priced policy: its costs, price and day-by-day profile."""

    def __init__(
        self, deployment: LabDeployment, arrivals: Ints, *, price: float, start_us: int
    ) -> None:
        footprint = deployment.footprint
        times = deployment.durations
        self.price = price
        self.zone = ZoneInfo(deployment.time_zone)
        self.costs = PricedCosts(
            awake_gib=footprint.awake_gib,
            levels=(
                Level(step=IdleStep.SLEEP, held_gib=footprint.level_1_gib,
                      down_us=times.sleep_1.median_us, up_us=times.wake_1.median_us),
                Level(step=IdleStep.DEEPEN, held_gib=footprint.level_2_gib,
                      down_us=times.sleep_2.median_us, up_us=times.wake_2.median_us),
                Level(step=IdleStep.STOP, held_gib=0.0,
                      down_us=times.stop.median_us, up_us=times.start.median_us),
            ),
        )  # fmt: skip
        self._start_us = start_us
        self._arrivals = np.asarray(arrivals, dtype=np.int64)
        seconds = self._arrivals // SECOND_US
        self._wall_hours = local_seconds(seconds, self.zone) // 3600 if len(seconds) else seconds
        self._day = -1
        self._hours: tuple[HourExpectation, ...] = ()
        self._ladders: dict[tuple[int, int, bool], IdleLadder] = {}  # (day, hour, window)

    def ladder_at(self, now_us: int, *, in_awake_window: bool) -> IdleLadder:
        """Return the priced rungs at ``now_us`` (its hour of the week's, from its profile)."""
        hours = self._profile(now_us)
        hour = hour_of_week_at(now_us, self.zone) if hours else -1
        key = (self._day, hour, in_awake_window)
        found = self._ladders.get(key)
        if found is None:
            found = priced_ladder(
                self.costs,
                price=self.price,
                hour=hours[hour] if hours else None,
                in_awake_window=in_awake_window,
            )
            self._ladders[key] = found
        return found

    def pre_wake_at(self, now_us: int, resting: Phase) -> int | None:
        """Return when to wake ahead of the next hour from ``resting``, or None."""
        hours = self._profile(now_us)
        if not hours or resting not in _STEP:
            return None
        level = next(level for level in self.costs.levels if level.step is _STEP[resting])
        return pre_wake_at(
            now_us, self.zone, hours, costs=self.costs, resting=level, price=self.price
        )

    def next_hour(self, now_us: int) -> int:
        """Return when the next local hour begins: the rungs may change then."""
        return next_local_hour(now_us, self.zone)

    def _profile(self, now_us: int) -> tuple[HourExpectation, ...]:
        day = now_us // DAY_US
        if day != self._day:
            self._day = day
            self._hours = self._build(day * DAY_US)
            self._ladders.clear()
        return self._hours

    def _build(self, until_us: int) -> tuple[HourExpectation, ...]:
        """Return the profile of the requests of the 28 days before ``until_us`` (none: ())."""
        since = max(self._start_us, until_us - PROFILE_DAYS * DAY_US)
        if until_us - since < _LEAST_DAYS * DAY_US:
            return ()
        begin, end = np.searchsorted(self._arrivals, [since, until_us])
        wall = self._wall_hours[begin:end]
        # Every local hour the window held once, and the ones that had a request.
        first = int(local_seconds(np.array([since // SECOND_US]), self.zone)[0]) // 3600
        last = int(local_seconds(np.array([until_us // SECOND_US - 1]), self.zone)[0]) // 3600
        occurrences = np.bincount(
            hour_of_week(np.arange(first, last + 1, dtype=np.int64)), minlength=WEEK_HOURS
        )
        requests = np.bincount(hour_of_week(wall), minlength=WEEK_HOURS)
        active = np.bincount(hour_of_week(np.unique(wall)), minlength=WEEK_HOURS)
        seen = np.maximum(occurrences, 1)
        return tuple(
            HourExpectation(
                requests=float(requests[h] / seen[h]), active_share=float(active[h] / seen[h])
            )
            for h in range(WEEK_HOURS)
        )
