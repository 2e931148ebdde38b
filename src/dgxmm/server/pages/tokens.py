"""The API tokens page (admins): make a token of a role and an expiry, list them, revoke one.

A new token is shown once, by the script, from the answer that made it (``static/tokens.js``);
the page itself never holds a token: the database keeps only its hash.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.server.access.tokens import Role
from dgxmm.server.api.tokens import MAX_EXPIRY_DAYS
from dgxmm.server.edge.deps import HostDep, TokensDep, identify
from dgxmm.server.lists.jobs import iso
from dgxmm.server.pages.render import render_page

__all__ = ["router"]

router = APIRouter(include_in_schema=False)

# The form's choices of expiry, in days (None: never); the API takes any whole number.
EXPIRY_CHOICES = ((30, "in 30 days"), (7, "in 7 days"), (90, "in 90 days"), (365, "in a year"))


@router.get("/tokens", response_class=HTMLResponse)
def tokens_page(request: Request, tokens: TokensDep, host: HostDep) -> Response:
    """Every token, newest first, and the form that makes one (admins only)."""
    who = identify(request)
    if who is not None and not who.is_admin:
        return render_page(request, "tokens.html", forbidden=True)
    now = host.clock.now_us()
    return render_page(
        request,
        "tokens.html",
        forbidden=False,
        roles=[r.value for r in Role],
        expiries=EXPIRY_CHOICES,
        max_days=MAX_EXPIRY_DAYS,
        rows=[
            {
                "t": record,
                "state": record.state(now).value,
                "created": iso(record.created_at, host),
                "expires": iso(record.expires_at, host),
                "revoked": iso(record.revoked_at, host),
            }
            for record in tokens.list()
        ],
    )
