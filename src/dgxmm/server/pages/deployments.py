"""The Deployments page and a deployment's page, with the sections other layers add to it.

Server-rendered like the other pages; their buttons call the JSON API (``static/fleet.js``).
A deployment's page shows its idle settings and its measured wake times: the p95 of its last
20 times to ready from each sleep level and from a start, as its measured wake lead takes
them (``decider/schedules/lead.py``).
Each ``DeploymentSection`` of the app's routes (the schedules' week strip, the traffic
profile's link) is a template of ``server/templates`` included with ``deployment`` and
``extra`` (what its ``context`` function returned) in its context.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.decider.schedules.lead import MEASURED_WAKES, lead_for
from dgxmm.errors import InvalidInput
from dgxmm.fleet import MAX_LEAD_US, BackendKind, Deployment, Fleet, LeadKind, WakeLead
from dgxmm.fleet.demo.demo import synthetic_note
from dgxmm.server.deps import FleetDep, HostDep, PathId, SectionsDep, ServicesDep, identify
from dgxmm.server.host import Host
from dgxmm.server.job_list import iso
from dgxmm.server.pages.render import display_zone, render_page
from dgxmm.server.redaction import deployment_shown_to, event_shown_to
from dgxmm.server.svg.gpu_bars import gpu_bar
from dgxmm.server.svg.traffic_charts import WINDOWS, traffic_chart
from dgxmm.time_units import SECOND_US

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


def _row(deployment: Deployment, host: Host) -> dict[str, Any]:
    return {
        "d": deployment,
        "state_since": iso(deployment.state_since, host),
        "last_request": iso(deployment.last_request_at, host),
    }


_MEASURED = WakeLead(kind=LeadKind.MEASURED)
_COMES_UP = ((1, "level-1 wakes"), (2, "level-2 wakes"), (0, "starts"))  # 0: from stopped


def _duration(seconds: float) -> str:
    """Return a duration as a person reads it: ``7.2 s``, ``90 s``, ``5 min``, ``1 h 30 min``."""
    if seconds < 120:
        return f"{round(seconds, 1):g} s"
    days, rest = divmod(round(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, rest = divmod(rest, 60)
    units = ((days, "d"), (hours, "h"), (minutes, "min"), (rest, "s"))
    return " ".join(f"{count} {unit}" for count, unit in units if count)


def _idle_ladder(deployment: Deployment) -> list[dict[str, str]]:
    """Return its idle ladder's steps, each with its wait or ``off``."""
    steps = zip(
        ("sleep", "deepen", "stop"),
        ("sleep at level 1", "deepen to level 2", "stop"),
        deployment.idle.steps_us(),
        strict=True,
    )
    return [
        {"step": step, "what": what, "after": "off" if us is None else _duration(us / SECOND_US)}
        for step, what, us in steps
    ]


def _wake_times(fleet: Fleet, deployment_id: int) -> list[dict[str, Any]]:
    """Return its measured time to ready from each sleep level and from a start.

    The p95 of the last ``MEASURED_WAKES`` as the measured wake lead takes it (bounded to its
    15 minutes), with how many were measured.
    """
    found = []
    for level, what in _COMES_UP:
        times = fleet.events.ready_times(deployment_id, level, MEASURED_WAKES)
        lead = lead_for(_MEASURED, level=level, ready_times_us=times)
        if not times:
            text = "none measured yet"
        elif lead.us >= MAX_LEAD_US:
            text = f"15 min or more (p95 of the last {len(times)})"
        else:
            text = f"{_duration(lead.us / SECOND_US)} (p95 of the last {len(times)})"
        found.append({"level": level, "what": what, "count": len(times), "text": text})
    return found


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
        ladder=_idle_ladder(deployment),
        wake_times=_wake_times(fleet, deployment_id),
        wake_lead_s=_duration(deployment.wake_lead.seconds),  # shown for a lead in seconds
    )
