"""What an idle step tells people: a paused idle policy, and room an idle stop freed.

The idle runner (``runner.py``) calls these on its worker threads, after a step:

- ``pause_idle``: a step whose server was asked and failed pauses the deployment's idle
  policy (``idle_paused``), with an audit row by ``idle`` and a warning insight, until a
  person changes its idle settings;
- ``record_forecast``: in forecast-only mode, the step it would have taken, as an event;
- ``tell_of_room``: an idle stop that leaves room for a start or wake refused in the last
  hour raises an insight for it (where the issue was silent, issue 25).
"""

from __future__ import annotations

from dgxmm.fleet import (
    IDLE_ACTOR,
    AuditAction,
    AuditSubject,
    Deployment,
    DeploymentState,
    EventAction,
    EventOutcome,
    Fleet,
    InsightKind,
    Severity,
)
from dgxmm.store import Store, writing
from dgxmm.time_units import HOUR_US, SECOND_US

__all__ = ["ROOM_LOOKBACK_US", "pause_idle", "record_forecast", "tell_of_room"]

ROOM_LOOKBACK_US = HOUR_US  # an idle stop tells of room for a start refused this recently
S = DeploymentState


def pause_idle(store: Store, fleet: Fleet, deployment: Deployment, reason: str) -> None:
    """Pause the deployment's idle policy after a failed step; say so."""
    with writing(store.engine) as connection:
        fleet.deployments.set_idle_paused(connection, deployment.id, reason)
        fleet.audit.record(
            actor=IDLE_ACTOR, action=AuditAction.DEPLOYMENT_IDLE_PAUSE,
            subject=AuditSubject.DEPLOYMENT, subject_id=str(deployment.id),
            detail={"name": deployment.name, "reason": reason}, connection=connection,
        )  # fmt: skip
    fleet.insights.raise_insight(
        InsightKind.IDLE_PAUSED,
        deployment_id=deployment.id,
        severity=Severity.WARNING,
        message=(
            f"{deployment.name}: {reason}. Its idle policy is paused until its idle "
            "settings are changed."
        ),
        key=f"idle-paused:{deployment.id}",
    )


def tell_of_room(fleet: Fleet, stopped: Deployment, now: int) -> None:
    """Raise an insight for each start or wake refused lately that fits now."""
    for other in fleet.deployments.list():
        if other.id == stopped.id or other.state not in (S.STOPPED, S.FAILED, S.SLEEPING):
            continue
        action = EventAction.WAKE if other.state is S.SLEEPING else EventAction.START
        refused = fleet.events.latest(other.id, action, outcome=None)
        if (
            refused is None
            or refused.outcome is not EventOutcome.SKIPPED
            or now - refused.at_us > ROOM_LOOKBACK_US
            or not fleet.deployer.fit(other.id, S.RUNNING).fits
        ):
            continue
        fleet.insights.raise_insight(
            InsightKind.IDLE_STOP_FREED_ROOM,
            deployment_id=other.id,
            severity=Severity.INFO,
            message=(
                f"The idle stop of {stopped.name} freed room for {other.name}, whose "
                f"{action.value} was refused ({refused.detail}): it fits now."
            ),
            key=f"idle-room:{other.id}:{refused.id}",
        )


def record_forecast(
    fleet: Fleet, deployment: Deployment, action: EventAction, step: str, *, idle_for_us: int
) -> None:
    """Record what an idle step would have done (forecast-only mode); ``NotFound`` if gone."""
    idle_s = max(0, idle_for_us) // SECOND_US
    fleet.events.record(
        deployment.id, action, actor=IDLE_ACTOR, outcome=EventOutcome.FORECAST,
        detail=f"would take the idle {step} now, idle for {idle_s} s "
        "(forecast only: nothing was done)",
    )  # fmt: skip
