"""The Deployments page and a deployment's page, with the sections other layers add to it.

Server-rendered like the other pages; their buttons call the JSON API (``static/fleet.js``).
Each ``DeploymentSection`` of the app's routes (the schedules' week strip, the traffic
profile's link) is a template of ``server/templates`` included with ``deployment`` and
``extra`` (what its ``context`` function returned) in its context.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.errors import InvalidInput
from dgxmm.fleet import BackendKind, Deployment
from dgxmm.fleet.demo.demo import synthetic_note
from dgxmm.server.deps import FleetDep, HostDep, PathId, SectionsDep, ServicesDep, identify
from dgxmm.server.host import Host
from dgxmm.server.job_list import iso
from dgxmm.server.pages.render import display_zone, render_page
from dgxmm.server.redaction import deployment_shown_to, event_shown_to
from dgxmm.server.svg.gpu_bars import gpu_bar
from dgxmm.server.svg.traffic_charts import WINDOWS, traffic_chart

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


def _row(deployment: Deployment, host: Host) -> dict[str, Any]:
    return {
        "d": deployment,
        "state_since": iso(deployment.state_since, host),
        "last_request": iso(deployment.last_request_at, host),
    }


@router.get("/deployments", response_class=HTMLResponse)
def deployments_page(request: Request, fleet: FleetDep, host: HostDep) -> Response:
    """Every deployment: its state, the GPU memory it holds, its last request, its actions."""
    gpus = fleet.gpus()
    who = identify(request)
    return render_page(
        request,
        "deployments.html",
        rows=[_row(deployment_shown_to(d, who), host) for d in fleet.deployments.list()],
        gpus=[
            {"gpu": gpu, "held": sum(h.gib for h in held), "svg": gpu_bar(gpu, held)}
            for gpu, held in gpus
        ],
        inventory=fleet.inventory,
        ray_nodes=[
            {
                "node": node,
                "gpus": [
                    {"gpu": gpu, "held": sum(h.gib for h in held), "svg": gpu_bar(gpu, held)}
                    for gpu, held in gpus_of_node
                ],
            }
            for node, gpus_of_node in fleet.ray_nodes()
        ],
    )


@router.get("/deployments/{deployment_id}", response_class=HTMLResponse)
def deployment_page(
    request: Request,
    deployment_id: PathId,
    *,
    services: ServicesDep,
    fleet: FleetDep,
    sections: SectionsDep,
    range: Annotated[str, Query(max_length=10)] = "day",
) -> Response:
    """One deployment: its facts, actions, traffic over the range picked, events."""
    host = services.host
    who = identify(request)
    deployment = deployment_shown_to(fleet.deployments.get(deployment_id), who)
    if range not in WINDOWS:
        raise InvalidInput("range", f"{range!r} is not one of {', '.join(WINDOWS)}")
    now = host.clock.now_us()
    _, zone = display_zone(request)
    width, count, _, per = WINDOWS[range]
    rollups = fleet.metrics.rollups(deployment_id, now - now % width - count * width, now + 1)
    charts = {
        measure: traffic_chart(rollups, window=range, measure=measure, now_us=now, zone=zone)
        for measure in ("requests", "latency")
    }
    extras = [
        {
            "name": section.name,
            "template": section.template,
            "context": dict(section.context(services, deployment, zone)) if section.context else {},
        }
        for section in sections
    ]
    # Where the log lies names the data directory, and reading the log is an admin's.
    log = (
        fleet.backends.run_dir(deployment_id) / "server.log"
        if deployment.backend is BackendKind.PROCESS and who is not None and who.is_admin
        else None
    )
    return render_page(
        request,
        "deployment.html",
        row=_row(deployment, host),
        d=deployment,
        deployment=deployment,
        charts=charts,
        range=range,
        ranges=list(WINDOWS),
        per=per,
        requests_shown=sum(r.requests for r in rollups),
        events=[
            {"e": event_shown_to(e, who), "at": iso(e.at_us, host)}
            for e in fleet.events.list(deployment_id)
        ],
        extras=extras,
        log=log,
        synthetic=synthetic_note(fleet, deployment_id),
        gpus={gpu.index: gpu for gpu in fleet.inventory.gpus},
    )
