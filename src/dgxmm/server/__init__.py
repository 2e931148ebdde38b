"""The server: the ASGI app (API, pages), auth, and the host that ticks the scheduler."""

from dgxmm.places import machine_zone
from dgxmm.server.app import create_app
from dgxmm.server.auth import Identity, Role, Tokens
from dgxmm.server.host import Host
from dgxmm.server.serve import ServeOptions, serve

__all__ = [
    "Host",
    "Identity",
    "Role",
    "ServeOptions",
    "Tokens",
    "create_app",
    "machine_zone",
    "serve",
]
