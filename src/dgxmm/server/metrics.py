"""``GET /metrics``: dgxmm's own metrics in Prometheus' text format, for a scraper.

The series are ``server/telemetry.py``'s. A viewer's token is needed, like every read of the
API: the series name deployments and jobs. A Prometheus job sends it with ``authorization:
{credentials_file: ...}`` (docs/server.md).
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from dgxmm.server.edge.deps import ServicesDep, Viewer

__all__ = ["router"]

# What generate_latest writes (no UTF-8 names here), and what every Prometheus reads; newer
# clients call their default 1.0.0, which a Prometheus before 3.0 does not know.
TEXT_FORMAT = "text/plain; version=0.0.4; charset=utf-8"

router = APIRouter(tags=["metrics"])


@router.get("/metrics", response_class=Response)
def metrics(services: ServicesDep, _: Viewer) -> Response:
    """dgxmm's own metrics in Prometheus' text format (a viewer's token)."""
    page = services.metrics.exposition(
        services.fleet, services.proxy, store=services.host.store, schedules=services.schedules
    )
    return Response(page, media_type=TEXT_FORMAT)
