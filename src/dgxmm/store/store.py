"""The store: the database, its catalog, its jobs and its files, behind one object.

``Store.open(path_or_url)`` opens (and migrates) a SQLite file or a PostgreSQL database.
The library never ticks: a host gives ``system_jobs()`` and ``user_jobs()`` to a
``Scheduler`` built with ``stats=store.workload_stats`` and ``overrides=store.job_overrides``
(``store.scheduler()`` does all of it) and calls ``sync`` whenever ``catalog_version()``
changes.

``Store`` is a facade: opening is ``opening.py``; the catalog, ``catalog/``, and the facade's
methods on it, ``catalog_face.py``; the jobs and their runs, ``runs/``; the file operations
(checkpoint, backup, restore, compact, close) with the lock they share, ``upkeep.py``. While a
user job runs, those operations and the ones the spec lists beside them (``rollback``, the
attic's ``restore_from_attic`` and ``remove_from_attic``) raise ``Busy`` and change nothing; a
user job's own checkpoint or backup runs through the same code without that check.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import Engine, event, select

from dgxmm.clock import Clock, SystemClock
from dgxmm.errors import StoreError
from dgxmm.jobs import (
    Channel,
    Explanation,
    Job,
    RunContext,
    Scheduler,
    SkipRecord,
    WorkloadStats,
)
from dgxmm.store.backups.directory import BackupResult, Progress, RestoreResult, no_progress
from dgxmm.store.backups.restore import LiveStore, store_files
from dgxmm.store.backups.wal import SqliteFiles
from dgxmm.store.catalog.catalog import Catalog
from dgxmm.store.catalog.effects import AllowAll, Authorizer
from dgxmm.store.catalog.protection import read_protected
from dgxmm.store.catalog.records import JobChanges, JobDefinition
from dgxmm.store.catalog_face import CatalogFace
from dgxmm.store.database import Target, reading
from dgxmm.store.opening import open_database, sidecar_path
from dgxmm.store.runs.actions import JobActions
from dgxmm.store.runs.changes import ChangeEntry, read_changes
from dgxmm.store.runs.explanations import explain_time
from dgxmm.store.runs.instances import Presence
from dgxmm.store.runs.job_runs import KEEP_DAYS_SETTING, JobRuns, keep_days_of
from dgxmm.store.runs.overrides import SystemJobOverrides
from dgxmm.store.runs.running import RunningJobs
from dgxmm.store.runs.sidecar import Sidecar
from dgxmm.store.runs.system_jobs import SYSTEM_JOB_NAMES, build_system_jobs
from dgxmm.store.runs.user_jobs import UserJobs, build_user_jobs
from dgxmm.store.schema import (
    catalog_attic,
    catalog_jobs,
    catalog_queries,
    job_runs,
    settings,
    store_state,
)
from dgxmm.store.upkeep import Upkeep, restore
from dgxmm.store.versions import ChangeVersions, Topic
from dgxmm.words import counted

__all__ = ["Store", "restore"]


class Store(CatalogFace):
    """One dgxmm database with its catalog, jobs and files; open it with ``Store.open``."""

    def __init__(
        self,
        *,
        target: Target,
        engine: Engine,
        clock: Clock,
        authorizer: Authorizer,
        recheck: Authorizer | None,
        data_dir: Path,
        files: SqliteFiles | None,
        instance: str,
    ) -> None:
        self.engine = engine
        self.dialect = target.dialect
        self.clock = clock
        self.data_dir = data_dir
        self.path = target.path  # the SQLite file; None on PostgreSQL
        self.files = files
        self._target = target
        self._recheck = recheck
        self._reserved: set[str] = set(SYSTEM_JOB_NAMES)
        self._running = RunningJobs()
        # The live topics' counters, bumped by every write to a watched table (the job list's
        # here; the fleet and the alerts watch theirs).
        self.versions = ChangeVersions(engine)
        self.versions.watch(
            {
                table.name: Topic.JOBS
                # The attic too: removing an entry for good writes only there.
                for table in (catalog_jobs, catalog_queries, settings, job_runs, catalog_attic)
            }
        )
        # This process's name in the store: on each run it claims, in ``instances``, and
        # (PostgreSQL) on its sessions.
        self.instance = instance
        self.presence = Presence(
            engine,
            dialect=self.dialect,
            clock=clock,
            instance=self.instance,
            database_path=self.path,
        )
        self.runs = JobRuns(
            engine,
            dialect=self.dialect,
            clock=clock,
            presence=self.presence,
            versions=self.versions,
        )
        with reading(engine) as connection:
            self.store_id = str(connection.execute(select(store_state.c.store_id)).scalar_one())
            # Recorded by the migrations, so every process refuses the same writes.
            self.protected = read_protected(connection)
        self.catalog = Catalog(
            engine=engine,
            dialect=self.dialect,
            clock=clock,
            authorizer=authorizer,
            base_dir=data_dir,
            reserved=lambda: self._reserved,
            protected=self.protected,
        )
        self._sidecar = Sidecar(sidecar_path(target, data_dir))
        # The system jobs' overrides are the database's, shared by every instance; an older
        # dgxmm kept them in the sidecar, so an upgrade moves them over once.
        self.job_overrides = SystemJobOverrides(engine, clock)
        if self.job_overrides.adopt(self._sidecar.stats):
            self._sidecar.flush()
        self.job_overrides.load()
        # One place of truth: the spec's ``store.workload_stats.set_job_override(...)`` (and a
        # Scheduler given only these stats) reaches the database's overrides.
        self._sidecar.stats.keep_overrides_in(self.job_overrides)
        self.upkeep = Upkeep(
            engine=engine,
            files=files,
            data_dir=data_dir,
            store_id=self.store_id,
            now_us=clock.now_us,
            running=self._running,
            runs=self.runs,
            live=LiveStore(  # what a restore must leave alone, and how it reads paths
                dialect=self.dialect,
                data_dir=data_dir,
                files=store_files(self.path, self._sidecar.path),
                engine=engine if self.path is None else None,
            ),
        )
        self.actions = JobActions(
            engine=engine,
            dialect=self.dialect,
            clock=clock,
            catalog=self.catalog,
            stats=self._sidecar.stats,
            running=self._running,
            recheck=recheck,
            protected=self.protected,
            checkpoint=self.upkeep.run_checkpoint,
            backup=self._backup_job,
        )

    @classmethod
    def open(
        cls,
        target: str | Path,
        *,
        clock: Clock | None = None,
        authorizer: Authorizer | None = None,
        recheck: Authorizer | None = None,
        data_dir: str | Path | None = None,
    ) -> Store:
        """Open a store: a SQLite file (path or ``sqlite:///``) or a PostgreSQL URL.

        ``authorizer`` answers for definitions (default: allow all); ``recheck``, when given,
        is asked again before every run. ``data_dir`` holds the workload sidecar and relative
        backup paths: beside the database for SQLite, required for PostgreSQL.
        """
        opened = open_database(target, data_dir)
        try:
            store = cls(
                target=opened.target,
                engine=opened.engine,
                clock=clock or SystemClock(),
                authorizer=authorizer or AllowAll(),
                recheck=recheck,
                data_dir=opened.data_dir,
                files=opened.files,
                instance=opened.instance,
            )
        except BaseException:
            opened.dispose()
            raise
        files = opened.files
        if files is not None:
            event.listen(opened.engine, "checkin", lambda *_: files.maybe_checkpoint())
        return store

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @property
    def workload_stats(self) -> WorkloadStats:
        """The ``WorkloadStats`` of this store, loaded from its sidecar."""
        return self._sidecar.stats

    # -- jobs for the scheduler ---------------------------------------------------------------

    def changes(
        self, *, after_id: int = 0, job: str | None = None, limit: int = 100
    ) -> list[ChangeEntry]:
        """Return the change log after ``after_id``, oldest first."""
        with reading(self.engine) as connection:
            return read_changes(connection, after_id=after_id, job=job, limit=limit)

    def system_jobs(self) -> list[Job]:
        """Return ``stats_flush``, ``compact`` and ``runs_purge`` with their built-in schedules."""
        return build_system_jobs(
            flush=self._flush_job, compact=lambda _ctx: self.compact(), purge=self._purge_job
        )

    def user_jobs(self) -> UserJobs:
        """Return the user jobs to schedule, and the others with their reasons."""
        return build_user_jobs(self.jobs(), spec_of=self.catalog.spec, action_for=self._action_for)

    def sync(self, scheduler: Scheduler) -> UserJobs:
        """Give ``scheduler`` the user jobs and the system jobs' overrides as the database has
        them now (any instance may have changed them); return what was found."""
        found = self.user_jobs()
        scheduler.sync_user_jobs(found.jobs)
        self.job_overrides.load()
        scheduler.refresh_overrides()
        return found

    def job_changes(self, after: int) -> JobChanges:
        """Return the user jobs changed since catalog version ``after`` and the version now,
        in one snapshot (``names`` None: read the whole catalog again)."""
        return self.catalog.job_changes(after)

    def sync_jobs(
        self, scheduler: Scheduler, names: set[str], jobs: list[JobDefinition]
    ) -> UserJobs:
        """Give ``scheduler`` the user jobs ``names`` as ``jobs`` has them (a name missing
        there was dropped; the others stay as they are): a define costs the same whatever the
        number of jobs."""
        found = build_user_jobs(jobs, spec_of=self.catalog.spec, action_for=self._action_for)
        scheduler.sync_some_user_jobs(names, found.jobs)
        return found

    def scheduler(self, time_zone: str = "UTC", **options: Any) -> Scheduler:
        """Return a scheduler with this store's statistics, overrides, system and user jobs."""
        self.job_overrides.load()
        scheduler = Scheduler(
            time_zone, stats=self.workload_stats, overrides=self.job_overrides, **options
        )
        for job in self.system_jobs():
            scheduler.add(job)
        self.sync(scheduler)
        return scheduler

    def explain_time(
        self,
        job: Job,
        asked: int | datetime,
        *,
        zone: ZoneInfo,
        max_lateness_us: int,
        builtin_enabled: bool = True,
        skips: Iterable[SkipRecord] = (),
        ticking_since: int | None = None,
    ) -> Explanation:
        """Say what became of ``job``'s time at ``asked`` (an instant or a naive wall time).

        ``job`` as its scheduler holds it, read in ``zone``; a host adds its scheduler's skip
        records and when it first ticked.
        """
        return explain_time(
            self.engine,
            self.runs,
            job,
            asked,
            zone=zone,
            now_us=self.clock.now_us(),
            max_lateness_us=max_lateness_us,
            builtin_enabled=builtin_enabled,
            skips=skips,
            ticking_since=ticking_since,
        )

    def run_job(self, name: str, ctx: RunContext) -> str:
        """Run user job ``name`` once (its action calls this); return the run's detail."""
        return self.actions.run_job(name, ctx)

    def run_query(
        self,
        name: str,
        args: Mapping[str, object] | None = None,
        *,
        channel: Channel,
        actor: str | None = None,
        timeout_s: float | None = None,
    ) -> str:
        """Run a saved query that only reads, now; return its detail (counted under ``channel``)."""
        return self.actions.run_query(name, args, channel=channel, actor=actor, timeout_s=timeout_s)

    def running_jobs(self) -> list[str]:
        """Return the names of the user jobs whose runs are under way in this store."""
        return self._running.names()

    # -- files --------------------------------------------------------------------------------

    def checkpoint(self) -> str:
        """Checkpoint the database (SQLite: the tracked WAL checkpoint; PostgreSQL: CHECKPOINT)."""
        return self.upkeep.checkpoint()

    def backup(self, directory: str | Path, *, progress: Progress = no_progress) -> BackupResult:
        """Back up into ``directory``: the first run a full copy, later runs what changed.

        ``progress(done, total)`` hears of the pages (SQLite) or tables (PostgreSQL) written.
        """
        return self.upkeep.backup(directory, progress=progress)

    def restore(
        self, directory: str | Path, target: str | Path, *, progress: Progress = no_progress
    ) -> RestoreResult:
        """Rebuild a database at ``target`` (a new file, or an empty PostgreSQL database).

        Relative paths are under the data directory; on a PostgreSQL store a file is given
        as ``sqlite:///``. Never this store's files, its database, nor ``protect_paths``.
        """
        return self.upkeep.restore(directory, target, progress=progress)

    def protect_paths(self, paths: Iterable[Path], *, what: str) -> None:
        """Keep restores away from a host's own files (and from what is inside them)."""
        self.upkeep.protect_paths(paths, what=what)

    def compact(self) -> str:
        """Rebuild the database compactly (VACUUM on both databases)."""
        return self.upkeep.compact()

    def flush_stats(self) -> bool:
        """Write the workload statistics to the sidecar if they changed; tell whether it did."""
        return self._sidecar.flush() is not None

    def close(self) -> None:
        """Flush the statistics, checkpoint and close; ``Busy`` while a user job runs."""

        def let_go() -> None:
            self._sidecar.flush()
            self.presence.stop()

        if not self.upkeep.close(let_go):
            return
        self.versions.close()
        event.listen(self.engine, "checkout", _refuse_closed)
        self.engine.dispose()
        if self.files is not None:
            self.files.close()

    # -- inside -------------------------------------------------------------------------------

    def _backup_job(self, directory: Path, check: Callable[[], None]) -> str:
        result = self.upkeep.run_backup(directory, check)
        return (
            f"run {result.sequence} ({result.method_text}): {counted(result.items, 'item')}, "
            + (f"{result.bytes_written} bytes")
        )

    def _flush_job(self, _ctx: RunContext) -> str:
        written = self._sidecar.flush()
        return "unchanged" if written is None else f"wrote {written} bytes"

    def _purge_job(self, _ctx: RunContext) -> str:
        keep = keep_days_of(self.get_setting(KEEP_DAYS_SETTING))
        return f"deleted {counted(self.runs.purge(keep_days=keep), 'run')} older than {keep} days"

    def _action_for(self, name: str) -> Any:
        return lambda ctx: self.run_job(name, ctx)


def _refuse_closed(*_: object) -> None:
    raise StoreError("the store is closed")
