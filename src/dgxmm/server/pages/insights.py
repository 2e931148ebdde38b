"""The Insights page: what a person should know, newest first; admins dismiss them here."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.server.deps import FleetDep, HostDep, identify
from dgxmm.server.job_list import iso
from dgxmm.server.pages.render import render_page
from dgxmm.server.redaction import insight_shown_to

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/insights", response_class=HTMLResponse)
def insights_page(
    request: Request, fleet: FleetDep, host: HostDep, dismissed: bool = False
) -> Response:
    """What a person should know, newest first; admins dismiss them here."""
    names = {d.id: d.name for d in fleet.deployments.list()}
    who = identify(request)
    return render_page(
        request,
        "insights.html",
        insights=[
            {
                "i": insight_shown_to(insight, who),
                "deployment": names.get(insight.deployment_id or -1),
                "created": iso(insight.created_at, host),
                "dismissed": iso(insight.dismissed_at, host),
            }
            for insight in fleet.insights.list(dismissed)
        ],
        dismissed=dismissed,
    )
