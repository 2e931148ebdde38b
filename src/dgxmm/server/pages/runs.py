"""The Runs page: every job run and every deployment action, filtered and paged; one run's page.

``/runs`` is the list of ``GET /api/runs`` (``server/lists/runs.py``), ``/runs/{id}`` a job
run (``GET /api/jobs/runs/{id}``: its timeline, its error, the rows it kept), and
``/runs/actions/{id}`` a deployment's action (its event). Errors are shown as the API
shows them: in full to admins, their public form to viewers.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.errors import InvalidInput, NotFound
from dgxmm.server.access.redaction import event_shown_to
from dgxmm.server.api.runs import read_filter
from dgxmm.server.edge.deps import PathId, ServicesDep, identify
from dgxmm.server.edge.paging import make_cursor, read_cursor
from dgxmm.server.lists.jobs import iso
from dgxmm.server.lists.runs import (
    ListedRun,
    RunStatus,
    event_status,
    job_status,
    list_runs,
    read_run_key,
)
from dgxmm.server.pages.render import display_zone, render_page

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

PAGE_ROWS = 50
_TEXT = Annotated[str | None, Query(max_length=200)]


@router.get("/runs", response_class=HTMLResponse)
def runs_page(
    request: Request,
    services: ServicesDep,
    *,
    status: Annotated[str | None, Query(max_length=20)] = None,
    job: _TEXT = None,
    deployment: Annotated[str | None, Query(max_length=20)] = None,
    since: _TEXT = None,
    until: _TEXT = None,
    hide_system: Annotated[str | None, Query(max_length=10)] = None,
    cursor: Annotated[str | None, Query(max_length=1000)] = None,
) -> Response:
    """The list of runs, newest first; its filters are a form that GETs this page again."""
    who = identify(request)
    host = services.host
    filters = {
        "status": status or "",
        "job": job or "",
        "deployment": deployment or "",
        "since": since or "",
        "until": until or "",
        "hide_system": hide_system or "",
    }
    # A wall time in the form (datetime-local) is read in the zone the page shows times in.
    _, zone = display_zone(request)
    rows: list[ListedRun] = []
    next_key = None
    wrong: dict[str, str] = {}
    try:
        chosen = read_filter(
            zone,
            status=_status(status),
            job=job or None,
            deployment=deployment or None,
            since=since or None,
            until=until or None,
            hide_system=hide_system or None,
        )
        after = read_run_key(read_cursor(cursor or None, "all-runs"))
        rows, next_key = list_runs(
            host.store,
            services.fleet,
            chosen,
            limit=PAGE_ROWS,
            after=after,
            full_errors=who is not None and who.is_admin,
        )
    except InvalidInput as refused:
        # Shown beside its field in the form, every wrong one, as a form's refusal is.
        wrong = dict(refused.errors or ((refused.field, refused.message),))
    fleet = services.fleet
    with host.lock:
        system = set(host.scheduler.system_names())
    page = render_page(
        request,
        "runs.html",
        rows=[
            {
                "r": row,
                "at": iso(row.at_us, host),
                "took": _took(row.at_us, row.finished_at_us),
            }
            for row in rows
        ],
        filters=filters,
        statuses=[s.value for s in RunStatus],
        jobs=sorted({j.name for j in host.definitions()} | system),
        deployments=[] if fleet is None else [(d.id, d.name) for d in fleet.deployments.list()],
        older=None if next_key is None else make_cursor("all-runs", list(next_key)),
        kept=urlencode({k: v for k, v in filters.items() if v}),  # the pager keeps them
        first_page=cursor is None,
        wrong=wrong,
    )
    if wrong and page.status_code == 200:
        page.status_code = 400  # a refused filter, named beside its field
    return page


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_page(request: Request, services: ServicesDep, run_id: PathId) -> Response:
    """One job run: its trigger, its timeline, its error, the rows it kept."""
    who = identify(request)
    host = services.host
    record = host.store.runs.get(run_id)
    if record is None:
        raise NotFound("run", str(run_id))
    admin = who is not None and who.is_admin
    kept = host.store.runs.kept_rows(record.id)
    return render_page(
        request,
        "run.html",
        run=record,
        status=job_status(record).value,
        times={
            "scheduled": iso(record.scheduled_at, host),
            "started": iso(record.started_at, host),
            "finished": iso(record.finished_at, host),
        },
        late=_seconds(record.started_at - record.scheduled_at),
        took=_took(record.started_at, record.finished_at),
        error=record.error if admin else record.public_error,
        error_is_public=not admin and record.error != record.public_error,
        kept=kept,
    )


@router.get("/runs/actions/{event_id}", response_class=HTMLResponse)
def action_page(request: Request, services: ServicesDep, event_id: PathId) -> Response:
    """One deployment action: who asked, when, how it ended, its time to ready."""
    fleet = services.fleet
    found = None if fleet is None else fleet.events.get(event_id)
    if fleet is None or found is None:
        raise NotFound("deployment action", str(event_id))
    event = event_shown_to(found, identify(request))
    deployment = next((d for d in fleet.deployments.list() if d.id == event.deployment_id), None)
    return render_page(
        request,
        "run_action.html",
        event=event,
        status=event_status(event).value,
        at=iso(event.at_us, services.host),
        deployment=deployment,
        ready=None if event.ready_us is None else _seconds(event.ready_us),
    )


def _status(text: str | None) -> RunStatus | None:
    """The form's status: empty is any; a wrong one is named."""
    if not text:
        return None
    try:
        return RunStatus(text)
    except ValueError:
        known = ", ".join(s.value for s in RunStatus)
        raise InvalidInput("status", f"{text!r} is not one of {known}") from None


def _took(start_us: int, end_us: int | None) -> str:
    return "" if end_us is None or end_us == start_us else _seconds(end_us - start_us)


def _seconds(us: int) -> str:
    """A span in the words a person reads: ms under a second, else s, min, h."""
    sign = "-" if us < 0 else ""
    us = abs(us)
    if us < 1_000_000:
        return f"{sign}{us / 1000:.0f} ms"
    if us < 120_000_000:
        return f"{sign}{us / 1_000_000:.1f} s"
    if us < 7_200_000_000:
        return f"{sign}{us / 60_000_000:.1f} min"
    return f"{sign}{us / 3_600_000_000:.1f} h"
