"""The reconciliations: a deployment's row brought up to date with what its server is now.

The metrics pass finds a server gone, asleep or awake behind a row that says otherwise: a
process that died, an external server whose port refuses, a sleep that finished after its
action gave up waiting (``sleep_timeout_s``), or a wake that was still running when dgxmm
was killed (its record is written when it ends, so the restart found the server asleep).
``Reconciler`` writes what it found, with the deployer's per-deployment locks and the door of
``RequestActivity`` shut while it does, so the proxy knows its cached state is stale
afterwards:

- ``mark_failed``: an up deployment whose server is gone is ``failed``, with ``last_error``,
  an insight, and what is left of a process dgxmm owns stopped.
- ``mark_asleep``: a running deployment whose server sleeps is ``sleeping``; the result names
  the failed sleeps it finished (``ActionResult.finishes``).
- ``mark_awake``: a sleeping deployment whose server no longer sleeps is ``running``.

Neither believes anything but the server's ``GET /is_sleeping``, and neither waits for the
deployment's lock: an action under way knows the state better.

After a restart, finding each server again is ``reattach.py``'s.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

from dgxmm.errors import DgxmmError
from dgxmm.fleet.activity import RequestActivity
from dgxmm.fleet.backends.registry import Backends
from dgxmm.fleet.deployments.deployment import DeploymentState
from dgxmm.fleet.deployments.events import EventAction, EventOutcome, Events
from dgxmm.fleet.deployments.recorder import ActionRecorder, ActionResult
from dgxmm.fleet.deployments.repo import KEEP, DeploymentRepo

__all__ = ["Reconciler"]

S = DeploymentState


class Reconciler:
    """Marks deployments failed or asleep as their servers are found; see the module."""

    def __init__(
        self,
        *,
        lock: Callable[[int], threading.RLock],
        deployments: DeploymentRepo,
        events: Events,
        backends: Backends,
        recorder: ActionRecorder,
        activity: RequestActivity,
    ) -> None:
        self._lock = lock  # the deployer's: an action under way holds it
        self._deployments = deployments
        self._events = events
        self._backends = backends
        self._rec = recorder
        self._activity = activity

    def mark_failed(
        self, deployment_id: int, reason: str, *, actor: str = "system", wait: bool = True
    ) -> ActionResult | None:
        """Mark an up deployment whose server is gone as failed; None when it is not up.

        With ``wait=False`` it gives up at once when an action holds the lock (the metrics
        job does: that action will meet the gone server itself).
        """
        lock = self._lock(deployment_id)
        if not lock.acquire(blocking=wait):
            return None
        try:
            with self._activity.closing(deployment_id):
                return self._mark_failed(deployment_id, reason, actor)
        finally:
            lock.release()

    def _mark_failed(self, deployment_id: int, reason: str, actor: str) -> ActionResult | None:
        deployment = self._deployments.get(deployment_id)
        if deployment.state not in (S.RUNNING, S.SLEEPING):
            return None
        backend = self._backends.of(deployment)
        return self._rec.fail(
            deployment, EventAction.FAILED, actor, reason, backend, outcome=EventOutcome.DONE
        )

    def mark_asleep(
        self, deployment_id: int, reason: str, *, actor: str = "system"
    ) -> ActionResult | None:
        """Mark a running deployment whose server sleeps as sleeping; None when it is not so.

        The reconciliation of a sleep that finished after its action gave up waiting. It
        never waits for the lock (an action under way knows the state better) and asks the
        server's ``/is_sleeping`` before it believes a metric.
        """
        lock = self._lock(deployment_id)
        if not lock.acquire(blocking=False):
            return None
        try:
            with self._activity.closing(deployment_id):
                return self._mark_asleep(deployment_id, reason, actor)
        finally:
            lock.release()

    def _mark_asleep(self, deployment_id: int, reason: str, actor: str) -> ActionResult | None:
        deployment = self._deployments.get(deployment_id)
        if deployment.state is not S.RUNNING:
            return None
        try:
            if not self._backends.of(deployment).is_sleeping():
                return None
        except DgxmmError:
            return None  # the next pass looks again
        late = self._events.failed_since_done(deployment_id, EventAction.SLEEP)
        detail = (
            f"found asleep ({reason}): a sleep that finished after dgxmm stopped waiting for it"
        )
        if late:
            asked = ", ".join(f"event {e.id} ({e.actor or 'no actor'})" for e in late)
            detail += f"; the failed sleep of {asked} finished after all"
        found = self._rec.record(
            deployment=deployment,
            action=EventAction.SLEEP,
            outcome=EventOutcome.DONE,
            actor=actor,
            detail=detail,
            state=S.SLEEPING,
            error=KEEP,
        )
        return replace(found, finishes=late)

    def mark_awake(
        self, deployment_id: int, reason: str, *, actor: str = "system"
    ) -> ActionResult | None:
        """Mark a sleeping deployment whose server is awake as running; None when it is not so.

        A wake that finished after dgxmm stopped waiting for it: one under way when dgxmm was
        killed, or one that timed out. Never waits for the lock; asks ``/is_sleeping``.
        """
        lock = self._lock(deployment_id)
        if not lock.acquire(blocking=False):
            return None
        try:
            with self._activity.closing(deployment_id):
                deployment = self._deployments.get(deployment_id)
                if deployment.state is not S.SLEEPING:
                    return None
                try:
                    if self._backends.of(deployment).is_sleeping():
                        return None
                except DgxmmError:
                    return None  # the next pass looks again
                return self._rec.record(
                    deployment=deployment,
                    action=EventAction.WAKE,
                    outcome=EventOutcome.DONE,
                    actor=actor,
                    detail=f"found awake ({reason}): a wake that finished after dgxmm stopped "
                    "waiting for it, or one under way when dgxmm restarted",
                    state=S.RUNNING,
                    error=KEEP,
                )
        finally:
            lock.release()
