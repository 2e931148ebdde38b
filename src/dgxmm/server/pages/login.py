"""Logging in and out: the token form, the HttpOnly cookie, and the start page.

Both cookie writes, login and logout, come only from our own pages (``is_same_origin``).
"""

from __future__ import annotations

from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from dgxmm.errors import Forbidden
from dgxmm.server.edge.deps import COOKIE, TokensDep, is_same_origin
from dgxmm.server.pages.render import templates

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/")
def home(request: Request) -> Response:
    """Start at the nav's first page: Deployments where a fleet is served, else the jobs."""
    services = request.app.state.services
    return RedirectResponse("/jobs" if services.fleet is None else "/deployments", status_code=303)


@router.get("/login")
def login_form(request: Request, next: str = "/", error: str | None = None) -> Response:
    """Ask for a token."""
    return templates.TemplateResponse(
        request, "login.html", {"next": _local(next), "error": error, "who": None, "page": "login"}
    )


@router.post("/login")
async def login(request: Request, tokens: TokensDep) -> Response:
    """Check a token and keep it in an HttpOnly cookie; only from our own login page.

    Login CSRF: another site's page could post its own token here and have our cookie set,
    so that the person then works (and defines jobs) as the attacker without noticing.
    """
    if not is_same_origin(request):
        raise Forbidden("login: a login from another site's page is refused (Origin)")
    form = parse_qs((await request.body()).decode(errors="replace"))
    token = (form.get("token") or [""])[0].strip()
    # Without a page asked for: where ``/`` leads (Deployments where a fleet is served).
    target = _local((form.get("next") or ["/"])[0])
    if tokens.identify(token) is None:
        return RedirectResponse(
            f"/login?next={quote(target)}&error=that+token+is+not+valid", status_code=303
        )
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
    return response


@router.post("/logout")
def logout(request: Request) -> Response:
    """Forget the login cookie; only from our own pages.

    Another site's page could otherwise log a person out (a nuisance, and a way to make them
    log in again on a page the attacker leads them to).
    """
    if not is_same_origin(request):
        raise Forbidden("logout: a logout from another site's page is refused (Origin)")
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


def _local(target: str) -> str:
    """Only follow redirects to our own pages."""
    return target if target.startswith("/") and not target.startswith("//") else "/"
