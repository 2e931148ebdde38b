"""The record of every job run in the store, and the claim that makes a run one instance's.

A run is claimed by inserting its row before it starts, and the row is completed when it
ends. For a scheduled run, (job, scheduled time) is unique: of several processes that reach
the same due time, the one whose insert lands runs it and every other one gives it up, on
SQLite and PostgreSQL alike (``INSERT ... ON CONFLICT DO NOTHING`` tells which one it was).
A run asked for by hand (``manual``: the API; ``cli``: ``dgxmm jobs run``) has no such key.

A finish writes only a row still under way (``WHERE finished_at IS NULL``): the first word
on a run stands, so a run recorded abandoned (its instance stopped or was lost) keeps that
record even if its work ends later.

A run under way is cancelled from any instance: ``request_cancel`` writes who asked into its
row, and the instance that runs it reads ``cancels_requested`` (its own rows under way that
carry a request) and cancels the run; the end it writes says who cancelled it.

Rows are kept ``keep_days`` (default 90) after they started; the store's ``runs_purge``
system job deletes older ones.
"""

from __future__ import annotations

from sqlalchemy import Connection, Engine, and_, delete, func, insert, or_, select, text, update

from dgxmm.clock import Clock
from dgxmm.errors import Busy, Conflict, InvalidInput, NotFound
from dgxmm.jobs import JobKind, JobRun, Outcome, RunResult
from dgxmm.store.database import Dialect, reading, writing
from dgxmm.store.runs.instances import Presence
from dgxmm.store.runs.kept_rows import KeptRows
from dgxmm.store.runs.records import RunRecord, Trigger, run_record
from dgxmm.store.schema import job_run_rows, job_runs
from dgxmm.store.versions import ChangeVersions, Topic
from dgxmm.time_units import DAY_US

__all__ = ["KEEP_DAYS_SETTING", "MAX_RUNS_PAGE", "JobRuns"]

# The setting that changes how long runs are kept (days, a whole number from 1).
KEEP_DAYS_SETTING = "jobs.runs_keep_days"
DEFAULT_KEEP_DAYS = 90
MAX_RUNS_PAGE = 1000
# Arbitrary, fixed: serializes claims on PostgreSQL, so that "is a run of this job or of its
# group under way elsewhere?" and the insert are one step (SQLite's BEGIN IMMEDIATE is).
_CLAIM_LOCK = 0x64677878_6D6D0003 & 0x7FFFFFFFFFFFFFFF


class JobRuns:
    """The ``job_runs`` table of one store, written in the name of one instance."""

    def __init__(
        self,
        engine: Engine,
        *,
        dialect: Dialect,
        clock: Clock,
        presence: Presence,
        versions: ChangeVersions,
    ) -> None:
        self.engine = engine
        self.dialect = dialect
        self.clock = clock
        self.presence = presence
        self.instance = presence.instance
        # Each write names the job it touched, so a live job list fetches that row alone.
        self.versions = versions

    def claim(self, run: JobRun, trigger: Trigger, *, busy_ms: int | None = None) -> int | None:
        """Insert the run's row; return its id, or None when another process claimed its time.

        ``Busy`` when a run of the same job, or of its group, is under way in another live
        process (the server's, another server's, a CLI's): one job of a type at a time.
        """
        self.presence.register()
        with writing(self.engine, busy_ms=busy_ms) as connection:
            if self.dialect is Dialect.POSTGRESQL:
                connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _CLAIM_LOCK})
            self._refuse_if_elsewhere(connection, run)
            return self._insert(connection, run, trigger)

    def claim_all(
        self,
        runs: list[JobRun],
        trigger: Trigger,
        *,
        busy_ms: int | None = None,
        leading: bool = False,
    ) -> list[int | Busy | None]:
        """``claim`` each run in one transaction (one commit for a tick's runs), in order.

        Each answer is the run's id, None (its time was claimed), or the ``Busy`` refusal.
        ``leading``: claimed as the holder of the ticker's lease, so ``Conflict`` (nothing
        claimed) when this instance no longer holds it (it was deposed, its session cut).
        """
        if not runs:
            return []
        self.presence.register()
        answers: list[int | Busy | None] = []
        with writing(self.engine, busy_ms=busy_ms) as connection:
            if self.dialect is Dialect.POSTGRESQL:
                connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _CLAIM_LOCK})
            # Checked under the claim lock, which the new holder's claims take too: once the
            # lease has moved, this instance's claims stop here, whatever it believes.
            if leading and not self.presence.is_leading(connection):
                raise Conflict("claim: this instance no longer holds the ticker's lease")
            for run in runs:
                try:
                    self._refuse_if_elsewhere(connection, run)
                except Busy as refusal:
                    answers.append(refusal)
                    continue
                answers.append(self._insert(connection, run, trigger))
        return answers

    def _refuse_if_elsewhere(self, connection: Connection, run: JobRun) -> None:
        same = job_runs.c.job == run.job.name
        if run.job.group is not None:
            same = or_(same, job_runs.c.job_group == run.job.group)
        rows = connection.execute(
            select(job_runs.c.job, job_runs.c.job_group, job_runs.c.instance).where(
                job_runs.c.finished_at.is_(None), job_runs.c.instance != self.instance, same
            )
        ).all()
        if not rows:
            return
        living = self.presence.alive(connection, {r.instance for r in rows})
        for row in rows:
            if row.instance not in living:
                continue  # its instance is lost: the holder records the run abandoned
            if row.job == run.job.name:
                raise Busy(
                    f"job {row.job} is running on instance {row.instance}; "
                    "try again when it has finished"
                )
            raise Busy(
                f"job {row.job} of group {row.job_group} is running on instance "
                f"{row.instance}; try again when it has finished"
            )

    def _insert(self, connection: Connection, run: JobRun, trigger: Trigger) -> int | None:
        statement = (
            self.dialect.insert(job_runs)
            .values(
                job=run.job.name,
                kind=run.job.kind.value,
                job_group=run.job.group,
                # A retry is claimed as its own row: the time's first run holds the key.
                trigger=(Trigger.RETRY if run.attempt > 1 else trigger).value,
                scheduled_at=run.scheduled_at,
                started_at=run.started_at,
                instance=self.instance,
                attempt=run.attempt,
            )
            .on_conflict_do_nothing()
            .returning(job_runs.c.id)
        )
        found = connection.execute(statement).scalar()
        if found is None:
            return None
        self.versions.note(connection, Topic.JOBS, run.job.name)
        return int(found)

    def finish(self, run_id: int, result: RunResult) -> bool:
        """Record how a run ended; tell whether this was the first word on it."""
        with writing(self.engine) as connection:
            job = connection.execute(
                update(job_runs)
                .where(job_runs.c.id == run_id, job_runs.c.finished_at.is_(None))
                .values(
                    finished_at=result.finished_at,
                    outcome=result.outcome.value,
                    error=result.error,
                    public_error=result.public_error,
                    result=result.detail,
                    cancelled_by=result.cancelled_by,
                )
                .returning(job_runs.c.job)
            ).scalar()
            if job is not None:
                self.versions.note(connection, Topic.JOBS, str(job))
            if job is not None and result.kept is not None:
                # Bounded by the action that kept them (``kept_rows.py``), written with the
                # end so that a run's page never shows rows of a run still under way.
                connection.execute(insert(job_run_rows).values(run_id=run_id, body=result.kept))
        return job is not None

    def kept_rows(self, run_id: int) -> KeptRows | None:
        """Return the rows a run kept (a query job's first rows), or None."""
        with reading(self.engine) as connection:
            body = connection.execute(
                select(job_run_rows.c.body).where(job_run_rows.c.run_id == run_id)
            ).scalar()
        return None if body is None else KeptRows.loads(body)

    def request_cancel(self, run_id: int, by: str) -> RunRecord:
        """Ask for a run under way to be cancelled, on behalf of ``by``; return its row.

        ``NotFound`` for no such run, ``Conflict`` for one that has ended. Asked twice, the
        first asker stands. The instance running it cancels it when it next looks.
        """
        with writing(self.engine) as connection:
            job = connection.execute(
                update(job_runs)
                .where(
                    job_runs.c.id == run_id,
                    job_runs.c.finished_at.is_(None),
                    job_runs.c.cancel_requested_by.is_(None),
                )
                .values(cancel_requested_by=by)
                .returning(job_runs.c.job)
            ).scalar()
            if job is not None:
                self.versions.note(connection, Topic.JOBS, job)
        return self.cancellable(run_id)

    def cancellable(self, run_id: int) -> RunRecord:
        """Return a run under way; ``NotFound`` for no such run, ``Conflict`` for one ended."""
        record = self.get(run_id)
        if record is None:
            raise NotFound("run", str(run_id))
        if record.outcome is not None:
            raise Conflict(f"run {run_id} of job {record.job} has ended: {record.outcome.value}")
        return record

    def cancels_requested(self) -> list[tuple[int, str]]:
        """Return this instance's runs under way that someone asked to cancel, and who."""
        query = select(job_runs.c.id, job_runs.c.cancel_requested_by).where(
            job_runs.c.instance == self.instance,
            job_runs.c.finished_at.is_(None),
            job_runs.c.cancel_requested_by.is_not(None),
        )
        with reading(self.engine) as connection:
            return [(int(i), str(by)) for i, by in connection.execute(query)]

    def running_elsewhere(self, kind: JobKind | None = None) -> list[RunRecord]:
        """Return the runs under way in other live processes (of ``kind`` if given)."""
        query = select(job_runs).where(
            job_runs.c.finished_at.is_(None), job_runs.c.instance != self.instance
        )
        if kind is not None:
            query = query.where(job_runs.c.kind == kind.value)
        with reading(self.engine) as connection:
            records = [run_record(row._mapping) for row in connection.execute(query)]
            if not records:
                return []
            living = self.presence.alive(connection, {r.instance for r in records})
        return [r for r in records if r.instance in living]

    def reap_lost(self) -> list[str]:
        """Record the runs under way of every lost instance abandoned; return those instances."""
        with writing(self.engine) as connection:
            ids = set(
                connection.execute(
                    select(job_runs.c.instance)
                    .where(job_runs.c.finished_at.is_(None), job_runs.c.instance != self.instance)
                    .distinct()
                ).scalars()
            )
            if not ids:
                return []
            lost = sorted(ids - self.presence.alive(connection, ids))
            now = self.clock.now_us()
            for instance in lost:
                self.abandon_lost(connection, instance, at_us=now)
        return lost

    def abandon_lost(self, connection: Connection, instance: str, *, at_us: int) -> int:
        """Record every run of a lost ``instance`` still under way as abandoned; count them."""
        reason = f"abandoned: instance {instance} was lost"
        jobs = (
            connection.execute(
                update(job_runs)
                .where(job_runs.c.instance == instance, job_runs.c.finished_at.is_(None))
                .values(
                    finished_at=func.max(job_runs.c.started_at, at_us)
                    if self.dialect is Dialect.SQLITE
                    else func.greatest(job_runs.c.started_at, at_us),
                    outcome=Outcome.FAILED.value,
                    error=reason,
                    public_error=reason,
                )
                .returning(job_runs.c.job)
            )
            .scalars()
            .all()
        )
        for job in set(jobs):
            self.versions.note(connection, Topic.JOBS, job)
        return len(jobs)

    def get(self, run_id: int) -> RunRecord | None:
        """Return one run, or None."""
        with reading(self.engine) as connection:
            row = connection.execute(select(job_runs).where(job_runs.c.id == run_id)).first()
        return None if row is None else run_record(row._mapping)

    def page(
        self, *, job: str | None = None, before: int | None = None, limit: int = 50
    ) -> list[RunRecord]:
        """Return runs newest first: of ``job`` if given, with an id below ``before``."""
        if not 1 <= limit <= MAX_RUNS_PAGE:
            raise InvalidInput("limit", f"{limit} is out of range 1-{MAX_RUNS_PAGE}")
        if before is not None and before < 1:
            raise InvalidInput("before", f"{before} is not a run id (a whole number from 1)")
        query = select(job_runs).order_by(job_runs.c.id.desc()).limit(limit)
        if job is not None:
            query = query.where(job_runs.c.job == job)
        if before is not None:
            query = query.where(job_runs.c.id < before)
        with reading(self.engine) as connection:
            return [run_record(row._mapping) for row in connection.execute(query)]

    def newest(
        self,
        *,
        limit: int,
        job: str | None = None,
        kinds: frozenset[JobKind] | None = None,
        outcomes: frozenset[Outcome | None] | None = None,
        since_us: int | None = None,
        until_us: int | None = None,
        before: tuple[int, int] | None = None,
    ) -> list[RunRecord]:
        """Return runs by start, newest first: the Runs page's half of its list.

        ``kinds``: only the runs of these kinds of job (the page's "hide system jobs");
        ``outcomes``: only runs that ended so (None in it: those under way); ``since_us``
        inclusive, ``until_us`` exclusive, of the start; ``before``: only runs that come after
        this (start, id) in the order, the page's cursor.
        """
        if not 1 <= limit <= MAX_RUNS_PAGE:
            raise InvalidInput("limit", f"{limit} is out of range 1-{MAX_RUNS_PAGE}")
        c = job_runs.c
        query = select(job_runs).order_by(c.started_at.desc(), c.id.desc()).limit(limit)
        if job is not None:
            query = query.where(c.job == job)
        if kinds is not None:
            query = query.where(c.kind.in_([k.value for k in kinds]))
        if outcomes is not None:
            ended = [o.value for o in outcomes if o is not None]
            under_way = c.finished_at.is_(None) if None in outcomes else None
            within = c.outcome.in_(ended)
            query = query.where(within if under_way is None else or_(within, under_way))
        if since_us is not None:
            query = query.where(c.started_at >= since_us)
        if until_us is not None:
            query = query.where(c.started_at < until_us)
        if before is not None:
            at, run_id = before
            query = query.where(or_(c.started_at < at, and_(c.started_at == at, c.id < run_id)))
        with reading(self.engine) as connection:
            return [run_record(row._mapping) for row in connection.execute(query)]

    def around(
        self, job: str, at_us: int, group: str | None
    ) -> tuple[list[RunRecord], list[RunRecord]]:
        """Return the runs that tell what became of ``job``'s time ``at_us``.

        Its own: the run of that time, any run under way then, and a run of an earlier time
        that started at or after it (it waited). Its group's: the other jobs' runs under way
        then (whom it waited for).
        """
        c = job_runs.c
        under_way = and_(
            c.started_at <= at_us, or_(c.finished_at.is_(None), c.finished_at >= at_us)
        )
        own = (
            select(job_runs)
            .where(
                c.job == job,
                or_(
                    c.scheduled_at == at_us,
                    under_way,
                    and_(c.scheduled_at < at_us, c.started_at >= at_us),
                ),
            )
            .order_by(c.id)
            .limit(MAX_RUNS_PAGE)
        )
        with reading(self.engine) as connection:
            mine = [run_record(row._mapping) for row in connection.execute(own)]
            theirs: list[RunRecord] = []
            if group is not None:
                others = (
                    select(job_runs)
                    .where(c.job_group == group, c.job != job, under_way)
                    .order_by(c.id)
                    .limit(MAX_RUNS_PAGE)
                )
                theirs = [run_record(row._mapping) for row in connection.execute(others)]
        return mine, theirs

    def under_way(self, connection: Connection | None = None) -> list[RunRecord]:
        """Return the runs that have not ended, oldest first."""
        query = select(job_runs).where(job_runs.c.finished_at.is_(None)).order_by(job_runs.c.id)
        if connection is not None:
            return [run_record(row._mapping) for row in connection.execute(query)]
        with reading(self.engine) as reader:
            return [run_record(row._mapping) for row in reader.execute(query)]

    def purge(self, *, keep_days: int) -> int:
        """Delete the ended runs that started more than ``keep_days`` ago; count them."""
        cutoff = self.clock.now_us() - keep_days * DAY_US
        with writing(self.engine) as connection:
            deleted = int(
                connection.execute(
                    delete(job_runs).where(
                        and_(job_runs.c.started_at < cutoff, job_runs.c.finished_at.is_not(None))
                    )
                ).rowcount
            )
            # Their kept rows go with them (no foreign key: SQLite enforces none by default).
            connection.execute(
                delete(job_run_rows).where(job_run_rows.c.run_id.not_in(select(job_runs.c.id)))
            )
            return deleted


def keep_days_of(value: object) -> int:
    """Return the setting's days, or the default when unset; ``InvalidInput`` otherwise."""
    if value is None:
        return DEFAULT_KEEP_DAYS
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(KEEP_DAYS_SETTING, f"{value!r} is not a number of days (from 1)")
    return value
