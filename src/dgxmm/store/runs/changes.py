"""The store's change log: one row per committed change made by a job (``job: <name>``).

A query job's run writes its row in the run's own transaction, so the row exists exactly when
the run's writes do. Other packages may record their own changes the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, select

from dgxmm.store.schema import change_log

__all__ = ["ChangeEntry", "read_changes", "record_change"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeEntry:
    """One committed change."""

    id: int
    at_us: int
    job: str | None
    actor: str | None
    summary: str

    def to_json(self) -> dict[str, Any]:
        """Return the entry as plain JSON values."""
        return {
            "id": self.id,
            "at_us": self.at_us,
            "job": self.job,
            "actor": self.actor,
            "summary": self.summary,
        }


def record_change(
    connection: Connection, *, at_us: int, job: str | None, actor: str | None, summary: str
) -> None:
    """Write a change-log row inside the caller's transaction."""
    connection.execute(
        change_log.insert().values(at_us=at_us, job=job, actor=actor, summary=summary)
    )


def read_changes(
    connection: Connection, *, after_id: int = 0, job: str | None = None, limit: int = 100
) -> list[ChangeEntry]:
    """Return change-log rows after ``after_id``, oldest first (of one job, if given)."""
    query = select(change_log).where(change_log.c.id > after_id)
    if job is not None:
        query = query.where(change_log.c.job == job)
    rows = connection.execute(query.order_by(change_log.c.id).limit(limit))
    return [
        ChangeEntry(id=r.id, at_us=r.at_us, job=r.job, actor=r.actor, summary=r.summary)
        for r in rows
    ]
