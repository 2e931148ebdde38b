"""``dgxmm jobs``: list, define, drop, enable, run, cancel, explain and history, on the server
or ``--offline``."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

import typer

from dgxmm.cli.common import (
    Answer,
    Switch,
    SwitchArgument,
    Target,
    command,
    json_option,
    local_time,
    table,
)
from dgxmm.clock import from_us
from dgxmm.errors import InvalidInput, NotFound
from dgxmm.jobs import Coalesce, Overlap, Tier, read_asked, resolve_zone
from dgxmm.places import machine_zone
from dgxmm.store import Trigger

__all__ = ["app"]

app = typer.Typer(
    help="Jobs: the server's system and user jobs (--offline: the user jobs in the database).",
    no_args_is_help=True,
)


@command(app, "list")
def list_jobs(where: Target) -> Answer:
    """List the jobs with their schedules, whether they are on, and their last run."""
    if where.offline:
        with where.store() as store:
            jobs = store.jobs()
        rows = [job.to_json() for job in jobs]
        lines = [
            (j.name, "user", j.schedule, j.action, j.enabled, None, None,
             j.reason or (j.pause_note and f"switched off: {j.pause_note}"))
            for j in jobs
        ]  # fmt: skip
    else:
        with where.client() as api:
            rows = api.get_all("/api/jobs", "jobs")["jobs"]
        lines = [
            (r["name"], r["kind"], r["schedule"], r.get("action") or "-", r["enabled"],
             (r["last_run"] or {}).get("outcome"), r.get("next_at"), _why_not(r))
            for r in rows
        ]  # fmt: skip
    headers = ("NAME", "KIND", "SCHEDULE", "ACTION", "ENABLED", "LAST RUN", "NEXT", "NOT RUN")
    return Answer(value=rows, text=table(headers, lines, "no jobs"))


def _why_not(row: dict[str, Any]) -> str | None:
    """Why a listed job does not run, with its pause note when it has one."""
    why, note = row.get("why_not"), row.get("pause_note")
    return f"{why}: {note}" if why and note else why


@command(app, "define")
def define(
    where: Target,
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
    retries: Annotated[
        int | None, typer.Option(help="Tries again after a failure (default 0).")
    ] = None,
    retry_backoff_s: Annotated[
        float | None, typer.Option("--retry-backoff-s", help="The first wait, seconds.")
    ] = None,
    retry_backoff_max_s: Annotated[
        float | None, typer.Option("--retry-backoff-max-s", help="The longest wait, seconds.")
    ] = None,
    time_zone: Annotated[
        str | None,
        typer.Option(
            "--time-zone", help="IANA zone its schedule is read in (default: the server's)."
        ),
    ] = None,
    catchup_window_s: Annotated[
        float | None,
        typer.Option(
            "--catchup-window-s", help="How late a time missed in a gap may still run, seconds."
        ),
    ] = None,
    coalesce: Annotated[
        Coalesce | None, typer.Option(help="Which times inside the window run after a gap.")
    ] = None,
    overlap: Annotated[
        Overlap | None, typer.Option(help="A time that comes while the job runs (default skip).")
    ] = None,
) -> Answer:
    """Define or replace a user job."""
    keys: dict[str, Any] = {
        "name": name,
        "schedule": schedule,
        "action": action,
        "enabled": enabled,
    }
    if args is not None:
        keys["args"] = json_option(args, "args")
    for key, value in (
        ("query", query), ("path", path), ("timeout_ms", timeout_ms),
        ("memory_limit", memory_limit), ("run_on", run_on), ("description", description),
        ("time_zone", time_zone), ("retries", retries), ("retry_backoff_s", retry_backoff_s),
        ("retry_backoff_max_s", retry_backoff_max_s), ("catchup_window_s", catchup_window_s),
        ("coalesce", coalesce and coalesce.value), ("overlap", overlap and overlap.value),
    ):  # fmt: skip
        if value is not None:
            keys[key] = value
    row = where.either(
        lambda store: store.define_job(actor="cli", **keys).to_json(),
        lambda api: api.post("/api/jobs/define", keys),
    )
    return Answer(value=row, text=f"defined {name} (catalog version {row['version']})")


@command(app, "drop")
def drop(where: Target, name: str) -> Answer:
    """Remove a user job."""
    where.either(
        lambda store: store.drop_job(name, actor="cli"),
        lambda api: api.post("/api/jobs/drop", {"name": name}),
    )
    return Answer(value={"dropped": name}, text=f"dropped {name}")


@command(app, "enable")
def enable(
    where: Target,
    name: str,
    switch: SwitchArgument,
    note: Annotated[
        str | None, typer.Option(help="Why it is switched off (with off), shown beside it.")
    ] = None,
) -> Answer:
    """Switch a job on or off: ``dgxmm jobs enable NAME on|off [--note TEXT]``."""
    on = switch is Switch.ON
    body: dict[str, Any] = {"name": name, "enabled": on}
    if note is not None:
        body["note"] = note
    row = where.either(
        lambda store: store.set_job_enabled(name, on, note=note, actor="cli").to_json(),
        lambda api: api.post("/api/jobs/enable", body),
    )
    return Answer(value=row, text=f"{name} is {switch.value}" + (f": {note}" if note else ""))


@command(app, "run")
def run(where: Target, name: str) -> Answer:
    """Run a job now and wait for it (on the server; with --offline, in this process)."""
    if where.offline:
        with where.store() as store:
            scheduler = store.scheduler(machine_zone())
            started = scheduler.start_now(name, store.clock.now_us())
            # Claimed in the store's job_runs like a server's run: a server beside this
            # process lists it and holds off its type and the store operations meanwhile.
            run_id = store.runs.claim(started, Trigger.CLI)
            result = started.run()
            scheduler.finish(result)
            if run_id is not None:
                store.runs.finish(run_id, result)
        value = {
            "name": result.name, "outcome": result.outcome.value, "error": result.error,
            "detail": result.detail, "duration_ms": result.duration_us / 1000,
        }  # fmt: skip
    else:
        with where.client() as api:
            value = api.post("/api/jobs/run", {"name": name})
    summary = f"{value['name']}: {value['outcome']} in {value['duration_ms']:.1f} ms"
    summary += (
        f": {value['error']}"
        if value["error"]
        else (f": {value['detail']}" if value["detail"] else "")
    )
    return Answer(value=value, text=summary, code=1 if value["error"] else 0)


@command(app, "cancel")
def cancel(where: Target, run_id: Annotated[int, typer.Argument(help="The run's id.")]) -> Answer:
    """Cancel a run under way (its id from ``dgxmm jobs runs`` or the job's page).

    With --offline the request is written into the database: the instance that runs it
    cancels it when it next looks (PostgreSQL, or a SQLite server not writing then).
    """
    row = where.either(
        lambda store: store.runs.request_cancel(run_id, "cli").to_json(full_errors=True),
        lambda api: api.post(f"/api/jobs/runs/{run_id}/cancel"),
    )
    if row.get("outcome") == "cancelled":
        text = f"run {run_id} of {row['job']}: cancelled by {row['cancelled_by']}"
    else:
        asked = row.get("cancel_requested_by")
        text = f"run {run_id} of {row['job']}: cancel asked by {asked} (on {row['instance']})"
    return Answer(value=row, text=text)


@command(app, "runs")
def runs(
    where: Target,
    name: str,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000, help="How many.")] = 20,
) -> Answer:
    """List a job's runs, newest first: when, why, how it ended (as /api/jobs/runs)."""
    rows = where.either(
        lambda store: [r.to_json(full_errors=True) for r in store.runs.page(job=name, limit=limit)],
        lambda api: api.get("/api/jobs/runs", name=name, limit=limit)["runs"],
    )
    lines = [
        (r["id"], local_time(r["started_at_us"]), r["trigger"], r["outcome"] or "running",
         r["duration_ms"], _said(r.get("error") or r.get("result")))
        for r in rows
    ]  # fmt: skip
    headers = ("ID", "STARTED", "TRIGGER", "OUTCOME", "MS", "ERROR OR RESULT")
    return Answer(value=rows, text=table(headers, lines, f"no runs of {name} recorded"))


def _said(value: object) -> str | None:
    """A run's error or result in a table's cell: one line, cut short (--json has it all)."""
    if value is None:
        return None
    text = " ".join(str(value).split())
    return text if len(text) <= 60 else text[:57] + "..."


@command(app, "explain")
def explain(
    where: Target,
    name: str,
    time: Annotated[
        str,
        typer.Argument(
            help="ISO 8601: with an offset an instant, else a wall time of the job's zone."
        ),
    ],
) -> Answer:
    """Say whether TIME is one of the job's times and, for a past one, what became of it."""
    asked = read_asked(time, field="time")
    if where.offline:
        with where.store() as store:
            scheduler = store.scheduler(machine_zone())
            job = scheduler.get(name)
            value = {"name": name} | store.explain_time(
                job,
                asked,
                zone=scheduler.zone_of(job),
                max_lateness_us=scheduler.max_lateness_us,
                builtin_enabled=scheduler.builtin(name).enabled,
            ).to_json()
    else:
        with where.client() as api:
            value = api.get(f"/api/jobs/{quote(name, safe='')}/explain", at=time)
    head = f"{name} at {value['asked']} ({value['zone']}): {value['verdict']}"
    if value["cause"]:
        head += f" ({value['cause']})"
    return Answer(value=value, text=f"{head}\n{value['detail']}")


@command(app, "history")
def history(
    where: Target,
    name: str,
    tier: Annotated[str, typer.Option(help="minutes, hours or days.")] = "hours",
) -> Answer:
    """Print a job's runs per minute, hour or day."""
    try:
        chosen = Tier.named(tier)
    except ValueError as error:
        raise InvalidInput("tier", str(error).removeprefix("tier: ")) from None
    if where.offline:
        zone = resolve_zone(machine_zone())
        with where.store() as store:
            buckets = store.workload_stats.history(name, chosen)
            if not buckets and name not in {job.name for job in store.jobs()}:
                raise NotFound("job", name)
        rows = [
            {"start": from_us(b.start_us, zone).isoformat(), "count": b.count,
             "failures": b.failures, "total_ms": b.total_us / 1000,
             "longest_ms": b.longest_us / 1000}
            for b in buckets
        ]  # fmt: skip
    else:
        with where.client() as api:
            rows = api.get("/api/jobs/history", name=name, tier=chosen.label)["buckets"]
    lines = [(r["start"], r["count"], r["failures"], r["total_ms"], r["longest_ms"]) for r in rows]
    text = table(
        ("START", "RUNS", "FAILED", "TOTAL MS", "LONGEST MS"), lines, f"no runs of {name} recorded"
    )
    return Answer(value=rows, text=text)
