"""How an action is written down: its state, its deployment event and its audit row, at once.

The deployer and the reattachment after a restart both finish through ``ActionRecorder``:
``record`` writes the state the action leaves, the event (with the actor) and the audit row
in one transaction; ``refuse`` writes a ``skipped`` event and raises; ``fail`` leaves the
deployment ``failed``, stops what is left of a process dgxmm owns (a failed deployment holds
no GPU memory) and raises an insight.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from sqlalchemy import Engine

from dgxmm.errors import BackendError, Conflict, DoesNotFit
from dgxmm.fleet.backends.protocol import Backend, StopOutcome
from dgxmm.fleet.deployments.audit import Audit, AuditAction, AuditSubject
from dgxmm.fleet.deployments.deployment import Deployment, DeploymentState
from dgxmm.fleet.deployments.events import Event, EventAction, EventOutcome, Events
from dgxmm.fleet.deployments.insights import InsightKind, Insights, Severity
from dgxmm.fleet.deployments.repo import KEEP, DeploymentRepo, Keep
from dgxmm.store import writing

__all__ = ["ActionRecorder", "ActionResult"]

# The audit action of each event action the recorder writes.
_AUDITED = {
    EventAction.CREATE: AuditAction.DEPLOYMENT_CREATE,
    EventAction.UPDATE: AuditAction.DEPLOYMENT_UPDATE,
    EventAction.START: AuditAction.DEPLOYMENT_START,
    EventAction.STOP: AuditAction.DEPLOYMENT_STOP,
    EventAction.SLEEP: AuditAction.DEPLOYMENT_SLEEP,
    EventAction.WAKE: AuditAction.DEPLOYMENT_WAKE,
    EventAction.FAILED: AuditAction.DEPLOYMENT_FAILED,
    EventAction.REATTACH: AuditAction.DEPLOYMENT_REATTACH,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ActionResult:
    """What an action did: the deployment after it, the event written, the evictions."""

    deployment: Deployment
    action: EventAction
    outcome: EventOutcome
    detail: str | None
    event: Event
    evictions: tuple[ActionResult, ...] = ()
    # A reconciliation's: the failed attempts it found finished after all (a late sleep).
    finishes: tuple[Event, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """Return the result as JSON values."""
        return {
            "deployment": self.deployment.to_json(),
            "action": self.action.value,
            "outcome": self.outcome.value,
            "detail": self.detail,
            "event": self.event.to_json(),
            "evictions": [e.to_json() for e in self.evictions],
        }


class ActionRecorder:
    """Writes down what actions did."""

    def __init__(
        self,
        engine: Engine,
        *,
        deployments: DeploymentRepo,
        events: Events,
        audit: Audit,
        insights: Insights,
        restarted: Callable[[int], None],
        checked: Callable[[int], None],
    ) -> None:
        self._engine = engine
        self._deployments = deployments
        self._events = events
        self._audit = audit
        self._insights = insights
        self.restarted = restarted  # the server began or ended: forget its counters
        self.checked = checked  # dgxmm's post-wake check completed one request of its own

    def record(
        self,
        *,
        deployment: Deployment,
        action: EventAction,
        outcome: EventOutcome,
        actor: str,
        detail: str | None,
        state: DeploymentState | None = None,
        error: str | Keep | None = KEEP,
        evictions: tuple[ActionResult, ...] = (),
        asleep_level: int | None = None,
        took: tuple[int, int] | None = None,
    ) -> ActionResult:
        """Write the state, the event and the audit row in one transaction.

        ``state`` moves the deployment; with it, ``error`` sets or clears its last error
        (``KEEP`` leaves it as it is) and ``asleep_level`` is the level a sleep left it at.
        ``took``: how long the action took and the resting level at its far end (``Events``).
        """
        with writing(self._engine) as connection:
            if state is not None:
                after = self._deployments.set_state(
                    connection, deployment.id, state, error=error, asleep_level=asleep_level
                )
            else:
                after = self._deployments.get(deployment.id, connection=connection)
            event = self._events.record(
                deployment.id,
                action,
                actor=actor,
                outcome=outcome,
                detail=detail,
                connection=connection,
                took=took,
                state=after.state.value,
            )
            self._audit.record(
                actor=actor,
                action=_AUDITED[action],
                subject=AuditSubject.DEPLOYMENT,
                subject_id=deployment.id,
                detail={
                    "name": deployment.name,
                    "outcome": outcome.value,
                    "detail": detail,
                    "state": after.state.value,
                    "evictions": [e.deployment.name for e in evictions],
                },
                connection=connection,
            )
        return ActionResult(
            deployment=after,
            action=action,
            outcome=outcome,
            detail=detail,
            event=event,
            evictions=evictions,
        )

    def refuse(
        self,
        deployment: Deployment,
        action: EventAction,
        actor: str,
        error: type[Conflict],
        reason: str,
    ) -> NoReturn:
        """Write a ``skipped`` event and raise ``error`` with the reason."""
        self.record(
            deployment=deployment,
            action=action,
            outcome=EventOutcome.SKIPPED,
            actor=actor,
            detail=reason,
        )
        verb = "does not fit" if error is DoesNotFit else f"cannot {action.value}"
        raise error(f"deployment {deployment.name!r} {verb}: {reason}")

    def fail(
        self,
        deployment: Deployment,
        action: EventAction,
        actor: str,
        reason: str,
        backend: Backend,
        *,
        stop: bool = True,
        outcome: EventOutcome = EventOutcome.FAILED,
    ) -> ActionResult:
        """Leave the deployment failed, stopping what is left of a process dgxmm owns."""
        detail = reason
        if stop and backend.owns_process:
            try:
                if backend.stop() is not StopOutcome.NOT_RUNNING:
                    detail += "; dgxmm stopped its process"
            except BackendError as error:
                detail += f"; stopping its process failed too: {error}"
        self.restarted(deployment.id)
        result = self.record(
            deployment=deployment,
            action=action,
            outcome=outcome,
            actor=actor,
            detail=detail,
            state=DeploymentState.FAILED,
            error=detail,
        )
        self._insights.raise_insight(
            InsightKind.DEPLOYMENT_FAILED,
            deployment_id=deployment.id,
            severity=Severity.CRITICAL,
            message=f"{deployment.name} failed ({action.value}, {actor}): {detail}",
            key=f"deployment_failed:{deployment.id}",
        )
        return result
