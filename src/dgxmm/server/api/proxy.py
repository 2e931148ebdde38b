"""``/api/proxy/settings``: the proxy's hold bounds (docs/proxy.md), read by viewers, set by admins.

They are the store settings ``proxy.max_held``, ``proxy.max_hold_s``, ``proxy.max_held_bytes``
and ``proxy.max_held_bytes_total``; the proxy reads them again within a second. A value it
cannot use answers 400 naming the field and changes nothing; every such field is named in
``errors``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter
from pydantic import Field

from dgxmm.proxy import bound_settings, check_bounds, read_bounds
from dgxmm.server.edge.bodies import Body
from dgxmm.server.edge.deps import Admin, HostDep, Viewer
from dgxmm.server.edge.openapi import answers

__all__ = ["router"]

router = APIRouter(prefix="/api/proxy", tags=["proxy"])


# A text is taken too, and refused by ``check_bounds`` beside every other wrong bound (400
# naming each), rather than by pydantic alone before them (422 naming only the texts).
Bound = int | float | Annotated[str, Field(max_length=100)] | None


class BoundsBody(Body):
    """The hold's bounds; a key left out keeps its value."""

    max_held: Bound = None
    max_hold_s: Bound = None
    max_held_bytes: Bound = None
    max_held_bytes_total: Bound = None


@router.get("/settings")
def get_settings(host: HostDep, _: Viewer) -> dict[str, Any]:
    """The hold's bounds: how many requests and bytes a deployment may hold, for how long."""
    return {"settings": read_bounds(host.store.get_setting).to_json()}


@router.put("/settings", responses=answers(400))
def put_settings(body: BoundsBody, host: HostDep, who: Admin) -> dict[str, Any]:
    """Change the hold's bounds; a wrong value answers 400 naming the field."""
    given = body.model_dump(exclude_none=True)
    bounds = check_bounds(read_bounds(host.store.get_setting), given)
    for setting, value in bound_settings(bounds, given).items():
        host.store.set_setting(setting, value, actor=who.actor)
    return {"settings": bounds.to_json()}
