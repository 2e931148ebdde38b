"""The priced idle policy: rungs from the break-even rule at a price of waiting (issue 42).

Staying awake costs the memory held; going down to a resting level costs its round trip and
the wait the next request meets. With ``W`` the price of waiting (GiB-hours one
request-second is worth), level ``L``'s line is the cost of resting there from the start of
an idle gap that a request ends at time ``t``::

    held_L x t + B_L,   B_L = Delta_L x (d_L + u_L) + W x wait_L

(``held_L`` the GiB it holds resting, ``Delta_L`` the GiB it frees, ``d_L`` / ``u_L`` the
time to go down and to come back, ``wait_L`` the request-seconds a wake makes people wait).
Awake is the line ``held_awake x t``. The deployment rests in the level whose line is lowest
at the elapsed idle time: the lower envelope's crossings are the rungs (Irani, Shukla and
Gupta, ACM TECS 2003; with one level, the ski-rental break-even ``tau = d + u + W x wait /
Delta``, at most 2x the lazy oracle's cost: docs/savings.md). A level whose line is never
lowest is skipped; one that frees nothing is never chosen.

The rungs are a ladder (``IdleLadder``: sleep = level 1, deepen = level 2, stop), so
``idle_step`` and the schedules' awake windows bound them as they bound the ladder.

Where the issue left the choice open, what was chosen:

- **The wait a wake causes**: the request that finds it resting waits ``u_L``, and those the
  hour's profile expects during the wake wait half of it each on average:
  ``wait_L = u_L x (1 + rate x u_L / 2)``.
- **The hour of the week** (``hour_factor``): the rungs are multiplied by the requests the
  profile expects within the first rung at this hour's rate (the break-even rule's own
  unit: fewer than one, the break-even time will likely pass with no request, so go down
  sooner; more, one is likely to come, so hold on), bounded to ``[MIN_FACTOR, MAX_FACTOR]``
  so that no hour takes the policy far from its 2x bound. No profile: a factor of 1.
- **Waking ahead** (``pre_wake_at``): at an hour the profile shows as a regular start (the
  hour before quiet in at least three weeks of four, this one busy in at least three of
  four), the deployment is woken the measured wake time before the hour begins, when that
  pays at the price: the memory held awake until the hour's expected first request costs
  less than the wait it spares.

Pure functions, no clock, lock or I/O: the product's ``IdleRunner`` and the savings lab
(``lab/replay/idle.py``) call the same ones.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from dgxmm.decider.idle.ladder import IDLE_TICK_US, IdleStep
from dgxmm.fleet import IdleLadder
from dgxmm.time_units import HOUR_US, SECOND_US

__all__ = [
    "MAX_FACTOR",
    "MIN_FACTOR",
    "PRODUCT_PRICE",
    "RECENT_US",
    "HourExpectation",
    "Level",
    "PricedCosts",
    "Rung",
    "break_even_rungs",
    "hour_factor",
    "hour_of_week_at",
    "next_local_hour",
    "pre_wake_at",
    "priced_ladder",
    "rate_before",
]

# The price the product decides at when no wait budget found one: the lab's middle standard
# price (``lab.ledger.DEFAULT_PRICE``; tests/decider/test_priced.py holds them equal).
PRODUCT_PRICE = 0.1
MIN_FACTOR = 0.25  # a quiet hour brings the rungs down to a quarter, no lower
MAX_FACTOR = 2.0  # a busy hour holds them on to twice, no longer
QUIET_SHARE = 0.25  # the hour before a regular start had requests in at most this share of weeks
BUSY_SHARE = 0.75  # and the start's hour in at least this share
WEEK_HOURS = 168
RECENT_US = 10 * 60 * SECOND_US  # the requests before the last one counted for its rate
# A crossing later than this is no rung: a level that pays only after a month of idleness
# (a sliver of memory against a long wake) is one a request always comes before.
LONGEST_RUNG_US = 30 * 24 * HOUR_US
_STEPS = (IdleStep.SLEEP, IdleStep.DEEPEN, IdleStep.STOP)


@dataclass(frozen=True, slots=True, kw_only=True)
class Level:
    """One resting level: the step that reaches it, what it holds, how long there and back."""

    step: IdleStep  # SLEEP: level 1; DEEPEN: level 2; STOP: stopped
    held_gib: float  # GPU memory held while resting there
    down_us: int  # a sleep at that level, or a stop (the mean)
    up_us: int  # a wake from it, or a start, to ready (the mean)
    # How long a request that comes during the way down (up) waits for it to end, on average:
    # E[D^2] / 2E[D], half of it for a fixed duration, far more for a long tail (a lognormal
    # sleep of median 1 s holds such a request for minutes). None: half the mean.
    down_left_us: int | None = None
    up_left_us: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PricedCosts:
    """What the break-even rule reads of one deployment: its memory and its levels."""

    awake_gib: float
    levels: tuple[Level, ...]  # any order; a level may be left out (no sleep mode)


@dataclass(frozen=True, slots=True, kw_only=True)
class Rung:
    """A step of the envelope: go to ``step``'s level after ``after_us`` without requests."""

    step: IdleStep
    after_us: int


@dataclass(frozen=True, slots=True, kw_only=True)
class HourExpectation:
    """What the traffic profile expects of one local hour of the week."""

    requests: float  # requests expected in the hour
    active_share: float  # the share of its observed weeks that had a request in it


def _intercept_gib_h(costs: PricedCosts, level: Level, price: float, rate_per_s: float) -> float:
    """Return ``B_L`` in GiB-hours: the round trip's held memory and the wait it causes."""
    freed = costs.awake_gib - level.held_gib
    trip_h = (level.down_us + level.up_us) / HOUR_US
    up_s, down_s = level.up_us / SECOND_US, level.down_us / SECOND_US
    up_left = (level.up_us / 2 if level.up_left_us is None else level.up_left_us) / SECOND_US
    down_left = level.down_us / 2 if level.down_left_us is None else level.down_left_us
    down_left /= SECOND_US
    # The request that finds it resting waits the way up; those the hour expects meanwhile
    # what is left of it; those that come while it goes down what is left of that, then
    # the way up.
    wait_s = up_s + rate_per_s * (up_s * up_left + down_s * (down_left + up_s))
    return freed * trip_h + price * wait_s


def break_even_rungs(
    costs: PricedCosts, *, price: float, requests_per_hour: float = 0.0
) -> tuple[Rung, ...]:
    """Return the lower envelope's crossings over the levels, shallowest first.

    ``price``: W, GiB-hours one request-second of waiting is worth (>= 0);
    ``requests_per_hour``: what the profile expects now (for the wait a wake causes).
    """
    if price < 0:
        raise ValueError(f"price: {price} is below 0")
    rate = max(requests_per_hour, 0.0) / 3600
    # Only levels that free memory: one that frees nothing costs its trip and saves nothing.
    lines = sorted(
        (
            (level.held_gib, _intercept_gib_h(costs, level, price, rate), level.step)
            for level in costs.levels
            if level.held_gib < costs.awake_gib
        ),
        key=lambda line: (-line[0], line[1]),
    )
    rungs: list[Rung] = []
    slope, intercept, at_h = costs.awake_gib, 0.0, 0.0
    while lines:
        # The next line on the envelope: the earliest to cross the current one (ties: the
        # deeper, which holds less from then on). Each crossing is after the last one.
        crossings = [
            (max((b - intercept) / (slope - held), at_h), -index)
            for index, (held, b, _) in enumerate(lines)
        ]
        when_h, negative = min(crossings)
        if when_h * HOUR_US > LONGEST_RUNG_US:  # a level that pays only after a month: never
            break
        held, intercept, step = lines[-negative]
        rungs.append(Rung(step=step, after_us=round(when_h * HOUR_US)))
        slope, at_h = held, when_h
        lines = [line for line in lines[-negative + 1 :] if line[0] < held]
    return _increasing(rungs)


def _increasing(rungs: list[Rung]) -> tuple[Rung, ...]:
    """Return the rungs at least a tick apart and after a tick (the pulse's resolution)."""
    kept: list[Rung] = []
    least = IDLE_TICK_US
    for rung in rungs:
        after = max(rung.after_us, least)
        kept.append(Rung(step=rung.step, after_us=after))
        least = after + IDLE_TICK_US
    return tuple(kept)


def hour_factor(requests_per_hour: float | None, first_after_us: int | None) -> float:
    """Return how much this hour stretches the rungs: the requests due within the first.

    None (no profile, or no rung): 1. Bounded to ``[MIN_FACTOR, MAX_FACTOR]``.
    """
    if requests_per_hour is None or first_after_us is None:
        return 1.0
    expected = max(requests_per_hour, 0.0) * first_after_us / HOUR_US
    return min(MAX_FACTOR, max(MIN_FACTOR, expected))


def priced_ladder(
    costs: PricedCosts,
    *,
    price: float,
    hour: HourExpectation | None = None,
    recent_per_hour: float | None = None,
    in_awake_window: bool = False,
) -> IdleLadder:
    """Return the priced rungs at this hour as a ladder (sleep, deepen, stop; None: skipped).

    ``recent_per_hour``: the rate of the requests just before the idle time began
    (``RECENT_US`` before the last one), when known: a burst the hour's mean hides holds
    the rungs on as a busy hour does; the higher of the two is taken.

    Inside a scheduled awake window the deployment goes no further than level 1
    (``idle_step``): the envelope is then the one over level 1 alone, which is on it even
    where a deeper level would have taken its place.
    """
    if in_awake_window:
        costs = PricedCosts(
            awake_gib=costs.awake_gib,
            levels=tuple(level for level in costs.levels if level.step is IdleStep.SLEEP),
        )
    known = [rate for rate in (None if hour is None else hour.requests, recent_per_hour)
             if rate is not None]  # fmt: skip
    rate = max(known) if known else None
    rungs = break_even_rungs(costs, price=price, requests_per_hour=rate or 0.0)
    factor = hour_factor(rate, rungs[0].after_us if rungs else None)
    scaled = _increasing([Rung(step=r.step, after_us=round(r.after_us * factor)) for r in rungs])
    at = {rung.step: rung.after_us for rung in scaled}
    return IdleLadder(
        sleep_after_us=at.get(IdleStep.SLEEP),
        deepen_after_us=at.get(IdleStep.DEEPEN),
        stop_after_us=at.get(IdleStep.STOP),
    )


def rate_before(arrivals_us: Sequence[int], last_us: int | None) -> float | None:
    """Return the requests an hour of the ``RECENT_US`` before the last one (sorted; None: none).

    Without the last itself: a window that ends at an arrival, counted without it, is a fair
    sample of the rate."""
    if last_us is None:
        return None
    count = bisect_left(arrivals_us, last_us) - bisect_left(arrivals_us, last_us - RECENT_US)
    return count * HOUR_US / RECENT_US


def hour_of_week_at(at_us: int, zone: ZoneInfo) -> int:
    """Return the local hour of the week of ``at_us`` (0: Monday 00:00-00:59)."""
    local = datetime.fromtimestamp(at_us / SECOND_US, zone)
    return local.weekday() * 24 + local.hour


def next_local_hour(now_us: int, zone: ZoneInfo) -> int:
    """Return the instant the local hour after the one holding ``now_us`` begins."""
    local = datetime.fromtimestamp(now_us / SECOND_US, zone)
    into_us = (local.minute * 60 + local.second) * SECOND_US + local.microsecond
    # An offset changes on a whole hour in the zones that change it (a half-hour zone's
    # local hours still last an hour): the next one begins an hour after this one did.
    return now_us - into_us + HOUR_US


def pre_wake_at(
    now_us: int,
    zone: ZoneInfo,
    hours: Sequence[HourExpectation],
    *,
    costs: PricedCosts,
    resting: Level,
    price: float,
) -> int | None:
    """Return when to wake ahead of the next hour if it is a regular start that pays, or None.

    ``hours``: the profile's 168 hours (fewer: no profile, None); ``resting``: the level
    the deployment rests at now, whose measured ``up_us`` is the lead.
    """
    if len(hours) != WEEK_HOURS:
        return None
    begins = next_local_hour(now_us, zone)
    hour = hour_of_week_at(begins, zone)
    before, this = hours[(hour - 1) % WEEK_HOURS], hours[hour]
    if before.active_share > QUIET_SHARE or this.active_share < BUSY_SHARE:
        return None
    # The first request of an hour expecting n comes about 1/n of an hour in (Poisson).
    first_h = min(1.0, 1.0 / this.requests) if this.requests > 0 else 1.0
    freed = costs.awake_gib - resting.held_gib
    held_gib_h = freed * first_h  # woken ahead: awake until the first request
    spared_gib_h = price * resting.up_us / SECOND_US  # the wait of the wake it spares
    if spared_gib_h <= held_gib_h:
        return None
    return begins - resting.up_us
