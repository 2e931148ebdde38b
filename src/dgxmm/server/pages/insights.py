"""The Insights page: what a person should know, newest first; admins dismiss them here."""

from __future__ import annotations

from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.server.access.redaction import insight_shown_to
from dgxmm.server.edge.deps import FleetDep, HostDep, identify
from dgxmm.server.edge.paging import (
    CursorQuery,
    LimitQuery,
    make_cursor,
    read_id_cursor,
    read_limit,
)
from dgxmm.server.lists.jobs import iso
from dgxmm.server.pages.render import render_page

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/insights", response_class=HTMLResponse)
def insights_page(
    request: Request,
    fleet: FleetDep,
    host: HostDep,
    dismissed: bool = False,
    *,
    limit: LimitQuery = None,
    cursor: CursorQuery = None,
) -> Response:
    """What a person should know, newest first, 100 a page (``GET /api/insights``'s cursor);
    admins dismiss them here."""
    size = read_limit(limit)
    assert size is not None
    found = fleet.insights.list(dismissed, limit=size, before_id=read_id_cursor(cursor, "insights"))
    names = fleet.deployments.names() if found else {}
    who = identify(request)
    kept = {key: value for key, value in {"dismissed": dismissed, "limit": limit}.items() if value}
    older = None
    if len(found) == size:
        older = "/insights?" + urlencode({**kept, "cursor": make_cursor("insights", found[-1].id)})
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
            for insight in found
        ],
        dismissed=dismissed,
        older_href=older,
        newest_href=("/insights?" + urlencode(kept)) if cursor is not None else None,
    )
