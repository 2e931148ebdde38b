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
from dgxmm.fleet import DeploymentState, IdleLadder
from dgxmm.time_units import DAY_US, SECOND_US

__all__ = [
    "IDLE_ACTOR",
    "IDLE_TICK_US",
    "TIMED_OUT_RETRY_US",
    "TIMEOUTS_BEFORE_PAUSE",
    "IdleLadder",
    "IdleStep",
    "ScheduleSlots",
    "awake_window",
    "idle_step",
]

IDLE_ACTOR = "idle"  # the actor of an idle step's events
# The idle policy is checked every second (the host's pulse, ``IdleRunner.pulse``), not at
# the schedule runner's minute: a step a minute late holds a 72 GiB model awake 30 s
# longer on average, each time, which the lab measured as most of what the ladder fell short
# of Ollama's 5-minute stop by (docs/savings.md).
IDLE_TICK_US = SECOND_US
# A sleep that timed out leaves the server running, and says nothing of the next one (a
# lognormal's tail: the priced policy sleeps hundreds of times a day, and one slow sleep in
# a thousand paused it for good, issue 42). It is tried again after this; only this many
# in a row, with no step done between, pause the idle policy until a person acts.
TIMED_OUT_RETRY_US = 15 * 60 * SECOND_US
TIMEOUTS_BEFORE_PAUSE = 3
_WEEK_DAYS = 8  # the latest slot of a weekly schedule lies within the last 8 local days


class IdleStep(StrEnum):
    """What the ladder does to an idle deployment."""

    SLEEP = "sleep"  # a running server to level 1
    DEEPEN = "deepen"  # to level 2: from level 1, or a running server straight to it
    STOP = "stop"


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
