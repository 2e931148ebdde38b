"""The fleet's routers, for ``create_app(routers=...)``: its API and its pages."""

from __future__ import annotations

from fastapi import APIRouter

from dgxmm.server import api_audit, api_deployments, api_insights, fleet_pages

__all__ = ["fleet_routers"]


def fleet_routers() -> list[APIRouter]:
    """Return the routers of deployments, insights, audit and the fleet's pages."""
    return [api_deployments.router, api_insights.router, api_audit.router, fleet_pages.router]
