"""The page of a deployment's traffic: the heat map of its week, and its schedule proposals.

``proposal_routers()`` returns the API and this page, and adds a link to the page on every
deployment's page (a ``DeploymentExtra``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.decider.proposal_rows import ProposalStatus
from dgxmm.decider.proposals import ProposalService
from dgxmm.decider.schedule import ScheduleService
from dgxmm.decider.week import down_intervals
from dgxmm.fleet import Deployment
from dgxmm.server import api_proposals
from dgxmm.server.deps import PathId
from dgxmm.server.fleet_pages import DeploymentExtra, add_deployment_extra
from dgxmm.server.heatmap import proposal_intervals, traffic_heatmap
from dgxmm.server.job_list import iso
from dgxmm.server.pages import render_page

__all__ = ["TRAFFIC_EXTRA", "proposal_routers", "router"]

router = APIRouter(include_in_schema=False)


def _extra_context(request: Request, deployment: Deployment) -> dict[str, Any]:
    proposals: ProposalService = request.app.state.proposals
    return {"open": len(proposals.list(deployment.id, status=ProposalStatus.OPEN))}


TRAFFIC_EXTRA = DeploymentExtra(
    name="traffic",
    template="traffic_extra.html",
    context=_extra_context,
    order=20,
    needs="proposals",
)


def proposal_routers() -> list[APIRouter]:
    """Return the proposals' API and page, and link the page from each deployment's page."""
    add_deployment_extra(TRAFFIC_EXTRA)
    return [api_proposals.router, router]


@router.get("/deployments/{deployment_id}/traffic", response_class=HTMLResponse)
def traffic_page(request: Request, deployment_id: PathId) -> Response:
    """A deployment's week as a heat map, with its schedules' and proposals' sleep windows."""
    proposals: ProposalService = request.app.state.proposals
    schedules: ScheduleService = request.app.state.schedules
    deployment = request.app.state.fleet.deployments.get(deployment_id)
    host = request.app.state.host
    profile = proposals.profiles.profile(deployment_id)
    everything = proposals.list(deployment_id)
    open_ones = [p for p in everything if p.status is ProposalStatus.OPEN]
    readiness = proposals.model_status()
    return render_page(
        request,
        "traffic.html",
        deployment=deployment,
        built_at=iso(profile.built_at, host),
        heatmap=traffic_heatmap(
            profile.hours,
            asleep=down_intervals(schedules.list(deployment_id)),
            proposed=[(p.id, proposal_intervals(p)) for p in open_ones],
        ),
        peak=max((hour.rpm_p95 for hour in profile.hours), default=0.0),
        open_proposals=open_ones,
        decided=[
            {"p": p, "at": iso(p.decided_at, host)}
            for p in everything
            if p.status is not ProposalStatus.OPEN
        ],
        settings=proposals.settings(),
        readiness=readiness,
    )
