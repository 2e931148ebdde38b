"""``dgxmm savings``: what sleeping freed and what it cost, per deployment and local day.

It asks the server's ``GET /api/savings`` (``--json`` prints its answer whole).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from dgxmm.cli.common import Answer, Target, command, table

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
) -> Answer:
    """Show GiB-hours held and freed, cold requests and their waits, per deployment and day."""
    with where.client() as api:
        report = api.get("/api/savings", **{"from": since, "to": to, "deployment": deployment})
    lines = [
        (
            d["name"], day["day"], _gib(day["freed_gib_h"]), _gib(day["held_awake_gib_h"]),
            _gib(day["held_asleep_gib_h"]), day["requests"], day["cold"], _waits(day),
            _counts(day["refused"]), _counts(day["wakes"]), _counts(day["starts"]),
        )
        for d in report["deployments"]
        for day in d["days"]
    ]  # fmt: skip
    headers = ("DEPLOYMENT", "DAY", "FREED GIB-H", "AWAKE", "ASLEEP", "REQUESTS", "COLD",
               "WAIT P50/P99", "REFUSED", "WAKES", "STARTS")  # fmt: skip
    totals = report["totals"]
    summary = (
        f"{report['from']} to {report['to']}: {_gib(totals['freed_gib_h'])} GiB-hours freed, "
        f"{totals['cold']} of {totals['requests']} requests met a deployment not awake"
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
