"""Audit rows: who did what to which thing, kept for people to read (``GET /api/audit``).

Actions are ``AuditAction`` members, dotted names (``deployment.start``, ``schedule.create``,
``insight.dismiss``), on an ``AuditSubject``; the detail is any JSON value. Callers that
change something pass their ``connection``, so the audit row commits, or not, with the
change it describes. No saved query may write the table (it is protected in the store).
"""

from __future__ import annotations

import builtins
import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, Engine, Row, insert, select

from dgxmm.clock import Clock
from dgxmm.errors import InvalidInput
from dgxmm.fleet.deployments.tables import audit_log
from dgxmm.store import reading, writing

__all__ = ["Audit", "AuditAction", "AuditEntry", "AuditSubject"]


class AuditSubject(StrEnum):
    """What kind of thing an audit row is about."""

    ALERT_CHANNEL = "alert_channel"
    ALERT_RULE = "alert_rule"
    DEPLOYMENT = "deployment"
    INSIGHT = "insight"
    PROPOSAL = "proposal"
    SCHEDULE = "schedule"
    SETTING = "setting"


class AuditAction(StrEnum):
    """What was done; every action dgxmm audits."""

    DEPLOYMENT_CREATE = "deployment.create"
    DEPLOYMENT_UPDATE = "deployment.update"
    DEPLOYMENT_REMOVE = "deployment.remove"
    DEPLOYMENT_START = "deployment.start"
    DEPLOYMENT_STOP = "deployment.stop"
    DEPLOYMENT_SLEEP = "deployment.sleep"
    DEPLOYMENT_WAKE = "deployment.wake"
    DEPLOYMENT_FAILED = "deployment.failed"  # its server was found gone
    DEPLOYMENT_REATTACH = "deployment.reattach"
    DEPLOYMENT_IDLE_PAUSE = "deployment.idle_pause"  # a failed idle step paused its policy
    INSIGHT_DISMISS = "insight.dismiss"
    SCHEDULE_CREATE = "schedule.create"
    SCHEDULE_UPDATE = "schedule.update"
    SCHEDULE_DELETE = "schedule.delete"
    SCHEDULE_PAUSE = "schedule.pause"  # the runner switched it off
    SCHEDULE_RESUME = "schedule.resume"  # switched on: the failure that paused it did not happen
    SCHEDULE_SLEEP = "schedule.sleep"  # the runner's slots, on the deployment
    SCHEDULE_WAKE = "schedule.wake"
    SCHEDULE_STOP = "schedule.stop"
    SCHEDULE_START = "schedule.start"
    SCHEDULES_PAUSE_ALL = "schedules.pause_all"
    SCHEDULES_RESUME_ALL = "schedules.resume_all"
    DECIDER_FORECAST_ONLY = "decider.forecast_only"  # switched on or off
    PROPOSALS_MODEL = "proposals.model"
    PROPOSAL_ACCEPT = "proposal.accept"
    PROPOSAL_DISMISS = "proposal.dismiss"
    ALERT_CHANNEL_CREATE = "alert_channel.create"
    ALERT_CHANNEL_SECRET = "alert_channel.secret"  # a new secret, shown once
    ALERT_CHANNEL_REMOVE = "alert_channel.remove"
    ALERT_CHANNEL_TEST = "alert_channel.test"
    ALERT_KEY_ROTATE = "alert_key.rotate"  # every channel sealed again under a new key
    ALERT_RULE_CREATE = "alert_rule.create"
    ALERT_RULE_SWITCH = "alert_rule.switch"  # switched on or off
    ALERT_RULE_REMOVE = "alert_rule.remove"


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditEntry:
    """One row of ``audit_log``."""

    id: int
    at_us: int
    actor: str | None
    action: AuditAction
    subject: AuditSubject
    subject_id: str | None
    detail: Any  # the JSON value written, or None

    def to_json(self) -> dict[str, Any]:
        """Return the row as JSON values."""
        return {
            "id": self.id,
            "at_us": self.at_us,
            "actor": self.actor,
            "action": self.action,
            "subject": self.subject,
            "subject_id": self.subject_id,
            "detail": self.detail,
        }

    @classmethod
    def from_row(cls, row: Row[Any]) -> AuditEntry:
        """Read an ``audit_log`` row."""
        return cls(
            id=int(row.id),
            at_us=int(row.at_us),
            actor=row.actor,
            action=AuditAction(row.action),
            subject=AuditSubject(row.subject),
            subject_id=row.subject_id,
            detail=json.loads(row.detail) if row.detail is not None else None,
        )


class Audit:
    """Writes and reads audit rows."""

    def __init__(self, engine: Engine, clock: Clock) -> None:
        self._engine = engine
        self._clock = clock

    def record(
        self,
        *,
        actor: str | None,
        action: AuditAction,
        subject: AuditSubject,
        subject_id: str | int | None,
        detail: Any = None,
        connection: Connection | None = None,
    ) -> AuditEntry:
        """Write an audit row (inside ``connection``'s transaction when one is given)."""
        values = {
            "at_us": self._clock.now_us(),
            "actor": actor,
            "action": action.value,
            "subject": subject.value,
            "subject_id": None if subject_id is None else str(subject_id),
            # default=str: an enum or a path in the detail is written as its text.
            "detail": None if detail is None else json.dumps(detail, default=str),
        }
        if connection is None:
            with writing(self._engine) as owned:
                return self._insert(owned, values)
        return self._insert(connection, values)

    def _insert(self, connection: Connection, values: dict[str, Any]) -> AuditEntry:
        key = connection.execute(insert(audit_log).values(**values)).inserted_primary_key
        assert key is not None
        return AuditEntry.from_row(
            connection.execute(select(audit_log).where(audit_log.c.id == key[0])).one()
        )

    def list(
        self,
        *,
        limit: int = 100,
        before_id: int | None = None,
        subject: AuditSubject | None = None,
        subject_id: str | None = None,
        actor: str | None = None,
        action: AuditAction | None = None,
        since_us: int | None = None,
        until_us: int | None = None,
    ) -> builtins.list[AuditEntry]:
        """Return audit rows, newest first, optionally of one subject, actor, action or time.

        ``since_us`` is inclusive, ``until_us`` exclusive.
        """
        if not 1 <= limit <= 10_000:
            raise InvalidInput("limit", f"{limit} is out of range 1-10000")
        query = select(audit_log)
        if before_id is not None:
            query = query.where(audit_log.c.id < before_id)
        if subject is not None:
            query = query.where(audit_log.c.subject == subject.value)
        if subject_id is not None:
            query = query.where(audit_log.c.subject_id == subject_id)
        if actor is not None:
            query = query.where(audit_log.c.actor == actor)
        if action is not None:
            query = query.where(audit_log.c.action == action.value)
        if since_us is not None:
            query = query.where(audit_log.c.at_us >= since_us)
        if until_us is not None:
            query = query.where(audit_log.c.at_us < until_us)
        query = query.order_by(audit_log.c.id.desc()).limit(limit)
        with reading(self._engine) as connection:
            return [AuditEntry.from_row(row) for row in connection.execute(query)]
