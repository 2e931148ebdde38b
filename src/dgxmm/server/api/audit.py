"""The audit API: who did what to which thing, newest first (admin only)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from dgxmm.fleet import AuditAction, AuditSubject
from dgxmm.server.edge.deps import Admin, FleetDep, HostDep, QueryId
from dgxmm.server.edge.openapi import answers
from dgxmm.server.edge.paging import (
    CursorQuery,
    LimitQuery,
    make_cursor,
    read_id_cursor,
    read_instant,
    read_limit,
)
from dgxmm.server.lists.jobs import iso

__all__ = ["router"]

router = APIRouter(prefix="/api/audit", tags=["audit"])


@router.get("", responses=answers(400))
def list_audit(
    fleet: FleetDep,
    host: HostDep,
    _: Admin,
    *,
    limit: LimitQuery = None,
    cursor: CursorQuery = None,
    before: QueryId = None,
    subject: AuditSubject | None = None,
    subject_id: Annotated[str | None, Query(max_length=100)] = None,
    actor: Annotated[str | None, Query(max_length=200)] = None,
    action: AuditAction | None = None,
    since: Annotated[str | None, Query(max_length=40, description="ISO 8601, inclusive")] = None,
    until: Annotated[str | None, Query(max_length=40, description="ISO 8601, exclusive")] = None,
) -> dict[str, Any]:
    """Audit rows, newest first, ``limit`` at a time (100); ``next_cursor`` pages back.

    ``before`` (a row id) pages back too, as it did. A time without an offset is read in the
    server's zone.
    """
    size = read_limit(limit)
    assert size is not None
    after = read_id_cursor(cursor, "audit")
    rows = fleet.audit.list(
        limit=size,
        before_id=after if before is None else before,
        subject=subject,
        subject_id=subject_id,
        actor=actor,
        action=action,
        since_us=None if since is None else read_instant(since, "since", host.time_zone),
        until_us=None if until is None else read_instant(until, "until", host.time_zone),
    )
    last = rows[-1].id if len(rows) == size else None
    return {
        "audit": [{**row.to_json(), "at": iso(row.at_us, host)} for row in rows],
        "next_cursor": None if last is None else make_cursor("audit", last),
    }
