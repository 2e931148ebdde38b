"""The audit API: who did what to which thing, newest first (admin only)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from dgxmm.fleet import AuditAction, AuditSubject
from dgxmm.server.deps import Admin, FleetDep, HostDep, QueryId
from dgxmm.server.job_list import iso

__all__ = ["router"]

router = APIRouter(prefix="/api/audit", tags=["audit"])


@router.get("")
def list_audit(
    fleet: FleetDep,
    host: HostDep,
    _: Admin,
    *,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    before: QueryId = None,
    subject: AuditSubject | None = None,
    subject_id: Annotated[str | None, Query(max_length=100)] = None,
    actor: Annotated[str | None, Query(max_length=200)] = None,
    action: AuditAction | None = None,
) -> dict[str, Any]:
    """Audit rows, newest first; ``before`` (a row id) pages back."""
    rows = fleet.audit.list(
        limit=limit,
        before_id=before,
        subject=subject,
        subject_id=subject_id,
        actor=actor,
        action=action,
    )
    return {"audit": [{**row.to_json(), "at": iso(row.at_us, host)} for row in rows]}
