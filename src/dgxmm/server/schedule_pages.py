"""The page of a deployment's schedules: the week strip, the list, and the admin's forms."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.decider.days import describe_days
from dgxmm.decider.schedule import ScheduleService
from dgxmm.fleet import Deployment
from dgxmm.server import api_schedules
from dgxmm.server.deps import PathId
from dgxmm.server.fleet_pages import DeploymentExtra, add_deployment_extra
from dgxmm.server.job_list import iso
from dgxmm.server.pages import render_page
from dgxmm.server.week_strip import week_strip

__all__ = ["SCHEDULES_EXTRA", "router", "schedule_routers"]

router = APIRouter(include_in_schema=False)


def _extra_context(request: Request, deployment: Deployment) -> dict[str, Any]:
    schedules: ScheduleService = request.app.state.schedules
    rows = schedules.list(deployment.id)
    return {"strip": week_strip(rows), "count": len(rows), "paused_all": schedules.paused_all()}


SCHEDULES_EXTRA = DeploymentExtra(
    name="schedules",
    template="schedules_extra.html",
    context=_extra_context,
    order=10,
    needs="schedules",
)


def schedule_routers() -> list[APIRouter]:
    """Return the schedules' API and page, and show the week strip on each deployment's page."""
    add_deployment_extra(SCHEDULES_EXTRA)
    return [api_schedules.router, router]


@router.get("/deployments/{deployment_id}/schedules", response_class=HTMLResponse)
def schedules_page(request: Request, deployment_id: PathId) -> Response:
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
