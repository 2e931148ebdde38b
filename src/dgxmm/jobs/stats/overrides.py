"""A system job's overrides: its schedule and switch as the instance's user changed them.

``JobOverrides`` is where a scheduler keeps them. ``WorkloadStats`` keeps them itself (and
writes them to its sidecar) unless given a keeper; a store gives it its database's, which
every instance on it shares (``dgxmm.store.runs.overrides``). ``KEEP`` says "leave this one
as it is" in a change, since None there means "back to the built-in".
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Final, Protocol

from dgxmm.errors import InvalidInput
from dgxmm.jobs.keys import check_pause_note

__all__ = ["KEEP", "JobOverrides", "Keep", "Override", "check_override", "overridden"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Override:
    """A system job's schedule and switch as changed by the instance's user (None: built in)."""

    schedule: str | None = None
    enabled: bool | None = None
    note: str | None = None  # why it was switched off (kept while it is off)


class Keep(Enum):
    """A typed "leave it as it is" for an override that None restores."""

    KEEP = "keep"


KEEP: Final = Keep.KEEP


class JobOverrides(Protocol):
    """Where a scheduler keeps the overrides of its system jobs' schedules and switches.

    ``WorkloadStats`` keeps them in memory (and its sidecar) unless given a keeper; a store
    keeps them in its database, shared by every instance on it
    (``dgxmm.store.runs.overrides``), and gives its stats that keeper.
    """

    def job_override(self, name: str) -> Override | None:
        """Return a job's override, if it has one."""
        ...

    def set_job_override(
        self,
        name: str,
        *,
        schedule: str | Keep | None = KEEP,
        enabled: bool | Keep | None = KEEP,
        note: str | Keep | None = KEEP,
    ) -> None:
        """Change a job's overridden schedule, switch and/or pause note; None: none."""
        ...


def check_override(
    schedule: str | Keep | None, enabled: bool | Keep | None, note: str | Keep | None
) -> None:
    """Raise ``InvalidInput`` naming the first value of a change that is not what it says."""
    if schedule is not KEEP and schedule is not None and not isinstance(schedule, str):
        raise InvalidInput("schedule", f"{schedule!r} is not cron text (or None)")
    if enabled is not KEEP and enabled is not None and not isinstance(enabled, bool):
        raise InvalidInput("enabled", f"{enabled!r} is not true or false (or None)")
    if note is not KEEP and note is not None:
        check_pause_note(note, field="note")


def overridden(
    current: Override,
    schedule: str | Keep | None,
    enabled: bool | Keep | None,
    note: str | Keep | None,
) -> Override:
    """Return ``current`` with a change applied: each value but ``KEEP`` replaces its own."""
    return Override(
        schedule=current.schedule if schedule is KEEP else schedule,
        enabled=current.enabled if enabled is KEEP else enabled,
        note=current.note if note is KEEP else note,
    )
