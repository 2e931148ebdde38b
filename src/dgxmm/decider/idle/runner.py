"""The idle policies at work: a pulse every second that only decides, and actions beside it.

The host calls ``IdleRunner.pulse(now)`` every second on the instance that holds the ticker's
lease (``Host(pulses=...)``). A pulse looks at the deployments that have an idle policy (a
ladder with a step, the histogram, or priced) and their switched-on schedules, feeds each histogram
the requests the proxy took since the last pulse, and hands each deployment whose step is due
to a bounded pool of workers. It never waits for a model server, so a slow server delays only
its own deployment.

What a pulse looks at is read again only when it changed (``watched.py``). A deployment
without an idle policy is not stepped; one that gets a policy starts with no histogram (it
gathers from then on) and no pending retry, its idle time counting from when it last came up.

A step takes the path a scheduled sleep takes (``schedules/runner.py``):

- **The lock**, without waiting: a deployment a person, a schedule or the proxy's waker is
  acting on is left alone, and the next pulse looks again.
- **The quiet check with the door shut**: requests that arrive meanwhile are held by the
  proxy, never sent to a server going down, and knock. A request newer than the idle time
  the pulse counted from, one the fresh sample's counters saw, one running or waiting on the
  server, one under way through the proxy or one that knocked: the step waits. Running,
  waiting, held or knocking requests defer it (a ``deferred`` event with actor ``idle``; tried
  again a minute later); a request that came since means the deployment is not idle at all.
- **The failure rules**: a state that changed, or a refusal by the deployer (a deepening's
  wake that does not fit), is skipped and tried again after ``REFUSED_RETRY_US``. A model
  server that was asked and failed pauses the deployment's idle policy (``notices.py``)
  until a person changes its idle settings; a sleep that timed out (still running) is tried
  again after ``TIMED_OUT_RETRY_US``, and only the third in a row pauses (issue 42).
- **Events with actor ``idle``**, written by the deployer with its audit rows.

Schedules bound the ladder (``awake_window``, ``idle_step``). The histogram policy
(``GapHistogram``) learns from the proxy's requests only, in memory: after a restart a
deployment steps by its ladder until it has gathered gaps again. The priced policy's rungs
and its wake ahead come from ``pricing.py``.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from enum import StrEnum

from dgxmm.decider.action_pool import ActionPool
from dgxmm.decider.acts import PolicyAct
from dgxmm.decider.idle.histogram import (
    GapHistogram,
    HistogramWindows,
    ladder_in_effect,
    pre_wake_at,
)
from dgxmm.decider.idle.ladder import (
    IDLE_TICK_US,
    TIMED_OUT_RETRY_US,
    TIMEOUTS_BEFORE_PAUSE,
    IdleStep,
    ScheduleSlots,
    awake_window,
)
from dgxmm.decider.idle.ladder import idle_step as step_of
from dgxmm.decider.idle.notices import pause_idle, record_forecast, tell_of_room
from dgxmm.decider.idle.priced import RECENT_US, rate_before
from dgxmm.decider.idle.pricing import Pricing
from dgxmm.decider.idle.watched import Watched, Watcher
from dgxmm.decider.schedules.lead import MEASURED_WAKES, lead_for
from dgxmm.decider.schedules.rows import ScheduleRows
from dgxmm.decider.schedules.verdicts import quiet_verdict
from dgxmm.errors import (
    BackendError,
    Conflict,
    DgxmmError,
    DoesNotFit,
    NotFound,
    ServerGone,
    TimedOut,
)
from dgxmm.fleet import (
    IDLE_ACTOR,
    Deployment,
    DeploymentState,
    Door,
    EventAction,
    EventOutcome,
    Fleet,
    IdlePolicy,
    LeadKind,
    WakeLead,
)
from dgxmm.store import Store
from dgxmm.time_units import MINUTE_US, SECOND_US

__all__ = ["PULSE_SECONDS", "IdleOutcome", "IdleRunner"]

PULSE_SECONDS = IDLE_TICK_US / SECOND_US  # the host calls the pulse this often
DEFER_RETRY_US = MINUTE_US  # a step its quiet check deferred is tried again after this
REFUSED_RETRY_US = 15 * MINUTE_US  # one the deployer refused (it does not fit, a state)
# How long a level-1 sleep takes, for the histogram's "can a pre-wake follow the sleep":
# a typical figure (vLLM's take seconds: weights copied to CPU memory). The deployer's
# measured sleeps (events' ``took``) are the priced policy's; the histogram keeps this one.
TYPICAL_SLEEP_US = 10 * SECOND_US
ACTION_WORKERS = 8
_MEASURED = WakeLead(kind=LeadKind.MEASURED)
S = DeploymentState


class IdleOutcome(StrEnum):
    """How an idle step handed to a worker ended."""

    DONE = "done"
    DEFERRED = "deferred"  # not quiet: tried again after DEFER_RETRY_US
    NOT_IDLE = "not idle"  # a request came since the pulse decided; nothing recorded
    SKIPPED = "skipped"  # the state changed, the lock was taken, or the deployer refused
    TIMED_OUT = "timed out"  # a sleep the server did not finish in time: tried again later
    FAILED = "failed"  # the model server failed: the idle policy is paused
    FORECAST = "forecast"  # forecast-only mode: recorded, not taken


class _Kind(StrEnum):
    SLEEP = "sleep"
    DEEPEN = "deepen"
    STOP = "stop"
    PRE_WAKE = "pre-wake"


_ACT = {
    _Kind.SLEEP: PolicyAct.IDLE_SLEEP,
    _Kind.DEEPEN: PolicyAct.IDLE_DEEPEN,
    _Kind.STOP: PolicyAct.IDLE_STOP,
    _Kind.PRE_WAKE: PolicyAct.PRE_WAKE,
}
_KIND = {IdleStep.SLEEP: _Kind.SLEEP, IdleStep.DEEPEN: _Kind.DEEPEN, IdleStep.STOP: _Kind.STOP}


@dataclass(slots=True)
class _Known:
    """What the runner keeps of a deployment between pulses, in memory."""

    histogram: GapHistogram | None = None
    last_arrival: int | None = None  # the latest request through the proxy
    came_up: int | None = None  # when it last came up, as a pulse saw it running
    pre_woken: bool = False  # woken ahead by the histogram, no request since
    pre_wake_at: int | None = None
    not_before: int = 0  # no step before then (a deferral's or a refusal's retry)
    lead: tuple[int, int] | None = None  # (read at, the measured level-1 wake time)
    forecast: tuple[int, _Kind] | None = None  # the last would-be step recorded (idle since)
    timeouts: int = 0  # idle sleeps timed out in a row (the third pauses)
    recent: deque[int] = field(default_factory=deque)  # arrivals of the last RECENT_US


@dataclass(frozen=True, slots=True, kw_only=True)
class _Decision:
    kind: _Kind
    idle_since: int  # the instant idle time counted from; a request after it: not idle


@dataclass(slots=True)
class _Pulse:
    now: int
    slots: dict[int, list[ScheduleSlots]] = field(default_factory=dict)


class IdleRunner:
    """Each deployment's idle ladder and histogram policy; see the module docstring."""

    def __init__(
        self, store: Store, fleet: Fleet, rows: ScheduleRows, *, workers: int = ACTION_WORKERS
    ) -> None:
        self._store = store
        self._fleet = fleet
        self._rows = rows
        self._actions: ActionPool[IdleOutcome] = ActionPool(workers, "idle-action")
        self._guard = threading.Lock()  # over what the runner keeps of each deployment
        self._known: dict[int, _Known] = {}
        self._watcher = Watcher(store, fleet, rows)
        self._watched: Watched | None = None  # the read the pulse last looked at
        self._pricing = Pricing(store, fleet)  # the priced policy's inputs, kept a while

    def pulse(self, now: int, *, forecast_only: bool = False) -> list[Future[IdleOutcome]]:
        """Decide every deployment's step at ``now``; hand each to a worker; do not wait.

        ``forecast_only``: record each step as a ``forecast`` event instead of taking it
        (once per step and idle time: a deployment left up steps again only after a request).
        """
        arrivals = self._fleet.activity.take_arrivals()
        watched = self._watcher.current()
        pulse = _Pulse(now=now, slots=watched.slots)
        started = []
        with self._guard:
            if watched is not self._watched:  # read again: an id used again keeps nothing
                for renewed in watched.renewed:
                    self._known.pop(renewed, None)
                    self._pricing.forget(renewed)
                self._watched = watched
            for gone in self._known.keys() - watched.ids:  # also what a step noted since
                del self._known[gone]
        for deployment in watched.deployments:
            with self._guard:
                known = self._known.get(deployment.id)
                if known is None:  # a policy switched on: when it came up, as last read
                    known = self._known[deployment.id] = _Known(
                        came_up=watched.came_up.get(deployment.id)
                    )
                self._learn(deployment, known, arrivals.get(deployment.id, ()))
                if self._actions.is_acting(deployment.id):
                    continue
                decision = self._decide(deployment, known, pulse)
                if decision is None:
                    continue
                if forecast_only:
                    seen = (decision.idle_since, decision.kind)
                    if decision.kind is _Kind.PRE_WAKE or known.forecast == seen:
                        continue
                    known.forecast = seen
                    future = self._actions.submit(
                        deployment.id, self._forecast, deployment, decision, now
                    )
                else:
                    future = self._actions.submit(
                        deployment.id, self._work, deployment.id, decision, now
                    )
            if future is not None:
                started.append(future)
        return started

    def drain(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the steps under way; tell whether all finished."""
        return self._actions.drain(timeout_s)

    def close(self) -> None:
        """Take no more steps; those under way finish on their threads."""
        self._actions.close()

    def windows_of(self, deployment_id: int, now: int) -> HistogramWindows | None:
        """Return the histogram's windows for a deployment now (None: not representative)."""
        with self._guard:
            known = self._known.get(deployment_id)
            if known is None or known.histogram is None:
                return None
            return known.histogram.windows(now)

    # -- deciding (under the guard) ---------------------------------------------------------------

    def _learn(self, deployment: Deployment, known: _Known, arrivals: Iterable[int]) -> None:
        """Take the proxy's new arrivals into the histogram; note when it came up."""
        histogram = deployment.idle_policy is IdlePolicy.HISTOGRAM
        if histogram and known.histogram is None:
            known.histogram = GapHistogram()
        for at in arrivals:
            if histogram and known.histogram is not None and known.last_arrival is not None:
                known.histogram.add(at - known.last_arrival, at)
            known.last_arrival = at if known.last_arrival is None else max(known.last_arrival, at)
            known.recent.append(at)
            known.pre_woken = False  # a request came: the next sleep may plan a pre-wake
        while known.recent and known.recent[0] < (known.last_arrival or 0) - RECENT_US:
            known.recent.popleft()
        if deployment.state is S.RUNNING and (
            known.came_up is None or known.came_up < deployment.state_since
        ):
            known.came_up = deployment.state_since

    def _decide(self, deployment: Deployment, known: _Known, pulse: _Pulse) -> _Decision | None:
        now = pulse.now
        histogram = deployment.idle_policy is IdlePolicy.HISTOGRAM
        priced = deployment.idle_policy is IdlePolicy.PRICED
        if deployment.idle_paused is not None or now < known.not_before:
            return None
        if not (histogram or priced) and deployment.idle.is_off:
            return None
        seen = [deployment.last_request_at, known.last_arrival,
                self._fleet.activity.last_request_at(deployment.id)]  # fmt: skip
        last = max((at for at in seen if at is not None), default=None)
        planned = known.pre_wake_at
        if (
            deployment.state is S.SLEEPING
            and planned is not None
            and now >= planned
            and (last is None or last < planned)
        ):
            return _Decision(kind=_Kind.PRE_WAKE, idle_since=last or 0)
        if priced and not known.pre_woken and self._pricing.wakes_ahead(deployment, now):
            return _Decision(kind=_Kind.PRE_WAKE, idle_since=last or 0)
        # Idle counts from the latest request, or from when it came up if that is later;
        # after a histogram's pre-wake from the request, so the keep-alive runs from it, not
        # the wake (the priced policy's wakes ahead of a request still to come: from the wake).
        if last is not None and known.pre_woken and not priced:
            since = last
        else:
            since = max(last or 0, known.came_up or 0) or deployment.state_since
        window = awake_window(pulse.slots.get(deployment.id, ()), now)
        ladder = deployment.idle
        if priced:
            recent = rate_before(known.recent, last)  # the rate before it went idle
            ladder = self._pricing.ladder(deployment, now, in_awake_window=window,
                                          recent_per_hour=recent)  # fmt: skip
        if histogram and known.histogram is not None and last is not None:
            ladder = ladder_in_effect(
                ladder,
                known.histogram.windows(last),
                pre_wake_lead_us=self._wake_time(deployment.id, known, now),
                sleep_us=TYPICAL_SLEEP_US,
                pre_woken=known.pre_woken,
            )
        step = step_of(
            ladder,
            state=deployment.state,
            asleep_level=deployment.sleeps_at if deployment.state is S.SLEEPING else None,
            idle_for_us=now - since,
            in_awake_window=window,
        )
        return None if step is None else _Decision(kind=_KIND[step], idle_since=since)

    def _wake_time(self, deployment_id: int, known: _Known, now: int) -> int:
        """Return the measured level-1 wake time (read again at most once a minute)."""
        if known.lead is None or now - known.lead[0] >= MINUTE_US:
            times = self._fleet.events.ready_times(deployment_id, 1, MEASURED_WAKES)
            known.lead = (now, lead_for(_MEASURED, level=1, ready_times_us=times).us)
        return known.lead[1]

    def _forecast(self, deployment: Deployment, decision: _Decision, now: int) -> IdleOutcome:
        """Record what the step would have done (forecast-only mode); do nothing else."""
        action = {_Kind.STOP: EventAction.STOP, _Kind.PRE_WAKE: EventAction.WAKE}.get(
            decision.kind, EventAction.SLEEP
        )
        try:
            record_forecast(self._fleet, deployment, action, decision.kind.value,
                            idle_for_us=now - decision.idle_since)  # fmt: skip
        except NotFound:
            return IdleOutcome.SKIPPED
        return IdleOutcome.FORECAST

    # -- acting (on a worker) -----------------------------------------------------------------

    def _work(self, deployment_id: int, decision: _Decision, now: int) -> IdleOutcome:
        try:
            return self._step(deployment_id, decision, now)
        except NotFound:
            return IdleOutcome.SKIPPED  # removed since the pulse read it

    def _step(self, deployment_id: int, decision: _Decision, now: int) -> IdleOutcome:
        fleet = self._fleet
        lock = fleet.deployer.lock(deployment_id)
        if not lock.acquire(blocking=False):  # someone acts on it: never queue behind them
            return IdleOutcome.SKIPPED
        try:
            deployment = fleet.deployments.get(deployment_id)
            if not _applies(decision.kind, deployment):
                return IdleOutcome.SKIPPED
            if decision.kind is _Kind.PRE_WAKE:
                return self._act(deployment, decision, now)
            with fleet.activity.closing(deployment_id) as door:
                try:
                    busy = self._busy(deployment, decision, door, now)
                except ServerGone:  # the metrics marked it failed: nothing left to step
                    return IdleOutcome.FAILED
                if busy is IdleOutcome.NOT_IDLE:
                    return busy
                if busy is not None:
                    self._defer(deployment, decision, busy, now)
                    return IdleOutcome.DEFERRED
                return self._act(deployment, decision, now)
        finally:
            lock.release()

    def _busy(
        self, deployment: Deployment, decision: _Decision, door: Door, now: int
    ) -> IdleOutcome | str | None:
        """Return NOT_IDLE, why the deployment is not quiet (text), or None when it is."""
        fleet = self._fleet
        sample = None
        if deployment.state is S.RUNNING:
            try:
                sample = fleet.metrics.sample_now(deployment.id)
            except ServerGone:
                raise
            except (BackendError, Conflict) as error:
                return f"its metrics could not be read: {error}"
        verdict = quiet_verdict(
            held_through_proxy=fleet.activity.in_flight(deployment.id),
            sample=sample,
            last_request_at=None,  # the step's own rule is how long nothing came: read below
            knocked=door.knocked,  # read after the sample, which may take a while
            now_us=now,
        )
        if verdict is not None:
            return verdict.reason
        seen = (fleet.metrics.last_request_at(deployment.id),
                fleet.activity.last_request_at(deployment.id))  # fmt: skip
        latest = max((at for at in seen if at is not None), default=None)
        if latest is not None and latest > decision.idle_since:
            return IdleOutcome.NOT_IDLE  # a request came since, or the sample's counters saw one
        return None

    def _defer(self, deployment: Deployment, decision: _Decision, busy: str, now: int) -> None:
        action = EventAction.STOP if decision.kind is _Kind.STOP else EventAction.SLEEP
        self._fleet.events.record(
            deployment.id, action, actor=IDLE_ACTOR, outcome=EventOutcome.DEFERRED,
            detail=f"idle {decision.kind.value}: {busy}; tried again in a minute",
        )  # fmt: skip
        self._later(deployment.id, now + DEFER_RETRY_US)

    def _act(self, deployment: Deployment, decision: _Decision, now: int) -> IdleOutcome:
        deployer = self._fleet.deployer
        kind = decision.kind
        try:
            if kind is _Kind.SLEEP:
                deployer.sleep(deployment.id, actor=IDLE_ACTOR, level=1)
            elif kind is _Kind.DEEPEN and deployment.state is S.RUNNING:
                deployer.sleep(deployment.id, actor=IDLE_ACTOR, level=2)
            elif kind is _Kind.DEEPEN:
                result = deployer.deepen(deployment.id, actor=IDLE_ACTOR)
                if result.action is EventAction.WAKE:  # a request came meanwhile: it serves
                    return IdleOutcome.NOT_IDLE
            elif kind is _Kind.STOP:
                deployer.stop(deployment.id, actor=IDLE_ACTOR)
            elif deployment.state is S.STOPPED:  # the priced policy's start ahead
                deployer.start(deployment.id, actor=IDLE_ACTOR, plans=False)
            else:
                deployer.wake(deployment.id, actor=IDLE_ACTOR, plans=False)
        except (DoesNotFit, Conflict):  # the deployer wrote its skipped event
            self._later(deployment.id, now + REFUSED_RETRY_US, pre_wake_done=True)
            return IdleOutcome.SKIPPED
        except TimedOut as error:
            if self._timed_out(deployment, kind):
                return IdleOutcome.TIMED_OUT
            pause_idle(self._store, self._fleet, deployment, _failed(kind, error))
            return IdleOutcome.FAILED
        except DgxmmError as error:  # the server was asked and failed
            pause_idle(self._store, self._fleet, deployment, _failed(kind, error))
            return IdleOutcome.FAILED
        self._fleet.telemetry.policy_acted(_ACT[kind])
        self._done(deployment, decision, now)
        return IdleOutcome.DONE

    def _timed_out(self, deployment: Deployment, kind: _Kind) -> bool:
        """Note an idle sleep that timed out; tell whether it is tried again (not paused).

        The server did not sleep in time and is recorded running (the deployer's rule): one
        slow sleep says little of the next, so it is tried again after
        ``TIMED_OUT_RETRY_US``; the ``TIMEOUTS_BEFORE_PAUSE``-th in a row pauses."""
        running = deployment.state is S.RUNNING
        if kind not in (_Kind.SLEEP, _Kind.DEEPEN) or not running:
            return False
        with self._guard:
            known = self._known.setdefault(deployment.id, _Known())
            known.timeouts += 1
            if known.timeouts >= TIMEOUTS_BEFORE_PAUSE:
                known.timeouts = 0
                return False
            # From when the timeout was known: the sleep itself took its whole timeout.
            known.not_before = self._store.clock.now_us() + TIMED_OUT_RETRY_US
        return True

    def _done(self, deployment: Deployment, decision: _Decision, now: int) -> None:
        with self._guard:
            known = self._known.setdefault(deployment.id, _Known())
            known.pre_wake_at = None
            known.timeouts = 0
            if decision.kind is _Kind.PRE_WAKE:
                known.pre_woken = True
                known.came_up = now
            elif decision.kind is _Kind.SLEEP and known.histogram is not None:
                last = known.last_arrival
                if last is not None and not known.pre_woken:
                    begins = pre_wake_at(
                        last,
                        known.histogram.windows(last),
                        self._wake_time(deployment.id, known, now),
                    )
                    # One already past would wake it again at once: none is planned.
                    known.pre_wake_at = begins if begins is not None and begins > now else None
        if decision.kind is _Kind.STOP:
            tell_of_room(self._fleet, deployment, now)

    def _later(self, deployment_id: int, at: int, *, pre_wake_done: bool = False) -> None:
        with self._guard:
            known = self._known.setdefault(deployment_id, _Known())
            known.not_before = at
            if pre_wake_done:
                known.pre_wake_at = None


def _failed(kind: _Kind, error: DgxmmError) -> str:
    return f"the idle {kind.value} failed: {error}"


def _applies(kind: _Kind, deployment: Deployment) -> bool:
    """Tell whether the step still fits the deployment's state, read under its lock."""
    state = deployment.state
    if kind is _Kind.SLEEP:
        return state is S.RUNNING
    if kind is _Kind.DEEPEN:
        return state is S.RUNNING or (state is S.SLEEPING and deployment.sleeps_at == 1)
    if kind is _Kind.STOP:
        return state in (S.RUNNING, S.SLEEPING)
    return state in (S.SLEEPING, S.STOPPED)  # a pre-wake; stopped: the priced policy's only
