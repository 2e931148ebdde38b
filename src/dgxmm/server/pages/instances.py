"""The Instances page: the dgxmm processes on this store, who holds the lease, last seen.

The page of ``GET /api/instances``: one row per instance (servers, and a CLI while it runs a
job), newest seen first. The holder of the ticker's lease ticks and runs the scheduled jobs;
a standby serves the API and pages and takes the lease when the holder is lost
(``docs/scale-out.md``).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.server.edge.deps import HostDep
from dgxmm.server.lists.jobs import iso
from dgxmm.server.pages.render import render_page
from dgxmm.store import InstanceRole
from dgxmm.time_units import SECOND_US

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/instances", response_class=HTMLResponse)
def instances_page(request: Request, host: HostDep) -> Response:
    """Every instance: its role, where it runs, its version, when it was last seen."""
    now = host.clock.now_us()
    rows = [
        {
            "i": instance,
            "holds": instance.role is InstanceRole.HOLDER and instance.alive,
            "host": str(instance.place.get("host", "")),
            "pid": instance.place.get("pid"),
            # Rows written before instances recorded their version say nothing of it.
            "version": str(instance.place.get("version") or "—"),
            "started": iso(instance.started_at, host),
            "since": iso(instance.role_since, host),
            "seen": iso(instance.last_seen, host),
            "seen_ago": ago(now - instance.last_seen),
            "stopped": iso(instance.stopped_at, host),
        }
        for instance in host.store.presence.all()
    ]
    holder = next((row for row in rows if row["holds"]), None)
    return render_page(
        request,
        "instances.html",
        rows=rows,
        this=host.store.instance,
        holder=holder,
    )


def ago(span_us: int) -> str:
    """Say how long ago, in the largest whole unit: "now", "12 s ago", "3 min ago", "2 h ago"."""
    seconds = max(0, span_us) // SECOND_US
    if seconds < 1:
        return "now"
    if seconds < 120:
        return f"{seconds} s ago"
    if seconds < 7200:
        return f"{seconds // 60} min ago"
    if seconds < 2 * 86400:
        return f"{seconds // 3600} h ago"
    return f"{seconds // 86400} days ago"
