"""The Alerts page (admins only): channels, rules, test sends and the delivery log.

A channel's secret is shown once, by the script, from the answer that made it; the page
itself never holds a secret or a whole URL (``Channel`` has neither).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.alerts import BodyFormat, Condition
from dgxmm.server.edge.deps import AlertsDep, HostDep, identify
from dgxmm.server.lists.jobs import iso
from dgxmm.server.pages.render import render_page

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

LOG_ROWS = 100


@router.get("/alerts", response_class=HTMLResponse)
def alerts_page(request: Request, alerts: AlertsDep, host: HostDep) -> Response:
    """Channels, rules and the delivery log (admins only)."""
    who = identify(request)
    if who is not None and not who.is_admin:
        return render_page(request, "alerts.html", forbidden=True)
    return render_page(
        request,
        "alerts.html",
        forbidden=False,
        channels=alerts.channels.list(),
        rules=alerts.rules.list(),
        formats=[f.value for f in BodyFormat],
        conditions=[(c.value, c.takes) for c in Condition],
        log=[
            {
                "e": entry,
                "at": iso(entry.delivery.created_at, host),
                "attempts": [(a, iso(a.at, host)) for a in entry.attempts],
            }
            for entry in alerts.deliveries.log(limit=LOG_ROWS)
        ],
    )
