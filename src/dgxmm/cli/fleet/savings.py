"""``dgxmm savings``: what sleeping freed and what it cost, per deployment and local day.

It asks the server's ``GET /api/savings`` (``--json`` prints its answer whole).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from dgxmm.cli.common import Answer, PriceOption, Target, command, table

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add ``dgxmm savings`` to the command line."""
    command(app, "savings", offline=False)(savings)


def savings(
    where: Target,
    since: Annotated[
        str | None,
        typer.Option("--from", help="First local day, YYYY-MM-DD (default: a week ago)."),
    ] = None,
    to: Annotated[
        str | None, typer.Option("--to", help="Last local day, YYYY-MM-DD (default: today).")
    ] = None,
    deployment: Annotated[
        str | None, typer.Option("--deployment", help="Only this deployment (name or id).")
    ] = None,
    price: PriceOption = None,
) -> Answer:
    """Show GiB-hours held and freed, cold requests and their waits, per deployment and day.

    With each day's wait-seconds, mean and p99 added wait over every request, cost at
    ``--price``, and who put the deployment down (sleeps, stops, GiB-hours freed by each).
    """
    with where.client() as api:
        report = api.get(
            "/api/savings", **{"from": since, "to": to, "deployment": deployment, "price": price}
        )
    lines = [
        (
            d["name"], day["day"], _gib(day["freed_gib_h"]), _gib(day["held_awake_gib_h"]),
            _gib(day["held_asleep_gib_h"]), day["requests"], day["cold"], _waits(day),
            f"{day['wait_total_s']:.1f}", f"{day['wait_mean_s']:.3f}",
            f"{day['wait_p99_all_s']:.2f}", _gib(day["cost"]), _counts(day["refused"]),
            _counts(day["wakes"]), _counts(day["starts"]), _counts(day["sleeps"]),
            _counts(day["stops"]), _freed_by(day["freed_by"]),
        )
        for d in report["deployments"]
        for day in d["days"]
    ]  # fmt: skip
    headers = ("DEPLOYMENT", "DAY", "FREED GIB-H", "AWAKE", "ASLEEP", "REQUESTS", "COLD",
               "WAIT P50/P99", "WAIT S", "MEAN S", "P99 ALL S", "COST", "REFUSED", "WAKES",
               "STARTS", "SLEEPS", "STOPS", "FREED BY")  # fmt: skip
    totals = report["totals"]
    summary = (
        f"{report['from']} to {report['to']}: {_gib(totals['freed_gib_h'])} GiB-hours freed "
        f"({_freed_by(totals['freed_by'])}), {totals['cold']} of {totals['requests']} requests "
        f"met a deployment not awake and waited {totals['wait_total_s']:.1f} request-s "
        f"(mean {totals['wait_mean_s']:.3f} s, p99 of all {totals['wait_p99_all_s']:.2f} s); "
        f"cost {_gib(totals['cost'])} GiB-h at {report['price']:g} GiB-h per request-s"
    )
    return Answer(value=report, text=table(headers, lines, "no deployment") + "\n" + summary)


def _gib(value: float) -> str:
    return f"{value:.1f}"


def _waits(day: dict[str, Any]) -> str:
    if day["wait_p50_s"] is None:
        return "-"
    return f"{day['wait_p50_s']:.2f}/{day['wait_p99_s']:.2f} s"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{count} {name}" for name, count in counts.items()) or "-"


def _freed_by(freed: dict[str, float]) -> str:
    return ", ".join(f"{_gib(gib)} by {name}" for name, gib in freed.items()) or "-"
