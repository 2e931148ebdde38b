"""Store operations: checkpoint, backup, restore, compact, rollback (409 while a user job runs)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from dgxmm.server.edge.bodies import BackupBody, RestoreBody, RollbackBody
from dgxmm.server.edge.deps import Admin, HostDep, Viewer
from dgxmm.server.edge.openapi import answers
from dgxmm.server.lists.jobs import iso

__all__ = ["router"]

router = APIRouter(prefix="/api/store", tags=["store"])


@router.get("")
def describe_store(host: HostDep, _: Viewer) -> dict[str, Any]:
    """What the store is: its database, catalog version and recent journal."""
    store = host.store
    version = store.catalog_version()
    journal = store.journal(after_version=max(0, version - 20))
    return {
        "dialect": str(store.dialect),
        "path": None if store.path is None else str(store.path),
        "data_dir": str(store.data_dir),
        "catalog_version": version,
        "journal": [
            {
                "version": entry.version,
                "at": iso(entry.at_us, host),
                "actor": entry.actor,
                "subject": entry.subject.value,
                "name": entry.name,
                "change": entry.change.value,
            }
            for entry in reversed(journal)
        ],
    }


@router.post("/checkpoint", responses=answers(409))
def checkpoint(host: HostDep, _: Admin) -> dict[str, Any]:
    """Checkpoint the database."""
    return {"operation": "checkpoint", "detail": host.store.checkpoint()}


@router.post("/backup", responses=answers(400, 409))
def backup(body: BackupBody, host: HostDep, _: Admin) -> dict[str, Any]:
    """Back up into a directory: a full copy the first time, what changed after."""
    result = host.store.backup(body.directory)
    return {
        "operation": "backup",
        "directory": str(result.directory),
        "sequence": result.sequence,
        "method": result.method,
        "reason": result.reason,  # why it compared checksums or copied everything, or None
        "items": result.items,
        "bytes_written": result.bytes_written,
    }


@router.post("/restore", responses=answers(400, 409))
def restore(body: RestoreBody, host: HostDep, _: Admin) -> dict[str, Any]:
    """Rebuild a database from a backup directory at a new target (never this store)."""
    result = host.store.restore(body.directory, body.target)
    return {
        "operation": "restore",
        "target": result.target,
        "sequence": result.sequence,
        "items": result.items,
    }


@router.post("/compact", responses=answers(409))
def compact(host: HostDep, _: Admin) -> dict[str, Any]:
    """Rebuild the database compactly."""
    return {"operation": "compact", "detail": host.store.compact()}


@router.post("/rollback", responses=answers(400, 409))
def rollback(
    body: RollbackBody,
    host: HostDep,
    who: Admin,
    dry_run: Annotated[bool, Query()] = False,
) -> dict[str, Any]:
    """Put the catalog's definitions back as they were at a version, as one new version.

    ``?dry_run=true`` answers what it would change and changes nothing.
    """
    result = host.store.rollback(body.version, actor=who.actor, dry_run=dry_run)
    if not dry_run:
        host.sync()
    return result.to_json()
