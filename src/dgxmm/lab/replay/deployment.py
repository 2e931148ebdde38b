"""One deployment in a replay: its simulated server, the proxy's hold and its idle policy.

``SimulatedDeployment`` is stepped by the fleet's loop (``fleet.py``) one event at a time,
in the order of time and, at one instant, of ``Rank``: an action that ends, then a request,
then the runner's pass, then the idle policy's check (the product's runner passes once a
minute, and its idle steps are part of that pass, after the schedules). Its schedule rows,
and which of their slots are due at a pass, are ``rows.py``'s (``RunnerRows``); its idle
policy's checks and steps are ``idle.py``'s (``IdleSteps``).

Every decision is the product's own function: ``due_slot`` / ``due_early``, the verdicts,
``refusal_for``, ``check_fit`` (asked through the fleet, which sees the others' memory at
that instant), ``idle_step`` and ``awake_window``, ``GapHistogram.windows``, ``lead_for``.
What is the lab's own is the server, ``server.py``'s ``SimulatedServer``: how long
each step takes and what it holds meanwhile.

Where the issues are silent, the choices made here:

- A request that finds the deployment going down waits behind the shut door until it is
  down, then brings it up (as the proxy's waker does once the action's lock is free), and
  every request meanwhile joins that one way up (a sleep or stop cannot be called back).
- Idle time counts from the latest request, or from when the deployment last came up if
  that is later: a request held for a way up is in flight until it is served.
- A request at the very instant of a wake slot comes before that minute's pass (``Rank``):
  it brings the deployment up itself, waits the whole wake, and the slot is skipped as
  under way.
- A step an awake window holds back is checked again when the window shuts (the next
  scheduled sleep or stop), or sooner after a request or the end of an action.
- The histogram's pre-wake is made at the pass at or before its instant less the measured
  wake time (``measured`` whatever the deployment's ``wake_lead``, which is for its
  scheduled wakes), as a wake lead is rounded.

The product's bounds (``server.ProductBounds``; issue 42, point 6):

- A request held longer than the proxy's ``max_hold_s`` is answered 503 ``hold_timeout``
  then (its wait is -1 and it counts among the refused), and the way up goes on for the
  others. A way up that fails just as the hold runs out is the hold's: its timer began
  first.
- An action past its timeout ends as the server says (``Outcome``), and what failed is
  paused as the product pauses it, for the rest of the span (no person changes a setting
  in a replay): a failed idle step pauses the idle policy (``idle_paused``; an idle sleep
  that timed out is tried again 15 minutes later, and only the third in a row pauses), pre-wakes
  included; a failed scheduled sleep or wake pauses the deployment's sleep and wake
  schedules (``pauses.PAUSING``), and its slot is recorded ``failed``. Requests held for
  a sleep that timed out are forwarded then (the deployment is running); those for a way
  up that failed are refused ``wake_failed``, and later ones ``deployment_failed``.
"""

from __future__ import annotations

import bisect
from enum import IntEnum

import numpy as np

from dgxmm.decider.idle import GapHistogram, IdleLadder
from dgxmm.decider.schedules.lead import LeadKind, WakeLead, lead_for
from dgxmm.decider.schedules.pauses import PAUSING
from dgxmm.decider.schedules.runner import ResultKind
from dgxmm.decider.schedules.slots import Slot
from dgxmm.decider.schedules.verdicts import (
    DeployerCall,
    Skip,
    down_verdict,
    quiet_verdict,
    superseded_reason,
    up_verdict,
)
from dgxmm.fleet import Deployment, DeploymentState, MetricsSample
from dgxmm.lab.fleetfile import LabDeployment, LabSchedule
from dgxmm.lab.ledger import Phase
from dgxmm.lab.replay.idle import FitCheck, IdleSteps
from dgxmm.lab.replay.priced import PricedPlan
from dgxmm.lab.replay.rows import RunnerRows, ScheduleRow, SlotDecision
from dgxmm.lab.replay.server import Outcome, Owner, ProductBounds, SimulatedServer
from dgxmm.lab.traces.trace import Ints
from dgxmm.proxy import Refusal
from dgxmm.proxy.waking import refusal_for
from dgxmm.time_units import SECOND_US

__all__ = ["Rank", "SimulatedDeployment"]

_UNDER_WAY = "an action on it is under way"  # the runner's words when its lock is taken
_UP = DeploymentState.RUNNING  # the state a way up is checked for, as the deployer asks


class Rank(IntEnum):
    """The order of a deployment's events at one instant."""

    END = 0  # an action under way ends
    ARRIVAL = 1  # a request: in flight when the pass at its instant reads the counts
    PASS = 2  # the schedule runner's pass
    IDLE = 3  # the idle policy's check, in the same pass after the schedules


class SimulatedDeployment(IdleSteps):
    """One deployment's server, proxy hold, schedule rows and idle policy; see the module."""

    def __init__(
        self,
        deployment: LabDeployment,
        *,
        index: int,
        schedules: tuple[tuple[int, LabSchedule], ...],
        arrivals: Ints,
        rng: np.random.Generator,
        start_us: int,
        end_us: int,
        ladder: IdleLadder,
        histogram: bool,
        priced: PricedPlan | None,
        wake_lead: WakeLead,
        fits: FitCheck,
        bounds: ProductBounds,
    ) -> None:
        self.deployment = deployment
        self.index = index
        self.bounds = bounds
        self.server = SimulatedServer(
            deployment, index=index, rng=rng, start_us=start_us, bounds=bounds
        )
        self.start_us, self.end_us = start_us, end_us
        self.arrivals = arrivals.tolist()
        self.arrivals_np = np.asarray(arrivals, dtype=np.int64)
        self._long_gaps: list[int] | None = None  # made on first need (see _arrivals)
        self.cursor = 0
        self.waits = np.zeros(len(self.arrivals), dtype=np.int64)
        self.ladder = ladder
        self.histogram = GapHistogram() if histogram else None
        self.priced = priced
        self.wake_lead = wake_lead
        self.fits = fits
        self.rows = RunnerRows(
            schedules, start_us=start_us, end_us=end_us, leads=wake_lead.kind is not LeadKind.OFF
        )
        self.sleeps_to = Phase.ASLEEP_2 if deployment.sleep_level == 2 else Phase.ASLEEP_1
        self.shut_door = False  # a request waits for the way down to end, then brings it up
        self.held: list[int] = []  # requests waiting for the way up, by index
        self.stopped_by: str | None = None
        self.last_arrival: int | None = None
        self.served_at, self.served_n = -1, 0
        self.pre_wake_at: int | None = None  # the histogram's pre-wake, when one is planned
        self.pre_woken = False  # woken by the histogram since the last request
        self.idle_not_before = start_us
        self.idle_paused = False  # an idle step failed: the product pauses the policy
        self.idle_timeouts = 0  # idle sleeps timed out in a row (the third pauses)
        self.now = start_us  # the instant of the event it took last
        self.held_back_until: int | None = None  # a step the awake window holds: until it shuts
        self.refused: dict[str, int] = {}
        self.steps: dict[str, int] = {}  # idle steps, pre-wakes, early wakes: by name

    # -- what the fleet asks ------------------------------------------------------------------

    def as_product(self, at: int) -> Deployment:
        """Return the product's row of it at ``at``, as the fit check reads it."""
        return self.server.as_product(at)

    def next_event(self) -> tuple[int, Rank] | None:
        """Return the instant and rank of its next event, or None when it has none left."""
        found: list[tuple[int, Rank]] = []
        if self.server.action is not None:
            found.append((self.server.action.until, Rank.END))
        if self.cursor < len(self.arrivals):
            found.append((self.arrivals[self.cursor], Rank.ARRIVAL))
        coming = self.rows.next_pass()
        if coming is not None:
            found.append((coming, Rank.PASS))
        idle = self._next_idle_check()
        if idle is not None:
            found.append((idle, Rank.IDLE))
        found = [event for event in found if event[0] < self.end_us]
        return min(found) if found else None

    def handle(self, at: int, rank: Rank) -> None:
        """Take its event at ``at`` (the one ``next_event`` gave)."""
        self.now = at
        if rank is Rank.END:
            self._end(at)
        elif rank is Rank.ARRIVAL:
            self._arrivals(at)
        elif rank is Rank.PASS:
            self._pass(at)
        else:
            self._idle_check(at)

    @property
    def decisions(self) -> list[SlotDecision]:
        """Return the runs its schedules recorded, in order."""
        return self.rows.decisions

    def finish(self) -> None:
        """Give the requests still held at the span's end the wait their way up will take.

        The way up ends after the span (its end is not replayed), but it began inside it:
        the requests met a cold model and wait until it is up, as ``anchors.py`` counts them.
        """
        action = self.server.action
        if action is not None and not action.up and self.shut_door:
            self._end(action.until)  # the waker's way up, once the way down is over
            action = self.server.action
        if action is not None and action.up:
            held, self.held = self.held, []
            self._release(action.until, held, _failed_up(action.outcome))

    def phases_until_end(self) -> list[tuple[int, Phase]]:
        """Return its phases that begin inside the span."""
        return [(at, phase) for at, phase in self.server.phases if at < self.end_us]

    # -- the proxy ----------------------------------------------------------------------------

    def _arrivals(self, first: int) -> None:
        """Take the request at ``first``, and every later one it serves at once."""
        self._request(first)
        if self.server.rest is not Phase.AWAKE or self.server.action is not None:
            return
        # Served at once changes nothing another deployment sees, nor this one's next
        # action: take them in a run up to its next pass, or until an idle step could be due.
        coming = self.rows.next_pass()
        limit = self.end_us if coming is None else coming
        begin = self.cursor
        stop = bisect.bisect_left(self.arrivals, limit, lo=begin)
        if self._long_gaps is None:
            # The requests that end a gap an idle step could be due in: a run stops at one.
            gaps = np.diff(self.arrivals_np)
            self._long_gaps = (np.flatnonzero(gaps >= self._soonest_idle_us()) + 1).tolist()
        after = bisect.bisect_left(self._long_gaps, begin)
        if after < len(self._long_gaps):
            stop = min(stop, self._long_gaps[after])
        if stop <= begin:
            return
        # The run at once, as _request would take each: served on arrival, idle counted afresh.
        run = self.arrivals_np[begin:stop]
        if self.histogram is not None:
            self.histogram.add_many(run - self.arrivals_np[begin - 1 : stop - 1], run)
        last = self.arrivals[stop - 1]
        same = stop - bisect.bisect_left(self.arrivals, last, lo=begin, hi=stop)
        self.served_n = same + (self.served_n if self.served_at == last else 0)
        self.served_at = last
        self.last_arrival = last
        self.cursor = stop
        self.pre_woken = False
        self.pre_wake_at = None
        self.held_back_until = None

    def _request(self, at: int) -> None:
        index = self.cursor
        self.cursor += 1
        if self.histogram is not None and self.last_arrival is not None:
            self.histogram.add(at - self.last_arrival, at)
        self.last_arrival = at
        self.pre_woken = False
        self.pre_wake_at = None
        self.held_back_until = None  # idle counts afresh: a step may be due inside the window
        if self.server.action is not None:
            self.held.append(index)  # one way up for every request held
            if not self.server.action.up:
                self.shut_door = True  # the waker brings it up once it is down
            return
        if self.server.rest is Phase.AWAKE:
            self._serve(at, [index])
            return
        self.held.append(index)
        self._request_up(at)

    def _request_up(self, at: int) -> None:
        """Bring it up for the held requests, as the proxy's waker: refused, or on its way."""
        refused = refusal_for(self.server.row(), self.stopped_by)
        reason = refused.refusal if refused is not None else None
        if reason is None and not self.fits(self.index, _UP, at).fits:
            reason = Refusal.DOES_NOT_FIT  # a request never evicts
        if reason is not None:
            held, self.held = self.held, []
            self._release(at, held, reason)
            return
        self._bring_up(at, Owner.REQUEST)

    def _release(self, at: int, indexes: list[int], refusal: Refusal | None = None) -> None:
        """Forward the held requests at ``at``, or refuse them with ``refusal``.

        The proxy's ``max_hold_s`` comes first: a request held longer is refused
        ``hold_timeout`` (at its bound; the wait it would have had is no wait of its).
        """
        bound = self.bounds.max_hold_us
        forwarded: list[int] = []
        for index in indexes:
            waited = at - self.arrivals[index]
            if waited > bound or (refusal is not None and waited == bound):
                self._refuse(index, Refusal.HOLD_TIMEOUT)
            elif refusal is not None:
                self._refuse(index, refusal)
            else:
                forwarded.append(index)
        if forwarded:
            self._serve(at, forwarded)

    def _refuse(self, index: int, refusal: Refusal) -> None:
        self.waits[index] = -1
        self.refused[refusal.value] = self.refused.get(refusal.value, 0) + 1

    def _serve(self, at: int, indexes: list[int]) -> None:
        # Served instants only grow, so the latest and its count are all a quiet check needs.
        if at == self.served_at:
            self.served_n += len(indexes)
        else:
            self.served_at, self.served_n = at, len(indexes)
        for index in indexes:
            self.waits[index] = at - self.arrivals[index]

    def _in_flight(self, now: int) -> int:
        """Return the requests under way or held at ``now`` (each holds its server 1 us)."""
        return len(self.held) + (self.served_n if self.served_at == now else 0)

    # -- the server ---------------------------------------------------------------------------

    def _end(self, at: int) -> None:
        action = self.server.end(at)
        self.held_back_until = None  # another level: the window may allow its step
        if action.up:
            held, self.held = self.held, []
            self._release(at, held, _failed_up(action.outcome))
            return
        if action.outcome is not Outcome.DONE and self.shut_door:
            # The door opens on a deployment recorded running (a sleep that timed out): the
            # waker finds it up and the held requests are forwarded; or on a failed one.
            self.shut_door = False
            held, self.held = self.held, []
            failed = action.outcome is Outcome.FAILED
            self._release(at, held, Refusal.FAILED if failed else None)
            return
        if self.shut_door:
            self.shut_door = False
            self._request_up(at)

    def _go_down(self, now: int, to: Phase, lasting: int) -> Outcome:
        """Begin a way down; return how the product will end it (a sleep may time out)."""
        self.server.go_down(now, to, lasting)
        self.pre_woken = False
        outcome = self.server.action.outcome if self.server.action is not None else Outcome.DONE
        if outcome is Outcome.TIMED_OUT:
            self._count("sleeps timed out")
        elif outcome is Outcome.FAILED:
            self._count("deepenings failed")
        return outcome

    def _bring_up(self, at: int, owner: Owner) -> Outcome:
        """Begin a start or wake; return how it will end (its gate may time out)."""
        self.server.bring_up(at, owner)
        outcome = self.server.action.outcome if self.server.action is not None else Outcome.DONE
        if outcome is Outcome.FAILED:
            self._count("ways up failed")
        return outcome

    # -- the runner's pass ---------------------------------------------------------------------

    def _pass(self, now: int) -> None:
        """Run the schedule runner's pass at the planned minute ``now`` for this deployment."""
        lead = None if self.wake_lead.kind is LeadKind.OFF else self._lead_us()
        due = self.rows.due_at(now, lead_us=lead)
        if not due:
            return
        if self.server.action is not None and self.server.action.owner is Owner.RUNNER:
            return  # its scheduled action is under way: the slots stay due for the next pass
        *earlier, (row, slot) = due
        for other, other_slot in earlier:
            reason = superseded_reason(
                schedule_id=row.number, action=row.schedule.action, time=row.schedule.time
            )
            self.rows.record(now, other, other_slot, ResultKind.SUPERSEDED, reason)
        if self.server.action is not None or self.shut_door:  # a request's wake holds the lock
            self.rows.record(now, row, slot, ResultKind.SKIPPED, _UNDER_WAY)
        elif row.schedule.action.quiets:
            self._quiet_down(now, row, slot)
        else:
            self._scheduled_up(now, row, slot)

    def _lead_us(self) -> int:
        level = self.server.up_level
        return lead_for(self.wake_lead, level=level, ready_times_us=self.server.ready_us[level]).us

    def _quiet_down(self, now: int, row: ScheduleRow, slot: Slot) -> None:
        state = self.server.state
        verdict = down_verdict(
            action=row.schedule.action, state=state, deferred_since=row.deferred_since,
            slot_at_us=slot.at_us, now_us=now,
        )  # fmt: skip
        if isinstance(verdict, Skip):
            self.rows.record(now, row, slot, ResultKind.SKIPPED, verdict.reason)
            return
        busy = self._not_quiet(now, state, recent=True)
        if busy is not None:
            self.rows.defer(now, row, verdict.deferred_since, busy)
            return
        if verdict.call is DeployerCall.SLEEP:
            outcome = self._go_down(now, self.sleeps_to, self.server.sleep_time(self.sleeps_to))
        else:
            self.stopped_by = f"schedule:{row.number}"
            outcome = self._go_down(now, Phase.STOPPED, self.server.draw(self.server.times.stop))
        self._record_run(now, row, slot, outcome)

    def _record_run(self, now: int, row: ScheduleRow, slot: Slot, outcome: Outcome) -> None:
        """Record a slot's run; one that failed pauses the sleep and wake schedules.

        Recorded at the pass, as every run here, though the product learns of a timeout at
        its end: no other pass acts on the deployment while its action is under way.
        """
        if outcome is Outcome.DONE:
            self.rows.record(now, row, slot, ResultKind.DONE, None)
            return
        bound = (
            f"{self.bounds.startup_timeout_us / SECOND_US:g} s (startup_timeout_s)"
            if not row.schedule.action.quiets
            else f"{self.bounds.sleep_timeout_us / SECOND_US:g} s (sleep_timeout_s)"
        )
        self.rows.record(now, row, slot, ResultKind.FAILED, f"it timed out after {bound}")
        if row.schedule.action in PAUSING:
            self.rows.pause(PAUSING)

    def _not_quiet(self, now: int, state: DeploymentState, *, recent: bool) -> str | None:
        held = self._in_flight(now)
        sample = None
        if state is DeploymentState.RUNNING:
            # The fresh sample a running server would give: what it serves at that instant.
            sample = MetricsSample(
                taken_at_us=now, requests_running=held, requests_waiting=0,
                requests_finished_total=0, latency_sum_s=0.0, latency_count=0, sleep_state=None,
            )  # fmt: skip
        busy = quiet_verdict(
            held_through_proxy=held,
            sample=sample,
            # An idle step's own rule is how long nothing came: the 5 minutes of a scheduled
            # sleep's check would hold back a ladder that sleeps after one.
            last_request_at=self.last_arrival if recent else None,
            knocked=False,  # the lab's check and its action take no time: no one can knock
            now_us=now,
        )
        return None if busy is None else busy.reason

    def _scheduled_up(self, now: int, row: ScheduleRow, slot: Slot) -> None:
        verdict = up_verdict(
            action=row.schedule.action, state=self.server.state, stopped_by=self.stopped_by
        )
        if isinstance(verdict, Skip):
            self.rows.record(now, row, slot, ResultKind.SKIPPED, verdict.reason)
            return
        fit = self.fits(self.index, _UP, now)
        if not fit.fits:  # the runner never evicts either
            self.rows.record(now, row, slot, ResultKind.SKIPPED, f"it does not fit: {fit.reason}")
            return
        if slot.at_us > now:
            self._count("wakes begun early")
        self._record_run(now, row, slot, self._bring_up(now, Owner.RUNNER))

    def _count(self, what: str) -> None:
        self.steps[what] = self.steps.get(what, 0) + 1


def _failed_up(outcome: Outcome) -> Refusal | None:
    """Return the refusal of the requests held for a way up that ended so (None: forwarded)."""
    return Refusal.WAKE_FAILED if outcome is Outcome.FAILED else None
