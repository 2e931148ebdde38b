"""The catalog's user jobs as the engine schedules them.

``build_user_jobs`` turns job definitions into engine ``Job`` objects, one group per action
(``query``, ``checkpoint``, ``backup``: jobs of one type never run at once), and lists every
definition it does not schedule with its reason (an action or ``run_on`` this version does
not know, ``run_on: "replica"`` on a single instance, a stored schedule that does not parse,
a system job's name), so that none is dropped silently.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dgxmm.errors import DefinitionError
from dgxmm.jobs import Action, Job, JobKind
from dgxmm.store.catalog.definitions import JobSpec
from dgxmm.store.catalog.records import JobDefinition

__all__ = ["NotScheduled", "UserJobs", "build_user_jobs"]


@dataclass(frozen=True, slots=True, kw_only=True)
class NotScheduled:
    """A user job the store does not schedule, and why."""

    name: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        """Return it as plain JSON values."""
        return {"name": self.name, "reason": self.reason}


@dataclass(frozen=True, slots=True, kw_only=True)
class UserJobs:
    """The user jobs to schedule, and those not scheduled with their reasons."""

    jobs: list[Job] = field(default_factory=list)
    not_scheduled: list[NotScheduled] = field(default_factory=list)


def build_user_jobs(
    definitions: list[JobDefinition],
    *,
    spec_of: Callable[[JobDefinition], JobSpec],
    action_for: Callable[[str], Action],
) -> UserJobs:
    """Turn definitions into jobs to schedule; list the others with their reasons."""
    found = UserJobs()
    for definition in definitions:
        if definition.reason is not None:
            found.not_scheduled.append(NotScheduled(name=definition.name, reason=definition.reason))
            continue
        try:
            spec = spec_of(definition)
        except DefinitionError as error:
            found.not_scheduled.append(NotScheduled(name=definition.name, reason=str(error)))
            continue
        found.jobs.append(
            Job(
                spec.name,
                JobKind.USER,
                spec.schedule,
                action_for(spec.name),
                limits=spec.limits,
                group=spec.action.value,
                enabled=spec.enabled,
                description=spec.description,
                time_zone=spec.time_zone,
                pause_note=spec.pause_note,
                retry=spec.retry,
                catch_up=spec.catch_up,
                overlap=spec.overlap,
            )
        )
    return found
