"""The saved queries page: the list, and the form that defines one."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.server.edge.deps import HostDep
from dgxmm.server.pages.render import render_page

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/queries", response_class=HTMLResponse)
def queries_page(request: Request, host: HostDep) -> Response:
    """Saved queries, and the form that defines one."""
    return render_page(request, "queries.html", queries=host.store.queries())
