"""A job's page: its definition, its next times (DST marked), and its runs, paged.

The runs come from the scheduler's workload history, per hour (count, failures, longest),
newest first; ``?before=`` (an hour's start, in microseconds) pages back.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.clock import from_us
from dgxmm.errors import CronError, NotFound
from dgxmm.jobs import CronSchedule, Tier
from dgxmm.server.deps import HostDep, QueryInstant, identify
from dgxmm.server.host import Host
from dgxmm.server.job_list import iso, job_row
from dgxmm.server.pages.render import render_page

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

NEXT_TIMES = 8


def _next_times(host: Host, schedule: str | None, now: int) -> list[dict[str, Any]]:
    """The next fire times, each marked where a DST gap moved it or the offset changes."""
    if not schedule:
        return []
    try:
        parsed = CronSchedule.parse(schedule)
    except CronError:
        return []
    shown = []
    offset = from_us(now, host.time_zone).utcoffset()
    for fire in parsed.fire_times(now, host.time_zone, NEXT_TIMES):
        this = fire.local.utcoffset()
        mark = None
        if fire.moved:
            mark = "moved by a DST gap (that wall time does not exist that day)"
        elif this != offset:
            mark = f"after the clocks change (UTC{fire.local.strftime('%z')})"
        offset = this
        shown.append({"at": fire.local.isoformat(), "moved": fire.moved, "mark": mark})
    return shown


@router.get("/jobs/{name}", response_class=HTMLResponse)
def job_page(
    request: Request,
    name: str,
    host: HostDep,
    before: QueryInstant = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 48,
) -> Response:
    """One job: what it is, when it runs next, and how its runs went."""
    who = identify(request)
    row = job_row(host, name, full_errors=who is not None and who.is_admin)  # NotFound: 404
    now = host.clock.now_us()
    stats = host.scheduler.stats
    if stats is None:  # pragma: no cover - a host always keeps stats
        raise NotFound("job", name)
    buckets = sorted(stats.history(name, Tier.HOURS), key=lambda b: -b.start_us)
    if before is not None:
        buckets = [b for b in buckets if b.start_us < before]
    shown = buckets[:limit]
    return render_page(
        request,
        "job.html",
        job=row,
        next_times=_next_times(host, row.get("schedule"), now),
        runs=[
            {
                "start": iso(b.start_us, host),
                "count": b.count,
                "failures": b.failures,
                "longest_ms": round(b.longest_us / 1000, 3),
                "mean_ms": round(b.total_us / b.count / 1000, 3) if b.count else None,
            }
            for b in shown
        ],
        older=shown[-1].start_us if len(buckets) > limit else None,
        paged=before is not None,
    )
