"""The Savings page (``/savings``): what sleeping freed and what it cost, day by day.

The API's report (``api/savings.py``) drawn as tables: per deployment its totals, then its
local days. A wrong ``from``, ``to`` or ``deployment`` shows the refusal above the form.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.errors import InvalidInput
from dgxmm.server.api.savings import savings_json
from dgxmm.server.edge.deps import FleetDep, HostDep
from dgxmm.server.pages.render import render_page

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/savings", response_class=HTMLResponse)
def savings_page(
    request: Request,
    fleet: FleetDep,
    host: HostDep,
    *,
    since: Annotated[str | None, Query(alias="from")] = None,
    to: str | None = None,
    deployment: str | None = None,
) -> Response:
    """GiB-hours held and freed, cold requests and their waits, per deployment and day."""
    refused: InvalidInput | None = None
    report: dict[str, Any] | None = None
    try:
        report = savings_json(
            fleet, host, since=since or None, to=to or None, deployment=deployment or None
        )
    except InvalidInput as error:
        refused = error
        report = savings_json(fleet, host, since=None, to=None, deployment=None)
    return render_page(
        request,
        "savings.html",
        report=report,
        refused=refused,
        chosen={
            "from": since or report["from"],
            "to": to or report["to"],
            "deployment": deployment or "",
        },
        names=[d.name for d in fleet.deployments.list()],
    )
