"""The page of a deployment's schedules: the week strip, the list, and the admin's forms."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.decider.days import describe_days
from dgxmm.decider.schedule import ScheduleService
from dgxmm.server.job_list import iso
from dgxmm.server.pages import render_page
from dgxmm.server.week_strip import week_strip

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/deployments/{deployment_id}/schedules", response_class=HTMLResponse)
def schedules_page(request: Request, deployment_id: int) -> Response:
    """A deployment's schedules as a week strip, with their last run and result."""
    schedules: ScheduleService = request.app.state.schedules
    deployment = request.app.state.fleet.deployments.get(deployment_id)
    rows = schedules.list(deployment_id)
    host = request.app.state.host
    return render_page(
        request,
        "schedules.html",
        deployment=deployment,
        schedules=[
            {
                **row.to_json(),
                "days_text": describe_days(row.days),
                "last_run": iso(row.last_run_at, host),
            }
            for row in rows
        ],
        strip=week_strip(rows),
        paused_all=schedules.paused_all(),
    )
