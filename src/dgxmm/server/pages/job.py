"""A job's page: its definition, its next times (DST marked), and its runs, paged.

The next times are found in the job's own zone (its ``time_zone``, else the server's), the
zone its schedule is read in, and so are their DST marks; each is shown in the display zone,
as every time on a page, and also as the job's wall time when the two zones differ.

The runs are the store's per-run records (``job_runs``, as ``GET /api/jobs/runs`` reads
them): each run's start, trigger, outcome, duration, error or result and the instance that
ran it, newest first; ``?before=`` (a run id) pages back.
"""

from __future__ import annotations

from typing import Annotated, Any
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.clock import from_us
from dgxmm.errors import CronError, ZoneError
from dgxmm.jobs import CronSchedule, resolve_zone
from dgxmm.server.edge.deps import HostDep, QueryId, identify
from dgxmm.server.host import Host
from dgxmm.server.lists.jobs import iso, job_row
from dgxmm.server.pages.render import render_page
from dgxmm.store import MAX_RUNS_PAGE

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

NEXT_TIMES = 8


def _next_times(schedule: str | None, zone: ZoneInfo, now: int) -> list[dict[str, Any]]:
    """The next fire times in ``zone``, marked where a DST gap moved one or the offset changes."""
    if not schedule:
        return []
    try:
        parsed = CronSchedule.parse(schedule)
    except CronError:
        return []
    shown = []
    offset = from_us(now, zone).utcoffset()
    for fire in parsed.fire_times(now, zone, NEXT_TIMES):
        this = fire.local.utcoffset()
        mark = None
        if fire.moved:
            mark = "moved by a DST gap (that wall time does not exist that day)"
        elif this != offset:
            mark = f"after the clocks change (UTC{fire.local.strftime('%z')})"
        offset = this
        shown.append(
            {
                "at": fire.local.isoformat(),
                "wall": fire.local.strftime("%Y-%m-%d %H:%M"),
                "moved": fire.moved,
                "mark": mark,
            }
        )
    return shown


def _zone(host: Host, row: dict[str, Any]) -> ZoneInfo:
    """Return the zone a job's row says it is read in (the server's when it cannot be read)."""
    try:
        return resolve_zone(row.get("time_zone") or host.time_zone, field="time_zone")
    except ZoneError:
        return host.time_zone


@router.get("/jobs/{name}", response_class=HTMLResponse)
def job_page(
    request: Request,
    name: str,
    host: HostDep,
    before: QueryId = None,
    limit: Annotated[int, Query(ge=1, le=MAX_RUNS_PAGE)] = 25,
) -> Response:
    """One job: what it is, when it runs next, and how its runs went."""
    who = identify(request)
    full_errors = who is not None and who.is_admin
    row = job_row(host, name, full_errors=full_errors)  # NotFound: 404
    now = host.clock.now_us()
    # One more than shown: whether there is an older page.
    found = host.store.runs.page(job=name, before=before, limit=min(limit + 1, MAX_RUNS_PAGE))
    shown = found[:limit]
    return render_page(
        request,
        "job.html",
        job=row,
        next_times=_next_times(row.get("schedule"), _zone(host, row), now),
        runs=[
            {
                **run.to_json(full_errors=full_errors),
                "started_at": iso(run.started_at, host),
                "scheduled_at": iso(run.scheduled_at, host),
            }
            for run in shown
        ],
        older=shown[-1].id if len(found) > limit else None,
        paged=before is not None,
    )
