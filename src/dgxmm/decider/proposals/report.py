"""What a proposal run did: for each deployment, every window and candidate it considered."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from dgxmm.decider.proposals.rows import Proposal

__all__ = ["Considered", "DeploymentRun", "Outcome", "ProposalRun"]


class Outcome(StrEnum):
    """What became of a window or candidate in a run."""

    PROPOSED = "proposed"
    SKIPPED = "skipped"  # by the rules before any decision
    NOT_PROPOSED = "not proposed"  # decided against (model or rules)
    BLOCKED = "blocked"  # its schedules exist, or it was dismissed lately


@dataclass(frozen=True, slots=True, kw_only=True)
class Considered:
    """One window or candidate a run looked at, and what became of it."""

    what: str
    outcome: Outcome
    reason: str

    def to_json(self) -> dict[str, str]:
        """Return it as JSON values."""
        return {"what": self.what, "outcome": self.outcome.value, "reason": self.reason}


@dataclass(frozen=True, slots=True, kw_only=True)
class DeploymentRun:
    """What a run did for one deployment."""

    deployment_id: int
    note: str | None  # why nothing was looked at, when that is so
    considered: tuple[Considered, ...]
    open: tuple[Proposal, ...]  # its open proposals after the run

    def to_json(self) -> dict[str, Any]:
        """Return it as JSON values."""
        return {
            "deployment_id": self.deployment_id,
            "note": self.note,
            "considered": [c.to_json() for c in self.considered],
            "open": [p.to_json() for p in self.open],
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ProposalRun:
    """What a run did: the model it asked (or why none), and each deployment."""

    model: str | None
    model_reason: str
    deployments: tuple[DeploymentRun, ...]

    def to_json(self) -> dict[str, Any]:
        """Return it as JSON values."""
        return {
            "model": self.model,
            "model_reason": self.model_reason,
            "deployments": [d.to_json() for d in self.deployments],
        }
