"""The Audit page: who did what, newest first (admins only, like ``GET /api/audit``).

It pages as the API does, by ``GET /api/audit``'s cursor, 100 rows a page, and filters by
subject, actor and time; a wall time in the form is read in the zone the page shows times in.
The newest page follows new rows live; an older page stays as it was read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.errors import InvalidInput
from dgxmm.fleet import AuditEntry, AuditSubject
from dgxmm.server.edge.deps import FleetDep, HostDep, identify
from dgxmm.server.edge.paging import CursorQuery, make_cursor, read_id_cursor, read_span
from dgxmm.server.lists.jobs import iso
from dgxmm.server.pages.render import display_zone, render_page

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

PAGE_ROWS = 100


_TEXT = Annotated[str | None, Query(max_length=200)]


@router.get("/audit", response_class=HTMLResponse)
def audit_page(
    request: Request,
    *,
    fleet: FleetDep,
    host: HostDep,
    cursor: CursorQuery = None,
    subject: Annotated[str | None, Query(max_length=50)] = None,
    actor: _TEXT = None,
    since: _TEXT = None,
    until: _TEXT = None,
) -> Response:
    """Who did what, newest first (admins only, like ``GET /api/audit``)."""
    who = identify(request)
    if who is not None and not who.is_admin:
        return render_page(
            request, "audit.html", rows=[], forbidden=True, filters={}, subjects=[], wrong={}
        )
    filters = {
        "subject": subject or "",
        "actor": actor or "",
        "since": since or "",
        "until": until or "",
    }
    rows: list[AuditEntry] = []
    wrong: dict[str, str] = {}
    try:
        chosen = _filter(request, subject=subject, since=since, until=until)
        rows = fleet.audit.list(
            limit=PAGE_ROWS,
            before_id=read_id_cursor(cursor, "audit"),
            subject=chosen.subject,
            actor=actor or None,
            since_us=chosen.since_us,
            until_us=chosen.until_us,
        )
    except InvalidInput as refused:
        # Shown beside its field in the form, every wrong one, as the Runs page does.
        wrong = dict(refused.errors or ((refused.field, refused.message),))
    names = {str(id_): name for id_, name in fleet.deployments.names().items()} if rows else {}
    kept = {key: value for key, value in filters.items() if value}
    older = None
    if len(rows) == PAGE_ROWS:
        older = "/audit?" + urlencode({**kept, "cursor": make_cursor("audit", rows[-1].id)})
    page = render_page(
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
        filters=filters,
        subjects=[s.value for s in AuditSubject],
        older_href=older,
        newest_href=("/audit?" + urlencode(kept)) if cursor is not None else None,
        first_page=cursor is None,
        wrong=wrong,
    )
    if wrong and page.status_code == 200:
        page.status_code = 400  # a refused filter, named beside its field
    return page


@dataclass(frozen=True)
class _Filter:
    subject: AuditSubject | None
    since_us: int | None
    until_us: int | None


def _filter(
    request: Request, *, subject: str | None, since: str | None, until: str | None
) -> _Filter:
    """Read the form's filters, every wrong one named in one refusal."""
    _, zone = display_zone(request)
    wrong: list[tuple[str, str]] = []
    chosen = None
    try:
        chosen = _subject(subject)
    except InvalidInput as error:
        wrong.append((error.field, error.message))
    since_us, until_us = read_span(zone, since, until, wrong)
    if wrong:
        raise InvalidInput.every(wrong)
    return _Filter(subject=chosen, since_us=since_us, until_us=until_us)


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
