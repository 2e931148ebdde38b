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
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.decider.idle.budgets import budget_price, budget_status, read_choice
from dgxmm.decider.schedules.lead import MEASURED_WAKES, lead_for
from dgxmm.errors import InvalidInput
from dgxmm.fleet import (
    MAX_LEAD_US,
    BackendKind,
    Deployment,
    DeploymentState,
    Event,
    Fleet,
    Gpu,
    GpuGauge,
    Holding,
    LeadKind,
    WakeLead,
    synthetic_note,
)
from dgxmm.server.access.redaction import deployment_shown_to, event_shown_to
from dgxmm.server.api.deployments import by_name, on_node
from dgxmm.server.edge.deps import FleetDep, HostDep, PathId, SectionsDep, ServicesDep, identify
from dgxmm.server.edge.paging import (
    CursorQuery,
    LimitQuery,
    make_cursor,
    page_after,
    read_cursor,
    read_limit,
)
from dgxmm.server.host import Host
from dgxmm.server.lists.jobs import iso
from dgxmm.server.pages.render import display_zone, render_page
from dgxmm.server.svg.gpu_bars import gpu_bar
from dgxmm.server.svg.traffic_charts import WINDOWS, traffic_chart
from dgxmm.store import reading
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
_GOES_DOWN = ((1, "level-1 sleeps"), (2, "level-2 sleeps"), (0, "stops"))  # 0: to stopped


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


def _budget(fleet: Fleet, deployment: Deployment, host: Host) -> dict[str, Any]:
    """Return what its wait budget chose and why, from what the daily job recorded."""
    choice = None
    if deployment.idle_wait_budget is not None:
        with reading(fleet.store.engine) as connection:
            choice = read_choice(connection, deployment.id)
    status = budget_status(deployment, choice)
    return {
        "state": status.state.value,
        "price": f"{status.price:g}",
        "text": status.says,
        "at": None if status.choice is None else iso(status.choice.computed_at, host),
        "budgeted": budget_price(deployment, status.choice) is not None,
    }


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


def _down_times(fleet: Fleet, deployment_id: int) -> list[dict[str, Any]]:
    """Return its measured time to go down to each sleep level and to stop.

    The mean of the last ``MEASURED_WAKES``, a timed-out sleep at its bound, as the priced
    idle policy prices it (``decider/idle/pricing.py``), with how many were measured.
    """
    found = []
    for level, what in _GOES_DOWN:
        times = fleet.events.down_times(deployment_id, level, MEASURED_WAKES)
        mean_s = sum(times) / len(times) / SECOND_US if times else 0.0
        shown = f"{mean_s * 1000:.0f} ms" if mean_s < 1 else _duration(mean_s)
        text = f"{shown} (mean of the last {len(times)})" if times else "none measured yet"
        found.append({"level": level, "what": what, "count": len(times), "text": text})
    return found


@router.get("/deployments", response_class=HTMLResponse)
def deployments_page(
    request: Request,
    fleet: FleetDep,
    host: HostDep,
    *,
    limit: LimitQuery = None,
    cursor: CursorQuery = None,
    state: Annotated[str | None, Query(max_length=20)] = None,
    node: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    """The deployments by name, 100 a page (as ``GET /api/deployments`` pages them), with
    filters by state and node; each GPU's memory with its largest holders."""
    size = read_limit(limit)
    after = read_cursor(cursor, "deployments")
    if after is not None and not isinstance(after, str):
        raise InvalidInput("cursor", "is not a cursor of deployments: pass next_cursor as given")
    # A filter form sends an empty field for "any".
    wanted = _state(state or None)
    node = node or None
    who = identify(request)
    everything = fleet.deployments.list()
    shown = [
        d
        for d in everything
        if (wanted is None or d.state is wanted) and (node is None or on_node(d, node))
    ]
    page, last = page_after(shown, by_name, after, size)
    kept = {"limit": limit, "state": wanted.value if wanted else None, "node": node}
    gpus = fleet.gpus(everything)  # one read of the deployments for the whole page
    gauges = fleet.gauges.read()  # this machine's GPUs as NVML measures them, if it can
    return render_page(
        request,
        "deployments.html",
        rows=[_row(deployment_shown_to(d, who), host) for d in page],
        total=len(everything),
        matching=len(shown),
        paged=cursor is not None,
        next_href=None if last is None else _href(kept, make_cursor("deployments", last)),
        first_href=_href(kept, None),
        states=[s.value for s in DeploymentState],
        state=kept["state"],
        node=node,
        gpus=[_gpu(gpu, held, gauges.of(gpu.index)) for gpu, held in gpus],
        measured_note=gauges.error,
        inventory=fleet.inventory,
        ray_nodes=[
            {"node": ray_node, "gpus": [_gpu(gpu, held) for gpu, held in gpus_of_node]}
            for ray_node, gpus_of_node in fleet.ray_nodes(everything)
        ],
    )


def _state(text: str | None) -> DeploymentState | None:
    if text is None:
        return None
    try:
        return DeploymentState(text)
    except ValueError:
        names = ", ".join(s.value for s in DeploymentState)
        raise InvalidInput("state", f"{text!r} is not one of {names}") from None


def _href(kept: dict[str, str | None], cursor: str | None) -> str:
    """Return the page's URL with its filters kept and this cursor."""
    asked = {key: value for key, value in {**kept, "cursor": cursor}.items() if value}
    return "/deployments" + (f"?{urlencode(asked)}" if asked else "")


def _gpu(gpu: Gpu, held: list[Holding], measured: GpuGauge | None = None) -> dict[str, Any]:
    """One GPU's bar: its largest holders, the others as one remainder (``svg/gpu_bars``),
    and beside what they declare, what NVML measures on it (a Ray node's GPUs: not here)."""
    return {
        "gpu": gpu,
        "held": sum(h.gib for h in held),
        "count": len(held),
        "svg": gpu_bar(gpu, held),
        "measured": measured,
    }


EVENT_ROWS = 50  # a deployment's events a page, as the Runs page's 50 runs


def _events_page(
    fleet: Fleet, deployment_id: int, cursor: str | None
) -> tuple[list[Event], str | None]:
    """Return a page of its events, newest first, and the next (older) page's cursor."""
    key = read_cursor(cursor or None, "deployment-events")
    if key is not None and not (
        isinstance(key, list) and len(key) == 2 and all(type(part) is int for part in key)
    ):
        raise InvalidInput("cursor", "is not a cursor of a deployment's events")
    found = fleet.events.newest(
        limit=EVENT_ROWS + 1,
        deployment_id=deployment_id,
        before=None if key is None else (key[0], key[1]),
        every_action=True,
    )
    page = found[:EVENT_ROWS]
    if len(found) <= EVENT_ROWS:
        return page, None
    return page, make_cursor("deployment-events", [page[-1].at_us, page[-1].id])


@router.get("/deployments/{deployment_id}", response_class=HTMLResponse)
def deployment_page(
    request: Request,
    deployment_id: PathId,
    *,
    services: ServicesDep,
    fleet: FleetDep,
    sections: SectionsDep,
    range: Annotated[str, Query(max_length=10)] = "day",
    cursor: CursorQuery = None,
) -> Response:
    """One deployment: its facts, actions, traffic over the range picked, its events paged
    as the Runs page pages runs (newest first, ``EVENT_ROWS`` a page, ``cursor`` older)."""
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
    events, older = _events_page(fleet, deployment_id, cursor)
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
        events=[{"e": event_shown_to(e, who), "at": iso(e.at_us, host)} for e in events],
        events_older=older,
        events_first=cursor is None,
        extras=extras,
        log=log,
        synthetic=synthetic_note(fleet, deployment_id),
        gpus={gpu.index: gpu for gpu in fleet.inventory.gpus},
        ladder=_idle_ladder(deployment),
        budget=_budget(fleet, deployment, host),
        wake_times=_wake_times(fleet, deployment_id),
        down_times=_down_times(fleet, deployment_id),
        wake_lead_s=_duration(deployment.wake_lead.seconds),  # shown for a lead in seconds
    )
