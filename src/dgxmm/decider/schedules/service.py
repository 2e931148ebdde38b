"""Deployment schedules and their runner (``ScheduleService``).

Schedules sleep, wake, stop or start a deployment on local days at a local ``HH:MM``. Only
an admin creates, changes or removes them (through the API, or by accepting a proposal);
every change is audited. The system job ``schedule_runner`` makes one pass a minute
(``runner.py``: the pass only decides; the actions run beside it on a bounded pool, one per
deployment at a time, so no slow model server stalls the pass):

1. it returns at once while the setting ``schedules.paused_all`` is set;
2. it finds the slots due at its planned minute in each schedule's zone (``slots.py``: once
   per local day, up to 15 minutes late, the engine's DST rule); of one deployment's slots
   due together, only the latest acts and the earlier ones are recorded superseded;
3. a sleep or stop re-checks traffic under the deployment's lock: no request activity for
   10 minutes and a fresh metrics sample with nothing running or waiting; otherwise the
   slot is deferred and retried at each pass for 60 minutes, then skipped (busy);
4. a wake or start takes the deployer's normal path (fit check, start-up gate) without
   plans, so it never evicts anything; when it does not fit, the slot is skipped and an
   insight raised. A wake that finds its deployment stopped starts it only when the latest
   stop was a schedule's;
5. each run is recorded: a deployment event with actor ``schedule:<id>``, an audit row, and
   the schedule's last run and result. A state that changed under the runner is skipped;
   only a failed server makes a run failed, and a failed scheduled sleep or wake pauses
   that deployment's sleep and wake schedules and raises an insight (``pauses.py``; a
   sleep that timed out and is found finished after all lifts its pause).
"""

from __future__ import annotations

import builtins
from concurrent.futures import Future
from typing import Any

from sqlalchemy import Connection

from dgxmm.clock import Clock
from dgxmm.decider.idle.runner import IdleOutcome, IdleRunner
from dgxmm.decider.schedules.pauses import Pauses
from dgxmm.decider.schedules.rows import Schedule, ScheduleAction, ScheduleRows, checked_changes
from dgxmm.decider.schedules.runner import PendingRun, ResultKind, ScheduleRunner, SlotRun
from dgxmm.decider.tables import deployment_schedules
from dgxmm.errors import InvalidInput
from dgxmm.fleet import AuditAction, AuditSubject, Deployment, Fleet
from dgxmm.jobs import CronSchedule, Job, JobKind, RunContext
from dgxmm.store import Store, Topic, writing

__all__ = [
    "FORECAST_ONLY",
    "PAUSED_ALL",
    "PendingRun",
    "ResultKind",
    "ScheduleService",
    "SlotRun",
]

PAUSED_ALL = "schedules.paused_all"
FORECAST_ONLY = "decider.forecast_only"


class ScheduleService:
    """Schedules of deployments: admin changes, and the runner's pass every minute."""

    def __init__(self, store: Store, fleet: Fleet, *, clock: Clock | None = None) -> None:
        self._store = store
        self._fleet = fleet
        self._clock = clock or store.clock
        self._rows = ScheduleRows(store.engine, fleet.deployments)
        store.versions.watch({deployment_schedules.name: Topic.SCHEDULES})  # the live pages
        self._pauses = Pauses(store, fleet, self._rows, audit=self._audit_by_system)
        self._runner = ScheduleRunner(store, fleet, self._rows, pauses=self._pauses)
        # The idle policies (issue 25) read the schedules' awake windows, and pause with them.
        self.idle = IdleRunner(store, fleet, self._rows)
        fleet.add_removal_hook(self._before_removal)
        # A timed-out scheduled sleep the metrics pass finds finished: lift its pause.
        fleet.add_late_finish_hook(self._pauses.lift)

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
            if "enabled" in values:  # a person's switch: a pause is theirs now, never lifted
                values["paused_for_event"] = None
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

    def forecast_only(self) -> bool:
        """Tell whether the decider only forecasts: its policies record, never act."""
        return self._store.get_setting(FORECAST_ONLY, False) is True

    def set_forecast_only(self, on: bool, *, actor: str) -> None:
        """Switch forecast-only mode on or off; audited."""
        if not isinstance(on, bool):
            raise InvalidInput("forecast_only", f"{on!r} is not true or false")
        self._store.set_setting(FORECAST_ONLY, on, actor=actor)
        self._fleet.audit.record(
            actor=actor, action=AuditAction.DECIDER_FORECAST_ONLY, subject=AuditSubject.SETTING,
            subject_id=FORECAST_ONLY, detail={"forecast_only": on},
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
        # The planned minute, not the start: a pass that begins at 22:15:03 is still the
        # 22:15 pass, and the 22:00 slot is 15 minutes late, not 15 minutes and 3 seconds.
        pending = (
            self._runner.start_pass(context.scheduled_at, leads=not self.forecast_only())
            if not self.paused_all()
            else []
        )
        if not pending:
            return "paused" if self.paused_all() else "nothing due"
        return ", ".join(run.describe() for run in pending)

    def start_pass(self, now_us: int | None = None) -> builtins.list[PendingRun]:
        """Hand every slot due at the planned minute ``now_us`` to the runner's workers."""
        if self.paused_all():
            return []
        now = self._clock.now_us() if now_us is None else now_us
        return self._runner.start_pass(now, leads=not self.forecast_only())

    def run_pass(
        self, now_us: int | None = None, *, timeout_s: float = 600.0
    ) -> builtins.list[SlotRun]:
        """Run every slot due at ``now_us`` and wait for their actions; return what each did."""
        runs = []
        for pending in self.start_pass(now_us):
            run = pending.future.result(timeout=timeout_s)
            if run is not None:
                runs.append(run)
        return runs

    def idle_pulse(self, now_us: int | None = None) -> builtins.list[Future[IdleOutcome]]:
        """Decide the idle policies' steps at ``now_us`` (every second); nothing while paused.

        ``schedules.paused_all`` pauses the idle policies too: it is the operator's switch
        for everything the decider does on its own.
        """
        if self.paused_all():
            return []
        now = self._clock.now_us() if now_us is None else now_us
        return self.idle.pulse(now, forecast_only=self.forecast_only())

    def drain(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the actions under way; tell whether all finished."""
        return self._runner.drain(timeout_s) and self.idle.drain(timeout_s)

    def close(self) -> None:
        """Start no more actions (those under way finish on their threads)."""
        self._runner.close()
        self.idle.close()

    def _audit_by_system(
        self, connection: Connection, action: AuditAction, schedule: Schedule, note: str
    ) -> None:
        self._audit(connection, "system", action, schedule, detail=note)

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
