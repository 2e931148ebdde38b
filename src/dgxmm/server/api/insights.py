"""The insights API: what a person should know, and dismissing it (admin)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from dgxmm.server.access.redaction import insight_shown_to
from dgxmm.server.edge.deps import Admin, FleetDep, HostDep, PathId, QueryId, Viewer
from dgxmm.server.edge.openapi import answers
from dgxmm.server.edge.paging import (
    CursorQuery,
    LimitQuery,
    make_cursor,
    read_id_cursor,
    read_limit,
)
from dgxmm.server.lists.jobs import iso

__all__ = ["router"]

router = APIRouter(prefix="/api/insights", tags=["insights"])


@router.get("", responses=answers(400))
def list_insights(
    fleet: FleetDep,
    host: HostDep,
    who: Viewer,
    *,
    include_dismissed: Annotated[bool, Query()] = False,
    deployment_id: QueryId = None,
    limit: LimitQuery = None,
    cursor: CursorQuery = None,
) -> dict[str, Any]:
    """The open insights (or all), newest first, ``limit`` at a time (100), with their
    deployment's name; ``next_cursor`` pages back."""
    size = read_limit(limit)
    assert size is not None
    after = read_id_cursor(cursor, "insights")
    found = fleet.insights.list(
        include_dismissed, deployment_id=deployment_id, limit=size, before_id=after
    )
    names = fleet.deployments.names() if found else {}
    last = found[-1].id if len(found) == size else None
    return {
        "insights": [
            {
                **insight.to_json(),
                "deployment": names.get(insight.deployment_id or -1),
                "created_at": iso(insight.created_at, host),
                "dismissed_at": iso(insight.dismissed_at, host),
            }
            for insight in (insight_shown_to(i, who) for i in found)
        ],
        "next_cursor": None if last is None else make_cursor("insights", last),
    }


@router.post("/{insight_id}/dismiss", responses=answers(404))
def dismiss_insight(insight_id: PathId, fleet: FleetDep, who: Admin) -> dict[str, Any]:
    """Dismiss an insight (audited); dismissing it again changes nothing."""
    return fleet.insights.dismiss(insight_id, who.actor).to_json()
