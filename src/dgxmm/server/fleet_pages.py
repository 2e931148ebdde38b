"""The fleet's pages: Deployments, a deployment's page, Insights and Audit.

Server-rendered like the other pages; their buttons call the JSON API (``static/fleet.js``).
Other parts of dgxmm add sections to a deployment's page with ``add_deployment_extra`` (the
schedules' week strip, the traffic profile's link): each is a template of
``server/templates`` included with ``deployment`` and ``extra`` (what its ``context``
function returned) in its context.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.fleet import BackendKind, Deployment, Fleet
from dgxmm.server.deps import PathId, QueryId, identify
from dgxmm.server.fleet_charts import WINDOWS, gpu_bar, traffic_chart
from dgxmm.server.host import Host
from dgxmm.server.job_list import iso
from dgxmm.server.pages import render_page

__all__ = ["DeploymentExtra", "add_deployment_extra", "remove_deployment_extra", "router"]

router = APIRouter(include_in_schema=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeploymentExtra:
    """A section another part of dgxmm adds to every deployment's page."""

    name: str
    template: str  # in server/templates; sees ``deployment`` and ``extra``
    context: Callable[[Request, Deployment], Mapping[str, Any]] | None = None
    order: int = 100  # sections are shown by order, then name
    # The ``app.state`` service the section reads; an app without it does not show it (the
    # registry is per process, and one process may serve apps built with other services).
    needs: str | None = None


_EXTRAS: dict[str, DeploymentExtra] = {}


def add_deployment_extra(extra: DeploymentExtra) -> None:
    """Add (or replace, by name) a section of the deployment page."""
    _EXTRAS[extra.name] = extra


def remove_deployment_extra(name: str) -> None:
    """Take a section off the deployment page (nothing happens for an unknown name)."""
    _EXTRAS.pop(name, None)


def _fleet(request: Request) -> Fleet:
    fleet: Fleet = request.app.state.fleet
    return fleet


def _row(deployment: Deployment, host: Host) -> dict[str, Any]:
    return {
        "d": deployment,
        "state_since": iso(deployment.state_since, host),
        "last_request": iso(deployment.last_request_at, host),
    }


@router.get("/deployments", response_class=HTMLResponse)
def deployments_page(request: Request) -> Response:
    """Every deployment: its state, the GPU memory it holds, its last request, its actions."""
    fleet = _fleet(request)
    host: Host = request.app.state.host
    gpus = fleet.gpus()
    return render_page(
        request,
        "deployments.html",
        rows=[_row(d, host) for d in fleet.deployments.list()],
        gpus=[
            {"gpu": gpu, "held": sum(h.gib for h in held), "svg": gpu_bar(gpu, held)}
            for gpu, held in gpus
        ],
        inventory=fleet.inventory,
    )


@router.get("/deployments/{deployment_id}", response_class=HTMLResponse)
def deployment_page(request: Request, deployment_id: PathId) -> Response:
    """One deployment: its facts, actions, traffic over the last day and week, events."""
    fleet = _fleet(request)
    host: Host = request.app.state.host
    deployment = fleet.deployments.get(deployment_id)
    now = host.clock.now_us()
    width, count, _ = WINDOWS["week"]
    rollups = fleet.metrics.rollups(deployment_id, now - now % width - count * width, now + 1)
    charts = {
        f"{window}_{measure}": traffic_chart(
            rollups, window=window, measure=measure, now_us=now, zone=host.time_zone
        )
        for window in WINDOWS
        for measure in ("requests", "latency")
    }
    extras = [
        {
            "name": extra.name,
            "template": extra.template,
            "context": dict(extra.context(request, deployment)) if extra.context else {},
        }
        for extra in sorted(_EXTRAS.values(), key=lambda e: (e.order, e.name))
        if extra.needs is None or hasattr(request.app.state, extra.needs)
    ]
    log = (
        fleet.backends.run_dir(deployment_id) / "server.log"
        if deployment.backend is BackendKind.PROCESS
        else None
    )
    return render_page(
        request,
        "deployment.html",
        row=_row(deployment, host),
        d=deployment,
        deployment=deployment,
        charts=charts,
        requests_day=sum(r.requests for r in rollups if r.minute_us > now - 24 * 60 * 60_000_000),
        requests_week=sum(r.requests for r in rollups),
        events=[{"e": e, "at": iso(e.at_us, host)} for e in fleet.events.list(deployment_id)],
        extras=extras,
        log=log,
        gpus={gpu.index: gpu for gpu in fleet.inventory.gpus},
    )


@router.get("/insights", response_class=HTMLResponse)
def insights_page(request: Request, dismissed: bool = False) -> Response:
    """What a person should know, newest first; admins dismiss them here."""
    fleet = _fleet(request)
    host: Host = request.app.state.host
    names = {d.id: d.name for d in fleet.deployments.list()}
    return render_page(
        request,
        "insights.html",
        insights=[
            {
                "i": insight,
                "deployment": names.get(insight.deployment_id or -1),
                "created": iso(insight.created_at, host),
                "dismissed": iso(insight.dismissed_at, host),
            }
            for insight in fleet.insights.list(dismissed)
        ],
        dismissed=dismissed,
    )


@router.get("/audit", response_class=HTMLResponse)
def audit_page(
    request: Request,
    before: QueryId = None,
    subject: Annotated[str | None, Query(max_length=50)] = None,
    actor: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    """Who did what, newest first (admins only, like ``GET /api/audit``)."""
    who = identify(request)
    if who is not None and not who.is_admin:
        return render_page(request, "audit.html", rows=[], forbidden=True, filters={})
    fleet = _fleet(request)
    host: Host = request.app.state.host
    rows = fleet.audit.list(
        limit=100, before_id=before, subject=subject or None, actor=actor or None
    )
    return render_page(
        request,
        "audit.html",
        rows=[
            {
                "a": row,
                "at": iso(row.at_us, host),
                "detail": json.dumps(row.detail, indent=1) if row.detail is not None else "",
            }
            for row in rows
        ],
        forbidden=False,
        filters={"subject": subject or "", "actor": actor or ""},
        older=rows[-1].id if len(rows) == 100 else None,
    )
