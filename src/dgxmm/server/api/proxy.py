"""``/api/proxy/settings``: the proxy's hold bounds (docs/proxy.md), read by viewers, set by admins.

They are the store settings ``proxy.max_held`` and ``proxy.max_hold_s``; the proxy reads them
again within a second. A value it cannot use answers 400 naming the field and changes nothing.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from dgxmm.proxy import MAX_HELD_SETTING, MAX_HOLD_SETTING, check_bounds, read_bounds
from dgxmm.server.bodies import Body
from dgxmm.server.deps import Admin, HostDep, Viewer

__all__ = ["router"]

router = APIRouter(prefix="/api/proxy", tags=["proxy"])


class BoundsBody(Body):
    """The hold's bounds; a key left out keeps its value."""

    max_held: int | None = None
    max_hold_s: float | None = None


@router.get("/settings")
def get_settings(host: HostDep, _: Viewer) -> dict[str, Any]:
    """The hold's bounds: how many requests a deployment may hold, and for how long."""
    return {"settings": read_bounds(host.store.get_setting).to_json()}


@router.put("/settings")
def put_settings(body: BoundsBody, host: HostDep, who: Admin) -> dict[str, Any]:
    """Change the hold's bounds; a wrong value answers 400 naming the field."""
    now = read_bounds(host.store.get_setting)
    given = body.model_dump(exclude_none=True)
    bounds = check_bounds(given.get("max_held", now.max_held),
                          given.get("max_hold_s", now.max_hold_s))  # fmt: skip
    host.store.set_setting(MAX_HELD_SETTING, bounds.max_held, actor=who.actor)
    host.store.set_setting(MAX_HOLD_SETTING, bounds.max_hold_s, actor=who.actor)
    return {"settings": bounds.to_json()}
