"""The page of a deployment's schedules: the week strip, the list, and the admin's forms.

Each wake and start says how early it begins and why (its ``lead``, as the API gives it).

``SECTION`` is the week strip this layer adds to every deployment's page.
"""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.decider import ScheduleAction
from dgxmm.decider.days import describe_days
from dgxmm.decider.schedules.rows import Schedule
from dgxmm.decider.schedules.runner import lead_now
from dgxmm.decider.schedules.slots import next_slot, parse_time
from dgxmm.fleet import Deployment
from dgxmm.jobs import resolve_zone
from dgxmm.server.access.redaction import schedule_shown_to
from dgxmm.server.api.schedules import schedule_json
from dgxmm.server.edge.deps import FleetDep, HostDep, PathId, SchedulesDep, identify
from dgxmm.server.host import Host
from dgxmm.server.lists.jobs import iso
from dgxmm.server.pages.render import display_zone, render_page
from dgxmm.server.routes import DeploymentSection
from dgxmm.server.services import Services
from dgxmm.server.svg.week_strip import week_strip

__all__ = ["SECTION", "router"]

router = APIRouter(include_in_schema=False)


def _section_context(services: Services, deployment: Deployment, zone: ZoneInfo) -> dict[str, Any]:
    schedules = services.schedules
    assert schedules is not None  # the schedules' routes need the service
    rows = schedules.list(deployment.id)
    strip = week_strip(rows, zone=zone, now_us=services.host.clock.now_us())
    return {"strip": strip, "count": len(rows), "paused_all": schedules.paused_all()}


SECTION = DeploymentSection(
    name="schedules", template="schedules_extra.html", context=_section_context, order=10
)


_DOWN = frozenset({ScheduleAction.SLEEP, ScheduleAction.STOP})


def _next_run(row: Schedule, host: Host) -> str | None:
    """The instant of the slot the runner acts on next (a wake begins earlier by its lead);
    None for a schedule switched off."""
    if not row.enabled:
        return None
    slot = next_slot(
        days=row.days,
        time=parse_time(row.time),
        zone=resolve_zone(row.time_zone),
        now_us=host.clock.now_us(),
        last_run_day=row.last_run_day,
    )
    return None if slot is None else iso(slot.at_us, host)


@router.get("/deployments/{deployment_id}/schedules", response_class=HTMLResponse)
def schedules_page(
    request: Request,
    deployment_id: PathId,
    *,
    schedules: SchedulesDep,
    fleet: FleetDep,
    host: HostDep,
) -> Response:
    """A deployment's schedules as a week strip, with their last run and result."""
    deployment = fleet.deployments.get(deployment_id)
    rows = schedules.list(deployment_id)
    who = identify(request)
    lead = lead_now(fleet, deployment)
    paused_all = schedules.paused_all()
    return render_page(
        request,
        "schedules.html",
        deployment=deployment,
        schedules=[
            {
                **schedule_json(schedule_shown_to(row, who), lead),
                "days_text": describe_days(row.days),
                "last_run": iso(row.last_run_at, host),
                "next_run": _next_run(row, host) if not paused_all else None,
            }
            for row in rows
        ],
        strip=week_strip(rows, zone=display_zone(request)[1], now_us=host.clock.now_us()),
        paused_all=paused_all,
        # A sleep or stop with nothing to undo it lasts until a request through the proxy
        # wakes the deployment: said on the page, and beside the form while no wake exists.
        puts_down=any(row.action in _DOWN for row in rows if row.enabled),
        brings_up=any(row.action not in _DOWN for row in rows if row.enabled),
        proxy_runs=request.app.state.services.proxy is not None,
    )
