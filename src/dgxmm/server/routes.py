"""What a layer hands to ``create_app``: its routers and its sections of a deployment's page.

Each layer's ``Routes`` is a constant in ``server/app.py``; ``create_app`` takes the ones an
app serves. Nothing is registered at import time, so two apps in one process (with other
services) each show only their own sections.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from fastapi import APIRouter

from dgxmm.fleet import Deployment
from dgxmm.server.services import Services

__all__ = ["DeploymentSection", "Routes"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DeploymentSection:
    """A section another part of dgxmm adds to every deployment's page."""

    name: str
    template: str  # in server/templates; sees ``deployment`` and ``extra``
    # What ``extra`` holds, given the page's display zone (for the times it draws).
    context: Callable[[Services, Deployment, ZoneInfo], Mapping[str, Any]] | None = None
    order: int = 100  # sections are shown by order, then name


@dataclass(frozen=True, slots=True, kw_only=True)
class Routes:
    """One layer's routers and deployment-page sections, and the services they read."""

    name: str
    routers: tuple[APIRouter, ...] = ()
    sections: tuple[DeploymentSection, ...] = ()
    # The optional ``Services`` fields the routers read: ``create_app`` refuses these routes
    # for services without them.
    needs: tuple[str, ...] = ()
