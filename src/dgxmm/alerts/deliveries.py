"""Deliveries: one message to one channel, claimed by one instance, and every attempt's record.

A delivery is claimed with a conditional ``UPDATE ... WHERE state = 'pending' AND next_at <=
now`` (or a claim whose holder let it lapse) that must change exactly one row: of several
instances on one PostgreSQL database that reach it at once, one sends it, on SQLite and
PostgreSQL alike. Its outcome is written only by the claimant (``WHERE claimed_by = me``).
Every attempt leaves a row (sent, retried, failed, with the status code): the log.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import Engine, and_, insert, or_, select, update

from dgxmm.alerts.messages import Message
from dgxmm.alerts.tables import alert_attempts, alert_channels, alert_deliveries, alert_messages
from dgxmm.errors import InvalidInput, NotFound
from dgxmm.store import reading, writing

__all__ = ["Attempt", "AttemptOutcome", "Deliveries", "Delivery", "DeliveryState", "LogEntry"]

MAX_LOG = 1000


class DeliveryState(StrEnum):
    """Where a delivery is."""

    PENDING = "pending"  # to be sent at ``next_at`` (a first try, or a retry)
    SENDING = "sending"  # claimed by an instance, under way
    SENT = "sent"  # the receiver answered 2xx
    FAILED = "failed"  # given up: retried until its hour passed, or nothing to send it with


class AttemptOutcome(StrEnum):
    """How one attempt ended."""

    SENT = "sent"
    RETRIED = "retried"  # failed; another try is planned
    FAILED = "failed"  # failed; the delivery is given up


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery:
    """One row of ``alert_deliveries``."""

    id: int
    message_id: int
    channel_id: int
    state: DeliveryState
    attempts: int
    next_at: int
    status_code: int | None
    error: str | None
    created_at: int
    finished_at: int | None

    def to_json(self) -> dict[str, Any]:
        """Return the delivery as JSON values."""
        return {
            "id": self.id,
            "message_id": self.message_id,
            "channel_id": self.channel_id,
            "state": self.state.value,
            "attempts": self.attempts,
            "next_at_us": self.next_at,
            "status_code": self.status_code,
            "error": self.error,
            "created_at_us": self.created_at,
            "finished_at_us": self.finished_at,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Attempt:
    """One attempt of a delivery."""

    at: int
    outcome: AttemptOutcome
    status_code: int | None
    error: str | None
    duration_ms: int
    instance: str

    def to_json(self) -> dict[str, Any]:
        """Return the attempt as JSON values."""
        return {
            "at_us": self.at,
            "outcome": self.outcome.value,
            "status_code": self.status_code,
            "error": self.error,
            "duration_ms": self.duration_ms,
            "instance": self.instance,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class LogEntry:
    """A delivery with its message, its channel's name and its attempts: a line of the log."""

    delivery: Delivery
    message: Message
    channel: str
    attempts: tuple[Attempt, ...]

    def to_json(self) -> dict[str, Any]:
        """Return the entry as JSON values."""
        return {
            **self.delivery.to_json(),
            "channel": self.channel,
            "message": self.message.to_json(),
            "log": [attempt.to_json() for attempt in self.attempts],
        }


class Deliveries:
    """Claims deliveries, records their attempts, reads the log."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def due(
        self, now_us: int, limit: int = 20, *, channel_id: int | None = None
    ) -> builtins.list[tuple[int, int, int]]:
        """Return (delivery, message, channel) ids that may be claimed now, oldest first."""
        d = alert_deliveries.c
        query = select(d.id, d.message_id, d.channel_id).where(_claimable(now_us))
        if channel_id is not None:
            query = query.where(d.channel_id == channel_id)
        query = query.order_by(d.next_at, d.id).limit(limit)
        with reading(self._engine) as connection:
            return [
                (int(r.id), int(r.message_id), int(r.channel_id)) for r in connection.execute(query)
            ]

    def due_channels(self, now_us: int) -> builtins.set[int]:
        """Return the channels that have a delivery to claim now."""
        d = alert_deliveries.c
        query = select(d.channel_id).where(_claimable(now_us)).distinct()
        with reading(self._engine) as connection:
            return {int(r.channel_id) for r in connection.execute(query)}

    def claim(self, delivery_id: int, *, instance: str, now_us: int, hold_us: int) -> bool:
        """Take a delivery for this instance until ``now + hold``; tell whether it is ours."""
        d = alert_deliveries.c
        with writing(self._engine) as connection:
            changed = connection.execute(
                update(alert_deliveries)
                .where(d.id == delivery_id, _claimable(now_us))
                .values(
                    state=DeliveryState.SENDING.value,
                    claimed_by=instance,
                    claimed_until=now_us + hold_us,
                )
            ).rowcount
        return changed == 1

    def postpone(self, delivery_id: int, until_us: int) -> None:
        """Move a pending delivery's next try to ``until_us`` (no attempt is counted)."""
        d = alert_deliveries.c
        with writing(self._engine) as connection:
            connection.execute(
                update(alert_deliveries)
                .where(d.id == delivery_id, d.state == DeliveryState.PENDING.value)
                .values(next_at=until_us)
            )

    def record(
        self,
        delivery_id: int,
        *,
        instance: str,
        outcome: AttemptOutcome,
        at_us: int,
        status_code: int | None,
        error: str | None,
        duration_ms: int,
        next_at: int | None = None,
    ) -> bool:
        """Write an attempt and the delivery's new state; False when it is no longer ours."""
        d = alert_deliveries.c
        state = {
            AttemptOutcome.SENT: DeliveryState.SENT,
            AttemptOutcome.RETRIED: DeliveryState.PENDING,
            AttemptOutcome.FAILED: DeliveryState.FAILED,
        }[outcome]
        done = outcome is not AttemptOutcome.RETRIED
        with writing(self._engine) as connection:
            row = connection.execute(
                select(d.attempts).where(
                    d.id == delivery_id,
                    d.claimed_by == instance,
                    d.state == DeliveryState.SENDING.value,
                )
            ).first()
            if row is None:
                return False
            connection.execute(
                update(alert_deliveries)
                .where(d.id == delivery_id)
                .values(
                    state=state.value,
                    attempts=int(row.attempts) + 1,
                    next_at=next_at if next_at is not None else at_us,
                    claimed_by=None,
                    claimed_until=None,
                    status_code=status_code,
                    error=error,
                    finished_at=at_us if done else None,
                )
            )
            connection.execute(
                insert(alert_attempts).values(
                    delivery_id=delivery_id,
                    at=at_us,
                    outcome=outcome.value,
                    status_code=status_code,
                    error=error,
                    duration_ms=duration_ms,
                    instance=instance,
                )
            )
        return True

    def get(self, delivery_id: int) -> LogEntry:
        """Return one delivery with its message and attempts (``NotFound``)."""
        found = self._entries(alert_deliveries.c.id == delivery_id, limit=1)
        if not found:
            raise NotFound("delivery", delivery_id)
        return found[0]

    def log(self, *, limit: int = 100, channel_id: int | None = None) -> builtins.list[LogEntry]:
        """Return the newest deliveries, each with its attempts."""
        if not 1 <= limit <= MAX_LOG:
            raise InvalidInput("limit", f"{limit} is out of range 1-{MAX_LOG}")
        where = alert_deliveries.c.id > 0
        if channel_id is not None:
            where = alert_deliveries.c.channel_id == channel_id
        return self._entries(where, limit=limit)

    def _entries(self, where: Any, *, limit: int) -> builtins.list[LogEntry]:
        d = alert_deliveries
        query = (
            select(d, alert_channels.c.name.label("channel_name"))
            .join(alert_channels, alert_channels.c.id == d.c.channel_id)
            .where(where)
            .order_by(d.c.id.desc())
            .limit(limit)
        )
        with reading(self._engine) as connection:
            rows = connection.execute(query).all()
            ids = [int(r.id) for r in rows]
            messages = {
                int(m.id): Message.from_row(m)
                for m in connection.execute(
                    select(alert_messages).where(
                        alert_messages.c.id.in_({int(r.message_id) for r in rows})
                    )
                )
            }
            attempts: dict[int, list[Attempt]] = {i: [] for i in ids}
            for a in connection.execute(
                select(alert_attempts)
                .where(alert_attempts.c.delivery_id.in_(ids))
                .order_by(alert_attempts.c.id)
            ):
                attempts[int(a.delivery_id)].append(
                    Attempt(
                        at=int(a.at),
                        outcome=AttemptOutcome(a.outcome),
                        status_code=a.status_code,
                        error=a.error,
                        duration_ms=int(a.duration_ms),
                        instance=a.instance,
                    )
                )
        return [
            LogEntry(
                delivery=_delivery(r),
                message=messages[int(r.message_id)],
                channel=r.channel_name,
                attempts=tuple(attempts[int(r.id)]),
            )
            for r in rows
        ]


def _claimable(now_us: int) -> Any:
    d = alert_deliveries.c
    return or_(
        and_(d.state == DeliveryState.PENDING.value, d.next_at <= now_us),
        # Its claimant stopped or died mid-send: after its hold, another instance takes it.
        and_(d.state == DeliveryState.SENDING.value, d.claimed_until < now_us),
    )


def _delivery(row: Any) -> Delivery:
    return Delivery(
        id=int(row.id),
        message_id=int(row.message_id),
        channel_id=int(row.channel_id),
        state=DeliveryState(row.state),
        attempts=int(row.attempts),
        next_at=int(row.next_at),
        status_code=row.status_code,
        error=row.error,
        created_at=int(row.created_at),
        finished_at=row.finished_at,
    )
