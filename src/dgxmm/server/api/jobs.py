"""The jobs API of the spec: list, define, drop, enable, schedule, run, runs, history, preview;
and why a time of a job ran or not (explain)."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Path, Query, Response

from dgxmm.errors import InvalidInput, NotFound
from dgxmm.jobs import CronSchedule, JobKind, Tier, read_asked, resolve_zone
from dgxmm.server.edge.bodies import DefineJob, EnableJob, NameBody, ScheduleJob
from dgxmm.server.edge.deps import Admin, HostDep, Viewer
from dgxmm.server.edge.openapi import answers
from dgxmm.server.edge.paging import (
    CursorQuery,
    LimitQuery,
    make_cursor,
    page_after,
    read_bool,
    read_cursor,
    read_limit,
)
from dgxmm.server.host.run_cancels import cancel_run
from dgxmm.server.lists.jobs import Listed, is_failing, iso, job_page, job_row, job_rows
from dgxmm.store import JobAction

__all__ = ["page_key", "router"]

router = APIRouter(prefix="/api/jobs", tags=["jobs"])


@router.get("", responses=answers(400))
def list_jobs(
    host: HostDep,
    who: Viewer,
    *,
    limit: LimitQuery = None,
    cursor: CursorQuery = None,
    kind: JobKind | None = None,
    action: JobAction | None = None,
    enabled: Annotated[str | None, Query(max_length=5, description="true or false")] = None,
    failing: Annotated[
        str | None, Query(max_length=5, description="true: the last run failed or ran over time")
    ] = None,
) -> Response:
    """The jobs: the system jobs, then the user jobs by name (a viewer sees errors' public form).

    Without ``limit``, every job, as the spec's table has it; with it, a page, and
    ``next_cursor`` to pass as ``cursor`` for the next one (null after the last).
    """
    size = read_limit(limit, default=None)
    after = read_cursor(cursor, "jobs")
    on, failed = read_bool(enabled, "enabled"), read_bool(failing, "failing")
    next_key = None

    def pick(listed: list[Listed]) -> list[str]:
        nonlocal next_key
        kept = [job for job in listed if _matches(job, kind, action, on)]
        if failed is not None:  # read only when asked: a last run per job
            kept = [job for job in kept if is_failing(host, job.name) is failed]
        if size is not None or after is not None:
            kept, next_key = page_after(kept, _job_key, after, size)
        return [job.name for job in kept]

    paged = size is not None or after is not None
    filtered = kind is not None or action is not None or on is not None or failed is not None
    if paged and not filtered:  # the console's and the CLI's walk: found by bisection
        names, next_key = job_page(host, page_key(after), size)
        rows = job_rows(host, full_errors=who.is_admin, names=names)
    else:
        rows = job_rows(host, full_errors=who.is_admin, pick=pick if filtered else None)
    # The rows are plain JSON values already: orjson writes them directly. FastAPI's generic
    # encoder took three times as long as building the rows, with 1,000 jobs.
    body = {
        "time_zone": host.time_zone.key,
        "now": iso(host.clock.now_us(), host),
        "jobs": rows,
        "next_cursor": None if next_key is None else make_cursor("jobs", next_key),
    }
    return Response(orjson.dumps(body), media_type="application/json")


def page_key(after: Any) -> tuple[int, str] | None:
    """Return a jobs cursor's key, ``(0 or 1, name)`` (``InvalidInput`` naming ``cursor``)."""
    if after is None:
        return None
    if (
        not isinstance(after, list)
        or len(after) != 2  # a kind and a name
        or after[0] not in (0, 1)
        or isinstance(after[0], bool)
        or not isinstance(after[1], str)
    ):
        raise InvalidInput("cursor", "is not a cursor of jobs: pass next_cursor as given")
    return (after[0], after[1])


def _job_key(job: Listed) -> tuple[int, str]:
    # System jobs first, then user jobs, each by name: a total order, as a cursor needs.
    return (0 if job.kind is JobKind.SYSTEM else 1, job.name)


def _matches(
    job: Listed, kind: JobKind | None, action: JobAction | None, enabled: bool | None
) -> bool:
    return (
        (kind is None or job.kind is kind)
        and (action is None or job.action == action.value)
        and (enabled is None or job.enabled is enabled)
    )


@router.post("/define", responses=answers(400, 409))
def define_job(body: DefineJob, host: HostDep, who: Admin) -> dict[str, Any]:
    """Define or replace a user job; a refused one answers 400 naming the field."""
    keys = body.model_dump(mode="json", exclude_unset=True)  # the spec's keys, as JSON values
    host.store.define_job(actor=who.actor, **keys)
    host.sync()
    return job_row(host, body.name, full_errors=True)


@router.post("/drop", responses=answers(400, 404, 409))
def drop_job(body: NameBody, host: HostDep, who: Admin) -> dict[str, Any]:
    """Remove a user job (a system job cannot be removed)."""
    _refuse_system(host, body.name, "removed; switch it off instead")
    host.store.drop_job(body.name, actor=who.actor)
    host.sync()
    return {"dropped": body.name}


@router.post("/enable", responses=answers(400, 404, 409))
def enable_job(body: EnableJob, host: HostDep, who: Admin) -> dict[str, Any]:
    """Switch a job on or off, off with an optional note (a user job keeps its effects)."""
    if _is_system(host, body.name):
        with host.lock:
            host.scheduler.set_enabled(body.name, body.enabled, note=body.note)
    else:
        host.store.set_job_enabled(body.name, body.enabled, note=body.note, actor=who.actor)
        host.sync()
    return job_row(host, body.name, full_errors=True)


@router.post("/schedule", responses=answers(400, 404))
def schedule_job(body: ScheduleJob, host: HostDep, _: Admin) -> dict[str, Any]:
    """Change a system job's schedule (null: the built-in one); a user job is defined again."""
    if not _is_system(host, body.name):
        if any(job.name == body.name for job in host.store.jobs()):
            raise InvalidInput(
                "name", f"{body.name} is a user job: define it again with its new schedule"
            )
        raise NotFound("job", body.name)
    schedule = None if body.schedule is None else _parse(body.schedule)
    with host.lock:
        host.scheduler.set_schedule(body.name, schedule)
    return job_row(host, body.name, full_errors=True)


@router.post("/run", responses=answers(404, 409))
def run_job(body: NameBody, host: HostDep, _: Admin) -> dict[str, Any]:
    """Run a job now and answer when it has finished; 409 while it or a job of its type runs."""
    result = host.run_now(body.name)
    return {
        "name": result.name,
        "outcome": result.outcome.value,
        "error": result.error,
        "detail": result.detail,
        "started_at": iso(result.started_at, host),
        "duration_ms": round(result.duration_us / 1000, 3),
    }


@router.get("/runs", responses=answers(400))
def runs(
    host: HostDep,
    who: Viewer,
    *,
    name: Annotated[str | None, Query(description="one job's runs")] = None,
    before: Annotated[str | None, Query(description="a run id")] = None,
    limit: LimitQuery = None,
    cursor: CursorQuery = None,
) -> dict[str, Any]:
    """The runs of every job (or of ``name``), newest first, ``limit`` at a time (100).

    The next page: pass ``next_cursor`` as ``cursor`` (null once a page was not full), or
    ``next_before`` as ``before`` (a run id). A run of a job since dropped is still listed; a
    viewer reads errors' public form.
    """
    if name is not None and not 1 <= len(name) <= 200:
        raise InvalidInput("name", "a job name is 1-200 characters")
    size = read_limit(limit)
    assert size is not None
    after = read_cursor(cursor, "runs")
    if after is not None and not isinstance(after, int):
        raise InvalidInput("cursor", "is not a cursor of runs: pass next_cursor as given")
    page = host.store.runs.page(
        job=name,
        before=after if before is None else _whole(before, "before"),
        limit=size,
    )
    rows = []
    for record in page:
        row = record.to_json(full_errors=who.is_admin)
        row["scheduled_at"] = iso(record.scheduled_at, host)
        row["started_at"] = iso(record.started_at, host)
        row["finished_at"] = iso(record.finished_at, host)
        rows.append(row)
    last = page[-1].id if len(page) == size else None
    return {
        "runs": rows,
        "next_before": page[-1].id if page else None,
        "next_cursor": None if last is None else make_cursor("runs", last),
    }


@router.get("/runs/{run_id}", responses=answers(400, 404))
def run(run_id: str, host: HostDep, who: Viewer) -> dict[str, Any]:
    """One run: its record, and the rows a query job's run kept (its first 100, bounded).

    ``rows`` is null for a run that kept none (not a query job, no statement returned rows,
    or under way); ``rows.cut`` says fewer were kept than returned. A viewer reads errors'
    public form.
    """
    record = host.store.runs.get(_whole(run_id, "id"))
    if record is None:
        raise NotFound("run", run_id)
    row = record.to_json(full_errors=who.is_admin)
    row["scheduled_at"] = iso(record.scheduled_at, host)
    row["started_at"] = iso(record.started_at, host)
    row["finished_at"] = iso(record.finished_at, host)
    row["late_ms"] = round((record.started_at - record.scheduled_at) / 1000, 3)
    kept = host.store.runs.kept_rows(record.id)
    row["rows"] = None if kept is None else kept.to_json()
    return row


@router.post("/runs/{run_id}/cancel", responses=answers(400, 404, 409))
def cancel(run_id: str, host: HostDep, who: Admin) -> dict[str, Any]:
    """Cancel a run under way: at once when this instance runs it, else when the one running
    it next looks (about a second on PostgreSQL); 404 for no such run, 409 for one ended."""
    record = cancel_run(host.store, host.runs_here(), _whole(run_id, "id"), by=who.actor)
    row = record.to_json(full_errors=True)
    row["scheduled_at"] = iso(record.scheduled_at, host)
    row["started_at"] = iso(record.started_at, host)
    return row


@router.get("/history", responses=answers(404))
def history(
    host: HostDep,
    _: Viewer,
    name: Annotated[str, Query(min_length=1, max_length=200)],
    tier: Annotated[str, Query(pattern="^(minutes|hours|days)$")] = "hours",
) -> dict[str, Any]:
    """A job's runs per minute, hour or day: count, failures, total and longest time."""
    job_row(host, name, full_errors=False)  # NotFound for a job that does not exist
    stats = host.scheduler.stats
    assert stats is not None
    buckets = stats.history(name, Tier.named(tier))
    return {
        "name": name,
        "tier": tier,
        "buckets": [
            {
                "start": iso(bucket.start_us, host),
                "start_us": bucket.start_us,
                "count": bucket.count,
                "failures": bucket.failures,
                "total_ms": round(bucket.total_us / 1000, 3),
                "longest_ms": round(bucket.longest_us / 1000, 3),
            }
            for bucket in buckets
        ],
    }


@router.get("/preview", responses=answers(400))
def preview(
    host: HostDep,
    _: Viewer,
    schedule: Annotated[str, Query(max_length=200)],
    zone: Annotated[str | None, Query(max_length=100)] = None,
    n: Annotated[int, Query(ge=1, le=100)] = 5,
) -> dict[str, Any]:
    """The next fire times of a cron text (those a DST gap moved are marked), in plain English."""
    parsed = _parse(schedule)
    place = host.time_zone if zone is None else resolve_zone(zone, field="zone")
    times = parsed.fire_times(host.clock.now_us(), place, n)
    return {
        "schedule": str(parsed),
        "description": parsed.describe(),
        "zone": place.key,
        "times": [{"at": t.local.isoformat(), "at_us": t.at_us, "moved": t.moved} for t in times],
    }


@router.get("/{name}/explain", responses=answers(400, 404))
def explain(
    host: HostDep,
    _: Viewer,
    name: Annotated[str, Path(min_length=1, max_length=200)],
    at: Annotated[str, Query(max_length=100)],
) -> dict[str, Any]:
    """Whether an instant is one of a job's times, and for a past one what became of it.

    ``at`` is ISO 8601: with an offset an instant, without one a wall time of the job's zone
    (one a DST gap skips is read as moved). Past or future.
    """
    asked = read_asked(at)
    host.sync()  # a job defined a moment ago is explained too
    unserved = next((job for job in host.definitions() if job.name == name), None)
    if unserved is not None and not unserved.served:
        raise InvalidInput("name", f"{name} is not scheduled here: {unserved.reason}")
    return {"name": name} | host.explain(name, asked).to_json()


def _whole(text: str, field: str) -> int:
    if not text.isascii() or not text.isdigit() or len(text) > 18:
        raise InvalidInput(field, f"{text[:40]!r} is not a whole number")
    return int(text)


def _parse(text: str) -> CronSchedule:
    return CronSchedule.parse(text)


def _is_system(host: HostDep, name: str) -> bool:
    with host.lock:
        try:
            return host.scheduler.get(name).kind is JobKind.SYSTEM
        except NotFound:
            return False


def _refuse_system(host: HostDep, name: str, what: str) -> None:
    if _is_system(host, name):
        raise InvalidInput("name", f"{name} is a system job: it cannot be {what}")
