"""Which deployment serves a model: the deployments, cached, with what the door says.

The table is read from the store at most once a second (``refresh_s``) and at once for a
model it does not know (a deployment created a moment ago), so a request to an awake
deployment costs no query. A cached state is trusted only while the deployment's door
generation (``RequestActivity``) is the one seen when the table was read: every take-down
moves it on, so a deployment put to sleep since is read again, never forwarded to.

A deployment answers to its model and to each of its aliases (the repository lets no two
deployments share an alias). Several deployments serving one model: the awake one first, then
the one asleep, then by name.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from dgxmm.fleet import Deployment, DeploymentRepo, DeploymentState, RequestActivity
from dgxmm.proxy.bounds import DEFAULT_BOUNDS, HoldBounds

__all__ = ["Route", "RouteTable"]

_PREFERENCE = {DeploymentState.RUNNING: 0, DeploymentState.SLEEPING: 1}


@dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    """A deployment as the table read it, and the door generation it was read under."""

    deployment: Deployment
    generation: int


class RouteTable:
    """The deployments by model, read again when stale; see the module docstring."""

    def __init__(
        self,
        deployments: DeploymentRepo,
        activity: RequestActivity,
        *,
        bounds: Callable[[], HoldBounds] | None = None,
        refresh_s: float = 1.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._deployments = deployments
        self._activity = activity
        self._read_bounds = bounds
        self._refresh_s = refresh_s
        self._monotonic = monotonic
        self._by_model: dict[str, Route] = {}
        self._bounds = DEFAULT_BOUNDS
        self._read_at = -float("inf")
        self._reading: asyncio.Task[None] | None = None

    @property
    def bounds(self) -> HoldBounds:
        """The hold's bounds, read with the table."""
        return self._bounds

    async def current_bounds(self) -> HoldBounds:
        """Return the hold's bounds, read again when the table is due to be."""
        if self._monotonic() - self._read_at >= self._refresh_s:
            await self.refresh()
        return self._bounds

    async def route(self, model: str) -> Route | None:
        """Return the route of a model (None: no deployment serves it)."""
        if self._monotonic() - self._read_at >= self._refresh_s:
            await self.refresh()
        found = self._by_model.get(model)
        if found is None and self._monotonic() - self._read_at > 0.05:
            await self.refresh()  # created a moment ago?
            found = self._by_model.get(model)
        return found

    async def served(self) -> list[tuple[str, Route]]:
        """Return each model name served and the route a request for it takes (read now)."""
        await self.refresh()
        return list(self._by_model.items())

    async def fresh(self, deployment_id: int) -> Route:
        """Read one deployment again (``NotFound`` when it was removed)."""
        generation = self._activity.generation(deployment_id)
        deployment = await asyncio.to_thread(self._deployments.get, deployment_id)
        return Route(deployment=deployment, generation=generation)

    def is_current(self, route: Route, generation: int) -> bool:
        """Tell whether a cached route's state still holds at ``generation``."""
        return route.generation == generation

    async def refresh(self) -> None:
        """Read the table again; concurrent callers share one read."""
        reading = self._reading
        if reading is None:
            reading = self._reading = asyncio.ensure_future(self._read())
        try:
            await asyncio.shield(reading)
        finally:
            if self._reading is reading and reading.done():
                self._reading = None

    async def _read(self) -> None:
        generations, deployments = await asyncio.to_thread(self._load)
        routes = [Route(deployment=d, generation=generations.get(d.id, 0)) for d in deployments]
        by_model: dict[str, Route] = {}
        for route in sorted(routes, key=_preference):
            for name in (route.deployment.model, *route.deployment.aliases):
                by_model.setdefault(name, route)
        self._by_model = by_model
        if self._read_bounds is not None:
            self._bounds = await asyncio.to_thread(self._read_bounds)
        self._read_at = self._monotonic()

    def _load(self) -> tuple[dict[int, int], list[Deployment]]:
        # The generations first: a door that opens while the rows are read makes them stale.
        generations = self._activity.generations()
        return generations, self._deployments.list()


def _preference(route: Route) -> tuple[int, str]:
    return (_PREFERENCE.get(route.deployment.state, 2), route.deployment.name)
