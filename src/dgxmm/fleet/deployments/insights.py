"""Insights: what a person should know (a deployment failed, a schedule did not fit ...).

An insight with a ``key`` is raised once while it is open: raising it again before someone
dismisses it returns None and writes nothing, so a condition seen every minute makes one
row, not one a minute. Dismissing is audited. A deployment's insights go before the
deployment does (the table has no cascade, on purpose): ``remove_for`` is the fleet's own
removal hook.
"""

from __future__ import annotations

import builtins
from contextlib import nullcontext
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, Engine, Row, delete, insert, select, update

from dgxmm.clock import Clock
from dgxmm.errors import InvalidInput, NotFound
from dgxmm.fleet.deployments.audit import Audit, AuditAction, AuditSubject
from dgxmm.fleet.deployments.deployment import Deployment
from dgxmm.fleet.deployments.tables import deployments, insights
from dgxmm.store import Dialect, reading, writing

__all__ = ["Insight", "InsightKind", "Insights", "Severity"]

# Serializes "is there an open one with this key?" and the insert on PostgreSQL, where two
# instances may share the database; SQLite's write transaction already takes the lock.
_PG_LOCK = 0x64677878_0001


class InsightKind(StrEnum):
    """What an insight is about."""

    ALERT_CHANNEL_FAILING = "alert_channel_failing"  # its deliveries failed again and again
    DEMO = "demo"  # dgxmm serve --demo is running
    DEPLOYMENT_FAILED = "deployment_failed"
    IDLE_PAUSED = "idle_paused"  # an idle step failed: its idle policy waits for a person
    IDLE_STOP_FREED_ROOM = "idle_stop_freed_room"  # room for a start that was refused
    PROPOSAL_COLDER = "proposal_colder"  # an accepted proposal's week met more cold requests
    INVENTORY = "inventory"  # how the GPUs were found
    METRICS_UNREADABLE = "metrics_unreadable"
    SCHEDULE_DOES_NOT_FIT = "schedule_does_not_fit"
    SCHEDULE_FAILED = "schedule_failed"


class Severity(StrEnum):
    """How much it matters."""

    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"


@dataclass(frozen=True, slots=True, kw_only=True)
class Insight:
    """One row of ``insights``."""

    id: int
    kind: InsightKind
    deployment_id: int | None
    severity: Severity
    message: str
    key: str | None
    created_at: int
    dismissed_at: int | None
    dismissed_by: str | None

    @property
    def is_open(self) -> bool:
        """Tell whether nobody has dismissed it yet."""
        return self.dismissed_at is None

    def to_json(self) -> dict[str, Any]:
        """Return the insight as JSON values."""
        return {
            "id": self.id,
            "kind": self.kind.value,
            "deployment_id": self.deployment_id,
            "severity": self.severity.value,
            "message": self.message,
            "key": self.key,
            "created_at_us": self.created_at,
            "dismissed_at_us": self.dismissed_at,
            "dismissed_by": self.dismissed_by,
        }

    @classmethod
    def from_row(cls, row: Row[Any]) -> Insight:
        """Read an ``insights`` row."""
        return cls(
            id=int(row.id),
            kind=InsightKind(row.kind),
            deployment_id=None if row.deployment_id is None else int(row.deployment_id),
            severity=Severity(row.severity),
            message=row.message,
            key=row.key,
            created_at=int(row.created_at),
            dismissed_at=row.dismissed_at,
            dismissed_by=row.dismissed_by,
        )


class Insights:
    """Raises, lists and dismisses insights."""

    def __init__(self, engine: Engine, dialect: Dialect, clock: Clock, audit: Audit) -> None:
        self._engine = engine
        self._dialect = dialect
        self._clock = clock
        self._audit = audit

    def raise_insight(
        self,
        kind: InsightKind,
        *,
        deployment_id: int | None,
        severity: Severity,
        message: str,
        key: str | None = None,
        connection: Connection | None = None,
    ) -> Insight | None:
        """Write an insight; return None when an open one with the same key exists.

        With ``connection``, inside that write transaction (many insights, one commit).
        """
        if not isinstance(message, str) or not message:
            raise InvalidInput("message", "an insight needs a message")
        if key is not None and (not isinstance(key, str) or not key or len(key) > 200):
            raise InvalidInput("key", f"{key!r} is not a key (1-200 characters)")
        within = writing(self._engine) if connection is None else nullcontext(connection)
        with within as used:
            if deployment_id is not None and not _exists(used, deployment_id):
                raise NotFound("deployment", deployment_id)
            if key is not None:
                if self._dialect is Dialect.POSTGRESQL:
                    used.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_PG_LOCK})")
                open_one = used.execute(
                    select(insights.c.id).where(
                        insights.c.key == key, insights.c.dismissed_at.is_(None)
                    )
                ).first()
                if open_one is not None:
                    return None
            inserted = used.execute(
                insert(insights).values(
                    kind=kind.value,
                    deployment_id=deployment_id,
                    severity=severity.value,
                    message=message,
                    key=key,
                    created_at=self._clock.now_us(),
                )
            ).inserted_primary_key
            assert inserted is not None
            return self._get(used, int(inserted[0]))

    def get(self, insight_id: int) -> Insight:
        """Return one insight (``NotFound``)."""
        with reading(self._engine) as connection:
            return self._get(connection, insight_id)

    def list(
        self,
        include_dismissed: bool = False,
        *,
        deployment_id: int | None = None,
        limit: int = 500,
        before_id: int | None = None,
    ) -> builtins.list[Insight]:
        """Return insights, newest first: the open ones, or all; below ``before_id`` if given."""
        query = select(insights)
        if before_id is not None:
            query = query.where(insights.c.id < before_id)
        if not include_dismissed:
            query = query.where(insights.c.dismissed_at.is_(None))
        if deployment_id is not None:
            query = query.where(insights.c.deployment_id == deployment_id)
        query = query.order_by(insights.c.id.desc()).limit(limit)
        with reading(self._engine) as connection:
            return [Insight.from_row(row) for row in connection.execute(query)]

    def dismiss(self, insight_id: int, actor: str) -> Insight:
        """Dismiss an insight (audited); dismissing it again changes nothing."""
        with writing(self._engine) as connection:
            found = self._get(connection, insight_id)
            if not found.is_open:
                return found
            connection.execute(
                update(insights)
                .where(insights.c.id == insight_id)
                .values(dismissed_at=self._clock.now_us(), dismissed_by=actor)
            )
            self._audit.record(
                actor=actor,
                action=AuditAction.INSIGHT_DISMISS,
                subject=AuditSubject.INSIGHT,
                subject_id=insight_id,
                detail={"kind": found.kind.value, "deployment": found.deployment_id},
                connection=connection,
            )
            return self._get(connection, insight_id)

    def dismiss_open(self, key: str, actor: str) -> Insight | None:
        """Dismiss the open insight with ``key`` (audited); None when none is open."""
        with reading(self._engine) as connection:
            found = connection.execute(
                select(insights.c.id).where(
                    insights.c.key == key, insights.c.dismissed_at.is_(None)
                )
            ).first()
        return None if found is None else self.dismiss(int(found.id), actor)

    def remove_for(self, connection: Connection, deployment: Deployment, actor: str) -> None:
        """Delete a removed deployment's insights (a removal hook; the audit row says so)."""
        connection.execute(delete(insights).where(insights.c.deployment_id == deployment.id))

    def _get(self, connection: Connection, insight_id: int) -> Insight:
        row = connection.execute(select(insights).where(insights.c.id == insight_id)).first()
        if row is None:
            raise NotFound("insight", insight_id)
        return Insight.from_row(row)


def _exists(connection: Connection, deployment_id: int) -> bool:
    found = connection.execute(select(deployments.c.id).where(deployments.c.id == deployment_id))
    return found.first() is not None
