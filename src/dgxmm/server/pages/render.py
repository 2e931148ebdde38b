"""Rendering a page: the templates, their filters, and the redirect to the login page."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import Request
from fastapi.responses import RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from dgxmm.server.deps import identify, services_of

__all__ = ["render_page", "templates"]

templates = Jinja2Templates(directory=Path(__file__).parent.parent / "templates")


def _when(value: str | None) -> str:
    """Show an ISO time as 'YYYY-MM-DD HH:MM:SS' (its offset on hover in the template)."""
    if not value:
        return "—"
    return value[:19].replace("T", " ")


templates.env.filters["when"] = _when


def render_page(request: Request, template: str, **context: Any) -> Response:
    """Render a page for a logged-in person, or send them to the login page."""
    who = identify(request)
    if who is None:
        return RedirectResponse(f"/login?next={quote(request.url.path)}", status_code=303)
    host = services_of(request).host
    context.update(who=who, time_zone=host.time_zone.key, page=template.removesuffix(".html"))
    return templates.TemplateResponse(request, template, context)
