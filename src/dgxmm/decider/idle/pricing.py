"""What the priced idle policy reads of a deployment in the product: measured times, profile.

``Pricing`` gives the idle runner (``runner.py``) the priced policy's rungs and its wake
ahead (``priced.py``, pure) for a deployment now, from:

- **its measured durations**: per level and way, the mean of its last ``MEASURED_WAKES``
  times the deployer recorded (``Events.ready_times``, ``down_times``): up, a wake from
  that level or a start; down, a sleep at that level (level 2: a deepening's whole way) or a
  stop, one that timed out at its bound; and the mean time a request that met one waited
  for it to end (``E[D^2] / 2E[D]``). Where nothing was measured yet, vLLM's published
  figures (``PUBLISHED``, the lab's ``ServerTimes`` defaults cut at the product's bounds,
  docs/savings.md), each way on its own;
- **its memory**: awake and asleep, per GPU, times its GPUs (the product has one asleep
  figure, so level 2 holds what level 1 holds and is never on the envelope);
- **the rate before it went idle**: the proxy's requests of the ten minutes before the last
  one (the runner's, in memory);
- **its traffic profile** (``profiles.py``, rebuilt daily): per local hour of the week, the
  requests it expects (its active minutes, a request each) and the share of observed weeks
  that had any;
- **the price**: the one the daily ``wait_budgets`` job found for its wait budget while the
  budget is still the one it was found for (``budgets.price_for``), else ``PRODUCT_PRICE``.

What is read is kept a minute (the times) or ten (the profile, the price), per deployment,
on this object: the pulse asks every second.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from zoneinfo import ZoneInfo

from dgxmm.decider.idle.budgets import price_for, read_choice
from dgxmm.decider.idle.ladder import IdleStep
from dgxmm.decider.idle.priced import (
    PRODUCT_PRICE,
    WEEK_HOURS,
    HourExpectation,
    Level,
    PricedCosts,
    hour_of_week_at,
    pre_wake_at,
    priced_ladder,
)
from dgxmm.decider.profiles import read_profile
from dgxmm.decider.schedules.lead import MEASURED_WAKES
from dgxmm.fleet import IDLE_ACTOR, Deployment, DeploymentState, EventAction, Fleet, IdleLadder
from dgxmm.store import Store, reading
from dgxmm.time_units import MINUTE_US

__all__ = ["PUBLISHED", "Pricing"]

# vLLM's published figures as (mean, mean time left as met), in microseconds: the lab's
# ServerTimes defaults, each cut at the product's bound (tests/decider/test_pricing.py
# holds them to the lab's). Keyed by the step and the way: down (a sleep, a stop) or up.
PUBLISHED: dict[tuple[IdleStep, bool], tuple[int, int]] = {
    (IdleStep.SLEEP, False): (4_731_775, 27_194_295),
    (IdleStep.DEEPEN, False): (465_299, 542_340),
    (IdleStep.STOP, False): (4_577_257, 4_780_538),
    (IdleStep.SLEEP, True): (1_744_263, 3_821_295),
    (IdleStep.DEEPEN, True): (3_813_350, 3_997_477),
    (IdleStep.STOP, True): (56_594_600, 38_983_087),
}
_LEVEL = {IdleStep.SLEEP: 1, IdleStep.DEEPEN: 2, IdleStep.STOP: 0}  # the events' levels
TIMES_KEPT_US = MINUTE_US
PROFILE_KEPT_US = 10 * MINUTE_US


def measured(samples_us: Sequence[int], fallback: tuple[int, int]) -> tuple[int, int]:
    """Return the mean of ``samples_us`` and the mean time left as met, or ``fallback``."""
    if not samples_us:
        return fallback
    mean = sum(samples_us) / len(samples_us)
    if mean <= 0:
        return (0, 0)
    return round(mean), round(sum(s * s for s in samples_us) / len(samples_us) / (2 * mean))


class Pricing:
    """The priced policy's inputs per deployment, read through the fleet and the store."""

    def __init__(self, store: Store, fleet: Fleet) -> None:
        self._store = store
        self._fleet = fleet
        self._guard = threading.Lock()
        self._costs: dict[int, tuple[int, PricedCosts]] = {}
        self._hours: dict[int, tuple[int, tuple[HourExpectation | None, ...]]] = {}
        self._prices: dict[int, tuple[int, float]] = {}

    def ladder(
        self,
        deployment: Deployment,
        now: int,
        *,
        in_awake_window: bool,
        recent_per_hour: float | None = None,
    ) -> IdleLadder:
        """Return the deployment's priced rungs now, as a ladder (``priced_ladder``)."""
        hours = self._profile(deployment, now)
        hour = hours[hour_of_week_at(now, ZoneInfo(deployment.time_zone))] if hours else None
        return priced_ladder(
            self.costs(deployment, now),
            price=self.price(deployment, now),
            hour=hour,
            recent_per_hour=recent_per_hour,
            in_awake_window=in_awake_window,
        )

    def wakes_ahead(self, deployment: Deployment, now: int) -> bool:
        """Tell whether to bring the resting deployment up ahead of the next hour now.

        Only one asleep, or stopped by the idle policy itself: never what a person or a
        schedule stopped. (Once until the next request: the caller's ``pre_woken``.)
        """
        state = deployment.state
        if state not in (DeploymentState.SLEEPING, DeploymentState.STOPPED):
            return False
        stopped = state is DeploymentState.STOPPED
        if stopped:
            latest = self._fleet.events.latest(deployment.id, EventAction.STOP)
            if latest is None or latest.actor != IDLE_ACTOR:
                return False
        ahead = self.pre_wake_at(deployment, now, stopped=stopped)
        return ahead is not None and ahead <= now

    def pre_wake_at(self, deployment: Deployment, now: int, *, stopped: bool) -> int | None:
        """Return when to bring the resting deployment up ahead of the next hour, or None.

        ``stopped``: it is stopped (by the idle policy: the caller's check), else asleep.
        """
        hours = self._profile(deployment, now)
        known = tuple(hour for hour in hours if hour is not None)
        if len(known) != WEEK_HOURS:  # no profile, or an hour never observed
            return None
        costs = self.costs(deployment, now)
        if stopped:
            step = IdleStep.STOP
        else:
            step = IdleStep.DEEPEN if deployment.sleeps_at == 2 else IdleStep.SLEEP
        level = next(level for level in costs.levels if level.step is step)
        return pre_wake_at(
            now, ZoneInfo(deployment.time_zone), known, costs=costs, resting=level,
            price=self.price(deployment, now),
        )  # fmt: skip

    def forget(self, deployment_id: int) -> None:
        """Drop what was read of a deployment (its definition changed, or it is gone)."""
        with self._guard:
            self._costs.pop(deployment_id, None)
            self._hours.pop(deployment_id, None)
            self._prices.pop(deployment_id, None)

    def price(self, deployment: Deployment, now: int) -> float:
        """Return the price it decides at: its wait budget's, else the standard one."""
        with self._guard:
            kept = self._prices.get(deployment.id)
        if kept is not None and now - kept[0] < PROFILE_KEPT_US:
            return kept[1]
        found = PRODUCT_PRICE
        if deployment.idle_wait_budget is not None:
            with reading(self._store.engine) as connection:
                found = price_for(deployment, read_choice(connection, deployment.id))
        with self._guard:
            self._prices[deployment.id] = (now, found)
        return found

    def costs(self, deployment: Deployment, now: int) -> PricedCosts:
        """Return its memory and measured durations per level (read again after a minute)."""
        with self._guard:
            kept = self._costs.get(deployment.id)
        if kept is not None and now - kept[0] < TIMES_KEPT_US:
            return kept[1]
        gpus = max(len(deployment.gpus), deployment.num_gpus or 0, 1)
        asleep = deployment.memory_gib_asleep * gpus
        levels = []
        for step, held in ((IdleStep.SLEEP, asleep), (IdleStep.DEEPEN, asleep),
                           (IdleStep.STOP, 0.0)):  # fmt: skip
            events, level = self._fleet.events, _LEVEL[step]
            downs = events.down_times(deployment.id, level, MEASURED_WAKES)
            down, down_left = measured(downs, PUBLISHED[(step, False)])
            ups = events.ready_times(deployment.id, level, MEASURED_WAKES)
            up, up_left = measured(ups, PUBLISHED[(step, True)])
            levels.append(
                Level(
                    step=step,
                    held_gib=held,
                    down_us=down,
                    up_us=up,
                    down_left_us=down_left,
                    up_left_us=up_left,
                )
            )
        costs = PricedCosts(awake_gib=deployment.memory_gib_awake * gpus, levels=tuple(levels))
        with self._guard:
            self._costs[deployment.id] = (now, costs)
        return costs

    def _profile(self, deployment: Deployment, now: int) -> tuple[HourExpectation | None, ...]:
        """Return its 168 hours (None for one never observed), or () before its first build."""
        with self._guard:
            kept = self._hours.get(deployment.id)
        if kept is not None and now - kept[0] < PROFILE_KEPT_US:
            return kept[1]
        with reading(self._store.engine) as connection:
            profile = read_profile(connection, deployment.id, deployment.time_zone)
        hours: tuple[HourExpectation | None, ...] = ()
        if len(profile.hours) == WEEK_HOURS:
            hours = tuple(
                None
                if not hour.observed_weeks
                else HourExpectation(
                    # An active minute is a request at least: a quiet hour's count, a busy
                    # hour's floor (60 an hour holds the rungs on at once).
                    requests=hour.active_share * 60,
                    active_share=1 - hour.idle_weeks / hour.observed_weeks,
                )
                for hour in profile.hours
            )
        with self._guard:
            self._hours[deployment.id] = (now, hours)
        return hours
