"""The ASGI app: each layer's routes, the static files, and the error shape.

A layer hands its routers and its sections of a deployment's page to ``create_app`` as one
``Routes`` value; the constants below are every layer's. The jobs engine's and the store's
routes (``JOBS_ROUTES``) are in every app; ``serve`` adds the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from dgxmm import __version__
from dgxmm.server import api, metrics, pages
from dgxmm.server.edge.body_limit import BodyLimit
from dgxmm.server.edge.openapi import OpenApiApp
from dgxmm.server.edge.responses import install_error_handlers
from dgxmm.server.pages.render import error_page
from dgxmm.server.routes import Routes
from dgxmm.server.services import Services

__all__ = [
    "ALERT_ROUTES",
    "FLEET_ROUTES",
    "JOBS_ROUTES",
    "PROPOSAL_ROUTES",
    "SCHEDULE_ROUTES",
    "create_app",
]

STATIC = Path(__file__).with_name("static")

JOBS_ROUTES = Routes(
    name="jobs",
    routers=(
        api.jobs.router,
        api.runs.router,
        api.instances.router,
        api.queries.router,
        api.store.router,
        api.attic.router,
        api.changes.router,
        api.catalog.router,
        api.tokens.router,
        metrics.router,
        pages.login.router,
        pages.api_docs.router,
        pages.jobs.router,
        pages.job.router,  # after /jobs/new
        pages.runs.router,
        pages.instances.router,
        pages.tokens.router,
        pages.workload.router,
        pages.queries.router,
        pages.store.router,
        pages.playground.router,
    ),
)
FLEET_ROUTES = Routes(
    name="fleet",
    routers=(
        api.deployments.router,
        api.proxy.router,
        api.insights.router,
        api.audit.router,
        api.savings.router,
        pages.deployment_form.router,  # /deployments/new before /deployments/{id}
        pages.deployments.router,
        pages.insights.router,
        pages.savings.router,
        pages.audit.router,
        pages.proxy.router,
    ),
    needs=("fleet",),
)
SCHEDULE_ROUTES = Routes(
    name="schedules",
    routers=(api.schedules.router, pages.schedules.router),
    sections=(pages.schedules.SECTION,),
    needs=("fleet", "schedules"),
)
PROPOSAL_ROUTES = Routes(
    name="proposals",
    routers=(api.traffic.router, api.proposals.router, pages.traffic.router),
    sections=(pages.traffic.SECTION,),
    needs=("fleet", "schedules", "proposals"),
)

ALERT_ROUTES = Routes(
    name="alerts",
    routers=(api.alerts.router, pages.alerts.router),
    needs=("fleet", "alerts"),
)


def create_app(services: Services, routes: Sequence[Routes] = ()) -> FastAPI:
    """Build the app around its services, serving ``JOBS_ROUTES`` and ``routes``.

    Its OpenAPI document lists every status each operation answers (``server/edge/openapi.py``).

    Refuses (``ValueError``) routes that need a service ``services`` does not have.
    """
    served = [JOBS_ROUTES, *(r for r in routes if r is not JOBS_ROUTES)]
    for layer in served:
        missing = [name for name in layer.needs if getattr(services, name) is None]
        if missing:
            raise ValueError(f"the {layer.name} routes need services.{', services.'.join(missing)}")
    app = OpenApiApp(
        title="dgxmm",
        version=__version__,
        description="Model-serving deployments and the scheduled work around them.",
        docs_url=None,  # pages/api_docs.py: Swagger UI would load its script from a CDN
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.state.services = services
    app.state.deployment_sections = tuple(
        sorted(
            (section for layer in served for section in layer.sections),
            key=lambda section: (section.order, section.name),
        )
    )
    install_error_handlers(app, error_page)
    app.add_middleware(BodyLimit)
    for layer in served:
        for router in layer.routers:
            app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    # The playground's runtime and wheels, fetched by scripts/playground-files (the page
    # says what is missing when they are not there).
    app.mount(
        "/playground/files",
        StaticFiles(directory=pages.playground.PLAYGROUND_FILES, check_dir=False),
        name="playground-files",
    )
    return app
