"""``dgxmm jobs``: list, define, drop, enable, run (once, here) and history."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from dgxmm.cli.common import DataOption, DbOption, JsonOption, handles_errors, open_store, out
from dgxmm.clock import from_us
from dgxmm.errors import InvalidInput
from dgxmm.jobs import Tier, resolve_zone
from dgxmm.places import DEFAULT_DATA_DIR as DEFAULT_DATA
from dgxmm.places import machine_zone

__all__ = ["app"]

app = typer.Typer(
    help="User jobs (the CLI never ticks: `jobs run` runs one now, here).", no_args_is_help=True
)


@app.command("list")
@handles_errors
def list_jobs(
    data: DataOption = DEFAULT_DATA, db: DbOption = None, as_json: JsonOption = False
) -> None:
    """List the user jobs with their schedules, effects and whether they run here."""
    with open_store(data, db) as store:
        jobs = store.jobs()
    rows = [job.to_json() for job in jobs]
    lines = [
        f"{job.name}\t{job.schedule}\t{job.action}\t{'on' if job.enabled else 'off'}"
        + ("" if job.served else f"\tnot scheduled: {job.reason}")
        for job in jobs
    ]
    out(rows, as_json, "\n".join(lines) or "no user jobs")


@app.command("define")
@handles_errors
def define(
    name: Annotated[str, typer.Argument()],
    schedule: Annotated[str, typer.Option(help="5-field cron, quoted.")],
    action: Annotated[str, typer.Option(help="query, checkpoint or backup.")],
    query: Annotated[str | None, typer.Option(help="The saved query (action query).")] = None,
    args: Annotated[str | None, typer.Option(help="The query's arguments as JSON.")] = None,
    path: Annotated[str | None, typer.Option(help="The backup directory (action backup).")] = None,
    enabled: Annotated[bool, typer.Option("--enabled/--disabled")] = True,
    timeout_ms: Annotated[int | None, typer.Option("--timeout-ms")] = None,
    memory_limit: Annotated[int | None, typer.Option("--memory-limit", help="Bytes.")] = None,
    run_on: Annotated[str | None, typer.Option("--run-on")] = None,
    description: Annotated[str | None, typer.Option()] = None,
    data: DataOption = DEFAULT_DATA,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Define or replace a user job."""
    keys: dict[str, Any] = {
        "name": name,
        "schedule": schedule,
        "action": action,
        "enabled": enabled,
    }
    if args is not None:
        try:
            keys["args"] = json.loads(args)
        except json.JSONDecodeError as error:
            raise InvalidInput("args", f"not valid JSON ({error})") from error
    for key, value in (
        ("query", query), ("path", path), ("timeout_ms", timeout_ms),
        ("memory_limit", memory_limit), ("run_on", run_on), ("description", description),
    ):  # fmt: skip
        if value is not None:
            keys[key] = value
    with open_store(data, db) as store:
        job = store.define_job(actor="cli", **keys)
    out(job.to_json(), as_json, f"defined {job.name} (catalog version {job.version})")


@app.command("drop")
@handles_errors
def drop(name: str, data: DataOption = DEFAULT_DATA, db: DbOption = None) -> None:
    """Remove a user job."""
    with open_store(data, db) as store:
        store.drop_job(name, actor="cli")
    typer.echo(f"dropped {name}")


@app.command("enable")
@handles_errors
def enable(
    name: str,
    on: Annotated[bool, typer.Option("--on/--off")] = True,
    data: DataOption = DEFAULT_DATA,
    db: DbOption = None,
) -> None:
    """Switch a user job on or off."""
    with open_store(data, db) as store:
        store.set_job_enabled(name, on, actor="cli")
    typer.echo(f"{name} is {'on' if on else 'off'}")


@app.command("run")
@handles_errors
def run(
    name: str, data: DataOption = DEFAULT_DATA, db: DbOption = None, as_json: JsonOption = False
) -> None:
    """Run a job once, now, in this process, and record it in the statistics."""
    with open_store(data, db) as store:
        scheduler = store.scheduler(machine_zone())
        started = scheduler.start_now(name, store.clock.now_us())
        result = started.run()
        scheduler.finish(result)
    summary = f"{result.name}: {result.outcome.value} in {result.duration_us / 1000:.1f} ms"
    summary += (
        f": {result.error}" if result.error else (f": {result.detail}" if result.detail else "")
    )
    out(
        {"name": result.name, "outcome": result.outcome.value, "error": result.error,
         "detail": result.detail, "duration_ms": result.duration_us / 1000},
        as_json,
        summary,
    )  # fmt: skip
    if result.error:
        raise typer.Exit(1)


@app.command("history")
@handles_errors
def history(
    name: str,
    tier: Annotated[str, typer.Option(help="minutes, hours or days.")] = "hours",
    data: DataOption = DEFAULT_DATA,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print a job's runs per minute, hour or day."""
    try:
        chosen = Tier.named(tier)
    except ValueError as error:
        raise InvalidInput("tier", str(error).removeprefix("tier: ")) from None
    zone = resolve_zone(machine_zone())
    with open_store(data, db) as store:
        buckets = store.workload_stats.history(name, chosen)
    rows = [
        {"start": from_us(b.start_us, zone).isoformat(), "count": b.count, "failures": b.failures,
         "total_ms": b.total_us / 1000, "longest_ms": b.longest_us / 1000}
        for b in buckets
    ]  # fmt: skip
    lines = [
        f"{r['start']}\t{r['count']} run(s)\t{r['failures']} failed\tlongest {r['longest_ms']} ms"
        for r in rows
    ]
    out(rows, as_json, "\n".join(lines) or f"no runs of {name} recorded")
