"""The workload page: each job's runs over time, per minute, hour or day."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.jobs import Tier
from dgxmm.server.deps import HostDep
from dgxmm.server.job_list import job_rows
from dgxmm.server.pages.render import display_zone, render_page
from dgxmm.server.svg.runs import WINDOWS, runs_chart

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/workload", response_class=HTMLResponse)
def workload_page(request: Request, host: HostDep, tier: str = "hours") -> Response:
    """Each job's runs over time: count and failures per minute, hour or day."""
    chosen = Tier.HOURS if tier not in ("minutes", "hours", "days") else Tier.named(tier)
    stats = host.scheduler.stats
    assert stats is not None
    now = host.clock.now_us()
    _, zone = display_zone(request)
    charts = [
        {
            "name": row["name"],
            "kind": row["kind"],
            "svg": runs_chart(row["name"], stats.history(row["name"], chosen), chosen, now, zone),
            "runs": sum(
                b.count
                for b in stats.history(row["name"], chosen)
                if b.start_us > now - WINDOWS[chosen] * chosen.width_us
            ),
        }
        for row in job_rows(host, full_errors=False)  # the charts show no errors
    ]
    return render_page(request, "workload.html", charts=charts, tier=chosen.label)
