"""Messages: what a rule (or a test) has to say, and one delivery per channel to say it.

A message is written with its deliveries in one transaction, by the evaluator or a test
send; the sender takes the deliveries from there. Nothing here sends.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, Engine, Row, delete, insert

from dgxmm.alerts.tables import alert_deliveries, alert_incidents, alert_messages
from dgxmm.store import writing

__all__ = ["Message", "MessageKind", "post_message", "purge_messages"]


class MessageKind(StrEnum):
    """Why a message was sent."""

    FIRING = "firing"  # a rule's condition began to hold for a subject
    SUMMARY = "summary"  # it happened again, this many times, since the last message
    RESOLVED = "resolved"  # it no longer holds
    TEST = "test"  # an admin's test of a channel


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One message, as each channel's body is made from it."""

    id: int
    kind: MessageKind
    rule: str | None
    condition: str | None
    subject: str | None
    title: str
    text: str
    occurrences: int
    created_at: int

    def to_json(self) -> dict[str, Any]:
        """Return the message as JSON values (the generic body is made of these)."""
        return {
            "id": self.id,
            "kind": self.kind.value,
            "rule": self.rule,
            "condition": self.condition,
            "subject": self.subject,
            "title": self.title,
            "text": self.text,
            "occurrences": self.occurrences,
            "created_at_us": self.created_at,
        }

    @classmethod
    def from_row(cls, row: Row[Any]) -> Message:
        """Read an ``alert_messages`` row."""
        return cls(
            id=int(row.id),
            kind=MessageKind(row.kind),
            rule=row.rule,
            condition=row.condition,
            subject=row.subject,
            title=row.title,
            text=row.text,
            occurrences=int(row.occurrences),
            created_at=int(row.created_at),
        )


def post_message(
    connection: Connection,
    *,
    kind: MessageKind,
    title: str,
    text: str,
    channel_ids: Iterable[int],
    at_us: int,
    rule: str | None = None,
    condition: str | None = None,
    subject: str | None = None,
    occurrences: int = 1,
) -> tuple[int, list[int]]:
    """Write a message and a pending delivery to each channel; return their ids."""
    key = connection.execute(
        insert(alert_messages).values(
            kind=kind.value,
            rule=rule,
            condition=condition,
            subject=subject,
            title=title,
            text=text,
            occurrences=occurrences,
            created_at=at_us,
        )
    ).inserted_primary_key
    assert key is not None
    message_id = int(key[0])
    deliveries = []
    for channel_id in sorted(set(channel_ids)):
        made = connection.execute(
            insert(alert_deliveries).values(
                message_id=message_id,
                channel_id=channel_id,
                state="pending",
                attempts=0,
                next_at=at_us,
                created_at=at_us,
            )
        ).inserted_primary_key
        assert made is not None
        deliveries.append(int(made[0]))
    return message_id, deliveries


def purge_messages(engine: Engine, before_us: int) -> int:
    """Delete the messages made before ``before_us`` (their deliveries and attempts go with
    them) and the incidents resolved before it; return the messages deleted."""
    with writing(engine) as connection:
        deleted = connection.execute(
            delete(alert_messages).where(alert_messages.c.created_at < before_us)
        ).rowcount
        connection.execute(delete(alert_incidents).where(alert_incidents.c.resolved_at < before_us))
    return int(deleted)
