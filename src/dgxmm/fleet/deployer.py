"""The deployer: start, stop, sleep and wake deployments, one action at a time per deployment.

- **Locks**: each deployment has a re-entrant lock that every action holds from its first
  read to its last write, so two actions on one deployment never interleave; a caller (the
  schedule runner) may hold it around a check and an action.
- **Fit check**: a start or wake needs its awake memory on each of its GPUs (``placement/fit.py``);
  a ray deployment needs its GPUs free on one node of its cluster (``placement/nodes.py``), and
  its start writes down that node before the actor is created there (``placement/placer.py``
  asks them of the rows as they are now).
- **Plans**: with ``plans=True`` (manual starts), a start or wake that does not fit first
  puts lower-priority deployments to sleep or stops them, as ``plan`` shows beforehand; with
  ``plans=False`` (schedules) nothing is evicted: it raises ``DoesNotFit``.
- **Start-up gate**: a start or wake is done only once the server answers healthy within its
  start-up timeout and one tiny completion answered (the post-wake check; ``pass_gate`` in
  ``backends/protocol.py``). One start-up runs at a time: the fit check, the launch and the
  gate run under one global lock, so two start-ups never count the same free memory.
- **The door**: a sleep or a stop shuts the deployment's door in ``RequestActivity`` while it
  runs, so the proxy never forwards to a server going down and knows its cached state is
  stale afterwards.
- **Own requests**: the post-wake check's completion is dgxmm's, not a user's: the metrics
  are told, so the next sample does not count it as request activity.
- **Timeouts**: a start or wake, with its gate and check, is bounded by the deployment's
  ``startup_timeout_s``, a sleep by its ``sleep_timeout_s``; every request of the action gets
  only what is left, so no lock is held past the action's timeout. A sleep the server
  finishes later is reconciled by the metrics pass (``reconciler.py``, under these locks).
- **Durations**: a start, wake, sleep or stop done records how long it took on its event
  (``Events``), and a sleep that timed out records its bound: the priced idle policy prices
  their mean, and a timed-out sleep held the memory that long at least (leaving it out would
  price the way down below what it cost). A stop that stopped nothing (a process already
  gone, an external server) measures nothing.
- **Telemetry**: each action (an eviction too) tells ``Telemetry.action_finished`` its
  outcome and how long it took, by the injected ``timer``; a refusal counts as ``skipped``,
  an error as ``failed``, an unknown deployment not at all.
- **Records**: every action writes a deployment event with its actor and an audit row, in
  one transaction with the state it leaves. A refused action writes a ``skipped`` event.
  A person's stop of a deployment a schedule stopped is ``done``: the stop is theirs now,
  so neither a request nor a wake schedule starts it (both start only a schedule's stop).
- **Failure**: a server that is gone, or a start or wake whose gate fails, leaves the
  deployment ``failed`` with ``last_error``, raises an insight, and stops what is left of a
  process dgxmm owns: a failed deployment holds no GPU memory.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import partial

from sqlalchemy import Engine

from dgxmm.errors import Conflict, DgxmmError, DoesNotFit, NotFound, ServerGone, TimedOut
from dgxmm.fleet.activity import RequestActivity
from dgxmm.fleet.backends.protocol import (
    Backend,
    BackendKind,
    StopOutcome,
    pass_gate,
    wait_until_healthy,
)
from dgxmm.fleet.backends.ray import RayBackend
from dgxmm.fleet.backends.registry import Backends
from dgxmm.fleet.deployments.deployment import Deployment, DeploymentState
from dgxmm.fleet.deployments.events import EventAction, EventOutcome, Events, is_policy
from dgxmm.fleet.deployments.recorder import ActionRecorder, ActionResult
from dgxmm.fleet.deployments.repo import KEEP, DeploymentRepo
from dgxmm.fleet.placement.fit import EvictionAction, Fit, Plan
from dgxmm.fleet.placement.inventory import GpuInventory
from dgxmm.fleet.placement.placer import Placer
from dgxmm.store import writing
from dgxmm.telemetry import NO_TELEMETRY, Telemetry
from dgxmm.time_units import SECOND_US

__all__ = ["ActionResult", "Deployer"]

_STOPPED_HOW = {
    StopOutcome.TERMINATED: "stopped (its process exited on SIGTERM)",
    StopOutcome.KILLED: "stopped (its process was killed after the grace period)",
    StopOutcome.NOT_RUNNING: "stopped (its process was not running)",
    StopOutcome.NOT_OWNED: "marked stopped; its external server keeps running (dgxmm does "
    "not own it)",
}
S = DeploymentState

# What a start or a wake does not do, by the state the deployment is in already.
_UP_ALREADY: dict[EventAction, dict[DeploymentState, str]] = {
    EventAction.START: {
        S.RUNNING: "it is already running",
        S.SLEEPING: "it is started and asleep; wake it to serve",
    },
    EventAction.WAKE: {S.RUNNING: "it is already awake"},
}


class Deployer:
    """Drives deployments through their states; see the module docstring."""

    def __init__(
        self,
        engine: Engine,
        *,
        inventory: GpuInventory,
        deployments: DeploymentRepo,
        events: Events,
        backends: Backends,
        recorder: ActionRecorder,
        activity: RequestActivity,
        telemetry: Telemetry = NO_TELEMETRY,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self._engine = engine
        self._deployments = deployments
        self._events = events
        self._backends = backends
        self._rec = recorder
        self._activity = activity
        self._telemetry = telemetry
        self._timer = timer
        self._locks: dict[int, threading.RLock] = {}
        self._locks_lock = threading.Lock()
        self._startup = threading.Lock()
        self._placer = Placer(
            inventory, deployments, lambda address: backends.cluster(address).inventory()
        )

    def lock(self, deployment_id: int) -> threading.RLock:
        """Return the deployment's lock; every action holds it, a caller may hold it around one."""
        with self._locks_lock:
            found = self._locks.get(deployment_id)
            if found is None:
                found = self._locks[deployment_id] = threading.RLock()
            return found

    # -- fit and plans ------------------------------------------------------------------------

    def fit(self, deployment_id: int, target: DeploymentState) -> Fit:
        """Tell whether the deployment fits in ``target`` beside the others, and why."""
        return self._placer.fit(deployment_id, target)

    def plan(self, deployment_id: int, target: DeploymentState) -> Plan:
        """Return the evictions that would make it fit in ``target`` (none when it fits)."""
        return self._placer.plan(deployment_id, target)

    # -- actions ------------------------------------------------------------------------------

    def start(self, deployment_id: int, *, actor: str, plans: bool = True) -> ActionResult:
        """Start a stopped or failed deployment and wait for the start-up gate."""
        start = EventAction.START
        return self._timed(
            start, lambda: self._bring_up(deployment_id, start, actor=actor, plans=plans)
        )

    def wake(self, deployment_id: int, *, actor: str, plans: bool = True) -> ActionResult:
        """Wake a sleeping deployment and wait for the start-up gate."""
        wake = EventAction.WAKE
        return self._timed(
            wake, lambda: self._bring_up(deployment_id, wake, actor=actor, plans=plans)
        )

    def stop(self, deployment_id: int, *, actor: str) -> ActionResult:
        """Stop a deployment: SIGTERM, then SIGKILL after the grace period, for a process."""
        down = partial(self._take_down, deployment_id, EventAction.STOP, actor=actor)
        return self._timed(EventAction.STOP, down)

    def sleep(self, deployment_id: int, *, actor: str, level: int | None = None) -> ActionResult:
        """Put a running deployment to sleep once its requests in flight finish.

        At ``level`` (1 or 2; None: the deployment's ``sleep_level``): the idle ladder's
        first step sleeps at level 1 whatever the deployment's own level.
        """
        down = partial(self._take_down, deployment_id, EventAction.SLEEP, actor=actor, level=level)
        return self._timed(EventAction.SLEEP, down)

    def deepen(self, deployment_id: int, *, actor: str) -> ActionResult:
        """Move a deployment asleep at level 1 to level 2; the caller holds its lock and door.

        vLLM cannot deepen a sleep in place (a second ``/sleep`` would release memory it
        released already), so the server is woken and put to sleep again at level 2. The
        wake needs its awake memory for that moment: it is fit-checked like any wake, never
        evicting (``DoesNotFit``). A request that knocked on the shut door meanwhile finds
        it awake: it is left awake for it, and the deepening says so.
        """
        return self._timed(EventAction.SLEEP, partial(self._deepen, deployment_id, actor))

    def _deepen(self, deployment_id: int, actor: str) -> ActionResult:
        with self.lock(deployment_id):
            deployment = self._deployments.get(deployment_id)
            if deployment.state is not S.SLEEPING or deployment.sleeps_at != 1:
                where = (
                    f"asleep at level {deployment.sleeps_at}"
                    if deployment.state is S.SLEEPING
                    else deployment.state.value
                )
                self._rec.refuse(
                    deployment, EventAction.SLEEP, actor, Conflict,
                    f"it is {where}: only a level-1 sleep deepens",
                )  # fmt: skip
            backend = self._backends.of(deployment)
            with self._startup, self._activity.closing(deployment_id) as door:
                deployment, _ = self._fitted(deployment_id, EventAction.SLEEP, actor)
                began, timed = time.monotonic(), self._timer()
                try:
                    backend.wake(1, timeout_s=deployment.startup_timeout_s)
                    wait_until_healthy(backend, deployment.startup_timeout_s, began=began)
                    if door.knocked:  # someone wants it: serve rather than sleep again
                        backend.check_completion(timeout_s=deployment.startup_timeout_s)
                        self._rec.checked(deployment_id)
                    else:
                        backend.sleep(2, timeout_s=deployment.sleep_timeout_s)
                except ServerGone as error:
                    self._rec.fail(deployment, EventAction.SLEEP, actor, str(error), backend)
                    raise
                except Exception as error:
                    detail = f"deepening to level 2 failed: {error}"
                    self._rec.fail(deployment, EventAction.SLEEP, actor, detail, backend)
                    raise
            if door.knocked:
                return self._rec.record(
                    deployment=deployment,
                    action=EventAction.WAKE,
                    outcome=EventOutcome.DONE,
                    actor=actor,
                    detail="woken to deepen its sleep; a request arrived meanwhile, so it "
                    "was left awake for it",
                    state=S.RUNNING,
                    error=KEEP,
                )
            return self._rec.record(
                deployment=deployment,
                action=EventAction.SLEEP,
                outcome=EventOutcome.DONE,
                actor=actor,
                detail="deepened: asleep at level 2 (woken from level 1, put back to sleep)",
                state=S.SLEEPING,
                error=KEEP,
                asleep_level=2,
                took=(round((self._timer() - timed) * SECOND_US), 2),
            )

    # -- inside -------------------------------------------------------------------------------

    def _bring_up(
        self, deployment_id: int, action: EventAction, *, actor: str, plans: bool
    ) -> ActionResult:
        """Start or wake: make room, pass the start-up gate (one at a time), write it down."""
        waking = action is EventAction.WAKE
        with self.lock(deployment_id):
            deployment = self._deployments.get(deployment_id)
            already = _UP_ALREADY[action].get(deployment.state)
            if already is not None:
                return self._rec.record(
                    deployment=deployment,
                    action=action,
                    outcome=EventOutcome.SKIPPED,
                    actor=actor,
                    detail=already,
                )
            if waking and deployment.state is not S.SLEEPING:
                self._rec.refuse(
                    deployment,
                    action,
                    actor,
                    Conflict,
                    f"it is {deployment.state.value}, not asleep: start it instead",
                )
            evictions = self._make_room(deployment, action, actor, plans)
            with self._startup:
                deployment, fit = self._fitted(deployment_id, action, actor)
                if not waking:
                    with writing(self._engine) as connection:
                        deployment = self._deployments.set_state(
                            connection, deployment_id, S.STARTING
                        )
                        if deployment.backend is BackendKind.RAY:
                            deployment = self._placer.place(connection, deployment, fit)
                backend = self._backends.of(deployment)

                def started() -> None:
                    if isinstance(backend, RayBackend):
                        self._placed(deployment_id, backend)

                try:
                    took = pass_gate(
                        backend,
                        what=action.value,
                        level=deployment.sleeps_at if waking else None,
                        timeout_s=deployment.startup_timeout_s,
                        started=started,
                    )
                    self._rec.checked(deployment_id)  # dgxmm's own request: not activity
                except Exception as error:
                    self._rec.fail(deployment, action, actor, str(error), backend)
                    raise
                if not waking:
                    self._rec.restarted(deployment_id)  # a new server: its counters start anew
                return self._rec.record(
                    deployment=deployment,
                    action=action,
                    outcome=EventOutcome.DONE,
                    actor=actor,
                    detail=f"{'awake and healthy' if waking else 'healthy'} after {took:.2f} s "
                    "(time to ready: until its first completion answered)",
                    state=S.RUNNING,
                    # A new server clears the last error; a woken one keeps it on record.
                    error=KEEP if waking else None,
                    evictions=evictions,
                    took=(round(took * SECOND_US), deployment.sleeps_at if waking else 0),
                )

    def _take_down(
        self,
        deployment_id: int,
        action: EventAction,
        *,
        actor: str,
        why: str | None = None,
        level: int | None = None,
    ) -> ActionResult:
        """Stop or sleep (``why``: the plan that evicts it; ``level``: the sleep's)."""
        sleeping = action is EventAction.SLEEP
        with self.lock(deployment_id), self._activity.closing(deployment_id):
            deployment = self._deployments.get(deployment_id)
            if deployment.state is (S.SLEEPING if sleeping else S.STOPPED):
                if not sleeping and not is_policy(actor):
                    taken = self._take_over_stop(deployment, actor)
                    if taken is not None:
                        return taken
                return self._rec.record(
                    deployment=deployment,
                    action=action,
                    outcome=EventOutcome.SKIPPED,
                    actor=actor,
                    detail=f"it is already {'asleep' if sleeping else 'stopped'}",
                )
            if sleeping and deployment.state is not S.RUNNING:
                self._rec.refuse(
                    deployment,
                    action,
                    actor,
                    Conflict,
                    f"it is {deployment.state.value}: only a running deployment sleeps",
                )
            backend = self._backends.of(deployment)
            level = level or deployment.sleep_level
            began = self._timer()
            if sleeping:
                state, how = S.SLEEPING, self._sleep_backend(deployment, backend, actor, level)
            else:
                with writing(self._engine) as connection:
                    self._deployments.set_state(connection, deployment_id, S.STOPPING)
                try:
                    outcome = backend.stop()
                except Exception as error:
                    self._rec.fail(deployment, action, actor, str(error), backend, stop=False)
                    raise
                self._rec.restarted(deployment_id)
                state, how, level = S.STOPPED, _STOPPED_HOW[outcome], 0
            took = round((self._timer() - began) * SECOND_US)
            # A process already gone, or an external server left running: no way down.
            gone = not sleeping and outcome in (StopOutcome.NOT_RUNNING, StopOutcome.NOT_OWNED)
            return self._rec.record(
                deployment=deployment,
                action=action,
                outcome=EventOutcome.DONE,
                actor=actor,
                detail=how + (f": {why}" if why else ""),
                state=state,
                error=KEEP if sleeping else None,  # a stopped server's last error is over
                asleep_level=level if sleeping else None,
                took=None if gone else (took, level),
            )

    def _take_over_stop(self, deployment: Deployment, actor: str) -> ActionResult | None:
        """Make a policy's stop a person's stop, or None when no schedule or idle policy stopped it.

        A person who presses Stop on a deployment a schedule stopped means it to stay
        stopped: were the stop left the schedule's, a request through the proxy or a wake
        schedule would start it again (both start only what a schedule stopped).
        """
        by = self._events.stopped_by(deployment.id)
        if not is_policy(by):
            return None
        return self._rec.record(
            deployment=deployment,
            action=EventAction.STOP,
            outcome=EventOutcome.DONE,
            actor=actor,
            detail=f"it was stopped already, by {by}; the stop is {actor}'s now, so no request "
            "or wake schedule starts it",
        )

    def _sleep_backend(
        self, deployment: Deployment, backend: Backend, actor: str, level: int
    ) -> str:
        """Ask the server to sleep; say how it went (a gone server leaves it failed)."""
        try:
            backend.sleep(level, timeout_s=deployment.sleep_timeout_s)
        except ServerGone as error:
            self._rec.fail(deployment, EventAction.SLEEP, actor, str(error), backend)
            raise
        except Exception as error:  # the server is there but did not sleep: still running
            bound = round(deployment.sleep_timeout_s * SECOND_US)
            self._rec.record(
                deployment=deployment,
                action=EventAction.SLEEP,
                outcome=EventOutcome.FAILED,
                actor=actor,
                detail=str(error),
                took=(bound, level) if isinstance(error, TimedOut) else None,
            )
            raise
        return f"asleep (level {level})"

    def _make_room(
        self, deployment: Deployment, action: EventAction, actor: str, plans: bool
    ) -> tuple[ActionResult, ...]:
        """Evict what the plan says when it does not fit and plans are allowed."""
        fit = self.fit(deployment.id, S.RUNNING)
        if fit.fits:
            return ()
        if not plans:
            self._rec.refuse(deployment, action, actor, DoesNotFit, fit.reason)
        plan = self.plan(deployment.id, S.RUNNING)
        if not plan.feasible:
            self._rec.refuse(deployment, action, actor, DoesNotFit, plan.reason)
        why = f"evicted to make room for {deployment.name} (priority {deployment.priority})"
        done = []
        for eviction in plan.evictions:
            try:
                taken = (
                    EventAction.SLEEP
                    if eviction.action is EvictionAction.SLEEP
                    else EventAction.STOP
                )
                down = partial(self._take_down, eviction.deployment_id, taken, actor=actor, why=why)
                done.append(self._timed(taken, down))
            except DgxmmError as error:
                self._rec.record(
                    deployment=deployment,
                    action=action,
                    outcome=EventOutcome.FAILED,
                    actor=actor,
                    detail=f"could not make room: {eviction.action.value} of "
                    f"{eviction.name} failed: {error}",
                )
                raise
        return tuple(done)

    def _timed(self, action: EventAction, act: Callable[[], ActionResult]) -> ActionResult:
        """Run an action and tell the telemetry how it ended and how long it took."""
        began = self._timer()
        outcome: EventOutcome | None = EventOutcome.FAILED
        try:
            result = act()
            outcome = result.outcome
            return result
        except NotFound:
            outcome = None  # no deployment, no action
            raise
        except Conflict:
            outcome = EventOutcome.SKIPPED  # refused: it does not fit, or not in this state
            raise
        finally:
            if outcome is not None:
                self._telemetry.action_finished(action, outcome, self._timer() - began)

    def _fitted(
        self, deployment_id: int, action: EventAction, actor: str
    ) -> tuple[Deployment, Fit]:
        """Check the fit again under the start-up lock (evictions may have raced others)."""
        deployment = self._deployments.get(deployment_id)
        fit = self.fit(deployment_id, S.RUNNING)
        if not fit.fits:
            self._rec.refuse(deployment, action, actor, DoesNotFit, fit.reason)
        return deployment, fit

    def _placed(self, deployment_id: int, backend: RayBackend) -> None:
        """Write down where Ray placed the actor and the GPUs it gave it."""
        found = backend.placement()
        if found is not None:
            with writing(self._engine) as connection:
                self._deployments.set_placement(connection, deployment_id, *found)
