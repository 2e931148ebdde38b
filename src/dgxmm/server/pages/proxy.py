"""The Proxy page: the models the proxy serves, what it holds or wakes now, its refusals of
the last hour by reason (only the reasons that happened), and its hold settings (admins
change them; the body bounds in MiB). Its address and an example request come first
(``templates/proxy_address.html``); the numbers are gathered by ``api/proxy.py``, which
``GET /api/proxy`` and ``dgxmm proxy`` answer with.

llama-swap's "what is loaded right now": each model with its deployment's state as a client
reads it (``/v1/models``), the requests held for it now, and for an awake one an Unload
button that puts its deployment to sleep through ``POST /api/deployments/{id}/sleep``. The
numbers are the proxy's own (``ProxyStats``): without a proxy in this process (``dgxmm serve``
without ``--proxy-port``) the page says so and shows the models and settings only.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.proxy import read_bounds
from dgxmm.server.api.proxy import proxy_models, recent_refusals
from dgxmm.server.edge.deps import ServicesDep
from dgxmm.server.pages.render import render_page

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

MIB = 1024 * 1024

# The settings' labels, units and scale, as the form shows them (the API's keys are the names,
# in bytes; the form shows MiB and proxy.js multiplies back by the scale).
SETTING_LABELS = {
    "max_held": ("Requests held per deployment", "requests", 1),
    "max_hold_s": ("Longest hold", "seconds", 1),
    "max_held_bytes": ("Bodies held per deployment", "MiB", MIB),
    "max_held_bytes_total": ("Bodies held in all", "MiB", MIB),
}


@router.get("/proxy", response_class=HTMLResponse)
def proxy_page(request: Request, services: ServicesDep) -> Response:
    """The models, what is held and woken now, the last hour's refusals, the settings."""
    models = proxy_models(services)
    refusals = recent_refusals(services)
    bounds = read_bounds(services.host.store.get_setting).to_json()
    return render_page(
        request,
        "proxy.html",
        running=services.proxy is not None,
        models=models,
        held_now=sum(m["held"] for m in models),
        waking_now=[m for m in models if m["waking"] or (m["held"] and not m["awake"])],
        refusals=refusals,
        refused_total=sum(r["count"] for r in refusals),
        settings=[
            {
                "key": key,
                "label": label,
                "unit": unit,
                "scale": scale,
                "value": _shown(bounds[key] / scale),
            }
            for key, (label, unit, scale) in SETTING_LABELS.items()
        ],
    )


def _shown(value: float) -> str:
    """Return a setting as the form shows it: ``128``, ``0.5``, never ``1e+06``."""
    return str(int(value)) if value == int(value) else f"{value:.6f}".rstrip("0")
