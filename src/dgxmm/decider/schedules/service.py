"""Deployment schedules and their runner (``ScheduleService``).

Schedules sleep, wake, stop or start a deployment on local days at a local ``HH:MM``. Only
an admin creates, changes or removes them (through the API, or by accepting a proposal);
every change is audited. The system job ``schedule_runner`` makes one pass a minute:

1. it returns at once while the setting ``schedules.paused_all`` is set;
2. it finds the slots due in each schedule's zone (``slots.py``: once per local day, up to
   15 minutes late, the engine's DST rule);
3. a sleep or stop re-checks traffic under the deployment's lock: no request activity for
   10 minutes and a fresh metrics sample with nothing running or waiting; otherwise the
   slot is deferred and retried at each pass for 60 minutes, then skipped (busy);
4. a wake or start takes the deployer's normal path (fit check, start-up gate) without
   plans, so it never evicts anything; when it does not fit, the slot is skipped and an
   insight raised. A wake that finds its deployment stopped starts it only when the latest
   stop was a schedule's;
5. each run is recorded: a deployment event with actor ``schedule:<id>``, an audit row, and
   the schedule's last run and result. A failed scheduled sleep or wake pauses that
   deployment's sleep and wake schedules and raises an insight.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import Connection

from dgxmm.clock import Clock
from dgxmm.decider.schedules.rows import Schedule, ScheduleAction, ScheduleRows, checked_changes
from dgxmm.decider.schedules.slots import (
    DEFER_WINDOW_US,
    Slot,
    due_slot,
    local_today,
    parse_time,
)
from dgxmm.errors import DgxmmError, DoesNotFit, InvalidInput
from dgxmm.fleet import (
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
from dgxmm.jobs import CronSchedule, Job, JobKind, RunContext, resolve_zone
from dgxmm.store import Store, writing
from dgxmm.time_units import MINUTE_US, SECOND_US

__all__ = ["PAUSED_ALL", "ResultKind", "ScheduleService", "SlotRun"]

PAUSED_ALL = "schedules.paused_all"
QUIET_US = 10 * MINUTE_US  # no request activity for this long before a sleep or stop


class ResultKind(StrEnum):
    """How a slot's run ended."""

    DONE = "done"
    DEFERRED = "deferred"
    SKIPPED = "skipped"
    FAILED = "failed"

    @property
    def event(self) -> EventOutcome:
        """The outcome of the deployment event that records it."""
        return EventOutcome(self.value)  # the same four words


@dataclass(frozen=True, slots=True, kw_only=True)
class _Outcome:
    kind: ResultKind
    reason: str | None = None
    deferred_since: int | None = None
    acted: bool = False  # the deployer ran the action (and wrote its event)


@dataclass(frozen=True, slots=True, kw_only=True)
class SlotRun:
    """One slot the runner handled."""

    schedule_id: int
    deployment_id: int
    action: ScheduleAction
    day: str
    kind: ResultKind
    reason: str | None = None

    @property
    def result(self) -> str:
        """The result as the schedule records it: done, deferred, skipped: ..., failed: ..."""
        if self.kind in (ResultKind.SKIPPED, ResultKind.FAILED):
            return f"{self.kind.value}: {self.reason}"
        return self.kind.value


class ScheduleService:
    """Schedules of deployments: admin changes, and the runner's pass every minute."""

    def __init__(self, store: Store, fleet: Fleet, *, clock: Clock | None = None) -> None:
        self._store = store
        self._fleet = fleet
        self._clock = clock or store.clock
        self._rows = ScheduleRows(store.engine, fleet.deployments)
        fleet.add_removal_hook(self._before_removal)

    # -- admin changes ------------------------------------------------------------------------

    def create(
        self,
        deployment_id: int,
        *,
        action: ScheduleAction,
        days: int,
        time: str,
        time_zone: str | None = None,
        enabled: bool = True,
        actor: str,
        connection: Connection | None = None,
    ) -> Schedule:
        """Create a schedule (``DefinitionError`` naming the field); audited."""
        keys: dict[str, Any] = {"action": action, "days": days, "time": time, "enabled": enabled}
        if time_zone is not None:
            keys["time_zone"] = time_zone
        values = checked_changes(keys)
        if connection is None:
            with writing(self._store.engine) as owned:
                return self._create(owned, deployment_id, values, actor)
        return self._create(connection, deployment_id, values, actor)

    def _create(
        self, connection: Connection, deployment_id: int, values: dict[str, Any], actor: str
    ) -> Schedule:
        zone = self._rows.deployment_zone(connection, deployment_id)
        now = self._clock.now_us()
        values.setdefault("time_zone", zone)
        schedule = self._rows.insert(
            connection,
            {
                **values,
                "deployment_id": deployment_id,
                "creator": actor,
                "created_at": now,
                "updated_at": now,
            },
        )
        self._audit(
            connection, actor, AuditAction.SCHEDULE_CREATE, schedule, after=schedule.to_json()
        )
        return schedule

    def get(self, schedule_id: int) -> Schedule:
        """Return one schedule (``NotFound``)."""
        return self._rows.get(schedule_id)

    def list(
        self, deployment_id: int | None = None, *, connection: Connection | None = None
    ) -> list[Schedule]:
        """Return the schedules of a deployment (or all), oldest first."""
        return self._rows.list(deployment_id, connection=connection)

    def update(self, schedule_id: int, *, actor: str, **changes: Any) -> Schedule:
        """Change a schedule's action, days, time, zone or switch; switching on un-pauses it."""
        values = checked_changes(changes)
        with writing(self._store.engine) as connection:
            before = self._rows.get(schedule_id, connection=connection)
            values["updated_at"] = self._clock.now_us()
            if values.get("enabled") is True:
                values["paused_reason"] = None
            if {"days", "at_time", "time_zone"} & values.keys():
                values["deferred_since"] = None  # a deferral belongs to the old slot
            self._rows.change(connection, schedule_id, values)
            after = self._rows.get(schedule_id, connection=connection)
            self._audit(
                connection,
                actor,
                AuditAction.SCHEDULE_UPDATE,
                after,
                before=before.to_json(),
                after=after.to_json(),
            )
        return after

    def delete(self, schedule_id: int, *, actor: str) -> None:
        """Remove a schedule; audited."""
        with writing(self._store.engine) as connection:
            before = self._rows.get(schedule_id, connection=connection)
            self._audit(
                connection, actor, AuditAction.SCHEDULE_DELETE, before, before=before.to_json()
            )
            self._rows.remove(connection, schedule_id)

    def paused_all(self) -> bool:
        """Tell whether every schedule is paused (the runner does nothing)."""
        return self._store.get_setting(PAUSED_ALL, False) is True

    def set_paused_all(self, on: bool, *, actor: str) -> None:
        """Pause or resume every schedule; audited."""
        if not isinstance(on, bool):
            raise InvalidInput("paused_all", f"{on!r} is not true or false")
        self._store.set_setting(PAUSED_ALL, on, actor=actor)
        self._fleet.audit.record(
            actor=actor,
            action=AuditAction.SCHEDULES_PAUSE_ALL if on else AuditAction.SCHEDULES_RESUME_ALL,
            subject=AuditSubject.SETTING, subject_id=PAUSED_ALL, detail={"paused_all": on},
        )  # fmt: skip

    # -- the runner ---------------------------------------------------------------------------

    def system_jobs(self) -> builtins.list[Job]:
        """Return the runner, a system job every minute."""
        return [
            Job(
                "schedule_runner",
                JobKind.SYSTEM,
                CronSchedule.parse("* * * * *"),
                self._run_job,
                description="runs the deployments' sleep, wake, stop and start schedules",
            )
        ]

    def _run_job(self, context: RunContext) -> str:
        runs = self.run_pass(context.started_at)
        if not runs:
            return "paused" if self.paused_all() else "nothing due"
        return ", ".join(f"schedule {run.schedule_id}: {run.result}" for run in runs)

    def run_pass(self, now_us: int | None = None) -> builtins.list[SlotRun]:
        """Run every slot due at ``now_us``; return what each did."""
        now = self._clock.now_us() if now_us is None else now_us
        if self.paused_all():
            return []
        zones: dict[str, tuple[ZoneInfo, date]] = {}
        runs = []
        for row in self._rows.runnable():  # light rows first: most slots are not due
            known = zones.get(row.time_zone)
            if known is None:
                zone = resolve_zone(row.time_zone)
                known = zones[row.time_zone] = (zone, local_today(now, zone))
            slot = due_slot(
                days=row.days,
                time=parse_time(row.at_time),
                zone=known[0],
                now_us=now,
                last_run_day=row.last_run_day,
                deferred_since=row.deferred_since,
                today=known[1],
            )
            if slot is not None:
                runs.append(self._run(self._rows.get(row.id), slot, now))
        return runs

    def _run(self, schedule: Schedule, slot: Slot, now: int) -> SlotRun:
        actor = f"schedule:{schedule.id}"
        try:
            if schedule.action.quiets:
                outcome = self._quiet_down(schedule, slot, now, actor)
            else:
                outcome = self._bring_up(schedule, actor)
        except DgxmmError as error:  # before the deployer acted: no event of its own
            outcome = _Outcome(kind=ResultKind.FAILED, reason=str(error))
        run = SlotRun(
            schedule_id=schedule.id,
            deployment_id=schedule.deployment_id,
            action=schedule.action,
            day=slot.day.isoformat(),
            kind=outcome.kind,
            reason=outcome.reason,
        )
        self._record(schedule, run, now, outcome, actor=actor)
        return run

    def _quiet_down(self, schedule: Schedule, slot: Slot, now: int, actor: str) -> _Outcome:
        fleet = self._fleet
        with fleet.deployer.lock(schedule.deployment_id):
            deployment = fleet.deployments.get(schedule.deployment_id)
            state = deployment.state
            if schedule.action is ScheduleAction.SLEEP and state is not DeploymentState.RUNNING:
                reason = _not_for(deployment, "put to sleep")
                return _Outcome(kind=ResultKind.SKIPPED, reason=reason)
            if schedule.action is ScheduleAction.STOP and state not in (
                DeploymentState.RUNNING,
                DeploymentState.SLEEPING,
            ):
                return _Outcome(kind=ResultKind.SKIPPED, reason=_not_for(deployment, "stopped"))
            since = schedule.deferred_since
            if since is None or since < slot.at_us:
                since = now  # the first deferral of this slot, if it is deferred now
            if now - since >= DEFER_WINDOW_US:
                reason = (
                    f"busy: not quiet within {DEFER_WINDOW_US // MINUTE_US} minutes "
                    "of its first deferral"
                )
                return _Outcome(kind=ResultKind.SKIPPED, reason=reason)
            if state is DeploymentState.RUNNING:  # asleep, nothing can be running
                busy = self._busy(deployment, now)
                if busy is not None:
                    return _Outcome(kind=ResultKind.DEFERRED, reason=busy, deferred_since=since)
            return self._act(schedule, deployment, actor)

    def _act(self, schedule: Schedule, deployment: Deployment, actor: str) -> _Outcome:
        """Ask the deployer; it writes the event (done, failed, or skipped when it won't fit)."""
        deployer = self._fleet.deployer
        try:
            if schedule.action is ScheduleAction.SLEEP:
                deployer.sleep(deployment.id, actor=actor)
            elif schedule.action is ScheduleAction.STOP:
                deployer.stop(deployment.id, actor=actor)
            elif deployment.state is DeploymentState.SLEEPING:
                deployer.wake(deployment.id, actor=actor, plans=False)
            else:
                deployer.start(deployment.id, actor=actor, plans=False)
        except DoesNotFit as refused:
            self._fleet.insights.raise_insight(
                InsightKind.SCHEDULE_DOES_NOT_FIT,
                deployment_id=deployment.id,
                severity=Severity.WARNING,
                message=(
                    f"Schedule {schedule.id} could not {schedule.action.value} "
                    f"{deployment.name}: {refused}"
                ),
                key=f"schedule:{schedule.id}:does-not-fit",
            )
            reason = f"it does not fit: {refused}"
            return _Outcome(kind=ResultKind.SKIPPED, reason=reason, acted=True)
        except DgxmmError as error:
            return _Outcome(kind=ResultKind.FAILED, reason=str(error), acted=True)
        return _Outcome(kind=ResultKind.DONE, acted=True)

    def _busy(self, deployment: Deployment, now: int) -> str | None:
        """Say why the deployment is not quiet, or None: a fresh sample, then the activity."""
        sample = self._fleet.metrics.sample_now(deployment.id)
        if not sample.is_idle:
            return (
                f"{sample.requests_running} request(s) running, {sample.requests_waiting} waiting"
            )
        last = self._fleet.metrics.last_request_at(deployment.id)
        if last is not None and now - last < QUIET_US:
            return (
                f"a request {max(0, now - last) // SECOND_US} s ago "
                f"(quiet needs {QUIET_US // MINUTE_US} minutes)"
            )
        return None

    def _bring_up(self, schedule: Schedule, actor: str) -> _Outcome:
        deployment = self._fleet.deployments.get(schedule.deployment_id)
        state = deployment.state
        wake = schedule.action is ScheduleAction.WAKE
        skipped = ResultKind.SKIPPED
        if state is DeploymentState.RUNNING:
            return _Outcome(kind=skipped, reason="it is already awake and running")
        if state is DeploymentState.SLEEPING and not wake:
            return _Outcome(kind=skipped, reason="it is asleep; a start does not wake it")
        if state in (DeploymentState.STARTING, DeploymentState.STOPPING):
            return _Outcome(kind=skipped, reason=f"it is {state.value}")
        if wake and state is not DeploymentState.SLEEPING:
            # Woken from stopped only when a schedule stopped it; a stop with no actor
            # (older events) counts as not stopped by a schedule.
            stop = self._fleet.events.latest(deployment.id, EventAction.STOP)
            by = stop.actor if stop is not None else None
            if by is None or not by.startswith("schedule:"):
                who = by or "someone unknown (the stop names no actor)"
                return _Outcome(kind=skipped, reason=f"it was stopped by {who}, not by a schedule")
        return self._act(schedule, deployment, actor)

    def _record(
        self, schedule: Schedule, run: SlotRun, now: int, outcome: _Outcome, *, actor: str
    ) -> None:
        fleet = self._fleet
        values: dict[str, Any] = {"last_run_at": now, "last_result": run.result}
        if run.kind is ResultKind.DEFERRED:
            values["deferred_since"] = outcome.deferred_since
        else:
            values["last_run_day"] = run.day
            values["deferred_since"] = None
        pause = run.kind is ResultKind.FAILED and schedule.action in (
            ScheduleAction.SLEEP,
            ScheduleAction.WAKE,
        )
        with writing(self._store.engine) as connection:
            self._rows.change(connection, schedule.id, values)
            if not outcome.acted:  # the deployer writes the event of an action it ran
                fleet.events.record(
                    schedule.deployment_id, schedule.action.event, actor=actor,
                    outcome=run.kind.event, detail=run.reason, connection=connection,
                )  # fmt: skip
            fleet.audit.record(
                actor=actor, action=schedule.action.audited, subject=AuditSubject.DEPLOYMENT,
                subject_id=str(schedule.deployment_id),
                detail={"schedule": schedule.id, "day": run.day, "result": run.result},
                connection=connection,
            )  # fmt: skip
            if pause:
                self._pause(connection, schedule, run, now)
        if pause:
            fleet.insights.raise_insight(
                InsightKind.SCHEDULE_FAILED,
                deployment_id=schedule.deployment_id,
                severity=Severity.CRITICAL,
                message=(
                    f"Schedule {schedule.id} failed to {schedule.action.value} deployment "
                    f"{schedule.deployment_id}: {run.reason}. Its sleep and wake schedules are "
                    "paused until an admin switches them on again."
                ),
                key=f"schedule_failed:{schedule.deployment_id}:{run.day}",
            )

    def _pause(self, connection: Connection, failed: Schedule, run: SlotRun, now: int) -> None:
        reason = f"paused: schedule {failed.id} failed to {failed.action.value} ({run.reason})"
        for schedule in self._rows.list(failed.deployment_id, connection=connection):
            if schedule.action in (ScheduleAction.SLEEP, ScheduleAction.WAKE) and schedule.enabled:
                self._rows.change(
                    connection,
                    schedule.id,
                    {"enabled": False, "paused_reason": reason, "updated_at": now},
                )
                self._audit(
                    connection, "system", AuditAction.SCHEDULE_PAUSE, schedule, detail=reason
                )

    # -- removal ------------------------------------------------------------------------------

    def _before_removal(self, connection: Connection, deployment: Deployment, actor: str) -> None:
        """Audit each of a removed deployment's schedules (the rows go by ON DELETE CASCADE)."""
        for schedule in self._rows.list(deployment.id, connection=connection):
            self._audit(
                connection, actor, AuditAction.SCHEDULE_DELETE, schedule,
                before=schedule.to_json(), detail="its deployment was removed",
            )  # fmt: skip

    def _audit(
        self,
        connection: Connection,
        actor: str,
        action: AuditAction,
        schedule: Schedule,
        *,
        before: Any = None,
        after: Any = None,
        detail: Any = None,
    ) -> None:
        self._fleet.audit.record(
            actor=actor,
            action=action,
            subject=AuditSubject.SCHEDULE,
            subject_id=str(schedule.id),
            detail={"deployment": schedule.deployment_id, "before": before, "after": after,
                    "note": detail},
            connection=connection,
        )  # fmt: skip


def _not_for(deployment: Deployment, what: str) -> str:
    return f"it is {deployment.state.value}, so it is not {what}"
