"""The idle ladder: which step an idle deployment takes now, a pure function of what was read.

A ladder has three optional steps, each after a time without requests: a sleep at level 1
(``sleep_after_us``), a deepening to level 2 (``deepen_after_us``), a stop
(``stop_after_us``). Idle means no request through the proxy and none on the server's own
counters for that long; probes, scrapes and the post-wake check are not requests, so the
caller's ``idle_for_us`` counts from the latest real request (or from when the deployment
came up, if none came since).

The step taken is the deepest one due, not the next rung: a deployment found idle for a day
by a host that was down is stopped, not put to sleep first (each step would be a wasted
action of the server). A schedule says what a person wants, and the ladder never undoes it
(issue 25): inside a scheduled awake window (``awake_window``) the ladder goes no further than
level 1 and never stops. The step then takes the path a scheduled sleep takes (the lock, the
quiet check with the door shut, the failure rules), which is the caller's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from zoneinfo import ZoneInfo

from dgxmm.decider.days import day_bit
from dgxmm.decider.schedules.rows import ScheduleAction
from dgxmm.decider.schedules.slots import local_today, slot_on
from dgxmm.errors import DefinitionError
from dgxmm.fleet import DeploymentState
from dgxmm.time_units import DAY_US, SECOND_US

__all__ = [
    "IDLE_ACTOR",
    "IDLE_TICK_US",
    "IdleLadder",
    "IdleStep",
    "ScheduleSlots",
    "awake_window",
    "idle_step",
]

IDLE_ACTOR = "idle"  # the actor of an idle step's events
# The idle policy is checked on every tick of the host (``dgxmm serve`` ticks each second),
# not at the schedule runner's minute: a step a minute late holds a 72 GiB model awake 30 s
# longer on average, each time, which the lab measured as most of what the ladder fell short
# of Ollama's 5-minute stop by (docs/savings.md).
IDLE_TICK_US = SECOND_US
_MOST_S = 365 * 86400  # a year: a longer idle wait is a typo, not a policy
_WEEK_DAYS = 8  # the latest slot of a weekly schedule lies within the last 8 local days


class IdleStep(StrEnum):
    """What the ladder does to an idle deployment."""

    SLEEP = "sleep"  # a running server to level 1
    DEEPEN = "deepen"  # to level 2: from level 1, or a running server straight to it
    STOP = "stop"


@dataclass(frozen=True, slots=True, kw_only=True)
class IdleLadder:
    """A deployment's idle steps, each in microseconds without requests; None: no such step."""

    sleep_after_us: int | None = None
    deepen_after_us: int | None = None
    stop_after_us: int | None = None

    @classmethod
    def of_seconds(
        cls,
        *,
        sleep_after_s: object = None,
        deepen_after_s: object = None,
        stop_after_s: object = None,
        field_prefix: str = "idle_",
    ) -> IdleLadder:
        """Check a ladder given in seconds; refuse naming the field (``DefinitionError``)."""
        given = {"sleep_after_s": sleep_after_s, "deepen_after_s": deepen_after_s,
                 "stop_after_s": stop_after_s}  # fmt: skip
        steps: dict[str, int | None] = {}
        previous: tuple[str, int] | None = None  # the step before: its name, microseconds
        for name, value in given.items():
            field = f"{field_prefix}{name}"
            if value is None:
                steps[name] = None
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise DefinitionError(field, f"{value!r} is not a number of seconds")
            if not 1 <= value <= _MOST_S:  # NaN fails both comparisons
                raise DefinitionError(field, f"{value!r} is not from 1 s to {_MOST_S} s (a year)")
            us = round(value * SECOND_US)
            # Compared as kept, in microseconds: seconds apart by less than one would be
            # accepted here, then refused when the ladder's own to_json is read back.
            if previous is not None and us <= previous[1]:
                earlier = f"{field_prefix}{previous[0]}"
                raise DefinitionError(
                    field, f"{value:g} s is not after {earlier} ({previous[1] / SECOND_US:g} s)"
                )
            previous = (name, us)
            steps[name] = us
        return cls(
            sleep_after_us=steps["sleep_after_s"],
            deepen_after_us=steps["deepen_after_s"],
            stop_after_us=steps["stop_after_s"],
        )

    def to_json(self) -> dict[str, float]:
        """Return the steps given, in seconds, by their names without the ``idle_`` prefix."""
        steps = {"sleep_after_s": self.sleep_after_us, "deepen_after_s": self.deepen_after_us,
                 "stop_after_s": self.stop_after_us}  # fmt: skip
        return {key: us / SECOND_US for key, us in steps.items() if us is not None}

    @property
    def is_off(self) -> bool:
        """Tell whether the ladder has no step at all (the default)."""
        return self.sleep_after_us is self.deepen_after_us is self.stop_after_us is None

    def first_after_us(self) -> int | None:
        """Return the idle time of the ladder's first step, or None when it is off."""
        found = [at for at in self.steps_us() if at is not None]
        return min(found) if found else None

    def steps_us(self) -> tuple[int | None, int | None, int | None]:
        """Return the sleep, deepen and stop times, in that order."""
        return (self.sleep_after_us, self.deepen_after_us, self.stop_after_us)


def idle_step(
    ladder: IdleLadder,
    *,
    state: DeploymentState,
    asleep_level: int | None,
    idle_for_us: int,
    in_awake_window: bool,
) -> IdleStep | None:
    """Return the step the ladder takes now, or None.

    ``asleep_level`` is the level a sleeping deployment sleeps at (None when it is not
    asleep). Only a running or sleeping deployment takes a step: one stopped, failed or
    with an action under way is left as it is.
    """
    if state is DeploymentState.RUNNING:
        level = 0
    elif state is DeploymentState.SLEEPING:
        level = asleep_level or 1
    else:
        return None

    def due(after_us: int | None) -> bool:
        return after_us is not None and idle_for_us >= after_us

    if not in_awake_window:
        if due(ladder.stop_after_us):
            return IdleStep.STOP
        if level < 2 and due(ladder.deepen_after_us):
            return IdleStep.DEEPEN
    if level == 0 and due(ladder.sleep_after_us):
        return IdleStep.SLEEP
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduleSlots:
    """What ``awake_window`` reads of one enabled schedule of the deployment."""

    action: ScheduleAction
    days: int  # Monday 1 ... Sunday 64
    time: tuple[int, int]  # local (hour, minute)
    zone: ZoneInfo


def awake_window(schedules: Iterable[ScheduleSlots], now_us: int) -> bool:
    """Tell whether ``now_us`` is inside a scheduled awake window.

    The window runs from a scheduled wake or start to the next scheduled sleep or stop: the
    latest slot at or before ``now_us`` of the deployment's schedules decides (a wake or start
    opens the window, a sleep or stop closes it). Of two slots at one instant the one that
    acts last in the runner's order, the later schedule, decides; here the caller passes them
    in schedule-id order and a tie goes to the later one, as ``slot_order`` makes it.
    """
    latest: tuple[int, ScheduleAction] | None = None
    for schedule in schedules:
        today = local_today(now_us, schedule.zone)
        for back in range(_WEEK_DAYS):
            day = today - timedelta(days=back)
            if not schedule.days & day_bit(day.weekday()):
                continue
            at = slot_on(day, schedule.time, schedule.zone).at_us
            if at > now_us:
                continue
            if latest is None or at >= latest[0]:
                latest = (at, schedule.action)
            break  # the newest slot of this schedule is found: older days are earlier
    if latest is None or now_us - latest[0] > _WEEK_DAYS * DAY_US:
        return False
    return not latest[1].quiets
