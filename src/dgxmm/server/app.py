"""The ASGI app: the API routers, the pages, the static files, and the error shape."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.staticfiles import StaticFiles

from dgxmm import __version__
from dgxmm.server import api_jobs, api_queries, api_store, pages
from dgxmm.server.auth import Tokens
from dgxmm.server.body_limit import BodyLimit
from dgxmm.server.host import Host
from dgxmm.server.responses import install_error_handlers

__all__ = ["create_app"]

STATIC = Path(__file__).with_name("static")


def create_app(
    host: Host,
    tokens: Tokens,
    *,
    routers: Sequence[APIRouter] = (),
    state: Mapping[str, object] | None = None,
) -> FastAPI:
    """Build the app around a host (store, scheduler, ticker) and its tokens.

    ``routers`` adds the routers of the fleet and the decider; ``state`` puts their services
    on ``app.state`` (``fleet``, ``schedules``, ``proposals``) where those routers find them.
    """
    app = FastAPI(
        title="dgxmm",
        version=__version__,
        description="Model-serving deployments and the scheduled work around them.",
        docs_url="/api/docs",
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.host = host
    app.state.tokens = tokens
    for name, service in (state or {}).items():
        setattr(app.state, name, service)
    install_error_handlers(app)
    app.add_middleware(BodyLimit)
    for router in (api_jobs.router, api_queries.router, api_store.router, *routers, pages.router):
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app
