"""The jobs pages: the job list (system jobs first) and the form that defines a user job."""

from __future__ import annotations

import functools
import json
from typing import Annotated, Any
from urllib.parse import urlencode
from zoneinfo import available_timezones

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.errors import InvalidInput, NotFound
from dgxmm.server.api.jobs import page_key
from dgxmm.server.edge.deps import HostDep, identify
from dgxmm.server.edge.paging import CursorQuery, LimitQuery, make_cursor, read_cursor, read_limit
from dgxmm.server.lists.jobs import job_page, job_rows
from dgxmm.server.pages.render import render_page
from dgxmm.store.versions import MOST_KEYS  # the most rows a poll names (``static/live.js``)

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

PRESETS = [
    ("every minute", "* * * * *"),
    ("every 5 minutes", "*/5 * * * *"),
    ("every 15 minutes", "*/15 * * * *"),
    ("hourly", "0 * * * *"),
    ("daily at 03:00", "0 3 * * *"),
    ("weekdays at 03:00", "0 3 * * 1-5"),
    ("Sundays at 04:00", "0 4 * * 0"),
    ("first of the month at 02:00", "0 2 1 * *"),
]


# The zones a job's form offers first; every other IANA name is in the field's list.
ZONE_PRESETS = [
    "UTC",
    "Europe/London",
    "Europe/Berlin",
    "America/New_York",
    "America/Chicago",
    "America/Los_Angeles",
    "Asia/Kolkata",
    "Asia/Tokyo",
    "Australia/Sydney",
]


# Retry presets: (label, retries, first wait s, longest wait s); empty values clear them.
RETRY_PRESETS = [
    ("no retries", "", "", ""),
    ("3 retries: 30 s, doubling to 5 min", "3", "30", "300"),
    ("5 retries: 1 min, doubling to 30 min", "5", "60", "1800"),
]


# Catch-up presets: (label, window s, coalesce); empty values: the spec's rule.
CATCHUP_PRESETS = [
    ("a gap is skipped whole (the default)", "", ""),
    ("the latest time missed within an hour", "3600", "latest"),
    ("every time missed within six hours, in turn", "21600", "all"),
]


@functools.cache
def _zone_names() -> list[str]:
    # Pure function of the installed zone data: read once per process.
    return sorted(available_timezones())


@router.get("/jobs", response_class=HTMLResponse)
def jobs_page(
    request: Request,
    host: HostDep,
    *,
    limit: LimitQuery = None,
    cursor: CursorQuery = None,
    row: Annotated[list[str] | None, Query(max_length=200)] = None,
) -> Response:
    """Scheduled jobs, the system jobs first, then the user jobs by name: 100 a page, paged
    with a cursor as ``GET /api/jobs?limit=`` pages them (found by bisection, ``job_page``).

    ``row`` (repeated) draws those jobs' rows alone, as the page draws them: a live page
    whose poll named the jobs that moved fetches their rows this way.
    """
    who = identify(request)
    if row is not None:
        if len(row) > MOST_KEYS:
            raise InvalidInput("row", f"at most {MOST_KEYS} rows at once, got {len(row)}")
        names, last = row, None
    else:
        size = read_limit(limit)
        names, last = job_page(host, page_key(read_cursor(cursor, "jobs")), size)
    rows = job_rows(host, full_errors=who is not None and who.is_admin, names=names)
    kept = {"limit": limit} if limit else {}
    next_href = None
    if last is not None:
        next_href = "/jobs?" + urlencode({**kept, "cursor": make_cursor("jobs", list(last))})
    return render_page(
        request,
        "jobs.html",
        jobs=rows,
        paged=cursor is not None,
        next_href=next_href,
        first_href="/jobs" + (f"?{urlencode(kept)}" if kept else ""),
    )


@router.get("/jobs/new", response_class=HTMLResponse)
def job_form(request: Request, host: HostDep, edit: str | None = None) -> Response:
    """The form that defines (or, with ?edit=name, redefines) a user job."""
    job: dict[str, Any] = {"enabled": True}
    if edit:
        try:
            job = dict(host.store.job(edit).definition)
        except NotFound:
            return Response(f"no job named {edit!r}", status_code=404)
    args = job.get("args")
    return render_page(
        request,
        "job_form.html",
        job=job,
        args_text=json.dumps(args, indent=2) if args is not None else "{}",
        editing=edit,
        presets=PRESETS,
        zone_presets=[host.time_zone.key, *(z for z in ZONE_PRESETS if z != host.time_zone.key)],
        zone_names=_zone_names(),
        retry_presets=RETRY_PRESETS,
        catchup_presets=CATCHUP_PRESETS,
        queries=host.store.queries(),
    )
