"""What a user job's run does: call its saved query, write a checkpoint, or back up.

A run first reads the job and its query as they are now, refuses a job this instance does not
serve, asks the recheck authorizer again (an embedding server with identities re-checks every
run), and then does exactly what its effects allow. A query job runs within its effects and
limits (``query_runs.py``); the checkpoint and the backup are the store's file operations,
given here as callables (``Upkeep``): this room does not reach the backups' machinery.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path

from sqlalchemy import Engine

from dgxmm.clock import Clock
from dgxmm.errors import NotAllowed, NotFound
from dgxmm.jobs import Channel, JobLimits, RunContext, WorkloadStats
from dgxmm.store.catalog.catalog import Catalog
from dgxmm.store.catalog.definitions import JobAction
from dgxmm.store.catalog.effects import Authorizer, Create, ask_again
from dgxmm.store.catalog.protection import ProtectedTable
from dgxmm.store.database import Dialect, reading
from dgxmm.store.runs.query_runs import counted, run_query_job, run_saved_query
from dgxmm.store.runs.running import RunningJobs

__all__ = ["JobActions"]


class JobActions:
    """The runs of one store's user jobs, and its read-only query runs on demand."""

    def __init__(
        self,
        *,
        engine: Engine,
        dialect: Dialect,
        clock: Clock,
        catalog: Catalog,
        stats: WorkloadStats,
        running: RunningJobs,
        recheck: Authorizer | None,
        protected: Mapping[str, ProtectedTable],
        checkpoint: Callable[[], str],
        backup: Callable[[Path, Callable[[], None]], str],
    ) -> None:
        self._engine = engine
        self._dialect = dialect
        self._clock = clock
        self._catalog = catalog
        self._stats = stats
        self._running = running
        self._recheck = recheck
        self._protected = protected
        self._checkpoint = checkpoint
        self._backup = backup

    def run_job(self, name: str, ctx: RunContext) -> str:
        """Run user job ``name`` once (its action calls this); return the run's detail."""
        with self._running.run(name):
            with reading(self._engine) as connection:
                job, query = self._catalog.load(connection, name)
            if not job.served:
                raise NotAllowed(f"job {name} does not run here: {job.reason}")
            spec = self._catalog.spec(job)
            ask_again(job.name, job.defined_by, job.effects, self._recheck)
            if spec.action is JobAction.QUERY:
                if query is None:
                    raise NotFound("saved query", spec.query)
                with counted(self._stats, self._clock, Channel.JOB, ctx):
                    return run_query_job(
                        engine=self._engine,
                        dialect=self._dialect,
                        clock=self._clock,
                        job=job,
                        args=spec.args,
                        query=query,
                        ctx=ctx,
                        protected=self._protected,
                    )
            if spec.action is JobAction.CHECKPOINT:
                ctx.check()
                return self._checkpoint()
            assert spec.path is not None
            if Create(directory=str(spec.path)) not in job.effects:
                raise NotAllowed(f"job {name}: its effects do not allow Create({spec.path})")
            return self._backup(spec.path, ctx.check)

    def run_query(
        self,
        name: str,
        args: Mapping[str, object] | None,
        *,
        channel: Channel,
        actor: str | None,
        timeout_s: float | None,
    ) -> str:
        """Run a saved query that only reads, now; return its detail (counted under ``channel``)."""
        query = self._catalog.query(name)
        now = self._clock.now_us()
        limits = JobLimits(timeout=None if timeout_s is None else timedelta(seconds=timeout_s))
        ctx = RunContext(
            name=name, scheduled_at=now, started_at=now, limits=limits, timer=time.monotonic
        )
        with counted(self._stats, self._clock, channel, ctx):
            return run_saved_query(
                engine=self._engine,
                dialect=self._dialect,
                clock=self._clock,
                query=query,
                args=args or {},
                actor=actor,
                ctx=ctx,
                protected=self._protected,
            )
