"""The deployer: start, stop, sleep and wake deployments, one action at a time per deployment.

- **Locks**: each deployment has a re-entrant lock that every action holds from its first
  read to its last write, so two actions on one deployment never interleave; a caller (the
  schedule runner) may hold it around a check and an action.
- **Fit check**: a start or wake needs its awake memory on each of its GPUs (``fit.py``).
- **Plans**: with ``plans=True`` (manual starts), a start or wake that does not fit first
  puts lower-priority deployments to sleep or stops them, as ``plan`` shows beforehand; with
  ``plans=False`` (schedules) nothing is evicted: it raises ``DoesNotFit``.
- **Start-up gate**: a start or wake is done only once the server answers healthy within its
  start-up timeout. One start-up runs at a time: the fit check, the launch and the gate run
  under one global lock, so two start-ups never count the same free memory.
- **Records**: every action writes a deployment event with its actor and an audit row, in
  one transaction with the state it leaves. A refused action writes a ``skipped`` event.
- **Failure**: a server that is gone, or a start or wake whose gate fails, leaves the
  deployment ``failed`` with ``last_error``, raises an insight, and stops what is left of a
  process dgxmm owns: a failed deployment holds no GPU memory.
"""

from __future__ import annotations

import threading

from sqlalchemy import Engine

from dgxmm.errors import Conflict, DgxmmError, DoesNotFit, NotFound, ServerGone
from dgxmm.fleet.backends.protocol import StopOutcome, wait_until_healthy
from dgxmm.fleet.backends.registry import Backends
from dgxmm.fleet.deployment import Deployment, DeploymentState
from dgxmm.fleet.deployments import DeploymentRepo
from dgxmm.fleet.events import EventAction, EventOutcome
from dgxmm.fleet.fit import EvictionAction, Fit, Plan, check_fit, make_plan
from dgxmm.fleet.inventory import GpuInventory
from dgxmm.fleet.recorder import ActionRecorder, ActionResult
from dgxmm.store import writing

__all__ = ["ActionResult", "Deployer"]

_STOPPED_HOW = {
    StopOutcome.TERMINATED: "stopped (its process exited on SIGTERM)",
    StopOutcome.KILLED: "stopped (its process was killed after the grace period)",
    StopOutcome.NOT_RUNNING: "stopped (its process was not running)",
    StopOutcome.NOT_OWNED: "marked stopped; its external server keeps running (dgxmm does "
    "not own it)",
}
S = DeploymentState


class Deployer:
    """Drives deployments through their states; see the module docstring."""

    def __init__(
        self,
        engine: Engine,
        *,
        inventory: GpuInventory,
        deployments: DeploymentRepo,
        backends: Backends,
        recorder: ActionRecorder,
    ) -> None:
        self._engine = engine
        self._inventory = inventory
        self._deployments = deployments
        self._backends = backends
        self._rec = recorder
        self._locks: dict[int, threading.RLock] = {}
        self._locks_lock = threading.Lock()
        self._startup = threading.Lock()

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
        everyone = self._deployments.list()
        return check_fit(self._inventory, everyone, _pick(everyone, deployment_id), target)

    def plan(self, deployment_id: int, target: DeploymentState) -> Plan:
        """Return the evictions that would make it fit in ``target`` (none when it fits)."""
        everyone = self._deployments.list()
        return make_plan(self._inventory, everyone, _pick(everyone, deployment_id), target)

    # -- actions ------------------------------------------------------------------------------

    def start(self, deployment_id: int, *, actor: str, plans: bool = True) -> ActionResult:
        """Start a stopped or failed deployment and wait for the start-up gate."""
        with self.lock(deployment_id):
            deployment = self._deployments.get(deployment_id)
            if deployment.state is S.RUNNING:
                return self._rec.record(
                    deployment,
                    EventAction.START,
                    EventOutcome.SKIPPED,
                    actor,
                    "it is already running",
                )
            if deployment.state is S.SLEEPING:
                return self._rec.record(
                    deployment,
                    EventAction.START,
                    EventOutcome.SKIPPED,
                    actor,
                    "it is started and asleep; wake it to serve",
                )
            evictions = self._make_room(deployment, EventAction.START, actor, plans)
            with self._startup:
                deployment = self._fitted(deployment_id, EventAction.START, actor)
                backend = self._backends.of(deployment)
                with writing(self._engine) as connection:
                    self._deployments.set_state(connection, deployment_id, S.STARTING)
                try:
                    backend.start()
                    took = wait_until_healthy(backend, deployment.startup_timeout_s)
                except Exception as error:
                    self._rec.fail(deployment, EventAction.START, actor, str(error), backend)
                    raise
                self._rec.restarted(deployment_id)
                return self._rec.record(
                    deployment,
                    EventAction.START,
                    EventOutcome.DONE,
                    actor,
                    f"healthy after {took:.1f} s",
                    state=S.RUNNING,
                    error=None,
                    evictions=evictions,
                )

    def stop(self, deployment_id: int, *, actor: str) -> ActionResult:
        """Stop a deployment: SIGTERM, then SIGKILL after the grace period, for a process."""
        return self._stop(deployment_id, actor, None)

    def sleep(self, deployment_id: int, *, actor: str) -> ActionResult:
        """Put a running deployment to sleep (level 1) once its requests in flight finish."""
        return self._sleep(deployment_id, actor, None)

    def wake(self, deployment_id: int, *, actor: str, plans: bool = True) -> ActionResult:
        """Wake a sleeping deployment and wait for the start-up gate."""
        with self.lock(deployment_id):
            deployment = self._deployments.get(deployment_id)
            if deployment.state is S.RUNNING:
                return self._rec.record(
                    deployment, EventAction.WAKE, EventOutcome.SKIPPED, actor, "it is already awake"
                )
            if deployment.state is not S.SLEEPING:
                self._rec.refuse(
                    deployment,
                    EventAction.WAKE,
                    actor,
                    Conflict,
                    f"it is {deployment.state.value}, not asleep: start it instead",
                )
            evictions = self._make_room(deployment, EventAction.WAKE, actor, plans)
            with self._startup:
                deployment = self._fitted(deployment_id, EventAction.WAKE, actor)
                backend = self._backends.of(deployment)
                try:
                    backend.wake()
                    took = wait_until_healthy(backend, deployment.startup_timeout_s)
                except Exception as error:
                    self._rec.fail(deployment, EventAction.WAKE, actor, str(error), backend)
                    raise
                return self._rec.record(
                    deployment,
                    EventAction.WAKE,
                    EventOutcome.DONE,
                    actor,
                    f"awake and healthy after {took:.1f} s",
                    state=S.RUNNING,
                    evictions=evictions,
                )

    def mark_failed(
        self, deployment_id: int, reason: str, *, actor: str = "system", wait: bool = True
    ) -> ActionResult | None:
        """Mark an up deployment whose server is gone as failed; None when it is not up.

        With ``wait=False`` it gives up at once when an action holds the lock (the metrics
        job does: that action will meet the gone server itself).
        """
        lock = self.lock(deployment_id)
        if not lock.acquire(blocking=wait):
            return None
        try:
            deployment = self._deployments.get(deployment_id)
            if deployment.state not in (S.RUNNING, S.SLEEPING):
                return None
            backend = self._backends.of(deployment)
            return self._rec.fail(
                deployment, EventAction.FAILED, actor, reason, backend, outcome=EventOutcome.DONE
            )
        finally:
            lock.release()

    # -- inside -------------------------------------------------------------------------------

    def _stop(self, deployment_id: int, actor: str, why: str | None) -> ActionResult:
        with self.lock(deployment_id):
            deployment = self._deployments.get(deployment_id)
            if deployment.state is S.STOPPED:
                return self._rec.record(
                    deployment,
                    EventAction.STOP,
                    EventOutcome.SKIPPED,
                    actor,
                    "it is already stopped",
                )
            backend = self._backends.of(deployment)
            with writing(self._engine) as connection:
                self._deployments.set_state(connection, deployment_id, S.STOPPING)
            try:
                outcome = backend.stop()
            except Exception as error:
                self._rec.fail(deployment, EventAction.STOP, actor, str(error), backend, stop=False)
                raise
            self._rec.restarted(deployment_id)
            detail = _STOPPED_HOW[outcome] + (f": {why}" if why else "")
            return self._rec.record(
                deployment,
                EventAction.STOP,
                EventOutcome.DONE,
                actor,
                detail,
                state=S.STOPPED,
                error=None,
            )

    def _sleep(self, deployment_id: int, actor: str, why: str | None) -> ActionResult:
        with self.lock(deployment_id):
            deployment = self._deployments.get(deployment_id)
            if deployment.state is S.SLEEPING:
                return self._rec.record(
                    deployment,
                    EventAction.SLEEP,
                    EventOutcome.SKIPPED,
                    actor,
                    "it is already asleep",
                )
            if deployment.state is not S.RUNNING:
                self._rec.refuse(
                    deployment,
                    EventAction.SLEEP,
                    actor,
                    Conflict,
                    f"it is {deployment.state.value}: only a running deployment sleeps",
                )
            backend = self._backends.of(deployment)
            try:
                backend.sleep(level=1)
            except ServerGone as error:
                self._rec.fail(deployment, EventAction.SLEEP, actor, str(error), backend)
                raise
            except Exception as error:  # the server is there but did not sleep: still running
                self._rec.record(
                    deployment, EventAction.SLEEP, EventOutcome.FAILED, actor, str(error)
                )
                raise
            detail = "asleep (level 1)" + (f": {why}" if why else "")
            return self._rec.record(
                deployment, EventAction.SLEEP, EventOutcome.DONE, actor, detail, state=S.SLEEPING
            )

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
                if eviction.action is EvictionAction.SLEEP:
                    done.append(self._sleep(eviction.deployment_id, actor, why))
                else:
                    done.append(self._stop(eviction.deployment_id, actor, why))
            except DgxmmError as error:
                self._rec.record(
                    deployment,
                    action,
                    EventOutcome.FAILED,
                    actor,
                    f"could not make room: {eviction.action.value} of "
                    f"{eviction.name} failed: {error}",
                )
                raise
        return tuple(done)

    def _fitted(self, deployment_id: int, action: EventAction, actor: str) -> Deployment:
        """Check the fit again under the start-up lock (evictions may have raced others)."""
        deployment = self._deployments.get(deployment_id)
        fit = self.fit(deployment_id, S.RUNNING)
        if not fit.fits:
            self._rec.refuse(deployment, action, actor, DoesNotFit, fit.reason)
        return deployment


def _pick(everyone: list[Deployment], deployment_id: int) -> Deployment:
    for deployment in everyone:
        if deployment.id == deployment_id:
            return deployment
    raise NotFound("deployment", deployment_id)
