"""One list of runs: every job run and every action that moved a deployment's server.

The two live in two layers (``job_runs`` in the store, ``deployment_events`` in the fleet),
so the list is merged here, above both: each source gives its newest ``limit`` rows after
the cursor, and the page is the newest ``limit`` of the two. The order is (time, source,
id), newest first, a total order, so a cursor (the key of a page's last row) starts the
next page exactly after it, whatever the sources wrote since.

A status is one word for both: a job's ``succeeded`` and an action's ``done`` are both
``succeeded``; a job that ran past its timeout ``failed`` (the job list calls it failing
too); an action skipped, deferred or only forecast is ``skipped``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from dgxmm.errors import InvalidInput
from dgxmm.fleet import Event, EventOutcome, Fleet
from dgxmm.jobs import JobKind, Outcome
from dgxmm.server.access.redaction import public_text
from dgxmm.store import RunRecord, Store

__all__ = [
    "ListedRun",
    "RunFilter",
    "RunSource",
    "RunStatus",
    "event_status",
    "job_status",
    "list_runs",
    "read_run_key",
]


class RunStatus(Enum):
    """Where a run stands, in one word for jobs and deployment actions."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"


class RunSource(Enum):
    """What a run is a run of."""

    JOB = "job"
    DEPLOYMENT = "deployment"


# At one instant, a job's run is listed before a deployment's action (newest first).
_RANK = {RunSource.DEPLOYMENT: 0, RunSource.JOB: 1}
_USER_KINDS = frozenset({JobKind.USER})

_JOB_OUTCOMES: dict[RunStatus, frozenset[Outcome | None]] = {
    RunStatus.RUNNING: frozenset({None}),
    RunStatus.SUCCEEDED: frozenset({Outcome.SUCCEEDED}),
    RunStatus.FAILED: frozenset({Outcome.FAILED, Outcome.OVER_TIME}),
    RunStatus.CANCELLED: frozenset({Outcome.CANCELLED}),
    RunStatus.SKIPPED: frozenset(),
}
_EVENT_OUTCOMES: dict[RunStatus, frozenset[EventOutcome]] = {
    RunStatus.RUNNING: frozenset(),  # an action is recorded once it has ended
    RunStatus.SUCCEEDED: frozenset({EventOutcome.DONE}),
    RunStatus.FAILED: frozenset({EventOutcome.FAILED}),
    RunStatus.CANCELLED: frozenset(),
    RunStatus.SKIPPED: frozenset(
        {EventOutcome.SKIPPED, EventOutcome.DEFERRED, EventOutcome.FORECAST}
    ),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFilter:
    """What the list is narrowed to; a job or a deployment, never both."""

    status: RunStatus | None = None
    job: str | None = None
    deployment: int | None = None
    since_us: int | None = None  # inclusive
    until_us: int | None = None  # exclusive
    # Without the system jobs' runs (three a minute would push every deployment action off
    # the first page): user jobs' runs and deployment actions only.
    hide_system: bool = False

    def __post_init__(self) -> None:
        if self.job is not None and self.deployment is not None:
            raise InvalidInput("deployment", "pick a job or a deployment, not both")
        if (
            self.since_us is not None
            and self.until_us is not None
            and self.until_us <= self.since_us
        ):
            raise InvalidInput("until", "is not after since")


@dataclass(frozen=True, slots=True, kw_only=True)
class ListedRun:
    """One row of the list."""

    source: RunSource
    id: int
    at_us: int  # a job run's start, an action's record
    finished_at_us: int | None
    name: str  # the job's, or the deployment's
    what: str  # the job's kind, or the action (start, sleep, ...)
    trigger: str  # what started a job run; who asked for an action
    status: RunStatus
    error: str | None  # as the reader may read it
    href: str
    deployment_id: int | None = None  # an action's deployment (its page is linked)

    @property
    def key(self) -> tuple[int, int, int]:
        """The row's place in the list's order."""
        return (self.at_us, _RANK[self.source], self.id)

    def to_json(self) -> dict[str, Any]:
        """Return the row as plain JSON values, instants in microseconds."""
        return {
            "source": self.source.value,
            "id": self.id,
            "at_us": self.at_us,
            "finished_at_us": self.finished_at_us,
            "name": self.name,
            "what": self.what,
            "trigger": self.trigger,
            "status": self.status.value,
            "error": self.error,
            "href": self.href,
            "deployment_id": self.deployment_id,
        }


def read_run_key(key: object) -> tuple[int, int, int] | None:
    """Return a cursor's key as the list's (time, rank, id), or refuse it naming ``cursor``."""
    if key is None:
        return None
    if (
        isinstance(key, list)
        and len(key) == 3
        and all(isinstance(part, int) and not isinstance(part, bool) for part in key)
    ):
        return (key[0], key[1], key[2])
    raise InvalidInput("cursor", "is not a cursor of runs: pass next_cursor as given")


def list_runs(
    store: Store,
    fleet: Fleet | None,
    chosen: RunFilter,
    *,
    limit: int,
    after: tuple[int, int, int] | None,
    full_errors: bool,
) -> tuple[list[ListedRun], tuple[int, int, int] | None]:
    """Return a page of the list, newest first, and the key after which the next one starts.

    ``fleet``: None when this app serves no deployments (only job runs are listed then).
    """
    rows: list[ListedRun] = []
    if chosen.deployment is None:
        rows += [_job_row(r, full_errors) for r in _job_runs(store, chosen, limit, after)]
    if fleet is not None and chosen.job is None:
        names = {d.id: d.name for d in fleet.deployments.list()}
        events = _events(fleet, chosen, limit, after)
        rows += [_event_row(e, names, full_errors) for e in events]
    rows.sort(key=lambda row: row.key, reverse=True)
    if len(rows) <= limit:
        return rows, None
    page = rows[:limit]
    return page, page[-1].key


def _before(source: RunSource, after: tuple[int, int, int] | None) -> tuple[int, int] | None:
    """Translate the list's key into one source's (time, id) bound, exclusive."""
    if after is None:
        return None
    at, rank, row_id = after
    mine = _RANK[source]
    if mine < rank:
        return (at + 1, 0)  # every row of this source at ``at`` comes after the key
    if mine > rank:
        return (at, 0)  # none of them does
    return (at, row_id)


def _job_runs(
    store: Store, chosen: RunFilter, limit: int, after: tuple[int, int, int] | None
) -> list[RunRecord]:
    outcomes = None if chosen.status is None else _JOB_OUTCOMES[chosen.status]
    if outcomes is not None and not outcomes:
        return []
    return store.runs.newest(
        limit=limit + 1,
        job=chosen.job,
        kinds=_USER_KINDS if chosen.hide_system else None,
        outcomes=outcomes,
        since_us=chosen.since_us,
        until_us=chosen.until_us,
        before=_before(RunSource.JOB, after),
    )


def _events(
    fleet: Fleet, chosen: RunFilter, limit: int, after: tuple[int, int, int] | None
) -> list[Event]:
    outcomes = None if chosen.status is None else _EVENT_OUTCOMES[chosen.status]
    if outcomes is not None and not outcomes:
        return []
    return fleet.events.newest(
        limit=limit + 1,
        deployment_id=chosen.deployment,
        outcomes=outcomes,
        since_us=chosen.since_us,
        until_us=chosen.until_us,
        before=_before(RunSource.DEPLOYMENT, after),
    )


def job_status(record: RunRecord) -> RunStatus:
    """Return a job run's status in the list's words."""
    return next(s for s, outcomes in _JOB_OUTCOMES.items() if record.outcome in outcomes)


def event_status(event: Event) -> RunStatus:
    """Return an action's status in the list's words."""
    return next(s for s, outcomes in _EVENT_OUTCOMES.items() if event.outcome in outcomes)


def _job_row(record: RunRecord, full_errors: bool) -> ListedRun:
    return ListedRun(
        source=RunSource.JOB,
        id=record.id,
        at_us=record.started_at,
        finished_at_us=record.finished_at,
        name=record.job,
        what=f"{record.kind.value} job",
        trigger=record.trigger.value,
        status=job_status(record),
        error=record.error if full_errors else record.public_error,
        href=f"/runs/{record.id}",
    )


def _event_row(event: Event, names: dict[int, str], full_errors: bool) -> ListedRun:
    # An event's detail is a dgxmm sentence that may quote a server's error: a viewer reads
    # it masked, as on the deployment's page (``redaction.event_shown_to``).
    detail = event.detail if full_errors else public_text(event.detail)
    return ListedRun(
        source=RunSource.DEPLOYMENT,
        id=event.id,
        at_us=event.at_us,
        finished_at_us=event.at_us,
        name=names.get(event.deployment_id, f"deployment {event.deployment_id}"),
        what=event.action.value,
        trigger=event.actor or "(unknown)",
        status=event_status(event),
        error=detail if event.outcome is EventOutcome.FAILED else None,
        href=f"/runs/actions/{event.id}",
        deployment_id=event.deployment_id,
    )
