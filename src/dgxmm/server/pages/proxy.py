"""The Proxy page: the models the proxy serves, what it holds or wakes now, its refusals of
the last hour by reason, and its hold settings (admins change them).

llama-swap's "what is loaded right now": each model with its deployment's state as a client
reads it (``/v1/models``), the requests held for it now, and for an awake one an Unload
button that puts its deployment to sleep through ``POST /api/deployments/{id}/sleep``. The
numbers are the proxy's own (``ProxyStats``): without a proxy in this process (``dgxmm serve``
without ``--proxy-port``) the page says so and shows the models and settings only.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.fleet import DeploymentState
from dgxmm.proxy import Refusal, model_state, read_bounds
from dgxmm.server.edge.deps import ServicesDep
from dgxmm.server.pages.render import render_page

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

# What each refusal means, in the words of a person reading the page.
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

# The settings' labels and units, as the form shows them (the API's keys are the names).
SETTING_LABELS = {
    "max_held": ("Requests held per deployment", "requests"),
    "max_hold_s": ("Longest hold", "seconds"),
    "max_held_bytes": ("Bytes held per deployment", "bytes"),
    "max_held_bytes_total": ("Bytes held in all", "bytes"),
}


@router.get("/proxy", response_class=HTMLResponse)
def proxy_page(request: Request, services: ServicesDep) -> Response:
    """The models, what is held and woken now, the last hour's refusals, the settings."""
    fleet = services.fleet
    assert fleet is not None  # served with the fleet's routes only
    stats = services.proxy
    snapshot = stats.snapshot() if stats is not None else None
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
    recent = stats.recent_refusals() if stats is not None else {}
    bounds = read_bounds(services.host.store.get_setting).to_json()
    return render_page(
        request,
        "proxy.html",
        running=stats is not None,
        models=models,
        held_now=sum(m["held"] for m in models),
        waking_now=[m for m in models if m["waking"] or (m["held"] and not m["awake"])],
        refusals=[
            {"reason": r.value, "words": REFUSAL_WORDS[r], "count": recent.get(r.value, 0)}
            for r in Refusal
        ],
        refused_total=sum(recent.values()),
        settings=[
            {"key": key, "label": label, "unit": unit, "value": bounds[key]}
            for key, (label, unit) in SETTING_LABELS.items()
        ],
    )
