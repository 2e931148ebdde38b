"""A run as the store has it: its row read back, and what started it.

``job_runs.py`` claims and completes the rows; the pages, the API and ``explain`` read them
as ``RunRecord``s, so the row's shape is turned into values once, here.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from dgxmm.jobs import JobKind, Outcome

__all__ = ["RunRecord", "Trigger", "run_record"]


class Trigger(Enum):
    """What started a run."""

    SCHEDULE = "schedule"  # its cron time came, on the ticking instance
    MANUAL = "manual"  # Run now: POST /api/jobs/run
    CLI = "cli"  # dgxmm jobs run
    RETRY = "retry"  # a failed scheduled run tried again (its attempt is 2 and up)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRecord:
    """One run as the store has it."""

    id: int
    job: str
    kind: JobKind
    group: str | None
    trigger: Trigger
    scheduled_at: int
    started_at: int
    finished_at: int | None  # None while under way
    outcome: Outcome | None  # None while under way
    error: str | None
    public_error: str | None
    result: str | None
    instance: str
    attempt: int = 1
    cancel_requested_by: str | None = None  # who asked to cancel it
    cancelled_by: str | None = None  # who cancelled it (outcome cancelled)

    @property
    def under_way(self) -> bool:
        """Tell whether the run has not ended (as far as the store knows)."""
        return self.finished_at is None

    def to_json(self, *, full_errors: bool) -> dict[str, Any]:
        """Return it as plain JSON values, instants in microseconds (``full_errors``: admins)."""
        duration = None if self.finished_at is None else self.finished_at - self.started_at
        return {
            "id": self.id,
            "job": self.job,
            "kind": self.kind.value,
            "trigger": self.trigger.value,
            "scheduled_at_us": self.scheduled_at,
            "started_at_us": self.started_at,
            "finished_at_us": self.finished_at,
            "duration_ms": None if duration is None else round(duration / 1000, 3),
            "outcome": None if self.outcome is None else self.outcome.value,
            "error": self.error if full_errors else self.public_error,
            "result": self.result,
            "instance": self.instance,
            "attempt": self.attempt,
            "cancel_requested_by": self.cancel_requested_by,
            "cancelled_by": self.cancelled_by,
        }


def run_record(row: Any) -> RunRecord:
    """Return a ``job_runs`` row (its mapping) as a ``RunRecord``."""
    return RunRecord(
        id=int(row["id"]),
        job=row["job"],
        kind=JobKind(row["kind"]),
        group=row["job_group"],
        trigger=Trigger(row["trigger"]),
        scheduled_at=int(row["scheduled_at"]),
        started_at=int(row["started_at"]),
        finished_at=None if row["finished_at"] is None else int(row["finished_at"]),
        outcome=None if row["outcome"] is None else Outcome(row["outcome"]),
        error=row["error"],
        public_error=row["public_error"],
        result=row["result"],
        instance=row["instance"],
        attempt=int(row["attempt"] or 1),
        cancel_requested_by=row["cancel_requested_by"],
        cancelled_by=row["cancelled_by"],
    )
