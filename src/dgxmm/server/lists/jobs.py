"""The job list as the API and the pages show it: system jobs first, then user jobs.

One row per job: its schedule and what it means, on or off, its next time, whether a run is
under way, its last run, its run counts, whether it runs here (and why not), and for a
user job its action, arguments and effects.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo

from dgxmm.clock import from_us
from dgxmm.errors import CronError, DefinitionError, NotFound
from dgxmm.jobs import CronSchedule, Job, JobKind, JobState, Outcome
from dgxmm.jobs.keys import check_time_zone
from dgxmm.server.host import Host, RowParts
from dgxmm.store import JobDefinition

__all__ = ["Listed", "is_failing", "iso", "job_page", "job_row", "job_rows"]


def iso(at_us: int | None, host: Host, zone: ZoneInfo | None = None) -> str | None:
    """Return an instant as ISO 8601 in ``zone`` (a job's own), else the host's."""
    return None if at_us is None else _iso(at_us, zone or host.time_zone)


@functools.lru_cache(maxsize=16_384)
def _iso(at_us: int, zone: ZoneInfo) -> str:
    # Next and last times repeat from one request to the next: format each once.
    return from_us(at_us, zone).isoformat()


@dataclass(frozen=True, slots=True, kw_only=True)
class Listed:
    """What the list's order and its filters read of a job, before its row is built."""

    name: str
    kind: JobKind
    action: str | None
    enabled: bool


Pick = Callable[[list[Listed]], list[str]]


def job_page(host: Host, after: tuple[int, str] | None, size: int | None) -> tuple[list[str], Any]:
    """Return the names of an unfiltered page of ``size`` jobs (None: all) after ``after``, and
    the key of its last job when more follow (else None), in the list's order: system jobs,
    then user jobs, each by name (the key: ``(0 or 1, name)``).

    Found by bisection in the names the host keeps in order: a page costs its rows, not a
    pass over every job (10,000 jobs, issue 28).
    """
    with host.lock:
        system = sorted(host.scheduler.system_names())
    _, user = host.definitions_in_order()
    if size is None:
        size = len(system) + len(user)
    kind, name = after if after is not None else (0, "")
    if kind == 0:
        start = 0 if after is None else bisect.bisect_right(system, name)
        keys = [(0, n) for n in system[start : start + size]]
        keys += [(1, n) for n in user[: size - len(keys)]]
        remaining = len(system) - start + len(user)
    else:
        start = bisect.bisect_right(user, name)
        keys = [(1, n) for n in user[start : start + size]]
        remaining = len(user) - start
    last = keys[-1] if keys and remaining > size else None
    return [n for _, n in keys], last


def job_rows(
    host: Host, *, full_errors: bool, pick: Pick | None = None, names: list[str] | None = None
) -> list[dict[str, Any]]:
    """Return every job's row: system jobs first, then user jobs by name.

    ``full_errors`` (for admins) shows a failed run's whole error; otherwise its public form,
    which never carries a value the run read (``RunResult.public_error``). ``pick``, given
    every job in that order, names the ones whose rows to build (a page, a filter): only
    those rows are built, so a page costs its rows whatever the number of jobs.
    """
    now = host.clock.now_us()
    definitions, in_order = host.definitions_in_order()
    with host.lock:
        system = {name: host.scheduler.get(name) for name in host.scheduler.system_names()}
    if names is not None:  # a page already picked (``job_page``)
        order = [name for name in names if name in system or name in definitions]
    elif pick is None:
        order = [*system, *in_order]
    else:
        order = pick(
            [
                Listed(name=name, kind=JobKind.SYSTEM, action=None, enabled=job.enabled)
                for name, job in system.items()
            ]
            + [
                Listed(
                    name=name,
                    kind=JobKind.USER,
                    action=definitions[name].definition.get("action"),
                    enabled=definitions[name].enabled,
                )
                for name in in_order
            ]
        )
    return _rows(
        host, order, definitions=definitions, system=system, now=now, full_errors=full_errors
    )


def _rows(
    host: Host,
    order: list[str],
    *,
    definitions: dict[str, JobDefinition],
    system: dict[str, Job],
    now: int,
    full_errors: bool,
) -> list[dict[str, Any]]:
    """Build the rows of the jobs ``order`` names, in that order."""
    with host.lock:
        states = {name: _state(host, name) for name in order}
        builtin = {
            name: str(host.scheduler.builtin(name).schedule) for name in order if name in system
        }
    rows = []
    for name in order:
        state = states[name]
        if name in system:
            assert state is not None
            rows.append(_system_row(host, state, builtin[name], now, full_errors))
        else:
            rows.append(_user_row(host, definitions[name], state, now, full_errors))
    return rows


def job_row(host: Host, name: str, *, full_errors: bool) -> dict[str, Any]:
    """Return one job's row (``NotFound``); only that row is built."""
    definitions = host.definitions_by_name()  # once: each read asks the catalog's version
    if name not in definitions:
        with host.lock:
            state = _state(host, name)
        if state is None or state.job.kind is not JobKind.SYSTEM:
            raise NotFound("job", name)
    # Built alone: listing every job to pick one would cost a define at 10,000 jobs more
    # than the define itself (issue 28).
    with host.lock:
        system = {n: host.scheduler.get(n) for n in host.scheduler.system_names() if n == name}
    now = host.clock.now_us()
    return _rows(
        host, [name], definitions=definitions, system=system, now=now, full_errors=full_errors
    )[0]


def is_failing(host: Host, name: str) -> bool:
    """Tell whether a job's last run failed or ran over time."""
    stats = host.scheduler.stats
    last = None if stats is None else stats.last_run(name)
    return last is not None and last.outcome in (Outcome.FAILED, Outcome.OVER_TIME)


def _state(host: Host, name: str) -> JobState | None:
    try:
        return host.scheduler.state(name)
    except NotFound:  # a user job not served here
        return None


def _common(
    host: Host, name: str, state: JobState | None, now: int, full_errors: bool
) -> dict[str, Any]:
    stats = host.scheduler.stats
    assert stats is not None
    last = stats.last_run(name)
    counts = stats.counts(name, now)
    run = state.run if state is not None else None
    return {
        "name": name,
        "running": run is not None,
        "running_since": iso(run.started_at, host) if run is not None else None,
        "waiting_since": iso(state.waiting_since, host) if state is not None else None,
        "last_run": None
        if last is None
        else {
            "started_at": iso(last.started_at, host),
            "duration_ms": round(last.duration_us / 1000, 3),
            "outcome": last.outcome.value,
            "error": last.error if full_errors else last.public_error,
            "detail": last.detail,
        },
        "runs": {
            "last_hour": counts.last_hour,
            "last_two_days": counts.last_two_days,
            "last_90_days": counts.last_90_days,
        },
    }


def _next(
    state: JobState | None, schedule: CronSchedule | None, zone: ZoneInfo, now: int
) -> int | None:
    if state is None or schedule is None or not state.job.enabled or state.run is not None:
        return None
    if state.next_at is not None:
        return state.next_at
    if state.waiting_since is not None:
        return state.waiting_since
    return schedule.next_after(now, zone)  # picked up, planned at the next tick


def _system_row(
    host: Host, state: JobState, builtin: str, now: int, full_errors: bool
) -> dict[str, Any]:
    job = state.job
    row = _common(host, job.name, state, now, full_errors)
    next_at = _next(state, job.schedule, host.time_zone, now)
    row.update(
        kind="system",
        time_zone=host.time_zone.key,
        schedule=str(job.schedule),
        schedule_description=job.schedule.describe(),
        builtin_schedule=builtin,
        enabled=job.enabled,
        next_at=iso(next_at, host),
        runs_here=job.enabled,
        why_not=None if job.enabled else "switched off",
        pause_note=None if job.enabled else job.pause_note,
        description=job.description,
    )
    return row


def _user_row(
    host: Host, job: JobDefinition, state: JobState | None, now: int, full_errors: bool
) -> dict[str, Any]:
    row = _common(host, job.name, state, now, full_errors)
    fixed, schedule, zone = _user_fields(host, job)
    row.update(fixed)
    next_at = _next(state, schedule, zone, now) if job.served else None
    # In the job's own zone: the wall time its schedule names, with that zone's offset.
    row["next_at"] = iso(next_at, host, zone)
    return row


def _user_fields(host: Host, job: JobDefinition) -> RowParts:
    """Return what a user job's row takes from its definition, kept on the host by version."""
    cache = host.row_parts
    key = (job.name, job.version)
    found = cache.get(key)
    if found is not None:
        return found
    definition = job.definition
    schedule: CronSchedule | None = None
    description = None
    if job.schedule is not None:
        try:
            schedule = CronSchedule.parse(job.schedule)
            description = schedule.describe()
        except CronError:
            schedule = None
    zone = host.time_zone
    with suppress(DefinitionError):  # a zone this machine lacks: not served, reason listed
        zone = check_time_zone(definition) or zone
    why_not = None
    if not job.served:
        why_not = f"not scheduled: {job.reason}"
    elif not job.enabled:
        why_not = "switched off"
    fields = {
        "kind": "user",
        "schedule": job.schedule,
        "schedule_description": description,
        "enabled": job.enabled,
        "pause_note": job.pause_note,
        "retries": definition.get("retries", 0),
        "retry_backoff_s": definition.get("retry_backoff_s"),
        "retry_backoff_max_s": definition.get("retry_backoff_max_s"),
        # Left out: the spec's rule (a gap skipped whole), shown as null.
        "catchup_window_s": definition.get("catchup_window_s"),
        "coalesce": definition.get("coalesce"),
        "overlap": definition.get("overlap", "skip"),
        "runs_here": why_not is None,
        "why_not": why_not,
        "served": job.served,
        "action": definition.get("action"),
        "query": definition.get("query"),
        "args": definition.get("args"),
        "path": definition.get("path"),
        "timeout_ms": definition.get("timeout_ms"),
        "memory_limit": definition.get("memory_limit"),
        "run_on": definition.get("run_on"),
        "description": definition.get("description"),
        # The zone its schedule is read in: its own, else the server's (as written when this
        # machine does not know it; the job is then not served).
        "time_zone": zone.key if job.served else definition.get("time_zone", zone.key),
        "effects": [str(effect) for effect in job.effects],
        "defined_by": job.defined_by,
        "version": job.version,
    }
    if len(cache) > 20_000:
        cache.clear()
    cache[key] = (fields, schedule, zone)
    return fields, schedule, zone
