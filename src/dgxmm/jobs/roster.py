"""A scheduler's jobs: the job list, each job's planned time, and the system jobs' overrides.

``Roster`` holds what the scheduler knows of each job (``Entry``: its definition, its planned
time on the heap, its run under way, its wait for its group, a retry planned, the times queued
to start when it is free) and changes the list: add, remove, replace, switch, reschedule, and
sync the user jobs. ``Scheduler`` (``jobs/scheduler.py``) ticks it. A job's planned time is
read in its own zone when it has one, else in the scheduler's.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass, replace
from heapq import heappush
from zoneinfo import ZoneInfo

from dgxmm.errors import Conflict, CronError, NotFound
from dgxmm.jobs.cron.expression import CronSchedule
from dgxmm.jobs.cron.zones import resolve_zone
from dgxmm.jobs.job import Job, JobKind, JobRun
from dgxmm.jobs.keys import check_pause_note
from dgxmm.jobs.overlap import Overlap
from dgxmm.jobs.stats.overrides import JobOverrides
from dgxmm.jobs.stats.workload import WorkloadStats

__all__ = ["Entry", "JobState", "Roster"]


@dataclass(frozen=True, slots=True, kw_only=True)
class JobState:
    """A job as the scheduler holds it right now."""

    job: Job
    next_at: int | None  # the planned time; None while running, waiting, off or not planned
    run: JobRun | None  # the run under way
    waiting_since: int | None  # the due time it keeps while its group is busy


class Entry:
    """One job as its scheduler holds it."""

    __slots__ = (
        "builtin",
        "freed_at",
        "gen",
        "job",
        "next_at",
        "queued",
        "retry",
        "run",
        "waiting_since",
    )

    def __init__(self, job: Job) -> None:
        self.job = job
        self.builtin = job  # a system job's definition before any override
        self.next_at: int | None = None
        self.gen = 0  # bumped whenever a planned heap item stops being valid
        self.run: JobRun | None = None
        self.waiting_since: int | None = None
        # A retry planned at next_at: (the failed run's time, its attempt, the next time of
        # the schedule, which the retry must start before).
        self.retry: tuple[int, int, int] | None = None
        # Times that start as soon as the job is free, oldest first: a gap's times caught up
        # (coalesce: all), or the one a buffer_one or cancel_other job keeps while it runs.
        self.queued: deque[int] = deque()
        # When its run ended with a time queued (a skip job has nothing planned until the
        # queued time starts: the times in between are told then).
        self.freed_at: int | None = None


class Roster:
    """The jobs of one scheduler and their planned times, in one time zone."""

    def __init__(
        self,
        time_zone: ZoneInfo | str,
        stats: WorkloadStats | None,
        overrides: JobOverrides | None,
    ) -> None:
        self.time_zone = resolve_zone(time_zone, field="time_zone")
        self.stats = stats
        # Where the system jobs' overrides are kept: the stats unless told (a store gives its
        # database, so every instance on it shares them).
        self.overrides: JobOverrides | None = overrides if overrides is not None else stats
        if stats is not None:
            stats.time_zone = self.time_zone  # day buckets start at this zone's midnight
        self._entries: dict[str, Entry] = {}
        # Kept as they are added (a system job is never removed, no job changes its kind):
        # every job list asks for them, and a scan of 10,000 entries cost most of a page.
        self._system: list[str] = []
        self._heap: list[tuple[int, int, int, Entry]] = []
        self._seq = 0
        self._unplanned: dict[str, Entry] = {}
        self._busy: dict[str, JobRun] = {}  # group -> the run that holds it
        self._waiting: dict[str, deque[Entry]] = {}
        self._running: dict[int, JobRun] = {}  # token -> run

    # -- the job list -------------------------------------------------------------------------

    def add(self, job: Job) -> None:
        """Add a job; raise ``Conflict`` when the name is taken."""
        if job.name in self._entries:
            raise Conflict(f"a job named {job.name!r} already exists")
        entry = Entry(job)
        if job.kind is JobKind.SYSTEM:
            entry.job = self._overridden(job)
        # A job removed and added again while its old run goes on still counts as running.
        entry.run = next((r for r in self._running.values() if r.job.name == job.name), None)
        self._entries[job.name] = entry
        self._unplanned[job.name] = entry
        if job.kind is JobKind.SYSTEM:
            self._system.append(job.name)

    def remove(self, name: str) -> None:
        """Remove a user job; a run under way goes on and is recorded when it finishes."""
        entry = self._entry(name)
        if entry.job.kind is JobKind.SYSTEM:
            raise Conflict(f"{name} is a system job: it cannot be removed, only switched off")
        del self._entries[name]
        self._forget(entry)

    def replace(self, job: Job) -> None:
        """Replace a job's definition, keeping its run under way and, if unchanged, its time."""
        entry = self._entry(job.name)
        if job.kind is not entry.job.kind:
            raise Conflict(f"{job.name}: cannot change a {entry.job.kind.value} job's kind")
        entry.builtin = job
        if job.kind is JobKind.SYSTEM:
            job = self._overridden(job)
        old, entry.job = entry.job, job
        if job.schedule != old.schedule or job.time_zone != old.time_zone:
            self._replan(entry)

    def jobs(self) -> list[Job]:
        """Return every job: the system jobs first, then the user jobs by name."""
        system = [e.job for e in self._entries.values() if e.job.kind is JobKind.SYSTEM]
        user = sorted(
            (e.job for e in self._entries.values() if e.job.kind is JobKind.USER),
            key=lambda job: job.name,
        )
        return system + user

    def system_names(self) -> list[str]:
        """Return the system jobs' names, in the order they were added."""
        return list(self._system)

    def get(self, name: str) -> Job:
        """Return a job by name; raise ``NotFound``."""
        return self._entry(name).job

    def builtin(self, name: str) -> Job:
        """Return a job as it was added or replaced, before any override of a system job."""
        return self._entry(name).builtin

    def state(self, name: str) -> JobState:
        """Return a job with its planned time, its run under way and its wait."""
        entry = self._entry(name)
        return JobState(
            job=entry.job,
            next_at=entry.next_at if entry.job.enabled else None,
            run=entry.run,
            waiting_since=entry.waiting_since,
        )

    def next_run(self, name: str) -> int | None:
        """Return a job's planned time; None while it runs, waits, is off or not planned yet."""
        return self.state(name).next_at

    def set_enabled(self, name: str, on: bool, *, note: str | None = None) -> None:
        """Switch a job on or off, off with an optional note of why; kept as an override.

        A note with the job switched on is refused (``DefinitionError`` naming ``note``);
        switching it on drops the note.
        """
        entry = self._entry(name)
        note = check_pause_note(note, field="note", enabled=on)
        if entry.job.kind is JobKind.SYSTEM and self.overrides is not None:
            # Kept first: when keeping it fails, the job is left as it was.
            self.overrides.set_job_override(
                name, enabled=None if on == entry.builtin.enabled else on, note=note
            )
        entry.job = replace(entry.job, enabled=on, pause_note=note)
        if on and entry.next_at is None and entry.run is None and entry.waiting_since is None:
            self._replan(entry)

    def set_schedule(self, name: str, schedule: CronSchedule | None) -> None:
        """Change a job's schedule; None gives a system job its built-in schedule again."""
        entry = self._entry(name)
        if schedule is None:
            if entry.job.kind is not JobKind.SYSTEM:
                raise Conflict(f"{name} is a user job: it has no built-in schedule")
            schedule = entry.builtin.schedule
        if entry.job.kind is JobKind.SYSTEM and self.overrides is not None:
            same = schedule == entry.builtin.schedule
            self.overrides.set_job_override(name, schedule=None if same else str(schedule))
        if schedule != entry.job.schedule:
            entry.job = replace(entry.job, schedule=schedule)
            self._replan(entry)

    def refresh_overrides(self) -> None:
        """Apply the system jobs' overrides as their keeper has them now.

        Another instance may have changed them: a changed schedule plans the job again, a
        job switched on that has no planned time gets one; a run under way goes on.
        """
        for entry in self._entries.values():
            if entry.job.kind is not JobKind.SYSTEM:
                continue
            job = self._overridden(entry.builtin)
            old, entry.job = entry.job, job
            if job.schedule != old.schedule or (
                job.enabled and not old.enabled and entry.next_at is None
            ):
                self._replan(entry)

    def sync_user_jobs(self, jobs: list[Job]) -> None:
        """Make the user jobs exactly ``jobs``: add, replace and remove in one call.

        System jobs and runs under way are left alone; a job whose definition did not change
        keeps its planned time.
        """
        wanted: dict[str, Job] = {}
        for job in jobs:
            if job.kind is not JobKind.USER:
                raise Conflict(f"{job.name}: sync_user_jobs takes user jobs only")
            if job.name in wanted:
                raise Conflict(f"{job.name}: listed twice")
            existing = self._entries.get(job.name)
            if existing is not None and existing.job.kind is JobKind.SYSTEM:
                raise Conflict(f"{job.name}: a system job has that name")
            wanted[job.name] = job
        for name, entry in list(self._entries.items()):
            if entry.job.kind is JobKind.USER and name not in wanted:
                self.remove(name)
        for job in wanted.values():
            if job.name not in self._entries:
                self.add(job)
            elif self._entries[job.name].job != job:
                self.replace(job)
            else:  # same definition: take the new action, keep the planned time
                self._entries[job.name].job = self._entries[job.name].builtin = job

    def sync_some_user_jobs(self, names: Iterable[str], jobs: list[Job]) -> None:
        """Make the user jobs of ``names`` exactly those of ``jobs`` (the others stay).

        A name without a job in ``jobs`` is removed; as ``sync_user_jobs`` does, a job whose
        definition did not change keeps its planned time.
        """
        wanted = {job.name: job for job in jobs}
        for name in names:
            entry = self._entries.get(name)
            if name not in wanted:
                if entry is not None and entry.job.kind is JobKind.USER:
                    self.remove(name)
                continue
            job = wanted[name]
            if job.kind is not JobKind.USER:
                raise Conflict(f"{name}: sync_some_user_jobs takes user jobs only")
            if entry is None:
                self.add(job)
            elif entry.job.kind is JobKind.SYSTEM:
                raise Conflict(f"{name}: a system job has that name")
            elif entry.job != job:
                self.replace(job)
            else:
                entry.job = entry.builtin = job

    def zone_of(self, job: Job) -> ZoneInfo:
        """Return the zone a job's schedule is read in: its own, else the scheduler's."""
        return job.time_zone if job.time_zone is not None else self.time_zone

    # -- inside -------------------------------------------------------------------------------

    def _entry(self, name: str) -> Entry:
        entry = self._entries.get(name)
        if entry is None:
            raise NotFound("job", name)
        return entry

    def _overridden(self, job: Job) -> Job:
        if self.overrides is None:
            return job
        override = self.overrides.job_override(job.name)
        if override is None:
            return job
        changes: dict[str, object] = {}
        if override.enabled is not None:
            changes["enabled"] = override.enabled
        if override.note is not None:
            changes["pause_note"] = override.note
        if override.schedule is not None:
            # A stored override that no longer parses leaves the built-in schedule in force.
            with suppress(CronError):
                changes["schedule"] = CronSchedule.parse(override.schedule)
        return replace(job, **changes) if changes else job  # type: ignore[arg-type]

    def _plan(self, entry: Entry, after: int, *, at: int | None = None) -> None:
        """Plan the job's next time after ``after`` (``at``: already known to be it)."""
        entry.gen += 1
        if at is None:
            at = entry.job.schedule.next_after(after, self.zone_of(entry.job))
        entry.next_at = at
        self._seq += 1
        heappush(self._heap, (at, self._seq, entry.gen, entry))

    def _replan(self, entry: Entry) -> None:
        """Plan a job again at the next tick (unless it runs or waits)."""
        if entry.run is not None or entry.waiting_since is not None:
            if entry.run is not None and entry.job.overlap is not Overlap.SKIP:
                entry.gen += 1  # its time planned while it runs is stale: finish() plans it
                entry.next_at = None
            return  # finish() or the wait plans it
        entry.retry = None
        entry.queued.clear()  # a gap's times caught up under the old definition are moot
        entry.freed_at = None
        entry.gen += 1
        entry.next_at = None
        self._unplanned[entry.job.name] = entry

    def _forget(self, entry: Entry) -> None:
        entry.retry = None
        entry.queued.clear()
        entry.gen += 1
        entry.next_at = None
        self._unplanned.pop(entry.job.name, None)
        if entry.waiting_since is not None:
            self._unwait(entry)

    def _unwait(self, entry: Entry) -> None:
        for group, queue in list(self._waiting.items()):
            if entry in queue:
                queue.remove(entry)
                if not queue:
                    del self._waiting[group]
        entry.waiting_since = None
