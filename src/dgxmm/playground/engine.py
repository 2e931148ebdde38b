"""The playground's host: the jobs engine and its store, answering the page's job API.

It runs in the browser's Web Worker under Pyodide. The worker's timer calls ``tick(now_us)``
every 5 seconds with the browser's clock; the page's requests arrive as ``handle(method, path,
body)``, one at a time, so a request that comes while a job runs waits for it (the worker has
one thread). The answers have the server's shapes: the same job rows, the same
``{"error", "field", "message", "errors"}`` for a refusal.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit
from zoneinfo import ZoneInfo

from dgxmm.clock import from_us
from dgxmm.errors import Busy, Conflict, DgxmmError, InvalidInput, NotFound, StoreError
from dgxmm.jobs import (
    Channel,
    CronSchedule,
    Job,
    JobKind,
    RunContext,
    Scheduler,
    Tier,
    WorkloadStats,
)
from dgxmm.jobs.keys import check_pause_note
from dgxmm.playground.catalog import Catalog, JobSpec, SavedQuery, check_args, split_statements
from dgxmm.time_units import SECOND_US
from dgxmm.words import counted

__all__ = ["Playground"]

_STATUS: list[tuple[type[DgxmmError], int, str]] = [
    (InvalidInput, 400, "invalid"),
    (NotFound, 404, "not_found"),
    (Busy, 409, "busy"),
    (Conflict, 409, "conflict"),
]


class Playground:
    """One browser tab's engine: a scheduler in the browser's zone over an in-memory store."""

    def __init__(self, time_zone: str, *, timer: Callable[[], float] = time.monotonic) -> None:
        self.catalog = Catalog()
        self.stats = WorkloadStats(time_zone)
        self.scheduler = Scheduler(time_zone, stats=self.stats, timer=timer)
        self.now_us = 0
        self.flushed: dict[str, Any] | None = None  # the statistics stats_flush last wrote
        self.checkpoint: bytes | None = None  # the database as the last checkpoint wrote it
        self._synced = -1
        for job in self._system_jobs():
            self.scheduler.add(job)

    # -- the clock ----------------------------------------------------------------------------

    def tick(self, now_us: int) -> list[str]:
        """Run what is due at ``now_us``; return the names of the jobs that ran."""
        self.now_us = now_us
        self._sync()
        return [result.name for result in self.scheduler.tick(now_us)]

    # -- the page's API -----------------------------------------------------------------------

    def handle(self, method: str, path: str, body: str | None, now_us: int) -> str:
        """Answer one request: ``{"status", "body"}`` as JSON text."""
        self.now_us = now_us
        self._sync()
        url = urlsplit(path)
        params = {key: values[-1] for key, values in parse_qs(url.query).items()}
        try:
            keys = json.loads(body) if body else {}
            route = self._routes().get((method, url.path))
            if route is None:
                raise NotFound("route", f"{method} {url.path}")
            answer, status = route(keys if isinstance(keys, dict) else {}, params), 200
        except DgxmmError as error:
            answer, status = _error_body(error)
        return json.dumps({"status": status, "body": answer})

    def _routes(self) -> dict[tuple[str, str], Callable[[dict[str, Any], dict[str, str]], Any]]:
        return {
            ("GET", "/api/jobs"): lambda _k, _p: self.list_jobs(),
            ("POST", "/api/jobs/define"): lambda k, _p: self.define_job(k),
            ("POST", "/api/jobs/drop"): lambda k, _p: self.drop_job(str(k.get("name"))),
            ("POST", "/api/jobs/enable"): lambda k, _p: self.enable(
                str(k.get("name")), k.get("enabled"), k.get("note")
            ),
            ("POST", "/api/jobs/schedule"): lambda k, _p: self.set_schedule(
                str(k.get("name")), k.get("schedule")
            ),
            ("POST", "/api/jobs/run"): lambda k, _p: self.run_now(str(k.get("name"))),
            ("GET", "/api/jobs/history"): lambda _k, p: self.history(
                p.get("name", ""), p.get("tier", "hours")
            ),
            ("GET", "/api/queries"): lambda _k, _p: {
                "queries": [q.to_json() for q in self.catalog.queries()]
            },
            ("POST", "/api/queries/define"): lambda k, _p: self.catalog.define_query(
                k.get("name"), k.get("params"), k.get("body")
            ).to_json(),
            ("POST", "/api/queries/run"): lambda k, _p: self.run_query(
                str(k.get("name")), k.get("args") or {}
            ),
            ("GET", "/api/workload"): lambda _k, _p: self.workload(),
        }

    def list_jobs(self) -> dict[str, Any]:
        """Every job, the system jobs first, then the user jobs by name."""
        states = [self.scheduler.state(job.name) for job in self.scheduler.jobs()]
        system = [s for s in states if s.job.kind is JobKind.SYSTEM]
        user = sorted((s for s in states if s.job.kind is JobKind.USER), key=lambda s: s.job.name)
        specs = {spec.name: spec for spec in self.catalog.jobs()}
        return {
            "time_zone": self.scheduler.time_zone.key,
            "now": self._iso(self.now_us),
            "jobs": [self._row(s.job, specs.get(s.job.name)) for s in [*system, *user]],
        }

    def define_job(self, keys: dict[str, Any]) -> dict[str, Any]:
        """Define or replace a user job; a refused one names every wrong field."""
        system = {j.name for j in self.scheduler.jobs() if j.kind is JobKind.SYSTEM}
        spec = self.catalog.define_job(keys, reserved=system)
        self._sync()
        return self._row(self.scheduler.get(spec.name), spec)

    def drop_job(self, name: str) -> dict[str, Any]:
        """Remove a user job (a system job cannot be removed)."""
        self._refuse_system(name, "removed; switch it off instead")
        self.catalog.drop_job(name)
        self._sync()
        return {"dropped": name}

    def enable(self, name: str, enabled: object, note: object = None) -> dict[str, Any]:
        """Switch a job on or off, off with an optional note of why (on drops it)."""
        if not isinstance(enabled, bool):
            raise InvalidInput("enabled", f"expected true or false, got {enabled!r}")
        checked = check_pause_note(note, field="note", enabled=enabled)
        job = self.scheduler.get(name)
        if job.kind is JobKind.SYSTEM:
            self.scheduler.set_enabled(name, enabled, note=checked)
            return self._row(self.scheduler.get(name), None)
        spec = next(s for s in self.catalog.jobs() if s.name == name)
        definition = {k: v for k, v in spec.definition.items() if k != "pause_note"}
        definition["enabled"] = enabled
        if checked is not None:
            definition["pause_note"] = checked
        return self.define_job(definition)

    def set_schedule(self, name: str, schedule: object) -> dict[str, Any]:
        """Change a system job's schedule (None: the built-in one)."""
        job = self.scheduler.get(name)
        if job.kind is not JobKind.SYSTEM:
            raise InvalidInput("name", f"{name} is a user job: define it again with its schedule")
        if schedule is not None and not isinstance(schedule, str):
            raise InvalidInput("schedule", "expected cron text or null")
        self.scheduler.set_schedule(
            name, None if schedule is None else CronSchedule.parse(schedule)
        )
        return self._row(self.scheduler.get(name), None)

    def run_now(self, name: str) -> dict[str, Any]:
        """Run a job now and answer when it has finished (the worker does nothing else)."""
        result = self.scheduler.start_now(name, self.now_us).run()
        self.scheduler.finish(result)
        return {
            "name": result.name,
            "outcome": result.outcome.value,
            "error": result.error,
            "detail": result.detail,
            "started_at": self._iso(result.started_at),
            "duration_ms": round(result.duration_us / 1000, 3),
        }

    def history(self, name: str, tier: str) -> dict[str, Any]:
        """A job's runs per minute, hour or day."""
        self.scheduler.get(name)  # NotFound
        try:
            chosen = Tier.named(tier)
        except ValueError as error:
            raise InvalidInput("tier", str(error)) from None
        return {"name": name, "tier": tier, "buckets": _buckets(self.stats.history(name, chosen))}

    def run_query(self, name: str, args: object) -> dict[str, Any]:
        """Run a saved query now from the page; counted under the channel playground."""
        query = self.catalog.query(name)
        if query is None:
            raise NotFound("saved query", name)
        checked = check_args(args, query.params)
        detail = self._counted(Channel.PLAYGROUND, lambda: self._execute(query, checked))
        return {"name": name, "detail": detail}

    def workload(self) -> dict[str, Any]:
        """The queries of each channel per minute, hour and day."""
        return {
            channel.value: {
                tier.label: _buckets(self.stats.channel_history(channel, tier)) for tier in Tier
            }
            for channel in Channel
        }

    # -- jobs ---------------------------------------------------------------------------------

    def _system_jobs(self) -> list[Job]:
        def flush(_ctx: RunContext) -> str:
            self.flushed = self.stats.to_json()
            return "kept the workload statistics in the worker"

        def compact(_ctx: RunContext) -> str:
            self.catalog.db.execute("VACUUM")
            return "compacted the in-memory database"

        return [
            Job(
                "stats_flush",
                JobKind.SYSTEM,
                CronSchedule.parse("* * * * *"),
                flush,
                description="writes the workload statistics (here: kept in the worker)",
            ),
            Job(
                "compact",
                JobKind.SYSTEM,
                CronSchedule.parse("0 3 * * *"),
                compact,
                enabled=False,
                description="rebuilds the database compactly, releasing spare space",
            ),
        ]

    def _sync(self) -> None:
        if self._synced == self.catalog.version:
            return
        self.scheduler.sync_user_jobs([self._job(spec) for spec in self.catalog.jobs()])
        self._synced = self.catalog.version

    def _job(self, spec: JobSpec) -> Job:
        def act(ctx: RunContext) -> str:
            if spec.action == "checkpoint":
                self.checkpoint = self.catalog.db.serialize()
                return f"checkpoint: {len(self.checkpoint)} bytes kept in the worker"
            query = self.catalog.query(spec.query or "")
            if query is None:
                raise NotFound("saved query", spec.query)
            args = check_args(spec.args, query.params)
            return self._counted(Channel.JOB, lambda: self._execute(query, args, ctx))

        return Job(
            spec.name,
            JobKind.USER,
            spec.schedule,
            act,
            limits=spec.limits,
            group=spec.action,
            enabled=spec.enabled,
            description=spec.definition.get("description"),
            time_zone=spec.time_zone,
            retry=spec.retry,
            catch_up=spec.catch_up,
            overlap=spec.overlap,
            pause_note=spec.definition.get("pause_note") if not spec.enabled else None,
        )

    def _execute(
        self, query: SavedQuery, args: dict[str, object], ctx: RunContext | None = None
    ) -> str:
        """Run a query's statements in one transaction; any error rolls all of it back."""
        db = self.catalog.db
        changed = returned = 0
        statements = split_statements(query.body)
        db.execute("BEGIN")
        try:
            for number, text in enumerate(statements, 1):
                if ctx is not None:
                    ctx.check()
                used = {k: v for k, v in args.items() if f":{k}" in text}
                try:
                    cursor = db.execute(text, used)
                except sqlite3.Error as error:
                    raise StoreError(f"statement {number} failed: {error}") from error
                returned += len(cursor.fetchall())
                changed += max(cursor.rowcount, 0)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return (
            f"{counted(len(statements), 'statement')}; {counted(changed, 'row')} changed; "
            f"{counted(returned, 'row')} returned"
        )

    def _counted(self, channel: Channel, work: Callable[[], str]) -> str:
        started, clock = self.now_us, time.monotonic()
        failed = True
        try:
            detail = work()
            failed = False
            return detail
        finally:
            self.stats.record_query(
                channel,
                started_at=started,
                duration_us=round((time.monotonic() - clock) * SECOND_US),
                failed=failed,
            )

    # -- rows ---------------------------------------------------------------------------------

    def _row(self, job: Job, spec: JobSpec | None) -> dict[str, Any]:
        state = self.scheduler.state(job.name)
        last = self.stats.last_run(job.name)
        counts = self.stats.counts(job.name, self.now_us)
        zone = self.scheduler.zone_of(job)
        row: dict[str, Any] = {
            "name": job.name,
            "kind": job.kind.value,
            "schedule": str(job.schedule),
            "schedule_description": job.schedule.describe(),
            "time_zone": zone.key,
            "enabled": job.enabled,
            "next_at": self._iso(state.next_at, zone),
            "running": state.run is not None,
            "last_run": None
            if last is None
            else {
                "started_at": self._iso(last.started_at),
                "duration_ms": round(last.duration_us / 1000, 3),
                "outcome": last.outcome.value,
                "error": last.error,
                "detail": last.detail,
            },
            "runs": {
                "last_hour": counts.last_hour,
                "last_two_days": counts.last_two_days,
                "last_90_days": counts.last_90_days,
            },
            "description": job.description,
            "pause_note": None if job.enabled else job.pause_note,
        }
        if job.kind is JobKind.SYSTEM:
            row["builtin_schedule"] = str(self.scheduler.builtin(job.name).schedule)
        elif spec is not None:
            row.update(
                action=spec.action,
                query=spec.query,
                args=spec.args,
                timeout_ms=spec.definition.get("timeout_ms"),
                retries=spec.definition.get("retries", 0),
                retry_backoff_s=spec.definition.get("retry_backoff_s"),
                retry_backoff_max_s=spec.definition.get("retry_backoff_max_s"),
                catchup_window_s=spec.definition.get("catchup_window_s"),
                coalesce=spec.definition.get("coalesce"),
                overlap=spec.definition.get("overlap", "skip"),
            )
        return row

    def _iso(self, at_us: int | None, zone: ZoneInfo | None = None) -> str | None:
        if at_us is None:
            return None
        return from_us(at_us, zone or self.scheduler.time_zone).isoformat()

    def _refuse_system(self, name: str, what: str) -> None:
        if self.scheduler.get(name).kind is JobKind.SYSTEM:
            raise InvalidInput("name", f"{name} is a system job: it cannot be {what}")


def _buckets(buckets: list[Any]) -> list[dict[str, Any]]:
    return [
        {
            "start_us": b.start_us,
            "count": b.count,
            "failures": b.failures,
            "total_ms": round(b.total_us / 1000, 3),
            "longest_ms": round(b.longest_us / 1000, 3),
        }
        for b in buckets
    ]


def _error_body(error: DgxmmError) -> tuple[dict[str, Any], int]:
    for kind, status, name in _STATUS:
        if isinstance(error, kind):
            field = getattr(error, "field", None)
            message = getattr(error, "message", str(error))
            body: dict[str, Any] = {"error": name, "field": field, "message": message}
            if isinstance(error, InvalidInput) and error.errors:
                body["errors"] = [{"field": f, "message": m} for f, m in error.errors]
            return body, status
    return {"error": "error", "field": None, "message": str(error)}, 500
