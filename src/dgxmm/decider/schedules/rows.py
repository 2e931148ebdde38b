"""The ``deployment_schedules`` rows: typed records, their checks, and the SQL on them."""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, Engine, delete, insert, select, update

from dgxmm.decider.days import ALL_DAYS, describe_days
from dgxmm.decider.schedules.slots import parse_time
from dgxmm.decider.tables import deployment_schedules
from dgxmm.errors import DefinitionError, NotFound, ZoneError
from dgxmm.fleet import AuditAction, DeploymentRepo, EventAction
from dgxmm.jobs import resolve_zone
from dgxmm.jobs.keys import Refusals
from dgxmm.store import reading

__all__ = ["Schedule", "ScheduleAction", "ScheduleRows", "checked_changes"]


class ScheduleAction(StrEnum):
    """What a slot does to its deployment."""

    SLEEP = "sleep"
    WAKE = "wake"
    STOP = "stop"
    START = "start"

    @property
    def quiets(self) -> bool:
        """Tell whether the action takes the deployment down (and so checks traffic first)."""
        return self in (ScheduleAction.SLEEP, ScheduleAction.STOP)

    @property
    def event(self) -> EventAction:
        """The deployment event the action is written down as."""
        return _EVENTS[self]

    @property
    def audited(self) -> AuditAction:
        """The audit action of a slot that ran it."""
        return _AUDITED[self]


_EVENTS = {
    ScheduleAction.SLEEP: EventAction.SLEEP,
    ScheduleAction.WAKE: EventAction.WAKE,
    ScheduleAction.STOP: EventAction.STOP,
    ScheduleAction.START: EventAction.START,
}
_AUDITED = {
    ScheduleAction.SLEEP: AuditAction.SCHEDULE_SLEEP,
    ScheduleAction.WAKE: AuditAction.SCHEDULE_WAKE,
    ScheduleAction.STOP: AuditAction.SCHEDULE_STOP,
    ScheduleAction.START: AuditAction.SCHEDULE_START,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Schedule:
    """One deployment schedule as stored."""

    id: int
    deployment_id: int
    action: ScheduleAction
    days: int  # Monday 1, Tuesday 2, ... Sunday 64
    time: str  # local HH:MM
    time_zone: str
    enabled: bool
    creator: str
    created_at: int
    updated_at: int
    last_run_at: int | None
    last_run_day: str | None  # the local date of the slot last run
    last_result: str | None
    paused_reason: str | None
    deferred_since: int | None
    # The timed-out sleep event whose failure paused it; None for any other pause (kept out
    # of the JSON: it is the runner's bookkeeping, ``paused_reason`` says it for people).
    paused_for_event: int | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the schedule as plain JSON values."""
        return {
            "id": self.id,
            "deployment_id": self.deployment_id,
            "action": self.action.value,
            "days": self.days,
            "days_text": describe_days(self.days),
            "time": self.time,
            "time_zone": self.time_zone,
            "enabled": self.enabled,
            "creator": self.creator,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "last_run_at": self.last_run_at,
            "last_run_day": self.last_run_day,
            "last_result": self.last_result,
            "paused_reason": self.paused_reason,
            "deferred_since": self.deferred_since,
        }


_FIELDS = ("action", "days", "time", "time_zone", "enabled")


def checked_changes(keys: dict[str, Any]) -> dict[str, Any]:
    """Check the given keys of a schedule; return them as column values.

    Every key is checked: the ``DefinitionError`` raised names the first wrong field and
    lists each in ``errors``, as a job definition's does.
    """
    refusals = Refusals()
    checked = refusals.check
    refusals.found.extend(
        DefinitionError(key, f"{key} is not a field of a schedule")
        for key in keys
        if key not in _FIELDS
    )
    values: dict[str, Any] = {}
    if "action" in keys:
        values["action"] = checked(lambda: _action(keys["action"]))
    if "days" in keys:
        values["days"] = checked(lambda: _days(keys["days"]))
    if "time" in keys:
        checked(lambda: parse_time(keys["time"]))
        values["at_time"] = keys["time"]
    if "time_zone" in keys:
        values["time_zone"] = checked(lambda: _zone(keys["time_zone"]))
    if "enabled" in keys:
        values["enabled"] = checked(lambda: _enabled(keys["enabled"]))
    refusals.raise_any()
    return values


def _action(value: Any) -> str:
    try:
        return ScheduleAction(value).value
    except ValueError:
        raise DefinitionError(
            "action", f"{value!r} is not one of sleep, wake, stop, start"
        ) from None


def _days(days: Any) -> int:
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= ALL_DAYS:
        raise DefinitionError(
            "days", f"{days!r} is not a days mask from 1 to 127 (Monday 1 ... Sunday 64)"
        )
    return days


def _zone(name: Any) -> str:
    try:
        return resolve_zone(name, field="time_zone").key
    except ZoneError as error:  # a refused field among the others, not a lone error
        raise DefinitionError("time_zone", error.message) from None


def _enabled(value: Any) -> bool:
    if not isinstance(value, bool):
        raise DefinitionError("enabled", f"{value!r} is not true or false")
    return value


def _row(row: Any) -> Schedule:
    return Schedule(
        id=row.id,
        deployment_id=row.deployment_id,
        action=ScheduleAction(row.action),
        days=row.days,
        time=row.at_time,
        time_zone=row.time_zone,
        enabled=bool(row.enabled),
        creator=row.creator,
        created_at=row.created_at,
        updated_at=row.updated_at,
        last_run_at=row.last_run_at,
        last_run_day=row.last_run_day,
        last_result=row.last_result,
        paused_reason=row.paused_reason,
        deferred_since=row.deferred_since,
        paused_for_event=row.paused_for_event,
    )


class ScheduleRows:
    """Reads and writes schedules in the store's database."""

    def __init__(self, engine: Engine, deployments: DeploymentRepo) -> None:
        self._engine = engine
        self._deployments = deployments

    def deployment_zone(self, connection: Connection, deployment_id: int) -> str:
        """Return a deployment's zone; ``NotFound`` when there is no such deployment."""
        return self._deployments.get(deployment_id, connection=connection).time_zone

    def insert(self, connection: Connection, values: dict[str, Any]) -> Schedule:
        """Insert a schedule and return it."""
        inserted = connection.execute(insert(deployment_schedules).values(**values))
        new_id = inserted.inserted_primary_key
        assert new_id is not None
        return self.get(int(new_id[0]), connection=connection)

    def get(self, schedule_id: int, *, connection: Connection | None = None) -> Schedule:
        """Return one schedule (``NotFound``)."""
        query = select(deployment_schedules).where(deployment_schedules.c.id == schedule_id)
        if connection is not None:
            row = connection.execute(query).first()
        else:
            with reading(self._engine) as reader:
                row = reader.execute(query).first()
        if row is None:
            raise NotFound("schedule", schedule_id)
        return _row(row)

    def list(
        self,
        deployment_id: int | None = None,
        *,
        enabled_only: bool = False,
        connection: Connection | None = None,
    ) -> builtins.list[Schedule]:
        """Return schedules (of one deployment, or all), oldest first."""
        query = select(deployment_schedules).order_by(deployment_schedules.c.id)
        if deployment_id is not None:
            query = query.where(deployment_schedules.c.deployment_id == deployment_id)
        if enabled_only:
            query = query.where(deployment_schedules.c.enabled.is_(True))
        if connection is not None:
            return [_row(row) for row in connection.execute(query)]
        with reading(self._engine) as reader:
            return [_row(row) for row in reader.execute(query)]

    def runnable(self) -> builtins.list[Any]:
        """Return what the runner needs to tell whether each switched-on schedule is due."""
        table = deployment_schedules
        query = select(
            table.c.id, table.c.deployment_id, table.c.action, table.c.days, table.c.at_time,
            table.c.time_zone, table.c.last_run_day, table.c.deferred_since,
        ).where(table.c.enabled.is_(True)).order_by(table.c.id)  # fmt: skip
        with reading(self._engine) as connection:
            return list(connection.execute(query))

    def enabled_slots(self) -> builtins.list[Any]:
        """Return each switched-on schedule's deployment, action, days, time and zone.

        The idle policy reads them every pulse to tell a scheduled awake window.
        """
        table = deployment_schedules
        query = select(
            table.c.id, table.c.deployment_id, table.c.action, table.c.days, table.c.at_time,
            table.c.time_zone,
        ).where(table.c.enabled.is_(True)).order_by(table.c.id)  # fmt: skip
        with reading(self._engine) as connection:
            return list(connection.execute(query))

    def change(self, connection: Connection, schedule_id: int, values: dict[str, Any]) -> None:
        """Write new column values of a schedule."""
        connection.execute(
            update(deployment_schedules)
            .where(deployment_schedules.c.id == schedule_id)
            .values(**values)
        )

    def remove(self, connection: Connection, schedule_id: int) -> None:
        """Delete a schedule."""
        table = deployment_schedules
        connection.execute(delete(table).where(table.c.id == schedule_id))
