"""The idle policy of a replayed deployment: when its next check is, and the step it takes.

``IdleSteps`` is a part of ``SimulatedDeployment`` (``deployment.py``): the idle ladder, or the
histogram's windows over it, checked on the host's tick through the product's own functions
(``idle_step``, ``ladder_in_effect``, ``pre_wake_at``, ``lead_for``), with the pre-wake the
histogram plans after a sleep. What it reads and calls of the deployment (its server, its
schedule rows, its last request, the way down and up) is ``_Replayed``: the deployment
satisfies it, and this module never imports the deployment's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol

from dgxmm.decider.idle import IDLE_TICK_US, GapHistogram, IdleLadder, IdleStep
from dgxmm.decider.idle import idle_step as ladder_step
from dgxmm.decider.idle.histogram import ladder_in_effect, pre_wake_at
from dgxmm.decider.idle.ladder import TIMED_OUT_RETRY_US, TIMEOUTS_BEFORE_PAUSE
from dgxmm.decider.schedules.lead import LeadKind, WakeLead, lead_for
from dgxmm.fleet import IDLE_ACTOR, DeploymentState, Fit
from dgxmm.lab.ledger import Phase
from dgxmm.lab.replay.priced import PricedPlan
from dgxmm.lab.replay.rows import RunnerRows
from dgxmm.lab.replay.server import Outcome, Owner, SimulatedServer
from dgxmm.time_units import MINUTE_US

__all__ = ["MEASURED", "FitCheck", "IdleSteps"]

MEASURED = WakeLead(kind=LeadKind.MEASURED)  # the histogram's pre-wake lead
FitCheck = Callable[[int, DeploymentState, int], Fit]  # (deployment index, target, at)
_UP = DeploymentState.RUNNING  # the state a way up is checked for, as the deployer asks


class _Replayed(Protocol):
    """What the idle policy reads and calls of its deployment."""

    index: int
    start_us: int
    end_us: int
    now: int
    server: SimulatedServer
    rows: RunnerRows
    fits: FitCheck
    ladder: IdleLadder
    histogram: GapHistogram | None
    priced: PricedPlan | None
    last_arrival: int | None
    shut_door: bool
    pre_wake_at: int | None
    pre_woken: bool
    idle_not_before: int
    idle_paused: bool
    idle_timeouts: int
    held_back_until: int | None
    stopped_by: str | None

    def _count(self, what: str) -> None: ...
    def _go_down(self, now: int, to: Phase, lasting: int) -> Outcome: ...
    def _bring_up(self, at: int, owner: Owner) -> Outcome: ...
    def _not_quiet(self, now: int, state: DeploymentState, *, recent: bool) -> str | None: ...
    def _idle_base(self) -> int: ...
    def _thresholds(self) -> tuple[int | None, int | None, int | None]: ...
    def _pre_wake_lead_us(self) -> int: ...
    def _plan_pre_wake(self) -> None: ...
    def _priced_pre_wake(self) -> int | None: ...
    def _next_priced_check(self) -> int | None: ...


class IdleSteps:
    """The idle policy's part of a replayed deployment (a mixin of ``SimulatedDeployment``)."""

    # What its steps write, typed here (the deployment's __init__ gives their first values).
    pre_wake_at: int | None
    pre_woken: bool
    idle_not_before: int
    idle_paused: bool
    idle_timeouts: int
    held_back_until: int | None
    stopped_by: str | None

    def _idle_base(self: _Replayed) -> int:
        """Return the instant idle time counts from: the latest request, or coming up.

        After a pre-wake, from the request: the histogram keeps it awake until the keep-alive
        window after that request ends, not a window after the pre-wake."""
        last = self.last_arrival
        if last is None:
            return self.server.active_since
        # The priced policy's wake ahead is for the hour's first request, still to come:
        # idle counts from the wake.
        ahead = self.pre_woken and self.priced is None
        return last if ahead else max(last, self.server.active_since)

    def _thresholds(self: _Replayed) -> tuple[int | None, int | None, int | None]:
        """Return the sleep, deepen and stop times in use now (priced, histogram or ladder)."""
        if self.priced is not None:
            window = self.rows.in_awake_window(self.now)
            return self.priced.ladder_at(
                self.now, last_request_us=self.last_arrival, in_awake_window=window
            ).steps_us()
        if self.histogram is None or self.last_arrival is None:
            return self.ladder.steps_us()
        return ladder_in_effect(
            self.ladder,
            self.histogram.windows(self.last_arrival),
            pre_wake_lead_us=self._pre_wake_lead_us(),
            sleep_us=self.server.times.sleep_1.median_us,
            pre_woken=self.pre_woken,
        ).steps_us()

    def _next_idle_check(self: _Replayed) -> int | None:
        if self.idle_paused or self.server.action is not None or self.shut_door:
            return None
        if self.priced is not None:
            return self._next_priced_check()
        if self.server.rest is Phase.STOPPED:
            return None
        if self.server.rest is not Phase.AWAKE and self.pre_wake_at is not None:
            return (
                math.ceil(max(self.pre_wake_at, self.idle_not_before, self.now) / IDLE_TICK_US)
                * IDLE_TICK_US
            )
        sleep, deepen, stop = self._thresholds()
        level = {Phase.AWAKE: 0, Phase.ASLEEP_1: 1, Phase.ASLEEP_2: 2}[self.server.rest]
        # Each step is taken from below its level: a sleep from awake, a deepening from awake
        # or level 1, a stop from any.
        steps = [after for after, most in ((sleep, 0), (deepen, 1), (stop, 2))
                 if after is not None and level <= most]  # fmt: skip
        if not steps:
            return None
        due = self._idle_base() + min(steps)
        if self.held_back_until is not None:
            due = max(due, self.held_back_until)
        # The idle policy is checked on the host's tick: a step due between two is taken at
        # the next, and one that fell due during an action at the first tick after it ended.
        due = max(due, self.now, self.idle_not_before)
        return math.ceil(due / IDLE_TICK_US) * IDLE_TICK_US

    def _next_priced_check(self: _Replayed) -> int | None:
        """Return the priced policy's next check: a step due, a wake ahead, the next hour.

        The rungs change with the hour of the week, so each local hour is checked again."""
        assert self.priced is not None
        sleep, deepen, stop = self._thresholds()
        level = {Phase.AWAKE: 0, Phase.ASLEEP_1: 1, Phase.ASLEEP_2: 2, Phase.STOPPED: 3}[
            self.server.rest
        ]
        found = [self.priced.next_hour(self.now)]
        steps = [after for after, most in ((sleep, 0), (deepen, 1), (stop, 2))
                 if after is not None and level <= most]  # fmt: skip
        if steps:
            due = self._idle_base() + min(steps)
            if self.held_back_until is not None:
                due = max(due, self.held_back_until)
            found.append(due)
        ahead = self._priced_pre_wake()
        if ahead is not None:
            found.append(ahead)
        due = max(min(found), self.now, self.idle_not_before)
        return math.ceil(due / IDLE_TICK_US) * IDLE_TICK_US

    def _priced_pre_wake(self: _Replayed) -> int | None:
        """Return when the priced policy wakes a resting deployment ahead, or None."""
        if self.priced is None or self.server.rest is Phase.AWAKE or self.pre_woken:
            return None
        if self.server.rest is Phase.STOPPED and self.stopped_by != IDLE_ACTOR:
            return None  # what a schedule stopped, the idle policy never starts
        return self.priced.pre_wake_at(self.now, self.server.rest)

    def _soonest_idle_us(self: _Replayed) -> int:
        """Return the shortest idle time after which any step could be due (for a run).

        The histogram's windows change with every gap, so its least is taken: a minute."""
        if self.priced is not None:  # a quiet hour's rungs may be a second
            return IDLE_TICK_US
        steps = [after for after in self.ladder.steps_us() if after is not None]
        if self.histogram is not None:
            steps.append(MINUTE_US)
        return min(steps) if steps else self.end_us - self.start_us + 1

    def _idle_check(self: _Replayed, now: int) -> None:
        self.idle_not_before = now + IDLE_TICK_US  # one check a tick
        if (
            self.pre_wake_at is not None
            and self.server.rest is not Phase.AWAKE
            and now >= self.pre_wake_at
        ):
            self.pre_wake_at = None
            if self.fits(self.index, _UP, now).fits:
                self._count("pre-wakes")
                self.pre_woken = True
                self.idle_paused = self._bring_up(now, Owner.RUNNER) is not Outcome.DONE
            return
        ahead = self._priced_pre_wake()
        if ahead is not None and ahead <= now:
            if self.fits(self.index, _UP, now).fits:
                self._count("pre-wakes")
                self.pre_woken = True
                self.idle_paused = self._bring_up(now, Owner.RUNNER) is not Outcome.DONE
            return
        sleep, deepen, stop = self._thresholds()
        level = 2 if self.server.rest is Phase.ASLEEP_2 else 1
        step = ladder_step(
            IdleLadder(sleep_after_us=sleep, deepen_after_us=deepen, stop_after_us=stop),
            state=self.server.state,
            asleep_level=None if self.server.rest is Phase.AWAKE else level,
            idle_for_us=now - self._idle_base(),
            in_awake_window=self.rows.in_awake_window(now),
        )
        if step is None and self.priced is not None:
            # Not due at this hour's rungs (checked again each hour), or an awake window's.
            if self.rows.in_awake_window(now):
                self.held_back_until = self.rows.window_shuts(now)
            return
        if step is None:
            # Held back by an awake window: checked again when it shuts. (It was checked
            # again every 15 minutes: a step up to 14 minutes late, and a request meanwhile
            # could not bring its own step sooner than that check.)
            self.held_back_until = self.rows.window_shuts(now)
            return
        if self._not_quiet(now, self.server.state, recent=False) is not None:
            return
        self._count(f"idle {step.value}s")
        if step is IdleStep.SLEEP:
            outcome = self._go_down(now, Phase.ASLEEP_1, self.server.sleep_time(Phase.ASLEEP_1))
            if outcome is Outcome.DONE:
                self._plan_pre_wake()
        elif step is IdleStep.DEEPEN:
            outcome = self._go_down(now, Phase.ASLEEP_2, self.server.sleep_time(Phase.ASLEEP_2))
        else:
            self.stopped_by = IDLE_ACTOR
            outcome = self._go_down(now, Phase.STOPPED, self.server.draw(self.server.times.stop))
        # A server asked and failed pauses the idle policy until a person changes it (the
        # idle runner's failure rule); no idle check comes while the action is under way. A
        # sleep that timed out is tried again later, and pauses only the third in a row.
        if outcome is Outcome.TIMED_OUT and self.idle_timeouts + 1 < TIMEOUTS_BEFORE_PAUSE:
            self.idle_timeouts += 1
            action = self.server.action
            until = action.until if action is not None else now
            self.idle_not_before = max(self.idle_not_before, until + TIMED_OUT_RETRY_US)
            return
        self.idle_paused = outcome is not Outcome.DONE
        self.idle_timeouts = 0

    def _pre_wake_lead_us(self: _Replayed) -> int:
        """Return the measured level-1 wake time a pre-wake begins ahead by."""
        return lead_for(MEASURED, level=1, ready_times_us=self.server.ready_us[1]).us

    def _plan_pre_wake(self: _Replayed) -> None:
        if self.histogram is None or self.last_arrival is None or self.pre_woken:
            return
        windows = self.histogram.windows(self.last_arrival)
        # Less the measured wake time (issue 25, point 3), whatever the wake lead of the
        # scheduled wakes: with that lead off it was less nothing, and the pre-wake was late.
        begins = pre_wake_at(self.last_arrival, windows, self._pre_wake_lead_us())
        if begins is None:
            return
        planned = begins // IDLE_TICK_US * IDLE_TICK_US  # taken at the tick at or before it
        # A sleep after a pre-wake's keep-alive ran out, with no request since, plans none:
        # the pre-wake it would plan is past, and would wake it again at once.
        self.pre_wake_at = planned if planned > self.server.action_began() else None
