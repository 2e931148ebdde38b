"""``dgxmm lab``: replay a request trace on a fleet under every policy, beside the oracle.

``dgxmm lab replay --fleet fleet.json --trace requests.csv`` reads the fleet file
(docs/savings.md) and a trace (a CSV of ``timestamp,model[,input_tokens,output_tokens]``, or
the Azure LLM trace format with ``--azure MODEL``, MODEL one of the fleet's), replays it
under each policy and prints one line per policy: GiB-hours freed against always-on, the
share of the oracle's, the requests that met a cold model, the wait-seconds (total, mean and
p99 over every request), and the cost ``GiB-hours held + W x request-seconds waited`` at
``--price W`` (GiB-hours a request-second is worth; default 0.1, the middle of the standard
0.01, 0.1 and 1) against both oracles': the oracle, which wakes ahead, and the lazy oracle,
which wakes on arrival and picks its rests at that price. It asks no server and writes
nothing, unless ``--svg PATH`` asks for one day's picture (``lab/picture.py``):
``--deployment`` (default: the fleet's first) on ``--day`` (``YYYY-MM-DD`` in its zone;
default: the replay's first day).

A trace with requests for models no deployment serves is refused, naming each and its count:
replayed, they would reach no deployment, and an idle fleet would look thrifty.
``--ignore-unknown-models`` replays without them and says how many it left out.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dgxmm.cli.common import JsonOption, PriceOption, handles_errors, table
from dgxmm.cli.help_text import PlainCommand
from dgxmm.clock import to_us
from dgxmm.errors import InvalidInput
from dgxmm.time_units import DAY_US
from dgxmm.words import counted

if TYPE_CHECKING:
    from dgxmm.lab import LabFleet, Ledger, Trace

__all__ = ["app"]

app = typer.Typer(help="The savings lab: replays of request traces.", no_args_is_help=True)


@app.command("replay", cls=PlainCommand)
@handles_errors
def replay(
    fleet: Annotated[Path, typer.Option("--fleet", help="The fleet file (JSON).")],
    trace: Annotated[Path, typer.Option("--trace", help="The requests (CSV).")],
    azure: Annotated[
        str | None,
        typer.Option("--azure", help="Read --trace as the Azure LLM trace, for this fleet model."),
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
    workers: Annotated[
        int,
        typer.Option("--workers", min=1, max=64, help="Processes for dgxmm's policies."),
    ] = 1,
    price: PriceOption = None,
    as_json: JsonOption = False,
    svg: Annotated[
        Path | None,
        typer.Option("--svg", help="Write one day's picture here: each policy's phases."),
    ] = None,
    day: Annotated[
        str | None,
        typer.Option("--day", help="The picture's day, YYYY-MM-DD (default: the first)."),
    ] = None,
    deployment: Annotated[
        str | None,
        typer.Option("--deployment", help="The picture's deployment (default: the first)."),
    ] = None,
    ignore_unknown: Annotated[
        bool,
        typer.Option(
            "--ignore-unknown-models",
            help="Replay without the requests for models no deployment serves, saying how "
            "many (without it such a trace is refused).",
        ),
    ] = False,
) -> None:
    """Replay a trace on a fleet under every policy; print what each frees and costs."""
    # Here, not above: `dgxmm --help` should not load numpy and the lab.
    from dgxmm.lab import read_azure_trace, read_fleet, read_requests_csv
    from dgxmm.lab.compare import Policy, compare
    from dgxmm.lab.ledger import DEFAULT_PRICE

    wait_price = DEFAULT_PRICE if price is None else _price(price)
    lab_fleet = read_fleet(fleet)
    requests = read_azure_trace(trace, azure) if azure else read_requests_csv(trace)
    if not len(requests):
        raise InvalidInput("trace", f"{trace} holds no request")
    requests, left_out = _served(requests, lab_fleet, trace, ignore_unknown=ignore_unknown)
    first, last = requests.span_us
    start_us = _instant(start, "from") if start else first - first % DAY_US
    end_us = _instant(end, "to") if end else last - last % DAY_US + DAY_US
    if end_us <= start_us:
        raise InvalidInput("to", "must come after --from")
    if svg is None and (day or deployment):
        raise InvalidInput("svg", "--day and --deployment choose a picture: give --svg PATH")
    drawn = _drawn(lab_fleet, deployment, day, start_us, end_us) if svg else None
    found = compare(
        requests, lab_fleet, start_us=start_us, end_us=end_us, seed=seed, workers=workers,
        price=wait_price,
    )  # fmt: skip
    if svg and drawn:
        from dgxmm.lab.picture import day_picture

        name, picture_day, zone = drawn
        svg.write_text(day_picture(found, name, picture_day, zone=zone), encoding="utf-8")
    if as_json:
        if left_out:  # stdout stays one JSON document
            typer.echo(f"{counted(sum(left_out.values()), 'request')} left out, for models "
                       f"the fleet lacks: {_each(left_out)}", err=True)  # fmt: skip
        typer.echo(json.dumps(found.to_json(), indent=2))
        return
    hours = (end_us - start_us) / 3_600_000_000
    left = ""
    if left_out:
        left = f" ({sum(left_out.values())} left out, for models the fleet lacks: "
        left += f"{_each(left_out)})"
    typer.echo(
        f"{counted(len(requests), 'request')}{left}, "
        f"{counted(len(lab_fleet.deployments), 'deployment')}, {hours:g} h; "
        "the oracles ignore schedules and the fit between deployments; "
        f"cost = GiB-h held + {wait_price:g} x request-s waited"
    )
    limits = (found.total(Policy.ORACLE), found.total(Policy.LAZY_ORACLE))
    totals = [(policy.value, found.total(policy), *limits) for policy in Policy]
    typer.echo(table(_HEADERS, [_row(*total, wait_price) for total in totals], "no policy"))
    if len(lab_fleet.deployments) > 1:  # and each deployment's, under each policy
        oracles = found.ledgers[Policy.ORACLE]
        lazies = found.ledgers[Policy.LAZY_ORACLE]
        rows = [
            _row(f"{policy.value}/{ledger.name}", ledger, oracle, lazy, wait_price)
            for policy in Policy
            for ledger, oracle, lazy in zip(found.ledgers[policy], oracles, lazies, strict=True)
        ]
        typer.echo("")
        typer.echo(table(_HEADERS, rows, "no deployment"))


# P50/P99/MAX S are over the cold requests; WAIT S, MEAN S and P99 ALL S over every one.
_HEADERS = ("POLICY", "FREED GIB-H", "OF ORACLE", "COLD", "COLD %", "P50 S", "P99 S",
            "MAX S", "WAIT S", "MEAN S", "P99 ALL S", "COST", "X ORACLE", "X LAZY",
            "WAKES", "STARTS", "SLEEPS", "STOPS", "REFUSED", "AWAKE GIB-H",
            "ASLEEP GIB-H")  # fmt: skip


def _row(
    name: str, ledger: Ledger, oracle: Ledger, lazy: Ledger, price: float
) -> tuple[object, ...]:
    from dgxmm.lab.compare import cost_ratio
    from dgxmm.lab.ledger import share_of_oracle

    refused = ", ".join(f"{reason} {n}" for reason, n in sorted(ledger.refused.items())) or "-"
    return (
        name, f"{ledger.freed_gib_h:.1f}", f"{share_of_oracle(ledger, oracle):.1%}", ledger.cold,
        f"{ledger.cold_share:.2%}", f"{ledger.wait_s(0.5):.2f}", f"{ledger.wait_s(0.99):.2f}",
        f"{max(ledger.waits_s, default=0.0):.2f}", f"{ledger.wait_total_s:.1f}",
        f"{ledger.wait_mean_s:.3f}", f"{ledger.wait_all_s(0.99):.2f}",
        f"{ledger.cost(price):.1f}", f"{cost_ratio(ledger, oracle, price):.3f}",
        f"{cost_ratio(ledger, lazy, price):.3f}", ledger.wakes, ledger.starts, ledger.sleeps,
        ledger.stops, refused, f"{ledger.held_awake_gib_h:.1f}", f"{ledger.held_asleep_gib_h:.1f}",
    )  # fmt: skip


def _served(
    requests: Trace, lab_fleet: LabFleet, path: Path, *, ignore_unknown: bool
) -> tuple[Trace, dict[str, int]]:
    """Return the requests for the fleet's models and the counts of those left out.

    A request for a model no deployment serves would be replayed as nothing (no deployment
    sees it): an idle fleet would look thrifty. Refused, naming each such model and its count,
    unless ``--ignore-unknown-models`` says to leave them out."""
    served = {each.model for each in lab_fleet.deployments}
    unknown = {name: n for name, n in requests.counts().items() if name not in served}
    if not unknown:
        return requests, {}
    if not ignore_unknown:
        raise InvalidInput(
            "trace",
            f"{path} has requests for models no deployment of the fleet serves: "
            + ", ".join(f"{name!r} ({counted(n, 'request')})" for name, n in unknown.items())
            + f" (the fleet serves {', '.join(map(repr, sorted(served)))}); serve them in the "
            "fleet file, or give --ignore-unknown-models to replay without them",
        )
    kept = requests.only(served)
    if not len(kept):
        raise InvalidInput(
            "trace", f"{path} holds no request for the fleet's models "
            f"({', '.join(map(repr, sorted(served)))}), only for {_each(unknown)}",
        )  # fmt: skip
    return kept, unknown


def _each(counts: dict[str, int]) -> str:
    return ", ".join(f"{name!r} {n}" for name, n in counts.items())


def _price(text: str) -> float:
    """Read ``--price``: a finite number >= 0 (0: waiting is free, the memory alone counts)."""
    from dgxmm.lab.ledger import read_price

    return read_price(text)


def _instant(text: str, field: str) -> int:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as error:
        raise InvalidInput(field, f"{text!r} is not ISO 8601 ({error})") from None
    if moment.tzinfo is None:
        raise InvalidInput(field, f"{text!r} has no offset (add +00:00 or Z)")
    return to_us(moment.astimezone(UTC))


def _drawn(
    lab_fleet: LabFleet, name: str | None, day: str | None, start_us: int, end_us: int
) -> tuple[str, date, str]:
    """Check the picture's deployment and day before the replay runs; return them and the zone."""
    from dgxmm.lab.picture import choose_day

    names = [each.name for each in lab_fleet.deployments]
    chosen = names[0] if name is None else name  # a fleet file holds at least one
    if chosen not in names:
        raise InvalidInput("deployment", f"{chosen!r} is not in the fleet ({', '.join(names)})")
    zone = lab_fleet.deployment(chosen).time_zone
    try:
        wanted = date.fromisoformat(day) if day else None
    except ValueError:
        raise InvalidInput("day", f"{day!r} is not a date (YYYY-MM-DD)") from None
    return chosen, choose_day(wanted, zone, start_us=start_us, end_us=end_us), zone
