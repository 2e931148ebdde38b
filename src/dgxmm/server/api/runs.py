"""``GET /api/runs``: every job run and every deployment action in one list, paged by cursor.

The list is ``server/lists/runs.py``'s; a job run's own record is ``GET /api/jobs/runs/{id}``.
"""

from __future__ import annotations

from typing import Annotated, Any
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Query

from dgxmm.errors import InvalidInput
from dgxmm.server.edge.deps import ServicesDep, Viewer
from dgxmm.server.edge.openapi import answers
from dgxmm.server.edge.paging import (
    CursorQuery,
    LimitQuery,
    make_cursor,
    read_bool,
    read_cursor,
    read_limit,
    read_span,
)
from dgxmm.server.lists.jobs import iso
from dgxmm.server.lists.runs import RunFilter, RunStatus, list_runs, read_run_key

__all__ = ["read_filter", "router"]

router = APIRouter(prefix="/api/runs", tags=["runs"])

NameQuery = Annotated[str | None, Query(max_length=200, description="one job's runs")]
TimeQuery = Annotated[
    str | None, Query(max_length=100, description="ISO 8601; without an offset, the server's zone")
]


@router.get("", responses=answers(400))
def runs(
    services: ServicesDep,
    who: Viewer,
    *,
    status: RunStatus | None = None,
    job: NameQuery = None,
    deployment: Annotated[
        str | None, Query(max_length=20, description="one deployment's actions (its id)")
    ] = None,
    since: TimeQuery = None,
    until: TimeQuery = None,
    hide_system: Annotated[
        str | None, Query(max_length=10, description="true: without the system jobs' runs")
    ] = None,
    limit: LimitQuery = None,
    cursor: CursorQuery = None,
) -> dict[str, Any]:
    """Job runs and deployment actions, newest first, ``limit`` at a time (100).

    Filters: ``status``, ``job`` or ``deployment`` (not both), ``since`` (inclusive) and
    ``until`` (exclusive) of the start, ``hide_system`` (true: user jobs and deployments
    only). The next page: pass ``next_cursor`` as ``cursor`` (null after the last). A viewer
    reads errors' public form.
    """
    host = services.host
    chosen = read_filter(
        host.time_zone,
        status=status,
        job=job,
        deployment=deployment,
        since=since,
        until=until,
        hide_system=hide_system,
    )
    size = read_limit(limit)
    assert size is not None
    after = read_run_key(read_cursor(cursor, "all-runs"))
    rows, next_key = list_runs(
        host.store, services.fleet, chosen, limit=size, after=after, full_errors=who.is_admin
    )
    return {
        "runs": [
            row.to_json()
            | {"at": iso(row.at_us, host), "finished_at": iso(row.finished_at_us, host)}
            for row in rows
        ],
        "next_cursor": None if next_key is None else make_cursor("all-runs", list(next_key)),
    }


def read_filter(
    zone: ZoneInfo,
    *,
    status: RunStatus | None,
    job: str | None,
    deployment: str | None,
    since: str | None,
    until: str | None,
    hide_system: str | None = None,
) -> RunFilter:
    """Read the list's filters from text, every wrong one named in one refusal."""
    wrong: list[tuple[str, str]] = []
    hidden = False
    try:
        hidden = read_bool(hide_system or None, "hide_system") or False
    except InvalidInput as error:
        wrong.append((error.field, error.message))
    deployment_id: int | None = None
    if deployment:
        if deployment.isascii() and deployment.isdigit() and 1 <= int(deployment) < 2**63:
            deployment_id = int(deployment)
        else:
            wrong.append(("deployment", f"{deployment[:40]!r} is not a deployment id"))
    since_us, until_us = read_span(zone, since, until, wrong)
    if job is not None and len(job) > 200:
        wrong.append(("job", "a job name is 1-200 characters"))
    if wrong:
        raise InvalidInput.every(wrong)
    return RunFilter(
        status=status,
        job=job or None,
        deployment=deployment_id,
        since_us=since_us,
        until_us=until_us,
        hide_system=hidden,
    )
