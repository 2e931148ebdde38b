"""The priced idle policy in a replay: what the product measures and profiles, from the trace.

``PricedPlan`` gives ``IdleSteps`` (``idle.py``) what the product's runner reads for the
priced policy (``dgxmm.decider.idle.priced``):

- **the measured durations**: per level, the mean of the deployment's ``ServerTimes`` and
  the mean time a request that meets the step waits for it to end (``E[D^2] / 2E[D]``),
  each of 20,000 fixed-seed draws cut at the product's bound, as a log of the product's own
  steps would give them (the product measures its wakes and starts, and falls back to
  vLLM's published figures for the rest);
- **the price**: the comparison's (``dgxmm lab replay --price``);
- **the rate before it went idle**: its requests of the ten minutes up to the last one;
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
    rate_before,
)
from dgxmm.decider.idle.pricing import measured
from dgxmm.decider.traffic import hour_of_week, local_seconds
from dgxmm.lab.durations import Duration
from dgxmm.lab.fleetfile import LabDeployment
from dgxmm.lab.ledger import Phase
from dgxmm.lab.replay.server import PRODUCT_BOUNDS, ProductBounds
from dgxmm.lab.traces.trace import Ints
from dgxmm.time_units import DAY_US, SECOND_US

__all__ = ["PricedPlan", "measured_duration"]

MEASURED = 20_000  # the draws a duration's mean and time left are taken of
PROFILE_DAYS = 28  # the product's profile reads 30 days; four whole weeks here
_LEAST_DAYS = 7  # before a week is behind the replay, no profile
_STEP = {Phase.ASLEEP_1: IdleStep.SLEEP, Phase.ASLEEP_2: IdleStep.DEEPEN,
         Phase.STOPPED: IdleStep.STOP}  # fmt: skip


class PricedPlan:
    """One replayed deployment's priced policy: its costs, price and day-by-day profile."""

    def __init__(
        self,
        deployment: LabDeployment,
        arrivals: Ints,
        *,
        price: float,
        start_us: int,
        bounds: ProductBounds = PRODUCT_BOUNDS,
    ) -> None:
        footprint = deployment.footprint
        times = deployment.durations
        self.price = price
        self.zone = ZoneInfo(deployment.time_zone)
        sleep_bound = bounds.sleep_timeout_us
        up_bound = bounds.startup_timeout_us
        self.costs = PricedCosts(
            awake_gib=footprint.awake_gib,
            levels=(
                _level(IdleStep.SLEEP, footprint.level_1_gib, times.sleep_1, times.wake_1,
                       down_most=sleep_bound, up_most=up_bound),
                _level(IdleStep.DEEPEN, footprint.level_2_gib, times.sleep_2, times.wake_2,
                       down_most=sleep_bound, up_most=up_bound),
                _level(IdleStep.STOP, 0.0, times.stop, times.start,
                       down_most=bounds.stop_grace_us, up_most=up_bound),
            ),
        )  # fmt: skip
        self._start_us = start_us
        self._arrivals = np.asarray(arrivals, dtype=np.int64)
        self._arrival_list: list[int] = self._arrivals.tolist()
        seconds = self._arrivals // SECOND_US
        self._wall_hours = local_seconds(seconds, self.zone) // 3600 if len(seconds) else seconds
        self._day = -1
        self._hours: tuple[HourExpectation, ...] = ()
        self._ladders: dict[tuple[int, int, float | None, bool], IdleLadder] = {}

    def ladder_at(
        self, now_us: int, *, last_request_us: int | None, in_awake_window: bool
    ) -> IdleLadder:
        """Return the priced rungs at ``now_us``: its hour's, and the rate before it idled."""
        hours = self._profile(now_us)
        hour = hour_of_week_at(now_us, self.zone) if hours else -1
        recent = rate_before(self._arrival_list, last_request_us)
        key = (self._day, hour, recent, in_awake_window)
        found = self._ladders.get(key)
        if found is None:
            found = priced_ladder(
                self.costs,
                price=self.price,
                hour=hours[hour] if hours else None,
                recent_per_hour=recent,
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


def _level(
    step: IdleStep, held_gib: float, down: Duration, up: Duration, *, down_most: int, up_most: int
) -> Level:
    """Return a level as the product would measure it: its durations' means and what is left."""
    down_us, down_left = measured_duration(down, down_most)
    up_us, up_left = measured_duration(up, up_most)
    return Level(step=step, held_gib=held_gib, down_us=down_us, up_us=up_us,
                 down_left_us=down_left, up_left_us=up_left)  # fmt: skip


def measured_duration(duration: Duration, most_us: int) -> tuple[int, int]:
    """Return a duration's mean and mean time left as met, as the product measures them
    (``dgxmm.decider.idle.pricing.measured``) of fixed-seed draws, each cut at its bound."""
    drawn = np.minimum(duration.draw(np.random.default_rng(0), MEASURED), most_us)
    return measured(drawn.tolist(), (0, 0))
