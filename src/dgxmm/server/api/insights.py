"""The insights API: what a person should know, and dismissing it (admin)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from dgxmm.server.deps import Admin, FleetDep, HostDep, PathId, QueryId, Viewer
from dgxmm.server.job_list import iso
from dgxmm.server.openapi import answers
from dgxmm.server.redaction import insight_shown_to

__all__ = ["router"]

router = APIRouter(prefix="/api/insights", tags=["insights"])


@router.get("")
def list_insights(
    fleet: FleetDep,
    host: HostDep,
    who: Viewer,
    include_dismissed: Annotated[bool, Query()] = False,
    deployment_id: QueryId = None,
) -> dict[str, Any]:
    """The open insights (or all), newest first, with their deployment's name."""
    names = {d.id: d.name for d in fleet.deployments.list()}
    found = fleet.insights.list(include_dismissed, deployment_id=deployment_id)
    return {
        "insights": [
            {
                **insight.to_json(),
                "deployment": names.get(insight.deployment_id or -1),
                "created_at": iso(insight.created_at, host),
                "dismissed_at": iso(insight.dismissed_at, host),
            }
            for insight in (insight_shown_to(i, who) for i in found)
        ]
    }


@router.post("/{insight_id}/dismiss", responses=answers(404))
def dismiss_insight(insight_id: PathId, fleet: FleetDep, who: Admin) -> dict[str, Any]:
    """Dismiss an insight (audited); dismissing it again changes nothing."""
    return fleet.insights.dismiss(insight_id, who.actor).to_json()
