"""The Savings page (``/savings``): what sleeping freed and what it cost, day by day.

The API's report (``api/savings.py``) drawn as tables: per deployment its totals, then its
local days; above them, the fleet's freed GiB-hours per day by who put the memory down
(``svg/freed_days.py``). A wrong ``from``, ``to``, ``deployment`` or ``price`` shows the
refusal above the form.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from dgxmm.errors import InvalidInput
from dgxmm.fleet import Fleet
from dgxmm.lab.ledger import DEFAULT_PRICE, read_price
from dgxmm.lab.trade import MAX_REQUESTS, TradePicture
from dgxmm.server.api.savings import savings_json
from dgxmm.server.edge.deps import FleetDep, HostDep, ServicesDep
from dgxmm.server.host import Host
from dgxmm.server.lists.jobs import iso
from dgxmm.server.pages.render import render_page
from dgxmm.server.services import Services
from dgxmm.server.svg.freed_days import freed_days_chart
from dgxmm.server.svg.trade import trade_chart

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/savings", response_class=HTMLResponse)
def savings_page(
    request: Request,
    fleet: FleetDep,
    host: HostDep,
    services: ServicesDep,
    *,
    since: Annotated[str | None, Query(alias="from")] = None,
    to: str | None = None,
    deployment: str | None = None,
    price: str | None = None,
) -> Response:
    """GiB-hours held and freed, cold requests and their waits, per deployment and day."""
    refused: InvalidInput | None = None
    report: dict[str, Any] | None = None
    wait_price = DEFAULT_PRICE
    try:
        wait_price = DEFAULT_PRICE if not price else read_price(price)
        report = savings_json(
            fleet,
            host,
            since=since or None,
            to=to or None,
            deployment=deployment or None,
            price=wait_price,
        )
    except InvalidInput as error:
        refused = error
        report = savings_json(fleet, host, since=None, to=None, deployment=None)
        wait_price = report["price"]
    return render_page(
        request,
        "savings.html",
        report=report,
        refused=refused,
        chosen={
            "from": since or report["from"],
            "to": to or report["to"],
            "deployment": deployment or "",
            "price": price or report["price"],
        },
        names=[d.name for d in fleet.deployments.list()],
        freed_days=freed_days_chart(_fleet_days(report)),
        trades=_trades(services, fleet, host, report, wait_price),
        max_requests=f"{MAX_REQUESTS:,}",
    )


# At most this many trade pictures are replayed for one page view; the rest of the fleet's
# are drawn once kept (a deployment's own page, ``?deployment=``, replays its own).
TRADES_REPLAYED = 2


def _trades(
    services: Services, fleet: Fleet, host: Host, report: dict[str, Any], price: float
) -> dict[int, dict[str, Any]]:
    """Return each deployment's trade picture (drawn, or None: not replayed for this view)."""
    if services.schedules is None:
        return {}
    now = host.clock.now_us()
    replayed = 0
    found: dict[int, dict[str, Any]] = {}
    for shown in report["deployments"]:
        deployment = fleet.deployments.get(shown["id"])
        # The wait budget's point: the price its daily job found, when it found one.
        budget = None if services.budgets is None else services.budgets.price_of(deployment)
        picture: TradePicture | None = services.trades.cached(
            services.schedules, deployment, now_us=now, price=price, budget_price=budget
        )
        if picture is None and replayed < TRADES_REPLAYED:
            picture = services.trades.picture(
                fleet, services.schedules, deployment, now_us=now, price=price,
                budget_price=budget,
            )  # fmt: skip
            replayed += 1
        found[deployment.id] = {
            "picture": picture,
            "from": None if picture is None else iso(picture.start_us, host),
            "to": None if picture is None else iso(picture.end_us, host),
            "svg": None
            if picture is None or not picture.points
            else trade_chart(picture.points, name=deployment.name),
        }
    return found


def _fleet_days(report: dict[str, Any]) -> list[tuple[date, dict[str, float]]]:
    """Return the fleet's freed GiB-hours per local date, by actor (zones summed by date)."""
    by_day: dict[str, dict[str, float]] = {}
    for shown in report["deployments"]:
        for day in shown["days"]:
            summed = by_day.setdefault(day["day"], {})
            for actor, gib_h in day["freed_by"].items():
                summed[actor] = summed.get(actor, 0.0) + gib_h
    return [(date.fromisoformat(day), by) for day, by in sorted(by_day.items())]
