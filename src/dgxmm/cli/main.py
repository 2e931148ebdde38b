"""``dgxmm``: serve, and the commands that ask a running server (jobs, queries, store,
catalog, attic, deployments, schedules, proxy, insights, audit, proposals, token), and cron.

Each command group is a module in a room by what it is about: ``catalog/`` (jobs, queries,
attic, store and catalog), ``fleet/`` (deployments, schedules, proxy, insights, audit,
proposals, savings), ``access/`` (tokens); ``alerts.py`` and ``lab.py`` stand alone.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from dgxmm.cli.common import JsonOption, handles_errors
from dgxmm.cli.help_text import PlainCommand
from dgxmm.clock import SystemClock
from dgxmm.jobs import CronSchedule, resolve_zone
from dgxmm.places import DEFAULT_DATA_DIR as DEFAULT_DATA
from dgxmm.places import machine_zone

__all__ = ["app", "main"]

app = typer.Typer(
    name="dgxmm",
    help="Run model-serving deployments and the scheduled work around them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.command("serve", cls=PlainCommand)
@handles_errors
def serve_command(
    data: Annotated[Path, typer.Option("--data", help="The data directory.")] = DEFAULT_DATA,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="A PostgreSQL URL or a SQLite path (default: <data>/dgxmm.db).",
            envvar="DGXMM_DB",
        ),
    ] = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    time_zone: Annotated[
        str | None,
        typer.Option("--time-zone", help="IANA zone of the schedules (default: the machine's)."),
    ] = None,
    tick: Annotated[float, typer.Option(help="Seconds between ticks.", min=0.1)] = 5.0,
    proxy_port: Annotated[
        int | None,
        typer.Option(
            "--proxy-port",
            help="Serve the OpenAI-compatible proxy on this port too (requests wake sleeping "
            "deployments); see docs/proxy.md.",
            min=1,
            max=65535,
        ),
    ] = None,
    proxy_host: Annotated[
        str, typer.Option("--proxy-host", help="Address the proxy listens on.")
    ] = "127.0.0.1",
    demo: Annotated[
        bool,
        typer.Option(
            "--demo", help="Run three stand-in deployments with a little traffic (no GPU needed)."
        ),
    ] = False,
    ray: Annotated[
        bool,
        typer.Option(
            "--ray",
            help="With --demo: put the demo deployments on a local two-node Ray cluster with "
            "pretend GPUs (needs pip install 'dgxmm[ray]').",
        ),
    ] = False,
    alerts_allow_private_networks: Annotated[
        bool,
        typer.Option(
            "--alerts-allow-private-networks",
            envvar="DGXMM_ALERTS_ALLOW_PRIVATE_NETWORKS",
            help="Let alert channels point at private networks and this machine (10/8, "
            "172.16/12, 192.168/16, 127/8, fc00::/7, ::1). Link-local and cloud metadata "
            "addresses are refused always; see docs/alerts.md.",
        ),
    ] = False,
    fast_clock: Annotated[
        str | None,
        typer.Option(
            "--fast-clock",
            envvar="DGXMM_FAST_CLOCK",
            hidden=True,  # a test and demo facility (docs/scale-out.md), not for production
            help="RATE@ANCHOR: the clock runs RATE times faster from the ISO instant ANCHOR.",
        ),
    ] = None,
) -> None:
    """Run the server: the API, the pages, and the host that ticks the jobs."""
    from dgxmm.server.serve import ServeOptions, serve  # the server loads only for `serve`

    serve(
        ServeOptions(
            data_dir=data,
            db=db,
            host=host,
            port=port,
            time_zone=time_zone,
            tick_seconds=tick,
            demo=demo,
            proxy_host=proxy_host,
            proxy_port=proxy_port,
            ray=ray,
            fast_clock=fast_clock,
            alerts_allow_private_networks=alerts_allow_private_networks,
        )
    )


cron = typer.Typer(help="Cron expressions.", no_args_is_help=True)
app.add_typer(cron, name="cron")


@cron.command("next", cls=PlainCommand)
@handles_errors
def cron_next(
    expr: Annotated[str, typer.Argument(help="A 5-field cron expression, quoted.")],
    n: Annotated[int, typer.Option("-n", help="How many fire times.", min=1, max=1000)] = 5,
    zone: Annotated[
        str | None, typer.Option("--zone", help="IANA zone (default: the machine's).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Print the next fire times of a cron expression (DST-gap moves marked) and its meaning."""
    schedule = CronSchedule.parse(expr)
    place = resolve_zone(zone or machine_zone())
    times = schedule.fire_times(SystemClock().now_us(), place, n)
    lines = [f"{schedule}  ({schedule.describe()}, {place.key})"]
    lines += [t.local.isoformat() + ("  (moved by a DST gap)" if t.moved else "") for t in times]
    value = {
        "schedule": str(schedule),
        "description": schedule.describe(),
        "zone": place.key,
        "times": [{"at": t.local.isoformat(), "moved": t.moved} for t in times],
    }
    typer.echo(json.dumps(value, indent=2) if as_json else "\n".join(lines))


def _register() -> None:
    from dgxmm.cli import alerts, lab
    from dgxmm.cli.access import tokens
    from dgxmm.cli.catalog import attic, jobs, queries, store_ops
    from dgxmm.cli.fleet import deployments, insights, model_check, proxy, savings, schedules

    app.add_typer(tokens.app, name="token")
    app.add_typer(jobs.app, name="jobs")
    app.add_typer(queries.app, name="queries")
    app.add_typer(store_ops.store_app, name="store")
    app.add_typer(store_ops.catalog_app, name="catalog")
    app.add_typer(attic.app, name="attic")
    model_check.register(deployments.app)
    app.add_typer(deployments.app, name="deployments")
    app.add_typer(schedules.app, name="schedules")
    app.add_typer(insights.insights_app, name="insights")
    app.add_typer(insights.audit_app, name="audit")
    app.add_typer(insights.proposals_app, name="proposals")
    app.add_typer(lab.app, name="lab")
    app.add_typer(alerts.app, name="alerts")
    savings.register(app)
    proxy.register(app)


_register()


def main(argv: list[str] | None = None) -> Any:
    """Run the command line."""
    return app(args=argv if argv is not None else sys.argv[1:], prog_name="dgxmm")
