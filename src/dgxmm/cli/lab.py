"""``dgxmm lab``: replay a request trace on a fleet under every policy, beside the oracle.

``dgxmm lab replay --fleet fleet.json --trace requests.csv`` reads the fleet file
(docs/savings.md) and a trace (a CSV of ``timestamp,model[,input_tokens,output_tokens]``, or
the Azure LLM trace format with ``--azure MODEL``), replays it under each policy and prints
one line per policy: GiB-hours freed against always-on, the share of the oracle's, and the
requests that met a cold model. It asks no server and writes nothing.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from dgxmm.cli.common import JsonOption, handles_errors, table
from dgxmm.clock import to_us
from dgxmm.errors import InvalidInput
from dgxmm.time_units import DAY_US

__all__ = ["app"]

app = typer.Typer(help="The savings lab: replays of request traces.", no_args_is_help=True)


@app.command("replay")
@handles_errors
def replay(
    fleet: Annotated[Path, typer.Option("--fleet", help="The fleet file (JSON).")],
    trace: Annotated[Path, typer.Option("--trace", help="The requests (CSV).")],
    azure: Annotated[
        str | None,
        typer.Option("--azure", help="Read --trace as the Azure LLM trace, for this model."),
    ] = None,
    start: Annotated[
        str | None,
        typer.Option(
            "--from", help="ISO 8601 with an offset (default: the trace's first UTC day)."
        ),
    ] = None,
    end: Annotated[
        str | None,
        typer.Option("--to", help="ISO 8601 with an offset (default: after its last day)."),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Draws of the servers' durations.")] = 1,
    as_json: JsonOption = False,
) -> None:
    """Replay a trace on a fleet under every policy; print what each frees and costs."""
    # Here, not above: `dgxmm --help` should not load numpy and the lab.
    from dgxmm.lab import read_azure_trace, read_fleet, read_requests_csv
    from dgxmm.lab.compare import Policy, compare

    lab_fleet = read_fleet(fleet)
    requests = read_azure_trace(trace, azure) if azure else read_requests_csv(trace)
    if not len(requests):
        raise InvalidInput("trace", f"{trace} holds no request")
    first, last = requests.span_us
    start_us = _instant(start, "from") if start else first - first % DAY_US
    end_us = _instant(end, "to") if end else last - last % DAY_US + DAY_US
    if end_us <= start_us:
        raise InvalidInput("to", "must come after --from")
    found = compare(requests, lab_fleet, start_us=start_us, end_us=end_us, seed=seed)
    if as_json:
        typer.echo(json.dumps(found.to_json(), indent=2))
        return
    rows = []
    for policy in Policy:
        total = found.total(policy)
        rows.append(
            (
                policy.value,
                f"{total.freed_gib_h:.1f}",
                f"{found.share_of_oracle(policy):.1%}",
                total.cold,
                f"{total.cold_share:.2%}",
                f"{total.wait_s(0.5):.2f}",
                f"{total.wait_s(0.99):.2f}",
                total.wakes,
                total.starts,
            )
        )
    headers = ("POLICY", "FREED GIB-H", "OF ORACLE", "COLD", "COLD %", "P50 S", "P99 S",
               "WAKES", "STARTS")  # fmt: skip
    hours = (end_us - start_us) / 3_600_000_000
    typer.echo(
        f"{len(requests)} requests, {len(lab_fleet.deployments)} deployment(s), {hours:g} h; "
        "the oracle ignores schedules and the fit between deployments"
    )
    typer.echo(table(headers, rows, "no policy"))


def _instant(text: str, field: str) -> int:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as error:
        raise InvalidInput(field, f"{text!r} is not ISO 8601 ({error})") from None
    if moment.tzinfo is None:
        raise InvalidInput(field, f"{text!r} has no offset (add +00:00 or Z)")
    return to_us(moment.astimezone(UTC))
