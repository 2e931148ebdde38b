"""The workload page: each job's runs and each channel's queries, per minute, hour or day."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.jobs import Channel, Tier
from dgxmm.server.edge.deps import HostDep
from dgxmm.server.lists.jobs import job_rows
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
    since = now - WINDOWS[chosen] * chosen.width_us
    channels = []
    for channel in Channel:
        buckets = [b for b in stats.channel_history(channel, chosen) if b.start_us > since]
        channels.append(
            {
                "name": channel.value,
                "count": sum(b.count for b in buckets),
                "failures": sum(b.failures for b in buckets),
                "total_ms": round(sum(b.total_us for b in buckets) / 1000, 1),
                "svg": runs_chart(channel.value, buckets, chosen, now, zone),
            }
        )
    return render_page(
        request, "workload.html", charts=charts, channels=channels, tier=chosen.label
    )
