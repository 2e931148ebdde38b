"""The server: the ASGI app (API, pages), auth, and the host that ticks the scheduler."""

from dgxmm.places import machine_zone
from dgxmm.server.access.tokens import Identity, Role, Tokens
from dgxmm.server.app import (
    ALERT_ROUTES,
    FLEET_ROUTES,
    JOBS_ROUTES,
    PROPOSAL_ROUTES,
    SCHEDULE_ROUTES,
    create_app,
)
from dgxmm.server.host import Host
from dgxmm.server.routes import DeploymentSection, Routes
from dgxmm.server.serve import ServeOptions, serve
from dgxmm.server.services import Services
from dgxmm.server.telemetry import ServerMetrics

__all__ = [
    "ALERT_ROUTES",
    "FLEET_ROUTES",
    "JOBS_ROUTES",
    "PROPOSAL_ROUTES",
    "SCHEDULE_ROUTES",
    "DeploymentSection",
    "Host",
    "Identity",
    "Role",
    "Routes",
    "ServeOptions",
    "ServerMetrics",
    "Services",
    "Tokens",
    "create_app",
    "machine_zone",
    "serve",
]
