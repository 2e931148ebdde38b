"""The catalog's attic: list it, restore an entry, remove one for good (409 while a job runs)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from dgxmm.server.edge.bodies import AtticBody
from dgxmm.server.edge.deps import Admin, HostDep, Viewer
from dgxmm.server.edge.openapi import answers
from dgxmm.server.lists.jobs import iso
from dgxmm.store import AtticEntry, Subject

__all__ = ["entry_row", "router"]

router = APIRouter(prefix="/api/attic", tags=["attic"])


@router.get("")
def list_attic(host: HostDep, _: Viewer) -> dict[str, Any]:
    """Every dropped or replaced query and job, the most recently dropped first."""
    return {"attic": [entry_row(entry, host) for entry in host.store.attic()]}


@router.post("/restore", responses=answers(400, 404, 409))
def restore(body: AtticBody, host: HostDep, who: Admin) -> dict[str, Any]:
    """Bring an entry back; 409 naming ``name`` while a live one has it, or while a job runs."""
    restored = host.store.restore_from_attic(
        Subject(body.kind), body.name, entry_id=body.id, actor=who.actor
    )
    host.sync()
    return restored.to_json()


@router.post("/remove", responses=answers(404, 409))
def remove(body: AtticBody, host: HostDep, who: Admin) -> dict[str, Any]:
    """Delete an entry for good; 409 while a user job runs."""
    removed = host.store.remove_from_attic(
        Subject(body.kind), body.name, entry_id=body.id, actor=who.actor
    )
    return {"removed": entry_row(removed, host)}


def entry_row(entry: AtticEntry, host: HostDep) -> dict[str, Any]:
    """Return an attic entry as the API and the Store page show it."""
    return {
        **entry.to_json(),
        "dropped": iso(entry.dropped_at, host),
        "defined": iso(entry.defined_at, host),
    }
