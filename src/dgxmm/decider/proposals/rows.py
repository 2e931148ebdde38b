"""The ``schedule_proposals`` rows: the typed record, its states and sources, and their SQL."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import Connection, Row, insert, select, update

from dgxmm.decider.days import describe_days
from dgxmm.decider.tables import schedule_proposals
from dgxmm.errors import NotFound

__all__ = [
    "Proposal",
    "ProposalSource",
    "ProposalStatus",
    "change_proposal",
    "insert_proposal",
    "read_proposal",
]


class ProposalStatus(StrEnum):
    """Where a proposal stands."""

    OPEN = "open"
    ACCEPTED = "accepted"
    DISMISSED = "dismissed"


class ProposalSource(StrEnum):
    """What proposed it: the rules alone, or a decision model."""

    RULES = "rules"
    FEEDBACK = "feedback"
    OPENAI = "openai"


@dataclass(frozen=True, slots=True, kw_only=True)
class Proposal:
    """A proposed pair of schedules: sleep on some days at a time, wake on others."""

    id: int
    deployment_id: int
    sleep_days: int
    sleep_time: str
    wake_days: int
    wake_time: str
    time_zone: str
    source: str
    confidence: float
    evidence: dict[str, Any]
    features: dict[str, Any]
    status: ProposalStatus
    created_at: int
    decided_at: int | None
    decided_by: str | None
    sleep_schedule_id: int | None
    wake_schedule_id: int | None
    wake_lead: str | None = None  # "measured": accepting it sets the deployment's wake lead
    backtest: dict[str, Any] | None = None  # per held-out week (dgxmm.lab.backtest), or None

    @property
    def key(self) -> tuple[int, str, int, str, str]:
        """What makes two proposals the same: days, times and zone."""
        return (self.sleep_days, self.sleep_time, self.wake_days, self.wake_time, self.time_zone)

    @property
    def description(self) -> str:
        """Say it in words."""
        return (
            f"sleep {describe_days(self.sleep_days)} at {self.sleep_time}, "
            f"wake {describe_days(self.wake_days)} at {self.wake_time}"
        )

    def to_json(self) -> dict[str, Any]:
        """Return the proposal as JSON values."""
        return {
            "id": self.id,
            "deployment_id": self.deployment_id,
            "description": self.description,
            "sleep": {
                "days": self.sleep_days,
                "days_text": describe_days(self.sleep_days),
                "time": self.sleep_time,
            },
            "wake": {
                "days": self.wake_days,
                "days_text": describe_days(self.wake_days),
                "time": self.wake_time,
            },
            "time_zone": self.time_zone,
            "source": self.source,
            "confidence": self.confidence,
            "evidence": self.evidence,
            "features": self.features,
            "status": self.status.value,
            "created_at_us": self.created_at,
            "decided_at_us": self.decided_at,
            "decided_by": self.decided_by,
            "sleep_schedule_id": self.sleep_schedule_id,
            "wake_schedule_id": self.wake_schedule_id,
            "wake_lead": self.wake_lead,
            "backtest": self.backtest,
        }

    @classmethod
    def from_row(cls, row: Row[Any]) -> Proposal:
        """Read a ``schedule_proposals`` row."""
        return cls(
            id=int(row.id),
            deployment_id=int(row.deployment_id),
            sleep_days=int(row.sleep_days),
            sleep_time=str(row.sleep_time),
            wake_days=int(row.wake_days),
            wake_time=str(row.wake_time),
            time_zone=str(row.time_zone),
            source=str(row.source),
            confidence=float(row.confidence),
            evidence=json.loads(row.evidence),
            features=json.loads(row.features),
            status=ProposalStatus(row.status),
            created_at=int(row.created_at),
            decided_at=None if row.decided_at is None else int(row.decided_at),
            decided_by=row.decided_by,
            sleep_schedule_id=None if row.sleep_schedule_id is None else int(row.sleep_schedule_id),
            wake_schedule_id=None if row.wake_schedule_id is None else int(row.wake_schedule_id),
            wake_lead=row.wake_lead,
            backtest=None if row.backtest is None else json.loads(row.backtest),
        )


def read_proposal(connection: Connection, proposal_id: int) -> Proposal:
    """Return one proposal (``NotFound``)."""
    row = connection.execute(
        select(schedule_proposals).where(schedule_proposals.c.id == proposal_id)
    ).first()
    if row is None:
        raise NotFound("proposal", proposal_id)
    return Proposal.from_row(row)


def insert_proposal(connection: Connection, values: dict[str, Any]) -> int:
    """Insert a proposal row; return its id."""
    key = connection.execute(insert(schedule_proposals).values(**values)).inserted_primary_key
    assert key is not None
    return int(key[0])


def change_proposal(connection: Connection, proposal_id: int, values: dict[str, Any]) -> None:
    """Change some columns of a proposal."""
    connection.execute(
        update(schedule_proposals).where(schedule_proposals.c.id == proposal_id).values(**values)
    )
