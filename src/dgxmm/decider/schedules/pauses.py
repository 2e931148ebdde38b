"""Pausing a deployment's schedules after a failure, and lifting a pause that was not earned.

A scheduled sleep or wake that fails switches off that deployment's switched-on sleep and
wake schedules (the spec's rule), each with ``paused_reason`` and a ``schedule.pause`` audit
row by ``system``, and raises a critical insight.

A sleep that *timed out* says nothing of its outcome: the server may still go to sleep.
Its pause remembers the failed sleep's event (``paused_for_event``). When the metrics pass
later finds the server asleep and names that event among the attempts it finished
(``Fleet.add_late_finish_hook``), ``lift`` switches those schedules on again
(``schedule.resume`` by ``system``), records the failed run as done late with a deployment
event, and dismisses the insight. A schedule a person switched off stays off: the runner
pauses only schedules that are on, and a person's change of the switch forgets the event.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection

from dgxmm.decider.schedules.rows import Schedule, ScheduleAction, ScheduleRows
from dgxmm.fleet import ActionResult, AuditAction, EventOutcome, Fleet, InsightKind, Severity
from dgxmm.store import Store, writing

__all__ = ["PAUSING", "Pauses", "ScheduleAudit", "failure_key"]

# The actions whose failure pauses a deployment's schedules, and the schedules it pauses.
PAUSING = (ScheduleAction.SLEEP, ScheduleAction.WAKE)

# Writes a schedule's audit row by ``system``: (connection, action, schedule, note).
ScheduleAudit = Callable[[Connection, AuditAction, Schedule, str], None]


def failure_key(deployment_id: int, day: str | None) -> str:
    """Return the key of the insight a failed slot of ``day`` raises (one per deployment a day)."""
    return f"schedule_failed:{deployment_id}:{day}"


class Pauses:
    """Pauses and lifts a deployment's sleep and wake schedules; see the module docstring."""

    def __init__(
        self, store: Store, fleet: Fleet, rows: ScheduleRows, *, audit: ScheduleAudit
    ) -> None:
        self._store = store
        self._fleet = fleet
        self._rows = rows
        self._audit = audit

    def pause(
        self,
        connection: Connection,
        failed: Schedule,
        reason: str | None,
        now: int,
        *,
        timed_out_event: int | None,
    ) -> None:
        """Switch off the deployment's switched-on sleep and wake schedules, in ``connection``."""
        why = f"paused: schedule {failed.id} failed to {failed.action.value} ({reason})"
        for schedule in self._rows.list(failed.deployment_id, connection=connection):
            if schedule.action in PAUSING and schedule.enabled:
                self._rows.change(
                    connection,
                    schedule.id,
                    {
                        "enabled": False,
                        "paused_reason": why,
                        "paused_for_event": timed_out_event,
                        "updated_at": now,
                    },
                )
                self._audit(connection, AuditAction.SCHEDULE_PAUSE, schedule, why)

    def warn(self, failed: Schedule, day: str, reason: str | None, *, timed_out: bool) -> None:
        """Raise the critical insight of a failure that paused the schedules."""
        late = (
            " It timed out: if the server is found asleep after all, they are switched on again."
            if timed_out
            else ""
        )
        self._fleet.insights.raise_insight(
            InsightKind.SCHEDULE_FAILED,
            deployment_id=failed.deployment_id,
            severity=Severity.CRITICAL,
            message=(
                f"Schedule {failed.id} failed to {failed.action.value} deployment "
                f"{failed.deployment_id}: {reason}. Its sleep and wake schedules are paused "
                f"until an admin switches them on again.{late}"
            ),
            key=failure_key(failed.deployment_id, day),
        )

    def lift(self, found: ActionResult) -> None:
        """Switch on the schedules paused by a timed-out sleep ``found`` finished after all."""
        fleet = self._fleet
        deployment_id = found.deployment.id
        finished = {event.id: event for event in found.finishes}
        dismiss: list[str] = []
        with writing(self._store.engine) as connection:
            schedules = self._rows.list(deployment_id, connection=connection)
            lifted = [s for s in schedules if not s.enabled and s.paused_for_event in finished]
            if not lifted:
                return
            now = fleet.clock.now_us()
            names = ", ".join(str(s.id) for s in lifted)
            switched = (
                f"schedules {names} are switched on again"
                if len(lifted) > 1
                else f"schedule {names} is switched on again"
            )
            for schedule in lifted:
                self._rows.change(
                    connection,
                    schedule.id,
                    {
                        "enabled": True,
                        "paused_reason": None,
                        "paused_for_event": None,
                        "updated_at": now,
                    },
                )
                self._audit(
                    connection,
                    AuditAction.SCHEDULE_RESUME,
                    schedule,
                    f"its pause came from a sleep that timed out (event "
                    f"{schedule.paused_for_event}) and finished after all "
                    f"(event {found.event.id})",
                )
            by_actor = {f"schedule:{s.id}": s for s in lifted}
            for event_id in sorted({s.paused_for_event for s in lifted if s.paused_for_event}):
                late = finished[event_id]
                failed = by_actor.get(late.actor or "")
                if failed is not None and failed.paused_for_event == event_id:
                    # The failed run itself: it did what it was for, late.
                    self._rows.change(
                        connection,
                        failed.id,
                        {"last_result": "done: late, the server slept after its sleep timed out"},
                    )
                    dismiss.append(failure_key(deployment_id, failed.last_run_day))
                fleet.events.record(
                    deployment_id, late.action, actor=late.actor, outcome=EventOutcome.DONE,
                    detail=(
                        f"the sleep of event {late.id} timed out but finished (found asleep, "
                        f"event {found.event.id}): {switched}"
                    ),
                    connection=connection,
                )  # fmt: skip
        for key in dismiss:
            fleet.insights.dismiss_open(key, "system")
