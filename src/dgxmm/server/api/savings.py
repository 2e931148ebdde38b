"""What was saved, as it happened: ``GET /api/savings?from=&to=&deployment=&price=`` (issue 26).

Per deployment and local day in its zone (``decider/savings.py``): GiB-hours held awake,
held asleep and freed; requests through the proxy, those held while it woke with their added
wait p50 and p99, those refused by reason; the wait-seconds, the mean and p99 added wait over
every request, and the cost at ``price`` (issue 42); wakes and starts by actor, and sleeps,
stops and the GiB-hours freed by who put it down (issue 45). ``from`` and ``to`` are
local dates, both included (by default the last 7 days up to today in the server's zone);
``deployment`` an id or a name (by default every deployment). A wrong one answers 400
naming it. Any token reads it.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from dgxmm.decider.savings import SavingsReport, local_span, parse_day, totals_json
from dgxmm.errors import InvalidInput, NotFound
from dgxmm.fleet import Deployment, Fleet
from dgxmm.lab.ledger import DEFAULT_PRICE
from dgxmm.server.edge.deps import FleetDep, HostDep, PriceDep, Viewer
from dgxmm.server.edge.openapi import answers
from dgxmm.server.host import Host

__all__ = ["router", "savings_json"]

router = APIRouter(prefix="/api/savings", tags=["savings"])


@router.get("", responses=answers(400))
def get_savings(
    fleet: FleetDep,
    host: HostDep,
    _: Viewer,
    *,
    since: Annotated[
        str | None, Query(alias="from", description="first local day, YYYY-MM-DD")
    ] = None,
    to: Annotated[str | None, Query(description="last local day, YYYY-MM-DD")] = None,
    deployment: Annotated[
        str | None, Query(description="a deployment's id or name (default: all)")
    ] = None,
    price: PriceDep,
) -> dict[str, Any]:
    """Held, freed and cold per deployment and local day; totals per deployment and in all."""
    return savings_json(fleet, host, since=since, to=to, deployment=deployment, price=price)


def savings_json(
    fleet: Fleet,
    host: Host,
    *,
    since: str | None,
    to: str | None,
    deployment: str | None,
    price: float = DEFAULT_PRICE,
) -> dict[str, Any]:
    """Return the report as the API gives it (``InvalidInput`` naming a wrong parameter)."""
    now = host.clock.now_us()
    first, last = local_span(now, host.time_zone)
    if since is not None:
        first = parse_day(since, "from")
    if to is not None:
        last = parse_day(to, "to")
    if since is not None and to is None and first > last:
        last = first  # from a day after today's: that day alone
    chosen = None if deployment is None else _deployment(fleet, deployment).id
    report = SavingsReport(fleet).days(since=first, until=last, now_us=now, deployment_id=chosen)
    shown = [
        {
            "id": found.id,
            "name": found.name,
            "time_zone": found.time_zone,
            "days": [day.to_json(price) for day in days],
            "totals": totals_json(days, price),
        }
        for found, days in report
    ]
    return {
        "from": first.isoformat(),
        "to": last.isoformat(),
        "price": price,
        "deployments": shown,
        "totals": totals_json([day for _, days in report for day in days], price),
    }


def _deployment(fleet: Fleet, given: str) -> Deployment:
    try:
        if given.isdigit():
            return fleet.deployments.get(int(given))
        return fleet.deployments.by_name(given)
    except (NotFound, ValueError, OverflowError):
        raise InvalidInput("deployment", f"{given!r} is no deployment's id or name") from None
