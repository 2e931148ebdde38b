"""The schedules as given, replayed: the runner's passes and the proxy's holds on a simulated clock.

``replay_schedules`` plays each deployment of a fleet file through dgxmm's own decisions, with
no wall-clock wait, and returns its phases and each request's added wait (``ScheduleReplay``):

- **The runner's pass**, every simulated minute: ``due_slot`` per enabled schedule (its
  ``last_run_day`` and ``deferred_since`` kept as the product's rows keep them); of one
  deployment's due slots the latest acts (``slot_order``) and the others are superseded; a
  sleep or stop goes through ``down_verdict`` and then ``quiet_verdict`` (the requests in
  flight or held at that instant, a ``MetricsSample`` of them for a running server, the last
  arrival, never a knock), a deferral kept as the runner records it; a wake or start goes
  through ``up_verdict`` with the actor of the latest stop. A deployment whose scheduled
  action is under way is left out of the pass (its slot stays due), and one a request is
  bringing up is ``skipped: an action on it is under way``, as the runner's lock makes it.
- **The proxy's hold**: a request that finds its deployment awake is served at once (it holds
  its server for a microsecond, as in ``anchors.py``); one that finds it asleep or stopped
  asks ``refusal_for`` and, unless refused, brings it up and waits; one that finds it going
  down waits for the way down (the door stays shut until the action ends), then the way up;
  every request meanwhile joins that one wake.

What this step leaves out, and says so wherever its figures are shown:

- **The fit between deployments**: every wake and start fits (the runner's and the proxy's
  fit check are not asked yet), so nothing is skipped or refused for the memory of others.
- **Idle policies** (the issue "Idle sleep that deepens, and wakes ahead of demand"): only
  the schedules take a deployment down.
- A schedule never fails: the simulated server always does what it is asked, so no pause.

Schedules are numbered 1, 2, ... in fleet-file order across the whole fleet (the product's
ids: two slots of one deployment at one instant act in that order, the later one last).
Each deployment draws its durations from its ``ServerTimes`` with its own generator, seeded
by ``seed`` and its name, so a replay is the same run after run and one deployment's draws
do not change when another is added.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from enum import Enum

import numpy as np

from dgxmm.decider.days import day_bit
from dgxmm.decider.schedules.rows import ScheduleAction
from dgxmm.decider.schedules.runner import ResultKind
from dgxmm.decider.schedules.slots import (
    LATE_WINDOW_US,
    Slot,
    due_slot,
    local_today,
    parse_time,
    slot_on,
)
from dgxmm.decider.schedules.verdicts import (
    DeployerCall,
    Skip,
    down_verdict,
    quiet_verdict,
    slot_order,
    superseded_reason,
    up_verdict,
)
from dgxmm.fleet import BackendKind, Deployment, DeploymentState, MetricsSample
from dgxmm.jobs import resolve_zone
from dgxmm.lab.durations import Duration, ServerTimes
from dgxmm.lab.fleetfile import LabDeployment, LabFleet, LabSchedule
from dgxmm.lab.ledger import Footprint, Ledger, Phase, Timeline
from dgxmm.lab.trace import Ints, Trace
from dgxmm.proxy.waking import refusal_for
from dgxmm.time_units import DAY_US, MINUTE_US

__all__ = ["ScheduleReplay", "SlotDecision", "replay_schedules"]

_STATE = {
    Phase.AWAKE: DeploymentState.RUNNING,
    Phase.ASLEEP_1: DeploymentState.SLEEPING,
    Phase.ASLEEP_2: DeploymentState.SLEEPING,
    Phase.STOPPED: DeploymentState.STOPPED,
}
_UNDER_WAY = "an action on it is under way"  # the runner's words when its lock is taken


@dataclass(frozen=True, slots=True, kw_only=True)
class SlotDecision:
    """One slot the replayed runner recorded: when, which schedule, and how it ended."""

    at_us: int  # the pass's minute
    schedule: int  # the schedule's number (fleet-file order, from 1)
    action: ScheduleAction
    kind: ResultKind
    reason: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduleReplay:
    """One deployment under its schedules: its phases, its requests and what they met."""

    timeline: Timeline
    arrivals_us: Ints  # its requests in the span, in order
    waits_us: Ints  # per request: its added wait, -1 for one refused
    refused: Mapping[str, int] = field(default_factory=dict)  # by refusal reason
    decisions: tuple[SlotDecision, ...] = ()

    def ledger(self, name: str, footprint: Footprint) -> Ledger:
        """Return the replay's figures in the ledger's words."""
        return Ledger.of(
            name,
            footprint,
            self.timeline,
            self.arrivals_us,
            waits_us=self.waits_us,
            refused=self.refused,
        )


def replay_schedules(
    trace: Trace, fleet: LabFleet, *, start_us: int, end_us: int, seed: int
) -> dict[str, ScheduleReplay]:
    """Replay every deployment of ``fleet`` under its schedules over ``[start_us, end_us)``.

    Each deployment is awake at ``start_us``, as always-on is; see the module for the rules.
    """
    if end_us < start_us:
        raise ValueError(f"end_us: {end_us} is before start_us {start_us}")
    replays: dict[str, ScheduleReplay] = {}
    number = 0
    for deployment in fleet.deployments:
        numbered = tuple(enumerate(deployment.schedules, start=number + 1))
        number += len(deployment.schedules)
        arrivals = trace.arrivals_of(deployment.model)
        arrivals = arrivals[(arrivals >= start_us) & (arrivals < end_us)]
        rng = np.random.default_rng([seed, zlib.crc32(deployment.name.encode())])
        server = _Server(deployment, numbered, rng, start_us=start_us, end_us=end_us)
        replays[deployment.name] = server.replay(arrivals)
    return replays


class _Owner(Enum):
    """Who holds the deployment while its action is under way (the product's lock)."""

    RUNNER = "runner"  # the schedule runner's worker: the pass leaves the deployment out
    REQUEST = "request"  # the proxy's waker: the runner finds the lock taken and skips


@dataclass(slots=True)
class _Row:
    """What the product's schedule row keeps between passes."""

    number: int
    schedule: LabSchedule
    last_run_day: str | None = None
    deferred_since: int | None = None


class _Server:
    """One deployment's simulated server, proxy and runner rows, stepped event by event."""

    def __init__(
        self,
        deployment: LabDeployment,
        schedules: tuple[tuple[int, LabSchedule], ...],
        rng: np.random.Generator,
        *,
        start_us: int,
        end_us: int,
    ) -> None:
        self.deployment = deployment
        self.times: ServerTimes = deployment.durations
        self.rng = rng
        self.start_us = start_us
        self.end_us = end_us
        self.rows = [_Row(number=n, schedule=s) for n, s in schedules if s.enabled]
        self.sleeps_to = Phase.ASLEEP_2 if deployment.sleep_level == 2 else Phase.ASLEEP_1
        self.rest = Phase.AWAKE  # the settled phase: what the deployment's state says
        self.down_until: int | None = None  # a sleep or stop under way (always the runner's)
        self.down_to = Phase.AWAKE
        self.up_until: int | None = None  # a wake or start under way
        self.up_owner = _Owner.RUNNER
        self.stopped_by: str | None = None  # the actor of the latest stop
        self.last_arrival: int | None = None
        self.served_at = -1  # the latest instant requests were served at, and how many
        self.served_n = 0
        self.phases: list[tuple[int, Phase]] = [(start_us, Phase.AWAKE)]
        self.decisions: list[SlotDecision] = []
        self.refused: dict[str, int] = {}
        # A template of the product's row, for refusal_for: only its state, name and
        # wake_on_request (on: the lab's requests may wake what a schedule put down) matter.
        self.template = Deployment(
            id=0, name=deployment.name, model=deployment.model, backend=BackendKind.EXTERNAL,
            command=None, port=None, environment={}, base_url="http://lab.invalid",
            gpus=deployment.gpus, memory_gib_awake=deployment.memory_gib_awake,
            memory_gib_asleep=deployment.memory_gib_asleep, priority=deployment.priority,
            time_zone=deployment.time_zone, startup_timeout_s=0.0,
            state=DeploymentState.RUNNING, state_since=start_us, last_error=None,
            last_request_at=None, created_at=start_us, updated_at=start_us,
            wake_on_request=True, sleep_level=deployment.sleep_level,
        )  # fmt: skip

    # -- the replay ---------------------------------------------------------------------------

    def replay(self, arrivals: Ints) -> ScheduleReplay:
        candidates = self._candidate_passes()
        cursor = 0
        waits = np.zeros(len(arrivals), dtype=np.int64)

        def next_pass(after: int | None) -> int | None:
            nonlocal cursor
            while cursor < len(candidates) and after is not None and candidates[cursor] <= after:
                cursor += 1
            found = candidates[cursor] if cursor < len(candidates) else None
            if after is not None and any(row.deferred_since is not None for row in self.rows):
                # A deferred slot stays due past its 15 minutes: every minute until recorded.
                found = after + MINUTE_US if found is None else min(found, after + MINUTE_US)
            return found if found is not None and found < self.end_us else None

        pass_at = next_pass(None)
        for index, at in enumerate(arrivals.tolist()):
            # A request at a pass's instant is counted first: it is in flight when the pass
            # reads the proxy's counts, so it defers a sleep rather than meeting one.
            while pass_at is not None and pass_at < at:
                self._pass(pass_at)
                pass_at = next_pass(pass_at)
            waits[index] = self._request(at)
        while pass_at is not None:
            self._pass(pass_at)
            pass_at = next_pass(pass_at)
        kept = [(at, phase) for at, phase in self.phases if at < self.end_us]
        return ScheduleReplay(
            timeline=Timeline.joined(self.start_us, self.end_us, kept),
            arrivals_us=arrivals,
            waits_us=waits,
            refused=dict(self.refused),
            decisions=tuple(self.decisions),
        )

    def _candidate_passes(self) -> list[int]:
        """Return the minutes at which some slot is within its 15 minutes.

        At any other minute ``due_slot`` finds nothing unless a slot was deferred (then
        ``next_pass`` visits every minute), so those passes are skipped unasked: a replay of
        weeks asks at a few hundred minutes per schedule rather than at every one.
        """
        first = math.ceil(self.start_us / MINUTE_US) * MINUTE_US
        minutes: set[int] = set()
        for row in self.rows:
            zone = resolve_zone(row.schedule.time_zone)
            time = parse_time(row.schedule.time)
            day = local_today(self.start_us - DAY_US, zone)
            last = local_today(self.end_us, zone)
            while day <= last:
                if row.schedule.days & day_bit(day.weekday()):
                    at = slot_on(day, time, zone).at_us
                    minute = max(math.ceil(at / MINUTE_US) * MINUTE_US, first)
                    while minute <= at + LATE_WINDOW_US and minute < self.end_us:
                        minutes.add(minute)
                        minute += MINUTE_US
                day += timedelta(days=1)
        return sorted(minutes)

    def _settle(self, now: int) -> None:
        """End the actions under way that are over by ``now``."""
        if self.down_until is not None and self.down_until <= now:
            self.rest, self.down_until = self.down_to, None
        if self.up_until is not None and self.up_until <= now:
            self.rest, self.up_until = Phase.AWAKE, None

    # -- the proxy ----------------------------------------------------------------------------

    def _request(self, at: int) -> int:
        """Take one request arriving at ``at``; return its added wait (-1: refused)."""
        self._settle(at)
        self.last_arrival = at
        if self.up_until is not None:
            return self._serve(self.up_until, at)  # one wake for every request held
        if self.down_until is not None:
            # The door is shut until the way down ends; then the waker finds it resting.
            begin, resting = self.down_until, self.down_to
        elif self.rest is Phase.AWAKE:
            return self._serve(at, at)
        else:
            begin, resting = at, self.rest
        refused = refusal_for(replace(self.template, state=_STATE[resting]), self.stopped_by)
        if refused is not None:
            reason = refused.refusal.value
            self.refused[reason] = self.refused.get(reason, 0) + 1
            return -1
        return self._serve(self._bring_up(begin, resting, _Owner.REQUEST), at)

    def _serve(self, served_at: int, arrived_at: int) -> int:
        # Served instants only grow (a held request is served when the wake ends, before any
        # later one), so the latest instant and its count are all a quiet check needs.
        if served_at == self.served_at:
            self.served_n += 1
        else:
            self.served_at, self.served_n = served_at, 1
        return served_at - arrived_at

    def _in_flight(self, now: int) -> int:
        """Return the requests being served at ``now`` (each holds its server 1 us)."""
        return self.served_n if self.served_at == now else 0

    # -- the runner ---------------------------------------------------------------------------

    def _pass(self, now: int) -> None:
        """Run the schedule runner's pass at the planned minute ``now`` for this deployment."""
        self._settle(now)
        due: list[tuple[_Row, Slot]] = []
        for row in self.rows:
            slot = due_slot(
                days=row.schedule.days,
                time=parse_time(row.schedule.time),
                zone=resolve_zone(row.schedule.time_zone),
                now_us=now,
                last_run_day=row.last_run_day,
                deferred_since=row.deferred_since,
            )
            if slot is not None:
                due.append((row, slot))
        if not due:
            return
        if self.down_until is not None or (
            self.up_until is not None and self.up_owner is _Owner.RUNNER
        ):
            return  # its scheduled action is under way: the slots stay due for the next pass
        due.sort(key=lambda found: slot_order(found[0].number, found[1]))
        *earlier, (row, slot) = due
        for other, other_slot in earlier:
            reason = superseded_reason(
                schedule_id=row.number, action=row.schedule.action, time=row.schedule.time
            )
            self._record(now, other, other_slot, ResultKind.SUPERSEDED, reason)
        if self.up_until is not None:  # a request's wake holds the lock
            self._record(now, row, slot, ResultKind.SKIPPED, _UNDER_WAY)
        elif row.schedule.action.quiets:
            self._quiet_down(now, row, slot)
        else:
            self._scheduled_up(now, row, slot)

    def _quiet_down(self, now: int, row: _Row, slot: Slot) -> None:
        state = _STATE[self.rest]
        verdict = down_verdict(
            action=row.schedule.action,
            state=state,
            deferred_since=row.deferred_since,
            slot_at_us=slot.at_us,
            now_us=now,
        )
        if isinstance(verdict, Skip):
            self._record(now, row, slot, ResultKind.SKIPPED, verdict.reason)
            return
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
            last_request_at=self.last_arrival,
            knocked=False,  # the lab's pass and its action take no time: no one can knock
            now_us=now,
        )
        if busy is not None:
            row.deferred_since = verdict.deferred_since
            self.decisions.append(
                SlotDecision(
                    at_us=now,
                    schedule=row.number,
                    action=row.schedule.action,
                    kind=ResultKind.DEFERRED,
                    reason=busy.reason,
                )
            )
            return
        if verdict.call is DeployerCall.SLEEP:
            self._go_down(now, self.sleeps_to, self._sleep_time(self.sleeps_to))
        else:
            self.stopped_by = f"schedule:{row.number}"
            self._go_down(now, Phase.STOPPED, self._draw(self.times.stop))
        self._record(now, row, slot, ResultKind.DONE, None)

    def _scheduled_up(self, now: int, row: _Row, slot: Slot) -> None:
        verdict = up_verdict(
            action=row.schedule.action, state=_STATE[self.rest], stopped_by=self.stopped_by
        )
        if isinstance(verdict, Skip):
            self._record(now, row, slot, ResultKind.SKIPPED, verdict.reason)
            return
        self._bring_up(now, self.rest, _Owner.RUNNER)  # every wake fits: see the module
        self._record(now, row, slot, ResultKind.DONE, None)

    def _record(
        self, now: int, row: _Row, slot: Slot, kind: ResultKind, reason: str | None
    ) -> None:
        """Keep a run that is not a deferral as the runner does: the day is done."""
        row.last_run_day, row.deferred_since = slot.day.isoformat(), None
        self.decisions.append(
            SlotDecision(
                at_us=now, schedule=row.number, action=row.schedule.action, kind=kind, reason=reason
            )
        )

    # -- the simulated server -----------------------------------------------------------------

    def _go_down(self, now: int, resting: Phase, lasting: int) -> None:
        # A stop of a sleeping server keeps its asleep phase until it ends: what it holds
        # is the asleep memory, not the awake one a sleep under way holds.
        if self.rest is Phase.AWAKE:
            self.phases.append((now, Phase.GOING_DOWN))
        self.down_until, self.down_to = now + lasting, resting
        self.phases.append((now + lasting, resting))

    def _bring_up(self, begin: int, resting: Phase, owner: _Owner) -> int:
        """Begin a wake or start at ``begin``; return when it is up."""
        if resting is Phase.STOPPED:
            lasting, phase = self._draw(self.times.start), Phase.STARTING
        else:
            wake = self.times.wake_2 if resting is Phase.ASLEEP_2 else self.times.wake_1
            lasting, phase = self._draw(wake), Phase.WAKING
        self.up_until, self.up_owner = begin + lasting, owner
        self.phases.append((begin, phase))
        self.phases.append((begin + lasting, Phase.AWAKE))
        return begin + lasting

    def _sleep_time(self, resting: Phase) -> int:
        return self._draw(self.times.sleep_2 if resting is Phase.ASLEEP_2 else self.times.sleep_1)

    def _draw(self, duration: Duration) -> int:
        return int(duration.draw(self.rng, 1)[0])
