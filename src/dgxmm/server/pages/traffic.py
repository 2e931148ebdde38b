"""The page of a deployment's traffic: the heat map of its week, and its schedule proposals.

``SECTION`` is the link to this page that the layer adds to every deployment's page.
"""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.decider.proposals.rows import ProposalStatus
from dgxmm.decider.schedules.week import down_intervals
from dgxmm.errors import InvalidInput
from dgxmm.fleet import Deployment, synthetic_note
from dgxmm.lab.backtest import shown_backtest
from dgxmm.lab.ledger import DEFAULT_PRICE, read_price
from dgxmm.server.edge.deps import FleetDep, HostDep, PathId, ProposalsDep, SchedulesDep
from dgxmm.server.lists.jobs import iso
from dgxmm.server.pages.render import render_page
from dgxmm.server.routes import DeploymentSection
from dgxmm.server.services import Services
from dgxmm.server.svg.heatmap import proposal_intervals, traffic_heatmap

__all__ = ["SECTION", "router"]

router = APIRouter(include_in_schema=False)


def _section_context(services: Services, deployment: Deployment, _zone: ZoneInfo) -> dict[str, Any]:
    proposals = services.proposals
    assert proposals is not None  # the proposals' routes need the service
    return {"open": len(proposals.list(deployment.id, status=ProposalStatus.OPEN))}


SECTION = DeploymentSection(
    name="traffic", template="traffic_extra.html", context=_section_context, order=20
)


@router.get("/deployments/{deployment_id}/traffic", response_class=HTMLResponse)
def traffic_page(
    request: Request,
    deployment_id: PathId,
    *,
    proposals: ProposalsDep,
    schedules: SchedulesDep,
    fleet: FleetDep,
    host: HostDep,
    price: str | None = None,
) -> Response:
    """A deployment's week as a heat map, with its schedules' and proposals' sleep windows.

    Each backtest week's saving is given at ``?price=`` (a wrong one: said, and the default).
    """
    refused: InvalidInput | None = None
    wait_price = DEFAULT_PRICE
    try:
        wait_price = DEFAULT_PRICE if not price else read_price(price)
    except InvalidInput as error:
        refused = error
    deployment = fleet.deployments.get(deployment_id)
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
        backtests={p.id: shown_backtest(p.backtest, wait_price) for p in open_ones},
        price=wait_price,
        refused=refused,
        decided=[
            {
                "p": p,
                "at": iso(p.decided_at, host),
                # Accepted: each week since, beside what its backtest predicted.
                "weeks": proposals.realized(p) if p.status is ProposalStatus.ACCEPTED else [],
            }
            for p in everything
            if p.status is not ProposalStatus.OPEN
        ],
        settings=proposals.settings(),
        readiness=readiness,
        synthetic=synthetic_note(fleet, deployment_id),
    )
