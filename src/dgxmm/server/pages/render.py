"""Rendering a page: the templates, their filters, the display zone, the login redirect.

Every time on a page is shown in one display zone, which the person picks in the footer
(``static/dgxmm.js`` keeps the choice in the ``dgxmm_zone`` cookie): the server's zone (the
default), their browser's, or UTC. The tables' ``when`` filter, the charts' axes and the
week grid all take it from here, so a page never mixes two zones.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo

from fastapi import Request
from fastapi.responses import RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from jinja2 import pass_context
from jinja2.runtime import Context
from markupsafe import Markup

from dgxmm.decider.schedules.service import FORECAST_ONLY
from dgxmm.errors import ZoneError
from dgxmm.jobs import resolve_zone
from dgxmm.server.edge.deps import identify, services_of
from dgxmm.server.pages.glossary import GLOSSARY, glossed
from dgxmm.words import counted

__all__ = ["ZONE_COOKIE", "display_zone", "error_page", "render_page", "templates"]

templates = Jinja2Templates(directory=Path(__file__).parent.parent / "templates")

ZONE_COOKIE = "dgxmm_zone"  # "server", "UTC" or "browser:<IANA name>"
_UTC = ZoneInfo("UTC")


@pass_context
def _when(context: Context, value: str | None) -> str | Markup:
    """Show an ISO time as 'YYYY-MM-DD HH:MM:SS' in the display zone, in a ``<time>`` whose
    ``datetime`` the page reads to say how long ago or ahead it is (``static/times.js``)."""
    if not value:
        return "—"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value[:19].replace("T", " ")
    zone = context.get("display_zone")
    if moment.tzinfo is not None and isinstance(zone, ZoneInfo):
        moment = moment.astimezone(zone)
    shown = moment.strftime("%Y-%m-%d %H:%M:%S")
    if moment.tzinfo is None:  # no instant to count from
        return shown
    return Markup('<time datetime="{}">{}</time>').format(moment.isoformat(), shown)


templates.env.filters["when"] = _when
templates.env.filters["counted"] = counted
templates.env.filters["glossed"] = glossed
templates.env.globals["glossary"] = GLOSSARY


def display_zone(request: Request) -> tuple[str, ZoneInfo]:
    """Return the person's choice of display zone and the zone: server, browser or UTC."""
    server = services_of(request).host.time_zone
    choice = request.cookies.get(ZONE_COOKIE, "server")
    if choice == "UTC":
        return "UTC", _UTC
    if choice.startswith("browser:"):
        try:
            return "browser", resolve_zone(choice.removeprefix("browser:"), field="zone")
        except ZoneError:
            pass  # a browser that names a zone this machine lacks: the server's
    return "server", server


def render_page(request: Request, template: str, **context: Any) -> Response:
    """Render a page for a logged-in person, or send them to the login page."""
    return _render(request, template, context)


def error_page(
    request: Request, status: int, message: str, headers: Mapping[str, str] | None = None
) -> Response:
    """Render the error page a browser gets for an unknown page or id (JSON stays the API's)."""
    return _render(request, "error.html", {"status": status, "message": message}, status, headers)


def _render(
    request: Request,
    template: str,
    context: dict[str, Any],
    status: int = 200,
    headers: Mapping[str, str] | None = None,
) -> Response:
    who = identify(request)
    if who is None:
        return RedirectResponse(f"/login?next={quote(request.url.path)}", status_code=303)
    services = services_of(request)
    host = services.host
    choice, zone = display_zone(request)
    context.update(
        who=who,
        time_zone=zone.key,
        display_zone=zone,
        zone_choice=choice,
        server_zone=host.time_zone.key,
        page=template.removesuffix(".html"),
        has_alerts=services.alerts is not None,
        has_fleet=services.fleet is not None,  # the fleet's pages in the nav
        # The proxy's OpenAI-compatible address (templates/proxy_address.html); None: no proxy.
        proxy_base=None if services.proxy_url is None else f"{services.proxy_url}/v1",
        # Said on every page while on: the decider records what it would do, and does none.
        forecast_only=host.store.get_setting(FORECAST_ONLY, False) is True,
    )
    return templates.TemplateResponse(
        request, template, context, status_code=status, headers=headers
    )
