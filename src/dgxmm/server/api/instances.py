"""``GET /api/instances``: the dgxmm processes on this database, their roles, alive or not."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from dgxmm.server.edge.deps import HostDep, Viewer
from dgxmm.server.lists.jobs import iso

__all__ = ["router"]

router = APIRouter(prefix="/api/instances", tags=["instances"])


@router.get("")
def list_instances(host: HostDep, _: Viewer) -> dict[str, Any]:
    """Every instance: its role (holder, standby, process), since when, last seen, alive."""
    rows = []
    for instance in host.store.presence.all():
        row = instance.to_json()
        row["started_at"] = iso(instance.started_at, host)
        row["role_since"] = iso(instance.role_since, host)
        row["last_seen"] = iso(instance.last_seen, host)
        row["stopped_at"] = iso(instance.stopped_at, host)
        rows.append(row)
    return {"this": host.store.instance, "role": host.role.value, "instances": rows}
