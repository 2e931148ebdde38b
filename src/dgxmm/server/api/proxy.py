"""``/api/proxy``: the proxy as the Proxy page and ``dgxmm proxy`` show it; its hold bounds.

``GET /api/proxy``: its address (null: no proxy in this server), each model with its
deployment's state as a client reads it and what is held for it now, the last hour's refusals
by reason (only those that happened), and the hold's settings.

``/api/proxy/settings``: the proxy's hold bounds (docs/proxy.md), read by viewers, set by admins.

They are the store settings ``proxy.max_held``, ``proxy.max_hold_s``, ``proxy.max_held_bytes``
and ``proxy.max_held_bytes_total``; the proxy reads them again within a second. A value it
cannot use answers 400 naming the field and changes nothing; every such field is named in
``errors``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter
from pydantic import Field

from dgxmm.fleet import DeploymentState
from dgxmm.proxy import Refusal, bound_settings, check_bounds, model_state, read_bounds
from dgxmm.server.edge.bodies import Body
from dgxmm.server.edge.deps import Admin, HostDep, ServicesDep, Viewer
from dgxmm.server.edge.openapi import answers
from dgxmm.server.services import Services

__all__ = ["REFUSAL_WORDS", "proxy_models", "recent_refusals", "router"]

# What each refusal means, in the words of a person reading the page or the CLI.
REFUSAL_WORDS = {
    Refusal.WAKE_OFF: "the deployment does not wake on a request",
    Refusal.DOES_NOT_FIT: "waking it would need another deployment evicted",
    Refusal.STOPPED: "a person stopped it: a request does not start it",
    Refusal.FAILED: "the deployment has failed",
    Refusal.WAKE_FAILED: "its server did not come up",
    Refusal.HOLD_FULL: "too many requests were already held",
    Refusal.HOLD_TIMEOUT: "a request waited the longest hold",
    Refusal.UNREACHABLE: "the server did not answer",
    Refusal.BUSY: "past its concurrency limit with the queue full",
}


def proxy_models(services: Services) -> list[dict[str, Any]]:
    """Return each deployment as the proxy serves it: names, state, held now, since start.

    ``d`` is the deployment itself (the page links it); the numbers are 0 without a proxy.
    """
    fleet = services.fleet
    assert fleet is not None  # served with the fleet's routes only
    snapshot = services.proxy.snapshot() if services.proxy is not None else None
    models = []
    for deployment in fleet.deployments.list():
        name = deployment.name
        models.append(
            {
                "d": deployment,
                "names": [deployment.model, *deployment.aliases],
                "state": model_state(deployment.state).value,
                "awake": deployment.state is DeploymentState.RUNNING,
                "waking": deployment.state is DeploymentState.STARTING,
                "held": 0 if snapshot is None else snapshot.held.get(name, 0),
                "held_bytes": 0 if snapshot is None else snapshot.held_bytes.get(name, 0),
                "forwarded": 0 if snapshot is None else snapshot.forwarded.get(name, 0),
                "wakes": 0 if snapshot is None else snapshot.wakes.get(name, 0),
            }
        )
    return models


def recent_refusals(services: Services) -> list[dict[str, Any]]:
    """Return the last hour's refusals by reason, only the reasons that happened."""
    recent = services.proxy.recent_refusals() if services.proxy is not None else {}
    return [
        {"reason": r.value, "words": REFUSAL_WORDS[r], "count": recent[r.value]}
        for r in Refusal
        if recent.get(r.value)
    ]


router = APIRouter(prefix="/api/proxy", tags=["proxy"])


# A text is taken too, and refused by ``check_bounds`` beside every other wrong bound (400
# naming each), rather than by pydantic alone before them (422 naming only the texts).
Bound = int | float | Annotated[str, Field(max_length=100)] | None


class BoundsBody(Body):
    """The hold's bounds; a key left out keeps its value."""

    max_held: Bound = None
    max_hold_s: Bound = None
    max_held_bytes: Bound = None
    max_held_bytes_total: Bound = None


@router.get("", responses=answers())
def get_proxy(services: ServicesDep, _: Viewer) -> dict[str, Any]:
    """The proxy: its address, its models and their state, what it holds now, the last hour's
    refusals by reason, its settings; ``address`` null when no proxy runs in this server."""
    models = proxy_models(services)
    refusals = recent_refusals(services)
    return {
        "address": None if services.proxy_url is None else f"{services.proxy_url}/v1",
        "running": services.proxy is not None,
        "models": [
            {
                "model": m["names"][0],
                "aliases": m["names"][1:],
                "deployment": m["d"].name,
                "deployment_id": m["d"].id,
                "state": m["state"],
                "wake_on_request": m["d"].wake_on_request,
                "held": m["held"],
                "held_bytes": m["held_bytes"],
                "forwarded": m["forwarded"],
                "wakes": m["wakes"],
            }
            for m in models
        ],
        "held_now": sum(m["held"] for m in models),
        "refused_last_hour": sum(r["count"] for r in refusals),
        "refusals": [{key: r[key] for key in ("reason", "count", "words")} for r in refusals],
        "settings": read_bounds(services.host.store.get_setting).to_json(),
    }


@router.get("/settings")
def get_settings(host: HostDep, _: Viewer) -> dict[str, Any]:
    """The hold's bounds: how many requests and bytes a deployment may hold, for how long."""
    return {"settings": read_bounds(host.store.get_setting).to_json()}


@router.put("/settings", responses=answers(400))
def put_settings(body: BoundsBody, host: HostDep, who: Admin) -> dict[str, Any]:
    """Change the hold's bounds; a wrong value answers 400 naming the field."""
    given = body.model_dump(exclude_none=True)
    bounds = check_bounds(read_bounds(host.store.get_setting), given)
    for setting, value in bound_settings(bounds, given).items():
        host.store.set_setting(setting, value, actor=who.actor)
    return {"settings": bounds.to_json()}
