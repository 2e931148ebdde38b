"""The Audit page: who did what, newest first (admins only, like ``GET /api/audit``)."""

from __future__ import annotations

import json
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.errors import InvalidInput
from dgxmm.fleet import AuditEntry, AuditSubject
from dgxmm.server.deps import FleetDep, HostDep, QueryId, identify
from dgxmm.server.job_list import iso
from dgxmm.server.pages.render import render_page

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

PAGE_ROWS = 100


@router.get("/audit", response_class=HTMLResponse)
def audit_page(
    request: Request,
    *,
    fleet: FleetDep,
    host: HostDep,
    before: QueryId = None,
    subject: Annotated[str | None, Query(max_length=50)] = None,
    actor: Annotated[str | None, Query(max_length=200)] = None,
) -> Response:
    """Who did what, newest first (admins only, like ``GET /api/audit``)."""
    who = identify(request)
    if who is not None and not who.is_admin:
        return render_page(request, "audit.html", rows=[], forbidden=True, filters={}, subjects=[])
    chosen = _subject(subject)
    rows = fleet.audit.list(limit=PAGE_ROWS, before_id=before, subject=chosen, actor=actor or None)
    names = {str(d.id): d.name for d in fleet.deployments.list()}
    return render_page(
        request,
        "audit.html",
        rows=[
            {
                "a": row,
                "link": _link(row, names),
                "at": iso(row.at_us, host),
                "detail": json.dumps(row.detail, indent=1) if row.detail is not None else "",
            }
            for row in rows
        ],
        forbidden=False,
        filters={"subject": chosen.value if chosen else "", "actor": actor or ""},
        subjects=[s.value for s in AuditSubject],
        older=rows[-1].id if len(rows) == PAGE_ROWS else None,
    )


def _link(row: AuditEntry, names: dict[str, str]) -> dict[str, str] | None:
    """Name a row's deployment and link its page; one removed since keeps the name it had."""
    if row.subject is not AuditSubject.DEPLOYMENT or row.subject_id is None:
        return None
    name = names.get(row.subject_id)
    if name is not None:
        return {"name": name, "href": f"/deployments/{row.subject_id}"}
    detail = row.detail if isinstance(row.detail, dict) else {}
    before = detail.get("before")
    was = before.get("name") if isinstance(before, dict) else detail.get("name")
    shown = f"{was} (removed)" if isinstance(was, str) else f"#{row.subject_id}"
    return {"name": shown, "href": ""}


def _subject(text: str | None) -> AuditSubject | None:
    """The form's subject: empty is any; the filter's menu offers only known ones."""
    if not text:
        return None
    try:
        return AuditSubject(text)
    except ValueError:
        known = ", ".join(s.value for s in AuditSubject)
        raise InvalidInput("subject", f"{text!r} is not one of {known}") from None
