"""Request dependencies: the app's services, and who is asking (bearer token or login cookie).

Every dependency alias of the API and the pages is here: ``ServicesDep``, ``HostDep``,
``TokensDep``, ``FleetDep``, ``AlertsDep``, ``SchedulesDep``, ``ProposalsDep``, ``SectionsDep`` (the
sections of a deployment's page); ``Viewer`` and ``Admin``; the checked path and query ids.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Path, Query, Request
from starlette.concurrency import run_in_threadpool

from dgxmm.alerts import Alerts
from dgxmm.clock import EARLIEST_US, LATEST_US
from dgxmm.decider import ProposalService, ScheduleService
from dgxmm.fleet import Fleet
from dgxmm.lab.ledger import DEFAULT_PRICE, read_price
from dgxmm.server.access.tokens import Identity, Tokens
from dgxmm.server.host import Host
from dgxmm.server.routes import DeploymentSection
from dgxmm.server.services import Services

__all__ = [
    "COOKIE",
    "MAX_ID",
    "Admin",
    "AlertsDep",
    "FleetDep",
    "HostDep",
    "PathId",
    "ProposalsDep",
    "QueryId",
    "QueryInstant",
    "SchedulesDep",
    "SectionsDep",
    "ServicesDep",
    "TokensDep",
    "Viewer",
    "identify",
    "is_same_origin",
    "require_admin",
    "require_viewer",
    "services_of",
]

COOKIE = "dgxmm_token"
# Row ids are 64-bit: a larger number can name nothing, and the databases refuse it loudly.
MAX_ID = 2**63 - 1
PathId = Annotated[int, Path(ge=1, le=MAX_ID)]
QueryId = Annotated[int | None, Query(ge=1, le=MAX_ID)]
# Instants (microseconds since the epoch) that dates can show, in any zone (clock.py).
QueryInstant = Annotated[int | None, Query(ge=EARLIEST_US, le=LATEST_US)]


def services_of(request: Request) -> Services:
    """Return the services of the app serving the request."""
    services: Services = request.app.state.services
    return services


async def _host(request: Request) -> Host:
    return services_of(request).host


async def _tokens(request: Request) -> Tokens:
    return services_of(request).tokens


async def _fleet(request: Request) -> Fleet:
    fleet = services_of(request).fleet
    if fleet is None:  # create_app refuses routes that need a missing service
        raise RuntimeError("this app has no fleet")
    return fleet


async def _schedules(request: Request) -> ScheduleService:
    schedules = services_of(request).schedules
    if schedules is None:
        raise RuntimeError("this app has no schedule service")
    return schedules


async def _proposals(request: Request) -> ProposalService:
    proposals = services_of(request).proposals
    if proposals is None:
        raise RuntimeError("this app has no proposal service")
    return proposals


async def _alerts(request: Request) -> Alerts:
    alerts = services_of(request).alerts
    if alerts is None:
        raise RuntimeError("this app has no alerts service")
    return alerts


async def _sections(request: Request) -> tuple[DeploymentSection, ...]:
    sections: tuple[DeploymentSection, ...] = request.app.state.deployment_sections
    return sections


def identify(request: Request) -> Identity | None:
    """Return who sent the request, or None without a valid token."""
    credential = _credential(request)
    return None if credential is None else services_of(request).tokens.identify(credential)


def _credential(request: Request) -> str | None:
    """Return the token the request offers (bearer header, or the login cookie)."""
    header = request.headers.get("authorization", "")
    scheme, _, credential = header.partition(" ")
    if scheme.lower() == "bearer" and credential:
        return credential.strip()
    cookie = request.cookies.get(COOKIE)
    if cookie:
        if request.method not in ("GET", "HEAD") and not is_same_origin(request):
            return None  # a cookie only counts for writes that come from our own pages
        return cookie
    return None


def is_same_origin(request: Request) -> bool:
    """Tell whether a request comes from our own pages, or from no browser page at all.

    A browser names the page's origin on every POST (``Origin``), or at least whether it is
    another site's (``Sec-Fetch-Site``); a request with neither is a program (curl, the CLI).
    An origin is scheme, host and port (RFC 6454): an ``https://`` page is another origin
    than an ``http://`` server on the same host and port, so the scheme is compared too.
    """
    origin = request.headers.get("origin")
    if origin is None:
        return request.headers.get("sec-fetch-site") in (None, "same-origin")
    return origin == f"{request.url.scheme}://{request.headers.get('host')}"


async def require_viewer(request: Request) -> Identity:
    """Any valid token: reads.

    On the event loop: a token found live within ``auth.RECHECK_S`` is not asked again, so a
    request that needs nothing else of the database takes no hop to a worker thread.
    """
    credential = _credential(request)
    identity = None
    if credential is not None:
        tokens = services_of(request).tokens
        identity = tokens.known(credential) or await run_in_threadpool(tokens.identify, credential)
    if identity is None:
        raise HTTPException(
            401,
            "a valid token is required (Authorization: Bearer <token>)",
            {"WWW-Authenticate": "Bearer"},
        )
    return identity


async def require_admin(identity: Annotated[Identity, Depends(require_viewer)]) -> Identity:
    """An admin token: writes."""
    if not identity.is_admin:
        raise HTTPException(403, "this needs an admin token; yours is a viewer's (reads only)")
    return identity


async def _services(request: Request) -> Services:
    return services_of(request)


def _price(
    price: Annotated[
        str | None,
        Query(
            description="GiB-hours one request-second of waiting is worth, a number >= 0 "
            f"(default {DEFAULT_PRICE})",
            max_length=40,
        ),
    ] = None,
) -> float:
    return DEFAULT_PRICE if price is None else read_price(price)


ServicesDep = Annotated[Services, Depends(_services)]
HostDep = Annotated[Host, Depends(_host)]
TokensDep = Annotated[Tokens, Depends(_tokens)]
FleetDep = Annotated[Fleet, Depends(_fleet)]
SchedulesDep = Annotated[ScheduleService, Depends(_schedules)]
ProposalsDep = Annotated[ProposalService, Depends(_proposals)]
# The price of waiting a figure's cost is given at: ``?price=W``, checked (400 naming it).
PriceDep = Annotated[float, Depends(_price)]
AlertsDep = Annotated[Alerts, Depends(_alerts)]
SectionsDep = Annotated[tuple[DeploymentSection, ...], Depends(_sections)]
Viewer = Annotated[Identity, Depends(require_viewer)]
Admin = Annotated[Identity, Depends(require_admin)]
